/* dlio-drive's pure parts: shuffle permutations, epoch plans, percentiles,
 * AU with warm-up exclusion, computation-time distributions, TFRecord
 * framing, DLIO run keys from YAML, the image decoders, ranks' shards, which
 * rank a process is (--rank/--ranks, the launcher's variables, {rank}).
 *
 * Linked with the tool's library (dldrive). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "dliofs/crc32c.h"
#include "drive_i.h"
#include "tap.h"

/* ---- permutations and plans ---- */

static int is_perm(const struct drv_perm *p, uint64_t n)
{
	uint8_t *seen = calloc(n ? n : 1, 1);
	int ok = 1;

	for (uint64_t i = 0; i < n && ok; i++) {
		uint64_t v = drv_perm_at(p, i);
		if (v >= n || seen[v])
			ok = 0;
		else
			seen[v] = 1;
	}
	free(seen);
	return ok;
}

static void test_perm(void)
{
	static const uint64_t sizes[] = {1, 2, 3, 5, 7, 16, 17, 100, 1000, 4097, 65537};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t n = sizes[k];
		struct drv_perm a, b, c, id;
		drv_perm_init(&a, n, 42, 1);
		drv_perm_init(&b, n, 42, 1);
		drv_perm_init(&c, n, 43, 1);
		drv_perm_init(&id, n, 42, 0);
		CHECK(is_perm(&a, n), "n=%llu: not a permutation", (unsigned long long)n);
		CHECK(is_perm(&c, n), "n=%llu: key 43 not a permutation", (unsigned long long)n);
		uint64_t same = 0, diff = 0, fixed = 0, moved = 0;
		for (uint64_t i = 0; i < n; i++) {
			same += drv_perm_at(&a, i) == drv_perm_at(&b, i);
			diff += drv_perm_at(&a, i) != drv_perm_at(&c, i);
			fixed += drv_perm_at(&a, i) == i;
			moved += drv_perm_at(&id, i) != i;
		}
		CHECK(moved == 0, "n=%llu: identity moved %llu", (unsigned long long)n,
		      (unsigned long long)moved);
		CHECK(same == n, "n=%llu: same key, different order", (unsigned long long)n);
		if (n >= 16) {
			/* A real shuffle: another key gives another order, and few
			 * elements stay in place (a random permutation fixes ~1). */
			CHECK(diff > n / 2, "n=%llu: keys 42 and 43 agree on %llu",
			      (unsigned long long)n, (unsigned long long)(n - diff));
			CHECK(fixed < n / 4 + 3, "n=%llu: %llu fixed points", (unsigned long long)n,
			      (unsigned long long)fixed);
		}
	}
	/* Large n costs nothing up front (O(1) memory): spot-check range. */
	struct drv_perm big;
	drv_perm_init(&big, 1000000007ull, 9, 1);
	int inrange = 1;
	for (uint64_t i = 0; i < 1000; i++)
		inrange &= drv_perm_at(&big, i * 999983) < 1000000007ull;
	CHECK(inrange, "large permutation out of range");

	/* Seeds per epoch: DLIO's seed + epoch, or the same every epoch. */
	CHECK(drv_epoch_key(123, 1, 1, 7) != drv_epoch_key(123, 2, 1, 7), "epoch key unchanged");
	CHECK(drv_epoch_key(123, 1, 0, 7) == drv_epoch_key(123, 2, 0, 7), "epoch key changed");
	CHECK(drv_epoch_key(123, 1, 1, 7) != drv_epoch_key(123, 1, 1, 8), "purposes share a key");
}

static void test_plan(void)
{
	struct drv_plan p;
	struct drv_unit u;
	const uint64_t nf = 13, spf = 7;

	/* Samples: every (file, sample) once, in an order that differs by seed. */
	CHECK(drv_plan_init(&p, DRV_U_SAMPLE, nf, spf, 0) == 0, "init sample");
	CHECK(p.units == nf * spf, "units %llu", (unsigned long long)p.units);
	uint8_t seen[13 * 7];
	uint64_t first[2];
	for (int e = 0; e < 2; e++) {
		drv_plan_order(&p, DRV_SHUF_SEED, drv_epoch_key(5, (uint64_t)e + 1, 1, 1),
			       DRV_SHUF_SEED, drv_epoch_key(5, (uint64_t)e + 1, 1, 2));
		memset(seen, 0, sizeof(seen));
		int ok = 1;
		for (uint64_t i = 0; i < p.units; i++) {
			drv_plan_unit(&p, i, &u);
			if (u.file >= nf || u.sample >= spf || u.nsamples != 1 ||
			    seen[u.file * spf + u.sample]++)
				ok = 0;
			if (i == 0)
				first[e] = u.file * spf + u.sample;
		}
		CHECK(ok, "epoch %d: samples not each once", e + 1);
	}
	/* With no shuffle the order is DLIO's: file g / spf, sample g % spf. */
	drv_plan_order(&p, DRV_SHUF_OFF, 1, DRV_SHUF_OFF, 2);
	int inorder = 1;
	for (uint64_t i = 0; i < p.units; i++) {
		drv_plan_unit(&p, i, &u);
		inorder &= u.file == i / spf && u.sample == i % spf;
	}
	CHECK(inorder, "unshuffled order is not sequential");
	(void)first;

	/* File shuffle alone keeps a file's samples together. */
	drv_plan_order(&p, DRV_SHUF_SEED, 77, DRV_SHUF_OFF, 0);
	int together = 1;
	for (uint64_t i = 0; i < p.units; i++) {
		struct drv_unit v;
		drv_plan_unit(&p, i, &u);
		drv_plan_unit(&p, i - i % spf, &v);
		together &= u.file == v.file && u.sample == i % spf;
	}
	CHECK(together, "file shuffle split a file's samples");

	/* Files: each once. */
	CHECK(drv_plan_init(&p, DRV_U_FILE, nf, spf, 0) == 0, "init file");
	drv_plan_order(&p, DRV_SHUF_SEED, 3, DRV_SHUF_SEED, 4);
	memset(seen, 0, sizeof(seen));
	int ok = p.units == nf;
	for (uint64_t i = 0; i < p.units; i++) {
		drv_plan_unit(&p, i, &u);
		ok &= u.file < nf && !seen[u.file]++ && u.nsamples == spf;
	}
	CHECK(ok, "file units not each file once");

	/* Streams ignore the sample shuffle (tf.data's buffer is in memory). */
	CHECK(drv_plan_init(&p, DRV_U_STREAM, nf, spf, 0) == 0, "init stream");
	drv_plan_order(&p, DRV_SHUF_OFF, 3, DRV_SHUF_SEED, 4);
	ok = 1;
	for (uint64_t i = 0; i < p.units; i++) {
		drv_plan_unit(&p, i, &u);
		ok &= u.file == i;
	}
	CHECK(ok, "stream order changed by sample shuffle");

	/* DLRM chunks: batch-sized, the last one of a file shorter, all covered. */
	CHECK(drv_plan_init(&p, DRV_U_CHUNK, 3, 10, 4) == 0, "init chunk");
	CHECK(p.cpf == 3 && p.units == 9, "cpf %llu units %llu", (unsigned long long)p.cpf,
	      (unsigned long long)p.units);
	drv_plan_order(&p, DRV_SHUF_SEED, 1, DRV_SHUF_SEED, 2);
	uint8_t cov[30] = {0};
	ok = 1;
	for (uint64_t i = 0; i < p.units; i++) {
		drv_plan_unit(&p, i, &u);
		ok &= u.nsamples == (u.sample == 8 ? 2u : 4u) && u.sample % 4 == 0;
		for (uint64_t k = 0; k < u.nsamples; k++)
			ok &= !cov[u.file * 10 + u.sample + k]++;
	}
	for (int k = 0; k < 30; k++)
		ok &= cov[k] == 1;
	CHECK(ok, "chunks do not cover every sample once");
	CHECK(drv_plan_init(&p, DRV_U_CHUNK, 3, 10, 0) == -EINVAL, "chunk 0 accepted");
	CHECK(drv_plan_init(&p, DRV_U_SAMPLE, UINT64_MAX / 2, 3, 0) == -EOVERFLOW, "overflow");
}

/* ---- ranks' shards (DLIO's split, docs/dlio.md 4.5) ---- */

/* Marks every sample rank `rank` of `ranks` reads in an epoch into cov[]
 * (file * spf + sample); 0 when a unit strays outside the rank's share. */
static int shard_cover(enum drv_unit_kind kind, uint64_t nf, uint64_t spf, uint64_t chunk,
		       unsigned rank, unsigned ranks, int shuffle, uint8_t *cov, uint64_t *held)
{
	struct drv_plan p;
	struct drv_unit u;
	int ok = 1;

	if (drv_plan_init(&p, kind, nf, spf, chunk) || drv_plan_shard(&p, rank, ranks))
		return 0;
	drv_plan_order(&p, shuffle ? DRV_SHUF_SEED : DRV_SHUF_OFF, 9,
		       shuffle ? DRV_SHUF_SEED : DRV_SHUF_OFF, 10);
	*held = drv_plan_samples(&p);
	uint64_t total = nf * spf, S = (total + ranks - 1) / ranks;
	uint64_t lo = rank * S, hi = lo + S < total ? lo + S : total;
	for (uint64_t i = 0; i < p.units; i++) {
		drv_plan_unit(&p, i, &u);
		if (kind == DRV_U_STREAM) {
			for (uint64_t k = 0; k < spf; k++)
				if (!u.rec_mod || k % u.rec_mod == u.rec_phase)
					cov[u.file * spf + k]++;
			continue;
		}
		for (uint64_t k = 0; k < u.nsamples; k++) {
			uint64_t g = u.file * spf + u.sample + k;
			cov[g]++;
			/* Without a file shuffle, a sample's global index is its slot:
			 * it must lie in the rank's contiguous range. */
			if (!shuffle && kind != DRV_U_CHUNK && (g < lo || g >= hi))
				ok = 0;
		}
	}
	return ok;
}

static void test_shard(void)
{
	static const struct {
		enum drv_unit_kind kind;
		uint64_t nf, spf, chunk;
		unsigned ranks;
		uint64_t held[4]; /* samples each rank's share holds */
	} cases[] = {
	    /* T = 91, ceil(91 / 4) = 23: 23, 23, 23 and the rest, 22 */
	    {DRV_U_SAMPLE, 13, 7, 0, 4, {23, 23, 23, 22}},
	    {DRV_U_FILE, 13, 7, 0, 4, {23, 23, 23, 22}},
	    {DRV_U_FILE, 8, 1, 0, 2, {4, 4, 0, 0}},
	    /* tfrecord: files 0, 4, 8, 12 | 1, 5, 9 | ... */
	    {DRV_U_STREAM, 13, 7, 0, 4, {28, 21, 21, 21}},
	    /* 3 files, 4 ranks: records k % 4 == r of every file (0 4 | 1 5 | 2 6 | 3) */
	    {DRV_U_STREAM, 3, 7, 0, 4, {6, 6, 6, 3}},
	    /* 9 chunks of 4 (the third of a file 2): 5 and 4 chunks */
	    {DRV_U_CHUNK, 3, 10, 4, 2, {18, 12, 0, 0}},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (int shuffle = 0; shuffle < 2; shuffle++) {
			uint8_t cov[13 * 7] = {0};
			uint64_t total = cases[c].nf * cases[c].spf, sum = 0;
			int ok = 1;
			for (unsigned r = 0; r < cases[c].ranks; r++) {
				uint64_t held = 0;
				ok &= shard_cover(cases[c].kind, cases[c].nf, cases[c].spf,
						  cases[c].chunk, r, cases[c].ranks, shuffle, cov,
						  &held);
				CHECK(held == cases[c].held[r],
				      "case %zu rank %u holds %llu, not %llu", c, r,
				      (unsigned long long)held,
				      (unsigned long long)cases[c].held[r]);
				sum += held;
			}
			for (uint64_t g = 0; g < total; g++)
				ok &= cov[g] == 1;
			CHECK(ok && sum == total,
			      "case %zu (shuffle %d): ranks do not read every sample exactly once",
			      c, shuffle);
		}
	}
	/* A file on the edge of two ranges: each rank reads it for its own samples. */
	struct drv_plan p;
	struct drv_unit u;
	CHECK(drv_plan_init(&p, DRV_U_FILE, 13, 7, 0) == 0 && drv_plan_shard(&p, 1, 4) == 0,
	      "shard");
	drv_plan_order(&p, DRV_SHUF_OFF, 0, DRV_SHUF_OFF, 0);
	drv_plan_unit(&p, 0, &u);
	CHECK(p.units == 4 && u.file == 3 && u.sample == 2 && u.nsamples == 5,
	      "rank 1 starts in file 3 at sample 2: units %llu file %llu sample %llu n %llu",
	      (unsigned long long)p.units, (unsigned long long)u.file, (unsigned long long)u.sample,
	      (unsigned long long)u.nsamples);
	/* One rank is the whole split, and a rank outside the job is refused. */
	CHECK(drv_plan_init(&p, DRV_U_SAMPLE, 13, 7, 0) == 0 && drv_plan_shard(&p, 0, 1) == 0 &&
		  p.units == 91 && drv_plan_samples(&p) == 91,
	      "one rank");
	CHECK(drv_plan_shard(&p, 4, 4) == -EINVAL && drv_plan_shard(&p, 0, 0) == -EINVAL,
	      "bad rank accepted");

	/* tf.data's readers: 2 threads, each a contiguous half of 8 two-sample
	 * files, a batch (2 files) from each in turn. */
	static const uint64_t lanes[8] = {0, 1, 4, 5, 2, 3, 6, 7};
	CHECK(drv_plan_init(&p, DRV_U_FILE, 8, 2, 0) == 0 && drv_plan_shard(&p, 0, 1) == 0,
	      "lanes plan");
	drv_plan_lanes(&p, 2, 4);
	drv_plan_order(&p, DRV_SHUF_OFF, 0, DRV_SHUF_OFF, 0);
	int same = p.lanes == 2 && p.lane_block == 2;
	for (uint64_t i = 0; i < 8; i++) {
		drv_plan_unit(&p, i, &u);
		same &= u.file == lanes[i];
	}
	CHECK(same, "interleaved lanes: lanes %llu block %llu", (unsigned long long)p.lanes,
	      (unsigned long long)p.lane_block);
	/* Shuffled, still each file once; uneven splits keep one queue. */
	drv_plan_order(&p, DRV_SHUF_SEED, 1, DRV_SHUF_SEED, 2);
	uint8_t once[8] = {0};
	same = 1;
	for (uint64_t i = 0; i < 8; i++) {
		drv_plan_unit(&p, i, &u);
		same &= !once[u.file]++;
	}
	CHECK(same, "shuffled lanes read a file twice");
	drv_plan_lanes(&p, 3, 4);
	CHECK(p.lanes == 0, "8 files in 3 lanes of whole batches accepted");
	drv_plan_lanes(&p, 2, 3);
	CHECK(p.lanes == 0, "a batch of 3 two-sample files accepted");
}

/* ---- statistics ---- */

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void test_stats(void)
{
	const double v[] = {5, 1, 4, 2, 3};

	/* numpy.percentile([1,2,3,4,5], q) with the default linear method */
	CHECK(near(drv_percentile(v, 5, 50), 3.0, 1e-12), "p50");
	CHECK(near(drv_percentile(v, 5, 90), 4.6, 1e-12), "p90 %g", drv_percentile(v, 5, 90));
	CHECK(near(drv_percentile(v, 5, 99), 4.96, 1e-12), "p99 %g", drv_percentile(v, 5, 99));
	CHECK(near(drv_percentile(v, 5, 25), 2.0, 1e-12), "p25");
	CHECK(drv_percentile(v, 5, 0) == 1 && drv_percentile(v, 5, 100) == 5, "ends");
	CHECK(drv_percentile(v, 1, 90) == 5, "one value");
	CHECK(isnan(drv_percentile(v, 0, 50)), "empty");
	const double w[] = {10, 20};
	CHECK(near(drv_percentile(w, 2, 90), 19.0, 1e-12), "two values p90");

	struct drv_moments m;
	const double x[] = {2, 4, 4, 4, 5, 5, 7, 9, NAN};
	drv_moments(x, 9, &m);
	CHECK(m.n == 8 && near(m.mean, 5, 1e-12) && near(m.stdev, 2, 1e-12) && m.min == 2 &&
		  m.max == 9,
	      "moments n %u mean %g stdev %g", m.n, m.mean, m.stdev);
	drv_moments(x + 8, 1, &m);
	CHECK(m.n == 0 && isnan(m.mean), "all-NaN moments");

	/* AU: the first (warm-up) step is left out. */
	struct drv_step s[4] = {{1.0, 0.1, 0}, {0.0, 0.1, 0}, {0.1, 0.1, 0}, {0.0, 0.2, 0}};
	CHECK(near(drv_au(s, 4, 1, 0), 0.4 / 0.5, 1e-12), "au skip 1 = %g", drv_au(s, 4, 1, 0));
	CHECK(near(drv_au(s, 4, 0, 0), 0.5 / 1.6, 1e-12), "au skip 0");
	CHECK(near(drv_au(s, 4, 1, 1), 0.2 / 0.3, 1e-12), "au skip 1+1");
	CHECK(isnan(drv_au(s, 1, 1, 0)), "au with nothing left");
	struct drv_phase_stats ps;
	drv_phase_compute(s, 4, 8, 1, 0, &ps);
	CHECK(ps.steps == 4 && ps.samples == 32, "phase counts");
	CHECK(near(ps.wall, 1.6, 1e-12) && near(ps.stall, 1.1, 1e-12) &&
		  near(ps.compute, 0.5, 1e-12),
	      "phase times");
	CHECK(near(ps.au, 0.8, 1e-12), "phase au %g", ps.au);
	CHECK(near(ps.stall_share, 1.1 / 1.6, 1e-12), "stall share");
	/* samples/s counts the warm-up step, as MLPerf Storage does */
	CHECK(near(ps.samples_per_s, 32 / 1.6, 1e-9), "samples/s %g", ps.samples_per_s);
	CHECK(ps.excluded == 1, "excluded %llu", (unsigned long long)ps.excluded);
	/* percentiles over the measured steps only: 0.1, 0.2, 0.2 */
	CHECK(near(ps.step_p50, 0.2, 1e-12) && near(ps.wait_p90, 0.08, 1e-12),
	      "step p50 %g wait p90 %g", ps.step_p50, ps.wait_p90);
	/* zero compute: AU 0, the whole run is stall */
	struct drv_step z[3] = {{0.5, 0, 0}, {0.2, 0, 0}, {0.3, 0, 0}};
	drv_phase_compute(z, 3, 1, 1, 0, &ps);
	CHECK(ps.au == 0 && near(ps.stall_share, 1.0, 1e-12), "zero compute au %g", ps.au);
	/* The ranks' barrier is neither compute nor this rank's stall, but it is
	 * step time: it lowers AU (DLIO times it into the next step's load). */
	struct drv_step b[3] = {{0.3, 0.1, 0.0}, {0.0, 0.1, 0.1}, {0.05, 0.1, 0.05}};
	drv_phase_compute(b, 3, 2, 1, 0, &ps);
	CHECK(near(ps.barrier, 0.15, 1e-12) && near(ps.stall, 0.35, 1e-12), "barrier %g stall %g",
	      ps.barrier, ps.stall);
	CHECK(near(ps.wall, 0.8, 1e-12), "wall %g", ps.wall);
	CHECK(near(ps.au, 0.2 / 0.4, 1e-12), "au with barrier %g", ps.au);
	CHECK(near(ps.stall_share, 0.35 / 0.8, 1e-12), "stall share %g", ps.stall_share);
	CHECK(near(ps.step_p50, 0.2, 1e-12), "step time counts the barrier: p50 %g", ps.step_p50);
}

/* ---- distributions ---- */

static void sample_moments(const struct drv_dist *d, unsigned n, double *mean, double *var,
			   double *mn)
{
	double s = 0, sq = 0;

	*mn = INFINITY;
	for (unsigned i = 0; i < n; i++) {
		double x = drv_dist_draw(d, 0xabcdef, i);
		s += x;
		sq += x * x;
		if (x < *mn)
			*mn = x;
	}
	*mean = s / n;
	*var = sq / n - *mean * *mean;
}

static void test_dist(void)
{
	struct drv_dist d;
	const char *why;
	double mean, var, mn;
	const unsigned N = 200000;

	CHECK(drv_dist_parse("0.323", &d, &why) == 0 && d.type == DRV_DIST_CONST && d.a == 0.323,
	      "const");
	CHECK(drv_dist_parse("50ms", &d, &why) == 0 && near(d.a, 0.05, 1e-12), "50ms");
	CHECK(drv_dist_parse("normal:0.3,50ms", &d, &why) == 0 && d.type == DRV_DIST_NORMAL &&
		  near(d.a, 0.3, 1e-12) && near(d.b, 0.05, 1e-12),
	      "normal");
	CHECK(drv_dist_parse("uniform:0.1,0.2", &d, &why) == 0 && d.type == DRV_DIST_UNIFORM,
	      "uniform");
	CHECK(drv_dist_parse("gamma:2,0.1", &d, &why) == 0 && d.type == DRV_DIST_GAMMA, "gamma");
	CHECK(drv_dist_parse("exponential:0.1", &d, &why) == 0 && d.type == DRV_DIST_EXP, "exp");
	CHECK(drv_dist_parse("poisson:3", &d, &why) == 0 && d.type == DRV_DIST_POISSON, "poisson");
	CHECK(drv_dist_parse("uniform:0.2,0.1", &d, &why) == -EINVAL, "min > max accepted");
	CHECK(drv_dist_parse("normal:0.3", &d, &why) == -EINVAL, "normal with one value");
	CHECK(drv_dist_parse("bogus:1", &d, &why) == -EINVAL, "unknown accepted");
	CHECK(drv_dist_parse("-1", &d, &why) == -EINVAL, "negative accepted");
	CHECK(drv_dist_parse("3 parsecs", &d, &why) == -EINVAL, "junk accepted");
	CHECK(drv_dist_parse("normal:1,", &d, &why) == -EINVAL, "trailing comma accepted");

	d = (struct drv_dist){DRV_DIST_CONST, 0.25, 0};
	CHECK(drv_dist_draw(&d, 1, 7) == 0.25, "const draw");

	d = (struct drv_dist){DRV_DIST_NORMAL, 1.0, 0.1};
	sample_moments(&d, N, &mean, &var, &mn);
	CHECK(near(mean, 1.0, 0.002) && near(sqrt(var), 0.1, 0.002), "normal mean %g sd %g", mean,
	      sqrt(var));
	CHECK(drv_dist_draw(&d, 9, 123) == drv_dist_draw(&d, 9, 123), "draws not reproducible");
	CHECK(drv_dist_draw(&d, 9, 123) != drv_dist_draw(&d, 9, 124), "draws repeat");
	/* DLIO folds negative draws: mean of |N(0, 1)| = sqrt(2 / pi) */
	d = (struct drv_dist){DRV_DIST_NORMAL, 0.0, 1.0};
	sample_moments(&d, N, &mean, &var, &mn);
	CHECK(mn >= 0 && near(mean, sqrt(2 / M_PI), 0.01), "folded normal mean %g min %g", mean,
	      mn);
	CHECK(near(drv_dist_mean(&d), sqrt(2 / M_PI), 1e-9), "folded mean formula");

	d = (struct drv_dist){DRV_DIST_UNIFORM, 0.1, 0.3};
	sample_moments(&d, N, &mean, &var, &mn);
	CHECK(mn >= 0.1 && near(mean, 0.2, 0.001) && near(var, 0.04 / 12, 0.0002), "uniform %g %g",
	      mean, var);

	d = (struct drv_dist){DRV_DIST_EXP, 0.5, 0};
	sample_moments(&d, N, &mean, &var, &mn);
	CHECK(near(mean, 0.5, 0.01) && near(var, 0.25, 0.01), "exponential %g %g", mean, var);

	const double shapes[] = {0.5, 2.0, 9.0};
	for (int k = 0; k < 3; k++) {
		d = (struct drv_dist){DRV_DIST_GAMMA, shapes[k], 0.1};
		sample_moments(&d, N, &mean, &var, &mn);
		double em = shapes[k] * 0.1, ev = shapes[k] * 0.01;
		CHECK(near(mean, em, em * 0.02) && near(var, ev, ev * 0.05) && mn >= 0,
		      "gamma shape %g: mean %g (%g) var %g (%g)", shapes[k], mean, em, var, ev);
	}
	const double lams[] = {0.5, 4.0, 100.0};
	for (int k = 0; k < 3; k++) {
		d = (struct drv_dist){DRV_DIST_POISSON, lams[k], 0};
		sample_moments(&d, N, &mean, &var, &mn);
		CHECK(near(mean, lams[k], lams[k] * 0.02 + 0.01) &&
			  near(var, lams[k], lams[k] * 0.05 + 0.02),
		      "poisson %g: mean %g var %g", lams[k], mean, var);
		CHECK(drv_dist_draw(&d, 3, 3) == floor(drv_dist_draw(&d, 3, 3)),
		      "poisson not whole");
	}

	d = (struct drv_dist){DRV_DIST_NORMAL, 0.7, 0.1};
	CHECK(drv_dist_scale(&d, 0.5) == 0 && near(d.a, 0.35, 1e-12) && near(d.b, 0.05, 1e-12),
	      "scale");
	d = (struct drv_dist){DRV_DIST_POISSON, 1, 0};
	CHECK(drv_dist_scale(&d, 2) == -EINVAL, "poisson scaled");
}

/* ---- TFRecord ---- */

struct mem_src {
	const uint8_t *p;
	size_t len, pos, step;
};

static ssize_t mem_fill(void *arg, uint8_t *buf, size_t cap)
{
	struct mem_src *m = arg;
	size_t n = m->len - m->pos;

	if (n > cap)
		n = cap;
	if (n > m->step)
		n = m->step; /* odd pieces: every boundary gets crossed */
	memcpy(buf, m->p + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
}

static size_t put_record(uint8_t *out, const uint8_t *data, uint64_t n)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(n >> (8 * i));
	uint32_t c = dl_crc32c_mask(dl_crc32c(0, out, 8));
	memcpy(out + 8, &c, 4);
	memcpy(out + 12, data, n);
	c = dl_crc32c_mask(dl_crc32c(0, data, n));
	memcpy(out + 12 + n, &c, 4);
	return n + 16;
}

static int walk(const uint8_t *f, size_t len, size_t step, size_t cap, int check, uint64_t *lens,
		uint64_t *offs, int maxrec)
{
	uint8_t *buf = malloc(cap);
	struct mem_src m = {f, len, 0, step};
	struct drv_tfr t;
	int n = 0, r;

	drv_tfr_init(&t, buf, cap, check, mem_fill, &m);
	while (n < maxrec && (r = drv_tfr_next(&t, &lens[n], &offs[n])) == 1)
		n++;
	free(buf);
	return r < 0 ? r : n;
}

static void test_tfrecord(void)
{
	static const uint64_t sizes[] = {0, 1, 100, 5000, 70000, 3};
	uint8_t *file = malloc(100000), *data = malloc(70000);
	size_t len = 0;
	uint64_t lens[8], offs[8];

	CHECK(dl_crc32c(0, "123456789", 9) == 0xe3069283u, "crc32c check value");
	/* masked CRC of TFRecord's empty-payload record header, by the formula */
	CHECK(dl_crc32c_mask(0) == 0xa282ead8u, "mask of 0");
	for (size_t i = 0; i < 70000; i++)
		data[i] = (uint8_t)(i * 131 + 7);
	uint64_t expect_off[6];
	for (int i = 0; i < 6; i++) {
		expect_off[i] = len;
		len += put_record(file + len, data, sizes[i]);
	}
	const size_t steps[] = {1, 3, 7, 4096, 100000};
	const size_t caps[] = {16, 64, 4096, 262144};
	for (int a = 0; a < 5; a++)
		for (int b = 0; b < 4; b++) {
			int n = walk(file, len, steps[a], caps[b], 1, lens, offs, 8);
			int ok = n == 6;
			for (int i = 0; ok && i < 6; i++)
				ok = lens[i] == sizes[i] && offs[i] == expect_off[i];
			CHECK(ok, "step %zu cap %zu: %d records", steps[a], caps[b], n);
		}
	uint64_t hl;
	CHECK(drv_tfr_header(file, 1, &hl) == 0 && hl == 0, "header of the empty record");

	/* A flipped payload byte: caught with --check-crc, not without. */
	file[expect_off[3] + 12 + 10] ^= 1;
	CHECK(walk(file, len, 4096, 4096, 1, lens, offs, 8) == -EBADMSG,
	      "payload corruption missed");
	CHECK(walk(file, len, 4096, 4096, 0, lens, offs, 8) == 6, "unchecked walk stopped");
	file[expect_off[3] + 12 + 10] ^= 1;
	/* A flipped length CRC. */
	file[expect_off[2] + 8] ^= 0x40;
	CHECK(walk(file, len, 5, 64, 1, lens, offs, 8) == -EBADMSG, "length CRC corruption missed");
	CHECK(drv_tfr_header(file + expect_off[2], 1, &hl) == -EBADMSG, "bad header accepted");
	file[expect_off[2] + 8] ^= 0x40;
	/* Truncated anywhere inside a record. */
	const size_t cuts[] = {5, 12, 13, 12 + 100 + 2};
	for (int i = 0; i < 4; i++) {
		size_t cut = expect_off[2] + cuts[i];
		CHECK(walk(file, cut, 7, 64, 0, lens, offs, 8) == -EBADMSG,
		      "truncation at %zu missed", cut);
	}
	CHECK(walk(file, expect_off[2], 7, 64, 1, lens, offs, 8) == 2, "clean end at a boundary");
	CHECK(walk(file, 0, 7, 64, 1, lens, offs, 8) == 0, "empty file");
	free(file);
	free(data);
}

/* ---- DLIO run keys ---- */

/* A format's read hints, by its name. */
static const struct dl_read_hints *hints(const char *name)
{
	enum dl_format f;

	return dl_format_from_name(name, &f) ? NULL : &dl_format_ops(f)->read_hints;
}

static char *write_tmp(const char *text)
{
	static char path[64];
	strcpy(path, "/tmp/test_drive_XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return NULL;
	}
	close(fd);
	return path;
}

static void test_yaml(void)
{
	struct drv_params p;
	struct drv_optset set = {{0}};
	int dlio = -1;
	char *path;

	path = write_tmp(
	    "workload:\n"
	    "  model: {name: unet3d_small, model_size_bytes: 1000}\n"
	    "  workflow: {train: True, evaluation: True, checkpoint: true}\n"
	    "  dataset: {format: npz, num_files_train: 4}\n"
	    "  reader:\n"
	    "    batch_size: 7\n"
	    "    read_threads: 3\n"
	    "    prefetch_size: 5\n"
	    "    file_shuffle: seed\n"
	    "    sample_shuffle: random\n"
	    "  train:\n"
	    "    epochs: 5\n"
	    "    computation_time: {mean: 0.3, stdev: 0.05}\n"
	    "    total_training_steps: -1\n"
	    "    seed: 99\n"
	    "  evaluation: {eval_time: 0.5, eval_after_epoch: 2, epochs_between_evals: 3}\n"
	    "  checkpoint: {steps_between_checkpoints: 10}\n"
	    "  metric: {au: 0.7}\n"
	    "  output: {metric: {exclude_start_steps: 2}}\n");
	CHECK(path != NULL, "tmp file");
	drv_params_defaults(&p, hints("npz"));
	CHECK(drv_params_from_yaml(path, &p, &set, &dlio, stderr) == 0, "parse");
	CHECK(dlio == 1, "not seen as a DLIO file");
	CHECK(p.batch == 7 && p.read_threads == 3 && p.prefetch == 5, "reader %llu %u %u",
	      (unsigned long long)p.batch, p.read_threads, p.prefetch);
	CHECK(p.file_shuffle == DRV_SHUF_SEED && p.sample_shuffle == DRV_SHUF_RANDOM, "shuffles");
	CHECK(p.epochs == 5 && p.seed == 99 && p.total_steps == 0, "train");
	CHECK(p.compute.type == DRV_DIST_NORMAL && p.compute.a == 0.3 && p.compute.b == 0.05,
	      "computation_time dict");
	CHECK(p.eval && p.eval_after == 2 && p.eval_every == 3 && p.eval_compute.a == 0.5, "eval");
	CHECK(p.checkpoint && p.ckpt_every_steps == 10 && p.checkpoint_size == 1000, "checkpoint");
	CHECK(p.au_threshold == 0.7 && p.skip_start == 2, "metric");
	CHECK(!strcmp(p.model, "unet3d_small"), "model name %s", p.model);
	CHECK(drv_given(&set, DRV_P(batch)) && drv_given(&set, DRV_P(compute)) &&
		  drv_given(&set, DRV_P(epochs)),
	      "set bits %llx", (unsigned long long)set.bits[0]);
	unlink(path);

	/* Scalar time plus DLIO's separate stdev key; uniform dict; AU in percent. */
	path = write_tmp("dataset: {format: tfrecord}\n"
			 "train: {computation_time: 0.2, computation_time_stdev: 0.02}\n"
			 "evaluation: {eval_time: {type: uniform, min: 0.1, max: 0.2}}\n"
			 "metric: {au: 90}\n");
	drv_params_defaults(&p, hints("tfrecord"));
	CHECK(drv_params_from_yaml(path, &p, &set, &dlio, stderr) == 0, "parse 2");
	CHECK(p.compute.type == DRV_DIST_NORMAL && p.compute.b == 0.02, "stdev key");
	CHECK(p.eval_compute.type == DRV_DIST_UNIFORM && p.eval_compute.b == 0.2, "uniform dict");
	CHECK(near(p.au_threshold, 0.9, 1e-12), "percent au %g", p.au_threshold);
	unlink(path);

	/* A bad value is an error with its line and column. */
	path = write_tmp("dataset: {format: npz}\n"
			 "reader:\n"
			 "  batch_size: seven\n");
	char *msg = NULL;
	size_t ml = 0;
	FILE *mf = open_memstream(&msg, &ml);
	drv_params_defaults(&p, hints("npz"));
	CHECK(drv_params_from_yaml(path, &p, &set, &dlio, mf) == -EINVAL, "bad value accepted");
	fclose(mf);
	CHECK(msg && strstr(msg, ":3:15: reader.batch_size:"), "message: %s", msg ? msg : "");
	free(msg);
	unlink(path);

	/* A dliofs config has no run keys: untouched. */
	path = write_tmp("seed: 1\ndatasets:\n  - {name: a, format: npz, sample_size: 1KiB}\n");
	drv_params_defaults(&p, hints("npz"));
	memset(&set, 0, sizeof(set));
	CHECK(drv_params_from_yaml(path, &p, &set, &dlio, stderr) == 0 && dlio == 0 &&
		  drv_optset_empty(&set),
	      "native config read as DLIO");
	unlink(path);

	const struct drv_workload *w = drv_workload_find("unet3d", "H100");
	CHECK(w && w->seconds == 0.323 && w->batch == 7 && w->au == 0.90, "unet3d h100");
	w = drv_workload_find("resnet50", "a100");
	CHECK(w && w->seconds == 0.435 && w->batch == 400, "resnet50 a100");
	w = drv_workload_find("cosmoflow", "h100");
	CHECK(w && w->seconds == 0.00350 && w->au == 0.70, "cosmoflow h100");
	CHECK(!drv_workload_find("bert", "h100"), "bert in the table");
}

/* ---- the options table ---- */

static void test_opts(void)
{
	struct drv_params p;
	struct drv_cli cl;
	size_t n;
	const struct drv_opt *o = drv_opts(&n);

	/* Every entry is a flag or a workload key, and a key names a run
	 * parameter (the workload file fills a struct drv_params). */
	for (size_t i = 0; i < n; i++) {
		CHECK(o[i].flag || o[i].key, "entry %zu: neither flag nor key", i);
		CHECK(!o[i].key || o[i].off + o[i].size <= sizeof(struct drv_params),
		      "%s: a key for a field outside the run parameters", o[i].key);
		CHECK(o[i].type != DRV_T_ENUM || o[i].names, "%s: an enum without names", o[i].flag);
	}
	/* The table's defaults (each parsed as the command line would). */
	drv_params_defaults(&p, hints("npz"));
	CHECK(p.epochs == 1 && p.prefetch == 2 && p.seed == 123 && p.seed_change_epoch == 1 &&
		  p.eval_after == 1 && p.eval_every == 1 && !p.eval && !p.total_steps,
	      "run defaults");
	CHECK(p.ckpt_after_epoch == 1 && p.ckpt_every_epochs == 1 && !p.ckpt_every_steps &&
		  p.checkpoint_size == 10240 && !p.checkpoint,
	      "checkpoint defaults");
	CHECK(p.au_threshold == 0.90 && p.skip_start == 1 && !p.skip_end, "metric defaults");
	CHECK(p.io_size == 4u << 20 && p.transfer_size == 256u << 10 && p.amp == DRV_AMP_EFFICIENT &&
		  !p.iterative && p.accel == DRV_ACCEL_SLEEP && p.file_shuffle == DRV_SHUF_OFF &&
		  p.compute.type == DRV_DIST_CONST && p.compute.a == 0,
	      "reading defaults");
	CHECK(p.batch == 7 && p.read_threads == 4 && p.eval_batch == 7, "npz's batch and threads");
	drv_params_defaults(&p, NULL);
	CHECK(p.batch == 64 && p.read_threads == 4, "no hints: %llu %u",
	      (unsigned long long)p.batch, p.read_threads);

	/* The command line: values into their fields, and a record of what was given. */
	char *argv[] = {"dlio-drive",	     "--config",	 "c.yaml",  "--batch-size",
			"8",		     "--no-eval",	 "-q",	    "--io-size",
			"8KiB",		     "--file-shuffle",	 "SEED",    "--computation-time",
			"normal:0.3,50ms",  "--data-loader",	 "tensorflow", "--same-seed-every-epoch",
			"--checkpoint-dir", "/tmp/ck",		 "dir",	    NULL};
	CHECK(drv_cli_parse(sizeof(argv) / sizeof(argv[0]) - 1, argv, &cl) == 0, "parse");
	CHECK(!strcmp(cl.config, "c.yaml") && !strcmp(cl.dir, "dir") && cl.quiet, "tool's own");
	CHECK(drv_given(&cl.given, DRV_P(batch)) && drv_given(&cl.given, DRV_P(eval)) &&
		  !drv_given(&cl.given, DRV_P(epochs)) && drv_given_any(&cl.given, DRV_OF_CKPT),
	      "given");
	drv_params_defaults(&p, hints("npz"));
	drv_params_merge(&p, &cl.p, &cl.given);
	CHECK(p.batch == 8 && !p.eval && p.io_size == 8192 && p.file_shuffle == DRV_SHUF_SEED &&
		  p.compute.type == DRV_DIST_NORMAL && p.iterative && !p.seed_change_epoch &&
		  !strcmp(p.checkpoint_dir, "/tmp/ck") && p.epochs == 1 && p.prefetch == 2,
	      "merged");
	char *bad1[] = {"dlio-drive", "--config", "c", "--io-size", "1000", "d", NULL};
	CHECK(drv_cli_parse(6, bad1, &cl) == -EINVAL, "io-size 1000 accepted");
	char *bad2[] = {"dlio-drive", "--config", "c", "--read-threads", "2000", "d", NULL};
	CHECK(drv_cli_parse(6, bad2, &cl) == -EINVAL, "2000 threads accepted");
	char *bad3[] = {"dlio-drive", "--config", "c", "--accelerator", "tpu", "d", NULL};
	CHECK(drv_cli_parse(6, bad3, &cl) == -EINVAL, "tpu accepted");
}

/* ---- which rank: --rank/--ranks, the launcher's variables, {rank} ---- */

static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
					    "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID",
					    "SLURM_NTASKS"};

static void clear_launcher(void)
{
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(launcher_vars[0]); i++)
		unsetenv(launcher_vars[i]);
}

/* Parse argv (NULL-terminated) and resolve the ranks: drv_cli_ranks's result. */
static int ranks_of(char **argv, struct drv_cli *cl)
{
	int argc = 0;
	FILE *null = fopen("/dev/null", "w");

	while (argv[argc])
		argc++;
	int ret = drv_cli_parse(argc, argv, cl);
	if (!ret)
		ret = drv_cli_ranks(cl, null ? null : stderr);
	if (null)
		fclose(null);
	return ret;
}

static void test_ranks(void)
{
	struct drv_cli cl;
	char out[32];
	FILE *null = fopen("/dev/null", "w");

	clear_launcher();
	char *plain[] = {"dlio-drive", "--config", "c", "d", NULL};
	CHECK(ranks_of(plain, &cl) == 0 && cl.rank == 0 && cl.ranks == 1, "alone: 0 of 1");
	char *given[] = {"dlio-drive", "--config", "c", "--rank", "3", "--ranks", "4", "d", NULL};
	CHECK(ranks_of(given, &cl) == 0 && cl.rank == 3 && cl.ranks == 4, "--rank 3 --ranks 4");
	char *over[] = {"dlio-drive", "--config", "c", "--rank", "5", "--ranks", "4", "d", NULL};
	CHECK(ranks_of(over, &cl) == -EINVAL, "--rank 5 --ranks 4 accepted");
	char *edge[] = {"dlio-drive", "--config", "c", "--rank", "4", "--ranks", "4", "d", NULL};
	CHECK(ranks_of(edge, &cl) == -EINVAL, "--rank 4 --ranks 4 accepted");
	char *lone[] = {"dlio-drive", "--config", "c", "--rank", "1", "d", NULL};
	CHECK(ranks_of(lone, &cl) == -EINVAL, "--rank 1 without --ranks accepted");
	char *zero[] = {"dlio-drive", "--config", "c", "--ranks", "0", "d", NULL};
	CHECK(ranks_of(zero, &cl) == -EINVAL, "--ranks 0 accepted");

	/* The launchers' variables: Open MPI's before Slurm's (mpirun inside an
	 * allocation), the command line before both. */
	setenv("SLURM_PROCID", "2", 1);
	setenv("SLURM_NTASKS", "8", 1);
	CHECK(ranks_of(plain, &cl) == 0 && cl.rank == 2 && cl.ranks == 8, "srun: %u of %u",
	      cl.rank, cl.ranks);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
	CHECK(ranks_of(plain, &cl) == 0 && cl.rank == 1 && cl.ranks == 3, "mpirun: %u of %u",
	      cl.rank, cl.ranks);
	CHECK(ranks_of(given, &cl) == 0 && cl.rank == 3 && cl.ranks == 4, "command line first");
	char *few[] = {"dlio-drive", "--config", "c", "--ranks", "1", "d", NULL};
	CHECK(ranks_of(few, &cl) == -EINVAL, "rank 1 (launcher) of --ranks 1 accepted");
	setenv("OMPI_COMM_WORLD_RANK", "x1", 1);
	CHECK(ranks_of(plain, &cl) == -EINVAL, "OMPI_COMM_WORLD_RANK=x1 accepted");
	setenv("OMPI_COMM_WORLD_RANK", "-1", 1);
	CHECK(ranks_of(plain, &cl) == -EINVAL, "OMPI_COMM_WORLD_RANK=-1 accepted");
	clear_launcher();
	/* PMIx alone gives a rank and no size: MPI tells it later, and without
	 * MPI the paths step refuses. */
	setenv("PMIX_RANK", "2", 1);
	CHECK(ranks_of(plain, &cl) == 0 && cl.rank == 2 && cl.ranks == 1, "PMIx rank, no size");
	CHECK(drv_cli_paths(&cl, 1, null ? null : stderr) == -EINVAL, "rank 2 of 1 ran");
	clear_launcher();

	/* {rank} everywhere in a path; FILE.RANK for several ranks' traces, and
	 * for their JSON only when each rank reports alone. */
	CHECK(drv_rank_path("/mnt/dl{rank}/x{rank}", 12, out, sizeof(out)) == 0 &&
		  !strcmp(out, "/mnt/dl12/x12"),
	      "{rank}: %s", out);
	CHECK(drv_rank_path("/a/{rank", 1, out, sizeof(out)) == 0 && !strcmp(out, "/a/{rank"),
	      "no token: %s", out);
	CHECK(drv_rank_path("/0123456789012345678901234567/{rank}", 1000, out, sizeof(out)) ==
		  -ENAMETOOLONG,
	      "overflow not said");
	char *paths[] = {"dlio-drive",	   "--config", "c",	    "--rank",	      "1",
			 "--ranks",	   "2",	       "--json",    "r{rank}.json",   "--trace-files",
			 "t.tsv",	   "--data-dir", "/m/dl{rank}", "--checkpoint-dir", "/ck/{rank}",
			 NULL};
	CHECK(ranks_of(paths, &cl) == 0 && drv_cli_paths(&cl, 0, stderr) == 0, "paths");
	CHECK(!strcmp(cl.dir, "/m/dl1") && !strcmp(cl.json, "r1.json") &&
		  !strcmp(cl.trace, "t.tsv.1") && !strcmp(cl.p.checkpoint_dir, "/ck/1"),
	      "paths: %s %s %s %s", cl.dir, cl.json, cl.trace, cl.p.checkpoint_dir);
	char *json[] = {"dlio-drive", "--config", "c",	 "--rank", "1", "--ranks",
			"2",	      "--json",	  "r.json", "d",	NULL};
	CHECK(ranks_of(json, &cl) == 0 && drv_cli_paths(&cl, 0, stderr) == 0 &&
		  !strcmp(cl.json, "r.json"),
	      "MPI: the job's JSON keeps its name: %s", cl.json);
	CHECK(ranks_of(json, &cl) == 0 && drv_cli_paths(&cl, 1, stderr) == 0 &&
		  !strcmp(cl.json, "r.json.1"),
	      "alone: each rank's own JSON: %s", cl.json);
	char *both[] = {"dlio-drive", "--config", "c", "--data-dir", "a", "b", NULL};
	CHECK(ranks_of(both, &cl) == -EINVAL, "DIR and --data-dir accepted");
	if (null)
		fclose(null);
}

/* ---- decoders ---- */

static void test_jpeg(void)
{
	struct jpeg_compress_struct ci;
	struct jpeg_error_mgr jerr;
	unsigned char *out = NULL;
	unsigned long outlen = 0;
	const unsigned w = 97, h = 61;
	uint8_t *img = malloc(w * h * 3), *scratch = NULL;
	size_t cap = 0;
	uint64_t px = 0;

	for (unsigned i = 0; i < w * h * 3; i++)
		img[i] = (uint8_t)(i * 7);
	ci.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&ci);
	jpeg_mem_dest(&ci, &out, &outlen);
	ci.image_width = w;
	ci.image_height = h;
	ci.input_components = 3;
	ci.in_color_space = JCS_RGB;
	jpeg_set_defaults(&ci);
	jpeg_start_compress(&ci, TRUE);
	while (ci.next_scanline < h) {
		JSAMPROW r = img + ci.next_scanline * w * 3;
		jpeg_write_scanlines(&ci, &r, 1);
	}
	jpeg_finish_compress(&ci);
	jpeg_destroy_compress(&ci);
	CHECK(drv_decode_jpeg(out, outlen, &scratch, &cap, &px) == 0 && px == w * h * 3,
	      "jpeg pixels %llu", (unsigned long long)px);
	CHECK(drv_decode_jpeg(out, 100, &scratch, &cap, &px) == -EBADMSG, "truncated jpeg decoded");
	CHECK(drv_decode_jpeg((const uint8_t *)"not a jpeg", 10, &scratch, &cap, &px) == -EBADMSG,
	      "garbage decoded");
	free(out);
	free(img);
	free(scratch);
}

struct pngbuf {
	uint8_t *p;
	size_t len;
};

static void png_put(png_structp png, png_bytep data, png_size_t n)
{
	struct pngbuf *b = png_get_io_ptr(png);
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void png_flush_none(png_structp png) { (void)png; }

static struct pngbuf make_png(unsigned w, unsigned h, int color, int interlace, const uint8_t *img)
{
	struct pngbuf b = {0};
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	unsigned ch = color == PNG_COLOR_TYPE_RGB ? 3 : 1;

	png_set_write_fn(png, &b, png_put, png_flush_none);
	png_set_IHDR(png, info, w, h, 8, color, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_set_filter(png, 0, PNG_ALL_FILTERS);
	png_write_info(png, info);
	int passes = png_set_interlace_handling(png);
	for (int pass = 0; pass < passes; pass++)
		for (unsigned y = 0; y < h; y++)
			png_write_row(png, (png_const_bytep)(img + (size_t)y * w * ch));
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return b;
}

static void test_png(void)
{
	const unsigned w = 53, h = 41;
	uint8_t *img = malloc(w * h * 3), *scratch = NULL;
	size_t cap = 0;
	uint64_t px = 0;

	/* Smooth gradients with noise make libpng pick different filters per row. */
	for (unsigned y = 0; y < h; y++)
		for (unsigned x = 0; x < w * 3; x++)
			img[y * w * 3 + x] = (uint8_t)(x * 3 + y * 5 + ((x * y) % 7));
	struct pngbuf b = make_png(w, h, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, img);
	CHECK(drv_decode_png(b.p, b.len, &scratch, &cap, &px) == 0 && px == w * h * 3,
	      "png pixels %llu", (unsigned long long)px);
	/* The last row decoded equals the image's last row: the filters are undone. */
	const uint8_t *last = (h % 2) ? scratch + 1 : scratch + w * 3 + 1 + 1;
	CHECK(!memcmp(last, img + (h - 1) * w * 3, w * 3), "png last row differs");
	CHECK(drv_decode_png(b.p, b.len - 30, &scratch, &cap, &px) == -EBADMSG, "truncated png");
	free(b.p);
	b = make_png(w, h, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_ADAM7, img);
	CHECK(drv_decode_png(b.p, b.len, &scratch, &cap, &px) == -ENOTSUP,
	      "interlaced png decoded");
	free(b.p);

	/* Each filter by hand against its definition (bpp 2, 4 bytes per row). */
	uint8_t prev[5] = {0, 10, 20, 30, 40};
	uint8_t cur[5];
	const uint8_t raw[4] = {1, 2, 3, 4};
	for (int f = 0; f < 5; f++) {
		cur[0] = (uint8_t)f;
		memcpy(cur + 1, raw, 4);
		CHECK(drv_png_unfilter(cur, prev, 4, 2) == 0, "filter %d", f);
		uint8_t want[4];
		for (int i = 0; i < 4; i++) {
			int a = i >= 2 ? want[i - 2] : 0, up = prev[1 + i],
			    c = i >= 2 ? prev[1 + i - 2] : 0;
			int pred = f == 0   ? 0
				   : f == 1 ? a
				   : f == 2 ? up
				   : f == 3 ? (a + up) / 2
					    : drv_png_paeth(a, up, c);
			want[i] = (uint8_t)(raw[i] + pred);
		}
		CHECK(!memcmp(cur + 1, want, 4), "filter %d result", f);
	}
	cur[0] = 5;
	CHECK(drv_png_unfilter(cur, prev, 4, 2) == -EBADMSG, "filter 5 accepted");
	free(img);
	free(scratch);
}

int main(void)
{
	test_perm();
	test_plan();
	test_shard();
	test_stats();
	test_dist();
	test_tfrecord();
	test_yaml();
	test_opts();
	test_ranks();
	test_jpeg();
	test_png();
	return tap_done("test_drive");
}
