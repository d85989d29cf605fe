/* dlio-trace summary TRACE [--json] [--top N]: what a job asked of the
 * file system, per operation, per file and per client. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dliofs/json.h"
#include "dliofs/units.h"
#include "dlio_trace_i.h"
#include "tool_opts_i.h"

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* "87.5%", or "-" when there is nothing to take a share of. */
static void fmt_pct(uint64_t part, uint64_t whole, char *buf, size_t len)
{
	if (whole)
		snprintf(buf, len, "%.1f%%", 100.0 * share(part, whole));
	else
		snprintf(buf, len, "-");
}

static void fmt_epoch(uint64_t epoch_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(epoch_ns / DT_NS);
	struct tm tm;
	char tmp[32];
	gmtime_r(&sec, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03u UTC", tmp, (unsigned)(epoch_ns % DT_NS / 1000000));
}

static void text_hist(const uint64_t *hist, uint64_t total)
{
	char a[96], b[32], c[32];

	for (unsigned k = 0; k < DT_HBUCKETS; k++) {
		if (!hist[k])
			continue;
		if (k == 0) {
			snprintf(a, sizeof(a), "0");
		} else {
			dt_fmt_bytes((double)dt_bucket_lo(k), b, sizeof(b));
			dt_fmt_bytes((double)dt_bucket_lo(k) * 2, c, sizeof(c));
			snprintf(a, sizeof(a), "[%s, %s)", b, c);
		}
		printf("  %-22s %10llu %6.1f%%\n", a, (unsigned long long)hist[k],
		       100.0 * share(hist[k], total));
	}
}

static void text_ops(const struct dt_stats *s)
{
	char a[96], b[32], c[32], d[32], e[32];

	printf("\n%-9s %10s %7s %12s %10s %10s %10s %10s %11s %6s\n", "operation", "count",
	       "errors", "bytes", "MiB/s", "mean dur", "p50 dur", "p99 dur", "mean queue",
	       "hit%");
	for (unsigned op = 0; op < DL_TOP__COUNT; op++) {
		const struct dt_op_stats *o = &s->ops[op];
		if (!o->count)
			continue;
		dt_fmt_bytes((double)o->bytes, a, sizeof(a));
		dt_fmt_ns((double)o->dur_sum / (double)o->count, b, sizeof(b));
		dt_fmt_ns((double)o->dur_p50, c, sizeof(c));
		dt_fmt_ns((double)o->dur_p99, d, sizeof(d));
		dt_fmt_ns((double)o->queue_sum / (double)o->count, e, sizeof(e));
		printf("%-9s %10llu %7llu %12s %10.1f %10s %10s %10s %11s %5.1f%%\n",
		       dt_op_name(op), (unsigned long long)o->count, (unsigned long long)o->errors,
		       a, s->active_s > 0 ? (double)o->bytes / s->active_s / 1048576.0 : 0.0, b,
		       c, d, e, 100.0 * share(o->hits, o->count));
	}

	for (unsigned op = DL_TOP_READ; op <= DL_TOP_WRITE; op++) {
		const struct dt_op_stats *o = &s->ops[op];
		if (!o->count)
			continue;
		printf("\nrequest sizes (%s), as the storage saw them (%llu requests):\n",
		       dt_op_name(op), (unsigned long long)o->count);
		text_hist(o->hist, o->count);
		dt_fmt_bytes((double)o->split_at, a, sizeof(a));
		if (o->issued == o->count) {
			printf("as issued: the same (no request is a piece of a larger call split "
			       "at %s)\n", a);
			continue;
		}
		printf("request sizes (%s), as issued (%llu calls):\n"
		       "  the kernel splits a call larger than its largest request (%s) into\n"
		       "  pieces: a thread's back-to-back pieces of one file, each within\n"
		       "  %.0f ms of the previous reply, are joined (readahead looks the same)\n",
		       dt_op_name(op), (unsigned long long)o->issued, a,
		       (double)DT_PIECE_GAP_NS / 1e6);
		text_hist(o->issued_hist, o->issued);
	}
}

static void text_access(const struct dt_stats *s)
{
	char a[32], b[32], c[32], d[32];

	if (s->reads)
		printf("\nreads: %.1f%% sequential (%llu of %llu start where the same pid's "
		       "previous read of the file ended; %llu first reads of a file)\n",
		       100.0 * share(s->seq_reads, s->reads), (unsigned long long)s->seq_reads,
		       (unsigned long long)s->reads, (unsigned long long)s->first_reads);
	printf("files: %zu accessed, %llu opens, %.1f opens/s (peak %llu in one second)\n",
	       s->nfiles, (unsigned long long)s->opens, s->opens_per_s,
	       (unsigned long long)s->open_peak_per_s);
	printf("access pattern: %s (processes that read or wrote: %llu)\n"
	       "  files read or written by one process: %llu, shared by several: %llu, read\n"
	       "  whole by each of several: %llu, opened only: %llu\n",
	       dt_pattern_name(s->pattern), (unsigned long long)s->data_procs,
	       (unsigned long long)s->mode_files[DT_MODE_ONE],
	       (unsigned long long)s->mode_files[DT_MODE_SHARED],
	       (unsigned long long)s->mode_files[DT_MODE_WHOLE],
	       (unsigned long long)s->mode_files[DT_MODE_NONE]);
	dt_fmt_ns((double)s->ia_p50, a, sizeof(a));
	dt_fmt_ns((double)s->ia_p99, b, sizeof(b));
	dt_fmt_ns((double)s->ia_read_p50, c, sizeof(c));
	dt_fmt_ns((double)s->ia_read_p99, d, sizeof(d));
	printf("inter-arrival: all requests p50 %s, p99 %s; reads p50 %s, p99 %s\n", a, b, c, d);
}

static void text_clients(const struct dl_trace_file *t, const struct dt_stats *s)
{
	char a[32], b[32], c[32];

	printf("\nclients (%s):\n  %s%8s %6s %10s %10s %12s %10s %12s %8s %7s\n",
	       t->h.version >= 2 ? "processes and their threads"
				 : "client threads (a version 1 trace: tids are the daemon's workers)",
	       t->nodes ? " node " : "", "pid", "tids",
	       "requests", "reads", "read bytes", "writes", "write bytes", "files", "seq%");
	for (size_t i = 0; i < s->npids; i++) {
		const struct dt_pid_stats *p = &s->pids[i];
		dt_fmt_bytes((double)p->rbytes, a, sizeof(a));
		dt_fmt_bytes((double)p->wbytes, b, sizeof(b));
		fmt_pct(p->seq_reads, p->reads, c, sizeof(c));
		if (t->nodes)
			printf("  %5u", p->node);
		printf("  %8u %6llu %10llu %10llu %12s %10llu %12s %8llu %7s\n", p->pid,
		       (unsigned long long)p->ntids, (unsigned long long)p->requests,
		       (unsigned long long)p->reads, a, (unsigned long long)p->writes, b,
		       (unsigned long long)p->nfiles, c);
	}
	if (t->h.version < 2)
		return;
	printf("\njobs:\n  %5s %s%6s %6s %10s %10s %12s %8s %8s  %s\n", "job",
	       t->nodes ? "nodes " : "", "procs", "tids", "requests", "reads", "read bytes", "opens",
	       "releases", "name");
	for (size_t i = 0; i < s->njobs; i++) {
		const struct dt_job_stats *j = &s->jobs[i];
		const char *name = j->job ? dl_trace_name_find(t, DL_TRACE_JOB_ID(j->job)) : NULL;

		dt_fmt_bytes((double)j->rbytes, a, sizeof(a));
		if (t->nodes)
			printf("  %5u %5llu", j->job, (unsigned long long)j->nnodes);
		else
			printf("  %5u", j->job);
		printf(" %6llu %6llu %10llu %10llu %12s %8llu %8llu  %s\n", (unsigned long long)j->npids, (unsigned long long)j->ntids,
		       (unsigned long long)j->requests, (unsigned long long)j->reads, a,
		       (unsigned long long)j->opens, (unsigned long long)j->releases,
		       name ? name : j->job ? "?" : "(no job: the kernel)");
	}
}

/* A node's data span: its first read or write's arrival to the last one's
 * reply (a daemon's trace runs from its mount, long before the job). */
static double node_span_s(const struct dt_node_stats *n)
{
	return n->dlast_ns > n->dfirst_ns ? (double)(n->dlast_ns - n->dfirst_ns) / 1e9 : 0.0;
}

static double node_mb_s(const struct dt_node_stats *n)
{
	double span = node_span_s(n);

	return span > 0 ? (double)(n->rbytes + n->wbytes) / span / 1e6 : 0.0;
}

/* The cluster's data span: the first node's first read or write to the
 * last one's last reply. */
static double cluster_span_s(const struct dt_stats *s)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (size_t i = 0; i < s->nnodes; i++) {
		if (!s->nodes[i].dlast_ns)
			continue;
		first = s->nodes[i].dfirst_ns < first ? s->nodes[i].dfirst_ns : first;
		last = s->nodes[i].dlast_ns > last ? s->nodes[i].dlast_ns : last;
	}
	return last > first ? (double)(last - first) / 1e9 : 0.0;
}

/* A merged trace: what each node served, its data rate over its own data
 * span, and the cluster's over the cluster's. */
static void text_nodes(const struct dl_trace_file *t, const struct dt_stats *s)
{
	char a[32], b[32];
	uint64_t rb = 0, wb = 0;
	double sum = 0;

	if (!s->nnodes)
		return;
	printf("\nnodes (MB/s: bytes read and written, 10^6, over the node's data span, its "
	       "first read or\n  write to the last one's reply; all: the cluster's over its "
	       "data span):\n  %5s %6s %5s %10s %10s %12s %10s %12s %9s %9s %10s\n",
	       "node", "procs", "jobs", "requests", "reads", "read bytes", "writes", "write bytes",
	       "from s", "span s", "MB/s");
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct dt_node_stats *n = &s->nodes[i];

		dt_fmt_bytes((double)n->rbytes, a, sizeof(a));
		dt_fmt_bytes((double)n->wbytes, b, sizeof(b));
		printf("  %5u %6llu %5llu %10llu %10llu %12s %10llu %12s %9.3f %9.3f %10.1f\n",
		       n->node, (unsigned long long)n->npids, (unsigned long long)n->njobs,
		       (unsigned long long)n->requests, (unsigned long long)n->reads, a,
		       (unsigned long long)n->writes, b,
		       n->dlast_ns ? dl_trace_rel_s(t, n->dfirst_ns) : 0.0,
		       node_span_s(n), node_mb_s(n));
		rb += n->rbytes;
		wb += n->wbytes;
		sum += node_mb_s(n);
	}
	dt_fmt_bytes((double)rb, a, sizeof(a));
	dt_fmt_bytes((double)wb, b, sizeof(b));
	printf("  %5s %6llu %5s %10llu %10s %12s %10s %12s %9s %9.3f %10.1f  (sum of nodes "
	       "%.1f)\n",
	       "all", (unsigned long long)s->npids, "", (unsigned long long)s->nrecs, "", a, "", b,
	       "", cluster_span_s(s),
	       cluster_span_s(s) > 0 ? (double)(rb + wb) / cluster_span_s(s) / 1e6 : 0.0, sum);
}

static void text_top_files(const struct dl_trace_file *t, const struct dt_stats *s, const size_t *top,
			   size_t ntop)
{
	char a[32], c[32], tmp[32];

	if (!ntop)
		return;
	printf("\ntop files by bytes (mode: read or written by one process, shared by N "
	       "processes, or read whole by each of N):\n  %12s %8s %8s %7s  %-16s %s\n",
	       "bytes", "reads", "writes", "seq%", "mode", "file");
	for (size_t i = 0; i < ntop; i++) {
		const struct dt_file_stats *f = &s->files[top[i]];
		char m[32];

		dt_fmt_bytes((double)(f->rbytes + f->wbytes), a, sizeof(a));
		fmt_pct(f->seq_reads, f->reads, c, sizeof(c));
		if (f->mode == DT_MODE_ONE)
			snprintf(m, sizeof(m), "one process");
		else if (f->mode == DT_MODE_SHARED)
			snprintf(m, sizeof(m), "shared by %llu", (unsigned long long)f->nprocs);
		else if (f->mode == DT_MODE_WHOLE)
			snprintf(m, sizeof(m), "whole by each %llu", (unsigned long long)f->nprocs);
		else
			snprintf(m, sizeof(m), "opened only");
		printf("  %12s %8llu %8llu %7s  %-16s %s\n", a, (unsigned long long)f->reads,
		       (unsigned long long)f->writes, c, m, dl_trace_name_of(t, f->id, tmp, sizeof(tmp)));
	}
}

static void print_text(const struct dl_trace_file *t, const struct dt_stats *s, const size_t *top,
		       size_t ntop)
{
	char a[96];

	printf("trace: %s\n", t->path);
	if (t->nodes)
		printf("merged: %u nodes on one timeline (dlio-trace merge)\n", t->nnodes);
	if (t->h.config[0])
		printf("config: %s\n", t->h.config);
	fmt_epoch(t->h.epoch_ns, a, sizeof(a));
	printf("started: %s, traced for %.3f s (requests span %.3f s)\n", a, s->span_s,
	       s->active_s);
	printf("records: %llu, dropped: %llu%s\n", (unsigned long long)s->nrecs,
	       (unsigned long long)s->dropped,
	       t->has_footer ? (s->dropped ? " (lost to a writer that fell behind or a full disk: "
					     "counts are low)"
					   : "")
			     : " (no footer: drop count unknown)");
	text_ops(s);
	text_access(s);
	text_nodes(t, s);
	text_clients(t, s);
	text_top_files(t, s, top, ntop);
}

/* The sizes as the application issued them: pieces of one call joined. */
static void json_issued(struct dl_jw *w, const struct dt_op_stats *o)
{
	dl_jw_obj(w, "issued");
	dl_jw_u64(w, "count", o->issued);
	dl_jw_u64(w, "joined_requests", o->count - o->issued);
	dl_jw_u64(w, "piece_gap_ns", DT_PIECE_GAP_NS);
	dl_jw_u64(w, "split_at", o->split_at);
	dl_jw_arr(w, "size_hist");
	for (unsigned k = 0; k < DT_HBUCKETS; k++) {
		if (!o->issued_hist[k])
			continue;
		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "lo", dt_bucket_lo(k));
		dl_jw_u64(w, "hi", k ? dt_bucket_lo(k) * 2 : 1);
		dl_jw_u64(w, "count", o->issued_hist[k]);
		dl_jw_end(w);
	}
	dl_jw_end(w);
	dl_jw_end(w);
}

static void json_ops(struct dl_jw *w, const struct dt_stats *s)
{
	dl_jw_obj(w, "ops");
	for (unsigned op = 0; op < DL_TOP__COUNT; op++) {
		const struct dt_op_stats *o = &s->ops[op];

		if (!o->count)
			continue;
		dl_jw_obj(w, dt_op_name(op));
		dl_jw_u64(w, "count", o->count);
		dl_jw_u64(w, "errors", o->errors);
		dl_jw_u64(w, "bytes", o->bytes);
		dl_jw_u64(w, "cache_hits", o->hits);
		dl_jw_f64(w, "mean_dur_ns", (double)o->dur_sum / (double)o->count, 9);
		dl_jw_u64(w, "p50_dur_ns", o->dur_p50);
		dl_jw_u64(w, "p99_dur_ns", o->dur_p99);
		dl_jw_f64(w, "mean_queue_ns", (double)o->queue_sum / (double)o->count, 9);
		dl_jw_arr(w, "size_hist");
		for (unsigned k = 0; k < DT_HBUCKETS; k++) {
			if (!o->hist[k])
				continue;
			dl_jw_obj(w, NULL);
			dl_jw_u64(w, "lo", dt_bucket_lo(k));
			dl_jw_u64(w, "hi", k ? dt_bucket_lo(k) * 2 : 1);
			dl_jw_u64(w, "count", o->hist[k]);
			dl_jw_end(w);
		}
		dl_jw_end(w);
		dl_jw_u64(w, "max_request", o->max_size);
		if (op == DL_TOP_READ || op == DL_TOP_WRITE)
			json_issued(w, o);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

static void json_totals(struct dl_jw *w, const struct dt_stats *s)
{
	dl_jw_obj(w, "reads");
	dl_jw_u64(w, "count", s->reads);
	dl_jw_u64(w, "sequential", s->seq_reads);
	dl_jw_u64(w, "first_reads", s->first_reads);
	dl_jw_f64(w, "sequential_share", share(s->seq_reads, s->reads), 9);
	dl_jw_end(w);
	dl_jw_obj(w, "files");
	dl_jw_u64(w, "accessed", s->nfiles);
	dl_jw_u64(w, "opens", s->opens);
	dl_jw_f64(w, "opens_per_s", s->opens_per_s, 9);
	dl_jw_u64(w, "opens_peak_per_s", s->open_peak_per_s);
	dl_jw_end(w);
	dl_jw_obj(w, "access");
	dl_jw_str(w, "pattern", dt_pattern_name(s->pattern));
	dl_jw_u64(w, "processes", s->data_procs);
	dl_jw_obj(w, "files_by_mode");
	for (unsigned m = 0; m < DT_MODE__COUNT; m++)
		dl_jw_u64(w, dt_mode_key((enum dt_mode)m), s->mode_files[m]);
	dl_jw_end(w);
	dl_jw_end(w);
	dl_jw_obj(w, "inter_arrival_ns");
	dl_jw_obj(w, "all");
	dl_jw_u64(w, "n", s->ia_n);
	dl_jw_u64(w, "p50", s->ia_p50);
	dl_jw_u64(w, "p99", s->ia_p99);
	dl_jw_end(w);
	dl_jw_obj(w, "read");
	dl_jw_u64(w, "n", s->ia_read_n);
	dl_jw_u64(w, "p50", s->ia_read_p50);
	dl_jw_u64(w, "p99", s->ia_read_p99);
	dl_jw_end(w);
	dl_jw_end(w);
}

static void json_clients(struct dl_jw *w, const struct dl_trace_file *t, const struct dt_stats *s)
{
	dl_jw_arr(w, "clients");
	for (size_t i = 0; i < s->npids; i++) {
		const struct dt_pid_stats *p = &s->pids[i];

		dl_jw_obj(w, NULL);
		if (t->nodes)
			dl_jw_u64(w, "node", p->node);
		dl_jw_u64(w, "pid", p->pid);
		dl_jw_u64(w, "tids", p->ntids);
		dl_jw_u64(w, "requests", p->requests);
		dl_jw_u64(w, "reads", p->reads);
		dl_jw_u64(w, "read_bytes", p->rbytes);
		dl_jw_u64(w, "writes", p->writes);
		dl_jw_u64(w, "write_bytes", p->wbytes);
		dl_jw_u64(w, "opens", p->opens);
		dl_jw_u64(w, "files", p->nfiles);
		dl_jw_u64(w, "sequential_reads", p->seq_reads);
		dl_jw_f64(w, "sequential_share", share(p->seq_reads, p->reads), 9);
		dl_jw_f64(w, "first_s", dl_trace_rel_s(t, p->first_ns), 9);
		dl_jw_f64(w, "last_s", dl_trace_rel_s(t, p->last_ns), 9);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

static void json_jobs(struct dl_jw *w, const struct dl_trace_file *t, const struct dt_stats *s)
{
	dl_jw_arr(w, "jobs");
	for (size_t i = 0; i < s->njobs; i++) {
		const struct dt_job_stats *j = &s->jobs[i];
		const char *name = j->job ? dl_trace_name_find(t, DL_TRACE_JOB_ID(j->job)) : NULL;

		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "job", j->job);
		dl_jw_str(w, "name", name ? name : "");
		if (t->nodes)
			dl_jw_u64(w, "nodes", j->nnodes);
		dl_jw_u64(w, "processes", j->npids);
		dl_jw_u64(w, "threads", j->ntids);
		dl_jw_u64(w, "requests", j->requests);
		dl_jw_u64(w, "reads", j->reads);
		dl_jw_u64(w, "read_bytes", j->rbytes);
		dl_jw_u64(w, "writes", j->writes);
		dl_jw_u64(w, "write_bytes", j->wbytes);
		dl_jw_u64(w, "opens", j->opens);
		dl_jw_u64(w, "releases", j->releases);
		dl_jw_f64(w, "first_s", dl_trace_rel_s(t, j->first_ns), 9);
		dl_jw_f64(w, "last_s", dl_trace_rel_s(t, j->last_ns), 9);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

static void json_nodes(struct dl_jw *w, const struct dl_trace_file *t, const struct dt_stats *s)
{
	double sum = 0;
	uint64_t bytes = 0;

	if (!s->nnodes)
		return;
	dl_jw_arr(w, "nodes");
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct dt_node_stats *n = &s->nodes[i];
		const char *src = dl_trace_name_find(t, DL_TRACE_NODE_ID(n->node));

		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "node", n->node);
		dl_jw_str(w, "trace", src ? src : "");
		dl_jw_u64(w, "processes", n->npids);
		dl_jw_u64(w, "jobs", n->njobs);
		dl_jw_u64(w, "requests", n->requests);
		dl_jw_u64(w, "reads", n->reads);
		dl_jw_u64(w, "read_bytes", n->rbytes);
		dl_jw_u64(w, "writes", n->writes);
		dl_jw_u64(w, "write_bytes", n->wbytes);
		dl_jw_u64(w, "opens", n->opens);
		dl_jw_f64(w, "first_s", dl_trace_rel_s(t, n->first_ns), 9);
		dl_jw_f64(w, "last_s", dl_trace_rel_s(t, n->last_ns), 9);
		dl_jw_f64(w, "data_first_s", n->dlast_ns ? dl_trace_rel_s(t, n->dfirst_ns) : 0.0, 9);
		dl_jw_f64(w, "data_span_s", node_span_s(n), 9);
		dl_jw_f64(w, "mb_per_s", node_mb_s(n), 9);
		dl_jw_end(w);
		sum += node_mb_s(n);
		bytes += n->rbytes + n->wbytes;
	}
	dl_jw_end(w);
	dl_jw_obj(w, "cluster");
	dl_jw_u64(w, "nodes", s->nnodes);
	dl_jw_u64(w, "bytes", bytes);
	dl_jw_f64(w, "data_span_s", cluster_span_s(s), 9);
	dl_jw_f64(w, "mb_per_s",
		  cluster_span_s(s) > 0 ? (double)bytes / cluster_span_s(s) / 1e6 : 0.0, 9);
	dl_jw_f64(w, "sum_of_nodes_mb_per_s", sum, 9);
	dl_jw_end(w);
}

static void json_top_files(struct dl_jw *w, const struct dl_trace_file *t, const struct dt_stats *s,
			   const size_t *top, size_t ntop)
{
	char tmp[32];

	dl_jw_arr(w, "top_files");
	for (size_t i = 0; i < ntop; i++) {
		const struct dt_file_stats *f = &s->files[top[i]];

		dl_jw_obj(w, NULL);
		dl_jw_str(w, "file", dl_trace_name_of(t, f->id, tmp, sizeof(tmp)));
		dl_jw_u64(w, "id", f->id);
		dl_jw_u64(w, "bytes", f->rbytes + f->wbytes);
		dl_jw_u64(w, "reads", f->reads);
		dl_jw_u64(w, "read_bytes", f->rbytes);
		dl_jw_u64(w, "writes", f->writes);
		dl_jw_u64(w, "write_bytes", f->wbytes);
		dl_jw_u64(w, "opens", f->opens);
		dl_jw_u64(w, "sequential_reads", f->seq_reads);
		dl_jw_f64(w, "sequential_share", share(f->seq_reads, f->reads), 9);
		dl_jw_u64(w, "first_access_rank", f->first_rank);
		dl_jw_str(w, "mode", dt_mode_key(f->mode));
		dl_jw_u64(w, "processes", f->nprocs);
		dl_jw_u64(w, "whole_readers", f->whole_procs);
		dl_jw_u64(w, "extent", f->extent);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

/* One line per top-level key, per operation, client, job and file. */
static void print_json(const struct dl_trace_file *t, const struct dt_stats *s, const size_t *top,
		       size_t ntop)
{
	struct dl_jw w;

	dl_jw_init(&w, stdout, 2);
	dl_jw_obj(&w, NULL);
	dl_jw_str(&w, "trace", t->path);
	dl_jw_str(&w, "config", t->h.config);
	dl_jw_u64(&w, "start_epoch_ns", t->h.epoch_ns);
	dl_jw_f64(&w, "span_s", s->span_s, 9);
	dl_jw_f64(&w, "active_s", s->active_s, 9);
	dl_jw_u64(&w, "records", s->nrecs);
	dl_jw_u64(&w, "dropped", s->dropped);
	dl_jw_bool(&w, "complete", t->has_footer);
	dl_jw_u64(&w, "version", t->h.version);
	json_ops(&w, s);
	json_totals(&w, s);
	json_nodes(&w, t, s);
	json_clients(&w, t, s);
	json_jobs(&w, t, s);
	json_top_files(&w, t, s, top, ntop);
	dl_jw_finish(&w);
}

static const char summary_help[] =
	"usage: dlio-trace summary TRACE [--json] [--top N] [--max-request SIZE]\n"
	"  Per operation, per file and per client figures of a trace; --top N files\n"
	"  by bytes (0: all; default 10).\n"
	"  Access mode of each file (read or written by one process, shared by N\n"
	"  processes, read whole by each of N: from offset 0 to the furthest byte any\n"
	"  read reached) and the job's pattern (single process, file per process,\n"
	"  shared file, mixed), as Darshan-based studies report them.\n"
	"  Request sizes as the storage saw them, and as issued: the kernel splits a\n"
	"  call larger than its largest request into pieces, and a thread's pieces of\n"
	"  one call are joined again (same thread and file, each starting where the\n"
	"  previous ended and within 2 ms of its reply, every piece but the last at\n"
	"  most a page short of the largest request). --max-request SIZE: the\n"
	"  kernel's largest request (default 1MiB, what dliofs asks for; the largest\n"
	"  request in the trace when larger). A loop of calls of that size, back to\n"
	"  back, and readahead look the same as one call.\n";

struct summary_opts {
	int json;
	long top;
	uint64_t max_req;
};

static int set_top(void *ctx, const struct tool_opt *o, const char *arg)
{
	struct summary_opts *so = ctx;
	char *end;

	(void)o;
	so->top = strtol(arg, &end, 10);
	if (*end || so->top < 0) {
		fprintf(stderr, "dlio-trace summary: --top wants a count\n");
		return -EINVAL;
	}
	return 0;
}

static int set_max_request(void *ctx, const struct tool_opt *o, const char *arg)
{
	struct summary_opts *so = ctx;
	const char *why;

	(void)o;
	if (dl_parse_size(arg, &so->max_req, &why) || so->max_req < 4096 ||
	    so->max_req % 4096) {
		fprintf(stderr, "dlio-trace summary: --max-request %s: want the "
				"kernel's largest request, whole pages (e.g. 128KiB)\n",
			arg);
		return -EINVAL;
	}
	return 0;
}

/* The help is the text above (the options in its prose), so no row has a
 * line of its own. */
/* clang-format off */
static const struct tool_opt summary_opt[] = {
	{.name = "json", .letter = 'j', .kind = TOOL_OPT_FLAG, .value = 1,
	 .off = offsetof(struct summary_opts, json)},
	{.name = "top", .letter = 't', .kind = TOOL_OPT_CALL, .set = set_top, .arg = "N"},
	{.name = "max-request", .letter = 'm', .kind = TOOL_OPT_CALL, .set = set_max_request,
	 .arg = "SIZE"},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */

static const struct tool_opts summary_opts = {
	.prog = "dlio-trace summary",
	.head = summary_help,
	.opt = summary_opt,
	.n = TOOL_OPTS_N(summary_opt),
};

int dt_summary(int argc, char **argv)
{
	struct summary_opts so = {.top = 10};
	int next, ret;

	if ((ret = tool_opts_parse(&summary_opts, argc, argv, 1, &so, &next)))
		return ret > 0 ? 0 : 2;
	if (next != argc - 1) {
		tool_opts_usage(stderr, &summary_opts);
		return 2;
	}
	int json = so.json;
	long top = so.top;
	uint64_t max_req = so.max_req;

	struct dl_trace_file t;
	struct dt_stats s;
	if (dt_load(argv[next], &t))
		return 1;
	if (dt_stats_compute(&t, &s)) {
		dl_trace_file_free(&t);
		return 1;
	}
	if (max_req && dt_issued_compute(&t, &s, max_req)) {
		fprintf(stderr, "dlio-trace: out of memory\n");
		dt_stats_free(&s);
		dl_trace_file_free(&t);
		return 1;
	}
	size_t *idx = dt_files_by_bytes(&s);
	size_t ntop = top == 0 || (size_t)top > s.nfiles ? s.nfiles : (size_t)top;
	if (!idx)
		ntop = 0;
	if (json)
		print_json(&t, &s, idx, ntop);
	else
		print_text(&t, &s, idx, ntop);
	free(idx);
	dt_stats_free(&s);
	dl_trace_file_free(&t);
	return fflush(stdout) ? 1 : 0;
}
