/* Measured devices in the pacer (pacer/curves.c): latency_by_size and
 * bandwidth_by_concurrency, through the options table (keys, points,
 * errors, dump, phases) and through the model, driven by virtual
 * closed-loop clients on an injected clock. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/pacer.h"
#include "pacer_kv.h"
#include "tap.h"

#define US ((uint64_t)1000)
#define MS ((uint64_t)1000000)
#define SEC ((uint64_t)1000000000)
#define T0 (1000 * SEC)
#define MiB (1ULL << 20)
#define MAXC 32

static int set(struct dl_pacer_cfg *cfg, const char *key, const char *val)
{
	char err[1024];
	int ret = dl_pacer_cfg_set(cfg, key, val, err, sizeof(err));

	if (ret)
		fprintf(stderr, "set %s=%s: %s\n", key, val, err);
	return ret;
}

static struct dl_pacer *pacer_of(struct dl_pacer_cfg *cfg)
{
	struct dl_pacer *p = NULL;
	char err[512];

	if (dl_pacer_cfg_check(cfg, err, sizeof(err))) {
		fprintf(stderr, "check: %s\n", err);
		return NULL;
	}
	if (dl_pacer_new(cfg, T0, 7, &p))
		return NULL;
	return p;
}

/* One request of len bytes alone at t: its service time. */
static uint64_t alone(struct dl_pacer *p, enum dl_op_class cls, uint64_t len, uint64_t t)
{
	struct dl_pacer_req r = {.cls = cls, .file_id = 1, .len = len, .job = 1};
	struct dl_pacer_result res;

	if (dl_pacer_submit(p, &r, t, &res))
		abort();
	dl_pacer_complete(p, &r, &res, res.due_ns);
	return res.due_ns - t;
}

/* n closed-loop clients (each submits when its previous request is due),
 * nreq requests of len bytes: bytes/s, and the last request's latency. */
static double closed_loop(struct dl_pacer *p, unsigned n, uint64_t len, unsigned nreq,
			  uint64_t *last_lat)
{
	uint64_t next[MAXC], end = T0;
	struct dl_pacer_req req[MAXC];
	struct dl_pacer_result res[MAXC];
	int pending[MAXC] = {0};

	for (unsigned i = 0; i < n; i++)
		next[i] = T0;
	for (unsigned k = 0; k < nreq; k++) {
		unsigned c = 0;

		for (unsigned i = 1; i < n; i++)
			if (next[i] < next[c])
				c = i;
		for (unsigned i = 0; i < n; i++) {
			if (pending[i] && res[i].due_ns <= next[c]) {
				dl_pacer_complete(p, &req[i], &res[i], res[i].due_ns);
				pending[i] = 0;
			}
		}
		req[c] =
		    (struct dl_pacer_req){.cls = DL_OP_READ, .file_id = c, .len = len, .job = 1};
		if (dl_pacer_submit(p, &req[c], next[c], &res[c]))
			abort();
		pending[c] = 1;
		*last_lat = res[c].due_ns - next[c];
		next[c] = res[c].due_ns;
		if (next[c] > end)
			end = next[c];
	}
	for (unsigned i = 0; i < n; i++)
		if (pending[i])
			dl_pacer_complete(p, &req[i], &res[i], res[i].due_ns);
	return (double)nreq * (double)len / ((double)(end - T0) / 1e9);
}

static double relerr(double got, double want) { return fabs(got / want - 1); }

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- options ---- */

static void test_options(void)
{
	struct dl_pacer_cfg cfg, copy;
	char *d, *d2, key[64], err[512];

	dl_pacer_cfg_init(&cfg);
	CHECK(set(&cfg, "read.latency_by_size.1MiB", "lognormal(1ms, 5ms)") == 0 &&
		  set(&cfg, "read.latency_by_size.4KiB", "100us") == 0 &&
		  set(&cfg, "read.latency_by_size.64KiB", "200us") == 0,
	      "points set");
	CHECK(cfg.m[DL_OP_READ].lat_size.n == 3 && cfg.m[DL_OP_READ].lat_size.pt[0].size == 4096 &&
		  cfg.m[DL_OP_READ].lat_size.pt[1].size == 65536 &&
		  cfg.m[DL_OP_READ].lat_size.pt[2].size == MiB,
	      "points sorted by size");
	CHECK(set(&cfg, "read.latency_by_size.64KiB", "250us") == 0 &&
		  cfg.m[DL_OP_READ].lat_size.n == 3 &&
		  cfg.m[DL_OP_READ].lat_size.pt[1].lat.a_ns == 250 * US,
	      "a point replaced");
	CHECK(set(&cfg, "read.latency_by_size.64KiB", "none") == 0 &&
		  cfg.m[DL_OP_READ].lat_size.n == 2,
	      "a point removed");
	CHECK(set(&cfg, "read.bandwidth_by_concurrency.1MiB.4", "800MB/s") == 0 &&
		  set(&cfg, "read.bandwidth_by_concurrency.1MiB.1", "600MB/s") == 0 &&
		  set(&cfg, "read.bandwidth_by_concurrency.4KiB.16", "300MB/s") == 0 &&
		  set(&cfg, "read.bandwidth_by_concurrency.4KiB.1", "40MB/s") == 0,
	      "concurrency points set");
	{
		const struct dl_conc_table *t = &cfg.m[DL_OP_READ].conc;

		CHECK(t->n == 2 && t->row[0].size == 4096 && t->row[1].size == MiB &&
			  t->row[1].n == 2 && t->row[1].k[0] == 1 && t->row[1].k[1] == 4 &&
			  t->row[1].bw[0] == 600000000 && t->row[1].bw[1] == 800000000,
		      "rows by size, points by k");
	}
	d = test_pacer_dump(&cfg);
	CHECK(strstr(d, "latency_by_size: {4KiB: \"100us\", 1MiB: \"lognormal(1ms, 5ms)\"}") &&
		  strstr(d, "bandwidth_by_concurrency: {4KiB: {1: 40MB/s, 16: 300MB/s}, 1MiB: "
			    "{1: 600MB/s, 4: 800MB/s}}") &&
		  strstr(d, "latency_by_size: {}"),
	      "dump:\n%s", d);
	free(d);

	/* Phases inherit a table they did not set, and keep one they did. */
	CHECK(set(&cfg, "phases.0.duration", "1s") == 0 &&
		  set(&cfg, "phases.1.duration", "1s") == 0 &&
		  set(&cfg, "phases.1.read.latency_by_size.4KiB", "70us") == 0,
	      "phases");
	CHECK(set(&cfg, "read.latency_by_size.4KiB", "60us") == 0, "constant model changed");
	CHECK(cfg.phases[0].m[DL_OP_READ].lat_size.pt[0].lat.a_ns == 60 * US &&
		  cfg.phases[1].m[DL_OP_READ].lat_size.pt[0].lat.a_ns == 70 * US,
	      "phase 0 inherits (%" PRIu64 "), phase 1 keeps its own (%" PRIu64 ")",
	      cfg.phases[0].m[DL_OP_READ].lat_size.pt[0].lat.a_ns,
	      cfg.phases[1].m[DL_OP_READ].lat_size.pt[0].lat.a_ns);
	CHECK(set(&cfg, "read.bandwidth_by_concurrency.1MiB.16", "900MB/s") == 0 &&
		  cfg.phases[1].m[DL_OP_READ].conc.row[1].n == 3,
	      "phases inherit a concurrency point");

	/* A deep copy outlives the original. */
	CHECK(dl_pacer_cfg_copy(&copy, &cfg) == 0, "copy");
	d = test_pacer_dump(&cfg);
	dl_pacer_cfg_free(&cfg);
	d2 = test_pacer_dump(&copy);
	CHECK(!strcmp(d, d2), "the copy dumps the same");
	free(d);
	free(d2);
	CHECK(dl_pacer_cfg_check(&copy, err, sizeof(err)) == 0, "valid: %s", err);

	/* Errors name the key and what was expected; nothing changes. */
	test_pacer_expect_err(&copy, "read.latency_by_size.fast", "1ms", "not a point");
	test_pacer_expect_err(&copy, "read.latency_by_size.0", "1ms", "not a point");
	test_pacer_expect_err(&copy, "read.latency_by_size.4KiB.2", "1ms", "not a point");
	test_pacer_expect_err(&copy, "read.latency_by_size.4KiB", "lognormal(5ms, 1ms)", "p99");
	test_pacer_expect_err(&copy, "read.latency_by_size", "1ms", "KEY.SIZE=LATENCY");
	test_pacer_expect_err(&copy, "read.bandwidth_by_concurrency.1MiB", "800MB/s", "KEY.SIZE.K=RATE");
	test_pacer_expect_err(&copy, "read.bandwidth_by_concurrency.1MiB.0", "800MB/s", "not a point");
	test_pacer_expect_err(&copy, "read.bandwidth_by_concurrency.1MiB.4", "fast", "rate");
	test_pacer_expect_err(&copy, "read.latency_by_sise.4KiB", "1ms", "did you mean");
	for (unsigned i = 0; i < DL_PACER_MAX_SIZES; i++) {
		snprintf(key, sizeof(key), "write.latency_by_size.%uKiB", i + 1);
		set(&copy, key, "1ms");
	}
	CHECK(copy.m[DL_OP_WRITE].lat_size.n == DL_PACER_MAX_SIZES, "a full table");
	test_pacer_expect_err(&copy, "write.latency_by_size.1GiB", "1ms", "table is full");

	/* Removing: a point, a row, everything. */
	CHECK(set(&copy, "read.bandwidth_by_concurrency.4KiB.1", "none") == 0 &&
		  copy.m[DL_OP_READ].conc.row[0].n == 1,
	      "a concurrency point removed");
	CHECK(set(&copy, "read.bandwidth_by_concurrency.4KiB", "none") == 0 &&
		  copy.m[DL_OP_READ].conc.n == 1 && copy.m[DL_OP_READ].conc.row[0].size == MiB,
	      "a row removed");
	CHECK(set(&copy, "read.bandwidth_by_concurrency", "none") == 0 &&
		  copy.m[DL_OP_READ].conc.n == 0 && set(&copy, "read.latency_by_size", "{}") == 0 &&
		  copy.m[DL_OP_READ].lat_size.n == 0,
	      "tables cleared");
	dl_pacer_cfg_free(&copy);
}

/* ---- latency by size ---- */

static void test_by_size_constant(void)
{
	struct dl_pacer_cfg cfg;
	struct dl_pacer *p;
	double slope = (double)(1 * MS - 100 * US) / (double)(MiB - 4096);

	dl_pacer_cfg_init(&cfg);
	set(&cfg, "read.latency_by_size.4KiB", "100us");
	set(&cfg, "read.latency_by_size.1MiB", "1ms");
	set(&cfg, "read.latency", "7ms");
	set(&cfg, "meta.latency", "5us");
	p = pacer_of(&cfg);
	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	CHECK(alone(p, DL_OP_READ, 4096, T0) == 100 * US, "at a point");
	CHECK(alone(p, DL_OP_READ, MiB, T0 + SEC) == 1 * MS, "at the other point");
	CHECK(alone(p, DL_OP_READ, 512, T0 + 2 * SEC) == 100 * US, "below the smallest");
	{
		uint64_t n = (4096 + MiB) / 2, got = alone(p, DL_OP_READ, n, T0 + 3 * SEC);

		CHECK(llabs((long long)got - (long long)(550 * US)) <= 1, "halfway: %" PRIu64, got);
	}
	{
		uint64_t got = alone(p, DL_OP_READ, 2 * MiB, T0 + 4 * SEC);
		double want = 1e6 + slope * (double)MiB;

		CHECK(fabs((double)got - want) <= 1, "beyond the largest: %" PRIu64 " vs %.0f", got,
		      want);
	}
	CHECK(alone(p, DL_OP_META, 0, T0 + 5 * SEC) == 5 * US, "metadata keeps latency");
	dl_pacer_free(p);
	dl_pacer_cfg_free(&cfg);
}

static char *write_table(const char *tag, const char *text)
{
	static char paths[4][96];
	static unsigned k;
	char *path = paths[k++ % 4];
	FILE *f;

	snprintf(path, 96, "/tmp/dliofs-test-curves-%s-%d.txt", tag, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_by_size_empirical(void)
{
	struct dl_pacer_cfg cfg;
	struct dl_pacer *p;
	char spec[160];
	char *a = write_table("a", "unit us\n10\n20\n30\n40\n");
	char *b = write_table("b", "110us\n120us\n130us\n140us\n");
	unsigned count[4] = {0}, bad = 0, n = 20000;
	uint64_t *v = malloc(n * sizeof(*v));

	dl_pacer_cfg_init(&cfg);
	snprintf(spec, sizeof(spec), "empirical(%s)", a);
	set(&cfg, "read.latency_by_size.4KiB", spec);
	snprintf(spec, sizeof(spec), "empirical(%s)", b);
	set(&cfg, "read.latency_by_size.8KiB", spec);
	set(&cfg, "read.latency_by_size.1MiB", "lognormal(1ms, 10ms)");
	p = pacer_of(&cfg);
	CHECK(p != NULL && v != NULL, "pacer");
	if (!p || !v)
		return;
	/* At a measured size: the file's values with their frequencies. */
	for (unsigned i = 0; i < n; i++) {
		uint64_t l = alone(p, DL_OP_READ, 4096, T0 + i * MS);

		if (l % (10 * US) || l < 10 * US || l > 40 * US)
			bad++;
		else
			count[l / (10 * US) - 1]++;
	}
	CHECK(!bad, "%u draws not in the 4KiB table", bad);
	for (unsigned k = 0; k < 4; k++)
		CHECK(relerr(count[k], n / 4.0) < 0.05, "value %u drawn %u times of %u", k,
		      count[k], n);
	/* Halfway between: the quantiles' midpoints (60, 70, 80, 90 us). */
	memset(count, 0, sizeof(count));
	bad = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t l = alone(p, DL_OP_READ, 6144, T0 + (n + i) * MS);

		if (l % (10 * US) || l < 60 * US || l > 90 * US)
			bad++;
		else
			count[l / (10 * US) - 6]++;
	}
	CHECK(!bad, "%u draws at 6KiB not at the quantiles' midpoints", bad);
	for (unsigned k = 0; k < 4; k++)
		CHECK(relerr(count[k], n / 4.0) < 0.05, "midpoint %u drawn %u times", k, count[k]);
	/* A parametric point: its median and p99 (quantile function). */
	for (unsigned i = 0; i < n; i++)
		v[i] = alone(p, DL_OP_READ, MiB, T0 + (2 * n + i) * MS);
	qsort(v, n, sizeof(*v), cmp_u64);
	CHECK(relerr((double)v[n / 2], 1e6) < 0.04 && relerr((double)v[n * 99 / 100], 1e7) < 0.08,
	      "lognormal at 1MiB: p50 %" PRIu64 " p99 %" PRIu64, v[n / 2], v[n * 99 / 100]);
	dl_pacer_free(p);
	dl_pacer_cfg_free(&cfg);
	free(v);
	unlink(a);
	unlink(b);
}

/* ---- bandwidth by concurrency ---- */

static void test_concurrency(void)
{
	struct dl_pacer_cfg cfg;
	struct dl_pacer *p;
	uint64_t lat, l1 = (uint64_t)((double)MiB / 600e6 * 1e9 + 0.5);
	char v[32];
	double bw;

	/* A device measured at 600 MB/s alone and 800 MB/s with 4 in service. */
	dl_pacer_cfg_init(&cfg);
	snprintf(v, sizeof(v), "%" PRIu64 "ns", l1);
	set(&cfg, "read.latency_by_size.1MiB", v);
	set(&cfg, "read.bandwidth_by_concurrency.1MiB.1", "600MB/s");
	set(&cfg, "read.bandwidth_by_concurrency.1MiB.4", "800MB/s");
	p = pacer_of(&cfg);
	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	bw = closed_loop(p, 1, MiB, 2000, &lat);
	CHECK(relerr(bw, 600e6) < 0.001 && lat == l1, "1 in service: %.1f MB/s, %" PRIu64 " ns",
	      bw / 1e6, lat);
	dl_pacer_free(p);
	p = pacer_of(&cfg);
	bw = closed_loop(p, 4, MiB, 4000, &lat);
	CHECK(relerr(bw, 800e6) < 0.01, "4 in service: %.1f MB/s", bw / 1e6);
	CHECK(relerr((double)lat, 4.0 * MiB / 800e6 * 1e9) < 0.01, "4 in service: latency %" PRIu64,
	      lat);
	dl_pacer_free(p);
	p = pacer_of(&cfg);
	bw = closed_loop(p, 2, MiB, 4000, &lat);
	CHECK(relerr(bw, 600e6 + 200e6 / 3) < 0.01, "2 in service (interpolated): %.1f MB/s",
	      bw / 1e6);
	dl_pacer_free(p);
	p = pacer_of(&cfg);
	bw = closed_loop(p, 16, MiB, 8000, &lat);
	CHECK(relerr(bw, 800e6) < 0.01, "16 in service (saturated): %.1f MB/s", bw / 1e6);
	dl_pacer_free(p);
	/* In service means submitted and not yet completed, whatever the due
	 * time says: a reply sent early ends its request for the client. */
	p = pacer_of(&cfg);
	{
		struct dl_pacer_req a = {.cls = DL_OP_READ, .file_id = 1, .len = MiB, .job = 1};
		struct dl_pacer_req b = a;
		struct dl_pacer_result ra, rb;

		dl_pacer_submit(p, &a, T0, &ra);
		dl_pacer_submit(p, &b, T0 + 10 * SEC, &rb);
		CHECK(rb.due_ns - (T0 + 10 * SEC) > l1, "the first not completed: two in service");
		dl_pacer_complete(p, &a, &ra, ra.due_ns - 1000);
		dl_pacer_complete(p, &b, &rb, rb.due_ns);
		CHECK(alone(p, DL_OP_READ, MiB, T0 + 20 * SEC) == l1, "both completed: alone");
	}
	dl_pacer_free(p);
	/* After a burst, one request alone is back to its own latency. */
	p = pacer_of(&cfg);
	closed_loop(p, 8, MiB, 64, &lat);
	CHECK(alone(p, DL_OP_READ, MiB, T0 + 10 * SEC) == l1, "alone again");
	dl_pacer_free(p);
	dl_pacer_cfg_free(&cfg);

	/* Between two rows g is linear in log2(size): 64 KiB is halfway
	 * between 4 KiB (g(4) = 2) and 1 MiB (g(4) = 1). Superlinear rows are
	 * kept (g < 1). */
	dl_pacer_cfg_init(&cfg);
	set(&cfg, "read.latency", "1ms");
	set(&cfg, "read.bandwidth_by_concurrency.4KiB.1", "100MB/s");
	set(&cfg, "read.bandwidth_by_concurrency.4KiB.4", "200MB/s");
	set(&cfg, "read.bandwidth_by_concurrency.1MiB.1", "100MB/s");
	set(&cfg, "read.bandwidth_by_concurrency.1MiB.4", "400MB/s");
	set(&cfg, "read.bandwidth_by_concurrency.2MiB.1", "100MB/s");
	set(&cfg, "read.bandwidth_by_concurrency.2MiB.4", "800MB/s");
	p = pacer_of(&cfg);
	closed_loop(p, 4, 65536, 400, &lat);
	CHECK(lat == 1500 * US, "64KiB with 4 in service: %" PRIu64 " ns (want 1.5ms)", lat);
	dl_pacer_free(p);
	p = pacer_of(&cfg);
	closed_loop(p, 4, 4096, 400, &lat);
	CHECK(lat == 2 * MS, "4KiB with 4 in service: %" PRIu64, lat);
	dl_pacer_free(p);
	p = pacer_of(&cfg);
	closed_loop(p, 4, 4 * MiB, 400, &lat);
	CHECK(lat == 500 * US, "beyond the largest row (superlinear): %" PRIu64, lat);
	dl_pacer_free(p);
	/* Without a latency there is nothing to stretch. */
	set(&cfg, "read.latency", "none");
	p = pacer_of(&cfg);
	closed_loop(p, 4, 4096, 400, &lat);
	CHECK(lat == 0, "no latency, no stretch: %" PRIu64, lat);
	dl_pacer_free(p);
	dl_pacer_cfg_free(&cfg);
}

int main(void)
{
	test_options();
	test_by_size_constant();
	test_by_size_empirical();
	test_concurrency();
	return tap_done("pacer_curves");
}
