/* dlio-trace compare A B [--json]: how alike two traces are, one score in
 * [0, 1] per aspect and their mean. The method is in dt_compare_help. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"
#include "dlio_trace_i.h"
#include "tool_opts_i.h"

const char dt_compare_help[] =
	"usage: dlio-trace compare A B [--json]\n"
	"  Similarity of two traces (e.g. a job on the mount and dlio-drive's emulation\n"
	"  of it): one score per aspect in [0, 1] (1: identical), and overall, the mean\n"
	"  of the twelve aspects marked *. Files are matched by name (the path in the\n"
	"  name table). TVD: total variation distance of two distributions, in [0, 1].\n"
	"  What is done:\n"
	"  * op_mix          1 - TVD between the distributions of requests over\n"
	"                    operations.\n"
	"  * request_size    per data operation (read, write): 1 - TVD between the\n"
	"                    power-of-two histograms of request sizes, averaged with\n"
	"                    weights = the operation's mean share of data requests in A\n"
	"                    and B (an operation present in one trace only scores 0).\n"
	"  * bytes_per_file  1 - TVD between the shares of bytes (read + written) per\n"
	"                    file, over the union of file names (= 1 - L1/2).\n"
	"  * sequentiality   1 - |sA - sB|, s = share of reads that start where the same\n"
	"                    pid's previous read of the same file ended.\n"
	"  In what order (what a shuffle keeps: two runs of one job with different\n"
	"  shuffle seeds score ~1, a job that reads fewer files per epoch, revisits\n"
	"  files sooner or reads them in other pieces scores less). A visit: a thread\n"
	"  turning to a file, or opening it again (where the trace has no opens:\n"
	"  reading it from offset 0 again). KS: two-sample Kolmogorov-Smirnov\n"
	"  distance in [0, 1], the largest gap between the two cumulative\n"
	"  distributions (no bins, so no bin edge to straddle).\n"
	"  * access_order    mean of the three below.\n"
	"      reuse_distance   1 - KS between the visits' reuse distances: distinct\n"
	"                       files visited since the previous visit of the same\n"
	"                       file (a file's first visit: beyond every distance).\n"
	"      files_per_epoch  min/max of the distinct files per epoch; an epoch ends\n"
	"                       at a visit to a file already visited in it (the last\n"
	"                       epoch, possibly cut short, counts only when it is the\n"
	"                       only one).\n"
	"      sequential_runs  1 - KS between the lengths of sequential runs (a\n"
	"                       thread's back-to-back reads of one file), each weighted\n"
	"                       by its bytes.\n"
	"    exact_order     files ranked by first access (open/read/write) in each\n"
	"                    trace: J * max(0, rho), J = |common| / |union| of the files,\n"
	"                    rho = Spearman rank correlation of the first-access order\n"
	"                    of the common files (1 when only one is common). Two\n"
	"                    independent shuffles score ~0, the same order 1; not in\n"
	"                    overall (a shuffling job does not repeat its own order).\n"
	"  In time (data requests: reads and writes, from the first arrival to the last\n"
	"  reply, the active span):\n"
	"  * throughput      min/max of the bytes moved per second of active span.\n"
	"  * throughput_time 1 - KS between the shares of bytes moved in each twentieth\n"
	"                    of the active span (each request's bytes spread over its\n"
	"                    time in service): 1 - the most one run was ahead of the\n"
	"                    other in its share of the bytes at the same share of its\n"
	"                    time; the course of the run, whatever its speed.\n"
	"  * inter_arrival   1 - KS between the gaps between consecutive arrivals.\n"
	"  * concurrency     1 - KS between the numbers of data requests in flight,\n"
	"                    each weighted by the time spent so.\n"
	"  In absolute terms (what the rates and shares above do not see: one epoch\n"
	"  of a three-epoch job has the same rate and course, a third of the bytes):\n"
	"  * duration        min/max of the active spans (seconds).\n"
	"  * volume          min/max of the data bytes moved (reads + writes).\n"
	"  * throughput_abs  both runs on one absolute time axis, each from its first\n"
	"                    data arrival: 1 - the largest gap between their\n"
	"                    cumulative bytes moved (each request's bytes spread over\n"
	"                    its time in service) at the same time, over the larger\n"
	"                    volume. The same bytes at half the speed score 0.5, one\n"
	"                    epoch of three at the same pace 1/3.\n"
	"    overall         mean of the twelve aspects marked *.\n"
	"  Aspects with nothing to compare in both traces (e.g. no reads) score 1; with\n"
	"  something in one trace only, 0.\n";

/* 1 - TVD of two count vectors, each normalized to sum 1. */
static double sim_counts(const uint64_t *a, const uint64_t *b, size_t n)
{
	uint64_t ta = 0, tb = 0;
	for (size_t i = 0; i < n; i++) {
		ta += a[i];
		tb += b[i];
	}
	if (!ta && !tb)
		return 1.0;
	if (!ta || !tb)
		return 0.0;
	double d = 0;
	for (size_t i = 0; i < n; i++)
		d += fabs((double)a[i] / (double)ta - (double)b[i] / (double)tb);
	return 1.0 - d / 2;
}

static double sim_op_mix(const struct dt_stats *a, const struct dt_stats *b)
{
	uint64_t ca[DL_TOP__COUNT], cb[DL_TOP__COUNT];
	for (unsigned op = 0; op < DL_TOP__COUNT; op++) {
		ca[op] = a->ops[op].count;
		cb[op] = b->ops[op].count;
	}
	return sim_counts(ca, cb, DL_TOP__COUNT);
}

static double sim_sizes(const struct dt_stats *a, const struct dt_stats *b)
{
	static const unsigned data_ops[] = {DL_TOP_READ, DL_TOP_WRITE};
	uint64_t na = a->ops[DL_TOP_READ].count + a->ops[DL_TOP_WRITE].count;
	uint64_t nb = b->ops[DL_TOP_READ].count + b->ops[DL_TOP_WRITE].count;
	double sum = 0, wsum = 0;

	if (!na && !nb)
		return 1.0;
	for (unsigned k = 0; k < 2; k++) {
		unsigned op = data_ops[k];
		double w = ((na ? (double)a->ops[op].count / (double)na : 0) +
			    (nb ? (double)b->ops[op].count / (double)nb : 0)) /
			   2;
		if (w <= 0)
			continue;
		sum += w * sim_counts(a->ops[op].hist, b->ops[op].hist, DT_HBUCKETS);
		wsum += w;
	}
	return wsum > 0 ? sum / wsum : 1.0;
}

struct named {
	const char *name;
	uint64_t bytes, rank;
	char *own; /* allocated "#id" when the trace has no name */
};

static int cmp_named(const void *pa, const void *pb)
{
	return strcmp(((const struct named *)pa)->name, ((const struct named *)pb)->name);
}

static int cmp_rank(const void *pa, const void *pb)
{
	uint64_t x = *(const uint64_t *)pa, y = *(const uint64_t *)pb;
	return x < y ? -1 : x > y;
}

static struct named *named_files(const struct dl_trace_file *t, const struct dt_stats *s)
{
	struct named *v = calloc(s->nfiles ? s->nfiles : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct dt_file_stats *f = &s->files[i];
		v[i].name = dl_trace_name_find(t, f->id);
		if (!v[i].name) {
			v[i].own = malloc(32);
			if (!v[i].own) {
				for (size_t k = 0; k < i; k++)
					free(v[k].own);
				free(v);
				return NULL;
			}
			snprintf(v[i].own, 32, "#%llu", (unsigned long long)f->id);
			v[i].name = v[i].own;
		}
		v[i].bytes = f->rbytes + f->wbytes;
		v[i].rank = f->first_rank;
	}
	qsort(v, s->nfiles, sizeof(*v), cmp_named);
	return v;
}

/* bytes_per_file and access_order, by a merge over the sorted names. */
static int sim_files(const struct dl_trace_file *ta, const struct dt_stats *a,
		     const struct dl_trace_file *tb, const struct dt_stats *b, double *bytes_sim,
		     double *order_sim)
{
	struct named *va = named_files(ta, a), *vb = named_files(tb, b);
	uint64_t (*common)[2] = malloc((a->nfiles < b->nfiles ? a->nfiles : b->nfiles) * 16 + 16);
	uint64_t tota = 0, totb = 0, m = 0, uni = 0;
	int ret = -ENOMEM;

	if (!va || !vb || !common)
		goto out;
	for (size_t i = 0; i < a->nfiles; i++)
		tota += va[i].bytes;
	for (size_t i = 0; i < b->nfiles; i++)
		totb += vb[i].bytes;

	double l1 = 0;
	size_t i = 0, j = 0;
	while (i < a->nfiles || j < b->nfiles) {
		int c = i == a->nfiles ? 1 : j == b->nfiles ? -1 : strcmp(va[i].name, vb[j].name);
		double pa = 0, pb = 0;
		if (c <= 0)
			pa = tota ? (double)va[i].bytes / (double)tota : 0;
		if (c >= 0)
			pb = totb ? (double)vb[j].bytes / (double)totb : 0;
		if (c == 0) {
			common[m][0] = va[i].rank;
			common[m][1] = vb[j].rank;
			m++;
		}
		l1 += fabs(pa - pb);
		uni++;
		i += c <= 0;
		j += c >= 0;
	}
	if (!tota && !totb)
		*bytes_sim = 1.0;
	else if (!tota || !totb)
		*bytes_sim = 0.0;
	else
		*bytes_sim = 1.0 - l1 / 2;

	if (!uni) {
		*order_sim = 1.0;
	} else if (!m) {
		*order_sim = 0.0;
	} else {
		/* Rank the common files 0..m-1 in each trace's own order. */
		qsort(common, m, sizeof(*common), cmp_rank); /* by A's rank */
		for (uint64_t k = 0; k < m; k++)
			common[k][0] = k;
		/* Sort by B's rank, carrying A's new rank; d = A rank - B rank. */
		uint64_t (*byb)[2] = malloc(m * sizeof(*byb));
		if (!byb)
			goto out;
		for (uint64_t k = 0; k < m; k++) {
			byb[k][0] = common[k][1];
			byb[k][1] = common[k][0];
		}
		qsort(byb, m, sizeof(*byb), cmp_rank);
		double d2 = 0;
		for (uint64_t k = 0; k < m; k++) {
			double d = (double)byb[k][1] - (double)k;
			d2 += d * d;
		}
		free(byb);
		double md = (double)m;
		double rho = m < 2 ? 1.0 : 1.0 - 6.0 * d2 / (md * (md * md - 1.0));
		*order_sim = ((double)m / (double)uni) * (rho > 0 ? rho : 0);
	}
	ret = 0;
out:
	for (size_t k = 0; va && k < a->nfiles; k++)
		free(va[k].own);
	for (size_t k = 0; vb && k < b->nfiles; k++)
		free(vb[k].own);
	free(va);
	free(vb);
	free(common);
	return ret;
}

static double sim_ratio(double a, double b)
{
	if (a <= 0 && b <= 0)
		return 1.0;
	if (a <= 0 || b <= 0)
		return 0.0;
	return a < b ? a / b : b / a;
}

static double seq_share(const struct dt_stats *s)
{
	return s->reads ? (double)s->seq_reads / (double)s->reads : 0;
}

/* The help is dt_compare_help (the options in its prose). */
static const struct tool_opt compare_opt[] = {
    {.name = "json", .letter = 'j', .kind = TOOL_OPT_FLAG, .value = 1},
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};

static const struct tool_opts compare_opts = {
    .prog = "dlio-trace compare",
    .head = dt_compare_help,
    .opt = compare_opt,
    .n = TOOL_OPTS_N(compare_opt),
};

int dt_compare(int argc, char **argv)
{
	int json = 0, next, ret = 1;

	if ((ret = tool_opts_parse(&compare_opts, argc, argv, 1, &json, &next)))
		return ret > 0 ? 0 : 2;
	ret = 1;
	if (next != argc - 2) {
		tool_opts_usage(stderr, &compare_opts);
		return 2;
	}
	struct dl_trace_file ta, tb;
	struct dt_stats a, b;
	if (dt_load(argv[next], &ta))
		return 1;
	if (dt_load(argv[next + 1], &tb)) {
		dl_trace_file_free(&ta);
		return 1;
	}
	if (dt_stats_compute(&ta, &a))
		goto out_traces;
	if (dt_stats_compute(&tb, &b))
		goto out_a;

	struct dt_shape sa = {0}, sb = {0};
	if (dt_shape_compute(&ta, &sa) || dt_shape_compute(&tb, &sb)) {
		fprintf(stderr, "dlio-trace: out of memory\n");
		goto out_shapes;
	}
	/* The aspects in overall, then access_order's parts and exact_order. */
	enum { NOVERALL = 12, NASPECTS = 16, REUSE = 12, FPE, RUNS, EXACT };
	static const char *const names[NASPECTS] = {
		"op_mix", "request_size", "bytes_per_file", "sequentiality", "access_order",
		"throughput", "throughput_time", "inter_arrival", "concurrency",
		"duration", "volume", "throughput_abs",
		"reuse_distance", "files_per_epoch", "sequential_runs", "exact_order"};
	double v[NASPECTS];
	v[0] = sim_op_mix(&a, &b);
	v[1] = sim_sizes(&a, &b);
	if (sim_files(&ta, &a, &tb, &b, &v[2], &v[EXACT])) {
		fprintf(stderr, "dlio-trace: out of memory\n");
		goto out_shapes;
	}
	if (!a.reads && !b.reads)
		v[3] = 1.0;
	else
		v[3] = 1.0 - fabs(seq_share(&a) - seq_share(&b));
	v[REUSE] = 1.0 - dt_ks(&sa.reuse, &sb.reuse);
	v[FPE] = sim_ratio(sa.files_per_epoch, sb.files_per_epoch);
	v[RUNS] = 1.0 - dt_ks(&sa.runs, &sb.runs);
	v[4] = (v[REUSE] + v[FPE] + v[RUNS]) / 3;
	v[5] = sim_ratio(sa.rate, sb.rate);
	v[6] = 1.0 - dt_ks(&sa.tp, &sb.tp);
	v[7] = 1.0 - dt_ks(&sa.ia, &sb.ia);
	v[8] = 1.0 - dt_ks(&sa.conc, &sb.conc);
	/* What the rates and shares above cannot see: one epoch of a
	 * three-epoch job has the same rate and the same course in normalized
	 * time, a third of the bytes in a third of the time. */
	v[9] = sim_ratio(sa.span_ns, sb.span_ns);
	v[10] = sim_ratio(sa.bytes, sb.bytes);
	v[11] = 1.0 - dt_cum_gap(&sa, &sb);
	double overall = 0;
	for (unsigned k = 0; k < NASPECTS; k++) {
		/* Rounding must not push a score outside [0, 1]. */
		v[k] = v[k] < 0 ? 0 : v[k] > 1 ? 1 : v[k];
		if (k < NOVERALL)
			overall += v[k] / NOVERALL;
	}
	if (json) {
		struct dl_jw w;

		dl_jw_init(&w, stdout, 0);
		dl_jw_obj(&w, NULL);
		dl_jw_str(&w, "a", ta.path);
		dl_jw_str(&w, "b", tb.path);
		for (unsigned k = 0; k < NASPECTS; k++)
			dl_jw_fixed(&w, names[k], v[k], 6);
		dl_jw_fixed(&w, "overall", overall, 6);
		dl_jw_fixed(&w, "files_per_epoch_a", sa.files_per_epoch, 2);
		dl_jw_fixed(&w, "files_per_epoch_b", sb.files_per_epoch, 2);
		dl_jw_u64(&w, "epochs_a", sa.epochs);
		dl_jw_u64(&w, "epochs_b", sb.epochs);
		dl_jw_fixed(&w, "mb_per_s_a", sa.rate / 1e6, 3);
		dl_jw_fixed(&w, "mb_per_s_b", sb.rate / 1e6, 3);
		dl_jw_fixed(&w, "duration_s_a", sa.span_ns / 1e9, 6);
		dl_jw_fixed(&w, "duration_s_b", sb.span_ns / 1e9, 6);
		dl_jw_u64(&w, "bytes_a", (uint64_t)sa.bytes);
		dl_jw_u64(&w, "bytes_b", (uint64_t)sb.bytes);
		dl_jw_finish(&w);
		putchar('\n');
	} else {
		printf("A: %s (%llu records)\nB: %s (%llu records)\n", ta.path,
		       (unsigned long long)ta.nrecs, tb.path, (unsigned long long)tb.nrecs);
		for (unsigned k = 0; k < NASPECTS; k++)
			printf("  %s%-17s %.3f%s\n", k >= REUSE && k < EXACT ? "  " : "", names[k],
			       v[k], k == EXACT ? "  (not in overall)" : "");
		printf("  %-17s %.3f\n", "overall", overall);
		printf("  files per epoch %.1f / %.1f (%llu / %llu epochs), %.1f / %.1f MB/s\n",
		       sa.files_per_epoch, sb.files_per_epoch, (unsigned long long)sa.epochs,
		       (unsigned long long)sb.epochs, sa.rate / 1e6, sb.rate / 1e6);
		printf("  %.3f / %.3f s, %.1f / %.1f MB moved\n", sa.span_ns / 1e9,
		       sb.span_ns / 1e9, sa.bytes / 1e6, sb.bytes / 1e6);
	}
	ret = fflush(stdout) ? 1 : 0;
out_shapes:
	dt_shape_free(&sa);
	dt_shape_free(&sb);
	dt_stats_free(&b);
out_a:
	dt_stats_free(&a);
out_traces:
	dl_trace_file_free(&ta);
	dl_trace_file_free(&tb);
	return ret;
}
