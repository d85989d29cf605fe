/* `.dliofs/`: statistics, effective config, live pacer settings, cache and
 * trace control. Writes are transactions (control.h): a command is parsed
 * and checked whole before anything of it is applied. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "backing.h"
#include "control.h"
#include "dliofs/json.h"
#include "fs_i.h"
#include "log_i.h"
#include "reply.h"

void dl_ctl_stat(struct dl_fs *fs, unsigned id, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mount_time;
	st->st_blksize = 4096;
	if (id == DL_CTL_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		st->st_size = 4096;
		return;
	}
	st->st_nlink = 1;
	/* Generated on open: size 0, read until EOF (files are direct_io). */
	st->st_mode = S_IFREG | (id == DL_CTL_CONFIG ? 0444 : 0644);
}

/* The trace's counts join the pacer's statistics: dropped records must be
 * visible where people look, not only in the trace footer. */
static void write_trace_stats(struct dl_fs *fs, struct dl_jw *w)
{
	uint64_t written = 0, dropped = 0, total;
	struct dl_trace *t;

	pthread_mutex_lock(&fs->trace_lock);
	t = atomic_load(&fs->trace);
	if (t) {
		written = dl_trace_written(t);
		dropped = dl_trace_dropped(t);
	}
	total = fs->trace_dropped_total + dropped;
	dl_jw_obj(w, "trace");
	dl_jw_bool(w, "active", t != NULL);
	dl_jw_u64(w, "records", written);
	dl_jw_u64(w, "dropped", dropped);
	dl_jw_u64(w, "dropped_since_mount", total);
	dl_jw_bool(w, "disk_full", t && dl_trace_error(t) == -ENOSPC);
	dl_jw_end(w);
	pthread_mutex_unlock(&fs->trace_lock);
}

/* stats.json: the pacer's members, the trace's and the backing
 * directories', in one document. */
static int stats_json(struct dl_fs *fs, char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	struct dl_jw w;
	int ret;

	if (!f)
		return -ENOMEM;
	dl_jw_init(&w, f, 2);
	dl_jw_obj(&w, NULL);
	ret = dl_pacer_stats_write(fs->pacer, dl_now_ns(), &w);
	if (!ret) {
		write_trace_stats(fs, &w);
		dl_bk_stats_write(fs, &w);
		ret = dl_jw_finish(&w);
	}
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return ret;
}

static int warm_node(struct dl_fs *fs, const struct dl_node *n, unsigned depth)
{
	struct dl_node c;
	struct dl_file f;
	char name[256];
	int ret;

	if (n->type == DL_NODE_FILE) {
		ret = dl_node_file(fs, n, &f);
		if (!ret)
			ret = dl_pacer_cache_warm(fs->pacer, dl_node_ino(n), f.size);
		return ret;
	}
	if (n->type == DL_NODE_CTL || depth > 8)
		return 0;
	for (uint64_t k = 0; dl_node_child(fs, n, k, &c, name, sizeof(name)) == 0; k++) {
		ret = warm_node(fs, &c, depth + 1);
		if (ret)
			return ret;
	}
	return 0;
}

static const char *policy_name(enum dl_cache_policy p)
{
	static const char *const names[] = {"kernel", "none", "lru", "minio"};

	return (unsigned)p < 4 ? names[p] : "?";
}

/* The effective config with the storage model in force now (live changes
 * included), not the one the mount started with. */
static int dump_config(struct dl_fs *fs, FILE *m)
{
	struct dl_config live = *fs->cfg;
	int ret;

	if (!fs->pacer)
		return dl_config_dump(fs->cfg, m);
	ret = dl_pacer_get_cfg(fs->pacer, &live.pacer);
	if (ret)
		return ret;
	fprintf(m, "# the storage model below is the one in force now (`dliofs set` included)\n");
	ret = dl_config_dump(&live, m);
	dl_pacer_cfg_free(&live.pacer);
	return ret;
}

int dl_ctl_read_all(struct dl_fs *fs, unsigned id, char **buf, size_t *len)
{
	struct dl_pacer_cfg pc;
	FILE *m;
	int ret = 0;

	*buf = NULL;
	*len = 0;
	if (!fs->pacer && (id == DL_CTL_STATS || id == DL_CTL_PACER)) {
		/* Mounted with --no-pacer: nothing is modelled or counted. */
		*buf = strdup(id == DL_CTL_STATS ? "{\"pacer\": \"disabled (--no-pacer)\"}\n"
						  : "# disabled (--no-pacer)\n");
		*len = *buf ? strlen(*buf) : 0;
		return *buf ? 0 : -ENOMEM;
	}
	switch (id) {
	case DL_CTL_STATS:
		return stats_json(fs, buf, len);
	case DL_CTL_CONFIG:
	case DL_CTL_PACER:
		m = open_memstream(buf, len);
		if (!m)
			return -ENOMEM;
		if (id == DL_CTL_CONFIG) {
			ret = dump_config(fs, m);
		} else {
			ret = dl_pacer_get_cfg(fs->pacer, &pc);
			if (!ret) {
				dl_pacer_cfg_dump(&pc, m, 0);
				dl_pacer_cfg_free(&pc);
			}
		}
		if (fclose(m) && !ret)
			ret = -EIO;
		if (ret) {
			free(*buf);
			*buf = NULL;
			*len = 0;
		}
		return ret;
	case DL_CTL_CACHE: {
		enum dl_cache_policy pol = fs->pacer ? dl_pacer_cache_policy(fs->pacer)
						     : fs->cfg->pacer.cache.policy;
		int n = asprintf(buf,
				 "policy %s\n"
				 "page cache %s\n"
				 "commands: drop | warm <path inside the mount>\n",
				 policy_name(pol),
				 dl_fs_direct_io(fs) ? "bypassed (files open with direct_io)"
						     : "in use (dropped by `drop`)");
		if (n < 0) {
			*buf = NULL;
			return -ENOMEM;
		}
		*len = (size_t)n;
		return 0;
	}
	case DL_CTL_TRACE: {
		struct dl_trace *t;
		int n;
		pthread_mutex_lock(&fs->trace_lock);
		t = atomic_load(&fs->trace);
		n = t ? asprintf(buf, "on %s\nrecords %llu\ndropped %llu\n%s%s", fs->trace_path,
				 (unsigned long long)dl_trace_written(t),
				 (unsigned long long)dl_trace_dropped(t),
				 dl_trace_error(t) == -ENOSPC ? "disk full: recording stopped\n"
							      : "",
				 fs->trace_last)
		      : asprintf(buf, "off\ndropped %llu\n%s",
				 (unsigned long long)fs->trace_dropped_total, fs->trace_last);
		pthread_mutex_unlock(&fs->trace_lock);
		if (n < 0) {
			*buf = NULL;
			return -ENOMEM;
		}
		*len = (size_t)n;
		return 0;
	}
	default:
		return -EISDIR;
	}
}

/* ---- writes: transactions ---- */

/* The lines of a command: trimmed, blank and # lines skipped; ';' also
 * separates pacer settings. Returns the count, or -ENOMEM. */
struct lines {
	char *text;
	char **v;
	unsigned n;
};

static int split_lines(const char *text, size_t len, const char *seps, struct lines *l)
{
	char *save = NULL, *line;
	size_t cap = 16;

	memset(l, 0, sizeof(*l));
	l->text = strndup(text, len);
	l->v = malloc(cap * sizeof(*l->v));
	if (!l->text || !l->v)
		return -ENOMEM;
	for (line = strtok_r(l->text, seps, &save); line; line = strtok_r(NULL, seps, &save)) {
		char *end;

		while (isspace((unsigned char)*line))
			line++;
		end = line + strlen(line);
		while (end > line && isspace((unsigned char)end[-1]))
			*--end = 0;
		if (!*line || *line == '#')
			continue;
		if (l->n == cap) {
			char **nv = realloc(l->v, (cap *= 2) * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			l->v = nv;
		}
		l->v[l->n++] = line;
	}
	return (int)l->n;
}

static void free_lines(struct lines *l)
{
	free(l->text);
	free(l->v);
}

/* Files a setting names (empirical latency tables) are opened with the
 * rights of whoever opened the control file, not the daemon's (root). */
struct creds {
	int switched;
	uid_t uid;
	gid_t gid;
};

static void as_opener(const struct dl_ctl_handle *h, struct creds *c)
{
	c->switched = geteuid() == 0 && h->uid != 0;
	if (!c->switched)
		return;
	/* fsuid is per thread: only this worker's file accesses change. */
	c->gid = (gid_t)setfsgid(h->gid);
	c->uid = (uid_t)setfsuid(h->uid);
}

static void restore(const struct creds *c)
{
	if (!c->switched)
		return;
	setfsuid(c->uid);
	setfsgid(c->gid);
}

static int split_kv(char *line, char **key, char **val)
{
	char *eq = strchr(line, '=');
	char *k_end;

	if (!eq)
		return -EINVAL;
	*eq = 0;
	*key = line;
	*val = eq + 1;
	k_end = eq;
	while (k_end > line && isspace((unsigned char)k_end[-1]))
		*--k_end = 0;
	while (isspace((unsigned char)**val))
		(*val)++;
	return 0;
}

/* Lines key=value set one by one on cfg, in order; the first bad one
 * stops it, its reason in why. Lines naming files (empirical tables) are
 * skipped when skip_files says so. */
static int set_lines(struct dl_pacer_cfg *cfg, const struct lines *l, int skip_files, char *why,
		     size_t wl)
{
	char *key, *val, esc[256];
	int ret = 0, n = (int)l->n;

	for (int i = 0; i < n && !ret; i++) {
		char msg[512], *line;

		if (skip_files && strstr(l->v[i], "empirical"))
			continue;
		line = strdup(l->v[i]);
		if (!line)
			return -ENOMEM;
		dl_log_esc(line, esc, sizeof(esc));
		if (split_kv(line, &key, &val)) {
			snprintf(why, wl, "setting %d: '%s': expected key=value", i + 1, esc);
			ret = -EINVAL;
		} else if ((ret = dl_pacer_cfg_set(cfg, key, val, msg, sizeof(msg)))) {
			snprintf(why, wl, "setting %d of %d: %s", i + 1, n, msg);
		}
		free(line);
	}
	return ret;
}

/* Every setting applied to a copy of the model in force, checked together,
 * then installed at once: cache.policy=lru cache.size=8GiB in one write is
 * one change, and a bad line changes nothing. */
static int tx_pacer(struct dl_fs *fs, struct dl_ctl_handle *h, const char *text, size_t len,
		    char *why, size_t wl)
{
	struct dl_pacer_cfg copy;
	enum dl_cache_policy before;
	struct creds cr;
	struct lines l;
	char esc[256];
	int ret, n;

	n = split_lines(text, len, "\n;", &l);
	if (n < 0) {
		free_lines(&l);
		return n;
	}
	if (n == 0) {
		free_lines(&l);
		snprintf(why, wl, "expected key=value lines");
		return -EINVAL;
	}
	ret = dl_pacer_get_cfg(fs->pacer, &copy);
	if (ret) {
		free_lines(&l);
		return ret;
	}
	before = copy.cache.policy;
	as_opener(h, &cr);
	ret = set_lines(&copy, &l, 0, why, wl);
	restore(&cr);
	if (!ret)
		ret = dl_pacer_set_cfg(fs->pacer, &copy, why, wl);
	if (!ret)
		dl_timer_retime(fs->timer); /* waiting requests: the new model's times */
	if (!ret) {
		fprintf(stderr, "dliofs: pacer: %d setting%s applied:", n, n == 1 ? "" : "s");
		for (int i = 0; i < n && i < 8; i++) {
			dl_log_esc(l.v[i], esc, sizeof(esc));
			fprintf(stderr, " %s%s", esc, i + 1 < n ? "" : "\n");
		}
		if (n > 8)
			fprintf(stderr, " ... (%d in all)\n", n);
		if (copy.cache.policy != before) {
			char origin[96];
			uint64_t k;

			snprintf(origin, sizeof(origin), "dliofs set (was %s)", policy_name(before));
			dl_pacer_cache_origin(fs->pacer, origin);
			/* The next open decides the page cache from the new policy;
			 * what the kernel cached under the old one must not answer. */
			k = dl_fs_drop_kernel_cache(fs);
			fprintf(stderr,
				"dliofs: cache.policy %s -> %s: takes effect for files opened from "
				"now on; kernel pages of %llu files invalidated\n",
				policy_name(before), policy_name(copy.cache.policy),
				(unsigned long long)k);
		}
	}
	dl_pacer_cfg_free(&copy);
	free_lines(&l);
	return ret;
}

#define MAX_WARM 4096

/* Lines "drop" and "warm <path>": all checked (paths exist, the policy can
 * hold something), then done in order. */
static int tx_cache(struct dl_fs *fs, const char *text, size_t len, char *why, size_t wl)
{
	struct dl_node *nodes = NULL;
	char *is_drop = NULL, esc[256];
	struct lines l;
	int ret = 0, n;

	n = split_lines(text, len, "\n", &l);
	if (n <= 0) {
		free_lines(&l);
		if (n < 0)
			return n;
		snprintf(why, wl, "expected 'drop' or 'warm <path>'");
		return -EINVAL;
	}
	if (n > MAX_WARM) {
		snprintf(why, wl, "at most %d commands in one write", MAX_WARM);
		free_lines(&l);
		return -EINVAL;
	}
	nodes = calloc((size_t)n, sizeof(*nodes));
	is_drop = calloc((size_t)n, 1);
	if (!nodes || !is_drop) {
		free(nodes);
		free(is_drop);
		free_lines(&l);
		return -ENOMEM;
	}
	for (int i = 0; i < n && !ret; i++) {
		char *line = l.v[i], *path, *save = NULL;
		struct dl_node cur = {.type = DL_NODE_ROOT}, c;

		dl_log_esc(line, esc, sizeof(esc));
		if (!strcmp(line, "drop")) {
			is_drop[i] = 1;
			continue;
		}
		if (strncmp(line, "warm", 4) || !isspace((unsigned char)line[4])) {
			snprintf(why, wl, "'%s': expected 'drop' or 'warm <path>'", esc);
			ret = -EINVAL;
			break;
		}
		if (!fs->pacer) {
			snprintf(why, wl, "warm: the mount runs with --no-pacer");
			ret = -EINVAL;
			break;
		}
		if (dl_pacer_cache_policy(fs->pacer) == DL_CACHE_KERNEL ||
		    dl_pacer_cache_policy(fs->pacer) == DL_CACHE_NONE) {
			snprintf(why, wl,
				 "warm: the cache policy is %s: no emulated cache to warm (set "
				 "cache.policy=lru or minio and cache.size)",
				 policy_name(dl_pacer_cache_policy(fs->pacer)));
			ret = -EINVAL;
			break;
		}
		path = line + 5;
		for (char *comp = strtok_r(path, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
			while (isspace((unsigned char)*comp))
				comp++;
			if (dl_node_lookup(fs, &cur, comp, &c)) {
				dl_log_esc(comp, esc, sizeof(esc));
				snprintf(why, wl, "warm: no '%s' in the mount", esc);
				ret = -ENOENT;
				break;
			}
			cur = c;
		}
		nodes[i] = cur;
	}
	for (int i = 0; i < n && !ret; i++) {
		if (is_drop[i]) {
			uint64_t k;

			if (fs->pacer)
				dl_pacer_cache_drop(fs->pacer);
			k = dl_fs_drop_kernel_cache(fs);
			fprintf(stderr,
				"dliofs: cache dropped: emulated cache emptied, kernel pages of %llu "
				"files invalidated\n",
				(unsigned long long)k);
		} else {
			ret = warm_node(fs, &nodes[i], 0);
			if (!ret)
				fprintf(stderr, "dliofs: emulated cache warmed\n");
		}
	}
	free(nodes);
	free(is_drop);
	free_lines(&l);
	return ret;
}

/* One command: "stop", or "start [ops=LIST] /abs/path" (the path is the
 * rest of the line, blanks included). */
static int tx_trace(struct dl_fs *fs, const struct dl_ctl_handle *h, const char *text, size_t len,
		    char *why, size_t wl)
{
	char *line, *path, esc[256];
	uint32_t mask = ~0u;
	struct lines l;
	int ret, n;

	n = split_lines(text, len, "\n", &l);
	if (n != 1) {
		free_lines(&l);
		if (n < 0)
			return n;
		snprintf(why, wl, "expected one command per write: 'start [ops=LIST] /abs/file' or "
				  "'stop' (got %d)", n);
		return -EINVAL;
	}
	line = l.v[0];
	if (!strcmp(line, "stop")) {
		ret = dl_fs_trace_stop(fs);
		if (ret == -ENOENT)
			snprintf(why, wl, "stop: no trace is running");
		free_lines(&l);
		return ret;
	}
	if (strncmp(line, "start", 5) || !isspace((unsigned char)line[5])) {
		dl_log_esc(line, esc, sizeof(esc));
		snprintf(why, wl, "'%s': expected 'start [ops=LIST] /abs/file' or 'stop'", esc);
		free_lines(&l);
		return -EINVAL;
	}
	path = line + 6;
	while (isspace((unsigned char)*path))
		path++;
	if (!strncmp(path, "ops=", 4)) {
		char *ops = path + 4, *end = ops;

		while (*end && !isspace((unsigned char)*end))
			end++;
		path = *end ? end + 1 : end;
		*end = 0;
		ret = dl_trace_ops_parse(strcmp(ops, "all") ? ops : NULL, &mask, why, wl);
		if (ret) {
			free_lines(&l);
			return ret;
		}
		while (isspace((unsigned char)*path))
			path++;
	}
	if (path[0] != '/') {
		snprintf(why, wl, "start: the trace file must be an absolute path");
		free_lines(&l);
		return -EINVAL;
	}
	{
		char reason[512] = "";
		struct creds cr;

		/* The file is opened (or made) with the rights of whoever opened
		 * the control file, as a latency table is read. */
		as_opener(h, &cr);
		ret = dl_fs_trace_start(fs, path, mask, 1, reason, sizeof(reason));
		restore(&cr);
		if (ret) {
			dl_log_esc(path, esc, sizeof(esc));
			snprintf(why, wl, "start: cannot trace to %s: %s", esc,
				 reason[0] ? reason : strerror(-ret));
		}
	}
	free_lines(&l);
	return ret;
}

static int tx_stats(struct dl_fs *fs, const char *text, size_t len, char *why, size_t wl)
{
	struct lines l;
	int n = split_lines(text, len, "\n", &l), ok;

	ok = n == 1 && !strcmp(l.v[0], "reset");
	free_lines(&l);
	if (n < 0)
		return n;
	if (!ok) {
		snprintf(why, wl, "the only command is 'reset'");
		return -EINVAL;
	}
	dl_pacer_stats_reset(fs->pacer);
	dl_bk_stats_reset(fs);
	return 0;
}

static int apply(struct dl_fs *fs, struct dl_ctl_handle *h, const char *text, size_t len,
		 char *why, size_t wl)
{
	const char *nul = memchr(text, 0, len);

	if (nul) {
		snprintf(why, wl, "a NUL byte at offset %zu: control files take text",
			 (size_t)(nul - text));
		return -EINVAL;
	}
	if (!fs->pacer && (h->id == DL_CTL_PACER || h->id == DL_CTL_STATS)) {
		snprintf(why, wl, "the mount runs with --no-pacer");
		return -EINVAL;
	}
	switch (h->id) {
	case DL_CTL_PACER:
		return tx_pacer(fs, h, text, len, why, wl);
	case DL_CTL_CACHE:
		return tx_cache(fs, text, len, why, wl);
	case DL_CTL_TRACE:
		return tx_trace(fs, h, text, len, why, wl);
	case DL_CTL_STATS:
		return tx_stats(fs, text, len, why, wl);
	default:
		snprintf(why, wl, "read-only");
		return -EACCES;
	}
}

/* A refusal sticks to the open file: what it gathered is dropped, and the
 * rest of a write the kernel split (or a writer's retry of it) must not
 * become a transaction of its own. Handle lock held. */
static void refuse_handle(struct dl_ctl_handle *h, int err)
{
	h->refused = err;
	free(h->pending);
	h->pending = NULL;
	h->pending_len = h->pending_cap = 0;
}

/* The text is taken out of the handle and applied without its lock: a
 * transaction may open a file on this mount, and a worker must never wait
 * for it (a read of the reason, a write on the same open file). Commits
 * of one handle are not concurrent: the control thread runs them. */
int dl_ctl_commit(struct dl_fs *fs, struct dl_ctl_handle *h)
{
	char why[1024] = "", *text;
	size_t len;
	int ret;

	pthread_mutex_lock(&h->lock);
	ret = h->refused;
	text = h->pending;
	len = h->pending_len;
	if (!ret && len) {
		h->pending = NULL;
		h->pending_len = h->pending_cap = 0;
	}
	pthread_mutex_unlock(&h->lock);
	if (ret || !len)
		return ret;
	ret = apply(fs, h, text, len, why, sizeof(why));
	free(text);
	pthread_mutex_lock(&h->lock);
	free(h->reason);
	h->reason = NULL;
	if (ret) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s", strerror(-ret));
		char ewhy[4 * sizeof(why)];

		/* why quotes what the client wrote: escaped, one log line. */
		fprintf(stderr, "dliofs: .dliofs/%s: refused, nothing applied: %s\n",
			dl_ctl_names[h->id], dl_log_esc(why, ewhy, sizeof(ewhy)));
		if (asprintf(&h->reason, "error: %s\n", why) < 0)
			h->reason = NULL;
		refuse_handle(h, ret);
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int dl_ctl_commit_quick(struct dl_ctl_handle *h)
{
	int ret;

	pthread_mutex_lock(&h->lock);
	ret = h->refused ? h->refused : h->pending_len ? -EAGAIN : 0;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

/* Only gathered: a short piece is not the last one of a writev, so only
 * fsync and close apply. */
static int write_locked(struct dl_ctl_handle *h, const char *buf, size_t len)
{
	if (h->id == DL_CTL_CONFIG || h->id == DL_CTL_DIR)
		return -EACCES;
	if (h->refused)
		return h->refused;
	if (h->pending_len + len > DL_CTL_MAX_WRITE) {
		free(h->reason);
		if (asprintf(&h->reason, "error: a command of more than %u bytes\n",
			     DL_CTL_MAX_WRITE) < 0)
			h->reason = NULL;
		fprintf(stderr, "dliofs: .dliofs/%s: refused, nothing applied: a command of more "
				"than %u bytes\n", dl_ctl_names[h->id], DL_CTL_MAX_WRITE);
		refuse_handle(h, -EFBIG);
		return -EFBIG;
	}
	if (h->pending_len + len > h->pending_cap) {
		size_t cap = h->pending_cap ? h->pending_cap : 4096;
		char *nb;

		while (cap < h->pending_len + len)
			cap *= 2;
		nb = realloc(h->pending, cap);
		if (!nb) {
			/* Not a piece to skip: the whole write goes. */
			free(h->reason);
			h->reason = strdup("error: out of memory for the command\n");
			refuse_handle(h, -ENOMEM);
			return -ENOMEM;
		}
		h->pending = nb;
		h->pending_cap = cap;
	}
	memcpy(h->pending + h->pending_len, buf, len);
	h->pending_len += len;
	return 0;
}

/* The first piece of a pacer transaction is also checked as it arrives,
 * its whole lines against a scratch copy of the model, so a bad setting is
 * refused by the write that carries it: a writer that ignores close's
 * answer (a shell's `echo ... >`) still sees the error, and since nothing
 * came before that piece the refusal is never a short count. Nothing is
 * applied here; the commit at fsync or close checks everything again
 * against the model then in force. Later pieces are left to the commit
 * (an error there would be a short count of the pieces before), and so are
 * lines naming files (empirical tables): the commit opens them off the
 * FUSE workers. Handle lock held. */
static int check_first_piece_locked(struct dl_fs *fs, struct dl_ctl_handle *h)
{
	char why[1024];
	struct dl_pacer_cfg scratch;
	size_t upto = 0;
	struct lines l;
	int n, ret = 0;

	if (h->id != DL_CTL_PACER || !fs->pacer || !h->pending_len)
		return 0;
	for (size_t i = h->pending_len; i > 0; i--)
		if (h->pending[i - 1] == '\n' || h->pending[i - 1] == ';') {
			upto = i;
			break;
		}
	if (!upto || memchr(h->pending, 0, upto))
		return 0; /* no whole line yet; a NUL is the commit's to refuse */
	if (dl_pacer_get_cfg(fs->pacer, &scratch))
		return 0;
	n = split_lines(h->pending, upto, "\n;", &l);
	if (n > 0)
		ret = set_lines(&scratch, &l, 1, why, sizeof(why));
	if (ret == -ENOMEM)
		ret = 0; /* no verdict here: the commit checks it all again */
	free_lines(&l);
	dl_pacer_cfg_free(&scratch);
	if (ret) {
		char ewhy[4 * sizeof(why)];

		free(h->reason);
		if (asprintf(&h->reason, "error: %s\n", why) < 0)
			h->reason = NULL;
		fprintf(stderr, "dliofs: .dliofs/%s: refused, nothing applied: %s\n",
			dl_ctl_names[h->id], dl_log_esc(why, ewhy, sizeof(ewhy)));
		refuse_handle(h, ret);
	}
	return ret;
}

int dl_ctl_write(struct dl_fs *fs, struct dl_ctl_handle *h, const char *buf, size_t len)
{
	int ret;

	pthread_mutex_lock(&h->lock);
	ret = write_locked(h, buf, len);
	if (!ret && h->pending_len == len)
		ret = check_first_piece_locked(fs, h);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int dl_ctl_open(struct dl_fs *fs, unsigned id, int flags, uid_t uid, gid_t gid,
		struct dl_ctl_handle *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	h->id = id;
	h->uid = uid;
	h->gid = gid;
	if ((flags & O_ACCMODE) != O_WRONLY)
		return dl_ctl_read_all(fs, id, &h->snap, &h->snap_len);
	return 0;
}

void dl_ctl_handle_free(struct dl_ctl_handle *h)
{
	free(h->snap);
	free(h->pending);
	free(h->reason);
	pthread_mutex_destroy(&h->lock);
	memset(h, 0, sizeof(*h));
}

int dl_ctl_handle_read(struct dl_ctl_handle *h, uint64_t off, size_t size, char **out,
		       size_t *len)
{
	const char *src;
	size_t total;
	int ret = 0;

	*out = NULL;
	*len = 0;
	pthread_mutex_lock(&h->lock);
	src = h->reason ? h->reason : h->snap;
	total = h->reason ? strlen(h->reason) : h->snap ? h->snap_len : 0;
	if (off < total && size) {
		/* A copy: a commit or close in another thread may free src. */
		*len = size < total - off ? size : (size_t)(total - off);
		*out = malloc(*len);
		if (*out)
			memcpy(*out, src + off, *len);
		else
			ret = -ENOMEM;
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}
