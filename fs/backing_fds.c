/* Descriptors of looked-up inodes, bounded: a backing directory of millions
 * of files must not need a descriptor per file the kernel remembers.
 *
 * Each node keeps what finds its inode again without a descriptor: a kernel
 * file handle (name_to_handle_at; reopened with open_by_handle_at, which a
 * root daemon may use), else its path below the backing directory (reopened
 * with openat2 beneath the backing directory, no symlink followed). Open
 * O_PATH descriptors are kept for at most fd_cap nodes per backing
 * directory, least recently used first out; a reopened descriptor must name
 * the same (dev, ino) or the node is stale. Operations get a duplicate of
 * the cached descriptor to close when done, so an eviction never closes a
 * descriptor in use. The checks that a node is still inside the backing
 * directory work on any descriptor of the inode (backing_path.c), so they
 * are unchanged. Running out of descriptors (EMFILE, ENFILE) is logged once
 * per burst and answered with that errno, after the cache has given back
 * half of what it holds and the call was tried once more. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backing_i.h"

/* Seconds without running out before running out is logged again. */
#define BK_FD_QUIET_NS (10ULL * 1000000000ULL)

static int exhausted(int err)
{
	return err == EMFILE || err == ENFILE;
}

void bk_fd_error(struct bk_root *r, int err, const char *what)
{
	uint64_t now = dl_now_ns(), last = atomic_load(&r->fd_errs_at);

	if (!exhausted(err))
		return;
	atomic_fetch_add(&r->fd_errs, 1);
	if (last && now - last < BK_FD_QUIET_NS) {
		atomic_store(&r->fd_errs_at, now);
		return;
	}
	atomic_store(&r->fd_errs_at, now);
	fprintf(stderr,
		"dliofs: backing %s: out of file descriptors (%s) while %s: the request fails "
		"with %s; the daemon keeps at most %u descriptors of looked-up inodes here, the "
		"rest are open files and directories of clients (raise the limit with ulimit -n "
		"before `dliofs mount`); said once per burst\n",
		bk_name(r), strerror(err), what, err == EMFILE ? "EMFILE" : "ENFILE", r->fd_cap);
}

void bk_fds_setup(struct dl_backing *b, unsigned real_dirs)
{
	struct rlimit rl;
	rlim_t cap = BK_FD_CACHE_MAX;

	/* Every open file of a client holds one too: half the limit at most. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < cap)
		cap = rl.rlim_cur / 2;
	if (real_dirs)
		cap /= real_dirs;
	if (cap < 16)
		cap = 16;
	for (unsigned i = 0; i < b->n; i++)
		b->roots[i].fd_cap = (unsigned)cap;
}

/* ---- the least recently used list (root lock held) ---- */

static void lru_unlink(struct bk_root *r, struct bk_node *n)
{
	if (n->lru_prev)
		n->lru_prev->lru_next = n->lru_next;
	else
		r->lru_head = n->lru_next;
	if (n->lru_next)
		n->lru_next->lru_prev = n->lru_prev;
	else
		r->lru_tail = n->lru_prev;
	n->lru_prev = n->lru_next = NULL;
}

static void lru_push(struct bk_root *r, struct bk_node *n)
{
	n->lru_prev = NULL;
	n->lru_next = r->lru_head;
	if (r->lru_head)
		r->lru_head->lru_prev = n;
	r->lru_head = n;
	if (!r->lru_tail)
		r->lru_tail = n;
}

/* Close cached descriptors, oldest first, until at most keep are open. */
static void shrink(struct bk_root *r, unsigned keep)
{
	while (r->fd_open > keep && r->lru_tail) {
		struct bk_node *n = r->lru_tail;

		lru_unlink(r, n);
		close(n->fd);
		n->fd = -1;
		r->fd_open--;
	}
}

/* fd becomes n's cached descriptor (n has none). */
static void cache(struct bk_root *r, struct bk_node *n, int fd)
{
	n->fd = fd;
	lru_push(r, n);
	r->fd_open++;
	shrink(r, r->fd_cap);
}

static int dup_fd(int fd)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	return d < 0 ? -errno : d;
}

/* ---- finding an inode again ---- */

/* n's path below the backing directory, as the kernel names fd's inode now
 * (none when it cannot tell: n is then stale once evicted). */
static int set_rel(struct bk_root *r, struct bk_node *n, int fd)
{
	char proc[64], path[PATH_MAX];
	ssize_t len;

	bk_proc_path(fd, proc, sizeof(proc));
	len = readlink(proc, path, sizeof(path) - 1);
	free(n->rel);
	n->rel = NULL;
	if (len <= (ssize_t)r->real_len || len >= (ssize_t)sizeof(path) - 1 ||
	    strncmp(path, r->real, r->real_len) || (r->real_len > 1 && path[r->real_len] != '/'))
		return 0;
	path[len] = 0;
	n->rel = strdup(path + r->real_len + (r->real_len > 1));
	return n->rel ? 0 : -ENOMEM;
}

int bk_fds_adopt(struct bk_root *r, struct bk_node *n, int fd)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int mount_id;

	if (!fh)
		return -ENOMEM;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", fh, &mount_id, AT_EMPTY_PATH) == 0 &&
	    mount_id == r->mount_id) {
		/* Most handles are a few bytes: keep only those (millions of
		 * nodes). */
		n->fh = realloc(fh, sizeof(*fh) + fh->handle_bytes);
		if (!n->fh)
			n->fh = fh;
	} else {
		/* No handle (the file system has none, or another file system is
		 * mounted below). */
		free(fh);
		if (set_rel(r, n, fd))
			return -ENOMEM;
	}
	cache(r, n, fd);
	return 0;
}

void bk_fds_drop(struct bk_root *r, struct bk_node *n)
{
	if (n->fd >= 0) {
		lru_unlink(r, n);
		close(n->fd);
		n->fd = -1;
		r->fd_open--;
	}
	free(n->fh);
	free(n->rel);
	n->fh = NULL;
	n->rel = NULL;
}

void bk_fds_refresh(struct bk_root *r, struct bk_node *n, int fd)
{
	/* Found by path: where it is now (it may have been renamed). */
	if (!n->fh)
		set_rel(r, n, fd);
	if (n->fd < 0) {
		cache(r, n, fd);
		return;
	}
	lru_unlink(r, n);
	lru_push(r, n);
	close(fd);
}

static int open_beneath(struct bk_root *r, const char *rel)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, r->top.fd, rel, &how, sizeof(how));
}

/* A new descriptor of n's inode (root lock not held), or -errno. */
static int reopen(struct bk_root *r, struct bk_node *n)
{
	struct stat st;
	int fd = -1, err = ESTALE;

	if (n->fh)
		fd = open_by_handle_at(r->top.fd, n->fh, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	else if (n->rel)
		fd = open_beneath(r, n->rel);
	if (fd < 0) {
		err = n->fh || n->rel ? errno : ESTALE;
		/* Gone from the file system, or moved (by path): stale. */
		return exhausted(err) || err == ENOMEM ? -err : -ESTALE;
	}
	if (fstat(fd, &st) || st.st_dev != n->dev || st.st_ino != n->ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int bk_node_fd(struct bk_root *r, struct bk_node *n)
{
	int fd, ret;

	if (n == &r->top) {
		fd = dup_fd(r->top.fd);
		goto out;
	}
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&r->lock);
		if (n->fd >= 0) {
			lru_unlink(r, n);
			lru_push(r, n);
			fd = dup_fd(n->fd);
			pthread_mutex_unlock(&r->lock);
		} else {
			pthread_mutex_unlock(&r->lock);
			fd = reopen(r, n);
			if (fd >= 0) {
				pthread_mutex_lock(&r->lock);
				if (n->fd >= 0) {
					/* Another request reopened it meanwhile. */
					close(fd);
				} else {
					cache(r, n, fd);
				}
				fd = dup_fd(n->fd);
				pthread_mutex_unlock(&r->lock);
			}
		}
		if (tries || !exhausted(-fd))
			break;
		/* Out of descriptors: give back half of the cache, once. */
		pthread_mutex_lock(&r->lock);
		shrink(r, r->fd_open / 2);
		pthread_mutex_unlock(&r->lock);
	}
out:
	ret = fd;
	if (ret < 0)
		bk_fd_error(r, -ret, "reopening a looked-up inode");
	return ret;
}

void bk_fds_relieve(struct bk_root *r)
{
	pthread_mutex_lock(&r->lock);
	shrink(r, r->fd_open / 2);
	pthread_mutex_unlock(&r->lock);
}
