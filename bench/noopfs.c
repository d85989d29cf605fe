/* dl-noopfs: the FUSE ceiling for the read benchmarks. A minimal low-level
 * FUSE filesystem with one flat directory of N files of S bytes whose read()
 * fills the reply from the same generator as dliofs (dl_prng_fill) and does
 * nothing else: no namespace, no formats, no pacer, no statistics. What a
 * reader gets from it is what FUSE itself allows on this machine, so the
 * benchmarks print dliofs's rate as a fraction of it beside the tmpfs ratio.
 *
 * It asks the kernel for what dliofs asks (1 MiB requests, async reads,
 * 64 background requests, the bdi readahead lifted to --readahead) and runs
 * the same multithreaded loop (clone_fd, up to 16 workers), so the two differ
 * only in dliofs's own work.
 *
 *   dl-noopfs MOUNTPOINT [--files N] [--size BYTES] [--direct] [--readahead BYTES]
 *
 * Runs in the foreground until unmounted (fusermount3 -u) or signalled; file
 * names are f000000, f000001, ... */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "dliofs/prng.h"

#define MAX_READ (1u << 20)
#define NAME_FMT "f%06llu"

struct noop {
	unsigned long long files;
	unsigned long long size;
	int direct;
	unsigned long long readahead;
	const char *mountpoint;
	pthread_key_t buf_key; /* one reply buffer per worker thread */
};

static struct noop *noop_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = MAX_READ;
	conn->max_readahead = MAX_READ;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
}

/* Inode 1 is the root; file i is inode i + 2. */
static int file_of(const struct noop *n, fuse_ino_t ino, unsigned long long *i)
{
	if (ino < 2 || ino - 2 >= n->files)
		return -ENOENT;
	*i = ino - 2;
	return 0;
}

static void fill_stat(const struct noop *n, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct noop *n = noop_of(req);
	struct fuse_entry_param e;
	unsigned long long i;
	char *end;

	if (parent != FUSE_ROOT_ID || name[0] != 'f') {
		fuse_reply_err(req, ENOENT);
		return;
	}
	i = strtoull(name + 1, &end, 10);
	if (*end || i >= n->files) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = i + 2;
	e.attr_timeout = e.entry_timeout = 86400.0;
	fill_stat(n, e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct noop *n = noop_of(req);
	unsigned long long i;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && file_of(n, ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(n, ino, &st);
	fuse_reply_attr(req, &st, 86400.0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct noop *n = noop_of(req);
	char *buf, name[32];
	size_t used = 0;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Offsets: 1 = ".", 2 = "..", 3 + i = file i. */
	for (unsigned long long k = (unsigned long long)off; k < n->files + 2; k++) {
		size_t need;

		memset(&st, 0, sizeof(st));
		if (k < 2) {
			st.st_ino = FUSE_ROOT_ID;
			st.st_mode = S_IFDIR;
			snprintf(name, sizeof(name), "%s", k ? ".." : ".");
		} else {
			st.st_ino = k;
			st.st_mode = S_IFREG;
			snprintf(name, sizeof(name), NAME_FMT, k - 2);
		}
		need = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)k + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct noop *n = noop_of(req);
	unsigned long long i;

	if (file_of(n, ino, &i)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (n->direct)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct noop *n = noop_of(req);
	unsigned long long i;
	void *buf;
	size_t len;

	(void)fi;
	if (file_of(n, ino, &i) || off < 0 || size > MAX_READ) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	buf = pthread_getspecific(n->buf_key);
	if (!buf) {
		if (posix_memalign(&buf, 4096, MAX_READ)) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		pthread_setspecific(n->buf_key, buf);
	}
	if ((unsigned long long)off >= n->size)
		len = 0;
	else
		len = n->size - (unsigned long long)off < size ? (size_t)(n->size - (unsigned long long)off)
							     : size;
	dl_prng_fill(dl_key2(0x6e6f6f70, i), (uint64_t)off, buf, len);
	fuse_reply_buf(req, buf, len);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.readdir = op_readdir,
	.open = op_open,
	.read = op_read,
};

/* As dliofs's --readahead: the bdi knob, once INIT has been answered (the
 * stat below waits for that). Root only; failing costs speed, nothing else. */
static void *readahead_thread(void *arg)
{
	const struct noop *n = arg;
	char path[128], val[32];
	struct stat st;
	int fd, len;

	if (stat(n->mountpoint, &st) || st.st_ino != FUSE_ROOT_ID)
		return NULL;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
		 minor(st.st_dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	len = snprintf(val, sizeof(val), "%llu", n->readahead / 1024);
	if (write(fd, val, (size_t)len) != len) {
		/* keep the kernel's default */
	}
	close(fd);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: dl-noopfs MOUNTPOINT [--files N] [--size BYTES] [--direct] "
			"[--readahead BYTES]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct noop n = {.files = 8, .size = 256ull << 20, .readahead = 4ull << 20};
	char *fargv[] = {"dl-noopfs", "-o", "fsname=dl-noopfs,subtype=dl-noopfs", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	pthread_t ra;
	int ret = 1, mounted = 0, ra_started = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--files") && i + 1 < argc)
			n.files = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			n.size = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--readahead") && i + 1 < argc)
			n.readahead = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--direct"))
			n.direct = 1;
		else if (argv[i][0] != '-' && !n.mountpoint)
			n.mountpoint = argv[i];
		else
			return usage();
	}
	if (!n.mountpoint || !n.files)
		return usage();
	if (pthread_key_create(&n.buf_key, free))
		return 1;
	se = fuse_session_new(&args, &ops, sizeof(ops), &n);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se))
		goto out;
	if (fuse_session_mount(se, n.mountpoint))
		goto out;
	mounted = 1;
	if (n.readahead && pthread_create(&ra, NULL, readahead_thread, &n) == 0)
		ra_started = 1;
	lc = fuse_loop_cfg_create();
	if (!lc)
		goto out;
	fuse_loop_cfg_set_clone_fd(lc, 1);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	fuse_loop_cfg_set_max_threads(lc, 16);
	ret = fuse_session_loop_mt(se, lc) < 0 ? 1 : 0;
out:
	if (ra_started)
		pthread_join(ra, NULL);
	if (lc)
		fuse_loop_cfg_destroy(lc);
	if (se) {
		if (mounted)
			fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	fuse_opt_free_args(&args);
	pthread_key_delete(n.buf_key);
	return ret;
}
