/* Fit a device model (device.c) to what `dliofs profile` measured for one
 * class: points of one request size with N clients, each with its MB/s,
 * IOPS and latency quantiles. In steps, each on what shows it best:
 *   1. service time by size = fixed + size / transfer, a weighted least
 *      squares fit (relative errors) to the one-client medians; a point
 *      whose median is already a throttle's stall (median above 3x its
 *      10th percentile: two populations) gives its 10th percentile;
 *   2. the throttle: a byte bucket at the highest MB/s measured and/or an
 *      IO bucket at the highest IOPS (a throttle is the ceiling every point
 *      that reaches it shares), refilled every g, for g from continuous to
 *      1 s: which of these, and g, are chosen by replaying every measured
 *      point on the candidate in virtual time (sim.c) and keeping the one
 *      that misses least (MB/s twice as much as p50 and p99). A slice
 *      refilled bucket is what gives fast medians with long stalls: 1 MiB
 *      reads under blk-throttle at QD1, p50 0.6 ms and p99 80 ms;
 *   3. channels (queue_depth) likewise from the points with more clients,
 *      then the data paths (lanes: 1, 2, 4, 8 or one per channel) and the
 *      part of the fixed cost paid on them one at a time (serial), then the
 *      channels again;
 *   4. the bucket rates, each searched around the highest measured for
 *      the one whose replay misses least (fit_rates), and a continuous
 *      bucket's depth (burst);
 *   5. the residual noise's p99 factor, likewise;
 *   6. stalls: how often one request stalls on its channel, and for how
 *      long on average, likewise.
 * A point's quantiles come from log-linear histograms (3%). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pacer_i.h"

#define FIT_SEED 0x5eed0f17ULL
/* A point is replayed for at most this long: several refill periods of the
 * slowest bucket tried, and quick. */
#define FIT_MAX_NS (3ULL * PACER_NS)
/* What a refill in periods must do better than a continuous one by. */
#define SLICED 1.1
#define LR_CAP 1.3862943611198906    /* ln 4 */
#define LR_CAP_P50 2.772588722239781 /* ln 16 */

struct fit {
	const struct dl_fit_point *pts;
	unsigned n;
	struct dl_pacer_cfg cfg;
	int skip[64]; /* disturbed points, left out (disturbed()) */
};

/* A point whose MB/s is under 70% of what fewer clients got at its size was
 * disturbed while it was measured (a neighbour's burst on a shared disk): no
 * device delivers half as much to more requests in flight, and a fit that
 * followed it would slow every point at depth. */
static int disturbed(const struct dl_fit_point *p, unsigned n, unsigned i)
{
	for (unsigned j = 0; j < n; j++)
		if (p[j].size == p[i].size && p[j].clients < p[i].clients &&
		    p[i].mb_s < 0.7 * p[j].mb_s)
			return 1;
	return 0;
}

/* |ln(a / b)|, at most cap: a point the model misses by more than that
 * counts as a miss, however far. Without the cap the p99 of a few points
 * that this machine's neighbours stretched 50x (interference, not the
 * device) outweighs everything else: a throttle refilled every 20 ms that
 * spreads stalls over every point "fits" better than the true 100 ms. */
static double lr_cap(double a, double b, double cap)
{
	double x;

	if (!(a > 0) || !(b > 0))
		return a == b ? 0 : cap;
	x = fabs(log(a / b));
	return x < cap ? x : cap;
}

static double lr(double a, double b) { return lr_cap(a, b, LR_CAP); }

/* How far the model of f->cfg is from the points: the sum over points of
 * 2 |ln MB/s ratio| + |ln p50 ratio| + |ln p99 ratio|. A median is capped
 * at 16x, not 4x: neighbours stretch tails, hardly medians, and at 4x a
 * continuous IO bucket that made every 4 KiB read wait 1/IOPS (p50 258 us
 * for 50 measured: 5-27x over seven points) tied with the slice-refilled
 * one that fits them (3 of 4 profiles of one 4000 IO/s throttle were
 * fitted the wrong one; test_pacer_fit_real). */
static double misfit(struct fit *f)
{
	double s = 0;

	for (unsigned i = 0; i < f->n; i++) {
		struct dl_fit_point q = f->pts[i];

		if (f->skip[i])
			continue;
		if (q.time_ns > FIT_MAX_NS) {
			q.warm_ns = q.warm_ns * FIT_MAX_NS / q.time_ns;
			q.time_ns = FIT_MAX_NS;
		}
		if (dl_pacer_sim_point(&f->cfg, DL_OP_READ, FIT_SEED, &q))
			return INFINITY;
		s += 2 * lr(q.mb_s, f->pts[i].mb_s) +
		     lr_cap((double)q.p50_ns, (double)f->pts[i].p50_ns, LR_CAP_P50) +
		     lr((double)q.p99_ns, (double)f->pts[i].p99_ns);
	}
	return s;
}

/* A one-client point's service time: its median, or its 10th percentile
 * when the median is already a stall (two populations). */
static double qd1_time(const struct dl_fit_point *p)
{
	double y = (double)p->p50_ns;

	if (p->p10_ns && y > 3.0 * (double)p->p10_ns)
		y = (double)p->p10_ns;
	return y;
}

/* Weighted least squares (relative errors) of time = a + b size over the
 * one-client points not dropped. */
static unsigned fit_line(const struct dl_fit_point *p, unsigned n, const int *drop, double *ra,
			 double *rb)
{
	double sw = 0, sx = 0, sxx = 0, sy = 0, sxy = 0, a, b, det;
	unsigned used = 0;

	for (unsigned i = 0; i < n; i++) {
		double y, x = (double)p[i].size, w;

		if (p[i].clients != 1 || !p[i].p50_ns || drop[i])
			continue;
		y = qd1_time(&p[i]);
		w = 1.0 / (y * y);
		sw += w;
		sx += w * x;
		sxx += w * x * x;
		sy += w * y;
		sxy += w * x * y;
		used++;
	}
	*ra = *rb = 0;
	if (!used)
		return 0;
	det = sw * sxx - sx * sx;
	if (used < 2 || fabs(det) < 1e-300) {
		*ra = sy / sw;
		return used;
	}
	a = (sxx * sy - sx * sxy) / det;
	b = (sw * sxy - sx * sy) / det;
	if (a < 0) { /* through the origin */
		a = 0;
		b = sxy / sxx;
	}
	if (b <= 0) { /* no growth with size: all fixed cost */
		a = sy / sw;
		b = 0;
	}
	*ra = a;
	*rb = b;
	return used;
}

/* Step 1: fixed cost and transfer rate from the one-client points. A point
 * more than twice as slow as the line through the others was disturbed
 * (a neighbour's burst on a shared disk only ever slows): it is dropped
 * and the line fitted again, keeping at least three points. */
static void fit_service(const struct dl_fit_point *p, unsigned n, double *fixed, double *rate)
{
	int drop[64] = {0};
	double a, b;
	unsigned used = fit_line(p, n, drop, &a, &b);

	for (int round = 0; round < 3 && used > 3; round++) {
		unsigned worst = n;
		double wr = 2.0;

		for (unsigned i = 0; i < n; i++) {
			double r;

			if (p[i].clients != 1 || !p[i].p50_ns || drop[i] || !(a + b * (double)p[i].size > 0))
				continue;
			r = qd1_time(&p[i]) / (a + b * (double)p[i].size);
			if (r > wr) {
				wr = r;
				worst = i;
			}
		}
		if (worst == n)
			break;
		drop[worst] = 1;
		used = fit_line(p, n, drop, &a, &b);
	}
	*fixed = a;
	*rate = b > 0 ? 1e9 / b : 0;
}

/* The k-th highest (k from 0) of a point figure. */
static double kth(const struct dl_fit_point *p, unsigned n, int iops, unsigned k)
{
	double v[64];
	unsigned m = 0;

	for (unsigned i = 0; i < n && m < 64; i++)
		v[m++] = iops ? p[i].iops : p[i].mb_s;
	for (unsigned i = 0; i < m; i++)
		for (unsigned j = i + 1; j < m; j++)
			if (v[j] > v[i]) {
				double t = v[i];

				v[i] = v[j];
				v[j] = t;
			}
	return m ? v[k < m ? k : m - 1] : 0;
}

static void set_throttle(struct dl_dev_model *m, int which, double bw, double iops, uint64_t g)
{
	m->bandwidth = (which & 1) ? (uint64_t)(bw * 1e6 + 0.5) : 0; /* bw in MB/s */
	m->iops = (which & 2) ? (uint64_t)(iops + 0.5) : 0;
	m->refill_ns = which ? g : 0;
	m->burst = 0;
	m->iops_burst = 0;
}

/* Bucket rates tried, as factors of the highest measured (step 4). */
#define RATE_LO 0.80
#define RATE_HI 1.40
#define RATE_STEP 0.04

/* Step 4: the bucket rates. A point's MB/s (IOPS) is not its bucket's
 * rate: a point of 0.35 to 1.5 s holds a few of a throttle's slices, and
 * where its counted part begins and ends among them moves it by up to a
 * slice's lump either way (one point in 4 slices: 25%). Each bucket's rate
 * is searched in turn, on a grid of factors of the highest measured, then
 * refined around the best, for the rate whose replay of every point misses
 * least; the highest measured itself was biased by the phase its point
 * happened to start in (53 MB/s fitted for a 50 MB/s throttle, 0.6 s
 * points). */
static void fit_rates(struct fit *f, struct dl_dev_model *m, int which, uint64_t g, double *bw,
		      double *iops, double *best)
{
	double top[2] = {kth(f->pts, f->n, 0, 0), kth(f->pts, f->n, 1, 0)}, r[2] = {*bw, *iops};

	set_throttle(m, which, r[0], r[1], g);
	*best = misfit(f);
	for (int pass = 0; pass < 2; pass++)
		for (int b = 0; b < 2; b++) {
			double keep = r[b], step = RATE_STEP * top[b];

			if (!(which & (1 << b)) || !(top[b] > 0))
				continue;
			if (!pass) /* the grid */
				for (double x = RATE_LO; x <= RATE_HI + 1e-9; x += RATE_STEP) {
					double e;

					r[b] = top[b] * x;
					set_throttle(m, which, r[0], r[1], g);
					e = misfit(f);
					if (e < *best) {
						*best = e;
						keep = r[b];
					}
				}
			/* Halvings of the step around the best. */
			for (int k = 0; k < 3; k++) {
				step /= 2;
				for (int sgn = -1; sgn <= 1; sgn += 2) {
					double e;

					r[b] = keep + sgn * step;
					set_throttle(m, which, r[0], r[1], g);
					e = misfit(f);
					if (e < *best) {
						*best = e;
						keep = r[b];
					}
				}
			}
			r[b] = keep;
		}
	*bw = r[0];
	*iops = r[1];
	set_throttle(m, which, r[0], r[1], g);
}

/* Refill periods tried: 0 is a continuous bucket. */
static const uint64_t refills[] = {0,	      10000000,	 20000000,  50000000,
				   100000000, 200000000, 500000000, 1000000000};

/* The throttle kind (1 bytes, 2 IOs, 3 both; from w_lo to w_hi) and refill
 * period that fit best, starting from the choice in *which, *g whose
 * misfit is *best, and m set to the winner. A refill in periods must do
 * clearly better than a continuous one (SLICED): a device without a
 * throttle is not given one's stalls for a few percent of fit. */
static void pick_throttle(struct fit *f, struct dl_dev_model *m, int w_lo, int w_hi, double bw,
			  double iops, double *best, int *which, uint64_t *g)
{
	double bs = *best * (*g ? SLICED : 1.0);

	for (int w = w_lo; w <= w_hi; w++)
		for (unsigned i = 0; i < (w ? sizeof(refills) / sizeof(refills[0]) : 1); i++) {
			double e, se;

			set_throttle(m, w, bw, iops, refills[i]);
			e = misfit(f);
			se = e * (refills[i] ? SLICED : 1.0);
			if (se < bs * 0.98) {
				bs = se;
				*best = e;
				*which = w;
				*g = refills[i];
			}
		}
	set_throttle(m, *which, bw, iops, *g);
}

int dl_pacer_fit(const struct dl_fit_point *pts, unsigned n, struct dl_dev_model *out, char *why,
		 size_t whylen)
{
	static const uint32_t qs[] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
	/* Up to 3x: a larger spread at QD1 is interference (neighbours on a
	 * shared disk), and a noise that large would lengthen every service
	 * (its mean) and so every queue at depth. */
	static const double noises[] = {1.0, 1.1, 1.25, 1.5, 2.0, 3.0};
	struct fit f;
	struct dl_dev_model *m;
	double fixed, rate, best, e, bw, iops;
	int which = 0;
	uint64_t g = 0;
	int ret;

	if (!pts || !n || n > 64 || !out)
		return -EINVAL;
	fit_service(pts, n, &fixed, &rate);
	if (!(fixed > 0) && !(rate > 0)) {
		snprintf(why, whylen, "no point with one client to fit the service time to");
		return -EINVAL;
	}
	memset(&f, 0, sizeof(f));
	f.pts = pts;
	f.n = n;
	for (unsigned i = 0; i < n; i++)
		f.skip[i] = disturbed(pts, n, i);
	dl_pacer_cfg_init(&f.cfg);
	m = &f.cfg.m[DL_OP_READ];
	/* A device without a measurable size cost moves bytes very fast. */
	m->transfer = rate > 0 ? (uint64_t)(rate + 0.5) : 1000000000000ULL;
	m->latency.kind = DL_LAT_CONST;
	m->latency.a_ns = (uint64_t)(fixed + 0.5);
	bw = kth(pts, n, 0, 1);
	iops = kth(pts, n, 1, 1);
	/* Steps 2 and 3 twice: the throttle chosen before the channels and
	 * data paths are known takes the device's own ceiling for a byte
	 * bucket (one data path: 1 MiB reads at depth no faster than one),
	 * whose lumps then stall large reads the device never stalled, and
	 * the channels follow that (an IO-throttled disk fitted with one
	 * channel, 4 KiB reads at QD8 at 3-13x their p50). */
	for (int pass = 0; pass < 2; pass++) {
		/* Step 2: which throttle, refilled how. */
		m->latency.a_ns += m->serial_ns;
		m->serial_ns = 0;
		best = misfit(&f);
		pick_throttle(&f, m, pass ? 0 : 1, 3, bw, iops, &best, &which, &g);
		/* Step 3: channels and data paths together (one at a time got stuck:
		 * on a disk with one data path, 1 MiB reads at depth look like one
		 * channel until the data path is known), then the serial part, then
		 * the channels again with it. */
		for (int round = 0; round < 2; round++) {
			static const uint64_t lns[] = {0, 1, 2, 4, 8};
			uint32_t bq = m->queue_depth;
			uint64_t bl = m->lanes;

			best = INFINITY;
			for (unsigned j = 0; j < (round ? 1 : sizeof(lns) / sizeof(lns[0])); j++) {
				if (!round)
					m->lanes = lns[j];
				for (unsigned i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
					double need;

					m->queue_depth = qs[i];

					e = misfit(&f);
					/* The best: on a flat stretch (1 to 4 channels
					 * within 2% on a noisy disk) the fewest would be an
					 * extreme. Another data path limit must do clearly
					 * better than the best so far. */
					need = !round && m->lanes && m->lanes != bl ? 0.98 : 1.0;
					if (e < best * need) {
						best = e;
						bq = qs[i];
						bl = m->lanes;
					}
				}
			}
			m->queue_depth = bq;
			m->lanes = bl;
			if (round)
				break;
			/* The serial part of the fixed cost (the rest on the channels). */
			{
				static const uint64_t ser[] = {2000, 5000, 10000, 20000, 50000, 100000};
				uint64_t bsr = 0, total = m->latency.a_ns;

				best = misfit(&f);
				for (unsigned i = 0; i < sizeof(ser) / sizeof(ser[0]); i++) {
					if (ser[i] > total)
						break;
					m->serial_ns = ser[i];
					m->latency.a_ns = total - ser[i];
					e = misfit(&f);
					if (e < best * 0.98) {
						best = e;
						bsr = ser[i];
					}
				}
				m->serial_ns = bsr;
				m->latency.a_ns = total - bsr;
			}
		}
	}
	/* Step 4: the rates. */
	if (which) {
		fit_rates(&f, m, which, g, &bw, &iops, &best);
		/* The refill again, with the channels known. */
		pick_throttle(&f, m, which, which, bw, iops, &best, &which, &g);
		/* A continuous bucket's depth: what it lets through at once
		 * after idle time, as rate x 10 ms, 100 ms or 1 s (a period's
		 * bucket gets its lump instead). */
		if (!g) {
			/* A deep bucket makes a short measurement faster than
			 * the rate: the rate is tried lower with it. */
			static const double depths[] = {0.01, 0.1, 1.0}, lower[] = {1.0, 0.93, 0.86};
			double br = 1.0;
			uint64_t bb0 = 0, bi0 = 0;

			for (unsigned i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
				for (unsigned j = 0; j < sizeof(lower) / sizeof(lower[0]); j++) {
					set_throttle(m, which, bw * lower[j], iops * lower[j], 0);
					m->burst = (which & 1) ? (uint64_t)(bw * 1e6 * depths[i]) : 0;
					m->iops_burst = (which & 2) ? (uint64_t)(iops * depths[i]) : 0;
					e = misfit(&f);
					if (e < best * 0.98) {
						best = e;
						bb0 = m->burst;
						bi0 = m->iops_burst;
						br = lower[j];
					}
				}
			}
			set_throttle(m, which, bw * br, iops * br, 0);
			m->burst = bb0;
			m->iops_burst = bi0;
		}
	}
	/* Step 5: the noise. */
	{
		uint64_t bn = 0;

		for (unsigned i = 1; i < sizeof(noises) / sizeof(noises[0]); i++) {
			m->noise_ppm = (uint64_t)(noises[i] * 1e6);
			e = misfit(&f);
			if (e < best * 0.99) {
				best = e;
				bn = m->noise_ppm;
			}
		}
		m->noise_ppm = bn;
	}
	/* Step 6: stalls, rare and long (a shared disk's neighbours): they
	 * make the mean, so the MB/s of small requests, what it is while the
	 * median stays. */
	{
		static const uint64_t every[] = {200, 100, 50, 20, 10};
		static const uint64_t mean[] = {200000, 500000, 1000000, 2000000, 5000000};
		uint64_t be = 0, bm = 0;

		for (unsigned i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
			for (unsigned j = 0; j < sizeof(mean) / sizeof(mean[0]); j++) {
				m->stall_every = every[i];
				m->stall_ns = mean[j];
				e = misfit(&f);
				/* Clearly better only: a stall is not a knob to
				 * tune a few p99s with. */
				if (e < best * 0.95) {
					best = e;
					be = every[i];
					bm = mean[j];
				}
			}
		}
		m->stall_every = be;
		m->stall_ns = bm;
	}
	out->transfer = m->transfer;
	pacer_lat_free(&out->latency);
	out->latency = m->latency;
	out->queue_depth = m->queue_depth;
	out->bandwidth = m->bandwidth;
	out->burst = m->burst;
	out->iops = m->iops;
	out->iops_burst = m->iops_burst;
	out->refill_ns = m->refill_ns;
	out->noise_ppm = m->noise_ppm;
	out->lanes = m->lanes;
	out->serial_ns = m->serial_ns;
	out->stall_every = m->stall_every;
	out->stall_ns = m->stall_ns;
	pacer_sizes_free(&out->lat_size);
	pacer_conc_free(&out->conc);
	snprintf(why, whylen, "%s%s%s, refilled %s", which ? "throttle:" : "no throttle",
		 (which & 1) ? " bytes" : "", (which & 2) ? " IOs" : "",
		 !which ? "-" : g ? "in periods" : "continuously");
	ret = 0;
	memset(&f.cfg.m[DL_OP_READ].latency, 0, sizeof(struct dl_lat_model));
	dl_pacer_cfg_free(&f.cfg);
	return ret;
}
