/* The pacer's device model, driven by virtual clients on an injected clock
 * (no sleeping): each client submits its next request when the previous one
 * is due. Checks configured vs observed bandwidth, IOPS, latency percentiles,
 * queue depth, phases, live changes, options, statistics and thread safety
 * against the accuracy targets the fs-level benchmark uses. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/pacer.h"
#include "pacer_kv.h"
#include "tap.h"

#define MS ((uint64_t)1000000)
#define US ((uint64_t)1000)
#define SEC ((uint64_t)1000000000)
#define T0 (1000 * SEC) /* a monotonic clock is far from 0 */
#define MAXC 64

/* ---- helpers ---- */

struct sim {
	uint64_t start, end; /* first submission, last due */
	uint64_t bytes, n;
	uint64_t *lat;		   /* due - submit, per request (optional) */
	uint64_t *sub, *due, *svc; /* per request (optional) */
};

/* nclients closed-loop clients: each submits at the time its previous
 * request is due (the earliest client first), nreq requests in all. As in
 * the daemon, a request is completed (replied) at its due time, before any
 * later submission. */
static void run_clients(struct dl_pacer *p, unsigned nclients, enum dl_op_class cls, uint64_t len,
			size_t nreq, uint64_t t0, struct sim *s)
{
	uint64_t next[MAXC], off[MAXC] = {0};
	struct dl_pacer_req req[MAXC];
	struct dl_pacer_result res[MAXC];
	int pending[MAXC] = {0};

	for (unsigned i = 0; i < nclients; i++)
		next[i] = t0;
	s->start = t0;
	s->end = t0;
	s->bytes = 0;
	s->n = 0;
	for (size_t k = 0; k < nreq; k++) {
		unsigned c = 0;

		for (unsigned i = 1; i < nclients; i++)
			if (next[i] < next[c])
				c = i;
		for (unsigned i = 0; i < nclients; i++) {
			if (pending[i] && res[i].due_ns <= next[c]) {
				dl_pacer_complete(p, &req[i], &res[i], res[i].due_ns);
				pending[i] = 0;
			}
		}
		req[c] = (struct dl_pacer_req){.cls = cls, .file_id = c, .off = off[c], .len = len, .job = 1000 + c};
		if (dl_pacer_submit(p, &req[c], next[c], &res[c]))
			abort();
		pending[c] = 1;
		if (s->lat)
			s->lat[k] = res[c].due_ns - next[c];
		if (s->sub)
			s->sub[k] = next[c];
		if (s->due)
			s->due[k] = res[c].due_ns;
		if (s->svc)
			s->svc[k] = res[c].service_ns;
		off[c] += len;
		s->bytes += len;
		s->n++;
		if (res[c].due_ns > s->end)
			s->end = res[c].due_ns;
		next[c] = res[c].due_ns;
	}
	for (unsigned i = 0; i < nclients; i++)
		if (pending[i])
			dl_pacer_complete(p, &req[i], &res[i], res[i].due_ns);
}

static double rate(const struct sim *s, uint64_t units)
{
	return (double)units / ((double)(s->end - s->start) / 1e9);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double q)
{
	size_t r = (size_t)ceil(q * (double)n);

	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(r ? r : 1) - 1];
}

static double relerr(double got, double want) { return fabs(got / want - 1); }

/* A number from stats.json: the first `key` after each of the path words. */
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

/* Balanced {} and [] outside strings, nothing after the top-level object. */
static int json_balanced(const char *s)
{
	int depth = 0, in_str = 0, seen = 0;
	char stack[64];

	for (; *s; s++) {
		if (in_str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				in_str = 0;
			continue;
		}
		if (*s == '"') {
			in_str = 1;
		} else if (*s == '{' || *s == '[') {
			if (depth == 64 || (seen && !depth))
				return 0;
			stack[depth++] = *s;
			seen = 1;
		} else if (*s == '}' || *s == ']') {
			if (!depth || stack[--depth] != (*s == '}' ? '{' : '['))
				return 0;
		} else if (!depth && *s != ' ' && *s != '\n') {
			return 0;
		}
	}
	return seen && !depth && !in_str;
}

static char *stats(struct dl_pacer *p, uint64_t now)
{
	char *buf = NULL;
	size_t len = 0;

	if (dl_pacer_stats_json(p, now, &buf, &len) || strlen(buf) != len)
		abort();
	return buf;
}

/* ---- bandwidth ---- */

static void test_bandwidth(void)
{
	static const char *const rates[] = {"10MB/s", "100MB/s", "1GB/s"};
	static const double want[] = {10e6, 100e6, 1e9};
	static const unsigned clients[] = {1, 4, 16};
	char bw[64];
	struct sim s = {0};

	for (unsigned r = 0; r < 3; r++) {
		for (unsigned c = 0; c < 3; c++) {
			snprintf(bw, sizeof(bw), "read.bandwidth=%s", rates[r]);
			const char *kv[] = {bw, "read.burst=1MiB", NULL};
			struct dl_pacer *p = test_pacer(kv, T0, 1);

			run_clients(p, clients[c], DL_OP_READ, 1 << 20, 100000, T0, &s);
			double got = rate(&s, s.bytes);

			CHECK(relerr(got, want[r]) < 0.03, "%s, %u clients: %.4g B/s", rates[r],
			      clients[c], got);
			/* The model is exact in its own terms: far inside 3%. */
			CHECK(relerr(got, want[r]) < 1e-4, "%s, %u clients: %.6g B/s not exact",
			      rates[r], clients[c], got);
			dl_pacer_free(p);
		}
	}
	/* Requests with latency and a queue: the pipe is still the limit. */
	{
		const char *kv[] = {"read.bandwidth=1GB/s", "read.queue_depth=4",
				    "read.latency=100us", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);

		run_clients(p, 16, DL_OP_READ, 1 << 20, 100000, T0, &s);
		CHECK(relerr(rate(&s, s.bytes), 1e9) < 1e-3, "1GB/s qd4 100us: %.6g",
		      rate(&s, s.bytes));
		dl_pacer_free(p);
	}
	/* MiB/s is 2^20 bytes/s. */
	{
		const char *kv[] = {"read.bandwidth=64MiB/s", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);

		run_clients(p, 4, DL_OP_READ, 128 << 10, 50000, T0, &s);
		CHECK(relerr(rate(&s, s.bytes), 64.0 * (1 << 20)) < 1e-4, "64MiB/s: %.6g",
		      rate(&s, s.bytes));
		dl_pacer_free(p);
	}
	/* The burst: after idle time, up to `burst` bytes pass at once, no more. */
	{
		const char *kv[] = {"read.bandwidth=100MB/s", "read.burst=4MiB", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);
		struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 1, .off = 0, .len = 1 << 20, .job = 1};
		struct dl_pacer_result res;
		uint64_t t = T0 + 10 * SEC; /* long idle: the bucket is full */

		for (int i = 0; i < 4; i++) {
			dl_pacer_submit(p, &r, t, &res);
			CHECK(res.due_ns == t, "burst request %d due +%" PRIu64 " ns", i,
			      res.due_ns - t);
		}
		dl_pacer_submit(p, &r, t, &res);
		/* 1 MiB at 100 MB/s: 10.48576 ms. */
		CHECK(res.due_ns - t == 10485760, "after the burst: +%" PRIu64, res.due_ns - t);
		/* At creation the bucket is empty: no free burst at mount time. */
		dl_pacer_free(p);
		p = test_pacer(kv, T0, 1);
		dl_pacer_submit(p, &r, T0, &res);
		CHECK(res.due_ns - T0 == 10485760, "first request at creation: +%" PRIu64,
		      res.due_ns - T0);
		dl_pacer_free(p);
	}
}

/* ---- latency ---- */

static void check_lat(const char *spec, unsigned nclients, double p50, double p99)
{
	enum { N = 100000 };
	char kv0[128];
	const char *kv[] = {kv0, NULL};
	struct sim s = {0};
	struct dl_pacer *p;
	char *js;

	snprintf(kv0, sizeof(kv0), "read.latency=%s", spec);
	p = test_pacer(kv, T0, 7);
	s.lat = malloc(N * sizeof(*s.lat));
	run_clients(p, nclients, DL_OP_READ, 4096, N, T0, &s);
	double g50 = (double)pct(s.lat, N, 0.5), g99 = (double)pct(s.lat, N, 0.99);

	CHECK(relerr(g50, p50) < 0.05, "%s x%u: p50 %.0f ns, want %.0f", spec, nclients, g50, p50);
	CHECK(relerr(g99, p99) < 0.10, "%s x%u: p99 %.0f ns, want %.0f", spec, nclients, g99, p99);
	/* The daemon's own figures (histogram of replied - submitted). */
	js = stats(p, s.end);
	const char *path[] = {"classes", "read", "latency_us", NULL};
	double h50 = json_num(js, path, "p50") * 1e3, h99 = json_num(js, path, "p99") * 1e3;

	CHECK(relerr(h50, g50) < 0.03 && relerr(h99, g99) < 0.03,
	      "%s: stats.json p50 %.0f p99 %.0f vs exact %.0f %.0f", spec, h50, h99, g50, g99);
	CHECK(relerr(h50, p50) < 0.05 && relerr(h99, p99) < 0.10,
	      "%s: stats.json p50 %.0f p99 %.0f vs configured", spec, h50, h99);
	printf("pacer: latency %-22s x%-2u p50 %8.0f ns  p99 %8.0f ns  (stats.json %8.0f %8.0f)\n",
	       spec, nclients, g50, g99, h50, h99);
	free(js);
	free(s.lat);
	dl_pacer_free(p);
}

static void test_latency(void)
{
	for (unsigned c = 1; c <= 16; c *= 4) {
		check_lat("200us", c, 200e3, 200e3);
		check_lat("1ms", c, 1e6, 1e6);
		check_lat("lognormal(1ms, 10ms)", c, 1e6, 10e6);
	}
	/* Constant latency is exact for every request. */
	{
		const char *kv[] = {"read.latency=constant(150us)", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);
		struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 1, .off = 0, .len = 4096, .job = 1};
		struct dl_pacer_result res;
		int bad = 0;

		for (uint64_t i = 0; i < 1000; i++) {
			dl_pacer_submit(p, &r, T0 + i * 7, &res);
			bad += res.due_ns != T0 + i * 7 + 150 * US || res.queue_ns ||
			       res.service_ns != 150 * US;
		}
		CHECK(!bad, "constant latency: %d requests off", bad);
		dl_pacer_free(p);
	}
}

/* Draw statistics of the other distributions (through the whole model). */
static void draws(const char *spec, uint64_t *v, size_t n)
{
	char kv0[512];
	const char *kv[] = {kv0, NULL};
	struct sim s = {0};
	struct dl_pacer *p;

	snprintf(kv0, sizeof(kv0), "meta.latency=%s", spec);
	p = test_pacer(kv, T0, 11);
	if (!p) {
		CHECK(0, "pacer with %s", spec);
		memset(v, 0, n * sizeof(*v));
		return;
	}
	s.lat = v;
	run_clients(p, 8, DL_OP_META, 0, n, T0, &s);
	dl_pacer_free(p);
}

static void moments(const uint64_t *v, size_t n, double *mean, double *sd)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)v[i];
	*mean = s / (double)n;
	for (size_t i = 0; i < n; i++)
		s2 += ((double)v[i] - *mean) * ((double)v[i] - *mean);
	*sd = sqrt(s2 / (double)n);
}

static void test_distributions(void)
{
	enum { N = 100000 };
	uint64_t *v = malloc(N * sizeof(*v));
	double mean, sd;
	char path[64], spec[128];
	FILE *f;
	size_t c1 = 0, c2 = 0, c3 = 0;

	draws("uniform(100us, 300us)", v, N);
	moments(v, N, &mean, &sd);
	qsort(v, N, sizeof(*v), cmp_u64);
	CHECK(v[0] >= 100 * US && v[N - 1] <= 300 * US, "uniform range %" PRIu64 "..%" PRIu64, v[0],
	      v[N - 1]);
	CHECK(relerr(mean, 200e3) < 0.01 && relerr(sd, 200e3 / sqrt(12)) < 0.02,
	      "uniform mean %.0f sd %.0f", mean, sd);

	draws("normal(1ms, 100us)", v, N);
	moments(v, N, &mean, &sd);
	CHECK(relerr(mean, 1e6) < 0.01 && relerr(sd, 1e5) < 0.02, "normal mean %.0f sd %.0f", mean,
	      sd);

	draws("exponential(1ms)", v, N);
	moments(v, N, &mean, &sd);
	CHECK(relerr(mean, 1e6) < 0.02 && relerr(sd, 1e6) < 0.03, "exponential mean %.0f sd %.0f",
	      mean, sd);
	CHECK(relerr((double)pct(v, N, 0.5), 1e6 * log(2)) < 0.03, "exponential median %" PRIu64,
	      pct(v, N, 0.5));

	/* Lognormal: the median and p99 it was given. */
	draws("lognormal(500us, 2ms)", v, N);
	CHECK(relerr((double)pct(v, N, 0.5), 500e3) < 0.02 &&
		  relerr((double)pct(v, N, 0.99), 2e6) < 0.05,
	      "lognormal(500us, 2ms): p50 %" PRIu64 " p99 %" PRIu64, pct(v, N, 0.5),
	      pct(v, N, 0.99));

	/* Empirical: values come back with their weights' frequencies. */
	snprintf(path, sizeof(path), "/tmp/dliofs-test-lat-%d.txt", (int)getpid());
	f = fopen(path, "w");
	fprintf(f, "# measured\n100us 1\n\n200 us, 2  # spaced unit, comma\n1ms\nunit us\n"
		   "1000 0\n");
	fclose(f);
	snprintf(spec, sizeof(spec), "empirical(%s)", path);
	draws(spec, v, N);
	for (size_t i = 0; i < N; i++) {
		c1 += v[i] == 100 * US;
		c2 += v[i] == 200 * US;
		c3 += v[i] == 1 * MS;
	}
	CHECK(c1 + c2 + c3 == N, "empirical: only listed values (%zu of %d)", c1 + c2 + c3, N);
	CHECK(fabs((double)c1 / N - 0.25) < 0.01 && fabs((double)c2 / N - 0.5) < 0.01 &&
		  fabs((double)c3 / N - 0.25) < 0.01,
	      "empirical frequencies %zu %zu %zu", c1, c2, c3);
	/* Replaying a measured distribution: its percentiles come back. */
	f = fopen(path, "w");
	fprintf(f, "unit us\n");
	for (int i = 1; i <= 1000; i++)
		fprintf(f, "%d\n", i * i);
	fclose(f);
	draws(spec, v, N);
	CHECK(relerr((double)pct(v, N, 0.5), 500 * 500e3) < 0.02 &&
		  relerr((double)pct(v, N, 0.99), 990 * 990e3) < 0.02,
	      "empirical replay p50 %" PRIu64 " p99 %" PRIu64, pct(v, N, 0.5), pct(v, N, 0.99));
	/* Errors name the file and line. */
	{
		struct dl_pacer_cfg cfg;
		char err[512];

		dl_pacer_cfg_init(&cfg);
		f = fopen(path, "w");
		fprintf(f, "100us\n150\n");
		fclose(f);
		CHECK(dl_pacer_cfg_set(&cfg, "read.latency", spec, err, sizeof(err)) == -EINVAL &&
			  strstr(err, "read.latency") && strstr(err, ":2:"),
		      "bare number without unit: %s", err);
		f = fopen(path, "w");
		fprintf(f, "100us -3\n");
		fclose(f);
		CHECK(dl_pacer_cfg_set(&cfg, "read.latency", spec, err, sizeof(err)) == -EINVAL &&
			  strstr(err, "weight"),
		      "negative weight: %s", err);
		f = fopen(path, "w");
		fclose(f);
		CHECK(dl_pacer_cfg_set(&cfg, "read.latency", spec, err, sizeof(err)) == -EINVAL &&
			  strstr(err, "no latency values"),
		      "empty file: %s", err);
		CHECK(dl_pacer_cfg_set(&cfg, "read.latency", "empirical(/nonexistent/x)", err,
				       sizeof(err)) == -EINVAL &&
			  strstr(err, "/nonexistent/x"),
		      "missing file: %s", err);
		CHECK(cfg.m[DL_OP_READ].latency.kind == DL_LAT_NONE, "failed sets changed nothing");
		dl_pacer_cfg_free(&cfg);
	}
	unlink(path);
	free(v);
}

/* ---- IOPS ---- */

static void test_iops(void)
{
	static const char *const caps[] = {"1k", "20k"};
	static const double want[] = {1000, 20000};
	char kv0[64];
	struct sim s = {0};

	for (unsigned i = 0; i < 2; i++) {
		for (unsigned c = 1; c <= 16; c *= 4) {
			snprintf(kv0, sizeof(kv0), "read.iops=%s", caps[i]);
			const char *kv[] = {kv0, NULL};
			struct dl_pacer *p = test_pacer(kv, T0, 1);

			run_clients(p, c, DL_OP_READ, 4096, 100000, T0, &s);
			CHECK(relerr(rate(&s, s.n), want[i]) < 0.03, "iops %s x%u: %.6g", caps[i],
			      c, rate(&s, s.n));
			CHECK(relerr(rate(&s, s.n), want[i]) < 1e-4, "iops %s x%u: %.6g not exact",
			      caps[i], c, rate(&s, s.n));
			dl_pacer_free(p);
		}
	}
	/* A cap that does not divide 10^9: still exact over time. */
	{
		const char *kv[] = {"read.iops=3", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);

		run_clients(p, 4, DL_OP_READ, 4096, 3001, T0, &s);
		CHECK(s.end - s.start == 1000 * SEC, "3 iops: 3001 requests over %" PRIu64 " ns",
		      s.end - s.start);
		dl_pacer_free(p);
	}
	/* With latency, one client cannot reach the cap; 16 can. */
	{
		const char *kv[] = {"read.iops=20k", "read.latency=500us", NULL};
		struct dl_pacer *p = test_pacer(kv, T0, 1);

		run_clients(p, 1, DL_OP_READ, 4096, 10000, T0, &s);
		CHECK(relerr(rate(&s, s.n), 2000) < 1e-3, "1 client at 500us: %.6g", rate(&s, s.n));
		dl_pacer_free(p);
		p = test_pacer(kv, T0, 1);
		run_clients(p, 16, DL_OP_READ, 4096, 100000, T0, &s);
		CHECK(relerr(rate(&s, s.n), 20000) < 1e-3, "16 clients at 500us: %.6g",
		      rate(&s, s.n));
		dl_pacer_free(p);
	}
}

/* ---- queue depth ---- */

struct ev {
	uint64_t t;
	int d;
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	/* Ends before starts at the same instant: a slot is reused at once. */
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d - y->d;
}

static void test_queue_depth(void)
{
	enum { N = 40000 };
	const char *kv[] = {"read.queue_depth=4", "read.latency=1ms", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct sim s = {0};
	struct ev *ev = malloc(2 * N * sizeof(*ev));
	int cur = 0, peak = 0, fifo = 1;
	uint64_t prev_start = 0;
	char *js;

	s.sub = malloc(N * sizeof(uint64_t));
	s.due = malloc(N * sizeof(uint64_t));
	s.svc = malloc(N * sizeof(uint64_t));
	run_clients(p, 16, DL_OP_READ, 4096, N, T0, &s);
	/* 4 slots of 1 ms each: 4000 requests/s. */
	CHECK(relerr(rate(&s, s.n), 4000) < 1e-3, "qd4 x 1ms: %.6g req/s", rate(&s, s.n));
	for (size_t i = 0; i < N; i++) {
		uint64_t start = s.due[i] - s.svc[i];

		ev[2 * i] = (struct ev){start, 1};
		ev[2 * i + 1] = (struct ev){s.due[i], -1};
		fifo &= start >= prev_start && start >= s.sub[i];
		prev_start = start;
	}
	CHECK(fifo, "requests leave the queue in arrival order");
	qsort(ev, 2 * N, sizeof(*ev), cmp_ev);
	for (size_t i = 0; i < 2 * N; i++) {
		cur += ev[i].d;
		if (cur > peak)
			peak = cur;
	}
	CHECK(peak == 4, "at most queue_depth in service: peak %d", peak);
	js = stats(p, s.end);
	{
		const char *rd[] = {"classes", "read", NULL};
		const char *svc[] = {"classes", "read", "service_us", NULL};
		const char *q[] = {"classes", "read", "queue_us", NULL};
		const char *lat[] = {"classes", "read", "latency_us", NULL};

		/* The daemon sees all 16 in flight; the device serves 4. */
		CHECK(json_num(js, rd, "in_flight_max") == 16, "in_flight_max %g",
		      json_num(js, rd, "in_flight_max"));
		CHECK(json_num(js, rd, "in_flight") == 0, "in_flight %g",
		      json_num(js, rd, "in_flight"));
		CHECK(relerr(json_num(js, svc, "p50"), 1000) < 0.02, "service p50 %g us",
		      json_num(js, svc, "p50"));
		/* 16 clients, 4 slots: each waits for 3 others' 1 ms. */
		CHECK(relerr(json_num(js, q, "p50"), 3000) < 0.03, "queue p50 %g us",
		      json_num(js, q, "p50"));
		CHECK(relerr(json_num(js, lat, "p50"), 4000) < 0.03, "latency p50 %g us",
		      json_num(js, lat, "p50"));
	}
	free(js);
	free(ev);
	free(s.sub);
	free(s.due);
	free(s.svc);
	dl_pacer_free(p);
}

/* ---- phases ---- */

static void test_phases(void)
{
	enum { N = 200000 };
	const char *kv[] = {"read.bandwidth=1GB/s",
			    "phases.0.duration=30s",
			    "phases.0.read.bandwidth=2GB/s",
			    "phases.1.duration=10s",
			    "phases.1.read.bandwidth=200MB/s",
			    NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct sim s = {0};
	double bytes[2] = {0, 0}, secs[2] = {0, 0};
	uint64_t cycles;

	s.due = malloc(N * sizeof(uint64_t));
	run_clients(p, 8, DL_OP_READ, 1 << 20, N, T0, &s);
	/* Bytes by the phase in which they completed, over whole cycles. */
	cycles = (s.end - T0) / (40 * SEC);
	for (size_t i = 0; i < N; i++) {
		uint64_t off = s.due[i] - T0;

		if (off >= cycles * 40 * SEC)
			continue;
		bytes[off % (40 * SEC) >= 30 * SEC] += 1 << 20;
	}
	secs[0] = 30.0 * (double)cycles;
	secs[1] = 10.0 * (double)cycles;
	CHECK(cycles >= 2, "ran %" PRIu64 " cycles", cycles);
	CHECK(relerr(bytes[0] / secs[0], 2e9) < 0.03, "phase 0: %.4g B/s", bytes[0] / secs[0]);
	CHECK(relerr(bytes[1] / secs[1], 200e6) < 0.03, "phase 1: %.4g B/s", bytes[1] / secs[1]);
	CHECK(relerr((bytes[0] + bytes[1]) / (secs[0] + secs[1]), 1.55e9) < 0.01,
	      "cycle average %.4g B/s", (bytes[0] + bytes[1]) / (secs[0] + secs[1]));
	/* The current phase shows in stats.json. */
	{
		char *js = stats(p, T0 + 35 * SEC);
		const char *top[] = {NULL};

		CHECK(json_num(js, top, "phase") == 1 && json_num(js, top, "phases") == 2,
		      "stats phase %g of %g", json_num(js, top, "phase"),
		      json_num(js, top, "phases"));
		free(js);
	}
	free(s.due);
	dl_pacer_free(p);

	/* A request uses the phase current at its submission: latency too. */
	{
		const char *kv2[] = {"phases.0.duration=1s", "phases.0.meta.latency=1ms",
				     "phases.1.duration=1s", "phases.1.meta.latency=5ms", NULL};
		struct dl_pacer_req r = {.cls = DL_OP_META, .file_id = 0, .off = 0, .len = 0, .job = 1};
		struct dl_pacer_result res;

		p = test_pacer(kv2, T0, 1);
		dl_pacer_submit(p, &r, T0 + 999 * MS, &res);
		CHECK(res.due_ns == T0 + 1000 * MS, "end of phase 0: +%" PRIu64, res.due_ns - T0);
		dl_pacer_submit(p, &r, T0 + 1000 * MS, &res);
		CHECK(res.due_ns == T0 + 1005 * MS, "start of phase 1: +%" PRIu64, res.due_ns - T0);
		dl_pacer_submit(p, &r, T0 + 2500 * MS, &res);
		CHECK(res.due_ns == T0 + 2501 * MS, "phases repeat: +%" PRIu64, res.due_ns - T0);
		dl_pacer_free(p);
	}
	/* Queue depth changing between phases. */
	{
		const char *kv3[] = {"read.latency=1ms",
				     "phases.0.duration=10s",
				     "phases.0.read.queue_depth=2",
				     "phases.1.duration=10s",
				     "phases.1.read.queue_depth=8",
				     NULL};
		uint64_t *due = malloc(100000 * sizeof(uint64_t));
		double n0 = 0, n1 = 0;

		p = test_pacer(kv3, T0, 1);
		s.due = due;
		run_clients(p, 16, DL_OP_READ, 4096, 100000, T0, &s);
		for (size_t i = 0; i < 100000; i++) {
			uint64_t off = due[i] - T0;

			if (off >= 20 * SEC)
				continue;
			if (off < 10 * SEC)
				n0++;
			else
				n1++;
		}
		CHECK(relerr(n0 / 10, 2000) < 0.01 && relerr(n1 / 10, 8000) < 0.01,
		      "qd 2 then 8 at 1ms: %.0f and %.0f req/s", n0 / 10, n1 / 10);
		free(due);
		dl_pacer_free(p);
	}
}

/* ---- combined limits, metadata and writes, disabled shaping ---- */

static void test_classes(void)
{
	struct sim s = {0};
	const char *kv[] = {"read.bandwidth=100MB/s", "read.iops=1k",	  "write.bandwidth=50MB/s",
			    "meta.iops=500",	      "meta.latency=2ms", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);

	/* 4 KiB reads: IOPS binds (1000/s, 4 MB/s); 1 MiB reads: bandwidth. */
	run_clients(p, 8, DL_OP_READ, 4096, 20000, T0, &s);
	CHECK(relerr(rate(&s, s.n), 1000) < 1e-3, "iops binds: %.6g", rate(&s, s.n));
	run_clients(p, 8, DL_OP_READ, 1 << 20, 20000, s.end + 10 * SEC, &s);
	CHECK(relerr(rate(&s, s.bytes), 100e6) < 1e-3, "bandwidth binds: %.6g", rate(&s, s.bytes));
	/* Classes are independent. */
	run_clients(p, 8, DL_OP_WRITE, 1 << 20, 20000, T0, &s);
	CHECK(relerr(rate(&s, s.bytes), 50e6) < 1e-3, "writes: %.6g", rate(&s, s.bytes));
	run_clients(p, 8, DL_OP_META, 0, 20000, T0, &s);
	CHECK(relerr(rate(&s, s.n), 500) < 1e-3, "meta: %.6g", rate(&s, s.n));
	dl_pacer_free(p);

	/* enabled=false: reply at once, still count. */
	{
		const char *kv2[] = {"read.bandwidth=1MB/s", "read.latency=1s", "enabled=false",
				     NULL};
		struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 1, .off = 0, .len = 1 << 20, .job = 1};
		struct dl_pacer_result res;
		char *js;
		const char *rd[] = {"classes", "read", NULL};

		p = test_pacer(kv2, T0, 1);
		dl_pacer_submit(p, &r, T0 + 5, &res);
		CHECK(res.due_ns == T0 + 5 && !res.queue_ns && !res.service_ns,
		      "disabled: due +%" PRIu64, res.due_ns - T0);
		js = stats(p, T0 + SEC);
		CHECK(json_num(js, rd, "ops") == 1 && json_num(js, rd, "bytes") == 1 << 20,
		      "disabled still counts");
		free(js);
		dl_pacer_free(p);
	}
	/* Bad requests. */
	{
		struct dl_pacer_cfg cfg;
		struct dl_pacer_req r = {.cls = DL_OP__COUNT, .file_id = 1, .off = 0, .len = 1, .job = 1};
		struct dl_pacer_result res;

		dl_pacer_cfg_init(&cfg);
		dl_pacer_new(&cfg, T0, 1, &p);
		CHECK(dl_pacer_submit(p, &r, T0, &res) == -EINVAL, "bad class");
		dl_pacer_free(p);
		cfg.cache.block = 0;
		CHECK(dl_pacer_new(&cfg, T0, 1, &p) == -EINVAL, "new refuses a bad config");
	}
}

/* ---- determinism ---- */

static void test_determinism(void)
{
	const char *kv[] = {"read.latency=lognormal(1ms,10ms)", "read.queue_depth=8",
			    "read.bandwidth=500MB/s", NULL};
	struct dl_pacer *a = test_pacer(kv, T0, 99), *b = test_pacer(kv, T0, 99),
			*c = test_pacer(kv, T0, 100);
	struct sim sa = {0}, sb = {0}, sc = {0};
	enum { N = 20000 };

	sa.due = malloc(N * sizeof(uint64_t));
	sb.due = malloc(N * sizeof(uint64_t));
	sc.due = malloc(N * sizeof(uint64_t));
	run_clients(a, 8, DL_OP_READ, 65536, N, T0, &sa);
	run_clients(b, 8, DL_OP_READ, 65536, N, T0, &sb);
	run_clients(c, 8, DL_OP_READ, 65536, N, T0, &sc);
	CHECK(!memcmp(sa.due, sb.due, N * sizeof(uint64_t)), "same seed, same schedule");
	CHECK(memcmp(sa.due, sc.due, N * sizeof(uint64_t)), "another seed, another schedule");
	free(sa.due);
	free(sb.due);
	free(sc.due);
	dl_pacer_free(a);
	dl_pacer_free(b);
	dl_pacer_free(c);
}

/* ---- options ---- */

/* Read a dump back the way the config parser does: nested mappings and the
 * phases sequence become dotted keys. */
static int undump(struct dl_pacer_cfg *cfg, const char *text)
{
	char names[16][64], line[1024], key[2048], err[512], *s, *colon, *val;
	int ind[16], seq[16], depth = 0, n;
	const char *p = text;

	while (*p) {
		size_t ll = strcspn(p, "\n");

		if (ll >= sizeof(line))
			return -1;
		memcpy(line, p, ll);
		line[ll] = '\0';
		p += ll + (p[ll] == '\n');
		for (n = 0; line[n] == ' '; n++)
			;
		s = line + n;
		if (!*s || *s == '#')
			continue;
		while (depth && ind[depth - 1] >= n)
			depth--;
		if (!strncmp(s, "- ", 2)) {
			snprintf(names[depth], sizeof(names[depth]), "%d",
				 depth ? seq[depth - 1]++ : 0);
			ind[depth] = n;
			seq[depth++] = 0;
			s += 2;
			n += 2;
		}
		colon = strchr(s, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		val = colon[1] ? colon + 2 : colon + 1;
		if (!*val) {
			snprintf(names[depth], sizeof(names[depth]), "%.63s", s);
			ind[depth] = n;
			seq[depth++] = 0;
			continue;
		}
		if (!strcmp(val, "[]"))
			continue;
		key[0] = '\0';
		for (int i = 0; i < depth; i++)
			snprintf(key + strlen(key), sizeof(key) - strlen(key), "%.63s.", names[i]);
		snprintf(key + strlen(key), sizeof(key) - strlen(key), "%.1000s", s);
		if (*val == '"') {
			val++;
			val[strlen(val) - 1] = '\0';
		}
		if (dl_pacer_cfg_set(cfg, key, val, err, sizeof(err))) {
			fprintf(stderr, "undump %s=%s: %s\n", key, val, err);
			return -1;
		}
	}
	return 0;
}

static void test_options(void)
{
	struct dl_pacer_cfg cfg, back;
	char err[1024], path[64], spec[128], *d1, *d2, *help = NULL;
	size_t hlen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/dliofs-test-opt-%d.txt", (int)getpid());
	f = fopen(path, "w");
	fprintf(f, "100us\n2ms 3\n");
	fclose(f);
	snprintf(spec, sizeof(spec), "empirical(%s)", path);
	const char *kv[] = {"profile=nvme-local",
			    "read.bandwidth=1.5GB/s",
			    "read.burst=4MiB",
			    "read.iops=20k",
			    "read.queue_depth=32",
			    "read.latency=lognormal(1ms, 10ms)",
			    "write.bandwidth=512MiB/s",
			    "write.latency=uniform(100us,300us)",
			    "meta.latency=exponential(150us)",
			    "meta.iops=1234",
			    "phases.0.duration=30s",
			    "phases.0.read.bandwidth=2GB/s",
			    "phases.1.duration=1500ms",
			    "phases.1.read.bandwidth=200MB/s",
			    "phases.1.write.latency=normal(1ms,100us)",
			    "cache.policy=minio",
			    "cache.size=200GiB",
			    "cache.block=4MiB",
			    "cache.hit_bandwidth=12GB/s",
			    NULL};

	CHECK(test_pacer_cfg(&cfg, kv) == 0, "config from keys");
	CHECK(cfg.m[DL_OP_READ].bandwidth == 1500000000ULL, "1.5GB/s = %" PRIu64,
	      cfg.m[DL_OP_READ].bandwidth);
	CHECK(cfg.m[DL_OP_WRITE].bandwidth == 512ULL << 20, "512MiB/s = %" PRIu64,
	      cfg.m[DL_OP_WRITE].bandwidth);
	CHECK(cfg.m[DL_OP_READ].iops == 20000 && cfg.m[DL_OP_READ].queue_depth == 32, "iops/qd");
	CHECK(cfg.m[DL_OP_READ].latency.kind == DL_LAT_LOGNORMAL &&
		  cfg.m[DL_OP_READ].latency.a_ns == MS && cfg.m[DL_OP_READ].latency.b_ns == 10 * MS,
	      "lognormal parsed");
	CHECK(cfg.nphases == 2 && cfg.phases[1].duration_ns == 1500 * MS &&
		  cfg.phases[0].m[DL_OP_READ].bandwidth == 2000000000ULL,
	      "phases parsed");
	/* Phases start as copies of the constant model. */
	CHECK(cfg.phases[0].m[DL_OP_READ].iops == 20000 &&
		  cfg.phases[1].m[DL_OP_META].latency.kind == DL_LAT_EXP,
	      "phases inherit");
	CHECK(cfg.cache.policy == DL_CACHE_MINIO && cfg.cache.size == 200ULL << 30 &&
		  cfg.cache.block == 4ULL << 20 && cfg.cache.hit_bandwidth == 12000000000ULL,
	      "cache parsed");

	/* Dump, read back, dump again: identical; and the values are exact. */
	d1 = test_pacer_dump(&cfg);
	dl_pacer_cfg_init(&back);
	CHECK(undump(&back, d1) == 0, "dump reads back");
	d2 = test_pacer_dump(&back);
	CHECK(!strcmp(d1, d2), "dump round trip:\n%s\n---\n%s", d1, d2);
	CHECK(strstr(d1, "bandwidth: 1500MB/s") && strstr(d1, "bandwidth: 512MiB/s") &&
		  strstr(d1, "latency: lognormal(1ms, 10ms)") && strstr(d1, "iops: 20k") &&
		  strstr(d1, "duration: 1500ms") && strstr(d1, "policy: minio") &&
		  strstr(d1, "size: 200GiB") && strstr(d1, "profile: \"nvme-local\"") &&
		  strstr(d1, "  - duration: 30s") && strstr(d1, "empirical(") == NULL,
	      "dump text:\n%s", d1);
	free(d1);
	free(d2);
	dl_pacer_cfg_free(&back);

	/* Deep copy: the copy survives the original's free. */
	CHECK(dl_pacer_cfg_set(&cfg, "meta.latency", spec, err, sizeof(err)) == 0, "%s", err);
	CHECK(cfg.phases[0].m[DL_OP_META].latency.kind == DL_LAT_EMPIRICAL,
	      "phases follow a constant-model key they did not set");
	CHECK(dl_pacer_cfg_copy(&back, &cfg) == 0, "copy");
	d1 = test_pacer_dump(&cfg);
	dl_pacer_cfg_free(&cfg);
	d2 = test_pacer_dump(&back);
	CHECK(!strcmp(d1, d2) && strstr(d2, spec), "copy dumps the same");
	CHECK(back.m[DL_OP_META].latency.n == 2 &&
		  back.m[DL_OP_META].latency.values_ns[1] == 2 * MS &&
		  back.phases[1].m[DL_OP_META].latency.cdf[0] == 0.25,
	      "empirical table copied");
	free(d1);
	free(d2);

	/* Phases keep what they set themselves. */
	CHECK(dl_pacer_cfg_set(&back, "read.bandwidth", "3GB/s", err, sizeof(err)) == 0, "%s", err);
	CHECK(back.phases[0].m[DL_OP_READ].bandwidth == 2000000000ULL &&
		  back.phases[1].m[DL_OP_READ].bandwidth == 200000000ULL,
	      "phase bandwidths kept");
	CHECK(dl_pacer_cfg_set(&back, "read.iops", "unlimited", err, sizeof(err)) == 0 &&
		  back.phases[0].m[DL_OP_READ].iops == 0 && back.m[DL_OP_READ].iops == 0,
	      "unlimited, inherited");

	/* Errors: the key and what was expected; nothing changes. */
	test_pacer_expect_err(&back, "read.bandwith", "1GB/s", "unknown pacer key");
	test_pacer_expect_err(&back, "read.bandwidth", "fast", "expected a rate");
	test_pacer_expect_err(&back, "read.bandwidth", "500Mb/s", "bits");
	test_pacer_expect_err(&back, "read.bandwidth", "500MB", "/s");
	test_pacer_expect_err(&back, "read.burst", "-1", "negative");
	test_pacer_expect_err(&back, "read.iops", "1.5", "count");
	test_pacer_expect_err(&back, "read.queue_depth", "100000", "65536");
	test_pacer_expect_err(&back, "read.latency", "lognormal(10ms, 1ms)", "p99 >= median");
	test_pacer_expect_err(&back, "read.latency", "uniform(3ms, 1ms)", "max >= min");
	test_pacer_expect_err(&back, "read.latency", "gamma(1ms)", "unknown distribution");
	test_pacer_expect_err(&back, "read.latency", "uniform(1ms)", "2 arguments");
	test_pacer_expect_err(&back, "read.latency", "150", "unit");
	test_pacer_expect_err(&back, "write.latency", "normal(1ms, x)", "normal");
	test_pacer_expect_err(&back, "phases.5.duration", "1s", "phases.2");
	test_pacer_expect_err(&back, "phases.16.duration", "1s", "0 to 15");
	test_pacer_expect_err(&back, "phases.0.duration", "soon", "time");
	test_pacer_expect_err(&back, "phases.count", "17", "0 to 16");
	test_pacer_expect_err(&back, "cache.policy", "fifo", "lru");
	test_pacer_expect_err(&back, "enabled", "maybe", "true or false");
	test_pacer_expect_err(&back, "", "1", "unknown pacer key");

	/* Appending a phase with a bad value appends nothing. */
	CHECK(back.nphases == 2, "nphases %u", back.nphases);
	test_pacer_expect_err(&back, "phases.2.read.latency", "lognormal(5ms, 1ms)", "p99");
	CHECK(back.nphases == 2, "failed append left %u phases", back.nphases);

	/* Cross-key checks. */
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == 0, "valid: %s", err);
	CHECK(dl_pacer_cfg_set(&back, "phases.2.read.iops", "10", err, sizeof(err)) == 0, "append");
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "phases.2.duration"),
	      "phase without duration: %s", err);
	CHECK(dl_pacer_cfg_set(&back, "phases.count", "2", err, sizeof(err)) == 0 &&
		  back.nphases == 2 && back.phases[2].m[DL_OP_READ].iops == 0,
	      "phases.count truncates");
	dl_pacer_cfg_set(&back, "cache.policy", "lru", err, sizeof(err));
	dl_pacer_cfg_set(&back, "cache.block", "4KiB", err, sizeof(err));
	dl_pacer_cfg_set(&back, "cache.size", "1PiB", err, sizeof(err));
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == -EINVAL && strstr(err, "cache.size") &&
		  strstr(err, "64Mi") && strstr(err, "cache.block"),
	      "huge cache refused: %s", err);
	dl_pacer_cfg_set(&back, "cache.block", "1MiB", err, sizeof(err));
	dl_pacer_cfg_set(&back, "cache.size", "200GiB", err, sizeof(err));
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == 0, "200GiB/1MiB ok: %s", err);
	dl_pacer_cfg_set(&back, "cache.size", "64TiB", err, sizeof(err));
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == 0, "64Mi blocks ok: %s", err);
	dl_pacer_cfg_set(&back, "cache.size", "65TiB", err, sizeof(err));
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == -EINVAL, "64Mi+ blocks refused");
	/* The kernel policy keeps no metadata: any size is fine. */
	dl_pacer_cfg_set(&back, "cache.policy", "kernel", err, sizeof(err));
	CHECK(dl_pacer_cfg_check(&back, err, sizeof(err)) == 0, "kernel policy, any size");
	dl_pacer_cfg_free(&back);

	/* Help lists every key. */
	f = open_memstream(&help, &hlen);
	dl_pacer_cfg_help(f);
	fclose(f);
	CHECK(strstr(help, "bandwidth") && strstr(help, "burst") && strstr(help, "iops") &&
		  strstr(help, "queue_depth") && strstr(help, "latency") &&
		  strstr(help, "phases.N.duration") && strstr(help, "phases.count") &&
		  strstr(help, "cache.policy") && strstr(help, "cache.size") &&
		  strstr(help, "cache.block") && strstr(help, "cache.hit_bandwidth") &&
		  strstr(help, "enabled") && strstr(help, "empirical(FILE)") &&
		  strstr(help, "153us"),
	      "help:\n%s", help);
	free(help);
	unlink(path);
}

/* ---- live changes ---- */

/* Each key's kind comes from the options table (dlio-whatif's axes read it),
 * not from the key's last word: refill is a time, transfer a rate, a
 * latency_by_size point a time, a bandwidth_by_concurrency point a rate. */
static void test_key_kinds(void)
{
	static const struct {
		const char *key;
		enum dl_pacer_kind kind;
	} k[] = {
	    {"read.bandwidth", DL_PACER_K_RATE},
	    {"read.transfer", DL_PACER_K_RATE},
	    {"cache.hit_bandwidth", DL_PACER_K_RATE},
	    {"read.bandwidth_by_concurrency.1MiB.4", DL_PACER_K_RATE},
	    {"read.latency", DL_PACER_K_TIME},
	    {"meta.cached_latency", DL_PACER_K_TIME},
	    {"read.refill", DL_PACER_K_TIME},
	    {"phases.0.duration", DL_PACER_K_TIME},
	    {"share.window", DL_PACER_K_TIME},
	    {"read.latency_by_size.4KiB", DL_PACER_K_TIME},
	    {"read.burst", DL_PACER_K_SIZE},
	    {"cache.size", DL_PACER_K_SIZE},
	    {"blksize", DL_PACER_K_SIZE},
	    {"read.iops", DL_PACER_K_COUNT},
	    {"read.queue_depth", DL_PACER_K_COUNT},
	    {"read.lanes", DL_PACER_K_COUNT},
	    {"share.jobs.0.weight", DL_PACER_K_COUNT},
	    {"cache.policy", DL_PACER_K_OTHER},
	    {"enabled", DL_PACER_K_OTHER},
	    {"read.noise", DL_PACER_K_OTHER},
	    {"read.latency_by_size", DL_PACER_K_OTHER},
	};
	enum dl_pacer_kind got;

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		got = DL_PACER_K_OTHER + 1;
		CHECK(dl_pacer_key_kind(k[i].key, &got) == 0 && got == k[i].kind,
		      "key kind: %s is %d, got %d", k[i].key, (int)k[i].kind, (int)got);
	}
	CHECK(dl_pacer_key_kind("read.bandwith", &got) == -EINVAL, "key kind: unknown key refused");
}

static void test_live_set(void)
{
	const char *kv[] = {"read.bandwidth=100MB/s", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_cfg a, b;
	struct sim s = {0};
	char err[512], *d1, *d2;
	uint64_t t;

	run_clients(p, 4, DL_OP_READ, 1 << 20, 2000, T0, &s);
	CHECK(relerr(rate(&s, s.bytes), 100e6) < 1e-3, "before: %.6g", rate(&s, s.bytes));
	CHECK(dl_pacer_set(p, "read.bandwidth", "1GB/s", err, sizeof(err)) == 0, "set: %s", err);
	t = s.end;
	run_clients(p, 4, DL_OP_READ, 1 << 20, 20000, t, &s);
	CHECK(relerr(rate(&s, s.bytes), 1e9) < 1e-3, "after: %.6g", rate(&s, s.bytes));

	/* All or nothing. */
	dl_pacer_get_cfg(p, &a);
	d1 = test_pacer_dump(&a);
	CHECK(dl_pacer_set(p, "read.latency", "lognormal(2ms, 1ms)", err, sizeof(err)) == -EINVAL &&
		  strstr(err, "read.latency"),
	      "bad live value: %s", err);
	CHECK(dl_pacer_set(p, "nope", "1", err, sizeof(err)) == -EINVAL && strstr(err, "nope"),
	      "bad live key: %s", err);
	CHECK(dl_pacer_set(p, "phases.0.read.iops", "5", err, sizeof(err)) == -EINVAL &&
		  strstr(err, "phases.0.duration"),
	      "live set leaving an invalid config: %s", err);
	/* An emulated cache needs its size: alone, the policy is refused. */
	CHECK(dl_pacer_set(p, "cache.policy", "lru", err, sizeof(err)) == -EINVAL &&
		  strstr(err, "cache.size"),
	      "lru without a size: %s", err);
	CHECK(dl_pacer_set(p, "cache.size", "1MiB", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_set(p, "cache.policy", "lru", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_set(p, "cache.size", "1EiB", err, sizeof(err)) == -EINVAL &&
		  strstr(err, "cache.size"),
	      "live cache too big: %s", err);
	CHECK(dl_pacer_set(p, "cache.policy", "kernel", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_set(p, "cache.size", "0", err, sizeof(err)) == 0, "%s", err);
	dl_pacer_get_cfg(p, &b);
	d2 = test_pacer_dump(&b);
	CHECK(!strcmp(d1, d2), "failed live sets changed nothing:\n%s\n---\n%s", d1, d2);
	CHECK(strstr(d2, "bandwidth: 1GB/s") != NULL, "effective config shows the change");
	free(d1);
	free(d2);
	dl_pacer_cfg_free(&a);
	dl_pacer_cfg_free(&b);

	/* Queue depth and phases change live. */
	CHECK(dl_pacer_set(p, "read.bandwidth", "unlimited", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_set(p, "read.latency", "1ms", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_set(p, "read.queue_depth", "2", err, sizeof(err)) == 0, "%s", err);
	t = s.end + SEC;
	run_clients(p, 8, DL_OP_READ, 4096, 10000, t, &s);
	CHECK(relerr(rate(&s, s.n), 2000) < 1e-3, "qd 2 live: %.6g", rate(&s, s.n));
	CHECK(dl_pacer_set(p, "read.queue_depth", "8", err, sizeof(err)) == 0, "%s", err);
	t = s.end;
	run_clients(p, 8, DL_OP_READ, 4096, 10000, t, &s);
	CHECK(relerr(rate(&s, s.n), 8000) < 1e-3, "qd 8 live: %.6g", rate(&s, s.n));
	CHECK(dl_pacer_set(p, "enabled", "false", err, sizeof(err)) == 0, "%s", err);
	{
		struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 1, .off = 0, .len = 4096, .job = 1};
		struct dl_pacer_result res;

		dl_pacer_submit(p, &r, s.end, &res);
		CHECK(res.due_ns == s.end, "disabled live");
	}
	dl_pacer_free(p);
}

/* ---- statistics ---- */

static void test_stats(void)
{
	const char *kv[] = {"read.latency=100us", "write.latency=200us", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_result res;
	char *js;
	uint64_t t = T0, total = 0;
	double sum_ops = 0, other_ops;
	int npids = 0;

	/* 300 jobs: 64 in the table, the least recent folded into "other". */
	for (uint32_t pid = 1; pid <= 300; pid++) {
		for (uint32_t k = 0; k < pid % 5 + 1; k++) {
			struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = pid, .off = 0, .len = 1000, .job = pid};

			dl_pacer_submit(p, &r, t, &res);
			/* The caller's timer replies 3 us late. */
			dl_pacer_complete(p, &r, &res, res.due_ns + 3000);
			t += 1000;
			total++;
		}
	}
	{
		struct dl_pacer_req w = {.cls = DL_OP_WRITE, .file_id = 1, .off = 0, .len = 500, .job = 300};

		dl_pacer_submit(p, &w, t, &res); /* left in flight */
	}
	js = stats(p, t + SEC);
	CHECK(json_balanced(js), "stats.json balanced:\n%s", js);
	{
		const char *rd[] = {"classes", "read", NULL};
		const char *wr[] = {"classes", "write", NULL};
		const char *late[] = {"classes", "read", "lateness_us", NULL};
		const char *lat[] = {"classes", "read", "latency_us", NULL};
		const char *top[] = {NULL};
		const char *keys[] = {"\"classes\"",	   "\"read\"",		"\"write\"",
				      "\"meta\"",	   "\"latency_us\"",	"\"service_us\"",
				      "\"queue_us\"",	   "\"lateness_us\"",	"\"p99.9\"",
				      "\"in_flight_max\"", "\"cache\"",		"\"hit_bytes\"",
				      "\"jobs\"",	   "\"jobs_folded\"",	"\"elapsed_s\"",
				      "\"iops\"",	   "\"bandwidth_Bps\"", "\"nodev_ops\"", NULL};

		for (const char **k = keys; *k; k++)
			CHECK(strstr(js, *k), "stats.json has %s", *k);
		CHECK(json_num(js, rd, "ops") == (double)total, "read ops %g",
		      json_num(js, rd, "ops"));
		CHECK(json_num(js, rd, "bytes") == 1000.0 * (double)total, "read bytes");
		CHECK(json_num(js, wr, "in_flight") == 1 && json_num(js, wr, "ops") == 1,
		      "write in flight");
		CHECK(json_num(js, late, "p50") == 3 && json_num(js, late, "max") == 3,
		      "lateness 3us: %g", json_num(js, late, "p50"));
		CHECK(json_num(js, lat, "p50") == 103, "latency as replied: %g",
		      json_num(js, lat, "p50"));
		/* 300 jobs: 64 in the table, the least recent folded into "other". */
		CHECK(json_num(js, top, "jobs_folded") == 236, "236 jobs folded: %g",
		      json_num(js, top, "jobs_folded"));
		/* Per-job counts ("other" included) add up to the class totals. */
		for (const char *s = strstr(js, "\"jobs\""); (s = strstr(s, "{\"id\": ")); s++) {
			s = strstr(s, "\"read\": {\"ops\": ");
			sum_ops += strtod(s + 16, NULL);
			npids++;
		}
		CHECK(npids == 65, "64 jobs and other listed, got %d", npids);
		CHECK(sum_ops == (double)total, "per-job %g != %" PRIu64, sum_ops, total);
		(void)other_ops;
	}
	free(js);
	/* The most recent job is still in the table with its own counts. */
	js = stats(p, t + SEC);
	CHECK(strstr(js, "{\"id\": 300, ") != NULL &&
		  strstr(strstr(js, "{\"id\": 300, "), "\"read\": {\"ops\": 1, \"bytes\": 1000,") != NULL,
	      "job 300 listed");
	free(js);

	dl_pacer_stats_reset(p);
	js = stats(p, t + SEC);
	{
		const char *rd[] = {"classes", "read", NULL};
		const char *wr[] = {"classes", "write", NULL};

		/* Job 300 has a write in flight: it stays, with nothing counted. */
		const char *j300 = strstr(js, "{\"id\": 300, ");

		CHECK(json_num(js, rd, "ops") == 0 && json_num(js, wr, "in_flight") == 1 && j300 &&
			  !strstr(j300 + 1, "{\"id\": ") &&
			  strstr(j300, "\"read\": {\"ops\": 0, \"bytes\": 0,"),
		      "reset keeps in-flight only:\n%s", js);
	}
	free(js);
	dl_pacer_free(p);

	/* A profile name with quotes stays valid JSON. */
	{
		const char *kv2[] = {"profile=a\"b\\c", NULL};

		p = test_pacer(kv2, T0, 1);
		js = stats(p, T0);
		CHECK(json_balanced(js) && strstr(js, "\"a\\\"b\\\\c\""), "escaped profile");
		free(js);
		dl_pacer_free(p);
	}
}

/* ---- threads ---- */

struct thr {
	struct dl_pacer *p;
	int id;
	uint64_t ops;
	int bad;
};

static uint64_t mono(void)
{
	return dl_mono_ns();
}

static void *worker(void *arg)
{
	struct thr *t = arg;
	struct dl_pacer_result res;

	for (int i = 0; i < 50000; i++) {
		struct dl_pacer_req r = {.cls = (enum dl_op_class)(i % 3), .file_id = (uint64_t)i % 97, .off = (uint64_t)i * 4096, .len = i % 3 == 2 ? 0 : 65536, .job = (uint32_t)(t->id * 1000 + i % 50)};
		uint64_t now = mono();

		if (dl_pacer_submit(t->p, &r, now, &res) || res.due_ns < now)
			t->bad++;
		dl_pacer_complete(t->p, &r, &res, res.due_ns);
		t->ops++;
	}
	return NULL;
}

static void *changer(void *arg)
{
	struct thr *t = arg;
	char err[256], *js;
	size_t len;
	static const char *const vals[] = {"1GB/s", "unlimited", "2GB/s"};

	for (int i = 0; i < 300; i++) {
		if (dl_pacer_set(t->p, "read.bandwidth", vals[i % 3], err, sizeof(err)) ||
		    dl_pacer_set(t->p, "read.queue_depth", i % 2 ? "4" : "16", err, sizeof(err)) ||
		    dl_pacer_set(t->p, "cache.size", i % 2 ? "64MiB" : "128MiB", err, sizeof(err)))
			t->bad++;
		if (dl_pacer_stats_json(t->p, mono(), &js, &len) == 0)
			free(js);
		if (i % 50 == 0)
			dl_pacer_cache_drop(t->p);
	}
	return NULL;
}

static void test_threads(void)
{
	const char *kv[] = {"read.bandwidth=2GB/s",
			    "read.queue_depth=8",
			    "read.latency=50us",
			    "write.iops=100k",
			    "meta.latency=exponential(10us)",
			    "cache.policy=lru",
			    "cache.size=64MiB",
			    NULL};
	struct dl_pacer *p = test_pacer(kv, mono(), 1);
	struct thr t[5];
	pthread_t th[5];
	char *js;
	uint64_t total = 0;
	int bad = 0;

	for (int i = 0; i < 5; i++) {
		t[i] = (struct thr){p, i, 0, 0};
		pthread_create(&th[i], NULL, i < 4 ? worker : changer, &t[i]);
	}
	for (int i = 0; i < 5; i++) {
		pthread_join(th[i], NULL);
		total += t[i].ops;
		bad += t[i].bad;
	}
	CHECK(!bad, "%d errors in threads", bad);
	js = stats(p, mono());
	{
		const char *rd[] = {"classes", "read", NULL};
		const char *wr[] = {"classes", "write", NULL};
		const char *mt[] = {"classes", "meta", NULL};
		double ops =
		    json_num(js, rd, "ops") + json_num(js, wr, "ops") + json_num(js, mt, "ops");

		CHECK(ops == (double)total && total == 200000, "ops %g of %" PRIu64, ops, total);
		CHECK(json_num(js, rd, "in_flight") == 0 && json_num(js, wr, "in_flight") == 0 &&
			  json_num(js, mt, "in_flight") == 0,
		      "nothing left in flight");
		CHECK(json_balanced(js), "balanced");
	}
	free(js);
	dl_pacer_free(p);
}

/* ---- no request waits without bound (issue 22, item 6) ---- */

static void test_bounds_and_retime(void)
{
	const char *kv[] = {"read.bandwidth=20kB/s", NULL};
	struct dl_pacer *p = test_pacer(kv, T0, 1);
	struct dl_pacer_cfg cfg;
	struct dl_pacer_req r = {.cls = DL_OP_READ, .file_id = 1, .len = 1 << 20, .job = 1};
	struct dl_pacer_result a, b, c;
	char err[512];
	uint64_t t;

	/* Settings under which one request alone would wait past the bound. */
	dl_pacer_cfg_init(&cfg);
	test_pacer_expect_err(&cfg, "read.bandwidth", "1B/s", "at least 17477B/s");
	test_pacer_expect_err(&cfg, "write.bandwidth", "17476B/s", "60s");
	test_pacer_expect_err(&cfg, "read.latency", "100000s", "above 60s");
	test_pacer_expect_err(&cfg, "meta.latency", "lognormal(1s, 2min)", "99th percentile");
	test_pacer_expect_err(&cfg, "read.latency", "exponential(30s)", "99th percentile");
	test_pacer_expect_err(&cfg, "phases.0.read.latency", "61s", "above 60s");
	test_pacer_expect_err(&cfg, "read.latency_by_size.4KiB", "2min", "above 60s");
	CHECK(dl_pacer_cfg_set(&cfg, "share.policy", "fair", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_cfg_set(&cfg, "share.jobs.0.match", "x", err, sizeof(err)) == 0, "%s", err);
	test_pacer_expect_err(&cfg, "share.jobs.0.bandwidth", "100B/s", "at least");
	/* At the bound itself: accepted. */
	CHECK(dl_pacer_cfg_set(&cfg, "read.bandwidth", "17477B/s", err, sizeof(err)) == 0 &&
		  dl_pacer_cfg_set(&cfg, "read.latency", "60s", err, sizeof(err)) == 0 &&
		  dl_pacer_cfg_check(&cfg, err, sizeof(err)) == 0,
	      "the bound itself: %s", err);
	dl_pacer_cfg_free(&cfg);

	/* A long tail is cut at the bound: no draw of exponential(10s) above it. */
	{
		const char *ke[] = {"read.latency=exponential(10s)", NULL};
		struct dl_pacer *q = test_pacer(ke, T0, 7);
		struct dl_pacer_req rq = {.cls = DL_OP_READ, .file_id = 1, .len = 4096, .job = 1};
		uint64_t most = 0;

		for (int i = 0; q && i < 20000; i++) {
			dl_pacer_submit(q, &rq, T0, &a);
			dl_pacer_complete(q, &rq, &a, a.due_ns);
			if (a.due_ns - T0 > most)
				most = a.due_ns - T0;
		}
		CHECK(q && most == DL_PACER_MAX_WAIT_NS, "longest exponential(10s) draw %llu ns",
		      (unsigned long long)most);
		dl_pacer_free(q);
	}

	/* Two 1 MiB requests parked at 20kB/s (52 s each): a live change to
	 * unlimited re-times both to now; a request submitted after the change
	 * is not held by the old model's debt. */
	CHECK(p != NULL, "pacer");
	if (!p)
		return;
	dl_pacer_submit(p, &r, T0, &a);
	dl_pacer_submit(p, &r, T0, &b);
	CHECK(a.due_ns - T0 > 50 * SEC && b.due_ns - T0 > 100 * SEC, "parked %llu %llu",
	      (unsigned long long)(a.due_ns - T0), (unsigned long long)(b.due_ns - T0));
	CHECK(dl_pacer_retime(p, &r, &a, T0 + SEC) == 0, "no change: not re-timed");
	t = T0 + SEC;
	CHECK(dl_pacer_set(p, "read.bandwidth", "10MB/s", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_retime(p, &r, &a, t) == 1 && dl_pacer_retime(p, &r, &b, t) == 1,
	      "re-timed");
	/* In order, at 10 MB/s from the change: 105 ms apart. */
	CHECK(a.due_ns > t && a.due_ns <= t + 106 * MS && b.due_ns > a.due_ns + 100 * MS &&
		  b.due_ns <= t + 211 * MS,
	      "10MB/s: due +%llu +%llu ms", (unsigned long long)((a.due_ns - t) / MS),
	      (unsigned long long)((b.due_ns - t) / MS));
	CHECK(a.due_ns == T0 + a.queue_ns + a.service_ns, "invariant kept");
	CHECK(dl_pacer_retime(p, &r, &a, t) == 0, "once per change");
	dl_pacer_submit(p, &r, t, &c);
	CHECK(c.due_ns <= t + 320 * MS, "a new request queues behind them only: +%llu ms",
	      (unsigned long long)((c.due_ns - t) / MS));
	/* Slower: never later than it was due. */
	CHECK(dl_pacer_set(p, "read.bandwidth", "20kB/s", err, sizeof(err)) == 0, "%s", err);
	t += MS;
	{
		uint64_t was = b.due_ns;

		CHECK(dl_pacer_retime(p, &r, &b, t) == 0 && b.due_ns == was,
		      "a slower model leaves it as due");
	}
	CHECK(dl_pacer_set(p, "read.bandwidth", "unlimited", err, sizeof(err)) == 0, "%s", err);
	CHECK(dl_pacer_retime(p, &r, &c, t) == 1 && c.due_ns == t, "unlimited: due now (+%lld)",
	      (long long)(c.due_ns - t));
	dl_pacer_complete(p, &r, &a, a.due_ns);
	dl_pacer_complete(p, &r, &b, b.due_ns);
	dl_pacer_complete(p, &r, &c, c.due_ns);
	dl_pacer_free(p);
}

int main(void)
{
	test_options();
	test_bandwidth();
	test_latency();
	test_distributions();
	test_iops();
	test_queue_depth();
	test_phases();
	test_classes();
	test_determinism();
	test_live_set();
	test_key_kinds();
	test_bounds_and_retime();
	test_stats();
	test_threads();
	return tap_done("pacer");
}
