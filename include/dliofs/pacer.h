/* pacer/: the storage model. A pure library: time is passed in (nanoseconds on
 * a monotonic clock), nothing sleeps, so it is tested without FUSE and without
 * waiting. fs/ asks it when each request is due and replies then. */
#ifndef DLIOFS_PACER_H
#define DLIOFS_PACER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dliofs/hist.h"

enum dl_op_class { DL_OP_READ, DL_OP_WRITE, DL_OP_META, DL_OP__COUNT };

enum dl_lat_kind {
	DL_LAT_NONE,		/* no added latency */
	DL_LAT_CONST,		/* a */
	DL_LAT_UNIFORM,		/* [a, b] */
	DL_LAT_NORMAL,		/* mean a, stdev b, clipped at 0 */
	DL_LAT_LOGNORMAL,	/* median a, p99 b */
	DL_LAT_EXP,		/* mean a */
	DL_LAT_EMPIRICAL,	/* values[] with cumulative probabilities cdf[] (from a file) */
};

struct dl_lat_model {
	enum dl_lat_kind kind;
	uint64_t a_ns, b_ns;
	unsigned n;		/* empirical: number of points */
	uint64_t *values_ns;	/* empirical: owned, sorted ascending */
	double *cdf;		/* empirical: owned, cdf[n-1] == 1 */
	char source[256];	/* empirical: the file it came from (for dumps) */
};

/* Latency of a request alone on the device, by its size (latency_by_size):
 * points sorted by size, each a distribution. */
#define DL_PACER_MAX_SIZES 16
struct dl_size_lat {
	uint64_t size;
	struct dl_lat_model lat;
};
struct dl_lat_sizes {
	unsigned n;
	struct dl_size_lat *pt; /* owned */
};

/* Bytes/s a device delivers with k requests of one size in service
 * (bandwidth_by_concurrency): rows sorted by size, points by k. */
#define DL_PACER_MAX_CONC 16
struct dl_conc_row {
	uint64_t size;
	unsigned n;
	uint32_t k[DL_PACER_MAX_CONC];
	uint64_t bw[DL_PACER_MAX_CONC];
};
struct dl_conc_table {
	unsigned n;
	struct dl_conc_row *row; /* owned */
};

/* The longest one request may wait for its own service: a latency draw is
 * capped here, and a setting is refused whose latency has its 99th
 * percentile above it, or whose bandwidth (a class's, or a share rule's cap)
 * moves one request of DL_PACER_MAX_REQ bytes (FUSE's largest) slower
 * (below DL_PACER_MIN_BANDWIDTH). Queueing behind other requests comes on
 * top: that wait ends when theirs do. */
#define DL_PACER_MAX_WAIT_NS (60ULL * 1000000000ULL)
#define DL_PACER_MAX_REQ (1ULL << 20)
#define DL_PACER_MIN_BANDWIDTH \
	((DL_PACER_MAX_REQ * 1000000000ULL + DL_PACER_MAX_WAIT_NS - 1) / DL_PACER_MAX_WAIT_NS)

/* One operation class of a device. 0 means "no limit" for every limit. */
struct dl_dev_model {
	uint64_t bandwidth;	/* bytes/s shared by all requests of the class */
	uint64_t burst;		/* token-bucket depth in bytes (0: 1 MiB) */
	uint64_t iops;		/* requests/s */
	uint32_t queue_depth;	/* requests in service at once; the rest wait in order */
	struct dl_lat_model latency;
	/* Measured devices (dliofs profile): a request's latency by its size
	 * instead of `latency` (for requests with data), stretched by how many
	 * requests are in service (pacer/curves.c has the rules). */
	struct dl_lat_sizes lat_size;
	struct dl_conc_table conc;
	/* Metadata of an inode the client has read before (its inode cache):
	 * with this set, `latency` is a first touch's cost and this a
	 * repeated one's (pacer/devwork.c). */
	struct dl_lat_model cached_latency;
	/* A fitted device (what `dliofs profile` writes; pacer/device.c):
	 * transfer > 0 turns it on, and the keys above then mean parts of a
	 * device behind a throttle:
	 *   throttle: a byte bucket (bandwidth, burst) and an IO bucket (iops,
	 *     iops_burst), both refilled every `refill` (0: continuously);
	 *   device: queue_depth channels; a request holds one for its service:
	 *     its fixed cost (latency), then `serial` and its bytes at
	 *     `transfer` on one of `lanes` data paths; a noise draw multiplies
	 *     the fixed cost and serial. */
	uint64_t transfer;	/* bytes/s one request moves at on the device (0: no device model) */
	uint64_t refill_ns;	/* buckets refill in lumps every refill_ns (0: continuously) */
	uint64_t iops_burst;	/* IO bucket depth in requests (0: 1, or iops x refill) */
	uint64_t noise_ppm;	/* p99 / p50 of the service noise x 10^6 (0 or 10^6: none) */
	uint64_t lanes;		/* requests moving bytes at once, each at transfer (0: all) */
	uint64_t serial_ns;	/* per request on its data path, before its bytes: the part
				 * of the fixed cost requests pay one at a time (per lane) */
	uint64_t stall_every;	/* one request in this many stalls (0: none) ... */
	uint64_t stall_ns;	/* ... for an exponential time of this mean, on its channel */
	/* The most bytes one device request carries: the pieces of one read
	 * that FUSE splits (1 MiB each) merge up to this, as a block layer
	 * merges bios up to the disk's max_sectors_kb (0: 4 MiB). */
	uint64_t max_request;
	/* meta: the device reads (inode and directory blocks) one request
	 * for an inode not in the client's cache costs, x 10^6: they take
	 * their tokens from the read class's throttle (pacer.c). */
	uint64_t device_ios_ppm;
	/* meta: the same for the first listing of a directory (its blocks). */
	uint64_t readdir_ios_ppm;
};
#define DL_PACER_MAX_LANES 64

#define DL_PACER_MAX_PHASES 16

/* A time-varying profile: phases cycle; each holds a full model set. */
struct dl_phase {
	uint64_t duration_ns;
	struct dl_dev_model m[DL_OP__COUNT];
};

enum dl_cache_policy {
	DL_CACHE_KERNEL,	/* no emulation: the kernel's page cache as is */
	DL_CACHE_NONE,		/* emulated, nothing ever cached: every read hits the device */
	DL_CACHE_LRU,
	DL_CACHE_MINIO,		/* CoorDL's: fill once, never evict */
};

/* Residency is counted in bytes: a block holds what the file has in it,
 * rounded up to this unit (a page), so a 110 kB file costs 112 KiB of the
 * cache, not a whole 1 MiB block. */
#define DL_CACHE_UNIT 4096ULL

struct dl_cache_cfg {
	enum dl_cache_policy policy;
	uint64_t size;		/* bytes of emulated cache (residency metadata only) */
	uint64_t block;		/* bytes per cache block (default 1 MiB) */
	uint64_t hit_bandwidth;	/* bytes/s of a hit (memory-copy speed; default 10 GB/s) */
	char origin[96];	/* where the policy came from ("default ...", "profile
				 * nfs-10g", "config", "dliofs set"): said in dumps and stats */
};

/* How jobs share a device (`share:` in the pacer section). */
enum dl_share_policy {
	DL_SHARE_FCFS,		/* one queue, first come first served (a real device) */
	DL_SHARE_FAIR,		/* each active job gets its weighted share of every limit */
};

#define DL_PACER_MAX_RULES 16

/* Per-job weight and caps, for jobs whose name contains `match`. */
struct dl_share_rule {
	char match[64];
	uint64_t weight;	/* relative share (1 .. 1000000, default 1) */
	uint64_t bandwidth;	/* cap in bytes/s per class (0: none) */
	uint64_t iops;		/* cap in requests/s per class (0: none) */
};

struct dl_share_cfg {
	enum dl_share_policy policy;
	uint64_t window_ns;	/* demand and activity are measured over this (default 200 ms) */
	unsigned nrules;
	struct dl_share_rule rules[DL_PACER_MAX_RULES];
};

struct dl_pacer_cfg {
	int enabled;		/* 0: no shaping (stats are still kept) */
	char profile[64];	/* storage profile it was built from, "" if none */
	struct dl_dev_model m[DL_OP__COUNT];
	unsigned nphases;	/* 0: constant model m[] */
	struct dl_phase phases[DL_PACER_MAX_PHASES];
	struct dl_cache_cfg cache;
	struct dl_share_cfg share;
	/* The block size files report (st_blksize; 0: 1 MiB): buffered readers
	 * size their reads by it (Python's open() buffer, stdio), and so how
	 * many IOs a small file costs them. A profile states its storage's. */
	uint64_t blksize;
};

/* ---- configuration (pacer/options.c): one options table drives the YAML
 * section, live `dliofs set` writes and the dump. Keys are dotted:
 *   read.bandwidth=500MB/s  read.burst=4MiB  read.iops=20k  read.queue_depth=32
 *   read.latency=200us | uniform(100us,300us) | normal(1ms,100us) |
 *                lognormal(1ms,10ms) (median, p99) | exponential(1ms) | empirical(/path)
 *   read.latency_by_size.4KiB=LATENCY (a point; read.latency_by_size=none clears),
 *   read.bandwidth_by_concurrency.1MiB.4=2GB/s (a point; .1MiB=none drops the row),
 *   (same for write.* and meta.*), phases.N.duration=30s, phases.N.read.bandwidth=...,
 *   cache.policy=lru|minio|none|kernel, cache.size=200GiB, cache.block=1MiB,
 *   cache.hit_bandwidth=10GB/s, enabled=true|false,
 *   share.policy=fcfs|fair, share.window=200ms, share.jobs.N.{match,weight,bandwidth,iops}
 * Returns 0, or -EINVAL with a message naming the key in err. */
void dl_pacer_cfg_init(struct dl_pacer_cfg *cfg);
int dl_pacer_cfg_set(struct dl_pacer_cfg *cfg, const char *key, const char *value, char *err,
		     size_t errlen);
/* What a key of dl_pacer_cfg_set takes, for tools that vary one (dlio-whatif's
 * axes): a rate, a time (a latency's plain value too; a table point of
 * latency_by_size), a size, a count (queue depths, weights), or anything
 * else (policies, names, booleans, factors, counts of phases or rules).
 * 0, or -EINVAL for an unknown key. */
enum dl_pacer_kind { DL_PACER_K_RATE, DL_PACER_K_TIME, DL_PACER_K_SIZE, DL_PACER_K_COUNT, DL_PACER_K_OTHER };
int dl_pacer_key_kind(const char *key, enum dl_pacer_kind *kind);
/* Validate cross-key rules (e.g. lognormal p99 >= median); message in err. */
int dl_pacer_cfg_check(const struct dl_pacer_cfg *cfg, char *err, size_t errlen);
int dl_pacer_cfg_copy(struct dl_pacer_cfg *dst, const struct dl_pacer_cfg *src);
void dl_pacer_cfg_free(struct dl_pacer_cfg *cfg);	/* frees empirical tables */
/* Print as YAML mapping lines with the given indent (every key, effective values). */
void dl_pacer_cfg_dump(const struct dl_pacer_cfg *cfg, FILE *out, int indent);
/* List the option keys with a one-line help each (for --help and error hints). */
void dl_pacer_cfg_help(FILE *out);

/* The latency distributions (pacer/latency.c, one table): their forms as
 * written ("a time (200us), constant(value), uniform(min, max), ..."), and
 * for the YAML mapping form {dist: NAME, ARG: value} the position (0 or 1)
 * of ARG in NAME's arguments: -ENOENT for no such distribution, -EINVAL for
 * no such argument, with a message in why. */
void dl_lat_forms(char *buf, size_t len);
int dl_lat_dist_arg(const char *dist, const char *arg, char *why, size_t whylen);

/* ---- the model (pacer/pacer.c, pacer/cache.c, pacer/stats.c) ---- */
struct dl_pacer;

/* The request reaches no device: a close, a flush of a clean file, a refused
 * call, a read at or beyond the end of its file (len 0: a file system answers
 * it from the inode's size). It is counted (per class, per job) but takes no
 * time. */
#define DL_PREQ_NODEV 1u
/* A read call of a reader that is not O_DIRECT, reaching the model as made
 * (the mount's page cache bypassed): a device would see it through the page
 * cache's readahead, which the pacer emulates (pacer/devwork.c). */
#define DL_PREQ_BUFFERED 2u
/* Metadata: the first part of a directory listing (readdir from its start).
 * Its blocks are read once (then the kernel has them), apart from the
 * directory's inode: the inode cache keys a listing on its own, and a
 * first listing owes meta.readdir_ios reads. */
#define DL_PREQ_LISTING 4u

struct dl_pacer_req {
	enum dl_op_class cls;
	uint64_t file_id;	/* identifies the file for the emulated cache */
	uint64_t off, len;	/* byte range (len 0 for metadata) */
	uint32_t job;		/* the client's job (0: none known), for per-job accounting */
	uint32_t flags;		/* DL_PREQ_* */
	uint64_t file_size;	/* the file's size, for the cache's byte accounting (0: unknown) */
	uint64_t inode;		/* metadata: the inode it reads (a lookup: the one found); 0:
				 * not known, always a first touch */
};

/* The job is new to the pacer: tell it the job's name (dl_pacer_job_info). */
#define DL_PRES_NEW_JOB 1u
/* The request is in service until dl_pacer_complete (bandwidth_by_concurrency
 * counts it); internal, kept in the result for the completion. */
#define DL_PRES_BUSY 2u

struct dl_pacer_result {
	uint64_t due_ns;	/* when to reply (>= submission time) */
	uint64_t queue_ns;	/* time spent waiting for a queue slot / tokens */
	uint64_t service_ns;	/* latency + transfer */
	uint64_t hit_bytes;	/* served by the emulated cache */
	uint64_t miss_bytes;	/* went through the device model */
	uint32_t slot;		/* the job's accounting slot (for dl_pacer_complete) */
	uint32_t flags;		/* DL_PRES_* */
	uint32_t gen;		/* the class's model generation it was timed under */
	uint64_t ready_ns;	/* its data ready (the plain model: start + latency): a
				 * re-time never answers it before */
};

int dl_pacer_new(const struct dl_pacer_cfg *cfg, uint64_t now_ns, uint64_t seed,
		 struct dl_pacer **out);
void dl_pacer_free(struct dl_pacer *p);
/* Thread-safe. Decide when the request completes. */
int dl_pacer_submit(struct dl_pacer *p, const struct dl_pacer_req *r, uint64_t now_ns,
		    struct dl_pacer_result *res);
/* Thread-safe. Record the request as replied at replied_ns (latency and
 * timer-lateness statistics, queue depth bookkeeping). */
void dl_pacer_complete(struct dl_pacer *p, const struct dl_pacer_req *r,
		       const struct dl_pacer_result *res, uint64_t replied_ns);
/* Thread-safe. After a live change, a request still waiting for its reply
 * (submitted, due later than now) is timed again under the new model: the
 * caller re-times every waiting request in order of due time, which puts
 * them back in the new model's queue, bucket and IOPS spacing (a change
 * empties those). res->due_ns only ever moves earlier (a request is never
 * answered later than it was once due); returns 1 when it moved, 0 when the
 * request's class has not changed since it was timed. */
int dl_pacer_retime(struct dl_pacer *p, const struct dl_pacer_req *r,
		    struct dl_pacer_result *res, uint64_t now_ns);
/* Live change (same keys as dl_pacer_cfg_set); all-or-nothing. */
int dl_pacer_set(struct dl_pacer *p, const char *key, const char *value, char *err,
		 size_t errlen);
/* Install a whole configuration at once (a transaction of several keys);
 * it is checked first: -EINVAL with the reason in err changes nothing. */
int dl_pacer_set_cfg(struct dl_pacer *p, const struct dl_pacer_cfg *cfg, char *err,
		     size_t errlen);
/* Current effective configuration (copy; free with dl_pacer_cfg_free). */
int dl_pacer_get_cfg(struct dl_pacer *p, struct dl_pacer_cfg *out);
/* The cache policy in force now (fs/ decides per open whether the kernel's
 * page cache may keep a file's pages). */
enum dl_cache_policy dl_pacer_cache_policy(struct dl_pacer *p);
/* The block size files report now (blksize, 1 MiB when unset). */
uint64_t dl_pacer_blksize(struct dl_pacer *p);
/* Say where the cache policy in force came from (see dl_cache_cfg.origin). */
void dl_pacer_cache_origin(struct dl_pacer *p, const char *origin);
/* Forget what the emulated client caches hold: data blocks, and the inodes
 * metadata requests have read (meta.cached_latency). */
void dl_pacer_cache_drop(struct dl_pacer *p);
/* Mark [0, len) of file_id resident (subject to the policy and size).
 * -EINVAL when no emulated cache can hold anything (policy kernel or none). */
int dl_pacer_cache_warm(struct dl_pacer *p, uint64_t file_id, uint64_t len);
/* Name a job (after DL_PRES_NEW_JOB) and say how many processes and threads
 * it has been seen with; applies the share rule its name matches. */
void dl_pacer_job_info(struct dl_pacer *p, uint32_t job, const char *name, uint32_t procs,
		       uint32_t threads);
/* stats.json's pacer members (per class ops, bytes, latency p50/p90/p99/p99.9
 * from a log-linear histogram, queue depth now/max, cache hits/misses, timer
 * lateness, per job), written into the JSON object open in w (dliofs/json.h). */
struct dl_jw;
int dl_pacer_stats_write(struct dl_pacer *p, uint64_t now_ns, struct dl_jw *w);
/* The same as a whole document in a malloc'd buffer. */
int dl_pacer_stats_json(struct dl_pacer *p, uint64_t now_ns, char **buf, size_t *len);
void dl_pacer_stats_reset(struct dl_pacer *p);

/* ---- a cluster of mounts: one storage model shared by N pacers
 * (pacer/cluster.c). Each node's pacer decides every request alone,
 * against its share of the cluster's limits; an exchange (fs/cluster.c)
 * samples each node's counts every period, gathers them on every node and
 * runs the same allocation there, so every node computes every node's
 * share and takes its own. Shares are fractions of the cluster's limits,
 * so they hold across phases of a profile. ---- */
#define DL_CLUSTER_MAX_NODES 1024
#define DL_CLUSTER_JOBS 8	/* jobs a node reports (its busiest over the window) */
#define DL_CLUSTER_NAME 48

/* Cumulative counts of one class, of a node or of one job on it. */
struct dl_cluster_count {
	uint64_t ops, bytes;			/* requests that went to the device, their bytes */
	uint64_t held_bw, held_iops, held_q;	/* of those, held back by the node's own limits */
	uint32_t outstanding, peak;		/* in the device now; most at once since the last sample */
	uint64_t busy_ns;			/* requests in the device times ns (their mean: / time) */
};

#define DL_CLUSTER_SAMPLE_JOBS 65
struct dl_cluster_job_count {
	uint64_t key;		/* a job's identity across nodes: a hash of its name */
	uint32_t weight;	/* its share rule's weight (1 without one) */
	char name[DL_CLUSTER_NAME];
	struct dl_cluster_count c[DL_OP__COUNT];
};

/* What dl_pacer_cluster_sample reads off a node's pacer at now_ns. */
struct dl_cluster_sample {
	uint64_t now_ns;
	enum dl_share_policy policy;
	struct dl_cluster_count cls[DL_OP__COUNT];
	/* the cluster's limits now (every node runs the same model) */
	uint64_t bandwidth[DL_OP__COUNT], iops[DL_OP__COUNT];
	uint32_t queue_depth[DL_OP__COUNT];
	unsigned njobs;
	struct dl_cluster_job_count job[DL_CLUSTER_SAMPLE_JOBS];
};

/* What a node (or one job on it) wants of one class's limits, as fractions
 * of the cluster's: INFINITY is all it can get (it was held back by its
 * share in at least half of its requests), 0 nothing (idle); otherwise
 * 1.1 x what it used. */
struct dl_cluster_want {
	double bw, iops, q;
	double used_bps, used_iops;	/* what it moved over the window (the table) */
	double peak;			/* most requests it had in the device at once */
	double in_flight;		/* requests it had in the device, on average */
};
struct dl_cluster_job {
	uint64_t key;
	uint32_t weight, pad;
	char name[DL_CLUSTER_NAME];
	struct dl_cluster_want w[DL_OP__COUNT];
};
/* One node's record in the exchange: plain bytes, the same layout on every
 * node (one build of dliofs on one architecture). */
struct dl_cluster_node {
	uint32_t rank, leaving, njobs;
	uint32_t policy;	/* its share.policy (the lowest rank's is the cluster's) */
	struct dl_cluster_want w[DL_OP__COUNT];
	struct dl_cluster_job job[DL_CLUSTER_JOBS];
};

/* A node's share of the cluster (dl_cluster_allocate). */
struct dl_cluster_cls_grant {
	double bw, iops, q;	/* fractions of the cluster's bandwidth, IOPS and queue slots */
	double floor;		/* its fair fraction (1/N): what a request gets at least when
				 * the node was idle in the class when this was computed, or
				 * when its share would take longer than a window to move it */
	int idle;
	double others;		/* requests the other nodes had in the device over the
				 * window, on average: a request's contention is the
				 * cluster's (its node's in service plus these) */
	double dev;		/* its fraction of the cluster's requests in the device
				 * (their means): its share of the device model's data
				 * paths, which serve requests in turn */
};
struct dl_cluster_grant {
	struct dl_cluster_cls_grant c[DL_OP__COUNT];
	/* share.policy fair: each reported job's allocation (its weight in the
	 * node's own fair share, so that the node splits its share as the
	 * cluster did), and the weight of a job not reported (a newcomer) */
	unsigned njobs;
	struct {
		uint64_t key;
		double w[DL_OP__COUNT];
	} job[DL_CLUSTER_JOBS];
	double job_floor[DL_OP__COUNT];
};

/* A node's record from three samples of its pacer: its demand over
 * [old, cur] (the window), its peak requests in the device over
 * [mid, cur]. Its busiest DL_CLUSTER_JOBS jobs go with it. */
void dl_cluster_node_make(const struct dl_cluster_sample *old, const struct dl_cluster_sample *mid,
			  const struct dl_cluster_sample *cur, uint32_t rank,
			  struct dl_cluster_node *out);
/* Every node's share from every node's record (n of them): with fcfs the
 * nodes' demands are met in proportion to the requests they keep in the
 * device (a shared FIFO queue serves each in proportion to what it has
 * queued); with fair, each job (by name, across nodes) gets its weighted
 * max-min share and splits it among its nodes by their demand. What no one
 * wants is spread over the active nodes. The fractions of each limit add
 * up to 1 (0 when no node is active). -EINVAL for n 0 or above the limit. */
int dl_cluster_allocate(const struct dl_cluster_node *nodes, unsigned n, enum dl_share_policy pol,
			struct dl_cluster_grant *grants);

/* The node's counts now (class locks, one at a time); the peaks restart. */
int dl_pacer_cluster_sample(struct dl_pacer *p, uint64_t now_ns, struct dl_cluster_sample *s);
/* Install this node's share at now_ns (from the next request on) and keep
 * the cluster's table (n nodes, their grants) for stats.json; rank is this
 * node's. Before the first call the pacer has the whole device. Returns 1
 * when the node was idle when its previous share was computed (its
 * requests since were timed at its fair fraction: a node that became busy
 * after idle time) and its bandwidth share grew by DL_CLUSTER_BOOST or
 * more while it had requests waiting for it: the caller
 * then re-times its waiting requests (dl_pacer_retime, in order of due
 * time), whose remaining wait goes at the new rate; else 0, or -errno. */
#define DL_CLUSTER_BOOST 1.5
int dl_pacer_cluster_grant(struct dl_pacer *p, uint32_t rank, const struct dl_cluster_node *table,
			   const struct dl_cluster_grant *grants, unsigned n, uint64_t exchanges,
			   uint64_t period_ns, uint64_t window_ns, uint64_t now_ns);

/* ---- a device model in virtual time (pacer/sim.c, pacer/fit.c) ---- */

/* What one measurement saw (or a simulation of it predicts): `clients`
 * each with one request of `size` in flight for time_ns, the first warm_ns
 * not counted. */
struct dl_fit_point {
	uint64_t size;
	uint32_t clients;
	uint64_t time_ns, warm_ns;
	double mb_s, iops;
	uint64_t p10_ns, p50_ns, p90_ns, p99_ns;
};

/* Run the measurement pattern of pt (size, clients, time_ns, warm_ns) on
 * class cls of cfg in virtual time, closed loop (each client sends its next
 * request when the last one is due), and fill pt's figures. 0 or -errno. */
int dl_pacer_sim_point(const struct dl_pacer_cfg *cfg, enum dl_op_class cls, uint64_t seed,
		       struct dl_fit_point *pt);

/* Fit a device model (transfer, latency, noise, queue_depth, the buckets)
 * to measured points of one class (pacer/fit.c); m's other keys are left.
 * why gets a line on what was found (throttles, their refill). 0 or -errno. */
int dl_pacer_fit(const struct dl_fit_point *pts, unsigned n, struct dl_dev_model *m, char *why,
		 size_t whylen);

#endif
