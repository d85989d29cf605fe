/* What dlio-stall says: the terminal report, the --json document (which
 * plot.py draws) and DS-Analyzer's differencing of the three runs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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
	return st_json_num(&io->after, path, 0) -
	       (io->have_before ? st_json_num(&io->before, path, 0) : 0);
}

/* The daemon names a histogram after its unit (latency_us, latency_ns...):
 * take whichever is there. Returns the path prefix and its scale to seconds. */
static const char *lat_prefix(const struct st_json *j, double *scale)
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
		if (st_json_get(j, p)) {
			*scale = units[i].scale;
			return units[i].prefix;
		}
	}
	return NULL;
}

/* Seconds, or -1 when the stats have no such percentile. */
static double io_lat(const struct st_json *j, const char *q)
{
	double scale;
	const char *pre = lat_prefix(j, &scale);
	char p[128];

	if (!pre)
		return -1;
	snprintf(p, sizeof(p), "%s.%s", pre, q);
	return st_json_num(j, p, -1 / scale) * scale;
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
	return st_json_num(&io->before, p, 0) == 0;
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
	const struct st_jv *pol, *prof;

	if (!c->mount)
		return;
	if (!io->have_after) {
		fprintf(f,
			"  storage             %s/.dliofs/stats.json missing: no storage figures\n",
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
	pol = st_json_get(&io->after, "cache.policy");
	prof = st_json_get(&io->after, "profile");
	fprintf(f,
		"  storage model       pacer %s%s%s%s%s%s, cache %s: %.0f hits / %.0f misses (%s "
		"hit, %s miss)\n",
		st_json_num(&io->after, "enabled", 1) ? "on" : "off",
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

void st_diff_compute(struct st_run *runs, struct st_diff *d)
{
	const struct st_summary *s1 = &runs[0].sum, *s2 = &runs[1].sum, *s3 = &runs[2].sum;
	double unit;

	memset(d, 0, sizeof(*d));
	if (!s1->counted || !s2->counted || !s3->counted) {
		snprintf(d->note, sizeof(d->note), "a run recorded no analysable steps");
		return;
	}
	d->valid = 1;
	d->t1 = s1->step_mean_s;
	d->t2 = s2->step_mean_s;
	d->t3 = s3->step_mean_s;
	d->prep_stall_s = d->t2 - d->t1;
	d->fetch_stall_s = d->t3 - d->t2;
	d->prep_total_s = d->prep_stall_s * (double)s3->counted;
	d->fetch_total_s = d->fetch_stall_s * (double)s3->counted;
	d->prep_ratio = d->t3 > 0 ? d->prep_stall_s / d->t3 : 0;
	d->fetch_ratio = d->t3 > 0 ? d->fetch_stall_s / d->t3 : 0;
	d->per_sample = s3->batch > 0;
	unit = d->per_sample ? (double)s3->batch : 1.0;
	d->G = d->t1 > 0 ? unit / d->t1 : INFINITY;
	d->P = d->t2 > 0 ? unit / d->t2 : INFINITY;
	/* DS-Analyzer's fetch rate: the batch over the time fetching adds. */
	d->F = d->fetch_stall_s > 0 ? unit / d->fetch_stall_s : INFINITY;
	if (s1->replayed == 0)
		snprintf(d->note, sizeof(d->note),
			 "the compute-only run replayed no batch (iterator length unknown?)");
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
	rate(f, "F (fetch)", d->F, d->per_sample, "storage: batch over the fetch stall");
	if (d->note[0])
		fprintf(f, "  note: %s\n", d->note);
}

/* ---- JSON ---- */

static void jnum(FILE *f, const char *key, double v, int comma)
{
	if (isfinite(v))
		fprintf(f, "\"%s\": %.9g%s", key, v, comma ? ", " : "");
	else
		fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
}

static void json_io(FILE *f, const struct st_run *r)
{
	const struct st_io *io = &r->io;
	int first = 1;

	fprintf(f,
		"\"io\": {\"have_stats\": %s, \"pacer_read\": ", io->have_after ? "true" : "false");
	st_json_str(f, io->pacer);
	if (io->have_after) {
		fprintf(f, ", ");
		jnum(f, "read_ops", io_delta(io, "classes.read.ops"), 1);
		jnum(f, "read_bytes", io_delta(io, "classes.read.bytes"), 1);
		jnum(f, "meta_ops", io_delta(io, "classes.meta.ops"), 1);
		jnum(f, "cache_hits", io_delta(io, "classes.read.cache.hits"), 1);
		jnum(f, "cache_misses", io_delta(io, "classes.read.cache.misses"), 1);
		jnum(f, "read_latency_p50_s", io_lat(&io->after, "p50"), 1);
		jnum(f, "read_latency_p90_s", io_lat(&io->after, "p90"), 1);
		jnum(f, "read_latency_p99_s", io_lat(&io->after, "p99"), 1);
		fprintf(f, "\"latency_since_mount\": %s, \"after\": {",
			io_lat_own(io) ? "false" : "true");
		for (size_t i = 0; i < io->after.n; i++) {
			const struct st_jv *v = &io->after.v[i];
			if (v->str || strncmp(v->path, "classes.", 8))
				continue;
			fprintf(f, "%s", first ? "" : ", ");
			first = 0;
			st_json_str(f, v->path);
			fprintf(f, ": %.9g", v->num);
		}
		fprintf(f, "}, \"delta\": {");
		first = 1;
		for (size_t i = 0; io->have_before && i < io->after.n; i++) {
			const struct st_jv *v = &io->after.v[i], *b;
			if (v->str)
				continue;
			b = st_json_get(&io->before, v->path);
			if (!b || b->str || b->num == v->num)
				continue;
			fprintf(f, "%s", first ? "" : ", ");
			first = 0;
			st_json_str(f, v->path);
			fprintf(f, ": %.9g", v->num - b->num);
		}
		fprintf(f, "}");
	}
	fprintf(f, ", \"samples\": {\"t_s\": [");
	for (size_t i = 0; i < io->nsamples; i++)
		fprintf(f, "%s%.6f", i ? ", " : "", (double)(io->samples[i].t - r->t_start) / 1e9);
	fprintf(f, "], \"read_bytes\": [");
	for (size_t i = 0; i < io->nsamples; i++)
		fprintf(f, "%s%.0f", i ? ", " : "", io->samples[i].bytes);
	fprintf(f, "], \"read_ops\": [");
	for (size_t i = 0; i < io->nsamples; i++)
		fprintf(f, "%s%.0f", i ? ", " : "", io->samples[i].ops);
	fprintf(f, "]}}");
}

static void json_run(FILE *f, const struct st_report_ctx *c, const struct st_run *r)
{
	const struct st_summary *s = &r->sum;
	const struct st_gpu_summary *g = &r->gsum;
	const struct st_proc *p = r->main;
	char msg[512];
	size_t step;

	fprintf(f, "{\"name\": ");
	st_json_str(f, r->name);
	fprintf(f, ", \"exit\": %d, ", exit_code(r->status));
	jnum(f, "wall_s", (double)(r->t_end - r->t_start) / 1e9, 1);
	fprintf(f, "\"processes\": %zu, \"framework\": ", r->rec.nprocs);
	st_json_str(f, p ? p->fw : "");
	fprintf(f, ",\n  \"summary\": {\"steps\": %zu, \"counted\": %zu, \"discarded\": %zu, ",
		s->steps, s->counted, s->discarded);
	jnum(f, "window_s", (double)s->window_ns / 1e9, 1);
	jnum(f, "wait_s", (double)s->wait_ns / 1e9, 1);
	jnum(f, "compute_s", (double)s->compute_ns / 1e9, 1);
	jnum(f, "wait_share", s->wait_share, 1);
	jnum(f, "step_mean_s", s->step_mean_s, 1);
	jnum(f, "wait_mean_s", s->wait_mean_s, 1);
	jnum(f, "compute_mean_s", s->compute_mean_s, 1);
	jnum(f, "wait_p50_s", s->wait_p50_s, 1);
	jnum(f, "wait_p90_s", s->wait_p90_s, 1);
	jnum(f, "wait_max_s", s->wait_max_s, 1);
	fprintf(f, "\"batch\": %d, \"samples\": %lld, ", s->batch, (long long)s->samples);
	jnum(f, "samples_per_s", s->samples_per_s, 1);
	jnum(f, "steps_per_s", s->steps_per_s, 1);
	fprintf(f, "\"hook_overhead_ns\": %lld, \"replayed\": %zu, \"filling\": %zu, ",
		(long long)s->overhead_ns, s->replayed, s->filling);
	jnum(f, "t0_s", s->counted ? (double)(s->t0 - r->t_start) / 1e9 : 0, 1);
	jnum(f, "t1_s", s->counted ? (double)(s->t1 - r->t_start) / 1e9 : 0, 0);
	fprintf(f, "},\n  \"gpu\": {\"measured\": %s, ", g->have ? "true" : "false");
	gpu_status(c, r, msg, sizeof(msg));
	fprintf(f, "\"status\": ");
	st_json_str(f, g->have ? "ok" : msg);
	fprintf(f,
		", \"cupti_loaded\": %d, \"multiple_subscribers\": %s, \"dropped\": %llu, "
		"\"kernels\": %llu, \"memcpys\": %llu, \"memsets\": %llu, ",
		r->rec.gpu.inits, r->rec.gpu.multiple_subscribers ? "true" : "false",
		(unsigned long long)r->rec.gpu.dropped, (unsigned long long)r->rec.gpu.kernels,
		(unsigned long long)r->rec.gpu.memcpys, (unsigned long long)r->rec.gpu.memsets);
	fprintf(f, "\"failures\": [");
	for (size_t i = 0; i < r->rec.gpu.nfails; i++) {
		fprintf(f, "%s{\"call\": ", i ? ", " : "");
		st_json_str(f, r->rec.gpu.fails[i].call);
		fprintf(f, ", \"error\": ");
		st_json_str(f, r->rec.gpu.fails[i].err);
		fprintf(f, "}");
	}
	fprintf(f, "], ");
	jnum(f, "window_s", (double)g->window_ns / 1e9, 1);
	jnum(f, "busy_s", (double)g->busy_ns / 1e9, 1);
	jnum(f, "idle_s", (double)g->idle_ns / 1e9, 1);
	jnum(f, "idle_input_s", (double)g->idle_input_ns / 1e9, 1);
	jnum(f, "idle_share", g->idle_share, 1);
	jnum(f, "input_share_of_idle", g->input_share_of_idle, 1);
	fprintf(f, "\"gaps\": %zu, \"busy\": [", g->gaps);
	step = g->nmerged > MAX_PLOT_IVALS ? g->nmerged / MAX_PLOT_IVALS + 1 : 1;
	for (size_t i = 0; i < g->nmerged; i += step)
		fprintf(f, "%s[%.6f, %.6f]", i ? ", " : "",
			(double)(g->merged[i].s - r->t_start) / 1e9,
			(double)(g->merged[i].e - r->t_start) / 1e9);
	fprintf(f, "]},\n  ");
	json_io(f, r);
	fprintf(f, ",\n  \"steps\": {\"start_s\": [");
	for (size_t i = 0; p && i < p->nsteps; i++)
		fprintf(f, "%s%.6f", i ? ", " : "", (double)(p->steps[i].start - r->t_start) / 1e9);
	fprintf(f, "], \"wait_s\": [");
	for (size_t i = 0; p && i < p->nsteps; i++)
		fprintf(f, "%s%.6f", i ? ", " : "", (double)p->steps[i].wait / 1e9);
	fprintf(f, "], \"compute_s\": [");
	for (size_t i = 0; p && i < p->nsteps; i++)
		fprintf(f, "%s%.6f", i ? ", " : "",
			p->steps[i].compute >= 0 ? (double)p->steps[i].compute / 1e9 : -1.0);
	fprintf(f, "], \"batch\": [");
	for (size_t i = 0; p && i < p->nsteps; i++)
		fprintf(f, "%s%d", i ? ", " : "", p->steps[i].batch);
	fprintf(f, "], \"flag\": \"");
	for (size_t i = 0; p && i < p->nsteps; i++)
		fputc(p->steps[i].flag == 'r' || p->steps[i].flag == 'c' ? p->steps[i].flag : '-',
		      f);
	fprintf(f, "\"}}");
}

int st_json_write(const char *path, const char *cmd, const struct st_report_ctx *c,
		  struct st_run *runs, size_t n, const struct st_diff *d)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "{\"tool\": \"dlio-stall\", \"command\": ");
	st_json_str(f, cmd);
	fprintf(f, ", \"mount\": ");
	if (c->mount)
		st_json_str(f, c->mount);
	else
		fprintf(f, "null");
	fprintf(f, ", \"warmup\": %zu, \"gpu_present\": %s, \"cupti_lib\": ", c->warmup,
		c->gpu_present ? "true" : "false");
	if (c->cupti_lib)
		st_json_str(f, c->cupti_lib);
	else
		fprintf(f, "null");
	fprintf(f, ",\n \"runs\": [");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n ", i ? "," : "");
		json_run(f, c, &runs[i]);
	}
	fprintf(f, "]");
	if (d) {
		fprintf(f, ",\n \"diff\": {\"valid\": %s, ", d->valid ? "true" : "false");
		jnum(f, "t_compute_s", d->t1, 1);
		jnum(f, "t_prep_s", d->t2, 1);
		jnum(f, "t_configured_s", d->t3, 1);
		jnum(f, "prep_stall_s", d->prep_stall_s, 1);
		jnum(f, "fetch_stall_s", d->fetch_stall_s, 1);
		jnum(f, "prep_stall_total_s", d->prep_total_s, 1);
		jnum(f, "fetch_stall_total_s", d->fetch_total_s, 1);
		jnum(f, "prep_ratio", d->prep_ratio, 1);
		jnum(f, "fetch_ratio", d->fetch_ratio, 1);
		jnum(f, "G", d->G, 1);
		jnum(f, "P", d->P, 1);
		jnum(f, "F", d->F, 1);
		fprintf(f, "\"unit\": \"%s\", \"note\": ", d->per_sample ? "samples/s" : "steps/s");
		st_json_str(f, d->note);
		fprintf(f, "}");
	}
	fprintf(f, "\n}\n");
	return fclose(f) ? -errno : 0;
}
