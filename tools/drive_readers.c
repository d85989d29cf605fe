/* How each format is read, the way the framework's loader reads it
 * (dlio.md 3, formats.md 2.1 and 8.2):
 *
 *   npz npy jpeg png   the whole file (np.load, PIL.Image.open). Efficient:
 *                      once per epoch however many samples it holds; with
 *                      --read-amplification dlio once per sample, as DLIO's
 *                      on-demand reader does (once per file with the
 *                      tensorflow loader), npz with np.load's own reads
 *                      (drive_pyio.c). --decode decodes images.
 *   tfrecord           a sequential record stream through a transfer_size
 *                      buffer (tf.data), framing parsed, CRCs checked with
 *                      --check-crc.
 *   hdf5               per sample, one hyperslab of each records_k (or x)
 *                      through libhdf5, the file kept open per reader (dlio
 *                      with the pytorch loader: reopened per sample, as h5py
 *                      in DLIO).
 *   dlrm               batch-sized contiguous reads of 160 * B bytes.
 *   raw, indexed_binary  per sample, pread of the sample at its offset
 *                      (indexed_binary: offsets and sizes from the index files).
 *
 * Bytes are what read(2)/pread(2) returned (hdf5: the hyperslab bytes). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "dliofs/naming.h"
#include "drive_i.h"

#define ALIGN 4096
#define BUF_MAX (256ull << 20) /* one read call at most; larger ranges are split */
#define H5_MAX_DSETS 64
#define DLRM_REC 160
#define IB_PRELOAD_MAX (256ull << 20) /* index bytes kept for the whole run */

struct drv_worker {
	struct drv_ctx *c;
	unsigned id;
	uint8_t *buf; /* ALIGN-aligned I/O buffer */
	size_t cap;
	uint8_t *scratch; /* decoder's row/inflate space */
	size_t scap;
	/* the last data file opened (sample and chunk units) */
	int fd;
	uint32_t fsplit;
	uint64_t findex;
	char fpath[4096];
	uint64_t fsample_bytes; /* raw: bytes per sample of that file */
	/* hdf5 */
	hid_t h5f, h5d[H5_MAX_DSETS], h5fs[H5_MAX_DSETS], h5ms[H5_MAX_DSETS], h5t[H5_MAX_DSETS];
	unsigned h5n;
	uint64_t h5samples, h5sbytes[H5_MAX_DSETS];
	uint32_t h5split;
	uint64_t h5index;
	/* indexed_binary index of one file, when not preloaded */
	uint64_t *ib_off, *ib_size, ib_n;
	uint32_t ib_split;
	uint64_t ib_index;
	int ib_valid;
	struct drv_pyio *pyio; /* np.load's buffers (dlio npz) */
};

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

static int reserve_buf(struct drv_worker *w, size_t want)
{
	if (want <= w->cap)
		return 0;
	if (want > BUF_MAX)
		want = BUF_MAX;
	want = (want + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (want <= w->cap)
		return 0;
	void *p;
	if (posix_memalign(&p, ALIGN, want))
		return -ENOMEM;
	free(w->buf);
	w->buf = p;
	w->cap = want;
	return 0;
}

struct drv_worker *drv_worker_new(struct drv_ctx *c, unsigned id)
{
	struct drv_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->c = c;
	w->id = id;
	w->fd = -1;
	w->h5f = -1;
	size_t want = c->p->io_size;
	if (c->ds->format == DL_FMT_TFRECORD && c->p->transfer_size > want)
		want = c->p->transfer_size;
	if (reserve_buf(w, want)) {
		free(w);
		return NULL;
	}
	return w;
}

static void h5_close(struct drv_worker *w)
{
	for (unsigned i = 0; i < w->h5n; i++) {
		H5Sclose(w->h5ms[i]);
		H5Sclose(w->h5fs[i]);
		H5Tclose(w->h5t[i]);
		H5Dclose(w->h5d[i]);
	}
	w->h5n = 0;
	if (w->h5f >= 0)
		H5Fclose(w->h5f);
	w->h5f = -1;
}

static void file_close(struct drv_worker *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

void drv_worker_free(struct drv_worker *w)
{
	if (!w)
		return;
	file_close(w);
	h5_close(w);
	free(w->ib_off);
	free(w->ib_size);
	free(w->buf);
	free(w->scratch);
	drv_pyio_free(w->pyio);
	free(w);
}

static void report(const char *path, int err)
{
	fprintf(stderr, "dlio-drive: %s: %s\n", path, strerror(-err));
}

/* O_DIRECT (--odirect) only where reads stay aligned (whole files and
 * ranges: main turns it off for tfrecord streams and libhdf5). */
static int open_flags(struct drv_worker *w, const char *path, struct drv_io *io, int direct)
{
	(void)w;
	int fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));

	if (fd < 0) {
		int e = -errno;
		if (direct && e == -EINVAL)
			fprintf(stderr,
				"dlio-drive: %s: this file system refuses O_DIRECT "
				"(run without --odirect)\n",
				path);
		else
			report(path, e);
		return e;
	}
	io->opens++;
	return fd;
}

static int open_path(struct drv_worker *w, const char *path, struct drv_io *io)
{
	return open_flags(w, path, io, w->c->p->odirect);
}

static void dontneed(struct drv_worker *w, int fd)
{
	if (w->c->p->dontneed)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* Bytes [off, off + len) through the buffer, in reads of at most the buffer.
 * Under O_DIRECT the request is widened to ALIGN boundaries and the widened
 * bytes count: the device moved them. Efficient mode reads a range larger
 * than --io-size in io_size pieces through the one reused buffer, as fio and
 * a streaming loader do: one pread of a 256 MiB sample into a 256 MiB buffer
 * writes every byte out to DRAM and ran at half fio's rate; with
 * --read-amplification dlio the sample is one read, as DLIO's readinto is.
 * Returns bytes read (short at EOF). */
static ssize_t read_range(struct drv_worker *w, int fd, uint64_t off, uint64_t len,
			  struct drv_io *io)
{
	uint64_t got = 0;
	size_t piece;

	if (w->c->p->odirect) {
		uint64_t end = off + len;
		off &= ~(uint64_t)(ALIGN - 1);
		end = (end + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
		len = end - off;
	}
	if (w->c->p->amp == DRV_AMP_EFFICIENT || len < w->c->p->io_size) {
		if (reserve_buf(w, w->c->p->io_size))
			return -ENOMEM;
		piece = w->c->p->io_size < w->cap ? w->c->p->io_size : w->cap;
	} else {
		if (reserve_buf(w, len))
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
		if ((size_t)r < n && w->c->p->odirect)
			break; /* end of file inside the last aligned block */
	}
	io->bytes += got;
	return (ssize_t)got;
}

/* Whole file: read(2) to EOF in io_size pieces; with keep, into one buffer
 * (decode needs the bytes together). */
static ssize_t read_whole(struct drv_worker *w, int fd, int keep, struct drv_io *io)
{
	uint64_t got = 0;

	if (keep) {
		struct stat st;
		if (fstat(fd, &st))
			return -errno;
		if ((uint64_t)st.st_size + ALIGN > BUF_MAX)
			return -EFBIG;
		if (reserve_buf(w, (size_t)st.st_size + ALIGN))
			return -ENOMEM;
	}
	size_t chunk = w->c->p->io_size < w->cap ? w->c->p->io_size : w->cap;
	for (;;) {
		uint8_t *dst = keep ? w->buf + got : w->buf;
		size_t n = keep ? w->cap - got : chunk;
		if (keep && n < ALIGN) { /* the file grew since fstat */
			if (reserve_buf(w, w->cap * 2))
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

static int decode(struct drv_worker *w, size_t n, struct drv_io *io, const char *path)
{
	uint64_t px = 0;
	int ret;

	if (w->c->ds->format == DL_FMT_JPEG)
		ret = drv_decode_jpeg(w->buf, n, &w->scratch, &w->scap, &px);
	else
		ret = drv_decode_png(w->buf, n, &w->scratch, &w->scap, &px);
	if (ret == -ENOTSUP) {
		if (!__atomic_exchange_n(&w->c->png_warned, 1, __ATOMIC_RELAXED))
			fprintf(stderr,
				"dlio-drive: %s: PNG variant not decoded (only 8-bit, "
				"non-interlaced images are); reading only\n",
				path);
		return 0;
	}
	if (ret) {
		report(path, ret);
		return ret;
	}
	io->decoded += px;
	return 0;
}

static int unit_whole(struct drv_worker *w, uint32_t split, uint64_t epoch, uint64_t seq,
		      const struct drv_unit *u, int64_t sample, struct drv_io *io)
{
	char path[4096];
	int keep =
	    w->c->p->decode && (w->c->ds->format == DL_FMT_JPEG || w->c->ds->format == DL_FMT_PNG);
	int ret = drv_relpath(w->c, split, u->file, 0, path, sizeof(path));

	if (ret)
		return ret;
	int fd = open_path(w, path, io);
	if (fd < 0)
		return fd;
	ssize_t n = -ENOTSUP;
	if (w->c->p->amp == DRV_AMP_DLIO && w->c->ds->format == DL_FMT_NPZ && !w->c->p->odirect) {
		/* DLIO's reader: np.load(path)['x']. Its reads are pread()s: the
		 * fd's offset stays at 0 for the fallback below. */
		uint64_t b0 = io->bytes;
		int r = drv_npz_numpy(&w->pyio, fd, "x", io);
		if (r == -ENOTSUP && !__atomic_exchange_n(&w->c->npz_warned, 1, __ATOMIC_RELAXED))
			fprintf(stderr,
				"dlio-drive: %s: no stored x.npy member np.load's reads could "
				"be modelled on; reading whole files\n",
				path);
		n = r == -ENOTSUP ? -ENOTSUP : r < 0 ? r : (ssize_t)(io->bytes - b0);
	}
	if (n == -ENOTSUP)
		n = read_whole(w, fd, keep, io);
	if (n < 0) {
		report(path, (int)n);
		ret = (int)n;
		goto out;
	}
	if (keep)
		ret = decode(w, (size_t)n, io, path);
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, sample, 0, (uint64_t)n);
	dontneed(w, fd);
out:
	close(fd);
	return ret;
}

/* Keep one data file open per reader: consecutive samples of a file (no
 * sample shuffle) then cost one open, as a keep-open loader would. The path
 * (w->fpath) is built only when the file changes: formatting it per sample
 * cost more than a 1 KiB read. */
static int data_fd(struct drv_worker *w, uint32_t split, uint64_t index, struct drv_io *io)
{
	int ret;

	if (w->fd >= 0 && w->fsplit == split && w->findex == index)
		return 0;
	if (w->fd >= 0) {
		dontneed(w, w->fd);
		file_close(w);
	}
	ret = drv_relpath(w->c, split, index, 0, w->fpath, sizeof(w->fpath));
	if (ret)
		return ret;
	int fd = open_path(w, w->fpath, io);
	if (fd < 0)
		return fd;
	w->fd = fd;
	w->fsplit = split;
	w->findex = index;
	w->fsample_bytes = 0;
	if (w->c->ds->format == DL_FMT_RAW) {
		struct dl_file f;
		ret = dl_file_init(w->c->fmt, w->c->ds, split, index, 0, &f);
		if (ret) {
			file_close(w);
			return ret;
		}
		w->fsample_bytes = f.sample_bytes;
	}
	return 0;
}

static int unit_chunk(struct drv_worker *w, uint32_t split, uint64_t epoch, uint64_t seq,
		      const struct drv_unit *u, struct drv_io *io)
{
	const char *path = w->fpath;
	int ret = data_fd(w, split, u->file, io);

	if (ret)
		return ret;
	uint64_t off = u->sample * DLRM_REC, len = u->nsamples * DLRM_REC;
	ssize_t n = read_range(w, w->fd, off, len, io);
	if (n < 0) {
		report(path, (int)n);
		return (int)n;
	}
	if ((uint64_t)n < len && !w->c->p->odirect) {
		report(path, -ENODATA);
		return -ENODATA;
	}
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, (int64_t)u->sample, (int64_t)off,
			       (uint64_t)n);
	return 0;
}

static int read_u64_file(struct drv_worker *w, const char *path, uint64_t *dst, uint64_t n,
			 struct drv_io *io)
{
	int fd = open_flags(w, path, io, 0); /* small, unaligned: never O_DIRECT */
	uint64_t got = 0, want = n * 8;

	if (fd < 0)
		return fd;
	while (got < want) {
		ssize_t r = pread(fd, (uint8_t *)dst + got, want - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : -ENODATA;
			close(fd);
			report(path, e);
			return e;
		}
		io->reads++;
		got += (uint64_t)r;
	}
	io->index_bytes += got;
	close(fd);
	for (uint64_t i = 0; i < n; i++)
		dst[i] = le64toh(dst[i]);
	return 0;
}

/* Offsets and sizes of every sample of file `index` (parts 1 and 2). */
static int ib_load(struct drv_ctx *c, struct drv_worker *w, uint32_t split, uint64_t index,
		   uint64_t *off, uint64_t *size, struct drv_io *io)
{
	char path[4096];
	int ret;

	if ((ret = drv_relpath(c, split, index, 1, path, sizeof(path))) ||
	    (ret = read_u64_file(w, path, off, c->spf, io)) ||
	    (ret = drv_relpath(c, split, index, 2, path, sizeof(path))) ||
	    (ret = read_u64_file(w, path, size, c->spf, io)))
		return ret;
	return 0;
}

int drv_ib_preload(struct drv_ctx *c, FILE *err)
{
	struct drv_io io = {0};
	struct drv_worker *w;
	int ret = 0;

	for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
		uint64_t n = c->ds->files[s] * c->spf;
		if (!n || n * 16 > IB_PRELOAD_MAX)
			continue;
		c->ib_off[s] = malloc(n * 8);
		c->ib_size[s] = malloc(n * 8);
		if (!c->ib_off[s] || !c->ib_size[s])
			return -ENOMEM;
	}
	w = drv_worker_new(c, 0);
	if (!w)
		return -ENOMEM;
	for (uint32_t s = 0; s < DL_SPLIT__COUNT && !ret; s++)
		for (uint64_t f = 0; c->ib_off[s] && f < c->ds->files[s] && !ret; f++)
			ret = ib_load(c, w, s, f, c->ib_off[s] + f * c->spf,
				      c->ib_size[s] + f * c->spf, &io);
	drv_worker_free(w);
	c->setup_bytes += io.index_bytes;
	if (ret && err)
		fprintf(err, "dlio-drive: cannot read the indexed_binary index files\n");
	return ret;
}

static int ib_entry(struct drv_worker *w, uint32_t split, uint64_t index, uint64_t sample,
		    uint64_t *off, uint64_t *size, struct drv_io *io)
{
	struct drv_ctx *c = w->c;
	int dlio = c->p->amp == DRV_AMP_DLIO;

	if (c->ib_off[split] && !dlio) {
		*off = c->ib_off[split][index * c->spf + sample];
		*size = c->ib_size[split][index * c->spf + sample];
		return 0;
	}
	/* DLIO opens the file (and reads both indexes) per sample on demand. */
	if (dlio || !w->ib_valid || w->ib_split != split || w->ib_index != index) {
		if (w->ib_n < c->spf) {
			free(w->ib_off);
			free(w->ib_size);
			w->ib_off = malloc(c->spf * 8);
			w->ib_size = malloc(c->spf * 8);
			w->ib_n = w->ib_off && w->ib_size ? c->spf : 0;
			if (!w->ib_n)
				return -ENOMEM;
		}
		w->ib_valid = 0;
		int ret = ib_load(c, w, split, index, w->ib_off, w->ib_size, io);
		if (ret)
			return ret;
		w->ib_valid = 1;
		w->ib_split = split;
		w->ib_index = index;
	}
	*off = w->ib_off[sample];
	*size = w->ib_size[sample];
	return 0;
}

static int unit_region(struct drv_worker *w, uint32_t split, uint64_t epoch, uint64_t seq,
		       const struct drv_unit *u, struct drv_io *io)
{
	const char *path = w->fpath;
	uint64_t off = 0, len = 0;
	int ret;

	if (w->c->ds->format == DL_FMT_INDEXED_BINARY) {
		ret = ib_entry(w, split, u->file, u->sample, &off, &len, io);
		if (ret)
			return ret;
	}
	if (w->c->p->amp == DRV_AMP_DLIO)
		file_close(w);
	ret = data_fd(w, split, u->file, io);
	if (ret)
		return ret;
	if (w->c->ds->format == DL_FMT_RAW) {
		off = u->sample * w->fsample_bytes;
		len = w->fsample_bytes;
	}
	ssize_t n = read_range(w, w->fd, off, len, io);
	if (n < 0) {
		report(path, (int)n);
		return (int)n;
	}
	if ((uint64_t)n < len) {
		report(path, -ENODATA);
		return -ENODATA;
	}
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, (int64_t)u->sample, (int64_t)off,
			       (uint64_t)n);
	if (w->c->p->amp == DRV_AMP_DLIO)
		file_close(w);
	return 0;
}

/* ---- hdf5 ---- */

static int h5_add(struct drv_worker *w, const char *name)
{
	unsigned i = w->h5n;
	hsize_t dims[H5S_MAX_RANK];
	hid_t d = H5Dopen2(w->h5f, name, H5P_DEFAULT);

	if (d < 0)
		return -EIO;
	hid_t fs = H5Dget_space(d), ft = H5Dget_type(d);
	int rank = fs >= 0 ? H5Sget_simple_extent_dims(fs, dims, NULL) : -1;
	hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
	if (ft >= 0)
		H5Tclose(ft);
	if (rank < 1 || mt < 0) {
		if (mt >= 0)
			H5Tclose(mt);
		if (fs >= 0)
			H5Sclose(fs);
		H5Dclose(d);
		return -EIO;
	}
	/* One sample: the first dimension is the sample index. */
	hsize_t one = 1;
	hid_t ms =
	    rank > 1 ? H5Screate_simple(rank - 1, dims + 1, NULL) : H5Screate_simple(1, &one, NULL);
	uint64_t bytes = H5Tget_size(mt);
	for (int k = 1; k < rank; k++)
		bytes *= dims[k];
	if (i == 0)
		w->h5samples = dims[0];
	else if (dims[0] < w->h5samples)
		w->h5samples = dims[0];
	w->h5d[i] = d;
	w->h5fs[i] = fs;
	w->h5ms[i] = ms;
	w->h5t[i] = mt;
	w->h5sbytes[i] = bytes;
	w->h5n++;
	return 0;
}

static int h5_open(struct drv_worker *w, uint32_t split, uint64_t index, const char *path,
		   struct drv_io *io)
{
	if (w->h5f >= 0 && w->h5split == split && w->h5index == index)
		return 0;
	h5_close(w);
	/* The error stack is per thread in thread-safe builds: silence it here. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
	/* No flock: not every mount supports it, and readers only read. */
	H5Pset_file_locking(fapl, 0, 1);
#endif
	w->h5f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	if (w->h5f < 0) {
		report(path, -EIO);
		return -EIO;
	}
	io->opens++;
	/* DLIO's records_0..k-1, or our plain layout's x. */
	char name[32];
	for (unsigned k = 0; k < H5_MAX_DSETS; k++) {
		snprintf(name, sizeof(name), "records_%u", k);
		if (H5Lexists(w->h5f, name, H5P_DEFAULT) <= 0)
			break;
		if (h5_add(w, name))
			goto bad;
	}
	if (!w->h5n && (H5Lexists(w->h5f, "x", H5P_DEFAULT) <= 0 || h5_add(w, "x")))
		goto bad;
	w->h5split = split;
	w->h5index = index;
	return 0;
bad:
	fprintf(stderr, "dlio-drive: %s: no records_0 or x dataset\n", path);
	h5_close(w);
	return -EIO;
}

/* One sample of dataset i into the buffer. Efficient mode reads a sample
 * larger than --io-size as slabs of whole rows of at most io_size through the
 * reused buffer (what fio's blocks are; a 256 MiB hyperslab into a 256 MiB
 * buffer ran at a third of fio's rate); with --read-amplification dlio it is
 * one H5Dread, as h5py's records[i] is. */
static int h5_sample(struct drv_worker *w, unsigned i, uint64_t sample)
{
	hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
	int rank = H5Sget_simple_extent_dims(w->h5fs[i], count, NULL);
	const uint64_t bytes = w->h5sbytes[i], io_size = w->c->p->io_size;
	uint64_t rows = 1, row_bytes = bytes;

	if (rank < 1)
		return -EIO;
	start[0] = sample;
	count[0] = 1;
	if (w->c->p->amp == DRV_AMP_EFFICIENT && rank > 1 && bytes > io_size) {
		row_bytes = bytes / count[1];
		rows = io_size / row_bytes ? io_size / row_bytes : 1;
	}
	if (rows * row_bytes >= bytes) {
		if (reserve_buf(w, bytes) || bytes > w->cap)
			return -EFBIG;
		if (H5Sselect_hyperslab(w->h5fs[i], H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
		    H5Dread(w->h5d[i], w->h5t[i], w->h5ms[i], w->h5fs[i], H5P_DEFAULT, w->buf) < 0)
			return -EIO;
		return 1;
	}
	if (reserve_buf(w, rows * row_bytes) || rows * row_bytes > w->cap)
		return -EFBIG;
	const hsize_t nrows = count[1];
	int reads = 0;
	for (hsize_t r = 0; r < nrows; r += rows) {
		hsize_t mdims[H5S_MAX_RANK];
		count[1] = nrows - r < rows ? nrows - r : rows;
		start[1] = r;
		for (int k = 1; k < rank; k++)
			mdims[k - 1] = count[k];
		hid_t ms = H5Screate_simple(rank - 1, mdims, NULL);
		herr_t e = ms < 0 ? -1
			   : H5Sselect_hyperslab(w->h5fs[i], H5S_SELECT_SET, start, NULL, count,
						 NULL);
		if (e >= 0)
			e = H5Dread(w->h5d[i], w->h5t[i], ms, w->h5fs[i], H5P_DEFAULT, w->buf);
		if (ms >= 0)
			H5Sclose(ms);
		if (e < 0)
			return -EIO;
		reads++;
	}
	return reads;
}

static int unit_h5(struct drv_worker *w, uint32_t split, uint64_t epoch, uint64_t seq,
		   const struct drv_unit *u, struct drv_io *io)
{
	const char *path = w->fpath;
	int ret = 0;

	/* The path only when the file changes (per-sample formatting costs as
	 * much as a small read). */
	if (!(w->h5f >= 0 && w->h5split == split && w->h5index == u->file)) {
		if ((ret = drv_relpath(w->c, split, u->file, 0, w->fpath, sizeof(w->fpath))))
			return ret;
		w->findex = UINT64_MAX; /* fpath no longer names data_fd's file */
	}
	if ((ret = h5_open(w, split, u->file, path, io)))
		return ret;
	if (u->sample >= w->h5samples) {
		fprintf(stderr, "dlio-drive: %s: sample %llu beyond the file's %llu\n", path,
			(unsigned long long)u->sample, (unsigned long long)w->h5samples);
		ret = -ENODATA;
		goto out;
	}
	uint64_t total = 0;
	for (unsigned i = 0; i < w->h5n; i++) {
		int n = h5_sample(w, i, u->sample);
		if (n < 0) {
			ret = n;
			report(path, ret == -EFBIG ? -EFBIG : -EIO);
			goto out;
		}
		io->reads += (uint64_t)n;
		total += w->h5sbytes[i];
	}
	io->bytes += total;
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, (int64_t)u->sample, -1, total);
out:
	/* DLIO's pytorch reader reopens per sample; its tf.data one keeps a file
	 * open for the reader's consecutive samples, as we do. */
	if (ret || (w->c->p->amp == DRV_AMP_DLIO && !w->c->p->iterative))
		h5_close(w);
	return ret;
}

/* ---- tfrecord ---- */

struct fd_src {
	int fd;
	struct drv_io *io;
};

static ssize_t fd_fill(void *src, uint8_t *buf, size_t cap)
{
	struct fd_src *s = src;

	for (;;) {
		ssize_t r = read(s->fd, buf, cap);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		s->io->reads++;
		return r;
	}
}

/* Records reserved and completed per lock when they are small (see
 * drive_loader.c's CLAIM_MAX): tf.data hands records on in batches too. */
#define STREAM_GROUP 32
#define STREAM_SMALL (64u << 10)

static int unit_stream(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		       uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	char path[4096];
	struct drv_tfr t;
	uint64_t counted = 0, rec = 0;
	/* held: reserved samples not yet read; done: read, not yet completed */
	uint64_t held = 0, done = 0;
	const uint64_t group = w->c->ds->sample_size.mean <= STREAM_SMALL ? STREAM_GROUP : 1;
	int fd = -1, ret;

	if ((ret = drv_relpath(w->c, split, u->file, 0, path, sizeof(path))))
		return ret;
	/* tf.data reads with transfer_size buffers; O_DIRECT wants them aligned. */
	size_t cap = w->c->p->transfer_size;
	if (reserve_buf(w, cap))
		return -ENOMEM;
	if (cap > w->cap)
		cap = w->cap;
	struct fd_src src = {.io = io};
	for (;; rec++) {
		/* Records another rank keeps (a record-sharded stream) are read
		 * and passed over, as tf.data's shard() does. */
		int mine = !u->rec_mod || rec % u->rec_mod == u->rec_phase;
		/* A file is opened only for a sample the phase still needs... */
		if (mine && !held) {
			/* Completions first: the reservation may wait for the
			 * accelerator, which waits for them. */
			if (done) {
				drv_loader_complete(l, done, io);
				done = 0;
			}
			if (fd < 0 && !(held = drv_loader_reserve(l, group)))
				break;
		}
		if (fd < 0) {
			if ((fd = open_path(w, path, io)) < 0) {
				if (held)
					drv_loader_release(l, held);
				return fd;
			}
			src.fd = fd;
			drv_tfr_init(&t, w->buf, cap, w->c->p->check_crc, fd_fill, &src);
		}
		/* ...but then, like tf.data's pipeline, the next record is read
		 * before anyone asks for it: at the end of a file that is the
		 * read that finds EOF. */
		uint64_t len, off;
		ret = drv_tfr_next(&t, &len, &off);
		if (ret <= 0) {
			if (ret < 0) {
				fprintf(stderr, "dlio-drive: %s: %s at offset %llu\n", path,
					ret == -EBADMSG ? "corrupted record" : strerror(-ret),
					(unsigned long long)t.off);
			}
			break;
		}
		if (mine && !held && !(held = drv_loader_reserve(l, group)))
			break;
		io->bytes += t.bytes_in - counted;
		counted = t.bytes_in;
		if (!mine)
			continue;
		held--;
		if (w->c->trace)
			drv_trace_line(w->c, epoch, split, seq, path, (int64_t)rec, (int64_t)off,
				       len + DRV_TFR_HDR + DRV_TFR_FOOT);
		if (++done >= group) {
			drv_loader_complete(l, done, io);
			done = 0;
		}
	}
	if (held)
		drv_loader_release(l, held);
	if (fd >= 0) {
		/* Bytes read ahead into the buffer past the last record we used. */
		io->bytes += t.bytes_in - counted;
		dontneed(w, fd);
		close(fd);
	}
	drv_loader_complete(l, done, io);
	return ret < 0 ? ret : 0;
}

int drv_read_unit(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		  uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	int ret;

	switch (w->c->kind) {
	case DRV_U_STREAM:
		return unit_stream(w, l, split, epoch, seq, u, io);
	case DRV_U_FILE:
		ret = unit_whole(w, split, epoch, seq, u, -1, io);
		break;
	case DRV_U_CHUNK:
		ret = unit_chunk(w, split, epoch, seq, u, io);
		break;
	case DRV_U_SAMPLE:
	default:
		switch (w->c->ds->format) {
		case DL_FMT_HDF5:
			ret = unit_h5(w, split, epoch, seq, u, io);
			break;
		case DL_FMT_RAW:
		case DL_FMT_INDEXED_BINARY:
		case DL_FMT_DLRM:
			ret = unit_region(w, split, epoch, seq, u, io);
			break;
		default:
			ret = unit_whole(w, split, epoch, seq, u, (int64_t)u->sample, io);
			break;
		}
		break;
	}
	return ret;
}
