/* Private interface between the files of the dlio-trace tool. */
#ifndef DLIOFS_DLIO_TRACE_I_H
#define DLIOFS_DLIO_TRACE_I_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dliofs/trace.h"

#define DT_NS 1000000000ULL
/* Request-size histogram: bucket 0 holds size 0, bucket k >= 1 holds sizes
 * in [2^(k-1), 2^k); the last bucket also takes anything larger. */
#define DT_HBUCKETS 34

/* ---- a trace in memory: trace/load.c (dliofs/trace.h); here the
 * printing and the figures dlio-trace draws from it (dlio_trace_out.c) ---- */
/* dl_trace_load, its warning and error printed ("dlio-trace: PATH: ..."). */
int dt_load(const char *path, struct dl_trace_file *t);
const char *dt_op_name(unsigned op);
/* A process of record i: its pid, with its node above (a merged trace's
 * nodes may be hosts whose pids coincide). */
static inline uint64_t dt_proc(const struct dl_trace_file *t, uint64_t i)
{
	return (uint64_t)dl_trace_node(t, i) << 32 | t->recs[i].pid;
}
unsigned dt_size_bucket(uint64_t size);
/* Lower bound of a bucket, for labels. */
uint64_t dt_bucket_lo(unsigned b);

/* ---- dlio_trace_map.c: hash map from a two-word key to a counter ---- */
struct dt_map_ent {
	uint64_t a, b, v;
	uint64_t used;
};
struct dt_map {
	struct dt_map_ent *e;
	size_t cap, n;
};
/* The value slot of (a, b), created as 0 (and *created set) if absent; NULL
 * when out of memory. The pointer is valid until the next insertion. */
uint64_t *dt_map_get(struct dt_map *m, uint64_t a, uint64_t b, int *created);
uint64_t *dt_map_find(const struct dt_map *m, uint64_t a, uint64_t b);
void dt_map_free(struct dt_map *m);

/* ---- dlio_trace_stats.c: everything summary and compare report ---- */
struct dt_op_stats {
	uint64_t count, errors, hits, bytes; /* bytes: transferred (result > 0) */
	uint64_t dur_sum, queue_sum;
	uint64_t dur_p50, dur_p99;
	uint64_t hist[DT_HBUCKETS]; /* requested sizes, as the storage saw them */
	uint64_t max_size;	    /* the largest requested size */
	/* As issued (read, write): a thread's pieces of one call joined
	 * (dlio_trace_issued.c); issued = 0 for other operations. */
	uint64_t issued;
	uint64_t issued_hist[DT_HBUCKETS];
	uint64_t split_at; /* the largest request assumed when joining */
};

/* How the processes of a trace share a file, as Darshan-based studies
 * name it (dlio_trace_modes.c). */
enum dt_mode {
	DT_MODE_NONE,	/* opened, never read or written */
	DT_MODE_ONE,	/* read or written by one process */
	DT_MODE_SHARED, /* by several, not each reading all of it */
	DT_MODE_WHOLE,	/* by several, each reading all of it */
	DT_MODE__COUNT
};
/* The job's pattern over its files. */
enum dt_pattern {
	DT_PAT_NONE,   /* no file read or written */
	DT_PAT_SINGLE, /* one process did all */
	DT_PAT_FPP,    /* file per process: no file shared */
	DT_PAT_SHARED, /* every file shared by several processes */
	DT_PAT_MIXED,
};

struct dt_file_stats {
	uint64_t id;
	uint64_t reads, writes, opens, other;
	uint64_t rbytes, wbytes;
	uint64_t seq_reads;
	uint64_t first_ns;	/* first access of any kind */
	uint64_t first_rank;	/* 0 for the file accessed first */
	uint64_t extent;	/* furthest byte a read reached (offset + returned) */
	uint64_t nprocs;	/* processes that read or wrote it */
	uint64_t whole_procs;	/* of them, those whose reads covered [0, extent) */
	enum dt_mode mode;
};

struct dt_pid_stats {
	uint32_t pid;
	uint32_t node; /* its node (a merged trace; else the header's) */
	uint64_t requests, reads, writes, opens;
	uint64_t rbytes, wbytes;
	uint64_t seq_reads;
	uint64_t nfiles, ntids;
	uint64_t first_ns, last_ns;
};

struct dt_job_stats {
	uint32_t job;
	uint64_t requests, reads, writes, opens, releases;
	uint64_t rbytes, wbytes;
	uint64_t npids, ntids;
	uint64_t nnodes; /* nodes it ran on (a merged trace) */
	uint64_t first_ns, last_ns;
};

/* Per node of a merged trace: what it served, over its own span. */
struct dt_node_stats {
	uint32_t node;
	uint64_t requests, reads, writes, opens;
	uint64_t rbytes, wbytes;
	uint64_t npids, njobs;
	uint64_t first_ns, last_ns; /* first arrival, last reply */
	uint64_t dfirst_ns, dlast_ns; /* the same of its reads and writes (0: none) */
};

struct dt_stats {
	uint64_t nrecs, dropped;
	double span_s;	 /* trace start to trace end */
	double active_s; /* first arrival to last reply */
	struct dt_op_stats ops[DL_TOP__COUNT];
	uint64_t reads, seq_reads, first_reads;
	uint64_t opens, open_peak_per_s;
	double opens_per_s;
	uint64_t ia_p50, ia_p99, ia_n;		 /* all requests */
	uint64_t ia_read_p50, ia_read_p99, ia_read_n; /* reads only */
	struct dt_file_stats *files; /* by first access */
	size_t nfiles;
	struct dt_pid_stats *pids; /* by pid */
	size_t npids;
	struct dt_job_stats *jobs; /* by first request (job 0: none known) */
	size_t njobs;
	struct dt_node_stats *nodes; /* a merged trace's nodes, by node; else none */
	size_t nnodes;
	uint64_t mode_files[DT_MODE__COUNT];
	uint64_t data_procs; /* processes that read or wrote a file */
	enum dt_pattern pattern;
};

int dt_stats_compute(const struct dl_trace_file *t, struct dt_stats *s);
void dt_stats_free(struct dt_stats *s);
/* Indices of s->files by bytes (read + written), most first, ties by id. */
size_t *dt_files_by_bytes(const struct dt_stats *s);

/* ---- dlio_trace_modes.c: access mode of each file, pattern of the job ---- */
int dt_modes_compute(const struct dl_trace_file *t, struct dt_stats *s);
/* "one_process", "shared", "whole_by_each", "no_data" (JSON keys). */
const char *dt_mode_key(enum dt_mode m);
/* "file per process", "shared file", ... */
const char *dt_pattern_name(enum dt_pattern p);

/* ---- dlio_trace_issued.c: request sizes as the application issued them ---- */
/* A piece continues a call when it arrives at most this long after the
 * previous piece's reply (the kernel sends the next piece of a split call
 * once the previous one is answered: 0.5-0.7 ms later on a loaded 2-core
 * machine, but more than 2 ms now and then at load 4: the calling thread
 * waits for a core before it sends the next piece, and a 2 ms gap split
 * one 10 MiB pread in two in about 1 run of 3). Only full-size pieces
 * that continue each other are joined, so a longer gap can join only
 * back-to-back full-size calls, which look like one call anyway. */
#define DT_PIECE_GAP_NS 10000000ULL
/* The kernel splits at the user buffer's pages: a piece but the last is at
 * most a page short of the largest request. */
#define DT_PIECE_SLACK 4096ULL
/* The kernel's largest request on a dliofs mount: it asks for 1 MiB
 * (max_write and max_readahead, fs/ops.c; kernels since 4.20 grant it). */
#define DT_MAX_REQUEST (1ULL << 20)
/* Fills ops[].issued and issued_hist (read, write), pieces joined where a
 * piece but the last is at most a page short of max_request or of the
 * largest request of its operation in the trace, whichever is larger. */
int dt_issued_compute(const struct dl_trace_file *t, struct dt_stats *s, uint64_t max_request);

/* ---- dlio_trace_shape.c: order as a shuffle leaves it, and time ---- */
#define DT_TBINS 20 /* throughput over normalized time */
struct dt_wv {
	uint64_t v;
	double w;
};
/* At time t (ns since the first data arrival) the rate in flight changes
 * by dr (bytes/ns), and sum(rate x arrival) by drs; done bytes grow by
 * ddone (a request's bytes, at its reply). */
struct dt_step {
	double t, dr, drs, ddone;
};
/* A weighted sample of values (sorted in place by dt_ks). */
struct dt_sample {
	struct dt_wv *v;
	size_t n, cap;
};
struct dt_shape {
	/* Per visit (a thread turning to a file, or reading it from offset 0
	 * again): distinct files visited since the file's previous visit,
	 * UINT64_MAX for its first. */
	struct dt_sample reuse;
	double files_per_epoch; /* distinct files per complete epoch */
	uint64_t epochs;
	struct dt_sample runs; /* sequential runs: length, weight its bytes */
	struct dt_sample tp;   /* twentieth of the active span, weight its bytes */
	double rate;	       /* data bytes / active span (s) */
	double bytes;	       /* data bytes moved (reads and writes) */
	double span_ns;	       /* active span: first data arrival to last reply */
	/* Cumulative bytes over absolute time since the first data arrival,
	 * as steps of a sweep (each request's bytes spread over its time in
	 * service), sorted by t: see dt_cum_gap. */
	struct dt_step *steps;
	size_t nsteps;
	struct dt_sample ia;   /* gaps between data request arrivals (ns) */
	struct dt_sample conc; /* data requests in flight, weight the ns spent so */
};
int dt_shape_compute(const struct dl_trace_file *t, struct dt_shape *s);
void dt_shape_free(struct dt_shape *s);
/* Two-sample Kolmogorov-Smirnov distance in [0, 1]: the largest gap between
 * the two weighted cumulative distributions (0 when both are empty, 1 when
 * one is). Sorts both samples. */
double dt_ks(struct dt_sample *a, struct dt_sample *b);
/* The largest gap between the two runs' cumulative bytes at the same time
 * since each one's first data arrival (exact: both are piecewise linear),
 * over the larger of the two volumes: in [0, 1]. */
double dt_cum_gap(const struct dt_shape *a, const struct dt_shape *b);

/* ---- dlio_trace_out.c: CSV and human-readable output (JSON: dl_jw) ---- */
void dt_csv_str(FILE *fp, const char *s);
/* "4 KiB", "1.5 MiB": sizes for people. */
void dt_fmt_bytes(double b, char *buf, size_t len);
/* "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
void dt_fmt_ns(double ns, char *buf, size_t len);

/* ---- the subcommands ---- */
int dt_summary(int argc, char **argv);
int dt_export(int argc, char **argv);
int dt_compare(int argc, char **argv);
int dt_merge(int argc, char **argv);
/* Usage text of compare, with the method (also for the README). */
extern const char dt_compare_help[];

#endif
