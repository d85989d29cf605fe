/* The mount a job runs on. By default every run gets a fresh daemon (dliofs
 * mount / umount of the config): nothing survives from the run before, not
 * the emulated cache, not the kernel's pages or dentries, not the pacer's
 * token bucket or the daemon's format caches, which is what "every point
 * starts cold" has to mean for a what-if to be believed. With --mount the
 * job runs on a mount the user keeps; then each run applies its settings,
 * drops the caches (emulated and the kernel's pages of served files) and
 * resets the statistics, through the control files. --mount may also name
 * an S3 endpoint's control socket (`dliofs s3 serve --control SOCKET`):
 * the same commands, the endpoint's storage model and cache. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlio_whatif_i.h"
#include "tool_stop_i.h"
#include "dliofs/clock.h"
#include "dliofs/ctl_client.h"
#include "dliofs/exepath.h"
#include "dliofs/json.h"

void wi_find_tool(const char *name, const char *env, char *buf, size_t len)
{
	const char *e = getenv(env);
	char dir[PATH_MAX];

	if (e && *e) {
		snprintf(buf, len, "%s", e);
		return;
	}
	if (!dl_exe_dir(dir, sizeof(dir))) {
		int n = snprintf(buf, len, "%s/%s", dir, name);

		if (n > 0 && (size_t)n < len && !access(buf, X_OK))
			return;
	}
	snprintf(buf, len, "%s", name);
}

static int is_drive(const char *argv0)
{
	const char *b = strrchr(argv0, '/');

	return !strcmp(b ? b + 1 : argv0, "dlio-drive");
}

int wi_env_init(struct wi_env *e, const char *config, const char *mount, char **argv,
		unsigned copies)
{
	const char *tmp = getenv("TMPDIR");

	memset(e, 0, sizeof(*e));
	if (!realpath(config, e->config)) {
		fprintf(stderr, "dlio-whatif: %s: %s\n", config, strerror(errno));
		return -errno;
	}
	e->argv = argv;
	e->copies = copies ? copies : 1;
	e->kind = is_drive(argv[0]) ? WI_JOB_DRIVE : WI_JOB_STALL;
	wi_find_tool("dliofs", "DLIOFS", e->dliofs, sizeof(e->dliofs));
	wi_find_tool("dlio-stall", "DLIO_STALL", e->stall, sizeof(e->stall));
	snprintf(e->workdir, sizeof(e->workdir), "%s/dlio-whatif-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(e->workdir)) {
		fprintf(stderr, "dlio-whatif: mkdtemp %s: %s\n", e->workdir, strerror(errno));
		return -errno;
	}
	if (mount) {
		/* An S3 endpoint's control socket takes the same commands. */
		if (!realpath(mount, e->mnt) ||
		    (!dl_ctl_is_mount(e->mnt) && !dl_ctl_sock_is(e->mnt))) {
			fprintf(stderr,
				"dlio-whatif: --mount %s: not a dliofs mount (no %s/) nor an "
				"endpoint's control socket\n",
				mount, DL_CTL_DIRNAME);
			return -EINVAL;
		}
		e->given_mount = mount;
		return 0;
	}
	if (snprintf(e->mnt, sizeof(e->mnt), "%s/mnt", e->workdir) >= (int)sizeof(e->mnt) ||
	    mkdir(e->mnt, 0755)) {
		fprintf(stderr, "dlio-whatif: mkdir %s: %s\n", e->mnt, strerror(errno));
		return -errno;
	}
	e->own = 1;
	return 0;
}

int wi_env_from_opts(struct wi_env *e, const struct wi_opts *o)
{
	int ret = wi_env_init(e, o->config, o->mount, o->argv, o->jobs);

	if (ret)
		return ret;
	e->keep = o->keep;
	e->quiet = o->quiet || (!o->progress && !isatty(2));
	/* On a terminal redrawn; into a file or a pipe (--progress) a line
	 * per run, so a log still shows it. */
	tool_progress_init(&e->pl, e->quiet, 1);
	e->trace_dir = o->trace_dir[0] ? o->trace_dir : NULL;
	e->t0 = dl_mono_ns();
	return o->nodes ? wi_cluster_init(e, o) : 0;
}

static int rm_tree(const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--one-file-system", "--", dir, (char *)NULL);
		_exit(127);
	}
	return waitpid(pid, &st, 0) < 0 ? -errno : 0;
}

void wi_env_fini(struct wi_env *e)
{
	if (!e->workdir[0])
		return;
	wi_cluster_fini(e);
	if (e->keep && !tool_stop_requested()) {
		fprintf(stderr, "dlio-whatif: the runs' files are kept in %s\n", e->workdir);
		return;
	}
	/* Never remove through a mount that is still up. */
	if (e->own)
		rmdir(e->mnt);
	rm_tree(e->workdir);
}

int wi_run_cmd(char *const argv[], const char *out)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	/* A mount or unmount is short and is let finish when the tool is
	 * stopped meanwhile (what it mounted is then unmounted). */
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void wi_show_file(const char *path, const char *what)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	if (!f)
		return;
	fprintf(stderr, "dlio-whatif: %s (%s):\n", what, path);
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
	fclose(f);
}

int wi_mount(struct wi_env *e, const char *log)
{
	char out[PATH_MAX + 16];
	char *argv[] = {e->dliofs, "mount", e->mnt, (char *)e->config, "--log", (char *)log, NULL};
	int rc;

	if (e->nodes)
		return wi_cluster_mount(e, log);
	if (!e->own)
		return 0;
	snprintf(out, sizeof(out), "%s/mount.out", e->workdir);
	unlink(out);
	rc = wi_run_cmd(argv, out);
	if (rc) {
		fprintf(stderr, "dlio-whatif: %s mount %s %s failed (%d)\n", e->dliofs, e->mnt,
			e->config, rc);
		wi_show_file(out, "its output");
		wi_show_file(log, "the daemon's log");
		return -EIO;
	}
	return 0;
}

int wi_umount(struct wi_env *e)
{
	char out[PATH_MAX + 16];
	char *argv[] = {e->dliofs, "umount", e->mnt, NULL};
	int rc;

	if (e->nodes)
		return wi_cluster_umount(e);
	if (!e->own)
		return 0;
	snprintf(out, sizeof(out), "%s/umount.out", e->workdir);
	rc = wi_run_cmd(argv, out);
	if (rc) {
		char *lazy[] = {"fusermount3", "-u", "-z", "--", e->mnt, NULL};

		fprintf(stderr, "dlio-whatif: %s umount %s failed (%d)\n", e->dliofs, e->mnt, rc);
		wi_show_file(out, "its output");
		/* Still busy (a job's process that outlived it): detached now, the
		 * daemon exits when the last file on it closes. */
		if (wi_run_cmd(lazy, out) == 0)
			fprintf(stderr, "dlio-whatif: %s unmounted lazily\n", e->mnt);
		return -EIO;
	}
	return 0;
}

int wi_cold(struct wi_env *e, const struct wi_kv *kv, unsigned n)
{
	return e->nodes ? wi_cluster_cold(e, kv, n) : wi_cold_at(e->mnt, kv, n);
}

int wi_cold_at(const char *mnt, const struct wi_kv *kv, unsigned n)
{
	char text[WI_MAX_AXES * (WI_KEY + WI_VAL + 2) + 1] = "";
	size_t off = 0;
	int ret;

	for (unsigned i = 0; i < n; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s=%s\n", kv[i].key,
					kv[i].val);
	if (n && (ret = dl_ctl_send(mnt, DL_CTL_PACER, text, off,
				    "dlio-whatif: setting the point on %s failed", mnt)))
		return ret;
	ret = dl_ctl_cache_drop(mnt, "dlio-whatif: cache drop on %s failed", mnt);
	if (!ret)
		ret = dl_ctl_send(mnt, DL_CTL_STATS, "reset\n", 6,
				  "dlio-whatif: statistics reset on %s failed", mnt);
	return ret;
}

int wi_trace_start(struct wi_env *e, const char *path)
{
	char text[PATH_MAX + 16];

	int n = snprintf(text, sizeof(text), "start %s\n", path);

	return dl_ctl_send(e->mnt, DL_CTL_TRACE, text, n < 0 ? 0 : strlen(text),
			   "dlio-whatif: trace start on %s failed", e->mnt);
}

int wi_trace_stop(struct wi_env *e)
{
	return dl_ctl_send(e->mnt, DL_CTL_TRACE, "stop\n", 5, "dlio-whatif: trace stop on %s failed",
			   e->mnt);
}

/* The read class's cache counters of the mount and of each copy's job. */
struct cache_count {
	double hits, misses, partial, hit_bytes, miss_bytes;
};

struct cache_scan {
	int emulated;
	struct cache_count all, copy[WI_MAX_COPIES];
	int job_copy[64]; /* stats.json's jobs.N: which copy, -1 none */
};

/* Added up: a cluster's nodes are read one after another into one scan. */
static void count_field(struct cache_count *c, const char *field, double v)
{
	if (!strcmp(field, "hits"))
		c->hits += v;
	else if (!strcmp(field, "misses"))
		c->misses += v;
	else if (!strcmp(field, "partial"))
		c->partial += v;
	else if (!strcmp(field, "hit_bytes"))
		c->hit_bytes += v;
	else if (!strcmp(field, "miss_bytes"))
		c->miss_bytes += v;
}

static int scan_stats(void *arg, const char *path, const char *value, int is_string)
{
	static const char rc[] = "classes.read.cache.";
	struct cache_scan *s = arg;
	unsigned j, c;
	int n = 0;

	if (!strcmp(path, "cache.policy") && is_string)
		s->emulated = !strcmp(value, "lru") || !strcmp(value, "minio");
	else if (!strncmp(path, rc, sizeof(rc) - 1))
		count_field(&s->all, path + sizeof(rc) - 1, strtod(value, NULL));
	else if (sscanf(path, "jobs.%u.%n", &j, &n) == 1 && n && j < 64) {
		/* A job's name comes before its classes. */
		if (!strcmp(path + n, "name") && is_string &&
		    sscanf(value, "whatif-%u", &c) == 1 && c < WI_MAX_COPIES)
			s->job_copy[j] = (int)c;
		else if (!strncmp(path + n, rc, sizeof(rc) - 1) && s->job_copy[j] >= 0)
			count_field(&s->copy[s->job_copy[j]], path + n + sizeof(rc) - 1,
				    strtod(value, NULL));
	}
	return 0;
}

static void set_ratios(struct wi_figs *f, const struct cache_count *c)
{
	struct wi_cache_counts n = {.reqs = c->hits + c->misses + c->partial,
				    .hits = c->hits,
				    .hit_bytes = c->hit_bytes,
				    .bytes = c->hit_bytes + c->miss_bytes};

	wi_figs_from_cache(f, &n);
}

/* One mount's statistics into s (its job numbers are its own). 0 or -errno. */
static int scan_mount(const char *mnt, struct cache_scan *s)
{
	char *text = NULL;
	size_t len;
	int ret;

	for (size_t j = 0; j < 64; j++)
		s->job_copy[j] = -1;
	ret = dl_ctl_read(mnt, DL_CTL_STATS, &text, &len);
	if (!ret)
		ret = dl_json_flatten(text, len, scan_stats, s);
	free(text);
	return ret;
}

void wi_cache_figs(struct wi_env *e, struct wi_run *out)
{
	struct cache_scan *s = calloc(1, sizeof(*s));
	char mnt[PATH_MAX + 16];

	if (!s)
		return;
	/* The statistics were reset when the run began: this is the run's. A
	 * cluster's are its nodes' together; a remote one's are not read. */
	if (e->remote)
		goto out;
	for (unsigned r = 0; r < (e->nodes ? e->nodes : 1); r++) {
		if (e->nodes)
			snprintf(mnt, sizeof(mnt), "%s/m%u", e->workdir, r);
		if (scan_mount(e->nodes ? mnt : e->mnt, s))
			goto out;
	}
	if (!s->emulated)
		goto out;
	set_ratios(&out->total, &s->all);
	for (unsigned c = 0; c < out->ncopies && c < WI_MAX_COPIES; c++)
		set_ratios(&out->copy[c], &s->copy[c]);
out:
	free(s);
}
