/* Private interface between the files of pacer/. */
#ifndef DLIOFS_PACER_I_H
#define DLIOFS_PACER_I_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dliofs/pacer.h"

#define PACER_NS 1000000000ULL
#define PACER_DEFAULT_BURST (1ULL << 20)
#define PACER_DEFAULT_BLOCK (1ULL << 20)
#define PACER_DEFAULT_HIT_BW 10000000000ULL
/* Residency metadata is ~32 bytes a block: 64M blocks is 2 GiB, the most
 * anyone should pay for an emulated cache. */
#define PACER_MAX_CACHE_BLOCKS (64ULL << 20)
#define PACER_MAX_QUEUE_DEPTH 65536U
#define PACER_MAX_EMPIRICAL_POINTS (16U << 20)
#define PACER_MAX_PIDS 256

extern const char *const pacer_class_names[DL_OP__COUNT];
extern const char *const pacer_policy_names[4];

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

/* ---- options.c helpers used by the model ---- */
/* Number of whole cache blocks a configuration holds (size / block). */
uint64_t pacer_cache_blocks(const struct dl_cache_cfg *c);

/* ---- cache.c: residency metadata; the caller serializes access ---- */
struct pacer_cache;
int pacer_cache_new(const struct dl_cache_cfg *cfg, struct pacer_cache **out);
void pacer_cache_free(struct pacer_cache *c);
/* Bytes of [off, off + len) of file that are resident; then the blocks of
 * the range are used (made resident, or most recent) as the policy says. */
uint64_t pacer_cache_access(struct pacer_cache *c, uint64_t file, uint64_t off, uint64_t len);
/* Use the blocks of [0, len) of file without counting anything. */
void pacer_cache_warm(struct pacer_cache *c, uint64_t file, uint64_t len);
void pacer_cache_clear(struct pacer_cache *c);
uint64_t pacer_cache_resident(const struct pacer_cache *c);
uint64_t pacer_cache_capacity(const struct pacer_cache *c);

/* ---- stats.c ---- */
struct pacer_cls_stats {
	uint64_t ops, bytes;
	uint64_t in_flight, in_flight_max;
	uint64_t completed, early;			  /* early: replied before due */
	uint64_t cache_hits, cache_misses, cache_partial; /* requests */
	uint64_t hit_bytes, miss_bytes;
	struct dl_hist lat;	/* replied - submitted, as the client saw it */
	struct dl_hist service; /* model: latency + transfer */
	struct dl_hist queue;	/* model: wait for a queue slot and IOPS tokens */
	struct dl_hist late;	/* replied - due: the caller's timer error */
};

struct pacer_pid {
	uint32_t pid;
	int32_t next;  /* hash chain, -1 ends */
	uint64_t seen; /* tick of last use, for eviction */
	uint64_t ops[DL_OP__COUNT], bytes[DL_OP__COUNT];
};

#define PACER_PID_BUCKETS (2 * PACER_MAX_PIDS)

/* Per-client accounting: bounded; when full the least recently seen pid is
 * folded into `other`, so totals always add up. */
struct pacer_pids {
	pthread_mutex_t lock;
	unsigned n;
	uint64_t tick, evicted;
	int32_t head[PACER_PID_BUCKETS];
	struct pacer_pid e[PACER_MAX_PIDS];
	struct pacer_pid other;
};

void pacer_pids_init(struct pacer_pids *t);
void pacer_pids_reset(struct pacer_pids *t); /* caller holds t->lock */
void pacer_pids_account(struct pacer_pids *t, uint32_t pid, enum dl_op_class cls, uint64_t bytes);

/* A consistent copy of everything stats.json shows. */
struct pacer_snapshot {
	uint64_t now_ns, since_ns;
	int enabled;
	char profile[64];
	struct dl_cache_cfg cache;
	uint64_t cache_resident, cache_capacity;
	unsigned nphases, phase;
	struct pacer_cls_stats cls[DL_OP__COUNT];
	struct pacer_pids pids;
};

int pacer_stats_format(const struct pacer_snapshot *s, char **buf, size_t *len);

#endif
