/* The device model: a device behind a throttle, each part with a meaning
 * (what `dliofs profile` fits, and what a what-if changes). For a request
 * of n bytes arriving at t, with `transfer` > 0:
 *   1. throttle: it leaves a FIFO queue when the byte bucket holds n tokens
 *      and the IO bucket one. A bucket has a rate, a depth and a refill
 *      period g: with g = 0 tokens flow in continuously; with g > 0 they
 *      come in lumps of rate x g at the start of each period, as Linux's
 *      blk-throttle grants a whole slice's allowance at the start of each
 *      throtl_slice (100 ms by default) and holds what does not fit until a
 *      later slice: fast requests, then a stall (provisioned-IOPS volumes
 *      behave alike). Its state is blk-throttle's (slice_when below): what
 *      a period does not use is lost, what a request takes beyond it is
 *      carried, an idle bucket starts a new period at its next request.
 *      A continuous bucket holds `burst` (iops_burst) at most. Buckets
 *      start full: a throttle's first allowance is there at once.
 *   2. device: queue_depth channels (internal parallelism: requests served
 *      at once; 0 unlimited). The request takes the channel that frees
 *      first and holds it for its service time: its fixed cost, a draw of
 *      `latency` times z, then on the data path that frees first a
 *      `serial` time times z (what requests pay one at a time: a
 *      controller's or a link's per-request work) and its bytes at
 *      `transfer`, the rate one request moves them at. The bytes of at most
 *      `lanes` requests move at once (a disk with one data path serves 4
 *      requests of 1 MiB in 4 transfer times, however many channels overlap
 *      their fixed costs; 0: no limit). z is the residual noise, a lognormal
 *      factor with median 1 and p99 `noise` (1: none), on the fixed cost
 *      only: interference that stretches a request's start, not its bytes;
 *      and one request in `stall_every` stalls on its channel for an
 *      exponential time of mean `stall` (a shared disk's neighbours: rare
 *      waits of milliseconds that make the mean, and so the throughput of
 *      small requests, what it is while the median stays).
 * due = start of service + service time. queue = due - arrival - service
 * (the throttle's hold and the wait for a channel): a tail that comes from
 * the throttle comes out of its bucket, never from a latency draw. */
#include <math.h>
#include <string.h>

#include "dliofs/prng.h"
#include "pacer_i.h"

typedef __int128 i128;

#define SCALE ((i128)PACER_NS)

/* ---- continuous refill: a token bucket of depth tokens ---- */

static void advance(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t t)
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
	b->tok += (i128)(t - b->ref) * rate;
	b->ref = t;
	if (b->tok > full)
		b->tok = full;
}

/* ---- refill in periods: Linux blk-throttle's slices ----
 * State: the slice start S (ref), what was dispatched since (tok, scaled),
 * the last dispatch (last). At t a request of n is allowed when
 *   rate x g x (floor((t - S) / g) + 1) >= dispatched + n,
 * i.e. each started period grants its whole lump at once. After a
 * dispatch, whole periods that have passed are trimmed off (their lumps
 * subtracted from what was dispatched, never below 0: what a period did not
 * use is lost). A bucket idle for a whole period starts a new slice at its
 * next request (blk-throttle: the slice expired and the group is empty).
 * Idle is judged at the request's arrival, not at its dispatch: a request
 * that waited in the throttle for a later period kept the group busy, and
 * its dispatch, however long after the last one, goes on in the same slice
 * with what the slice carried. (Judged at dispatch, four requests of 1 MiB
 * in flight under 50 MB/s each waited a whole period, restarted the slice
 * and lost its remainder: 4 MiB per 100 ms, 42 MB/s.) */

static int slice_idle(const struct pacer_bucket *b, uint64_t g, uint64_t arrived)
{
	return !b->primed || arrived >= b->last + g;
}

static uint64_t slice_when(const struct pacer_bucket *b, uint64_t rate, uint64_t g, uint64_t need,
			   uint64_t t, uint64_t arrived)
{
	i128 lump = (i128)rate * g, disp = b->tok, m, have;
	uint64_t S = b->ref, w;

	if (slice_idle(b, g, arrived)) {
		S = t;
		disp = 0;
	}
	m = (disp + (i128)need * SCALE + lump - 1) / lump; /* periods' worth needed */
	have = (t > S ? (i128)(t - S) / g : 0) + 1;	    /* periods started by t */
	if (m <= have)
		return t;
	/* When period m starts, its lump is granted. */
	{
		i128 x = (i128)S + (m - 1) * (i128)g;

		w = x > (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)x;
	}
	return w > t ? w : t;
}

static void slice_take(struct pacer_bucket *b, uint64_t rate, uint64_t g, uint64_t need, uint64_t t,
		       uint64_t arrived)
{
	i128 lump = (i128)rate * g;
	uint64_t k;

	if (slice_idle(b, g, arrived)) {
		b->primed = 1;
		b->ref = t;
		b->tok = 0;
	}
	b->tok += (i128)need * SCALE;
	b->last = t;
	k = t > b->ref ? (t - b->ref) / g : 0;
	if (k) {
		b->tok -= (i128)k * lump;
		if (b->tok < 0)
			b->tok = 0;
		b->ref += k * g;
	}
}

uint64_t pacer_bucket_when(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
			   uint64_t need, uint64_t t, uint64_t arrived)
{
	struct pacer_bucket c = *b;
	i128 target, deficit, w;

	if (g)
		return slice_when(b, rate, g, need, t, arrived);
	advance(&c, rate, depth, t);
	target = (i128)(need < depth ? need : depth) * SCALE;
	if (c.tok >= target)
		return t;
	deficit = target - c.tok;
	w = (i128)t + (deficit + rate - 1) / rate;
	return w > (i128)UINT64_MAX ? UINT64_MAX : (uint64_t)w;
}

void pacer_bucket_take(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
		       uint64_t need, uint64_t t, uint64_t arrived)
{
	if (g) {
		slice_take(b, rate, g, need, t, arrived);
		return;
	}
	advance(b, rate, depth, t);
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

/* A continuous bucket's depth (at least one unit); a slice bucket's is
 * its lump, rate x refill. */
static uint64_t depth_of(uint64_t burst)
{
	return burst ? burst : 1;
}

uint64_t pacer_stall(uint64_t stall_every, uint64_t stall_ns, uint64_t key, uint64_t i)
{
	double u;

	if (!stall_every || !stall_ns || dl_prng_below(key, 2 * i, stall_every))
		return 0;
	u = dl_prng_unit(key, 2 * i + 1);
	return (uint64_t)(-(double)stall_ns * log(1.0 - u) + 0.5);
}

/* The run io goes on: a live one of its stream ending where it starts,
 * still in flight at t, with room for len more bytes; NULL: none. */
static struct pacer_merge *merge_find(struct pacer_dev *d, const struct pacer_rates *rt,
				      const struct pacer_io *io, uint64_t t, uint64_t len)
{
	uint64_t most = rt->max_request ? rt->max_request : PACER_MERGE_MAX;

	if (!io || !io->file)
		return NULL;
	for (unsigned i = 0; i < PACER_MERGE_STREAMS; i++) {
		struct pacer_merge *m = &d->merge[i];

		if (m->live && m->file == io->file && m->job == io->job && m->end == io->off &&
		    t < m->due && t <= m->arrived + PACER_MERGE_GAP_NS &&
		    m->bytes + len <= most)
			return m;
	}
	return NULL;
}

/* A new run for io, in the slot used longest ago. */
static void merge_start(struct pacer_dev *d, const struct pacer_io *io, uint64_t t, uint64_t len,
			uint64_t due, unsigned lane)
{
	struct pacer_merge *m = &d->merge[0];

	if (!io || !io->file)
		return;
	for (unsigned i = 0; i < PACER_MERGE_STREAMS; i++) {
		struct pacer_merge *x = &d->merge[i];

		if (x->live && x->file == io->file && x->job == io->job) {
			m = x;
			break;
		}
		if (!x->live || x->used < m->used)
			m = x;
	}
	*m = (struct pacer_merge){.file = io->file, .job = io->job, .end = io->off + len,
				  .due = due, .arrived = t, .bytes = len,
				  .used = ++d->merge_clock, .lane = lane, .live = 1};
}

/* io's bytes after its run's, on the run's channel and data path, from s
 * (when the throttle let them through). */
static uint64_t merge_serve(struct pacer_dev *d, const struct pacer_rates *rt,
			    struct pacer_merge *m, uint64_t t, uint64_t s, uint64_t len)
{
	uint64_t from = s > m->due ? s : m->due, due;
	double x = (double)from + (double)len * 1e9 / (double)rt->transfer;

	due = x >= 1.8e19 ? UINT64_MAX : (uint64_t)(x + 0.5);
	/* The run holds its channel until its last byte. */
	if (rt->queue_depth && d->nslots)
		for (uint32_t i = 0; i < d->nslots; i++)
			if (d->slots[i] == m->due) {
				d->slots[i] = due;
				pacer_heap_down(d->slots, d->nslots, i);
				break;
			}
	if (rt->lanes && m->lane < DL_PACER_MAX_LANES && d->lane_free[m->lane] == m->due)
		d->lane_free[m->lane] = due;
	m->due = due;
	m->arrived = t;
	m->end += len;
	m->bytes += len;
	m->used = ++d->merge_clock;
	return due;
}

uint64_t pacer_device_model(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
			    uint64_t lat, double z, uint64_t stall, uint64_t len, uint64_t *start,
			    unsigned *held)
{
	int merged;

	return pacer_device_model_io(d, rt, t, lat, z, stall, len, NULL, start, held, &merged);
}

static void restart(struct pacer_dev *d)
{
	if (d->restart) {
		/* A new throttle setting starts with its allowance. */
		d->restart = 0;
		d->bytes.primed = 0;
		d->ios.primed = 0;
		memset(d->merge, 0, sizeof(d->merge));
	}
}

/* Through the throttle in arrival order: when a request of len bytes
 * arriving at t leaves it, its tokens taken. */
static uint64_t throttle(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
			 uint64_t len, unsigned *held)
{
	uint64_t s = t, w, bdepth = 0, idepth = 0;

	if (d->thr_last > s)
		s = d->thr_last;
	if (rt->bandwidth && len) {
		bdepth = depth_of(rt->burst ? rt->burst : PACER_DEFAULT_BURST);
		w = pacer_bucket_when(&d->bytes, rt->bandwidth, bdepth, rt->refill_ns, len, s, t);
		if (w > s) {
			s = w;
			*held |= PACER_HELD_BW;
		}
	}
	if (rt->iops) {
		idepth = depth_of(rt->iops_burst);
		w = pacer_bucket_when(&d->ios, rt->iops, idepth, rt->refill_ns, 1, s, t);
		if (w > s) {
			s = w;
			*held |= PACER_HELD_IOPS;
		}
	}
	if (bdepth)
		pacer_bucket_take(&d->bytes, rt->bandwidth, bdepth, rt->refill_ns, len, s, t);
	if (idepth)
		pacer_bucket_take(&d->ios, rt->iops, idepth, rt->refill_ns, 1, s, t);
	d->thr_last = s;
	return s;
}

uint64_t pacer_device_throttle_only(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
				    uint64_t len)
{
	unsigned held = 0;

	restart(d);
	return throttle(d, rt, t, len, &held);
}

uint64_t pacer_device_model_io(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
			       uint64_t lat, double z, uint64_t stall, uint64_t len,
			       const struct pacer_io *io, uint64_t *start, unsigned *held,
			       int *merged)
{
	uint64_t s, due;
	struct pacer_merge *run;
	unsigned lane = 0;
	double svc;

	*held = 0;
	*merged = 0;
	restart(d);
	run = len ? merge_find(d, rt, io, t, len) : NULL;
	s = throttle(d, rt, t, len, held);
	/* Held by the throttle until its run is done: a request of its own. */
	if (run && s >= run->due)
		run = NULL;
	if (run) {
		*merged = 1;
		*start = s;
		return merge_serve(d, rt, run, t, s, len);
	}
	s = pacer_slot_wait(d, rt->queue_depth, s, held);
	/* The fixed cost on the channel, then the bytes on the data path
	 * that frees first (all of them at once without a lane limit). */
	svc = (double)lat * z + (double)stall;
	due = svc >= 1.8e19 ? UINT64_MAX : s + (uint64_t)(svc + 0.5);
	if (due < s)
		due = UINT64_MAX;
	if (len || rt->serial_ns) {
		unsigned nl = rt->lanes > DL_PACER_MAX_LANES ? DL_PACER_MAX_LANES
							     : (unsigned)rt->lanes,
			 l = 0;
		double x = (double)rt->serial_ns * z + (double)len * 1e9 / (double)rt->transfer;

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
		lane = l;
	}
	if (rt->queue_depth && d->nslots) {
		d->slots[0] = due;
		pacer_heap_down(d->slots, d->nslots, 0);
	}
	if (len)
		merge_start(d, io, t, len, due, lane);
	*start = s;
	return due;
}
