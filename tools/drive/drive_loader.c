/* Reader threads and the bounded batch queue between them and the
 * accelerator, the shape of a PyTorch DataLoader with workers (or a tf.data
 * pipeline with parallel reads and prefetch).
 *
 * Work is claimed in epoch order, one unit at a time (a file, a sample, a
 * chunk). Samples are reserved before they are read and counted when they
 * are done; batch s is ready once (s + 1) * B samples are done. Readers may
 * reserve at most `depth` batches beyond the ones the accelerator has taken,
 * so they run ahead exactly as far as the prefetch setting allows and then
 * wait: that wait is the back-pressure a real loader feels. A phase (epoch
 * or evaluation pass) starts with an empty queue, as a fresh DataLoader
 * iterator does every epoch.
 *
 * As DLIO's pytorch loader reads (--read-amplification dlio, not the
 * tensorflow loader), a reader claims a whole batch and hands it over when
 * all of it is read, as a PyTorch DataLoader worker does: with 2 workers
 * the first two batches arrive together, so the second costs the measured
 * steps nothing. Readers that share the samples of one batch deliver the
 * first sooner and the second later, and on slow storage that alone moved
 * AU 8-15 points away from DLIO's (tests/tools/drive/test_drive_fidelity.py). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "drive_i.h"

struct drv_loader {
	struct drv_ctx *c;
	pthread_mutex_t mu;
	pthread_cond_t work;  /* readers: units or reservations available */
	pthread_cond_t ready; /* accelerator: samples done */
	pthread_cond_t idle;  /* finish: no reader inside a unit */
	unsigned nthreads, started;
	pthread_t *th;
	struct slot {
		struct drv_loader *l;
		struct drv_worker *w;
	} * slot;
	/* the phase */
	int active, stop, err;
	struct drv_plan plan;
	uint32_t split;
	uint64_t epoch, need, batch, limit;
	unsigned depth;
	uint64_t next, reserved, done, consumed;
	uint64_t waiting; /* samples the accelerator waits for (0: not waiting) */
	unsigned busy;
	struct drv_io io;
};

static int can_claim(const struct drv_loader *l)
{
	if (!l->active || l->err || l->next >= l->plan.units || l->reserved >= l->need)
		return 0;
	/* A stream claims its file at once and reserves record by record. */
	return l->plan.kind == DRV_U_STREAM || l->reserved < l->limit;
}

/* Units a reader claims under one lock when they are small samples: with a
 * lock round trip per 1 KiB sample the two locks and the wake-ups cost more
 * than the read (a quarter of fio's rate). The prefetch bound still holds
 * (every claimed sample is reserved); a batch waits at most for this many
 * small reads more. */
#define CLAIM_MAX 32
#define CLAIM_SMALL (64u << 10) /* bytes per sample below which units are grouped */

static unsigned claim_max(const struct drv_loader *l)
{
	const struct dl_dataset *ds = l->c->ds;
	uint64_t s = ds->sample_size.mean;

	if (ds->ndims) {
		s = dl_dtype_size(ds->dtype);
		for (unsigned i = 0; i < ds->ndims; i++)
			s *= ds->dims[i];
	}
	return l->plan.kind == DRV_U_SAMPLE && s <= CLAIM_SMALL ? CLAIM_MAX : 1;
}

/* Batches larger than this are shared by the readers sample by sample
 * (a worker's batch is a list of its units). */
#define BATCH_CLAIM_MAX 65536u

/* Whether a reader claims whole batches (DLIO's pytorch loader, above). */
static int batch_claims(const struct drv_loader *l)
{
	const struct drv_params *p = l->c->p;

	/* mlperf-v3's pool reads each file in a thread of its own. */
	return p->amp == DRV_AMP_DLIO && !p->iterative && p->loader != DRV_LOADER_MLPERF_V3 &&
	       l->plan.kind != DRV_U_STREAM && l->plan.kind != DRV_U_CHUNK &&
	       l->batch <= BATCH_CLAIM_MAX;
}

static void *reader_main(void *arg)
{
	struct slot *sl = arg;
	struct drv_loader *l = sl->l;
	struct drv_worker *w = sl->w;
	struct drv_unit *u = NULL;
	uint64_t *pos = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->stop && !can_claim(l))
			pthread_cond_wait(&l->work, &l->mu);
		if (l->stop)
			break;
		unsigned k = 0, kmax = claim_max(l);
		int whole = batch_claims(l);
		/* A batch ends at the next multiple of B; a unit can hold more
		 * than one sample, so B + 1 units bound it. */
		uint64_t end = (l->reserved / l->batch + 1) * l->batch;
		if (whole)
			kmax = (unsigned)l->batch + 1;
		if (kmax > cap) {
			void *nu = realloc(u, kmax * sizeof(*u)), *np;
			if (nu)
				u = nu;
			np = nu ? realloc(pos, kmax * sizeof(*pos)) : NULL;
			if (np)
				pos = np;
			if (!nu || !np) {
				l->err = l->err ? l->err : -ENOMEM;
				pthread_cond_broadcast(&l->ready);
				break;
			}
			cap = kmax;
		}
		/* A group takes at most a fair share of the room the prefetch
		 * leaves, so that with a small window (batch 8, prefetch 2: 16
		 * samples) the readers still read at once instead of taking
		 * turns, one holding the whole window. */
		if (!whole && kmax > 1 && l->nthreads > 1 && l->plan.kind != DRV_U_STREAM) {
			uint64_t room = l->limit > l->reserved ? l->limit - l->reserved : 1;
			uint64_t share = (room + l->nthreads - 1) / l->nthreads;

			if (share < kmax)
				kmax = share ? (unsigned)share : 1;
		}
		uint64_t nres = 0;
		do {
			pos[k] = l->next++;
			drv_plan_unit(&l->plan, pos[k], &u[k]);
			if (l->plan.kind != DRV_U_STREAM) {
				uint64_t r = u[k].nsamples < l->need - l->reserved
						 ? u[k].nsamples
						 : l->need - l->reserved;
				l->reserved += r;
				nres += r;
			}
			k++;
		} while (k < kmax && can_claim(l) && (!whole || l->reserved < end));
		uint32_t split = l->split;
		uint64_t epoch = l->epoch;
		l->busy++;
		pthread_mutex_unlock(&l->mu);

		struct drv_io io = {0};
		int ret = 0;
		for (unsigned i = 0; i < k && !ret; i++)
			ret = drv_read_unit(w, l, split, epoch, pos[i], &u[i], &io);
		if (!ret && l->plan.kind != DRV_U_STREAM)
			drv_loader_complete(l, nres, &io);

		pthread_mutex_lock(&l->mu);
		if (ret && !l->err) {
			l->err = ret;
			pthread_cond_broadcast(&l->ready);
			pthread_cond_broadcast(&l->work);
		}
		if (--l->busy == 0)
			pthread_cond_broadcast(&l->idle);
		/* Nothing left to claim: the accelerator may be waiting for samples
		 * that will never come (a short file); let it see that. */
		if (l->next >= l->plan.units)
			pthread_cond_broadcast(&l->ready);
	}
	pthread_mutex_unlock(&l->mu);
	free(u);
	free(pos);
	return NULL;
}

uint64_t drv_loader_reserve(struct drv_loader *l, uint64_t want)
{
	uint64_t got = 0;

	pthread_mutex_lock(&l->mu);
	/* Everything reserved is not everything done: another stream may give
	 * back what it reserved past its file's end, and then the samples must
	 * come from the files still open, this one among them. */
	while (l->active && !l->err && l->done < l->need && l->reserved >= l->limit)
		pthread_cond_wait(&l->work, &l->mu);
	if (l->active && !l->err && l->reserved < l->need) {
		uint64_t room = (l->limit < l->need ? l->limit : l->need) - l->reserved;
		got = want < room ? want : room;
		l->reserved += got;
	}
	pthread_mutex_unlock(&l->mu);
	return got;
}

void drv_loader_release(struct drv_loader *l, uint64_t n)
{
	pthread_mutex_lock(&l->mu);
	l->reserved -= n;
	pthread_cond_broadcast(&l->work);
	pthread_cond_broadcast(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

void drv_loader_complete(struct drv_loader *l, uint64_t n, struct drv_io *io)
{
	pthread_mutex_lock(&l->mu);
	l->done += n;
	l->io.bytes += io->bytes;
	l->io.index_bytes += io->index_bytes;
	l->io.opens += io->opens;
	l->io.reads += io->reads;
	l->io.decoded += io->decoded;
	l->io.samples += n;
	memset(io, 0, sizeof(*io));
	/* Wake the accelerator only when its batch is complete: one wake-up per
	 * batch, not per sample. */
	if (n && l->waiting && l->done >= l->waiting)
		pthread_cond_signal(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

int drv_loader_new(struct drv_ctx *c, unsigned threads, struct drv_loader **out)
{
	struct drv_loader *l = calloc(1, sizeof(*l));
	int ret = -ENOMEM;

	if (!l)
		return -ENOMEM;
	l->c = c;
	l->nthreads = threads ? threads : 1;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->work, NULL);
	pthread_cond_init(&l->ready, NULL);
	pthread_cond_init(&l->idle, NULL);
	l->th = calloc(l->nthreads, sizeof(*l->th));
	l->slot = calloc(l->nthreads, sizeof(*l->slot));
	if (!l->th || !l->slot)
		goto fail;
	for (unsigned i = 0; i < l->nthreads; i++) {
		l->slot[i].l = l;
		l->slot[i].w = drv_worker_new(c, i);
		if (!l->slot[i].w)
			goto fail;
	}
	for (unsigned i = 0; i < l->nthreads; i++) {
		ret = -pthread_create(&l->th[i], NULL, reader_main, &l->slot[i]);
		if (ret)
			goto fail;
		l->started++;
	}
	*out = l;
	return 0;
fail:
	drv_loader_free(l);
	return ret;
}

void drv_loader_free(struct drv_loader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	l->active = 0;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	for (unsigned i = 0; i < l->started; i++)
		pthread_join(l->th[i], NULL);
	if (l->slot)
		for (unsigned i = 0; i < l->nthreads; i++)
			drv_worker_free(l->slot[i].w);
	free(l->slot);
	free(l->th);
	pthread_cond_destroy(&l->idle);
	pthread_cond_destroy(&l->ready);
	pthread_cond_destroy(&l->work);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

static uint64_t limit_of(const struct drv_loader *l)
{
	uint64_t lim = (l->consumed + l->depth) * l->batch;

	return lim < l->need ? lim : l->need;
}

void drv_loader_start(struct drv_loader *l, const struct drv_plan *plan, uint32_t split,
		      uint64_t epoch, uint64_t need, uint64_t batch, unsigned depth)
{
	pthread_mutex_lock(&l->mu);
	l->plan = *plan;
	l->split = split;
	l->epoch = epoch;
	l->need = need;
	l->batch = batch;
	l->depth = depth ? depth : 1;
	l->next = l->reserved = l->done = l->consumed = 0;
	l->err = 0;
	memset(&l->io, 0, sizeof(l->io));
	l->limit = limit_of(l);
	l->active = 1;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
}

int drv_loader_batch(struct drv_loader *l, uint64_t step)
{
	uint64_t want = (step + 1) * l->batch;
	int ret = 0;

	pthread_mutex_lock(&l->mu);
	if (want > l->need)
		want = l->need;
	while (l->done < want && !l->err) {
		/* Everything claimed, nobody reading, still short: the files hold
		 * fewer samples than the config says. */
		if (l->next >= l->plan.units && l->busy == 0) {
			ret = -ENODATA;
			break;
		}
		l->waiting = want;
		pthread_cond_wait(&l->ready, &l->mu);
	}
	l->waiting = 0;
	if (l->err)
		ret = l->err;
	if (!ret) {
		l->consumed = step + 1;
		l->limit = limit_of(l);
		pthread_cond_broadcast(&l->work);
	}
	pthread_mutex_unlock(&l->mu);
	return ret;
}

int drv_loader_finish(struct drv_loader *l, struct drv_io *io)
{
	int ret;

	pthread_mutex_lock(&l->mu);
	l->active = 0;
	pthread_cond_broadcast(&l->work);
	while (l->busy)
		pthread_cond_wait(&l->idle, &l->mu);
	*io = l->io;
	ret = l->err;
	pthread_mutex_unlock(&l->mu);
	return ret;
}
