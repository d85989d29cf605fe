/* The control directory `.dliofs/` in the mount root: live statistics, the
 * effective config, live pacer settings, cache control. Hidden from listings. */
#ifndef DLIOFS_FS_CONTROL_H
#define DLIOFS_FS_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct dl_fs;
struct dl_node;

#define DL_CTL_DIRNAME ".dliofs"

enum dl_ctl_file {
	DL_CTL_DIR = 0,
	DL_CTL_STATS,	/* stats.json (read; write "reset") */
	DL_CTL_CONFIG,	/* config.yaml (read) */
	DL_CTL_PACER,	/* pacer (read: settings; write: key=value lines) */
	DL_CTL_CACHE,	/* cache (write: "drop", "warm <path>") */
	DL_CTL_TRACE,	/* trace (write: "start <file> [ops]", "stop"; read: status) */
	DL_CTL__COUNT
};

extern const char *const dl_ctl_names[DL_CTL__COUNT];

int dl_ctl_lookup(const char *name, unsigned *id);
void dl_ctl_stat(struct dl_fs *fs, unsigned id, struct stat *st);
/* Snapshot of a readable control file's content (malloc'd). */
int dl_ctl_read_all(struct dl_fs *fs, unsigned id, char **buf, size_t *len);
/* Apply a write (whole text); -EINVAL with a log line on a bad command. */
int dl_ctl_write(struct dl_fs *fs, unsigned id, const char *text, size_t len);


#endif
