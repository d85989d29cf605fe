/* Private interface between the files of pacer/. */
#ifndef DLIOFS_PACER_I_H
#define DLIOFS_PACER_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dliofs/pacer.h"

#define PACER_NS 1000000000ULL
#define PACER_DEFAULT_BURST (1ULL << 20)
#define PACER_DEFAULT_BLOCK (1ULL << 20)
#define PACER_DEFAULT_HIT_BW 10000000000ULL
#define PACER_DEFAULT_SHARE_WINDOW (200ULL * 1000000)
/* Residency metadata is ~32 bytes a block: 64M blocks is 2 GiB, the most
 * anyone should pay for an emulated cache. */
#define PACER_MAX_CACHE_BLOCKS (64ULL << 20)
#define PACER_MAX_QUEUE_DEPTH 65536U
#define PACER_MAX_EMPIRICAL_POINTS (16U << 20)

extern const char *const pacer_class_names[DL_OP__COUNT];
extern const char *const pacer_policy_names[4];
extern const char *const pacer_share_names[2];

/* ---- latency.c ---- */
/* Exact, in the largest unit that divides it: "30s", "150us", "1500ns". */
void pacer_fmt_time(uint64_t ns, char *buf, size_t len);
/* Parse "200us", "uniform(a,b)", "empirical(/path)"...; an empirical file is
 * loaded here. On error why says what was expected. */
int pacer_lat_parse(const char *s, struct dl_lat_model *out, char *why, size_t whylen);
void pacer_lat_format(const struct dl_lat_model *m, char *buf, size_t len);
int pacer_lat_copy(struct dl_lat_model *dst, const struct dl_lat_model *src);
void pacer_lat_free(struct dl_lat_model *m);
int pacer_lat_equal(const struct dl_lat_model *a, const struct dl_lat_model *b);
int pacer_lat_check(const struct dl_lat_model *m, char *why, size_t whylen);
/* Draw number i of stream key: a pure function of (model, key, i). */
uint64_t pacer_lat_sample(const struct dl_lat_model *m, uint64_t key, uint64_t i);

/* The value of the distribution at quantile u in [0, 1): the same u gives
 * comonotone draws from two distributions (latency_by_size interpolates
 * between them quantile by quantile). */
uint64_t pacer_lat_quantile(const struct dl_lat_model *m, double u);

/* ---- curves.c: latency by size and bandwidth by concurrency ---- */
int pacer_sizes_copy(struct dl_lat_sizes *dst, const struct dl_lat_sizes *src);
void pacer_sizes_free(struct dl_lat_sizes *t);
int pacer_sizes_equal(const struct dl_lat_sizes *a, const struct dl_lat_sizes *b);
/* Set the point at size to *lat (moved in: *lat is left empty), or remove
 * it (lat NULL). -ENOSPC: the table is full; -ENOMEM. */
int pacer_sizes_put(struct dl_lat_sizes *t, uint64_t size, struct dl_lat_model *lat);
int pacer_sizes_check(const struct dl_lat_sizes *t, char *why, size_t whylen);
/* As a YAML flow mapping: {4KiB: 200us, 1MiB: "lognormal(1ms, 5ms)"}. */
void pacer_sizes_format(const struct dl_lat_sizes *t, char *buf, size_t len);

int pacer_conc_copy(struct dl_conc_table *dst, const struct dl_conc_table *src);
void pacer_conc_free(struct dl_conc_table *t);
int pacer_conc_equal(const struct dl_conc_table *a, const struct dl_conc_table *b);
/* Set the point (size, k) to bw; bw 0 removes the point, k 0 the row. */
int pacer_conc_put(struct dl_conc_table *t, uint64_t size, uint32_t k, uint64_t bw);
int pacer_conc_check(const struct dl_conc_table *t, char *why, size_t whylen);
void pacer_conc_format(const struct dl_conc_table *t, char *buf, size_t len);

/* The latency draw i of stream key for a request of len bytes: from
 * latency_by_size when the model has one and len > 0, else `latency`. */
uint64_t pacer_dev_latency(const struct dl_dev_model *m, uint64_t key, uint64_t i, uint64_t len);
/* How much longer a request of len bytes takes when it starts with k
 * requests of its class in service (itself included): k bw(1) / bw(k),
 * 1 without a table. */
double pacer_conc_factor(const struct dl_conc_table *t, uint64_t len, uint32_t k);

/* ---- options.c helpers used by the model ---- */
/* Number of whole cache blocks a configuration holds (size / block). */
uint64_t pacer_cache_blocks(const struct dl_cache_cfg *c);

/* ---- cache.c: residency metadata; the caller serializes access ---- */
struct pacer_cache;
int pacer_cache_new(const struct dl_cache_cfg *cfg, struct pacer_cache **out);
void pacer_cache_free(struct pacer_cache *c);
/* Bytes of [off, off + len) of file (size bytes long; 0: unknown) that are
 * resident; then the blocks of the range are used (made resident, or most
 * recent) as the policy says. */
uint64_t pacer_cache_access(struct pacer_cache *c, uint64_t file, uint64_t size, uint64_t off,
			    uint64_t len);
/* Use the blocks of a file of len bytes without counting anything. */
void pacer_cache_warm(struct pacer_cache *c, uint64_t file, uint64_t len);
void pacer_cache_clear(struct pacer_cache *c);
uint64_t pacer_cache_resident(const struct pacer_cache *c);	/* bytes (in units) */
uint64_t pacer_cache_entries(const struct pacer_cache *c);	/* blocks resident */
uint64_t pacer_cache_capacity(const struct pacer_cache *c);	/* bytes */

/* ---- devwork.c: what a device does for the requests (a buffered reader's
 * readahead, the inode cache); under the class lock ---- */
#define PACER_RUN_SLOTS 64
#define PACER_META_IO 4096ULL		/* a metadata device read: one block */
#define PACER_LISTING_KEY (1ULL << 63)	/* a listing's key in the inode cache: inode ^ it */
#define PACER_RUN_MAX (1ULL << 20)		/* the largest readahead window (one bio) */
#define PACER_RUN_KEEP (2ULL << 20)	/* a stream's pages kept: its last 2 MiB */
#define PACER_RUN_WINDOW_NS (1000ULL * 1000000) /* a stream's pages stay 1 s after its last read */
#define PACER_INODE_BITS 18
#define PACER_INODE_SLOTS (1ULL << PACER_INODE_BITS)

/* A file's stream of buffered reads: the bytes [lo, fetched) the device
 * has read for it, the last readahead window, when its last IO is done. */
struct pacer_run {
	uint64_t file, lo, fetched, window, due, last;
	uint32_t job;
	int live;
};
struct pacer_runs {
	struct pacer_run run[PACER_RUN_SLOTS];
};
/* A buffered read of [off, off + len) of file (size bytes; 0: unknown) by
 * job at now (each job's streams its own): 0 when the device already read it (*after: when those bytes are
 * there), else 1 with *fetch the bytes the device's IO moves (from *after
 * on, the read's first part is there already). The IO's due is then given
 * to pacer_ra_done. */
int pacer_ra_read(struct pacer_runs *t, uint64_t file, uint32_t job, uint64_t size, uint64_t off,
		  uint64_t len, uint64_t now, uint64_t *fetch, uint64_t *after);
/* job closed file: its stream is over (the next open reads from the
 * device again). */
void pacer_ra_close(struct pacer_runs *t, uint64_t file, uint32_t job);
void pacer_ra_done(struct pacer_runs *t, uint64_t file, uint32_t job, uint64_t due);
void pacer_runs_clear(struct pacer_runs *t);

struct pacer_inodes {
	uint64_t *seen; /* PACER_INODE_SLOTS, allocated at first use */
};
/* Was ino seen before (and not evicted)? It is seen from now on. 0 is no
 * inode (never seen). */
int pacer_inode_seen(struct pacer_inodes *c, uint64_t ino);
void pacer_inodes_clear(struct pacer_inodes *c);
void pacer_inodes_free(struct pacer_inodes *c);

/* ---- the device state a request goes through ---- */

/* A token bucket (device.c): tokens x 10^9 at time ref; with a refill
 * granularity, ref is the start of the current refill period. */
struct pacer_bucket {
	__int128 tok;  /* continuous: tokens x 10^9; periods: dispatched since ref, x 10^9 */
	uint64_t ref;  /* continuous: last update; periods: the slice start */
	uint64_t last; /* periods: the last dispatch */
	int primed;    /* 0: full (a fresh slice) at the next request */
};

/* Queue slots, IOPS spacing and the token bucket of one device: the class's
 * own (fcfs), or one job's share of it (fair). Under the class lock. */
/* A run of back-to-back contiguous reads of one stream (device.c): the
 * pieces the FUSE module cuts one application read into (1 MiB each), in
 * flight together, are one request to a device, as a block layer merges
 * them. */
#define PACER_MERGE_STREAMS 8
#define PACER_MERGE_MAX (4ULL << 20) /* a run's bytes at most without max_request */
/* A piece arrives at most this long after the run's last one: the kernel
 * sends one read's pieces together, while the next read comes after the
 * reply, which the mount may send before its due time (--fuse-overhead and
 * the copy): that read is a request of its own, as on a device. */
#define PACER_MERGE_GAP_NS 50000ULL
struct pacer_merge {
	uint64_t file, end, due, bytes, used, arrived;
	uint32_t job;
	unsigned lane;
	int live;
};

/* Which request a device model sees (for merging): 0 file: none. */
struct pacer_io {
	uint64_t file, off;
	uint32_t job;
};

struct pacer_dev {
	uint64_t *slots; /* min-heap of due times, nslots <= slots_cap */
	uint32_t nslots, slots_cap;
	uint64_t iops_next, iops_frac;
	uint64_t pipe_x, pipe_frac; /* token bucket: the time it is empty, + frac/B ns */
	int restart;		    /* bandwidth or iops changed: start empty at next request */
	/* The device model (device.c): the throttle's two buckets and the
	 * time the last request left the throttle (it is FIFO). */
	struct pacer_bucket bytes, ios;
	uint64_t thr_last;
	uint64_t lane_free[DL_PACER_MAX_LANES]; /* when each data path is free */
	struct pacer_merge merge[PACER_MERGE_STREAMS];
	uint64_t merge_clock; /* orders merge[] by use */
};

/* The limits a request meets (0: unlimited). */
struct pacer_rates {
	uint64_t bandwidth, burst, iops;
	uint32_t queue_depth;
	/* device model (device.c): 0 transfer means the plain model */
	uint64_t transfer, refill_ns, iops_burst, lanes, serial_ns;
	uint64_t max_request; /* a merged run's bytes at most (0: PACER_MERGE_MAX) */
};

/* What held a request back (for fair sharing's demand estimate). */
#define PACER_HELD_QUEUE 1u /* waited for a queue slot */
#define PACER_HELD_IOPS 2u  /* waited for its IOPS spacing */
#define PACER_HELD_BW 4u    /* waited for bandwidth tokens after its latency */
/* Its token bucket held less than half of its bytes when it was ready: it
 * came right behind its device's earlier requests (the plain model). A
 * request that finds its bucket refilled, after a pause, is not held back
 * by its share: a node reading now and then is not a node that wants more
 * (cluster.c). */
#define PACER_HELD_BUCKET 8u

/* Steps 1, 2 and 4 of the model (pacer.c's header) for a request arriving
 * at t whose latency draw is lat: returns the due time, *start is when it
 * left the queue, *held what delayed it (PACER_HELD_*). */
uint64_t pacer_device(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t, uint64_t lat,
		      uint64_t len, uint64_t *start, unsigned *held);
void pacer_slots_resize(struct pacer_dev *d, uint32_t q);
uint64_t pacer_slot_wait(struct pacer_dev *d, uint32_t depth, uint64_t s, unsigned *held);
/* The device model (rt->transfer > 0) for a request arriving at t with
 * fixed cost lat and service noise factor z: throttle buckets, then a
 * channel (a queue slot) for lat + len / transfer, both times z. Returns the
 * due time; *start, *held as pacer_device. */
uint64_t pacer_device_model(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
			    uint64_t lat, double z, uint64_t stall, uint64_t len, uint64_t *start,
			    unsigned *held);
/* The same for a read io (its file, offset and job; io->file 0: no merging)
 * that may go on a run of its stream: one that starts where a request of
 * its stream still in flight ends, within PACER_MERGE_GAP_NS of the run's
 * last piece (the next piece of one application read), joins that request
 * on the device: it passes the throttle as its
 * own (blk-throttle counts bios), then moves its bytes after the run's on
 * the run's channel and data path without a fixed cost of its own, up to
 * PACER_MERGE_MAX bytes a run. *merged: whether it did. */
uint64_t pacer_device_model_io(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
			       uint64_t lat, double z, uint64_t stall, uint64_t len,
			       const struct pacer_io *io, uint64_t *start, unsigned *held,
			       int *merged);
/* Only the throttle, for a request of len bytes arriving at t: when it
 * leaves it (its tokens taken, in arrival order with the others). The
 * device reads of metadata (pacer.c) take their tokens this way. */
uint64_t pacer_device_throttle_only(struct pacer_dev *d, const struct pacer_rates *rt, uint64_t t,
				    uint64_t len);
/* The stall of draw i: 0, or with probability 1 / stall_every an
 * exponential time of mean stall_ns (interference on a shared device). */
uint64_t pacer_stall(uint64_t stall_every, uint64_t stall_ns, uint64_t key, uint64_t i);
/* The noise factor of draw i (median 1, p99 noise_ppm / 10^6). */
double pacer_noise(uint64_t noise_ppm, uint64_t key, uint64_t i);
/* Token bucket primitives (rate per second, depth in units, refill period
 * g ns, 0: continuous): the earliest time >= t at which need units are
 * there (a need above depth waits for a full bucket), and taking them;
 * arrived (<= t) is when the request came to the throttle (a slice bucket
 * idle since a period before it starts a new slice). */
uint64_t pacer_bucket_when(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
			   uint64_t need, uint64_t t, uint64_t arrived);
void pacer_bucket_take(struct pacer_bucket *b, uint64_t rate, uint64_t depth, uint64_t g,
		       uint64_t need, uint64_t t, uint64_t arrived);
void pacer_heap_down(uint64_t *h, uint32_t n, uint32_t i);

/* ---- statistics ---- */
struct pacer_cls_stats {
	uint64_t ops, bytes;
	uint64_t nodev;					  /* answered without the device */
	uint64_t dev_ops;	/* IOs the device did: ops less those merged into a run */
	uint64_t merged;	/* reads with no IO of their own: inside what readahead
				 * fetched, or the next piece of a run (device.c) */
	uint64_t cached;	/* metadata ops answered from the inode cache */
	uint64_t meta_reads;	/* read: metadata's own device reads through its throttle */
	uint64_t in_flight, in_flight_max;
	uint64_t completed, early;			  /* early: replied before due */
	uint64_t cache_hits, cache_misses, cache_partial; /* requests */
	uint64_t hit_bytes, miss_bytes;
	struct dl_hist lat;	/* replied - submitted, as the client saw it */
	struct dl_hist service; /* model: latency + transfer */
	struct dl_hist queue;	/* model: wait for a queue slot and IOPS tokens */
	struct dl_hist late;	/* replied - due: the caller's timer error */
};

/* ---- jobs (jobs.c): per-job accounting and each job's share (share.c) ---- */
#define PACER_MAX_JOBS 64
#define PACER_JOB_OTHER PACER_MAX_JOBS /* the slot evicted jobs are folded into */
#define PACER_JOB_SLOTS (PACER_MAX_JOBS + 1)
#define PACER_JOB_NAME 160

/* One job in one class: statistics and its share of the device. Under the
 * class lock. */
struct pacer_job_cls {
	uint64_t ops, bytes, nodev;
	uint64_t hits, misses, partial, hit_bytes, miss_bytes;
	uint64_t queue_ns; /* time its requests waited in the model's queue */
	struct dl_hist lat;
	/* share: fair */
	uint32_t weight;
	uint64_t cap_bw, cap_iops;
	struct pacer_dev dev;
	struct pacer_rates rates; /* its allocation now */
	struct pacer_rates fair;  /* its weighted share of each limit: its floor */
	int rates_idle;		  /* rates computed while it had no request waiting */
	uint32_t outstanding;
	/* This half window [0] and the one before [1]: bytes and requests
	 * asked for, requests held back by each of its limits, and the most
	 * requests it had outstanding at once. */
	uint64_t wbytes[2], wops[2], wheld_q[2], wheld_iops[2], wheld_bw[2], wmaxlen[2];
	uint32_t peak[2];
	uint64_t active_since, last_ns; /* 0: not active */
	/* a cluster of mounts (cluster_pacer.c): its counts for the exchange,
	 * and its weight in this node's fair share (0: its rule's weight) */
	struct dl_cluster_count clc;
	double cl_w;
};

/* A job's identity. Under the jobs lock. */
struct pacer_job {
	uint32_t id; /* 0: a free slot */
	int named;
	char name[PACER_JOB_NAME];
	uint32_t procs, threads;
	int rule; /* share rule it matched, -1: none */
	uint64_t first_ns, last_ns;
	_Atomic uint32_t refs; /* requests between submit and complete */
};

struct pacer_jobs {
	pthread_mutex_t lock;
	struct pacer_job slot[PACER_JOB_SLOTS];
	uint64_t evicted; /* jobs folded into the "other" slot */
};

struct pacer_class;
struct dl_pacer;
/* The slot of job id (a new one if needed; PACER_JOB_OTHER when the table is
 * full of jobs with requests in flight), referenced until pacer_job_put.
 * *is_new: the job has no name yet. */
uint32_t pacer_job_get(struct dl_pacer *p, uint32_t id, uint64_t now, int *is_new);
void pacer_job_put(struct dl_pacer *p, uint32_t slot);
/* Fold slot's class statistics into "other" and clear it (class lock held). */
void pacer_job_cls_fold(struct pacer_job_cls *dst, struct pacer_job_cls *src);
void pacer_job_cls_reset(struct pacer_job_cls *jc);

/* ---- share.c: fair sharing ---- */
/* Bring the allocation of every active job up to date (class lock held);
 * the allocation of job js, whose request of len bytes arrives now, is
 * recomputed at once when it cannot serve that request (its rates date from
 * when it had nothing waiting, or would move len in more than a window).
 * *rt: the limits the request meets (never under its fair share when it is
 * the job's only request waiting). */
void pacer_share_update(struct pacer_job_cls *jobs, uint64_t *win_start, uint64_t *next_update,
			const struct dl_dev_model *m, const struct dl_share_cfg *sc, uint64_t now,
			uint32_t js, uint64_t len, struct pacer_rates *rt);
/* Bookkeeping of a job's requests (class lock held): arrival, a request
 * that goes to the device (len bytes: counted as demand before its job's
 * share is computed), what held it back (PACER_HELD_*), completion. */
void pacer_share_begin(struct pacer_job_cls *jc, uint64_t now);
void pacer_share_demand(struct pacer_job_cls *jobs, uint64_t *win_start,
			const struct dl_share_cfg *sc, uint32_t js, uint64_t len, uint64_t now);
void pacer_share_account(struct pacer_job_cls *jc, unsigned held);
void pacer_share_end(struct pacer_job_cls *jc);

/* ---- the pacer (pacer.c) ---- */
struct pacer_class {
	pthread_mutex_t lock;
	uint64_t key;	    /* latency stream */
	uint64_t noise_key; /* the device model's service noise stream */
	uint64_t stall_key; /* and its stalls' */
	uint64_t draws;
	/* Requests submitted to the device and not yet completed (replied):
	 * how many are in service when one arrives. A count of completions,
	 * not of due times: a reply sent ahead of its due time (to cover the
	 * kernel's share) has ended its request for the client. */
	uint32_t busy;
	uint32_t gen;	      /* bumped by every change of the class's model */
	struct pacer_dev dev; /* fcfs: the one device every job queues for */
	struct pacer_cls_stats st;
	struct pacer_job_cls *jobs; /* PACER_JOB_SLOTS */
	uint64_t win_start, next_share; /* share: demand window, next allocation */
	struct pacer_runs runs;		/* read: buffered readers' readahead */
	struct pacer_inodes inodes;	/* meta: the inodes the client has cached */
	uint64_t meta_ios_ppm;		/* meta: device reads owed, x 10^6 (device_ios) */
	/* A cluster of mounts: this node's counts for the exchange and its
	 * share of the cluster's limits (cl_on 0: the whole device). */
	struct dl_cluster_count clc;
	struct dl_cluster_cls_grant cl;
	int cl_on;
	uint64_t cl_window_ns;
	uint64_t cl_busy_at;	/* clc.busy_ns counts up to here */
	/* Its share of the queue slots (and data paths) is fractional: it
	 * gets the whole number above it, each held this much longer than
	 * its request (1: as long), so that they serve its fraction of the
	 * device's (set with the model a request meets). */
	double cl_slot_hold, cl_lane_hold;
	uint64_t cl_rate;	/* the bandwidth its latest request was timed at */
	/* The latest share that grew (dl_pacer_cluster_grant): at cl_boost_at
	 * the waiting times still ahead shrank by cl_boost_c; generation
	 * cl_boost_gen (a re-time under it moves a request by that alone). */
	uint64_t cl_boost_at;
	double cl_boost_c;
	uint32_t cl_boost_gen;
};

struct dl_pacer {
	pthread_mutex_t cfg_lock; /* serializes changes and reads of cfg */
	struct pacer_jobs jobs;	  /* taken before the locks below */
	pthread_mutex_t cache_lock;
	struct pacer_class cls[DL_OP__COUNT];
	/* Written only with every lock held; read under any class lock (the
	 * model) or the cache lock (cfg.cache). */
	struct dl_pacer_cfg cfg;
	uint64_t t0, cycle_ns;
	struct pacer_cache *cache; /* NULL: policy kernel, nothing emulated */
	uint64_t since_ns;	   /* statistics start, under jobs.lock; UINT64_MAX: at next event */
	pthread_mutex_t cl_lock;   /* the cluster's table below */
	struct pacer_cluster *cl;  /* NULL: not in a cluster */
};

/* ---- cluster_pacer.c: this node of a cluster of mounts ---- */
/* The cluster's table as last exchanged (stats.json's "cluster"). */
struct pacer_cluster {
	uint32_t rank;
	unsigned n;
	uint64_t exchanges, period_ns, at_ns;
	struct dl_cluster_node *table;
	struct dl_cluster_grant *grants;
};
/* The model a request of len bytes of class k meets on this node: m, or
 * in a cluster m with its limits scaled to the node's share (into *tmp).
 * Class lock held. */
const struct dl_dev_model *pacer_cluster_model(const struct pacer_class *k,
					       const struct dl_dev_model *m, uint64_t len,
					       struct dl_dev_model *tmp, double *slot_hold,
					       double *lane_hold);
/* The requests in the device that a request of class k meets: its node's
 * (busy, this one included) and, in a cluster, the other nodes'. */
uint32_t pacer_cluster_in_service(const struct pacer_class *k);
/* A request holds its queue slot (and data path) from start to due, longer
 * by k's holds in a cluster (merged: it went on a run, nothing to hold). */
void pacer_cluster_hold(const struct pacer_class *k, struct pacer_dev *d,
			const struct pacer_rates *rt, uint64_t start, uint64_t due, uint64_t len,
			int merged);
/* clc.busy_ns up to now (before busy changes; class lock held). */
void pacer_cluster_busy(struct pacer_class *k, uint64_t now);
/* A re-time after the node's share grew (k->cl_boost_gen is the class's
 * generation): the request's wait still ahead at cl_boost_at shrinks by
 * cl_boost_c, never before now or its ready time. Class lock held. */
void pacer_cluster_boost_retime(const struct pacer_class *k, int device_model,
				struct dl_pacer_result *res, uint64_t now);
/* Count a request that went to the device (class lock held). */
void pacer_cluster_count(struct pacer_class *k, struct pacer_job_cls *jc, uint64_t len,
			 unsigned held, int model);
struct dl_jw;
void pacer_cluster_stats(struct dl_pacer *p, struct dl_jw *w);
void pacer_cluster_free(struct pacer_cluster *cl);
/* The model of class c in force at t (phases). */
const struct dl_dev_model *pacer_model_at(const struct dl_pacer *p, int c, uint64_t t);

/* A consistent copy of everything stats.json shows. */
struct pacer_snapshot {
	uint64_t now_ns, since_ns;
	int enabled;
	char profile[64];
	struct dl_cache_cfg cache;
	struct dl_share_cfg share;
	uint64_t cache_resident, cache_capacity, cache_entries;
	unsigned nphases, phase;
	struct pacer_cls_stats cls[DL_OP__COUNT];
	uint64_t jobs_evicted;
	struct pacer_job job[PACER_JOB_SLOTS];
	struct pacer_job_cls jcls[PACER_JOB_SLOTS][DL_OP__COUNT];
};

struct dl_jw;
/* The snapshot's members into the object open in w. */
void pacer_stats_write(const struct pacer_snapshot *s, struct dl_jw *w);

#endif
