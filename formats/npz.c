/* NPZ: exactly what `np.savez(f, x=X, y=Y)` writes (numpy 1.24, Python 3.11
 * zipfile), with X the DLIO array and Y int64 zeros of length `samples`:
 *
 *   [local x][x.npy][local y][y.npy][central x][central y]
 *   [ZIP64 end record][ZIP64 locator]   only when the directory needs them
 *   [end of central directory]
 *
 * With `compression: zip` it is what np.savez_compressed writes: the same
 * structure with method 8, each member's bytes replaced by a raw deflate
 * stream of stored blocks of them (deflate_stored.h; what zlib emits for
 * incompressible data anyway), so sizes stay arithmetic: a member of U bytes
 * takes U + 5 ceil(U / 65535). zipfile's rules then apply to the compressed
 * size as well: ZIP64 fields once either size passes 2^31 - 1.
 *
 * All bytes are fixed or payload except the four CRC-32 fields (of the
 * uncompressed members in both variants), derived per member (docs/formats.md 4.4,
 * strategy S3): computed on the first read that touches one of them, by
 * generating the member once, then cached. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deflate_stored.h"
#include "dliofs/crc32.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "npy_i.h"

/* Python's zipfile switches to ZIP64 structures above this, not at 2^32 - 1. */
#define ZIP64_LIMIT 0x7fffffffULL

#define ZIP_VERSION 20
#define ZIP64_VERSION 45
#define ZIP_MADE_BY_UNIX 3
#define ZIP_DATE_1980 0x0021 /* ZipInfo's default date_time (1980, 1, 1, 0, 0, 0) */
#define ZIP_EXT_ATTR_0600 0x01800000u
#define ZIP_STORED 0
#define ZIP_DEFLATED 8

#define NAME_LEN 5		       /* "x.npy", "y.npy" */
#define LOCAL_LEN (30 + NAME_LEN + 20) /* numpy forces the 20-byte ZIP64 extra */
#define LOCAL_CRC_AT 14
#define CENTRAL_FIXED 46
#define CENTRAL_CRC_AT 16
#define ZIP64_EOCD_LEN 56
#define ZIP64_LOCATOR_LEN 20
#define EOCD_LEN 22
/* Two central entries with the largest extras, ZIP64 records and EOCD. */
#define TAIL_MAX                                                                                   \
	(2 * (CENTRAL_FIXED + NAME_LEN + 4 + 24) + ZIP64_EOCD_LEN + ZIP64_LOCATOR_LEN + EOCD_LEN)

/* Generate-then-checksum piece of the member CRC: small enough that the CRC
 * reads the bytes back from L1/L2 instead of memory, large enough for the
 * fold's wide steps. */
#define CRC_CHUNK (32u << 10)
/* Parallel member CRC: at most this many pieces, each at least this big. */
#define CRC_PAR_MAX 8
#define CRC_PAR_MIN (32ull << 20)

/* f->aux: x.npy header length, x.npy size, y.npy header length, y.npy size
 * (uncompressed: the member sizes zipfile calls file_size). */
enum { AUX_HX, AUX_X, AUX_HY, AUX_Y };

static int compressed(const struct dl_file *f) { return f->ds->compression == DL_COMP_ZIP; }

/* Bytes a member of `usize` bytes takes in the archive (compress_size). */
static uint64_t stored_len(const struct dl_file *f, uint64_t usize)
{
	return compressed(f) ? dl_ds_size(usize) : usize;
}

static size_t y_header(const struct dl_file *f, uint8_t *buf)
{
	uint64_t n = f->samples;

	return dl_npy_header(buf, DL_DT_INT64, &n, 1);
}

static uint64_t off_local_y(const struct dl_file *f)
{
	return LOCAL_LEN + stored_len(f, f->aux[AUX_X]);
}

static uint64_t off_central(const struct dl_file *f)
{
	return off_local_y(f) + LOCAL_LEN + stored_len(f, f->aux[AUX_Y]);
}

/* zipfile's test for a member's sizes, in local header and central entry. */
static int sizes64(uint64_t usize, uint64_t csize)
{
	return usize > ZIP64_LIMIT || csize > ZIP64_LIMIT;
}

static uint64_t central_len(uint64_t usize, uint64_t csize, uint64_t hoff)
{
	unsigned nex = (sizes64(usize, csize) ? 2 : 0) + (hoff > ZIP64_LIMIT ? 1 : 0);

	return CENTRAL_FIXED + NAME_LEN + (nex ? 4 + 8 * nex : 0);
}

/* One member as the headers describe it. */
struct member {
	const char *name;
	uint16_t method;
	uint32_t crc;
	uint64_t usize, csize, hoff;
};

static struct member member_of(const struct dl_file *f, int y, uint32_t crc)
{
	uint64_t u = f->aux[y ? AUX_Y : AUX_X];

	return (struct member){.name = y ? "y.npy" : "x.npy",
			       .method = compressed(f) ? ZIP_DEFLATED : ZIP_STORED,
			       .crc = crc,
			       .usize = u,
			       .csize = stored_len(f, u),
			       .hoff = y ? off_local_y(f) : 0};
}

/* As zipfile's FileHeader(zip64=True): numpy forces the ZIP64 extra, whose
 * sizes are (uncompressed, compressed); the 32-bit fields are compressed,
 * uncompressed, both 0xffffffff once either is over the limit. */
static size_t put_local(uint8_t *p, const struct member *m)
{
	int z64 = sizes64(m->usize, m->csize);

	dl_put_le32(p, 0x04034b50);
	dl_put_le16(p + 4, z64 ? ZIP64_VERSION : ZIP_VERSION);
	dl_put_le16(p + 6, 0); /* flags: zipfile sets no level bits for deflate */
	dl_put_le16(p + 8, m->method);
	dl_put_le16(p + 10, 0); /* time */
	dl_put_le16(p + 12, ZIP_DATE_1980);
	dl_put_le32(p + LOCAL_CRC_AT, m->crc);
	dl_put_le32(p + 18, z64 ? 0xffffffffu : (uint32_t)m->csize);
	dl_put_le32(p + 22, z64 ? 0xffffffffu : (uint32_t)m->usize);
	dl_put_le16(p + 26, NAME_LEN);
	dl_put_le16(p + 28, 20);
	memcpy(p + 30, m->name, NAME_LEN);
	dl_put_le16(p + 35, 1);
	dl_put_le16(p + 37, 16);
	dl_put_le64(p + 39, m->usize);
	dl_put_le64(p + 47, m->csize);
	return LOCAL_LEN;
}

static size_t put_central(uint8_t *p, const struct member *m)
{
	uint64_t ex[3];
	unsigned nex = 0, ver;
	int z64 = sizes64(m->usize, m->csize);
	size_t n;

	/* zipfile's order: uncompressed, compressed, then the header offset. */
	if (z64) {
		ex[nex++] = m->usize;
		ex[nex++] = m->csize;
	}
	if (m->hoff > ZIP64_LIMIT)
		ex[nex++] = m->hoff;
	ver = nex ? ZIP64_VERSION : ZIP_VERSION;
	dl_put_le32(p, 0x02014b50);
	p[4] = (uint8_t)ver;
	p[5] = ZIP_MADE_BY_UNIX;
	dl_put_le16(p + 6, (uint16_t)ver);
	dl_put_le16(p + 8, 0);
	dl_put_le16(p + 10, m->method);
	dl_put_le16(p + 12, 0);
	dl_put_le16(p + 14, ZIP_DATE_1980);
	dl_put_le32(p + CENTRAL_CRC_AT, m->crc);
	dl_put_le32(p + 20, z64 ? 0xffffffffu : (uint32_t)m->csize);
	dl_put_le32(p + 24, z64 ? 0xffffffffu : (uint32_t)m->usize);
	dl_put_le16(p + 28, NAME_LEN);
	dl_put_le16(p + 30, (uint16_t)(nex ? 4 + 8 * nex : 0));
	dl_put_le16(p + 32, 0); /* comment */
	dl_put_le16(p + 34, 0); /* disk */
	dl_put_le16(p + 36, 0); /* internal attributes */
	dl_put_le32(p + 38, ZIP_EXT_ATTR_0600);
	dl_put_le32(p + 42, m->hoff > ZIP64_LIMIT ? 0xffffffffu : (uint32_t)m->hoff);
	memcpy(p + 46, m->name, NAME_LEN);
	n = CENTRAL_FIXED + NAME_LEN;
	if (nex) {
		dl_put_le16(p + n, 1);
		dl_put_le16(p + n + 2, (uint16_t)(8 * nex));
		n += 4;
		for (unsigned i = 0; i < nex; i++, n += 8)
			dl_put_le64(p + n, ex[i]);
	}
	return n;
}

/* Central directory, ZIP64 end records when needed, EOCD: as zipfile's
 * _write_end_record. Returns its length (the same whatever the CRCs). */
static size_t put_tail(const struct dl_file *f, uint8_t *p, uint32_t crc_x, uint32_t crc_y)
{
	struct member mx = member_of(f, 0, crc_x), my = member_of(f, 1, crc_y);
	uint64_t cdo = off_central(f), cds;
	size_t n = 0;

	n += put_central(p + n, &mx);
	n += put_central(p + n, &my);
	cds = n;
	if (cdo > ZIP64_LIMIT || cds > ZIP64_LIMIT) {
		uint8_t *r = p + n;
		dl_put_le32(r, 0x06064b50);
		dl_put_le64(r + 4, ZIP64_EOCD_LEN - 12);
		dl_put_le16(r + 12, ZIP64_VERSION); /* made by: zipfile writes 45, no OS byte */
		dl_put_le16(r + 14, ZIP64_VERSION);
		dl_put_le32(r + 16, 0);
		dl_put_le32(r + 20, 0);
		dl_put_le64(r + 24, 2);
		dl_put_le64(r + 32, 2);
		dl_put_le64(r + 40, cds);
		dl_put_le64(r + 48, cdo);
		n += ZIP64_EOCD_LEN;
		r = p + n;
		dl_put_le32(r, 0x07064b50);
		dl_put_le32(r + 4, 0);
		dl_put_le64(r + 8, cdo + cds);
		dl_put_le32(r + 16, 1);
		n += ZIP64_LOCATOR_LEN;
	}
	/* zipfile keeps the real values here whenever they fit in 32 bits. */
	dl_put_le32(p + n, 0x06054b50);
	dl_put_le16(p + n + 4, 0);
	dl_put_le16(p + n + 6, 0);
	dl_put_le16(p + n + 8, 2);
	dl_put_le16(p + n + 10, 2);
	dl_put_le32(p + n + 12, cds > 0xffffffffULL ? 0xffffffffu : (uint32_t)cds);
	dl_put_le32(p + n + 16, cdo > 0xffffffffULL ? 0xffffffffu : (uint32_t)cdo);
	dl_put_le16(p + n + 20, 0);
	return n + EOCD_LEN;
}

static int overlaps(uint64_t off, size_t len, uint64_t at, uint64_t n)
{
	return off < at + n && at < off + len;
}

/* CRC-32 of n zero bytes in O(log n) combines: y.npy's data. */
static uint32_t crc_zeros(uint64_t n)
{
	static const uint8_t zero[1];
	uint32_t piece = dl_crc32(0, zero, 1), acc = 0;
	uint64_t plen = 1;

	for (; n; n >>= 1) {
		if (n & 1)
			acc = dl_crc32_combine(acc, piece, plen);
		piece = dl_crc32_combine(piece, piece, plen);
		plen <<= 1;
	}
	return (uint32_t)acc;
}

static uint32_t crc_y(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t hdr[DL_NPY_HDR_MAX];
	uint64_t zlen = f->aux[AUX_Y] - f->aux[AUX_HY];
	uint32_t crc;

	if (dl_dcache_get(ctx, DL_NPZ_DCACHE_Y_TAG, f->samples, &crc) == 0)
		return crc;
	y_header(f, hdr);
	crc = dl_crc32(0, hdr, f->aux[AUX_HY]);
	crc = dl_crc32_combine(crc, crc_zeros(zlen), zlen);
	dl_dcache_put(ctx, DL_NPZ_DCACHE_Y_TAG, f->samples, crc);
	return crc;
}

/* CRC-32 of x.npy's data bytes [o, o + n), generated piece by piece. */
static int crc_data(const struct dl_file *f, uint64_t o, uint64_t n, uint32_t *out)
{
	uint8_t *buf = malloc(CRC_CHUNK);
	uint32_t c = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t e = o + n; o < e; o += CRC_CHUNK) {
		size_t k = e - o < CRC_CHUNK ? (size_t)(e - o) : CRC_CHUNK;
		dl_npy_fill_data(f, buf, o, k);
		c = dl_crc32(c, buf, k);
	}
	free(buf);
	*out = c;
	return 0;
}

struct crc_part {
	const struct dl_file *f;
	uint64_t o, n;
	uint32_t crc;
	int ret;
	pthread_t th;
	int started;
};

static void *crc_part_main(void *arg)
{
	struct crc_part *p = arg;

	p->ret = crc_data(p->f, p->o, p->n, &p->crc);
	return NULL;
}

/* The one expensive derived value: generate x.npy once. A large member is
 * split over the machine's CPUs (docs/formats.md 4.4: pieces joined with the CRC
 * combine), so the first read of a 146 MB unet3d file waits for half the
 * pass on two cores; one piece per CRC_PAR_MIN bytes at most. */
static int crc_x(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint32_t *out)
{
	uint64_t k2 = dl_npz_x_cache_key(f);
	uint8_t hdr[DL_NPY_HDR_MAX];
	uint64_t data = f->aux[AUX_X] - f->aux[AUX_HX];
	struct crc_part part[CRC_PAR_MAX];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned np = 1;
	uint32_t c;
	int ret = 0;

	if (dl_dcache_get(ctx, f->key, k2, out) == 0)
		return 0;
	if (ncpu > 1 && data >= 2 * CRC_PAR_MIN) {
		uint64_t by_size = data / CRC_PAR_MIN;
		np = ncpu < CRC_PAR_MAX ? (unsigned)ncpu : CRC_PAR_MAX;
		if (by_size < np)
			np = (unsigned)by_size;
	}
	/* Piece boundaries on CRC_CHUNK multiples: every piece but the last
	 * generates whole chunks. */
	uint64_t step = (data / np + CRC_CHUNK - 1) / CRC_CHUNK * CRC_CHUNK;
	for (unsigned i = 0; i < np; i++) {
		uint64_t o = i * step < data ? i * step : data;
		uint64_t n = i + 1 == np || o + step > data ? data - o : step;
		part[i] = (struct crc_part){.f = f, .o = o, .n = n};
	}
	/* Piece 0 here; the others on their own threads (run here when a
	 * thread cannot be had). */
	for (unsigned i = 1; i < np; i++)
		part[i].started = pthread_create(&part[i].th, NULL, crc_part_main, &part[i]) == 0;
	crc_part_main(&part[0]);
	for (unsigned i = 1; i < np; i++) {
		if (part[i].started)
			pthread_join(part[i].th, NULL);
		else
			crc_part_main(&part[i]);
	}
	dl_npy_file_header(f, hdr);
	c = dl_crc32(0, hdr, f->aux[AUX_HX]);
	for (unsigned i = 0; i < np; i++) {
		if (part[i].ret && !ret)
			ret = part[i].ret;
		c = dl_crc32_combine(c, part[i].crc, part[i].n);
	}
	if (ret)
		return ret;
	*out = c;
	dl_dcache_put(ctx, f->key, k2, *out);
	return 0;
}

static int npz_layout(struct dl_file *f)
{
	uint8_t hdr[DL_NPY_HDR_MAX], tail[TAIL_MAX];
	uint64_t ylen;
	size_t hx, hy;
	int ret;

	if (f->part != 0)
		return -ENOENT;
	ret = dl_npy_sample_shape(f);
	if (ret)
		return ret;
	hx = dl_npy_file_header(f, hdr);
	hy = y_header(f, hdr);
	/* Keeps every offset sum below 2^64 without further checks. */
	if (!hx || !hy || dl_npy_data_bytes(f) > (UINT64_MAX >> 1) ||
	    f->samples > (UINT64_MAX >> 5))
		return -EFBIG;
	ylen = hy + 8 * f->samples;
	f->aux[AUX_HX] = hx;
	f->aux[AUX_X] = hx + dl_npy_data_bytes(f);
	f->aux[AUX_HY] = hy;
	f->aux[AUX_Y] = ylen;
	f->size = off_central(f) + put_tail(f, tail, 0, 0);
	return 0;
}

/* Bytes [o, o + n) of an uncompressed member (y: 0 for x.npy, 1 for y.npy). */
static void member_fill(const struct dl_file *f, int y, uint8_t *dst, uint64_t o, size_t n)
{
	uint64_t h = f->aux[y ? AUX_HY : AUX_HX];

	if (o < h) {
		uint8_t hdr[DL_NPY_HDR_MAX];
		size_t k = y ? y_header(f, hdr) : dl_npy_file_header(f, hdr);
		dl_copy_overlap(dst, o, n, hdr, 0, k);
	}
	if (o + n > h) {
		uint64_t lo = o > h ? o : h;
		if (y)
			memset(dst + (lo - o), 0, (size_t)(o + n - lo));
		else
			dl_npy_fill_data(f, dst + (lo - o), lo - h, (size_t)(o + n - lo));
	}
}

struct fill_arg {
	const struct dl_file *f;
	int y;
};

static int fill_cb(void *arg, uint8_t *dst, uint64_t raw_off, size_t len)
{
	const struct fill_arg *a = arg;

	member_fill(a->f, a->y, dst, raw_off, len);
	return 0;
}

/* Local header and data of one member, as far as the request overlaps them. */
static void read_member(const struct dl_file *f, int y, const struct member *m, uint8_t *buf,
			uint64_t off, size_t len)
{
	const uint64_t data = m->hoff + LOCAL_LEN;

	if (overlaps(off, len, m->hoff, LOCAL_LEN)) {
		uint8_t local[LOCAL_LEN];
		put_local(local, m);
		dl_copy_overlap(buf, off, len, local, m->hoff, LOCAL_LEN);
	}
	if (!overlaps(off, len, data, m->csize))
		return;
	if (m->method == ZIP_DEFLATED) {
		struct fill_arg a = {f, y};
		dl_ds_read(buf, off, len, data, m->usize, fill_cb, &a);
	} else {
		uint64_t lo = off > data ? off : data;
		uint64_t hi = off + len < data + m->csize ? off + len : data + m->csize;
		member_fill(f, y, buf + (lo - off), lo - data, (size_t)(hi - lo));
	}
}

static int npz_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	struct member mx = member_of(f, 0, 0), my = member_of(f, 1, 0);
	uint64_t cdo = off_central(f);
	uint64_t cdy = cdo + central_len(mx.usize, mx.csize, mx.hoff);
	int ret;

	/* CRCs only when this read returns one of their bytes. */
	if (overlaps(off, len, LOCAL_CRC_AT, 4) || overlaps(off, len, cdo + CENTRAL_CRC_AT, 4)) {
		ret = crc_x(ctx, f, &mx.crc);
		if (ret)
			return ret;
	}
	if (overlaps(off, len, my.hoff + LOCAL_CRC_AT, 4) ||
	    overlaps(off, len, cdy + CENTRAL_CRC_AT, 4))
		my.crc = crc_y(ctx, f);

	read_member(f, 0, &mx, buf, off, len);
	read_member(f, 1, &my, buf, off, len);
	if (off + len > cdo) {
		uint8_t tail[TAIL_MAX];
		size_t n = put_tail(f, tail, mx.crc, my.crc);
		dl_copy_overlap(buf, off, len, tail, cdo, n);
	}
	return 0;
}

const struct dl_format_ops dl_fmt_npz_ops = {
    .id = DL_FMT_NPZ,
    .name = "npz",
    .dlio_name = "npz",
    .ext = "npz",
    .example = "sample_size: 3KiB, samples_per_file: 2, compression: zip",
    .features = DL_FF_SHAPE,
    .comps = (const struct dl_comp_use[]){{DL_COMP_ZIP, "np.savez_compressed"}},
    .ncomps = 1,
    .dlio_comps = 1u << DL_COMP_ZIP,
    .nparts = 1,
    .read_hints = {.plan = DL_PLAN_WHOLE, .batch = 7, .read_threads = 4, .flags = DL_RH_NUMPY},
    .layout = npz_layout,
    .read = npz_read,
};
