/* What the verbs share on the way out: the progress line while runs go on,
 * figures for people, the runs of a point as JSON, and the plot (matplotlib,
 * a helper found relative to this binary like dlio-trace's). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlio_whatif_i.h"
#include "dliofs/clock.h"
#include "dliofs/json.h"
#include "tool_path_i.h"

static void fmt_dur(double s, char *buf, size_t len)
{
	long t = (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

/* On a terminal the line is redrawn in place; into a file or a pipe each
 * run gets a line of its own (--progress), so a log still shows it. */
void wi_progress(struct wi_env *e, size_t done, size_t total, const char *what)
{
	double el = (double)(dl_mono_ns() - e->t0) / 1e9;
	char a[32], b[32] = "?";

	fmt_dur(el, a, sizeof(a));
	if (done)
		fmt_dur(el / (double)done * (double)(total - done), b, sizeof(b));
	tool_progress(&e->pl, "run %zu of %zu: %s; elapsed %s, left ~%s", done + 1, total, what, a,
		      b);
}

void wi_progress_end(struct wi_env *e) { tool_progress_end(&e->pl); }

void wi_fmt_metric(int m, double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (wi_metrics[m].form == WI_MF_SHARE)
		snprintf(buf, len, "%.1f%%", v * 100);
	else if (wi_metrics[m].form == WI_MF_SECONDS)
		snprintf(buf, len, "%.2f s", v);
	else
		snprintf(buf, len, "%.1f", v);
}

void wi_json_figs(struct dl_jw *w, const char *key, const struct wi_figs *f)
{
	dl_jw_obj(w, key);
	for (int m = 0; m < WI_NM; m++)
		if (wi_figs_has(f, m))
			dl_jw_f64(w, wi_metrics[m].name, f->v[m], 6);
	dl_jw_end(w);
}

void wi_json_settings(struct dl_jw *w, const struct wi_kv *kv, unsigned n)
{
	dl_jw_arr(w, "settings");
	for (unsigned i = 0; i < n; i++) {
		dl_jw_obj(w, NULL);
		dl_jw_str(w, "key", kv[i].key);
		dl_jw_str(w, "value", kv[i].val);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

/* Statistics of every metric over the measured runs (warm-ups left out). */
void wi_point_stats(const struct wi_run *runs, unsigned nruns, unsigned warmup, int copy,
		    struct wi_stat st[WI_NM])
{
	double v[256];

	for (int m = 0; m < WI_NM; m++) {
		unsigned k = 0;

		for (unsigned r = warmup; r < nruns && k < 256; r++) {
			const struct wi_figs *f = copy < 0 ? &runs[r].total : &runs[r].copy[copy];

			v[k++] = runs[r].ok && wi_figs_has(f, m) ? f->v[m] : NAN;
		}
		wi_stat_of(v, k, &st[m]);
	}
}

void wi_node_stats(const struct wi_run *runs, unsigned nruns, unsigned warmup, unsigned node,
		   struct wi_stat st[WI_NM])
{
	double v[256];

	for (int m = 0; m < WI_NM; m++) {
		unsigned k = 0;

		for (unsigned r = warmup; r < nruns && k < 256; r++) {
			const struct wi_figs *f = &runs[r].node[node];

			v[k++] = runs[r].ok && node < runs[r].nnodes && wi_figs_has(f, m) ? f->v[m]
											   : NAN;
		}
		wi_stat_of(v, k, &st[m]);
	}
}

void wi_json_stats(struct dl_jw *w, const char *key, const struct wi_stat st[WI_NM])
{
	dl_jw_obj(w, key);
	for (int m = 0; m < WI_NM; m++) {
		if (!st[m].n)
			continue;
		dl_jw_obj(w, wi_metrics[m].name);
		dl_jw_f64(w, "mean", st[m].mean, 6);
		dl_jw_f64(w, "min", st[m].min, 6);
		dl_jw_f64(w, "max", st[m].max, 6);
		dl_jw_f64(w, "stdev", st[m].sd, 6);
		dl_jw_u64(w, "n", st[m].n);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

/* Every run of a point: warm-ups flagged, each copy and the total. */
void wi_json_runs(struct dl_jw *w, const struct wi_run *runs, unsigned nruns, unsigned warmup)
{
	dl_jw_arr(w, "runs");
	for (unsigned r = 0; r < nruns; r++) {
		dl_jw_obj(w, NULL);
		dl_jw_bool(w, "warmup", r < warmup);
		dl_jw_bool(w, "ok", runs[r].ok);
		dl_jw_f64(w, "elapsed_s", runs[r].elapsed_s, 6);
		if (runs[r].note[0])
			dl_jw_str(w, "note", runs[r].note);
		if (runs[r].trace[0])
			dl_jw_str(w, "trace", runs[r].trace);
		wi_json_figs(w, "total", &runs[r].total);
		dl_jw_arr(w, "jobs");
		for (unsigned c = 0; c < runs[r].ncopies; c++)
			wi_json_figs(w, NULL, &runs[r].copy[c]);
		dl_jw_end(w);
		if (runs[r].nnodes) {
			dl_jw_arr(w, "nodes");
			for (unsigned q = 0; q < runs[r].nnodes; q++)
				wi_json_figs(w, NULL, &runs[r].node[q]);
			dl_jw_end(w);
		}
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

void wi_json_target(struct dl_jw *w, const struct wi_target *t)
{
	dl_jw_obj(w, "target");
	dl_jw_str(w, "text", t->text);
	dl_jw_str(w, "metric", wi_metrics[t->metric].name);
	dl_jw_str(w, "op", t->ge ? ">=" : "<=");
	dl_jw_f64(w, "value", t->value, 6);
	dl_jw_end(w);
}

int wi_json_close(struct dl_jw *w, FILE *f)
{
	int ret = dl_jw_finish(w);

	fputc('\n', f);
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

void wi_json_head(struct dl_jw *w, const char *verb, const struct wi_env *e, unsigned repeat,
		  unsigned warmup)
{
	dl_jw_str(w, "tool", "dlio-whatif");
	dl_jw_str(w, "command", verb);
	dl_jw_str(w, "version", DLIOFS_VERSION);
	dl_jw_str(w, "config", e->config);
	dl_jw_str(w, "mount", e->own ? (e->nodes ? "a fresh cluster per run" : "fresh per run")
				     : e->mnt);
	dl_jw_str(w, "job_kind", e->kind == WI_JOB_DRIVE ? "dlio-drive" : "dlio-stall");
	dl_jw_arr(w, "job");
	for (size_t i = 0; e->argv[i]; i++)
		dl_jw_str(w, NULL, e->argv[i]);
	dl_jw_end(w);
	dl_jw_u64(w, "repeat", repeat);
	dl_jw_u64(w, "warmup", warmup);
	dl_jw_u64(w, "jobs", e->copies);
	if (e->nodes) {
		dl_jw_u64(w, "nodes", e->nodes);
		dl_jw_str(w, "mountpoint", e->mnt);
		dl_jw_str(w, "cluster_config", e->cluster_cfg);
		dl_jw_arr(w, "launcher");
		for (size_t i = 0; e->launcher && e->launcher[i]; i++)
			dl_jw_str(w, NULL, e->launcher[i]);
		dl_jw_end(w);
	}
}

int wi_plot(const char *json, const char *png, const char *metric)
{
	char script[2 * PATH_MAX + 8];
	const char *py = getenv("DLIO_WHATIF_PYTHON");
	pid_t pid;
	int st;

	if (tool_helper("DLIO_WHATIF_PLOT", "dlio_whatif_plot.py", script, sizeof(script))) {
		fprintf(stderr,
			"dlio-whatif: dlio_whatif_plot.py not found (looked at %s); set "
			"DLIO_WHATIF_PLOT to the script\n",
			script);
		return -ENOENT;
	}
	if (!py || !*py)
		py = access("/usr/bin/python3", X_OK) ? "python3" : "/usr/bin/python3";
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp(py, py, script, json, png, "--metric", metric, (char *)NULL);
		fprintf(stderr, "dlio-whatif: cannot run %s: %s\n", py, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "dlio-whatif: the plot %s was not drawn\n", png);
		return -EIO;
	}
	return 0;
}
