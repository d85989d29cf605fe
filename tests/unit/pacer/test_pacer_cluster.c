/* A cluster of mounts sharing one storage model (pacer/cluster.c): the
 * allocation alone (shares follow demand, an idle node's share goes to the
 * busy ones, fair per job across nodes, weights), the demand read off a
 * node's counts, and N pacers in virtual time with the exchange every
 * period, as fs/cluster.c runs it: the aggregate stays at the budget,
 * shares are even, a node alone gets the whole budget, and the overshoot
 * between exchanges is bounded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/pacer.h"
#include "pacer_kv.h"
#include "tap.h"

#define MiB ((uint64_t)1 << 20)
#define MS ((uint64_t)1000000)
#define SEC ((uint64_t)1000000000)
#define T0 (1000 * SEC)

static double rel(double a, double b) { return fabs(a / b - 1); }

static struct dl_cluster_want busy(void)
{
	return (struct dl_cluster_want){INFINITY, INFINITY, INFINITY, 1e6, 1, 1, 1};
}

static struct dl_cluster_want using(double f)
{
	return (struct dl_cluster_want){f, f, f, 1e6, 1, 1, 1};
}

static void node(struct dl_cluster_node *n, uint32_t rank, int cls, struct dl_cluster_want w)
{
	memset(n, 0, sizeof(*n));
	n->rank = rank;
	n->w[cls] = w;
}

static void add_job(struct dl_cluster_node *n, uint64_t key, uint32_t weight, int cls,
		    struct dl_cluster_want w)
{
	struct dl_cluster_job *j = &n->job[n->njobs++];

	memset(j, 0, sizeof(*j));
	j->key = key;
	j->weight = weight;
	snprintf(j->name, sizeof(j->name), "job %llu", (unsigned long long)key);
	j->w[cls] = w;
}

static void test_alloc_fcfs(void)
{
	struct dl_cluster_node n[4];
	struct dl_cluster_grant g[4];
	double sum = 0;

	for (unsigned i = 0; i < 4; i++)
		node(&n[i], i, DL_OP_READ, busy());
	CHECK(!dl_cluster_allocate(n, 4, DL_SHARE_FCFS, g), "allocate");
	for (unsigned i = 0; i < 4; i++) {
		CHECK(rel(g[i].c[DL_OP_READ].bw, 0.25) < 1e-9, "4 busy nodes: quarter each: %g",
		      g[i].c[DL_OP_READ].bw);
		CHECK(rel(g[i].c[DL_OP_READ].floor, 0.25) < 1e-9, "floor 1/N");
		sum += g[i].c[DL_OP_READ].bw;
	}
	CHECK(rel(sum, 1) < 1e-9, "shares add up to the budget: %g", sum);

	/* Idle donation: three idle nodes, one writing a checkpoint. */
	for (unsigned i = 0; i < 4; i++)
		node(&n[i], i, DL_OP_WRITE, i == 2 ? busy() : (struct dl_cluster_want){0});
	CHECK(!dl_cluster_allocate(n, 4, DL_SHARE_FCFS, g), "allocate");
	CHECK(rel(g[2].c[DL_OP_WRITE].bw, 1) < 1e-9, "the writer gets the whole write bandwidth: %g",
	      g[2].c[DL_OP_WRITE].bw);
	CHECK(g[0].c[DL_OP_WRITE].bw == 0 && g[0].c[DL_OP_WRITE].idle, "an idle node: 0, idle");
	CHECK(!g[2].c[DL_OP_WRITE].idle, "the writer is not idle");
	CHECK(g[2].c[DL_OP_READ].idle && g[2].c[DL_OP_READ].bw == 0, "nobody reads: read idle");

	/* Demand following: a node using 10% keeps 10% (with head room for
	 * nobody else), the busy one takes the rest. */
	node(&n[0], 0, DL_OP_READ, using(0.10));
	node(&n[1], 1, DL_OP_READ, busy());
	CHECK(!dl_cluster_allocate(n, 2, DL_SHARE_FCFS, g), "allocate");
	CHECK(rel(g[0].c[DL_OP_READ].bw, 0.10) < 1e-9 && rel(g[1].c[DL_OP_READ].bw, 0.90) < 1e-9,
	      "0.10 and the rest: %g %g", g[0].c[DL_OP_READ].bw, g[1].c[DL_OP_READ].bw);
	/* Both light: what is left is head room for both. */
	node(&n[1], 1, DL_OP_READ, using(0.30));
	CHECK(!dl_cluster_allocate(n, 2, DL_SHARE_FCFS, g), "allocate");
	CHECK(rel(g[0].c[DL_OP_READ].bw, 0.40) < 1e-9 && rel(g[1].c[DL_OP_READ].bw, 0.60) < 1e-9,
	      "head room by weight: %g %g", g[0].c[DL_OP_READ].bw, g[1].c[DL_OP_READ].bw);
	/* fcfs weights a node by the requests it keeps in the device. */
	node(&n[0], 0, DL_OP_READ, busy());
	n[0].w[DL_OP_READ].peak = 3;
	node(&n[1], 1, DL_OP_READ, busy());
	CHECK(!dl_cluster_allocate(n, 2, DL_SHARE_FCFS, g), "allocate");
	CHECK(rel(g[0].c[DL_OP_READ].bw, 0.75) < 1e-9, "3 requests in the device vs 1: %g",
	      g[0].c[DL_OP_READ].bw);
	CHECK(dl_cluster_allocate(n, 0, DL_SHARE_FCFS, g) == -EINVAL, "no nodes: -EINVAL");
}

/* share.policy fair: per job across the cluster, not per node. */
static void test_alloc_fair(void)
{
	struct dl_cluster_node n[4];
	struct dl_cluster_grant g[4];
	double x = 0;

	/* Job 7 on nodes 0-2, job 9 alone on node 3, all busy. */
	for (unsigned i = 0; i < 4; i++) {
		node(&n[i], i, DL_OP_READ, busy());
		add_job(&n[i], i < 3 ? 7 : 9, 1, DL_OP_READ, busy());
	}
	CHECK(!dl_cluster_allocate(n, 4, DL_SHARE_FAIR, g), "allocate");
	CHECK(rel(g[3].c[DL_OP_READ].bw, 0.5) < 1e-9, "job 9 alone on its node: half: %g",
	      g[3].c[DL_OP_READ].bw);
	for (unsigned i = 0; i < 3; i++)
		x += g[i].c[DL_OP_READ].bw;
	CHECK(rel(x, 0.5) < 1e-9 && rel(g[0].c[DL_OP_READ].bw, 1.0 / 6) < 1e-9,
	      "job 7's half split over its 3 nodes: %g", g[0].c[DL_OP_READ].bw);
	CHECK(g[0].njobs == 1 && g[0].job[0].key == 7 && rel(g[0].job[0].w[DL_OP_READ], 1.0 / 6) < 1e-9,
	      "a job's weight on its node is its allocation");
	/* The same under fcfs: per node. */
	CHECK(!dl_cluster_allocate(n, 4, DL_SHARE_FCFS, g), "allocate");
	CHECK(rel(g[3].c[DL_OP_READ].bw, 0.25) < 1e-9, "fcfs: per node: %g", g[3].c[DL_OP_READ].bw);

	/* Weights: job 9 with weight 3 gets 3/4. */
	n[3].job[0].weight = 3;
	CHECK(!dl_cluster_allocate(n, 4, DL_SHARE_FAIR, g), "allocate");
	CHECK(rel(g[3].c[DL_OP_READ].bw, 0.75) < 1e-9, "weight 3: %g", g[3].c[DL_OP_READ].bw);

	/* Two jobs on one node, one on another: the node with two jobs gets
	 * two thirds, and its jobs' weights split it evenly. */
	node(&n[0], 0, DL_OP_READ, busy());
	add_job(&n[0], 1, 1, DL_OP_READ, busy());
	add_job(&n[0], 2, 1, DL_OP_READ, busy());
	node(&n[1], 1, DL_OP_READ, busy());
	add_job(&n[1], 3, 1, DL_OP_READ, busy());
	CHECK(!dl_cluster_allocate(n, 2, DL_SHARE_FAIR, g), "allocate");
	CHECK(rel(g[0].c[DL_OP_READ].bw, 2.0 / 3) < 1e-9, "two jobs on node 0: %g",
	      g[0].c[DL_OP_READ].bw);
	CHECK(rel(g[0].job[0].w[DL_OP_READ], g[0].job[1].w[DL_OP_READ]) < 1e-9,
	      "even weights on the node");
	/* An idle job's share goes to the busy ones. */
	n[0].job[1].w[DL_OP_READ] = (struct dl_cluster_want){0};
	CHECK(!dl_cluster_allocate(n, 2, DL_SHARE_FAIR, g), "allocate");
	CHECK(rel(g[0].c[DL_OP_READ].bw, 0.5) < 1e-9, "job 2 idle: %g", g[0].c[DL_OP_READ].bw);
}

/* The demand of a node from its counts over a window. */
static void test_node_make(void)
{
	struct dl_cluster_sample s[3];
	struct dl_cluster_node n;

	memset(s, 0, sizeof(s));
	for (int i = 0; i < 3; i++) {
		s[i].now_ns = T0 + (uint64_t)i * 50 * MS;
		s[i].bandwidth[DL_OP_READ] = 100000000;
	}
	dl_cluster_node_make(&s[0], &s[1], &s[2], 5, &n);
	CHECK(n.rank == 5 && n.w[DL_OP_READ].bw == 0 && n.w[DL_OP_READ].peak == 0, "idle: nothing");
	/* 10 MB over 100 ms, never held: 100 MB/s x 1.1 ... of a 100 MB/s
	 * budget is 1.1; at 1 MB: 0.11. */
	s[1].cls[DL_OP_READ] = (struct dl_cluster_count){.ops = 5, .bytes = 500000, .peak = 1};
	s[2].cls[DL_OP_READ] = (struct dl_cluster_count){.ops = 10, .bytes = 1000000, .peak = 1};
	dl_cluster_node_make(&s[0], &s[1], &s[2], 0, &n);
	CHECK(rel(n.w[DL_OP_READ].bw, 0.11) < 1e-9, "1.1 x used: %g", n.w[DL_OP_READ].bw);
	CHECK(rel(n.w[DL_OP_READ].used_bps, 1e7) < 1e-9, "used 10 MB/s: %g",
	      n.w[DL_OP_READ].used_bps);
	s[2].cls[DL_OP_READ].held_bw = 5;
	dl_cluster_node_make(&s[0], &s[1], &s[2], 0, &n);
	CHECK(isinf(n.w[DL_OP_READ].bw), "held back in half of its requests: unbounded");
	s[2].cls[DL_OP_READ].held_bw = 4;
	dl_cluster_node_make(&s[0], &s[1], &s[2], 0, &n);
	CHECK(rel(n.w[DL_OP_READ].bw, 0.11) < 1e-9, "held in 4 of 10: what it used: %g",
	      n.w[DL_OP_READ].bw);
	s[2].cls[DL_OP_READ].held_bw = 0;
	/* Nothing sent over the window, but requests sent before it are still
	 * in the device: they take longer than a window at its share, so it
	 * wants all it can get, not nothing (its share would go to the others
	 * while it still moves them). */
	s[1].cls[DL_OP_READ] = (struct dl_cluster_count){.ops = 10, .bytes = 1000000, .peak = 2};
	s[2].cls[DL_OP_READ] =
	    (struct dl_cluster_count){.ops = 10, .bytes = 1000000, .peak = 2, .outstanding = 2};
	s[0].cls[DL_OP_READ] = s[1].cls[DL_OP_READ];
	s[0].iops[DL_OP_READ] = s[1].iops[DL_OP_READ] = s[2].iops[DL_OP_READ] = 1000;
	dl_cluster_node_make(&s[0], &s[1], &s[2], 0, &n);
	CHECK(isinf(n.w[DL_OP_READ].bw) && isinf(n.w[DL_OP_READ].iops) && n.w[DL_OP_READ].peak == 2,
	      "requests from before the window still in the device: unbounded: %g %g",
	      n.w[DL_OP_READ].bw, n.w[DL_OP_READ].iops);
	s[2].cls[DL_OP_READ].outstanding = 0;
	s[2].cls[DL_OP_READ].peak = 0;
	s[1].cls[DL_OP_READ].peak = 0;
	dl_cluster_node_make(&s[0], &s[1], &s[2], 0, &n);
	CHECK(n.w[DL_OP_READ].bw == 0 && n.w[DL_OP_READ].peak == 0, "and none: idle");
	s[0].iops[DL_OP_READ] = s[1].iops[DL_OP_READ] = s[2].iops[DL_OP_READ] = 0;
	memset(&s[0].cls[DL_OP_READ], 0, sizeof(s[0].cls[DL_OP_READ]));
	s[1].cls[DL_OP_READ] = (struct dl_cluster_count){.ops = 5, .bytes = 500000, .peak = 1};
	s[2].cls[DL_OP_READ] = (struct dl_cluster_count){.ops = 10, .bytes = 1000000, .peak = 1};
	/* Jobs travel with it, the busiest first. */
	s[2].njobs = 2;
	s[2].job[0] = (struct dl_cluster_job_count){.key = 11, .weight = 1, .name = "light"};
	s[2].job[0].c[DL_OP_READ] = (struct dl_cluster_count){.ops = 1, .bytes = 1000, .peak = 1};
	s[2].job[1] = (struct dl_cluster_job_count){.key = 12, .weight = 2, .name = "heavy"};
	s[2].job[1].c[DL_OP_READ] = (struct dl_cluster_count){.ops = 4, .bytes = 4000000, .peak = 1};
	dl_cluster_node_make(&s[0], &s[1], &s[2], 0, &n);
	CHECK(n.njobs == 2 && n.job[0].key == 12 && n.job[0].weight == 2 && n.job[1].key == 11,
	      "jobs, busiest first: %u %llu", n.njobs, (unsigned long long)n.job[0].key);
}

/* ---- N pacers in virtual time, exchanging every period ---- */

#define NODES 8
#define RING 64
#define STREAMS 8

/* One request in flight of a node's reader (a thread of a data loader). */
struct stream {
	uint64_t next; /* its next event: the reply to the pending one, then the next read */
	uint64_t sent; /* when the pending one was submitted */
	uint64_t off;  /* buffered: where its next read starts */
	int pending;
	struct dl_pacer_req req;
	struct dl_pacer_result res;
};

struct reader {
	int on;
	unsigned n; /* streams */
	struct stream s[STREAMS];
};

struct vcluster {
	unsigned n;
	struct dl_pacer *p[NODES];
	struct reader r[NODES];
	struct dl_cluster_sample *ring; /* [RING][NODES] */
	uint64_t rounds, period, window;
	uint64_t think[NODES]; /* a reader's pause between a reply and its next read */
	/* bursty nodes: node i reads for on[i], then pauses for off[i] (a
	 * reader's next read waits for its next on time), phase[i] into its
	 * cycle at the run's start (t0); 0: always on */
	uint64_t on[NODES], off[NODES], phase[NODES], t0;
	unsigned streams[NODES]; /* requests a node keeps in flight (0: 1) */
	uint64_t len;		 /* of each request (0: 1 MiB) */
	int no_retime;		 /* ignore the grants' re-time (what a daemon without it did) */
	/* buffered readers through the emulated readahead, each 1 MiB read
	 * in two pieces as FUSE splits one into an unaligned buffer: 1 MiB
	 * less 16 bytes, then 16 bytes inside what the first fetched */
	int buffered;
	enum dl_share_policy pol;
	double bytes[NODES];
	/* bytes completed in each 10 ms from the run's start */
	double bin[400];
	/* requests completed over the measured time, their summed latency */
	double done[NODES], lat_sum[NODES], worst[NODES];
	uint64_t retimes;
};

/* A bursty node's next read: at t, or at its next on time. */
static uint64_t when_on(const struct vcluster *v, unsigned i, uint64_t t)
{
	uint64_t cyc = v->on[i] + v->off[i], x;

	if (!v->on[i] || !v->off[i])
		return t;
	x = (t - v->t0 + v->phase[i]) % cyc;
	return x < v->on[i] ? t : t + (cyc - x);
}

static struct dl_cluster_sample *at(struct vcluster *v, uint64_t round, unsigned i)
{
	return &v->ring[(round % RING) * NODES + i];
}

/* What a daemon's timer does when a grant says so (fs/timer.c): re-time
 * the node's waiting requests in order of due time. */
static void retime_node(struct vcluster *v, unsigned i, uint64_t now)
{
	struct reader *rd = &v->r[i];
	unsigned ord[STREAMS], m = 0;

	for (unsigned k = 0; k < rd->n; k++)
		if (rd->s[k].pending && rd->s[k].res.due_ns > now)
			ord[m++] = k;
	for (unsigned a = 1; a < m; a++)
		for (unsigned b = a; b > 0 && rd->s[ord[b]].res.due_ns < rd->s[ord[b - 1]].res.due_ns;
		     b--) {
			unsigned t = ord[b];

			ord[b] = ord[b - 1];
			ord[b - 1] = t;
		}
	for (unsigned a = 0; a < m; a++) {
		struct stream *st = &rd->s[ord[a]];

		if (dl_pacer_retime(v->p[i], &st->req, &st->res, now) == 1)
			st->next = st->res.due_ns;
	}
	v->retimes++;
}

static void exchange(struct vcluster *v, uint64_t now)
{
	struct dl_cluster_node nd[NODES];
	struct dl_cluster_grant g[NODES];
	uint64_t back = v->window / v->period, r = v->rounds;

	for (unsigned i = 0; i < v->n; i++) {
		dl_pacer_cluster_sample(v->p[i], now, at(v, r, i));
		dl_cluster_node_make(at(v, r >= back ? r - back : 0, i),
				     at(v, r >= back / 2 ? r - back / 2 : 0, i), at(v, r, i), i,
				     &nd[i]);
	}
	if (dl_cluster_allocate(nd, v->n, v->pol, g))
		abort();
	for (unsigned i = 0; i < v->n; i++)
		if (dl_pacer_cluster_grant(v->p[i], i, nd, g, v->n, r, v->period, v->window, now) ==
			1 &&
		    !v->no_retime)
			retime_node(v, i, now);
	v->rounds++;
}

/* Closed-loop readers (writers with cls) on the nodes in `on`, each with
 * its streams of requests, from `from` for secs; bytes, requests and
 * latency per node counted over the last `measure` s. */
static uint64_t run(struct vcluster *v, const int *on, enum dl_op_class cls, uint64_t from,
		    double secs, double measure)
{
	uint64_t end = from + (uint64_t)(secs * 1e9), mfrom = end - (uint64_t)(measure * 1e9);
	uint64_t next_x = from;

	memset(v->bytes, 0, sizeof(v->bytes));
	memset(v->bin, 0, sizeof(v->bin));
	memset(v->done, 0, sizeof(v->done));
	memset(v->lat_sum, 0, sizeof(v->lat_sum));
	memset(v->worst, 0, sizeof(v->worst));
	v->t0 = from;
	for (unsigned i = 0; i < v->n; i++) {
		memset(&v->r[i], 0, sizeof(v->r[i]));
		v->r[i].on = on[i];
		v->r[i].n = v->streams[i] ? v->streams[i] : 1;
		for (unsigned k = 0; k < v->r[i].n; k++)
			v->r[i].s[k].next = when_on(v, i, from);
	}
	for (;;) {
		unsigned c = NODES, ck = 0;

		for (unsigned i = 0; i < v->n; i++)
			for (unsigned k = 0; v->r[i].on && k < v->r[i].n; k++)
				if (c == NODES || v->r[i].s[k].next < v->r[c].s[ck].next) {
					c = i;
					ck = k;
				}
		if (c == NODES || v->r[c].s[ck].next >= end)
			break;
		if (next_x <= v->r[c].s[ck].next) {
			/* A grant may re-time: choose the next event again. */
			exchange(v, next_x);
			next_x += v->period;
			continue;
		}
		struct stream *st = &v->r[c].s[ck];

		if (st->pending) {
			uint64_t due = st->res.due_ns;
			unsigned b = (unsigned)((due - from) / (10 * MS));

			dl_pacer_complete(v->p[c], &st->req, &st->res, due);
			st->pending = 0;
			if (due >= mfrom && due < end) {
				v->bytes[c] += (double)st->req.len;
				v->done[c]++;
				v->lat_sum[c] += (double)(due - st->sent);
				if ((double)(due - st->sent) > v->worst[c])
					v->worst[c] = (double)(due - st->sent);
			}
			if (b < 400)
				v->bin[b] += (double)st->req.len;
			st->next = when_on(v, c, due + v->think[c]);
			continue;
		}
		st->req = (struct dl_pacer_req){.cls = cls,
						.file_id = c * STREAMS + ck + 1,
						.len = v->len ? v->len : MiB,
						.job = 1};
		if (v->buffered) {
			st->req.flags = DL_PREQ_BUFFERED;
			st->req.file_size = 1024 * MiB;
			st->req.off = st->off;
			st->req.len = st->off % MiB ? 16 : MiB - 16;
			st->off += st->req.len;
		}
		if (dl_pacer_submit(v->p[c], &st->req, st->next, &st->res))
			abort();
		if (st->res.flags & DL_PRES_NEW_JOB)
			dl_pacer_job_info(v->p[c], 1, "python train.py", 1, 1);
		st->sent = st->next;
		st->pending = 1;
		st->next = st->res.due_ns;
	}
	for (unsigned i = 0; i < v->n; i++)
		for (unsigned k = 0; k < v->r[i].n; k++)
			if (v->r[i].s[k].pending)
				dl_pacer_complete(v->p[i], &v->r[i].s[k].req, &v->r[i].s[k].res,
						  v->r[i].s[k].res.due_ns);
	return end;
}

static int vc_new(struct vcluster *v, unsigned n, const char *const *kv)
{
	memset(v, 0, sizeof(*v));
	v->n = n;
	v->period = 10 * MS;
	v->window = 100 * MS;
	v->ring = calloc(RING * NODES, sizeof(*v->ring));
	if (!v->ring)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (!(v->p[i] = test_pacer(kv, T0, i + 1)))
			return -1;
	return 0;
}

static void vc_free(struct vcluster *v)
{
	for (unsigned i = 0; i < v->n; i++)
		dl_pacer_free(v->p[i]);
	free(v->ring);
}

static void test_virtual(unsigned n)
{
	const char *kv[] = {"read.bandwidth=100MB/s", "write.bandwidth=100MB/s", NULL};
	int all[NODES], one[NODES] = {0};
	struct vcluster v;
	double tot = 0, lo = 1e18, hi = 0, worst = 0;
	uint64_t t;

	if (vc_new(&v, n, kv)) {
		CHECK(0, "cluster of %u pacers", n);
		vc_free(&v);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		all[i] = 1;
	t = run(&v, all, DL_OP_READ, T0, 4.0, 3.0);
	for (unsigned i = 0; i < n; i++) {
		tot += v.bytes[i] / 3.0;
		lo = fmin(lo, v.bytes[i] / 3.0);
		hi = fmax(hi, v.bytes[i] / 3.0);
	}
	/* Overshoot: the most bytes any 100 ms moved beyond the budget's
	 * 10 MB. Requests complete whole, so a window may hold one more
	 * request per node than the rate gives: that much is quantization,
	 * and a node's burst (its share of 1 MiB) comes on top once. */
	for (unsigned b = 0; b + 10 <= 400; b++) {
		double in = 0;

		for (unsigned k = b; k < b + 10; k++)
			in += v.bin[k];
		worst = fmax(worst, in - 100e6 * 0.1);
	}
	printf("# %u nodes, a reader each: total %.2f MB/s, node min %.2f max %.2f, worst 100 ms "
	       "%.2f MiB over the budget\n",
	       n, tot / 1e6, lo / 1e6, hi / 1e6, worst / MiB);
	CHECK(rel(tot, 100e6) < 0.02, "%u nodes: total %.4g within 2%% of 100 MB/s", n, tot);
	CHECK(lo > 0.9 * hi, "%u nodes: even shares: %.3g .. %.3g", n, lo, hi);
	CHECK(worst <= (double)(n + 1) * MiB, "%u nodes: worst 100 ms: %.2f MiB over", n,
	      worst / MiB);

	/* One reader alone: the others' shares go to it once they are idle
	 * for a window. */
	one[n - 1] = 1;
	t = run(&v, one, DL_OP_READ, t + SEC, 3.0, 2.0);
	CHECK(rel(v.bytes[n - 1] / 2.0, 100e6) < 0.03, "%u nodes, one reader: %.4g", n,
	      v.bytes[n - 1] / 2.0);
	/* The others join the one reader, which holds the whole budget: for
	 * up to a period they go at their fair fraction before the exchange
	 * counts them, on top of it. */
	t = run(&v, all, DL_OP_READ, t, 1.0, 0.5);
	worst = 0;
	for (unsigned b = 0; b + 10 <= 100; b++) {
		double in = 0;

		for (unsigned k = b; k < b + 10; k++)
			in += v.bin[k];
		worst = fmax(worst, in - 100e6 * 0.1);
	}
	printf("# %u nodes, %u join one reader: worst 100 ms %.2f MiB over the budget\n", n, n - 1,
	       worst / MiB);
	CHECK(worst <= (double)(n + 1) * MiB + 1e6, "%u nodes joining: worst 100 ms: %.2f MiB over",
	      n, worst / MiB);
	/* A checkpoint from node 0 gets the whole write bandwidth. */
	memset(one, 0, sizeof(one));
	one[0] = 1;
	run(&v, one, DL_OP_WRITE, t + SEC, 3.0, 2.0);
	CHECK(rel(v.bytes[0] / 2.0, 100e6) < 0.03, "%u nodes, one writer: %.4g", n,
	      v.bytes[0] / 2.0);
	vc_free(&v);
}

/* Shares follow demand: a node reading 1 MiB every 100 ms (about 10 MB/s)
 * keeps what it reads, and the busy node gets the rest. */
static void test_virtual_light(void)
{
	const char *kv[] = {"read.bandwidth=100MB/s", NULL};
	int all[2] = {1, 1}, one[2] = {1, 0};
	struct vcluster v;
	double alone;

	if (vc_new(&v, 2, kv)) {
		CHECK(0, "cluster of 2 pacers");
		vc_free(&v);
		return;
	}
	v.think[0] = 90 * MS;
	run(&v, one, DL_OP_READ, T0, 3.0, 2.0);
	alone = v.bytes[0] / 2.0;
	run(&v, all, DL_OP_READ, T0 + 4 * SEC, 4.0, 3.0);
	printf("# light node alone %.2f MB/s; with a busy one: light %.2f, busy %.2f MB/s\n",
	       alone / 1e6, v.bytes[0] / 3.0 / 1e6, v.bytes[1] / 3.0 / 1e6);
	CHECK(v.bytes[0] / 3.0 > 0.9 * alone, "the light node keeps what it reads: %.3g of %.3g",
	      v.bytes[0] / 3.0, alone);
	CHECK((v.bytes[0] + v.bytes[1]) / 3.0 > 0.9 * 100e6,
	      "its unused share goes to the busy node: total %.3g", (v.bytes[0] + v.bytes[1]) / 3.0);
	vc_free(&v);
}

/* Bursty nodes: each reads for on, pauses for off, out of step with the
 * others (node i starts i/N into its cycle), so that the cluster stays
 * busy while the nodes come and go. The aggregate over 5 s, in MB/s. */
static double bursty(unsigned n, unsigned streams, uint64_t on, uint64_t off)
{
	const char *kv[] = {"read.bandwidth=40MB/s", NULL};
	int all[NODES] = {0};
	struct vcluster v;
	double tot = 0, lo = 1e18, hi = 0;

	if (vc_new(&v, n, kv)) {
		vc_free(&v);
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		all[i] = 1;
		v.streams[i] = streams;
		v.on[i] = on;
		v.off[i] = off;
		v.phase[i] = (on + off) * i / n;
	}
	run(&v, all, DL_OP_READ, T0, 6.0, 5.0);
	for (unsigned i = 0; i < n; i++) {
		tot += v.bytes[i] / 5.0;
		lo = fmin(lo, v.bytes[i] / 5.0);
		hi = fmax(hi, v.bytes[i] / 5.0);
	}
	printf("# bursty: %u nodes x %u streams, %llu ms on, %llu ms off: %.2f MB/s of 40, node "
	       "%.2f..%.2f, %llu re-times\n",
	       n, streams, (unsigned long long)(on / MS), (unsigned long long)(off / MS), tot / 1e6,
	       lo / 1e6, hi / 1e6, (unsigned long long)v.retimes);
	vc_free(&v);
	return tot;
}

/* Shares swing at the exchanges as the nodes come and go; the nodes'
 * rates must still add up to the budget. A node that shrank keeps its
 * admitted requests' times, so one that grew must too, unless it was idle
 * before and its requests were timed at 1/N (re-timing any growth ran the cluster 10-80% over: the live 4-node dlio-drive run
 * of test_cluster_predict.py moved 11-13% more than its budget), and a
 * node still moving requests it sent before the window wants its share
 * (counted as using nothing, its share went to the others while it still
 * moved them). Within 5%; where a node pauses for a window or more, each
 * start after idle time may add a period at 1/N on top (cluster.c's
 * overshoot between exchanges). */
static void test_virtual_bursty(void)
{
	static const struct {
		unsigned n, streams, on, off; /* ms */
	} c[] = {
	    {4, 2, 150, 50},  {4, 2, 80, 20},  {4, 2, 30, 10},  {4, 1, 150, 50},
	    {4, 4, 150, 50},  {2, 2, 150, 50}, {8, 2, 150, 50}, {4, 2, 300, 100},
	    {4, 2, 100, 100}, {4, 2, 60, 140}, {4, 2, 200, 200},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t on = c[i].on * MS, off = c[i].off * MS;
		double got = bursty(c[i].n, c[i].streams, on, off), bound = 0.05 * 40e6;

		/* the nodes' starts per second after a pause of a window */
		if (off >= 100 * MS)
			bound += (double)c[i].n * 1e9 / (double)(on + off) * 40e6 / c[i].n * 0.010;
		CHECK(got > 0 && fabs(got - 40e6) <= bound,
		      "bursty %u nodes x %u streams, %u ms on, %u off: %.4g B/s, within %.3g of the "
		      "budget of 40 MB/s",
		      c[i].n, c[i].streams, c[i].on, c[i].off, got, bound);
	}
}

/* fair per job across the cluster: job A on 3 nodes, job B on one. */
static void test_virtual_fair(void)
{
	const char *kv[] = {"read.bandwidth=100MB/s", "share.policy=fair", NULL};
	int all[4] = {1, 1, 1, 1};
	struct vcluster v;
	double a = 0;

	if (vc_new(&v, 4, kv)) {
		CHECK(0, "cluster of 4 pacers");
		vc_free(&v);
		return;
	}
	v.pol = DL_SHARE_FAIR;
	/* Name the jobs before the run: node 3's reader is job B. */
	for (unsigned i = 0; i < 4; i++) {
		struct dl_pacer_req r = {.cls = DL_OP_READ, .len = 0, .job = 1};
		struct dl_pacer_result res;

		dl_pacer_submit(v.p[i], &r, T0, &res);
		dl_pacer_job_info(v.p[i], 1, i == 3 ? "python eval.py" : "python train.py", 1, 1);
		dl_pacer_complete(v.p[i], &r, &res, T0);
	}
	run(&v, all, DL_OP_READ, T0, 4.0, 3.0);
	for (unsigned i = 0; i < 3; i++)
		a += v.bytes[i] / 3.0;
	printf("# fair: job A on 3 nodes %.2f MB/s, job B on 1 node %.2f MB/s\n", a / 1e6,
	       v.bytes[3] / 3.0 / 1e6);
	CHECK(rel(a, 50e6) < 0.10 && rel(v.bytes[3] / 3.0, 50e6) < 0.10,
	      "fair per job: halves %.3g %.3g", a, v.bytes[3] / 3.0);
	vc_free(&v);
}

/* A reader that starts after idle time, alone on its node and in the
 * cluster: 4 streams of 1 MiB (a data loader's workers). Before the next
 * exchange counts it the node goes at its fair fraction; when the share
 * that exchange gives it is larger, the requests it has waiting go at the
 * new rate (the grant says to re-time them, as the daemon's timer does).
 * Without that, its first 4 requests keep their times at 1/N of the
 * budget (the last one due after 4 x 1/N x 42 ms) and the reader loses
 * their worth at every start. Its first 0.5 s, against a cluster of 1. */
static double lone_start(unsigned n, int how, double *worst_ms)
{
	const char *plain[] = {"read.bandwidth=100MB/s", NULL};
	/* the device model: a throttle of 100 MB/s before a fast device */
	const char *dev[] = {"read.bandwidth=100MB/s", "read.transfer=2GB/s", "read.lanes=1",
			     NULL};
	const char *const *kv = how == 2 ? dev : plain;
	int buffered = how == 1;
	int one[NODES] = {0};
	struct vcluster v;
	double got;

	if (vc_new(&v, n, kv)) {
		vc_free(&v);
		return -1;
	}
	v.buffered = buffered;
	for (unsigned i = 0; i < n; i++)
		one[i] = 1;
	/* Every node busy for a second, the cluster idle for one (every
	 * node's window empty), then the reader. */
	run(&v, one, DL_OP_READ, T0, 1.0, 1.0);
	for (uint64_t t = T0 + SEC; t < T0 + 2 * SEC; t += v.period)
		exchange(&v, t);
	memset(one, 0, sizeof(one));
	v.streams[n - 1] = 4;
	one[n - 1] = 1;
	run(&v, one, DL_OP_READ, T0 + 2 * SEC, 0.5, 0.5);
	got = v.bytes[n - 1] / 0.5;
	*worst_ms = v.worst[n - 1] / 1e6;
	vc_free(&v);
	return got;
}

static void test_virtual_lone_start(void)
{
	for (int buffered = 0; buffered < 3; buffered++) {
		const char *how = buffered == 2   ? "direct, device model"
				  : buffered == 1 ? "buffered, 2 pieces a read"
						  : "direct";
		double one_ms, ms, base = lone_start(1, buffered, &one_ms);

		CHECK(base > 0.9 * 100e6, "a cluster of 1: one reader %.4g", base);
		for (unsigned n = 2; n <= NODES; n *= 2) {
			double got = lone_start(n, buffered, &ms);
			/* What it may lose: one period at its fair fraction,
			 * and a request's worth of the 10 ms bins. */
			double bound = (1 - 1.0 / n) * 100e6 * 0.010 + MiB;

			printf("# one reader (4 streams, %s) starting alone on node %u of %u: first "
			       "0.5 s %.2f MB/s, %.2f MB short of a cluster of 1; its slowest "
			       "request %.1f ms (a cluster of 1: %.1f)\n",
			       how, n - 1, n, got / 1e6, (base - got) * 0.5 / 1e6, ms, one_ms);
			CHECK((base - got) * 0.5 <= bound,
			      "%u nodes, %s: a lone reader starting gets the whole budget but for "
			      "a period at 1/N: %.4g of %.4g B/s (%.3g B short, at most %.3g)",
			      n, how, got, base, (base - got) * 0.5, bound);
			/* Its first requests wait no longer than the rest but
			 * for that period. */
			CHECK(ms <= one_ms + 10, "%u nodes, %s: slowest request %.1f ms, %.1f alone",
			      n, how, ms, one_ms);
		}
	}
}

/* Latency under load is the cluster's: N nodes each with k requests in
 * flight meet what one mount with N x k in flight meets. Each node decides
 * alone: its fraction of the queue slots (and of the device model's data
 * paths) serves its fraction of the device's, and a latency that grows
 * with the requests in service counts the other nodes' (their mean in the
 * device, as exchanged). Mean latency over the last 2 s of 3. */
static double mean_latency(const char *const *kv, unsigned n, unsigned k, uint64_t len,
			   double *rate)
{
	int all[NODES] = {0};
	struct vcluster v;
	double lat = 0, done = 0, bytes = 0;

	if (vc_new(&v, n, kv)) {
		vc_free(&v);
		return -1;
	}
	v.len = len;
	for (unsigned i = 0; i < n; i++) {
		all[i] = 1;
		v.streams[i] = k;
	}
	run(&v, all, DL_OP_READ, T0, 3.0, 2.0);
	for (unsigned i = 0; i < n; i++) {
		lat += v.lat_sum[i];
		done += v.done[i];
		bytes += v.bytes[i];
	}
	*rate = bytes / 2.0;
	vc_free(&v);
	return done ? lat / done : -1;
}

static void test_virtual_contention(void)
{
	static const struct {
		const char *what;
		const char *kv[8];
		unsigned n, k;
		uint64_t len;
	} c[] = {
	    /* 16 requests for 10 slots: 2.5 slots a node */
	    {"10 queue slots, 10 ms each",
	     {"read.queue_depth=10", "read.latency=constant(10ms)", NULL}, 4, 4, 4096},
	    {"8 queue slots, 3 nodes", {"read.queue_depth=8", "read.latency=constant(10ms)", NULL},
	     3, 5, 4096},
	    /* a latency that grows with the requests in service */
	    {"bandwidth_by_concurrency",
	     {"read.latency=constant(2ms)", "read.bandwidth_by_concurrency.1MiB.1=500MB/s",
	      "read.bandwidth_by_concurrency.1MiB.16=1000MB/s", NULL},
	     4, 2, MiB},
	    /* the device model: 8 channels, one data path */
	    {"device model, one data path",
	     {"read.transfer=200MB/s", "read.queue_depth=8", "read.lanes=1",
	      "read.latency=constant(1ms)", NULL},
	     4, 3, MiB},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		double r1, rn, one = mean_latency(c[i].kv, 1, c[i].n * c[i].k, c[i].len, &r1);
		double all = mean_latency(c[i].kv, c[i].n, c[i].k, c[i].len, &rn);

		printf("# %s: %u nodes x %u in flight: mean latency %.3f ms, %.4g req/s; one mount "
		       "with %u: %.3f ms, %.4g req/s\n",
		       c[i].what, c[i].n, c[i].k, all / 1e6, rn / (double)c[i].len, c[i].n * c[i].k,
		       one / 1e6, r1 / (double)c[i].len);
		CHECK(one > 0 && all > 0 && rel(all, one) < 0.05,
		      "%s: latency of %u nodes x %u within 5%% of one mount with %u: %.4g vs %.4g",
		      c[i].what, c[i].n, c[i].k, c[i].n * c[i].k, all, one);
		CHECK(rel(rn, r1) < 0.05, "%s: the same throughput: %.4g vs %.4g", c[i].what, rn, r1);
	}
}

int main(void)
{
	test_alloc_fcfs();
	test_alloc_fair();
	test_node_make();
	test_virtual(1);
	test_virtual(2);
	test_virtual(4);
	test_virtual(8);
	test_virtual_light();
	test_virtual_bursty();
	test_virtual_fair();
	test_virtual_lone_start();
	test_virtual_contention();
	return tap_done("pacer_cluster");
}
