/* np.load(path)['x'] as numpy 2.x reads an .npz under CPython 3.11, system
 * call for system call (--read-amplification dlio): what DLIO's npz reader,
 * and any Python loader built on np.load, asks of storage.
 *
 * Three layers decide the reads, and all three are modelled here:
 *   io.BufferedReader  open(path, 'rb') buffers st_blksize bytes (8192 when
 *                      st_blksize <= 1): a small read fills the whole buffer,
 *                      a large one goes straight to the file for its whole
 *                      blocks, a seek within the unread buffer costs nothing
 *                      and any other seek drops it (Modules/_io/bufferedio.c).
 *   zipfile            the end record read with read() to EOF (FileIO.readall
 *                      asks for one byte more than is left, then reads 0),
 *                      the zip64 locator just before it, the central
 *                      directory, then the member's local header; a member
 *                      is read in at least 4096-byte pieces (ZipExtFile).
 *   numpy              six magic bytes, seek(0), the array header, then the
 *                      data in 256 KiB pieces (format.read_array on a
 *                      non-file object).
 * The upshot on a file system with a large st_blksize (dliofs reports 1 MiB)
 * is that a file smaller than st_blksize is read whole twice, and a larger
 * one gets its first st_blksize bytes twice; on ext4 (4 KiB) the extra is
 * a few KiB. The other member (y.npy) is never read.
 *
 * Only what changes the reads is modelled; the bytes themselves are parsed
 * only where the real code parses them (zip records, the npy header). A
 * layout the model does not cover (compressed members, no x.npy, a file too
 * odd to parse) returns -ENOTSUP before any data is read past the zip
 * directory, and the caller reads the file whole instead. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/bytes.h"
#include "drive_i.h"

#define PY_DEFAULT_BUFFER 8192	    /* io.DEFAULT_BUFFER_SIZE */
#define PY_SMALLCHUNK 8192	    /* FileIO.readall's growth step */
#define PY_BUFFER_MAX (64ull << 20) /* a larger st_blksize is not modelled */
#define ZIP_MIN_READ 4096	    /* ZipExtFile.MIN_READ_SIZE */
#define NPY_BUFFER (1u << 18)	    /* numpy.lib.format.BUFFER_SIZE */
#define ZX_MAX (NPY_BUFFER + ZIP_MIN_READ)

struct drv_pyio {
	uint8_t *buf; /* the BufferedReader's buffer */
	size_t bcap;
	uint8_t *tmp; /* destination of reads nobody looks at, readall's data */
	size_t tcap;
	uint8_t *rb; /* ZipExtFile._readbuffer */
	size_t rbcap;
	uint8_t *data; /* one ZipExtFile._read1() result */
	size_t dcap;
};

void drv_pyio_free(struct drv_pyio *m)
{
	if (!m)
		return;
	free(m->buf);
	free(m->tmp);
	free(m->rb);
	free(m->data);
	free(m);
}

/* ---- io.BufferedReader over the fd ---- */

struct pyf {
	struct drv_pyio *m;
	int fd;
	uint64_t size;
	size_t B;
	int valid;	 /* a read buffer is there (read_end != -1) */
	uint64_t base;	 /* file offset of buf[0] */
	size_t pos, end; /* read position in buf, bytes in buf */
	uint64_t raw;	 /* the fd's offset */
	struct drv_io *io;
	int err;
};

static ssize_t raw_read(struct pyf *f, uint8_t *dst, size_t n)
{
	for (;;) {
		ssize_t r = pread(f->fd, dst, n, (off_t)f->raw);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			f->err = -errno;
			return -1;
		}
		f->io->reads++;
		f->io->bytes += (uint64_t)r;
		f->raw += (uint64_t)r;
		return r;
	}
}

static uint64_t pyf_tell(const struct pyf *f) { return f->valid ? f->base + f->pos : f->raw; }

static int pyf_seek(struct pyf *f, int64_t off, int whence)
{
	int64_t target;

	/* Inside the unread part of the buffer (or at its end): no system call. */
	if (whence != SEEK_END && f->valid && f->end > f->pos) {
		target = whence == SEEK_SET ? off : (int64_t)pyf_tell(f) + off;
		if (target >= (int64_t)f->base && target <= (int64_t)(f->base + f->end)) {
			f->pos = (size_t)(target - (int64_t)f->base);
			return 0;
		}
	}
	target = whence == SEEK_SET   ? off
		 : whence == SEEK_CUR ? (int64_t)pyf_tell(f) + off
				      : (int64_t)f->size + off;
	if (target < 0)
		return -EINVAL; /* OSError in Python */
	f->raw = (uint64_t)target;
	f->valid = 0;
	return 0;
}

/* read(n) into dst (NULL: dropped); dst holds n. Returns the bytes read
 * (short at EOF) or -1 with f->err. */
static ssize_t pyf_read(struct pyf *f, size_t n, uint8_t *dst)
{
	size_t avail = f->valid ? f->end - f->pos : 0, written = 0;

	if (n <= avail) {
		if (dst)
			memcpy(dst, f->m->buf + f->pos, n);
		f->pos += n;
		return (ssize_t)n;
	}
	if (avail) {
		if (dst)
			memcpy(dst, f->m->buf + f->pos, avail);
		f->pos += avail;
		written = avail;
	}
	/* Whole blocks straight from the file, the tail through the buffer. */
	f->raw = pyf_tell(f);
	f->valid = 0;
	size_t remaining = n - written;
	while (remaining) {
		size_t r = remaining / f->B * f->B;
		if (!r)
			break;
		if (!dst && drv_grow(&f->m->tmp, &f->m->tcap, r)) {
			f->err = -ENOMEM;
			return -1;
		}
		ssize_t got = raw_read(f, dst ? dst + written : f->m->tmp, r);
		if (got < 0)
			return -1;
		if (got == 0)
			return (ssize_t)written;
		remaining -= (size_t)got;
		written += (size_t)got;
	}
	f->valid = 1;
	f->base = f->raw;
	f->pos = f->end = 0;
	while (remaining && f->end < f->B) {
		ssize_t got = raw_read(f, f->m->buf + f->end, f->B - f->end);
		if (got < 0)
			return -1;
		if (got == 0)
			break;
		f->end += (size_t)got;
		size_t c = remaining < (size_t)got ? remaining : (size_t)got;
		if (dst)
			memcpy(dst + written, f->m->buf + f->pos, c);
		f->pos += c;
		written += c;
		remaining -= c;
	}
	return (ssize_t)written;
}

/* read() to EOF: the buffered rest, then FileIO.readall. Data in m->tmp. */
static ssize_t pyf_readall(struct pyf *f)
{
	size_t have = f->valid ? f->end - f->pos : 0, bufsize;
	uint64_t at;

	if (drv_grow(&f->m->tmp, &f->m->tcap, have + PY_SMALLCHUNK))
		goto oom;
	if (have)
		memcpy(f->m->tmp, f->m->buf + f->pos, have);
	at = pyf_tell(f);
	f->raw = at;
	f->valid = 0;
	/* One byte more than the file has left: EOF comes without a regrow. */
	bufsize = f->size >= at ? (size_t)(f->size - at) + 1 : PY_SMALLCHUNK;
	size_t got = 0;
	for (;;) {
		if (got >= bufsize) { /* FileIO's new_buffersize() */
			size_t add = got > 65536 ? got >> 3 : 256 + got;
			bufsize = got + (add < PY_SMALLCHUNK ? PY_SMALLCHUNK : add);
		}
		if (drv_grow(&f->m->tmp, &f->m->tcap, have + bufsize))
			goto oom;
		ssize_t r = raw_read(f, f->m->tmp + have + got, bufsize - got);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)(have + got);
oom:
	f->err = -ENOMEM;
	return -1;
}

/* ---- zipfile ---- */

struct endrec {
	uint64_t size_cd, offset_cd, location;
	int zip64;
};

/* _EndRecData64: the zip64 locator 20 bytes before the end record at
 * `offset` (negative, from the end). */
static int endrec64(struct pyf *f, int64_t offset, struct endrec *e)
{
	uint8_t loc[20], rec[56];
	ssize_t n;

	if (pyf_seek(f, offset - 20, SEEK_END))
		return 0;
	if ((n = pyf_read(f, 20, loc)) < 0)
		return -1;
	if (n != 20 || memcmp(loc, "PK\x06\x07", 4))
		return 0;
	if (pyf_seek(f, offset - 20 - 56, SEEK_END))
		return 0;
	if ((n = pyf_read(f, 56, rec)) < 0)
		return -1;
	if (n != 56 || memcmp(rec, "PK\x06\x06", 4))
		return 0;
	e->zip64 = 1;
	e->size_cd = dl_get_le64(rec + 40);
	e->offset_cd = dl_get_le64(rec + 48);
	e->location = (uint64_t)((int64_t)f->size + offset - 20 - 56);
	return 0;
}

/* _EndRecData: 1 and the record, 0 when it is not a zip, -1 on error. */
static int endrec(struct pyf *f, struct endrec *e)
{
	ssize_t n;

	memset(e, 0, sizeof(*e));
	if (pyf_seek(f, 0, SEEK_END) || pyf_seek(f, -22, SEEK_END))
		return 0;
	if ((n = pyf_readall(f)) < 0)
		return -1;
	const uint8_t *d = f->m->tmp;
	if (n == 22 && !memcmp(d, "PK\x05\x06", 4) && d[20] == 0 && d[21] == 0) {
		e->size_cd = dl_get_le32(d + 12);
		e->offset_cd = dl_get_le32(d + 16);
		e->location = f->size - 22;
		return endrec64(f, -22, e) < 0 ? -1 : 1;
	}
	/* An archive comment: search the last 64 KiB for the record. */
	uint64_t start = f->size > 65536 + 22 ? f->size - 65536 - 22 : 0;
	if (pyf_seek(f, (int64_t)start, SEEK_SET) || (n = pyf_readall(f)) < 0)
		return n < 0 ? -1 : 0;
	d = f->m->tmp;
	for (ssize_t i = n - 22; i >= 0; i--) {
		if (memcmp(d + i, "PK\x05\x06", 4))
			continue;
		e->size_cd = dl_get_le32(d + i + 12);
		e->offset_cd = dl_get_le32(d + i + 16);
		e->location = start + (uint64_t)i;
		return endrec64(f, (int64_t)(start + (uint64_t)i) - (int64_t)f->size, e) < 0 ? -1
											     : 1;
	}
	return 0;
}

struct member {
	uint64_t header_offset, csize, usize;
};

/* The central directory's entry for `name` (stored, unencrypted). */
static int find_member(const uint8_t *cd, size_t len, const char *name, int64_t concat,
		       struct member *mb)
{
	size_t nl = strlen(name);

	for (size_t p = 0; p + 46 <= len;) {
		const uint8_t *e = cd + p;
		if (memcmp(e, "PK\x01\x02", 4))
			return -ENOTSUP;
		uint16_t flags = dl_get_le16(e + 8), method = dl_get_le16(e + 10);
		uint16_t fl = dl_get_le16(e + 28), xl = dl_get_le16(e + 30),
			 cl = dl_get_le16(e + 32);
		if (p + 46 + fl + xl + cl > len)
			return -ENOTSUP;
		if (fl == nl && !memcmp(e + 46, name, nl)) {
			if (method != 0 || (flags & 1))
				return -ENOTSUP; /* deflated or encrypted: not modelled */
			mb->usize = dl_get_le32(e + 24);
			mb->csize = dl_get_le32(e + 20);
			mb->header_offset = dl_get_le32(e + 42);
			/* zip64 extra: the fields that overflowed, in this order. */
			for (const uint8_t *x = e + 46 + fl, *xe = x + xl; x + 4 <= xe;) {
				uint16_t id = dl_get_le16(x), sz = dl_get_le16(x + 2);
				const uint8_t *v = x + 4, *ve = v + sz;
				if (ve > xe)
					break;
				if (id == 1) {
					if (mb->usize == 0xffffffffu && v + 8 <= ve)
						mb->usize = dl_get_le64(v), v += 8;
					if (mb->csize == 0xffffffffu && v + 8 <= ve)
						mb->csize = dl_get_le64(v), v += 8;
					if (mb->header_offset == 0xffffffffu && v + 8 <= ve)
						mb->header_offset = dl_get_le64(v);
				}
				x = ve;
			}
			mb->header_offset = (uint64_t)((int64_t)mb->header_offset + concat);
			return 0;
		}
		p += 46 + fl + xl + cl;
	}
	return -ENOTSUP;
}

/* ZipExtFile of a stored member, over a _SharedFile at `sfpos`. */
struct zx {
	struct pyf *f;
	uint64_t sfpos, start;
	uint64_t csize, usize, compress_left, left;
	size_t rblen, off;
	int eof;
};

static ssize_t sf_read(struct zx *z, size_t n, uint8_t *dst)
{
	if (pyf_seek(z->f, (int64_t)z->sfpos, SEEK_SET))
		return -1;
	ssize_t r = pyf_read(z->f, n, dst);
	z->sfpos = pyf_tell(z->f);
	return r;
}

/* _read1 (stored): one read of at least 4096 bytes, into m->data. */
static ssize_t zx_read1(struct zx *z, size_t n)
{
	struct drv_pyio *m = z->f->m;

	if (!z->compress_left)
		z->eof = 1;
	if (z->eof || !n)
		return 0;
	if (n < ZIP_MIN_READ)
		n = ZIP_MIN_READ;
	if (n > z->compress_left)
		n = (size_t)z->compress_left;
	if (drv_grow(&m->data, &m->dcap, n)) {
		z->f->err = -ENOMEM;
		return -1;
	}
	ssize_t got = sf_read(z, n, m->data);
	if (got < 0)
		return -1;
	if (got == 0) {
		z->f->err = -ENODATA; /* EOFError: the member is cut short */
		return -1;
	}
	z->compress_left -= (uint64_t)got;
	z->eof = !z->compress_left;
	if ((uint64_t)got > z->left)
		got = (ssize_t)z->left;
	z->left -= (uint64_t)got;
	if (!z->left)
		z->eof = 1;
	return got;
}

/* ZipExtFile.read(n) into dst (NULL: dropped). */
static ssize_t zx_read(struct zx *z, size_t n, uint8_t *dst)
{
	struct drv_pyio *m = z->f->m;
	size_t end = n + z->off, done;

	if (end < z->rblen) {
		if (dst)
			memcpy(dst, m->rb + z->off, n);
		z->off = end;
		return (ssize_t)n;
	}
	n = end - z->rblen;
	done = z->rblen - z->off;
	if (dst && done) /* rb is NULL before the first read */
		memcpy(dst, m->rb + z->off, done);
	z->rblen = z->off = 0;
	while (n && !z->eof) {
		ssize_t got = zx_read1(z, n);
		if (got < 0)
			return -1;
		if (n < (size_t)got) {
			if (drv_grow(&m->rb, &m->rbcap, (size_t)got)) {
				z->f->err = -ENOMEM;
				return -1;
			}
			memcpy(m->rb, m->data, (size_t)got);
			z->rblen = (size_t)got;
			z->off = n;
			if (dst)
				memcpy(dst + done, m->data, n);
			done += n;
			break;
		}
		if (dst)
			memcpy(dst + done, m->data, (size_t)got);
		done += (size_t)got;
		n -= (size_t)got;
		if (!got)
			break;
	}
	return (ssize_t)done;
}

/* ZipExtFile.seek(0). */
static int zx_rewind(struct zx *z)
{
	uint64_t cur = z->usize - z->left - z->rblen + z->off;

	if (cur <= z->off && z->off - cur < z->rblen) {
		z->off -= (size_t)cur;
		return 0;
	}
	if (cur == 0)
		return 0;
	if (pyf_seek(z->f, (int64_t)z->start, SEEK_SET))
		return -1;
	z->sfpos = pyf_tell(z->f);
	z->compress_left = z->csize;
	z->left = z->usize;
	z->rblen = z->off = 0;
	z->eof = 0;
	return 0;
}

/* numpy.lib.format._read_bytes: read until `size` or EOF. */
static ssize_t read_bytes(struct zx *z, size_t size, uint8_t *dst)
{
	size_t have = 0;

	while (have < size) {
		ssize_t r = zx_read(z, size - have, dst ? dst + have : NULL);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		have += (size_t)r;
	}
	return (ssize_t)have;
}

/* Bytes per element from the header's 'descr' ('|u1', '<f4', ...); 1 when
 * it says something else. */
static size_t npy_itemsize(const char *h, size_t len)
{
	const char *d = memmem(h, len, "'descr'", 7);
	if (!d)
		return 1;
	const char *q = memchr(d + 7, '\'', len - (size_t)(d + 7 - h));
	if (!q)
		return 1;
	size_t n = 0;
	const char *c = q + 1;
	while (c < h + len && *c != '\'' && (*c < '0' || *c > '9'))
		c++;
	while (c < h + len && *c >= '0' && *c <= '9')
		n = n * 10 + (size_t)(*c++ - '0');
	return n ? n : 1;
}

static int numpy_member(struct pyf *f, const struct member *mb)
{
	uint8_t hdr[30], skip[512], magic[8], hl[4];
	char header[4096];
	ssize_t n;

	/* ZipFile.open: the local header, then its name and extra field. */
	struct zx z = {.f = f, .sfpos = mb->header_offset, .csize = mb->csize, .usize = mb->usize};
	if ((n = sf_read(&z, sizeof(hdr), hdr)) < 0)
		return -1;
	if (n != sizeof(hdr) || memcmp(hdr, "PK\x03\x04", 4))
		return -ENOTSUP;
	size_t fl = dl_get_le16(hdr + 26), xl = dl_get_le16(hdr + 28);
	if (fl > sizeof(skip) || xl > sizeof(skip))
		return -ENOTSUP;
	if (sf_read(&z, fl, skip) < 0 || (xl && sf_read(&z, xl, skip) < 0))
		return -1;
	z.start = z.sfpos;
	z.compress_left = z.csize;
	z.left = z.usize;
	/* NpzFile.__getitem__: the magic, seek(0), then format.read_array. */
	if (zx_read(&z, 6, magic) < 0 || zx_rewind(&z) < 0)
		return -1;
	if ((n = read_bytes(&z, 8, magic)) < 0)
		return -1;
	if (n != 8 || memcmp(magic, "\x93NUMPY", 6))
		return -ENOTSUP;
	size_t hls = magic[6] == 1 ? 2 : 4;
	if ((n = read_bytes(&z, hls, hl)) < 0)
		return -1;
	if ((size_t)n != hls)
		return -ENOTSUP;
	size_t hlen = hls == 2 ? dl_get_le16(hl) : dl_get_le32(hl);
	if (hlen > sizeof(header))
		return -ENOTSUP;
	if ((n = read_bytes(&z, hlen, (uint8_t *)header)) < 0)
		return -1;
	size_t item = npy_itemsize(header, (size_t)n);
	uint64_t used = 8 + hls + hlen, data = mb->usize > used ? mb->usize - used : 0;
	size_t chunk = NPY_BUFFER / (item < NPY_BUFFER ? item : NPY_BUFFER) * item;
	while (data) {
		size_t want = data < chunk ? (size_t)data : chunk;
		if ((n = read_bytes(&z, want, NULL)) < 0)
			return -1;
		if ((size_t)n < want)
			break; /* numpy would raise: the member is short */
		data -= want;
	}
	return 0;
}

int drv_npz_numpy(struct drv_pyio **mp, int fd, const char *member, struct drv_io *io)
{
	struct stat st;
	uint8_t magic[6];
	struct endrec e;
	struct member mb;
	int ret;

	if (fstat(fd, &st))
		return -errno;
	if (!*mp && !(*mp = calloc(1, sizeof(**mp))))
		return -ENOMEM;
	struct drv_pyio *m = *mp;
	size_t B = st.st_blksize > 1 ? (size_t)st.st_blksize : PY_DEFAULT_BUFFER;
	if (B > PY_BUFFER_MAX)
		return -ENOTSUP;
	if (drv_grow(&m->buf, &m->bcap, B) || drv_grow(&m->data, &m->dcap, ZX_MAX))
		return -ENOMEM;
	struct pyf f = {.m = m, .fd = fd, .size = (uint64_t)st.st_size, .B = B, .io = io};

	/* np.load: sniff the magic through the buffer, step back. */
	ssize_t n = pyf_read(&f, sizeof(magic), magic);
	if (n <= 0)
		return n < 0 ? f.err : -ENODATA;
	if (pyf_seek(&f, -n, SEEK_CUR))
		return -EIO;
	if (n < 4 || (memcmp(magic, "PK\x03\x04", 4) && memcmp(magic, "PK\x05\x06", 4)))
		return -ENOTSUP;
	/* zipfile.ZipFile: the end record, the central directory. */
	if ((ret = endrec(&f, &e)) <= 0)
		return ret < 0 ? f.err : -ENOTSUP;
	int64_t concat = (int64_t)e.location - (int64_t)e.size_cd - (int64_t)e.offset_cd;
	if (e.zip64)
		concat -= 56 + 20;
	int64_t start_dir = (int64_t)e.offset_cd + concat;
	if (start_dir < 0 || e.size_cd > (64u << 20))
		return -ENOTSUP;
	uint8_t *cd = malloc(e.size_cd ? (size_t)e.size_cd : 1);
	if (!cd)
		return -ENOMEM;
	if (pyf_seek(&f, start_dir, SEEK_SET) || (n = pyf_read(&f, (size_t)e.size_cd, cd)) < 0) {
		free(cd);
		return f.err ? f.err : -EIO;
	}
	char name[256];
	snprintf(name, sizeof(name), "%s.npy", member);
	ret = find_member(cd, (size_t)n, name, concat, &mb);
	free(cd);
	if (ret)
		return ret;
	ret = numpy_member(&f, &mb);
	if (ret < 0 && f.err)
		return f.err;
	return ret;
}

/* DLIO's npz reader: np.load(path)['x']. */
static int npz_x(struct drv_pyio **m, int fd, struct drv_io *io)
{
	return drv_npz_numpy(m, fd, "x", io);
}

static const struct drv_numpy_model models[] = {
    {"npz", npz_x, "no stored x.npy member np.load's reads could be modelled on"},
};

const struct drv_numpy_model *drv_numpy_model_for(const char *format)
{
	for (size_t i = 0; format && i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(models[i].format, format))
			return &models[i];
	return NULL;
}
