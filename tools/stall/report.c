/* What dlio-stall says: the terminal report, the --json document (which
 * plot.py draws) and DS-Analyzer's differencing of the three runs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "dliofs/json.h"
#include "stall_i.h"

#define MiB (1024.0 * 1024.0)
#define MAX_PLOT_IVALS 50000

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

static const char *human_bytes(double b, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;

	while (fabs(b) >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

static const char *human_s(double s, char *buf, size_t len)
{
	if (fabs(s) >= 1)
		snprintf(buf, len, "%.3f s", s);
	else if (fabs(s) >= 1e-3)
		snprintf(buf, len, "%.2f ms", s * 1e3);
	else
		snprintf(buf, len, "%.1f us", s * 1e6);
	return buf;
}

static double io_delta(const struct st_io *io, const char *path)
{
	if (!io->have_after)
		return 0;
	return dl_jdoc_num(&io->after, path, 0) -
	       (io->have_before ? dl_jdoc_num(&io->before, path, 0) : 0);
}

/* The daemon names a histogram after its unit (latency_us, latency_ns...):
 * take whichever is there. Returns the path prefix and its scale to seconds. */
static const char *lat_prefix(const struct dl_jdoc *j, double *scale)
{
	static const struct {
		const char *prefix;
		double scale;
	} units[] = {
	    {"classes.read.latency_ns", 1e-9},
	    {"classes.read.latency_us", 1e-6},
	    {"classes.read.latency_ms", 1e-3},
	    {"classes.read.latency_s", 1},
	};
	char p[96];

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		snprintf(p, sizeof(p), "%s.p50", units[i].prefix);
		if (dl_jdoc_get(j, p)) {
			*scale = units[i].scale;
			return units[i].prefix;
		}
	}
	return NULL;
}

/* Seconds, or -1 when the stats have no such percentile. */
static double io_lat(const struct dl_jdoc *j, const char *q)
{
	double scale;
	const char *pre = lat_prefix(j, &scale);
	char p[128];

	if (!pre)
		return -1;
	snprintf(p, sizeof(p), "%s.%s", pre, q);
	return dl_jdoc_num(j, p, -1 / scale) * scale;
}

/* Latency percentiles are cumulative since the mount (or a stats reset):
 * they describe this run alone only when nothing was counted before it. */
static int io_lat_own(const struct st_io *io)
{
	double scale;
	const char *pre;
	char p[128];

	if (!io->have_before || !(pre = lat_prefix(&io->before, &scale)))
		return 1;
	snprintf(p, sizeof(p), "%s.count", pre);
	return dl_jdoc_num(&io->before, p, 0) == 0;
}

/* One sentence on why there is no GPU timeline, or "" when there is one. */
static void gpu_status(const struct st_report_ctx *c, const struct st_run *r, char *buf, size_t len)
{
	const struct st_gpu *g = &r->rec.gpu;

	buf[0] = 0;
	if (r->gsum.have)
		return;
	if (g->multiple_subscribers)
		snprintf(
		    buf, len,
		    "another CUPTI client (a profiler) is active: CUPTI refused us "
		    "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); GPU idle time not measured");
	else if (r->cupti_state < 0)
		snprintf(buf, len, "%s", r->cupti_note);
	else if (r->cupti_state == 0)
		snprintf(buf, len,
			 "no CUPTI: libdlio_cupti.so was not built (no CUDA toolkit) or "
			 "not found; GPU busy/idle not measured");
	else if (!c->gpu_present && !g->inits)
		snprintf(buf, len, "no GPU on this machine: GPU busy/idle not measured");
	else if (g->nfails)
		snprintf(buf, len, "CUPTI failed (%s: %s); GPU busy/idle not measured",
			 g->fails[0].call, g->fails[0].err);
	else if (!g->inits)
		snprintf(buf, len, "the job never initialized CUDA (CPU-only): no GPU activity");
	else
		snprintf(buf, len, "no GPU activity inside the analysed steps");
}

static void report_io(FILE *f, const struct st_report_ctx *c, const struct st_run *r)
{
	const struct st_io *io = &r->io;
	double ops, bytes, secs, hits, misses, hb, mb;
	char b1[32], b2[32], b3[32], b4[32];
	const struct dl_jval *pol, *prof;

	if (!c->mount)
		return;
	if (!io->have_after) {
		fprintf(f,
			"  storage             %s/" DL_CTL_DIRNAME
			"/stats.json missing: no storage figures\n",
			c->mount);
		return;
	}
	secs = (double)(r->t_end - r->t_start) / 1e9;
	ops = io_delta(io, "classes.read.ops");
	bytes = io_delta(io, "classes.read.bytes");
	fprintf(f, "  storage reads       %s in %.0f ops (mean %s/op), %s/s over the job\n",
		human_bytes(bytes, b1, sizeof(b1)), ops,
		human_bytes(ops > 0 ? bytes / ops : 0, b2, sizeof(b2)),
		human_bytes(secs > 0 ? bytes / secs : 0, b3, sizeof(b3)));
	if (io_lat(&io->after, "p50") >= 0)
		fprintf(f, "  read latency        p50 %s  p90 %s  p99 %s  p99.9 %s%s\n",
			human_s(io_lat(&io->after, "p50"), b1, sizeof(b1)),
			human_s(io_lat(&io->after, "p90"), b2, sizeof(b2)),
			human_s(io_lat(&io->after, "p99"), b3, sizeof(b3)),
			human_s(io_lat(&io->after, "p99.9"), b4, sizeof(b4)),
			io_lat_own(io) ? "" : " (since mount: earlier reads included)");
	hits = io_delta(io, "classes.read.cache.hits");
	misses = io_delta(io, "classes.read.cache.misses");
	hb = io_delta(io, "classes.read.cache.hit_bytes");
	mb = io_delta(io, "classes.read.cache.miss_bytes");
	pol = dl_jdoc_get(&io->after, "cache.policy");
	prof = dl_jdoc_get(&io->after, "profile");
	fprintf(f,
		"  storage model       pacer %s%s%s%s%s%s, cache %s: %.0f hits / %.0f misses (%s "
		"hit, %s miss)\n",
		dl_jdoc_num(&io->after, "enabled", 1) ? "on" : "off",
		io->pacer[0] ? " (read: " : "", io->pacer, io->pacer[0] ? ")" : "",
		prof && prof->str && *prof->str ? ", profile " : "",
		prof && prof->str && *prof->str ? prof->str : "", pol && pol->str ? pol->str : "?",
		hits, misses, human_bytes(hb, b1, sizeof(b1)), human_bytes(mb, b2, sizeof(b2)));
}

void st_report_run(FILE *f, const struct st_report_ctx *c, const struct st_run *r)
{
	const struct st_summary *s = &r->sum;
	const struct st_gpu_summary *g = &r->gsum;
	char b1[32], b2[32], b3[32], b4[32], msg[512];
	double wall = (double)(r->t_end - r->t_start) / 1e9;

	fprintf(f, "[%s] exit %d, wall %.3f s\n", r->name, exit_code(r->status), wall);
	if (!r->main) {
		fprintf(
		    f,
		    "  no steps recorded: the job used no PyTorch DataLoader or tf.data iterator "
		    "in eager Python, ran python with -I/-S, or exited through os._exit\n");
		report_io(f, c, r);
		return;
	}
	fprintf(f,
		"  steps               %zu recorded, %zu analysed over %.3f s (%zu warm-up "
		"discarded)%s\n",
		s->steps, s->counted, (double)s->window_ns / 1e9, s->discarded,
		r->rec.nprocs > 1 ? " [main process]" : "");
	if (!s->counted) {
		fprintf(
		    f,
		    "  too few steps to analyse: raise the job's step count or lower --warmup\n");
		report_io(f, c, r);
		return;
	}
	if (s->batch > 0)
		fprintf(f, "  throughput          %.1f samples/s (batch %d), %.2f steps/s\n",
			s->samples_per_s, s->batch, s->steps_per_s);
	else
		fprintf(f, "  throughput          %.2f steps/s (batch size not detectable)\n",
			s->steps_per_s);
	fprintf(f,
		"  data wait           %.1f %% of step time: per step %s waiting, %s computing "
		"(wait p50 %s, p90 %s, max %s)\n",
		s->wait_share * 100, human_s(s->wait_mean_s, b1, sizeof(b1)),
		human_s(s->compute_mean_s, b2, sizeof(b2)), human_s(s->wait_p50_s, b3, sizeof(b3)),
		human_s(s->wait_p90_s, b4, sizeof(b4)), human_s(s->wait_max_s, msg, sizeof(msg)));
	if (s->overhead_ns >= 0)
		fprintf(f, "  hook overhead       %.2f us per step (%s)\n",
			(double)s->overhead_ns / 1e3, r->main->fw);
	if (s->replayed || s->filling)
		fprintf(f, "  replay              %zu steps served from %zu cached batches\n",
			s->replayed, s->filling);
	gpu_status(c, r, msg, sizeof(msg));
	if (g->have) {
		fprintf(f,
			"  GPU                 busy %.1f %%, idle %.1f %% of the analysed window "
			"(%zu idle gaps, longest %s)\n",
			100.0 * (double)g->busy_ns / (double)g->window_ns, g->idle_share * 100,
			g->gaps, human_s((double)g->gap_max_ns / 1e9, b1, sizeof(b1)));
		fprintf(
		    f,
		    "  GPU-side stall      %.1f %% of GPU idle time is explained by input waits "
		    "(%.1f %% of the window)%s\n",
		    g->input_share_of_idle * 100, g->input_share_of_window * 100,
		    r->rec.gpu.dropped ? " [CUPTI dropped records]" : "");
	} else {
		fprintf(f, "  GPU                 %s\n", msg);
	}
	report_io(f, c, r);
}

static void rate(FILE *f, const char *label, double v, int per_sample, const char *what)
{
	if (isinf(v))
		fprintf(f, "  %-19s unbounded (%s)\n", label, what);
	else
		fprintf(f, "  %-19s %.1f %s/s (%s)\n", label, v, per_sample ? "samples" : "steps",
			what);
}

void st_report_diff(FILE *f, const struct st_report_ctx *c, struct st_run *runs, size_t n,
		    const struct st_diff *d)
{
	char b1[32], b2[32], b3[32];

	for (size_t i = 0; i < n; i++)
		st_report_run(f, c, &runs[i]);
	fprintf(f, "[differencing] mean step time: compute only %s, prep %s, as configured %s\n",
		human_s(d->t1, b1, sizeof(b1)), human_s(d->t2, b2, sizeof(b2)),
		human_s(d->t3, b3, sizeof(b3)));
	if (!d->valid) {
		fprintf(f, "  not computed: %s\n", d->note);
		return;
	}
	fprintf(f,
		"  prep stall          %s per step, %.3f s over %zu steps = %.1f %% of the time\n",
		human_s(d->prep_stall_s, b1, sizeof(b1)), d->prep_total_s, runs[2].sum.counted,
		d->prep_ratio * 100);
	fprintf(f,
		"  fetch stall         %s per step, %.3f s over %zu steps = %.1f %% of the time\n",
		human_s(d->fetch_stall_s, b1, sizeof(b1)), d->fetch_total_s, runs[2].sum.counted,
		d->fetch_ratio * 100);
	rate(f, "G (compute)", d->G, d->per_sample, "ingestion ceiling: no data wait at all");
	rate(f, "P (prep)", d->P, d->per_sample, "decode/augment with the data cached");
	rate(f, "F (fetch)", d->F, d->per_sample, d->F_basis);
	if (d->note[0])
		fprintf(f, "  note: %s\n", d->note);
}

/* ---- JSON (dl_jw: the project's one writer) ---- */

static void jnum(struct dl_jw *w, const char *key, double v)
{
	dl_jw_f64(w, key, v, 9);
}

static void json_io_after(struct dl_jw *w, const struct st_io *io)
{
	dl_jw_obj(w, "after");
	for (size_t i = 0; i < io->after.n; i++) {
		const struct dl_jval *v = &io->after.v[i];

		if (!v->str && !strncmp(v->path, "classes.", 8))
			jnum(w, v->path, v->num);
	}
	dl_jw_end(w);
	dl_jw_obj(w, "delta");
	for (size_t i = 0; io->have_before && i < io->after.n; i++) {
		const struct dl_jval *v = &io->after.v[i], *b;

		if (v->str)
			continue;
		b = dl_jdoc_get(&io->before, v->path);
		if (b && !b->str && b->num != v->num)
			jnum(w, v->path, v->num - b->num);
	}
	dl_jw_end(w);
}

static void json_io(struct dl_jw *w, const struct st_run *r)
{
	const struct st_io *io = &r->io;

	dl_jw_obj(w, "io");
	dl_jw_bool(w, "have_stats", io->have_after);
	dl_jw_str(w, "pacer_read", io->pacer);
	if (io->have_after) {
		jnum(w, "read_ops", io_delta(io, "classes.read.ops"));
		jnum(w, "read_bytes", io_delta(io, "classes.read.bytes"));
		jnum(w, "meta_ops", io_delta(io, "classes.meta.ops"));
		jnum(w, "cache_hits", io_delta(io, "classes.read.cache.hits"));
		jnum(w, "cache_misses", io_delta(io, "classes.read.cache.misses"));
		jnum(w, "read_latency_p50_s", io_lat(&io->after, "p50"));
		jnum(w, "read_latency_p90_s", io_lat(&io->after, "p90"));
		jnum(w, "read_latency_p99_s", io_lat(&io->after, "p99"));
		dl_jw_bool(w, "latency_since_mount", !io_lat_own(io));
		json_io_after(w, io);
	}
	dl_jw_obj(w, "samples");
	dl_jw_arr(w, "t_s");
	for (size_t i = 0; i < io->nsamples; i++)
		dl_jw_fixed(w, NULL, (double)(io->samples[i].t - r->t_start) / 1e9, 6);
	dl_jw_end(w);
	dl_jw_arr(w, "read_bytes");
	for (size_t i = 0; i < io->nsamples; i++)
		dl_jw_fixed(w, NULL, io->samples[i].bytes, 0);
	dl_jw_end(w);
	dl_jw_arr(w, "read_ops");
	for (size_t i = 0; i < io->nsamples; i++)
		dl_jw_fixed(w, NULL, io->samples[i].ops, 0);
	dl_jw_end(w);
	dl_jw_end(w);
	dl_jw_end(w);
}

static void json_summary(struct dl_jw *w, const struct st_run *r)
{
	const struct st_summary *s = &r->sum;

	dl_jw_obj(w, "summary");
	dl_jw_u64(w, "steps", s->steps);
	dl_jw_u64(w, "counted", s->counted);
	dl_jw_u64(w, "discarded", s->discarded);
	jnum(w, "window_s", (double)s->window_ns / 1e9);
	jnum(w, "wait_s", (double)s->wait_ns / 1e9);
	jnum(w, "compute_s", (double)s->compute_ns / 1e9);
	jnum(w, "wait_share", s->wait_share);
	jnum(w, "step_mean_s", s->step_mean_s);
	jnum(w, "wait_mean_s", s->wait_mean_s);
	jnum(w, "compute_mean_s", s->compute_mean_s);
	jnum(w, "wait_p50_s", s->wait_p50_s);
	jnum(w, "wait_p90_s", s->wait_p90_s);
	jnum(w, "wait_max_s", s->wait_max_s);
	dl_jw_i64(w, "batch", s->batch);
	dl_jw_i64(w, "samples", s->samples);
	jnum(w, "samples_per_s", s->samples_per_s);
	jnum(w, "steps_per_s", s->steps_per_s);
	dl_jw_i64(w, "hook_overhead_ns", s->overhead_ns);
	dl_jw_u64(w, "replayed", s->replayed);
	dl_jw_u64(w, "filling", s->filling);
	jnum(w, "t0_s", s->counted ? (double)(s->t0 - r->t_start) / 1e9 : 0);
	jnum(w, "t1_s", s->counted ? (double)(s->t1 - r->t_start) / 1e9 : 0);
	dl_jw_end(w);
}

static void json_gpu(struct dl_jw *w, const struct st_report_ctx *c, const struct st_run *r)
{
	const struct st_gpu_summary *g = &r->gsum;
	const struct st_gpu *gpu = &r->rec.gpu;
	char msg[512];
	size_t step;

	dl_jw_obj(w, "gpu");
	dl_jw_bool(w, "measured", g->have);
	gpu_status(c, r, msg, sizeof(msg));
	dl_jw_str(w, "status", g->have ? "ok" : msg);
	dl_jw_i64(w, "cupti_loaded", gpu->inits);
	dl_jw_bool(w, "multiple_subscribers", gpu->multiple_subscribers);
	dl_jw_u64(w, "dropped", gpu->dropped);
	dl_jw_u64(w, "kernels", gpu->kernels);
	dl_jw_u64(w, "memcpys", gpu->memcpys);
	dl_jw_u64(w, "memsets", gpu->memsets);
	dl_jw_arr(w, "failures");
	for (size_t i = 0; i < gpu->nfails; i++) {
		dl_jw_obj(w, NULL);
		dl_jw_str(w, "call", gpu->fails[i].call);
		dl_jw_str(w, "error", gpu->fails[i].err);
		dl_jw_end(w);
	}
	dl_jw_end(w);
	jnum(w, "window_s", (double)g->window_ns / 1e9);
	jnum(w, "busy_s", (double)g->busy_ns / 1e9);
	jnum(w, "idle_s", (double)g->idle_ns / 1e9);
	jnum(w, "idle_input_s", (double)g->idle_input_ns / 1e9);
	jnum(w, "idle_share", g->idle_share);
	jnum(w, "input_share_of_idle", g->input_share_of_idle);
	dl_jw_u64(w, "gaps", g->gaps);
	dl_jw_arr(w, "busy");
	step = g->nmerged > MAX_PLOT_IVALS ? g->nmerged / MAX_PLOT_IVALS + 1 : 1;
	for (size_t i = 0; i < g->nmerged; i += step) {
		dl_jw_arr(w, NULL);
		dl_jw_fixed(w, NULL, (double)(g->merged[i].s - r->t_start) / 1e9, 6);
		dl_jw_fixed(w, NULL, (double)(g->merged[i].e - r->t_start) / 1e9, 6);
		dl_jw_end(w);
	}
	dl_jw_end(w);
	dl_jw_end(w);
}

/* Per step of the main process; "flag" is one character a step. */
static void json_steps(struct dl_jw *w, const struct st_run *r)
{
	const struct st_proc *p = r->main;
	size_t n = p ? p->nsteps : 0;
	char *flags = malloc(n + 1);

	dl_jw_obj(w, "steps");
	dl_jw_arr(w, "start_s");
	for (size_t i = 0; i < n; i++)
		dl_jw_fixed(w, NULL, (double)(p->steps[i].start - r->t_start) / 1e9, 6);
	dl_jw_end(w);
	dl_jw_arr(w, "wait_s");
	for (size_t i = 0; i < n; i++)
		dl_jw_fixed(w, NULL, (double)p->steps[i].wait / 1e9, 6);
	dl_jw_end(w);
	dl_jw_arr(w, "compute_s");
	for (size_t i = 0; i < n; i++)
		dl_jw_fixed(w, NULL,
			    p->steps[i].compute >= 0 ? (double)p->steps[i].compute / 1e9 : -1.0, 6);
	dl_jw_end(w);
	dl_jw_arr(w, "batch");
	for (size_t i = 0; i < n; i++)
		dl_jw_i64(w, NULL, p->steps[i].batch);
	dl_jw_end(w);
	for (size_t i = 0; flags && i < n; i++) {
		char f = p->steps[i].flag;

		flags[i] = f == 'r' || f == 'c' ? f : '-';
	}
	if (flags)
		flags[n] = 0;
	dl_jw_str(w, "flag", flags ? flags : "");
	dl_jw_end(w);
	free(flags);
}

static void json_run(struct dl_jw *w, const struct st_report_ctx *c, const struct st_run *r)
{
	dl_jw_obj(w, NULL);
	dl_jw_str(w, "name", r->name);
	dl_jw_i64(w, "exit", exit_code(r->status));
	jnum(w, "wall_s", (double)(r->t_end - r->t_start) / 1e9);
	dl_jw_u64(w, "processes", r->rec.nprocs);
	dl_jw_str(w, "framework", r->main ? r->main->fw : "");
	json_summary(w, r);
	json_gpu(w, c, r);
	json_io(w, r);
	json_steps(w, r);
	dl_jw_end(w);
}

static void json_diff(struct dl_jw *w, const struct st_diff *d)
{
	dl_jw_obj(w, "diff");
	dl_jw_bool(w, "valid", d->valid);
	jnum(w, "t_compute_s", d->t1);
	jnum(w, "t_prep_s", d->t2);
	jnum(w, "t_configured_s", d->t3);
	jnum(w, "prep_stall_s", d->prep_stall_s);
	jnum(w, "fetch_stall_s", d->fetch_stall_s);
	jnum(w, "prep_stall_total_s", d->prep_total_s);
	jnum(w, "fetch_stall_total_s", d->fetch_total_s);
	jnum(w, "prep_ratio", d->prep_ratio);
	jnum(w, "fetch_ratio", d->fetch_ratio);
	jnum(w, "G", d->G);
	jnum(w, "P", d->P);
	jnum(w, "F", d->F);
	dl_jw_str(w, "F_basis", d->F_basis);
	jnum(w, "fetch_bytes_per_unit", d->fetch_bytes);
	jnum(w, "fetch_rate_Bps", d->fetch_rate);
	dl_jw_str(w, "unit", d->per_sample ? "samples/s" : "steps/s");
	dl_jw_str(w, "note", d->note);
	dl_jw_end(w);
}

int st_json_write(const char *path, const char *cmd, const struct st_report_ctx *c,
		  struct st_run *runs, size_t n, const struct st_diff *d)
{
	FILE *f = fopen(path, "w");
	struct dl_jw w;
	int ret;

	if (!f)
		return -errno;
	/* Top-level keys, each run and each run's parts on lines of their own. */
	dl_jw_init(&w, f, 3);
	dl_jw_obj(&w, NULL);
	dl_jw_str(&w, "tool", "dlio-stall");
	dl_jw_str(&w, "command", cmd);
	dl_jw_str(&w, "mount", c->mount);
	dl_jw_u64(&w, "warmup", c->warmup);
	dl_jw_bool(&w, "gpu_present", c->gpu_present);
	dl_jw_str(&w, "cupti_lib", c->cupti_lib);
	dl_jw_arr(&w, "runs");
	for (size_t i = 0; i < n; i++)
		json_run(&w, c, &runs[i]);
	dl_jw_end(&w);
	if (d)
		json_diff(&w, d);
	if (c->cpu)
		st_json_cpu(&w, c->cpu);
	ret = dl_jw_finish(&w);
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}
