/* The emulated cache through the pacer: LRU thrashing vs MinIO on epochs of
 * random permutations (the CoorDL result), hit/miss splits and timing,
 * eviction order, drop and warm, live changes, statistics, lazy memory. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "dliofs/pacer.h"
#include "dliofs/prng.h"
#include "pacer_kv.h"
#include "tap.h"

#define MiB ((uint64_t)1 << 20)
#define KiB ((uint64_t)1 << 10)
#define US ((uint64_t)1000)
#define MS ((uint64_t)1000000)
#define SEC ((uint64_t)1000000000)
#define T0 (1000 * SEC)

static double json_num(const char *js, const char *const *path, const char *key)
{
	const char *s = js;
	char k[96];

	for (; *path; path++) {
		snprintf(k, sizeof(k), "\"%s\"", *path);
		s = strstr(s, k);
		if (!s)
			return NAN;
	}
	snprintf(k, sizeof(k), "\"%s\": ", key);
	s = strstr(s, k);
	return s ? strtod(s + strlen(k), NULL) : NAN;
}

static double stat_of(struct dl_pacer *p, const char *const *path, const char *key)
{
	char *js = NULL;
	size_t len;
	double v;

	if (dl_pacer_stats_json(p, T0 + SEC, &js, &len))
		return NAN;
	v = json_num(js, path, key);
	free(js);
	return v;
}

static const char *const CACHE[] = {"cache", NULL};
static const char *const RCACHE[] = {"classes", "read", "cache", NULL};

/* Read [off, off + len) of file at t; returns hit bytes. */
static uint64_t rd(struct dl_pacer *p, uint64_t file, uint64_t off, uint64_t len, uint64_t t,
		   struct dl_pacer_result *out)
{
	struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = file, .off = off, .len = len, .job = 1};
	struct dl_pacer_result res;

	if (dl_pacer_submit(p, &r, t, &res))
		abort();
	dl_pacer_complete(p, &r, &res, res.due_ns);
	if (out)
		*out = res;
	return res.hit_bytes;
}

/* ---- the CoorDL result ---- */

/* Epochs over a dataset twice the cache, each a fresh random permutation of
 * all blocks; returns per-epoch hit ratios. */
static void epochs(const char *policy, double *ratio, int nepochs)
{
	enum { FILES = 40, BLOCKS = 100, N = FILES * BLOCKS }; /* 4000 MiB; cache 2000 MiB */
	char pol[64];
	const char *kv[] = {pol, "cache.size=2000MiB", "cache.block=1MiB", "read.bandwidth=500MB/s",
			    NULL};
	struct dl_pacer *p;
	uint32_t *perm = malloc(N * sizeof(*perm));
	uint64_t t = T0, hit, all;
	struct dl_pacer_result res;

	snprintf(pol, sizeof(pol), "cache.policy=%s", policy);
	p = test_pacer(kv, T0, 1);
	for (uint32_t i = 0; i < N; i++)
		perm[i] = i;
	for (int e = 0; e < nepochs; e++) {
		/* Fisher-Yates with a seeded draw per (epoch, step). */
		for (uint32_t i = N - 1; i > 0; i--) {
			uint32_t j = (uint32_t)dl_prng_below(dl_key2(77, (uint64_t)e), i, i + 1);
			uint32_t tmp = perm[i];

			perm[i] = perm[j];
			perm[j] = tmp;
		}
		hit = all = 0;
		for (uint32_t i = 0; i < N; i++) {
			/* Two 512 KiB reads per block, as a loader reading a sample. */
			for (int h = 0; h < 2; h++) {
				hit += rd(p, perm[i] / BLOCKS,
					  (perm[i] % BLOCKS) * MiB + h * 512 * KiB, 512 * KiB, t,
					  &res);
				all += 512 * KiB;
				t = res.due_ns;
			}
		}
		ratio[e] = (double)hit / (double)all;
	}
	free(perm);
	dl_pacer_free(p);
}

static void test_epochs(void)
{
	double lru[6], minio[6], none[2];

	epochs("lru", lru, 6);
	epochs("minio", minio, 6);
	epochs("none", none, 2);
	printf("pacer_cache: hit ratio per epoch, dataset = 2 x cache:\n  lru:  ");
	for (int e = 0; e < 6; e++)
		printf(" %.4f", lru[e]);
	printf("\n  minio:");
	for (int e = 0; e < 6; e++)
		printf(" %.4f", minio[e]);
	printf("\n");
	/* Epoch 1: LRU holds every block for its second half-read: half the
	 * bytes hit. MinIO does so only until it is full (the first half of the
	 * blocks): a quarter. */
	CHECK(fabs(lru[0] - 0.5) < 1e-9 && fabs(minio[0] - 0.25) < 1e-9, "epoch 1: %.4f %.4f",
	      lru[0], minio[0]);
	for (int e = 1; e < 6; e++) {
		/* LRU: the second half-read of a block always hits, the first
		 * hits only if the block survived since the last epoch. That
		 * block-level ratio thrashes far below the cached half. */
		double lb = 2 * lru[e] - 1;

		CHECK(lb < 0.40, "epoch %d: LRU block hit ratio %.4f not < 40%%", e + 1, lb);
		/* MinIO: exactly the resident half, both halves alike. */
		CHECK(fabs(minio[e] - 0.5) < 0.005, "epoch %d: MinIO hit ratio %.4f != 50%%", e + 1,
		      minio[e]);
	}
	CHECK(none[0] == 0 && none[1] == 0, "none: %.4f %.4f", none[0], none[1]);
}

/* The same with one read per block, counted by requests in stats.json. */
static void test_epochs_requests(void)
{
	enum { N = 3000 };
	const char *pols[] = {"cache.policy=lru", "cache.policy=minio"};
	double ratio[2];

	for (int k = 0; k < 2; k++) {
		const char *kv[] = {pols[k], "cache.size=1500MiB", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);
		uint32_t *perm = malloc(N * sizeof(*perm));
		double h0, m0;

		for (uint32_t i = 0; i < N; i++)
			perm[i] = i;
		for (int e = 0; e < 4; e++) {
			for (uint32_t i = N - 1; i > 0; i--) {
				uint32_t j =
				    (uint32_t)dl_prng_below(dl_key2(5, (uint64_t)e), i, i + 1);
				uint32_t tmp = perm[i];

				perm[i] = perm[j];
				perm[j] = tmp;
			}
			h0 = stat_of(p, RCACHE, "hits");
			m0 = stat_of(p, RCACHE, "misses");
			for (uint32_t i = 0; i < N; i++)
				rd(p, 9, (uint64_t)perm[i] * MiB, MiB, T0 + SEC, NULL);
			ratio[k] =
			    (stat_of(p, RCACHE, "hits") - h0) /
			    (stat_of(p, RCACHE, "hits") - h0 + stat_of(p, RCACHE, "misses") - m0);
		}
		CHECK(stat_of(p, CACHE, "resident_blocks") == 1500, "resident %g",
		      stat_of(p, CACHE, "resident_blocks"));
		free(perm);
		dl_pacer_free(p);
	}
	printf("pacer_cache: one 1 MiB read per block, epoch 4 request hit ratio: lru %.4f, "
	       "minio %.4f\n",
	       ratio[0], ratio[1]);
	CHECK(ratio[0] < 0.40, "LRU epoch 4 request hit ratio %.4f", ratio[0]);
	CHECK(fabs(ratio[1] - 0.5) < 0.005, "MinIO epoch 4 request hit ratio %.4f", ratio[1]);
}

/* ---- small files: the cache counts bytes, not blocks ---- */

/* Epochs over 1000 files of 110 kB (an ImageNet-like JPEG size), each read
 * whole in a random order, with the default 1 MiB block and a cache of half
 * the dataset. size: the file size the pacer is told (0: unknown). */
static void small_epochs(const char *policy, uint64_t size, double *ratio, double *cached)
{
	enum { FILES = 1000 };
	const uint64_t fsize = 110000;
	char pol[64], sz[64];
	const char *kv[] = {pol, sz, NULL};
	uint32_t perm[FILES];
	struct dl_pacer *p;

	snprintf(pol, sizeof(pol), "cache.policy=%s", policy);
	snprintf(sz, sizeof(sz), "cache.size=%llu", (unsigned long long)(FILES * fsize / 2));
	p = test_pacer(kv, T0, 1);
	for (uint32_t i = 0; i < FILES; i++)
		perm[i] = i;
	for (int e = 0; e < 4; e++) {
		uint64_t hit = 0;

		for (uint32_t i = FILES - 1; i > 0; i--) {
			uint32_t j = (uint32_t)dl_prng_below(dl_key2(91, (uint64_t)e), i, i + 1);
			uint32_t tmp = perm[i];

			perm[i] = perm[j];
			perm[j] = tmp;
		}
		for (uint32_t i = 0; i < FILES; i++) {
			struct dl_pacer_req r = {.cls = DL_OP_READ,
						 .file_id = 100 + perm[i],
						 .len = fsize,
						 .job = 1,
						 .file_size = size};
			struct dl_pacer_result res;

			dl_pacer_submit(p, &r, T0, &res);
			dl_pacer_complete(p, &r, &res, res.due_ns);
			hit += res.hit_bytes;
		}
		ratio[e] = (double)hit / (double)(FILES * fsize);
	}
	/* The fraction of the files the cache holds (resident entries are
	 * whole files here). */
	*cached = stat_of(p, CACHE, "resident_blocks") / FILES;
	dl_pacer_free(p);
}

static void test_small_files(void)
{
	double lru[4], minio[4], air[4], c_lru, c_minio, c_air;

	small_epochs("lru", 110000, lru, &c_lru);
	small_epochs("minio", 110000, minio, &c_minio);
	small_epochs("minio", 0, air, &c_air);
	printf("pacer_cache: 1000 x 110 kB files, cache = half, 1 MiB blocks; epoch 2-4 hit "
	       "ratio: lru %.3f %.3f %.3f, minio %.3f %.3f %.3f (holds %.3f of the files); "
	       "sizes unknown (whole blocks): minio %.3f\n",
	       lru[1], lru[2], lru[3], minio[1], minio[2], minio[3], c_minio, air[3]);
	/* MinIO holds half of the files (less the 4 KiB rounding) and hits
	 * exactly them; LRU thrashes far below the cached half (CoorDL). */
	CHECK(c_minio > 0.48 && c_minio <= 0.5, "MinIO holds %.3f of the files", c_minio);
	for (int e = 1; e < 4; e++) {
		CHECK(fabs(minio[e] - c_minio) < 0.02, "epoch %d: MinIO %.3f vs cached %.3f", e + 1,
		      minio[e], c_minio);
		CHECK(lru[e] < 0.40, "epoch %d: LRU %.3f not far under 50%%", e + 1, lru[e]);
	}
	/* Counted in whole blocks, a 110 kB file took 1 MiB of the cache: a
	 * tenth of the files fit. That is what byte accounting fixes. */
	CHECK(air[3] < 0.1 && c_air < 0.1, "whole blocks: %.3f", air[3]);
}

/* ---- splits and timing ---- */

static void test_split_timing(void)
{
	const char *kv[] = {"cache.policy=lru",
			    "cache.size=64MiB",
			    "cache.block=1MiB",
			    "cache.hit_bandwidth=1MB/s",
			    "read.latency=1ms",
			    "read.iops=1",
			    NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result res;
	uint64_t t = T0;

	dl_pacer_cache_warm(p, 5, MiB); /* block 0 of file 5 */
	/* Half hit, half miss: due is the later of the hit copy (512 KiB at
	 * 1 MB/s = 524.288 ms) and the device (1 ms). */
	CHECK(rd(p, 5, 512 * KiB, MiB, t, &res) == 512 * KiB && res.miss_bytes == 512 * KiB,
	      "split %" PRIu64 "/%" PRIu64, res.hit_bytes, res.miss_bytes);
	CHECK(res.due_ns == t + 524288 * US, "split due +%" PRIu64, res.due_ns - t);
	CHECK(res.due_ns == t + res.queue_ns + res.service_ns, "due = submit + queue + service");
	/* Now both blocks are resident: a full hit skips the device, so the
	 * 1 IOPS cap (next slot in 1 s) does not apply. */
	t += SEC / 10;
	CHECK(rd(p, 5, 0, 2 * MiB, t, &res) == 2 * MiB && res.miss_bytes == 0, "full hit");
	CHECK(res.due_ns == t + 2097152 * US && res.queue_ns == 0, "hit timing +%" PRIu64,
	      res.due_ns - t);
	/* A miss does wait for the IOPS slot (1 s after the first miss). */
	CHECK(rd(p, 6, 0, 4096, t, &res) == 0, "miss");
	CHECK(res.due_ns == T0 + SEC + MS && res.queue_ns == T0 + SEC - t,
	      "miss waits for its IOPS slot: +%" PRIu64 " queue %" PRIu64, res.due_ns - t,
	      res.queue_ns);
	/* Stats: one partial, one hit, one miss; bytes split. */
	CHECK(stat_of(p, RCACHE, "partial") == 1 && stat_of(p, RCACHE, "hits") == 1 &&
		  stat_of(p, RCACHE, "misses") == 1,
	      "request counts");
	CHECK(stat_of(p, RCACHE, "hit_bytes") == 512 * KiB + 2 * MiB &&
		  stat_of(p, RCACHE, "miss_bytes") == 512 * KiB + 4096,
	      "byte counts");
	/* Writes go to the device and leave the cache alone. */
	{
		struct dl_pacer_req w = {.cls = DL_OP_WRITE, .file_id = 7, .off = 0, .len = MiB, .job = 1};

		dl_pacer_submit(p, &w, t, &res);
		CHECK(res.hit_bytes == 0 && res.miss_bytes == MiB, "write not cached");
		CHECK(rd(p, 7, 0, 4096, t + 2 * SEC, &res) == 0, "read after write misses");
	}
	dl_pacer_free(p);

	/* hit_bandwidth 0: hits are instant. */
	{
		const char *kv2[] = {"cache.policy=minio", "cache.size=8MiB",
				     "cache.hit_bandwidth=unlimited", NULL};

		p = test_pacer(kv2, T0, 1);
		rd(p, 1, 0, MiB, T0, &res);
		rd(p, 1, 0, MiB, T0 + 5, &res);
		CHECK(res.hit_bytes == MiB && res.due_ns == T0 + 5, "instant hit");
		dl_pacer_free(p);
	}
	/* kernel: no emulation, no cache statistics. */
	{
		const char *kv3[] = {"cache.policy=kernel", "cache.size=8MiB", NULL};

		p = test_pacer(kv3, T0, 1);
		rd(p, 1, 0, MiB, T0, &res);
		CHECK(rd(p, 1, 0, MiB, T0 + 5, &res) == 0 && res.miss_bytes == MiB,
		      "kernel: no hits");
		CHECK(stat_of(p, RCACHE, "misses") == 0 && stat_of(p, RCACHE, "hits") == 0,
		      "kernel: not counted");
		dl_pacer_cache_warm(p, 1, MiB);
		dl_pacer_cache_drop(p);
		dl_pacer_free(p);
	}
}

/* ---- policies in detail ---- */

static void test_lru_order(void)
{
	const char *kv[] = {"cache.policy=lru", "cache.size=12KiB", "cache.block=4KiB", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	/* Blocks of file 1; expected hit (1) or miss (0) per access. */
	static const struct {
		uint64_t blk;
		int hit;
	} seq[] = {
	    {0, 0}, {1, 0}, {2, 0}, /* A B C */
	    {0, 1},		    /* A: now C B A by age, B oldest */
	    {3, 0},		    /* D evicts B */
	    {1, 0},		    /* B evicts C */
	    {0, 1}, {3, 1}, {1, 1}, /* A D B resident */
	    {2, 0},		    /* C evicts A (oldest) */
	    {0, 0},
	};
	int bad = 0;

	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		uint64_t h = rd(p, 1, seq[i].blk * 4 * KiB, 4 * KiB, T0, NULL);

		if ((h == 4 * KiB) != seq[i].hit) {
			bad++;
			fprintf(stderr, "lru step %u block %" PRIu64 ": hit %" PRIu64 "\n", i,
				seq[i].blk, h);
		}
	}
	CHECK(!bad, "LRU eviction order");
	CHECK(stat_of(p, CACHE, "resident_blocks") == 3 &&
		  stat_of(p, CACHE, "capacity_bytes") == 12 * KiB &&
		  stat_of(p, CACHE, "resident_bytes") == 12 * KiB,
	      "3 blocks resident");
	/* Same block index, other file: a different block. */
	CHECK(rd(p, 2, 0, 4 * KiB, T0, NULL) == 0, "file id is part of the key");
	dl_pacer_free(p);
}

static void test_minio_and_warm(void)
{
	const char *kv[] = {"cache.policy=minio", "cache.size=3MiB", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);

	for (uint64_t b = 0; b < 4; b++)
		rd(p, 1, b * MiB, MiB, T0, NULL);
	CHECK(rd(p, 1, 3 * MiB, MiB, T0, NULL) == 0, "MinIO: the 4th block never gets in");
	CHECK(rd(p, 1, 0, 3 * MiB, T0, NULL) == 3 * MiB, "MinIO: the first 3 stay");
	/* Partial blocks: a 1-byte read of a resident block is a hit of 1 byte. */
	CHECK(rd(p, 1, MiB + 17, 1, T0, NULL) == 1, "1-byte hit");
	CHECK(rd(p, 1, 3 * MiB - 10, 20, T0, NULL) == 10, "straddling read: 10 of 20");

	dl_pacer_cache_drop(p);
	CHECK(stat_of(p, CACHE, "resident_blocks") == 0, "drop empties");
	CHECK(rd(p, 1, 0, MiB, T0, NULL) == 0, "miss after drop");

	/* Warm: MinIO takes the first blocks that fit, LRU keeps the last. */
	dl_pacer_cache_drop(p);
	dl_pacer_cache_warm(p, 8, 10 * MiB);
	CHECK(rd(p, 8, 0, 3 * MiB, T0, NULL) == 3 * MiB && rd(p, 8, 3 * MiB, MiB, T0, NULL) == 0,
	      "MinIO warm: first 3 blocks");
	dl_pacer_free(p);

	{
		const char *kv2[] = {"cache.policy=lru", "cache.size=3MiB", NULL};

		p = test_pacer(kv2, T0, 1);
		/* A huge file: only the last blocks are visited (this is quick). */
		dl_pacer_cache_warm(p, 8, (uint64_t)1 << 50);
		CHECK(rd(p, 8, ((uint64_t)1 << 50) - 3 * MiB, 3 * MiB, T0, NULL) == 3 * MiB,
		      "LRU warm: last 3 blocks");
		CHECK(rd(p, 8, 0, MiB, T0, NULL) == 0, "LRU warm: the first is gone");
		/* A partial last block counts as a whole block. */
		dl_pacer_cache_drop(p);
		dl_pacer_cache_warm(p, 9, MiB + 1);
		CHECK(rd(p, 9, 0, 2 * MiB, T0, NULL) == 2 * MiB, "warm rounds up to blocks");
		dl_pacer_free(p);
	}
}

/* ---- live changes ---- */

static void test_live(void)
{
	const char *kv[] = {"cache.policy=lru", "cache.size=16MiB", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	char err[512];

	dl_pacer_cache_warm(p, 1, 8 * MiB);
	CHECK(stat_of(p, CACHE, "resident_blocks") == 8, "warm 8");
	CHECK(dl_pacer_set(p, "cache.hit_bandwidth", "20GB/s", err, sizeof(err)) == 0, "%s", err);
	CHECK(stat_of(p, CACHE, "resident_blocks") == 8, "hit_bandwidth keeps the cache");
	CHECK(stat_of(p, CACHE, "hit_bandwidth_Bps") == 20e9, "new hit bandwidth");
	CHECK(dl_pacer_set(p, "cache.size", "32MiB", err, sizeof(err)) == 0, "%s", err);
	CHECK(stat_of(p, CACHE, "resident_blocks") == 0 &&
		  stat_of(p, CACHE, "capacity_bytes") == 32 * MiB,
	      "a new size starts empty");
	CHECK(dl_pacer_set(p, "cache.block", "0", err, sizeof(err)) == -EINVAL &&
		  strstr(err, "cache.block"),
	      "block 0 refused: %s", err);
	CHECK(dl_pacer_set(p, "cache.policy", "kernel", err, sizeof(err)) == 0, "%s", err);
	CHECK(rd(p, 1, 0, MiB, T0, NULL) == 0 && rd(p, 1, 0, MiB, T0, NULL) == 0,
	      "kernel: no hits");
	CHECK(dl_pacer_set(p, "cache.policy", "minio", err, sizeof(err)) == 0, "%s", err);
	rd(p, 1, 0, MiB, T0, NULL);
	CHECK(rd(p, 1, 0, MiB, T0, NULL) == MiB, "minio after kernel");
	dl_pacer_free(p);
}

/* ---- memory: residency metadata grows with use, not with the size ---- */

static long maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void test_memory(void)
{
	const char *kv[] = {"cache.policy=lru", "cache.size=64TiB", "cache.block=1MiB", NULL};
	long before = maxrss_kib(), after;
	struct dl_pacer *p = test_pacer(kv, T0, 1);

	CHECK(p != NULL, "64Mi-block cache accepted");
	if (!p)
		return;
	CHECK(stat_of(p, CACHE, "capacity_bytes") == (double)(64ULL << 40), "capacity %g",
	      stat_of(p, CACHE, "capacity_bytes"));
	for (uint64_t i = 0; i < 100000; i++)
		rd(p, i % 7, (i / 7) * MiB, MiB, T0, NULL);
	after = maxrss_kib();
	/* 100k entries of 32 bytes plus buckets: a few MiB, not 2 GiB. */
	CHECK(after - before < 64 * 1024, "rss grew %ld KiB", after - before);
	CHECK(stat_of(p, CACHE, "resident_blocks") == 100000, "100k resident");
	dl_pacer_free(p);
}

int main(void)
{
	test_epochs();
	test_epochs_requests();
	test_small_files();
	test_split_timing();
	test_lru_order();
	test_minio_and_warm();
	test_live();
	test_memory();
	return tap_done("pacer_cache");
}
