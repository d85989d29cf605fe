/* The timing model. Per operation class, in this order:
 *   1. queue depth Q: the request takes the slot that frees first; since
 *      requests are admitted in arrival order, it starts when at most Q - 1
 *      earlier requests are still in service (FIFO M/G/Q). Slots are a
 *      min-heap of the due times of the requests holding them.
 *   2. IOPS: starts are at least 1/iops apart (exact: the remainder of
 *      10^9 / iops is carried, so the long-run rate is exact).
 *   3. latency: a seeded draw L; the data is ready at start + L.
 *   4. bandwidth: a token bucket of `burst` bytes refilled at `bandwidth`
 *      B/s, shared by the class. It is kept as the time X at which it is empty
 *      (level at time t: min(burst, (t - X) * bandwidth)); a transfer of n
 *      bytes ready at r sets X = max(X, r - burst/bandwidth) + n/bandwidth and
 *      finishes at max(r, X). Busy, it is a pipe moving bytes one request
 *      after another at exactly `bandwidth`; after idle time it lets up to
 *      `burst` bytes through at once. It starts empty (no free burst at mount
 *      or after a change of bandwidth, burst or iops).
 *   due = finish; the slot is held until due; queue = start - arrival,
 *   service = due - start. A read first goes through the emulated cache: hit
 *   bytes take hit_bytes / hit_bandwidth from arrival; only miss bytes go
 *   through 1-4 (a full hit skips them); due is the later of the two.
 *   Always due = arrival + queue_ns + service_ns, so dl_pacer_complete finds
 *   the arrival time from the result alone.
 * Phases: the model of the phase current at arrival (phases cycle from the
 * pacer's creation). A change of queue depth between phases keeps the
 * longest-running requests in the slots (or adds free slots).
 *
 * Locking: one mutex per class (the model state and the class statistics),
 * one for the cache, one for the per-client table; each is held for a few
 * arithmetic steps only. A configuration change holds them all (cfg_lock,
 * cache, then classes in order) for a pointer swap. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "pacer_i.h"

typedef unsigned __int128 u128;

struct pacer_class {
	pthread_mutex_t lock;
	uint64_t key; /* latency stream */
	uint64_t draws;
	uint64_t *slots; /* min-heap of due times, nslots <= slots_cap */
	uint32_t nslots, slots_cap;
	uint64_t iops_next, iops_frac;
	uint64_t pipe_x, pipe_frac; /* token bucket: the time it is empty, + frac/B ns */
	int restart;		    /* bandwidth or iops changed: start empty at next request */
	struct pacer_cls_stats st;
};

struct dl_pacer {
	pthread_mutex_t cfg_lock; /* serializes changes and reads of cfg */
	pthread_mutex_t cache_lock;
	struct pacer_class cls[DL_OP__COUNT];
	/* Written only with every lock held; read under any class lock (the
	 * model) or the cache lock (cfg.cache). */
	struct dl_pacer_cfg cfg;
	uint64_t t0, cycle_ns;
	struct pacer_cache *cache; /* NULL: policy kernel, nothing emulated */
	struct pacer_pids pids;	   /* and since_ns, under pids.lock */
	uint64_t since_ns;	   /* statistics start; UINT64_MAX: at next event */
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* num / den, saturated, with the remainder for the caller to carry. */
static uint64_t div_rem(u128 num, uint64_t den, uint64_t *rem)
{
	u128 q = num / den;

	*rem = (uint64_t)(num % den);
	return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* ---- slot heap ---- */

static void heap_down(uint64_t *h, uint32_t n, uint32_t i)
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
static void slots_resize(struct pacer_class *k, uint32_t q)
{
	while (k->nslots > q) {
		k->slots[0] = k->slots[--k->nslots];
		heap_down(k->slots, k->nslots, 0);
	}
	while (k->nslots < q && k->nslots < k->slots_cap) {
		k->slots[k->nslots] = 0;
		heap_up(k->slots, k->nslots++);
	}
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

/* Steps 1-4 of the model for the bytes that reach the device. Returns the
 * due time; *start is when the request left the queue. Class lock held. */
static uint64_t device(struct pacer_class *k, const struct dl_dev_model *m, uint64_t t,
		       uint64_t len, uint64_t *start)
{
	uint64_t s = t, ready, due, step, rem, burst, credit;

	if (k->restart) {
		k->restart = 0;
		k->iops_next = 0;
		k->iops_frac = 0;
		if (k->pipe_x < t) {
			k->pipe_x = t;
			k->pipe_frac = 0;
		}
	}
	if (m->queue_depth) {
		slots_resize(k, m->queue_depth);
		if (k->nslots && k->slots[0] > s)
			s = k->slots[0];
	} else {
		k->nslots = 0;
	}
	if (m->iops) {
		if (k->iops_next > s)
			s = k->iops_next;
		step = PACER_NS / m->iops;
		k->iops_frac += PACER_NS % m->iops;
		if (k->iops_frac >= m->iops) {
			k->iops_frac -= m->iops;
			step++;
		}
		k->iops_next = sat_add(s, step);
	}
	ready = sat_add(s, pacer_lat_sample(&m->latency, k->key, k->draws++));
	due = ready;
	if (len && m->bandwidth) {
		burst = m->burst ? m->burst : PACER_DEFAULT_BURST;
		credit = div_rem((u128)burst * PACER_NS, m->bandwidth, &rem);
		if (ready > credit && k->pipe_x < ready - credit) {
			k->pipe_x = ready - credit;
			k->pipe_frac = 0;
		}
		step = div_rem((u128)len * PACER_NS + k->pipe_frac, m->bandwidth, &k->pipe_frac);
		k->pipe_x = sat_add(k->pipe_x, step);
		if (k->pipe_x > due)
			due = k->pipe_x;
	}
	if (m->queue_depth && k->nslots) {
		k->slots[0] = due;
		heap_down(k->slots, k->nslots, 0);
	}
	*start = s;
	return due;
}

int dl_pacer_submit(struct dl_pacer *p, const struct dl_pacer_req *r, uint64_t now_ns,
		    struct dl_pacer_result *res)
{
	struct pacer_class *k;
	struct pacer_cls_stats *st;
	uint64_t hit = 0, hit_due = now_ns, due = now_ns, start = now_ns, rem, hbw;
	int emulated = 0;

	if (!p || !r || !res || (unsigned)r->cls >= DL_OP__COUNT)
		return -EINVAL;
	if (r->cls == DL_OP_READ && r->len) {
		pthread_mutex_lock(&p->cache_lock);
		if (p->cache) {
			emulated = 1;
			hit = pacer_cache_access(p->cache, r->file_id, r->off, r->len);
			hbw = p->cfg.cache.hit_bandwidth;
			if (hit && hbw)
				hit_due = sat_add(now_ns,
						  div_rem((u128)hit * PACER_NS, hbw, &rem) + !!rem);
		}
		pthread_mutex_unlock(&p->cache_lock);
	}
	k = &p->cls[r->cls];
	st = &k->st;
	pthread_mutex_lock(&k->lock);
	if (p->cfg.enabled) {
		if (!emulated || hit < r->len)
			due = device(k, model_at(p, r->cls, now_ns), now_ns, r->len - hit, &start);
		if (hit_due > due)
			due = hit_due;
	}
	res->due_ns = due;
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
	if (emulated) {
		if (hit == r->len)
			st->cache_hits++;
		else if (hit)
			st->cache_partial++;
		else
			st->cache_misses++;
		st->hit_bytes += hit;
		st->miss_bytes += r->len - hit;
	}
	pthread_mutex_unlock(&k->lock);

	pthread_mutex_lock(&p->pids.lock);
	if (p->since_ns == UINT64_MAX)
		p->since_ns = now_ns;
	pacer_pids_account(&p->pids, r->pid, r->cls, r->len);
	pthread_mutex_unlock(&p->pids.lock);
	return 0;
}

void dl_pacer_complete(struct dl_pacer *p, const struct dl_pacer_req *r,
		       const struct dl_pacer_result *res, uint64_t replied_ns)
{
	uint64_t submitted = res->due_ns - res->queue_ns - res->service_ns;
	struct pacer_class *k;

	if (!p || !r || !res || (unsigned)r->cls >= DL_OP__COUNT)
		return;
	k = &p->cls[r->cls];
	pthread_mutex_lock(&k->lock);
	if (k->st.in_flight)
		k->st.in_flight--;
	k->st.completed++;
	dl_hist_add(&k->st.lat, replied_ns > submitted ? replied_ns - submitted : 0);
	if (replied_ns >= res->due_ns)
		dl_hist_add(&k->st.late, replied_ns - res->due_ns);
	else
		k->st.early++;
	pthread_mutex_unlock(&k->lock);
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

		if (!first && q == p->cls[c].slots_cap)
			continue;
		s->slots_cap[c] = q;
		if (q && !(s->slots[c] = calloc(q, sizeof(uint64_t))))
			return -ENOMEM;
	}
	return 0;
}

static int model_changed(const struct dl_dev_model *a, const struct dl_dev_model *b)
{
	return a->bandwidth != b->bandwidth || a->burst != b->burst || a->iops != b->iops;
}

/* Install s (all locks held by the caller); s is left with what to free. */
static void swap_apply(struct dl_pacer *p, struct swap *s, int first)
{
	struct dl_pacer_cfg old = p->cfg;
	struct pacer_cache *oc = p->cache;

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
			      old.nphases != p->cfg.nphases;

		for (unsigned ph = 0; !changed && ph < p->cfg.nphases; ph++)
			changed = model_changed(&old.phases[ph].m[c], &p->cfg.phases[ph].m[c]);
		if (changed && !first)
			k->restart = 1;
		if (first || s->slots[c] || s->slots_cap[c] != k->slots_cap) {
			uint64_t *os = k->slots;
			uint32_t keep;

			/* Keep the busiest slots that fit in the new array. */
			keep = k->nslots < s->slots_cap[c] ? k->nslots : s->slots_cap[c];
			slots_resize(k, keep);
			if (keep)
				memcpy(s->slots[c], os, keep * sizeof(*os));
			k->slots = s->slots[c];
			k->slots_cap = s->slots_cap[c];
			s->slots[c] = os;
		}
	}
}

static void lock_all(struct dl_pacer *p)
{
	pthread_mutex_lock(&p->cache_lock);
	for (int c = 0; c < DL_OP__COUNT; c++)
		pthread_mutex_lock(&p->cls[c].lock);
}

static void unlock_all(struct dl_pacer *p)
{
	for (int c = DL_OP__COUNT - 1; c >= 0; c--)
		pthread_mutex_unlock(&p->cls[c].lock);
	pthread_mutex_unlock(&p->cache_lock);
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
	memset(&s, 0, sizeof(s));
	ret = dl_pacer_cfg_copy(&s.cfg, cfg);
	if (ret) {
		free(p);
		return ret;
	}
	ret = swap_prepare(p, &s, 1);
	if (ret) {
		swap_free(&s);
		free(p);
		return ret;
	}
	dl_pacer_cfg_init(&p->cfg);
	swap_apply(p, &s, 1);
	swap_free(&s);
	pthread_mutex_init(&p->cfg_lock, NULL);
	pthread_mutex_init(&p->cache_lock, NULL);
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_class *k = &p->cls[c];

		pthread_mutex_init(&k->lock, NULL);
		k->key = dl_key2(seed, (uint64_t)c + 1);
		k->pipe_x = now_ns; /* the bucket starts empty */
	}
	pacer_pids_init(&p->pids);
	p->t0 = now_ns;
	p->since_ns = now_ns;
	*out = p;
	return 0;
}

void dl_pacer_free(struct dl_pacer *p)
{
	if (!p)
		return;
	for (int c = 0; c < DL_OP__COUNT; c++) {
		pthread_mutex_destroy(&p->cls[c].lock);
		free(p->cls[c].slots);
	}
	pacer_cache_free(p->cache);
	dl_pacer_cfg_free(&p->cfg);
	pthread_mutex_destroy(&p->pids.lock);
	pthread_mutex_destroy(&p->cache_lock);
	pthread_mutex_destroy(&p->cfg_lock);
	free(p);
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
	if (ret)
		goto out;
	ret = dl_pacer_cfg_check(&s.cfg, err, errlen);
	if (ret)
		goto out;
	for (int c = 0; c < DL_OP__COUNT; c++)
		s.slots_cap[c] = p->cls[c].slots_cap;
	ret = swap_prepare(p, &s, 0);
	if (ret) {
		snprintf(err, errlen, "%s: out of memory", key);
		goto out;
	}
	lock_all(p);
	swap_apply(p, &s, 0);
	unlock_all(p);
out:
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

void dl_pacer_cache_drop(struct dl_pacer *p)
{
	pthread_mutex_lock(&p->cache_lock);
	if (p->cache)
		pacer_cache_clear(p->cache);
	pthread_mutex_unlock(&p->cache_lock);
}

void dl_pacer_cache_warm(struct dl_pacer *p, uint64_t file_id, uint64_t len)
{
	pthread_mutex_lock(&p->cache_lock);
	if (p->cache)
		pacer_cache_warm(p->cache, file_id, len);
	pthread_mutex_unlock(&p->cache_lock);
}

/* ---- statistics ---- */

int dl_pacer_stats_json(struct dl_pacer *p, uint64_t now_ns, char **buf, size_t *len)
{
	struct pacer_snapshot *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->now_ns = now_ns;
	pthread_mutex_lock(&p->cache_lock);
	s->cache = p->cfg.cache;
	if (p->cache) {
		s->cache_resident = pacer_cache_resident(p->cache);
		s->cache_capacity = pacer_cache_capacity(p->cache);
	}
	pthread_mutex_unlock(&p->cache_lock);
	for (int c = 0; c < DL_OP__COUNT; c++) {
		pthread_mutex_lock(&p->cls[c].lock);
		s->cls[c] = p->cls[c].st;
		if (c == 0) {
			s->enabled = p->cfg.enabled;
			memcpy(s->profile, p->cfg.profile, sizeof(s->profile));
			s->profile[sizeof(s->profile) - 1] = '\0';
			s->nphases = p->cfg.nphases;
			s->phase = phase_at(p, now_ns);
		}
		pthread_mutex_unlock(&p->cls[c].lock);
	}
	pthread_mutex_lock(&p->pids.lock);
	s->since_ns = p->since_ns == UINT64_MAX ? now_ns : p->since_ns;
	s->pids.n = p->pids.n;
	s->pids.evicted = p->pids.evicted;
	memcpy(s->pids.e, p->pids.e, sizeof(s->pids.e));
	s->pids.other = p->pids.other;
	pthread_mutex_unlock(&p->pids.lock);
	ret = pacer_stats_format(s, buf, len);
	free(s);
	return ret;
}

void dl_pacer_stats_reset(struct dl_pacer *p)
{
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_cls_stats *st = &p->cls[c].st;
		uint64_t in_flight;

		pthread_mutex_lock(&p->cls[c].lock);
		/* Requests in flight still complete: keep counting them. */
		in_flight = st->in_flight;
		memset(st, 0, sizeof(*st));
		st->in_flight = st->in_flight_max = in_flight;
		pthread_mutex_unlock(&p->cls[c].lock);
	}
	pthread_mutex_lock(&p->pids.lock);
	pacer_pids_reset(&p->pids);
	p->since_ns = UINT64_MAX;
	pthread_mutex_unlock(&p->pids.lock);
}
