/* What the synthetic and the control tree share: the operations on the
 * computed namespace (lookups, attributes, listings; its root shows other
 * trees' inodes too, whose attributes come from their own tables), the
 * mount's statfs, and the list of open handles. Whether an answer is
 * control traffic is the tree's to say (its table's ctl flag). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backing.h"
#include "dliofs/ctl_client.h"
#include "fs_i.h"
#include "reply.h"
#include "tree_i.h"

int dl_node_entry(struct dl_fs *fs, const struct dl_node *n, struct fuse_entry_param *e)
{
	const struct dl_tree_ops *t;

	memset(e, 0, sizeof(*e));
	e->ino = dl_node_ino(n);
	e->generation = 1;
	/* The name stays for the mount's life whatever tree it leads into;
	 * what is behind it may change as fast as its tree says. */
	e->entry_timeout = DL_TIMEOUT;
	t = dl_tree_of(fs, e->ino);
	e->attr_timeout = t->attr_timeout;
	return t->stat(fs, e->ino, &e->attr);
}

static int is_regular(const struct dl_node *n)
{
	return n->type == DL_NODE_FILE || (n->type == DL_NODE_CTL && n->index != DL_CTL_DIR);
}

/* A synthetic directory with an overlay (backing_overlay.c): its names
 * can change, and it lists the overlay's after its own. */
static int overlaid(struct dl_fs *fs, fuse_ino_t ino)
{
	return dl_tree_id(fs, ino) == DL_TREE_SYNTH && dl_overlay_on(fs);
}

static int list(fuse_req_t req, struct dl_reply *r, fuse_ino_t ino, size_t size, off_t off,
		int plus)
{
	struct dl_fs *fs = fuse_req_userdata(req);
	struct dl_node dir, child;
	struct fuse_entry_param e;
	char name[256];
	struct stat st;
	size_t used = 0;
	int ret;

	ret = dl_node_from_ino(fs, ino, &dir);
	if (ret)
		return ret;
	r->buf = malloc(size);
	if (!r->buf)
		return -ENOMEM;
	memset(&st, 0, sizeof(st));
	if ((uint64_t)off >= DL_OVERLAY_OFF)
		goto overlay;
	for (uint64_t pos = (uint64_t)off;; pos++) {
		size_t need;

		if (pos == 0) {
			st.st_ino = ino;
			st.st_mode = S_IFDIR;
			strcpy(name, ".");
		} else if (pos == 1) {
			st.st_ino = dl_node_parent_ino(&dir);
			st.st_mode = S_IFDIR;
			strcpy(name, "..");
		} else {
			ret = dl_node_child(fs, &dir, pos - 2, &child, name, sizeof(name));
			if (ret == -ENOENT)
				break;
			if (ret)
				return ret;
			st.st_ino = dl_node_ino(&child);
			st.st_mode = is_regular(&child) ? S_IFREG : S_IFDIR;
		}
		if (plus && pos >= 2) {
			ret = dl_node_entry(fs, &child, &e);
			if (ret)
				return ret;
			need = fuse_add_direntry_plus(req, (char *)r->buf + used, size - used, name,
						      &e, (off_t)pos + 1);
		} else {
			/* ".", "..": the kernel links neither. */
			need = dl_add_dirent(req, (char *)r->buf + used, size - used, name, &st,
					     (off_t)pos + 1, plus);
		}
		if (need > size - used) {
			r->len = used;
			return 0;
		}
		used += need;
	}
overlay:
	if (overlaid(fs, ino)) {
		ret = dl_overlay_list(fs, req, ino,
				      (uint64_t)off >= DL_OVERLAY_OFF ? (uint64_t)off - DL_OVERLAY_OFF
								     : 0,
				      r->buf, size, &used, plus);
		if (ret)
			return ret;
	}
	r->len = used;
	return 0;
}

static void readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct dl_fs *fs = fuse_req_userdata(req);
	int ctl = dl_tree_of(fs, ino)->ctl;
	struct dl_reply *r = ctl ? dl_reply_begin_ctl(req, DL_R_BUF)
				 : dl_reply_begin(req, DL_R_BUF, DL_OP_META, DL_TOP_READDIR, ino);

	if (!r)
		return;
	if (!ctl) {
		/* Later parts of a listing come from the blocks its first part
		 * read: the directory's inode, seen by then. */
		r->preq.inode = ino;
		if (!off)
			r->preq.flags |= DL_PREQ_LISTING;
	}
	dl_reply_finish(fs, r, list(req, r, ino, size, off, plus));
}

void dl_node_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)fi;
	readdir_any(req, ino, size, off, 0);
}

void dl_node_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi)
{
	(void)fi;
	readdir_any(req, ino, size, off, 1);
}

void dl_node_lookup_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dl_fs *fs = fuse_req_userdata(req);
	struct dl_reply *r;
	struct dl_node p, c;
	int ret;

	ret = dl_node_from_ino(fs, parent, &p);
	if (!ret)
		ret = dl_node_lookup(fs, &p, name, &c);
	/* Not a synthetic name: the overlay's, if any (never cached when
	 * missing: another node may make it). */
	if (ret == -ENOENT && p.type != DL_NODE_FILE && overlaid(fs, parent)) {
		fs->trees[DL_TREE_BACKING]->lookup(req, parent, name);
		return;
	}
	/* Finding .dliofs at the root is control traffic too. */
	if (dl_tree_of(fs, parent)->ctl || (!ret && dl_tree_of(fs, dl_node_ino(&c))->ctl))
		r = dl_reply_begin_ctl(req, DL_R_ENTRY);
	else
		r = dl_reply_begin(req, DL_R_ENTRY, DL_OP_META, DL_TOP_LOOKUP, parent);
	if (!r)
		return;
	if (ret == -ENOENT) {
		/* Cache the miss too: loaders probe names that never exist. */
		memset(&r->e, 0, sizeof(r->e));
		r->e.entry_timeout = DL_TIMEOUT;
		ret = 0;
	} else if (!ret) {
		ret = dl_node_entry(fs, &c, &r->e);
		r->preq.inode = r->e.ino; /* the inode a real lookup reads */
	}
	dl_reply_finish(fs, r, ret);
}

void dl_node_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fuse_req_userdata(req);
	const struct dl_tree_ops *t = dl_tree_of(fs, ino);
	struct dl_reply *r = t->ctl ? dl_reply_begin_ctl(req, DL_R_ATTR)
				    : dl_reply_begin(req, DL_R_ATTR, DL_OP_META, DL_TOP_GETATTR, ino);

	(void)fi;
	if (!r)
		return;
	r->preq.inode = ino;
	r->attr_timeout = t->attr_timeout;
	dl_reply_finish(fs, r, t->stat(fs, ino, &r->st));
}

void dl_node_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dl_fs *fs = fuse_req_userdata(req);
	const struct dl_tree_ops *t = dl_tree_of(fs, ino);
	struct dl_reply *r;
	struct dl_node n;
	int ret;

	ret = dl_node_from_ino(fs, ino, &n);
	if (!ret && is_regular(&n))
		ret = -ENOTDIR;
	if (ret) {
		dl_reply_nodev(req, t->ctl, DL_TOP_OPENDIR, ino, -ret);
		return;
	}
	r = t->ctl ? dl_reply_begin_ctl(req, DL_R_OPEN)
		   : dl_reply_begin(req, DL_R_OPEN, DL_OP_META, DL_TOP_OPENDIR, ino);
	if (!r)
		return;
	r->preq.inode = ino;
	r->fi = *fi;
	/* Names that never change may be kept by the kernel; an overlay's
	 * may change on any node. */
	r->fi.cache_readdir = !overlaid(fs, ino);
	r->fi.keep_cache = !overlaid(fs, ino);
	r->fi.fh = dl_client_pack(&r->client); /* who opened it: the close is theirs */
	dl_reply_finish(fs, r, 0);
}

void dl_node_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct dl_reply *r = dl_reply_begin(req, DL_R_STATFS, DL_OP_META, DL_TOP_STATFS, ino);

	if (!r)
		return;
	dl_node_statvfs(fuse_req_userdata(req), &r->sv);
	dl_reply_finish(fuse_req_userdata(req), r, 0);
}

void dl_handle_add(struct dl_fs *fs, struct dl_handle *h, void (*drop)(struct dl_handle *h))
{
	h->fs = fs;
	h->drop = drop;
	h->prev = NULL;
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->handles;
	if (h->next)
		h->next->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
}

void dl_handle_free(struct dl_handle *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->fs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		h->fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&h->fs->handles_lock);
	h->drop(h);
}

void dl_handle_abort(struct dl_reply *r)
{
	dl_handle_free((struct dl_handle *)(uintptr_t)r->fi.fh);
}

void dl_fs_free_handles(struct dl_fs *fs)
{
	while (fs->handles)
		dl_handle_free(fs->handles);
}
