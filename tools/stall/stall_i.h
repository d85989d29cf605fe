/* dlio-stall internals: records of one run, their analysis, the mount's
 * control files, and the report. Times are CLOCK_MONOTONIC nanoseconds. */
#ifndef DLIO_STALL_I_H
#define DLIO_STALL_I_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dliofs/ctl_client.h"
#include "dliofs/json.h"

/* ---- records.c: what the hook and the CUPTI library wrote ---- */
struct st_step {
	int64_t start, wait; /* the wait for this batch */
	int64_t compute; /* end of this wait to the next wait (or end of iteration); -1 unknown */
	int32_t batch;	 /* leading dimension of the batch, -1 unknown */
	uint32_t iter, idx;
	char flag; /* '-' real, 'c' replay filling, 'r' replayed */
};

struct st_iter_end {
	uint32_t iter, n;
	int64_t start, wait;
};

struct st_ival {
	int64_t s, e;
};

struct st_proc {
	int pid, ppid;
	char mode[16], fw[48], argv0[64];
	int64_t overhead_ns; /* hook cost per step, -1 unknown */
	struct st_step *steps;
	size_t nsteps, capsteps;
	struct st_iter_end *ends;
	size_t nends, capends;
};

struct st_gpu_fail {
	int pid, code;
	char call[64], err[64];
};

struct st_gpu {
	int seen;      /* any line at all */
	int inits;     /* processes that loaded the library */
	int monotonic; /* intervals are on CLOCK_MONOTONIC */
	uint64_t dropped;
	struct st_gpu_fail fails[16];
	size_t nfails;
	int multiple_subscribers;
	struct st_ival *busy; /* of the main process; raw, unmerged */
	size_t nbusy, capbusy;
	uint64_t kernels, memcpys, memsets, memcpy_bytes;
	uint32_t devices; /* bitmask of device ids < 32 */
};

struct st_records {
	struct st_proc *procs;
	size_t nprocs;
	struct st_gpu gpu;
};

/* Parse the hook's file (missing file: no processes) and, if gpu_path is
 * not NULL, the CUPTI file (GPU intervals of main_pid; <= 0: of any pid). */
int st_records_load(const char *steps_path, struct st_records *r);
int st_gpu_load(const char *gpu_path, int main_pid, struct st_gpu *g);
void st_records_free(struct st_records *r);
/* The process with the most steps (the training loop), or NULL. */
struct st_proc *st_main_proc(struct st_records *r);
/* Per iterator: batches yielded, "-" when never exhausted; comma list. */
int st_epoch_steps(const struct st_proc *p, char *buf, size_t len);

/* ---- analyze.c ---- */
struct st_summary {
	size_t steps, counted, discarded;
	int64_t window_ns; /* sum of (wait + compute) over counted steps */
	int64_t wait_ns, compute_ns;
	int64_t t0, t1; /* first counted wait start, last counted compute end */
	double wait_share;
	double step_mean_s, wait_mean_s, compute_mean_s;
	double wait_p50_s, wait_p90_s, wait_max_s;
	int64_t samples; /* sum of known batch sizes over counted steps */
	int batch;	 /* most frequent batch size, -1 unknown */
	double samples_per_s, steps_per_s;
	int64_t overhead_ns;
	size_t replayed, filling;
};

struct st_gpu_summary {
	int have; /* intervals inside the window */
	int64_t window_ns, busy_ns, idle_ns, idle_input_ns;
	size_t gaps;
	int64_t gap_max_ns;
	double idle_share, input_share_of_idle, input_share_of_window;
	struct st_ival *merged; /* busy, merged, clipped to the window */
	size_t nmerged;
};

void st_summarize(const struct st_proc *p, size_t warmup, struct st_summary *s);
void st_gpu_summarize(const struct st_proc *p, const struct st_summary *s, const struct st_gpu *g,
		      struct st_gpu_summary *gs);
void st_gpu_summary_free(struct st_gpu_summary *gs);
/* Merge intervals in place (sorted, disjoint); returns the new count. */
size_t st_ival_merge(struct st_ival *v, size_t n);

/* ---- mount.c: the control files stats.json, pacer, cache ---- */
int st_mount_stats(const char *mnt, struct dl_jdoc *out); /* -ENOENT: no stats file */
/* Emulated cache drop plus the kernel page cache of every file under data
 * (failures are said on stderr, as the commands' are). */
int st_mount_drop(const char *mnt, const char *data);
int st_mount_warm(const char *mnt, const char *data);
int st_mount_is_dliofs(const char *mnt);
/* The limits of the read class in force ("bandwidth 20MB/s, latency 1ms"),
 * "no limits", or "" when .dliofs/pacer cannot be read. */
void st_mount_pacer_desc(const char *mnt, char *buf, size_t len);

struct st_io_sample {
	int64_t t;
	double bytes, ops;
};

struct st_io {
	int have_before, have_after;
	char pacer[256]; /* the read model in force, from .dliofs/pacer; "" unknown */
	struct dl_jdoc before, after;
	struct st_io_sample *samples;
	size_t nsamples, capsamples;
};

void st_io_free(struct st_io *io);
int st_io_sample(const char *mnt, struct st_io *io, int64_t now);

/* ---- launch.c: run the job once with the hook (and CUPTI) injected ---- */
struct st_launch {
	char *const *argv;
	const char *hook_src;	 /* sitecustomize.py to inject */
	const char *cupti_lib;	 /* NULL: none */
	const char *mount;	 /* NULL: no storage side */
	const char *workdir;	 /* where records go */
	const char *tag;	 /* file name prefix inside workdir */
	int replay;		 /* K batches to replay, 0: off */
	const char *epoch_steps; /* hint for replay, or NULL */
	int interval_ms;
};

struct st_run {
	char name[32];
	int status; /* wait status */
	int64_t t_start, t_end;
	char steps_path[4096], gpu_path[4096];
	int cupti_state; /* 0 off, 1 injected, -1 preempted by another CUDA_INJECTION64_PATH */
	char cupti_note[256];
	struct st_records rec;
	struct st_io io;
	struct st_summary sum;
	struct st_gpu_summary gsum;
	struct st_proc *main;
};

/* Run the job once, in its own process group (the terminal's foreground
 * one when we have it). -EINTR when the tool was asked to stop (a signal,
 * tool_stop_i.h): the job's group has then been stopped. */
int st_launch(const struct st_launch *l, struct st_run *run);
void st_run_free(struct st_run *run);

/* ---- report.c ---- */
struct st_diff {
	int valid;
	double t1, t2, t3;		    /* mean step time: compute only, prep, as configured */
	double prep_stall_s, fetch_stall_s; /* per step */
	double prep_total_s, fetch_total_s; /* over the configured run's counted steps */
	double prep_ratio, fetch_ratio;	    /* of the configured run's window */
	double G, P, F;			    /* ceilings; samples/s (steps/s if batch unknown) */
	int per_sample;
	double fetch_bytes; /* device bytes per sample (per step) */
	double fetch_rate;  /* bytes/s the storage delivers to this job */
	char F_basis[192];  /* how F was found, for the report */
	char note[256];
};

/* ---- cpu.c: the prep ceiling against loader workers and cores ---- */
#define ST_CPU_MAX 8
struct st_cpu {
	unsigned n;		       /* worker counts measured */
	unsigned workers[ST_CPU_MAX];  /* as given to --workers */
	double P[ST_CPU_MAX];	       /* the prep run's rate at each */
	unsigned cores;		       /* this machine's, the job may use */
	int fitted;
	double p1, a;		       /* one worker's rate; contention */
	char note[160];		       /* why there is no fit */
};
void st_cpu_fit(struct st_cpu *c);
/* P at w workers on this many cores; NAN without a fit. */
double st_cpu_predict(const struct st_cpu *c, unsigned workers, unsigned cores);
void st_report_cpu(FILE *f, const struct st_cpu *c, const char *unit);
struct dl_jw;
void st_json_cpu(struct dl_jw *w, const struct st_cpu *c);

struct st_report_ctx {
	const char *mount;
	const struct st_cpu *cpu; /* diff --workers: the CPU what-if, else NULL */
	int gpu_present;
	int cupti_built;
	const char *cupti_lib;
	size_t warmup;
};

void st_report_run(FILE *f, const struct st_report_ctx *c, const struct st_run *r);
void st_report_diff(FILE *f, const struct st_report_ctx *c, struct st_run *runs, size_t n,
		    const struct st_diff *d);
int st_json_write(const char *path, const char *cmd, const struct st_report_ctx *c,
		  struct st_run *runs, size_t n, const struct st_diff *d);
/* ---- analyze.c: DS-Analyzer's differencing of the three runs ---- */
void st_diff_compute(struct st_run *runs, struct st_diff *d);
/* Bytes/s the read model pacer ("bandwidth 20MB/s, latency 1ms", as
 * .dliofs/pacer gives it) delivers to a job reading mean_req bytes per
 * request with conc requests in flight; INFINITY when it has no read limit,
 * NAN when the text is not understood. */
double st_fetch_rate(const char *pacer, double mean_req, double conc);

#endif
