/* NPY / NPZ layouts: numpy's header and ZIP arithmetic (formats.md 3, 4),
 * slice reads against full reads, CRC-32 fields against zlib, float ranges.
 *
 * `test_npy_npz --serve FORMAT DTYPE SAMPLES DIM...` prints the file size and
 * then answers "OFF LEN" lines on stdin with those raw bytes on stdout: the
 * Python test uses it to let zipfile/numpy read multi-GB ZIP64 files without
 * writing them out. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "dliofs/config.h"
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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

/* formats.md 4.1: d = 12107 uint8, one sample. */
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

/* Independent ZIP arithmetic (formats.md 4.1, 4.2). */
static uint64_t expect_npz_size(uint64_t X, uint64_t Y)
{
	uint64_t ly = 55 + X, cdo = 110 + X + Y, cds, n;
	unsigned ex = X > LIM ? 2 : 0, ey = (Y > LIM ? 2 : 0) + (ly > LIM ? 1 : 0);

	cds = 51 + (ex ? 4 + 8 * ex : 0) + 51 + (ey ? 4 + 8 * ey : 0);
	n = cdo + cds + 22;
	if (cdo > LIM || cds > LIM)
		n += 76;
	return n;
}

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

/* Walk the archive from its EOCD as zipfile would and check every CRC. */
static int check_zip(const uint8_t *b, uint64_t size)
{
	const uint8_t *e = b + size - 22;
	uint64_t cdo = le32(e + 16), p;
	int bad = 0;

	if (le32(e) != 0x06054b50 || le16(e + 10) != 2)
		return -1;
	p = cdo;
	for (int i = 0; i < 2; i++) {
		const uint8_t *c = b + p;
		uint32_t crc = le32(c + 16), usize = le32(c + 24);
		uint64_t lh = le32(c + 42), data;
		if (le32(c) != 0x02014b50 || le32(b + lh) != 0x04034b50)
			return -1;
		data = lh + 30 + le16(b + lh + 26) + le16(b + lh + 28);
		if (le32(b + lh + 14) != crc)
			bad++;
		if ((uint32_t)crc32(0, b + data, usize) != crc)
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

static void test_slices(struct dl_fmt_ctx *ctx, enum dl_format fmt)
{
	uint64_t prng = 0x5eed0000 + fmt;
	unsigned bad_slices = 0, bad_zip = 0, nfiles = 0, bad_shape = 0;

	for (int dt = 0; dt < DL_DT__COUNT; dt++) {
		for (int v = 0; v < 3; v++) {
			uint64_t dims[3] = {3, 5, 7};
			struct dl_dataset ds = v == 0 ? mkds("a", fmt, dt, 1, 20000, 0, 0, NULL)
					       : v == 1
						   ? mkds("bb", fmt, dt, 5, 0, 0, 3, dims)
						   : mkds("ccc", fmt, dt, 3, 3000, 1500, 0, NULL);
			for (uint64_t idx = 0; idx < 2; idx++) {
				struct dl_file f;
				uint8_t *full, *part;
				uint64_t isz = dl_dtype_size(dt), hl, want;
				if (dl_file_init(ctx, &ds, idx ? DL_SPLIT_VALID : DL_SPLIT_TRAIN,
						 idx, 0, &f) != 0) {
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
				    f.size != expect_npz_size(hl + want, hl + 8 * f.samples))
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
					if (check_zip(full, f.size) != 0) {
						fprintf(stderr, "bad zip: dtype %d variant %d\n",
							dt, v);
						bad_zip++;
					}
				}
				if (dt >= DL_DT_FLOAT16)
					check_floats(&f, full + (fmt == DL_FMT_NPZ ? 55 : 0) + hl,
						     want / isz);
				free(full);
				free(part);
			}
		}
	}
	CHECK(nfiles == 66, "%u files", nfiles);
	CHECK(bad_shape == 0, "%s: %u files with unexpected shapes or sizes", dl_format_name(fmt),
	      bad_shape);
	CHECK(bad_slices == 0, "%s: %u slices differ from the full read", dl_format_name(fmt),
	      bad_slices);
	CHECK(bad_zip == 0, "%u npz files with wrong CRCs or names", bad_zip);
}

/* Same key, same bytes; npz's x data equals npy's; files differ. */
static void test_identity(void)
{
	struct dl_config cfg = {.seed = 42};
	struct dl_fmt_ctx *c1, *c2;
	struct dl_dataset a = mkds("id", DL_FMT_NPY, DL_DT_INT32, 2, 4096, 0, 0, NULL);
	struct dl_dataset b = a;
	struct dl_file f1, f2, f3, fz;
	uint8_t x1[600], x2[600], x3[600];

	b.format = DL_FMT_NPZ;
	CHECK(dl_fmt_ctx_new(&cfg, 0, &c1) == 0 && dl_fmt_ctx_new(&cfg, 16, &c2) == 0, "ctx");
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

	if (argc < 6 || nd > DL_MAX_DIMS || dl_format_from_name(argv[2], &fmt) ||
	    dl_dtype_from_name(argv[3], &dt))
		return 2;
	for (unsigned i = 0; i < nd; i++)
		dims[i] = strtoull(argv[5 + i], NULL, 10);
	ds = mkds("serve", fmt, dt, strtoull(argv[4], NULL, 10), 0, 0, nd, dims);
	if (dl_fmt_ctx_new(NULL, 0, &ctx) || dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f))
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
	if (dl_fmt_ctx_new(NULL, 0, &ctx) != 0)
		return 1;
	test_npy_header();
	test_identity();
	test_slices(ctx, DL_FMT_NPY);
	test_slices(ctx, DL_FMT_NPZ);
	test_zip64(ctx);
	test_unet3d(ctx);
	test_float_speed(ctx);
	dl_fmt_ctx_free(ctx);
	printf("npy_npz: %d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
