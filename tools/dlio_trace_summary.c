/* dlio-trace summary TRACE [--json] [--top N]: what a job asked of the
 * file system, per operation, per file and per client. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlio_trace_i.h"

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

static void print_text(const struct dt_trace *t, const struct dt_stats *s, const size_t *top,
		       size_t ntop)
{
	char a[96], b[32], c[32], d[32], e[32], tmp[32];

	printf("trace: %s\n", t->path);
	if (t->h.config[0])
		printf("config: %s\n", t->h.config);
	fmt_epoch(t->h.epoch_ns, a, sizeof(a));
	printf("started: %s, traced for %.3f s (requests span %.3f s)\n", a, s->span_s,
	       s->active_s);
	printf("records: %llu, dropped: %llu%s\n", (unsigned long long)s->nrecs,
	       (unsigned long long)s->dropped,
	       t->has_footer ? (s->dropped ? " (lost to a writer that fell behind or a full disk: counts are low)" : "")
			     : " (no footer: drop count unknown)");

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
		printf("\nrequest sizes (%s):\n", dt_op_name(op));
		for (unsigned k = 0; k < DT_HBUCKETS; k++) {
			if (!o->hist[k])
				continue;
			if (k == 0) {
				snprintf(a, sizeof(a), "0");
			} else {
				dt_fmt_bytes((double)dt_bucket_lo(k), b, sizeof(b));
				dt_fmt_bytes((double)dt_bucket_lo(k) * 2, c, sizeof(c));
				snprintf(a, sizeof(a), "[%s, %s)", b, c);
			}
			printf("  %-22s %10llu %6.1f%%\n", a, (unsigned long long)o->hist[k],
			       100.0 * share(o->hist[k], o->count));
		}
	}

	if (s->reads)
		printf("\nreads: %.1f%% sequential (%llu of %llu start where the same pid's "
		       "previous read of the file ended; %llu first reads of a file)\n",
		       100.0 * share(s->seq_reads, s->reads), (unsigned long long)s->seq_reads,
		       (unsigned long long)s->reads, (unsigned long long)s->first_reads);
	printf("files: %zu accessed, %llu opens, %.1f opens/s (peak %llu in one second)\n",
	       s->nfiles, (unsigned long long)s->opens, s->opens_per_s,
	       (unsigned long long)s->open_peak_per_s);
	dt_fmt_ns((double)s->ia_p50, a, sizeof(a));
	dt_fmt_ns((double)s->ia_p99, b, sizeof(b));
	dt_fmt_ns((double)s->ia_read_p50, c, sizeof(c));
	dt_fmt_ns((double)s->ia_read_p99, d, sizeof(d));
	printf("inter-arrival: all requests p50 %s, p99 %s; reads p50 %s, p99 %s\n", a, b, c, d);

	printf("\nclients (%s):\n  %8s %6s %10s %10s %12s %10s %12s %8s %7s\n",
	       t->h.version >= 2 ? "processes and their threads"
				 : "client threads (a version 1 trace: tids are the daemon's workers)",
	       "pid", "tids",
	       "requests", "reads", "read bytes", "writes", "write bytes", "files", "seq%");
	for (size_t i = 0; i < s->npids; i++) {
		const struct dt_pid_stats *p = &s->pids[i];
		dt_fmt_bytes((double)p->rbytes, a, sizeof(a));
		dt_fmt_bytes((double)p->wbytes, b, sizeof(b));
		fmt_pct(p->seq_reads, p->reads, c, sizeof(c));
		printf("  %8u %6llu %10llu %10llu %12s %10llu %12s %8llu %7s\n", p->pid,
		       (unsigned long long)p->ntids, (unsigned long long)p->requests,
		       (unsigned long long)p->reads, a, (unsigned long long)p->writes, b,
		       (unsigned long long)p->nfiles, c);
	}

	if (t->h.version >= 2) {
		printf("\njobs:\n  %5s %6s %6s %10s %10s %12s %8s %8s  %s\n", "job", "procs", "tids",
		       "requests", "reads", "read bytes", "opens", "releases", "name");
		for (size_t i = 0; i < s->njobs; i++) {
			const struct dt_job_stats *j = &s->jobs[i];
			const char *name = j->job ? dt_name_find(t, DL_TRACE_JOB_ID(j->job)) : NULL;

			dt_fmt_bytes((double)j->rbytes, a, sizeof(a));
			printf("  %5u %6llu %6llu %10llu %10llu %12s %8llu %8llu  %s\n", j->job,
			       (unsigned long long)j->npids, (unsigned long long)j->ntids,
			       (unsigned long long)j->requests, (unsigned long long)j->reads, a,
			       (unsigned long long)j->opens, (unsigned long long)j->releases,
			       name ? name : j->job ? "?" : "(no job: the kernel)");
		}
	}

	if (ntop) {
		printf("\ntop files by bytes:\n  %12s %8s %8s %7s  %s\n", "bytes", "reads", "writes",
		       "seq%", "file");
		for (size_t i = 0; i < ntop; i++) {
			const struct dt_file_stats *f = &s->files[top[i]];
			dt_fmt_bytes((double)(f->rbytes + f->wbytes), a, sizeof(a));
			fmt_pct(f->seq_reads, f->reads, c, sizeof(c));
			printf("  %12s %8llu %8llu %7s  %s\n", a, (unsigned long long)f->reads,
			       (unsigned long long)f->writes, c, dt_name_of(t, f->id, tmp, sizeof(tmp)));
		}
	}
}

static void print_json(const struct dt_trace *t, const struct dt_stats *s, const size_t *top,
		       size_t ntop)
{
	char tmp[32];
	int firstop = 1;

	printf("{\n  \"trace\": ");
	dt_json_str(stdout, t->path);
	printf(",\n  \"config\": ");
	dt_json_str(stdout, t->h.config);
	printf(",\n  \"start_epoch_ns\": %llu,\n  \"span_s\": %.9g,\n  \"active_s\": %.9g,\n",
	       (unsigned long long)t->h.epoch_ns, s->span_s, s->active_s);
	printf("  \"records\": %llu,\n  \"dropped\": %llu,\n  \"complete\": %s,\n",
	       (unsigned long long)s->nrecs, (unsigned long long)s->dropped,
	       t->has_footer ? "true" : "false");

	printf("  \"ops\": {");
	for (unsigned op = 0; op < DL_TOP__COUNT; op++) {
		const struct dt_op_stats *o = &s->ops[op];
		if (!o->count)
			continue;
		printf("%s\n    \"%s\": {\"count\": %llu, \"errors\": %llu, \"bytes\": %llu, "
		       "\"cache_hits\": %llu, \"mean_dur_ns\": %.9g, \"p50_dur_ns\": %llu, "
		       "\"p99_dur_ns\": %llu, \"mean_queue_ns\": %.9g,\n      \"size_hist\": [",
		       firstop ? "" : ",", dt_op_name(op), (unsigned long long)o->count,
		       (unsigned long long)o->errors, (unsigned long long)o->bytes,
		       (unsigned long long)o->hits, (double)o->dur_sum / (double)o->count,
		       (unsigned long long)o->dur_p50, (unsigned long long)o->dur_p99,
		       (double)o->queue_sum / (double)o->count);
		firstop = 0;
		int first = 1;
		for (unsigned k = 0; k < DT_HBUCKETS; k++) {
			if (!o->hist[k])
				continue;
			printf("%s{\"lo\": %llu, \"hi\": %llu, \"count\": %llu}", first ? "" : ", ",
			       (unsigned long long)dt_bucket_lo(k),
			       (unsigned long long)(k ? dt_bucket_lo(k) * 2 : 1),
			       (unsigned long long)o->hist[k]);
			first = 0;
		}
		printf("]}");
	}
	printf("\n  },\n");

	printf("  \"reads\": {\"count\": %llu, \"sequential\": %llu, \"first_reads\": %llu, "
	       "\"sequential_share\": %.9g},\n",
	       (unsigned long long)s->reads, (unsigned long long)s->seq_reads,
	       (unsigned long long)s->first_reads, share(s->seq_reads, s->reads));
	printf("  \"files\": {\"accessed\": %zu, \"opens\": %llu, \"opens_per_s\": %.9g, "
	       "\"opens_peak_per_s\": %llu},\n",
	       s->nfiles, (unsigned long long)s->opens, s->opens_per_s,
	       (unsigned long long)s->open_peak_per_s);
	printf("  \"inter_arrival_ns\": {\"all\": {\"n\": %llu, \"p50\": %llu, \"p99\": %llu}, "
	       "\"read\": {\"n\": %llu, \"p50\": %llu, \"p99\": %llu}},\n",
	       (unsigned long long)s->ia_n, (unsigned long long)s->ia_p50,
	       (unsigned long long)s->ia_p99, (unsigned long long)s->ia_read_n,
	       (unsigned long long)s->ia_read_p50, (unsigned long long)s->ia_read_p99);

	printf("  \"clients\": [");
	for (size_t i = 0; i < s->npids; i++) {
		const struct dt_pid_stats *p = &s->pids[i];
		printf("%s\n    {\"pid\": %u, \"tids\": %llu, \"requests\": %llu, \"reads\": %llu, "
		       "\"read_bytes\": %llu, \"writes\": %llu, \"write_bytes\": %llu, "
		       "\"opens\": %llu, \"files\": %llu, \"sequential_reads\": %llu, "
		       "\"sequential_share\": %.9g, \"first_s\": %.9g, \"last_s\": %.9g}",
		       i ? "," : "", p->pid, (unsigned long long)p->ntids,
		       (unsigned long long)p->requests, (unsigned long long)p->reads,
		       (unsigned long long)p->rbytes, (unsigned long long)p->writes,
		       (unsigned long long)p->wbytes, (unsigned long long)p->opens,
		       (unsigned long long)p->nfiles, (unsigned long long)p->seq_reads,
		       share(p->seq_reads, p->reads), dt_rel_s(t, p->first_ns),
		       dt_rel_s(t, p->last_ns));
	}
	printf("\n  ],\n  \"jobs\": [");
	for (size_t i = 0; i < s->njobs; i++) {
		const struct dt_job_stats *j = &s->jobs[i];
		const char *name = j->job ? dt_name_find(t, DL_TRACE_JOB_ID(j->job)) : NULL;

		printf("%s\n    {\"job\": %u, \"name\": ", i ? "," : "", j->job);
		dt_json_str(stdout, name ? name : "");
		printf(", \"processes\": %llu, \"threads\": %llu, \"requests\": %llu, "
		       "\"reads\": %llu, \"read_bytes\": %llu, \"writes\": %llu, "
		       "\"write_bytes\": %llu, \"opens\": %llu, \"releases\": %llu, "
		       "\"first_s\": %.9g, \"last_s\": %.9g}",
		       (unsigned long long)j->npids, (unsigned long long)j->ntids,
		       (unsigned long long)j->requests, (unsigned long long)j->reads,
		       (unsigned long long)j->rbytes, (unsigned long long)j->writes,
		       (unsigned long long)j->wbytes, (unsigned long long)j->opens,
		       (unsigned long long)j->releases, dt_rel_s(t, j->first_ns),
		       dt_rel_s(t, j->last_ns));
	}
	printf("\n  ],\n  \"top_files\": [");
	for (size_t i = 0; i < ntop; i++) {
		const struct dt_file_stats *f = &s->files[top[i]];
		printf("%s\n    {\"file\": ", i ? "," : "");
		dt_json_str(stdout, dt_name_of(t, f->id, tmp, sizeof(tmp)));
		printf(", \"id\": %llu, \"bytes\": %llu, \"reads\": %llu, \"read_bytes\": %llu, "
		       "\"writes\": %llu, \"write_bytes\": %llu, \"opens\": %llu, "
		       "\"sequential_reads\": %llu, \"sequential_share\": %.9g, "
		       "\"first_access_rank\": %llu}",
		       (unsigned long long)f->id, (unsigned long long)(f->rbytes + f->wbytes),
		       (unsigned long long)f->reads, (unsigned long long)f->rbytes,
		       (unsigned long long)f->writes, (unsigned long long)f->wbytes,
		       (unsigned long long)f->opens, (unsigned long long)f->seq_reads,
		       share(f->seq_reads, f->reads), (unsigned long long)f->first_rank);
	}
	printf("\n  ]\n}\n");
}

int dt_summary(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"top", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int json = 0, c;
	long top = 10;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jt:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 't':
			top = strtol(optarg, &end, 10);
			if (*end || top < 0) {
				fprintf(stderr, "dlio-trace summary: --top wants a count\n");
				return 2;
			}
			break;
		case 'h':
			printf("usage: dlio-trace summary TRACE [--json] [--top N]\n"
			       "  Per operation, per file and per client figures of a trace; "
			       "--top N files by bytes (0: all; default 10).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: dlio-trace summary TRACE [--json] [--top N]\n");
		return 2;
	}

	struct dt_trace t;
	struct dt_stats s;
	if (dt_load(argv[optind], &t))
		return 1;
	if (dt_stats_compute(&t, &s)) {
		dt_free(&t);
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
	dt_free(&t);
	return fflush(stdout) ? 1 : 0;
}
