/* dlio-drive internals, shared by dlio_drive.c and drive_*.c (tools/drive/).
 * Private to the tool (and its unit test, tests/unit/tools/drive/test_drive.c). */
#ifndef DLIOFS_DRIVE_I_H
#define DLIOFS_DRIVE_I_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dliofs/config.h"
#include "dliofs/crc32c.h"
#include "dliofs/format.h"
#include "tool_json_i.h"
#include "tool_progress_i.h"

/* ---- computation-time distributions (drive_dist.c) ---- */

enum drv_dist_type {
	DRV_DIST_CONST,	  /* a = seconds */
	DRV_DIST_NORMAL,  /* a = mean, b = stdev (negative draws folded, as DLIO) */
	DRV_DIST_UNIFORM, /* a = min, b = max */
	DRV_DIST_GAMMA,	  /* a = shape, b = scale */
	DRV_DIST_EXP,	  /* a = scale (mean) */
	DRV_DIST_POISSON, /* a = lambda (whole seconds, as numpy.random.poisson) */
};

struct drv_dist {
	enum drv_dist_type type;
	double a, b;
};

/* "0.323", "50ms", "normal:0.3,0.05", "uniform:0.1,0.2", "gamma:2,0.1",
 * "exponential:0.1", "poisson:1". Returns 0 or -EINVAL with *why set. */
int drv_dist_parse(const char *s, struct drv_dist *out, const char **why);
/* Seconds from a value that may carry a unit ("0.5", "500ms"). */
int drv_parse_seconds(const char *s, double *out, const char **why);

/* fsync a directory (a checkpoint's new names made durable). 0 or -errno. */
int drv_fsync_dir(const char *path);
/* Draw i of stream key: a pure function of (d, key, i), always >= 0. */
double drv_dist_draw(const struct drv_dist *d, uint64_t key, uint64_t i);
double drv_dist_mean(const struct drv_dist *d);
int drv_dist_valid(const struct drv_dist *d, const char **why);
/* "0.323 s", "normal(mean 0.3 s, stdev 0.05 s)". */
void drv_dist_describe(const struct drv_dist *d, char *buf, size_t len);
/* Multiply every time parameter by f (computation time per batch scaled to
 * another batch size). Poisson cannot scale: -EINVAL. */
int drv_dist_scale(struct drv_dist *d, double f);

/* ---- permutations, epoch plans (drive_plan.c) ---- */

enum drv_shuffle { DRV_SHUF_OFF, DRV_SHUF_SEED, DRV_SHUF_RANDOM };

/* A keyed bijection of [0, n): a Feistel network over the smallest even
 * power of two >= n, cycle-walked back into range. O(1) memory whatever n,
 * so a billion-sample epoch costs nothing to shuffle. */
struct drv_perm {
	uint64_t n;
	uint64_t key;
	unsigned half; /* bits per Feistel half */
	int identity;
};

void drv_perm_init(struct drv_perm *p, uint64_t n, uint64_t key, int shuffle);
uint64_t drv_perm_at(const struct drv_perm *p, uint64_t i);

/* What one unit of work is: the reader's plan hook says (by the format's read
 * plan, --read-amplification and the loader). */
enum drv_unit_kind {
	DRV_U_FILE,   /* whole file once, yields the file's samples (npz/npy/jpeg/png) */
	DRV_U_SAMPLE, /* one sample (hdf5, raw, indexed_binary; whole-file formats in dlio mode) */
	DRV_U_STREAM, /* one file read as a record stream, sample by sample (tfrecord) */
	DRV_U_CHUNK,  /* batch-sized contiguous chunk (dlrm: 160 * B bytes) */
};

struct drv_plan {
	enum drv_unit_kind kind;
	uint64_t nfiles, spf;	   /* files in the split, samples per file */
	uint64_t chunk;		   /* DRV_U_CHUNK: samples per chunk */
	uint64_t cpf;		   /* DRV_U_CHUNK: chunks per file */
	uint64_t units;		   /* units per epoch in this rank's shard */
	struct drv_perm file_perm; /* file slot -> file index */
	struct drv_perm unit_perm; /* position in the shard's epoch -> shard unit */
	/* This rank's shard (drv_plan_shard; the whole split until then): global
	 * unit first + i * stride for shard unit i. */
	uint64_t all_units; /* units of the whole split */
	uint64_t first, stride;
	uint64_t s_lo, s_hi;	     /* DRV_U_FILE: the rank's global samples [s_lo, s_hi) */
	uint64_t rec_mod, rec_phase; /* DRV_U_STREAM, fewer files than ranks: records
				      * k with k % rec_mod == rec_phase (0: all) */
	uint64_t shard_samples;	     /* samples the shard holds */
	/* tf.data's reader threads (DLIO's iterative sampler): `lanes` threads
	 * each own a contiguous part of the shard's order, and the pipeline
	 * takes `lane_block` units (a batch) from each in turn. 0: one queue. */
	uint64_t lanes, lane_block;
};

struct drv_unit {
	uint64_t file;		     /* file index in the split */
	uint64_t sample;	     /* DRV_U_SAMPLE: sample in file; DRV_U_CHUNK: first sample;
				      * DRV_U_FILE: first sample of the rank's share of the file */
	uint64_t nsamples;	     /* samples this unit yields (STREAM: the file's, at most) */
	uint64_t rec_mod, rec_phase; /* STREAM: records this rank keeps (see drv_plan) */
};

/* Seed of epoch e (1-based) for a purpose (file or sample order): DLIO's
 * seed + epoch when seed_change_epoch, derived so both orders differ. */
uint64_t drv_epoch_key(uint64_t seed, uint64_t epoch, int change_per_epoch, uint32_t purpose);

int drv_plan_init(struct drv_plan *p, enum drv_unit_kind kind, uint64_t nfiles, uint64_t spf,
		  uint64_t chunk);
/* Order of epoch `epoch` for the given shuffles; keys from drv_epoch_key
 * (or anything: random mode passes fresh entropy). */
void drv_plan_order(struct drv_plan *p, enum drv_shuffle fs, uint64_t fkey, enum drv_shuffle ss,
		    uint64_t skey);
void drv_plan_unit(const struct drv_plan *p, uint64_t pos, struct drv_unit *out);
/* Samples in this rank's shard (the split's, unsharded). */
uint64_t drv_plan_samples(const struct drv_plan *p);
/* Restrict the plan to rank `rank` of `ranks` as DLIO splits work
 * (docs/dlio.md 4.5): samples and whole files by contiguous global sample ranges
 * [r * ceil(T/P), (r + 1) * ceil(T/P)) (its samplers), TFRecord files
 * round-robin (tf.data shard; records round-robin when files < ranks),
 * chunks by contiguous unit ranges. Call before drv_plan_order. */
int drv_plan_shard(struct drv_plan *p, unsigned rank, unsigned ranks);
/* Order positions as tf.data interleaves `threads` readers of contiguous
 * parts, `batch` samples at a time (DRV_U_FILE and DRV_U_SAMPLE, when the
 * shard splits evenly; otherwise nothing changes). After drv_plan_shard. */
void drv_plan_lanes(struct drv_plan *p, unsigned threads, uint64_t batch);

/* ---- statistics (drive_stats.c) ---- */

/* Linear-interpolated percentile (numpy's default) of sorted v[0..n-1]; q in [0, 100]. */
double drv_percentile_sorted(const double *v, size_t n, double q);
/* Sorts a copy; NAN when n == 0. */
double drv_percentile(const double *v, size_t n, double q);
/* p50, p90 and p99 of v, which is sorted in place (NAN when n == 0). */
void drv_pcts(double *v, size_t n, double *p50, double *p90, double *p99);

struct drv_moments {
	double mean, min, max, stdev; /* stdev: population (numpy's default, as DLIO) */
	unsigned n;
};
/* Over the finite values of v (NAN entries skipped); all NAN when none. */
void drv_moments(const double *v, size_t n, struct drv_moments *out);

/* One accelerator step. */
struct drv_step {
	double wait;	/* waiting for the batch (stall) */
	double compute; /* measured compute (sleep overshoot included, as DLIO) */
	double sync;	/* the step's barrier with the other ranks (0 alone) */
};

struct drv_phase_stats {
	uint64_t steps, samples;
	double wall, compute, stall;	     /* all steps */
	double barrier;			     /* all steps: waiting for the other ranks */
	double au;			     /* NAN when no step is left after the exclusion */
	double stall_share;		     /* stall / wall, all steps */
	double samples_per_s;		     /* all steps, warm-up included (MLPerf) */
	uint64_t excluded;		     /* warm-up + end steps left out of AU */
	double step_p50, step_p90, step_p99; /* step time, measured steps only */
	double wait_p50, wait_p90, wait_p99;
};

/* AU = compute / (wait + compute + sync) over steps [skip_start, n - skip_end). */
double drv_au(const struct drv_step *s, size_t n, size_t skip_start, size_t skip_end);
void drv_phase_compute(const struct drv_step *s, size_t n, uint64_t batch, size_t skip_start,
		       size_t skip_end, struct drv_phase_stats *out);

/* ---- TFRecord framing (drive_tfr.c) ---- */

#define DRV_TFR_HDR 12
#define DRV_TFR_FOOT 4

/* Length of the record whose 12 header bytes are h; with check, the masked
 * CRC of the length is verified (-EBADMSG when wrong). */
int drv_tfr_header(const uint8_t *h, int check, uint64_t *len);

/* A record stream over any byte source (a file, or memory in tests). */
struct drv_tfr {
	/* Read up to cap bytes at the stream's current position; 0 at EOF. */
	ssize_t (*fill)(void *src, uint8_t *buf, size_t cap);
	void *src;
	uint8_t *buf;
	size_t cap, pos, len;
	int check;
	uint64_t off;	   /* stream offset of buf[pos] */
	uint64_t bytes_in; /* bytes the source delivered */
};

void drv_tfr_init(struct drv_tfr *t, uint8_t *buf, size_t cap, int check,
		  ssize_t (*fill)(void *, uint8_t *, size_t), void *src);
/* Consume the next record. 1 and its data length and offset, 0 at a clean
 * end, -EBADMSG on a bad CRC or a truncated record, or the source's -errno. */
int drv_tfr_next(struct drv_tfr *t, uint64_t *len, uint64_t *rec_off);

/* ---- run parameters (drive_config.c) ---- */

enum drv_amp { DRV_AMP_EFFICIENT, DRV_AMP_DLIO };
/* Whose reads and checkpoints: DLIO 2.0.0's, or MLPerf Storage v3's DLIO
 * fork's (drive_read_prefetch.c, drive_ckpt.c). */
enum drv_loader_kind { DRV_LOADER_DLIO, DRV_LOADER_MLPERF_V3 };
enum drv_accel_kind { DRV_ACCEL_SLEEP, DRV_ACCEL_CUDA };

/* One row of MLPerf Storage's per-accelerator table (docs/dlio.md 4.3). */
struct drv_workload {
	const char *workload, *accel;
	double seconds; /* computation time per batch */
	uint64_t batch;
	unsigned read_threads;
	double au;
};
const struct drv_workload *drv_workload_find(const char *workload, const char *accel);
const struct drv_workload *drv_workload_table(size_t *n);

enum drv_storage { DRV_STORAGE_FILE, DRV_STORAGE_S3 };
/* Whose object reads --storage s3 copies (their range sizes, drive_s3.c). */
enum drv_s3_client { DRV_S3C_S3TORCH, DRV_S3C_S3DLIO };

struct drv_s3_params {
	int storage;			 /* enum drv_storage */
	int client;			 /* enum drv_s3_client */
	char endpoint[512];		 /* http://HOST:PORT */
	char bucket[256];		 /* "": the dataset's name */
	char access_key[128], region[64]; /* no key: unsigned requests */
	uint64_t range;			 /* bytes per range GET; 0: the client's */
	unsigned conns;			 /* connections per reader thread */
	int verify;			 /* compare every byte with the generator's */
};

/* The run: option defaults < the workload file < MLPerf Storage's table <
 * the command line (drv_build_params). */
struct drv_params {
	uint64_t epochs, batch, eval_batch;
	unsigned read_threads, prefetch;
	struct drv_dist compute, eval_compute;
	enum drv_shuffle file_shuffle, sample_shuffle;
	uint64_t seed;
	int seed_change_epoch;
	uint64_t total_steps; /* 0: no cap (DLIO's total_training_steps, run-wide) */
	/* evaluation */
	int eval;
	uint64_t eval_after, eval_every;
	/* checkpoints */
	int checkpoint;
	char checkpoint_dir[4096];
	uint64_t checkpoint_size;
	uint64_t record_length; /* DLIO's dataset.record_length(_bytes), 0: not given */
	uint64_t ckpt_every_steps; /* 0: epoch schedule */
	uint64_t ckpt_after_epoch, ckpt_every_epochs;
	/* metrics */
	double au_threshold;
	unsigned skip_start, skip_end;
	/* reading */
	enum drv_amp amp;
	int iterative; /* DLIO's tensorflow loader (iterative sampler): each reader opens a
			* file once for its consecutive samples; else pytorch's index
			* sampler, which opens the file per sample */
	int loader;	       /* enum drv_loader_kind */
	unsigned ckpt_readers; /* mlperf-v3: parallel range readers of a checkpoint */
	int check_crc, decode, odirect, dontneed;
	uint64_t io_size, transfer_size;
	/* accelerator */
	enum drv_accel_kind accel;
	char accel_type[16], workload[32], model[64];
	uint64_t h2d_bytes; /* 0: batch * sample bytes, capped */
	int progress;	    /* progress bar on stderr (a terminal, not --quiet) */
	/* --storage s3 (drive_s3.c): objects of an S3 endpoint, not files */
	struct drv_s3_params s3;
	/* where the values came from, for the report */
	int from_dlio;	  /* the config is a DLIO workload file */
	char notes[2048]; /* one line per adjustment the user should know of */
};

/* Defaults (the options table's), with the batch size and reader threads
 * DLIO uses for the format (its read hints; NULL: 64 and 4). */
void drv_params_defaults(struct drv_params *p, const struct dl_read_hints *h);
void drv_note(struct drv_params *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- options (drive_opts.c): one table for the command line, the DLIO
 * workload keys, the defaults, --help and which layer gave what ---- */

enum drv_opt_type {
	DRV_T_COUNT,	/* uint64_t or unsigned (by size) in [min, max]: 8, 20k */
	DRV_T_SIZE,	/* uint64_t bytes: 4MiB; with min, a multiple of min up to max */
	DRV_T_TIME,	/* struct drv_dist: seconds (0.3, 50ms) or a distribution */
	DRV_T_STDEV,	/* workload only: a stdev > 0 makes a constant time of the
			 * same field normal (DLIO's *_stdev keys) */
	DRV_T_FRACTION, /* double in [0, 1]; a workload's 1..100 is a percentage */
	DRV_T_BOOL,	/* int: the flag stores `value`; a workload says true or false */
	DRV_T_ENUM,	/* int: one of names[] */
	DRV_T_STRING,	/* char[size]: a name */
	DRV_T_DIR,	/* char[size]: a directory, with room left for names under it */
	DRV_T_ARG,	/* const char *: the argument as given */
	DRV_T_HELP,	/* --help */
	DRV_T_VERSION,	/* --version */
};

/* DRV_T_ENUM's spellings; yaml_only ones are workload-file aliases. */
struct drv_name {
	const char *name;
	int value;
	int yaml_only;
};

/* DLIO's conventions for a workload file's whole numbers, and how options go
 * together. */
#define DRV_OF_YOFF 0x01u     /* -1 (or 0) means 0: off */
#define DRV_OF_YMAIN 0x02u    /* 0 means 1 (DLIO's 0: load in the main process) */
#define DRV_OF_YCLAMP 0x04u   /* above max means max */
#define DRV_OF_YMAX 0x08u     /* above max is an error (else there is no maximum) */
#define DRV_OF_YNULL 0x10u    /* null means not given */
#define DRV_OF_YLAX 0x20u     /* a name not in names[] is ignored (not an error) */
#define DRV_OF_FALLBACK 0x40u /* read only when no entry before it in its chain gave something */
#define DRV_OF_CKPT 0x80u     /* a checkpoint option: checkpoints on, --checkpoint-dir needed */

/* Where a field is: the table's offsets are into struct drv_cli, whose
 * first member is the run parameters, so a run parameter's offset is also
 * its offset in struct drv_params. */
#define DRV_P(f) offsetof(struct drv_cli, p.f)
#define DRV_C(f) offsetof(struct drv_cli, f)

struct drv_opt {
	const char *flag; /* --flag; NULL: a workload file key only */
	char letter;	  /* -q, or 0 */
	const char *key;  /* the DLIO workload key ("reader.batch_size"); NULL: none */
	enum drv_opt_type type;
	size_t off, size;	      /* the field (DRV_P, DRV_C) and its size */
	uint64_t min, max;	      /* DRV_T_COUNT, DRV_T_SIZE (0, 0: no limit) */
	int value;		      /* DRV_T_BOOL: what the flag stores */
	const struct drv_name *names; /* DRV_T_ENUM, ending with {NULL} */
	unsigned flags;		      /* DRV_OF_* */
	const char *def;	      /* the default as the command line writes it; NULL: 0 */
	const char *arg;	      /* the value's name in --help */
	const char *help;
	const char *ynote; /* said (with the value) when the workload key is used */
};

/* The table. */
const struct drv_opt *drv_opts(size_t *n);
#define DRV_OPTS_MAX 128

/* Which options a layer gave: a bit per entry of the table. */
struct drv_optset {
	uint64_t bits[DRV_OPTS_MAX / 64];
};
void drv_optset_add(struct drv_optset *s, const struct drv_opt *o);
void drv_optset_or(struct drv_optset *d, const struct drv_optset *s);
int drv_optset_empty(const struct drv_optset *s);
/* Did s give the field at `off` (DRV_P(batch)), by any of its options? */
int drv_given(const struct drv_optset *s, size_t off);
/* Did s give any option with flag f (DRV_OF_CKPT)? */
int drv_given_any(const struct drv_optset *s, unsigned f);
/* "off, seed or random": o's names. */
void drv_opt_expected(const struct drv_opt *o, char *buf, size_t len);

/* DLIO's run keys (the table's) out of a workload YAML; *is_dlio says
 * whether the file looked like one (only then are keys read). Keys not
 * there leave p untouched; the ones used are added to *set. A known key
 * with a bad value is an error with its line:column, on err. 0 or -errno. */
int drv_params_from_yaml(const char *path, struct drv_params *p, struct drv_optset *set,
			 int *is_dlio, FILE *err);
/* Copy the run parameters `set` gives from s to d. */
void drv_params_merge(struct drv_params *d, const struct drv_params *s,
		      const struct drv_optset *set);

/* ---- ranks (drive_comm.c) ---- */

/* One process per simulated accelerator, as DLIO's MPI ranks. Without MPI
 * (or when no launcher started us) a single rank. */
struct drv_comm {
	int rank, size;
	int mpi;      /* MPI_Init was called here (MPI_Finalize at the end) */
	int launched; /* processes the launcher says it started (0: no launcher seen) */
};

/* 1 when this binary was built with MPI. */
int drv_comm_have_mpi(void);
/* "MPI: Open MPI v4.1.4" or "no MPI: one rank", for --version. */
void drv_comm_describe(char *buf, size_t len);
/* MPI when built with it and started by a launcher (mpirun/mpiexec/srun);
 * otherwise rank 0 of 1 without touching MPI. 0 or -errno (said on err). */
int drv_comm_init(struct drv_comm *c, int *argc, char ***argv, FILE *err);
void drv_comm_fini(struct drv_comm *c);
/* Every rank meets here (a step's all-reduce). Returns the most negative
 * status any rank brought: 0 when all are fine, so all ranks leave a loop
 * together when one of them fails. */
int drv_comm_sync(const struct drv_comm *c, int status);
/* Rank 0's v, on every rank. */
uint64_t drv_comm_bcast(const struct drv_comm *c, uint64_t v);
/* The smallest v of all ranks, on every rank. */
uint64_t drv_comm_min(const struct drv_comm *c, uint64_t v);
/* Rank 0 gets every rank's len bytes, rank after rank, in all (size * len
 * bytes; others may pass NULL). 0 or -errno, the same on every rank. */
int drv_comm_gather(const struct drv_comm *c, const void *mine, size_t len, void *all);
/* Variable lengths: rank 0 gets a malloc'ed *all and each rank's byte count
 * in lens[size]; others pass NULLs. */
int drv_comm_gatherv(const struct drv_comm *c, const void *mine, size_t len, void **all,
		     size_t *lens);

/* ---- the accelerator (drive_cuda.c; sleep lives in drive_run.c) ---- */

struct drv_cuda;
struct drv_cuda_stats {
	uint64_t kernels;
	double kernel_s; /* GPU time in the spin kernels (events) */
	double idle_s;	 /* GPU time between a kernel's end and the next one's start */
	double h2d_s;	 /* copies (part of idle) */
	uint64_t h2d_bytes;
};
/* dlopen libcuda.so.1, context on device 0, PTX module, pinned + device
 * buffers of h2d bytes. -ENOENT with msg "no CUDA driver found ..." without
 * a driver; other failures -EIO with the driver's words in msg. */
int drv_cuda_open(size_t h2d, struct drv_cuda **out, char *msg, size_t msglen);
/* One step: copy the batch, spin `seconds` on the GPU, wait for it. */
int drv_cuda_step(struct drv_cuda *c, double seconds, char *msg, size_t msglen);
/* Start a new phase (epoch): the first kernel's idle gap is not counted. */
void drv_cuda_phase(struct drv_cuda *c);
void drv_cuda_take(struct drv_cuda *c, struct drv_cuda_stats *out); /* and reset */
const char *drv_cuda_device(const struct drv_cuda *c);
void drv_cuda_close(struct drv_cuda *c);

/* ---- readers and the loader (drive_readers.c, drive_read_*.c, drive_loader.c) ---- */

struct drv_ctx;	   /* the run: config, dataset, params, readers */
struct drv_worker; /* per reader thread state */

/* What one phase (epoch or eval pass) read. */
struct drv_io {
	uint64_t bytes; /* payload bytes read (read(2)/pread(2) results; hdf5: hyperslab bytes) */
	uint64_t index_bytes; /* indexed_binary index files read during the phase */
	uint64_t opens;	      /* files opened */
	uint64_t reads;	      /* read calls */
	uint64_t decoded;     /* bytes of decoded pixels (--decode) */
	uint64_t samples;     /* samples delivered */
};

struct drv_loader;

int drv_loader_new(struct drv_ctx *ctx, unsigned threads, struct drv_loader **out);
/* Start a phase over `plan` of split; `need` samples, batch B, depth batches ahead. */
void drv_loader_start(struct drv_loader *l, const struct drv_plan *plan, uint32_t split,
		      uint64_t epoch, uint64_t need, uint64_t batch, unsigned depth);
/* Block until batch `step` (0-based) is complete; lets readers run ahead. 0 or -errno. */
int drv_loader_batch(struct drv_loader *l, uint64_t step);
/* Wait for the readers to go idle, return the phase's I/O figures. */
int drv_loader_finish(struct drv_loader *l, struct drv_io *io);
void drv_loader_free(struct drv_loader *l);

/* Per-thread reader state. */
struct drv_worker *drv_worker_new(struct drv_ctx *ctx, unsigned id);
void drv_worker_free(struct drv_worker *w);
/* Read one unit, adding its cost to io. The caller completes the samples it
 * reserved for it (drv_loader_complete); STREAM units reserve and complete
 * their records themselves (drv_loader_reserve to respect the prefetch
 * bound). */
int drv_read_unit(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		  uint64_t seq, const struct drv_unit *u, struct drv_io *io);
/* STREAM units: reserve up to `want` more samples (at least one, waiting for
 * the prefetch bound, or for reservations given back, when needed); 0 when
 * the phase needs no more. */
uint64_t drv_loader_reserve(struct drv_loader *l, uint64_t want);
/* n samples are complete; io holds the bytes they cost (added under the lock
 * and zeroed). */
void drv_loader_complete(struct drv_loader *l, uint64_t n, struct drv_io *io);
/* Give back n reserved samples that will not come (a short stream). */
void drv_loader_release(struct drv_loader *l, uint64_t n);

/* The run context the readers see. */
struct drv_ctx {
	const struct dl_config *cfg;
	const struct dl_dataset *ds;
	struct dl_fmt_ctx *fmt;
	struct drv_params *p;
	char root[4096];		 /* DIR/<dataset name> */
	uint64_t spf;			 /* logical samples per file */
	const struct drv_reader_ops *rd; /* from the format's read plan */
	void *rd_state;			 /* the reader's run-wide state (rd->setup) */
	enum drv_unit_kind kind;	 /* rd->plan's */
	FILE *trace;			 /* --trace-files, or NULL */
	pthread_mutex_t trace_lock;
	uint64_t setup_bytes;	     /* bytes read before the first epoch (index files) */
	const struct drv_comm *comm; /* ranks (NULL: one) */
	unsigned rank, ranks;	     /* this process, and all of them (>= 1) */
};

/* How the files of one read plan (enum dl_read_plan) are read: the unit of
 * work, anything the run prepares once, and per reader thread a private
 * state of state_size bytes (zeroed) that open sets up, read uses and close
 * releases. One drive_read_<plan>.c each; drv_reader_for picks by the
 * dataset's format, so no reader knows a format by name. */
struct drv_reader_ops {
	const char *name;	/* "whole", "stream", "hyperslab", "region", "chunk" */
	const char *no_odirect; /* why --odirect does not apply here (NULL: it does) */
	/* The unit of work for these reads. */
	enum drv_unit_kind (*plan)(enum drv_amp amp, int iterative);
	/* Notes for the report on this run's reads (optional). */
	void (*notes)(const struct dl_dataset *ds, struct drv_params *p);
	/* Before the first epoch and after the run (optional; c->rd_state is
	 * theirs). setup says what failed on err. */
	int (*setup)(struct drv_ctx *c, FILE *err);
	void (*teardown)(struct drv_ctx *c);
	size_t state_size;
	int (*open)(struct drv_worker *w); /* optional */
	/* One unit, as drv_read_unit. */
	int (*read)(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		    uint64_t seq, const struct drv_unit *u, struct drv_io *io);
	void (*close)(struct drv_worker *w); /* optional; also after a failed open */
};

/* The reader of the dataset's read plan (NULL: a plan without one). */
const struct drv_reader_ops *drv_reader_for(const struct dl_dataset *ds);
/* The reader --loader asks for: mlperf-v3 reads whole-file and hdf5
 * datasets as the fork's prefetching readers do (drive_read_prefetch.c). */
const struct drv_reader_ops *drv_reader_for_loader(const struct dl_dataset *ds,
						   const struct drv_params *p);
/* mlperf-v3: the loader's threads (64 a reader thread, fewer for fewer
 * files) and how many batches they may run ahead (two windows of files),
 * for a split of nfiles files. */
/* Whether c's dataset is read by mlperf-v3's pool. */
int drv_mlperf_reads(const struct drv_ctx *c);
unsigned drv_mlperf_threads(const struct drv_ctx *c, uint64_t nfiles);
unsigned drv_mlperf_depth(const struct drv_ctx *c, uint64_t nfiles, uint64_t batch);

int drv_relpath(const struct drv_ctx *c, uint32_t split, uint64_t file, uint32_t part, char *buf,
		size_t len);
void drv_trace_line(struct drv_ctx *c, uint64_t epoch, uint32_t split, uint64_t seq,
		    const char *rel, int64_t sample, int64_t off, uint64_t bytes);

/* np.load(path)[member] of an .npz, read the way numpy and CPython read it
 * (drive_pyio.c): the reads go to io. *m holds buffers between calls (free
 * with drv_pyio_free). 0, -ENOTSUP for a layout the model does not cover
 * (the caller then reads the file whole), or -errno. */
struct drv_pyio;
int drv_npz_numpy(struct drv_pyio **m, int fd, const char *member, struct drv_io *io);
void drv_pyio_free(struct drv_pyio *m);

/* The np.load model of a DL_RH_NUMPY format, by its name (drive_pyio.c);
 * NULL where there is none (its files are read whole). */
struct drv_numpy_model {
	const char *format;
	int (*load)(struct drv_pyio **m, int fd, struct drv_io *io); /* as drv_npz_numpy */
	const char *unsupported;				     /* what its -ENOTSUP means */
};
const struct drv_numpy_model *drv_numpy_model_for(const char *format);

/* *p holds at least want bytes (realloc'ed; contents kept). 0 or -ENOMEM. */
int drv_grow(uint8_t **p, size_t *cap, size_t want);

/* Decoders (drive_decode.c): 0 and pixels' byte count, or -errno. */
int drv_decode_jpeg(const uint8_t *data, size_t len, uint8_t **row, size_t *rowcap,
		    uint64_t *pixels);
int drv_decode_png(const uint8_t *data, size_t len, uint8_t **scratch, size_t *cap,
		   uint64_t *pixels);
/* PNG's row filters: undo filter cur[0] of row cur against prev (each with
 * its filter byte first); and the Paeth predictor. */
int drv_png_unfilter(uint8_t *cur, const uint8_t *prev, size_t stride, unsigned bpp);
uint8_t drv_png_paeth(int a, int b, int c);

/* The decoder of a DL_RH_IMAGE format, by its name (NULL: none). */
struct drv_decoder {
	const char *format;
	int (*decode)(const uint8_t *data, size_t len, uint8_t **scratch, size_t *cap,
		      uint64_t *pixels);
	const char *unsupported; /* what its -ENOTSUP means */
};
const struct drv_decoder *drv_decoder_for(const char *format);

/* ---- the run (drive_run.c) ---- */

struct drv_result;
/* Epochs, evaluations and checkpoints; figures into res (free with
 * drv_result_free). 0 or -errno (said on err). */
int drv_run(struct drv_ctx *c, struct drv_cuda *cuda, struct drv_result *res, FILE *err);
void drv_result_free(struct drv_result *res);
/* Every rank's shard of split `split` holds the samples of the steps the
 * run takes there (drop_last per rank, as DLIO): 0, or -EINVAL said on err
 * (by rank 0 only). *steps: steps per epoch (per rank). */
int drv_shard_check(const struct drv_ctx *c, uint32_t split, uint64_t batch, uint64_t *steps,
		    FILE *err);
/* The plan of a split, restricted to this rank. */
int drv_plan_for(const struct drv_ctx *c, uint32_t split, uint64_t batch, unsigned rank,
		 struct drv_plan *p);

/* ---- report (drive_report.c) ---- */

struct drv_ckpt_rec {
	uint64_t epoch, step, bytes;
	double seconds;
};

struct drv_epoch_rec {
	uint64_t epoch;
	struct drv_phase_stats st; /* several ranks: AU the mean, samples/s the sum */
	double au_min;		   /* several ranks: the lowest rank's AU (else st.au) */
	struct drv_io io;
	double mb_per_s; /* io.bytes / wall, MB = 10^6 */
	int has_gpu;
	struct drv_cuda_stats gpu;
	/* evaluation after this epoch */
	int has_eval;
	struct drv_phase_stats ev;
	struct drv_io evio;
	double ev_mb_per_s;
};

struct drv_result {
	struct drv_epoch_rec *ep;
	size_t nep;
	struct drv_ckpt_rec *ck;
	size_t nck;
	/* all measured (non-excluded) training steps of the run */
	double *step_times, *waits;
	size_t nsteps;
	double run_wall;
	const char *cuda_device;
	/* drv_ranks_reduce: every rank's epochs, rank-major (nranks * nep) */
	unsigned nranks;
	struct drv_epoch_rec *rank_ep;
	char (*hosts)[64];
	unsigned rank_base; /* per_rank[0]'s rank: this rank's when it runs alone */
};

/* Gather every rank's figures on rank 0 (a collective: all ranks call it
 * once the run is over) and turn res there into the job's: per epoch,
 * samples/s, MB/s and bytes summed over ranks, AU the mean (au_min the
 * lowest), wall the longest, step percentiles over every rank's steps.
 * Other ranks keep their own. 0 or -errno. */
int drv_ranks_reduce(const struct drv_ctx *c, struct drv_result *res);

/* Run summary figures across epochs. */
struct drv_summary {
	struct drv_moments au, samples_per_s, mb_per_s, stall_share, stall_s, wall_s, bytes;
	double au_mean; /* mean AU over epochs with one (NAN if none) */
	int pass;	/* au_mean >= threshold */
	double step_p50, step_p90, step_p99, wait_p50, wait_p90, wait_p99;
};

void drv_summarize(const struct drv_result *r, double threshold, struct drv_summary *s);
void drv_report_table(FILE *out, const struct drv_ctx *c, const struct drv_result *r,
		      const struct drv_summary *s);
int drv_report_json(FILE *out, const struct drv_ctx *c, const struct drv_result *r,
		    const struct drv_summary *s);

/* Progress bar on a terminal. */
struct drv_progress {
	int on;
	double last;
	unsigned width;
	struct tool_progress pl;
};
void drv_progress_update(struct drv_progress *pb, const char *what, uint64_t epoch, uint64_t epochs,
			 uint64_t step, uint64_t steps, double au, double sps);
void drv_progress_clear(struct drv_progress *pb);

double drv_now(void); /* CLOCK_MONOTONIC seconds */

/* ---- the tool's front (drive_opts.c, drive_params.c, drive_setup.c) ---- */

/* Everything the command line says (the options table's fields). */
struct drv_cli {
	struct drv_params p; /* first: see DRV_P */
	const char *config, *dir, *dataset, *json, *trace, *accel_type, *workload;
	int quiet;
	int ckpt_workload;	/* --checkpoint-workload: DIR takes the checkpoints */
	uint64_t checkpoints;	/* how many (0: one) */
	/* --rank R --ranks N, or the launcher's (drv_cli_ranks) */
	unsigned rank, ranks;
	char rank_from[96], ranks_from[96]; /* where each came from, for messages */
	/* dir, json and trace with {rank} replaced (drv_cli_paths) */
	char dir_buf[4096], json_buf[4096], trace_buf[4096];
	struct drv_optset given;
};

/* ---- which rank (drive_rankopt.c) ---- */

/* The launcher's rank and size (Open MPI, PMIx, MPICH's hydra, Slurm, in
 * that order); *rvar / *svar name the variable, NULL when none is set. 0 or
 * -EINVAL on a value that is not a number (said on err). */
int drv_rank_env(unsigned *rank, const char **rvar, unsigned *ranks, const char **svar,
		 FILE *err);
/* in with every {rank} replaced by rank, into out[len]: 0 or -ENAMETOOLONG. */
int drv_rank_path(const char *in, unsigned rank, char *out, size_t len);
/* cl->rank and cl->ranks: the command line's, else the launcher's, else
 * 0 of 1; a rank not below the ranks is refused. 0 or -EINVAL (said). */
int drv_cli_ranks(struct drv_cli *cl, FILE *err);
/* {rank} in DIR, --json, --trace-files and --checkpoint-dir replaced by
 * cl->rank; with several ranks a trace without {rank} is FILE.RANK, and so
 * is the JSON when the rank runs alone (no MPI: its own report). 0 or
 * -errno (said). */
int drv_cli_paths(struct drv_cli *cl, int alone, FILE *err);

/* --checkpoint-workload (drive_ckpt.c): the workload file's checkpoint
 * section alone, written under cl->dir and read back; the exit status. */
int drv_ckpt_main(const struct drv_cli *cl, const struct drv_comm *comm);

/* Bytes per sample in DLIO's nominal MB/s: the workload's record_length,
 * else the dataset's mean sample size (drive_report.c). */
uint64_t drv_nominal_sample(const struct drv_ctx *c);

/* A training run's checkpoints as DLIO 2.0.0 writes them (drive_ckpt.c):
 * the workload file's checkpoint section with DLIO's defaults (no section:
 * all defaults), then per checkpoint the files a rank writes, `model`
 * bytes of model (the run's checkpoint size), fsynced. */
struct drv_ck_plan;
/* loader: enum drv_loader_kind (mlperf-v3 writes as the fork does). */
int drv_ck_plan_load(const char *path, uint64_t seed, int loader, struct drv_ck_plan **out,
		     FILE *err);
void drv_ck_plan_free(struct drv_ck_plan *c);
int drv_ck_write_rank(struct drv_ck_plan *c, uint64_t model, const char *dir, unsigned rank,
		      uint64_t epoch, uint64_t step, uint64_t seed, uint64_t *files,
		      uint64_t *bytes, FILE *err);

/* dlio-drive --help. */
void drv_usage(FILE *f);
/* 0, 1 when --help or --version has said all, or -EINVAL (said). */
int drv_cli_parse(int argc, char **argv, struct drv_cli *c);
/* Layer the run parameters for dataset ds: 0 or -EINVAL (said). */
int drv_build_params(const struct drv_cli *cl, const struct dl_config *cfg,
		     const struct dl_dataset *ds, uint64_t spf, struct drv_params *p);
/* Everything before the first epoch; the exit status (0: ready). */
int drv_setup(const struct drv_cli *cl, const struct drv_comm *comm, struct drv_ctx *c,
	      struct drv_params *p, struct dl_config **cfgp, struct drv_cuda **cuda,
	      struct drv_result *res);

#endif
