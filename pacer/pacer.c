/* The timing model. Per operation class, in this order:
 *   1. queue depth Q: the request takes the slot that frees first; since
 *      requests are admitted in arrival order, it starts when at most Q - 1
 *      earlier requests are still in service (FIFO M/G/Q). Slots are a
 *      min-heap of the due times of the requests holding them.
 *   2. IOPS: starts are at least 1/iops apart (exact: the remainder of
 *      10^9 / iops is carried, so the long-run rate is exact).
 *   3. latency: a seeded draw L (by the request's size with
 *      latency_by_size, times k bw(1) / bw(k) with bandwidth_by_concurrency
 *      and k requests in service, i.e. submitted to the device and not yet
 *      completed, in a cluster of mounts the other nodes' too, as last
 *      exchanged: curves.c); the data is ready at start + L.
 *   4. bandwidth: a token bucket of `burst` bytes refilled at `bandwidth`
 *      B/s, shared by the class. It is kept as the time X at which it is empty
 *      (level at time t: min(burst, (t - X) * bandwidth)); a transfer of n
 *      bytes ready at r sets X = max(X, r - burst/bandwidth) + n/bandwidth and
 *      finishes at max(r, X). Busy, it is a pipe moving bytes one request
 *      after another at exactly `bandwidth`; after idle time it lets up to
 *      `burst` bytes through at once. It starts empty (no free burst at mount
 *      or after a change of the class's model).
 * A live change of a class's model starts its device afresh (bucket, IOPS
 * spacing, queue slots): the requests still waiting are re-timed by the
 * caller (dl_pacer_retime), never to later than they were due.
 *   due = finish; the slot is held until due; queue = start - arrival,
 *   service = due - start. A read first goes through the emulated cache: hit
 *   bytes take hit_bytes / hit_bandwidth from arrival; only miss bytes go
 *   through 1-4 (a full hit skips them); due is the later of the two.
 *   Always due = arrival + queue_ns + service_ns, so dl_pacer_complete finds
 *   the arrival time from the result alone.
 * Phases: the model of the phase current at arrival (phases cycle from the
 * pacer's creation). A change of queue depth between phases keeps the
 * longest-running requests in the slots (or adds free slots).
 * Sharing: with share.policy fcfs (default) every job queues for the one
 * device above, as on a real one; with fair each active job goes through its
 * own copy of steps 1, 2 and 4, with its share of the queue depth, IOPS and
 * bandwidth (share.c), and the same latency draws.
 * A request flagged DL_PREQ_NODEV (a close, a refused call) reaches no
 * device, nor does a read of nothing (at the end of a file): it is counted
 * and answered at once. What the device does is counted as a device would
 * (devwork.c): a read flagged DL_PREQ_BUFFERED goes through its file's
 * emulated readahead: inside what was read ahead it needs no device (due
 * when those bytes are), else its IO moves the next readahead window; with
 * meta.cached_latency a metadata request for an inode seen before takes
 * that latency and no device at all.
 *
 * Locking: the jobs table first, then the cache, then one mutex per class
 * (the model state, the class and per-job statistics); each is held for a
 * few arithmetic steps only. A configuration change holds them all
 * (cfg_lock, jobs, cache, then classes in order) for a pointer swap. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"
#include "dliofs/prng.h"
#include "pacer_i.h"

typedef unsigned __int128 u128;

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* num / den, saturated, with the remainder for the caller to carry. */
static uint64_t div_rem(u128 num, uint64_t den, uint64_t *rem)
{
	u128 q = num / den;

	*rem = (uint64_t)(num % den);
	return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* ---- slot heap ---- */

void pacer_heap_down(uint64_t *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t t;

		if (l < n && h[l] < h[m])
			m = l;
		if (r < n && h[r] < h[m])
			m = r;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void heap_up(uint64_t *h, uint32_t i)
{
	while (i) {
		uint32_t p = (i - 1) / 2;
		uint64_t t;

		if (h[p] <= h[i])
			return;
		t = h[p];
		h[p] = h[i];
		h[i] = t;
		i = p;
	}
}

/* Make the heap hold q slots: new slots are free (0); dropped slots are
 * the ones that free first. */
void pacer_slots_resize(struct pacer_dev *d, uint32_t q)
{
	while (d->nslots > q) {
		d->slots[0] = d->slots[--d->nslots];
		pacer_heap_down(d->slots, d->nslots, 0);
	}
	while (d->nslots < q && d->nslots < d->slots_cap) {
		d->slots[d->nslots] = 0;
		heap_up(d->slots, d->nslots++);
	}
}

/* When a request arriving at s gets one of depth queue slots (0: no
 * limit), marking PACER_HELD_QUEUE when it has to wait for one. */
uint64_t pacer_slot_wait(struct pacer_dev *d, uint32_t depth, uint64_t s, unsigned *held)
{
	if (!depth) {
		d->nslots = 0;
		return s;
	}
	pacer_slots_resize(d, depth);
	if (d->nslots && d->slots[0] > s) {
		*held |= PACER_HELD_QUEUE;
		return d->slots[0];
	}
	return s;
}

static uint32_t max_queue_depth(const struct dl_pacer_cfg *cfg, int c)
{
	uint32_t q = cfg->m[c].queue_depth;

	for (unsigned p = 0; p < cfg->nphases; p++)
		if (cfg->phases[p].m[c].queue_depth > q)
			q = cfg->phases[p].m[c].queue_depth;
	return q;
}

static uint64_t cycle_of(const struct dl_pacer_cfg *cfg)
{
	uint64_t s = 0;

	for (unsigned p = 0; p < cfg->nphases; p++)
		s = sat_add(s, cfg->phases[p].duration_ns);
	return s;
}

static unsigned phase_at(const struct dl_pacer *p, uint64_t t)
{
	uint64_t off;
	unsigned k;

	if (!p->cfg.nphases || !p->cycle_ns)
		return 0;
	off = t > p->t0 ? (t - p->t0) % p->cycle_ns : 0;
	for (k = 0; k + 1 < p->cfg.nphases; k++) {
		if (off < p->cfg.phases[k].duration_ns)
			break;
		off -= p->cfg.phases[k].duration_ns;
	}
	return k;
}

static const struct dl_dev_model *model_at(const struct dl_pacer *p, int c, uint64_t t)
{
	if (!p->cfg.nphases || !p->cycle_ns)
		return &p->cfg.m[c];
	return &p->cfg.phases[phase_at(p, t)].m[c];
}

const struct dl_dev_model *pacer_model_at(const struct dl_pacer *p, int c, uint64_t t)
{
	return model_at(p, c, t);
}

uint64_t pacer_device(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t, uint64_t lat,
		      uint64_t len, uint64_t *start, unsigned *held)
{
	uint64_t s = t, ready, due, step, rem, burst, credit;

	*held = 0;
	if (d->restart) {
		d->restart = 0;
		d->iops_next = 0;
		d->iops_frac = 0;
		/* What the old model still owed is forgotten with it: the
		 * requests it was owed for are re-timed (dl_pacer_retime) and
		 * take their places again under the new one. */
		d->pipe_x = t;
		d->pipe_frac = 0;
		d->nslots = 0;
	}
	s = pacer_slot_wait(d, rt->queue_depth, s, held);
	if (rt->iops) {
		if (d->iops_next > s) {
			s = d->iops_next;
			*held |= PACER_HELD_IOPS;
		}
		step = PACER_NS / rt->iops;
		d->iops_frac += PACER_NS % rt->iops;
		if (d->iops_frac >= rt->iops) {
			d->iops_frac -= rt->iops;
			step++;
		}
		d->iops_next = sat_add(s, step);
	}
	ready = sat_add(s, lat);
	due = ready;
	if (len && rt->bandwidth) {
		burst = rt->burst ? rt->burst : PACER_DEFAULT_BURST;
		credit = div_rem((u128)burst * PACER_NS, rt->bandwidth, &rem);
		if (ready > credit && d->pipe_x < ready - credit) {
			d->pipe_x = ready - credit;
			d->pipe_frac = 0;
		}
		/* Less than half of its bytes in the bucket when it is ready. */
		step = div_rem((u128)len * PACER_NS / 2, rt->bandwidth, &rem);
		if (d->pipe_x + step > ready)
			*held |= PACER_HELD_BUCKET;
		step = div_rem((u128)len * PACER_NS + d->pipe_frac, rt->bandwidth, &d->pipe_frac);
		d->pipe_x = sat_add(d->pipe_x, step);
		if (d->pipe_x > due) {
			due = d->pipe_x;
			*held |= PACER_HELD_BW;
		}
	}
	if (rt->queue_depth && d->nslots) {
		d->slots[0] = due;
		pacer_heap_down(d->slots, d->nslots, 0);
	}
	*start = s;
	return due;
}

static uint64_t stretch(uint64_t lat, double g)
{
	double x = (double)lat * g;

	return x >= (double)DL_PACER_MAX_WAIT_NS ? DL_PACER_MAX_WAIT_NS : (uint64_t)(x + 0.5);
}

/* The device a request of job slot js goes through, and its limits. An
 * arriving request counts as its job's demand; one re-timed after a live
 * change was counted when it arrived. Under the class lock. */
static struct pacer_dev *device_for(struct dl_pacer *p, struct pacer_class *k,
				    const struct dl_dev_model *m, uint32_t js, uint64_t now,
				    uint64_t len, int arriving, struct pacer_rates *rt)
{
	struct pacer_job_cls *jc = &k->jobs[js];
	struct dl_dev_model scaled;

	/* In a cluster: this node's share of the cluster's device. */
	m = pacer_cluster_model(k, m, len, &scaled, &k->cl_slot_hold, &k->cl_lane_hold);
	k->cl_rate = m->bandwidth;
	if (p->cfg.share.policy != DL_SHARE_FAIR) {
		*rt = (struct pacer_rates){m->bandwidth, m->burst,	  m->iops,	 m->queue_depth,
					   m->transfer,	 m->refill_ns, m->iops_burst, m->lanes,
					   m->serial_ns, m->max_request};
		return &k->dev;
	}
	/* A job's own heap has room for the whole queue depth: its share may
	 * grow to all of it. Without memory it queues unlimited. */
	if (!jc->dev.slots && k->dev.slots_cap) {
		jc->dev.slots = calloc(k->dev.slots_cap, sizeof(uint64_t));
		if (jc->dev.slots)
			jc->dev.slots_cap = k->dev.slots_cap;
	}
	if (arriving)
		pacer_share_demand(k->jobs, &k->win_start, &p->cfg.share, js, len, now);
	pacer_share_update(k->jobs, &k->win_start, &k->next_share, m, &p->cfg.share, now, js, len,
			   rt);
	if (rt->queue_depth > jc->dev.slots_cap)
		rt->queue_depth = jc->dev.slots_cap;
	return &jc->dev;
}

static void count_cache(struct pacer_cls_stats *st, struct pacer_job_cls *jc, uint64_t hit,
			uint64_t len)
{
	if (hit == len) {
		st->cache_hits++;
		jc->hits++;
	} else if (hit) {
		st->cache_partial++;
		jc->partial++;
	} else {
		st->cache_misses++;
		jc->misses++;
	}
	st->hit_bytes += hit;
	st->miss_bytes += len - hit;
	jc->hit_bytes += hit;
	jc->miss_bytes += len - hit;
}

/* A request through its device at t after a latency draw lat (draw i):
 * the device model when the class has one, else the plain model. */
static uint64_t serve(struct pacer_class *k, const struct dl_dev_model *m, struct pacer_dev *d,
		      const struct pacer_rates *rt, uint64_t i, uint64_t t, uint64_t lat,
		      uint64_t len, const struct pacer_io *io, uint64_t *start, unsigned *held,
		      int *merged)
{
	uint64_t due;

	*merged = 0;
	if (!rt->transfer)
		due = pacer_device(d, rt, t, lat, len, start, held);
	else
		due = pacer_device_model_io(d, rt, t, lat,
					    pacer_noise(m->noise_ppm, k->noise_key, i),
					    pacer_stall(m->stall_every, m->stall_ns, k->stall_key, i),
					    len, io, start, held, merged);
	pacer_cluster_hold(k, d, rt, *start, due, len, *merged);
	return due;
}

/* The device reads a metadata request for an uncached inode owes
 * (meta.device_ios; a first listing meta.readdir_ios), fractional:
 * carried from request to request. */
static uint64_t meta_owed(struct pacer_class *k, const struct dl_dev_model *m, uint32_t flags)
{
	uint64_t n, per = (flags & DL_PREQ_LISTING) ? m->readdir_ios_ppm : m->device_ios_ppm;

	if (!per)
		return 0;
	k->meta_ios_ppm += per;
	n = k->meta_ios_ppm / 1000000;
	k->meta_ios_ppm -= n * 1000000;
	return n;
}

/* The miss bytes of request r (class lock held): from the client's inode
 * cache (metadata seen before, with meta.cached_latency), from its page
 * cache (a buffered read inside what its file's readahead fetched), or
 * through the device: its latency draw, the queue, IOPS and bandwidth; a
 * buffered read's IO moves its readahead window (devwork.c). Returns the
 * due time; *start is when it left the queue, *busy whether it is in
 * service until completed, *owed the device reads a metadata request not
 * answered from the inode cache owes the read throttle (meta_owed). */
static uint64_t model_request(struct dl_pacer *p, struct pacer_class *k,
			      const struct dl_pacer_req *r, uint32_t js, uint64_t now, uint64_t miss,
			      uint64_t *start, uint64_t *ready, int *busy, uint64_t *owed)
{
	const struct dl_dev_model *m = model_at(p, r->cls, now);
	int buffered = r->cls == DL_OP_READ && (r->flags & DL_PREQ_BUFFERED);
	uint64_t i = k->draws++, lat, due, after = now;
	struct pacer_rates rt;
	struct pacer_dev *d;
	unsigned held;
	int merged;
	/* An unbuffered read served whole by the device may go on its
	 * stream's run (device.c: FUSE's pieces of one read). */
	struct pacer_io io = {
	    .file = r->cls == DL_OP_READ && !buffered && miss == r->len ? r->file_id : 0,
	    .off = r->off,
	    .job = r->job};

	*busy = 0;
	*ready = now;
	/* A listing's blocks are cached apart from its directory's inode
	 * (looked up before it is listed). */
	if (r->cls == DL_OP_META && m->cached_latency.kind != DL_LAT_NONE &&
	    pacer_inode_seen(&k->inodes, r->inode && (r->flags & DL_PREQ_LISTING)
					     ? r->inode ^ PACER_LISTING_KEY
					     : r->inode)) {
		k->st.cached++;
		return sat_add(now, pacer_lat_sample(&m->cached_latency, k->key, i));
	}
	if (r->cls == DL_OP_META)
		*owed = meta_owed(k, m, r->flags);
	if (buffered &&
	    !pacer_ra_read(&k->runs, r->file_id, r->job, r->file_size, r->off, r->len, now, &miss,
			   &after)) {
		/* Read ahead already: there when its window's IO is done. */
		k->st.merged++;
		return after;
	}
	lat = pacer_dev_latency(m, k->key, i, miss);
	d = device_for(p, k, m, js, now, miss, 1, &rt);
	/* In service: the requests of the class submitted to the device and
	 * not yet completed, this one included; in a cluster, the other
	 * nodes' too (as the last exchange counted them): the device is
	 * theirs as well. */
	pacer_cluster_busy(k, now);
	k->busy++;
	*busy = 1;
	if (m->conc.n && pacer_cluster_in_service(k) > 1)
		lat = stretch(lat, pacer_conc_factor(&m->conc, miss, pacer_cluster_in_service(k)));
	due = serve(k, m, d, &rt, i, now, lat, miss, &io, start, &held, &merged);
	if (!rt.transfer)
		*ready = sat_add(*start, lat);
	pacer_share_account(&k->jobs[js], held);
	pacer_cluster_count(k, &k->jobs[js], miss, held, rt.transfer != 0);
	if (buffered)
		pacer_ra_done(&k->runs, r->file_id, r->job, due);
	/* Its first part came with the window before. */
	if (due < after)
		due = after;
	if (*ready < after)
		*ready = after;
	/* A piece that went on its run is no IO of its own. */
	if (merged)
		k->st.merged++;
	else
		k->st.dev_ops++;
	return due;
}

/* No device is involved: flagged so, or a read of nothing (at or beyond the
 * end of its file: the file system knows the size without any IO). */
static int pacer_nodev(const struct dl_pacer_req *r)
{
	return (r->flags & DL_PREQ_NODEV) || (r->cls == DL_OP_READ && !r->len);
}

/* Metadata's device reads (inode and directory blocks) pass the read
 * class's throttle as 4 KiB reads, in arrival order with the data: on a
 * throttled disk they are IOs like the rest (a loader over small files
 * pays 0.1-0.2 of them a file beside its 3 data IOs here). Their service
 * is in meta.latency already, so only the throttle: when the last one
 * leaves it. A read class without a device model (no transfer) has no
 * such throttle. */
static uint64_t meta_throttle(struct dl_pacer *p, uint32_t js, uint64_t n, uint64_t now)
{
	struct pacer_class *rk = &p->cls[DL_OP_READ];
	const struct dl_dev_model *m;
	struct pacer_rates rt;
	struct pacer_dev *d;
	uint64_t t = now;

	pthread_mutex_lock(&rk->lock);
	m = model_at(p, DL_OP_READ, now);
	if (m->transfer && (m->bandwidth || m->iops)) {
		d = device_for(p, rk, m, js, now, PACER_META_IO * n, 0, &rt);
		for (uint64_t i = 0; i < n; i++)
			t = pacer_device_throttle_only(d, &rt, now, PACER_META_IO);
		rk->st.meta_reads += n;
	}
	pthread_mutex_unlock(&rk->lock);
	return t;
}

int dl_pacer_submit(struct dl_pacer *p, const struct dl_pacer_req *r, uint64_t now_ns,
		    struct dl_pacer_result *res)
{
	struct pacer_class *k;
	struct pacer_cls_stats *st;
	struct pacer_job_cls *jc;
	uint64_t hit = 0, hit_due = now_ns, due = now_ns, start = now_ns, ready = now_ns, rem, hbw;
	int emulated = 0, is_new = 0, busy;
	uint64_t meta_reads = 0;
	uint32_t js;

	if (!p || !r || !res || (unsigned)r->cls >= DL_OP__COUNT)
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	js = pacer_job_get(p, r->job, now_ns, &is_new);
	res->slot = js;
	res->flags = is_new ? DL_PRES_NEW_JOB : 0;
	k = &p->cls[r->cls];
	st = &k->st;
	if (pacer_nodev(r)) {
		pthread_mutex_lock(&k->lock);
		st->nodev++;
		k->jobs[js].nodev++;
		k->jobs[js].last_ns = now_ns;
		pthread_mutex_unlock(&k->lock);
		/* A close (its flush and release) ends the job's read stream
		 * of the file: pages kept while it was open are not a cache. */
		if (r->cls == DL_OP_META && r->file_id) {
			struct pacer_class *rk = &p->cls[DL_OP_READ];

			pthread_mutex_lock(&rk->lock);
			pacer_ra_close(&rk->runs, r->file_id, r->job);
			pthread_mutex_unlock(&rk->lock);
		}
		res->due_ns = now_ns;
		return 0;
	}
	if (r->cls == DL_OP_READ && r->len) {
		pthread_mutex_lock(&p->cache_lock);
		if (p->cache) {
			emulated = 1;
			hit = pacer_cache_access(p->cache, r->file_id, r->file_size, r->off, r->len);
			hbw = p->cfg.cache.hit_bandwidth;
			if (hit && hbw)
				hit_due = sat_add(now_ns,
						  div_rem((u128)hit * PACER_NS, hbw, &rem) + !!rem);
		}
		pthread_mutex_unlock(&p->cache_lock);
	}
	pthread_mutex_lock(&k->lock);
	jc = &k->jobs[js];
	/* Before the model: a job's first request makes it active for the
	 * share it is then allocated. */
	pacer_share_begin(jc, now_ns);
	if (p->cfg.enabled) {
		if (!emulated || hit < r->len) {
			due = model_request(p, k, r, js, now_ns, r->len - hit, &start, &ready,
					    &busy, &meta_reads);
			if (busy) {
				res->flags |= DL_PRES_BUSY;
				res->gen = k->gen;
			}
		}
		if (hit_due > due)
			due = hit_due;
		if (hit_due > ready)
			ready = hit_due;
	}
	res->due_ns = due;
	res->ready_ns = ready < due ? ready : due;
	res->queue_ns = start - now_ns;
	res->service_ns = due - start;
	res->hit_bytes = hit;
	res->miss_bytes = r->len - hit;
	st->ops++;
	st->bytes += r->len;
	if (++st->in_flight > st->in_flight_max)
		st->in_flight_max = st->in_flight;
	dl_hist_add(&st->queue, res->queue_ns);
	dl_hist_add(&st->service, res->service_ns);
	jc->ops++;
	jc->bytes += r->len;
	jc->queue_ns += res->queue_ns;
	if (emulated)
		count_cache(st, jc, hit, r->len);
	pthread_mutex_unlock(&k->lock);
	if (meta_reads) {
		/* After the class lock: classes are locked one at a time here
		 * (others take them in index order, read before meta). */
		uint64_t t = meta_throttle(p, js, meta_reads, now_ns);

		if (t > res->due_ns) {
			res->queue_ns += t - res->due_ns;
			res->due_ns = t;
		}
	}
	return 0;
}

void dl_pacer_complete(struct dl_pacer *p, const struct dl_pacer_req *r,
		       const struct dl_pacer_result *res, uint64_t replied_ns)
{
	uint64_t submitted = res->due_ns - res->queue_ns - res->service_ns;
	struct pacer_class *k;

	if (!p || !r || !res || (unsigned)r->cls >= DL_OP__COUNT)
		return;
	if (pacer_nodev(r)) {
		pacer_job_put(p, res->slot);
		return;
	}
	k = &p->cls[r->cls];
	pthread_mutex_lock(&k->lock);
	if ((res->flags & DL_PRES_BUSY) && k->busy) {
		pacer_cluster_busy(k, replied_ns);
		k->busy--;
	}
	if (k->st.in_flight)
		k->st.in_flight--;
	k->st.completed++;
	dl_hist_add(&k->st.lat, replied_ns > submitted ? replied_ns - submitted : 0);
	if (res->slot < PACER_JOB_SLOTS) {
		struct pacer_job_cls *jc = &k->jobs[res->slot];

		dl_hist_add(&jc->lat, replied_ns > submitted ? replied_ns - submitted : 0);
		pacer_share_end(jc);
	}
	if (replied_ns >= res->due_ns)
		dl_hist_add(&k->st.late, replied_ns - res->due_ns);
	else
		k->st.early++;
	pthread_mutex_unlock(&k->lock);
	pacer_job_put(p, res->slot);
}

int dl_pacer_retime(struct dl_pacer *p, const struct dl_pacer_req *r,
		    struct dl_pacer_result *res, uint64_t now_ns)
{
	uint64_t arrival, ready, due = now_ns, start;
	struct pacer_class *k;
	int moved = 0;

	if (!p || !r || !res || (unsigned)r->cls >= DL_OP__COUNT || (r->flags & DL_PREQ_NODEV))
		return 0;
	k = &p->cls[r->cls];
	pthread_mutex_lock(&k->lock);
	if (!(res->flags & DL_PRES_BUSY) || res->gen == k->gen)
		goto out;
	res->gen = k->gen;
	if (k->cl_boost_c > 0 && k->cl_boost_gen == k->gen) {
		/* Its node's share grew (cluster_pacer.c): its wait still
		 * ahead goes at the new rate; the device was not restarted. */
		uint64_t was = res->due_ns;

		if (was > now_ns)
			pacer_cluster_boost_retime(k, model_at(p, r->cls, now_ns)->transfer != 0,
						   res, now_ns);
		moved = res->due_ns < was;
		goto out;
	}
	arrival = res->due_ns - res->queue_ns - res->service_ns;
	if (p->cfg.enabled) {
		const struct dl_dev_model *m = model_at(p, r->cls, now_ns);
		uint64_t lat = pacer_dev_latency(m, k->key, k->draws++, res->miss_bytes);
		struct pacer_rates rt;
		struct pacer_dev *d;
		unsigned held;

		if (m->conc.n && pacer_cluster_in_service(k) > 1)
			lat = stretch(lat, pacer_conc_factor(&m->conc, res->miss_bytes,
							     pacer_cluster_in_service(k)));
		/* Its latency runs from its arrival, not from the change. */
		ready = sat_add(arrival, lat);
		d = device_for(p, k, m, res->slot, now_ns, res->miss_bytes, 0, &rt);
		int merged;

		due = serve(k, m, d, &rt, k->draws - 1, now_ns, ready > now_ns ? ready - now_ns : 0,
			    res->miss_bytes, NULL, &start, &held, &merged);
	}
	if (due < res->due_ns) {
		if (due < arrival)
			due = arrival;
		if (res->queue_ns > due - arrival)
			res->queue_ns = due - arrival;
		res->service_ns = due - arrival - res->queue_ns;
		res->due_ns = due;
		if (res->ready_ns > due)
			res->ready_ns = due;
		moved = 1;
	}
out:
	pthread_mutex_unlock(&k->lock);
	return moved;
}

/* ---- life cycle and configuration ---- */

/* What a configuration change allocates, prepared before any lock. */
struct swap {
	struct dl_pacer_cfg cfg;
	struct pacer_cache *cache;
	int new_cache;
	uint64_t *slots[DL_OP__COUNT];
	uint32_t slots_cap[DL_OP__COUNT];
};

static void swap_free(struct swap *s)
{
	dl_pacer_cfg_free(&s->cfg);
	if (s->new_cache)
		pacer_cache_free(s->cache);
	for (int c = 0; c < DL_OP__COUNT; c++)
		free(s->slots[c]);
}

static int cache_changed(const struct dl_cache_cfg *a, const struct dl_cache_cfg *b)
{
	return a->policy != b->policy || a->size != b->size || a->block != b->block;
}

static int swap_prepare(struct dl_pacer *p, struct swap *s, int first)
{
	int ret;

	if (first || cache_changed(&p->cfg.cache, &s->cfg.cache)) {
		s->new_cache = 1;
		if (s->cfg.cache.policy != DL_CACHE_KERNEL) {
			ret = pacer_cache_new(&s->cfg.cache, &s->cache);
			if (ret)
				return ret;
		}
	}
	for (int c = 0; c < DL_OP__COUNT; c++) {
		uint32_t q = max_queue_depth(&s->cfg, c);

		if (!first && q == p->cls[c].dev.slots_cap)
			continue;
		s->slots_cap[c] = q;
		if (q && !(s->slots[c] = calloc(q, sizeof(uint64_t))))
			return -ENOMEM;
	}
	return 0;
}

static int model_changed(const struct dl_dev_model *a, const struct dl_dev_model *b)
{
	return a->bandwidth != b->bandwidth || a->burst != b->burst || a->iops != b->iops ||
	       a->queue_depth != b->queue_depth || !pacer_lat_equal(&a->latency, &b->latency) ||
	       !pacer_sizes_equal(&a->lat_size, &b->lat_size) ||
	       !pacer_conc_equal(&a->conc, &b->conc) || a->refill_ns != b->refill_ns ||
	       a->iops_burst != b->iops_burst || a->transfer != b->transfer ||
	       a->lanes != b->lanes || a->serial_ns != b->serial_ns;
}

static int share_changed(const struct dl_share_cfg *a, const struct dl_share_cfg *b)
{
	return a->policy != b->policy || a->window_ns != b->window_ns || a->nrules != b->nrules ||
	       memcmp(a->rules, b->rules, sizeof(a->rules));
}

/* The rule a job's name matches (first wins), -1: none. */
static int rule_of(const struct dl_share_cfg *sc, const char *name)
{
	for (unsigned i = 0; i < sc->nrules; i++)
		if (sc->rules[i].match[0] && strstr(name, sc->rules[i].match))
			return (int)i;
	return -1;
}

/* A job's weight and caps in every class (jobs lock and class locks held). */
static void apply_rule(struct dl_pacer *p, uint32_t slot)
{
	struct pacer_job *j = &p->jobs.slot[slot];
	const struct dl_share_rule *r;

	j->rule = j->named ? rule_of(&p->cfg.share, j->name) : -1;
	r = j->rule >= 0 ? &p->cfg.share.rules[j->rule] : NULL;
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_job_cls *jc = &p->cls[c].jobs[slot];

		jc->weight = r && r->weight ? r->weight : 1;
		jc->cap_bw = r ? r->bandwidth : 0;
		jc->cap_iops = r ? r->iops : 0;
		/* The next request recomputes the allocation. */
		p->cls[c].next_share = 0;
	}
}

/* Install s (all locks held by the caller); s is left with what to free. */
static void swap_apply(struct dl_pacer *p, struct swap *s, int first)
{
	struct dl_pacer_cfg old = p->cfg;
	struct pacer_cache *oc = p->cache;
	int shared = first || share_changed(&old.share, &s->cfg.share);

	p->cfg = s->cfg;
	s->cfg = old;
	p->cycle_ns = cycle_of(&p->cfg);
	if (s->new_cache) {
		p->cache = s->cache;
		s->cache = oc;
	}
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_class *k = &p->cls[c];
		int changed = first || model_changed(&old.m[c], &p->cfg.m[c]) ||
			      old.nphases != p->cfg.nphases || old.enabled != p->cfg.enabled ||
			      shared;

		for (unsigned ph = 0; !changed && ph < p->cfg.nphases; ph++)
			changed = model_changed(&old.phases[ph].m[c], &p->cfg.phases[ph].m[c]);
		if (changed && !first) {
			k->gen++;
			k->dev.restart = 1;
			for (unsigned j = 0; j < PACER_JOB_SLOTS; j++)
				k->jobs[j].dev.restart = 1;
			k->next_share = 0;
		}
		if (first || s->slots[c] || s->slots_cap[c] != k->dev.slots_cap) {
			uint64_t *os = k->dev.slots;
			uint32_t keep;

			/* Keep the busiest slots that fit in the new array. */
			keep = k->dev.nslots < s->slots_cap[c] ? k->dev.nslots : s->slots_cap[c];
			pacer_slots_resize(&k->dev, keep);
			if (keep)
				memcpy(s->slots[c], os, keep * sizeof(*os));
			k->dev.slots = s->slots[c];
			k->dev.slots_cap = s->slots_cap[c];
			s->slots[c] = os;
			/* Jobs' own heaps are sized to the old depth: new ones
			 * come with the next request. */
			for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
				free(k->jobs[j].dev.slots);
				k->jobs[j].dev.slots = NULL;
				k->jobs[j].dev.slots_cap = 0;
				k->jobs[j].dev.nslots = 0;
			}
		}
	}
	if (shared)
		for (uint32_t j = 0; j < PACER_JOB_SLOTS; j++)
			apply_rule(p, j);
}

static void lock_all(struct dl_pacer *p)
{
	pthread_mutex_lock(&p->jobs.lock);
	pthread_mutex_lock(&p->cache_lock);
	for (int c = 0; c < DL_OP__COUNT; c++)
		pthread_mutex_lock(&p->cls[c].lock);
}

static void unlock_all(struct dl_pacer *p)
{
	for (int c = DL_OP__COUNT - 1; c >= 0; c--)
		pthread_mutex_unlock(&p->cls[c].lock);
	pthread_mutex_unlock(&p->cache_lock);
	pthread_mutex_unlock(&p->jobs.lock);
}

void dl_pacer_free(struct dl_pacer *p)
{
	if (!p)
		return;
	for (int c = 0; c < DL_OP__COUNT; c++) {
		pthread_mutex_destroy(&p->cls[c].lock);
		free(p->cls[c].dev.slots);
		pacer_inodes_free(&p->cls[c].inodes);
		for (unsigned j = 0; p->cls[c].jobs && j < PACER_JOB_SLOTS; j++)
			free(p->cls[c].jobs[j].dev.slots);
		free(p->cls[c].jobs);
	}
	pacer_cache_free(p->cache);
	pacer_cluster_free(p->cl);
	pthread_mutex_destroy(&p->cl_lock);
	dl_pacer_cfg_free(&p->cfg);
	pthread_mutex_destroy(&p->jobs.lock);
	pthread_mutex_destroy(&p->cache_lock);
	pthread_mutex_destroy(&p->cfg_lock);
	free(p);
}

int dl_pacer_new(const struct dl_pacer_cfg *cfg, uint64_t now_ns, uint64_t seed,
		 struct dl_pacer **out)
{
	struct dl_pacer *p;
	struct swap s;
	char err[256];
	int ret;

	if (!cfg || !out)
		return -EINVAL;
	if (dl_pacer_cfg_check(cfg, err, sizeof(err)))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->cfg_lock, NULL);
	pthread_mutex_init(&p->jobs.lock, NULL);
	pthread_mutex_init(&p->cache_lock, NULL);
	pthread_mutex_init(&p->cl_lock, NULL);
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_class *k = &p->cls[c];

		pthread_mutex_init(&k->lock, NULL);
		k->key = dl_key2(seed, (uint64_t)c + 1);
		k->noise_key = dl_key3(seed, (uint64_t)c + 1, 0x9015e);
		k->stall_key = dl_key3(seed, (uint64_t)c + 1, 0x57a11);
		k->dev.pipe_x = now_ns; /* the bucket starts empty */
		k->win_start = now_ns;
		k->jobs = calloc(PACER_JOB_SLOTS, sizeof(*k->jobs));
		if (!k->jobs) {
			dl_pacer_free(p);
			return -ENOMEM;
		}
	}
	memset(&s, 0, sizeof(s));
	ret = dl_pacer_cfg_copy(&s.cfg, cfg);
	if (ret) {
		dl_pacer_free(p);
		return ret;
	}
	ret = swap_prepare(p, &s, 1);
	if (ret) {
		swap_free(&s);
		dl_pacer_free(p);
		return ret;
	}
	dl_pacer_cfg_init(&p->cfg);
	swap_apply(p, &s, 1);
	swap_free(&s);
	p->t0 = now_ns;
	p->since_ns = now_ns;
	*out = p;
	return 0;
}

/* Check s->cfg and install it (cfg_lock held). */
static int install(struct dl_pacer *p, struct swap *s, char *err, size_t errlen)
{
	int ret = dl_pacer_cfg_check(&s->cfg, err, errlen);

	if (ret)
		return ret;
	for (int c = 0; c < DL_OP__COUNT; c++)
		s->slots_cap[c] = p->cls[c].dev.slots_cap;
	ret = swap_prepare(p, s, 0);
	if (ret) {
		snprintf(err, errlen, "pacer: out of memory");
		return ret;
	}
	lock_all(p);
	swap_apply(p, s, 0);
	unlock_all(p);
	return 0;
}

int dl_pacer_set(struct dl_pacer *p, const char *key, const char *value, char *err, size_t errlen)
{
	struct swap s;
	int ret;

	if (!p)
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	pthread_mutex_lock(&p->cfg_lock);
	ret = dl_pacer_cfg_copy(&s.cfg, &p->cfg);
	if (ret) {
		snprintf(err, errlen, "%s: out of memory", key ? key : "pacer");
		goto out;
	}
	ret = dl_pacer_cfg_set(&s.cfg, key, value, err, errlen);
	if (!ret)
		ret = install(p, &s, err, errlen);
out:
	pthread_mutex_unlock(&p->cfg_lock);
	swap_free(&s);
	return ret;
}

int dl_pacer_set_cfg(struct dl_pacer *p, const struct dl_pacer_cfg *cfg, char *err, size_t errlen)
{
	struct swap s;
	int ret;

	if (!p || !cfg)
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	pthread_mutex_lock(&p->cfg_lock);
	ret = dl_pacer_cfg_copy(&s.cfg, cfg);
	if (ret)
		snprintf(err, errlen, "pacer: out of memory");
	else
		ret = install(p, &s, err, errlen);
	pthread_mutex_unlock(&p->cfg_lock);
	swap_free(&s);
	return ret;
}

int dl_pacer_get_cfg(struct dl_pacer *p, struct dl_pacer_cfg *out)
{
	int ret;

	pthread_mutex_lock(&p->cfg_lock);
	ret = dl_pacer_cfg_copy(out, &p->cfg);
	pthread_mutex_unlock(&p->cfg_lock);
	return ret;
}

uint64_t dl_pacer_blksize(struct dl_pacer *p)
{
	uint64_t b;

	pthread_mutex_lock(&p->cache_lock);
	b = p->cfg.blksize;
	pthread_mutex_unlock(&p->cache_lock);
	return b ? b : 1ULL << 20;
}

enum dl_cache_policy dl_pacer_cache_policy(struct dl_pacer *p)
{
	enum dl_cache_policy pol;

	pthread_mutex_lock(&p->cache_lock);
	pol = p->cfg.cache.policy;
	pthread_mutex_unlock(&p->cache_lock);
	return pol;
}

void dl_pacer_cache_origin(struct dl_pacer *p, const char *origin)
{
	pthread_mutex_lock(&p->cfg_lock);
	lock_all(p);
	snprintf(p->cfg.cache.origin, sizeof(p->cfg.cache.origin), "%s", origin);
	unlock_all(p);
	pthread_mutex_unlock(&p->cfg_lock);
}

void dl_pacer_cache_drop(struct dl_pacer *p)
{
	pthread_mutex_lock(&p->cache_lock);
	if (p->cache)
		pacer_cache_clear(p->cache);
	/* The kernel's pages and inodes go with a drop: so do a reader's
	 * runs (read ahead into pages now gone) and the inodes seen. */
	pthread_mutex_lock(&p->cls[DL_OP_READ].lock);
	pacer_runs_clear(&p->cls[DL_OP_READ].runs);
	pthread_mutex_unlock(&p->cls[DL_OP_READ].lock);
	pthread_mutex_lock(&p->cls[DL_OP_META].lock);
	pacer_inodes_clear(&p->cls[DL_OP_META].inodes);
	pthread_mutex_unlock(&p->cls[DL_OP_META].lock);
	pthread_mutex_unlock(&p->cache_lock);
}

int dl_pacer_cache_warm(struct dl_pacer *p, uint64_t file_id, uint64_t len)
{
	int ret = 0;

	pthread_mutex_lock(&p->cache_lock);
	if (p->cache && pacer_cache_capacity(p->cache))
		pacer_cache_warm(p->cache, file_id, len);
	else
		ret = -EINVAL;
	pthread_mutex_unlock(&p->cache_lock);
	return ret;
}

void dl_pacer_job_info(struct dl_pacer *p, uint32_t job, const char *name, uint32_t procs,
		       uint32_t threads)
{
	uint32_t i;

	if (!p || !job)
		return;
	pthread_mutex_lock(&p->jobs.lock);
	for (i = 0; i < PACER_MAX_JOBS; i++)
		if (p->jobs.slot[i].id == job)
			break;
	if (i < PACER_MAX_JOBS) {
		struct pacer_job *j = &p->jobs.slot[i];
		int renamed = !j->named || strncmp(j->name, name, sizeof(j->name));

		snprintf(j->name, sizeof(j->name), "%s", name);
		j->named = 1;
		j->procs = procs;
		j->threads = threads;
		if (renamed) {
			for (int c = 0; c < DL_OP__COUNT; c++)
				pthread_mutex_lock(&p->cls[c].lock);
			apply_rule(p, i);
			for (int c = DL_OP__COUNT - 1; c >= 0; c--)
				pthread_mutex_unlock(&p->cls[c].lock);
		}
	}
	pthread_mutex_unlock(&p->jobs.lock);
}

/* ---- statistics ---- */

int dl_pacer_stats_write(struct dl_pacer *p, uint64_t now_ns, struct dl_jw *w)
{
	struct pacer_snapshot *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->now_ns = now_ns;
	pthread_mutex_lock(&p->jobs.lock);
	s->since_ns = p->since_ns == UINT64_MAX ? now_ns : p->since_ns;
	s->jobs_evicted = p->jobs.evicted;
	for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
		const struct pacer_job *src = &p->jobs.slot[j];
		struct pacer_job *dst = &s->job[j];

		dst->id = src->id;
		dst->named = src->named;
		memcpy(dst->name, src->name, sizeof(dst->name));
		dst->procs = src->procs;
		dst->threads = src->threads;
		dst->rule = src->rule;
		dst->first_ns = src->first_ns;
		dst->last_ns = src->last_ns;
	}
	pthread_mutex_lock(&p->cache_lock);
	s->cache = p->cfg.cache;
	if (p->cache) {
		s->cache_resident = pacer_cache_resident(p->cache);
		s->cache_capacity = pacer_cache_capacity(p->cache);
		s->cache_entries = pacer_cache_entries(p->cache);
	}
	pthread_mutex_unlock(&p->cache_lock);
	for (int c = 0; c < DL_OP__COUNT; c++) {
		pthread_mutex_lock(&p->cls[c].lock);
		s->cls[c] = p->cls[c].st;
		for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
			s->jcls[j][c] = p->cls[c].jobs[j];
			/* The copy must not look like it owns the heap. */
			s->jcls[j][c].dev.slots = NULL;
		}
		if (c == 0) {
			s->enabled = p->cfg.enabled;
			memcpy(s->profile, p->cfg.profile, sizeof(s->profile));
			s->profile[sizeof(s->profile) - 1] = '\0';
			s->nphases = p->cfg.nphases;
			s->phase = phase_at(p, now_ns);
			s->share = p->cfg.share;
		}
		pthread_mutex_unlock(&p->cls[c].lock);
	}
	pthread_mutex_unlock(&p->jobs.lock);
	pacer_stats_write(s, w);
	free(s);
	pacer_cluster_stats(p, w);
	return 0;
}

int dl_pacer_stats_json(struct dl_pacer *p, uint64_t now_ns, char **buf, size_t *len)
{
	struct dl_jw w;
	FILE *f = open_memstream(buf, len);
	int ret;

	if (!f)
		return -ENOMEM;
	dl_jw_init(&w, f, 2);
	dl_jw_obj(&w, NULL);
	ret = dl_pacer_stats_write(p, now_ns, &w);
	if (!ret)
		ret = dl_jw_finish(&w);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

void dl_pacer_stats_reset(struct dl_pacer *p)
{
	pthread_mutex_lock(&p->jobs.lock);
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_cls_stats *st = &p->cls[c].st;
		uint64_t in_flight;

		pthread_mutex_lock(&p->cls[c].lock);
		/* Requests in flight still complete: keep counting them. */
		in_flight = st->in_flight;
		memset(st, 0, sizeof(*st));
		st->in_flight = st->in_flight_max = in_flight;
		for (unsigned j = 0; j < PACER_JOB_SLOTS; j++)
			pacer_job_cls_reset(&p->cls[c].jobs[j]);
		pthread_mutex_unlock(&p->cls[c].lock);
	}
	/* Jobs with nothing in flight leave the table: a job that goes on
	 * comes back with its next request (and is named again). */
	for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
		struct pacer_job *jb = &p->jobs.slot[j];

		if (j == PACER_JOB_OTHER || atomic_load(&jb->refs) == 0) {
			memset(jb->name, 0, sizeof(jb->name));
			jb->id = 0;
			jb->named = 0;
			jb->rule = -1;
		}
		jb->first_ns = jb->last_ns = 0;
	}
	p->jobs.evicted = 0;
	p->since_ns = UINT64_MAX;
	pthread_mutex_unlock(&p->jobs.lock);
}
