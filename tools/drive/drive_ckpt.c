/* dlio-drive --checkpoint-workload: the checkpoint section of a DLIO workload
 * file run on its own, as DLIO 2.0.0 sizes a checkpoint
 * (dlio_benchmark/checkpointing/base_checkpointing.py, docs/dlio.md 4.8):
 *
 *   model-E-S-R.pt        checkpoint.model_size bytes (int8 elements)
 *   optimizer-E-S-R.pt    each of checkpoint.optimization_groups twice (two
 *                         moments) plus their sum once ("combined")
 *   layer-L-E-S-R.pt      for L < num_layers (+ tensor_parallelism when it
 *                         is above 1), sum(layer_parameters) bytes each,
 *                         written by ranks with R % pipeline_parallelism == 0
 *
 * by rank 0 alone (checkpoint.type: rank_zero, DLIO's default) or by every
 * rank (all_ranks). The tensors' bytes are what is sized; torch.save's few
 * hundred bytes of framing per file are not. Each rank writes its files
 * (fsynced, directory entries too), all ranks meet, each drops its files
 * from the page cache and reads them back, and rank 0 reports bytes,
 * duration and GB/s per rank and for the job (the slowest rank's time), as
 * DLIO and MLPerf Storage report a checkpoint.
 *
 * With --loader mlperf-v3 the files are written and read as MLPerf Storage
 * v3's DLIO fork does for a local file system
 * (checkpointing/pytorch_checkpointing.py: opaque streams of the state's
 * byte count through mlpstorage's StreamingCheckpointing, chunk_size 32 MiB,
 * fadvise_mode dontneed, num_parallel_readers 4; its
 * storage_writers/file_writer.py and storage_readers/file_reader.py):
 * written in 32 MiB writes, each written range dropped from the page cache
 * (POSIX_FADV_DONTNEED) as it goes, one fsync at the end; read back by N
 * threads (--checkpoint-readers, 4; StreamingCheckpointing's own default
 * is 8), each with its own descriptor (POSIX_FADV_RANDOM) and a contiguous
 * block of ceil(size / N) bytes, in pread()s of read_chunk_size (4 x 32 MiB
 * = 128 MiB), each range dropped from the page cache after it is read. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/dlio_keys.h"
#include "dliofs/json.h"
#include "dliofs/prng.h"
#include "drive_i.h"

#define CK_MAX_LIST DL_DLIO_CK_MAX_LIST
#define CK_IO (4u << 20)
#define MLPERF_CHUNK (32u << 20)		 /* StreamingCheckpointing chunk_size */
#define MLPERF_READ_CHUNK (4ull * MLPERF_CHUNK) /* its read_chunk_size default */
#define MLPERF_READERS 4			 /* the fork's num_parallel_readers */
/* Region of the written bytes' stream. */
#define KEY_CKPT_DATA 0x636b7074ULL

/* What one rank did, gathered by rank 0. */
struct ck_rank {
	uint64_t files, bytes, read_bytes;
	double write_s, read_s;
};

/* ---- the workload's checkpoint section ---- */

/* DLIO's defaults, then the file's checkpoint keys (config/ reads them). */
static int load_plan(const char *path, struct dl_dlio_checkpoint *pl, int need_section, FILE *err)
{
	struct dl_dlio_keys *k = NULL;
	const struct dl_dlio_val *ck;
	char why[512];
	int ret;

	if ((ret = dl_dlio_keys_load(path, &k, why, sizeof(why)))) {
		if (*why)
			fprintf(err, "dlio-drive: %s\n", why);
		else
			fprintf(err, "dlio-drive: %s: %s\n", path, strerror(-ret));
		return ret;
	}
	ck = dl_dlio_key(k, "checkpoint");
	if ((ck || need_section) && (!ck || ck->kind != DL_DLIO_MAP)) {
		fprintf(err, "dlio-drive: %s: no checkpoint section: --checkpoint-workload runs a "
			     "workload file's checkpoint keys (model_size, optimization_groups, "
			     "num_layers, layer_parameters, ...)\n", path);
		ret = -EINVAL;
	} else {
		ret = dl_dlio_checkpoint(k, "dlio-drive: ", err, pl);
	}
	dl_dlio_keys_free(k);
	return ret;
}

/* ---- one rank's files ---- */

struct ck_file {
	char name[96];
	uint64_t bytes;
};

/* The files rank r writes at checkpoint (epoch e, step s), DLIO's names. */
static size_t rank_files(const struct dl_dlio_checkpoint *pl, unsigned r, uint64_t e, uint64_t s,
			 struct ck_file *out, size_t max)
{
	uint64_t opt = 0, layer = 0, nl;
	size_t n = 0;

	if (!pl->all_ranks && r != 0)
		return 0;
	for (unsigned i = 0; i < pl->ngroups; i++)
		opt += 3 * pl->groups[i];
	for (unsigned i = 0; i < pl->nlayers; i++)
		layer += pl->layers[i];
	if (pl->model_size && n < max) {
		snprintf(out[n].name, sizeof(out[n].name), "model-%llu-%llu-%u.pt",
			 (unsigned long long)e, (unsigned long long)s, r);
		out[n++].bytes = pl->model_size;
	}
	if (opt && n < max) {
		snprintf(out[n].name, sizeof(out[n].name), "optimizer-%llu-%llu-%u.pt",
			 (unsigned long long)e, (unsigned long long)s, r);
		out[n++].bytes = opt;
	}
	nl = pl->num_layers + (pl->tp > 1 ? pl->tp : 0);
	if (r % pl->pp == 0 && layer)
		for (uint64_t l = 0; l < nl && n < max; l++) {
			snprintf(out[n].name, sizeof(out[n].name), "layer-%llu-%llu-%llu-%u.pt",
				 (unsigned long long)l, (unsigned long long)e,
				 (unsigned long long)s, r);
			out[n++].bytes = layer;
		}
	return n;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Write one file, fsynced; every 4 KiB block starts with its own stamp so
 * deduplicating storage cannot fold the blocks. */
static int write_file(const char *path, uint64_t bytes, uint8_t *buf, uint64_t key)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ret = 0;

	if (fd < 0)
		return -errno;
	for (uint64_t done = 0; done < bytes && !ret;) {
		size_t n = bytes - done < CK_IO ? (size_t)(bytes - done) : CK_IO;

		for (size_t b = 0; b + 8 <= n; b += 4096) {
			uint64_t stamp = dl_key2(key, (done + b) / 4096);
			memcpy(buf + b, &stamp, 8);
		}
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				ret = -errno;
				break;
			}
			off += (size_t)w;
		}
		done += n;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	/* Nothing of it stays in the page cache for the read back. */
	if (!ret)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

static int read_file(const char *path, uint8_t *buf, uint64_t *got)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	for (;;) {
		ssize_t n = read(fd, buf, CK_IO);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		*got += (uint64_t)n;
	}
	close(fd);
	return ret;
}

/* The fork's file writer: 32 MiB writes, each dropped from the page cache
 * once written, one fsync at the end. buf holds MLPERF_CHUNK bytes. */
static int write_file_mlperf(const char *path, uint64_t bytes, uint8_t *buf, uint64_t key)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ret = 0;

	if (fd < 0)
		return -errno;
	for (uint64_t done = 0; done < bytes && !ret;) {
		size_t n = bytes - done < MLPERF_CHUNK ? (size_t)(bytes - done) : MLPERF_CHUNK;
		size_t off = 0;

		for (size_t b = 0; b + 8 <= n; b += 4096) {
			uint64_t stamp = dl_key2(key, (done + b) / 4096);
			memcpy(buf + b, &stamp, 8);
		}
		while (off < n) {
			ssize_t w = write(fd, buf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				ret = -errno;
				break;
			}
			off += (size_t)w;
		}
		posix_fadvise(fd, (off_t)done, (off_t)off, POSIX_FADV_DONTNEED);
		done += off;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

/* One reader of the fork's parallel load: its block, in 128 MiB preads. */
struct ck_block {
	const char *path;
	uint64_t lo, hi, got;
	int ret, started;
	pthread_t th;
};

static void *read_block(void *arg)
{
	struct ck_block *b = arg;
	uint64_t len = b->hi - b->lo;
	size_t cap = len < MLPERF_READ_CHUNK ? (size_t)len : (size_t)MLPERF_READ_CHUNK;
	uint8_t *buf = malloc(cap ? cap : 1);
	int fd = open(b->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		b->ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	for (uint64_t off = b->lo; off < b->hi;) {
		size_t want = b->hi - off < cap ? (size_t)(b->hi - off) : cap;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			b->ret = n < 0 ? -errno : -EIO; /* the file ended early */
			break;
		}
		posix_fadvise(fd, (off_t)off, n, POSIX_FADV_DONTNEED);
		off += (uint64_t)n;
		b->got += (uint64_t)n;
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* The fork's load: `readers` threads at once, one contiguous block each
 * (the last ones shorter, none empty), bytes the size it wrote. */
static int read_file_mlperf(const char *path, uint64_t bytes, unsigned readers, uint64_t *got)
{
	struct ck_block b[256];
	uint64_t block;
	unsigned n = 0;
	int ret = 0;

	if (readers < 1 || readers > 256)
		readers = MLPERF_READERS;
	block = (bytes + readers - 1) / readers;
	for (uint64_t pos = 0; pos < bytes && n < readers; pos += block, n++)
		b[n] = (struct ck_block){.path = path, .lo = pos,
					 .hi = pos + block < bytes ? pos + block : bytes};
	for (unsigned i = 0; i < n; i++)
		b[i].started = !pthread_create(&b[i].th, NULL, read_block, &b[i]);
	for (unsigned i = 0; i < n; i++) {
		if (b[i].started)
			pthread_join(b[i].th, NULL);
		else
			read_block(&b[i]); /* no thread to be had: read it here */
		*got += b[i].got;
		if (b[i].ret && !ret)
			ret = b[i].ret;
	}
	return ret;
}

/* This rank's part of checkpoint k: write, meet, read back. */
static int one_checkpoint(const struct dl_dlio_checkpoint *pl, const struct drv_comm *comm, const char *dir,
			  uint64_t seed, uint64_t k, uint8_t *buf, unsigned mlperf, struct ck_rank *me,
			  FILE *err)
{
	struct ck_file files[CK_MAX_LIST + 8];
	char path[4096 + 128];
	size_t n = rank_files(pl, (unsigned)comm->rank, 1, k, files, CK_MAX_LIST + 8);
	double t0;
	int ret = 0, all;

	all = drv_comm_sync(comm, 0);
	if (all)
		return all;
	t0 = now_s();
	for (size_t i = 0; i < n && !ret; i++) {
		snprintf(path, sizeof(path), "%.4000s/%.95s", dir, files[i].name);
		uint64_t key = dl_key3(seed, KEY_CKPT_DATA, dl_key3(k, (uint64_t)comm->rank, i));
		ret = mlperf ? write_file_mlperf(path, files[i].bytes, buf, key)
			     : write_file(path, files[i].bytes, buf, key);
		if (ret)
			fprintf(err, "dlio-drive: checkpoint %s: %s\n", path, strerror(-ret));
		me->files++;
		me->bytes += files[i].bytes;
	}
	if (!ret && n && (ret = drv_fsync_dir(dir)))
		fprintf(err, "dlio-drive: checkpoint %s: %s\n", dir, strerror(-ret));
	me->write_s += now_s() - t0;
	/* Every rank has written before any reads back (a restore starts
	 * from the whole checkpoint). */
	if ((all = drv_comm_sync(comm, ret)))
		return all;
	t0 = now_s();
	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t got = 0;

		snprintf(path, sizeof(path), "%.4000s/%.95s", dir, files[i].name);
		ret = mlperf ? read_file_mlperf(path, files[i].bytes, mlperf, &got)
			     : read_file(path, buf, &got);
		if (!ret && got != files[i].bytes)
			ret = -EIO;
		if (ret)
			fprintf(err, "dlio-drive: reading back %s: %s (%llu of %llu bytes)\n", path,
				strerror(-ret), (unsigned long long)got,
				(unsigned long long)files[i].bytes);
		me->read_bytes += got;
	}
	me->read_s += now_s() - t0;
	return drv_comm_sync(comm, ret);
}

static double gbps(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes / s / 1e9 : 0;
}

static void report(FILE *out, const struct dl_dlio_checkpoint *pl, const struct ck_rank *all, unsigned ranks,
		   uint64_t n, const char *dir)
{
	struct ck_rank job = {0};

	fprintf(out, "checkpoint workload: %llu checkpoint%s to %s, %s, %u rank%s "
		     "(tensor %llu, pipeline %llu)\n",
		(unsigned long long)n, n == 1 ? "" : "s", dir,
		pl->all_ranks ? "all ranks write" : "rank 0 writes", ranks, ranks == 1 ? "" : "s",
		(unsigned long long)pl->tp, (unsigned long long)pl->pp);
	fprintf(out, "%-6s %7s %14s %10s %9s %10s %9s\n", "rank", "files", "bytes", "write s",
		"write GB/s", "read s", "read GB/s");
	for (unsigned r = 0; r < ranks; r++) {
		const struct ck_rank *q = &all[r];

		fprintf(out, "%-6u %7llu %14llu %10.3f %9.3f %10.3f %9.3f\n", r,
			(unsigned long long)q->files, (unsigned long long)q->bytes, q->write_s,
			gbps(q->bytes, q->write_s), q->read_s, gbps(q->read_bytes, q->read_s));
		job.files += q->files;
		job.bytes += q->bytes;
		job.read_bytes += q->read_bytes;
		/* The job's time is its slowest rank's (all start together). */
		job.write_s = q->write_s > job.write_s ? q->write_s : job.write_s;
		job.read_s = q->read_s > job.read_s ? q->read_s : job.read_s;
	}
	fprintf(out, "%-6s %7llu %14llu %10.3f %9.3f %10.3f %9.3f\n", "all",
		(unsigned long long)job.files, (unsigned long long)job.bytes, job.write_s,
		gbps(job.bytes, job.write_s), job.read_s, gbps(job.read_bytes, job.read_s));
}

static int report_json(const char *path, const struct dl_dlio_checkpoint *pl, const struct ck_rank *all,
		       unsigned ranks, uint64_t n)
{
	FILE *f = tool_json_open(path);
	struct dl_jw w;
	uint64_t bytes = 0, rbytes = 0, files = 0;
	double ws = 0, rs = 0;
	int ret = 0, rc;

	if (!f)
		return -errno;
	dl_jw_init(&w, f, 2);
	dl_jw_obj(&w, NULL);
	dl_jw_u64(&w, "checkpoints", n);
	dl_jw_u64(&w, "ranks", ranks);
	dl_jw_str(&w, "type", pl->all_ranks ? "all_ranks" : "rank_zero");
	dl_jw_u64(&w, "tensor_parallelism", pl->tp);
	dl_jw_u64(&w, "pipeline_parallelism", pl->pp);
	dl_jw_arr(&w, "per_rank");
	for (unsigned r = 0; r < ranks; r++) {
		const struct ck_rank *q = &all[r];

		dl_jw_obj(&w, NULL);
		dl_jw_u64(&w, "rank", r);
		dl_jw_u64(&w, "files", q->files);
		dl_jw_u64(&w, "bytes", q->bytes);
		dl_jw_f64(&w, "write_s", q->write_s, 6);
		dl_jw_f64(&w, "write_gb_per_s", gbps(q->bytes, q->write_s), 6);
		dl_jw_u64(&w, "read_bytes", q->read_bytes);
		dl_jw_f64(&w, "read_s", q->read_s, 6);
		dl_jw_f64(&w, "read_gb_per_s", gbps(q->read_bytes, q->read_s), 6);
		dl_jw_end(&w);
		files += q->files;
		bytes += q->bytes;
		rbytes += q->read_bytes;
		ws = q->write_s > ws ? q->write_s : ws;
		rs = q->read_s > rs ? q->read_s : rs;
	}
	dl_jw_end(&w);
	dl_jw_obj(&w, "overall");
	dl_jw_u64(&w, "files", files);
	dl_jw_u64(&w, "bytes", bytes);
	dl_jw_f64(&w, "write_s", ws, 6);
	dl_jw_f64(&w, "write_gb_per_s", gbps(bytes, ws), 6);
	dl_jw_u64(&w, "read_bytes", rbytes);
	dl_jw_f64(&w, "read_s", rs, 6);
	dl_jw_f64(&w, "read_gb_per_s", gbps(rbytes, rs), 6);
	dl_jw_end(&w);
	ret = dl_jw_finish(&w);
	fputc('\n', f);
	rc = tool_json_close(f);
	return ret ? ret : rc;
}

int drv_ckpt_main(const struct drv_cli *cl, const struct drv_comm *comm)
{
	struct dl_dlio_checkpoint pl;
	struct ck_rank me = {0}, *all = NULL;
	uint8_t *buf = NULL;
	uint64_t n = cl->checkpoints ? cl->checkpoints : 1;
	int ret, status = 1;

	ret = load_plan(cl->config, &pl, 1, stderr);
	/* Every rank read the same file: all stop together on a bad one. */
	if (drv_comm_sync(comm, ret))
		return 2;
	if (mkdir(cl->dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "dlio-drive: %s: %s\n", cl->dir, strerror(errno));
		ret = -errno;
	}
	/* mlperf-v3: its readers' count (0: the fork's); else 0. */
	unsigned mlperf = cl->p.loader == DRV_LOADER_MLPERF_V3
			      ? (cl->p.ckpt_readers ? cl->p.ckpt_readers : MLPERF_READERS)
			      : 0;
	size_t bufsz = mlperf ? MLPERF_CHUNK : CK_IO;
	buf = malloc(bufsz);
	if (!buf)
		ret = -ENOMEM;
	else
		dl_prng_fill(dl_key2(cl->p.seed, KEY_CKPT_DATA), 0, buf, bufsz);
	if (drv_comm_sync(comm, ret))
		goto out;
	for (uint64_t k = 1; k <= n; k++)
		if (one_checkpoint(&pl, comm, cl->dir, cl->p.seed, k, buf, mlperf, &me, stderr))
			goto out;
	if (comm->rank == 0 && !(all = calloc((size_t)comm->size, sizeof(*all))))
		ret = -ENOMEM;
	if (drv_comm_sync(comm, ret) || drv_comm_gather(comm, &me, sizeof(me), all))
		goto out;
	status = 0;
	if (comm->rank != 0)
		goto out;
	if (!cl->quiet)
		report(tool_table_stream(cl->json), &pl, all, (unsigned)comm->size, n, cl->dir);
	if (cl->json && (ret = report_json(cl->json, &pl, all, (unsigned)comm->size, n))) {
		fprintf(stderr, "dlio-drive: %s: cannot write the JSON report: %s\n", cl->json,
			strerror(-ret));
		status = 1;
	}
out:
	free(all);
	free(buf);
	return status;
}

/* ---- a training run's checkpoints (DLIO workload files) ---- */

struct drv_ck_plan {
	struct dl_dlio_checkpoint pl;
	uint8_t *buf;
	int mlperf; /* --loader mlperf-v3: the fork's writes */
};

int drv_ck_plan_load(const char *path, uint64_t seed, int loader, struct drv_ck_plan **out,
		     FILE *err)
{
	size_t bufsz = loader == DRV_LOADER_MLPERF_V3 ? MLPERF_CHUNK : CK_IO;
	struct drv_ck_plan *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	if ((ret = load_plan(path, &c->pl, 0, err))) {
		free(c);
		return ret;
	}
	c->mlperf = loader == DRV_LOADER_MLPERF_V3;
	c->buf = malloc(bufsz);
	if (!c->buf) {
		free(c);
		return -ENOMEM;
	}
	dl_prng_fill(dl_key2(seed, KEY_CKPT_DATA), 0, c->buf, bufsz);
	*out = c;
	return 0;
}

void drv_ck_plan_free(struct drv_ck_plan *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c);
}

int drv_ck_write_rank(struct drv_ck_plan *c, uint64_t model, const char *dir, unsigned rank,
		      uint64_t epoch, uint64_t step, uint64_t seed, uint64_t *files,
		      uint64_t *bytes, FILE *err)
{
	struct ck_file f[CK_MAX_LIST + 8];
	struct dl_dlio_checkpoint pl = c->pl;
	char path[4096 + 128];
	size_t n;
	int ret = 0;

	pl.model_size = model;
	n = rank_files(&pl, rank, epoch, step, f, CK_MAX_LIST + 8);
	*files = *bytes = 0;
	for (size_t i = 0; i < n && !ret; i++) {
		snprintf(path, sizeof(path), "%.4000s/%.95s", dir, f[i].name);
		uint64_t key = dl_key3(seed, KEY_CKPT_DATA,
				       dl_key3(dl_key2(epoch, step), (uint64_t)rank, i));
		ret = c->mlperf ? write_file_mlperf(path, f[i].bytes, c->buf, key)
				: write_file(path, f[i].bytes, c->buf, key);
		if (ret)
			fprintf(err, "dlio-drive: checkpoint %s: %s\n", path, strerror(-ret));
		(*files)++;
		*bytes += f[i].bytes;
	}
	if (!ret && n && (ret = drv_fsync_dir(dir)))
		fprintf(err, "dlio-drive: checkpoint %s: %s\n", dir, strerror(-ret));
	return ret;
}
