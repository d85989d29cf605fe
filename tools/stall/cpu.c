/* DS-Analyzer's CPU what-if: the prep ceiling P as a function of the loader's
 * worker processes and the machine's cores, from prep runs (storage model
 * off, data cached) at two or more worker counts.
 *
 * The model: n = min(workers, cores) workers run at once, each at p1
 * samples/s alone, slowed by contention (the GIL-free parts of a loader
 * still share memory bandwidth, the main process and the page cache):
 *   P(w) = p1 * n / (1 + a * (n - 1)),  0 <= a <= 1
 * a = 0: linear in the cores; a = 1: one worker's rate whatever the count.
 * 1/P = (1 - a) / (p1 n) + a / p1 is linear in 1/n: a least-squares line
 * through the measured (1/n, 1/P) gives p1 and a. Workers beyond the cores
 * add nothing (they time-share them). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/json.h"
#include "stall_i.h"

static double cores_used(unsigned w, unsigned cores) { return (double)(w < cores ? w : cores); }

void st_cpu_fit(struct st_cpu *c)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0, A, B, den;
	double nmin = INFINITY, nmax = 0;

	c->fitted = 0;
	for (unsigned i = 0; i < c->n; i++) {
		double n = cores_used(c->workers[i], c->cores), x, y;

		if (!(c->P[i] > 0) || !isfinite(c->P[i]))
			continue;
		x = 1 / n;
		y = 1 / c->P[i];
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		k++;
		nmin = fmin(nmin, n);
		nmax = fmax(nmax, n);
	}
	if (k < 2 || nmin == nmax) {
		snprintf(c->note, sizeof(c->note),
			 "no fit: prep runs at two worker counts of at most %u (the cores) are "
			 "needed",
			 c->cores);
		return;
	}
	den = k * sxx - sx * sx;
	A = (k * sxy - sx * sy) / den;
	B = (sy - A * sx) / k;
	/* A + B = 1/p1 (one worker); a = B / (A + B), kept within [0, 1]. */
	if (!(A + B > 0)) {
		snprintf(c->note, sizeof(c->note), "no fit: the prep rate did not fall with fewer "
						   "workers");
		return;
	}
	c->p1 = 1 / (A + B);
	c->a = fmin(1, fmax(0, B / (A + B)));
	c->fitted = 1;
	c->note[0] = 0;
}

double st_cpu_predict(const struct st_cpu *c, unsigned workers, unsigned cores)
{
	double n = cores_used(workers, cores);

	if (!c->fitted || !workers)
		return NAN;
	return c->p1 * n / (1 + c->a * (n - 1));
}

/* Worker counts the table predicts for: 1, 2, 4, ... up to 4x the cores. */
static unsigned table_workers(const struct st_cpu *c, unsigned *w, unsigned max)
{
	unsigned n = 0;

	for (unsigned v = 1; v <= 4 * c->cores && n < max; v *= 2)
		w[n++] = v;
	return n;
}

void st_report_cpu(FILE *f, const struct st_cpu *c, const char *unit)
{
	unsigned w[16], nw = table_workers(c, w, 16);
	unsigned cores[3] = {c->cores, 2 * c->cores, 4 * c->cores};

	fprintf(f, "[CPU what-if] prep runs (storage model off, data cached) at %u worker counts, "
		   "%u cores here\n",
		c->n, c->cores);
	for (unsigned i = 0; i < c->n; i++)
		fprintf(f, "  measured            P = %.1f %s at %u worker%s\n", c->P[i], unit,
			c->workers[i], c->workers[i] == 1 ? "" : "s");
	if (!c->fitted) {
		fprintf(f, "  %s\n", c->note);
		return;
	}
	fprintf(f,
		"  fit                 P(w) = %.1f x n / (1 + %.2f (n - 1)), n = min(w, cores): "
		"%.1f %s per worker alone, contention %.2f\n",
		c->p1, c->a, c->p1, unit, c->a);
	fprintf(f, "  predicted P (%s), by loader workers:\n  %-20s", unit, "");
	for (unsigned i = 0; i < nw; i++)
		fprintf(f, " %8u", w[i]);
	fprintf(f, "\n");
	for (unsigned k = 0; k < 3; k++) {
		char label[32];

		snprintf(label, sizeof(label), "%u cores%s", cores[k], k ? "" : " (here)");
		fprintf(f, "  %-20s", label);
		for (unsigned i = 0; i < nw; i++)
			fprintf(f, " %8.1f", st_cpu_predict(c, w[i], cores[k]));
		fprintf(f, "\n");
	}
}

void st_json_cpu(struct dl_jw *w, const struct st_cpu *c)
{
	unsigned ws[16], nw = table_workers(c, ws, 16);

	dl_jw_obj(w, "cpu_whatif");
	dl_jw_u64(w, "cores", c->cores);
	dl_jw_str(w, "model", "P(w) = p1 * n / (1 + contention * (n - 1)), n = min(w, cores)");
	dl_jw_arr(w, "measured");
	for (unsigned i = 0; i < c->n; i++) {
		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "workers", c->workers[i]);
		dl_jw_f64(w, "P", c->P[i], 6);
		dl_jw_end(w);
	}
	dl_jw_end(w);
	dl_jw_bool(w, "fitted", c->fitted);
	if (c->fitted) {
		dl_jw_f64(w, "p1", c->p1, 6);
		dl_jw_f64(w, "contention", c->a, 6);
		dl_jw_arr(w, "predicted");
		for (unsigned k = 1; k <= 4; k *= 2)
			for (unsigned i = 0; i < nw; i++) {
				dl_jw_obj(w, NULL);
				dl_jw_u64(w, "workers", ws[i]);
				dl_jw_u64(w, "cores", k * c->cores);
				dl_jw_f64(w, "P", st_cpu_predict(c, ws[i], k * c->cores), 6);
				dl_jw_end(w);
			}
		dl_jw_end(w);
	} else {
		dl_jw_str(w, "note", c->note);
	}
	dl_jw_end(w);
}
