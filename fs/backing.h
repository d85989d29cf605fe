/* Backing store: real directories (and sinks) shown under the mount root.
 * Their inodes are type DL_NODE_BACKING: ds = the entry in cfg->backing,
 * index = a handle id (0: the directory itself). Everything about them lives
 * in fs/backing*.c and fs/sink*.c, behind two operation tables (tree_i.h:
 * dl_tree_backing, dl_tree_sink); the rest of fs/ sets them up, reads their
 * statistics and dispatches to the tables. */
#ifndef DLIOFS_FS_BACKING_H
#define DLIOFS_FS_BACKING_H

struct dl_fs;
struct dl_config;
struct dl_backing;

/* Open every backing directory of cfg (O_PATH) and set up the sinks.
 * Problems are printed to stderr; a directory that contains the mountpoint
 * is refused (the daemon would serve its own requests). */
int dl_backing_new(const struct dl_config *cfg, const char *mountpoint, struct dl_backing **out);
void dl_backing_free(struct dl_backing *b);

/* stats.json's "backing" member (per entry counters), into the object open in w. */
struct dl_jw;
void dl_bk_stats_write(struct dl_fs *fs, struct dl_jw *w);
void dl_bk_stats_reset(struct dl_fs *fs);

/* The overlay (backing_overlay.c): names created in synthetic
 * directories live in a real directory. */
int dl_overlay_on(struct dl_fs *fs);
/* Listing offsets from here on are the overlay's (after the synthetic
 * names). */
#define DL_OVERLAY_OFF (1ULL << 62)
/* Append synthetic directory dir's overlay names (those the synthetic
 * directory does not have) from entry `from` of the real directory to buf,
 * as readdir (plus: readdirplus, names only). 0 or -errno. */
#include <fuse_lowlevel.h>
int dl_overlay_list(struct dl_fs *fs, fuse_req_t req, fuse_ino_t dir, uint64_t from, char *buf,
		    size_t size, size_t *used, int plus);

#endif
