/* Statistics: the bounded per-client table and stats.json.
 *
 * What is counted: one op is one request as the daemon hands it to the pacer
 * (one FUSE read, write or metadata call; a 1 MiB application read split by
 * the kernel into 128 KiB FUSE reads counts 8). IOPS and bandwidth are ops and
 * bytes over the time since the statistics were last reset. Queue depth
 * (in_flight) is the number of requests between dl_pacer_submit and
 * dl_pacer_complete: what the device would see queued, including requests
 * still waiting for a queue slot. Requests that reach no device (closes,
 * refused calls, reads at or beyond the end of a file) are `nodev_ops`,
 * outside ops, bytes and the histograms. `device_ops` is what the device did
 * of the ops: a buffered reader's reads inside what its file's readahead
 * fetched take none (`merged_ops`), nor does metadata answered from the
 * inode cache (`inode_cache_hits`). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"
#include "pacer_i.h"

/* ---- stats.json ---- */

static void w_hist(struct dl_jw *w, const char *name, const struct dl_hist *h, int full)
{
	dl_jw_obj(w, name);
	dl_jw_u64(w, "count", h->count);
	if (full) {
		dl_jw_us(w, "min", h->count ? h->min : 0);
		dl_jw_us(w, "mean", h->count ? h->sum / h->count : 0);
	}
	dl_jw_us(w, "p50", dl_hist_quantile(h, 0.5));
	dl_jw_us(w, "p90", dl_hist_quantile(h, 0.9));
	dl_jw_us(w, "p99", dl_hist_quantile(h, 0.99));
	dl_jw_us(w, "p99.9", dl_hist_quantile(h, 0.999));
	dl_jw_us(w, "max", h->max);
	dl_jw_end(w);
}

static void w_cache(struct dl_jw *w, uint64_t hits, uint64_t misses, uint64_t partial,
		    uint64_t hit_bytes, uint64_t miss_bytes)
{
	dl_jw_obj(w, "cache");
	dl_jw_u64(w, "hits", hits);
	dl_jw_u64(w, "misses", misses);
	dl_jw_u64(w, "partial", partial);
	dl_jw_u64(w, "hit_bytes", hit_bytes);
	dl_jw_u64(w, "miss_bytes", miss_bytes);
	dl_jw_end(w);
}

static void w_class(struct dl_jw *w, const char *name, const struct pacer_cls_stats *s,
		    double secs)
{
	dl_jw_obj(w, name);
	dl_jw_u64(w, "ops", s->ops);
	dl_jw_u64(w, "bytes", s->bytes);
	dl_jw_u64(w, "nodev_ops", s->nodev);
	/* What the device did of the ops: IOs (a buffered reader's IO moves a
	 * readahead window), reads that window already held, metadata from
	 * the inode cache (pacer/devwork.c). */
	dl_jw_u64(w, "device_ops", s->dev_ops);
	dl_jw_u64(w, "merged_ops", s->merged);
	dl_jw_u64(w, "inode_cache_hits", s->cached);
	/* Reads the device did for metadata (meta.device_ios): they pass the
	 * read throttle beside device_ops, outside ops and bytes. */
	dl_jw_u64(w, "meta_reads", s->meta_reads);
	dl_jw_fixed(w, "iops", secs > 0 ? (double)s->ops / secs : 0.0, 3);
	dl_jw_fixed(w, "bandwidth_Bps", secs > 0 ? (double)s->bytes / secs : 0.0, 1);
	dl_jw_u64(w, "in_flight", s->in_flight);
	dl_jw_u64(w, "in_flight_max", s->in_flight_max);
	dl_jw_u64(w, "completed", s->completed);
	dl_jw_u64(w, "early_replies", s->early);
	w_cache(w, s->cache_hits, s->cache_misses, s->cache_partial, s->hit_bytes, s->miss_bytes);
	w_hist(w, "latency_us", &s->lat, 1);
	w_hist(w, "service_us", &s->service, 1);
	w_hist(w, "queue_us", &s->queue, 1);
	w_hist(w, "lateness_us", &s->late, 1);
	dl_jw_end(w);
}

/* One job: per class what it asked for and what it got. Its rates are over
 * its own span (first to last request), not the whole statistics period. */
static void w_job(struct dl_jw *w, const struct pacer_snapshot *s, unsigned j)
{
	const struct pacer_job *jb = &s->job[j];
	double span = jb->last_ns > jb->first_ns ? (double)(jb->last_ns - jb->first_ns) / 1e9 : 0;

	dl_jw_obj(w, NULL);
	dl_jw_u64(w, "id", jb->id);
	dl_jw_str(w, "name", j == PACER_JOB_OTHER ? "(other)" : jb->named ? jb->name : "(unnamed)");
	dl_jw_u64(w, "processes", jb->procs);
	dl_jw_u64(w, "threads", jb->threads);
	dl_jw_fixed(w, "first_s",
		    jb->first_ns > s->since_ns ? (double)(jb->first_ns - s->since_ns) / 1e9 : 0.0, 6);
	dl_jw_fixed(w, "last_s",
		    jb->last_ns > s->since_ns ? (double)(jb->last_ns - s->since_ns) / 1e9 : 0.0, 6);
	if (s->share.policy == DL_SHARE_FAIR)
		dl_jw_i64(w, "share_rule", jb->rule);
	dl_jw_obj(w, "classes");
	for (int c = 0; c < DL_OP__COUNT; c++) {
		const struct pacer_job_cls *jc = &s->jcls[j][c];

		dl_jw_obj(w, pacer_class_names[c]);
		dl_jw_u64(w, "ops", jc->ops);
		dl_jw_u64(w, "bytes", jc->bytes);
		dl_jw_u64(w, "nodev_ops", jc->nodev);
		dl_jw_fixed(w, "bandwidth_Bps", span > 0 ? (double)jc->bytes / span : 0.0, 1);
		dl_jw_us(w, "queue_wait_total_us", jc->queue_ns);
		w_cache(w, jc->hits, jc->misses, jc->partial, jc->hit_bytes, jc->miss_bytes);
		w_hist(w, "latency_us", &jc->lat, 0);
		if (s->share.policy == DL_SHARE_FAIR) {
			dl_jw_obj(w, "share");
			dl_jw_u64(w, "weight", jc->weight);
			dl_jw_u64(w, "bandwidth_Bps", jc->rates.bandwidth);
			dl_jw_u64(w, "iops", jc->rates.iops);
			dl_jw_u64(w, "queue_depth", jc->rates.queue_depth);
			dl_jw_end(w);
		}
		dl_jw_end(w);
	}
	dl_jw_end(w);
	dl_jw_end(w);
}

static int job_used(const struct pacer_snapshot *s, unsigned j)
{
	if (j != PACER_JOB_OTHER && s->job[j].id)
		return 1;
	for (int c = 0; c < DL_OP__COUNT; c++)
		if (s->jcls[j][c].ops || s->jcls[j][c].nodev)
			return 1;
	return 0;
}

/* What the cache policy means for the figures: said where people look. */
static const char *cache_meaning(enum dl_cache_policy p)
{
	switch (p) {
	case DL_CACHE_KERNEL:
		return "the kernel page cache of this machine serves repeated reads; only "
		       "what it misses reaches the storage model (`dliofs cache drop` empties "
		       "it for the files this mount served)";
	case DL_CACHE_NONE:
		return "no cache: every read reaches the storage model (page cache bypassed)";
	case DL_CACHE_LRU:
		return "an emulated client cache of the stated size (LRU) serves hits at "
		       "hit_bandwidth; misses reach the storage model (page cache bypassed)";
	case DL_CACHE_MINIO:
		return "an emulated client cache of the stated size (MinIO: filled once, never "
		       "evicted) serves hits at hit_bandwidth; misses reach the storage model "
		       "(page cache bypassed)";
	}
	return "?";
}

void pacer_stats_write(const struct pacer_snapshot *s, struct dl_jw *w)
{
	double secs = s->now_ns > s->since_ns ? (double)(s->now_ns - s->since_ns) / 1e9 : 0;

	dl_jw_fixed(w, "elapsed_s", secs, 6);
	dl_jw_bool(w, "enabled", s->enabled);
	dl_jw_str(w, "profile", s->profile);
	dl_jw_u64(w, "phases", s->nphases);
	dl_jw_u64(w, "phase", s->phase);
	dl_jw_str(w, "counting",
		  "one op per request as the daemon submits it; in_flight: submitted and not yet "
		  "completed; nodev_ops: answered without the device (close, refused calls)");
	dl_jw_obj(w, "classes");
	for (int c = 0; c < DL_OP__COUNT; c++)
		w_class(w, pacer_class_names[c], &s->cls[c], secs);
	dl_jw_end(w);
	dl_jw_obj(w, "cache");
	dl_jw_str(w, "policy",
		  (unsigned)s->cache.policy < 4 ? pacer_policy_names[s->cache.policy] : "?");
	dl_jw_str(w, "origin", s->cache.origin);
	dl_jw_str(w, "meaning", cache_meaning(s->cache.policy));
	dl_jw_u64(w, "size", s->cache.size);
	dl_jw_u64(w, "block", s->cache.block);
	dl_jw_u64(w, "unit", DL_CACHE_UNIT);
	dl_jw_u64(w, "hit_bandwidth_Bps", s->cache.hit_bandwidth);
	dl_jw_u64(w, "capacity_bytes", s->cache_capacity);
	dl_jw_u64(w, "resident_bytes", s->cache_resident);
	dl_jw_u64(w, "resident_blocks", s->cache_entries);
	dl_jw_end(w);
	dl_jw_obj(w, "share");
	dl_jw_str(w, "policy", pacer_share_names[s->share.policy == DL_SHARE_FAIR]);
	dl_jw_u64(w, "rules", s->share.nrules);
	dl_jw_end(w);
	dl_jw_arr(w, "jobs");
	for (unsigned j = 0; j < PACER_JOB_SLOTS; j++)
		if (job_used(s, j))
			w_job(w, s, j);
	dl_jw_end(w);
	dl_jw_u64(w, "jobs_folded", s->jobs_evicted);
}
