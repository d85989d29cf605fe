/* dlio-whatif internals: settings and grids (dlio_whatif_args.c), a cold run
 * of a job on a mount (dlio_whatif_mount.c, dlio_whatif_job.c), the figures
 * a run gives (dlio_whatif_figs.c), the verbs (dlio_whatif_sweep.c,
 * dlio_whatif_search.c, dlio_whatif_predict.c) and the virtual-time replay
 * of a trace through the pacer (dlio_whatif_replay.c). */
#ifndef DLIOFS_DLIO_WHATIF_I_H
#define DLIOFS_DLIO_WHATIF_I_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dliofs/pacer.h"
#include "tool_progress_i.h"

#define WI_KEY 64
#define WI_VAL 128
#define WI_MAX_AXES 8
#define WI_MAX_VALS 64
#define WI_MAX_COPIES 64
#define WI_MAX_EPOCHS 64
#define WI_MAX_NODES 64

/* ---- dlio_whatif_args.c: settings, grids, targets ---- */

/* What a value of a key is, for ranges, midpoints and labels. */
enum wi_kind { WI_K_RATE, WI_K_TIME, WI_K_SIZE, WI_K_COUNT, WI_K_TEXT };

struct wi_kv {
	char key[WI_KEY];
	char val[WI_VAL];
};

/* One --set KEY=V1,V2,... (a list) or --vary KEY=LO..HI (a range). */
struct wi_axis {
	char key[WI_KEY];
	enum wi_kind kind;
	size_t nvals;
	char vals[WI_MAX_VALS][WI_VAL];
	double num[WI_MAX_VALS]; /* each value in base units (B/s, ns, B, count); NAN: text */
	int range;		 /* LO..HI: vals[0], vals[1] */
};

struct wi_grid {
	unsigned nax;
	struct wi_axis ax[WI_MAX_AXES];
};

/* Parse "KEY=V1,V2" (commas inside parentheses belong to the value) or,
 * with allow_range, "KEY=LO..HI"; every value is checked against the
 * pacer's options table. -EINVAL with the reason said on stderr, naming
 * what (the option, "--set"). */
int wi_axis_parse(const char *what, const char *arg, int allow_range, struct wi_axis *ax);
/* Points in the grid (the product of the axes' lengths). */
size_t wi_grid_points(const struct wi_grid *g);
/* The settings of point i (the first axis varies slowest). */
void wi_grid_point(const struct wi_grid *g, size_t i, struct wi_kv *kv);
/* A value of kind k written for the pacer ("316MB/s", "2.5ms"), 3 significant
 * digits; label: the same for people ("316 MB/s"). */
void wi_value_fmt(enum wi_kind k, double v, char *buf, size_t len);
void wi_value_label(enum wi_kind k, double v, char *buf, size_t len);
/* Does a larger value of this key make storage better (bandwidth, iops,
 * queue depth, cache size) or worse (latency)? */
int wi_key_higher_is_better(const char *key);
/* "read.bandwidth" -> "read bandwidth". */
void wi_key_label(const char *key, char *buf, size_t len);

/* The figures a run gives. A metric is one row of WI_METRICS (the enum
 * WI_M_<ID> and the table wi_metrics[] are made from it); the row says how
 * it is shown (form) and where each verb gets it:
 *   drive, stall  a job's report (dlio-drive --json, dlio-stall run --json):
 *                 the number at .path, or .get(report) where it is derived
 *   cache         the emulated cache's counters of the run (sweep and search:
 *                 the mount's statistics; predict: the replay's), only under
 *                 an emulated cache (lru, minio), whose hits the mount counts
 *   pred          predict: from what the model and the replay give a job
 *                 (struct wi_pred), NULL where predict has no answer
 * A row without any of them is measured by dlio-whatif itself (run_s:
 * dlio_whatif_job.c). The getters are dlio_whatif_metrics.c's.
 * Rows are in the order of the JSON figures and the tables' columns. */
/* clang-format off */
#define WI_METRICS(X)                                                                        \
	X(RUN, .name = "run_s", .head = "run time", .says = "", .form = WI_MF_SECONDS,       \
	  .pred = wi_pred_run)                                                               \
	X(AU, .name = "au", .head = "AU", .says = "AU ", .form = WI_MF_SHARE,                \
	  .drive = {"au_mean"}, .stall = {.get = wi_stall_au}, .pred = wi_pred_au)           \
	X(WAIT, .name = "wait_share", .head = "data wait", .says = "data wait ",             \
	  .form = WI_MF_SHARE, .drive = {"summary.stall_share.mean"},                        \
	  .stall = {"runs.0.summary.wait_share"}, .pred = wi_pred_wait)                      \
	X(SPS, .name = "samples_per_s", .head = "samples/s", .says = "", .form = WI_MF_RATE, \
	  .drive = {"summary.samples_per_s.mean"}, .stall = {"runs.0.summary.samples_per_s"},\
	  .pred = wi_pred_sps)                                                               \
	X(MBPS, .name = "mb_per_s", .head = "MB/s", .says = "", .form = WI_MF_RATE,          \
	  .drive = {"summary.mb_per_s.mean"}, .stall = {.get = wi_stall_mbps},               \
	  .pred = wi_pred_mbps)                                                              \
	X(WAITP90, .name = "wait_p90_s", .head = "wait p90", .says = "wait p90 ",            \
	  .form = WI_MF_SECONDS, .drive = {"summary.stall_time_s.p90"},                      \
	  .stall = {"runs.0.summary.wait_p90_s"})                                            \
	X(HITB, .name = "cache_hit_bytes", .head = "hit B", .says = "", .form = WI_MF_SHARE, \
	  .cache = wi_cache_hitb)                                                            \
	X(HITR, .name = "cache_hit_requests", .head = "hit requests", .says = "",            \
	  .form = WI_MF_SHARE, .cache = wi_cache_hitr)
/* clang-format on */

#define WI_METRIC_ENUM(id, ...) WI_M_##id,
enum wi_metric { WI_METRICS(WI_METRIC_ENUM) WI_NM };
#undef WI_METRIC_ENUM
/* How a metric is shown, checked as a --target, and taken over several
 * copies of a job. */
enum wi_metric_form {
	WI_MF_SECONDS, /* "1.23 s"; over copies the slowest */
	WI_MF_SHARE,   /* a fraction, "45.6%", a target in either form; over copies the mean */
	WI_MF_RATE,    /* "123.4"; over copies the sum */
};

struct dl_jdoc;
/* Where a job's report has a metric: a number at path, or derived. */
struct wi_metric_src {
	const char *path;
	double (*get)(const struct dl_jdoc *report); /* NAN: not there */
};
/* The emulated cache's counters of a run or of one job in it. */
struct wi_cache_counts {
	double reqs, hits; /* read requests it looked at; wholly served by it */
	double hit_bytes, bytes;
};
/* What predict knows of a job at a setting (NAN: unknown): the job model's
 * figures (wi_model_predict) and the replay's read bytes. */
struct wi_pred {
	double run_s, au, wait_share, samples_per_s;
	double read_bytes; /* NAN: the job's I/O took no time */
};
struct wi_metric_row {
	const char *name; /* JSON key and --target name */
	const char *head; /* column head */
	const char *says; /* before the figure in search's answer ("AU "), or "" */
	enum wi_metric_form form;
	struct wi_metric_src drive, stall;
	double (*cache)(const struct wi_cache_counts *c);
	double (*pred)(const struct wi_pred *p);
};
extern const struct wi_metric_row wi_metrics[WI_NM];
int wi_metric_find(const char *name);
/* "run_s, au, ...": every metric's name, in the table's order. */
void wi_metric_names(char *buf, size_t len);
/* The getters the rows name (dlio_whatif_metrics.c). */
double wi_stall_au(const struct dl_jdoc *j);
double wi_stall_mbps(const struct dl_jdoc *j);
double wi_cache_hitb(const struct wi_cache_counts *c);
double wi_cache_hitr(const struct wi_cache_counts *c);
double wi_pred_run(const struct wi_pred *p);
double wi_pred_au(const struct wi_pred *p);
double wi_pred_wait(const struct wi_pred *p);
double wi_pred_sps(const struct wi_pred *p);
double wi_pred_mbps(const struct wi_pred *p);

struct wi_target {
	int metric;    /* enum wi_metric */
	int ge;	       /* 1: >=, 0: <= */
	double value;  /* fraction for au and wait_share */
	char text[64]; /* as given */
};

/* "au>=0.90", "au>=90%", "wait_share<=0.10", "samples_per_s>=500";
 * "au>=mlperf" takes MLPerf Storage's threshold of the workload named by
 * workload (unet3d, resnet50: 90%, cosmoflow: 70%). -EINVAL, said. */
int wi_target_parse(const char *s, const char *workload, struct wi_target *t);
int wi_target_met(const struct wi_target *t, double v);
/* MLPerf Storage's AU threshold for a workload name (its prefix), NAN: none. */
double wi_mlperf_au(const char *name);

/* ---- dlio_whatif_figs.c: what a job's report says ---- */

enum wi_job_kind { WI_JOB_DRIVE, WI_JOB_STALL };

struct wi_figs {
	double v[WI_NM];
	unsigned have; /* bit per metric */
};

/* The job's own figures needed to turn a change of its I/O time into AU,
 * data-wait share and samples/s (predict). */
struct wi_jobmodel {
	int kind;		 /* enum wi_job_kind, -1: unknown */
	double run_s;		 /* the copy's wall time, measured by dlio-whatif */
	uint64_t t_start, t_end; /* CLOCK_MONOTONIC of its start and exit */
	unsigned nep;		 /* drive: epochs */
	struct {
		double wall, compute, stall, au;
		double steps, counted;
		double samples;
	} ep[WI_MAX_EPOCHS]; /* stall jobs: one "epoch", the counted steps */
	double wait_all_s;   /* stall jobs: wait over every step */
	char name[WI_KEY];   /* DLIOFS_JOB of the copy */
	struct wi_figs figs; /* as measured */
};

void wi_figs_set(struct wi_figs *f, int m, double v);
int wi_figs_has(const struct wi_figs *f, int m);
/* Every metric whose row reads the emulated cache's counters / predict's
 * answer, into f (a NAN leaves one unset). */
void wi_figs_from_cache(struct wi_figs *f, const struct wi_cache_counts *c);
void wi_figs_from_pred(struct wi_figs *f, const struct wi_pred *p);
/* Read a report (dlio-drive --json or dlio-stall run --json) into figs and
 * model. 0, or -errno / -EINVAL (said on stderr with the path). */
int wi_figs_load(const char *path, enum wi_job_kind kind, struct wi_figs *figs,
		 struct wi_jobmodel *model);
/* The copies of one run together: run_s the longest, au, wait_share and
 * the cache's hit ratios their mean, samples/s and MB/s their sum. */
void wi_figs_total(const struct wi_figs *copies, unsigned n, struct wi_figs *total);
/* Each rank's figures of a dlio-drive report of several ranks (per_rank[]:
 * AU, data wait, samples/s, MB/s, the rank's own means over epochs): how
 * many, 0 with one rank. */
unsigned wi_figs_load_ranks(const char *path, struct wi_figs *node, unsigned max);
/* What the model predicts of a job whose I/O ended delta_s later (or
 * earlier) than in its recorded run, its reads taking rho times as long in
 * all (out: run_s, au, wait_share, samples_per_s; NAN where it cannot say;
 * read_bytes is left as it was). */
void wi_model_predict(const struct wi_jobmodel *m, double delta_s, double rho,
		      struct wi_pred *out);
/* Write / read the model as the JSON object open in w / the flattened doc. */
struct dl_jw;
void wi_model_write(struct dl_jw *w, const char *key, const struct wi_jobmodel *m);
int wi_model_read(const char *path, const char *prefix, struct wi_jobmodel *m);

/* Mean, min, max and standard deviation over runs. */
struct wi_stat {
	unsigned n;
	double mean, min, max, sd;
};
void wi_stat_of(const double *v, unsigned n, struct wi_stat *s);

/* ---- dlio_whatif_mount.c and dlio_whatif_job.c: one cold run ---- */

struct wi_env {
	char config[PATH_MAX];	 /* absolute */
	const char *given_mount; /* --mount: run there (no remount) */
	char mnt[PATH_MAX];	 /* where the job reads */
	int own;		 /* we mount a fresh daemon per run */
	char dliofs[PATH_MAX], stall[PATH_MAX];
	char workdir[PATH_MAX];
	char **argv; /* the job, {mount} not yet replaced */
	enum wi_job_kind kind;
	unsigned copies;       /* --jobs */
	const char *trace_dir; /* --trace DIR: a trace per run */
	int keep;	       /* keep workdir */
	int quiet;	       /* no progress line (-q, or stderr no terminal) */
	uint64_t t0;	       /* when the verb started (progress) */
	struct tool_progress pl;
	/* --nodes N: a cluster of N mounts (dlio_whatif_cluster.c); mnt is
	 * then the mountpoint with {rank} in it, the same on every node. */
	unsigned nodes;		 /* 0: one plain mount */
	char **launcher;	 /* what starts one process per node (NULL-ended) */
	int remote;		 /* --launcher: the nodes' mounts are not ours to see */
	char cluster_cfg[PATH_MAX]; /* the config with cluster:, a copy if we wrote it */
	int cfg_copy;		 /* cluster_cfg is ours to remove */
	pid_t daemons;		 /* the launcher of the running cluster's daemons */
	char self[PATH_MAX];	 /* this dlio-whatif, for `dlio-whatif node` on each node */
	char daemons_log[PATH_MAX + 64];
};

struct wi_run {
	int ok;
	unsigned ncopies;
	struct wi_figs copy[WI_MAX_COPIES];
	struct wi_figs total; /* the hit ratios: the mount's over the run */
	double elapsed_s; /* wall time of the run, mount to unmount */
	unsigned nnodes;  /* --nodes: each rank's own figures (dlio-drive's per_rank) */
	struct wi_figs node[WI_MAX_NODES];
	char trace[PATH_MAX];
	char note[256];
};

/* Find dliofs and dlio-stall beside this binary, decide the job's kind, make
 * the working directory. -errno, said. */
int wi_env_init(struct wi_env *e, const char *config, const char *mount, char **argv,
		unsigned copies);
struct wi_opts;
/* wi_env_init from a verb's options, with its output settings (keep, quiet,
 * traces) and its start time. */
int wi_env_from_opts(struct wi_env *e, const struct wi_opts *o);
void wi_env_fini(struct wi_env *e);
/* One cold run of the job with settings kv[0..n): a fresh mount (or, with
 * --mount, the settings applied, caches dropped and statistics reset), the
 * copies started together, their reports read. tag names the run's files
 * ("p3-r1"). 0 when it ran (out->ok says whether every copy succeeded). */
int wi_run_once(struct wi_env *e, const struct wi_kv *kv, unsigned n, const char *tag,
		struct wi_run *out);

/* The mount's side (dlio_whatif_mount.c). */
int wi_mount(struct wi_env *e, const char *log);
int wi_umount(struct wi_env *e);
/* Apply kv as one transaction, drop the caches, reset the statistics (on
 * every node of a cluster); wi_cold_at: on the mount mnt. */
int wi_cold(struct wi_env *e, const struct wi_kv *kv, unsigned n);
int wi_cold_at(const char *mnt, const struct wi_kv *kv, unsigned n);
/* NAME beside this binary, else $ENV, else NAME on the PATH. */
void wi_find_tool(const char *name, const char *env, char *buf, size_t len);
/* Run argv with stdout and stderr appended to out: its exit status. */
int wi_run_cmd(char *const argv[], const char *out);
void wi_show_file(const char *path, const char *what);

/* ---- dlio_whatif_cluster.c: --nodes N, one storage system of N mounts ----
 * The daemons are one `mpirun -np N dliofs mount -f DIR/m{rank} CONFIG`
 * (cluster: in CONFIG, added to a copy where it is missing), the job one
 * `mpirun -np N dlio-drive ...` whose rank r reads mount r; with
 * --launcher the same commands start under srun or mpirun -H, one process
 * per node, and the nodes' mounts are reached through the launcher
 * (`dlio-whatif node`). */
/* Check the options, make the cluster's config, find the launcher. -errno,
 * said (the caller exits 2 on -EINVAL). */
int wi_cluster_init(struct wi_env *e, const struct wi_opts *o);
void wi_cluster_fini(struct wi_env *e);
/* The N daemons, up when every node answers; unmounted all, whatever
 * happened (-EIO: something was left to the lazy unmount). */
int wi_cluster_mount(struct wi_env *e, const char *log);
int wi_cluster_umount(struct wi_env *e);
int wi_cluster_cold(struct wi_env *e, const struct wi_kv *kv, unsigned n);
/* The job's argv with the launcher before it; each rank has {rank}
 * replaced in every argument by `dlio-whatif node exec`. */
char **wi_cluster_job_argv(const struct wi_env *e, char **job);
/* `dlio-whatif node OP MOUNTPOINT ...`: what one node does for a launcher
 * ({rank} in MOUNTPOINT from the launcher's environment). */
int wi_node(int argc, char **argv);
/* This process's rank from mpirun's or srun's environment, -1: none. */
int wi_env_rank(void);
int wi_trace_start(struct wi_env *e, const char *path);
int wi_trace_stop(struct wi_env *e);
/* The emulated cache's hit ratios over the run from the mount's statistics,
 * into the total and (by the copies' job names "whatif-C") each copy's
 * figures; nothing when the mount has no emulated cache. */
void wi_cache_figs(struct wi_env *e, struct wi_run *out);
/* The job's command with {mount} replaced; kind decides how it is wrapped
 * (dlio-drive gets --json, anything else runs under dlio-stall run). */
char **wi_job_argv(const struct wi_env *e, const char *report);
void wi_argv_free(char **av);

/* ---- progress and output (dlio_whatif_out.c) ---- */
void wi_progress(struct wi_env *e, size_t done, size_t total, const char *what);
void wi_progress_end(struct wi_env *e);
/* "15.8%" for shares, "3.24 s" for run time, "12.3" otherwise; "-" for NAN. */
void wi_fmt_metric(int m, double v, char *buf, size_t len);
void wi_json_figs(struct dl_jw *w, const char *key, const struct wi_figs *f);
void wi_json_settings(struct dl_jw *w, const struct wi_kv *kv, unsigned n);
/* Statistics of each metric over runs[warmup..nruns) that succeeded, of
 * the total (copy < 0) or of one copy. */
void wi_point_stats(const struct wi_run *runs, unsigned nruns, unsigned warmup, int copy,
		    struct wi_stat st[WI_NM]);
/* The same of one node of a cluster. */
void wi_node_stats(const struct wi_run *runs, unsigned nruns, unsigned warmup, unsigned node,
		   struct wi_stat st[WI_NM]);
void wi_json_stats(struct dl_jw *w, const char *key, const struct wi_stat st[WI_NM]);
void wi_json_runs(struct dl_jw *w, const struct wi_run *runs, unsigned nruns, unsigned warmup);
/* "target": {text, metric, op, value}. */
void wi_json_target(struct dl_jw *w, const struct wi_target *t);
/* End the document, close the file: 0 or the first error (-errno). */
int wi_json_close(struct dl_jw *w, FILE *f);
/* The members every verb's JSON starts with. */
void wi_json_head(struct dl_jw *w, const char *verb, const struct wi_env *e, unsigned repeat,
		  unsigned warmup);
/* Draw JSON (a sweep's or a search's) into PNG: the helper script. */
int wi_plot(const char *json, const char *png, const char *metric);

/* ---- dlio_whatif_opts.c: what sweep and search share on the command line ---- */
struct wi_opts {
	const char *verb;
	const char *config;
	struct wi_grid grid; /* --set (sweep), --vary (search) */
	unsigned repeat, warmup, jobs;
	const char *json, *plot, *mount, *workload;
	char trace_dir[PATH_MAX];
	const char *metric_name;
	int metric; /* -1: the job kind's default */
	int have_target;
	struct wi_target target;
	const char *target_text;
	double resolution; /* search: hi / lo at most 1 + resolution */
	int keep, quiet;
	int progress; /* --progress: a line per run into a log too */
	unsigned nodes;		/* --nodes N, 0: not given */
	const char *launcher;	/* --launcher 'srun ...' (or $DLIO_WHATIF_LAUNCHER) */
	const char *mountpoint; /* --mountpoint DIR: each node's, with --launcher */
	char **argv; /* the job */
};

/* 0, 1 when --help was printed, -EINVAL (said). */
int wi_opts_parse(int argc, char **argv, const char *verb, struct wi_opts *o);
/* The metric to report: --metric, else the target's, else AU for dlio-drive
 * and the data-wait share for any other job. */
int wi_opts_metric(const struct wi_opts *o, const struct wi_env *e);
/* One run with progress and a line when it fails. */
int wi_measure(struct wi_env *e, const struct wi_kv *kv, unsigned n, const char *tag, size_t done,
	       size_t total, const char *what, struct wi_run *run);

/* ---- dlio_whatif_replay.c: a trace through the pacer in virtual time ---- */

struct dl_trace_file;

/* Per job (per client copy) of a replay. */
struct wi_rjob {
	uint32_t job;		    /* the trace's job id */
	unsigned client;	    /* 0 .. clients - 1 */
	uint64_t first_ns, last_ns; /* first arrival, last reply (virtual) */
	uint64_t reqs, read_bytes;
	double read_wait_s; /* sum of read durations */
	/* reads the emulated cache looked at: wholly hit, and their bytes */
	uint64_t cache_reqs, cache_hits, hit_bytes, miss_bytes;
};

struct wi_replay {
	unsigned clients;
	size_t njobs;
	struct wi_rjob *jobs; /* clients x the trace's jobs */
	uint64_t reqs;
	double span_s;	      /* first arrival to last reply, all clients */
	double read_mb_per_s; /* read bytes over the span */
	double read_lat_mean_s;
	double daemon_share;	 /* of the recorded reads, those the daemon (not the
				  * storage) took the time of: kept as floors */
	int emulated_cache;	 /* cfg has an emulated cache (lru, minio) */
};

/* The trace's requests replayed through a pacer built from cfg, clients
 * copies of the job at once: every client thread keeps its order and its
 * think time (the gap between the event it waited for and its next
 * request), only the storage's answers change. The recorded setting rec
 * (the configuration the trace was taken under) separates the daemon's own
 * time in each recorded reply from the storage's. */
int wi_replay_run(const struct dl_trace_file *t, uint64_t origin, const struct dl_pacer_cfg *rec,
		  const struct dl_pacer_cfg *cfg, unsigned clients, uint64_t seed,
		  struct wi_replay *out);
void wi_replay_free(struct wi_replay *r);
/* The replay's job entry of (client, job), NULL if none. */
const struct wi_rjob *wi_replay_job(const struct wi_replay *r, unsigned client, uint32_t job);

/* ---- the verbs ---- */
int wi_sweep(int argc, char **argv);
int wi_search(int argc, char **argv);
int wi_predict(int argc, char **argv);

#endif
