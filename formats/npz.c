/* NPZ: exactly what `np.savez(f, x=X, y=Y)` writes (numpy 1.24, Python 3.11
 * zipfile), with X the DLIO array and Y int64 zeros of length `samples`:
 *
 *   [local x][x.npy][local y][y.npy][central x][central y]
 *   [ZIP64 end record][ZIP64 locator]   only when the directory needs them
 *   [end of central directory]
 *
 * All bytes are fixed or payload except the four CRC-32 fields, derived per
 * member (formats.md 4.5, strategy S3): computed on the first read that
 * touches one of them, by generating the member once, then cached. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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

#define CRC_CHUNK (1u << 20)

/* f->aux: x.npy header length, x.npy size, y.npy header length, y.npy size. */
enum { AUX_HX, AUX_X, AUX_HY, AUX_Y };

static size_t y_header(const struct dl_file *f, uint8_t *buf)
{
	uint64_t n = f->samples;

	return dl_npy_header(buf, DL_DT_INT64, &n, 1);
}

static uint64_t off_local_y(const struct dl_file *f) { return LOCAL_LEN + f->aux[AUX_X]; }

static uint64_t off_central(const struct dl_file *f)
{
	return 2 * LOCAL_LEN + f->aux[AUX_X] + f->aux[AUX_Y];
}

static uint64_t central_len(uint64_t size, uint64_t hoff)
{
	unsigned nex = (size > ZIP64_LIMIT ? 2 : 0) + (hoff > ZIP64_LIMIT ? 1 : 0);

	return CENTRAL_FIXED + NAME_LEN + (nex ? 4 + 8 * nex : 0);
}

static uint32_t clip32(uint64_t v) { return v > ZIP64_LIMIT ? 0xffffffffu : (uint32_t)v; }

static size_t put_local(uint8_t *p, const char *name, uint32_t crc, uint64_t size)
{
	dl_put_le32(p, 0x04034b50);
	dl_put_le16(p + 4, size > ZIP64_LIMIT ? ZIP64_VERSION : ZIP_VERSION);
	dl_put_le16(p + 6, 0);	/* flags */
	dl_put_le16(p + 8, 0);	/* stored */
	dl_put_le16(p + 10, 0); /* time */
	dl_put_le16(p + 12, ZIP_DATE_1980);
	dl_put_le32(p + LOCAL_CRC_AT, crc);
	dl_put_le32(p + 18, clip32(size));
	dl_put_le32(p + 22, clip32(size));
	dl_put_le16(p + 26, NAME_LEN);
	dl_put_le16(p + 28, 20);
	memcpy(p + 30, name, NAME_LEN);
	dl_put_le16(p + 35, 1);
	dl_put_le16(p + 37, 16);
	dl_put_le64(p + 39, size);
	dl_put_le64(p + 47, size);
	return LOCAL_LEN;
}

static size_t put_central(uint8_t *p, const char *name, uint32_t crc, uint64_t size, uint64_t hoff)
{
	uint64_t ex[3];
	unsigned nex = 0, ver;
	size_t n;

	/* zipfile's order: uncompressed, compressed, then the header offset. */
	if (size > ZIP64_LIMIT) {
		ex[nex++] = size;
		ex[nex++] = size;
	}
	if (hoff > ZIP64_LIMIT)
		ex[nex++] = hoff;
	ver = nex ? ZIP64_VERSION : ZIP_VERSION;
	dl_put_le32(p, 0x02014b50);
	p[4] = (uint8_t)ver;
	p[5] = ZIP_MADE_BY_UNIX;
	dl_put_le16(p + 6, (uint16_t)ver);
	dl_put_le16(p + 8, 0);
	dl_put_le16(p + 10, 0);
	dl_put_le16(p + 12, 0);
	dl_put_le16(p + 14, ZIP_DATE_1980);
	dl_put_le32(p + CENTRAL_CRC_AT, crc);
	dl_put_le32(p + 20, clip32(size));
	dl_put_le32(p + 24, clip32(size));
	dl_put_le16(p + 28, NAME_LEN);
	dl_put_le16(p + 30, (uint16_t)(nex ? 4 + 8 * nex : 0));
	dl_put_le16(p + 32, 0); /* comment */
	dl_put_le16(p + 34, 0); /* disk */
	dl_put_le16(p + 36, 0); /* internal attributes */
	dl_put_le32(p + 38, ZIP_EXT_ATTR_0600);
	dl_put_le32(p + 42, clip32(hoff));
	memcpy(p + 46, name, NAME_LEN);
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
	uint64_t cdo = off_central(f), cds;
	size_t n = 0;

	n += put_central(p + n, "x.npy", crc_x, f->aux[AUX_X], 0);
	n += put_central(p + n, "y.npy", crc_y, f->aux[AUX_Y], off_local_y(f));
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
	uLong piece = crc32(0, zero, 1), acc = 0;
	uint64_t plen = 1;

	for (; n; n >>= 1) {
		if (n & 1)
			acc = crc32_combine(acc, piece, (z_off_t)plen);
		piece = crc32_combine(piece, piece, (z_off_t)plen);
		plen <<= 1;
	}
	return (uint32_t)acc;
}

static uint32_t crc_y(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t hdr[DL_NPY_HDR_MAX];
	uint64_t zlen = f->aux[AUX_Y] - f->aux[AUX_HY];
	uint32_t crc;
	uLong c;

	if (dl_dcache_get(ctx, DL_NPZ_DCACHE_Y_TAG, f->samples, &crc) == 0)
		return crc;
	y_header(f, hdr);
	c = crc32(0, hdr, (uInt)f->aux[AUX_HY]);
	c = crc32_combine(c, crc_zeros(zlen), (z_off_t)zlen);
	crc = (uint32_t)c;
	dl_dcache_put(ctx, DL_NPZ_DCACHE_Y_TAG, f->samples, crc);
	return crc;
}

/* The one expensive derived value: generate x.npy once, in chunks. */
static int crc_x(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint32_t *out)
{
	uint64_t k2 = dl_npz_x_cache_key(f);
	uint8_t hdr[DL_NPY_HDR_MAX];
	uint64_t data = f->aux[AUX_X] - f->aux[AUX_HX];
	uint8_t *buf;
	uLong c;

	if (dl_dcache_get(ctx, f->key, k2, out) == 0)
		return 0;
	buf = malloc(CRC_CHUNK);
	if (!buf)
		return -ENOMEM;
	dl_npy_file_header(f, hdr);
	c = crc32(0, hdr, (uInt)f->aux[AUX_HX]);
	for (uint64_t o = 0; o < data; o += CRC_CHUNK) {
		size_t n = data - o < CRC_CHUNK ? (size_t)(data - o) : CRC_CHUNK;
		dl_npy_fill_data(f, buf, o, n);
		c = crc32(c, buf, (uInt)n);
	}
	free(buf);
	*out = (uint32_t)c;
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

static int npz_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	uint8_t hdr[DL_NPY_HDR_MAX], tail[TAIL_MAX], local[LOCAL_LEN];
	uint64_t hx = f->aux[AUX_HX], X = f->aux[AUX_X];
	uint64_t hy = f->aux[AUX_HY], Y = f->aux[AUX_Y];
	uint64_t ly = off_local_y(f), cdo = off_central(f);
	uint64_t cdy = cdo + central_len(X, 0);
	uint64_t xdata = LOCAL_LEN + hx, ydata = ly + LOCAL_LEN + hy;
	uint32_t cx = 0, cy = 0;
	int need_x, need_y, ret;

	/* CRCs only when this read returns one of their bytes. */
	need_x = overlaps(off, len, LOCAL_CRC_AT, 4) || overlaps(off, len, cdo + CENTRAL_CRC_AT, 4);
	need_y =
	    overlaps(off, len, ly + LOCAL_CRC_AT, 4) || overlaps(off, len, cdy + CENTRAL_CRC_AT, 4);
	if (need_x) {
		ret = crc_x(ctx, f, &cx);
		if (ret)
			return ret;
	}
	if (need_y)
		cy = crc_y(ctx, f);

	if (overlaps(off, len, 0, LOCAL_LEN)) {
		put_local(local, "x.npy", cx, X);
		dl_copy_overlap(buf, off, len, local, 0, LOCAL_LEN);
	}
	if (overlaps(off, len, LOCAL_LEN, hx)) {
		dl_npy_file_header(f, hdr);
		dl_copy_overlap(buf, off, len, hdr, LOCAL_LEN, hx);
	}
	if (overlaps(off, len, xdata, X - hx)) {
		uint64_t lo = off > xdata ? off : xdata;
		uint64_t hi = off + len < ly ? off + len : ly;
		dl_npy_fill_data(f, buf + (lo - off), lo - xdata, (size_t)(hi - lo));
	}
	if (overlaps(off, len, ly, LOCAL_LEN)) {
		put_local(local, "y.npy", cy, Y);
		dl_copy_overlap(buf, off, len, local, ly, LOCAL_LEN);
	}
	if (overlaps(off, len, ly + LOCAL_LEN, hy)) {
		y_header(f, hdr);
		dl_copy_overlap(buf, off, len, hdr, ly + LOCAL_LEN, hy);
	}
	if (overlaps(off, len, ydata, Y - hy)) {
		uint64_t lo = off > ydata ? off : ydata;
		uint64_t hi = off + len < cdo ? off + len : cdo;
		memset(buf + (lo - off), 0, (size_t)(hi - lo));
	}
	if (off + len > cdo) {
		size_t n = put_tail(f, tail, cx, cy);
		dl_copy_overlap(buf, off, len, tail, cdo, n);
	}
	return 0;
}

const struct dl_format_ops dl_fmt_npz_ops = {
    .id = DL_FMT_NPZ,
    .name = "npz",
    .ext = "npz",
    .nparts = 1,
    .layout = npz_layout,
    .read = npz_read,
};
