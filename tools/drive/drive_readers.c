/* The readers' common ground: which reader a dataset gets (from its
 * format's read plan: no reader knows a format by name), the per-thread
 * worker around the reader's private state, and the I/O helpers every
 * reader uses. Bytes are what read(2)/pread(2) returned (hdf5: the
 * hyperslab bytes). The readers themselves are drive_read_<plan>.c:
 *
 *   whole      npz npy jpeg png: the whole file, or the file per sample
 *   stream     tfrecord: a record stream through a transfer_size buffer
 *   hyperslab  hdf5: per sample, one hyperslab of each dataset (libhdf5)
 *   region     raw, indexed_binary: per sample, a pread at its offset
 *   chunk      dlrm: batch-sized contiguous reads of whole records */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "dliofs/naming.h"
#include "drive_read_i.h"

static const struct drv_reader_ops *const readers[] = {
    [DL_PLAN_WHOLE] = &drv_read_whole_ops,	   [DL_PLAN_STREAM] = &drv_read_stream_ops,
    [DL_PLAN_HYPERSLAB] = &drv_read_hyperslab_ops, [DL_PLAN_REGION] = &drv_read_region_ops,
    [DL_PLAN_CHUNK] = &drv_read_chunk_ops,
};

const struct drv_reader_ops *drv_reader_for(const struct dl_dataset *ds)
{
	const struct dl_format_ops *f = dl_ds_ops(ds);
	unsigned plan = f ? (unsigned)f->read_hints.plan : 0;

	return plan < sizeof(readers) / sizeof(readers[0]) ? readers[plan] : NULL;
}

int drv_relpath(const struct drv_ctx *c, uint32_t split, uint64_t file, uint32_t part, char *buf,
		size_t len)
{
	char rel[2048];
	int n = dl_name_relpath(c->ds, split, file, part, rel, sizeof(rel));

	if (n < 0)
		return n;
	n = snprintf(buf, len, "%s/%s", c->root, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void drv_trace_line(struct drv_ctx *c, uint64_t epoch, uint32_t split, uint64_t seq,
		    const char *path, int64_t sample, int64_t off, uint64_t bytes)
{
	size_t rl = strlen(c->root);
	const char *rel = !strncmp(path, c->root, rl) && path[rl] == '/' ? path + rl + 1 : path;

	pthread_mutex_lock(&c->trace_lock);
	fprintf(c->trace, "%llu\t%s\t%llu\t%s\t%lld\t%lld\t%llu\n", (unsigned long long)epoch,
		dl_split_dir[split], (unsigned long long)seq, rel, (long long)sample,
		(long long)off, (unsigned long long)bytes);
	pthread_mutex_unlock(&c->trace_lock);
}

int drv_reserve_buf(struct drv_worker *w, size_t want)
{
	if (want <= w->cap)
		return 0;
	if (want > DRV_BUF_MAX)
		want = DRV_BUF_MAX;
	want = (want + DRV_ALIGN - 1) & ~(size_t)(DRV_ALIGN - 1);
	if (want <= w->cap)
		return 0;
	void *p;
	if (posix_memalign(&p, DRV_ALIGN, want))
		return -ENOMEM;
	free(w->buf);
	w->buf = p;
	w->cap = want;
	return 0;
}

int drv_grow(uint8_t **p, size_t *cap, size_t want)
{
	if (want <= *cap)
		return 0;
	void *n = realloc(*p, want);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = want;
	return 0;
}

/* ---- the worker ---- */

struct drv_worker *drv_worker_new(struct drv_ctx *c, unsigned id)
{
	struct drv_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->c = c;
	w->rd = c->rd;
	w->id = id;
	w->fd = -1;
	if (drv_reserve_buf(w, c->p->io_size))
		goto fail;
	if (w->rd->state_size && !(w->state = calloc(1, w->rd->state_size)))
		goto fail;
	if (w->rd->open && w->rd->open(w))
		goto fail;
	return w;
fail:
	drv_worker_free(w);
	return NULL;
}

void drv_worker_free(struct drv_worker *w)
{
	if (!w)
		return;
	if (w->state && w->rd->close)
		w->rd->close(w);
	drv_data_close(w);
	free(w->state);
	free(w->buf);
	free(w);
}

int drv_read_unit(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		  uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	return w->rd->read(w, l, split, epoch, seq, u, io);
}

/* ---- I/O ---- */

void drv_say(const char *path, int err)
{
	fprintf(stderr, "dlio-drive: %s: %s\n", path, strerror(-err));
}

/* O_DIRECT (--odirect) only where reads stay aligned (whole files and
 * ranges: drv_build_params turns it off for readers with no_odirect). */
int drv_open(const char *path, struct drv_io *io, int direct)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));

	if (fd < 0) {
		int e = -errno;
		if (direct && e == -EINVAL)
			fprintf(stderr,
				"dlio-drive: %s: this file system refuses O_DIRECT "
				"(run without --odirect)\n",
				path);
		else
			drv_say(path, e);
		return e;
	}
	io->opens++;
	return fd;
}

int drv_open_data(const struct drv_worker *w, const char *path, struct drv_io *io)
{
	return drv_open(path, io, w->c->p->odirect);
}

void drv_dontneed(const struct drv_worker *w, int fd)
{
	if (w->c->p->dontneed)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* Bytes [off, off + len) through the buffer, in reads of at most the buffer.
 * Under O_DIRECT the request is widened to DRV_ALIGN boundaries and the
 * widened bytes count: the device moved them. Efficient mode reads a range
 * larger than --io-size in io_size pieces through the one reused buffer, as
 * fio and a streaming loader do: one pread of a 256 MiB sample into a 256 MiB
 * buffer writes every byte out to DRAM and ran at half fio's rate; with
 * --read-amplification dlio the sample is one read, as DLIO's readinto is.
 * Returns bytes read (short at EOF). */
ssize_t drv_read_range(struct drv_worker *w, int fd, uint64_t off, uint64_t len, struct drv_io *io)
{
	const struct drv_params *p = w->c->p;
	uint64_t got = 0;
	size_t piece;

	if (p->odirect) {
		uint64_t end = off + len;
		off &= ~(uint64_t)(DRV_ALIGN - 1);
		end = (end + DRV_ALIGN - 1) & ~(uint64_t)(DRV_ALIGN - 1);
		len = end - off;
	}
	if (p->amp == DRV_AMP_EFFICIENT || len < p->io_size) {
		if (drv_reserve_buf(w, p->io_size))
			return -ENOMEM;
		piece = p->io_size < w->cap ? p->io_size : w->cap;
	} else {
		if (drv_reserve_buf(w, len))
			return -ENOMEM;
		piece = w->cap;
	}
	while (got < len) {
		size_t n = len - got < piece ? (size_t)(len - got) : piece;
		ssize_t r = pread(fd, w->buf, n, (off_t)(off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		io->reads++;
		if (r == 0)
			break;
		got += (uint64_t)r;
		if ((size_t)r < n && p->odirect)
			break; /* end of file inside the last aligned block */
	}
	io->bytes += got;
	return (ssize_t)got;
}

/* Whole file: read(2) to EOF in io_size pieces; with keep, into one buffer
 * (a decoder needs the bytes together). */
ssize_t drv_read_whole(struct drv_worker *w, int fd, int keep, struct drv_io *io)
{
	uint64_t got = 0;

	if (keep) {
		struct stat st;
		if (fstat(fd, &st))
			return -errno;
		if ((uint64_t)st.st_size + DRV_ALIGN > DRV_BUF_MAX)
			return -EFBIG;
		if (drv_reserve_buf(w, (size_t)st.st_size + DRV_ALIGN))
			return -ENOMEM;
	}
	size_t chunk = w->c->p->io_size < w->cap ? w->c->p->io_size : w->cap;
	for (;;) {
		uint8_t *dst = keep ? w->buf + got : w->buf;
		size_t n = keep ? w->cap - got : chunk;
		if (keep && n < DRV_ALIGN) { /* the file grew since fstat */
			if (drv_reserve_buf(w, w->cap * 2))
				return -ENOMEM;
			continue;
		}
		if (keep && n > chunk)
			n = chunk;
		ssize_t r = read(fd, dst, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		io->reads++;
		if (r == 0)
			break;
		got += (uint64_t)r;
	}
	io->bytes += got;
	return (ssize_t)got;
}

void drv_data_close(struct drv_worker *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/* Keep one data file open per reader: consecutive samples of a file (no
 * sample shuffle) then cost one open, as a keep-open loader would. The path
 * (w->fpath) is built only when the file changes: formatting it per sample
 * cost more than a 1 KiB read. */
int drv_data_fd(struct drv_worker *w, uint32_t split, uint64_t index, struct drv_io *io)
{
	int ret;

	if (w->fd >= 0 && w->fsplit == split && w->findex == index)
		return 0;
	if (w->fd >= 0) {
		drv_dontneed(w, w->fd);
		drv_data_close(w);
	}
	ret = drv_relpath(w->c, split, index, 0, w->fpath, sizeof(w->fpath));
	if (ret)
		return ret;
	int fd = drv_open_data(w, w->fpath, io);
	if (fd < 0)
		return fd;
	w->fd = fd;
	w->fsplit = split;
	w->findex = index;
	return 1;
}
