/* `.dliofs/`: statistics, effective config, live pacer settings, cache control. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing.h"
#include "control.h"
#include "fs_i.h"
#include "reply.h"

const char *const dl_ctl_names[DL_CTL__COUNT] = {
	[DL_CTL_DIR] = DL_CTL_DIRNAME,
	[DL_CTL_STATS] = "stats.json",
	[DL_CTL_CONFIG] = "config.yaml",
	[DL_CTL_PACER] = "pacer",
	[DL_CTL_CACHE] = "cache",
	[DL_CTL_TRACE] = "trace",
};

int dl_ctl_lookup(const char *name, unsigned *id)
{
	for (unsigned i = 1; i < DL_CTL__COUNT; i++) {
		if (strcmp(name, dl_ctl_names[i]) == 0) {
			*id = i;
			return 0;
		}
	}
	return -ENOENT;
}

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
static int add_trace_stats(struct dl_fs *fs, char **buf, size_t *len)
{
	uint64_t written = 0, dropped = 0, total;
	char *end, *out;
	int active, n;

	end = *len ? memrchr(*buf, '}', *len) : NULL;
	if (!end)
		return 0;
	pthread_mutex_lock(&fs->trace_lock);
	struct dl_trace *t = atomic_load(&fs->trace);
	active = t != NULL;
	if (t) {
		written = dl_trace_written(t);
		dropped = dl_trace_dropped(t);
	}
	total = fs->trace_dropped_total + dropped;
	pthread_mutex_unlock(&fs->trace_lock);
	n = asprintf(&out,
		     "%.*s, \"trace\": {\"active\": %s, \"records\": %llu, \"dropped\": %llu, "
		     "\"dropped_since_mount\": %llu}}\n",
		     (int)(end - *buf), *buf, active ? "true" : "false",
		     (unsigned long long)written, (unsigned long long)dropped,
		     (unsigned long long)total);
	if (n < 0)
		return -ENOMEM;
	free(*buf);
	*buf = out;
	*len = (size_t)n;
	return 0;
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
		ret = dl_pacer_stats_json(fs->pacer, dl_now_ns(), buf, len);
		if (!ret)
			ret = add_trace_stats(fs, buf, len);
		return ret ? ret : dl_bk_add_stats(fs, buf, len);
	case DL_CTL_CONFIG:
	case DL_CTL_PACER:
		m = open_memstream(buf, len);
		if (!m)
			return -ENOMEM;
		if (id == DL_CTL_CONFIG) {
			ret = dl_config_dump(fs->cfg, m);
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
	case DL_CTL_CACHE:
		*buf = strdup("commands: drop | warm <path inside the mount>\n");
		*len = *buf ? strlen(*buf) : 0;
		return *buf ? 0 : -ENOMEM;
	case DL_CTL_TRACE: {
		struct dl_trace *t;
		int n;
		pthread_mutex_lock(&fs->trace_lock);
		t = atomic_load(&fs->trace);
		n = t ? asprintf(buf, "on %s\nrecords %llu\ndropped %llu\n", fs->trace_path,
				 (unsigned long long)dl_trace_written(t),
				 (unsigned long long)dl_trace_dropped(t))
		      : asprintf(buf, "off\ndropped %llu\n",
				 (unsigned long long)fs->trace_dropped_total);
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

/* Split text into non-empty trimmed lines; calls fn on each until it fails. */
static int each_line(const char *text, size_t len, int (*fn)(struct dl_fs *, char *, void *),
		     struct dl_fs *fs, void *arg)
{
	char *copy = strndup(text, len), *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (char *line = strtok_r(copy, "\n;", &save); line; line = strtok_r(NULL, "\n;", &save)) {
		char *end;
		while (isspace((unsigned char)*line))
			line++;
		end = line + strlen(line);
		while (end > line && isspace((unsigned char)end[-1]))
			*--end = 0;
		if (!*line || *line == '#')
			continue;
		ret = fn(fs, line, arg);
		if (ret)
			break;
	}
	free(copy);
	return ret;
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

/* First pass: apply to a copy, so a bad line changes nothing. */
static int pacer_check_line(struct dl_fs *fs, char *line, void *arg)
{
	struct dl_pacer_cfg *copy = arg;
	char err[256], *key, *val, *l = strdup(line);
	int ret;

	if (!l)
		return -ENOMEM;
	if (split_kv(l, &key, &val)) {
		fprintf(stderr, "dliofs: .dliofs/pacer: '%s': expected key=value\n", line);
		free(l);
		return -EINVAL;
	}
	ret = dl_pacer_cfg_set(copy, key, val, err, sizeof(err));
	if (!ret)
		ret = dl_pacer_cfg_check(copy, err, sizeof(err));
	if (ret)
		fprintf(stderr, "dliofs: .dliofs/pacer: %s\n", err);
	(void)fs;
	free(l);
	return ret;
}

static int pacer_apply_line(struct dl_fs *fs, char *line, void *arg)
{
	char err[256], *key, *val;
	int ret;

	(void)arg;
	if (split_kv(line, &key, &val))
		return -EINVAL;
	ret = dl_pacer_set(fs->pacer, key, val, err, sizeof(err));
	if (ret)
		fprintf(stderr, "dliofs: .dliofs/pacer: %s\n", err);
	else
		fprintf(stderr, "dliofs: pacer: %s=%s\n", key, val);
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
			dl_pacer_cache_warm(fs->pacer, dl_node_ino(n), f.size);
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

static int cache_line(struct dl_fs *fs, char *line, void *arg)
{
	struct dl_node n = {.type = DL_NODE_ROOT}, c;
	char *path, *save = NULL;
	int ret;

	(void)arg;
	if (strcmp(line, "drop") == 0) {
		dl_pacer_cache_drop(fs->pacer);
		fprintf(stderr, "dliofs: emulated cache dropped\n");
		return 0;
	}
	if (strncmp(line, "warm", 4) != 0 || !isspace((unsigned char)line[4])) {
		fprintf(stderr, "dliofs: .dliofs/cache: '%s': expected 'drop' or 'warm <path>'\n",
			line);
		return -EINVAL;
	}
	path = line + 5;
	while (isspace((unsigned char)*path))
		path++;
	for (char *comp = strtok_r(path, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		ret = dl_node_lookup(fs, &n, comp, &c);
		if (ret) {
			fprintf(stderr, "dliofs: .dliofs/cache: warm: no '%s' in the mount\n", comp);
			return -ENOENT;
		}
		n = c;
	}
	ret = warm_node(fs, &n, 0);
	if (!ret)
		fprintf(stderr, "dliofs: emulated cache warmed\n");
	return ret;
}

/* "start <file> [ops]" or "stop". */
static int trace_line(struct dl_fs *fs, char *line, void *arg)
{
	char *save = NULL, *cmd = strtok_r(line, " \t", &save);
	char *file = strtok_r(NULL, " \t", &save), *ops = strtok_r(NULL, " \t", &save);
	uint32_t mask;
	int ret;

	(void)arg;
	if (cmd && !strcmp(cmd, "stop"))
		return dl_fs_trace_stop(fs);
	if (!cmd || strcmp(cmd, "start") || !file || file[0] != '/') {
		fprintf(stderr, "dliofs: .dliofs/trace: expected 'start /abs/file [ops]' or 'stop'\n");
		return -EINVAL;
	}
	{
		char err[256];
		ret = dl_trace_ops_parse(ops && strcmp(ops, "all") ? ops : NULL, &mask, err,
					 sizeof(err));
		if (ret) {
			fprintf(stderr, "dliofs: .dliofs/trace: %s\n", err);
			return ret;
		}
	}
	ret = dl_fs_trace_start(fs, file, mask);
	if (ret)
		fprintf(stderr, "dliofs: .dliofs/trace: cannot start %s: %s\n", file,
			strerror(-ret));
	return ret;
}

int dl_ctl_write(struct dl_fs *fs, unsigned id, const char *text, size_t len)
{
	struct dl_pacer_cfg copy;
	int ret;

	if (!fs->pacer && (id == DL_CTL_PACER || id == DL_CTL_CACHE || id == DL_CTL_STATS)) {
		fprintf(stderr, "dliofs: %s: the mount runs with --no-pacer\n", dl_ctl_names[id]);
		return -EINVAL;
	}
	switch (id) {
	case DL_CTL_PACER:
		ret = dl_pacer_get_cfg(fs->pacer, &copy);
		if (ret)
			return ret;
		ret = each_line(text, len, pacer_check_line, fs, &copy);
		dl_pacer_cfg_free(&copy);
		if (ret)
			return ret;
		return each_line(text, len, pacer_apply_line, fs, NULL);
	case DL_CTL_CACHE:
		return each_line(text, len, cache_line, fs, NULL);
	case DL_CTL_TRACE:
		return each_line(text, len, trace_line, fs, NULL);
	case DL_CTL_STATS:
		/* "reset": start every counter and histogram afresh (per-run figures). */
		if (len >= 5 && !strncmp(text, "reset", 5)) {
			dl_pacer_stats_reset(fs->pacer);
			dl_bk_stats_reset(fs);
			return 0;
		}
		fprintf(stderr, "dliofs: .dliofs/stats.json: the only command is 'reset'\n");
		return -EINVAL;
	default:
		return -EACCES;
	}
}
