/* Sinks: a directory tree kept in memory (names, sizes, modes, times) whose
 * file writes are accepted, shaped by the write model, counted and
 * discarded, so a checkpoint of any size costs no disk; reads of a file get
 * deterministic bytes up to its size. This file is the tree; sink_ops.c
 * serves FUSE requests on it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/json.h"
#include "sink_i.h"

static uint64_t name_hash(const struct sk_node *dir, const char *name)
{
	return dl_hash_str(dir->id, name);
}

struct sk_node *sk_find_id(struct dl_sink *s, uint64_t id)
{
	if (id == 0)
		return &s->root;
	for (struct dl_hlink *l = dl_htab_first(&s->by_id, id); l; l = dl_htab_next(l)) {
		struct sk_node *n = dl_hentry(l, struct sk_node, by_id);

		if (n->id == id)
			return n;
	}
	return NULL;
}

struct sk_node *sk_find_name(struct dl_sink *s, const struct sk_node *dir, const char *name)
{
	for (struct dl_hlink *l = dl_htab_first(&s->by_name, name_hash(dir, name)); l;
	     l = dl_htab_next(l)) {
		struct sk_node *n = dl_hentry(l, struct sk_node, by_name);

		if (n->parent == dir && !strcmp(n->name, name))
			return n;
	}
	return NULL;
}

/* First child with id >= id (children are sorted by id). */
size_t sk_kid_pos(const struct sk_node *dir, uint64_t id)
{
	size_t lo = 0, hi = dir->nkids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (dir->kids[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int attach(struct dl_sink *s, struct sk_node *dir, struct sk_node *n)
{
	size_t at;

	if (dir->nkids == dir->kcap) {
		size_t cap = dir->kcap ? dir->kcap * 2 : 8;
		struct sk_node **k = realloc(dir->kids, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		dir->kids = k;
		dir->kcap = cap;
	}
	at = sk_kid_pos(dir, n->id);
	memmove(dir->kids + at + 1, dir->kids + at, (dir->nkids - at) * sizeof(*dir->kids));
	dir->kids[at] = n;
	dir->nkids++;
	n->parent = dir;
	dir->nsubdirs += S_ISDIR(n->mode);
	dl_htab_add(&s->by_name, &n->by_name, name_hash(dir, n->name));
	return 0;
}

static void detach(struct dl_sink *s, struct sk_node *n)
{
	struct sk_node *dir = n->parent;
	size_t at = sk_kid_pos(dir, n->id);

	dl_htab_del(&s->by_name, &n->by_name);
	memmove(dir->kids + at, dir->kids + at + 1, (dir->nkids - at - 1) * sizeof(*dir->kids));
	dir->nkids--;
	dir->nsubdirs -= S_ISDIR(n->mode);
	n->parent = NULL;
}

static void free_node(struct dl_sink *s, struct sk_node *n)
{
	sk_keep_free(s, n);
	free(n->kids);
	free(n->name);
	free(n);
}

static void destroy(struct dl_sink *s, struct sk_node *n)
{
	dl_htab_del(&s->by_id, &n->by_id);
	free_node(s, n);
}

/* Gone from the tree: freed now, or when the kernel forgets it. */
static void drop(struct dl_sink *s, struct sk_node *n)
{
	detach(s, n);
	if (n->nlookup == 0)
		destroy(s, n);
}

void sk_now(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

int sk_add(struct dl_sink *s, struct sk_node *dir, const char *name, mode_t mode,
		    const struct fuse_ctx *c, struct sk_node **out)
{
	struct sk_node *n;
	int ret;

	if (s->by_id.count >= s->max)
		return -ENOSPC;
	/* Room in both tables first: nothing below can fail half way. */
	ret = dl_htab_reserve(&s->by_id, s->by_id.count + 1);
	if (!ret)
		ret = dl_htab_reserve(&s->by_name, s->by_name.count + 1);
	if (ret)
		return ret;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return -ENOMEM;
	}
	n->id = s->next_id++;
	n->mode = mode;
	n->uid = c ? c->uid : 0;
	n->gid = c ? c->gid : 0;
	sk_now(&n->mtime);
	n->atime = n->ctime = n->mtime;
	dir->mtime = dir->ctime = n->mtime;
	ret = attach(s, dir, n);
	if (ret) {
		free(n->name);
		free(n);
		return ret;
	}
	dl_htab_add(&s->by_id, &n->by_id, n->id);
	*out = n;
	return 0;
}

void sk_fill_stat(const struct sk_node *n, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->mode;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
	st->st_blksize = 1 << 20;
	if (S_ISDIR(n->mode)) {
		st->st_nlink = 2 + n->nsubdirs;
		st->st_size = 4096;
	} else {
		st->st_nlink = n->parent ? 1 : 0;
		st->st_size = (off_t)n->size;
		st->st_blocks = 0; /* nothing is stored */
	}
}

static int is_ancestor(const struct sk_node *a, const struct sk_node *n)
{
	for (; n; n = n->parent)
		if (n == a)
			return 1;
	return 0;
}

int sk_rename_locked(struct dl_sink *s, struct sk_node *d, const char *name,
			 struct sk_node *nd, const char *newname, unsigned flags)
{
	struct sk_node *n, *old;
	char *copy;
	int ret;

	if (!bk_name_ok(name) || !bk_name_ok(newname) || (flags & ~(unsigned)RENAME_NOREPLACE))
		return -EINVAL; /* RENAME_EXCHANGE is not offered */
	n = sk_find_name(s, d, name);
	if (!n)
		return -ENOENT;
	old = sk_find_name(s, nd, newname);
	if (old == n)
		return 0;
	if (S_ISDIR(n->mode) && is_ancestor(n, nd))
		return -EINVAL;
	if (old) {
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		if (S_ISDIR(old->mode) && !S_ISDIR(n->mode))
			return -EISDIR;
		if (!S_ISDIR(old->mode) && S_ISDIR(n->mode))
			return -ENOTDIR;
		if (old->nkids)
			return -ENOTEMPTY;
	}
	copy = strdup(newname);
	if (!copy)
		return -ENOMEM;
	/* Room in the new directory first, so a failure changes nothing. */
	if (nd->nkids + 1 > nd->kcap) {
		size_t cap = nd->kcap ? nd->kcap * 2 : 8;
		struct sk_node **k = realloc(nd->kids, cap * sizeof(*k));
		if (!k) {
			free(copy);
			return -ENOMEM;
		}
		nd->kids = k;
		nd->kcap = cap;
	}
	if (old)
		drop(s, old);
	detach(s, n);
	free(n->name);
	n->name = copy;
	ret = attach(s, nd, n);
	sk_now(&n->ctime);
	d->mtime = d->ctime = nd->mtime = nd->ctime = n->ctime;
	return ret;
}

int sk_remove_locked(struct dl_sink *s, struct sk_node *d, const char *name, int dir)
{
	struct sk_node *n = bk_name_ok(name) ? sk_find_name(s, d, name) : NULL;

	if (!n)
		return -ENOENT;
	if (dir && !S_ISDIR(n->mode))
		return -ENOTDIR;
	if (!dir && S_ISDIR(n->mode))
		return -EISDIR;
	if (dir && n->nkids)
		return -ENOTEMPTY;
	sk_now(&d->mtime);
	d->ctime = d->mtime;
	drop(s, n);
	return 0;
}

/* ---- the glue backing.c calls ---- */

int dl_sink_new(const struct bk_root *r, const char *mnt_real, struct dl_sink **out)
{
	struct dl_sink *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->jfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->at = r->cfg->at;
	s->max = r->cfg->max_entries ? (size_t)r->cfg->max_entries : (size_t)1 << 20;
	s->next_id = 1;
	s->root.mode = S_IFDIR | 0755;
	s->root.uid = getuid();
	s->root.gid = getgid();
	sk_now(&s->root.mtime);
	s->root.atime = s->root.ctime = s->root.mtime;
	if (r->cfg->journal[0]) {
		pthread_mutex_lock(&s->lock);
		ret = sk_journal_open(s, r->cfg->journal, mnt_real);
		pthread_mutex_unlock(&s->lock);
		if (ret) {
			dl_sink_free(s);
			return ret;
		}
	}
	*out = s;
	return 0;
}

static void drain_node(struct dl_hlink *l, void *arg)
{
	(void)arg;
	free_node(NULL, dl_hentry(l, struct sk_node, by_id));
}

void dl_sink_free(struct dl_sink *s)
{
	if (!s)
		return;
	sk_journal_close(s);
	dl_htab_free(&s->by_name);
	dl_htab_drain(&s->by_id, drain_node, NULL);
	free(s->root.kids);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void dl_sink_forget(struct dl_sink *s, uint64_t id, uint64_t nlookup)
{
	struct sk_node *n;

	if (id == 0)
		return;
	pthread_mutex_lock(&s->lock);
	n = sk_find_id(s, id);
	if (n) {
		n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
		if (n->nlookup == 0 && !n->parent)
			destroy(s, n);
	}
	pthread_mutex_unlock(&s->lock);
}

int dl_sink_stat(struct dl_sink *s, uint64_t id, fuse_ino_t ino, struct stat *st)
{
	struct sk_node *n;

	pthread_mutex_lock(&s->lock);
	n = sk_find_id(s, id);
	if (n)
		sk_fill_stat(n, ino, st);
	pthread_mutex_unlock(&s->lock);
	return n ? 0 : -ESTALE;
}

int sk_path_locked(struct dl_sink *s, const struct sk_node *n, char *buf, size_t len)
{
	const struct sk_node *chain[256];
	size_t depth = 0, o = 0;

	for (; n && n != &s->root && depth < 256; n = n->parent)
		chain[depth++] = n;
	if (n != &s->root)
		return -ENOENT; /* unlinked */
	buf[0] = 0;
	while (depth--) {
		int k = snprintf(buf + o, len - o, "%s%s", o ? "/" : "", chain[depth]->name);
		if (k < 0 || (size_t)k >= len - o)
			return -ENAMETOOLONG;
		o += (size_t)k;
	}
	return 0;
}

int dl_sink_path(struct dl_sink *s, uint64_t id, char *buf, size_t len)
{
	struct sk_node *n;
	int ret = -ENOENT;

	pthread_mutex_lock(&s->lock);
	n = sk_find_id(s, id);
	if (n)
		ret = sk_path_locked(s, n, buf, len);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void dl_sink_stats_write(struct dl_sink *s, struct dl_jw *w)
{
	uint64_t kept, unkept;
	size_t count;

	pthread_mutex_lock(&s->lock);
	count = s->by_id.count;
	pthread_mutex_unlock(&s->lock);
	dl_jw_u64(w, "entries", count);
	dl_jw_u64(w, "max_entries", s->max);
	dl_jw_u64(w, "discarded_bytes", atomic_load(&s->discarded));
	dl_jw_u64(w, "read_back_bytes", atomic_load(&s->read_back));
	pthread_mutex_lock(&s->lock);
	kept = s->kept;
	unkept = s->unkept;
	pthread_mutex_unlock(&s->lock);
	dl_jw_u64(w, "kept_bytes", kept);
	dl_jw_u64(w, "unkept_bytes", unkept);
}

