/* What a device does for the requests a mount receives (pacer/devwork.c), in
 * virtual time: a read at the end of a file costs nothing, a buffered
 * reader's pieces of one file are one IO (no IOPS slot, no per-request cost
 * of their own; bounded runs and stream table), an O_DIRECT reader's are
 * not, and metadata of an inode seen before takes meta.cached_latency until
 * `cache drop`. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/pacer.h"
#include "pacer_kv.h"
#include "tap.h"

#define KiB ((uint64_t)1 << 10)
#define US ((uint64_t)1000)
#define MS ((uint64_t)1000000)
#define SEC ((uint64_t)1000000000)
#define T0 (1000 * SEC)

static double stat_num(struct dl_pacer *p, const char *cls, const char *key)
{
	char *js = NULL, k[96];
	const char *s;
	size_t len;
	double v = NAN;

	if (dl_pacer_stats_json(p, T0 + SEC, &js, &len))
		return NAN;
	snprintf(k, sizeof(k), "\"%s\"", cls);
	s = strstr(js, "\"classes\"");
	s = s ? strstr(s, k) : NULL;
	snprintf(k, sizeof(k), "\"%s\": ", key);
	s = s ? strstr(s, k) : NULL;
	if (s)
		v = strtod(s + strlen(k), NULL);
	free(js);
	return v;
}

/* Submit a read and complete it at its due time; returns the result. */
static struct dl_pacer_result rd(struct dl_pacer *p, uint64_t file, uint64_t off, uint64_t len,
				 uint32_t flags, uint64_t t)
{
	struct dl_pacer_req r = {.cls = DL_OP_READ,
				 .file_id = file,
				 .off = off,
				 .len = len,
				 .flags = flags,
				 .file_size = 1 << 20};
	struct dl_pacer_result res;

	memset(&res, 0, sizeof(res));
	CHECK(dl_pacer_submit(p, &r, t, &res) == 0, "submit read");
	dl_pacer_complete(p, &r, &res, res.due_ns);
	return res;
}

static struct dl_pacer_result meta(struct dl_pacer *p, uint64_t ino, uint64_t t)
{
	struct dl_pacer_req r = {.cls = DL_OP_META, .file_id = ino, .inode = ino};
	struct dl_pacer_result res;

	memset(&res, 0, sizeof(res));
	CHECK(dl_pacer_submit(p, &r, t, &res) == 0, "submit meta");
	dl_pacer_complete(p, &r, &res, res.due_ns);
	return res;
}

/* The EOF read of a whole-file reader: answered at once, no IOPS slot. */
static void test_eof(void)
{
	const char *const kv[] = {"read.iops=1000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result a, eof, b;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = rd(p, 1, 0, 110000, DL_PREQ_BUFFERED, T0);
	eof = rd(p, 1, 110000, 0, DL_PREQ_BUFFERED, T0);
	b = rd(p, 2, 0, 110000, DL_PREQ_BUFFERED, T0);
	CHECK(a.due_ns == T0, "first read due at %llu", (unsigned long long)(a.due_ns - T0));
	CHECK(eof.due_ns == T0 && eof.queue_ns == 0, "EOF read waited %llu ns",
	      (unsigned long long)(eof.due_ns - T0));
	/* The next file's read waits for one IOPS step (1 ms), not two. */
	CHECK(b.due_ns == T0 + MS, "next file due at +%llu ns (want 1 ms)",
	      (unsigned long long)(b.due_ns - T0));
	CHECK(stat_num(p, "read", "nodev_ops") == 1, "nodev_ops %g",
	      stat_num(p, "read", "nodev_ops"));
	CHECK(stat_num(p, "read", "device_ops") == 2, "device_ops %g",
	      stat_num(p, "read", "device_ops"));
	CHECK(stat_num(p, "read", "ops") == 2, "ops %g", stat_num(p, "read", "ops"));
	dl_pacer_free(p);
}

/* The kernel's 128 KiB pieces of one file, in flight together: one IO. */
static void test_pieces_in_flight(void)
{
	const char *const kv[] = {"read.iops=1000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result r[4];

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (int i = 0; i < 4; i++)
		r[i] = rd(p, 7, (uint64_t)i * 128 * KiB, 128 * KiB, DL_PREQ_BUFFERED, T0);
	for (int i = 0; i < 4; i++)
		CHECK(r[i].due_ns == T0 && r[i].queue_ns == 0, "piece %d waited %llu ns", i,
		      (unsigned long long)(r[i].due_ns - T0));
	CHECK(stat_num(p, "read", "device_ops") == 1, "device_ops %g",
	      stat_num(p, "read", "device_ops"));
	CHECK(stat_num(p, "read", "merged_ops") == 3, "merged_ops %g",
	      stat_num(p, "read", "merged_ops"));
	CHECK(stat_num(p, "read", "ops") == 4, "ops %g (every piece is still an op)",
	      stat_num(p, "read", "ops"));
	/* Bytes still count. */
	CHECK(stat_num(p, "read", "bytes") == 512 * KiB, "bytes %g", stat_num(p, "read", "bytes"));
	dl_pacer_free(p);
}

/* Without DL_PREQ_BUFFERED (O_DIRECT) each piece is an IO of its own. */
static void test_direct_no_merge(void)
{
	const char *const kv[] = {"read.iops=1000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result r[3];

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (int i = 0; i < 3; i++)
		r[i] = rd(p, 7, (uint64_t)i * 64 * KiB, 64 * KiB, 0, T0);
	for (int i = 0; i < 3; i++)
		CHECK(r[i].due_ns == T0 + (uint64_t)i * MS, "direct piece %d due at +%llu ns", i,
		      (unsigned long long)(r[i].due_ns - T0));
	CHECK(stat_num(p, "read", "device_ops") == 3, "device_ops %g",
	      stat_num(p, "read", "device_ops"));
	CHECK(stat_num(p, "read", "merged_ops") == 0, "merged_ops %g",
	      stat_num(p, "read", "merged_ops"));
	dl_pacer_free(p);
}

/* A run is one reader's contiguous pieces, close in time, up to 1 MiB. */
static void test_run_bounds(void)
{
	const char *const kv[] = {"read.iops=1000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result r;
	uint64_t t = T0;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	/* 8 pieces of 128 KiB fill a 1 MiB run; the 9th starts a new IO. */
	for (int i = 0; i < 9; i++)
		rd(p, 3, (uint64_t)i * 128 * KiB, 128 * KiB, DL_PREQ_BUFFERED, t);
	CHECK(stat_num(p, "read", "device_ops") == 2, "9 pieces: device_ops %g (want 2)",
	      stat_num(p, "read", "device_ops"));
	/* A gap: a new IO. */
	rd(p, 3, 2 * 1024 * KiB, 4 * KiB, DL_PREQ_BUFFERED, t);
	CHECK(stat_num(p, "read", "device_ops") == 3, "after a gap: device_ops %g (want 3)",
	      stat_num(p, "read", "device_ops"));
	/* Contiguous but long after the last piece was done: a new IO. */
	t += SEC;
	r = rd(p, 3, 2 * 1024 * KiB + 4 * KiB, 4 * KiB, DL_PREQ_BUFFERED, t);
	CHECK(stat_num(p, "read", "device_ops") == 4, "after a pause: device_ops %g (want 4)",
	      stat_num(p, "read", "device_ops"));
	/* Right after it (a reader's next call): the same IO, no wait for the
	 * IOPS step. */
	r = rd(p, 3, 2 * 1024 * KiB + 8 * KiB, 4 * KiB, DL_PREQ_BUFFERED, r.due_ns + 20 * US);
	CHECK(r.queue_ns == 0, "next call waited %llu ns", (unsigned long long)r.queue_ns);
	CHECK(stat_num(p, "read", "device_ops") == 4, "next call: device_ops %g (want 4)",
	      stat_num(p, "read", "device_ops"));
	/* Another file's piece at the same offset is not a continuation. */
	rd(p, 4, 2 * 1024 * KiB + 12 * KiB, 4 * KiB, DL_PREQ_BUFFERED, r.due_ns);
	CHECK(stat_num(p, "read", "device_ops") == 5, "other file: device_ops %g (want 5)",
	      stat_num(p, "read", "device_ops"));
	dl_pacer_free(p);
}

/* A reader's 8 KiB calls, each after the last is done: one IO per
 * readahead window, the windows growing as the kernel's (32 KiB, 128 KiB,
 * 256 KiB, 512 KiB, 1 MiB): a 110 kB file is 2 IOs, 1 MiB 5. */
static void test_readahead_windows(void)
{
	const char *const kv[] = {"read.iops=1000000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result r;
	uint64_t t = T0, off;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (off = 0; off < 110000; off += 8192) {
		r = rd(p, 11, off, off + 8192 > 110000 ? 110000 - off : 8192, DL_PREQ_BUFFERED, t);
		t = r.due_ns + 30 * US;
	}
	CHECK(stat_num(p, "read", "device_ops") == 2, "110 kB in 8 KiB calls: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	for (off = 0; off < 1024 * KiB; off += 8 * KiB) {
		r = rd(p, 12, off, 8 * KiB, DL_PREQ_BUFFERED, t);
		t = r.due_ns + 30 * US;
	}
	CHECK(stat_num(p, "read", "device_ops") == 2 + 5, "1 MiB in 8 KiB calls: device_ops %g",
	      stat_num(p, "read", "device_ops") - 2);
	/* A seek back starts over with a small window. */
	rd(p, 12, 0, 8 * KiB, DL_PREQ_BUFFERED, t);
	rd(p, 12, 8 * KiB, 8 * KiB, DL_PREQ_BUFFERED, t + MS);
	rd(p, 12, 16 * KiB, 16 * KiB, DL_PREQ_BUFFERED, t + 2 * MS);
	CHECK(stat_num(p, "read", "device_ops") == 2 + 5 + 1,
	      "after a seek, 32 KiB in one window: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	dl_pacer_free(p);
}

/* A continuation pays for its bytes, not a request's fixed cost; it ends no
 * earlier than the run's earlier pieces. */
static void test_run_latency(void)
{
	const char *const kv[] = {"read.latency_by_size.4KiB=100us",
				  "read.latency_by_size.1MiB=1100us", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result a, b, c, d;
	double want;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = rd(p, 5, 0, 128 * KiB, DL_PREQ_BUFFERED, T0);
	want = 100e3 + 1000e3 * (double)(128 * KiB - 4 * KiB) / (double)(1024 * KiB - 4 * KiB);
	CHECK(fabs((double)(a.due_ns - T0) - want) < 2e3, "first piece %llu ns (want %.0f)",
	      (unsigned long long)(a.due_ns - T0), want);
	/* After the first is done: what growing the IO from 128 to 256 KiB
	 * takes, 128 KiB of the 1000 us per (1024 - 4) KiB slope, no 100 us
	 * fixed part. */
	b = rd(p, 5, 128 * KiB, 128 * KiB, DL_PREQ_BUFFERED, a.due_ns);
	want = 1000e3 * (double)(128 * KiB) / (double)(1024 * KiB - 4 * KiB);
	CHECK(fabs((double)(b.due_ns - a.due_ns) - want) < 2e3,
	      "continuation took %llu ns (want %.0f)", (unsigned long long)(b.due_ns - a.due_ns),
	      want);
	/* Sent together with its run's first piece: done with it, not before. */
	c = rd(p, 6, 0, 128 * KiB, DL_PREQ_BUFFERED, T0 + SEC);
	d = rd(p, 6, 128 * KiB, 4 * KiB, DL_PREQ_BUFFERED, T0 + SEC);
	CHECK(d.due_ns == c.due_ns, "piece in flight done at +%lld ns of its run",
	      (long long)(d.due_ns - c.due_ns));
	dl_pacer_free(p);
}

/* The device model (transfer: a fixed cost plus bytes at transfer behind an
 * IO bucket): a continuation takes no IO token and no fixed cost, only its
 * bytes' transfer time. */
static void test_device_model(void)
{
	const char *const kv[] = {"read.transfer=1GB/s", "read.latency=100us", "read.iops=1000",
				  "read.iops_burst=1", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result a, b, c;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = rd(p, 9, 0, 100000, DL_PREQ_BUFFERED, T0);
	CHECK(a.due_ns == T0 + 100 * US + 100 * US, "first piece +%llu ns (100 us + 100 us)",
	      (unsigned long long)(a.due_ns - T0));
	/* Right after it, the next piece: its bytes only (100 us), no wait for
	 * the IO bucket's next token (1 ms) nor a second fixed cost. */
	b = rd(p, 9, 100000, 100000, DL_PREQ_BUFFERED, a.due_ns);
	CHECK(b.due_ns == a.due_ns + 100 * US, "continuation +%llu ns (want 100 us)",
	      (unsigned long long)(b.due_ns - a.due_ns));
	/* An O_DIRECT read at the same moment waits for the token. */
	c = rd(p, 10, 0, 100000, 0, a.due_ns);
	CHECK(c.due_ns >= T0 + MS + 200 * US, "direct read +%llu ns (want >= 1.2 ms)",
	      (unsigned long long)(c.due_ns - T0));
	CHECK(stat_num(p, "read", "device_ops") == 2, "device_ops %g",
	      stat_num(p, "read", "device_ops"));
	dl_pacer_free(p);
}

/* The stream table is bounded: the oldest streams are forgotten. */
static void test_run_table_bounded(void)
{
	const char *const kv[] = {"read.iops=1000000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (uint64_t f = 1; f <= 100; f++)
		rd(p, f, 0, 4 * KiB, DL_PREQ_BUFFERED, T0 + f * US);
	for (uint64_t f = 100; f >= 1; f--)
		rd(p, f, 4 * KiB, 4 * KiB, DL_PREQ_BUFFERED, T0 + MS);
	CHECK(stat_num(p, "read", "merged_ops") == 64, "merged %g (want the 64 latest streams)",
	      stat_num(p, "read", "merged_ops"));
	dl_pacer_free(p);
}

/* The inode cache: a first touch costs meta.latency, later ones
 * meta.cached_latency (without the device: no IOPS slot); cache drop
 * forgets; without cached_latency every touch costs latency. */
static void test_inode_cache(void)
{
	const char *const kv[] = {"meta.latency=5ms", "meta.cached_latency=10us", "meta.iops=100",
				  NULL};
	const char *const plain[] = {"meta.latency=5ms", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result a, b, c, d, e, f;
	uint64_t t = T0 + SEC;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = meta(p, 42, T0);
	CHECK(a.due_ns == T0 + 5 * MS, "first touch +%llu ns", (unsigned long long)(a.due_ns - T0));
	/* Right away, while the IOPS step (10 ms) would hold a device request. */
	b = meta(p, 42, T0 + 1 * MS);
	CHECK(b.due_ns == T0 + 1 * MS + 10 * US, "cached touch +%llu ns",
	      (unsigned long long)(b.due_ns - T0 - 1 * MS));
	c = meta(p, 43, T0 + 1 * MS);
	CHECK(c.due_ns == T0 + 15 * MS, "another inode: cold, after the IOPS step (+%llu ns)",
	      (unsigned long long)(c.due_ns - T0));
	d = meta(p, 0, t);
	e = meta(p, 0, t + SEC);
	CHECK(d.due_ns == t + 5 * MS && e.due_ns == t + SEC + 5 * MS,
	      "an unknown inode (0) is always cold");
	CHECK(stat_num(p, "meta", "inode_cache_hits") == 1, "inode_cache_hits %g",
	      stat_num(p, "meta", "inode_cache_hits"));
	CHECK(stat_num(p, "meta", "device_ops") == 4, "meta device_ops %g",
	      stat_num(p, "meta", "device_ops"));
	dl_pacer_cache_drop(p);
	f = meta(p, 42, t + 2 * SEC);
	CHECK(f.due_ns == t + 2 * SEC + 5 * MS, "after cache drop: cold again (+%llu ns)",
	      (unsigned long long)(f.due_ns - t - 2 * SEC));
	dl_pacer_free(p);

	p = test_pacer(plain, T0, 1);
	CHECK(p != NULL, "plain pacer");
	if (!p)
		return;
	a = meta(p, 42, T0);
	b = meta(p, 42, T0 + SEC);
	CHECK(a.due_ns == T0 + 5 * MS && b.due_ns == T0 + SEC + 5 * MS,
	      "no cached_latency: every touch costs latency");
	dl_pacer_free(p);
}

static void test_cached_latency_keys(void)
{
	struct dl_pacer_cfg cfg;
	const char *const kv[] = {"meta.cached_latency=lognormal(5us,50us)", NULL};
	char err[256] = "", *dump;

	CHECK(test_pacer_cfg(&cfg, kv) == 0, "meta.cached_latency takes a distribution");
	dump = test_pacer_dump(&cfg);
	CHECK(dump && strstr(dump, "cached_latency: lognormal(5us, 50us)"), "dump says it: %s",
	      dump ? dump : "(null)");
	free(dump);
	/* Only metadata has an inode cache: the check names the key. */
	CHECK(dl_pacer_cfg_set(&cfg, "read.cached_latency", "1ms", err, sizeof(err)) == 0,
	      "set: %s", err);
	CHECK(dl_pacer_cfg_check(&cfg, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "read.cached_latency"),
	      "read.cached_latency refused: \"%s\"", err);
	test_pacer_expect_err(&cfg, "meta.cached_latency", "fast", "meta.cached_latency");
	dl_pacer_cfg_free(&cfg);
	/* blksize: a power of two from 512 to 16 MiB; 0 is the default. */
	CHECK(test_pacer_cfg(&cfg, (const char *const[]){"blksize=4KiB", NULL}) == 0, "blksize");
	CHECK(cfg.blksize == 4096, "blksize %llu", (unsigned long long)cfg.blksize);
	for (int i = 0; i < 3; i++) {
		const char *bad[] = {"3000", "256", "32MiB"};

		CHECK(dl_pacer_cfg_set(&cfg, "blksize", bad[i], err, sizeof(err)) == 0, "set");
		CHECK(dl_pacer_cfg_check(&cfg, err, sizeof(err)) == -EINVAL &&
			  strstr(err, "blksize"),
		      "blksize=%s refused: \"%s\"", bad[i], err);
	}
	dl_pacer_cfg_free(&cfg);
}

static void test_blksize_live(void)
{
	const char *const none[] = {NULL};
	struct dl_pacer *p = test_pacer(none, T0, 1);
	char err[256] = "";

	CHECK(p && dl_pacer_blksize(p) == 1 << 20, "default blksize 1 MiB");
	CHECK(p && dl_pacer_set(p, "blksize", "4KiB", err, sizeof(err)) == 0, "set: %s", err);
	CHECK(p && dl_pacer_blksize(p) == 4096, "live blksize");
	CHECK(p && dl_pacer_set(p, "blksize", "5000", err, sizeof(err)) == -EINVAL &&
		  dl_pacer_blksize(p) == 4096,
	      "a refused blksize changes nothing");
	dl_pacer_free(p);
}

int main(void)
{
	test_eof();
	test_pieces_in_flight();
	test_direct_no_merge();
	test_run_bounds();
	test_run_latency();
	test_readahead_windows();
	test_run_table_bounded();
	test_device_model();
	test_inode_cache();
	test_cached_latency_keys();
	test_blksize_live();
	return tap_done("pacer_devwork");
}
