/* The pacer's options: one table drives setting a key (YAML section and live
 * `dliofs set`), the effective-config dump and the help text (options_dump.c),
 * so the three can never disagree. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/suggest.h"
#include "dliofs/units.h"
#include "options_i.h"

const char *const pacer_class_names[DL_OP__COUNT] = {"read", "write", "meta"};
const char *const pacer_policy_names[4] = {"kernel", "none", "lru", "minio"};
const char *const pacer_share_names[2] = {"fcfs", "fair"};

#define TOP(f) S_TOP, offsetof(struct dl_pacer_cfg, f)
#define DEV(f) S_DEV, offsetof(struct dl_dev_model, f)
#define PHASE(f) S_PHASE, offsetof(struct dl_phase, f)
#define RULE(f) S_RULE, offsetof(struct dl_share_rule, f)

const struct opt pacer_opts[] = {
    {"enabled", T_BOOL, TOP(enabled), 0,
     "true|false: shape requests (false: reply at once; statistics are still kept)"},
    {"profile", T_STR, TOP(profile), 0,
     "name of the storage profile the model came from (informational)"},
    {"bandwidth", T_RATE, DEV(bandwidth), 0,
     "bytes/s shared by all requests of the class: 500MB/s (10^6), 1GiB/s (2^20); "
     "unlimited or 0: no limit"},
    {"burst", T_SIZE, DEV(burst), 0,
     "token-bucket depth: bytes that may pass at once after idle time (0: 1MiB; a device "
     "model with refill grants rate x refill per period instead)"},
    {"iops", T_COUNT, DEV(iops), 0, "requests/s, e.g. 20k; unlimited or 0: no limit"},
    {"queue_depth", T_QD, DEV(queue_depth), 0,
     "requests in service at once (at most 65536); later ones wait in arrival order; "
     "unlimited or 0: no limit"},
    {"latency", T_LAT, DEV(latency), 0,
     "per-request latency, in YAML also {dist: NAME, PARAM: time, ...}: "},
    {"cached_latency", T_LAT, DEV(cached_latency), 0,
     "meta: the latency of a request for an inode the client has cached (seen before, not "
     "evicted, no `dliofs cache drop` since); `latency` is then a first touch's. none or 0: "
     "no inode cache, every request takes `latency`. Same forms as latency: "},
    {"latency_by_size", T_LATSIZE, DEV(lat_size), 0,
     "latency of a request alone on the device by its size, {4KiB: LATENCY, 1MiB: LATENCY, "
     "...} (measured by `dliofs profile`); replaces latency for requests with data: between "
     "two sizes each quantile is interpolated linearly, beyond the largest the medians' slope "
     "goes on. Set one point with KEY.SIZE=LATENCY (none removes it), KEY=none clears"},
    {"bandwidth_by_concurrency", T_CONC, DEV(conc), 0,
     "bytes/s the device delivers with K requests of SIZE in service, {1MiB: {1: 600MB/s, "
     "4: 800MB/s}, 4KiB: {...}}: a request arriving with k of its class in service "
     "(itself included) takes its latency times k bw(1) / bw(k), linear in k between points "
     "and in log2(size) between rows. Set a point with KEY.SIZE.K=RATE (none removes it; "
     "KEY.SIZE=none the row), KEY=none clears"},
    {"transfer", T_RATE, DEV(transfer), 0,
     "a device model (what `dliofs profile` fits): the rate one request moves its bytes at "
     "on the device; a request's service is latency x noise + size / transfer on one of "
     "queue_depth channels, after the throttle: bandwidth/burst and iops/iops_burst become "
     "token buckets refilled every `refill`. 0: the plain model"},
    {"refill", T_TIME, DEV(refill_ns), 0,
     "device model: the buckets get their tokens in lumps of rate x refill at the start of "
     "each period (Linux blk-throttle: 100ms slices); 0: continuously"},
    {"iops_burst", T_COUNT, DEV(iops_burst), 0,
     "device model: the IO bucket's depth in requests when it refills continuously (0: 1; "
     "with refill a period grants iops x refill)"},
    {"lanes", T_COUNT, DEV(lanes), 0,
     "device model: data paths: the bytes of at most this many requests move at once, each "
     "at transfer (at most 64; unlimited or 0: every channel moves its own)"},
    {"serial", T_TIME, DEV(serial_ns), 0,
     "device model: per request on its data path before its bytes: the part of the fixed "
     "cost requests pay one at a time (a controller's or link's per-request work); 0: none"},
    {"stall_every", T_COUNT, DEV(stall_every), 0,
     "device model: one request in this many stalls on its channel for an exponential time "
     "of mean `stall` (a shared disk's neighbours); 0 or unlimited: none"},
    {"stall", T_TIME, DEV(stall_ns), 0, "device model: the mean of a stall (see stall_every)"},
    {"max_request", T_SIZE, DEV(max_request), 0,
     "device model: the most bytes one device request carries: the pieces of one read that "
     "FUSE splits (1MiB each) and that are in flight together merge into one request of at "
     "most this, paying the fixed cost once, as a block layer merges them up to the disk's "
     "max_sectors_kb (dliofs profile records its storage's); 4KiB to 1GiB, 0: 4MiB"},
    {"noise", T_FACTOR, DEV(noise_ppm), 0,
     "device model: the residual noise, a lognormal factor with median 1 and this p99 on "
     "the fixed cost (latency and serial, not the bytes); 1 or none: no noise"},
    {"device_ios", T_PER, DEV(device_ios_ppm), 0,
     "meta: the device reads one request for an inode not in the client's inode cache "
     "costs (its inode's and directory's blocks), which take their tokens from the read "
     "class's throttle (read.iops, read.bandwidth at 4KiB each) as on a throttled disk; "
     "0 to 64, e.g. 0.11 (ext4: an inode block holds 16 inodes; dliofs profile measures "
     "its storage's); 0: none"},
    {"readdir_ios", T_PER, DEV(readdir_ios_ppm), 0,
     "meta: the device reads the first listing of a directory costs (its blocks, read once: "
     "the kernel keeps them), through the read class's throttle like device_ios; 0 to 64 "
     "(ext4 here: 4 for a directory of 60 files; dliofs profile measures its storage's); "
     "0: none"},
    {"blksize", T_SIZE, TOP(blksize), 0,
     "the block size files report (st_blksize), which buffered readers size their reads by "
     "(Python's open() buffer, stdio), as on the storage: ext4 4KiB, NFS its rsize; a power of "
     "two from 512 to 16MiB, 0: 1MiB (dliofs profile records its storage's); a live change "
     "applies to files the kernel looks up or stats afterwards"},
    {"phases.count", T_NPHASES, TOP(nphases), 1,
     "number of phases (0: the constant model above; at most 16); setting phases.N.* with "
     "N = count appends a phase that starts as a copy of the constant model"},
    {"duration", T_TIME, PHASE(duration_ns), 0,
     "how long phase N lasts; phases run in order and repeat"},
    {"cache.policy", T_POLICY, TOP(cache.policy), 0,
     "kernel (no emulation: the kernel page cache as is) | none (emulated, never hits) | "
     "lru | minio (fill once, never evict, as CoorDL)"},
    {"cache.size", T_SIZE, TOP(cache.size), 0,
     "bytes of emulated cache, e.g. 200GiB (only residency metadata is kept: about 32 "
     "bytes per block, at most 64Mi blocks)"},
    {"cache.block", T_SIZE, TOP(cache.block), 0, "cache block size (default 1MiB)"},
    {"cache.hit_bandwidth", T_RATE, TOP(cache.hit_bandwidth), 0,
     "bytes/s at which a hit is served (memory-copy speed, default 10GB/s; 0: instant)"},
    {"share.policy", T_SHARE, TOP(share.policy), 0,
     "fcfs (default: jobs queue for one device, as on a real one) | fair (each active job "
     "gets its weighted share of bandwidth, IOPS and queue depth; unused shares go to the "
     "others)"},
    {"share.window", T_TIME, TOP(share.window_ns), 0,
     "fair: demand and activity are measured over this window (default 200ms)"},
    {"share.jobs.count", T_NRULES, TOP(share.nrules), 1,
     "number of per-job rules (at most 16); setting share.jobs.N.* with N = count appends one"},
    {"match", T_STR, RULE(match), 0,
     "the rule applies to jobs whose name (command line, or DLIOFS_JOB) contains this text"},
    {"weight", T_COUNT, RULE(weight), 0, "the job's relative share (1 .. 1000000, default 1)"},
    {"bandwidth", T_RATE, RULE(bandwidth), 0, "cap on the job's bytes/s, per class"},
    {"iops", T_COUNT, RULE(iops), 0, "cap on the job's requests/s, per class"},
};

#define NOPTS (sizeof(pacer_opts) / sizeof(pacer_opts[0]))
const unsigned pacer_nopts = NOPTS;

/* ---- values ---- */

/* A table key changes one point (KEY.SIZE[.K]=VALUE) or clears (KEY=none). */
enum tbl_op { TBL_NONE, TBL_CLEAR, TBL_PUT, TBL_DEL };

struct val {
	uint64_t u;
	struct dl_lat_model lat;
	char str[64];
	/* tables: the point parsed, then the whole new table (table_apply) */
	enum tbl_op op;
	uint64_t size;
	uint32_t k;
	struct dl_lat_sizes sizes;
	struct dl_conc_table conc;
};

static void val_free(struct val *v)
{
	pacer_lat_free(&v->lat);
	pacer_sizes_free(&v->sizes);
	pacer_conc_free(&v->conc);
}

static int is_unlimited(const char *s)
{
	return !strcmp(s, "unlimited") || !strcmp(s, "none") || !strcmp(s, "0");
}

static const char *expected(enum opt_type t)
{
	switch (t) {
	case T_BOOL:
		return "true or false";
	case T_STR:
		return "a name of at most 63 characters";
	case T_RATE:
		return "a rate such as 500MB/s or 1GiB/s (MB = 10^6 B, MiB = 2^20 B), or unlimited";
	case T_SIZE:
		return "a size such as 4KiB, 1MiB, 200GiB or 500MB";
	case T_COUNT:
		return "a count such as 1000 or 20k, or unlimited";
	case T_QD:
		return "a count from 1 to 65536, or unlimited";
	case T_TIME:
		return "a time such as 30s, 500ms or 150us";
	case T_POLICY:
		return "kernel, none, lru or minio";
	case T_NPHASES:
	case T_NRULES:
		return "a count from 0 to 16";
	case T_SHARE:
		return "fcfs or fair";
	case T_LATSIZE:
		return "none (KEY.SIZE=LATENCY sets a point, e.g. read.latency_by_size.4KiB=80us)";
	case T_CONC:
		return "none (KEY.SIZE.K=RATE sets a point, e.g. "
		       "read.bandwidth_by_concurrency.1MiB.4=800MB/s)";
	case T_FACTOR:
		return "a factor of 1 or more such as 1.3, or none";
	case T_PER:
		return "a number from 0 to 64 such as 0.11";
	case T_LAT:
		break;
	}
	return "a latency";
}

/* A table key's point: SIZE (latency_by_size) or SIZE[.K] (concurrency). */
static int parse_point(const struct opt *o, const char *sub, const char *s, struct val *v,
		       char *why, size_t whylen)
{
	char size[64], *dot;
	const char *w = NULL;
	uint64_t k = 0;
	/* A latency of 0 is a point; a bandwidth of 0 is no point. */
	int none = o->type == T_CONC ? is_unlimited(s) : !strcmp(s, "none");

	if (!sub) {
		if (!none && strcmp(s, "{}"))
			goto bad;
		v->op = TBL_CLEAR;
		return 0;
	}
	snprintf(size, sizeof(size), "%s", sub);
	dot = strchr(size, '.');
	if (dot)
		*dot = '\0';
	if (dot && o->type != T_CONC)
		goto bad_key;
	if (dl_parse_size(size, &v->size, &w) || !v->size)
		goto bad_key;
	if (dot && (dl_parse_count(dot + 1, &k, &w) || !k || k > PACER_MAX_QUEUE_DEPTH))
		goto bad_key;
	v->k = (uint32_t)k;
	v->op = none ? TBL_DEL : TBL_PUT;
	if (none)
		return 0;
	if (o->type == T_LATSIZE)
		return pacer_lat_parse(s, &v->lat, why, whylen);
	if (!dot)
		goto bad;
	if (dl_parse_rate(s, &v->u, &w) || !v->u) {
		snprintf(why, whylen, "expected a rate such as 800MB/s%s%s%s", w ? " (" : "",
			 w ? w : "", w ? ")" : "");
		return -EINVAL;
	}
	return 0;
bad_key:
	snprintf(why, whylen, "\"%s\" is not a point: expected %s.SIZE%s (a size above 0%s)", sub,
		 o->name, o->type == T_CONC ? ".K" : "",
		 o->type == T_CONC ? ", K requests in service from 1 to 65536" : "");
	return -EINVAL;
bad:
	snprintf(why, whylen, "expected %s", expected(o->type));
	return -EINVAL;
}

/* -EINVAL, and why, when one request of the largest size would wait longer
 * than any request may at bandwidth bw (0: unlimited). */
static int rate_bound(uint64_t bw, char *why, size_t whylen)
{
	char have[32], least[32], wait[32], most[32], req[32];

	if (!bw || bw >= DL_PACER_MIN_BANDWIDTH)
		return 0;
	pacer_fmt_size(bw, have, sizeof(have), "/s");
	pacer_fmt_size(DL_PACER_MIN_BANDWIDTH, least, sizeof(least), "/s");
	pacer_fmt_size(DL_PACER_MAX_REQ, req, sizeof(req), "");
	pacer_fmt_time(DL_PACER_MAX_REQ * PACER_NS / bw, wait, sizeof(wait));
	pacer_fmt_time(DL_PACER_MAX_WAIT_NS, most, sizeof(most));
	snprintf(why, whylen,
		 "%s would keep one %s request waiting %s; at least %s is allowed (no request "
		 "waits more than %s for its own transfer)",
		 have, req, wait, least, most);
	return -EINVAL;
}

static int parse_val_raw(const struct opt *o, const char *sub, const char *s, struct val *v,
			 char *why, size_t whylen);

/* A value, refused when one request would wait past the bound under it. */
static int parse_val(const struct opt *o, const char *sub, const char *s, struct val *v,
		     char *why, size_t whylen)
{
	int ret = parse_val_raw(o, sub, s, v, why, whylen);

	if (ret)
		return ret;
	if (o->type == T_RATE)
		ret = rate_bound(v->u, why, whylen);
	else if (o->type == T_LAT || (o->type == T_LATSIZE && v->op == TBL_PUT))
		ret = pacer_lat_check(&v->lat, why, whylen);
	if (ret)
		val_free(v);
	return ret;
}

static int parse_val_raw(const struct opt *o, const char *sub, const char *s, struct val *v,
			 char *why, size_t whylen)
{
	const char *w = NULL;
	int ret = 0;

	memset(v, 0, sizeof(*v));
	if (o->type == T_LATSIZE || o->type == T_CONC)
		return parse_point(o, sub, s, v, why, whylen);
	switch (o->type) {
	case T_BOOL:
		if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on") || !strcmp(s, "1"))
			v->u = 1;
		else if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off") ||
			 !strcmp(s, "0"))
			v->u = 0;
		else
			ret = -EINVAL;
		break;
	case T_STR:
		if (strlen(s) >= sizeof(v->str))
			ret = -EINVAL;
		else
			snprintf(v->str, sizeof(v->str), "%s", s);
		break;
	case T_RATE:
		if (!is_unlimited(s))
			ret = dl_parse_rate(s, &v->u, &w);
		break;
	case T_SIZE:
		ret = dl_parse_size(s, &v->u, &w);
		break;
	case T_COUNT:
	case T_QD:
		if (!is_unlimited(s))
			ret = dl_parse_count(s, &v->u, &w);
		if (!ret && o->type == T_QD && v->u > PACER_MAX_QUEUE_DEPTH)
			ret = -EINVAL;
		break;
	case T_TIME:
		/* "0" needs no unit (refill=0: continuously). */
		if (strcmp(s, "0"))
			ret = dl_parse_time(s, &v->u, &w);
		break;
	case T_POLICY:
		ret = -EINVAL;
		for (unsigned i = 0; i < 4; i++) {
			if (!strcmp(s, pacer_policy_names[i])) {
				v->u = i;
				ret = 0;
			}
		}
		break;
	case T_NPHASES:
	case T_NRULES:
		ret = dl_parse_count(s, &v->u, &w);
		if (!ret && v->u > DL_PACER_MAX_PHASES)
			ret = -EINVAL;
		break;
	case T_SHARE:
		ret = -EINVAL;
		for (unsigned i = 0; i < 2; i++) {
			if (!strcmp(s, pacer_share_names[i])) {
				v->u = i;
				ret = 0;
			}
		}
		break;
	case T_FACTOR: {
		char *end;
		double x;

		if (!strcmp(s, "none")) {
			v->u = 0;
			break;
		}
		x = strtod(s, &end);
		if (end == s || *end || !(x >= 1.0) || x > 1000.0)
			ret = -EINVAL;
		else
			v->u = x == 1.0 ? 0 : (uint64_t)(x * 1e6 + 0.5);
		break;
	}
	case T_PER: {
		char *end;
		double x = strtod(s, &end);

		if (end == s || *end || !(x >= 0.0) || x > 64.0)
			ret = -EINVAL;
		else
			v->u = (uint64_t)(x * 1e6 + 0.5);
		break;
	}
	case T_LAT:
		return pacer_lat_parse(s, &v->lat, why, whylen);
	case T_LATSIZE:
	case T_CONC:
		break;
	}
	if (ret) {
		if (w)
			snprintf(why, whylen, "expected %s (%s)", expected(o->type), w);
		else
			snprintf(why, whylen, "expected %s", expected(o->type));
		return -EINVAL;
	}
	return 0;
}

static int field_equal(const struct opt *o, const void *a, const void *b)
{
	switch (o->type) {
	case T_QD:
		return *(const uint32_t *)a == *(const uint32_t *)b;
	case T_LAT:
		return pacer_lat_equal(a, b);
	case T_LATSIZE:
		return pacer_sizes_equal(a, b);
	case T_CONC:
		return pacer_conc_equal(a, b);
	default:
		return *(const uint64_t *)a == *(const uint64_t *)b;
	}
}

/* A table key: v's whole new table, the field's with v's point changed. */
static int table_apply(const struct opt *o, const void *field, struct val *v)
{
	int ret;

	if (o->type == T_LATSIZE) {
		if (v->op == TBL_CLEAR)
			return 0;
		ret = pacer_sizes_copy(&v->sizes, field);
		if (!ret)
			ret = pacer_sizes_put(&v->sizes, v->size, v->op == TBL_PUT ? &v->lat : NULL);
		return ret;
	}
	if (v->op == TBL_CLEAR)
		return 0;
	ret = pacer_conc_copy(&v->conc, field);
	if (!ret)
		ret = pacer_conc_put(&v->conc, v->size, v->k, v->op == TBL_PUT ? v->u : 0);
	return ret;
}

/* A copy of v's value for one more field (a phase that inherits it). */
static int val_dup(const struct opt *o, const struct val *v, struct val *dst)
{
	memset(dst, 0, sizeof(*dst));
	dst->u = v->u;
	memcpy(dst->str, v->str, sizeof(dst->str));
	switch (o->type) {
	case T_LAT:
		return pacer_lat_copy(&dst->lat, &v->lat);
	case T_LATSIZE:
		return pacer_sizes_copy(&dst->sizes, &v->sizes);
	case T_CONC:
		return pacer_conc_copy(&dst->conc, &v->conc);
	default:
		return 0;
	}
}

/* Store v into field; a latency moves in. */
static void store(const struct opt *o, void *field, struct val *v)
{
	switch (o->type) {
	case T_BOOL:
		*(int *)field = (int)v->u;
		break;
	case T_STR:
		memcpy(field, v->str, sizeof(v->str));
		break;
	case T_QD:
		*(uint32_t *)field = (uint32_t)v->u;
		break;
	case T_POLICY:
		*(enum dl_cache_policy *)field = (enum dl_cache_policy)v->u;
		break;
	case T_NPHASES:
	case T_NRULES:
		*(unsigned *)field = (unsigned)v->u;
		break;
	case T_SHARE:
		*(enum dl_share_policy *)field = (enum dl_share_policy)v->u;
		break;
	case T_LAT:
		pacer_lat_free(field);
		*(struct dl_lat_model *)field = v->lat;
		memset(&v->lat, 0, sizeof(v->lat));
		break;
	case T_LATSIZE:
		pacer_sizes_free(field);
		*(struct dl_lat_sizes *)field = v->sizes;
		memset(&v->sizes, 0, sizeof(v->sizes));
		break;
	case T_CONC:
		pacer_conc_free(field);
		*(struct dl_conc_table *)field = v->conc;
		memset(&v->conc, 0, sizeof(v->conc));
		break;
	default:
		*(uint64_t *)field = v->u;
		break;
	}
}

/* ---- keys ---- */

static int is_table(const struct opt *o) { return o->type == T_LATSIZE || o->type == T_CONC; }

/* The option named name; a table's point (NAME.SIZE[.K]) sets *sub to what
 * follows NAME. */
static const struct opt *find_opt(enum opt_scope scope, const char *name, const char **sub)
{
	*sub = NULL;
	for (unsigned i = 0; i < pacer_nopts; i++)
		if (pacer_opts[i].scope == scope && !strcmp(pacer_opts[i].name, name))
			return &pacer_opts[i];
	for (unsigned i = 0; i < pacer_nopts; i++) {
		size_t n = strlen(pacer_opts[i].name);

		if (pacer_opts[i].scope == scope && is_table(&pacer_opts[i]) &&
		    !strncmp(pacer_opts[i].name, name, n) && name[n] == '.' && name[n + 1]) {
			*sub = name + n + 1;
			return &pacer_opts[i];
		}
	}
	return NULL;
}

static int class_prefix(const char *key, const char **rest)
{
	for (int c = 0; c < DL_OP__COUNT; c++) {
		size_t n = strlen(pacer_class_names[c]);

		if (!strncmp(key, pacer_class_names[c], n) && key[n] == '.') {
			*rest = key + n + 1;
			return c;
		}
	}
	return -1;
}

static void key_list(char *buf, size_t len)
{
	size_t j = 0;

	j += (size_t)snprintf(buf + j, len - j, "keys:");
	for (unsigned i = 0; i < pacer_nopts && j < len; i++) {
		j += (size_t)snprintf(buf + j, len - j, " %s%s", pacer_scope_prefix(pacer_opts[i].scope),
				      pacer_opts[i].name);
	}
	if (j < len)
		snprintf(buf + j, len - j, " phases.N.{read,write,meta}.*");
}

/* The full key nearest to an unknown one ("read.bandwith" -> "read.bandwidth"),
 * NULL if none is near: every key as written, numbered ones with the number
 * the user wrote (or 0). */
static const char *suggest_key(const char *key, char *buf, size_t len)
{
	static const char *const classes[] = {"read.", "write.", "meta."};
	char names[NOPTS * 4][64];
	const char *cands[NOPTS * 4], *hit;
	unsigned long n = 0;
	size_t nc = 0;
	const char *num = strpbrk(key, "0123456789");

	if (num)
		n = strtoul(num, NULL, 10);
	for (unsigned i = 0; i < pacer_nopts; i++) {
		unsigned k = pacer_opts[i].scope == S_DEV ? 3 : 1;

		for (unsigned c = 0; c < k; c++) {
			switch (pacer_opts[i].scope) {
			case S_DEV:
				snprintf(names[nc], sizeof(names[nc]), "%s%s", classes[c], pacer_opts[i].name);
				break;
			case S_PHASE:
				snprintf(names[nc], sizeof(names[nc]), "phases.%lu.%s", n, pacer_opts[i].name);
				break;
			case S_RULE:
				snprintf(names[nc], sizeof(names[nc]), "share.jobs.%lu.%s", n,
					 pacer_opts[i].name);
				break;
			default:
				snprintf(names[nc], sizeof(names[nc]), "%s", pacer_opts[i].name);
				break;
			}
			cands[nc] = names[nc];
			nc++;
		}
	}
	hit = dl_suggest(key, cands, nc);
	if (hit) {
		snprintf(buf, len, "%s", hit);
		return buf;
	}
	/* A table's point ("read.latency_by_sise.4KiB"): the key without its
	 * point, then the point again. */
	const char *dot = strchr(key, '.');
	char head[64];

	if (dot && (dot = strchr(dot + 1, '.')) && (size_t)(dot - key) < sizeof(head)) {
		snprintf(head, sizeof(head), "%.*s", (int)(dot - key), key);
		hit = dl_suggest(head, cands, nc);
		if (hit) {
			snprintf(buf, len, "%s%s", hit, dot);
			return buf;
		}
	}
	return NULL;
}

struct target {
	const struct opt *o;
	int phase;	 /* -1: not in a phase */
	int cls;	 /* -1: not a device key */
	int rule;	 /* -1: not a share rule key */
	const char *sub; /* a table's point (SIZE or SIZE.K), NULL: the whole table */
};

static int resolve(const char *key, struct target *t, char *err, size_t errlen)
{
	const char *rest;
	char *end;
	unsigned long n;
	char keys[600];

	t->o = NULL;
	t->phase = -1;
	t->cls = -1;
	t->rule = -1;
	t->sub = NULL;
	if (!strncmp(key, "share.jobs.", 11) && key[11] >= '0' && key[11] <= '9') {
		n = strtoul(key + 11, &end, 10);
		if (*end != '.' || n >= DL_PACER_MAX_RULES) {
			snprintf(err, errlen, "%s: share rules are numbered 0 to %d", key,
				 DL_PACER_MAX_RULES - 1);
			return -EINVAL;
		}
		t->rule = (int)n;
		t->o = find_opt(S_RULE, end + 1, &t->sub);
	} else if (!strncmp(key, "phases.", 7) && key[7] >= '0' && key[7] <= '9') {
		n = strtoul(key + 7, &end, 10);
		if (*end != '.' || n >= DL_PACER_MAX_PHASES) {
			snprintf(err, errlen, "%s: phases are numbered 0 to %d", key,
				 DL_PACER_MAX_PHASES - 1);
			return -EINVAL;
		}
		t->phase = (int)n;
		rest = end + 1;
		if ((t->cls = class_prefix(rest, &rest)) >= 0)
			t->o = find_opt(S_DEV, rest, &t->sub);
		else
			t->o = find_opt(S_PHASE, rest, &t->sub);
	} else if ((t->cls = class_prefix(key, &rest)) >= 0) {
		t->o = find_opt(S_DEV, rest, &t->sub);
	} else {
		t->o = find_opt(S_TOP, key, &t->sub);
	}
	if (!t->o) {
		char near[64];

		if (suggest_key(key, near, sizeof(near))) {
			snprintf(err, errlen, "unknown pacer key \"%s\" (did you mean \"%s\"?)", key,
				 near);
			return -EINVAL;
		}
		key_list(keys, sizeof(keys));
		snprintf(err, errlen, "unknown pacer key \"%s\" (%s)", key, keys);
		return -EINVAL;
	}
	return 0;
}

static void *field_of(struct dl_pacer_cfg *cfg, const struct target *t)
{
	char *base;

	if (t->o->scope == S_TOP)
		base = (char *)cfg;
	else if (t->o->scope == S_RULE)
		base = (char *)&cfg->share.rules[t->rule >= 0 ? t->rule : 0];
	else if (t->o->scope == S_PHASE)
		base = (char *)&cfg->phases[t->phase];
	else if (t->phase >= 0)
		base = (char *)&cfg->phases[t->phase].m[t->cls];
	else
		base = (char *)&cfg->m[t->cls];
	return base + t->o->off;
}

static void free_models(struct dl_dev_model *m)
{
	for (int c = 0; c < DL_OP__COUNT; c++) {
		pacer_lat_free(&m[c].latency);
		pacer_lat_free(&m[c].cached_latency);
		pacer_sizes_free(&m[c].lat_size);
		pacer_conc_free(&m[c].conc);
	}
}

static int copy_models(struct dl_dev_model *dst, const struct dl_dev_model *src)
{
	int ret;

	for (int c = 0; c < DL_OP__COUNT; c++) {
		dst[c] = src[c];
		dst[c].latency.values_ns = NULL;
		dst[c].latency.cdf = NULL;
		dst[c].cached_latency.values_ns = NULL;
		dst[c].cached_latency.cdf = NULL;
		memset(&dst[c].lat_size, 0, sizeof(dst[c].lat_size));
		memset(&dst[c].conc, 0, sizeof(dst[c].conc));
	}
	for (int c = 0; c < DL_OP__COUNT; c++) {
		ret = pacer_lat_copy(&dst[c].latency, &src[c].latency);
		if (!ret)
			ret = pacer_lat_copy(&dst[c].cached_latency, &src[c].cached_latency);
		if (!ret)
			ret = pacer_sizes_copy(&dst[c].lat_size, &src[c].lat_size);
		if (!ret)
			ret = pacer_conc_copy(&dst[c].conc, &src[c].conc);
		if (ret) {
			free_models(dst);
			return ret;
		}
	}
	return 0;
}

/* New phases start as copies of the constant model, so a phase only has to
 * name what it changes. */
static int set_nphases(struct dl_pacer_cfg *cfg, unsigned n)
{
	unsigned old = cfg->nphases, i;
	int ret;

	for (i = old; i < n; i++) {
		memset(&cfg->phases[i], 0, sizeof(cfg->phases[i]));
		ret = copy_models(cfg->phases[i].m, cfg->m);
		if (ret) {
			while (i-- > old)
				free_models(cfg->phases[i].m);
			return ret;
		}
	}
	for (i = n; i < old; i++) {
		free_models(cfg->phases[i].m);
		memset(&cfg->phases[i], 0, sizeof(cfg->phases[i]));
	}
	cfg->nphases = n;
	return 0;
}

int dl_pacer_key_kind(const char *key, enum dl_pacer_kind *kind)
{
	struct target t;
	char err[8];
	int ret = resolve(key, &t, err, sizeof(err));

	if (ret)
		return ret;
	switch (t.o->type) {
	case T_RATE:
		*kind = DL_PACER_K_RATE;
		break;
	case T_TIME:
	case T_LAT:
		*kind = DL_PACER_K_TIME;
		break;
	case T_SIZE:
		*kind = DL_PACER_K_SIZE;
		break;
	case T_COUNT:
	case T_QD:
		*kind = DL_PACER_K_COUNT;
		break;
	case T_LATSIZE: /* a point is a latency, the whole table is not a number */
		*kind = t.sub ? DL_PACER_K_TIME : DL_PACER_K_OTHER;
		break;
	case T_CONC: /* a point (SIZE.K) is a rate */
		*kind = t.sub && strchr(t.sub, '.') ? DL_PACER_K_RATE : DL_PACER_K_OTHER;
		break;
	default:
		*kind = DL_PACER_K_OTHER;
		break;
	}
	return 0;
}

int dl_pacer_cfg_set(struct dl_pacer_cfg *cfg, const char *key, const char *value, char *err,
		     size_t errlen)
{
	struct val copies[DL_PACER_MAX_PHASES];
	int inherit[DL_PACER_MAX_PHASES] = {0};
	unsigned old_n = cfg->nphases, p;
	struct target t;
	struct val v;
	char why[512];
	void *field;
	int ret;

	if (!key || !value) {
		snprintf(err, errlen, "pacer: missing key or value");
		return -EINVAL;
	}
	ret = resolve(key, &t, err, errlen);
	if (ret)
		return ret;
	if (t.phase > (int)cfg->nphases) {
		snprintf(err, errlen, "%s: phases are added in order: the next one is phases.%u",
			 key, cfg->nphases);
		return -EINVAL;
	}
	if (t.rule > (int)cfg->share.nrules) {
		snprintf(err, errlen,
			 "%s: share rules are added in order: the next one is share.jobs.%u", key,
			 cfg->share.nrules);
		return -EINVAL;
	}
	ret = parse_val(t.o, t.sub, value, &v, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s; got \"%s\"", key, why, value);
		return ret;
	}
	if (t.o->type == T_NPHASES) {
		ret = set_nphases(cfg, (unsigned)v.u);
		if (!ret)
			return 0;
		goto out;
	}
	if (t.o->type == T_NRULES) {
		/* Rules beyond the count are forgotten; new ones start empty. */
		for (unsigned r = (unsigned)v.u; r < DL_PACER_MAX_RULES; r++)
			memset(&cfg->share.rules[r], 0, sizeof(cfg->share.rules[r]));
		cfg->share.nrules = (unsigned)v.u;
		return 0;
	}
	if (t.rule >= 0 && t.rule == (int)cfg->share.nrules) {
		memset(&cfg->share.rules[t.rule], 0, sizeof(cfg->share.rules[t.rule]));
		cfg->share.rules[t.rule].weight = 1;
		cfg->share.nrules++;
	}
	if (t.phase == (int)cfg->nphases) {
		ret = set_nphases(cfg, cfg->nphases + 1);
		if (ret)
			goto out;
	}
	field = field_of(cfg, &t);
	if (is_table(t.o) && (ret = table_apply(t.o, field, &v))) {
		if (ret == -ENOSPC) {
			snprintf(err, errlen, "%s: the table is full (at most %d sizes%s)", key,
				 DL_PACER_MAX_SIZES,
				 t.o->type == T_CONC ? ", 16 points per size" : "");
			val_free(&v);
			if (cfg->nphases != old_n)
				set_nphases(cfg, old_n);
			return -EINVAL;
		}
		goto out;
	}
	/* A device key of the constant model also changes the phases that had
	 * not changed it themselves: phases inherit what they do not name. */
	if (t.o->scope == S_DEV && t.phase < 0) {
		for (p = 0; p < cfg->nphases; p++) {
			struct target pt = {t.o, (int)p, t.cls, -1, NULL};

			inherit[p] = field_equal(t.o, field_of(cfg, &pt), field);
		}
		/* Copies first, so that a failure changes nothing. */
		for (p = 0; p < cfg->nphases; p++) {
			if (inherit[p] && (ret = val_dup(t.o, &v, &copies[p]))) {
				while (p--)
					if (inherit[p])
						val_free(&copies[p]);
				goto out;
			}
		}
		for (p = 0; p < cfg->nphases; p++) {
			struct target pt = {t.o, (int)p, t.cls, -1, NULL};

			if (inherit[p])
				store(t.o, field_of(cfg, &pt), &copies[p]);
		}
	}
	store(t.o, field, &v);
	val_free(&v);
	return 0;
out:
	if (cfg->nphases != old_n)
		set_nphases(cfg, old_n);
	val_free(&v);
	snprintf(err, errlen, "%s: %s", key, strerror(-ret));
	return ret;
}

void dl_pacer_cfg_init(struct dl_pacer_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->enabled = 1;
	for (int c = 0; c < DL_OP__COUNT; c++)
		cfg->m[c].burst = PACER_DEFAULT_BURST;
	cfg->cache.policy = DL_CACHE_KERNEL;
	cfg->cache.block = PACER_DEFAULT_BLOCK;
	cfg->cache.hit_bandwidth = PACER_DEFAULT_HIT_BW;
	snprintf(cfg->cache.origin, sizeof(cfg->cache.origin), "default (no storage model)");
	cfg->share.policy = DL_SHARE_FCFS;
	cfg->share.window_ns = PACER_DEFAULT_SHARE_WINDOW;
}

void dl_pacer_cfg_free(struct dl_pacer_cfg *cfg)
{
	if (!cfg)
		return;
	free_models(cfg->m);
	for (unsigned p = 0; p < DL_PACER_MAX_PHASES; p++)
		free_models(cfg->phases[p].m);
}

int dl_pacer_cfg_copy(struct dl_pacer_cfg *dst, const struct dl_pacer_cfg *src)
{
	struct dl_pacer_cfg t = *src;
	unsigned p;
	int ret;

	ret = copy_models(t.m, src->m);
	if (ret)
		return ret;
	for (p = 0; p < DL_PACER_MAX_PHASES; p++) {
		ret = copy_models(t.phases[p].m, src->phases[p].m);
		if (ret) {
			free_models(t.m);
			while (p--)
				free_models(t.phases[p].m);
			return ret;
		}
	}
	*dst = t;
	return 0;
}

uint64_t pacer_cache_blocks(const struct dl_cache_cfg *c)
{
	if (!c->block)
		return 0;
	return c->size / c->block;
}

/* A bandwidth (0: unlimited) at which one request of the largest size
 * waits no longer than any request may. */
static int check_rate(uint64_t bw, const char *prefix, const char *what, char *err, size_t errlen)
{
	char why[256];

	if (!rate_bound(bw, why, sizeof(why)))
		return 0;
	snprintf(err, errlen, "%s%s.bandwidth: %s", prefix, what, why);
	return -EINVAL;
}

static int check_models(const struct dl_dev_model *m, const char *prefix, char *err, size_t errlen)
{
	char why[256];

	for (int c = 0; c < DL_OP__COUNT; c++) {
		if (pacer_lat_check(&m[c].latency, why, sizeof(why))) {
			snprintf(err, errlen, "%s%s.latency: %s", prefix, pacer_class_names[c],
				 why);
			return -EINVAL;
		}
		if (pacer_lat_check(&m[c].cached_latency, why, sizeof(why))) {
			snprintf(err, errlen, "%s%s.cached_latency: %s", prefix,
				 pacer_class_names[c], why);
			return -EINVAL;
		}
		if (c != DL_OP_META && m[c].cached_latency.kind != DL_LAT_NONE) {
			snprintf(err, errlen,
				 "%s%s.cached_latency: only metadata has an inode cache (use "
				 "meta.cached_latency; a cache of data is cache.policy)",
				 prefix, pacer_class_names[c]);
			return -EINVAL;
		}
		if (c != DL_OP_META && (m[c].device_ios_ppm || m[c].readdir_ios_ppm)) {
			snprintf(err, errlen,
				 "%s%s.%s: only metadata has it (meta.device_ios, meta.readdir_ios: the "
				 "device reads of a request for an uncached inode, of a first listing)",
				 prefix, pacer_class_names[c],
				 m[c].device_ios_ppm ? "device_ios" : "readdir_ios");
			return -EINVAL;
		}
		if (pacer_sizes_check(&m[c].lat_size, why, sizeof(why))) {
			snprintf(err, errlen, "%s%s.latency_by_size: %s", prefix,
				 pacer_class_names[c], why);
			return -EINVAL;
		}
		if (pacer_conc_check(&m[c].conc, why, sizeof(why))) {
			snprintf(err, errlen, "%s%s.bandwidth_by_concurrency: %s", prefix,
				 pacer_class_names[c], why);
			return -EINVAL;
		}
		if (check_rate(m[c].bandwidth, prefix, pacer_class_names[c], err, errlen))
			return -EINVAL;
		if (m[c].transfer && (m[c].lat_size.n || m[c].conc.n)) {
			snprintf(err, errlen,
				 "%s%s.transfer: a device model (transfer, refill, noise) and the "
				 "tables latency_by_size / bandwidth_by_concurrency describe the same "
				 "thing two ways: use one (transfer=0 or KEY=none)",
				 prefix, pacer_class_names[c]);
			return -EINVAL;
		}
		if (m[c].lanes > DL_PACER_MAX_LANES) {
			snprintf(err, errlen, "%s%s.lanes: at most %d", prefix, pacer_class_names[c],
				 DL_PACER_MAX_LANES);
			return -EINVAL;
		}
		if (m[c].max_request && (m[c].max_request < 4096 || m[c].max_request > (1ULL << 30))) {
			snprintf(err, errlen, "%s%s.max_request: 4KiB to 1GiB (or 0: 4MiB)", prefix,
				 pacer_class_names[c]);
			return -EINVAL;
		}
		if (m[c].queue_depth > PACER_MAX_QUEUE_DEPTH) {
			snprintf(err, errlen, "%s%s.queue_depth: at most %u", prefix,
				 pacer_class_names[c], PACER_MAX_QUEUE_DEPTH);
			return -EINVAL;
		}
	}
	return 0;
}

int dl_pacer_cfg_check(const struct dl_pacer_cfg *cfg, char *err, size_t errlen)
{
	const struct dl_cache_cfg *c = &cfg->cache;
	char prefix[32], a[32], b[32];
	uint64_t blocks;
	int ret;

	ret = check_models(cfg->m, "", err, errlen);
	if (ret)
		return ret;
	if (cfg->blksize && (cfg->blksize < 512 || cfg->blksize > (16ULL << 20) ||
			     (cfg->blksize & (cfg->blksize - 1)))) {
		snprintf(err, errlen, "blksize: a power of two from 512 to 16MiB (or 0: 1MiB)");
		return -EINVAL;
	}
	if (cfg->nphases > DL_PACER_MAX_PHASES) {
		snprintf(err, errlen, "phases.count: at most %d phases", DL_PACER_MAX_PHASES);
		return -EINVAL;
	}
	for (unsigned p = 0; p < cfg->nphases; p++) {
		snprintf(prefix, sizeof(prefix), "phases.%u.", p);
		if (!cfg->phases[p].duration_ns) {
			snprintf(err, errlen,
				 "phases.%u.duration: every phase needs a duration above 0", p);
			return -EINVAL;
		}
		ret = check_models(cfg->phases[p].m, prefix, err, errlen);
		if (ret)
			return ret;
	}
	if ((unsigned)c->policy > DL_CACHE_MINIO) {
		snprintf(err, errlen, "cache.policy: expected kernel, none, lru or minio");
		return -EINVAL;
	}
	if (!c->block) {
		snprintf(err, errlen, "cache.block: must be above 0 (e.g. 1MiB)");
		return -EINVAL;
	}
	if ((c->policy == DL_CACHE_LRU || c->policy == DL_CACHE_MINIO) &&
	    c->size < DL_CACHE_UNIT) {
		snprintf(err, errlen,
			 "cache.size: policy %s needs the cache's size (e.g. cache.size=32GiB); "
			 "a cache of %llu bytes would never hit",
			 pacer_policy_names[c->policy], (unsigned long long)c->size);
		return -EINVAL;
	}
	blocks = pacer_cache_blocks(c);
	if ((c->policy == DL_CACHE_LRU || c->policy == DL_CACHE_MINIO) &&
	    blocks > PACER_MAX_CACHE_BLOCKS) {
		pacer_fmt_size(c->size, a, sizeof(a), "");
		pacer_fmt_size(c->block, b, sizeof(b), "");
		snprintf(err, errlen,
			 "cache.size: %s in blocks of %s needs %llu blocks of residency metadata; "
			 "at most %llu (64Mi) are allowed: use a larger cache.block",
			 a, b, (unsigned long long)blocks,
			 (unsigned long long)PACER_MAX_CACHE_BLOCKS);
		return -EINVAL;
	}
	if ((unsigned)cfg->share.policy > DL_SHARE_FAIR) {
		snprintf(err, errlen, "share.policy: expected fcfs or fair");
		return -EINVAL;
	}
	if (cfg->share.nrules > DL_PACER_MAX_RULES) {
		snprintf(err, errlen, "share.jobs: at most %d rules", DL_PACER_MAX_RULES);
		return -EINVAL;
	}
	if (cfg->share.nrules && cfg->share.policy != DL_SHARE_FAIR) {
		snprintf(err, errlen,
			 "share.jobs: per-job weights and caps apply with share.policy fair "
			 "(fcfs has one queue for every job)");
		return -EINVAL;
	}
	if (cfg->share.window_ns < 1000000 || cfg->share.window_ns > 60 * PACER_NS) {
		snprintf(err, errlen, "share.window: expected 1ms to 60s");
		return -EINVAL;
	}
	for (unsigned r = 0; r < cfg->share.nrules; r++) {
		const struct dl_share_rule *ru = &cfg->share.rules[r];

		if (!ru->match[0]) {
			snprintf(err, errlen,
				 "share.jobs.%u.match: every rule needs the text a job name contains",
				 r);
			return -EINVAL;
		}
		if (ru->weight < 1 || ru->weight > 1000000) {
			snprintf(err, errlen, "share.jobs.%u.weight: expected 1 to 1000000", r);
			return -EINVAL;
		}
		snprintf(prefix, sizeof(prefix), "share.jobs.%u", r);
		if (check_rate(ru->bandwidth, "", prefix, err, errlen))
			return -EINVAL;
	}
	return 0;
}

