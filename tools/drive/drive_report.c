/* What a run says: a table on the terminal, and with --json a document whose
 * keys are (tests/tools/drive/test_dlio_drive.py checks them):
 *
 *   tool, version, run_wall_s, setup_bytes, au_threshold, au_mean, au_min, pass,
 *   ranks (in this report), job_ranks (--ranks: more when each rank ran
 *   alone, without MPI, and reports its shard only), notes[]
 *   config: config_file dir dataset format files eval_files samples_per_file
 *           batch_size eval_batch_size read_threads prefetch read_ahead_batches
 *           epochs steps_per_epoch total_training_steps computation_time
 *           computation_time_mean_s eval_time file_shuffle sample_shuffle seed
 *           read_unit read_amplification checkpoint_model_bytes nominal_sample_bytes
 *           data_loader check_crc decode odirect accelerator accelerator_type workload
 *           warmup_steps_excluded end_steps_excluded
 *   epochs[]: epoch steps samples bytes index_bytes files_opened read_calls
 *           decoded_bytes wall_s compute_s stall_s barrier_s stall_share au
 *           au_min samples_per_s mb_per_s nominal_mib_per_s step_time_s{p50,p90,p99}
 *           stall_time_s{p50,p90,p99}
 *           [gpu{kernels kernel_s idle_s h2d_s h2d_bytes gpu_stall_share}]
 *           [eval{steps samples bytes wall_s compute_s stall_s stall_share au
 *                 samples_per_s mb_per_s}]
 *   summary: au samples_per_s mb_per_s stall_share stall_s wall_s bytes, each
 *           {mean,min,max,stdev} across epochs; nominal_mib_per_s; step_time_s and
 *           stall_time_s {p50,p90,p99} over every measured step of the run
 *   mb_per_s is the bytes actually read, in 10^6; nominal_mib_per_s DLIO's figure,
 *   samples/s x nominal_sample_bytes (record_length) in MiB, whatever was read.
 *   checkpoints[]: epoch step bytes seconds gb_per_s
 *   cuda: {device} or null
 *   per_rank[]: rank host au_mean samples_per_s_mean bytes (a rank alone: itself)
 *           epochs[]{epoch steps samples bytes files_opened read_calls wall_s
 *                    compute_s stall_s barrier_s au samples_per_s mb_per_s}
 *
 * With several ranks, epochs[] and summary are the job's: samples, bytes,
 * opens, reads, samples/s and MB/s summed over ranks; AU, compute, stall and
 * barrier the mean over ranks (au_min the lowest rank); wall the longest;
 * step percentiles over every rank's steps (evaluation: the slowest rank's).
 * au_min at the top is the lowest rank's mean AU over epochs.
 *
 * Fractions are 0..1; MB = 10^6 bytes; undefined figures are null. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "dliofs/json.h"
#include "drive_i.h"

#ifndef DLIOFS_VERSION
#define DLIOFS_VERSION "0"
#endif

static const char *const shuffle_name[] = {"off", "seed", "random"};
static const char *const unit_name[] = {"file", "sample", "stream", "chunk"};

void drv_result_free(struct drv_result *r)
{
	free(r->ep);
	free(r->ck);
	free(r->step_times);
	free(r->waits);
	free(r->rank_ep);
	free(r->hosts);
	memset(r, 0, sizeof(*r));
}

void drv_summarize(const struct drv_result *r, double threshold, struct drv_summary *s)
{
	size_t n = r->nep ? r->nep : 1;
	double *v = calloc(n, sizeof(double));

	memset(s, 0, sizeof(*s));
	if (!v)
		return;
#define MOM(field, expr)                                                                           \
	do {                                                                                       \
		for (size_t i = 0; i < r->nep; i++)                                                \
			v[i] = (expr);                                                             \
		drv_moments(v, r->nep, &s->field);                                                 \
	} while (0)
	MOM(au, r->ep[i].st.au);
	MOM(samples_per_s, r->ep[i].st.samples_per_s);
	MOM(mb_per_s, r->ep[i].mb_per_s);
	MOM(stall_share, r->ep[i].st.stall_share);
	MOM(stall_s, r->ep[i].st.stall);
	MOM(wall_s, r->ep[i].st.wall);
	MOM(bytes, (double)r->ep[i].io.bytes);
#undef MOM
	free(v);
	s->au_mean = s->au.mean;
	/* DLIO: pass when the mean AU over epochs reaches metric.au. */
	s->pass = isfinite(s->au_mean) && s->au_mean + 1e-12 >= threshold;
	s->step_p50 = drv_percentile(r->step_times, r->nsteps, 50);
	s->step_p90 = drv_percentile(r->step_times, r->nsteps, 90);
	s->step_p99 = drv_percentile(r->step_times, r->nsteps, 99);
	s->wait_p50 = drv_percentile(r->waits, r->nsteps, 50);
	s->wait_p90 = drv_percentile(r->waits, r->nsteps, 90);
	s->wait_p99 = drv_percentile(r->waits, r->nsteps, 99);
}

/* Rank q's own figures over the run's epochs (its rank_ep row). */
struct rank_fig {
	struct drv_moments au, sps;
	uint64_t bytes, opens, samples;
	double barrier;
};

static void rank_figures(const struct drv_result *r, unsigned q, struct rank_fig *f)
{
	const struct drv_epoch_rec *row = r->rank_ep + (size_t)q * r->nep;
	double *v = calloc(r->nep ? r->nep : 1, sizeof(double));

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < r->nep; i++) {
		f->bytes += row[i].io.bytes;
		f->opens += row[i].io.opens;
		f->samples += row[i].st.samples;
		f->barrier += row[i].st.barrier;
	}
	if (!v) {
		f->au.mean = f->au.min = f->sps.mean = NAN;
		return;
	}
	for (size_t i = 0; i < r->nep; i++)
		v[i] = row[i].st.au;
	drv_moments(v, r->nep, &f->au);
	for (size_t i = 0; i < r->nep; i++)
		v[i] = row[i].st.samples_per_s;
	drv_moments(v, r->nep, &f->sps);
	free(v);
}

/* The lowest rank's mean AU (NAN without ranks' figures). */
static double au_min_rank(const struct drv_result *r)
{
	double mn = NAN;

	for (unsigned q = 0; r->rank_ep && q < r->nranks; q++) {
		struct rank_fig f;
		rank_figures(r, q, &f);
		if (isfinite(f.au.mean) && !(f.au.mean >= mn))
			mn = f.au.mean;
	}
	return mn;
}

/* ---- terminal ---- */

void drv_progress_update(struct drv_progress *pb, const char *what, uint64_t epoch, uint64_t epochs,
			 uint64_t step, uint64_t steps, double au, double sps)
{
	char bar[41], aus[32] = "";
	unsigned w = sizeof(bar) - 1, fill = steps ? (unsigned)(step * w / steps) : w;

	for (unsigned i = 0; i < w; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[w] = 0;
	if (isfinite(au))
		snprintf(aus, sizeof(aus), "  AU %.1f%%", au * 100);
	tool_progress(&pb->pl, "%s %llu/%llu [%s] %llu/%llu steps%s  %.1f samples/s", what,
		      (unsigned long long)epoch, (unsigned long long)epochs, bar,
		      (unsigned long long)step, (unsigned long long)steps, aus, sps);
	pb->last = drv_now();
}

void drv_progress_clear(struct drv_progress *pb)
{
	tool_progress_end(&pb->pl);
	pb->last = 0;
}

static void fmt_pct(char *buf, size_t n, double v)
{
	if (isfinite(v))
		snprintf(buf, n, "%.1f", v * 100);
	else
		snprintf(buf, n, "n/a");
}

static void fmt_num(char *buf, size_t n, double v, const char *f)
{
	if (isfinite(v))
		snprintf(buf, n, f, v);
	else
		snprintf(buf, n, "n/a");
}

static void row(FILE *out, const char *label, uint64_t steps, uint64_t samples, double mb,
		double wall, double stall, double share, double au, double sps, double mbs,
		double p50, double p90, double p99)
{
	char a[16], b[16], c1[24], c2[24], q[3][16];

	fmt_pct(a, sizeof(a), share);
	fmt_pct(b, sizeof(b), au);
	fmt_num(c1, sizeof(c1), sps, "%.1f");
	fmt_num(c2, sizeof(c2), mbs, "%.1f");
	fmt_num(q[0], sizeof(q[0]), p50 * 1e3, "%.1f");
	fmt_num(q[1], sizeof(q[1]), p90 * 1e3, "%.1f");
	fmt_num(q[2], sizeof(q[2]), p99 * 1e3, "%.1f");
	fprintf(out, "%6s %7llu %9llu %11.1f %8.2f %8.2f %6s %6s %10s %9s  %s / %s / %s\n", label,
		(unsigned long long)steps, (unsigned long long)samples, mb, wall, stall, a, b, c1,
		c2, q[0], q[1], q[2]);
}

/* The read mode, with where it came from: a DLIO workload file reads as
 * DLIO by default, so say so where a user looks first. */
static const char *amp_name(const struct drv_params *p)
{
	if (p->amp != DRV_AMP_DLIO)
		return p->from_dlio ? "efficient (--read-amplification efficient)" : "efficient";
	if (p->iterative)
		return p->from_dlio
			   ? "as DLIO's tensorflow loader (a file per reader; DLIO workload "
			     "file, --read-amplification efficient for fewer)"
			   : "as DLIO's tensorflow loader (a file per reader)";
	return p->from_dlio ? "as DLIO's pytorch loader (a file per sample; DLIO workload file, "
			      "--read-amplification efficient for fewer)"
			    : "as DLIO's pytorch loader (a file per sample)";
}

/* What was run: the dataset, the loader's settings, the notes. */
static void table_head(FILE *out, const struct drv_ctx *c, const struct drv_result *r)
{
	const struct drv_params *p = c->p;
	char ct[128];
	unsigned t = p->read_threads ? p->read_threads : 1;
	unsigned depth = t * (p->prefetch > t ? (p->prefetch + t - 1) / t : 1);

	drv_dist_describe(&p->compute, ct, sizeof(ct));
	fprintf(out,
		"dlio-drive: %s (%s) in %s: %llu train files x %llu samples, read by %s; "
		"reads %s\n",
		c->ds->name, dl_ds_ops(c->ds)->name, c->root,
		(unsigned long long)c->ds->files[DL_SPLIT_TRAIN], (unsigned long long)c->spf,
		unit_name[c->kind], amp_name(p));
	fprintf(out,
		"  batch %llu, %u reader threads, prefetch %u (%u batches ahead), "
		"computation %s per step\n",
		(unsigned long long)p->batch, t, p->prefetch, depth, ct);
	if (drv_mlperf_reads(c))
		fprintf(out,
			"  loader mlperf-v3 (MLPerf Storage v3's DLIO fork): %u threads read whole "
			"files, up to %u batches ahead\n",
			drv_mlperf_threads(c, c->ds->files[DL_SPLIT_TRAIN]),
			drv_mlperf_depth(c, c->ds->files[DL_SPLIT_TRAIN], p->batch));
	if (p->workload[0] && p->accel_type[0])
		fprintf(out, "  MLPerf Storage figures for %s on %s\n", p->workload, p->accel_type);
	fprintf(out, "  shuffle: files %s, samples %s (seed %llu%s); accelerator %s%s%s\n",
		shuffle_name[p->file_shuffle], shuffle_name[p->sample_shuffle],
		(unsigned long long)p->seed, p->seed_change_epoch ? " + epoch" : "",
		p->accel == DRV_ACCEL_CUDA ? "cuda" : "sleep", r->cuda_device ? ": " : "",
		r->cuda_device ? r->cuda_device : "");
	for (const char *n = p->notes; *n;) {
		const char *e = strchr(n, '\n');
		int len = e ? (int)(e - n) : (int)strlen(n);
		fprintf(out, "  note: %.*s\n", len, n);
		n += len + (e ? 1 : 0);
	}
}

/* A row per epoch (and evaluation), then the mean and stdev over epochs. */
static void table_epochs(FILE *out, const struct drv_result *r, const struct drv_summary *s)
{
	fprintf(out, "\n%6s %7s %9s %11s %8s %8s %6s %6s %10s %9s  %s\n", "epoch", "steps",
		"samples", "MB read", "wall s", "stall s", "stall%", "AU%", "samples/s", "MB/s",
		"step ms p50 / p90 / p99");
	for (size_t i = 0; i < r->nep; i++) {
		const struct drv_epoch_rec *e = &r->ep[i];
		char lab[24];
		snprintf(lab, sizeof(lab), "%llu", (unsigned long long)e->epoch);
		row(out, lab, e->st.steps, e->st.samples, (double)e->io.bytes / 1e6, e->st.wall,
		    e->st.stall, e->st.stall_share, e->st.au, e->st.samples_per_s, e->mb_per_s,
		    e->st.step_p50, e->st.step_p90, e->st.step_p99);
		if (e->has_eval)
			row(out, "  eval", e->ev.steps, e->ev.samples, (double)e->evio.bytes / 1e6,
			    e->ev.wall, e->ev.stall, e->ev.stall_share, e->ev.au,
			    e->ev.samples_per_s, e->ev_mb_per_s, e->ev.step_p50, e->ev.step_p90,
			    e->ev.step_p99);
	}
	if (r->nep <= 1)
		return;
	uint64_t st = 0, sa = 0;
	for (size_t i = 0; i < r->nep; i++) {
		st += r->ep[i].st.steps;
		sa += r->ep[i].st.samples;
	}
	row(out, "mean", st / r->nep, sa / r->nep, s->bytes.mean / 1e6, s->wall_s.mean,
	    s->stall_s.mean, s->stall_share.mean, s->au.mean, s->samples_per_s.mean,
	    s->mb_per_s.mean, s->step_p50, s->step_p90, s->step_p99);
	char a[16], b[16];
	fmt_pct(a, sizeof(a), s->au.stdev);
	fmt_num(b, sizeof(b), s->samples_per_s.stdev, "%.1f");
	fprintf(out, "%6s %7s %9s %11s %8s %8s %6s %6s %10s\n", "stdev", "", "", "", "", "", "", a,
		b);
}

/* Several ranks: each one's own figures. */
static void table_ranks(FILE *out, const struct drv_result *r)
{
	if (r->nranks <= 1 || !r->rank_ep)
		return;
	fprintf(out,
		"\n%u ranks: samples, MB and samples/s above are summed over ranks, AU "
		"and stall the mean over ranks\n",
		r->nranks);
	for (unsigned q = 0; q < r->nranks; q++) {
		struct rank_fig f;
		char a[16], b[16];
		rank_figures(r, q, &f);
		fmt_pct(a, sizeof(a), f.au.mean);
		fmt_pct(b, sizeof(b), f.au.min);
		fprintf(out,
			"  rank %-3u %-16.16s AU %s%% (lowest epoch %s%%), %.1f samples/s; "
			"in %zu epochs %llu samples, %.1f MB read, %llu opens, %.2f s in "
			"barriers\n",
			r->rank_base + q, r->hosts ? r->hosts[q] : "", a, b, f.sps.mean, r->nep,
			(unsigned long long)f.samples, (double)f.bytes / 1e6,
			(unsigned long long)f.opens, f.barrier);
	}
}

static void table_gpu(FILE *out, const struct drv_result *r)
{
	for (size_t i = 0; i < r->nep; i++) {
		const struct drv_epoch_rec *e = &r->ep[i];
		if (!e->has_gpu)
			continue;
		double tot = e->gpu.kernel_s + e->gpu.idle_s;
		fprintf(out,
			"  gpu epoch %llu: %llu kernels, busy %.3f s, idle between kernels %.3f s "
			"(%.1f%%, copies %.3f s for %.1f MB)\n",
			(unsigned long long)e->epoch, (unsigned long long)e->gpu.kernels,
			e->gpu.kernel_s, e->gpu.idle_s, tot > 0 ? e->gpu.idle_s / tot * 100 : 0,
			e->gpu.h2d_s, (double)e->gpu.h2d_bytes / 1e6);
	}
}

uint64_t drv_nominal_sample(const struct drv_ctx *c)
{
	return c->p->record_length ? c->p->record_length : c->ds->sample_size.mean;
}

/* DLIO's MB/s: samples/s x record_length in MiB (statscounter.py), what a
 * DLIO log says, not what storage moved. */
static double nominal_mib(const struct drv_ctx *c, double samples_per_s)
{
	return samples_per_s * (double)drv_nominal_sample(c) / (1024.0 * 1024.0);
}

/* The verdict, the stalls per step, the checkpoints. */
static void table_tail(FILE *out, const struct drv_ctx *c, const struct drv_result *r,
		       const struct drv_summary *s)
{
	const struct drv_params *p = c->p;
	char au[16], thr[16];

	fmt_pct(au, sizeof(au), s->au_mean);
	fmt_pct(thr, sizeof(thr), p->au_threshold);
	fprintf(out, "\nAU %s%% (threshold %s%%): %s", au, thr, s->pass ? "PASS" : "FAIL");
	if (p->skip_start || p->skip_end)
		fprintf(
		    out,
		    "  [first %u%s step(s) of each epoch left out of AU, as MLPerf Storage does]",
		    p->skip_start, p->skip_end ? " and last" : "");
	fputc('\n', out);
	fprintf(out,
		"throughput: read %.2f MB/s (bytes moved, 10^6); DLIO's nominal %.2f MiB/s "
		"(samples/s x %s %llu bytes, as DLIO logs it)\n",
		s->mb_per_s.mean, nominal_mib(c, s->samples_per_s.mean),
		p->record_length ? "record_length" : "mean sample size",
		(unsigned long long)drv_nominal_sample(c));
	if (r->nsteps) {
		fprintf(out,
			"stall per step p50 %.2f ms, p90 %.2f ms, p99 %.2f ms over %zu steps\n",
			s->wait_p50 * 1e3, s->wait_p90 * 1e3, s->wait_p99 * 1e3, r->nsteps);
	}
	if (r->nck) {
		double secs = 0;
		uint64_t bytes = 0;
		for (size_t i = 0; i < r->nck; i++) {
			secs += r->ck[i].seconds;
			bytes += r->ck[i].bytes;
		}
		fprintf(out, "checkpoints: %zu written to %s, %.3f s each on average, %.3f GB/s\n",
			r->nck, p->checkpoint_dir, secs / (double)r->nck,
			secs > 0 ? (double)bytes / 1e9 / secs : 0);
	}
}

void drv_report_table(FILE *out, const struct drv_ctx *c, const struct drv_result *r,
		      const struct drv_summary *s)
{
	table_head(out, c, r);
	table_epochs(out, r, s);
	table_ranks(out, r);
	table_gpu(out, r);
	table_tail(out, c, r, s);
}

/* ---- JSON ---- */

static void jnum(struct dl_jw *w, const char *k, double v) { dl_jw_f64(w, k, v, 15); }

static void jtext(struct dl_jw *w, const char *k, const char *v) { dl_jw_str(w, k, v); }

static void jmom(struct dl_jw *w, const char *k, const struct drv_moments *m)
{
	dl_jw_obj(w, k);
	jnum(w, "mean", m->mean);
	jnum(w, "min", m->min);
	jnum(w, "max", m->max);
	jnum(w, "stdev", m->stdev);
	dl_jw_end(w);
}

static void jpct(struct dl_jw *w, const char *k, double p50, double p90, double p99)
{
	dl_jw_obj(w, k);
	jnum(w, "p50", p50);
	jnum(w, "p90", p90);
	jnum(w, "p99", p99);
	dl_jw_end(w);
}

static void jphase(struct dl_jw *w, const struct drv_phase_stats *st, const struct drv_io *io,
		   double mbs)
{
	dl_jw_u64(w, "steps", st->steps);
	dl_jw_u64(w, "samples", st->samples);
	dl_jw_u64(w, "bytes", io->bytes);
	dl_jw_u64(w, "index_bytes", io->index_bytes);
	dl_jw_u64(w, "files_opened", io->opens);
	dl_jw_u64(w, "read_calls", io->reads);
	dl_jw_u64(w, "decoded_bytes", io->decoded);
	jnum(w, "wall_s", st->wall);
	jnum(w, "compute_s", st->compute);
	jnum(w, "stall_s", st->stall);
	jnum(w, "barrier_s", st->barrier);
	jnum(w, "stall_share", st->stall_share);
	jnum(w, "au", st->au);
	jnum(w, "samples_per_s", st->samples_per_s);
	jnum(w, "mb_per_s", mbs);
	jpct(w, "step_time_s", st->step_p50, st->step_p90, st->step_p99);
	jpct(w, "stall_time_s", st->wait_p50, st->wait_p90, st->wait_p99);
}

static void json_config(struct dl_jw *w, const struct drv_ctx *c)
{
	const struct drv_params *p = c->p;
	unsigned t = p->read_threads ? p->read_threads : 1;
	char buf[128];

	dl_jw_obj(w, "config");
	jtext(w, "config_file", c->cfg->path);
	jtext(w, "dir", c->root);
	jtext(w, "dataset", c->ds->name);
	jtext(w, "format", dl_ds_ops(c->ds)->name);
	dl_jw_u64(w, "files", c->ds->files[DL_SPLIT_TRAIN]);
	dl_jw_u64(w, "eval_files", c->ds->files[DL_SPLIT_VALID]);
	dl_jw_u64(w, "samples_per_file", c->spf);
	dl_jw_u64(w, "batch_size", p->batch);
	dl_jw_u64(w, "eval_batch_size", p->eval_batch);
	dl_jw_u64(w, "read_threads", t);
	dl_jw_u64(w, "prefetch", p->prefetch);
	dl_jw_u64(w, "read_ahead_batches",
		  drv_mlperf_reads(c) ? drv_mlperf_depth(c, c->ds->files[DL_SPLIT_TRAIN], p->batch)
			    : t * (p->prefetch > t ? (p->prefetch + t - 1) / t : 1));
	jtext(w, "loader", p->loader == DRV_LOADER_MLPERF_V3 ? "mlperf-v3" : "dlio");
	dl_jw_u64(w, "loader_threads",
		  drv_mlperf_reads(c) ? drv_mlperf_threads(c, c->ds->files[DL_SPLIT_TRAIN]) : t);
	dl_jw_u64(w, "epochs", p->epochs);
	dl_jw_u64(w, "steps_per_epoch", c->ds->files[DL_SPLIT_TRAIN] * c->spf / p->batch);
	dl_jw_u64(w, "total_training_steps", p->total_steps);
	drv_dist_describe(&p->compute, buf, sizeof(buf));
	jtext(w, "computation_time", buf);
	jnum(w, "computation_time_mean_s", drv_dist_mean(&p->compute));
	drv_dist_describe(&p->eval_compute, buf, sizeof(buf));
	jtext(w, "eval_time", p->eval ? buf : NULL);
	jtext(w, "file_shuffle", shuffle_name[p->file_shuffle]);
	jtext(w, "sample_shuffle", shuffle_name[p->sample_shuffle]);
	dl_jw_u64(w, "seed", p->seed);
	jtext(w, "read_unit", unit_name[c->kind]);
	jtext(w, "read_amplification", p->amp == DRV_AMP_DLIO ? "dlio" : "efficient");
	dl_jw_u64(w, "checkpoint_model_bytes", p->checkpoint_size);
	dl_jw_u64(w, "nominal_sample_bytes", drv_nominal_sample(c));
	jtext(w, "data_loader", p->iterative ? "tensorflow" : "pytorch");
	dl_jw_bool(w, "check_crc", p->check_crc);
	dl_jw_bool(w, "decode", p->decode);
	dl_jw_bool(w, "odirect", p->odirect);
	jtext(w, "accelerator", p->accel == DRV_ACCEL_CUDA ? "cuda" : "sleep");
	jtext(w, "accelerator_type", p->accel_type[0] ? p->accel_type : NULL);
	jtext(w, "workload", p->workload[0] ? p->workload : NULL);
	dl_jw_u64(w, "warmup_steps_excluded", p->skip_start);
	dl_jw_u64(w, "end_steps_excluded", p->skip_end);
	dl_jw_end(w);
}

static void json_epochs(struct dl_jw *w, const struct drv_ctx *c, const struct drv_result *r)
{
	dl_jw_arr(w, "epochs");
	for (size_t i = 0; i < r->nep; i++) {
		const struct drv_epoch_rec *e = &r->ep[i];
		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "epoch", e->epoch);
		jphase(w, &e->st, &e->io, e->mb_per_s);
		jnum(w, "nominal_mib_per_s", nominal_mib(c, e->st.samples_per_s));
		jnum(w, "au_min", e->au_min);
		if (e->has_gpu) {
			double tot = e->gpu.kernel_s + e->gpu.idle_s;
			dl_jw_obj(w, "gpu");
			dl_jw_u64(w, "kernels", e->gpu.kernels);
			jnum(w, "kernel_s", e->gpu.kernel_s);
			jnum(w, "idle_s", e->gpu.idle_s);
			jnum(w, "h2d_s", e->gpu.h2d_s);
			dl_jw_u64(w, "h2d_bytes", e->gpu.h2d_bytes);
			jnum(w, "gpu_stall_share", tot > 0 ? e->gpu.idle_s / tot : NAN);
			dl_jw_end(w);
		}
		if (e->has_eval) {
			dl_jw_obj(w, "eval");
			jphase(w, &e->ev, &e->evio, e->ev_mb_per_s);
			dl_jw_end(w);
		}
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

static void json_summary(struct dl_jw *w, const struct drv_ctx *c, const struct drv_summary *s)
{
	dl_jw_obj(w, "summary");
	jmom(w, "au", &s->au);
	jmom(w, "samples_per_s", &s->samples_per_s);
	jmom(w, "mb_per_s", &s->mb_per_s);
	/* DLIO's train_io_mean_MB_per_second: the epochs' mean samples/s. */
	jnum(w, "nominal_mib_per_s", nominal_mib(c, s->samples_per_s.mean));
	jmom(w, "stall_share", &s->stall_share);
	jmom(w, "stall_s", &s->stall_s);
	jmom(w, "wall_s", &s->wall_s);
	jmom(w, "bytes", &s->bytes);
	jpct(w, "step_time_s", s->step_p50, s->step_p90, s->step_p99);
	jpct(w, "stall_time_s", s->wait_p50, s->wait_p90, s->wait_p99);
	dl_jw_end(w);
}

static void json_checkpoints(struct dl_jw *w, const struct drv_result *r)
{
	dl_jw_arr(w, "checkpoints");
	for (size_t i = 0; i < r->nck; i++) {
		const struct drv_ckpt_rec *k = &r->ck[i];
		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "epoch", k->epoch);
		dl_jw_u64(w, "step", k->step);
		dl_jw_u64(w, "bytes", k->bytes);
		jnum(w, "seconds", k->seconds);
		jnum(w, "gb_per_s", k->seconds > 0 ? (double)k->bytes / 1e9 / k->seconds : NAN);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

/* One string per line of the notes (each at most 511 bytes). */
static void json_notes(struct dl_jw *w, const char *notes)
{
	dl_jw_arr(w, "notes");
	for (const char *n = notes; *n;) {
		const char *e = strchr(n, '\n');
		size_t len = e ? (size_t)(e - n) : strlen(n);
		char line[512];
		snprintf(line, sizeof(line), "%.*s",
			 (int)(len < sizeof(line) ? len : sizeof(line) - 1), n);
		dl_jw_str(w, NULL, line);
		n += len + (e ? 1 : 0);
	}
	dl_jw_end(w);
}

static void json_ranks(struct dl_jw *w, const struct drv_result *r)
{
	dl_jw_arr(w, "per_rank");
	for (unsigned q = 0; r->rank_ep && q < r->nranks; q++) {
		struct rank_fig f;
		rank_figures(r, q, &f);
		dl_jw_obj(w, NULL);
		dl_jw_u64(w, "rank", r->rank_base + q);
		jtext(w, "host", r->hosts ? r->hosts[q] : NULL);
		jnum(w, "au_mean", f.au.mean);
		jnum(w, "samples_per_s_mean", f.sps.mean);
		dl_jw_u64(w, "bytes", f.bytes);
		dl_jw_arr(w, "epochs");
		for (size_t i = 0; i < r->nep; i++) {
			const struct drv_epoch_rec *e = r->rank_ep + (size_t)q * r->nep + i;
			dl_jw_obj(w, NULL);
			dl_jw_u64(w, "epoch", e->epoch);
			dl_jw_u64(w, "steps", e->st.steps);
			dl_jw_u64(w, "samples", e->st.samples);
			dl_jw_u64(w, "bytes", e->io.bytes);
			dl_jw_u64(w, "files_opened", e->io.opens);
			dl_jw_u64(w, "read_calls", e->io.reads);
			jnum(w, "wall_s", e->st.wall);
			jnum(w, "compute_s", e->st.compute);
			jnum(w, "stall_s", e->st.stall);
			jnum(w, "barrier_s", e->st.barrier);
			jnum(w, "au", e->st.au);
			jnum(w, "samples_per_s", e->st.samples_per_s);
			jnum(w, "mb_per_s", e->mb_per_s);
			dl_jw_end(w);
		}
		dl_jw_end(w);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

int drv_report_json(FILE *f, const struct drv_ctx *c, const struct drv_result *r,
		    const struct drv_summary *s)
{
	const struct drv_params *p = c->p;
	struct dl_jw w;
	int ret;

	dl_jw_init(&w, f, 0);
	dl_jw_obj(&w, NULL);
	jtext(&w, "tool", "dlio-drive");
	jtext(&w, "version", DLIOFS_VERSION);
	json_config(&w, c);
	json_epochs(&w, c, r);
	json_summary(&w, c, s);
	jnum(&w, "au_threshold", p->au_threshold);
	jnum(&w, "au_mean", s->au_mean);
	jnum(&w, "au_min", r->rank_ep ? au_min_rank(r) : s->au.min);
	dl_jw_bool(&w, "pass", s->pass);
	dl_jw_u64(&w, "ranks", r->nranks ? r->nranks : 1);
	dl_jw_u64(&w, "job_ranks", c->ranks ? c->ranks : 1);
	jnum(&w, "run_wall_s", r->run_wall);
	dl_jw_u64(&w, "setup_bytes", c->setup_bytes);
	json_checkpoints(&w, r);
	json_notes(&w, p->notes);
	json_ranks(&w, r);
	if (r->cuda_device) {
		dl_jw_obj(&w, "cuda");
		jtext(&w, "device", r->cuda_device);
		dl_jw_end(&w);
	} else {
		dl_jw_null(&w, "cuda");
	}
	ret = dl_jw_finish(&w);
	fputc('\n', f);
	return ret || ferror(f) ? -EIO : 0;
}
