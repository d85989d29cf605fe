/* What a device does for the requests a mount receives (pacer/devwork.c), in
 * virtual time: a read at the end of a file costs nothing; a buffered
 * reader's calls go through an emulated readahead (one IO per window, the
 * windows growing as the kernel's, reads inside a window free but not due
 * before it; PIL's pattern on a JPEG is 3 IOs as on ext4; bounded stream
 * table), an unflagged (O_DIRECT) read is an IO each; metadata of an inode
 * seen before takes meta.cached_latency until `cache drop`; blksize. */
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

/* Submit a read of a file of size bytes and complete it at its due time. */
static struct dl_pacer_result rd_sized(struct dl_pacer *p, uint64_t file, uint64_t off,
				       uint64_t len, uint32_t flags, uint64_t t, uint64_t size)
{
	struct dl_pacer_req r = {.cls = DL_OP_READ,
				 .file_id = file,
				 .off = off,
				 .len = len,
				 .flags = flags,
				 .file_size = size};
	struct dl_pacer_result res;

	memset(&res, 0, sizeof(res));
	CHECK(dl_pacer_submit(p, &r, t, &res) == 0, "submit read");
	dl_pacer_complete(p, &r, &res, res.due_ns);
	return res;
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

/* A reader's 8 KiB calls, each after the last is done: one IO per
 * readahead window, 32 KiB then the rest of a 110 kB file; the calls
 * inside a window cost nothing. An IO moves its whole window. */
static void test_small_calls(void)
{
	const char *const kv[] = {"read.bandwidth=1GB/s", "read.burst=4KiB", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result r, first = {0}, fifth = {0};
	uint64_t t = T0, t5 = 0, off;
	int n = 0;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (off = 0; off < 110000; off += 8192, n++) {
		r = rd_sized(p, 11, off, off + 8192 > 110000 ? 110000 - off : 8192,
			     DL_PREQ_BUFFERED, t, 110000);
		if (n == 0)
			first = r;
		if (n == 4) {
			fifth = r;
			t5 = t;
		}
		t = r.due_ns + 30 * US;
	}
	CHECK(stat_num(p, "read", "device_ops") == 2, "110 kB in 8 KiB calls: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	CHECK(stat_num(p, "read", "merged_ops") == 12, "merged_ops %g",
	      stat_num(p, "read", "merged_ops"));
	/* The first IO moves 32 KiB at 1 GB/s, the second the 77232 bytes left
	 * (less the 4 KiB the bucket saved while idle). */
	CHECK(first.due_ns - T0 == 32768, "first window took %llu ns (want 32768)",
	      (unsigned long long)(first.due_ns - T0));
	CHECK(fifth.due_ns - t5 == 77232 - 4096, "second window took %llu ns (want %d)",
	      (unsigned long long)(fifth.due_ns - t5), 77232 - 4096);
	dl_pacer_free(p);
}

/* PIL on a JPEG with a 4 KiB buffer: a header pass (4 KiB, then reads past
 * the padding), then the decoder from the start again. ext4 does 3 IOs. */
static void test_pil_pattern(void)
{
	static const uint64_t calls[][2] = {{0, 4096},	    {4096, 36864}, {40960, 4096},
					    {45056, 36864}, {81920, 4096}, {0, 65536},
					    {65536, 23171}};
	const char *const kv[] = {"read.iops=1000000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result r;
	uint64_t t = T0;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (unsigned i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		r = rd_sized(p, 21, calls[i][0], calls[i][1], DL_PREQ_BUFFERED, t, 88707);
		t = r.due_ns + 20 * US;
	}
	CHECK(stat_num(p, "read", "device_ops") == 3, "PIL's pattern: device_ops %g (want 3)",
	      stat_num(p, "read", "device_ops"));
	CHECK(stat_num(p, "read", "merged_ops") == 4, "merged_ops %g",
	      stat_num(p, "read", "merged_ops"));
	dl_pacer_free(p);
}

/* A read of what was read ahead is due when its window is, not before; a
 * stream is forgotten after a pause; each file has its own. */
static void test_streams(void)
{
	const char *const kv[] = {"read.latency=1ms", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result a, b;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = rd_sized(p, 31, 0, 8192, DL_PREQ_BUFFERED, T0, 1 << 20);
	b = rd_sized(p, 31, 8192, 8192, DL_PREQ_BUFFERED, T0 + 10 * US, 1 << 20);
	CHECK(a.due_ns == T0 + MS && b.due_ns == T0 + MS, "in-window read due at +%llu ns",
	      (unsigned long long)(b.due_ns - T0));
	rd_sized(p, 32, 8192, 8192, DL_PREQ_BUFFERED, T0 + 20 * US, 1 << 20);
	CHECK(stat_num(p, "read", "device_ops") == 2, "another file: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	/* Seconds later the pages are gone: an IO again. */
	rd_sized(p, 31, 8192, 8192, DL_PREQ_BUFFERED, T0 + 3 * SEC, 1 << 20);
	CHECK(stat_num(p, "read", "device_ops") == 3, "after a pause: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	/* A seek outside the stream's bytes: a new stream, an IO of just the
	 * read (the kernel reads ahead only from a file's start or once a
	 * reader goes on); going on takes a window, 32 KiB, which holds the
	 * next three calls. */
	rd_sized(p, 31, 512 * KiB, 8192, DL_PREQ_BUFFERED, T0 + 3 * SEC + 2 * MS, 1 << 20);
	rd_sized(p, 31, 512 * KiB, 4096, DL_PREQ_BUFFERED, T0 + 3 * SEC + 2 * MS, 1 << 20);
	CHECK(stat_num(p, "read", "device_ops") == 4 && stat_num(p, "read", "merged_ops") == 2,
	      "after a seek: device_ops %g merged %g", stat_num(p, "read", "device_ops"),
	      stat_num(p, "read", "merged_ops"));
	rd_sized(p, 31, 520 * KiB, 8192, DL_PREQ_BUFFERED, T0 + 3 * SEC + 3 * MS, 1 << 20);
	rd_sized(p, 31, 528 * KiB, 8192, DL_PREQ_BUFFERED, T0 + 3 * SEC + 4 * MS, 1 << 20);
	rd_sized(p, 31, 536 * KiB, 8192, DL_PREQ_BUFFERED, T0 + 3 * SEC + 5 * MS, 1 << 20);
	rd_sized(p, 31, 544 * KiB, 8192, DL_PREQ_BUFFERED, T0 + 3 * SEC + 6 * MS, 1 << 20);
	CHECK(stat_num(p, "read", "device_ops") == 5, "going on: device_ops %g (want 5)",
	      stat_num(p, "read", "device_ops"));
	/* Without the flag (O_DIRECT, or the kernel's own readahead request)
	 * each read is an IO. */
	rd_sized(p, 31, 512 * KiB, 8192, 0, T0 + 3 * SEC + 7 * MS, 1 << 20);
	rd_sized(p, 31, 512 * KiB + 8192, 8192, 0, T0 + 3 * SEC + 8 * MS, 1 << 20);
	CHECK(stat_num(p, "read", "device_ops") == 7, "unflagged: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	dl_pacer_free(p);
}

/* A stream keeps its last 2 MiB: a re-read of a large file from its start
 * pays again (no cache of the file's data), a small file's does not. */
static void test_stream_keeps_little(void)
{
	const char *const kv[] = {"read.iops=1000000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	uint64_t t = T0, off;
	double before;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (off = 0; off < 16 * 1024 * KiB; off += 1024 * KiB, t += MS)
		rd_sized(p, 51, off, 1024 * KiB, DL_PREQ_BUFFERED, t, 64 << 20);
	before = stat_num(p, "read", "device_ops");
	CHECK(before == 16, "16 MiB in 1 MiB reads: device_ops %g", before);
	rd_sized(p, 51, 0, 1024 * KiB, DL_PREQ_BUFFERED, t, 64 << 20);
	CHECK(stat_num(p, "read", "device_ops") == before + 1, "re-read from the start: an IO");
	rd_sized(p, 51, 1024 * KiB, 512 * KiB, DL_PREQ_BUFFERED, t + MS, 64 << 20);
	rd_sized(p, 51, 0, 512 * KiB, DL_PREQ_BUFFERED, t + 2 * MS, 64 << 20);
	CHECK(stat_num(p, "read", "merged_ops") == 1, "the last window re-read: merged %g",
	      stat_num(p, "read", "merged_ops"));
	dl_pacer_free(p);
}

/* Two jobs reading one file: each pays its own IOs (no cache is shared). */
static void test_jobs_own_streams(void)
{
	const char *const kv[] = {"read.iops=1000000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (uint32_t job = 1; job <= 2; job++)
		for (uint64_t off = 0; off < 32 * KiB; off += 8 * KiB) {
			struct dl_pacer_req r = {.cls = DL_OP_READ,
						 .file_id = 41,
						 .off = off,
						 .len = 8 * KiB,
						 .job = job,
						 .flags = DL_PREQ_BUFFERED,
						 .file_size = 1 << 20};
			struct dl_pacer_result res;

			CHECK(dl_pacer_submit(p, &r, T0 + off, &res) == 0, "submit");
			dl_pacer_complete(p, &r, &res, res.due_ns);
		}
	CHECK(stat_num(p, "read", "device_ops") == 2 && stat_num(p, "read", "merged_ops") == 6,
	      "two jobs: device_ops %g merged %g", stat_num(p, "read", "device_ops"),
	      stat_num(p, "read", "merged_ops"));
	dl_pacer_free(p);
}

/* The device model: a window's IO takes its IO token, fixed and serial
 * cost; reads inside it take none. */
static void test_device_model(void)
{
	const char *const kv[] = {"read.transfer=1GB/s", "read.latency=100us", "read.iops=1000",
				  "read.iops_burst=1",	 "read.serial=50us",   NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result a, b, c;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = rd_sized(p, 9, 0, 8192, DL_PREQ_BUFFERED, T0, 1 << 20);
	CHECK(a.due_ns == T0 + 100 * US + 50 * US + 32768,
	      "first window +%llu ns (100 us + 50 us serial + 32 KiB at 1 GB/s)",
	      (unsigned long long)(a.due_ns - T0));
	b = rd_sized(p, 9, 8192, 8192, DL_PREQ_BUFFERED, a.due_ns, 1 << 20);
	CHECK(b.due_ns == a.due_ns, "read inside the window +%llu ns",
	      (unsigned long long)(b.due_ns - a.due_ns));
	/* Past the window: the next one (128 KiB), after the IO token (1 ms). */
	c = rd_sized(p, 9, 32 * KiB, 8192, DL_PREQ_BUFFERED, b.due_ns, 1 << 20);
	CHECK(c.due_ns == T0 + MS + 150 * US + 131072, "next window at +%llu ns",
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
		rd_sized(p, f, 0, 4 * KiB, DL_PREQ_BUFFERED, T0 + f * US, 1 << 20);
	for (uint64_t f = 100; f >= 1; f--)
		rd_sized(p, f, 4 * KiB, 4 * KiB, DL_PREQ_BUFFERED, T0 + MS, 1 << 20);
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

/* meta.device_ios: a first touch's own device reads (inode and directory
 * blocks) pass the read class's throttle, as on a throttled disk, where a
 * loader over small files pays them beside its data IOs (3.12-3.30 IOs a
 * JPEG under blkio against 2.94 of data: bench_fidelity's ci device).
 * Fractional owed reads carry over; cached touches owe none; a read
 * behind them waits for their tokens. */
static void test_meta_device_ios(void)
{
	const char *const kv[] = {"read.transfer=1GB/s", "read.latency=50us", "read.iops=100",
				  "meta.latency=10us",	 "meta.cached_latency=1us",
				  "meta.device_ios=0.5", NULL};
	const char *const none[] = {"read.transfer=1GB/s", "read.latency=50us", "read.iops=100",
				    "meta.latency=10us", "meta.cached_latency=1us", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1), *q = test_pacer(none, T0, 1);
	struct dl_pacer_result a, r;
	struct dl_pacer_cfg cfg;
	char err[256] = "", *dump;
	uint64_t last = 0;

	CHECK(p && q, "pacers");
	if (!p || !q)
		goto out;
	/* 10 first touches at once owe 5 reads: 100 IO/s lets one through
	 * every 10 ms (a continuous bucket of depth 1), the first at once. */
	for (uint64_t i = 1; i <= 10; i++) {
		a = meta(p, 100 + i, T0);
		if (a.due_ns > last)
			last = a.due_ns;
		r = meta(q, 100 + i, T0);
		CHECK(r.due_ns == T0 + 10 * US, "without device_ios: +%llu ns",
		      (unsigned long long)(r.due_ns - T0));
	}
	CHECK(last == T0 + 40 * MS, "5 owed reads through 100 IO/s: the last at +%.1f ms (40)",
	      (double)(last - T0) / 1e6);
	CHECK(stat_num(p, "read", "meta_reads") == 5, "read.meta_reads %g",
	      stat_num(p, "read", "meta_reads"));
	/* Cached touches owe nothing. */
	a = meta(p, 101, T0 + SEC);
	CHECK(a.due_ns == T0 + SEC + US, "a cached touch +%llu ns",
	      (unsigned long long)(a.due_ns - T0 - SEC));
	/* A data read right behind the metadata's reads waits for a token. */
	for (uint64_t i = 11; i <= 12; i++)
		meta(p, 100 + i, T0 + 2 * SEC);
	r = rd(p, 7, 0, 4 * KiB, 0, T0 + 2 * SEC);
	CHECK(r.due_ns >= T0 + 2 * SEC + 10 * MS,
	      "a read after a metadata read at 100 IO/s: +%.2f ms (>= 10)",
	      (double)(r.due_ns - T0 - 2 * SEC) / 1e6);
	r = rd(q, 7, 0, 4 * KiB, 0, T0 + 2 * SEC);
	CHECK(r.due_ns < T0 + 2 * SEC + MS, "without device_ios it does not wait: +%.2f ms",
	      (double)(r.due_ns - T0 - 2 * SEC) / 1e6);
	/* The key: meta only, 0 to 64, dumped where set. */
	CHECK(test_pacer_cfg(&cfg, kv) == 0, "config");
	dump = test_pacer_dump(&cfg);
	CHECK(dump && strstr(dump, "device_ios: 0.5") && !strstr(dump, "device_ios: 0\n"),
	      "dump: %s", dump ? dump : "(null)");
	free(dump);
	CHECK(dl_pacer_cfg_set(&cfg, "read.device_ios", "1", err, sizeof(err)) == 0, "set: %s", err);
	CHECK(dl_pacer_cfg_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "read.device_ios"),
	      "read.device_ios refused: \"%s\"", err);
	test_pacer_expect_err(&cfg, "meta.device_ios", "65", "meta.device_ios");
	test_pacer_expect_err(&cfg, "meta.device_ios", "-1", "meta.device_ios");
	dl_pacer_cfg_free(&cfg);
out:
	dl_pacer_free(p);
	dl_pacer_free(q);
}

/* meta.readdir_ios: a directory's first listing reads its blocks once,
 * apart from its inode (looked up before): the listing owes its reads even
 * when the inode is cached, a second listing none, and the later parts of
 * a listing (readdir past its start) none. */
static void test_listing_ios(void)
{
	const char *const kv[] = {"read.transfer=1GB/s",     "read.latency=50us",
				  "read.iops=100",	     "meta.latency=10us",
				  "meta.cached_latency=1us", "meta.readdir_ios=3",
				  NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_req lst = {.cls = DL_OP_META, .inode = 9, .flags = DL_PREQ_LISTING};
	struct dl_pacer_req more = {.cls = DL_OP_META, .inode = 9};
	struct dl_pacer_result a, b, c, d;
	char err[256] = "";
	struct dl_pacer_cfg cfg;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	a = meta(p, 9, T0); /* the lookup: the directory's inode */
	CHECK(a.due_ns == T0 + 10 * US, "lookup +%llu ns", (unsigned long long)(a.due_ns - T0));
	CHECK(dl_pacer_submit(p, &lst, T0 + MS, &b) == 0, "listing");
	dl_pacer_complete(p, &lst, &b, b.due_ns);
	/* 3 reads at 100 IO/s: the first at once, the third 20 ms on. */
	CHECK(b.due_ns == T0 + 21 * MS, "first listing +%.3f ms (21: three reads through 100 IO/s)",
	      (double)(b.due_ns - T0) / 1e6);
	CHECK(dl_pacer_submit(p, &more, T0 + 30 * MS, &c) == 0, "listing, later part");
	dl_pacer_complete(p, &more, &c, c.due_ns);
	CHECK(c.due_ns == T0 + 30 * MS + US, "its later part: cached (+%llu ns)",
	      (unsigned long long)(c.due_ns - T0 - 30 * MS));
	CHECK(dl_pacer_submit(p, &lst, T0 + SEC, &d) == 0, "second listing");
	dl_pacer_complete(p, &lst, &d, d.due_ns);
	CHECK(d.due_ns == T0 + SEC + US, "a second listing: cached (+%llu ns)",
	      (unsigned long long)(d.due_ns - T0 - SEC));
	CHECK(stat_num(p, "read", "meta_reads") == 3, "read.meta_reads %g",
	      stat_num(p, "read", "meta_reads"));
	dl_pacer_free(p);
	CHECK(test_pacer_cfg(&cfg, kv) == 0, "config");
	CHECK(dl_pacer_cfg_set(&cfg, "write.readdir_ios", "1", err, sizeof(err)) == 0, "set: %s",
	      err);
	CHECK(dl_pacer_cfg_check(&cfg, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "write.readdir_ios"),
	      "write.readdir_ios refused: \"%s\"", err);
	dl_pacer_cfg_free(&cfg);
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

/* An application read of 4 MiB reaches the mount as 1 MiB pieces (FUSE's
 * largest request, max_pages 256), sent together: one request to a device,
 * as a block layer merges them (this VM's disk takes 4 MiB requests,
 * max_sectors_kb 4096), so the fixed cost is paid once, not four times;
 * each piece still passes the throttle (blk-throttle counts bios). A
 * reader with one request in flight pays it every time; a run stops at
 * 4 MiB; two streams interleaved each keep their run. */
/* read.max_request: the pieces merge up to the device's largest request
 * (a disk whose max_sectors_kb is 2048: two runs of 2 MiB, two fixed
 * costs); out of range is refused with the key's name. */
static void test_max_request(void)
{
	const char *const kv[] = {"read.transfer=1GB/s", "read.latency=100us",
				  "read.queue_depth=1", "read.max_request=2MiB", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 7, .len = 1 << 20};
	struct dl_pacer_result res[4];
	const uint64_t mib = 1 << 20, fixed = 100 * US;
	struct dl_pacer_cfg cfg;
	char err[256] = "";

	CHECK(p != NULL, "a device model pacer with max_request");
	if (!p)
		return;
	for (int i = 0; i < 4; i++) {
		r.off = (uint64_t)i * mib;
		dl_pacer_submit(p, &r, T0 + (uint64_t)i * 2 * US, &res[i]);
	}
	CHECK(res[3].due_ns == T0 + 2 * fixed + 4 * mib,
	      "4 pieces in flight, max_request 2 MiB: two fixed costs and 4 MiB: %.3f ms (%.3f)",
	      (double)(res[3].due_ns - T0) / 1e6, (double)(2 * fixed + 4 * mib) / 1e6);
	CHECK(stat_num(p, "read", "device_ops") == 2 && stat_num(p, "read", "merged_ops") == 2,
	      "two IOs of two pieces: device_ops %g, merged_ops %g",
	      stat_num(p, "read", "device_ops"), stat_num(p, "read", "merged_ops"));
	for (int i = 0; i < 4; i++)
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
	dl_pacer_free(p);
	dl_pacer_cfg_init(&cfg);
	CHECK(!dl_pacer_cfg_set(&cfg, "read.max_request", "1KiB", err, sizeof(err)) &&
		  dl_pacer_cfg_check(&cfg, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "read.max_request"),
	      "max_request below 4KiB refused: %s", err);
	dl_pacer_cfg_free(&cfg);
}

static void test_fuse_pieces(void)
{
	const char *const kv[] = {"read.transfer=1GB/s", "read.latency=100us",
				  "read.queue_depth=1", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 7, .len = 1 << 20};
	struct dl_pacer_result res[8];
	const uint64_t mib = 1 << 20, fixed = 100 * US;
	uint64_t t;
	int ok = 1;

	CHECK(p != NULL, "a device model pacer");
	if (!p)
		return;
	for (int i = 0; i < 4; i++) {
		r.off = (uint64_t)i * mib;
		dl_pacer_submit(p, &r, T0 + (uint64_t)i * 2 * US, &res[i]);
	}
	CHECK(res[3].due_ns == T0 + fixed + 4 * mib,
	      "4 pieces of one read in flight: one fixed cost, then 4 MiB at 1 GB/s: %.3f ms "
	      "(4 fixed costs: %.3f)", (double)(res[3].due_ns - T0) / 1e6,
	      (double)(4 * (fixed + mib)) / 1e6);
	for (int i = 1; i < 4; i++)
		ok &= res[i].due_ns == res[i - 1].due_ns + mib;
	CHECK(ok, "each piece is due when its bytes have moved after the one before");
	CHECK(stat_num(p, "read", "device_ops") == 1 && stat_num(p, "read", "merged_ops") == 3,
	      "one IO, 3 pieces merged: device_ops %g, merged_ops %g",
	      stat_num(p, "read", "device_ops"), stat_num(p, "read", "merged_ops"));
	for (int i = 0; i < 4; i++)
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
	/* One request in flight at a time: each its own IO. */
	t = res[3].due_ns + MS;
	ok = 1;
	for (int i = 4; i < 8; i++) {
		r.off = (uint64_t)i * mib;
		dl_pacer_submit(p, &r, t, &res[i]);
		ok &= res[i].due_ns - t == fixed + mib;
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
		t = res[i].due_ns;
	}
	CHECK(ok, "a reader with one 1 MiB read in flight pays the fixed cost each time");
	CHECK(stat_num(p, "read", "device_ops") == 5, "device_ops %g",
	      stat_num(p, "read", "device_ops"));
	/* The mount sends a reply before its due time (--fuse-overhead and
	 * the copy): the next read arrives while the one before is still
	 * due, long after its pieces came, and is a request of its own. */
	t += MS;
	ok = 1;
	for (int i = 0; i < 4; i++) {
		r.off = (uint64_t)(8 + i) * mib;
		dl_pacer_submit(p, &r, t, &res[i]);
		/* (it waits for the one channel, then its own service) */
		ok &= res[i].service_ns == fixed + mib;
		t = res[i].due_ns - 100 * US;
	}
	CHECK(ok, "a read arriving 100 us before the one before is due pays its fixed cost");
	CHECK(stat_num(p, "read", "device_ops") == 9 && stat_num(p, "read", "merged_ops") == 3,
	      "device_ops %g, merged_ops %g", stat_num(p, "read", "device_ops"),
	      stat_num(p, "read", "merged_ops"));
	for (int i = 0; i < 4; i++)
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
	dl_pacer_free(p);

	/* 8 MiB at once: two runs of 4 MiB. Two files interleaved: each its
	 * own run. */
	p = test_pacer(kv, T0, 1);
	CHECK(p != NULL, "a device model pacer");
	if (!p)
		return;
	for (int i = 0; i < 8; i++) {
		r.off = (uint64_t)i * mib;
		dl_pacer_submit(p, &r, T0, &res[i]);
	}
	CHECK(res[7].due_ns == T0 + 2 * fixed + 8 * mib && stat_num(p, "read", "device_ops") == 2,
	      "8 MiB in flight: two runs of 4 MiB, two fixed costs: %.3f ms, device_ops %g",
	      (double)(res[7].due_ns - T0) / 1e6, stat_num(p, "read", "device_ops"));
	for (int i = 0; i < 8; i++)
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
	dl_pacer_free(p);
	p = test_pacer(kv, T0, 1);
	CHECK(p != NULL, "a device model pacer");
	if (!p)
		return;
	for (int i = 0; i < 4; i++) {
		r.file_id = 10 + (uint64_t)(i % 2);
		r.off = (uint64_t)(i / 2) * mib;
		dl_pacer_submit(p, &r, T0, &res[i]);
	}
	CHECK(stat_num(p, "read", "device_ops") == 2 && stat_num(p, "read", "merged_ops") == 2,
	      "two files' pieces interleaved: one run each: device_ops %g, merged_ops %g",
	      stat_num(p, "read", "device_ops"), stat_num(p, "read", "merged_ops"));
	for (int i = 0; i < 4; i++)
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
	dl_pacer_free(p);
}

/* With no client cache (cache.policy none) a stream's pages serve the open
 * file only: a whole-file reader that closes a 110 kB file and reads it
 * again at once pays its IOs again (every epoch pays); without the close,
 * a second pass (PIL's over a JPEG whose header pass read it to its end)
 * is free, as in a kernel's page cache. */
static void test_close_ends_stream(void)
{
	const char *const kv[] = {"read.iops=1000000", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_req close = {.cls = DL_OP_META, .file_id = 61, .flags = DL_PREQ_NODEV};
	struct dl_pacer_result res;
	uint64_t t = T0;

	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	for (int pass = 0; pass < 3; pass++) {
		for (uint64_t off = 0; off < 110000; off += 8 * KiB, t += 10 * US)
			rd_sized(p, 61, off, off + 8 * KiB > 110000 ? 110000 - off : 8 * KiB,
				 DL_PREQ_BUFFERED, t, 110000);
		if (pass == 1) {
			dl_pacer_submit(p, &close, t, &res);
			dl_pacer_complete(p, &close, &res, res.due_ns);
		}
	}
	CHECK(stat_num(p, "read", "device_ops") == 4,
	      "a 110 kB file read twice, closed, read again: 2 IOs, none, 2 (device_ops %g)",
	      stat_num(p, "read", "device_ops"));
	/* Another job's close, or another file's, ends nothing of this one. */
	close.job = 9;
	dl_pacer_submit(p, &close, t, &res);
	close.job = 0;
	close.file_id = 62;
	dl_pacer_submit(p, &close, t, &res);
	rd_sized(p, 61, 0, 8 * KiB, DL_PREQ_BUFFERED, t + 10 * US, 110000);
	CHECK(stat_num(p, "read", "device_ops") == 4, "others' closes: device_ops %g",
	      stat_num(p, "read", "device_ops"));
	dl_pacer_free(p);
}

/* Pieces merged keep passing an IO throttle one by one: 4 pieces under a
 * continuous bucket of 1000 IO/s, 1 deep, leave it 1 ms apart. */
static void test_pieces_throttled(void)
{
	const char *const kv[] = {"read.transfer=1GB/s", "read.latency=100us",
				  "read.queue_depth=1", "read.iops=1000", "read.iops_burst=1",
				  NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 7, .len = 64 * KiB};
	struct dl_pacer_result res[4];
	int ok = 1;

	CHECK(p != NULL, "a device model pacer");
	if (!p)
		return;
	for (int i = 0; i < 4; i++) {
		r.off = (uint64_t)i * 64 * KiB;
		dl_pacer_submit(p, &r, T0, &res[i]);
		ok &= res[i].queue_ns == (uint64_t)i * MS;
	}
	CHECK(ok, "each piece waits for its own IO token: %.3f %.3f %.3f ms",
	      (double)res[1].queue_ns / 1e6, (double)res[2].queue_ns / 1e6,
	      (double)res[3].queue_ns / 1e6);
	/* 1 ms apart, each done long before the next: no run goes on. */
	CHECK(stat_num(p, "read", "device_ops") == 4, "device_ops %g",
	      stat_num(p, "read", "device_ops"));
	for (int i = 0; i < 4; i++)
		dl_pacer_complete(p, &r, &res[i], res[i].due_ns);
	dl_pacer_free(p);
}

int main(void)
{
	test_eof();
	test_small_calls();
	test_pil_pattern();
	test_streams();
	test_jobs_own_streams();
	test_stream_keeps_little();
	test_device_model();
	test_run_table_bounded();
	test_inode_cache();
	test_cached_latency_keys();
	test_meta_device_ios();
	test_listing_ios();
	test_blksize_live();
	test_fuse_pieces();
	test_max_request();
	test_pieces_throttled();
	test_close_ends_stream();
	return tap_done("pacer_devwork");
}
