/* Statistics: the bounded per-client table and stats.json.
 *
 * What is counted: one op is one request as the daemon hands it to the pacer
 * (one FUSE read, write or metadata call; a 1 MiB application read split by
 * the kernel into 128 KiB FUSE reads counts 8). IOPS and bandwidth are ops and
 * bytes over the time since the statistics were last reset. Queue depth
 * (in_flight) is the number of requests between dl_pacer_submit and
 * dl_pacer_complete: what the device would see queued, including requests
 * still waiting for a queue slot. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pacer_i.h"

#define NONE (-1)

void pacer_pids_reset(struct pacer_pids *t)
{
	t->n = 0;
	t->tick = 0;
	t->evicted = 0;
	for (unsigned i = 0; i < PACER_PID_BUCKETS; i++)
		t->head[i] = NONE;
	memset(t->e, 0, sizeof(t->e));
	memset(&t->other, 0, sizeof(t->other));
}

void pacer_pids_init(struct pacer_pids *t)
{
	pthread_mutex_init(&t->lock, NULL);
	pacer_pids_reset(t);
}

static unsigned pid_bucket(uint32_t pid)
{
	return (unsigned)((pid * 2654435761u) >> 16) % PACER_PID_BUCKETS;
}

static void fold(struct pacer_pid *dst, const struct pacer_pid *src)
{
	for (int c = 0; c < DL_OP__COUNT; c++) {
		dst->ops[c] += src->ops[c];
		dst->bytes[c] += src->bytes[c];
	}
}

/* The least recently seen pid leaves the table; its counts go to `other`. */
static int32_t evict(struct pacer_pids *t)
{
	int32_t v = 0, *pp;

	for (unsigned i = 1; i < t->n; i++)
		if (t->e[i].seen < t->e[v].seen)
			v = (int32_t)i;
	fold(&t->other, &t->e[v]);
	t->evicted++;
	for (pp = &t->head[pid_bucket(t->e[v].pid)]; *pp != v; pp = &t->e[*pp].next)
		;
	*pp = t->e[v].next;
	return v;
}

void pacer_pids_account(struct pacer_pids *t, uint32_t pid, enum dl_op_class cls, uint64_t bytes)
{
	unsigned h = pid_bucket(pid);
	int32_t i;

	for (i = t->head[h]; i != NONE; i = t->e[i].next)
		if (t->e[i].pid == pid)
			break;
	if (i == NONE) {
		i = t->n < PACER_MAX_PIDS ? (int32_t)t->n++ : evict(t);
		memset(&t->e[i], 0, sizeof(t->e[i]));
		t->e[i].pid = pid;
		t->e[i].next = t->head[h];
		t->head[h] = i;
	}
	t->e[i].seen = ++t->tick;
	t->e[i].ops[cls]++;
	t->e[i].bytes[cls] += bytes;
}

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
		"{\"ops\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"iops\": %.3f, "
		"\"bandwidth_Bps\": %.1f, \"in_flight\": %" PRIu64 ", \"in_flight_max\": %" PRIu64
		", \"completed\": %" PRIu64 ", \"early_replies\": %" PRIu64 ",\n      ",
		s->ops, s->bytes, secs > 0 ? (double)s->ops / secs : 0.0,
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

static void json_client(FILE *f, const struct pacer_pid *e)
{
	for (int c = 0; c < DL_OP__COUNT; c++)
		fprintf(f, "%s\"%s_ops\": %" PRIu64 ", \"%s_bytes\": %" PRIu64, c ? ", " : "",
			pacer_class_names[c], e->ops[c], pacer_class_names[c], e->bytes[c]);
}

int pacer_stats_format(const struct pacer_snapshot *s, char **buf, size_t *len)
{
	double secs = s->now_ns > s->since_ns ? (double)(s->now_ns - s->since_ns) / 1e9 : 0;
	char *b = NULL;
	size_t n = 0;
	FILE *f;
	unsigned i;

	f = open_memstream(&b, &n);
	if (!f)
		return -ENOMEM;
	fprintf(f, "{\n  \"elapsed_s\": %.6f,\n  \"enabled\": %s,\n  \"profile\": ", secs,
		s->enabled ? "true" : "false");
	json_str(f, s->profile);
	fprintf(f, ",\n  \"phases\": %u,\n  \"phase\": %u,\n", s->nphases, s->phase);
	fprintf(f, "  \"counting\": \"one op per request as the daemon submits it; in_flight: "
		   "submitted and not yet completed\",\n");
	fprintf(f, "  \"classes\": {\n");
	for (int c = 0; c < DL_OP__COUNT; c++) {
		fprintf(f, "    \"%s\": ", pacer_class_names[c]);
		json_class(f, &s->cls[c], secs);
		fprintf(f, "%s\n", c + 1 < DL_OP__COUNT ? "," : "");
	}
	fprintf(f, "  },\n");
	fprintf(f,
		"  \"cache\": {\"policy\": \"%s\", \"size\": %" PRIu64 ", \"block\": %" PRIu64
		", \"hit_bandwidth_Bps\": %" PRIu64 ", \"capacity_blocks\": %" PRIu64
		", \"resident_blocks\": %" PRIu64 "},\n",
		(unsigned)s->cache.policy < 4 ? pacer_policy_names[s->cache.policy] : "?",
		s->cache.size, s->cache.block, s->cache.hit_bandwidth, s->cache_capacity,
		s->cache_resident);
	fprintf(f, "  \"clients\": [");
	for (i = 0; i < s->pids.n; i++) {
		fprintf(f, "%s\n    {\"pid\": %" PRIu32 ", ", i ? "," : "", s->pids.e[i].pid);
		json_client(f, &s->pids.e[i]);
		fprintf(f, "}");
	}
	fprintf(f, "%s],\n", s->pids.n ? "\n  " : "");
	fprintf(f, "  \"clients_other\": {\"pids\": %" PRIu64 ", ", s->pids.evicted);
	json_client(f, &s->pids.other);
	fprintf(f, "}\n}\n");
	if (fclose(f)) {
		free(b);
		return -ENOMEM;
	}
	*buf = b;
	*len = n;
	return 0;
}
