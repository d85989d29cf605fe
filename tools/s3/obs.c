/* The endpoint's statistics, live settings and trace (obs.h). Requests
 * record themselves while a trace runs; start and stop may race with them,
 * so recorders are counted and a stop waits for them before the file is
 * closed (as the mount's trace hook does). The trace's name table maps each
 * file id to "bucket/key" and each job id to its name, learnt as requests
 * come (an object never requested costs nothing). */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/htab.h"
#include "dliofs/json.h"
#include "dliofs/trace.h"
#include "obs.h"
#include "s3_i.h"

struct name {
	struct dl_hlink l;
	uint64_t id;
	char s[];
};

struct dl_s3_obs {
	_Atomic(struct dl_trace *) trace;
	atomic_uint users;	 /* recorders inside dl_s3_obs_record */
	pthread_mutex_t lock;	 /* start/stop and the fields below */
	uint32_t ops;		 /* the running trace's ops mask */
	uint64_t dropped_total;	 /* over every trace since the start */
	char path[4096], config[256], last[4200];
	pthread_mutex_t names_lock;
	struct dl_htab names;
};

static uint64_t id_hash(uint64_t id)
{
	return (id ^ (id >> 29)) * 0x9e3779b97f4a7c15ULL;
}

static struct name *name_find(struct dl_s3_obs *o, uint64_t id)
{
	for (struct dl_hlink *l = dl_htab_first(&o->names, id_hash(id)); l; l = dl_htab_next(l)) {
		struct name *n = dl_hentry(l, struct name, l);

		if (n->id == id)
			return n;
	}
	return NULL;
}

/* Learn id's name (once). Out of memory: the table lacks it, the trace
 * still has the record. */
static void name_learn(struct dl_s3_obs *o, uint64_t id, const char *s)
{
	struct name *n;

	pthread_mutex_lock(&o->names_lock);
	if (!name_find(o, id) && !dl_htab_reserve(&o->names, o->names.count + 1)) {
		size_t len = strlen(s) + 1;

		n = malloc(sizeof(*n) + len);
		if (n) {
			n->id = id;
			memcpy(n->s, s, len);
			dl_htab_add(&o->names, &n->l, id_hash(id));
		}
	}
	pthread_mutex_unlock(&o->names_lock);
}

static int path_of(void *arg, uint64_t id, char *buf, size_t len)
{
	struct dl_s3_obs *o = arg;
	struct name *n;
	int ret = -ENOENT;

	pthread_mutex_lock(&o->names_lock);
	n = name_find(o, id);
	if (n)
		ret = snprintf(buf, len, "%s", n->s) < (int)len ? 0 : -ENAMETOOLONG;
	pthread_mutex_unlock(&o->names_lock);
	return ret;
}

static void free_name(struct dl_hlink *l, void *arg)
{
	(void)arg;
	free(dl_hentry(l, struct name, l));
}

/* o->lock held. */
static int trace_start(struct dl_s3_obs *o, const char *path, uint32_t ops, char *why, size_t wl)
{
	struct dl_trace *t;
	int fd, created, ret;

	if (atomic_load(&o->trace)) {
		snprintf(why, wl, "a trace is running: stop it first");
		return -EBUSY;
	}
	ret = dl_trace_open_target(path, &fd, &created, why, wl);
	if (ret)
		return ret;
	ret = dl_trace_start_fd(fd, o->config, ops, path_of, o, &t);
	if (ret) {
		snprintf(why, wl, "cannot trace to %s: %s", path, strerror(-ret));
		if (created)
			unlink(path);
		return ret;
	}
	o->ops = ops;
	snprintf(o->path, sizeof(o->path), "%s", path);
	atomic_store(&o->trace, t);
	fprintf(stderr, "dliofs s3: tracing to %s\n", path);
	return 0;
}

/* o->lock held. */
static int trace_stop(struct dl_s3_obs *o)
{
	struct dl_trace *t = atomic_exchange(&o->trace, NULL);
	struct dl_trace_result res;
	int ret;

	if (!t)
		return -ENOENT;
	while (atomic_load(&o->users))
		sched_yield();
	ret = dl_trace_finish(t, &res);
	o->dropped_total += res.dropped_rings + res.dropped_io;
	snprintf(o->last, sizeof(o->last), "last %s: %llu records, %llu dropped\n", o->path,
		 (unsigned long long)res.written,
		 (unsigned long long)(res.dropped_rings + res.dropped_io));
	fprintf(stderr, "dliofs s3: trace %s", o->last + 5);
	return ret;
}

int dl_s3_obs_new(const char *config_path, const char *trace_file, uint32_t trace_ops,
		  struct dl_s3_obs **out)
{
	struct dl_s3_obs *o = calloc(1, sizeof(*o));
	char why[512];
	int ret = 0;

	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	pthread_mutex_init(&o->names_lock, NULL);
	snprintf(o->config, sizeof(o->config), "%s", config_path ? config_path : "");
	if (trace_file && trace_file[0]) {
		why[0] = 0;
		pthread_mutex_lock(&o->lock);
		ret = trace_start(o, trace_file, trace_ops ? trace_ops : ~0u, why, sizeof(why));
		pthread_mutex_unlock(&o->lock);
		if (ret) {
			fprintf(stderr, "dliofs s3: trace: %s\n", why[0] ? why : strerror(-ret));
			dl_s3_obs_free(o);
			return ret;
		}
	}
	*out = o;
	return 0;
}

void dl_s3_obs_free(struct dl_s3_obs *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&o->lock);
	trace_stop(o);
	pthread_mutex_unlock(&o->lock);
	dl_htab_drain(&o->names, free_name, NULL);
	pthread_mutex_destroy(&o->names_lock);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

int dl_s3_obs_tracing(struct dl_s3_obs *o)
{
	return o && atomic_load_explicit(&o->trace, memory_order_relaxed) != NULL;
}

void dl_s3_obs_record(struct dl_s3_obs *o, unsigned op, uint64_t file_id, const char *key,
		      uint32_t job, const char *job_name, uint64_t start_ns, uint64_t end_ns,
		      uint64_t queue_ns, uint64_t off, uint64_t len, int64_t result)
{
	struct dl_trace_rec rec;
	struct dl_trace *t;
	uint64_t dur = end_ns > start_ns ? end_ns - start_ns : 0;

	if (!o || !atomic_load_explicit(&o->trace, memory_order_relaxed))
		return;
	atomic_fetch_add(&o->users, 1);
	t = atomic_load(&o->trace);
	if (t && (o->ops & (1u << op))) {
		name_learn(o, file_id, key);
		if (job)
			name_learn(o, DL_TRACE_JOB_ID(job), job_name);
		memset(&rec, 0, sizeof(rec));
		rec.start_ns = start_ns;
		rec.dur_ns_lo = (uint32_t)dur;
		rec.dur_ns_hi = (uint16_t)(dur >> 32);
		rec.op = (uint8_t)op;
		rec.queue_ns = queue_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)queue_ns;
		rec.job = job;
		rec.file_id = file_id;
		rec.offset = off;
		rec.size = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
		rec.result = result < INT32_MIN ? INT32_MIN : result > INT32_MAX ? INT32_MAX
										  : (int32_t)result;
		if (result < 0)
			rec.flags |= 2;
		dl_trace_record(t, &rec);
	}
	atomic_fetch_sub(&o->users, 1);
}

int dl_s3_obs_stats_json(struct dl_s3 *s, char **buf, size_t *len)
{
	struct dl_s3_obs *o = s->obs;
	FILE *f;
	struct dl_jw w;
	struct dl_trace *t;
	int ret;

	if (!s->pacer)
		return -ENOENT;
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	dl_jw_init(&w, f, 2);
	dl_jw_obj(&w, NULL);
	ret = dl_pacer_stats_write(s->pacer, dl_mono_ns(), &w);
	if (!ret && o) {
		pthread_mutex_lock(&o->lock);
		t = atomic_load(&o->trace);
		dl_jw_obj(&w, "trace");
		dl_jw_bool(&w, "active", t != NULL);
		dl_jw_u64(&w, "records", t ? dl_trace_written(t) : 0);
		dl_jw_u64(&w, "dropped", t ? dl_trace_dropped(t) : 0);
		dl_jw_u64(&w, "dropped_since_start",
			  o->dropped_total + (t ? dl_trace_dropped(t) : 0));
		dl_jw_end(&w);
		pthread_mutex_unlock(&o->lock);
	}
	if (!ret)
		ret = dl_jw_finish(&w);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return ret;
}

static const char *cache_policy_name(enum dl_cache_policy p)
{
	static const char *const names[] = {"kernel", "none", "lru", "minio"};

	return (unsigned)p < 4 ? names[p] : "?";
}

int dl_s3_obs_read(struct dl_s3 *s, enum dl_ctl_file f, char **buf, size_t *len, char *why,
		   size_t wl)
{
	struct dl_s3_obs *o = s->obs;
	struct dl_pacer_cfg pc;
	FILE *m;
	int ret, n;

	*buf = NULL;
	*len = 0;
	if (!s->pacer)
		return -ENOENT;
	switch (f) {
	case DL_CTL_STATS:
		return dl_s3_obs_stats_json(s, buf, len);
	case DL_CTL_PACER:
		if ((ret = dl_pacer_get_cfg(s->pacer, &pc)))
			return ret;
		m = open_memstream(buf, len);
		if (!m) {
			dl_pacer_cfg_free(&pc);
			return -ENOMEM;
		}
		dl_pacer_cfg_dump(&pc, m, 0);
		dl_pacer_cfg_free(&pc);
		return fclose(m) ? -ENOMEM : 0;
	case DL_CTL_CACHE:
		n = asprintf(buf, "policy %s\n", cache_policy_name(dl_pacer_cache_policy(s->pacer)));
		break;
	case DL_CTL_TRACE: {
		struct dl_trace *t;

		pthread_mutex_lock(&o->lock);
		t = atomic_load(&o->trace);
		n = t ? asprintf(buf, "on %s\nrecords %llu\ndropped %llu\n%s", o->path,
				 (unsigned long long)dl_trace_written(t),
				 (unsigned long long)dl_trace_dropped(t), o->last)
		      : asprintf(buf, "off\ndropped %llu\n%s",
				 (unsigned long long)o->dropped_total, o->last);
		pthread_mutex_unlock(&o->lock);
		break;
	}
	default:
		snprintf(why, wl, "the endpoint has no %s: its config is %s", dl_ctl_names[f],
			 o->config);
		return -ENOENT;
	}
	if (n < 0) {
		*buf = NULL;
		return -ENOMEM;
	}
	*len = (size_t)n;
	return 0;
}

/* Lines of text split at any of seps, blanks trimmed, empty ones dropped:
 * into v (at most max); their count or -E2BIG. text is modified. */
static int lines(char *text, const char *seps, char **v, int max)
{
	int n = 0;

	for (char *save = NULL, *l = strtok_r(text, seps, &save); l;
	     l = strtok_r(NULL, seps, &save)) {
		char *e = l + strlen(l);

		while (isspace((unsigned char)*l))
			l++;
		while (e > l && isspace((unsigned char)e[-1]))
			*--e = 0;
		if (!*l)
			continue;
		if (n == max)
			return -E2BIG;
		v[n++] = l;
	}
	return n;
}

/* key=value lines on a copy of the model in force, installed at once. */
static int tx_pacer(struct dl_s3 *s, char **v, int n, char *why, size_t wl)
{
	struct dl_pacer_cfg copy;
	int ret;

	if (n == 0) {
		snprintf(why, wl, "expected key=value lines");
		return -EINVAL;
	}
	if ((ret = dl_pacer_get_cfg(s->pacer, &copy)))
		return ret;
	for (int i = 0; i < n && !ret; i++) {
		char *eq = strchr(v[i], '='), *k = v[i], *e, msg[512];

		if (!eq) {
			snprintf(why, wl, "setting %d: '%.200s': expected key=value", i + 1, v[i]);
			ret = -EINVAL;
			break;
		}
		*eq = 0;
		for (e = eq; e > k && isspace((unsigned char)e[-1]);)
			*--e = 0;
		for (e = eq + 1; isspace((unsigned char)*e);)
			e++;
		if ((ret = dl_pacer_cfg_set(&copy, k, e, msg, sizeof(msg))))
			snprintf(why, wl, "setting %d of %d: %s", i + 1, n, msg);
		*eq = '=';
	}
	if (!ret)
		ret = dl_pacer_set_cfg(s->pacer, &copy, why, wl);
	if (!ret)
		fprintf(stderr, "dliofs s3: pacer: %d setting%s applied, first %s\n", n,
			n == 1 ? "" : "s", v[0]);
	dl_pacer_cfg_free(&copy);
	return ret;
}

static int tx_trace(struct dl_s3_obs *o, char **v, int n, char *why, size_t wl)
{
	uint32_t mask = ~0u;
	char *path;
	int ret;

	if (n != 1) {
		snprintf(why, wl, "expected one command per write: 'start [ops=LIST] /abs/file' or "
				  "'stop' (got %d)", n);
		return -EINVAL;
	}
	pthread_mutex_lock(&o->lock);
	if (!strcmp(v[0], "stop")) {
		ret = trace_stop(o);
		if (ret == -ENOENT)
			snprintf(why, wl, "stop: no trace is running");
		goto out;
	}
	ret = -EINVAL;
	if (strncmp(v[0], "start", 5) || !isspace((unsigned char)v[0][5])) {
		snprintf(why, wl, "'%.200s': expected 'start [ops=LIST] /abs/file' or 'stop'", v[0]);
		goto out;
	}
	path = v[0] + 6;
	while (isspace((unsigned char)*path))
		path++;
	if (!strncmp(path, "ops=", 4)) {
		char *ops = path + 4, *end = ops + strcspn(ops, " \t");

		path = *end ? end + 1 : end;
		*end = 0;
		if ((ret = dl_trace_ops_parse(strcmp(ops, "all") ? ops : NULL, &mask, why, wl)))
			goto out;
		while (isspace((unsigned char)*path))
			path++;
	}
	if (path[0] != '/') {
		snprintf(why, wl, "start: the trace file must be an absolute path");
		ret = -EINVAL;
		goto out;
	}
	ret = trace_start(o, path, mask, why, wl);
out:
	pthread_mutex_unlock(&o->lock);
	return ret;
}

int dl_s3_obs_write(struct dl_s3 *s, enum dl_ctl_file f, const char *text, size_t len,
		    char *why, size_t wl)
{
	char *copy, *v[4096];
	int n, ret;

	if (memchr(text, 0, len)) {
		snprintf(why, wl, "a NUL byte: control files take text");
		return -EINVAL;
	}
	if (!(copy = strndup(text, len)))
		return -ENOMEM;
	n = lines(copy, f == DL_CTL_PACER ? "\n;" : "\n", v, 4096);
	if (n < 0) {
		snprintf(why, wl, "more than 4096 lines");
		ret = n;
		goto out;
	}
	switch (f) {
	case DL_CTL_PACER:
		ret = tx_pacer(s, v, n, why, wl);
		break;
	case DL_CTL_STATS:
		ret = n == 1 && !strcmp(v[0], "reset") ? 0 : -EINVAL;
		if (ret)
			snprintf(why, wl, "the only command is 'reset'");
		else
			dl_pacer_stats_reset(s->pacer);
		break;
	case DL_CTL_CACHE:
		ret = n == 1 && !strcmp(v[0], "drop") ? 0 : -EINVAL;
		if (ret)
			snprintf(why, wl, "the endpoint's cache takes 'drop' (objects are not "
					  "paths to warm)");
		else
			dl_pacer_cache_drop(s->pacer);
		break;
	case DL_CTL_TRACE:
		ret = tx_trace(s->obs, v, n, why, wl);
		break;
	default:
		snprintf(why, wl, "read-only");
		ret = -EACCES;
	}
out:
	free(copy);
	return ret;
}
