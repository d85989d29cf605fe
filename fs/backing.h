/* Backing store: real directories (and sinks) shown under the mount root.
 * Their inodes are type DL_NODE_BACKING: ds = the entry in cfg->backing,
 * index = a handle id (0: the directory itself). Everything about them lives
 * in fs/backing*.c and fs/sink.c; ops.c only dispatches. */
#ifndef DLIOFS_FS_BACKING_H
#define DLIOFS_FS_BACKING_H

#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct dl_fs;
struct dl_config;
struct dl_backing;

/* Open every backing directory of cfg (O_PATH) and set up the sinks.
 * Problems are printed to stderr; a directory that contains the mountpoint
 * is refused (the daemon would serve its own requests). */
int dl_backing_new(const struct dl_config *cfg, const char *mountpoint, struct dl_backing **out);
void dl_backing_free(struct dl_backing *b);

/* Is ino one of ours (a backing directory or anything below it)? */
int dl_bk_is(const struct dl_fs *fs, fuse_ino_t ino);
/* The operations that serve ino: the real-directory table or the sink's. */
const struct fuse_lowlevel_ops *dl_bk_ops(struct dl_fs *fs, fuse_ino_t ino);
/* Same backing entry? (rename and link stay inside one) */
int dl_bk_same_root(fuse_ino_t a, fuse_ino_t b);
void dl_bk_forget(struct dl_fs *fs, fuse_ino_t ino, uint64_t nlookup);

/* Attributes of a backing directory itself (entry `root` of cfg->backing). */
int dl_bk_root_stat(struct dl_fs *fs, unsigned root, struct stat *st);
/* Path relative to the mount root ("data/a/b.bin"), for the trace. */
int dl_bk_path(struct dl_fs *fs, fuse_ino_t ino, char *buf, size_t len);
/* stats.json's "backing" member (per entry counters), into the object open in w. */
struct dl_jw;
void dl_bk_stats_write(struct dl_fs *fs, struct dl_jw *w);
void dl_bk_stats_reset(struct dl_fs *fs);

#endif
