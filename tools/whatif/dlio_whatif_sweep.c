/* dlio-whatif sweep: the job at every point of a grid of storage settings,
 * each run cold, R measured runs after W discarded ones (the Mila
 * benchmarks' method), reported per point as mean, min, max and standard
 * deviation: a table, JSON with every run, a plot with min-max bars. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlio_whatif_i.h"
#include "dliofs/json.h"

static void point_label(const struct wi_kv *kv, unsigned n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s=%s", i ? ", " : "", kv[i].key,
					kv[i].val);
}

/* Which metrics any point has. */
static unsigned metrics_seen(const struct wi_stat (*st)[WI_NM], size_t np)
{
	unsigned seen = 0;

	for (size_t p = 0; p < np; p++)
		for (int m = 0; m < WI_NM; m++)
			if (st[p][m].n)
				seen |= 1u << m;
	return seen;
}

static void cell(int m, const struct wi_stat *s, char *buf, size_t len)
{
	char a[32], b[32];

	if (!s->n) {
		snprintf(buf, len, "-");
		return;
	}
	wi_fmt_metric(m, s->mean, a, sizeof(a));
	if (s->n < 2) {
		snprintf(buf, len, "%s", a);
		return;
	}
	wi_fmt_metric(m, s->sd, b, sizeof(b));
	snprintf(buf, len, "%s +-%s", a, b);
}

/* A cluster's point: each node's figures (its rank's), and how far apart
 * the nodes' MB/s are. */
static void print_nodes(const struct wi_opts *o, const struct wi_env *e, const struct wi_run *runs,
			unsigned seen)
{
	unsigned nr = o->warmup + o->repeat;
	double lo = 0, hi = 0;
	char buf[96];

	if (e->nodes < 2)
		return;
	for (unsigned q = 0; q < e->nodes; q++) {
		struct wi_stat ns[WI_NM];

		wi_node_stats(runs, nr, o->warmup, q, ns);
		if (!ns[WI_M_MBPS].n)
			continue;
		printf("  node %-12u ", q);
		for (unsigned a = 1; a < o->grid.nax; a++)
			printf("%-18s ", "");
		for (int m = 0; m < WI_NM; m++) {
			if (!(seen >> m & 1))
				continue;
			cell(m, &ns[m], buf, sizeof(buf));
			printf("%-17s ", buf);
		}
		printf("\n");
		if (!lo || ns[WI_M_MBPS].mean < lo)
			lo = ns[WI_M_MBPS].mean;
		if (ns[WI_M_MBPS].mean > hi)
			hi = ns[WI_M_MBPS].mean;
	}
	if (lo > 0)
		printf("  spread over %u nodes: MB/s %.1f..%.1f (the slowest %.1f%% below the "
		       "fastest)\n",
		       e->nodes, lo, hi, (1 - lo / hi) * 100);
}

static void print_table(const struct wi_opts *o, const struct wi_env *e, struct wi_run *runs,
			const struct wi_stat (*st)[WI_NM], size_t np)
{
	unsigned seen = metrics_seen(st, np), nr = o->warmup + o->repeat;
	struct wi_kv kv[WI_MAX_AXES];
	int metric = wi_opts_metric(o, e);
	char buf[96];

	printf("dlio-whatif sweep: %zu point%s x %u run%s%s, %u job%s at once (%s), every run "
	       "cold",
	       np, np == 1 ? "" : "s", o->repeat, o->repeat == 1 ? "" : "s",
	       o->warmup ? " after warm-up" : "", e->copies, e->copies == 1 ? "" : "s",
	       e->kind == WI_JOB_DRIVE ? "dlio-drive" : "under dlio-stall");
	if (e->nodes)
		printf("; a cluster of %u mounts, one rank per node", e->nodes);
	printf("\n");
	for (unsigned a = 0; a < o->grid.nax; a++)
		printf("%-18s ", o->grid.ax[a].key);
	for (int m = 0; m < WI_NM; m++)
		if (seen >> m & 1)
			printf("%-17s ", wi_metrics[m].head);
	if (o->have_target)
		printf("%s", o->target.text);
	printf("\n");
	for (size_t p = 0; p < np; p++) {
		wi_grid_point(&o->grid, p, kv);
		for (unsigned a = 0; a < o->grid.nax; a++)
			printf("%-18s ", kv[a].val);
		for (int m = 0; m < WI_NM; m++) {
			if (!(seen >> m & 1))
				continue;
			cell(m, &st[p][m], buf, sizeof(buf));
			printf("%-17s ", buf);
		}
		if (o->have_target && st[p][metric].n)
			printf("%s",
			       wi_target_met(&o->target, st[p][metric].mean) ? "met" : "not met");
		printf("\n");
		for (unsigned c = 0; e->copies > 1 && c < e->copies; c++) {
			struct wi_stat cs[WI_NM];

			wi_point_stats(&runs[p * nr], nr, o->warmup, (int)c, cs);
			printf("  job %-13u ", c);
			for (unsigned a = 1; a < o->grid.nax; a++)
				printf("%-18s ", "");
			for (int m = 0; m < WI_NM; m++) {
				if (!(seen >> m & 1))
					continue;
				cell(m, &cs[m], buf, sizeof(buf));
				printf("%-17s ", buf);
			}
			printf("\n");
		}
		print_nodes(o, e, &runs[p * nr], seen);
	}
	if (e->nodes > 1)
		printf("(per point: the job's ranks together, as dlio-drive reports them: "
		       "samples/s and MB/s summed, AU and data wait the ranks' mean; per node its "
		       "rank's own; spread: the slowest node's MB/s against the fastest's)\n");
	if (e->copies > 1)
		printf("(per point: run time the longest job's, AU and data wait the jobs' mean, "
		       "samples/s and MB/s their sum)\n");
	if (o->repeat > 1)
		printf("(mean +-standard deviation over %u runs; min and max in the JSON)\n",
		       o->repeat);
}

static int write_json(const char *path, const struct wi_opts *o, const struct wi_env *e,
		      struct wi_run *runs, const struct wi_stat (*st)[WI_NM], size_t np)
{
	unsigned nr = o->warmup + o->repeat;
	struct wi_kv kv[WI_MAX_AXES];
	struct dl_jw w;
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "dlio-whatif: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	dl_jw_init(&w, f, 3);
	dl_jw_obj(&w, NULL);
	wi_json_head(&w, "sweep", e, o->repeat, o->warmup);
	dl_jw_str(&w, "metric", wi_metrics[wi_opts_metric(o, e)].name);
	if (o->have_target) {
		wi_json_target(&w, &o->target);
	}
	dl_jw_arr(&w, "keys");
	for (unsigned a = 0; a < o->grid.nax; a++)
		dl_jw_str(&w, NULL, o->grid.ax[a].key);
	dl_jw_end(&w);
	dl_jw_arr(&w, "points");
	for (size_t p = 0; p < np; p++) {
		size_t i = p;

		wi_grid_point(&o->grid, p, kv);
		dl_jw_obj(&w, NULL);
		wi_json_settings(&w, kv, o->grid.nax);
		dl_jw_arr(&w, "values");
		for (unsigned a = 0; a < o->grid.nax; a++) {
			size_t stride = 1;

			for (unsigned b = a + 1; b < o->grid.nax; b++)
				stride *= o->grid.ax[b].nvals;
			dl_jw_f64(&w, NULL, o->grid.ax[a].num[i / stride % o->grid.ax[a].nvals], 9);
		}
		dl_jw_end(&w);
		wi_json_stats(&w, "stats", st[p]);
		dl_jw_arr(&w, "job_stats");
		for (unsigned c = 0; e->copies > 1 && c < e->copies; c++) {
			struct wi_stat cs[WI_NM];

			wi_point_stats(&runs[p * nr], nr, o->warmup, (int)c, cs);
			wi_json_stats(&w, NULL, cs);
		}
		dl_jw_end(&w);
		if (e->nodes) {
			dl_jw_arr(&w, "node_stats");
			for (unsigned q = 0; q < e->nodes; q++) {
				struct wi_stat ns[WI_NM];

				wi_node_stats(&runs[p * nr], nr, o->warmup, q, ns);
				wi_json_stats(&w, NULL, ns);
			}
			dl_jw_end(&w);
		}
		wi_json_runs(&w, &runs[p * nr], nr, o->warmup);
		dl_jw_end(&w);
	}
	dl_jw_end(&w);
	return wi_json_close(&w, f);
}

static int run_grid(const struct wi_opts *o, struct wi_env *e, struct wi_run *runs, size_t np)
{
	unsigned nr = o->warmup + o->repeat;
	struct wi_kv kv[WI_MAX_AXES];
	char what[1024], tag[64];
	int failed = 0;

	for (size_t p = 0; p < np; p++) {
		wi_grid_point(&o->grid, p, kv);
		for (unsigned r = 0; r < nr; r++) {
			char label[1100];
			int ret;

			point_label(kv, o->grid.nax, what, sizeof(what));
			snprintf(label, sizeof(label), "point %zu of %zu (%s), %s %u of %u", p + 1,
				 np, what, r < o->warmup ? "warm-up" : "run",
				 r < o->warmup ? r + 1 : r - o->warmup + 1,
				 r < o->warmup ? o->warmup : o->repeat);
			snprintf(tag, sizeof(tag), "p%zu-r%u", p, r);
			ret = wi_measure(e, kv, o->grid.nax, tag, p * nr + r, np * nr, label,
					 &runs[p * nr + r]);
			if (ret == -EIO || ret == -EINTR)
				return ret; /* the mount itself fails (every run would), or stopped */
			failed |= ret || !runs[p * nr + r].ok;
		}
	}
	wi_progress_end(e);
	return failed;
}

int wi_sweep(int argc, char **argv)
{
	struct wi_opts o;
	struct wi_env e;
	struct wi_run *runs = NULL;
	struct wi_stat(*st)[WI_NM] = NULL;
	char json[PATH_MAX + 16];
	size_t np;
	unsigned nr;
	int ret, rc = 1;

	ret = wi_opts_parse(argc, argv, "sweep", &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = wi_env_from_opts(&e, &o);
	if (ret) {
		rc = ret == -EINVAL ? 2 : 1; /* refused before anything ran: as a bad option */
		goto out;
	}
	np = wi_grid_points(&o.grid);
	nr = o.warmup + o.repeat;
	runs = calloc(np * nr, sizeof(*runs));
	st = calloc(np, sizeof(*st));
	if (!runs || !st)
		goto out;
	ret = run_grid(&o, &e, runs, np);
	if (ret < 0)
		goto out;
	for (size_t p = 0; p < np; p++)
		wi_point_stats(&runs[p * nr], nr, o.warmup, -1, st[p]);
	print_table(&o, &e, runs, (const struct wi_stat(*)[WI_NM])st, np);
	rc = ret ? 1 : 0;
	/* The plot is drawn from the JSON: without --json it goes to the workdir. */
	snprintf(json, sizeof(json), "%s/sweep.json", e.workdir);
	if ((o.json || o.plot) && write_json(o.json ? o.json : json, &o, &e, runs,
					     (const struct wi_stat(*)[WI_NM])st, np))
		rc = 1;
	else if (o.plot &&
		 wi_plot(o.json ? o.json : json, o.plot, wi_metrics[wi_opts_metric(&o, &e)].name))
		rc = 1;
out:
	free(runs);
	free(st);
	wi_env_fini(&e);
	return rc;
}
