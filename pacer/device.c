/* The device model: a device behind a throttle, each part with a meaning
 * (what `dliofs profile` fits, and what a what-if changes). For a request
 * of n bytes arriving at t, with `transfer` > 0:
 *   1. throttle: it leaves a FIFO queue when the byte bucket holds n tokens
 *      and the IO bucket one. A bucket has a rate, a depth and a refill
 *      period g: with g = 0 tokens flow in continuously; with g > 0 they
 *      come in lumps of rate x g at the start of each period (Linux's
 *      blk-throttle grants a whole slice's allowance at the start of each
 *      throtl_slice, 100 ms by default, and holds what does not fit until a
 *      later slice: fast requests, then a stall, as provisioned-IOPS
 *      volumes do too). A bucket's depth is at least one period's lump.
 *      A bucket that was full starts its period at the request that finds
 *      it so, as blk-throttle starts a new slice for an idle group, and
 *      buckets start full: a throttle's first allowance is there at once.
 *   2. device: queue_depth channels (internal parallelism: requests served
 *      at once; 0 unlimited). The request takes the channel that frees
 *      first and holds it for its service time
 *        (latency + n / transfer) x z
 *      latency: the fixed cost (a draw of `latency`), transfer: the rate one
 *      request moves its bytes at, on one of `lanes` data paths (the bytes
 *      of at most `lanes` requests move at once: a disk with one data path
 *      serves 4 requests of 1 MiB in 4 transfer times, however many channels
 *      overlap their fixed costs; 0: no limit), z: the residual noise, a
 *      lognormal factor with median 1 and p99 noise (1: none).
 * due = start of service + service time. queue = due - arrival - service
 * (the throttle's hold and the wait for a channel): a tail that comes from
 * the throttle comes out of its bucket, never from a latency draw. */
#include <math.h>
#include <string.h>

#include "dliofs/prng.h"
#include "pacer_i.h"

typedef __int128 i128;

#define SCALE ((i128)PACER_NS)

static void advance(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
		    uint64_t t)
{
	i128 full = (i128)depth * SCALE;

	if (!b->primed) {
		b->primed = 1;
		b->tok = full;
		b->ref = t;
		return;
	}
	if (t <= b->ref)
		return;
	if (g) {
		uint64_t k = (t - b->ref) / g;

		if (!k)
			return;
		b->tok += (i128)k * rate * g;
		b->ref += k * g;
	} else {
		b->tok += (i128)(t - b->ref) * rate;
		b->ref = t;
	}
	if (b->tok >= full) {
		b->tok = full;
		/* Idle long enough to fill: the next period starts now. */
		b->ref = t;
	}
}

uint64_t pacer_bucket_when(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
			   uint64_t need, uint64_t t)
{
	struct pacer_bucket c = *b;
	i128 target, deficit;

	advance(&c, rate, depth, g, t);
	target = (i128)(need < depth ? need : depth) * SCALE;
	if (c.tok >= target)
		return t;
	deficit = target - c.tok;
	if (g) {
		i128 per = (i128)rate * g;
		i128 k = (deficit + per - 1) / per;
		i128 w = (i128)c.ref + k * (i128)g;

		return w > (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)w;
	}
	{
		i128 w = (i128)t + (deficit + rate - 1) / rate;

		return w > (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)w;
	}
}

void pacer_bucket_take(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
		       uint64_t need, uint64_t t)
{
	advance(b, rate, depth, g, t);
	b->tok -= (i128)need * SCALE;
}

double pacer_noise(uint64_t noise_ppm, uint64_t key, uint64_t i)
{
	double sigma;

	if (noise_ppm <= 1000000)
		return 1.0;
	sigma = log((double)noise_ppm / 1e6) / 2.3263478740;
	return exp(sigma * dl_prng_normal(key, i));
}

/* A bucket's depth: at least one refill period's lump, and one unit. */
static uint64_t depth_of(uint64_t rate, uint64_t burst, uint64_t g)
{
	uint64_t lump = g ? (uint64_t)((unsigned __int128)rate * g / PACER_NS) : 0;
	uint64_t d = burst > lump ? burst : lump;

	return d ? d : 1;
}

uint64_t pacer_device_model(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
			    uint64_t lat, double z, uint64_t len, uint64_t *start, unsigned *held)
{
	uint64_t s = t, w, bdepth = 0, idepth = 0, due;
	double svc;

	*held = 0;
	if (d->restart) {
		/* A new throttle setting starts with its allowance. */
		d->restart = 0;
		d->bytes.primed = 0;
		d->ios.primed = 0;
	}
	if (d->thr_last > s)
		s = d->thr_last;
	if (rt->bandwidth && len) {
		bdepth = depth_of(rt->bandwidth, rt->burst ? rt->burst : PACER_DEFAULT_BURST,
				  rt->refill_ns);
		w = pacer_bucket_when(&d->bytes, rt->bandwidth, bdepth, rt->refill_ns, len, s);
		if (w > s) {
			s = w;
			*held |= PACER_HELD_BW;
		}
	}
	if (rt->iops) {
		idepth = depth_of(rt->iops, rt->iops_burst, rt->refill_ns);
		w = pacer_bucket_when(&d->ios, rt->iops, idepth, rt->refill_ns, 1, s);
		if (w > s) {
			s = w;
			*held |= PACER_HELD_IOPS;
		}
	}
	if (bdepth)
		pacer_bucket_take(&d->bytes, rt->bandwidth, bdepth, rt->refill_ns, len, s);
	if (idepth)
		pacer_bucket_take(&d->ios, rt->iops, idepth, rt->refill_ns, 1, s);
	d->thr_last = s;
	if (rt->queue_depth) {
		pacer_slots_resize(d, rt->queue_depth);
		if (d->nslots && d->slots[0] > s) {
			s = d->slots[0];
			*held |= PACER_HELD_QUEUE;
		}
	} else {
		d->nslots = 0;
	}
	/* The fixed cost on the channel, then the bytes on the data path
	 * that frees first (all of them at once without a lane limit). */
	svc = (double)lat * z;
	due = svc >= 1.8e19 ? UINT64_MAX : s + (uint64_t)(svc + 0.5);
	if (due < s)
		due = UINT64_MAX;
	if (len) {
		unsigned nl = rt->lanes > DL_PACER_MAX_LANES ? DL_PACER_MAX_LANES
							     : (unsigned)rt->lanes,
			 l = 0;
		double x = (double)len * 1e9 / (double)rt->transfer * z;

		if (nl) {
			for (unsigned i = 1; i < nl; i++)
				if (d->lane_free[i] < d->lane_free[l])
					l = i;
			if (d->lane_free[l] > due)
				due = d->lane_free[l];
		}
		x += (double)due;
		due = x >= 1.8e19 ? UINT64_MAX : (uint64_t)(x + 0.5);
		if (nl)
			d->lane_free[l] = due;
	}
	if (rt->queue_depth && d->nslots) {
		d->slots[0] = due;
		pacer_heap_down(d->slots, d->nslots, 0);
	}
	*start = s;
	return due;
}
