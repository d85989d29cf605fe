/* The trace recorder: records from many threads come back intact, every
 * record is either in the file or counted as dropped, the name table and
 * footer describe the file, and the cost of one dl_trace_record. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../trace/trace_i.h"
#include "dliofs/clock.h"
#include "dliofs/trace.h"
#include "tap.h"

#define NTHREADS 4
#define PER_THREAD 100000u
#define NFILES_PER_THREAD 37u

static uint64_t now_ns(void)
{
	return dl_mono_ns();
}

/* Every field of record seq of thread th is a function of (th, seq), so a
 * record read back can be checked on its own. */
static void make_rec(unsigned th, uint64_t seq, struct dl_trace_rec *r)
{
	uint64_t dur = ((uint64_t)(th + 1) << 40) | seq;
	memset(r, 0, sizeof(*r));
	r->start_ns = seq * 1000 + th;
	r->dur_ns_lo = (uint32_t)dur;
	r->dur_ns_hi = (uint16_t)(dur >> 32);
	r->op = DL_TOP_READ;
	r->flags = seq & 3;
	r->queue_ns = (uint32_t)(seq * 3);
	r->pid = 1000 + th;
	r->tid = 2000 + th;
	r->result = (int32_t)seq;
	r->file_id = th * 100 + seq % NFILES_PER_THREAD;
	r->offset = seq * 4096;
	r->size = 4096 + th;
}

static int path_of(void *arg, uint64_t id, char *buf, size_t len)
{
	(void)arg;
	/* Ids ending in 3 have no name: they must be left out of the table. */
	if (id % 10 == 3)
		return -ENOENT;
	snprintf(buf, len, "/train/img_%llu.npz", (unsigned long long)id);
	return 0;
}

struct loaded {
	char *data;
	size_t len;
	struct dl_trace_header h;
	struct dl_trace_footer f;
	const struct dl_trace_rec *recs; /* unaligned-safe: copied out below */
	uint64_t nrecs;
};

static int load(const char *path, struct loaded *L)
{
	FILE *fp = fopen(path, "rb");
	memset(L, 0, sizeof(*L));
	if (!fp)
		return -errno;
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	L->data = malloc((size_t)n + 1);
	L->len = fread(L->data, 1, (size_t)n, fp);
	fclose(fp);
	if (L->len < sizeof(L->h) + sizeof(L->f))
		return -EINVAL;
	memcpy(&L->h, L->data, sizeof(L->h));
	memcpy(&L->f, L->data + L->len - sizeof(L->f), sizeof(L->f));
	L->recs = (const struct dl_trace_rec *)(L->data + sizeof(L->h));
	L->nrecs = (L->f.names_offset - sizeof(L->h)) / sizeof(struct dl_trace_rec);
	return 0;
}

/* Header, footer and layout checks shared by every trace. */
static void check_frame(const struct loaded *L, const char *what, uint64_t written,
			uint64_t dropped)
{
	CHECK(!memcmp(L->h.magic, DL_TRACE_MAGIC, 8), "%s: header magic", what);
	CHECK(L->h.version == DL_TRACE_VERSION, "%s: version %u", what, L->h.version);
	CHECK(L->h.rec_size == sizeof(struct dl_trace_rec), "%s: rec_size %u", what,
	      L->h.rec_size);
	CHECK(!memcmp(L->f.magic, DL_TRACE_MAGIC, 8), "%s: footer magic", what);
	CHECK(L->f.nrecords == written, "%s: footer nrecords %llu, written %llu", what,
	      (unsigned long long)L->f.nrecords, (unsigned long long)written);
	CHECK(L->f.dropped == dropped, "%s: footer dropped %llu, counted %llu", what,
	      (unsigned long long)L->f.dropped, (unsigned long long)dropped);
	CHECK(L->f.names_offset == sizeof(L->h) + L->f.nrecords * sizeof(struct dl_trace_rec),
	      "%s: names_offset %llu", what, (unsigned long long)L->f.names_offset);
	CHECK(L->f.end_mono_ns >= L->h.start_mono_ns, "%s: end before start", what);
	/* The wall clock of the start is now-ish (within a day). */
	uint64_t real = dl_real_ns();
	CHECK(L->h.epoch_ns + 86400000000000ULL > real && L->h.epoch_ns < real + 86400000000000ULL,
	      "%s: epoch_ns %llu", what, (unsigned long long)L->h.epoch_ns);
}

/* Walk the name table: count entries, check each name is path_of(id), the
 * ids ascend, and the table ends exactly at the footer. */
static uint64_t check_names(const struct loaded *L, const char *what)
{
	size_t off = L->f.names_offset, end = L->len - sizeof(L->f);
	uint64_t n = 0, prev = 0;
	char want[256];
	while (off + sizeof(struct dl_trace_name) <= end) {
		struct dl_trace_name nm;
		memcpy(&nm, L->data + off, sizeof(nm));
		off += sizeof(nm);
		if (off + nm.len > end) {
			CHECK(0, "%s: name %llu overruns the footer", what, (unsigned long long)n);
			return n;
		}
		path_of(NULL, nm.file_id, want, sizeof(want));
		CHECK(nm.len == strlen(want) && !memcmp(L->data + off, want, nm.len),
		      "%s: name of id %llu", what, (unsigned long long)nm.file_id);
		CHECK(nm.file_id % 10 != 3, "%s: id %llu has no name but is listed", what,
		      (unsigned long long)nm.file_id);
		CHECK(n == 0 || nm.file_id > prev, "%s: ids not ascending", what);
		prev = nm.file_id;
		off += nm.len;
		n++;
	}
	CHECK(off == end, "%s: name table ends at %zu, footer at %zu", what, off, end);
	CHECK(n == L->f.nnames, "%s: %llu names, footer says %llu", what,
	      (unsigned long long)n, (unsigned long long)L->f.nnames);
	return n;
}

/* ---- many threads, default buffers ---- */

struct worker {
	struct dl_trace *t;
	pthread_barrier_t *bar;
	unsigned th;
	uint64_t n;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct dl_trace_rec r;
	pthread_barrier_wait(w->bar);
	for (uint64_t i = 0; i < w->n; i++) {
		make_rec(w->th, i, &r);
		dl_trace_record(w->t, &r);
	}
	return NULL;
}

/* Read back a multi-thread trace: every record matches make_rec, per thread
 * in submission order (a thread always uses the same ring), no duplicates. */
static void check_records(const struct loaded *L, const char *what, unsigned nthreads,
			  uint64_t per_thread, uint64_t *per_th_count)
{
	int64_t last[NTHREADS];
	uint64_t bad = 0, order = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		last[i] = -1;
		per_th_count[i] = 0;
	}
	for (uint64_t i = 0; i < L->nrecs; i++) {
		struct dl_trace_rec r, want;
		memcpy(&r, (const char *)L->recs + i * sizeof(r), sizeof(r));
		unsigned th = r.pid - 1000;
		if (th >= nthreads) {
			bad++;
			continue;
		}
		uint64_t seq = r.offset / 4096;
		make_rec(th, seq, &want);
		if (seq >= per_thread || memcmp(&r, &want, sizeof(r))) {
			bad++;
			continue;
		}
		if ((int64_t)seq <= last[th])
			order++;
		last[th] = (int64_t)seq;
		per_th_count[th]++;
	}
	CHECK(bad == 0, "%s: %llu records differ from what was submitted", what,
	      (unsigned long long)bad);
	CHECK(order == 0, "%s: %llu records out of per-thread order or repeated", what,
	      (unsigned long long)order);
}

/* opts NULL: the defaults (drops expected when 4 threads go flat out);
 * otherwise one ring big enough for everything, shared by all threads, so
 * that every record is kept whatever the writer does and the producers'
 * CAS on one head is contended all the time. */
static void test_threads(const char *dir, const struct dl_trace_opts *opts, const char *what)
{
	char path[512];
	struct dl_trace *t;
	pthread_t tids[NTHREADS];
	struct worker w[NTHREADS];
	pthread_barrier_t bar;
	struct loaded L;
	uint64_t cnt[NTHREADS];

	snprintf(path, sizeof(path), "%s/%s.trc", dir, what);
	int ret = dl_trace_start_opts(path, "/etc/dliofs/unet3d.yaml", 0, path_of, NULL, opts, &t);
	CHECK(ret == 0, "%s: start: %s", what, strerror(-ret));
	if (ret)
		return;
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){.t = t, .bar = &bar, .th = i, .n = PER_THREAD};
		pthread_create(&tids[i], NULL, worker_main, &w[i]);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(tids[i], NULL);
	pthread_barrier_destroy(&bar);
	uint64_t dropped = dl_trace_dropped(t);
	/* Producers are done: the counters are final before the writer is. */
	uint64_t written = dl_trace_written(t);
	ret = dl_trace_stop(t);
	CHECK(ret == 0, "%s: stop: %s", what, strerror(-ret));
	if (load(path, &L)) {
		CHECK(0, "%s: cannot read back %s", what, path);
		return;
	}
	uint64_t submitted = (uint64_t)NTHREADS * PER_THREAD;
	check_frame(&L, what, written, dropped);
	CHECK(L.nrecs + dropped == submitted, "%s: %llu written + %llu dropped != %llu", what,
	      (unsigned long long)L.nrecs, (unsigned long long)dropped,
	      (unsigned long long)submitted);
	CHECK(!strcmp(L.h.config, "/etc/dliofs/unet3d.yaml"), "%s: config '%s'", what,
	      L.h.config);
	CHECK(L.h.ops_mask == ((1u << DL_TOP__COUNT) - 2), "%s: ops_mask 0 means all: %#x", what,
	      L.h.ops_mask);
	check_records(&L, what, NTHREADS, PER_THREAD, cnt);
	/* The name table lists exactly the named ids that occur in records. */
	uint64_t named = 0;
	for (unsigned th = 0; th < NTHREADS; th++)
		for (uint64_t k = 0; k < NFILES_PER_THREAD; k++) {
			uint64_t id = th * 100 + k, seen = 0;
			for (uint64_t i = 0; i < L.nrecs && !seen; i++) {
				struct dl_trace_rec r;
				memcpy(&r, (const char *)L.recs + i * sizeof(r), sizeof(r));
				seen = r.file_id == id;
			}
			named += seen && id % 10 != 3;
		}
	uint64_t names = check_names(&L, what);
	CHECK(names == named, "%s: %llu names, %llu named ids in records", what,
	      (unsigned long long)names, (unsigned long long)named);
	printf("%s: %d threads x %u records: %llu written, %llu dropped, %llu names\n", what,
	       NTHREADS, PER_THREAD, (unsigned long long)L.nrecs, (unsigned long long)dropped,
	       (unsigned long long)names);
	if (opts) {
		CHECK(dropped == 0, "%s: a ring that holds everything dropped %llu", what,
		      (unsigned long long)dropped);
		for (unsigned i = 0; i < NTHREADS; i++)
			CHECK(cnt[i] == PER_THREAD, "%s: thread %u: %llu records", what, i,
			      (unsigned long long)cnt[i]);
	}
	free(L.data);
}

/* ---- a tiny ring and a slow writer: drops happen and are counted ---- */

static void test_drops(const char *dir)
{
	char path[512];
	struct dl_trace *t;
	struct loaded L;
	struct dl_trace_opts o = {.stripes = 1, .slots = 64, .poll_us = 1000,
				  .write_delay_us = 50000};
	const uint64_t n = 20000;

	snprintf(path, sizeof(path), "%s/drops.trc", dir);
	int ret = dl_trace_start_opts(path, "c.yaml", 0, path_of, NULL, &o, &t);
	CHECK(ret == 0, "drops: start: %s", strerror(-ret));
	if (ret)
		return;
	struct dl_trace_rec r;
	for (uint64_t i = 0; i < n; i++) {
		make_rec(0, i, &r);
		dl_trace_record(t, &r);
	}
	uint64_t dropped = dl_trace_dropped(t);
	uint64_t written = dl_trace_written(t);
	ret = dl_trace_stop(t);
	CHECK(ret == 0, "drops: stop: %s", strerror(-ret));
	if (load(path, &L)) {
		CHECK(0, "drops: cannot read back");
		return;
	}
	check_frame(&L, "drops", written, dropped);
	/* 20000 records against 64 slots emptied every 50 ms: most drop. */
	CHECK(dropped > n / 2, "drops: only %llu of %llu dropped", (unsigned long long)dropped,
	      (unsigned long long)n);
	CHECK(L.nrecs >= 64, "drops: the first ring-full must be kept, got %llu",
	      (unsigned long long)L.nrecs);
	CHECK(L.nrecs + dropped == n, "drops: %llu + %llu != %llu", (unsigned long long)L.nrecs,
	      (unsigned long long)dropped, (unsigned long long)n);
	uint64_t cnt[NTHREADS];
	check_records(&L, "drops", 1, n, cnt);
	CHECK(cnt[0] == L.nrecs, "drops: kept records readable");
	check_names(&L, "drops");
	printf("drops: %llu submitted to a 64-slot ring: %llu written, %llu dropped\n",
	       (unsigned long long)n, (unsigned long long)L.nrecs, (unsigned long long)dropped);
	free(L.data);
}

/* ---- ring capacity: up to nslots records never drop, whatever the writer ---- */

static void test_capacity(const char *dir)
{
	char path[512];
	struct dl_trace *t;
	struct loaded L;
	struct dl_trace_opts o = {.stripes = 1, .slots = 100, .write_delay_us = 200000};

	snprintf(path, sizeof(path), "%s/cap.trc", dir);
	int ret = dl_trace_start_opts(path, NULL, 0, NULL, NULL, &o, &t);
	CHECK(ret == 0, "capacity: start");
	if (ret)
		return;
	/* slots is rounded up to 128. */
	struct dl_trace_rec r;
	for (uint64_t i = 0; i < 128; i++) {
		make_rec(0, i, &r);
		dl_trace_record(t, &r);
	}
	CHECK(dl_trace_dropped(t) == 0, "capacity: a full ring dropped %llu",
	      (unsigned long long)dl_trace_dropped(t));
	/* The writer sleeps 200 ms between passes: most are still in the ring,
	 * yet they count as written (they will be). */
	CHECK(dl_trace_written(t) == 128, "capacity: written %llu before stop",
	      (unsigned long long)dl_trace_written(t));
	ret = dl_trace_stop(t);
	CHECK(ret == 0, "capacity: stop");
	if (load(path, &L) == 0) {
		check_frame(&L, "capacity", 128, 0);
		/* No path_of: an empty name table. */
		CHECK(L.f.nnames == 0 && L.f.names_offset + sizeof(L.f) == L.len,
		      "capacity: names without path_of");
		free(L.data);
	}
}

/* ---- ops mask, empty trace, errors ---- */

static void test_mask_and_empty(const char *dir)
{
	char path[512];
	struct dl_trace *t;
	struct loaded L;
	struct dl_trace_rec r;

	snprintf(path, sizeof(path), "%s/mask.trc", dir);
	int ret = dl_trace_start(path, "m.yaml", 1u << DL_TOP_READ, path_of, NULL, &t);
	CHECK(ret == 0, "mask: start");
	if (ret)
		return;
	for (uint64_t i = 0; i < 100; i++) {
		make_rec(0, i, &r);
		r.op = i % 2 ? DL_TOP_READ : DL_TOP_OPEN;
		dl_trace_record(t, &r);
	}
	ret = dl_trace_stop(t);
	CHECK(ret == 0, "mask: stop");
	if (load(path, &L) == 0) {
		check_frame(&L, "mask", 50, 0);
		CHECK(L.h.ops_mask == 1u << DL_TOP_READ, "mask: header %#x", L.h.ops_mask);
		uint64_t reads = 0;
		for (uint64_t i = 0; i < L.nrecs; i++) {
			memcpy(&r, (const char *)L.recs + i * sizeof(r), sizeof(r));
			reads += r.op == DL_TOP_READ && r.offset / 4096 % 2 == 1;
		}
		CHECK(reads == 50, "mask: %llu odd reads kept", (unsigned long long)reads);
		free(L.data);
	}

	snprintf(path, sizeof(path), "%s/empty.trc", dir);
	ret = dl_trace_start(path, NULL, 0, path_of, NULL, &t);
	CHECK(ret == 0, "empty: start");
	if (ret)
		return;
	CHECK(dl_trace_written(t) == 0 && dl_trace_dropped(t) == 0, "empty: counters");
	ret = dl_trace_stop(t);
	CHECK(ret == 0, "empty: stop");
	if (load(path, &L) == 0) {
		check_frame(&L, "empty", 0, 0);
		CHECK(L.len == sizeof(struct dl_trace_header) + sizeof(struct dl_trace_footer),
		      "empty: %zu bytes", L.len);
		CHECK(L.h.config[0] == 0, "empty: config");
		free(L.data);
	}

	ret = dl_trace_start("/nonexistent-dir/x.trc", NULL, 0, NULL, NULL, &t);
	CHECK(ret == -ENOENT && t == NULL, "start in a missing directory: %d", ret);
	/* A device is no trace target, whatever its open would do (and
	 * nothing is made in its place where it is missing). */
	{
		struct stat st;

		if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
			ret = dl_trace_start("/dev/full", NULL, 0, NULL, NULL, &t);
			CHECK(ret == -EINVAL && t == NULL, "start on /dev/full: %d", ret);
		}
	}
	CHECK(dl_trace_stop(NULL) == 0, "stop(NULL)");
}

/* ---- trace targets: a regular file on storage, or a new one ---- */

static void target_refused(const char *path, const char *want)
{
	char why[256] = "";
	int fd = 123, created = 7;
	int ret = dl_trace_open_target(path, &fd, &created, why, sizeof(why));

	CHECK(ret == -EINVAL && fd == -1 && created == 0 && strstr(why, want),
	      "target %s refused: %d '%s' (want '%s')", path, ret, why, want);
}

static void test_targets(const char *dir)
{
	char fifo[512], link[512], file[512], fresh[512], why[256];
	struct dl_trace *t;
	struct stat st;
	FILE *f;
	int fd, created, ret, rfd;

	snprintf(fifo, sizeof(fifo), "%s/t.fifo", dir);
	snprintf(link, sizeof(link), "%s/null.link", dir);
	snprintf(file, sizeof(file), "%s/old.trace", dir);
	snprintf(fresh, sizeof(fresh), "%s/sub", dir);
	CHECK(mkfifo(fifo, 0600) == 0 && symlink("/dev/null", link) == 0, "targets: setup");
	/* No reader: an open for writing would fail; with one waiting it would
	 * succeed and the trace would go to the reader. Neither happens. */
	target_refused(fifo, "not a regular file (a FIFO)");
	rfd = open(fifo, O_RDONLY | O_NONBLOCK);
	target_refused(fifo, "not a regular file (a FIFO)");
	if (rfd >= 0)
		close(rfd);
	target_refused("/dev/null", "a character device");
	target_refused(link, "a character device");
	target_refused(dir, "a directory");
	target_refused("/proc/sys/kernel/core_pattern", "a file of /proc");
	target_refused("/proc/self/comm", "a file of /proc");
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0)
		target_refused("/sys/kernel/mm/transparent_hugepage/enabled", "a file of /sys");

	/* An existing file: opened, not truncated until the trace starts. */
	f = fopen(file, "w");
	CHECK(f && fputs("keep me", f) >= 0 && fclose(f) == 0, "targets: old file");
	ret = dl_trace_open_target(file, &fd, &created, why, sizeof(why));
	CHECK(ret == 0 && fd >= 0 && !created, "targets: existing file opened: %d %s", ret, why);
	CHECK(stat(file, &st) == 0 && st.st_size == 7, "targets: not truncated by the open");
	dl_trace_discard_target(file, fd, created);
	CHECK(stat(file, &st) == 0, "targets: an existing file is never removed");
	/* A new one is made, and removed again when the trace does not start. */
	ret = dl_trace_open_target(fresh, &fd, &created, why, sizeof(why));
	CHECK(ret == 0 && created, "targets: a new file: %d %s", ret, why);
	dl_trace_discard_target(fresh, fd, created);
	CHECK(access(fresh, F_OK) != 0, "targets: a new file discarded");
	/* And a trace to the old file replaces its content. */
	ret = dl_trace_start(file, NULL, 0, NULL, NULL, &t);
	CHECK(ret == 0, "targets: start on a regular file: %d", ret);
	if (!ret)
		CHECK(dl_trace_stop(t) == 0 && stat(file, &st) == 0 &&
			      st.st_size == sizeof(struct dl_trace_header) +
						     sizeof(struct dl_trace_footer),
		      "targets: the old content is gone");
}

/* ---- a write that fails is reported by stop, not swallowed ---- */

static void test_write_error(const char *dir)
{
	char path[512];
	struct dl_trace *t;
	struct rlimit old, lim;
	struct dl_trace_rec r;

	snprintf(path, sizeof(path), "%s/efbig.trc", dir);
	/* Room for the header and a few records only: the writer's 1 MiB
	 * flush at stop fails with EFBIG (SIGXFSZ ignored). */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 4096;
	if (setrlimit(RLIMIT_FSIZE, &lim)) {
		printf("write-error: cannot lower RLIMIT_FSIZE, skipped\n");
		return;
	}
	int ret = dl_trace_start(path, NULL, 0, path_of, NULL, &t);
	CHECK(ret == 0, "write-error: start: %s", strerror(-ret));
	if (!ret) {
		for (uint64_t i = 0; i < 1000; i++) {
			make_rec(0, i, &r);
			dl_trace_record(t, &r);
		}
		ret = dl_trace_stop(t);
		CHECK(ret == -EFBIG, "write-error: stop returned %d, want -EFBIG", ret);
	}
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
}

/* ---- cost of dl_trace_record ---- */

struct bench {
	struct dl_trace *t;
	pthread_barrier_t *bar;
	unsigned th;
	uint64_t rounds;
	uint64_t ns, recs;
};

/* Bursts of at most a ring's worth of records, waiting between bursts for
 * the writer to catch up: timing the normal path, not the drop path. */
static void *bench_main(void *arg)
{
	struct bench *b = arg;
	struct dl_trace_rec r;
	const uint64_t burst = 4096;
	make_rec(b->th, 1, &r);
	pthread_barrier_wait(b->bar);
	for (uint64_t k = 0; k < b->rounds; k++) {
		uint64_t t0 = now_ns();
		for (uint64_t i = 0; i < burst; i++) {
			r.offset = i;
			dl_trace_record(b->t, &r);
		}
		b->ns += now_ns() - t0;
		b->recs += burst;
		usleep(3000);
	}
	return NULL;
}

static void bench(const char *dir, unsigned nthreads)
{
	char path[512];
	struct dl_trace *t;
	pthread_t tids[NTHREADS];
	struct bench b[NTHREADS];
	pthread_barrier_t bar;

	snprintf(path, sizeof(path), "%s/bench%u.trc", dir, nthreads);
	if (dl_trace_start(path, NULL, 0, path_of, NULL, &t)) {
		CHECK(0, "bench: start");
		return;
	}
	pthread_barrier_init(&bar, NULL, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		b[i] = (struct bench){.t = t, .bar = &bar, .th = i, .rounds = 100};
		pthread_create(&tids[i], NULL, bench_main, &b[i]);
	}
	uint64_t ns = 0, recs = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(tids[i], NULL);
		ns += b[i].ns;
		recs += b[i].recs;
	}
	pthread_barrier_destroy(&bar);
	uint64_t dropped = dl_trace_dropped(t);
	CHECK(dl_trace_stop(t) == 0, "bench: stop");
	printf("dl_trace_record: %.1f ns per record (%u thread%s, %llu records, %llu dropped)\n",
	       (double)ns / (double)recs, nthreads, nthreads > 1 ? "s" : "",
	       (unsigned long long)recs, (unsigned long long)dropped);
}

int main(void)
{
	char dir[] = "/tmp/dliofs-trace-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	struct dl_trace_opts shared = {.stripes = 1, .slots = NTHREADS * PER_THREAD};
	test_threads(dir, NULL, "flat-out");
	test_threads(dir, &shared, "shared-ring");
	test_drops(dir);
	test_capacity(dir);
	test_mask_and_empty(dir);
	test_write_error(dir);
	test_targets(dir);
	bench(dir, 1);
	bench(dir, 2);

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return tap_done("trace");
}
