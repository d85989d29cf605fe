/* The fit (pacer/fit.c) on points measured by `dliofs profile --read-only
 * --time 30s` (12 s for ci) of real devices of known behaviour: this
 * machine kind's disk (ext4 on virtio) behind cgroup-v1 blkio throttles, as
 * bench/bench_fidelity.py builds them (2026-11-27, AMD EPYC VM, 2 cores):
 *   iops_a, iops_b  4000 IO/s       both  300 MB/s + 4000 IO/s
 *   ci              50 MB/s + 1000 IO/s (12 s)
 * Four profiles of the one 4000 IO/s throttle, back to back, gave three
 * (iops_a, iops_b) fitted a continuously refilled IO bucket with unlimited
 * channels, which made every 4 KiB read wait 1/IOPS: p50 258 us for the
 * 50 us measured at QD1, 2-8 ms for 93-308 us at 8-32 clients (the
 * bench's fio 4 KiB QD8 p50 15x). blk-throttle grants its IOs per 100 ms
 * slice: reads go at the device's speed until the slice's allowance is
 * spent, then wait for the next (p99 94 ms at 8 clients). A fit of these
 * points must find that. The 1 MiB points of iops_* partly came from the
 * VM host's cache below the disk (re-read: 1.0-1.4 GB/s on a disk of
 * about 1.2): they are the device as this machine saw it. p10 and p90 were
 * not recorded by that dliofs (0: the fit goes by the median). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/pacer.h"
#include "tap.h"

#define MS 1000000ULL

/* size, clients, the point's time, MB/s, IOPS, p50 and p99 in ns */
#define P(s, c, t, mb, io, p50, p99)                                                              \
	{                                                                                         \
		.size = (s), .clients = (c), .time_ns = (t), .warm_ns = (t) / 20, .mb_s = (mb),   \
		.iops = (io), .p50_ns = (p50), .p99_ns = (p99)                                    \
	}

static const struct dl_fit_point iops_a[] = {
    P(4096, 1, 1249000000, 15.840, 3867, 49600, 88700),
    P(16384, 1, 1249000000, 63.468, 3874, 57100, 85800),
    P(65536, 1, 1249000000, 253.932, 3875, 90800, 153500),
    P(262144, 1, 1249000000, 1047.179, 3995, 223300, 319400),
    P(1048576, 1, 1249000000, 1299.209, 1239, 778600, 1040000),
    P(4194304, 1, 1249000000, 1243.907, 297, 3300000, 4190000),
    P(4096, 2, 1249000000, 15.852, 3870, 60200, 134300),
    P(4096, 4, 1249000000, 15.860, 3872, 77900, 704500),
    P(4096, 8, 1249000000, 15.862, 3873, 92700, 94200000),
    P(4096, 16, 1249000000, 15.861, 3872, 178500, 94800000),
    P(4096, 32, 1249000000, 15.856, 3871, 307900, 96000000),
    P(1048576, 2, 1249000000, 1391.371, 1327, 1480000, 1890000),
    P(1048576, 4, 1249000000, 1259.688, 1201, 3260000, 4130000),
    P(1048576, 8, 1249000000, 1195.755, 1140, 6920000, 9520000),
    P(1048576, 16, 1249000000, 1044.342, 996, 15900000, 19500000),
    P(1048576, 32, 1249000000, 1070.668, 1021, 30700000, 52000000),
};
static const struct dl_fit_point iops_b[] = {
    P(4096, 1, 1249000000, 15.841, 3867, 50000, 82300),
    P(16384, 1, 1249000000, 63.471, 3874, 63700, 103000),
    P(65536, 1, 1249000000, 253.902, 3874, 98100, 154900),
    P(262144, 1, 1249000000, 1050.050, 4006, 229400, 330600),
    P(1048576, 1, 1249000000, 1239.186, 1182, 810300, 1140000),
    P(4194304, 1, 1249000000, 1096.298, 261, 3670000, 5370000),
    P(4096, 2, 1249000000, 15.846, 3869, 62100, 121100),
    P(4096, 4, 1249000000, 15.866, 3874, 63100, 226700),
    P(4096, 8, 1249000000, 15.872, 3875, 117600, 92800000),
    P(4096, 16, 1249000000, 15.861, 3872, 162400, 95300000),
    P(4096, 32, 1249000000, 15.856, 3871, 338300, 96000000),
    P(1048576, 2, 1249000000, 1348.772, 1286, 1510000, 2230000),
    P(1048576, 4, 1249000000, 1238.721, 1181, 3320000, 4270000),
    P(1048576, 8, 1249000000, 1162.912, 1109, 7100000, 9620000),
    P(1048576, 16, 1249000000, 1063.164, 1014, 15400000, 22800000),
    P(1048576, 32, 1249000000, 1186.649, 1132, 27700000, 48100000),
};
static const struct dl_fit_point both[] = {
    P(4096, 1, 1249000000, 15.860, 3872, 58800, 104200),
    P(16384, 1, 1249000000, 63.487, 3875, 67500, 213600),
    P(65536, 1, 1249000000, 253.864, 3874, 100600, 155500),
    P(262144, 1, 1249000000, 289.512, 1104, 234200, 385200),
    P(1048576, 1, 1249000000, 289.089, 276, 721200, 80300000),
    P(4194304, 1, 1249000000, 286.783, 68, 3170000, 82000000),
    P(4096, 2, 1249000000, 15.871, 3875, 59700, 132800),
    P(4096, 4, 1249000000, 15.863, 3873, 66000, 1030000),
    P(4096, 8, 1249000000, 15.862, 3873, 104300, 93800000),
    P(4096, 16, 1249000000, 15.862, 3873, 164100, 95200000),
    P(4096, 32, 1249000000, 15.859, 3872, 308800, 99400000),
    P(1048576, 2, 1249000000, 288.851, 275, 1300000, 83200000),
    P(1048576, 4, 1249000000, 288.400, 275, 3310000, 82500000),
    P(1048576, 8, 1249000000, 287.114, 274, 7040000, 84600000),
    P(1048576, 16, 1249000000, 286.213, 273, 89000000, 99500000),
    P(1048576, 32, 1249000000, 267.470, 255, 103100000, 182100000),
};
static const struct dl_fit_point ci[] = {
    P(4096, 1, 341000000, 3.194, 780, 47000, 118100),
    P(16384, 1, 341000000, 12.775, 780, 59100, 130600),
    P(65536, 1, 341000000, 38.579, 589, 86700, 93000000),
    P(262144, 1, 341000000, 38.415, 147, 223700, 96100000),
    P(1048576, 1, 341000000, 38.757, 37, 945100, 104600000),
    P(4194304, 1, 341000000, 31.944, 8, 102400000, 107300000),
    P(4096, 2, 341000000, 3.181, 777, 54500, 97100000),
    P(4096, 4, 341000000, 3.192, 779, 61300, 98200000),
    P(4096, 8, 341000000, 3.189, 779, 94000, 98900000),
    P(4096, 16, 341000000, 3.190, 779, 161800, 99000000),
    P(4096, 32, 341000000, 3.188, 778, 302700, 99400000),
    P(1048576, 2, 341000000, 39.044, 37, 1630000, 102400000),
    P(1048576, 4, 341000000, 38.871, 37, 103000000, 104600000),
    P(1048576, 8, 341000000, 31.910, 30, 191000000, 208100000),
    P(1048576, 16, 341000000, 22.497, 21, 313100000, 400100000),
    P(1048576, 32, 341000000, 15.873, 15, 691100000, 709700000),
};

#define N(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

static int near(double x, double want, double tol) { return fabs(x / want - 1) <= tol; }

struct want {
	const char *name;
	const struct dl_fit_point *pts;
	unsigned n;
	double bw, iops; /* the throttle's MB/s and IO/s; 0: none */
};

/* Fitted, then each point replayed on the model as the profile does. */
static void check_fit(const struct want *w)
{
	struct dl_pacer_cfg cfg;
	const struct dl_dev_model *m = &cfg.m[DL_OP_READ];
	char why[160] = "";
	unsigned p50_ok = 0, small = 0, small_ok = 0;

	dl_pacer_cfg_init(&cfg);
	CHECK(!dl_pacer_fit(w->pts, w->n, &cfg.m[DL_OP_READ], why, sizeof(why)), "%s: fit: %s",
	      w->name, why);
	CHECK(m->refill_ns == 100 * MS, "%s: refill %.0f ms (blk-throttle's 100 ms slices): %s",
	      w->name, (double)m->refill_ns / 1e6, why);
	if (w->iops)
		CHECK(near((double)m->iops, w->iops, 0.03), "%s: IO bucket %llu (%.0f)", w->name,
		      (unsigned long long)m->iops, w->iops);
	if (w->bw)
		CHECK(near((double)m->bandwidth / 1e6, w->bw, 0.03), "%s: byte bucket %.1f MB/s (%.0f)",
		      w->name, (double)m->bandwidth / 1e6, w->bw);
	for (unsigned i = 0; i < w->n; i++) {
		struct dl_fit_point q = w->pts[i];
		int ok;

		if (dl_pacer_sim_point(&cfg, DL_OP_READ, 0x70f11e, &q)) {
			CHECK(0, "%s: replay of point %u", w->name, i);
			continue;
		}
		ok = near((double)q.p50_ns, (double)w->pts[i].p50_ns, 0.20);
		p50_ok += ok;
		/* 4 KiB at 1 to 8 clients: the reads a continuous bucket delays. */
		if (q.size == 4096 && q.clients <= 8) {
			small++;
			small_ok += ok;
			CHECK(near((double)q.p50_ns, (double)w->pts[i].p50_ns, 0.30),
			      "%s: 4 KiB x%u p50 %.0f us (measured %.0f)", w->name, q.clients,
			      (double)q.p50_ns / 1e3, (double)w->pts[i].p50_ns / 1e3);
		}
		CHECK(near(q.mb_s, w->pts[i].mb_s, 0.35), "%s: %llu B x%u %.1f MB/s (measured %.1f)",
		      w->name, (unsigned long long)q.size, q.clients, q.mb_s, w->pts[i].mb_s);
	}
	/* Not all: 4 channels are a compromise for a disk whose 4 KiB
	 * median grows more slowly with depth (78-308 us at 4-32 clients
	 * against the model's 56-455), and some 1 MiB points were the host's
	 * cache. */
	CHECK(p50_ok * 8 >= w->n * 5, "%s: %u of %u medians within 20%%", w->name, p50_ok, w->n);
	printf("%s: %s; %u of %u medians within 20%% (4 KiB x1-8: %u of %u)\n", w->name, why, p50_ok,
	       w->n, small_ok, small);
	dl_pacer_cfg_free(&cfg);
}

int main(void)
{
	const struct want w[] = {
	    {"iops_a", iops_a, N(iops_a), 0, 4000},
	    {"iops_b", iops_b, N(iops_b), 0, 4000},
	    {"both", both, N(both), 300, 4000},
	    {"ci", ci, N(ci), 50, 1000},
	};

	for (unsigned i = 0; i < N(w); i++)
		check_fit(&w[i]);
	return tap_done("pacer_fit_real");
}
