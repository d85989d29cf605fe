/* The analyses behind `summary` and `compare`, in one pass over the
 * records in arrival order plus a few sorts for percentiles.
 *
 * Sequentiality follows the definition: a read is sequential when
 * it starts where the same pid's previous read of the same file ended
 * (offset + bytes returned). The first read of a file by a pid is not
 * sequential (it is a jump to a new file); those are counted apart. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dlio_trace_i.h"

/* Operations on an open file: they make a file part of the job's data set.
 * Lookups, getattrs and directory reads of a tree do not. */
static int is_data_op(unsigned op)
{
	return op == DL_TOP_OPEN || op == DL_TOP_CREATE || op == DL_TOP_READ ||
	       op == DL_TOP_WRITE || op == DL_TOP_RELEASE || op == DL_TOP_FSYNC;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of v[0..n) (sorts v). */
static uint64_t pct(uint64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	size_t k = (size_t)(p * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static int grow_array(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	void *n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	memset((char *)n + *cap * elem, 0, (ncap - *cap) * elem);
	*arr = n;
	*cap = ncap;
	return 0;
}

static uint64_t rec_end_off(const struct dl_trace_rec *r)
{
	return r->offset + (r->result >= 0 ? (uint64_t)r->result : r->size);
}

/* The state of the pass over the records: maps from a record's ids to
 * their entries in the stats, and the running count of opens. */
struct pass {
	struct dt_stats *s;
	struct dt_map files, pids, pidfile, pidtid, jobs, jobpid, jobtid, jobnode;
	struct dt_map nodes, nodepid, nodejob;
	size_t fcap, pcap, jcap, ncap;
	uint64_t first;			/* the first arrival */
	uint64_t open_sec, open_count;	/* the current second of opens */
};

static void pass_free(struct pass *p)
{
	dt_map_free(&p->files);
	dt_map_free(&p->pids);
	dt_map_free(&p->pidfile);
	dt_map_free(&p->pidtid);
	dt_map_free(&p->jobs);
	dt_map_free(&p->jobpid);
	dt_map_free(&p->jobtid);
	dt_map_free(&p->jobnode);
	dt_map_free(&p->nodes);
	dt_map_free(&p->nodepid);
	dt_map_free(&p->nodejob);
}

static void count_op(struct dt_stats *s, const struct dl_trace_rec *r, unsigned op)
{
	struct dt_op_stats *o = &s->ops[op];

	o->count++;
	o->errors += (r->flags & 2) || r->result < 0;
	o->hits += r->flags & 1;
	o->bytes += r->result > 0 ? (uint64_t)r->result : 0;
	o->dur_sum += dl_trace_dur(r);
	o->queue_sum += r->queue_ns;
	o->hist[dt_size_bucket(r->size)]++;
	if (r->size > o->max_size)
		o->max_size = r->size;
}

/* The client (pid on its node) of r, created at its first request. */
static int count_client(struct pass *p, const struct dl_trace_rec *r, uint64_t proc, uint64_t end,
			struct dt_pid_stats **out)
{
	struct dt_stats *s = p->s;
	struct dt_pid_stats *ps;
	int created;
	uint64_t *pv = dt_map_get(&p->pids, proc, 0, &created);

	if (!pv)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&s->pids, &p->pcap, s->npids + 1, sizeof(*s->pids)))
			return -ENOMEM;
		*pv = s->npids++;
		s->pids[*pv].pid = r->pid;
		s->pids[*pv].node = (uint32_t)(proc >> 32);
		s->pids[*pv].first_ns = r->start_ns;
	}
	ps = &s->pids[*pv];
	ps->requests++;
	if (end > ps->last_ns)
		ps->last_ns = end;
	if (!dt_map_get(&p->pidtid, proc, r->tid, &created))
		return -ENOMEM;
	ps->ntids += created;
	*out = ps;
	return 0;
}

/* Per job (version 2: all processes and threads of one job). */
static int count_job(struct pass *p, const struct dl_trace_rec *r, uint64_t proc, unsigned op,
		     uint64_t end)
{
	struct dt_stats *s = p->s;
	struct dt_job_stats *js;
	int created;
	uint64_t *jv = dt_map_get(&p->jobs, r->job, 0, &created);

	if (!jv)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&s->jobs, &p->jcap, s->njobs + 1, sizeof(*s->jobs)))
			return -ENOMEM;
		*jv = s->njobs++;
		s->jobs[*jv].job = r->job;
		s->jobs[*jv].first_ns = r->start_ns;
	}
	js = &s->jobs[*jv];
	js->requests++;
	if (end > js->last_ns)
		js->last_ns = end;
	if (!dt_map_get(&p->jobpid, r->job, proc, &created))
		return -ENOMEM;
	js->npids += created;
	if (!dt_map_get(&p->jobtid, (uint64_t)r->job << 32 | proc >> 32, r->tid, &created))
		return -ENOMEM;
	js->ntids += created;
	if (!dt_map_get(&p->jobnode, r->job, proc >> 32, &created))
		return -ENOMEM;
	js->nnodes += created;
	js->opens += op == DL_TOP_OPEN || op == DL_TOP_CREATE;
	js->releases += op == DL_TOP_RELEASE;
	if (r->result > 0 && op == DL_TOP_READ) {
		js->reads++;
		js->rbytes += (uint64_t)r->result;
	} else if (r->result > 0 && op == DL_TOP_WRITE) {
		js->writes++;
		js->wbytes += (uint64_t)r->result;
	}
	return 0;
}

/* Per node of a merged trace. */
static int count_node(struct pass *p, const struct dl_trace_rec *r, uint64_t proc, unsigned op,
		      uint64_t end)
{
	struct dt_stats *s = p->s;
	struct dt_node_stats *ns;
	uint64_t node = proc >> 32;
	int created;
	uint64_t *nv = dt_map_get(&p->nodes, node, 0, &created);

	if (!nv)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&s->nodes, &p->ncap, s->nnodes + 1, sizeof(*s->nodes)))
			return -ENOMEM;
		*nv = s->nnodes++;
		s->nodes[*nv].node = (uint32_t)node;
		s->nodes[*nv].first_ns = r->start_ns;
	}
	ns = &s->nodes[*nv];
	ns->requests++;
	if (end > ns->last_ns)
		ns->last_ns = end;
	if (!dt_map_get(&p->nodepid, proc, 0, &created))
		return -ENOMEM;
	ns->npids += created;
	if (!dt_map_get(&p->nodejob, node, r->job, &created))
		return -ENOMEM;
	ns->njobs += created;
	ns->opens += op == DL_TOP_OPEN || op == DL_TOP_CREATE;
	if (op == DL_TOP_READ || op == DL_TOP_WRITE) {
		if (!ns->dfirst_ns)
			ns->dfirst_ns = r->start_ns;
		if (end > ns->dlast_ns)
			ns->dlast_ns = end;
	}
	if (r->result > 0 && op == DL_TOP_READ) {
		ns->reads++;
		ns->rbytes += (uint64_t)r->result;
	} else if (r->result > 0 && op == DL_TOP_WRITE) {
		ns->writes++;
		ns->wbytes += (uint64_t)r->result;
	}
	return 0;
}

/* Records are in arrival order, so the one-second bins of opens come one
 * after the other: a running count gives the busiest one without an array
 * as long as the trace (a crafted trace spanning years cost 128 MB and a
 * pass over it). */
static void count_open(struct pass *p, const struct dl_trace_rec *r, struct dt_pid_stats *ps)
{
	struct dt_stats *s = p->s;
	uint64_t sec = (r->start_ns - p->first) / DT_NS;

	if (!s->opens || sec != p->open_sec) {
		p->open_sec = sec;
		p->open_count = 0;
	}
	if (++p->open_count > s->open_peak_per_s)
		s->open_peak_per_s = p->open_count;
	s->opens++;
	ps->opens++;
}

/* Per file, and per (client, file) for sequentiality. */
static int count_file(struct pass *p, const struct dl_trace_rec *r, uint64_t proc, unsigned op,
		      struct dt_pid_stats *ps)
{
	struct dt_stats *s = p->s;
	struct dt_file_stats *fs;
	uint64_t n = r->result > 0 ? (uint64_t)r->result : 0, *fv, *last;
	int created;

	fv = dt_map_get(&p->files, r->file_id, 0, &created);
	if (!fv)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&s->files, &p->fcap, s->nfiles + 1, sizeof(*s->files)))
			return -ENOMEM;
		*fv = s->nfiles;
		s->files[*fv].id = r->file_id;
		s->files[*fv].first_ns = r->start_ns;
		s->files[*fv].first_rank = s->nfiles++;
	}
	fs = &s->files[*fv];
	/* Per (client, file): last read's end + 1; 0 before any read. */
	last = dt_map_get(&p->pidfile, proc, r->file_id, &created);
	if (!last)
		return -ENOMEM;
	ps->nfiles += created;
	switch (op) {
	case DL_TOP_READ:
		fs->reads++;
		fs->rbytes += n;
		ps->reads++;
		ps->rbytes += n;
		s->reads++;
		if (!*last) {
			s->first_reads++;
		} else if (*last - 1 == r->offset) {
			fs->seq_reads++;
			ps->seq_reads++;
			s->seq_reads++;
		}
		*last = rec_end_off(r) + 1;
		break;
	case DL_TOP_WRITE:
		fs->writes++;
		fs->wbytes += n;
		ps->writes++;
		ps->wbytes += n;
		break;
	case DL_TOP_OPEN:
	case DL_TOP_CREATE:
		fs->opens++;
		break;
	default:
		fs->other++;
		break;
	}
	return 0;
}

static int count_record(struct pass *p, const struct dl_trace_file *t, uint64_t i)
{
	const struct dl_trace_rec *r = &t->recs[i];
	unsigned op = r->op < DL_TOP__COUNT ? r->op : DL_TOP_OTHER;
	uint64_t end = r->start_ns + dl_trace_dur(r), proc = dt_proc(t, i);
	struct dt_pid_stats *ps;
	int ret;

	count_op(p->s, r, op);
	ret = count_client(p, r, proc, end, &ps);
	if (!ret)
		ret = count_job(p, r, proc, op, end);
	if (!ret && t->nodes)
		ret = count_node(p, r, proc, op, end);
	if (ret)
		return ret;
	if (op == DL_TOP_OPEN || op == DL_TOP_CREATE)
		count_open(p, r, ps);
	return is_data_op(op) ? count_file(p, r, proc, op, ps) : 0;
}

/* Inter-arrival times and durations: one scratch array reused for each. */
static int percentiles(const struct dl_trace_file *t, struct dt_stats *s)
{
	uint64_t *buf = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*buf)), prev = 0;
	size_t n = 0;
	int have = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 1; i < t->nrecs; i++)
		buf[n++] = t->recs[i].start_ns - t->recs[i - 1].start_ns;
	s->ia_n = n;
	s->ia_p99 = pct(buf, n, 0.99);
	s->ia_p50 = pct(buf, n, 0.50);
	n = 0;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		if (t->recs[i].op != DL_TOP_READ)
			continue;
		if (have)
			buf[n++] = t->recs[i].start_ns - prev;
		prev = t->recs[i].start_ns;
		have = 1;
	}
	s->ia_read_n = n;
	s->ia_read_p99 = pct(buf, n, 0.99);
	s->ia_read_p50 = pct(buf, n, 0.50);
	for (unsigned op = 0; op < DL_TOP__COUNT; op++) {
		if (!s->ops[op].count)
			continue;
		n = 0;
		for (uint64_t i = 0; i < t->nrecs; i++) {
			unsigned o = t->recs[i].op < DL_TOP__COUNT ? t->recs[i].op : DL_TOP_OTHER;
			if (o == op)
				buf[n++] = dl_trace_dur(&t->recs[i]);
		}
		s->ops[op].dur_p99 = pct(buf, n, 0.99);
		s->ops[op].dur_p50 = pct(buf, n, 0.50);
	}
	free(buf);
	return 0;
}

static int pid_after(const struct dt_pid_stats *a, const struct dt_pid_stats *b)
{
	return a->node != b->node ? a->node > b->node : a->pid > b->pid;
}

/* Clients in (node, pid) order, nodes in node order (insertion sorts: they
 * arrive nearly sorted, and nodes are few). */
static void sort_clients(struct dt_stats *s)
{
	for (size_t i = 1; i < s->npids; i++) {
		struct dt_pid_stats x = s->pids[i];
		size_t j = i;

		for (; j > 0 && pid_after(&s->pids[j - 1], &x); j--)
			s->pids[j] = s->pids[j - 1];
		s->pids[j] = x;
	}
	for (size_t i = 1; i < s->nnodes; i++) {
		struct dt_node_stats x = s->nodes[i];
		size_t j = i;

		for (; j > 0 && s->nodes[j - 1].node > x.node; j--)
			s->nodes[j] = s->nodes[j - 1];
		s->nodes[j] = x;
	}
}

int dt_stats_compute(const struct dl_trace_file *t, struct dt_stats *s)
{
	struct pass p = {.s = s};
	uint64_t last_end;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	s->nrecs = t->nrecs;
	s->dropped = t->f.dropped;
	s->span_s = (double)(dl_trace_end_ns(t) - t->h.start_mono_ns) / 1e9;
	p.first = last_end = t->nrecs ? t->recs[0].start_ns : 0;
	for (uint64_t i = 0; i < t->nrecs && !ret; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t end = r->start_ns + dl_trace_dur(r);

		if (end > last_end)
			last_end = end;
		ret = count_record(&p, t, i);
	}
	pass_free(&p);
	if (!ret) {
		s->active_s = t->nrecs ? (double)(last_end - p.first) / 1e9 : 0;
		s->opens_per_s = s->active_s > 0 ? (double)s->opens / s->active_s : 0;
		ret = percentiles(t, s);
	}
	if (!ret)
		ret = dt_modes_compute(t, s);
	if (!ret)
		ret = dt_issued_compute(t, s, DT_MAX_REQUEST);
	if (ret) {
		fprintf(stderr, "dlio-trace: out of memory\n");
		dt_stats_free(s);
		return ret;
	}
	sort_clients(s);
	return 0;
}

void dt_stats_free(struct dt_stats *s)
{
	free(s->files);
	free(s->pids);
	free(s->jobs);
	free(s->nodes);
	s->files = NULL;
	s->pids = NULL;
	s->jobs = NULL;
	s->nodes = NULL;
	s->nfiles = s->npids = s->njobs = s->nnodes = 0;
}

static int cmp_bytes(const void *pa, const void *pb, void *arg)
{
	const struct dt_stats *s = arg;
	const struct dt_file_stats *a = &s->files[*(const size_t *)pa];
	const struct dt_file_stats *b = &s->files[*(const size_t *)pb];
	uint64_t x = a->rbytes + a->wbytes, y = b->rbytes + b->wbytes;
	if (x != y)
		return x > y ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

size_t *dt_files_by_bytes(const struct dt_stats *s)
{
	size_t *idx = malloc((s->nfiles ? s->nfiles : 1) * sizeof(*idx));
	if (!idx)
		return NULL;
	for (size_t i = 0; i < s->nfiles; i++)
		idx[i] = i;
	qsort_r(idx, s->nfiles, sizeof(*idx), cmp_bytes, (void *)s);
	return idx;
}
