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
	return (struct dl_cluster_want){INFINITY, INFINITY, INFINITY, 1e6, 1, 1};
}

static struct dl_cluster_want using(double f)
{
	return (struct dl_cluster_want){f, f, f, 1e6, 1, 1};
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

struct reader {
	int on;
	uint64_t next;
	int pending;
	struct dl_pacer_req req;
	struct dl_pacer_result res;
};

struct vcluster {
	unsigned n;
	struct dl_pacer *p[NODES];
	struct reader r[NODES];
	struct dl_cluster_sample *ring; /* [RING][NODES] */
	uint64_t rounds, period, window;
	uint64_t think[NODES]; /* a reader's pause between a reply and its next read */
	enum dl_share_policy pol;
	double bytes[NODES];
	/* bytes completed in each 10 ms from the run's start */
	double bin[400];
};

static struct dl_cluster_sample *at(struct vcluster *v, uint64_t round, unsigned i)
{
	return &v->ring[(round % RING) * NODES + i];
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
		dl_pacer_cluster_grant(v->p[i], i, nd, g, v->n, r, v->period, v->window);
	v->rounds++;
}

/* Closed-loop 1 MiB readers (writers with cls) on the nodes in `on`, from
 * `from` for secs; bytes per node counted over the last `measure` s. */
static uint64_t run(struct vcluster *v, const int *on, enum dl_op_class cls, uint64_t from,
		    double secs, double measure)
{
	uint64_t end = from + (uint64_t)(secs * 1e9), mfrom = end - (uint64_t)(measure * 1e9);
	uint64_t next_x = from;

	memset(v->bytes, 0, sizeof(v->bytes));
	memset(v->bin, 0, sizeof(v->bin));
	for (unsigned i = 0; i < v->n; i++)
		v->r[i] = (struct reader){.on = on[i], .next = from};
	for (;;) {
		unsigned c = NODES;

		for (unsigned i = 0; i < v->n; i++)
			if (v->r[i].on && (c == NODES || v->r[i].next < v->r[c].next))
				c = i;
		if (c == NODES || v->r[c].next >= end)
			break;
		while (next_x <= v->r[c].next) {
			exchange(v, next_x);
			next_x += v->period;
		}
		struct reader *rd = &v->r[c];

		if (rd->pending) {
			uint64_t due = rd->res.due_ns;
			unsigned b = (unsigned)((due - from) / (10 * MS));

			dl_pacer_complete(v->p[c], &rd->req, &rd->res, due);
			rd->pending = 0;
			if (due >= mfrom && due < end)
				v->bytes[c] += (double)rd->req.len;
			if (b < 400)
				v->bin[b] += (double)rd->req.len;
		}
		rd->req = (struct dl_pacer_req){.cls = cls, .file_id = c + 1, .len = MiB, .job = 1};
		if (dl_pacer_submit(v->p[c], &rd->req, rd->next, &rd->res))
			abort();
		if (rd->res.flags & DL_PRES_NEW_JOB)
			dl_pacer_job_info(v->p[c], 1, "python train.py", 1, 1);
		rd->pending = 1;
		rd->next = rd->res.due_ns + v->think[c];
	}
	for (unsigned i = 0; i < v->n; i++)
		if (v->r[i].pending)
			dl_pacer_complete(v->p[i], &v->r[i].req, &v->r[i].res, v->r[i].res.due_ns);
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
	test_virtual_fair();
	return tap_done("pacer_cluster");
}
