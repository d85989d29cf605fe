/* dlio-drive's readers: one per read plan (include/dliofs/format.h's
 * enum dl_read_plan), each in its own drive_read_<plan>.c behind struct
 * drv_reader_ops, and the I/O helpers they share (drive_readers.c).
 * Private to the readers; the rest of the tool sees drive_i.h. */
#ifndef DLIOFS_DRIVE_READ_I_H
#define DLIOFS_DRIVE_READ_I_H

#include "drive_i.h"

#define DRV_ALIGN 4096
#define DRV_BUF_MAX (256ull << 20) /* one read call at most; larger ranges are split */

/* One reader thread. The reader's own state is behind `state`
 * (rd->state_size bytes, zeroed before rd->open). */
struct drv_worker {
	struct drv_ctx *c;
	const struct drv_reader_ops *rd;
	unsigned id;
	uint8_t *buf; /* DRV_ALIGN-aligned I/O buffer */
	size_t cap;
	/* the last data file opened (drv_data_fd) */
	int fd;
	uint32_t fsplit;
	uint64_t findex;
	char fpath[4096];
	void *state;
};

/* The buffer holds at least `want` bytes (capped at DRV_BUF_MAX). 0 or -ENOMEM. */
int drv_reserve_buf(struct drv_worker *w, size_t want);
/* open(2) read-only, counted in io; O_DIRECT with `direct`. fd or -errno (said). */
int drv_open(const char *path, struct drv_io *io, int direct);
/* The same, O_DIRECT as --odirect says. */
int drv_open_data(const struct drv_worker *w, const char *path, struct drv_io *io);
/* --fadvise-dontneed: drop fd's pages. */
void drv_dontneed(const struct drv_worker *w, int fd);
/* "dlio-drive: PATH: strerror(-err)" on stderr. */
void drv_say(const char *path, int err);
/* Bytes [off, off + len) through the buffer; bytes read (short at EOF) or -errno. */
ssize_t drv_read_range(struct drv_worker *w, int fd, uint64_t off, uint64_t len, struct drv_io *io);
/* The file to EOF in io_size pieces; with keep, all of it in w->buf. */
ssize_t drv_read_whole(struct drv_worker *w, int fd, int keep, struct drv_io *io);
/* Keep file `index` of `split` open as w->fd (path in w->fpath): 0 when it
 * already was, 1 when it was opened now, or -errno. */
int drv_data_fd(struct drv_worker *w, uint32_t split, uint64_t index, struct drv_io *io);
void drv_data_close(struct drv_worker *w);

/* The readers, by plan. */
extern const struct drv_reader_ops drv_read_whole_ops;
extern const struct drv_reader_ops drv_read_stream_ops;
extern const struct drv_reader_ops drv_read_hyperslab_ops;
extern const struct drv_reader_ops drv_read_region_ops;
extern const struct drv_reader_ops drv_read_chunk_ops;
/* --storage s3, whatever the format (drive_s3.c). */
extern const struct drv_reader_ops drv_read_s3_ops;

#endif
