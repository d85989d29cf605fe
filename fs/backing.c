/* Backing store: setup, the inode table of real directories, paths, and
 * the statistics. The operations on real directories are in backing_ops.c
 * (their table), backing_names.c and backing_files.c; on sinks in
 * sink_ops.c (their tree: sink.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backing_i.h"
#include "dliofs/json.h"

/* ---- the inode table: by id (requests) and by (dev, ino) (lookups) ---- */

static uint64_t key_hash(dev_t dev, ino_t ino)
{
	return (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev;
}

static struct bk_node *find_id(struct bk_root *r, uint64_t id)
{
	for (struct dl_hlink *l = dl_htab_first(&r->by_id, id); l; l = dl_htab_next(l)) {
		struct bk_node *n = dl_hentry(l, struct bk_node, by_id);

		if (n->id == id)
			return n;
	}
	return NULL;
}

static struct bk_node *find_key(struct bk_root *r, dev_t dev, ino_t ino)
{
	for (struct dl_hlink *l = dl_htab_first(&r->by_key, key_hash(dev, ino)); l;
	     l = dl_htab_next(l)) {
		struct bk_node *n = dl_hentry(l, struct bk_node, by_key);

		if (n->dev == dev && n->ino == ino)
			return n;
	}
	return NULL;
}

int bk_node_get(struct bk_root *r, uint64_t id, struct bk_node **out)
{
	struct bk_node *n;

	if (id == 0) {
		*out = &r->top;
		return 0;
	}
	pthread_mutex_lock(&r->lock);
	n = find_id(r, id);
	pthread_mutex_unlock(&r->lock);
	*out = n;
	return n ? 0 : -ESTALE;
}

int bk_node_ref(struct bk_root *r, int fd, const struct stat *st, struct bk_node **out)
{
	struct bk_node *n;
	int ret = 0;

	/* The directory itself, met again through a hard link or bind mount,
	 * keeps its pinned node. */
	if (st->st_dev == r->top.dev && st->st_ino == r->top.ino) {
		close(fd);
		*out = &r->top;
		return 0;
	}
	pthread_mutex_lock(&r->lock);
	n = find_key(r, st->st_dev, st->st_ino);
	if (n) {
		n->nlookup++;
		/* A fresh descriptor: cached if it had none (and its path, by
		 * which it may be found again, is this one). */
		bk_fds_refresh(r, n, fd);
		*out = n;
		goto out;
	}
	ret = dl_htab_reserve(&r->by_id, r->by_id.count + 1);
	if (!ret)
		ret = dl_htab_reserve(&r->by_key, r->by_key.count + 1);
	if (ret)
		goto fail;
	n = calloc(1, sizeof(*n));
	if (!n) {
		ret = -ENOMEM;
		goto fail;
	}
	n->id = r->next_id++;
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->fd = -1;
	n->type = st->st_mode & S_IFMT;
	n->nlookup = 1;
	ret = bk_fds_adopt(r, n, fd);
	if (ret) {
		free(n);
		goto fail;
	}
	dl_htab_add(&r->by_id, &n->by_id, n->id);
	dl_htab_add(&r->by_key, &n->by_key, key_hash(n->dev, n->ino));
	*out = n;
out:
	pthread_mutex_unlock(&r->lock);
	return 0;
fail:
	pthread_mutex_unlock(&r->lock);
	close(fd);
	return ret;
}

void bk_node_forget(struct bk_root *r, uint64_t id, uint64_t nlookup)
{
	struct bk_node *n;

	if (id == 0)
		return;
	pthread_mutex_lock(&r->lock);
	n = find_id(r, id);
	if (n) {
		n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
		if (n->nlookup == 0) {
			dl_htab_del(&r->by_id, &n->by_id);
			dl_htab_del(&r->by_key, &n->by_key);
			bk_fds_drop(r, n);
			free(n);
		}
	}
	pthread_mutex_unlock(&r->lock);
}

void bk_open_add(struct bk_root *r, struct bk_open *o)
{
	pthread_mutex_lock(&r->lock);
	o->next = r->open.next;
	o->prev = &r->open;
	r->open.next->prev = o;
	r->open.next = o;
	pthread_mutex_unlock(&r->lock);
}

void bk_open_del(struct bk_root *r, struct bk_open *o)
{
	if (!o->next)
		return;
	pthread_mutex_lock(&r->lock);
	o->prev->next = o->next;
	o->next->prev = o->prev;
	o->prev = o->next = NULL;
	pthread_mutex_unlock(&r->lock);
}

/* ---- paths ---- */

/* Where fd is, as the kernel names it, relative to the backing directory
 * (without a leading '/'; "" for the directory itself); -EACCES when it is
 * not below it (moved out meanwhile, or not a path we can tell). */
static int rel_path(const struct bk_root *r, int fd, char *rel, size_t len)
{
	char proc[64], path[PATH_MAX];
	ssize_t n;
	const char *p;

	bk_proc_path(fd, proc, sizeof(proc));
	n = readlink(proc, path, sizeof(path) - 1);
	if (n < 0)
		return -errno;
	path[n] = 0;
	if (r->real_len == 1) {
		p = path; /* the backing directory is "/" */
	} else {
		if (strncmp(path, r->real, r->real_len) ||
		    (path[r->real_len] != 0 && path[r->real_len] != '/'))
			return -EACCES;
		p = path + r->real_len;
	}
	while (*p == '/')
		p++;
	if (strlen(p) >= len)
		return -ENAMETOOLONG;
	memcpy(rel, p, strlen(p) + 1);
	return 0;
}

/* ---- replies ---- */

void bk_finish(struct dl_fs *fs, struct dl_reply *r, int ret)
{
	if (ret == -EMFILE || ret == -ENFILE) {
		/* Wherever it ran out: never silently (said once per burst). */
		struct bk_root *root = bk_root_of(fs, r->preq.file_id);

		if (root)
			bk_fd_error(root, -ret, "serving a request");
	}
	dl_reply_finish(fs, r, ret);
}

/* ---- roots ---- */

struct bk_root *bk_root_of(struct dl_fs *fs, fuse_ino_t ino)
{
	unsigned i = dl_ino_ds(ino);

	if (!fs->backing || dl_ino_type(ino) != DL_NODE_BACKING || i >= fs->backing->n ||
	    dl_ino_split(ino) || dl_ino_part(ino))
		return NULL;
	return &fs->backing->roots[i];
}

int bk_path(struct dl_fs *fs, fuse_ino_t ino, char *buf, size_t len)
{
	struct bk_root *r = bk_root_of(fs, ino);
	struct bk_node *n;
	char rel[PATH_MAX];
	int ret, k;

	if (!r)
		return -ENOENT;
	if (r->sink) {
		ret = dl_sink_path(r->sink, bk_id(ino), rel, sizeof(rel));
	} else {
		ret = bk_node_get(r, bk_id(ino), &n);
		if (!ret) {
			int fd = bk_node_fd(r, n);

			ret = fd < 0 ? fd : rel_path(r, fd, rel, sizeof(rel));
			if (fd >= 0)
				close(fd);
		}
	}
	if (ret)
		return ret;
	if (!r->cfg->at[0]) /* the overlay: its paths are the synthetic tree's */
		k = snprintf(buf, len, "%s", rel[0] ? rel : ".");
	else
		k = snprintf(buf, len, "%s%s%s", r->cfg->at, rel[0] ? "/" : "", rel);
	return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : k;
}

void dl_bk_stats_write(struct dl_fs *fs, struct dl_jw *w)
{
	if (!fs->backing || !fs->backing->n)
		return;
	dl_jw_obj(w, "backing");
	for (unsigned i = 0; i < fs->backing->n; i++) {
		struct bk_root *r = &fs->backing->roots[i];

		/* The overlay has no name under the root: "" can be no entry's. */
		dl_jw_obj(w, bk_name(r));
		dl_jw_str(w, "kind", r->sink ? "sink" : !r->cfg->at[0] ? "overlay" :
				     r->writable ? "writable" : "read-only");
		dl_jw_u64(w, "read_bytes", atomic_load(&r->rd_bytes));
		dl_jw_u64(w, "reads", atomic_load(&r->rd_ops));
		dl_jw_u64(w, "write_bytes", atomic_load(&r->wr_bytes));
		dl_jw_u64(w, "writes", atomic_load(&r->wr_ops));
		if (r->sink)
			dl_sink_stats_write(r->sink, w);
		dl_jw_end(w);
	}
	dl_jw_end(w);
}

void dl_bk_stats_reset(struct dl_fs *fs)
{
	for (unsigned i = 0; fs->backing && i < fs->backing->n; i++) {
		struct bk_root *r = &fs->backing->roots[i];

		atomic_store(&r->rd_bytes, 0);
		atomic_store(&r->rd_ops, 0);
		atomic_store(&r->wr_bytes, 0);
		atomic_store(&r->wr_ops, 0);
	}
}

/* ---- setup ---- */

/* Open files of clients hold descriptors: allow as many as we may. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Can nodes be found again by file handle here? A root daemon on a file
 * system that has them: the backing directory's own must work. */
static void find_by_handle(struct bk_root *r)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int mount_id, fd;

	r->mount_id = -1;
	if (!fh)
		return;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(r->top.fd, "", fh, &mount_id, AT_EMPTY_PATH) == 0) {
		fd = open_by_handle_at(r->top.fd, fh, O_PATH | O_CLOEXEC);
		if (fd >= 0) {
			r->mount_id = mount_id;
			close(fd);
		}
	}
	free(fh);
}

static int open_root(struct bk_root *r, const char *mnt_real)
{
	const char *path = r->cfg->path;
	char proc[64];
	struct stat st;
	ssize_t n;

	r->top.fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->top.fd < 0 || fstat(r->top.fd, &st)) {
		fprintf(stderr, "dliofs: backing %s: %s: %s\n", bk_name(r), path, strerror(errno));
		return -errno;
	}
	r->top.dev = st.st_dev;
	r->top.ino = st.st_ino;
	r->top.type = S_IFDIR;
	r->top.nlookup = 1;
	bk_proc_path(r->top.fd, proc, sizeof(proc));
	n = readlink(proc, r->real, sizeof(r->real) - 1);
	if (n <= 0) {
		fprintf(stderr, "dliofs: backing %s: %s: cannot tell its path: %s\n", bk_name(r),
			path, strerror(errno));
		return -EIO;
	}
	r->real[n] = 0;
	r->real_len = (size_t)n;
	find_by_handle(r);
	if (mnt_real && !strncmp(mnt_real, r->real, r->real_len) &&
	    (r->real_len == 1 || mnt_real[r->real_len] == 0 || mnt_real[r->real_len] == '/')) {
		fprintf(stderr,
			"dliofs: backing %s: %s contains the mountpoint %s; the daemon would "
			"serve its own requests\n",
			bk_name(r), path, mnt_real);
		return -ELOOP;
	}
	return 0;
}

int dl_backing_new(const struct dl_config *cfg, const char *mountpoint, struct dl_backing **out)
{
	struct dl_backing *b;
	char *mnt_real;
	int ret = 0, real_dirs = 0;

	*out = NULL;
	if (!cfg->nbacking && !cfg->overlay.path[0])
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	/* The overlay is one more real directory, after the entries. */
	b->roots = calloc(cfg->nbacking + 1, sizeof(*b->roots));
	if (!b->roots) {
		free(b);
		return -ENOMEM;
	}
	mnt_real = mountpoint ? realpath(mountpoint, NULL) : NULL;
	for (unsigned i = 0; i < cfg->nbacking + !!cfg->overlay.path[0]; i++) {
		struct bk_root *r = &b->roots[i];

		r->index = i;
		r->cfg = i < cfg->nbacking ? &cfg->backing[i] : &cfg->overlay;
		r->writable = r->cfg->writable || r->cfg->sink;
		r->top.fd = -1;
		r->next_id = 1;
		r->open.prev = r->open.next = &r->open;
		pthread_mutex_init(&r->lock, NULL);
		pthread_mutex_init(&r->ns_lock, NULL);
		b->n = i + 1;
		ret = r->cfg->sink ? dl_sink_new(r, mnt_real, &r->sink) : open_root(r, mnt_real);
		if (ret)
			break;
		real_dirs += !r->cfg->sink;
	}
	free(mnt_real);
	if (ret) {
		dl_backing_free(b);
		return ret;
	}
	if (real_dirs)
		raise_fd_limit();
	bk_fds_setup(b, (unsigned)real_dirs);
	*out = b;
	return 0;
}

static void free_node(struct dl_hlink *l, void *arg)
{
	struct bk_node *n = dl_hentry(l, struct bk_node, by_id);

	(void)arg;
	if (n->fd >= 0)
		close(n->fd);
	free(n->fh);
	free(n->rel);
	free(n);
}

void dl_backing_free(struct dl_backing *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->n; i++) {
		struct bk_root *r = &b->roots[i];

		/* Files the kernel never released (the daemon is stopping). */
		while (r->open.next && r->open.next != &r->open) {
			struct bk_open *o = r->open.next;

			bk_open_del(r, o);
			o->close(o);
		}
		dl_htab_free(&r->by_key);
		dl_htab_drain(&r->by_id, free_node, NULL);
		if (r->top.fd >= 0)
			close(r->top.fd);
		dl_sink_free(r->sink);
		pthread_mutex_destroy(&r->lock);
		pthread_mutex_destroy(&r->ns_lock);
	}
	free(b->roots);
	free(b);
}
