/* The trace recorder: request threads put records into striped rings without
 * locks or system calls; one writer thread drains the rings into the file
 * with large writes, and at stop appends the name table and the footer.
 *
 * Each stripe is a bounded multi-producer, single-consumer ring. A producer
 * claims a position with one CAS on the stripe's head (threads are spread
 * over stripes by a hash of pthread_self, so the CAS is almost never
 * contended), copies its record into the slot and publishes it by storing
 * pos + 1 into the slot's sequence word. The writer reads slots in order
 * while their sequence says "published for this lap", then releases them by
 * advancing the stripe's tail. A ring that is full drops the record and
 * counts it: a request never waits for the writer.
 *
 * A full disk must not cost the file its name table and footer: the writer
 * keeps TRACE_RESERVE bytes allocated beyond what it has written
 * (fallocate, KEEP_SIZE) and writes records only into space it could
 * reserve ahead of them. When the disk is full it stops writing records
 * (counting each one dropped from then on), says so once through the error
 * hook, and closes the file with as much of the name table as the reserve
 * holds and the footer. A write that fails half-way is cut back to the last
 * whole record, so the file's record count is exact. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "trace_i.h"

/* A slot is one cache line: producers of different slots never share one. */
struct trace_slot {
	_Atomic uint64_t seq; /* pos + 1 once the record for position pos is in */
	struct dl_trace_rec rec;
};
_Static_assert(sizeof(struct trace_slot) == 64, "trace slot is one cache line");
_Static_assert(sizeof(struct dl_trace_rec) == 56, "trace record layout changed");
_Static_assert(sizeof(struct dl_trace_header) == 296, "trace header layout changed");
_Static_assert(sizeof(struct dl_trace_footer) == 48, "trace footer layout changed");
_Static_assert(sizeof(struct dl_trace_name) == 16, "trace name layout changed");

struct trace_ring {
	/* Written by producers only. */
	_Alignas(64) _Atomic uint64_t head;
	_Atomic uint64_t tail_cache; /* producers' last view of tail */
	_Atomic uint64_t dropped;
	/* Written by the writer only. */
	_Alignas(64) _Atomic uint64_t tail;
};

/* Distinct file ids seen by the writer, for the name table. */
struct trace_idset {
	uint64_t *keys; /* TRACE_EMPTY marks a free slot */
	size_t cap, n;
	int has_empty_key; /* the id equal to TRACE_EMPTY was seen */
	uint64_t last;	   /* most records repeat the previous id */
	int has_last;
	uint64_t lost; /* ids not kept once TRACE_MAX_NAMES was reached */
};
#define TRACE_EMPTY UINT64_MAX

struct dl_trace {
	/* Read-only after start: what producers need, on its own line. */
	_Alignas(64) struct trace_ring *rings;
	struct trace_slot *slots; /* stripes * nslots, mapped (slots_len bytes) */
	uint64_t nslots, slot_mask;
	size_t slots_len;
	uint32_t stripe_mask;
	uint32_t ops_mask;

	_Alignas(64) _Atomic int stop;
	_Atomic uint64_t written;
	_Atomic uint64_t io_dropped; /* drained but lost to a failed write */

	/* The writer's own state. */
	int fd;
	int err; /* first write error, returned by dl_trace_stop */
	uint64_t file_off;
	uint64_t reserved_end; /* bytes allocated for the file; 0: cannot reserve */
	void (*_Atomic on_error)(void *arg, int err, uint64_t written);
	void *_Atomic error_arg;
	_Atomic int io_err; /* err, for readers outside the writer */
	int footer_written;
	uint32_t poll_us, write_delay_us;
	char *buf;
	size_t buf_len;
	uint64_t buf_recs;
	uint64_t last_flush_ns;
	struct trace_idset ids;
	int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len);
	void *path_arg;
	pthread_t writer;
};

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

/* pthread_self() values are page-aligned stack addresses: mix all bits. */
static inline uint32_t stripe_of_self(const struct dl_trace *t)
{
	uint64_t x = (uint64_t)pthread_self();
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (uint32_t)x & t->stripe_mask;
}

void dl_trace_record(struct dl_trace *t, const struct dl_trace_rec *r)
{
	if (r->op < 32 && !(t->ops_mask & (1u << r->op)))
		return;
	uint32_t stripe = stripe_of_self(t);
	struct trace_ring *g = &t->rings[stripe];
	uint64_t pos = atomic_load_explicit(&g->head, memory_order_relaxed);
	for (;;) {
		uint64_t tail = atomic_load_explicit(&g->tail_cache, memory_order_acquire);
		if ((int64_t)(pos - tail) >= (int64_t)t->nslots) {
			/* Acquire pairs with the writer's release of the slots it
			 * has copied out: only then may they be overwritten. */
			tail = atomic_load_explicit(&g->tail, memory_order_acquire);
			atomic_store_explicit(&g->tail_cache, tail, memory_order_release);
			if ((int64_t)(pos - tail) >= (int64_t)t->nslots) {
				atomic_fetch_add_explicit(&g->dropped, 1, memory_order_relaxed);
				return;
			}
		}
		if (atomic_compare_exchange_weak_explicit(&g->head, &pos, pos + 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}
	struct trace_slot *s = &t->slots[(uint64_t)stripe * t->nslots + (pos & t->slot_mask)];
	s->rec = *r;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
}

uint64_t dl_trace_dropped(const struct dl_trace *t)
{
	uint64_t n = atomic_load_explicit(&t->io_dropped, memory_order_relaxed);
	for (uint32_t i = 0; i <= t->stripe_mask; i++)
		n += atomic_load_explicit(&t->rings[i].dropped, memory_order_relaxed);
	return n;
}

/* Records accepted into the rings, less those a failed write lost: once the
 * producers are quiet this is exactly what the file will hold, even before
 * the writer has drained it (so a caller can report it just before stop). */
uint64_t dl_trace_written(const struct dl_trace *t)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i <= t->stripe_mask; i++)
		n += atomic_load_explicit(&t->rings[i].head, memory_order_relaxed);
	uint64_t lost = atomic_load_explicit(&t->io_dropped, memory_order_relaxed);
	return n > lost ? n - lost : 0;
}

/* ---- the writer ---- */

static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		ssize_t n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Room for len more bytes, with TRACE_RESERVE kept beyond them for the
 * tail. 0, or -ENOSPC when the file system has no room for them. */
static int reserve(struct dl_trace *t, uint64_t len)
{
	uint64_t need = t->file_off + len + TRACE_RESERVE, grow;

	if (!t->reserved_end || need <= t->reserved_end)
		return 0;
	/* Grow in large steps: one fallocate per many writes. */
	grow = need - t->reserved_end;
	if (grow < 16 * TRACE_WRITE_BUF)
		grow = 16 * TRACE_WRITE_BUF;
	while (fallocate(t->fd, FALLOC_FL_KEEP_SIZE, (off_t)t->reserved_end, (off_t)grow)) {
		if (errno == EINTR)
			continue;
		if (errno != ENOSPC && errno != EDQUOT) {
			t->reserved_end = 0; /* cannot reserve here: plain writes */
			return 0;
		}
		/* Less than a step is left: take just what this write needs. */
		if (grow > need - t->reserved_end) {
			grow = need - t->reserved_end;
			continue;
		}
		return -errno;
	}
	t->reserved_end += grow;
	return 0;
}

static void fail_io(struct dl_trace *t, int err)
{
	void (*fn)(void *, int, uint64_t) = atomic_load(&t->on_error);

	if (t->err)
		return;
	t->err = err;
	atomic_store_explicit(&t->io_err, err, memory_order_relaxed);
	if (fn)
		fn(atomic_load(&t->error_arg), err,
		   atomic_load_explicit(&t->written, memory_order_relaxed));
}

/* Write len bytes at the end; on failure cut what a partial write left. */
static int append(struct dl_trace *t, const void *p, size_t len)
{
	int ret = write_all(t->fd, p, len);

	if (ret) {
		if (ftruncate(t->fd, (off_t)t->file_off) == 0)
			lseek(t->fd, (off_t)t->file_off, SEEK_SET);
		return ret;
	}
	t->file_off += len;
	return 0;
}

/* How many of the buffer's records the file system still has room for,
 * the tail's reserve kept: the most k with reserve(k records) == 0. */
static uint64_t records_that_fit(struct dl_trace *t)
{
	const uint64_t rs = sizeof(struct dl_trace_rec);
	uint64_t lo = 0, hi = t->buf_recs;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (reserve(t, mid * rs))
			hi = mid;
		else
			lo = mid;
	}
	return lo;
}

/* Write the buffer out. Records that cannot be written are counted as
 * dropped, so that nothing is ever lost without a count. When the disk
 * fills, the records that still fit go out first: a writer that fell
 * behind holds a whole buffer (1 MiB), which may not fit where half of it
 * would. */
static void flush_buf(struct dl_trace *t)
{
	uint64_t kept = 0;

	if (t->buf_len && !t->err) {
		uint64_t len = t->buf_len;
		int ret = reserve(t, len);

		kept = t->buf_recs;
		if (ret) {
			kept = records_that_fit(t);
			len = kept * sizeof(struct dl_trace_rec);
		}
		if (len) {
			int wret = append(t, t->buf, len);

			if (wret) {
				kept = 0;
				ret = wret;
			}
		}
		atomic_fetch_add_explicit(&t->written, kept, memory_order_relaxed);
		if (ret)
			fail_io(t, ret);
	}
	atomic_fetch_add_explicit(&t->io_dropped, t->buf_recs - kept, memory_order_relaxed);
	t->buf_len = 0;
	t->buf_recs = 0;
	t->last_flush_ns = dl_clock_ns(CLOCK_MONOTONIC_COARSE);
}

static size_t idset_slot(const struct trace_idset *s, uint64_t id)
{
	uint64_t h = id * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 20) & (s->cap - 1);
}

static int idset_grow(struct trace_idset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 4096;
	uint64_t *nk = malloc(ncap * sizeof(*nk));
	if (!nk)
		return -ENOMEM;
	memset(nk, 0xff, ncap * sizeof(*nk));
	uint64_t *old = s->keys;
	size_t ocap = s->cap;
	s->keys = nk;
	s->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i] == TRACE_EMPTY)
			continue;
		size_t j = idset_slot(s, old[i]);
		while (nk[j] != TRACE_EMPTY)
			j = (j + 1) & (ncap - 1);
		nk[j] = old[i];
	}
	free(old);
	return 0;
}

static void idset_add(struct trace_idset *s, uint64_t id)
{
	if (s->has_last && s->last == id)
		return;
	s->last = id;
	s->has_last = 1;
	if (id == TRACE_EMPTY) {
		s->has_empty_key = 1;
		return;
	}
	if (s->cap) {
		size_t j = idset_slot(s, id);
		while (s->keys[j] != TRACE_EMPTY) {
			if (s->keys[j] == id)
				return;
			j = (j + 1) & (s->cap - 1);
		}
	}
	if (s->n >= TRACE_MAX_NAMES) {
		s->lost++;
		return;
	}
	/* Keep the table at most half full. */
	if ((s->n + 1) * 2 > s->cap && idset_grow(s)) {
		s->lost++;
		return;
	}
	size_t j = idset_slot(s, id);
	while (s->keys[j] != TRACE_EMPTY)
		j = (j + 1) & (s->cap - 1);
	s->keys[j] = id;
	s->n++;
}

/* Copy out what one stripe has published; returns the number of records. */
static uint64_t drain_ring(struct dl_trace *t, uint32_t stripe)
{
	struct trace_ring *g = &t->rings[stripe];
	struct trace_slot *base = &t->slots[(uint64_t)stripe * t->nslots];
	uint64_t pos = atomic_load_explicit(&g->tail, memory_order_relaxed);
	uint64_t n = 0;

	for (;;) {
		struct trace_slot *s = &base[pos & t->slot_mask];
		if (atomic_load_explicit(&s->seq, memory_order_acquire) != pos + 1)
			break;
		if (t->buf_len + sizeof(s->rec) > TRACE_WRITE_BUF) {
			/* Free the slots copied so far before the write. */
			atomic_store_explicit(&g->tail, pos, memory_order_release);
			flush_buf(t);
		}
		memcpy(t->buf + t->buf_len, &s->rec, sizeof(s->rec));
		idset_add(&t->ids, s->rec.file_id);
		if (s->rec.job)
			idset_add(&t->ids, DL_TRACE_JOB_ID(s->rec.job));
		t->buf_len += sizeof(s->rec);
		t->buf_recs++;
		pos++;
		n++;
	}
	atomic_store_explicit(&g->tail, pos, memory_order_release);
	return n;
}

static void sleep_us(uint32_t us)
{
	struct timespec ts = {.tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Name table (ids in ascending order) and footer, after the last record.
 * After a write error only what the reserve holds is written (names as far
 * as they fit, then the footer): the file stays readable. */
static void write_tail(struct dl_trace *t)
{
	struct trace_idset *s = &t->ids;
	size_t nids = 0;
	uint64_t *ids = malloc((s->n + 1) * sizeof(*ids));
	uint64_t nnames = 0, names_offset, room;
	struct dl_trace_footer f = {0};
	char path[4096];
	int ret;

	flush_buf(t);
	names_offset = t->file_off;
	if (!ids) {
		if (!t->err)
			t->err = -ENOMEM;
	} else {
		for (size_t i = 0; i < s->cap; i++)
			if (s->keys[i] != TRACE_EMPTY)
				ids[nids++] = s->keys[i];
		if (s->has_empty_key)
			ids[nids++] = TRACE_EMPTY;
		qsort(ids, nids, sizeof(*ids), cmp_u64);
	}
	/* The names go out in one buffer per TRACE_WRITE_BUF; what is written
	 * must leave room for the footer when space is short. */
	room = t->reserved_end > t->file_off + sizeof(f) ? t->reserved_end - t->file_off - sizeof(f)
							  : 0;
	for (size_t i = 0; i < nids && t->path_of; i++) {
		struct dl_trace_name nm = {.file_id = ids[i]};

		path[0] = 0;
		if (t->path_of(t->path_arg, ids[i], path, sizeof(path)) < 0)
			continue;
		path[sizeof(path) - 1] = 0;
		nm.len = (uint32_t)strlen(path);
		if (t->buf_len + sizeof(nm) + nm.len > TRACE_WRITE_BUF) {
			if (t->err && t->buf_len > room)
				break;
			/* The reserve is there for the tail: use it before asking
			 * for more (which would want another reserve beyond). */
			if ((t->buf_len > room && reserve(t, t->buf_len)) ||
			    append(t, t->buf, t->buf_len)) {
				t->buf_len = 0;
				break;
			}
			room = room > t->buf_len ? room - t->buf_len : 0;
			t->buf_len = 0;
		}
		memcpy(t->buf + t->buf_len, &nm, sizeof(nm));
		memcpy(t->buf + t->buf_len + sizeof(nm), path, nm.len);
		t->buf_len += sizeof(nm) + nm.len;
		nnames++;
	}
	free(ids);
	if (t->buf_len) {
		ret = t->buf_len <= room ? 0 : t->err ? -ENOSPC : reserve(t, t->buf_len);
		if (!ret)
			ret = append(t, t->buf, t->buf_len);
		if (ret) {
			/* The names did not fit: the records stay readable without. */
			if (ftruncate(t->fd, (off_t)names_offset) == 0)
				lseek(t->fd, (off_t)names_offset, SEEK_SET);
			t->file_off = names_offset;
			nnames = 0;
		}
		t->buf_len = 0;
	}
	/* Records written = everything before the name table. */
	f.nrecords = atomic_load_explicit(&t->written, memory_order_relaxed);
	f.dropped = dl_trace_dropped(t);
	f.names_offset = names_offset;
	f.nnames = nnames;
	f.end_mono_ns = dl_clock_ns(CLOCK_MONOTONIC);
	memcpy(f.magic, DL_TRACE_MAGIC, sizeof(f.magic));
	ret = append(t, &f, sizeof(f));
	if (ret)
		fail_io(t, ret);
	else
		t->footer_written = 1;
	/* What was reserved and not used goes back. */
	if (t->reserved_end > t->file_off)
		fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)t->file_off,
			  (off_t)(t->reserved_end - t->file_off));
}

static void *writer_main(void *arg)
{
	struct dl_trace *t = arg;
	/* A pass that drains this much from one ring means the producers are
	 * fast: go round again at once instead of sleeping. */
	uint64_t busy = t->nslots / 8 ? t->nslots / 8 : 1;

	for (;;) {
		int stopping = atomic_load_explicit(&t->stop, memory_order_acquire);
		uint64_t total = 0, most = 0;
		for (uint32_t i = 0; i <= t->stripe_mask; i++) {
			uint64_t n = drain_ring(t, i);
			total += n;
			if (n > most)
				most = n;
		}
		if (stopping && !total)
			break;
		/* Large writes: flush when full (in drain_ring), or when what
		 * is buffered has waited a while. */
		if (t->buf_len &&
		    dl_clock_ns(CLOCK_MONOTONIC_COARSE) - t->last_flush_ns > 250000000ULL)
			flush_buf(t);
		if (t->write_delay_us)
			sleep_us(t->write_delay_us);
		if (most < busy && !stopping)
			sleep_us(t->poll_us);
	}
	write_tail(t);
	return NULL;
}

/* ---- start / stop ---- */

/* The slots (8 MiB by default) and the write buffer (1 MiB) are mapped, not
 * malloc'd: freed blocks that large raise glibc's mmap threshold, and every
 * later start then came from arenas that never shrink (the daemon grew by
 * about 5 MB a start/stop cycle). Unmapped at stop, they are given back. */
static void *map_zeroed(size_t len)
{
	/* Populated now, as the memset of the malloc'd slots did: the FUSE
	 * workers recording into them never take a page fault. */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void trace_free(struct dl_trace *t)
{
	free(t->ids.keys);
	if (t->buf)
		munmap(t->buf, TRACE_WRITE_BUF);
	if (t->slots)
		munmap(t->slots, t->slots_len);
	free(t->rings);
	free(t);
}

int dl_trace_start_fd_opts(int fd, const char *config, uint32_t ops_mask,
			   int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
			   void *arg, const struct dl_trace_opts *opts, struct dl_trace **out)
{
	struct dl_trace_opts o = opts ? *opts : (struct dl_trace_opts){0};
	struct dl_trace *t;
	int ret;

	*out = NULL;
	t = aligned_alloc(64, sizeof(*t));
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	uint32_t stripes = pow2_at_least(o.stripes ? o.stripes : TRACE_DEFAULT_STRIPES);
	t->nslots = pow2_at_least(o.slots ? o.slots : TRACE_DEFAULT_SLOTS);
	t->slot_mask = t->nslots - 1;
	t->stripe_mask = stripes - 1;
	t->poll_us = o.poll_us ? o.poll_us : TRACE_DEFAULT_POLL_US;
	t->write_delay_us = o.write_delay_us;
	/* 0 means every operation: the header says which ops were traced. */
	t->ops_mask = ops_mask ? ops_mask : ((1u << DL_TOP__COUNT) - 2);
	t->path_of = path_of;
	t->path_arg = arg;

	t->rings = aligned_alloc(64, stripes * sizeof(*t->rings));
	t->slots_len = (size_t)stripes * t->nslots * sizeof(*t->slots);
	t->slots = map_zeroed(t->slots_len); /* page-aligned, zero: no memset */
	t->buf = map_zeroed(TRACE_WRITE_BUF);
	if (!t->rings || !t->slots || !t->buf) {
		ret = -ENOMEM;
		goto fail;
	}
	memset(t->rings, 0, stripes * sizeof(*t->rings));

	/* Checked by dl_trace_open_target (and the caller): a regular file. */
	t->fd = fd;
	fd = -1;
	if (ftruncate(t->fd, 0)) {
		ret = -errno;
		goto fail;
	}

	struct dl_trace_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, DL_TRACE_MAGIC, sizeof(h.magic));
	h.version = DL_TRACE_VERSION;
	h.rec_size = sizeof(struct dl_trace_rec);
	/* The wall clock taken between two monotonic reads: the pair maps
	 * monotonic record times to wall time within a microsecond. */
	uint64_t m0 = dl_clock_ns(CLOCK_MONOTONIC);
	h.epoch_ns = dl_clock_ns(CLOCK_REALTIME);
	uint64_t m1 = dl_clock_ns(CLOCK_MONOTONIC);
	h.start_mono_ns = m0 + (m1 - m0) / 2;
	h.ops_mask = t->ops_mask;
	h.node = o.node;
	if (config)
		strncpy(h.config, config, sizeof(h.config) - 1);
	ret = write_all(t->fd, &h, sizeof(h));
	if (ret)
		goto fail;
	t->file_off = sizeof(h);
	/* The reserve for the tail, before any record: a trace that cannot
	 * even keep that refuses to start. */
	if (fallocate(t->fd, FALLOC_FL_KEEP_SIZE, (off_t)t->file_off, TRACE_RESERVE) == 0) {
		t->reserved_end = t->file_off + TRACE_RESERVE;
	} else if (errno == ENOSPC || errno == EDQUOT) {
		ret = -errno;
		goto fail;
	}
	t->last_flush_ns = dl_clock_ns(CLOCK_MONOTONIC_COARSE);

	/* The writer takes no signals: the daemon's handlers run elsewhere. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&t->writer, NULL, writer_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		goto fail;
	pthread_setname_np(t->writer, "dl-trace");
	*out = t;
	return 0;

fail:
	if (fd >= 0)
		close(fd);
	if (t->fd >= 0)
		close(t->fd);
	trace_free(t);
	return ret;
}

int dl_trace_start_fd(int fd, const char *config, uint32_t ops_mask,
		      int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
		      void *arg, struct dl_trace **out)
{
	return dl_trace_start_fd_opts(fd, config, ops_mask, path_of, arg, NULL, out);
}

int dl_trace_start_fd_node(int fd, const char *config, uint32_t ops_mask, uint32_t node,
			   int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
			   void *arg, struct dl_trace **out)
{
	struct dl_trace_opts o = {.node = node};

	return dl_trace_start_fd_opts(fd, config, ops_mask, path_of, arg, &o, out);
}

int dl_trace_start_opts(const char *path, const char *config, uint32_t ops_mask,
			int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
			void *arg, const struct dl_trace_opts *opts, struct dl_trace **out)
{
	int fd, created, ret, keep;

	*out = NULL;
	ret = dl_trace_open_target(path, &fd, &created, NULL, 0);
	if (ret)
		return ret;
	/* Kept to remove a file this call created if the start fails. */
	keep = dup(fd);
	ret = dl_trace_start_fd_opts(fd, config, ops_mask, path_of, arg, opts, out);
	if (ret)
		dl_trace_discard_target(path, keep, created);
	else if (keep >= 0)
		close(keep);
	return ret;
}

int dl_trace_start(const char *path, const char *config, uint32_t ops_mask,
		   int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len), void *arg,
		   struct dl_trace **out)
{
	return dl_trace_start_opts(path, config, ops_mask, path_of, arg, NULL, out);
}

void dl_trace_on_error(struct dl_trace *t, void (*fn)(void *arg, int err, uint64_t written),
		       void *arg)
{
	atomic_store(&t->error_arg, arg);
	atomic_store(&t->on_error, fn);
}

int dl_trace_error(const struct dl_trace *t)
{
	return atomic_load_explicit(&((struct dl_trace *)t)->io_err, memory_order_relaxed);
}

int dl_trace_finish(struct dl_trace *t, struct dl_trace_result *res)
{
	int ret;

	if (res)
		memset(res, 0, sizeof(*res));
	if (!t)
		return 0;
	atomic_store_explicit(&t->stop, 1, memory_order_release);
	pthread_join(t->writer, NULL);
	ret = t->err;
	if (res) {
		res->written = atomic_load(&t->written);
		res->dropped_io = atomic_load(&t->io_dropped);
		res->dropped_rings = dl_trace_dropped(t) - res->dropped_io;
		res->err = t->err;
		res->footer = t->footer_written;
	}
	if (close(t->fd) && !ret)
		ret = -errno;
	trace_free(t);
	return ret;
}

int dl_trace_stop(struct dl_trace *t)
{
	return dl_trace_finish(t, NULL);
}
