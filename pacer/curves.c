/* Measured devices (what `dliofs profile` writes): a latency that depends
 * on the request's size, and a device that gives more or less per request
 * as more requests are in service. Both are what a real device shows and a
 * single latency plus a token bucket cannot: a 4 KiB read and a 4 MiB read
 * have tails of their own, and a disk that delivers 600 MB/s to one reader
 * may deliver 800 MB/s to four, not 2.4 GB/s.
 *
 * latency_by_size {S1: L1, S2: L2, ...}: a request of n bytes (the bytes
 * that miss the emulated cache) draws one uniform number u and takes
 *   Lj(u)                                   at a measured size Sj,
 *   Lj(u) + (Lj+1(u) - Lj(u)) (n - Sj) / (Sj+1 - Sj)   between two sizes
 *                                           (quantile by quantile: a
 *                                           transfer grows linearly),
 *   L1(u)                                   below the smallest size,
 *   Llast(u) + slope (n - Slast)            above the largest, slope = the
 *                                           medians' of the last two points.
 * Requests without data (metadata) keep `latency`.
 *
 * bandwidth_by_concurrency {S: {K: BW, ...}, ...}: what the device delivers
 * with K requests of size S in service. A request that arrives with k of
 * its class in service, itself included (pacer.c counts those submitted
 * and not yet completed), takes its latency times
 *   g = k bw(1) / bw(k)
 * so that k requests at once complete at bw(k) while one alone keeps its
 * own latency (g(1) = 1). bw is linear in k between points, bw(k0) k / k0
 * below the first (linear scaling), bw(last) above the last (saturated).
 * Between two rows' sizes g is linear in log2(size); outside them the
 * nearest row's. The latency it stretches is the one drawn above (or
 * `latency`), so a table alone, without a latency, changes nothing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "options_i.h"

/* g is kept within these: a measured table may be noisy, not absurd. */
#define G_MIN (1.0 / 64)
#define G_MAX 1048576.0

/* ---- latency by size ---- */

void pacer_sizes_free(struct dl_lat_sizes *t)
{
	for (unsigned i = 0; t->pt && i < t->n; i++)
		pacer_lat_free(&t->pt[i].lat);
	free(t->pt);
	t->pt = NULL;
	t->n = 0;
}

int pacer_sizes_copy(struct dl_lat_sizes *dst, const struct dl_lat_sizes *src)
{
	struct dl_lat_sizes t = {0, NULL};

	if (src->n) {
		t.pt = calloc(src->n, sizeof(*t.pt));
		if (!t.pt)
			return -ENOMEM;
		for (; t.n < src->n; t.n++) {
			t.pt[t.n].size = src->pt[t.n].size;
			if (pacer_lat_copy(&t.pt[t.n].lat, &src->pt[t.n].lat)) {
				pacer_sizes_free(&t);
				return -ENOMEM;
			}
		}
	}
	*dst = t;
	return 0;
}

int pacer_sizes_equal(const struct dl_lat_sizes *a, const struct dl_lat_sizes *b)
{
	if (a->n != b->n)
		return 0;
	for (unsigned i = 0; i < a->n; i++)
		if (a->pt[i].size != b->pt[i].size ||
		    !pacer_lat_equal(&a->pt[i].lat, &b->pt[i].lat))
			return 0;
	return 1;
}

int pacer_sizes_put(struct dl_lat_sizes *t, uint64_t size, struct dl_lat_model *lat)
{
	struct dl_size_lat *np;
	unsigned i = 0;

	while (i < t->n && t->pt[i].size < size)
		i++;
	if (i < t->n && t->pt[i].size == size) {
		pacer_lat_free(&t->pt[i].lat);
		if (lat) {
			t->pt[i].lat = *lat;
			memset(lat, 0, sizeof(*lat));
			return 0;
		}
		memmove(&t->pt[i], &t->pt[i + 1], (t->n - i - 1) * sizeof(*t->pt));
		if (!--t->n) {
			free(t->pt);
			t->pt = NULL;
		}
		return 0;
	}
	if (!lat)
		return 0;
	if (t->n >= DL_PACER_MAX_SIZES)
		return -ENOSPC;
	np = realloc(t->pt, (t->n + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	t->pt = np;
	memmove(&t->pt[i + 1], &t->pt[i], (t->n - i) * sizeof(*t->pt));
	t->pt[i].size = size;
	t->pt[i].lat = *lat;
	memset(lat, 0, sizeof(*lat));
	t->n++;
	return 0;
}

int pacer_sizes_check(const struct dl_lat_sizes *t, char *why, size_t whylen)
{
	char w[256], sz[32];

	for (unsigned i = 0; i < t->n; i++) {
		if (pacer_lat_check(&t->pt[i].lat, w, sizeof(w))) {
			pacer_fmt_size(t->pt[i].size, sz, sizeof(sz), "");
			snprintf(why, whylen, "%s: %s", sz, w);
			return -EINVAL;
		}
	}
	return 0;
}

/* s as a YAML double-quoted scalar at buf + o; returns the new o. */
static size_t put_quoted(char *buf, size_t len, size_t o, const char *s)
{
	if (o + 1 < len)
		buf[o++] = '"';
	for (; *s && o + 3 < len; s++) {
		if (*s == '"' || *s == '\\')
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	if (o + 1 < len)
		buf[o++] = '"';
	buf[o < len ? o : len - 1] = '\0';
	return o;
}

static size_t put(char *buf, size_t len, size_t o, const char *s)
{
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "%s", s);
	return o < len ? o : len;
}

void pacer_sizes_format(const struct dl_lat_sizes *t, char *buf, size_t len)
{
	char sz[32], lat[320];
	size_t o = 0;

	o = put(buf, len, o, "{");
	for (unsigned i = 0; i < t->n; i++) {
		pacer_fmt_size(t->pt[i].size, sz, sizeof(sz), "");
		pacer_lat_format(&t->pt[i].lat, lat, sizeof(lat));
		o = put(buf, len, o, i ? ", " : "");
		o = put(buf, len, o, sz);
		o = put(buf, len, o, ": ");
		o = put_quoted(buf, len, o, lat);
	}
	put(buf, len, o, "}");
}

/* ---- bandwidth by concurrency ---- */

void pacer_conc_free(struct dl_conc_table *t)
{
	free(t->row);
	t->row = NULL;
	t->n = 0;
}

int pacer_conc_copy(struct dl_conc_table *dst, const struct dl_conc_table *src)
{
	struct dl_conc_table t = {0, NULL};

	if (src->n) {
		t.row = malloc(src->n * sizeof(*t.row));
		if (!t.row)
			return -ENOMEM;
		memcpy(t.row, src->row, src->n * sizeof(*t.row));
		t.n = src->n;
	}
	*dst = t;
	return 0;
}

int pacer_conc_equal(const struct dl_conc_table *a, const struct dl_conc_table *b)
{
	if (a->n != b->n)
		return 0;
	for (unsigned i = 0; i < a->n; i++) {
		const struct dl_conc_row *x = &a->row[i], *y = &b->row[i];

		if (x->size != y->size || x->n != y->n ||
		    memcmp(x->k, y->k, x->n * sizeof(x->k[0])) ||
		    memcmp(x->bw, y->bw, x->n * sizeof(x->bw[0])))
			return 0;
	}
	return 1;
}

static void drop_row(struct dl_conc_table *t, unsigned i)
{
	memmove(&t->row[i], &t->row[i + 1], (t->n - i - 1) * sizeof(*t->row));
	if (!--t->n) {
		free(t->row);
		t->row = NULL;
	}
}

int pacer_conc_put(struct dl_conc_table *t, uint64_t size, uint32_t k, uint64_t bw)
{
	struct dl_conc_row *r, *nr;
	unsigned i = 0, j = 0;

	while (i < t->n && t->row[i].size < size)
		i++;
	if (i == t->n || t->row[i].size != size) {
		if (!k || !bw)
			return 0;
		if (t->n >= DL_PACER_MAX_SIZES)
			return -ENOSPC;
		nr = realloc(t->row, (t->n + 1) * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		t->row = nr;
		memmove(&t->row[i + 1], &t->row[i], (t->n - i) * sizeof(*t->row));
		memset(&t->row[i], 0, sizeof(t->row[i]));
		t->row[i].size = size;
		t->n++;
	}
	if (!k) {
		drop_row(t, i);
		return 0;
	}
	r = &t->row[i];
	while (j < r->n && r->k[j] < k)
		j++;
	if (j < r->n && r->k[j] == k) {
		if (bw) {
			r->bw[j] = bw;
			return 0;
		}
		memmove(&r->k[j], &r->k[j + 1], (r->n - j - 1) * sizeof(r->k[0]));
		memmove(&r->bw[j], &r->bw[j + 1], (r->n - j - 1) * sizeof(r->bw[0]));
		if (!--r->n)
			drop_row(t, i);
		return 0;
	}
	if (!bw) {
		if (!r->n)
			drop_row(t, i);
		return 0;
	}
	if (r->n >= DL_PACER_MAX_CONC)
		return -ENOSPC;
	memmove(&r->k[j + 1], &r->k[j], (r->n - j) * sizeof(r->k[0]));
	memmove(&r->bw[j + 1], &r->bw[j], (r->n - j) * sizeof(r->bw[0]));
	r->k[j] = k;
	r->bw[j] = bw;
	r->n++;
	return 0;
}

int pacer_conc_check(const struct dl_conc_table *t, char *why, size_t whylen)
{
	char sz[32];

	for (unsigned i = 0; i < t->n; i++) {
		const struct dl_conc_row *r = &t->row[i];

		pacer_fmt_size(r->size, sz, sizeof(sz), "");
		if (!r->size || !r->n) {
			snprintf(why, whylen, "%s: a row needs a size above 0 and a point", sz);
			return -EINVAL;
		}
		for (unsigned j = 0; j < r->n; j++) {
			if (!r->k[j] || !r->bw[j] || (j && r->k[j] <= r->k[j - 1])) {
				snprintf(why, whylen,
					 "%s: points are K (requests in service, 1 or more) to a "
					 "bandwidth above 0",
					 sz);
				return -EINVAL;
			}
		}
	}
	return 0;
}

void pacer_conc_format(const struct dl_conc_table *t, char *buf, size_t len)
{
	char sz[32], bw[48], k[16];
	size_t o = 0;

	o = put(buf, len, o, "{");
	for (unsigned i = 0; i < t->n; i++) {
		const struct dl_conc_row *r = &t->row[i];

		pacer_fmt_size(r->size, sz, sizeof(sz), "");
		o = put(buf, len, o, i ? ", " : "");
		o = put(buf, len, o, sz);
		o = put(buf, len, o, ": {");
		for (unsigned j = 0; j < r->n; j++) {
			snprintf(k, sizeof(k), "%s%u: ", j ? ", " : "", r->k[j]);
			pacer_fmt_size(r->bw[j], bw, sizeof(bw), "/s");
			o = put(buf, len, o, k);
			o = put(buf, len, o, bw);
		}
		o = put(buf, len, o, "}");
	}
	put(buf, len, o, "}");
}

/* ---- the model ---- */

static double to_double_ns(uint64_t v) { return (double)v; }

static uint64_t round_ns(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709549568.0)
		return UINT64_MAX;
	return (uint64_t)(x + 0.5);
}

static uint64_t dev_latency(const struct dl_dev_model *m, uint64_t key, uint64_t i, uint64_t len)
{
	const struct dl_lat_sizes *t = &m->lat_size;
	const struct dl_size_lat *a, *b;
	double u, qa, qb, slope;
	unsigned j;

	if (!t->n || !len)
		return pacer_lat_sample(&m->latency, key, i);
	u = dl_prng_unit(key, i);
	if (len <= t->pt[0].size || t->n == 1)
		return pacer_lat_quantile(&t->pt[0].lat, u);
	for (j = 1; j < t->n && t->pt[j].size < len; j++)
		;
	if (j == t->n) {
		a = &t->pt[t->n - 2];
		b = &t->pt[t->n - 1];
		slope = (to_double_ns(pacer_lat_quantile(&b->lat, 0.5)) -
			 to_double_ns(pacer_lat_quantile(&a->lat, 0.5))) /
			(double)(b->size - a->size);
		if (slope < 0)
			slope = 0;
		return round_ns(to_double_ns(pacer_lat_quantile(&b->lat, u)) +
				slope * (double)(len - b->size));
	}
	a = &t->pt[j - 1];
	b = &t->pt[j];
	qa = to_double_ns(pacer_lat_quantile(&a->lat, u));
	qb = to_double_ns(pacer_lat_quantile(&b->lat, u));
	return round_ns(qa + (qb - qa) * (double)(len - a->size) / (double)(b->size - a->size));
}

/* The row's bandwidth with x requests in service. */
static double bw_at(const struct dl_conc_row *r, double x)
{
	if (x <= r->k[0])
		return (double)r->bw[0] * x / r->k[0];
	for (unsigned j = 0; j + 1 < r->n; j++) {
		if (x <= r->k[j + 1]) {
			double f = (x - r->k[j]) / (double)(r->k[j + 1] - r->k[j]);

			return (double)r->bw[j] + f * ((double)r->bw[j + 1] - (double)r->bw[j]);
		}
	}
	return (double)r->bw[r->n - 1];
}

static double row_factor(const struct dl_conc_row *r, uint32_t k)
{
	double g = (double)k * bw_at(r, 1) / bw_at(r, (double)k);

	return g < G_MIN ? G_MIN : g > G_MAX ? G_MAX : g;
}

double pacer_conc_factor(const struct dl_conc_table *t, uint64_t len, uint32_t k)
{
	const struct dl_conc_row *a, *b;
	double ga, gb, f;
	unsigned j;

	if (!t->n || k <= 1)
		return 1.0;
	if (len <= t->row[0].size)
		return row_factor(&t->row[0], k);
	for (j = 1; j < t->n && t->row[j].size < len; j++)
		;
	if (j == t->n)
		return row_factor(&t->row[t->n - 1], k);
	a = &t->row[j - 1];
	b = &t->row[j];
	ga = row_factor(a, k);
	gb = row_factor(b, k);
	f = (log2((double)len) - log2((double)a->size)) /
	    (log2((double)b->size) - log2((double)a->size));
	return ga + f * (gb - ga);
}

uint64_t pacer_dev_latency(const struct dl_dev_model *m, uint64_t key, uint64_t i, uint64_t len)
{
	uint64_t lat = dev_latency(m, key, i, len);

	/* A long tail (lognormal, exponential, an extrapolated size) is cut
	 * where no request may wait longer. */
	return lat > DL_PACER_MAX_WAIT_NS ? DL_PACER_MAX_WAIT_NS : lat;
}
