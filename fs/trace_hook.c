/* The mount's side of tracing: one record per reply, handed to the recorder
 * (which never blocks). Start and stop may race with replies in flight, so
 * recorders are counted and stop waits for them before closing the file.
 * The target is opened without the trace lock (nothing that reads the
 * trace's state waits for an open), never inside the mount itself, and a
 * live start runs on the control thread, not in a FUSE worker. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/naming.h"
#include "clients.h"
#include "fs_i.h"
#include "reply.h"
#include "tree_i.h"
#include "log_i.h"

void dl_fs_trace_reply(struct dl_fs *fs, const struct dl_reply *r, uint64_t now)
{
	struct dl_trace *t;
	struct dl_trace_rec rec;
	uint64_t dur;

	if (!atomic_load_explicit(&fs->trace, memory_order_relaxed))
		return;
	atomic_fetch_add(&fs->trace_users, 1);
	t = atomic_load(&fs->trace);
	if (t && (fs->trace_ops & (1u << r->top))) {
		memset(&rec, 0, sizeof(rec));
		dur = now - r->submit_ns;
		rec.start_ns = r->submit_ns;
		rec.dur_ns_lo = (uint32_t)dur;
		rec.dur_ns_hi = (uint16_t)(dur >> 32);
		rec.op = r->top;
		rec.queue_ns = r->pres.queue_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)r->pres.queue_ns;
		rec.pid = r->client.pid;
		rec.tid = r->client.tid;
		rec.job = r->client.job;
		rec.file_id = r->preq.file_id;
		rec.offset = r->preq.off;
		rec.size = r->preq.len > UINT32_MAX ? UINT32_MAX : (uint32_t)r->preq.len;
		if (r->kind == DL_R_ERR && r->err) {
			rec.result = -r->err;
			rec.flags |= 2;
		} else if (r->kind == DL_R_BUF) {
			rec.result = (int32_t)r->len;
		} else if (r->kind == DL_R_WRITE) {
			rec.result = (int32_t)r->count;
		}
		if (r->pres.hit_bytes && !r->pres.miss_bytes)
			rec.flags |= 1;
		if (r->preq.flags & DL_PREQ_BUFFERED)
			rec.flags |= 4;
		dl_trace_record(t, &rec);
	}
	atomic_fetch_sub(&fs->trace_users, 1);
}

/* Names for the trace's table: a file's path, or a job's name. */
static int path_of(void *arg, uint64_t file_id, char *buf, size_t len)
{
	struct dl_fs *fs = arg;

	if (file_id & DL_TRACE_JOB_BIT)
		return fs->clients ? dl_clients_job(fs->clients, (uint32_t)(file_id & 0xffffffffu),
						    buf, len, NULL, NULL)
				   : -ENOENT;
	return dl_tree_of(fs, file_id)->path(fs, file_id, buf, len);
}

/* From the trace's writer thread, once: the log says it when it happens. */
static void trace_failed(void *arg, int err, uint64_t written)
{
	struct dl_fs *fs = arg;

	char ep[4 * sizeof(fs->trace_path)];

	fprintf(stderr,
		"dliofs: trace %s: %s after %llu records: later records are dropped and counted; "
		"the file keeps its footer\n",
		dl_log_esc(fs->trace_path, ep, sizeof(ep)), err == -ENOSPC ? "the disk is full" : strerror(-err),
		(unsigned long long)written);
}

/* Is path inside this mount, as the kernel resolves it now (links
 * included)? A new file: its directory. Resolving a name inside the mount
 * asks the mount: only done off the FUSE workers (control thread) or
 * before the mount is up. */
static int inside_mount(const struct dl_fs *fs, const char *path)
{
	char buf[PATH_MAX], dir[PATH_MAX], *slash;
	size_t n = strlen(fs->mnt_real);

	if (!n)
		return 0;
	if (!realpath(path, buf)) {
		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (!slash)
			return 0;
		slash[slash == dir ? 1 : 0] = 0;
		if (!realpath(dir, buf))
			return 0; /* the open says why */
	}
	if (n == 1)
		return 1; /* mounted on / */
	return !strncmp(buf, fs->mnt_real, n) && (buf[n] == 0 || buf[n] == '/');
}

/* Is fd's file on this mount (reached through a bind mount of it, say)?
 * The mount's device is learnt from a stat of the mountpoint, which the
 * mount answers: live starts only (the control thread). */
static int on_mount(struct dl_fs *fs, int fd)
{
	struct stat a, m;

	if (fstat(fd, &a))
		return 0;
	if (!fs->mount_dev_known && stat(fs->mnt_real, &m) == 0 && m.st_ino == FUSE_ROOT_ID) {
		fs->mount_dev = m.st_dev;
		fs->mount_dev_known = 1;
	}
	return fs->mount_dev_known && a.st_dev == fs->mount_dev;
}

int dl_fs_trace_start(struct dl_fs *fs, const char *path, uint32_t ops_mask, int live, char *why,
		      size_t wl)
{
	struct dl_trace *t;
	int ret, fd, created, keep;

	if (atomic_load(&fs->trace)) {
		snprintf(why, wl, "a trace is running: stop it first");
		return -EBUSY;
	}
	if (inside_mount(fs, path)) {
		snprintf(why, wl, "inside the mount itself (%s)", fs->mnt_real);
		return -EINVAL;
	}
	ret = dl_trace_open_target(path, &fd, &created, why, wl);
	if (ret)
		return ret;
	if (live && on_mount(fs, fd)) {
		dl_trace_discard_target(path, fd, created);
		snprintf(why, wl, "a file of this mount (%s)", fs->mnt_real);
		return -EINVAL;
	}
	keep = dup(fd); /* to remove a file made here if the start fails */
	ret = dl_trace_start_fd_node(fd, fs->cfg->path, ops_mask, fs->cluster_node, path_of, fs,
				     &t);
	if (ret) {
		dl_trace_discard_target(path, keep, created);
		snprintf(why, wl, "%s", strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&fs->trace_lock);
	if (atomic_load(&fs->trace)) {
		pthread_mutex_unlock(&fs->trace_lock);
		dl_trace_finish(t, NULL);
		dl_trace_discard_target(path, keep, created);
		snprintf(why, wl, "a trace is running: stop it first");
		return -EBUSY;
	}
	fs->trace_ops = ops_mask;
	snprintf(fs->trace_path, sizeof(fs->trace_path), "%s", path);
	dl_trace_on_error(t, trace_failed, fs);
	atomic_store(&fs->trace, t);
	pthread_mutex_unlock(&fs->trace_lock);
	if (keep >= 0)
		close(keep);
	{
		char ep[4 * sizeof(fs->trace_path)];

		fprintf(stderr, "dliofs: tracing to %s\n", dl_log_esc(path, ep, sizeof(ep)));
	}
	return 0;
}

/* A trace that lost records to a full disk is still a readable file: the
 * stop succeeds and says what happened (log, .dliofs/trace). */
int dl_fs_trace_stop(struct dl_fs *fs)
{
	char ep[4 * sizeof(fs->trace_path)];
	struct dl_trace_result res;
	struct dl_trace *t;
	int ret;

	pthread_mutex_lock(&fs->trace_lock);
	t = atomic_exchange(&fs->trace, NULL);
	if (!t) {
		pthread_mutex_unlock(&fs->trace_lock);
		return -ENOENT;
	}
	while (atomic_load(&fs->trace_users))
		sched_yield();
	ret = dl_trace_finish(t, &res);
	fs->trace_dropped_total += res.dropped_rings + res.dropped_io;
	snprintf(fs->trace_last, sizeof(fs->trace_last),
		 "last %s: %llu records, %llu dropped (writer behind %llu, %s %llu)%s\n",
		 fs->trace_path, (unsigned long long)res.written,
		 (unsigned long long)(res.dropped_rings + res.dropped_io),
		 (unsigned long long)res.dropped_rings,
		 res.err == -ENOSPC ? "disk full" : "write failed",
		 (unsigned long long)res.dropped_io,
		 res.footer ? "" : "; the file has no footer");
	pthread_mutex_unlock(&fs->trace_lock);
	fprintf(stderr, "dliofs: trace stopped: %llu records in %s, %llu dropped%s%s%s\n",
		(unsigned long long)res.written, dl_log_esc(fs->trace_path, ep, sizeof(ep)),
		(unsigned long long)(res.dropped_rings + res.dropped_io),
		res.dropped_rings ? " (the writer fell behind)" : "",
		res.dropped_io ? (res.err == -ENOSPC ? " (the disk was full)" : " (a write failed)")
			       : "",
		res.footer ? "" : "; the file has no footer");
	return res.footer ? 0 : ret;
}
