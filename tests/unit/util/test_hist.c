/* Log-linear histogram: exact small values, quantile error bound against
 * sorted samples over many magnitudes, merge, edges. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/hist.h"
#include "dliofs/prng.h"
#include "tap.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of a sorted array. */
static uint64_t exact_q(const uint64_t *v, size_t n, double q)
{
	size_t r = (size_t)ceil(q * (double)n);

	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return v[r - 1];
}

static double rel(uint64_t got, uint64_t want)
{
	if (!want)
		return got ? 1.0 : 0.0;
	return fabs((double)got - (double)want) / (double)want;
}

static void test_empty(void)
{
	struct dl_hist *h = calloc(1, sizeof(*h));

	CHECK(dl_hist_quantile(h, 0.5) == 0, "empty p50");
	CHECK(dl_hist_quantile(h, 0) == 0 && dl_hist_quantile(h, 1) == 0, "empty q0/q1");
	free(h);
}

static void test_small_exact(void)
{
	struct dl_hist *h = calloc(1, sizeof(*h));
	int bad = 0;

	/* Below 2 * DL_HIST_SUB every value has its own bucket. */
	for (uint64_t v = 0; v < 2 * DL_HIST_SUB; v++) {
		memset(h, 0, sizeof(*h));
		dl_hist_add(h, v);
		dl_hist_add(h, v);
		if (dl_hist_quantile(h, 0.5) != v)
			bad++;
	}
	CHECK(!bad, "%d small values not exact", bad);
	memset(h, 0, sizeof(*h));
	for (uint64_t v = 1; v <= 10; v++)
		dl_hist_add(h, v);
	CHECK(h->count == 10 && h->sum == 55 && h->min == 1 && h->max == 10, "count/sum/min/max");
	CHECK(dl_hist_quantile(h, 0.5) == 5, "p50 of 1..10 = %" PRIu64, dl_hist_quantile(h, 0.5));
	CHECK(dl_hist_quantile(h, 0.9) == 9, "p90 of 1..10 = %" PRIu64, dl_hist_quantile(h, 0.9));
	CHECK(dl_hist_quantile(h, 0.91) == 10, "p91 of 1..10");
	CHECK(dl_hist_quantile(h, 0) == 1 && dl_hist_quantile(h, 1) == 10, "q0 = min, q1 = max");
	free(h);
}

static void test_bounds(void)
{
	struct dl_hist *h = calloc(1, sizeof(*h));
	uint64_t vals[] = {64, 65, 1000, 123456789, 1ULL << 40, (1ULL << 63) + 12345, UINT64_MAX};
	int bad = 0;

	/* A single value: min and max clamp the answer to the value itself. */
	for (unsigned i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		memset(h, 0, sizeof(*h));
		dl_hist_add(h, vals[i]);
		if (dl_hist_quantile(h, 0.5) != vals[i])
			bad++;
	}
	CHECK(!bad, "single values not returned exactly");
	/* Two far-apart values: the midpoint of each bucket is within 1/(2 SUB). */
	bad = 0;
	for (uint64_t v = 100; v < (1ULL << 62); v = v * 3 + 7) {
		memset(h, 0, sizeof(*h));
		dl_hist_add(h, 1);
		dl_hist_add(h, v);
		dl_hist_add(h, v);
		dl_hist_add(h, UINT64_MAX);
		if (rel(dl_hist_quantile(h, 0.5), v) > 0.5 / DL_HIST_SUB + 1e-12)
			bad++;
	}
	CHECK(!bad, "%d bucket midpoints off by more than half a bucket", bad);
	free(h);
}

static void test_random(void)
{
	enum { N = 200000 };
	static const double qs[] = {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999};
	struct dl_hist *h = calloc(1, sizeof(*h)), *a = calloc(1, sizeof(*h)),
		       *b = calloc(1, sizeof(*h));
	uint64_t *v = malloc(N * sizeof(*v)), sum = 0;
	double worst = 0;

	/* Log-uniform over 1 ns .. 100 s: every magnitude a latency can have. */
	for (size_t i = 0; i < N; i++) {
		v[i] = (uint64_t)exp(dl_prng_unit(42, i) * log(1e11));
		sum += v[i];
		dl_hist_add(h, v[i]);
		dl_hist_add(i % 3 ? a : b, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	for (unsigned i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t got = dl_hist_quantile(h, qs[i]), want = exact_q(v, N, qs[i]);
		double e = rel(got, want);

		if (e > worst)
			worst = e;
		CHECK(e <= 0.03, "q%.4f: %" PRIu64 " vs exact %" PRIu64 " (%.2f%%)", qs[i], got,
		      want, 100 * e);
	}
	printf("hist: worst relative quantile error %.3f%%\n", 100 * worst);
	CHECK(h->count == N && h->sum == sum && h->min == v[0] && h->max == v[N - 1],
	      "count/sum/min/max");
	dl_hist_merge(a, b);
	CHECK(!memcmp(a, h, sizeof(*h)), "merge of two halves equals the whole");
	memset(b, 0, sizeof(*b));
	dl_hist_merge(b, h);
	CHECK(!memcmp(b, h, sizeof(*h)), "merge into empty is a copy");
	dl_hist_merge(h, b); /* b is a copy of h: counts double */
	CHECK(h->count == 2 * (uint64_t)N && dl_hist_quantile(h, 0.5) == dl_hist_quantile(b, 0.5),
	      "merge doubles counts, same quantiles");
	free(v);
	free(h);
	free(a);
	free(b);
}

int main(void)
{
	test_empty();
	test_small_exact();
	test_bounds();
	test_random();
	return tap_done("hist");
}
