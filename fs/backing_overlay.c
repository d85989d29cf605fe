/* The overlay (`overlay: {path: /dir}`): the writable half of the synthetic
 * directories. A name created in a synthetic directory (the root, a
 * dataset, a split, a subfolder) is made in the overlay's real directory at
 * the same relative path, those directories made as needed; from there on
 * it is an inode of one more real backing directory (the overlay's root,
 * after the `backing:` entries), served by the same code and under the same
 * rules (backing_ops.c). Synthetic names come first: one the synthetic
 * directory has is never created, removed or renamed here, and an overlay
 * name that equals one is hidden. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backing_i.h"

static struct bk_root *overlay_root(struct dl_fs *fs)
{
	if (!fs->backing || !fs->cfg->overlay.path[0] || fs->backing->n <= fs->cfg->nbacking)
		return NULL;
	return &fs->backing->roots[fs->cfg->nbacking];
}

int dl_overlay_on(struct dl_fs *fs)
{
	return overlay_root(fs) != NULL;
}

/* The overlay's directory at synthetic directory dn's path (made, as the
 * daemon, when mk), referenced for good: the kernel never sees it (the
 * synthetic directory shadows it), so no forget will come. The walk is one
 * openat per component from the overlay's top, never following a link
 * (a link or a file in the way: ELOOP, ENOTDIR). */
static int overlay_dir(struct dl_fs *fs, const struct dl_node *dn, int mk, struct bk_root *r,
		       struct bk_node **out)
{
	char rel[PATH_MAX], *save = NULL, *c;
	struct stat st;
	int fd, nfd, ret;

	if (dn->type == DL_NODE_ROOT) {
		*out = &r->top;
		return 0;
	}
	ret = dl_node_path(fs, dl_node_ino(dn), rel, sizeof(rel));
	if (ret < 0)
		return ret;
	fd = bk_node_fd(r, &r->top);
	if (fd < 0)
		return fd;
	for (c = strtok_r(rel, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!bk_name_ok(c)) {
			ret = -EINVAL;
			goto out;
		}
		nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && mk) {
			if (mkdirat(fd, c, 0755) && errno != EEXIST) {
				ret = -errno;
				goto out;
			}
			nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			/* To find a name, a link or a file in the way is no
			 * directory: the name is not there. */
			ret = !mk && (errno == ENOTDIR || errno == ELOOP) ? -ENOENT : -errno;
			goto out;
		}
		close(fd);
		fd = nfd;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	ret = bk_node_ref(r, fd, &st, out);
	fd = -1;
	if (ret)
		goto out;
	/* One reference, the overlay's own, however often it is found. */
	pthread_mutex_lock(&r->lock);
	if (*out != &r->top && (*out)->nlookup > 1)
		(*out)->nlookup--;
	pthread_mutex_unlock(&r->lock);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int bk_parent_of(struct dl_fs *fs, fuse_ino_t parent, const char *name, int mk, int taken,
		 struct bk_root **r, struct bk_node **p)
{
	struct dl_node dn, c;

	if (dl_tree_id(fs, parent) != DL_TREE_SYNTH)
		return bk_node_of(fs, parent, r, p);
	*r = overlay_root(fs);
	if (!*r)
		return -EROFS;
	if (dl_node_from_ino(fs, parent, &dn))
		return -ENOENT;
	if (dn.type == DL_NODE_FILE)
		return -ENOTDIR;
	if (name && taken && dl_node_lookup(fs, &dn, name, &c) == 0)
		return taken;
	return overlay_dir(fs, &dn, mk, *r, p);
}

int dl_overlay_list(struct dl_fs *fs, fuse_req_t req, fuse_ino_t dir, uint64_t from, char *buf,
		    size_t size, size_t *used, int plus)
{
	struct bk_root *r;
	struct bk_node *p;
	struct dl_node dn, c;
	struct dirent *de;
	struct stat st;
	uint64_t k;
	DIR *dp;
	int ret, pfd, dfd;

	ret = dl_node_from_ino(fs, dir, &dn);
	if (!ret)
		ret = bk_parent_of(fs, dir, NULL, 0, 0, &r, &p);
	/* Nothing made here yet, or something not a directory in its place. */
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	pfd = bk_node_fd(r, p);
	if (pfd < 0)
		return pfd;
	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	if (dfd < 0)
		return -errno;
	dp = fdopendir(dfd);
	if (!dp) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	/* Offsets count the real directory's entries in its own order, which
	 * stays while it is not changed (a change during a listing may show
	 * a name twice or not at all, as on many real file systems). */
	memset(&st, 0, sizeof(st));
	for (k = 0; (de = readdir(dp)); k++) {
		size_t need;

		if (k < from || !bk_name_ok(de->d_name) ||
		    dl_node_lookup(fs, &dn, de->d_name, &c) == 0)
			continue;
		st.st_ino = de->d_ino;
		if (de->d_type != DT_UNKNOWN)
			st.st_mode = DTTOIF(de->d_type);
		else if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile */
		need = dl_add_dirent(req, buf + *used, size - *used, de->d_name, &st,
				     (off_t)(DL_OVERLAY_OFF + k + 1), plus);
		if (need > size - *used)
			break;
		*used += need;
	}
	closedir(dp);
	return 0;
}

ino_t bk_overlay_parent_ino(struct dl_fs *fs, struct bk_root *r, struct bk_node *n, ino_t real)
{
	char rel[PATH_MAX], *slash, *save = NULL, *c;
	struct dl_node dn = { .type = DL_NODE_ROOT }, next;

	if (real == r->top.ino)
		return FUSE_ROOT_ID;
	if (bk_path(fs, bk_ino(r, n->id), rel, sizeof(rel)) < 0)
		return real;
	slash = strrchr(rel, '/');
	if (!slash)
		return FUSE_ROOT_ID; /* n is at the top: its parent is the root */
	*slash = 0;
	for (c = strtok_r(rel, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (dl_node_lookup(fs, &dn, c, &next) || next.type == DL_NODE_FILE ||
		    next.type == DL_NODE_CTL || next.type == DL_NODE_BACKING)
			return real; /* an overlay directory of its own */
		dn = next;
	}
	return dl_node_ino(&dn);
}
