/* The training loop: per epoch, a fresh loader pass over a (re)shuffled
 * plan; per step, wait for the batch (the stall), then compute (sleep to an
 * absolute deadline, or a GPU kernel); evaluation and checkpoints between
 * steps or epochs as DLIO schedules them (main.py _train/run), with their
 * time kept out of the training figures as DLIO's blocks do. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/naming.h"
#include "dliofs/prng.h"
#include "drive_i.h"

#define KEY_FILES 0x46494c45u	/* "FILE" */
#define KEY_SAMPLES 0x534d504cu /* "SMPL" */
#define KEY_COMPUTE 0x434f4d50u
#define KEY_EVAL 0x4556414cu
#define KEY_CKPT 0x434b5054u

double drv_now(void) { return (double)dl_mono_ns() * 1e-9; }

struct run {
	struct drv_ctx *c;
	struct drv_params *p;
	struct drv_loader *l;
	struct drv_cuda *cuda;
	struct drv_result *res;
	struct drv_progress pb;
	uint8_t *ckbuf;
	struct drv_ck_plan *ckplan; /* DLIO workload file: DLIO 2.0.0's files */
	size_t ckcap;
	size_t ckalloc;
	double lead; /* compute_for(): how early to wake before a deadline */
	FILE *err;
};

static void sleep_abs(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - floor(t)) * 1e9)};

	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Compute for exactly `secs`: sleep to an absolute deadline (no drift with
 * the time spent getting here, EINTR just resumes), but wake `lead` early
 * and spin the rest. `lead` tracks how late the kernel's wake-ups come (tens
 * of microseconds on a VM), so the spin stays short while a 3.5 ms cosmoflow
 * step does not turn into 3.6 ms. */
static void compute_for(double *lead, double secs)
{
	double t0 = drv_now(), deadline = t0 + secs;

	if (secs <= 0)
		return;
	double target = deadline - *lead;
	if (target > t0) {
		sleep_abs(target);
		double late = drv_now() - target;
		*lead = 0.875 * *lead + 0.125 * (late < 0 ? 0 : late > 2e-3 ? 2e-3 : late);
	}
	while (drv_now() < deadline)
		__builtin_ia32_pause();
}

static uint64_t epoch_key(const struct drv_ctx *c, enum drv_shuffle mode, uint64_t epoch,
			  uint32_t purpose)
{
	const struct drv_params *p = c->p;
	uint64_t k;

	if (mode == DRV_SHUF_RANDOM) {
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = dl_key2((uint64_t)(drv_now() * 1e9), purpose);
		/* Rank 0's draw for everyone: ranks with their own random orders
		 * would read each other's samples. */
		return drv_comm_bcast(c->comm, k);
	}
	return drv_epoch_key(p->seed, epoch, p->seed_change_epoch, purpose);
}

static int mkdir_p(const char *path)
{
	char tmp[8192];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *s = tmp + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int drv_fsync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

static int add_ckpt_rec(struct run *r, uint64_t epoch, uint64_t step, uint64_t bytes, double t0)
{
	struct drv_result *res = r->res;

	if (res->nck == r->ckalloc) {
		size_t na = r->ckalloc ? 2 * r->ckalloc : 8;
		void *nk = realloc(res->ck, na * sizeof(*res->ck));
		if (!nk)
			return -ENOMEM;
		res->ck = nk;
		r->ckalloc = na;
	}
	res->ck[res->nck++] = (struct drv_ckpt_rec){
	    .epoch = epoch, .step = step, .bytes = bytes, .seconds = drv_now() - t0};
	return 0;
}

/* A DLIO workload file's checkpoint, as DLIO 2.0.0 writes it
 * (checkpointing/base_checkpointing.py): model-E-S-R.pt of the model size
 * (checkpoint.model_size), the optimizer's and the layers' files, into the
 * checkpoint directory itself, by rank 0 or every rank (checkpoint.type). */
static int checkpoint_dlio(struct run *r, uint64_t epoch, uint64_t step)
{
	double t0 = drv_now();
	uint64_t files, bytes;
	int ret;

	ret = drv_ck_write_rank(r->ckplan, r->p->checkpoint_size, r->p->checkpoint_dir, r->c->rank,
				epoch, step, r->p->seed, &files, &bytes, r->err);
	if (ret || !files)
		return ret;
	return add_ckpt_rec(r, epoch, step, bytes, t0);
}

/* One checkpoint: model_size bytes written and fsynced, with the directory
 * entries, into <dir>/global_epoch<E>_step<S>/ (DLIO's naming). Each 4 KiB
 * block starts with its own counter so deduplicating storage cannot cheat. */
static int checkpoint(struct run *r, uint64_t epoch, uint64_t step)
{
	struct drv_params *p = r->p;
	char dir[4096 + 64], path[4096 + 96];
	double t0 = drv_now();
	int fd, ret;

	if (r->ckplan)
		return checkpoint_dlio(r, epoch, step);
	/* DLIO's default checkpoint type, rank_zero: one writer for the job. */
	if (r->c->rank != 0)
		return 0;

	snprintf(dir, sizeof(dir), "%s/global_epoch%llu_step%llu", p->checkpoint_dir,
		 (unsigned long long)epoch, (unsigned long long)step);
	snprintf(path, sizeof(path), "%s/model_states-0.bin", dir);
	if ((ret = mkdir_p(dir)))
		goto fail;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	if (!r->ckbuf) {
		r->ckcap = p->io_size;
		r->ckbuf = malloc(r->ckcap);
		if (!r->ckbuf) {
			close(fd);
			return -ENOMEM;
		}
		dl_prng_fill(dl_key2(p->seed, KEY_CKPT), 0, r->ckbuf, r->ckcap);
	}
	for (uint64_t done = 0, chunk = 0; done < p->checkpoint_size; chunk++) {
		size_t n = p->checkpoint_size - done < r->ckcap
			       ? (size_t)(p->checkpoint_size - done)
			       : r->ckcap;
		for (size_t b = 0; b + 8 <= n; b += 4096) {
			uint64_t stamp = dl_key3(epoch, step, chunk * (r->ckcap / 4096) + b / 4096);
			memcpy(r->ckbuf + b, &stamp, 8);
		}
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, r->ckbuf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				ret = -errno;
				close(fd);
				goto fail;
			}
			off += (size_t)w;
		}
		done += n;
	}
	if (fsync(fd)) {
		ret = -errno;
		close(fd);
		goto fail;
	}
	if (close(fd)) {
		ret = -errno;
		goto fail;
	}
	if ((ret = drv_fsync_dir(dir)) || (ret = drv_fsync_dir(p->checkpoint_dir)))
		goto fail;

	return add_ckpt_rec(r, epoch, step, p->checkpoint_size, t0);
fail:
	fprintf(r->err, "dlio-drive: checkpoint %s: %s\n", path, strerror(-ret));
	return ret;
}

static int accelerate(struct run *r, double secs)
{
	char msg[256];

	if (!r->cuda) {
		compute_for(&r->lead, secs);
		return 0;
	}
	int ret = drv_cuda_step(r->cuda, secs, msg, sizeof(msg));
	if (ret)
		fprintf(r->err, "dlio-drive: %s\n", msg);
	return ret;
}

/* One pass: `nsteps` batches of `batch` from `plan` over `split`. Steps go to
 * s[]; checkpoints by step count when ckpt is set. With `sync`, every step
 * ends with the ranks' all-reduce (DLIO's barrier after compute); every pass
 * ends with one. A failure anywhere reaches every rank at the next of those,
 * so all ranks leave together: the others then return -ECANCELED. */
static int phase(struct run *r, const struct drv_plan *plan, uint32_t split, uint64_t epoch,
		 uint64_t nsteps, uint64_t batch, const struct drv_dist *dist, uint64_t key,
		 uint64_t *draw, struct drv_step *s, uint64_t *global_step, int ckpt, int sync,
		 struct drv_io *io, const char *what)
{
	struct drv_params *p = r->p;
	const struct drv_comm *comm = r->c->comm;
	unsigned t = p->read_threads ? p->read_threads : 1;
	unsigned depth = t * (p->prefetch > t ? (p->prefetch + t - 1) / t : 1);
	double wall = 0;
	int ret = 0, all;

	if (drv_mlperf_reads(r->c))
		depth = drv_mlperf_depth(r->c, r->c->ds->files[split], batch);
	if (r->cuda)
		drv_cuda_phase(r->cuda);
	drv_loader_start(r->l, plan, split, epoch, nsteps * batch, batch, depth);
	for (uint64_t i = 0; i < nsteps; i++) {
		double t0 = drv_now(), t1 = t0, t2 = t0;
		/* ret may hold the last step's checkpoint failure: straight to the
		 * all-reduce that tells the others. */
		if (!ret && (ret = drv_loader_batch(r->l, i)) == -ENODATA)
			fprintf(r->err,
				"dlio-drive: %s: the files hold fewer samples than the config "
				"says (step %llu of %llu)\n",
				r->c->root, (unsigned long long)i + 1, (unsigned long long)nsteps);
		if (!ret) {
			t1 = drv_now();
			ret = accelerate(r, drv_dist_draw(dist, key, (*draw)++));
			t2 = drv_now();
		}
		all = sync ? drv_comm_sync(comm, ret) : ret;
		if (all) {
			ret = ret ? ret : -ECANCELED;
			break;
		}
		s[i].wait = t1 - t0;
		s[i].compute = t2 - t1;
		s[i].sync = r->c->ranks > 1 ? drv_now() - t2 : 0;
		if (global_step)
			++*global_step;
		wall += s[i].wait + s[i].compute + s[i].sync;
		if (r->pb.on && (i + 1 == nsteps || drv_now() - r->pb.last >= 0.1)) {
			double au = drv_au(s, i + 1, p->skip_start, 0);
			drv_progress_update(&r->pb, what, epoch, p->epochs, i + 1, nsteps, au,
					    wall > 0 ? (double)((i + 1) * batch) / wall : 0);
		}
		if (ckpt && p->checkpoint && p->ckpt_every_steps &&
		    *global_step % p->ckpt_every_steps == 0)
			ret = checkpoint(r, epoch, *global_step);
		if (ret && !sync)
			break;
	}
	int fret = drv_loader_finish(r->l, io);
	ret = ret ? ret : fret;
	all = drv_comm_sync(comm, ret);
	return ret ? ret : all ? -ECANCELED : 0;
}

static int eval_due(const struct drv_params *p, uint64_t e)
{
	return p->eval && e >= p->eval_after && (e - p->eval_after) % p->eval_every == 0;
}

static int ckpt_due(const struct drv_params *p, uint64_t e)
{
	return p->checkpoint && !p->ckpt_every_steps && e >= p->ckpt_after_epoch &&
	       (e - p->ckpt_after_epoch) % p->ckpt_every_epochs == 0;
}

int drv_plan_for(const struct drv_ctx *c, uint32_t split, uint64_t batch, unsigned rank,
		 struct drv_plan *p)
{
	int ret = drv_plan_init(p, c->kind, c->ds->files[split], c->spf, batch);

	if (!ret)
		ret = drv_plan_shard(p, rank, c->ranks ? c->ranks : 1);
	/* DLIO's tf.data loader: each reader thread its own contiguous part. */
	if (!ret && c->p->iterative)
		drv_plan_lanes(p, c->p->read_threads, batch);
	return ret;
}

int drv_shard_check(const struct drv_ctx *c, uint32_t split, uint64_t batch, uint64_t *steps,
		    FILE *err)
{
	unsigned P = c->ranks ? c->ranks : 1;
	uint64_t T = c->ds->files[split] * c->spf;
	/* Said once: by MPI's rank 0, or by each rank running alone. */
	int say = (!c->comm || c->comm->rank == 0) && err;
	struct drv_plan plan;

	/* DLIO: floor(T / B / P) steps on every rank, the last partial batch of
	 * each rank dropped. */
	*steps = batch && T / P >= batch ? T / P / batch : 0;
	if (!*steps) {
		if (say)
			fprintf(err,
				"dlio-drive: %s: %llu samples make no full batch of %llu for "
				"each of %u ranks\n",
				dl_split_dir[split], (unsigned long long)T,
				(unsigned long long)batch, P);
		return -EINVAL;
	}
	for (unsigned q = 0; q < P; q++) {
		int ret = drv_plan_for(c, split, batch, q, &plan);
		if (ret)
			return ret;
		if (drv_plan_samples(&plan) >= *steps * batch)
			continue;
		if (say)
			fprintf(err,
				"dlio-drive: %s: rank %u's share holds %llu samples but each "
				"rank takes %llu steps of %llu (DLIO's split: %s); choose a rank "
				"count that divides the dataset more evenly\n",
				dl_split_dir[split], q, (unsigned long long)drv_plan_samples(&plan),
				(unsigned long long)*steps, (unsigned long long)batch,
				plan.kind == DRV_U_STREAM
				    ? "tfrecord files round-robin over the ranks"
				    : "ceil(samples / ranks) per rank");
		return -EINVAL;
	}
	return 0;
}

int drv_run(struct drv_ctx *c, struct drv_cuda *cuda, struct drv_result *res, FILE *err)
{
	struct drv_params *p = c->p;
	struct run r = {.c = c, .p = p, .cuda = cuda, .res = res, .err = err, .lead = 1e-4};
	struct drv_plan plan, eplan = {0};
	struct drv_step *s = NULL, *es = NULL;
	uint64_t P = c->ranks ? c->ranks : 1;
	uint64_t T = c->ds->files[DL_SPLIT_TRAIN] * c->spf, per_epoch = T / P / p->batch;
	uint64_t ET = c->ds->files[DL_SPLIT_VALID] * c->spf, eval_steps = ET / P / p->eval_batch;
	uint64_t gstep = 0, draw = 0, edraw = 0;
	uint64_t ckey = dl_key2(p->seed, KEY_COMPUTE), ekey = dl_key2(p->seed, KEY_EVAL);
	double t_run = drv_now();
	int ret;

	memset(res, 0, sizeof(*res));
	r.pb.on = p->progress;
	tool_progress_init(&r.pb.pl, !r.pb.on, 0);
	/* The accelerator sleeps to deadlines: the default 50 us timer slack
	 * would be added to every step. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if ((ret = drv_plan_for(c, DL_SPLIT_TRAIN, p->batch, c->rank, &plan)))
		goto ready;
	if (p->checkpoint && p->from_dlio &&
	    (ret = drv_ck_plan_load(c->cfg->path, p->seed, p->loader, &r.ckplan, err)))
		goto ready;
	if (p->eval && eval_steps) {
		ret = drv_plan_for(c, DL_SPLIT_VALID, p->eval_batch, c->rank, &eplan);
		if (ret)
			goto ready;
		/* DLIO evaluates in file order. */
		drv_plan_order(&eplan, DRV_SHUF_OFF, 0, DRV_SHUF_OFF, 0);
	}
	res->ep = calloc(p->epochs, sizeof(*res->ep));
	s = calloc(per_epoch ? per_epoch : 1, sizeof(*s));
	es = calloc(eval_steps ? eval_steps : 1, sizeof(*es));
	uint64_t keep = per_epoch * p->epochs;
	if (p->total_steps && p->total_steps < keep)
		keep = p->total_steps;
	res->step_times = calloc(keep ? keep : 1, sizeof(double));
	res->waits = calloc(keep ? keep : 1, sizeof(double));
	if (!res->ep || !s || !es || !res->step_times || !res->waits) {
		ret = -ENOMEM;
		goto ready;
	}
	ret = drv_loader_new(c,
			     drv_mlperf_reads(c) ? drv_mlperf_threads(c, c->ds->files[DL_SPLIT_TRAIN])
						 : p->read_threads,
			     &r.l);
ready:
	/* A rank that cannot start must not leave the others in the first
	 * step's all-reduce. */
	if (drv_comm_sync(c->comm, ret)) {
		ret = ret ? ret : -ECANCELED;
		goto out;
	}

	for (uint64_t e = 1; e <= p->epochs; e++) {
		if (p->total_steps && gstep >= p->total_steps)
			break;
		uint64_t n = per_epoch;
		if (p->total_steps && p->total_steps - gstep < n)
			n = p->total_steps - gstep;
		uint64_t fkey = epoch_key(c, p->file_shuffle, e, KEY_FILES);
		uint64_t skey = epoch_key(c, p->sample_shuffle, e, KEY_SAMPLES);
		drv_plan_order(&plan, p->file_shuffle, fkey, p->sample_shuffle, skey);
		struct drv_epoch_rec *rec = &res->ep[res->nep];
		rec->epoch = e;
		ret = phase(&r, &plan, DL_SPLIT_TRAIN, e, n, p->batch, &p->compute, ckey, &draw, s,
			    &gstep, 1, 1, &rec->io, "train");
		if (ret)
			goto out;
		drv_phase_compute(s, n, p->batch, p->skip_start, p->skip_end, &rec->st);
		rec->au_min = rec->st.au;
		rec->mb_per_s = rec->st.wall > 0 ? (double)rec->io.bytes / 1e6 / rec->st.wall : NAN;
		for (uint64_t i = p->skip_start; i + p->skip_end < n; i++) {
			res->step_times[res->nsteps] = s[i].wait + s[i].compute + s[i].sync;
			res->waits[res->nsteps++] = s[i].wait;
		}
		if (cuda) {
			rec->has_gpu = 1;
			drv_cuda_take(cuda, &rec->gpu);
		}
		res->nep++;
		if (eval_due(p, e) && eval_steps) {
			ret = phase(&r, &eplan, DL_SPLIT_VALID, e, eval_steps, p->eval_batch,
				    &p->eval_compute, ekey, &edraw, es, NULL, 0, 0, &rec->evio,
				    "eval");
			if (ret)
				goto out;
			rec->has_eval = 1;
			drv_phase_compute(es, eval_steps, p->eval_batch, p->skip_start, p->skip_end,
					  &rec->ev);
			rec->ev_mb_per_s =
			    rec->ev.wall > 0 ? (double)rec->evio.bytes / 1e6 / rec->ev.wall : NAN;
			if (cuda)
				drv_cuda_take(cuda, &(struct drv_cuda_stats){0});
		}
		if (ckpt_due(p, e)) {
			ret = checkpoint(&r, e, gstep);
			int all = drv_comm_sync(c->comm, ret);
			if (ret || all) {
				ret = ret ? ret : -ECANCELED;
				goto out;
			}
		}
	}
out:
	drv_progress_clear(&r.pb);
	res->run_wall = drv_now() - t_run;
	drv_loader_free(r.l);
	free(r.ckbuf);
	drv_ck_plan_free(r.ckplan);
	free(s);
	free(es);
	return ret;
}
