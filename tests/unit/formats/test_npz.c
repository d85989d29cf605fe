/* NPY / NPZ layouts: numpy's header and ZIP arithmetic (docs/formats.md 3, 4),
 * slice reads against full reads, CRC-32 fields against zlib, float ranges;
 * the `compression: zip` variant (np.savez_compressed with stored deflate
 * blocks) inflated by zlib and compared with the stored variant.
 *
 * `test_npy_npz --serve FORMAT[+zip] DTYPE SAMPLES DIM...` prints the file
 * size and then answers "OFF LEN" lines on stdin with those raw bytes on
 * stdout: the Python test uses it to let zipfile/numpy read multi-GB ZIP64
 * files without writing them out. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "dliofs/clock.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "npy_i.h"

static int npass, nfail;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			npass++;                                                                   \
		} else {                                                                           \
			nfail++;                                                                   \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, "\n");                                                     \
		}                                                                                  \
	} while (0)

#define LIM 0x7fffffffULL

static double now(void)
{
	return (double)dl_mono_ns() * 1e-9;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static struct dl_dataset mkds(const char *name, enum dl_format fmt, enum dl_dtype dt,
			      uint64_t samples, uint64_t mean, uint64_t stdev, unsigned ndims,
			      const uint64_t *dims)
{
	struct dl_dataset ds;

	memset(&ds, 0, sizeof(ds));
	snprintf(ds.name, sizeof(ds.name), "%s", name);
	ds.id = dl_key2(0x1234, (uint64_t)strlen(name) * 7919 + (uint64_t)name[0]);
	ds.format = fmt;
	ds.files[DL_SPLIT_TRAIN] = 16;
	ds.files[DL_SPLIT_VALID] = 2;
	ds.samples_per_file = samples;
	ds.sample_size =
	    (struct dl_dist){mean, stdev, stdev ? 1 : mean, stdev ? mean + 6 * stdev : mean};
	ds.dtype = dt;
	ds.ndims = ndims;
	for (unsigned i = 0; i < ndims; i++)
		ds.dims[i] = dims[i];
	snprintf(ds.file_prefix, sizeof(ds.file_prefix), "img");
	return ds;
}

static uint8_t *full_read(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t *b = malloc(f->size ? f->size : 1);

	if (b && dl_file_read(ctx, f, b, 0, f->size) != 0) {
		free(b);
		return NULL;
	}
	return b;
}

/* The npy header numpy writes for a dict text: growth room, pad, '\n'. */
static void expect_header(const char *dict, const char *first_axis, char *out, size_t *outlen)
{
	size_t n = strlen(dict), room = 21 - strlen(first_axis), hlen, pad;

	hlen = n + room + 1;
	pad = 64 - (10 + hlen) % 64;
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (char)((hlen + pad) & 0xff);
	out[9] = (char)((hlen + pad) >> 8);
	memcpy(out + 10, dict, n);
	memset(out + 10 + n, ' ', room + pad);
	out[10 + hlen + pad - 1] = '\n';
	*outlen = 10 + hlen + pad;
}

static void test_npy_header(void)
{
	uint8_t buf[DL_NPY_HDR_MAX];
	char want[DL_NPY_HDR_MAX];
	size_t wl, n;
	uint64_t s1[] = {12107, 12107, 1}, s2[] = {5}, s3[] = {224, 224, 3, 1000},
		 s4[] = {4400000000ULL}, s5[] = {1, 2, 3, 4, 5, 6, 7, 8, 18446744073709551615ULL};

	n = dl_npy_header(buf, DL_DT_UINT8, s1, 3);
	expect_header("{'descr': '|u1', 'fortran_order': False, 'shape': (12107, 12107, 1), }",
		      "12107", want, &wl);
	CHECK(n == 128 && wl == 128 && memcmp(buf, want, n) == 0, "unet3d header (%zu)", n);
	n = dl_npy_header(buf, DL_DT_INT64, s2, 1);
	expect_header("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }", "5", want, &wl);
	CHECK(n == 128 && memcmp(buf, want, n) == 0, "1-d header (%zu)", n);
	n = dl_npy_header(buf, DL_DT_FLOAT32, s3, 4);
	expect_header("{'descr': '<f4', 'fortran_order': False, 'shape': (224, 224, 3, 1000), }",
		      "224", want, &wl);
	CHECK(n == 128 && memcmp(buf, want, n) == 0, "4-d f4 header (%zu)", n);
	n = dl_npy_header(buf, DL_DT_FLOAT16, s4, 1);
	expect_header("{'descr': '<f2', 'fortran_order': False, 'shape': (4400000000,), }",
		      "4400000000", want, &wl);
	CHECK(n == 128 && memcmp(buf, want, n) == 0, "big 1-d header (%zu)", n);
	/* 9 axes with a 20-digit one: longer than 128, still 64-aligned. */
	n = dl_npy_header(buf, DL_DT_UINT16, s5, 9);
	CHECK(n > 128 && n % 64 == 0 && buf[n - 1] == '\n' && le16(buf + 8) == n - 10,
	      "9-d header (%zu)", n);
	CHECK(memmem(buf, n, "(1, 2, 3, 4, 5, 6, 7, 8, 18446744073709551615), }", 48) != NULL,
	      "9-d shape text");
}

/* docs/formats.md 4.1: d = 12107 uint8, one sample. */
static void test_unet3d(struct dl_fmt_ctx *ctx)
{
	struct dl_dataset ds = mkds("unet3d", DL_FMT_NPZ, DL_DT_UINT8, 1, 146579449, 0, 0, NULL);
	struct dl_file f;
	uint8_t head[200], tail[256], *buf, *chk;
	uint32_t cached = 0, crc_member = 0, cdcrc, lcrc;
	double t0, t1;
	uint64_t cdo, xs;
	int ret;

	ret = dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 3, 0, &f);
	CHECK(ret == 0, "init %d", ret);
	CHECK(f.ndims == 2 && f.dims[0] == 12107 && f.dims[1] == 12107, "shape %llu",
	      (unsigned long long)f.dims[0]);
	CHECK(f.sample_bytes == 146579449ULL, "sample bytes");
	CHECK(f.size == 146579947ULL, "unet3d npz size %llu", (unsigned long long)f.size);

	/* Data reads never touch a CRC field: no pass, nothing cached. */
	buf = malloc(1 << 20);
	chk = malloc(1 << 20);
	CHECK(dl_file_read(ctx, &f, head, 55, 145) == 0, "read header");
	CHECK(memcmp(head, "\x93NUMPY\x01\x00", 8) == 0 && le16(head + 8) == 118 &&
		  head[127] == '\n',
	      "x.npy header at 55");
	CHECK(dl_file_read(ctx, &f, buf, 183, 1 << 20) == 0, "read data");
	dl_npy_fill_data(&f, chk, 0, 1 << 20);
	CHECK(memcmp(buf, chk, 1 << 20) == 0, "x data starts at 183");
	xs = f.aux[1];
	CHECK(xs == 128 + 146579449ULL, "x.npy size");
	CHECK(dl_dcache_get(ctx, f.key, dl_npz_x_cache_key(&f), &cached) == -ENOENT,
	      "data read computed the CRC");
	CHECK(dl_file_read(ctx, &f, head + 20, 20, 30) == 0, "read past the CRC");
	CHECK(dl_dcache_get(ctx, f.key, dl_npz_x_cache_key(&f), &cached) == -ENOENT,
	      "header read without the CRC field computed it");

	/* First CRC pass: the tail holds the central CRC. */
	cdo = f.size - 22 - 2 * 51;
	t0 = now();
	CHECK(dl_file_read(ctx, &f, tail, cdo, f.size - cdo) == 0, "read tail");
	t1 = now();
	printf("# first CRC pass of a %.1f MB member: %.3f s, %.0f MB/s (PRNG %s)\n", xs / 1e6,
	       t1 - t0, xs / 1e6 / (t1 - t0), dl_prng_isa());
	CHECK(le32(tail) == 0x02014b50 && le32(tail + 51) == 0x02014b50, "central signatures");
	CHECK(le32(tail + 102) == 0x06054b50 && le32(tail + 102 + 16) == cdo &&
		  le32(tail + 102 + 12) == 102,
	      "eocd");
	cdcrc = le32(tail + 16);
	CHECK(dl_dcache_get(ctx, f.key, dl_npz_x_cache_key(&f), &cached) == 0 && cached == cdcrc,
	      "CRC cached");
	t0 = now();
	CHECK(dl_file_read(ctx, &f, tail, cdo, f.size - cdo) == 0, "read tail again");
	t1 = now();
	CHECK(t1 - t0 < 0.01, "cached tail read took %.3f s", t1 - t0);
	CHECK(dl_file_read(ctx, &f, head, 0, 55) == 0, "local header");
	lcrc = le32(head + 14);
	CHECK(lcrc == cdcrc, "local and central CRC agree");
	CHECK(le32(head + 18) == xs && le64(head + 39) == xs && le16(head + 4) == 20,
	      "local sizes");

	/* Independent CRC of the member, from ordinary reads. */
	for (uint64_t o = 55; o < 55 + xs; o += 1 << 20) {
		size_t n = 55 + xs - o < (1u << 20) ? (size_t)(55 + xs - o) : (1u << 20);
		dl_file_read(ctx, &f, buf, o, n);
		crc_member = (uint32_t)crc32(crc_member, buf, (uInt)n);
	}
	CHECK(crc_member == cdcrc, "central CRC %08x, member CRC %08x", cdcrc, crc_member);
	free(buf);
	free(chk);
}

/* Stored deflate stream size (docs/formats.md 1.6), written out independently. */
static uint64_t ds_len(uint64_t n) { return n + 5 * (n ? (n + 65534) / 65535 : 1); }

/* Independent ZIP arithmetic (docs/formats.md 4.1-4.3): members of X and Y
 * bytes, stored or (zip) as stored-block deflate streams. */
static uint64_t expect_zip_size(uint64_t X, uint64_t Y, int zip)
{
	uint64_t cx = zip ? ds_len(X) : X, cy = zip ? ds_len(Y) : Y;
	uint64_t ly = 55 + cx, cdo = 110 + cx + cy, cds, n;
	unsigned ex = cx > LIM ? 2 : 0, ey = (cy > LIM ? 2 : 0) + (ly > LIM ? 1 : 0);

	cds = 51 + (ex ? 4 + 8 * ex : 0) + 51 + (ey ? 4 + 8 * ey : 0);
	n = cdo + cds + 22;
	if (cdo > LIM || cds > LIM)
		n += 76;
	return n;
}

static uint64_t expect_npz_size(uint64_t X, uint64_t Y) { return expect_zip_size(X, Y, 0); }

static void test_zip64(struct dl_fmt_ctx *ctx)
{
	uint64_t dims[1] = {2300000000ULL};
	struct dl_dataset ds = mkds("big", DL_FMT_NPZ, DL_DT_UINT8, 1, 0, 0, 1, dims);
	struct dl_file f;
	uint8_t t[256];
	uint64_t X, Y, cdo;
	int ret;

	ret = dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
	CHECK(ret == 0, "init %d", ret);
	X = 128 + 2300000000ULL;
	Y = 128 + 8;
	CHECK(f.size == X + Y + 342, "2.3 GB member: overhead %lld", (long long)(f.size - X - Y));
	cdo = 110 + X + Y;
	/* Everything but the CRC fields, which would cost a 2.3 GB pass here. */
	CHECK(dl_file_read(ctx, &f, t, 0, 14) == 0 && le16(t + 4) == 45, "local x version 45");
	CHECK(dl_file_read(ctx, &f, t, 18, 37) == 0 && le32(t) == 0xffffffff &&
		  le32(t + 4) == 0xffffffff && le16(t + 10) == 20 && le16(t + 17) == 1 &&
		  le16(t + 19) == 16 && le64(t + 21) == X && le64(t + 29) == X,
	      "local x ZIP64 extra");
	CHECK(dl_file_read(ctx, &f, t, 55 + X, 14) == 0 && le32(t) == 0x04034b50 &&
		  le16(t + 4) == 20,
	      "local y");
	CHECK(dl_file_read(ctx, &f, t, cdo, 16) == 0 && le32(t) == 0x02014b50 &&
		  le16(t + 4) == 0x032d && le16(t + 6) == 45,
	      "central x versions");
	CHECK(dl_file_read(ctx, &f, t, cdo + 20, 51) == 0 && le32(t) == 0xffffffff &&
		  le16(t + 10) == 20 && le32(t + 22) == 0 && le16(t + 31) == 1 &&
		  le16(t + 33) == 16 && le64(t + 35) == X && le64(t + 43) == X,
	      "central x ZIP64 extra");
	CHECK(dl_file_read(ctx, &f, t, cdo + 71, 16) == 0 && le32(t) == 0x02014b50 &&
		  le16(t + 4) == 0x032d,
	      "central y");
	CHECK(dl_file_read(ctx, &f, t, cdo + 71 + 20, 43) == 0 && le32(t) == Y &&
		  le16(t + 10) == 12 && le32(t + 22) == 0xffffffff && le16(t + 31) == 1 &&
		  le16(t + 33) == 8 && le64(t + 35) == 55 + X,
	      "central y offset extra");
	CHECK(dl_file_read(ctx, &f, t, cdo + 134, 98) == 0, "read ZIP64 end");
	CHECK(le32(t) == 0x06064b50 && le64(t + 4) == 44 && le16(t + 12) == 45 &&
		  le16(t + 14) == 45 && le64(t + 24) == 2 && le64(t + 32) == 2 &&
		  le64(t + 40) == 134 && le64(t + 48) == cdo,
	      "ZIP64 end record");
	CHECK(le32(t + 56) == 0x07064b50 && le32(t + 60) == 0 && le64(t + 64) == cdo + 134 &&
		  le32(t + 72) == 1,
	      "ZIP64 locator");
	CHECK(le32(t + 76) == 0x06054b50 && le16(t + 84) == 2 && le32(t + 88) == 134 &&
		  le32(t + 92) == cdo,
	      "EOCD after ZIP64 (real offset: below 2^32)");

	/* Sizes around the switch: member, y offset, directory offset. */
	static const uint64_t xd[] = {LIM - 128 - 300, LIM - 128 - 200,	 LIM - 128 - 110,
				      LIM - 128 - 55,  LIM - 128 - 54,	 LIM - 128,
				      LIM - 127,       LIM - 128 + 1000, 4300000000ULL};
	for (unsigned i = 0; i < sizeof(xd) / sizeof(xd[0]); i++) {
		for (uint64_t s = 1; s <= 3; s++) {
			uint64_t d1[1] = {xd[i]};
			struct dl_dataset d2 =
			    mkds("edge", DL_FMT_NPZ, DL_DT_UINT8, s, 0, 0, 1, d1);
			ret = dl_file_init(ctx, &d2, DL_SPLIT_TRAIN, 0, 0, &f);
			X = 128 + xd[i] * s;
			Y = 128 + 8 * s;
			CHECK(ret == 0 && f.size == expect_npz_size(X, Y),
			      "x %llu s %llu: size %llu want %llu", (unsigned long long)xd[i],
			      (unsigned long long)s, (unsigned long long)f.size,
			      (unsigned long long)expect_npz_size(X, Y));
			/* The EOCD's directory offset and size agree with that layout. */
			CHECK(dl_file_read(ctx, &f, t, f.size - 22, 22) == 0 &&
				  le32(t) == 0x06054b50,
			      "eocd");
			uint64_t want_cdo = 110 + X + Y;
			CHECK(le32(t + 16) ==
				  (want_cdo > 0xffffffffULL ? 0xffffffffu : (uint32_t)want_cdo),
			      "eocd cd offset");
		}
	}
}

/* Raw inflate (no zlib header, window -15) of exactly `clen` bytes into a
 * new buffer of `ulen` bytes; NULL unless the stream ends exactly there. */
static uint8_t *inflate_raw(const uint8_t *in, uint64_t clen, uint64_t ulen)
{
	uint8_t *out = malloc(ulen + 1);
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (!out || inflateInit2(&z, -15) != Z_OK)
		abort();
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)clen;
	z.next_out = out;
	z.avail_out = (uInt)(ulen + 1);
	rc = inflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END || z.total_in != clen || z.total_out != ulen) {
		fprintf(stderr, "inflate: rc %d, in %lu of %llu, out %lu of %llu\n", rc, z.total_in,
			(unsigned long long)clen, z.total_out, (unsigned long long)ulen);
		free(out);
		out = NULL;
	}
	inflateEnd(&z);
	return out;
}

/* np.savez_compressed layout with stored blocks: block edges of x.npy
 * (X = 65535: one full block; 65536: a 1-byte last block; 131070: two full
 * blocks), each block header read back, the headers' method and sizes, and
 * what zlib inflates. */
static void test_zip_blocks(struct dl_fmt_ctx *ctx)
{
	static const uint64_t xs[] = {65535, 65536, 131070, 131071, 1000000};

	for (unsigned i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
		uint64_t d1[1] = {xs[i] - 128};
		struct dl_dataset ds = mkds("blk", DL_FMT_NPZ, DL_DT_UINT8, 1, 0, 0, 1, d1);
		struct dl_dataset twin = ds;
		struct dl_file f, ft;
		uint64_t X = xs[i], cx = ds_len(X), nb = (X + 65534) / 65535, bad_hdr = 0;
		uint8_t *b, *t, *x;

		ds.compression = DL_COMP_ZIP;
		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 1, 0, &f) == 0 &&
			  dl_file_init(ctx, &twin, DL_SPLIT_TRAIN, 1, 0, &ft) == 0,
		      "init");
		CHECK(f.aux[1] == X, "x.npy size %llu", (unsigned long long)f.aux[1]);
		CHECK(f.size == ft.size + (cx - X) + (ds_len(136) - 136),
		      "X %llu: zip size %llu, stored %llu", (unsigned long long)X,
		      (unsigned long long)f.size, (unsigned long long)ft.size);
		b = full_read(ctx, &f);
		t = full_read(ctx, &ft);
		/* Local x: method 8, CRC of the uncompressed member, both sizes. */
		CHECK(le16(b + 4) == 20 && le16(b + 6) == 0 && le16(b + 8) == 8 &&
			  le32(b + 14) == le32(t + 14) && le32(b + 18) == cx && le32(b + 22) == X &&
			  le16(b + 28) == 20 && le64(b + 39) == X && le64(b + 47) == cx,
		      "local x header");
		for (uint64_t j = 0; j < nb; j++) {
			const uint8_t *h = b + 55 + j * 65540;
			uint64_t blen = j + 1 < nb ? 65535 : X - j * 65535;
			if (h[0] != (j + 1 == nb) || le16(h + 1) != blen ||
			    le16(h + 3) != (uint16_t)~blen ||
			    memcmp(h + 5, t + 55 + j * 65535, blen) != 0)
				bad_hdr++;
		}
		CHECK(bad_hdr == 0, "X %llu: %llu bad blocks of %llu", (unsigned long long)X,
		      (unsigned long long)bad_hdr, (unsigned long long)nb);
		x = inflate_raw(b + 55, cx, X);
		CHECK(x && memcmp(x, t + 55, X) == 0, "inflate x.npy equals the stored member");
		/* y follows: local header at 55 + cx, one block of 136 bytes. */
		CHECK(le32(b + 55 + cx) == 0x04034b50 && le16(b + 55 + cx + 8) == 8 &&
			  le32(b + 55 + cx + 18) == 141 && le32(b + 55 + cx + 22) == 136 &&
			  le32(b + 55 + cx + 14) == le32(t + 55 + X + 14),
		      "local y");
		CHECK(memcmp(b + 110 + cx, "\x01\x88\x00\x77\xff", 5) == 0, "y block header");
		/* Central x: method 8, sizes, made by 0x0314. */
		{
			const uint8_t *c = b + 110 + cx + 141;
			CHECK(le32(c) == 0x02014b50 && le16(c + 4) == 0x0314 && le16(c + 6) == 20 &&
				  le16(c + 10) == 8 && le32(c + 20) == cx && le32(c + 24) == X &&
				  le16(c + 30) == 0 && le32(c + 42) == 0 &&
				  le32(c + 16) == le32(b + 14),
			      "central x");
			c += 51;
			CHECK(le16(c + 10) == 8 && le32(c + 20) == 141 && le32(c + 24) == 136 &&
				  le32(c + 42) == 55 + cx,
			      "central y");
		}
		free(x);
		free(b);
		free(t);
	}
}

/* The unet3d file compressed: data reads leave the CRC alone, the first
 * directory read computes it once (the same value as the stored variant's). */
static void test_unet3d_zip(void)
{
	struct dl_dataset ds = mkds("unet3d", DL_FMT_NPZ, DL_DT_UINT8, 1, 146579449, 0, 0, NULL);
	struct dl_dataset twin = ds;
	struct dl_fmt_ctx *ctx, *c2;
	struct dl_file f, ft;
	uint8_t *buf = malloc(1 << 20), tail[256], want[1 << 10];
	uint64_t X = 128 + 146579449ULL, cx = ds_len(X), cdo;
	uint32_t cached;
	double t0, t1;

	ds.compression = DL_COMP_ZIP;
	CHECK(dl_fmt_ctx_new(0, 0, &ctx) == 0 && dl_fmt_ctx_new(0, 0, &c2) == 0, "ctx");
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 3, 0, &f) == 0 &&
		  dl_file_init(c2, &twin, DL_SPLIT_TRAIN, 3, 0, &ft) == 0,
	      "init");
	CHECK(f.size == 146579947ULL + (cx - X) + 5, "unet3d zip size %llu",
	      (unsigned long long)f.size);
	/* 1 MiB in the middle of x: block headers at 55 + 65540 j. */
	CHECK(dl_file_read(ctx, &f, buf, 55 + 1000 * 65540ULL, 1 << 20) == 0, "read data");
	CHECK(buf[0] == 0 && le16(buf + 1) == 65535 && le16(buf + 3) == 0, "block 1000 header");
	CHECK(dl_file_read(c2, &ft, want, 55 + 1000 * 65535ULL, sizeof(want)) == 0 &&
		  memcmp(buf + 5, want, sizeof(want)) == 0,
	      "block 1000 holds raw bytes 1000 * 65535 on");
	CHECK(dl_file_read(ctx, &f, buf, 0, 14) == 0 && dl_file_read(ctx, &f, buf, 18, 1000) == 0,
	      "headers around the CRC");
	CHECK(dl_dcache_get(ctx, f.key, dl_npz_x_cache_key(&f), &cached) == -ENOENT,
	      "data reads computed the CRC");
	cdo = 110 + cx + 141;
	CHECK(f.size - cdo == 2 * 51 + 22, "tail length");
	t0 = now();
	CHECK(dl_file_read(ctx, &f, tail, cdo, f.size - cdo) == 0, "read tail");
	t1 = now();
	printf("# first CRC of the %.1f MB member, compressed variant: %.3f s\n", X / 1e6, t1 - t0);
	CHECK(dl_dcache_get(ctx, f.key, dl_npz_x_cache_key(&f), &cached) == 0 &&
		  cached == le32(tail + 16),
	      "CRC cached");
	CHECK(dl_file_read(c2, &ft, want, ft.size - 22 - 102, 102) == 0 &&
		  le32(want + 16) == le32(tail + 16) &&
		  le32(want + 51 + 16) == le32(tail + 51 + 16),
	      "CRCs equal the stored variant's");
	CHECK(le32(tail + 20) == cx && le32(tail + 24) == X && le16(tail + 10) == 8, "central x");
	free(buf);
	dl_fmt_ctx_free(ctx);
	dl_fmt_ctx_free(c2);
}

/* ZIP64 with compressed members: no CRC field is read (each would cost a
 * multi-GB pass), so this checks the structure; zipfile reads one of these
 * in test_gen_npz.py through --serve. */
static void test_zip64_compressed(struct dl_fmt_ctx *ctx)
{
	/* X <= 2^31 - 1 < its compressed size: zipfile treats the member as
	 * ZIP64 (either size over the limit), and y's offset is over it too. */
	uint64_t band = LIM - 1000, big = 2300000000ULL;
	uint64_t d1[1] = {band - 128}, d2[1] = {big - 128};
	struct dl_dataset a = mkds("zband", DL_FMT_NPZ, DL_DT_UINT8, 1, 0, 0, 1, d1);
	struct dl_dataset b = mkds("zbig", DL_FMT_NPZ, DL_DT_UINT8, 1, 0, 0, 1, d2);
	struct dl_file f;
	uint8_t t[256];
	uint64_t X, cx, cdo, nb;

	a.compression = b.compression = DL_COMP_ZIP;
	CHECK(dl_file_init(ctx, &a, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "init band");
	X = band;
	cx = ds_len(X);
	CHECK(X <= LIM && cx > LIM, "the band case");
	CHECK(f.size == expect_zip_size(X, 136, 1), "band size");
	cdo = 110 + cx + 141;
	CHECK(f.size == cdo + 71 + 63 + 56 + 20 + 22,
	      "band: 20 and 12 byte central extras, ZIP64 end");
	CHECK(dl_file_read(ctx, &f, t, 0, 14) == 0 && le16(t + 4) == 45 && le16(t + 8) == 8,
	      "local x: version 45, deflated");
	CHECK(dl_file_read(ctx, &f, t, 18, 37) == 0 && le32(t) == 0xffffffff &&
		  le32(t + 4) == 0xffffffff && le64(t + 21) == X && le64(t + 29) == cx,
	      "local x: sizes in the ZIP64 extra");
	CHECK(dl_file_read(ctx, &f, t, cdo, 16) == 0 && le16(t + 4) == 0x032d && le16(t + 10) == 8,
	      "central x");
	CHECK(dl_file_read(ctx, &f, t, cdo + 20, 51) == 0 && le32(t) == 0xffffffff &&
		  le32(t + 4) == 0xffffffff && le16(t + 10) == 20 && le64(t + 35) == X &&
		  le64(t + 43) == cx,
	      "central x extra: uncompressed, compressed");
	CHECK(dl_file_read(ctx, &f, t, cdo + 71 + 20, 51) == 0 && le32(t) == 141 &&
		  le32(t + 4) == 136 && le16(t + 10) == 12 && le32(t + 22) == 0xffffffff &&
		  le64(t + 35) == 55 + cx,
	      "central y: small sizes, offset extra");
	/* Last block of x: BFINAL, the remainder. */
	nb = (X + 65534) / 65535;
	CHECK(dl_file_read(ctx, &f, t, 55 + (nb - 1) * 65540, 5) == 0 && t[0] == 1 &&
		  le16(t + 1) == X - (nb - 1) * 65535 && (le16(t + 3) ^ le16(t + 1)) == 0xffff,
	      "last block header of x");
	CHECK(dl_file_read(ctx, &f, t, 55 + (nb - 2) * 65540, 5) == 0 && t[0] == 0 &&
		  le16(t + 1) == 65535 && le16(t + 3) == 0,
	      "second to last block header of x");

	CHECK(dl_file_init(ctx, &b, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "init big");
	X = big;
	cx = ds_len(X);
	cdo = 110 + cx + 141;
	CHECK(f.size == expect_zip_size(X, 136, 1) && f.size == X + 136 + (cx - X) + 5 + 342,
	      "2.3 GB deflated member: size %llu", (unsigned long long)f.size);
	CHECK(dl_file_read(ctx, &f, t, cdo + 134, 98) == 0 && le32(t) == 0x06064b50 &&
		  le64(t + 40) == 134 && le64(t + 48) == cdo && le32(t + 56) == 0x07064b50 &&
		  le64(t + 64) == cdo + 134 && le32(t + 76) == 0x06054b50 && le32(t + 92) == cdo,
	      "ZIP64 end records");

	/* Sizes across the switches, compressed. */
	static const uint64_t xd[] = {LIM - 128 - 33000 * 5 - 300,
				      LIM - 128 - 32769 * 5,
				      LIM - 128 - 32768 * 5,
				      LIM - 128 - 32768 * 5 + 1,
				      LIM - 128 - 2000,
				      LIM - 127,
				      4300000000ULL};
	for (unsigned i = 0; i < sizeof(xd) / sizeof(xd[0]); i++) {
		for (uint64_t s = 1; s <= 2; s++) {
			uint64_t dd[1] = {xd[i]};
			struct dl_dataset d =
			    mkds("zedge", DL_FMT_NPZ, DL_DT_UINT8, s, 0, 0, 1, dd);
			uint64_t want;
			d.compression = DL_COMP_ZIP;
			CHECK(dl_file_init(ctx, &d, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "init edge");
			X = 128 + xd[i] * s;
			want = expect_zip_size(X, 128 + 8 * s, 1);
			CHECK(f.size == want, "zip x %llu s %llu: size %llu want %llu",
			      (unsigned long long)xd[i], (unsigned long long)s,
			      (unsigned long long)f.size, (unsigned long long)want);
			CHECK(dl_file_read(ctx, &f, t, f.size - 22, 22) == 0 &&
				  le32(t) == 0x06054b50,
			      "eocd");
			cdo = 110 + ds_len(X) + ds_len(128 + 8 * s);
			CHECK(le32(t + 16) == (cdo > 0xffffffffULL ? 0xffffffffu : (uint32_t)cdo),
			      "eocd cd offset");
		}
	}
}

/* Walk the archive from its EOCD as zipfile would (no ZIP64 here), check
 * every CRC, method `method` in both headers, the sizes, and return the
 * uncompressed members (caller frees). Returns the number of problems, -1 when
 * the structure is unreadable. */
static int check_zip(const uint8_t *b, uint64_t size, unsigned method, uint8_t *member[2],
		     uint64_t mlen[2])
{
	const uint8_t *e = b + size - 22;
	uint64_t cdo = le32(e + 16), p;
	int bad = 0;

	member[0] = member[1] = NULL;
	if (le32(e) != 0x06054b50 || le16(e + 10) != 2)
		return -1;
	p = cdo;
	for (int i = 0; i < 2; i++) {
		const uint8_t *c = b + p;
		uint32_t crc = le32(c + 16), csize = le32(c + 20), usize = le32(c + 24);
		uint64_t lh = le32(c + 42), data;
		if (le32(c) != 0x02014b50 || le32(b + lh) != 0x04034b50)
			return -1;
		data = lh + 30 + le16(b + lh + 26) + le16(b + lh + 28);
		if (le32(b + lh + 14) != crc || le32(b + lh + 18) != csize ||
		    le32(b + lh + 22) != usize || le64(b + lh + 39) != usize ||
		    le64(b + lh + 47) != csize)
			bad++;
		if (le16(c + 10) != method || le16(b + lh + 8) != method)
			bad++;
		if (csize != (method ? ds_len(usize) : usize) || data + csize > size)
			return -1;
		if (method) {
			member[i] = inflate_raw(b + data, csize, usize);
			if (!member[i])
				return -1;
		} else {
			member[i] = malloc(usize + 1);
			memcpy(member[i], b + data, usize);
		}
		mlen[i] = usize;
		if ((uint32_t)crc32(0, member[i], usize) != crc)
			bad++;
		if (memcmp(c + 46, i ? "y.npy" : "x.npy", 5) != 0)
			bad++;
		p += 46 + le16(c + 28) + le16(c + 30);
	}
	return bad;
}

/* Float data is in [0, 1) (checked on the bits) and not degenerate. */
static void check_floats(const struct dl_file *f, const uint8_t *d, uint64_t n)
{
	unsigned bad = 0;
	double sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		if (f->ds->dtype == DL_DT_FLOAT16) {
			uint16_t h = le16(d + 2 * i);
			bad += h >= 0x3c00;
			sum += h ? (double)(1024 + (h & 0x3ff)) * ldexp(1, (h >> 10) - 25) : 0;
		} else if (f->ds->dtype == DL_DT_FLOAT32) {
			float v;
			memcpy(&v, d + 4 * i, 4);
			bad += !(v >= 0.0f && v < 1.0f);
			sum += v;
		} else {
			double v;
			memcpy(&v, d + 8 * i, 8);
			bad += !(v >= 0.0 && v < 1.0);
			sum += v;
		}
	}
	CHECK(bad == 0, "%u of %llu floats out of [0, 1)", bad, (unsigned long long)n);
	CHECK(n < 1000 || (sum / n > 0.47 && sum / n < 0.53), "float mean %.4f", sum / n);
}

/* Every dtype, fixed and drawn shapes: sizes, 300 random slices against one
 * full read, and (npz) the archive walked and its members checked. With zip
 * the members are inflated and must equal those of the stored twin (same
 * dataset, compression none). */
static void test_slices(struct dl_fmt_ctx *ctx, enum dl_format fmt, enum dl_compression comp)
{
	uint64_t prng = 0x5eed0000 + fmt + 16 * comp;
	unsigned bad_slices = 0, bad_zip = 0, nfiles = 0, bad_shape = 0, bad_twin = 0;
	const int zip = comp == DL_COMP_ZIP;

	for (int dt = 0; dt < DL_DT__COUNT; dt++) {
		for (int v = 0; v < 4; v++) {
			uint64_t dims[3] = {3, 5, 7}, big[1] = {65535 - 128 + 1};
			struct dl_dataset ds = v == 0	? mkds("a", fmt, dt, 1, 20000, 0, 0, NULL)
					       : v == 1 ? mkds("bb", fmt, dt, 5, 0, 0, 3, dims)
					       : v == 2
						   ? mkds("ccc", fmt, dt, 3, 3000, 1500, 0, NULL)
						   : mkds("dddd", fmt, dt, 2, 0, 0, 1, big);
			struct dl_dataset twin = ds;
			ds.compression = comp;
			for (uint64_t idx = 0; idx < 2; idx++) {
				struct dl_file f, ft;
				uint8_t *full, *part, *m[2] = {NULL, NULL}, *mt[2] = {NULL, NULL};
				uint64_t isz = dl_dtype_size(dt), hl, want, ml[2], mtl[2];
				uint32_t split = idx ? DL_SPLIT_VALID : DL_SPLIT_TRAIN;
				if (dl_file_init(ctx, &ds, split, idx, 0, &f) != 0 ||
				    dl_file_init(ctx, &twin, split, idx, 0, &ft) != 0) {
					bad_shape++;
					continue;
				}
				nfiles++;
				if (v == 0 && !(f.dims[0] == f.dims[1] &&
						f.dims[0] == (uint64_t)sqrt(20000.0 / isz)))
					bad_shape++;
				if (v == 2 && f.sample_bytes != f.dims[0] * f.dims[1] * isz)
					bad_shape++;
				want = f.sample_bytes * f.samples;
				hl = 128;
				if (fmt == DL_FMT_NPY && f.size != hl + want)
					bad_shape++;
				if (fmt == DL_FMT_NPZ &&
				    f.size != expect_zip_size(hl + want, hl + 8 * f.samples, zip))
					bad_shape++;
				full = full_read(ctx, &f);
				part = malloc(f.size);
				if (!full || !part)
					abort();
				for (int r = 0; r < 300; r++) {
					uint64_t a = dl_prng_below(prng, 2 * r, f.size);
					uint64_t l = dl_prng_below(prng, 2 * r + 1,
								   r % 3 ? 64 : f.size - a) +
						     1;
					if (a + l > f.size)
						l = f.size - a;
					memset(part, 0xa5, l);
					if (dl_file_read(ctx, &f, part, a, l) != 0 ||
					    memcmp(part, full + a, l) != 0)
						bad_slices++;
				}
				prng = dl_key2(prng, 1);
				if (fmt == DL_FMT_NPZ) {
					uint8_t *tf = full_read(ctx, &ft);
					if (check_zip(full, f.size, zip ? 8 : 0, m, ml) != 0 ||
					    check_zip(tf, ft.size, 0, mt, mtl) != 0) {
						fprintf(stderr, "bad zip: dtype %d variant %d\n",
							dt, v);
						bad_zip++;
					} else if (ml[0] != mtl[0] || ml[1] != mtl[1] ||
						   memcmp(m[0], mt[0], ml[0]) != 0 ||
						   memcmp(m[1], mt[1], ml[1]) != 0) {
						bad_twin++;
					}
					free(tf);
				}
				if (dt >= DL_DT_FLOAT16 && (fmt == DL_FMT_NPY || m[0]))
					check_floats(&f, (fmt == DL_FMT_NPZ ? m[0] : full) + hl,
						     want / isz);
				for (int i = 0; i < 2; i++) {
					free(m[i]);
					free(mt[i]);
				}
				free(full);
				free(part);
			}
		}
	}
	CHECK(nfiles == 88, "%u files", nfiles);
	CHECK(bad_shape == 0, "%s%s: %u files with unexpected shapes or sizes", dl_format_name(fmt),
	      zip ? "+zip" : "", bad_shape);
	CHECK(bad_slices == 0, "%s%s: %u slices differ from the full read", dl_format_name(fmt),
	      zip ? "+zip" : "", bad_slices);
	CHECK(bad_zip == 0, "%u npz files with wrong CRCs, sizes, methods or names", bad_zip);
	CHECK(bad_twin == 0, "%u npz files whose members differ from the stored twin", bad_twin);
}

/* Same key, same bytes; npz's x data equals npy's; files differ. */
static void test_identity(void)
{
	const uint64_t seed = 42;
	struct dl_fmt_ctx *c1, *c2;
	struct dl_dataset a = mkds("id", DL_FMT_NPY, DL_DT_INT32, 2, 4096, 0, 0, NULL);
	struct dl_dataset b = a;
	struct dl_file f1, f2, f3, fz;
	uint8_t x1[600], x2[600], x3[600];

	b.format = DL_FMT_NPZ;
	CHECK(dl_fmt_ctx_new(seed, 0, &c1) == 0 && dl_fmt_ctx_new(seed, 16, &c2) == 0, "ctx");
	dl_file_init(c1, &a, DL_SPLIT_TRAIN, 5, 0, &f1);
	dl_file_init(c2, &a, DL_SPLIT_TRAIN, 5, 0, &f2);
	dl_file_init(c2, &a, DL_SPLIT_TRAIN, 6, 0, &f3);
	dl_file_init(c2, &b, DL_SPLIT_TRAIN, 5, 0, &fz);
	dl_file_read(c1, &f1, x1, 128, sizeof(x1));
	dl_file_read(c2, &f2, x2, 128, sizeof(x2));
	dl_file_read(c2, &f3, x3, 128, sizeof(x3));
	CHECK(memcmp(x1, x2, sizeof(x1)) == 0, "same file, same bytes");
	CHECK(memcmp(x1, x3, sizeof(x1)) != 0, "different files, different bytes");
	dl_file_read(c2, &fz, x3, 183, sizeof(x3));
	CHECK(memcmp(x1, x3, sizeof(x1)) == 0, "npz x data equals npy data");
	CHECK(dl_file_init(c1, &a, DL_SPLIT_TRAIN, 16, 0, &f1) == -ENOENT, "index range");
	CHECK(dl_file_init(c1, &a, DL_SPLIT_TRAIN, 0, 1, &f1) == -ENOENT, "part range");
	dl_fmt_ctx_free(c1);
	dl_fmt_ctx_free(c2);
}

/* The float path must stay close to the raw generator. Rounds interleave the
 * dtypes and keep the best time of each, so a busy machine (tests run in
 * parallel) slows all of them alike; the bound is loose on purpose. */
static void test_float_speed(struct dl_fmt_ctx *ctx)
{
	struct dl_dataset du = mkds("su", DL_FMT_NPY, DL_DT_UINT8, 1, 64 << 20, 0, 0, NULL);
	struct dl_dataset df = mkds("sf", DL_FMT_NPY, DL_DT_FLOAT32, 1, 64 << 20, 0, 0, NULL);
	struct dl_dataset dh = mkds("sh", DL_FMT_NPY, DL_DT_FLOAT16, 1, 64 << 20, 0, 0, NULL);
	struct dl_dataset dd = mkds("sd", DL_FMT_NPY, DL_DT_FLOAT64, 1, 64 << 20, 0, 0, NULL);
	const struct dl_dataset *all[] = {&du, &df, &dh, &dd};
	const char *names[] = {"uint8", "float32", "float16", "float64"};
	size_t len = 4u << 20;
	uint8_t *b = malloc(len);
	struct dl_file f[4];
	double best[4] = {1e9, 1e9, 1e9, 1e9};

	for (int i = 0; i < 4; i++)
		dl_file_init(ctx, all[i], DL_SPLIT_TRAIN, 0, 0, &f[i]);
	memset(b, 0, len);
	for (int r = 0; r < 9; r++) {
		for (int i = 0; i < 4; i++) {
			double t0 = now();
			dl_file_read(ctx, &f[i], b, 128 + (uint64_t)r * len, len);
			double t = now() - t0;
			best[i] = t < best[i] ? t : best[i];
		}
	}
	for (int i = 0; i < 4; i++)
		printf("# fill %-7s %6.0f MB/s\n", names[i], len / 1e6 / best[i]);
	for (int i = 1; i < 4; i++)
		CHECK(best[i] < 8 * best[0], "%s fill %.0f MB/s vs raw %.0f MB/s", names[i],
		      len / 1e6 / best[i], len / 1e6 / best[0]);
	free(b);
}

static int serve(int argc, char **argv)
{
	struct dl_dataset ds;
	struct dl_fmt_ctx *ctx;
	struct dl_file f;
	uint64_t dims[DL_MAX_DIMS];
	enum dl_format fmt;
	enum dl_dtype dt;
	unsigned long long off, len;
	unsigned nd = (unsigned)(argc - 5);
	uint8_t *buf = NULL;
	char *plus = argc > 2 ? strchr(argv[2], '+') : NULL;
	int zip = 0;

	if (plus) {
		*plus = '\0';
		zip = strcmp(plus + 1, "zip") == 0;
		if (!zip)
			return 2;
	}
	if (argc < 6 || nd > DL_MAX_DIMS || dl_format_from_name(argv[2], &fmt) ||
	    dl_dtype_from_name(argv[3], &dt))
		return 2;
	for (unsigned i = 0; i < nd; i++)
		dims[i] = strtoull(argv[5 + i], NULL, 10);
	ds = mkds("serve", fmt, dt, strtoull(argv[4], NULL, 10), 0, 0, nd, dims);
	ds.compression = zip ? DL_COMP_ZIP : DL_COMP_NONE;
	if (dl_fmt_ctx_new(0, 0, &ctx) || dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f))
		return 1;
	printf("%llu\n", (unsigned long long)f.size);
	fflush(stdout);
	while (scanf("%llu %llu", &off, &len) == 2) {
		if (off > f.size)
			off = f.size;
		if (len > f.size - off)
			len = f.size - off;
		buf = realloc(buf, len ? len : 1);
		if (!buf || dl_file_read(ctx, &f, buf, off, len) != 0)
			return 1;
		fwrite(buf, 1, len, stdout);
		fflush(stdout);
	}
	free(buf);
	dl_fmt_ctx_free(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	struct dl_fmt_ctx *ctx;

	if (argc > 1 && strcmp(argv[1], "--serve") == 0)
		return serve(argc, argv);
	if (dl_fmt_ctx_new(0, 0, &ctx) != 0)
		return 1;
	test_npy_header();
	test_identity();
	test_slices(ctx, DL_FMT_NPY, DL_COMP_NONE);
	test_slices(ctx, DL_FMT_NPZ, DL_COMP_NONE);
	test_slices(ctx, DL_FMT_NPZ, DL_COMP_ZIP);
	test_zip64(ctx);
	test_zip_blocks(ctx);
	test_zip64_compressed(ctx);
	test_unet3d(ctx);
	test_unet3d_zip();
	test_float_speed(ctx);
	dl_fmt_ctx_free(ctx);
	printf("npy_npz: %d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
