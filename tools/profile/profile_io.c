/* `dliofs profile`: one measurement. N clients, each with one request in
 * flight, read or write requests of one size at random 4 KiB-aligned
 * offsets or sequentially through a region of their own, for a fixed time.
 * One client is a thread doing pread/pwrite; with O_DIRECT, N > 1 clients
 * are N requests kept in flight by one thread through Linux AIO (what
 * fio's libaio engine does with iodepth=N): N threads would measure this
 * machine's scheduler as much as the storage at high IOPS. Every
 * request's latency is kept, so the profile's latency tables are the
 * measured distributions themselves. */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/prng.h"
#include "profile_i.h"

#define ALIGN 4096ULL
/* Latencies kept per measurement at most (16 MiB of them); requests past
 * that are still counted. */
#define MAX_SAMPLES (2U << 20)

struct worker {
	const struct prof_set *s;
	const struct prof_point *pt;
	unsigned id;
	uint64_t key, draws;
	uint64_t t0, t_warm, t_end;
	prof_stop_t *stop;
	void *buf;
	uint64_t *lat;
	size_t nlat, cap;
	uint64_t ops, bytes, last_done;
	uint64_t all_ops, all_bytes, all_done; /* warm-up included */
	int err;
	/* sequential: this thread's region of the set, in positions that
	 * go on past its end (a position's byte is at pos % total). */
	uint64_t lo, hi, pos;
	uint64_t advance; /* how far pos went, its wraps included */
	int wrapped;
	unsigned depth;	      /* AIO: requests kept in flight (one region each) */
};

static unsigned file_at(const struct prof_set *s, uint64_t x)
{
	unsigned lo = 0, hi = s->n - 1;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo + 1) / 2;

		if (s->prefix[mid] <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The next request's file and offset; -1 when no file holds the size. */
static int next_req(struct worker *w, unsigned *fi, uint64_t *off)
{
	const struct prof_set *s = w->s;
	uint64_t size = w->pt->size;

	if (w->pt->pat == PROF_RANDOM) {
		for (int tries = 0; tries < 64; tries++) {
			uint64_t x = dl_prng_below(w->key, w->draws++, s->total);
			unsigned i = file_at(s, x);

			if (s->f[i].size < size)
				continue;
			*fi = i;
			*off =
			    dl_prng_below(w->key, w->draws++, (s->f[i].size - size) / ALIGN + 1) *
			    ALIGN;
			return 0;
		}
		return -1;
	}
	for (int tries = 0; tries < 2 * (int)s->n + 2; tries++) {
		unsigned i;
		uint64_t in, at, end;

		if (w->pos + size > w->hi) {
			/* Round again: what it reads now it has read. */
			w->advance += w->pos - w->lo;
			w->pos = w->lo;
			w->wrapped = 1;
		}
		at = w->pos % s->total;
		i = file_at(s, at);
		in = at - s->prefix[i];
		if (in + size <= s->f[i].size) {
			*fi = i;
			*off = in;
			w->pos += size;
			return 0;
		}
		/* The rest of this file is too short: on to the next one. */
		end = i + 1 < s->n ? s->prefix[i + 1] : s->total;
		w->pos += end - at;
	}
	return -1;
}

static void keep(struct worker *w, uint64_t a, uint64_t b, uint64_t n)
{
	w->all_ops++;
	w->all_bytes += n;
	w->all_done = b;
	if (a < w->t_warm)
		return;
	w->ops++;
	w->bytes += n;
	w->last_done = b;
	if (w->nlat < w->cap)
		w->lat[w->nlat++] = b - a;
}

/* ---- N requests in flight through Linux AIO (O_DIRECT only) ---- */

struct slot {
	struct iocb cb;
	uint64_t t;	      /* submitted */
	uint64_t lo, hi, pos; /* its sequential region */
	uint64_t advance;
	void *buf;
};

static int aio_next(struct worker *w, struct slot *sl)
{
	unsigned fi;
	uint64_t off;

	w->lo = sl->lo;
	w->hi = sl->hi;
	w->pos = sl->pos;
	w->advance = sl->advance;
	if (next_req(w, &fi, &off))
		return -EFBIG;
	sl->pos = w->pos;
	sl->advance = w->advance;
	memset(&sl->cb, 0, sizeof(sl->cb));
	sl->cb.aio_data = (uint64_t)(uintptr_t)sl;
	sl->cb.aio_lio_opcode = w->pt->write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
	sl->cb.aio_fildes = (uint32_t)w->s->f[fi].fd;
	sl->cb.aio_buf = (uint64_t)(uintptr_t)sl->buf;
	sl->cb.aio_nbytes = w->pt->size;
	sl->cb.aio_offset = (int64_t)off;
	return 0;
}

static int aio_submit(aio_context_t ctx, struct worker *w, struct slot *sl)
{
	struct iocb *p = &sl->cb;
	int ret = aio_next(w, sl);

	if (ret)
		return ret;
	sl->t = dl_mono_ns();
	if (syscall(SYS_io_submit, ctx, 1, &p) != 1)
		return -errno;
	return 0;
}

/* Reap completions until none is in flight, submitting a new request for
 * each while there is time. */
static void aio_loop(aio_context_t ctx, struct worker *w, unsigned inflight)
{
	struct io_event ev[64];

	while (inflight) {
		struct timespec to = {0, 100000000};
		long n = syscall(SYS_io_getevents, ctx, 1, 64, ev, &to);
		uint64_t b = dl_mono_ns();

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			w->err = errno;
			return; /* io_destroy cancels or waits for the rest */
		}
		for (long i = 0; i < n; i++) {
			struct slot *x = (struct slot *)(uintptr_t)ev[i].data;

			inflight--;
			if (ev[i].res != (int64_t)w->pt->size) {
				w->err = ev[i].res < 0 ? (int)-ev[i].res : EIO;
				continue;
			}
			keep(w, x->t, b, w->pt->size);
			if (w->err || *w->stop || b >= w->t_end)
				continue;
			if (aio_submit(ctx, w, x)) {
				w->err = w->err ? w->err : EIO;
				continue;
			}
			inflight++;
		}
	}
}

static void *work_aio(void *arg)
{
	struct worker *w = arg;
	struct timespec ts = {(time_t)(w->t0 / 1000000000ULL), (long)(w->t0 % 1000000000ULL)};
	uint64_t region = w->s->total / w->depth / 4096 * 4096;
	aio_context_t ctx = 0;
	struct slot *sl = calloc(w->depth, sizeof(*sl));
	unsigned inflight = 0;

	if (!sl || syscall(SYS_io_setup, w->depth, &ctx)) {
		w->err = sl ? errno : ENOMEM;
		free(sl);
		return NULL;
	}
	for (unsigned i = 0; i < w->depth; i++) {
		sl[i].buf = (char *)w->buf + (size_t)i * w->pt->size;
		sl[i].lo = w->pt->start + (region >= w->pt->size ? i * region : 0);
		sl[i].hi = sl[i].lo + (region >= w->pt->size ? region : w->s->total);
		sl[i].pos = sl[i].lo;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	for (unsigned i = 0; i < w->depth && !w->err; i++) {
		int ret = aio_submit(ctx, w, &sl[i]);

		if (ret)
			w->err = -ret;
		else
			inflight++;
	}
	aio_loop(ctx, w, inflight);
	syscall(SYS_io_destroy, ctx);
	/* The point's figures: its slot that went furthest. */
	for (unsigned i = 0; i < w->depth; i++) {
		uint64_t a = sl[i].advance + (sl[i].pos - sl[i].lo);

		w->advance = a > w->advance ? a : w->advance;
	}
	free(sl);
	return NULL;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct timespec ts = {(time_t)(w->t0 / 1000000000ULL), (long)(w->t0 % 1000000000ULL)};
	uint64_t size = w->pt->size;

	/* Every thread starts at t0. */
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	while (!*w->stop) {
		uint64_t a = dl_mono_ns(), b, off;
		unsigned fi;
		ssize_t n;

		if (a >= w->t_end)
			break;
		if (next_req(w, &fi, &off)) {
			w->err = EFBIG;
			break;
		}
		if (w->pt->write)
			n = pwrite(w->s->f[fi].fd, w->buf, size, (off_t)off);
		else
			n = pread(w->s->f[fi].fd, w->buf, size, (off_t)off);
		b = dl_mono_ns();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			break;
		}
		if ((uint64_t)n != size) {
			w->err = EIO;
			break;
		}
		keep(w, a, b, (uint64_t)n);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void prof_point_free(struct prof_point *pt)
{
	free(pt->lat);
	pt->lat = NULL;
	pt->nlat = 0;
}

/* Gather the threads' counts and latencies into pt. */
static int gather(struct prof_point *pt, struct worker *w, unsigned n, uint64_t t_warm, uint64_t t0)
{
	uint64_t done = 0, all_done = 0, all_ops = 0, all_bytes = 0;
	size_t total = 0;

	pt->ops = pt->bytes = 0;
	for (unsigned i = 0; i < n; i++) {
		pt->ops += w[i].ops;
		pt->bytes += w[i].bytes;
		total += w[i].nlat;
		done = w[i].last_done > done ? w[i].last_done : done;
		all_done = w[i].all_done > all_done ? w[i].all_done : all_done;
		all_ops += w[i].all_ops;
		all_bytes += w[i].all_bytes;
		if (!pt->err && w[i].err)
			pt->err = w[i].err;
	}
	pt->elapsed_ns = done > t_warm ? done - t_warm : 0;
	pt->advance = 0;
	pt->wrapped = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t a = w[i].depth > 1 ? w[i].advance : w[i].advance + (w[i].pos - w[i].lo);

		pt->advance = a > pt->advance ? a : pt->advance;
		pt->wrapped |= w[i].wrapped;
	}
	/* Slow requests and a short time: no request started after the
	 * warm-up, so the figures include it. */
	if (!pt->ops && all_ops) {
		pt->ops = all_ops;
		pt->bytes = all_bytes;
		pt->elapsed_ns = all_done - t0;
	}
	pt->lat = malloc((total ? total : 1) * sizeof(*pt->lat));
	if (!pt->lat)
		return -ENOMEM;
	pt->nlat = 0;
	for (unsigned i = 0; i < n; i++) {
		memcpy(pt->lat + pt->nlat, w[i].lat, w[i].nlat * sizeof(*pt->lat));
		pt->nlat += w[i].nlat;
	}
	qsort(pt->lat, pt->nlat, sizeof(*pt->lat), cmp_u64);
	return 0;
}

int prof_run(const struct prof_set *s, struct prof_point *pt, prof_stop_t *stop)
{
	/* With O_DIRECT, one thread keeps every request in flight. */
	unsigned depth = s->bypass == PROF_DIRECT && pt->threads > 1 ? pt->threads : 1;
	unsigned n = depth > 1 ? 1 : pt->threads ? pt->threads : 1;
	struct worker *w = calloc(n, sizeof(*w));
	pthread_t *tid = calloc(n, sizeof(*tid));
	uint64_t t0, warm, region = s->total / n;
	unsigned started = 0;
	int ret = -ENOMEM;

	pt->err = 0;
	prof_point_free(pt);
	if (!w || !tid)
		goto out;
	/* Buffered modes: tell the kernel the pattern, as a job would. */
	for (unsigned i = 0; s->bypass != PROF_DIRECT && i < s->n; i++)
		posix_fadvise(s->f[i].fd, 0, 0,
			      pt->pat == PROF_RANDOM ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL);
	prof_uncache(s);
	warm = pt->time_ns / 20 < 100000000ULL ? pt->time_ns / 20 : 100000000ULL;
	/* Time to start the threads, and the idle time asked for. */
	t0 = dl_mono_ns() + (pt->idle_ns > 5000000ULL ? pt->idle_ns : 5000000ULL);
	for (unsigned i = 0; i < n; i++) {
		w[i].s = s;
		w[i].pt = pt;
		w[i].id = i;
		w[i].key = dl_key3(0x70f11e, pt->size, ((uint64_t)pt->threads << 32) | i);
		w[i].t0 = t0;
		w[i].t_warm = t0 + warm;
		w[i].t_end = t0 + pt->time_ns;
		w[i].stop = stop;
		w[i].cap = MAX_SAMPLES / n;
		w[i].depth = depth;
		w[i].lat = malloc(w[i].cap * sizeof(*w[i].lat));
		w[i].lo = (uint64_t)i * region / ALIGN * ALIGN;
		if (region < pt->size)
			w[i].lo = 0;
		w[i].hi = w[i].lo + (region >= pt->size ? region : s->total);
		w[i].lo += pt->start;
		w[i].hi += pt->start;
		w[i].pos = w[i].lo;
		if (!w[i].lat || posix_memalign(&w[i].buf, ALIGN, pt->size * depth))
			goto join;
		/* Random bytes, so that a compressing or deduplicating store
		 * does not write less than it is given. */
		dl_prng_fill(w[i].key, 0, w[i].buf, pt->size * depth);
	}
	for (; started < n; started++)
		if (pthread_create(&tid[started], NULL, depth > 1 ? work_aio : work, &w[started]))
			break;
join:
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (started == n)
		ret = gather(pt, w, n, t0 + warm, t0);
	if (!ret && !pt->ops)
		ret = -(pt->err ? pt->err : EIO);
out:
	for (unsigned i = 0; w && i < n; i++) {
		free(w[i].lat);
		free(w[i].buf);
	}
	free(w);
	free(tid);
	if (ret && !pt->err)
		pt->err = -ret;
	return ret;
}

double prof_rate(const struct prof_point *pt)
{
	return pt->elapsed_ns ? (double)pt->bytes * 1e9 / (double)pt->elapsed_ns : 0;
}

double prof_iops(const struct prof_point *pt)
{
	return pt->elapsed_ns ? (double)pt->ops * 1e9 / (double)pt->elapsed_ns : 0;
}

uint64_t prof_pct(const uint64_t *v, size_t n, double q)
{
	size_t r;

	if (!n)
		return 0;
	r = (size_t)(q * (double)n + 0.999999);
	return v[(r ? r : 1) - 1 < n ? (r ? r : 1) - 1 : n - 1];
}

int prof_resident(int fd, uint64_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t step = 256ULL << 20;

	for (uint64_t off = 0; off < size; off += step) {
		size_t len = (size_t)(size - off < step ? size - off : step);
		size_t np = (len + (size_t)page - 1) / (size_t)page;
		unsigned char *vec = malloc(np);
		void *m;
		int hit = 0;

		if (!vec)
			return -1;
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
		if (m == MAP_FAILED || mincore(m, len, vec)) {
			if (m != MAP_FAILED)
				munmap(m, len);
			free(vec);
			return -1;
		}
		for (size_t i = 0; i < np && !hit; i++)
			hit = vec[i] & 1;
		munmap(m, len);
		free(vec);
		if (hit)
			return 1;
	}
	return 0;
}

void prof_uncache(const struct prof_set *s)
{
	switch (s->bypass) {
	case PROF_FADVISE:
		for (unsigned i = 0; i < s->n; i++) {
			/* Dirty pages are not dropped: write ours out first. */
			if (s->own)
				fdatasync(s->f[i].fd);
			posix_fadvise(s->f[i].fd, 0, 0, POSIX_FADV_DONTNEED);
		}
		break;
	case PROF_DROP:
		prof_drop_caches();
		break;
	default:
		break;
	}
}
