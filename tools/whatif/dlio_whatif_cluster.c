/* --nodes N: the what-if on a cluster of N mounts that share one storage
 * model (README: "Cluster: many mounts, one storage"). Every run is a fresh
 * cluster, as every run of one mount is a fresh mount:
 *
 *   LAUNCHER dliofs mount -f MOUNTPOINT CONFIG+cluster   the N daemons
 *   (each node: the point's settings, caches dropped, statistics reset)
 *   LAUNCHER dlio-whatif node exec -- dlio-drive ... MOUNTPOINT ...
 *   (each node: dliofs umount MOUNTPOINT; the daemons' launcher exits)
 *
 * LAUNCHER is `mpirun -np N` on this machine, MOUNTPOINT the working
 * directory's m{rank}, and the nodes' mounts are this process's to see;
 * with --launcher ('srun ...', 'mpirun -H ...') the same commands start one
 * process per node of a real allocation, and what must happen on every node
 * (the settings, the wait for the mounts, the unmount) is `LAUNCHER
 * dlio-whatif node OP MOUNTPOINT`, since only the node itself can see its
 * mount. {rank} anywhere in the job is the rank's, replaced by `node exec`
 * (mpirun's or srun's environment says which), so rank r reads mount r on
 * one machine. The job is dlio-drive: under one launcher its ranks are one
 * job, and rank 0's report is the job's (samples/s and MB/s summed over
 * ranks, AU and data wait their mean) with each rank's figures beside. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlio_whatif_i.h"
#include "dliofs/clock.h"
#include "dliofs/ctl_client.h"
#include "dliofs/subst.h"
#include "tool_stop_i.h"

#define UP_TIMEOUT_MS 120000  /* a cluster that has not mounted by then will not */
#define DOWN_TIMEOUT_MS 30000 /* the daemons' exit after their unmounts */

int wi_env_rank(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
					   "SLURM_PROCID"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long r;

		if (!v || !*v)
			continue;
		r = strtol(v, &end, 10);
		if (!*end && r >= 0 && r < INT_MAX)
			return (int)r;
	}
	return -1;
}

/* s with every {rank} replaced by rank (malloc'd). */
static char *with_rank(const char *s, int rank)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", rank);
	return dl_subst(s, "{rank}", num);
}

/* The NULL-ended lists a, b and c one after another, each string copied. */
static char **join(char *const *a, char *const *b, char *const *c)
{
	char *const *part[] = {a, b, c};
	size_t n = 0, k = 0;
	char **av;

	for (int i = 0; i < 3; i++)
		for (size_t j = 0; part[i] && part[i][j]; j++)
			n++;
	av = calloc(n + 1, sizeof(*av));
	if (!av)
		return NULL;
	for (int i = 0; i < 3; i++)
		for (size_t j = 0; part[i] && part[i][j]; j++)
			if (!(av[k++] = strdup(part[i][j]))) {
				wi_argv_free(av);
				return NULL;
			}
	return av;
}

/* The launcher's words (split at blanks: a launcher's arguments are flags
 * and host lists, which need no quoting). */
static char **split_words(const char *s)
{
	char *copy = strdup(s), *save = NULL, *w;
	char *words[128];
	size_t n = 0;
	char **av = NULL;

	if (!copy)
		return NULL;
	for (w = strtok_r(copy, " \t\n", &save); w && n + 1 < 128;
	     w = strtok_r(NULL, " \t\n", &save))
		words[n++] = w;
	words[n] = NULL;
	if (n)
		av = join(words, NULL, NULL);
	free(copy);
	return av;
}

static int on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(name, '/'))
		return !access(name, X_OK);
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, name) < (int)sizeof(buf) &&
		    !access(buf, X_OK))
			return 1;
		p += n + (p[n] == ':');
	}
	return 0;
}

/* The default: N processes on this machine under Open MPI's mpirun. */
static char **local_launcher(unsigned nodes)
{
	char np[16];
	char *w[] = {
	    "mpirun", "-np", np, "--oversubscribe", "--bind-to", "none", "--allow-run-as-root",
	    NULL};

	snprintf(np, sizeof(np), "%u", nodes);
	/* Open MPI refuses root unless told; anyone else needs no such flag. */
	if (geteuid() != 0)
		w[6] = NULL;
	return join(w, NULL, NULL);
}

/* Is there a top-level cluster: key? Text, not YAML: the config is checked
 * by `dliofs check` below, and a copy that had two would be refused there. */
static int has_cluster(const char *text)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *k = p;

		if (strncmp(k, "cluster", 7))
			continue;
		k += 7;
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == ':')
			return 1;
	}
	return 0;
}

static int read_text(const char *path, char **out)
{
	FILE *f = fopen(path, "r");
	char *t = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -errno;
	do {
		if (len + 4096 > cap) {
			char *nt = realloc(t, cap = cap ? 2 * cap : 65536);

			if (!nt) {
				free(t);
				fclose(f);
				return -ENOMEM;
			}
			t = nt;
		}
		n = fread(t + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	fclose(f);
	t[len] = 0;
	*out = t;
	return 0;
}

/* The config with cluster: in it. A copy where it lacks one, beside the
 * original: relative paths in it (a profile, an empirical latency) name
 * files beside the YAML. */
static int cluster_config(struct wi_env *e)
{
	char *text = NULL, dir[PATH_MAX], base[PATH_MAX];
	int ret = read_text(e->config, &text), fd;
	size_t len;
	FILE *f;

	if (ret) {
		fprintf(stderr, "dlio-whatif: %s: %s\n", e->config, strerror(-ret));
		return ret;
	}
	if (has_cluster(text)) {
		snprintf(e->cluster_cfg, sizeof(e->cluster_cfg), "%s", e->config);
		free(text);
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s", e->config);
	snprintf(base, sizeof(base), "%s", e->config);
	snprintf(e->cluster_cfg, sizeof(e->cluster_cfg), "%s/.%s.whatif-XXXXXX", dirname(dir),
		 basename(base));
	fd = mkstemp(e->cluster_cfg);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		ret = -errno;
		fprintf(stderr,
			"dlio-whatif: --nodes: %s has no cluster: section and no copy with one can "
			"be written beside it (%s): add `cluster: {}` to it\n",
			e->config, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(e->cluster_cfg);
		}
		e->cluster_cfg[0] = 0;
		free(text);
		return ret;
	}
	e->cfg_copy = 1;
	len = strlen(text);
	fprintf(f,
		"%s%s# added by dlio-whatif --nodes: the mounts are one storage system\n"
		"cluster: {}\n",
		text, len && text[len - 1] != '\n' ? "\n" : "");
	free(text);
	if (fclose(f)) {
		fprintf(stderr, "dlio-whatif: %s: %s\n", e->cluster_cfg, strerror(errno));
		return -errno;
	}
	return 0;
}

/* dliofs itself says whether it can mount the config as a cluster node
 * (built with MPI, a valid cluster: section): before anything runs. */
static int check_config(struct wi_env *e)
{
	char out[PATH_MAX + 16];
	char *argv[] = {e->dliofs, "check", e->cluster_cfg, NULL};
	int rc;

	snprintf(out, sizeof(out), "%s/check.out", e->workdir);
	rc = wi_run_cmd(argv, out);
	if (!rc)
		return 0;
	fprintf(stderr, "dlio-whatif: --nodes: %s check refused the cluster's config %s%s (%d):\n",
		e->dliofs, e->cluster_cfg,
		e->cfg_copy ? " (the config with cluster: {} added)" : "", rc);
	wi_show_file(out, "its output");
	return -EINVAL;
}

static int refuse(const char *why)
{
	fprintf(stderr, "dlio-whatif: --nodes: %s\n", why);
	return -EINVAL;
}

/* Is a file system mounted at m (one whose daemon is gone counts: stat
 * fails with ENOTCONN)? */
static int mounted(const char *m)
{
	char parent[PATH_MAX + 16];
	struct stat a, b;

	if (stat(m, &a))
		return errno == ENOTCONN;
	snprintf(parent, sizeof(parent), "%s/..", m);
	return !stat(parent, &b) && (a.st_dev != b.st_dev || a.st_ino == b.st_ino);
}

static void node_mnt(const struct wi_env *e, unsigned r, char *buf, size_t len)
{
	snprintf(buf, len, "%s/m%u", e->workdir, r);
}

int wi_cluster_init(struct wi_env *e, const struct wi_opts *o)
{
	char m[PATH_MAX + 16];
	int ret;

	if (e->kind != WI_JOB_DRIVE)
		return refuse("the job runs as dlio-drive's ranks, one per mount, whose report is "
			      "the job's: give dlio-drive as the job");
	if (o->mount)
		return refuse("--mount runs on one mount that exists; a cluster is mounted "
			      "fresh for every run");
	if (o->jobs > 1)
		return refuse("--jobs: the job is one job of N ranks; run several under one "
			      "launcher as DLIOFS_JOB names them, or without --nodes");
	if (o->trace_dir[0])
		return refuse("--trace: give each node its own trace in the config instead "
			      "(trace: {file: '/DIR/t{rank}.bin'}: {rank} is the node's)");
	if (o->mountpoint && !o->launcher)
		return refuse("--mountpoint is each node's with --launcher; on this machine the "
			      "mounts are m0, m1, ... in the working directory");
	e->nodes = o->nodes;
	e->own = 1;
	wi_find_tool("dlio-whatif", "DLIO_WHATIF", e->self, sizeof(e->self));
	if (o->launcher) {
		e->remote = 1;
		if (!o->mountpoint || o->mountpoint[0] != '/')
			return refuse("--launcher (or DLIO_WHATIF_LAUNCHER): give --mountpoint "
				      "/DIR, the same absolute directory on every node ({rank} in "
				      "it for several nodes on one machine)");
		if (strlen(o->mountpoint) >= sizeof(e->mnt))
			return refuse("--mountpoint: too long");
		snprintf(e->mnt, sizeof(e->mnt), "%s", o->mountpoint);
		e->launcher = split_words(o->launcher);
		if (!e->launcher)
			return refuse("--launcher: empty");
	} else {
		if (!on_path("mpirun"))
			return refuse("mpirun not found (Open MPI's: apt-get install openmpi-bin), "
				      "or give --launcher");
		e->launcher = local_launcher(e->nodes);
		if (!e->launcher)
			return -ENOMEM;
		rmdir(e->mnt);
		for (unsigned r = 0; r < e->nodes; r++) {
			node_mnt(e, r, m, sizeof(m));
			if (mkdir(m, 0755)) {
				fprintf(stderr, "dlio-whatif: mkdir %s: %s\n", m, strerror(errno));
				return -errno;
			}
		}
		if (snprintf(e->mnt, sizeof(e->mnt), "%s/m{rank}", e->workdir) >=
		    (int)sizeof(e->mnt))
			return refuse("the working directory's path is too long");
	}
	ret = cluster_config(e);
	if (!ret)
		ret = check_config(e);
	return ret;
}

void wi_cluster_fini(struct wi_env *e)
{
	char m[PATH_MAX + 16];

	if (e->cfg_copy && e->cluster_cfg[0])
		unlink(e->cluster_cfg);
	e->cfg_copy = 0;
	for (unsigned r = 0; !e->remote && r < e->nodes; r++) {
		node_mnt(e, r, m, sizeof(m));
		rmdir(m); /* never through a mount still up: rmdir fails on it */
	}
	wi_argv_free(e->launcher);
	e->launcher = NULL;
}

/* Start argv in a session of its own (a Ctrl-C to the terminal is ours to
 * pass on, not the launcher's to take), no input, output appended to out. */
static pid_t spawn(char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		setsid();
		if (in >= 0)
			dup2(in, 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static void nap(void)
{
	struct timespec ts = {0, 20 * 1000000L};

	nanosleep(&ts, NULL);
}

static int exit_code(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

/* `LAUNCHER dlio-whatif node OP MOUNTPOINT args...` to its end: its exit
 * status; stopped (a signal to the tool, unless let finish) or past
 * timeout_ms, its process group is stopped; -ECHILD when the daemons ended
 * meanwhile (unless let finish). */
static int on_nodes(struct wi_env *e, const char *op, char *const *args, const char *out,
		    int let_finish, unsigned timeout_ms)
{
	char *mid[] = {e->self, "node", (char *)op, e->mnt, NULL};
	char **av = join(e->launcher, mid, args);
	uint64_t t0 = dl_mono_ns();
	pid_t pid;
	int st;

	if (!av)
		return -ENOMEM;
	pid = spawn(av, out);
	wi_argv_free(av);
	if (pid < 0)
		return pid;
	for (;;) {
		if (tool_try_wait(pid, &st) == pid)
			return exit_code(st);
		/* The daemons ended (a node that could not mount ends the
		 * cluster): nothing on the nodes will answer now. Not while
		 * unmounting (let finish), when they end as they should. */
		if (!let_finish && e->daemons > 0 && tool_try_wait(e->daemons, &st) == e->daemons) {
			e->daemons = 0;
			tool_stop_group(pid, 5000);
			return -ECHILD;
		}
		if ((!let_finish && tool_stop_requested()) ||
		    dl_mono_ns() - t0 > (uint64_t)timeout_ms * 1000000)
			return exit_code(tool_stop_group(pid, 5000));
		nap();
	}
}

/* Every node's mount answers: 0; the daemons ended or did not come up:
 * -EIO; stopped: -EINTR. */
static int wait_up(struct wi_env *e)
{
	char m[PATH_MAX + 16], out[PATH_MAX + 16];
	uint64_t t0 = dl_mono_ns();
	int st;

	if (e->remote) {
		snprintf(out, sizeof(out), "%s/node.out", e->workdir);
		st = on_nodes(e, "wait", NULL, out, 0, UP_TIMEOUT_MS);
		if (tool_stop_requested())
			return -EINTR;
		if (st) {
			if (st != -ECHILD)
				wi_show_file(out, "the nodes' wait for their mounts");
			return -EIO;
		}
		if (tool_try_wait(e->daemons, &st) == 0)
			return 0;
		e->daemons = 0; /* ended (reaped) or not ours: never signalled again */
		return -EIO;
	}
	for (;;) {
		unsigned up = 0;

		for (unsigned r = 0; r < e->nodes; r++) {
			node_mnt(e, r, m, sizeof(m));
			up += dl_ctl_is_mount(m) == 1;
		}
		if (up == e->nodes)
			return 0;
		if (tool_stop_requested())
			return -EINTR;
		if (tool_try_wait(e->daemons, &st) == e->daemons) {
			e->daemons = 0;
			return -EIO;
		}
		if (dl_mono_ns() - t0 > (uint64_t)UP_TIMEOUT_MS * 1000000) {
			fprintf(stderr, "dlio-whatif: %u of %u nodes mounted in %u s\n", up,
				e->nodes, UP_TIMEOUT_MS / 1000);
			return -EIO;
		}
		nap();
	}
}

int wi_cluster_mount(struct wi_env *e, const char *log)
{
	char *mount[] = {e->dliofs, "mount", "-f", e->mnt, e->cluster_cfg, NULL};
	char **av = join(e->launcher, mount, NULL);
	int ret;

	if (!av)
		return -ENOMEM;
	snprintf(e->daemons_log, sizeof(e->daemons_log), "%s", log);
	unlink(log);
	e->daemons = spawn(av, log);
	wi_argv_free(av);
	if (e->daemons < 0) {
		ret = (int)e->daemons;
		e->daemons = 0;
		fprintf(stderr, "dlio-whatif: cannot start %s: %s\n", e->launcher[0],
			strerror(-ret));
		return -EIO;
	}
	ret = wait_up(e);
	if (!ret)
		return 0;
	if (ret == -EIO) {
		fprintf(stderr,
			"dlio-whatif: the cluster of %u mounts did not come up "
			"(%s ... dliofs mount -f %s %s)\n",
			e->nodes, e->launcher[0], e->mnt, e->cluster_cfg);
		wi_show_file(log, "the daemons' output");
	}
	/* Whatever did mount is unmounted; the run fails with what it said. */
	wi_cluster_umount(e);
	return ret == -EINTR ? ret : -EIO;
}

/* The daemons' launcher, once every node is unmounted: it exits (0) when
 * they have. */
static int wait_down(struct wi_env *e)
{
	/* Stopped: a node that was still mounting when the signal came has
	 * nobody to unmount it; its launcher is stopped sooner (the daemons
	 * unmount on the SIGTERM it passes on). */
	uint64_t limit = (uint64_t)(tool_stop_requested() ? 5000 : DOWN_TIMEOUT_MS) * 1000000;
	uint64_t t0 = dl_mono_ns();
	int st;

	while (e->daemons > 0) {
		if (tool_try_wait(e->daemons, &st) == e->daemons) {
			e->daemons = 0;
			if (!exit_code(st))
				return 0;
			fprintf(stderr, "dlio-whatif: the cluster's daemons exited with %d\n",
				exit_code(st));
			wi_show_file(e->daemons_log, "their output");
			return -EIO;
		}
		if (dl_mono_ns() - t0 > limit) {
			if (!tool_stop_requested())
				fprintf(stderr, "dlio-whatif: the cluster's daemons did not exit "
						"after their unmounts: stopped\n");
			tool_stop_group(e->daemons, 5000);
			e->daemons = 0;
			return tool_stop_requested() ? 0 : -EIO;
		}
		nap();
	}
	return 0;
}

int wi_cluster_umount(struct wi_env *e)
{
	char m[PATH_MAX + 16], out[PATH_MAX + 16];
	int ret = 0, st;

	snprintf(out, sizeof(out), "%s/umount.out", e->workdir);
	if (e->remote) {
		st = on_nodes(e, "umount", NULL, out, 1, DOWN_TIMEOUT_MS);
		if (st) {
			fprintf(stderr, "dlio-whatif: unmounting the nodes' %s failed (%d)\n",
				e->mnt, st);
			wi_show_file(out, "its output");
			ret = -EIO;
		}
		st = wait_down(e);
		return ret ? ret : st;
	}
	for (unsigned r = 0; r < e->nodes; r++) {
		char *argv[] = {e->dliofs, "umount", m, NULL};

		node_mnt(e, r, m, sizeof(m));
		if (mounted(m) && wi_run_cmd(argv, out)) {
			fprintf(stderr, "dlio-whatif: %s umount %s failed\n", e->dliofs, m);
			wi_show_file(out, "its output");
			ret = -EIO;
		}
	}
	st = wait_down(e);
	if (!ret)
		ret = st;
	/* A node still mounted (its daemon gone, or a process of the job that
	 * outlived it holding it): detached, never left behind. */
	for (unsigned r = 0; r < e->nodes; r++) {
		char *lazy[] = {"fusermount3", "-u", "-z", "--", m, NULL};

		node_mnt(e, r, m, sizeof(m));
		if (mounted(m)) {
			if (!wi_run_cmd(lazy, out))
				fprintf(stderr, "dlio-whatif: %s unmounted lazily\n", m);
			ret = -EIO;
		}
	}
	return ret;
}

int wi_cluster_cold(struct wi_env *e, const struct wi_kv *kv, unsigned n)
{
	char m[PATH_MAX + 16], out[PATH_MAX + 16];
	char *args[WI_MAX_AXES + 1], text[WI_MAX_AXES][WI_KEY + WI_VAL + 2];
	int ret;

	if (!e->remote) {
		/* Each node has its own settings: the point is set on every one. */
		for (unsigned r = 0; r < e->nodes; r++) {
			node_mnt(e, r, m, sizeof(m));
			if ((ret = wi_cold_at(m, kv, n)))
				return ret;
		}
		return 0;
	}
	for (unsigned i = 0; i < n && i < WI_MAX_AXES; i++) {
		snprintf(text[i], sizeof(text[i]), "%s=%s", kv[i].key, kv[i].val);
		args[i] = text[i];
	}
	args[n < WI_MAX_AXES ? n : WI_MAX_AXES] = NULL;
	snprintf(out, sizeof(out), "%s/node.out", e->workdir);
	ret = on_nodes(e, "cold", args, out, 0, UP_TIMEOUT_MS);
	if (tool_stop_requested())
		return -EINTR;
	if (ret) {
		fprintf(stderr, "dlio-whatif: setting the point on the nodes' %s failed (%d)\n",
			e->mnt, ret);
		wi_show_file(out, "their output");
		return -EIO;
	}
	return 0;
}

char **wi_cluster_job_argv(const struct wi_env *e, char **job)
{
	char *mid[] = {(char *)e->self, "node", "exec", "--", NULL};
	char **head = join(e->launcher, mid, NULL), **av;

	if (!head)
		return NULL;
	av = join(head, job, NULL);
	wi_argv_free(head);
	return av;
}

/* ---- dlio-whatif node OP MOUNTPOINT ...: one node's part ---- */

static int node_wait(const char *mnt)
{
	uint64_t t0 = dl_mono_ns();

	while (dl_ctl_is_mount(mnt) != 1) {
		if (dl_mono_ns() - t0 > (uint64_t)UP_TIMEOUT_MS * 1000000) {
			fprintf(stderr, "dlio-whatif node: %s did not mount in %u s\n", mnt,
				UP_TIMEOUT_MS / 1000);
			return 1;
		}
		nap();
	}
	return 0;
}

static int node_cold(const char *mnt, int argc, char **argv)
{
	struct wi_kv kv[WI_MAX_AXES];
	unsigned n = 0;

	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');

		if (!eq || n == WI_MAX_AXES || (size_t)(eq - argv[i]) >= WI_KEY ||
		    strlen(eq + 1) >= WI_VAL) {
			fprintf(stderr, "dlio-whatif node cold: '%s': expected KEY=VALUE\n",
				argv[i]);
			return 2;
		}
		snprintf(kv[n].key, sizeof(kv[n].key), "%.*s", (int)(eq - argv[i]), argv[i]);
		snprintf(kv[n].val, sizeof(kv[n].val), "%s", eq + 1);
		n++;
	}
	return wi_cold_at(mnt, kv, n) ? 1 : 0;
}

/* A mount whose daemon is gone (MPI_Abort killed it when another node
 * could not mount): what reaches the daemon fails with ENOTCONN. statvfs
 * always does; a stat of the mountpoint is answered from the kernel's
 * cache. */
static int dead_mount(const char *mnt)
{
	struct statvfs sv;

	return statvfs(mnt, &sv) != 0 && errno == ENOTCONN;
}

static int node_umount(const char *mnt)
{
	char dliofs[PATH_MAX];

	if (dl_ctl_is_mount(mnt) != 1 && !dead_mount(mnt))
		return 0;
	wi_find_tool("dliofs", "DLIOFS", dliofs, sizeof(dliofs));
	execlp(dliofs, dliofs, "umount", mnt, (char *)NULL);
	fprintf(stderr, "dlio-whatif node: cannot run %s: %s\n", dliofs, strerror(errno));
	return 127;
}

static int node_exec(int argc, char **argv, int rank)
{
	char **av = calloc((size_t)argc + 1, sizeof(*av));

	if (!av)
		return 1;
	for (int i = 0; i < argc; i++)
		if (!(av[i] = rank >= 0 ? with_rank(argv[i], rank) : strdup(argv[i])))
			return 1;
	execvp(av[0], av);
	fprintf(stderr, "dlio-whatif node: cannot run %s: %s\n", av[0], strerror(errno));
	return 127;
}

int wi_node(int argc, char **argv)
{
	int rank = wi_env_rank(), ret;
	const char *op = argc > 1 ? argv[1] : "";
	char *mnt;

	if (!strcmp(op, "exec") && argc > 3 && !strcmp(argv[2], "--"))
		return node_exec(argc - 3, argv + 3, rank);
	if (argc < 3 || (strcmp(op, "wait") && strcmp(op, "cold") && strcmp(op, "umount"))) {
		fprintf(stderr,
			"usage: dlio-whatif node wait|cold|umount MOUNTPOINT [KEY=VALUE...]\n"
			"       dlio-whatif node exec -- COMMAND...\n"
			"(what one node of a cluster does for `dlio-whatif sweep --nodes`; "
			"{rank} is the launcher's rank)\n");
		return 2;
	}
	if (strstr(argv[2], "{rank}") && rank < 0) {
		fprintf(stderr,
			"dlio-whatif node: %s: {rank} with no rank in the environment "
			"(OMPI_COMM_WORLD_RANK, PMIX_RANK, SLURM_PROCID)\n",
			argv[2]);
		return 2;
	}
	mnt = with_rank(argv[2], rank < 0 ? 0 : rank);
	if (!mnt)
		return 1;
	if (!strcmp(op, "wait"))
		ret = node_wait(mnt);
	else if (!strcmp(op, "cold"))
		ret = node_cold(mnt, argc - 3, argv + 3);
	else
		ret = node_umount(mnt);
	free(mnt);
	return ret;
}
