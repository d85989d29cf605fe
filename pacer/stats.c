/* Statistics: the bounded per-client table and stats.json.
 *
 * What is counted: one op is one request as the daemon hands it to the pacer
 * (one FUSE read, write or metadata call; a 1 MiB application read split by
 * the kernel into 128 KiB FUSE reads counts 8). IOPS and bandwidth are ops and
 * bytes over the time since the statistics were last reset. Queue depth
 * (in_flight) is the number of requests between dl_pacer_submit and
 * dl_pacer_complete: what the device would see queued, including requests
 * still waiting for a queue slot. Requests that reach no device (closes,
 * refused calls) are `nodev_ops`, outside ops, bytes and the histograms. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pacer_i.h"

/* ---- stats.json ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Microseconds with three decimals: exact to the nanosecond. */
static void json_us(FILE *f, const char *name, uint64_t ns)
{
	fprintf(f, "\"%s\": %" PRIu64 ".%03u", name, ns / 1000, (unsigned)(ns % 1000));
}

static void json_hist(FILE *f, const char *name, const struct dl_hist *h)
{
	fprintf(f, "\"%s\": {\"count\": %" PRIu64 ", ", name, h->count);
	json_us(f, "min", h->count ? h->min : 0);
	fprintf(f, ", ");
	json_us(f, "mean", h->count ? h->sum / h->count : 0);
	fprintf(f, ", ");
	json_us(f, "p50", dl_hist_quantile(h, 0.5));
	fprintf(f, ", ");
	json_us(f, "p90", dl_hist_quantile(h, 0.9));
	fprintf(f, ", ");
	json_us(f, "p99", dl_hist_quantile(h, 0.99));
	fprintf(f, ", ");
	json_us(f, "p99.9", dl_hist_quantile(h, 0.999));
	fprintf(f, ", ");
	json_us(f, "max", h->max);
	fprintf(f, "}");
}

static void json_class(FILE *f, const struct pacer_cls_stats *s, double secs)
{
	fprintf(f,
		"{\"ops\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"nodev_ops\": %" PRIu64
		", \"iops\": %.3f, \"bandwidth_Bps\": %.1f, \"in_flight\": %" PRIu64
		", \"in_flight_max\": %" PRIu64 ", \"completed\": %" PRIu64
		", \"early_replies\": %" PRIu64 ",\n      ",
		s->ops, s->bytes, s->nodev, secs > 0 ? (double)s->ops / secs : 0.0,
		secs > 0 ? (double)s->bytes / secs : 0.0, s->in_flight, s->in_flight_max,
		s->completed, s->early);
	fprintf(f,
		"\"cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"partial\": %" PRIu64
		", \"hit_bytes\": %" PRIu64 ", \"miss_bytes\": %" PRIu64 "},\n      ",
		s->cache_hits, s->cache_misses, s->cache_partial, s->hit_bytes, s->miss_bytes);
	json_hist(f, "latency_us", &s->lat);
	fprintf(f, ",\n      ");
	json_hist(f, "service_us", &s->service);
	fprintf(f, ",\n      ");
	json_hist(f, "queue_us", &s->queue);
	fprintf(f, ",\n      ");
	json_hist(f, "lateness_us", &s->late);
	fprintf(f, "}");
}

static void json_quantiles(FILE *f, const struct dl_hist *h)
{
	fprintf(f, "{\"count\": %" PRIu64 ", ", h->count);
	json_us(f, "p50", dl_hist_quantile(h, 0.5));
	fprintf(f, ", ");
	json_us(f, "p90", dl_hist_quantile(h, 0.9));
	fprintf(f, ", ");
	json_us(f, "p99", dl_hist_quantile(h, 0.99));
	fprintf(f, ", ");
	json_us(f, "p99.9", dl_hist_quantile(h, 0.999));
	fprintf(f, ", ");
	json_us(f, "max", h->max);
	fprintf(f, "}");
}

/* One job: per class what it asked for and what it got. Its rates are over
 * its own span (first to last request), not the whole statistics period. */
static void json_job(FILE *f, const struct pacer_snapshot *s, unsigned j)
{
	const struct pacer_job *jb = &s->job[j];
	double span = jb->last_ns > jb->first_ns ? (double)(jb->last_ns - jb->first_ns) / 1e9 : 0;

	fprintf(f, "\n    {\"id\": %" PRIu32 ", \"name\": ", jb->id);
	json_str(f, j == PACER_JOB_OTHER ? "(other)" : jb->named ? jb->name : "(unnamed)");
	fprintf(f, ", \"processes\": %" PRIu32 ", \"threads\": %" PRIu32, jb->procs, jb->threads);
	fprintf(f, ", \"first_s\": %.6f, \"last_s\": %.6f",
		jb->first_ns > s->since_ns ? (double)(jb->first_ns - s->since_ns) / 1e9 : 0.0,
		jb->last_ns > s->since_ns ? (double)(jb->last_ns - s->since_ns) / 1e9 : 0.0);
	if (s->share.policy == DL_SHARE_FAIR)
		fprintf(f, ", \"share_rule\": %d", jb->rule);
	fprintf(f, ",\n     \"classes\": {");
	for (int c = 0; c < DL_OP__COUNT; c++) {
		const struct pacer_job_cls *jc = &s->jcls[j][c];

		fprintf(f, "%s\n      \"%s\": {\"ops\": %" PRIu64 ", \"bytes\": %" PRIu64
			   ", \"nodev_ops\": %" PRIu64 ", \"bandwidth_Bps\": %.1f",
			c ? "," : "", pacer_class_names[c], jc->ops, jc->bytes, jc->nodev,
			span > 0 ? (double)jc->bytes / span : 0.0);
		fprintf(f, ", ");
		json_us(f, "queue_wait_total_us", jc->queue_ns);
		fprintf(f, ",\n        \"cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
			   ", \"partial\": %" PRIu64 ", \"hit_bytes\": %" PRIu64
			   ", \"miss_bytes\": %" PRIu64 "},\n        \"latency_us\": ",
			jc->hits, jc->misses, jc->partial, jc->hit_bytes, jc->miss_bytes);
		json_quantiles(f, &jc->lat);
		if (s->share.policy == DL_SHARE_FAIR)
			fprintf(f, ",\n        \"share\": {\"weight\": %" PRIu32
				   ", \"bandwidth_Bps\": %" PRIu64 ", \"iops\": %" PRIu64
				   ", \"queue_depth\": %" PRIu32 "}",
				jc->weight, jc->rates.bandwidth, jc->rates.iops,
				jc->rates.queue_depth);
		fprintf(f, "}");
	}
	fprintf(f, "}}");
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

int pacer_stats_format(const struct pacer_snapshot *s, char **buf, size_t *len)
{
	double secs = s->now_ns > s->since_ns ? (double)(s->now_ns - s->since_ns) / 1e9 : 0;
	char *b = NULL;
	size_t n = 0;
	FILE *f;
	int first = 1;

	f = open_memstream(&b, &n);
	if (!f)
		return -ENOMEM;
	fprintf(f, "{\n  \"elapsed_s\": %.6f,\n  \"enabled\": %s,\n  \"profile\": ", secs,
		s->enabled ? "true" : "false");
	json_str(f, s->profile);
	fprintf(f, ",\n  \"phases\": %u,\n  \"phase\": %u,\n", s->nphases, s->phase);
	fprintf(f, "  \"counting\": \"one op per request as the daemon submits it; in_flight: "
		   "submitted and not yet completed; nodev_ops: answered without the device "
		   "(close, refused calls)\",\n");
	fprintf(f, "  \"classes\": {\n");
	for (int c = 0; c < DL_OP__COUNT; c++) {
		fprintf(f, "    \"%s\": ", pacer_class_names[c]);
		json_class(f, &s->cls[c], secs);
		fprintf(f, "%s\n", c + 1 < DL_OP__COUNT ? "," : "");
	}
	fprintf(f, "  },\n");
	fprintf(f,
		"  \"cache\": {\"policy\": \"%s\", \"origin\": ",
		(unsigned)s->cache.policy < 4 ? pacer_policy_names[s->cache.policy] : "?");
	json_str(f, s->cache.origin);
	fprintf(f, ", \"meaning\": ");
	json_str(f, cache_meaning(s->cache.policy));
	fprintf(f,
		", \"size\": %" PRIu64 ", \"block\": %" PRIu64 ", \"unit\": %llu"
		", \"hit_bandwidth_Bps\": %" PRIu64 ", \"capacity_bytes\": %" PRIu64
		", \"resident_bytes\": %" PRIu64 ", \"resident_blocks\": %" PRIu64 "},\n",
		s->cache.size, s->cache.block, DL_CACHE_UNIT, s->cache.hit_bandwidth,
		s->cache_capacity, s->cache_resident, s->cache_entries);
	fprintf(f, "  \"share\": {\"policy\": \"%s\", \"rules\": %u},\n",
		pacer_share_names[s->share.policy == DL_SHARE_FAIR], s->share.nrules);
	fprintf(f, "  \"jobs\": [");
	for (unsigned j = 0; j < PACER_JOB_SLOTS; j++) {
		if (!job_used(s, j))
			continue;
		fprintf(f, "%s", first ? "" : ",");
		json_job(f, s, j);
		first = 0;
	}
	fprintf(f, "%s],\n", first ? "" : "\n  ");
	fprintf(f, "  \"jobs_folded\": %" PRIu64 "\n}\n", s->jobs_evicted);
	if (fclose(f)) {
		free(b);
		return -ENOMEM;
	}
	*buf = b;
	*len = n;
	return 0;
}
