/* Mount life cycle: session setup, detaching, readiness, signals, unmount. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backing.h"
#include "clients.h"
#include "cluster.h"
#include "control.h"
#include "log_i.h"
#include "fs_i.h"
#include "mountpoint_i.h"
#include "reply.h"
#include "s3.h"
#include "served.h"

#define DL_MAX_READ (1u << 20)

static void fs_fini(struct dl_fs *fs);

/* The cluster's exchange re-times the waiting replies once the timer that
 * holds them runs (set after it started, read by the exchange thread). */
struct cl_retime {
	struct dl_fs *fs;
	atomic_int up;
};

static void cluster_retime(void *arg)
{
	struct cl_retime *c = arg;

	if (atomic_load(&c->up))
		dl_timer_retime(c->fs->timer);
}

static int fs_init(struct dl_fs *fs, struct dl_config *cfg, int no_pacer)
{
	int ret;

	memset(fs, 0, sizeof(*fs));
	fs->cfg = cfg;
	fs->ready_fd = -1;
	fs->max_read = DL_MAX_READ;
	fs->uid = getuid();
	fs->gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs->mount_time);
	fs->mount_time.tv_nsec = 0;
	ret = dl_fmt_ctx_new(cfg->seed, 0, &fs->fmt);
	if (ret)
		return ret;
	fs->bufs_cap = 64;
	fs->bufs = calloc(fs->bufs_cap, sizeof(void *));
	if (!fs->bufs) {
		dl_fmt_ctx_free(fs->fmt);
		return -ENOMEM;
	}
	pthread_mutex_init(&fs->buf_lock, NULL);
	pthread_mutex_init(&fs->trace_lock, NULL);
	pthread_mutex_init(&fs->handles_lock, NULL);
	fs->io_direct = cfg->io_mode == DL_IO_DIRECT;
	ret = dl_clients_new(&fs->clients);
	if (!ret)
		ret = dl_served_new(&fs->served);
	if (!ret && !no_pacer)
		ret = dl_pacer_new(&cfg->pacer, dl_now_ns(), cfg->seed, &fs->pacer);
	if (ret) {
		fs_fini(fs);
		return ret;
	}
	return 0;
}

static void fs_fini(struct dl_fs *fs)
{
	dl_ctl_worker_stop(fs->ctl_worker);
	fs->ctl_worker = NULL;
	dl_timer_stop(fs->timer);
	fs->timer = NULL;
	dl_fs_free_handles(fs);
	pthread_mutex_destroy(&fs->handles_lock);
	dl_pacer_free(fs->pacer);
	fs->pacer = NULL;
	dl_backing_free(fs->backing);
	fs->backing = NULL;
	dl_clients_free(fs->clients);
	fs->clients = NULL;
	dl_served_free(fs->served);
	fs->served = NULL;
	for (unsigned i = 0; i < fs->nbufs; i++)
		free(fs->bufs[i]);
	free(fs->bufs);
	pthread_mutex_destroy(&fs->buf_lock);
	pthread_mutex_destroy(&fs->trace_lock);
	dl_fmt_ctx_free(fs->fmt);
}

/* Tell the waiting parent how the mount went: "ok" or an error text. */
static void notify(int fd, const char *msg)
{
	if (fd < 0)
		return;
	if (write(fd, msg, strlen(msg)) < 0) {
		/* The parent is gone; nothing to tell. */
	}
	close(fd);
}

static int redirect_stdio(const char *log_path);

/* The mount answers: start what serves it (timer, control thread,
 * readahead) and serve until unmounted or signalled. What is started here
 * is stopped by the caller. */
static int serve(struct dl_fs *fs, const struct dl_mount_opts *o, struct cl_retime *clr)
{
	struct fuse_loop_config *lc;
	int ret;

	dl_fs_start_readahead(o);
	ret = dl_timer_start(fs, &fs->timer);
	if (!ret)
		atomic_store(&clr->up, 1);
	if (!ret)
		ret = dl_ctl_worker_start(fs, &fs->ctl_worker);
	if (ret)
		return ret;
	lc = fuse_loop_cfg_create();
	if (!lc)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(lc, 1);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	fuse_loop_cfg_set_max_threads(lc, o->max_threads ? o->max_threads : 16);
	/* libfuse returns the signal number when SIGINT/SIGTERM/SIGHUP ended the
	 * loop: that is a clean shutdown, not an error. */
	ret = fuse_session_loop_mt(fs->se, lc);
	fuse_loop_cfg_destroy(lc);
	return (ret == 0 || ret == SIGINT || ret == SIGTERM || ret == SIGHUP) ? 0 : -EIO;
}

static int run_session(struct dl_config *cfg, const struct dl_mount_opts *o, int ready_fd,
		       pid_t launcher)
{
	char optbuf[1024];
	char *argv[8];
	int argc = 0, ret = -EIO, mounted = 0;
	struct fuse_args args;
	struct fuse_session *se = NULL;
	struct dl_s3_server *s3srv = NULL;
	struct dl_fs fs;
	struct cl_retime clr = {&fs, 0};

	ret = fs_init(&fs, cfg, o->no_pacer);
	fs.fuse_overhead_ns = o->fuse_overhead_ns;
	if (o->cluster)
		fs.cluster_node = (uint32_t)dl_cluster_rank(o->cluster) + 1;
	fs.launcher = launcher;
	fs.self = getpid();
	if (ret) {
		notify(ready_fd, "cannot allocate the daemon's state\n");
		return ret;
	}
	/* Before the mount: a backing path below the mountpoint means the
	 * directory underneath, never the mount itself. */
	ret = dl_backing_new(cfg, o->mountpoint, &fs.backing);
	if (ret) {
		notify(ready_fd, "cannot open a backing directory (see the message above)\n");
		fs_fini(&fs);
		return ret;
	}
	/* Read-write at the VFS level only for the control files (live settings);
	 * the datasets answer EROFS themselves. allow_other when root so the
	 * training job's user can read. */
	snprintf(optbuf, sizeof(optbuf), "fsname=dliofs,subtype=dliofs,default_permissions%s%s%s",
		 geteuid() == 0 ? ",allow_other" : "", o->fuse_opts ? "," : "",
		 o->fuse_opts ? o->fuse_opts : "");
	argv[argc++] = "dliofs";
	argv[argc++] = "-o";
	argv[argc++] = optbuf;
	if (o->debug)
		argv[argc++] = "-d";
	argv[argc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);

	if (!realpath(o->mountpoint, fs.mnt_real))
		fs.mnt_real[0] = 0; /* the mount below reports it */
	/* The trace the config asks for, before the mount: a target refused
	 * is a mount refused, with nothing left mounted. */
	if (cfg->trace.enabled) {
		char why[512], ep[4 * sizeof(fs.trace_path)], msg[sizeof(ep) + 600];

		ret = dl_fs_trace_start(&fs, cfg->trace.file,
					cfg->trace.ops_mask ? cfg->trace.ops_mask : ~0u, 0, why,
					sizeof(why));
		if (ret) {
			snprintf(msg, sizeof(msg), "trace.file: cannot trace to %s: %s\n",
				 dl_log_esc(cfg->trace.file, ep, sizeof(ep)), why);
			notify(ready_fd, msg);
			if (ready_fd < 0)
				fprintf(stderr, "dliofs: %s", msg);
			goto out;
		}
	}
	/* s3: {listen: ...}: the S3 endpoint beside the mount, its requests shaped
	 * by the mount's pacer (one device, two ways in). A port refused is a
	 * mount refused. */
	if (cfg->s3.listen[0]) {
		struct dl_s3_server_opts so = {.listen = cfg->s3.listen, .config_path = cfg->path};
		char why[512], msg[700];

		ret = dl_s3_server_start(cfg, fs.pacer, &so, &s3srv, why, sizeof(why));
		if (ret) {
			snprintf(msg, sizeof(msg), "s3.listen: %s\n", why);
			notify(ready_fd, msg);
			if (ready_fd < 0)
				fprintf(stderr, "dliofs: %s", msg);
			goto out;
		}
		fprintf(stderr, "dliofs: S3 endpoint on %s (port %u): %u bucket%s, the mount's pacer\n",
			cfg->s3.listen, dl_s3_server_port(s3srv), dl_s3_server_buckets(s3srv),
			dl_s3_server_buckets(s3srv) == 1 ? "" : "s");
	}
	se = fuse_session_new(&args, &dl_fs_ops, sizeof(dl_fs_ops), &fs);
	if (!se) {
		notify(ready_fd, "invalid FUSE options (see the message above)\n");
		ret = -EINVAL;
		goto out;
	}
	fs.se = se;
	if (fuse_set_signal_handlers(se)) {
		notify(ready_fd, "cannot install signal handlers\n");
		ret = -EIO;
		goto out;
	}
	if (fuse_session_mount(se, o->mountpoint)) {
		notify(ready_fd, "mounting failed (see the message above)\n");
		ret = -EIO;
		goto out;
	}
	mounted = 1;
	/* One storage system with the other nodes from the first request on. */
	if (o->cluster && (ret = dl_cluster_start(o->cluster, fs.pacer, cluster_retime, &clr))) {
		notify(ready_fd, "cannot start the cluster's exchange\n");
		goto out;
	}
	notify(ready_fd, "ok");
	ready_fd = -1;
	if (launcher && redirect_stdio(o->log_path)) {
		/* Logging is lost, the mount still works. */
	}

	ret = serve(&fs, o, &clr);
out:
	/* Parked replies still reference the session: flush them before it goes.
	 * The control thread answers nothing more; its job in progress may wait
	 * on this mount, which the unmount fails, so it is joined after. */
	dl_ctl_worker_quiesce(fs.ctl_worker);
	/* Leave the cluster before the timer its re-times walk goes (and
	 * before the pacer it samples). */
	dl_cluster_stop(o->cluster);
	dl_timer_stop(fs.timer);
	fs.timer = NULL;
	if (se && mounted)
		fuse_session_unmount(se);
	dl_ctl_worker_stop(fs.ctl_worker);
	fs.ctl_worker = NULL;
	dl_s3_server_stop(s3srv); /* before the pacer it uses goes */
	if (atomic_load(&fs.trace))
		dl_fs_trace_stop(&fs);
	fs.se = NULL;
	if (se) {
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	fuse_opt_free_args(&args);
	fs_fini(&fs);
	return ret;
}

/* Wait until the child reports, then until the mountpoint answers a stat,
 * so `dliofs mount` returning means the filesystem is usable. */
static int wait_ready(pid_t child, int rfd, const struct dl_mount_opts *o)
{
	const char *mountpoint = o->mountpoint;
	char msg[512];
	ssize_t n, got = 0;
	struct stat st;
	int status;

	while ((n = read(rfd, msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
		got += n;
	msg[got] = 0;
	close(rfd);
	if (strcmp(msg, "ok") != 0) {
		if (got)
			fprintf(stderr, "dliofs: %s: %s", mountpoint, msg);
		else
			fprintf(stderr, "dliofs: %s: the daemon exited before mounting\n",
				mountpoint);
		waitpid(child, &status, 0);
		return -EIO;
	}
	if (stat(mountpoint, &st) != 0 || st.st_ino != FUSE_ROOT_ID) {
		fprintf(stderr, "dliofs: %s: mounted but not answering: %s\n", mountpoint,
			strerror(errno));
		return -EIO;
	}
	return 0;
}

static int redirect_stdio(const char *log_path)
{
	int in = open("/dev/null", O_RDONLY);
	int out = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644)
			   : open("/dev/null", O_WRONLY);

	if (in < 0 || out < 0)
		return -errno;
	dup2(in, 0);
	dup2(out, 1);
	dup2(out, 2);
	close(in);
	close(out);
	return 0;
}

/* In the background (no -f) this returns twice: in the caller once the
 * mount answers (or failed), and in the forked daemon when it stops. */
int dl_fs_mount(struct dl_config *cfg, const struct dl_mount_opts *o)
{
	struct stat st;
	int pfd[2], ret;
	pid_t pid, launcher;

	if (o->mountpoint[0] != '/') {
		fprintf(stderr, "dliofs: %s: mountpoint must be an absolute path\n", o->mountpoint);
		return -EINVAL;
	}
	/* Before stat: a dead mount there answers ENOTCONN to everything. */
	ret = dl_fs_mountpoint_check(o->mountpoint);
	if (ret)
		return ret;
	if (stat(o->mountpoint, &st) != 0) {
		fprintf(stderr, "dliofs: %s: %s\n", o->mountpoint, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dliofs: %s: not a directory\n", o->mountpoint);
		return -ENOTDIR;
	}
	if (cfg->ndatasets > DL_INO_MAX_DATASETS) {
		fprintf(stderr, "dliofs: %s: more than %d datasets\n", cfg->path,
			DL_INO_MAX_DATASETS);
		return -EINVAL;
	}

	if (o->foreground)
		return run_session(cfg, o, -1, 0);
	launcher = getpid();

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	/* The child returns through main (below): what stdio holds now must
	 * not be written twice. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return ret;
	}
	if (pid > 0) {
		close(pfd[1]);
		return wait_ready(pid, pfd[0], o);
	}
	/* Child: the daemon. Keep stderr until the mount is up so errors reach
	 * the user's terminal, then detach from it. */
	close(pfd[0]);
	setsid();
	if (chdir("/")) {
		/* Relative paths are resolved already; keep going. */
	}
	ret = run_session(cfg, o, pfd[1], launcher);
	/* Back through main and exit(), not _exit(): the caller frees what it
	 * owns and atexit handlers run, among them LeakSanitizer's check of the
	 * daemon in a sanitizer build. */
	return ret;
}
