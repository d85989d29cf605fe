/* One directory entry into a readdir or readdirplus reply (fs_i.h). */
#include <string.h>

#include "fs_i.h"

size_t dl_add_dirent(fuse_req_t req, char *buf, size_t size, const char *name,
		     const struct stat *st, off_t off, int plus)
{
	struct fuse_entry_param e;

	if (!plus)
		return fuse_add_direntry(req, buf, size, name, st, off);
	/* A node id of 0 gives the kernel the name and type only, as a plain
	 * readdir does: it neither caches the entry nor counts a lookup. */
	memset(&e, 0, sizeof(e));
	e.attr.st_ino = st->st_ino;
	e.attr.st_mode = st->st_mode;
	return fuse_add_direntry_plus(req, buf, size, name, &e, off);
}
