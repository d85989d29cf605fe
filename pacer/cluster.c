/* A cluster of mounts sharing one storage model: the arithmetic, pure (no
 * MPI, no clock; fs/cluster.c exchanges the records and calls this).
 *
 * Every node keeps deciding its own requests against its share of the
 * cluster's limits (bandwidth, IOPS, queue slots), which is a fraction of
 * each. Every period each node turns what its pacer counted over the last
 * window into a record (dl_cluster_node_make): per class, what it wants of
 * each limit, as share.c's jobs on one node do:
 *   - nothing, when it had no request in the device over the window;
 *   - all it can get (INFINITY) when at least half of its requests were
 *     held back by its own share of that limit: for bandwidth, queued in
 *     its bucket behind its own earlier requests (a request that waits only
 *     for its own bytes after idle time is not held back), and for
 *     bandwidth and IOPS when it sent none over the window but still has
 *     requests in the device (they take longer than a window at its share);
 *   - else 1.1 x what it used (queue slots: the most it had at once).
 * A node that becomes busy goes at its fair fraction until the next
 * exchange counts it (see the overshoot below).
 * The records of all nodes are gathered on every node, and every node runs
 * dl_cluster_allocate on the same table, so all agree on every share
 * without one deciding for the others. The fractions of each limit add up
 * to 1 over the active nodes: an idle node's share goes to the busy ones
 * (one node writing a checkpoint gets the whole write bandwidth).
 *
 * fcfs (one FIFO queue shared by every node, as a real device): the shares
 * are weighted by the requests each node keeps in the device, which is what
 * a shared queue serves each in proportion to. fair: each job (by name: the
 * ranks of one job on several nodes are one job) gets its weighted max-min
 * share of the cluster, and splits it among its nodes by their demand.
 *
 * Overshoot between exchanges: a node's grant is recomputed only every
 * period, so the nodes together can move more than the cluster's limit:
 *   - a node that was idle when its grant was computed, and a request its
 *     node's share would take more than a window to move, go at no less
 *     than the node's fair fraction (1/N): a node that becomes busy adds
 *     up to limit/N until the next exchange counts it;
 *   - a request keeps the due time it was given: after a node's share
 *     shrinks, the requests it had admitted finish at the old rate (at most
 *     its queue depth of requests), and after it grows they keep their
 *     times too, but for a node that was idle when its previous share was
 *     computed (its requests were timed at its fair fraction): when its
 *     share grows DL_CLUSTER_BOOST-fold or more, what they still wait for
 *     goes at the new rate (cluster_pacer.c), so a node that starts alone
 *     gets the whole budget from the exchange after its start, not from
 *     its requests after that (speeding up any node whose share grew, with
 *     the others' requests keeping their times, ran bursty nodes over the
 *     budget);
 *   - each node's token bucket holds its share of the burst.
 * Latency under load is the cluster's: a node's fraction of the queue
 * slots serves its fraction of the device's (whole slots held longer, as
 * fractional ones would be), so N nodes with k requests each wait as N x k
 * in one queue; and each node counts the others' requests in the device
 * (their mean over the window) where a latency grows with them.
 * The README's Cluster section has the measured figures. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pacer_i.h"

#define HEADROOM 1.1

static uint64_t sub(uint64_t a, uint64_t b)
{
	/* A counter that went back belongs to a slot given to another job:
	 * what it has now is all new. */
	return a >= b ? a - b : a;
}

/* What one node or job wants of class limits over [old, cur]. */
static void want_of(const struct dl_cluster_count *o, const struct dl_cluster_count *m,
		    const struct dl_cluster_count *c, uint64_t span, uint64_t bw, uint64_t iops,
		    uint32_t qd, struct dl_cluster_want *w)
{
	uint64_t ops = sub(c->ops, o->ops), bytes = sub(c->bytes, o->bytes);
	uint64_t hbw = sub(c->held_bw, o->held_bw), hio = sub(c->held_iops, o->held_iops);
	uint64_t hq = sub(c->held_q, o->held_q);
	double peak = c->peak > m->peak ? c->peak : m->peak;

	memset(w, 0, sizeof(*w));
	if (!ops && !c->outstanding)
		return;
	if (c->outstanding > peak)
		peak = c->outstanding;
	w->peak = peak > 1 ? peak : 1;
	w->in_flight = (double)sub(c->busy_ns, o->busy_ns) / (double)span;
	w->used_bps = (double)bytes * 1e9 / (double)span;
	w->used_iops = (double)ops * 1e9 / (double)span;
	/* No "newcomer" rule as share.c has for jobs: a node idle when its
	 * share was computed goes at its fair fraction until the next exchange
	 * counts it (cluster_pacer.c), and by then its requests queue behind
	 * each other if it is busy. A node reading now and then, whose reads
	 * are a window apart, would otherwise look new at each. */
	/* Requests still in the device that it sent before the window (none
	 * since): they take longer than a window at its share, which holds
	 * them back as much as its own earlier requests would. Counted as
	 * using nothing, its share went to the others while it still moved
	 * them at its old rate (at least its fair fraction): the cluster ran
	 * over its budget, and the shares swung at every exchange. */
	int old_only = !ops && c->outstanding;

	if (bw)
		w->bw = old_only || (ops && 2 * hbw >= ops) ? INFINITY
							    : w->used_bps * HEADROOM / (double)bw;
	if (iops)
		w->iops = old_only || (ops && 2 * hio >= ops) ? INFINITY
							      : w->used_iops * HEADROOM / (double)iops;
	if (qd)
		w->q = ops && 2 * hq >= ops ? INFINITY : w->peak / (double)qd;
}

static const struct dl_cluster_job_count *find_job(const struct dl_cluster_sample *s, uint64_t key)
{
	for (unsigned j = 0; j < s->njobs; j++)
		if (s->job[j].key == key)
			return &s->job[j];
	return NULL;
}

static double activity(const struct dl_cluster_job *j)
{
	double a = 0;

	for (int c = 0; c < DL_OP__COUNT; c++)
		a += j->w[c].used_bps + j->w[c].used_iops * 4096 + (j->w[c].peak ? 1 : 0);
	return a;
}

void dl_cluster_node_make(const struct dl_cluster_sample *old, const struct dl_cluster_sample *mid,
			  const struct dl_cluster_sample *cur, uint32_t rank,
			  struct dl_cluster_node *out)
{
	static const struct dl_cluster_count zero;
	uint64_t span = cur->now_ns > old->now_ns ? cur->now_ns - old->now_ns : 1;

	memset(out, 0, sizeof(*out));
	out->rank = rank;
	out->policy = cur->policy;
	for (int c = 0; c < DL_OP__COUNT; c++)
		want_of(&old->cls[c], &mid->cls[c], &cur->cls[c], span, cur->bandwidth[c],
			cur->iops[c], cur->queue_depth[c], &out->w[c]);
	for (unsigned j = 0; j < cur->njobs && j < DL_CLUSTER_SAMPLE_JOBS; j++) {
		const struct dl_cluster_job_count *jc = &cur->job[j];
		const struct dl_cluster_job_count *jo = find_job(old, jc->key);
		const struct dl_cluster_job_count *jm = find_job(mid, jc->key);
		struct dl_cluster_job e = {0};
		unsigned at;
		int any = 0;

		e.key = jc->key;
		e.weight = jc->weight ? jc->weight : 1;
		memcpy(e.name, jc->name, sizeof(e.name));
		e.name[sizeof(e.name) - 1] = '\0';
		for (int c = 0; c < DL_OP__COUNT; c++) {
			want_of(jo ? &jo->c[c] : &zero, jm ? &jm->c[c] : &zero, &jc->c[c], span,
				cur->bandwidth[c], cur->iops[c], cur->queue_depth[c], &e.w[c]);
			any |= e.w[c].peak > 0;
		}
		if (!any)
			continue;
		/* Keep the busiest: insertion into the sorted list. */
		for (at = out->njobs; at > 0 && activity(&out->job[at - 1]) < activity(&e); at--)
			if (at < DL_CLUSTER_JOBS)
				out->job[at] = out->job[at - 1];
		if (at < DL_CLUSTER_JOBS) {
			out->job[at] = e;
			if (out->njobs < DL_CLUSTER_JOBS)
				out->njobs++;
		}
	}
}

/* ---- allocation ---- */

struct item {
	double key;
	unsigned i;
};

static int by_key(const void *a, const void *b)
{
	double x = ((const struct item *)a)->key, y = ((const struct item *)b)->key;

	return x < y ? -1 : x > y;
}

/* Weighted max-min fair split of cap among n claimants with weights w and
 * demands d (INFINITY: unbounded; 0: takes nothing): a demand below its
 * weighted part of what is left is met, the rest share by weight; when all
 * are met, what is left is spread by weight over those that want anything.
 * it: n items of scratch. */
static void fill(unsigned n, const double *w, const double *d, double cap, double *a,
		 struct item *it)
{
	double rem = cap, wsum = 0;
	unsigned m = 0, k;

	for (unsigned i = 0; i < n; i++) {
		a[i] = 0;
		if (d[i] > 0 && w[i] > 0) {
			it[m].key = d[i] / w[i];
			it[m++].i = i;
			wsum += w[i];
		}
	}
	if (!m)
		return;
	qsort(it, m, sizeof(*it), by_key);
	for (k = 0; k < m; k++) {
		unsigned i = it[k].i;

		if (d[i] > rem * w[i] / wsum)
			break;
		a[i] = d[i];
		rem -= d[i];
		wsum -= w[i];
	}
	if (rem < 0)
		rem = 0;
	if (k < m) {
		for (; k < m; k++)
			a[it[k].i] = rem * w[it[k].i] / wsum;
		return;
	}
	/* Everyone is satisfied: the rest is head room, by weight. */
	wsum = 0;
	for (k = 0; k < m; k++)
		wsum += w[it[k].i];
	for (k = 0; k < m; k++)
		a[it[k].i] += rem * w[it[k].i] / wsum;
}

static double lim(const struct dl_cluster_want *w, int l)
{
	return l == 0 ? w->bw : l == 1 ? w->iops : w->q;
}

static double *glim(struct dl_cluster_cls_grant *g, int l)
{
	return l == 0 ? &g->bw : l == 1 ? &g->iops : &g->q;
}

/* One (node, job) pair of the fair policy. */
struct entry {
	unsigned node, slot;
	uint64_t key;
};

static int by_job(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

struct scratch {
	double *w, *d, *a, *jw, *jd, *ja;
	struct item *it;
	struct entry *e;
	unsigned *grp; /* start of each job's entries; grp[nj] = ne */
};

static void alloc_fcfs(const struct dl_cluster_node *nodes, unsigned n, int c,
		       struct dl_cluster_grant *g, struct scratch *s)
{
	for (int l = 0; l < 3; l++) {
		for (unsigned i = 0; i < n; i++) {
			s->w[i] = nodes[i].w[c].peak;
			s->d[i] = lim(&nodes[i].w[c], l);
		}
		fill(n, s->w, s->d, 1.0, s->a, s->it);
		for (unsigned i = 0; i < n; i++)
			*glim(&g[i].c[c], l) = s->a[i];
	}
}

/* Fair per job: the jobs' shares of the cluster, then each job's among its
 * nodes (equal weights: a job's ranks are alike). */
static void alloc_fair(const struct dl_cluster_node *nodes, unsigned n, int c,
		       struct dl_cluster_grant *g, struct scratch *s, unsigned nj)
{
	unsigned active = 0;

	for (unsigned j = 0; j < nj; j++)
		for (unsigned k = s->grp[j]; k < s->grp[j + 1]; k++)
			if (nodes[s->e[k].node].job[s->e[k].slot].w[c].peak > 0) {
				active++;
				break;
			}
	for (unsigned i = 0; i < n; i++) {
		g[i].c[c].bw = g[i].c[c].iops = g[i].c[c].q = 0;
		g[i].job_floor[c] = 1.0 / (double)(active + 1);
	}
	for (int l = 0; l < 3; l++) {
		for (unsigned j = 0; j < nj; j++) {
			s->jw[j] = 0;
			s->jd[j] = 0;
			for (unsigned k = s->grp[j]; k < s->grp[j + 1]; k++) {
				const struct dl_cluster_job *jb = &nodes[s->e[k].node].job[s->e[k].slot];

				if (jb->weight > s->jw[j])
					s->jw[j] = jb->weight;
				s->jd[j] += lim(&jb->w[c], l);
			}
		}
		fill(nj, s->jw, s->jd, 1.0, s->ja, s->it);
		for (unsigned j = 0; j < nj; j++) {
			unsigned b = s->grp[j], m = s->grp[j + 1] - b;

			for (unsigned k = 0; k < m; k++) {
				s->w[k] = 1;
				s->d[k] = lim(&nodes[s->e[b + k].node].job[s->e[b + k].slot].w[c], l);
			}
			fill(m, s->w, s->d, s->ja[j], s->a, s->it);
			for (unsigned k = 0; k < m; k++) {
				struct dl_cluster_grant *gn = &g[s->e[b + k].node];
				unsigned slot = s->e[b + k].slot;

				*glim(&gn->c[c], l) += s->a[k];
				/* The job's weight in its node's own fair share:
				 * its allocation of the first limit the class has. */
				if (gn->job[slot].w[c] == 0)
					gn->job[slot].w[c] = s->a[k];
			}
		}
	}
}

int dl_cluster_allocate(const struct dl_cluster_node *nodes, unsigned n, enum dl_share_policy pol,
			struct dl_cluster_grant *grants)
{
	unsigned ne = 0, nj = 0, cap;
	struct scratch s = {0};
	int ret = -ENOMEM;

	if (!nodes || !grants || !n || n > DL_CLUSTER_MAX_NODES)
		return -EINVAL;
	cap = n * (DL_CLUSTER_JOBS + 1);
	s.w = calloc(cap, sizeof(double));
	s.d = calloc(cap, sizeof(double));
	s.a = calloc(cap, sizeof(double));
	s.jw = calloc(cap, sizeof(double));
	s.jd = calloc(cap, sizeof(double));
	s.ja = calloc(cap, sizeof(double));
	s.it = calloc(cap, sizeof(struct item));
	s.e = calloc(cap, sizeof(struct entry));
	s.grp = calloc(cap + 1, sizeof(unsigned));
	if (!s.w || !s.d || !s.a || !s.jw || !s.jd || !s.ja || !s.it || !s.e || !s.grp)
		goto out;
	memset(grants, 0, n * sizeof(*grants));
	for (unsigned i = 0; i < n; i++) {
		grants[i].njobs = nodes[i].njobs < DL_CLUSTER_JOBS ? nodes[i].njobs : DL_CLUSTER_JOBS;
		for (unsigned k = 0; k < grants[i].njobs; k++) {
			grants[i].job[k].key = nodes[i].job[k].key;
			s.e[ne++] = (struct entry){i, k, nodes[i].job[k].key};
		}
	}
	qsort(s.e, ne, sizeof(*s.e), by_job);
	for (unsigned k = 0; k < ne; k++)
		if (!k || s.e[k].key != s.e[k - 1].key)
			s.grp[nj++] = k;
	s.grp[nj] = ne;
	for (int c = 0; c < DL_OP__COUNT; c++) {
		if (pol == DL_SHARE_FAIR && nj)
			alloc_fair(nodes, n, c, grants, &s, nj);
		else
			alloc_fcfs(nodes, n, c, grants, &s);
		double all = 0;

		for (unsigned i = 0; i < n; i++)
			if (nodes[i].w[c].in_flight > 0 && nodes[i].w[c].in_flight < 1e9)
				all += nodes[i].w[c].in_flight;
		for (unsigned i = 0; i < n; i++) {
			const struct dl_cluster_want *w = &nodes[i].w[c];
			double mine = w->in_flight > 0 && w->in_flight < 1e9 ? w->in_flight : 0;

			grants[i].c[c].floor = 1.0 / (double)n;
			grants[i].c[c].idle = w->peak == 0;
			/* The requests the device serves for the others: a
			 * request here meets them as well as its own node's. */
			grants[i].c[c].others = all - mine > 0 ? all - mine : 0;
			grants[i].c[c].dev = all > 0 ? mine / all : 0;
		}
	}
	ret = 0;
out:
	free(s.w);
	free(s.d);
	free(s.a);
	free(s.jw);
	free(s.jd);
	free(s.ja);
	free(s.it);
	free(s.e);
	free(s.grp);
	return ret;
}
