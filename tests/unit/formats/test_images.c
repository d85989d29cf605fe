/* JPEG and PNG files decoded by the real libraries: libjpeg(-turbo) with an
 * error manager that fails on any warning (full decompress, and the DCT
 * coefficients read back and compared with the values the PRNG put in),
 * libpng with its default strict CRC and Adler-32 checks (pixels compared with
 * the PRNG stream; corrupted CRC / Adler-32 must be refused, so the checks are
 * live). Exact target sizes, the size rules (shrink, pad), the worked sizes of
 * docs/formats.md 6.3 and 7.1-7.2, and any read split equal to the full read whatever
 * the state of the derived-value cache. */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>
#include <png.h>

#include "dliofs/clock.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "image_i.h"
#include "tap.h"

/* ---- fixtures ---------------------------------------------------------- */

static struct dl_dataset mkds(enum dl_format fmt, enum dl_color c, uint64_t w, uint64_t h,
			      uint64_t target)
{
	struct dl_dataset ds;

	memset(&ds, 0, sizeof(ds));
	strcpy(ds.name, fmt == DL_FMT_JPEG ? "jpg" : "png");
	ds.id = dl_key3(dl_key3(fmt, c, w), h, target);
	ds.format = fmt;
	ds.files[DL_SPLIT_TRAIN] = 4;
	ds.samples_per_file = 1;
	DL_DS_PARAMS(&ds, struct dl_img_params)->width = (struct dl_dist){w, 0, w, w};
	DL_DS_PARAMS(&ds, struct dl_img_params)->height = (struct dl_dist){h, 0, h, h};
	DL_DS_PARAMS(&ds, struct dl_img_params)->color = c;
	ds.size_given = target != 0;
	ds.sample_size = (struct dl_dist){target, 0, target, target};
	strcpy(ds.file_prefix, "img");
	return ds;
}

static struct dl_fmt_ctx *mkctx(uint64_t seed, size_t entries)
{
	struct dl_fmt_ctx *ctx = NULL;

	if (dl_fmt_ctx_new(seed, entries, &ctx))
		abort();
	return ctx;
}

static uint8_t *read_all(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t *b = malloc(f->size ? f->size : 1);

	if (!b || dl_file_read(ctx, f, b, 0, f->size))
		abort();
	return b;
}

static uint64_t rng(uint64_t *s) { return dl_mix64(*s += DL_GOLDEN64); }

static double now(void)
{
	return (double)dl_mono_ns() * 1e-9;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const char *cname(enum dl_color c)
{
	return c == DL_COLOR_L ? "L" : c == DL_COLOR_RGB ? "RGB" : "RGB420";
}

/* ---- JPEG: independent marker walk ------------------------------------- */

struct jpeg_walk {
	unsigned com;	    /* COM segments */
	uint64_t com_bytes; /* their total size, markers included */
	uint64_t sos_end;   /* first entropy byte */
	int ff_in_entropy;  /* any 0xFF before EOI */
	int ok;
};

static struct jpeg_walk walk_jpeg(const uint8_t *p, uint64_t n)
{
	struct jpeg_walk w = {0};
	uint64_t i = 2;

	if (n < 4 || p[0] != 0xff || p[1] != 0xd8)
		return w;
	while (i + 4 <= n) {
		unsigned m, L;

		if (p[i] != 0xff)
			return w;
		m = p[i + 1];
		L = (unsigned)p[i + 2] << 8 | p[i + 3];
		if (m == 0xfe) {
			w.com++;
			w.com_bytes += 2 + L;
		}
		i += 2 + L;
		if (m == 0xda)
			break;
	}
	w.sos_end = i;
	for (uint64_t k = i; k + 2 < n; k++)
		if (p[k] == 0xff)
			w.ff_in_entropy = 1;
	w.ok = i + 2 <= n && p[n - 2] == 0xff && p[n - 1] == 0xd9;
	return w;
}

/* ---- JPEG: libjpeg with warnings as failures --------------------------- */

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	int warnings;
	char msg[JMSG_LENGTH_MAX];
};

static void jerr_exit(j_common_ptr c)
{
	struct jerr *e = (struct jerr *)c->err;

	c->err->format_message(c, e->msg);
	longjmp(e->jb, 1);
}

static void jerr_emit(j_common_ptr c, int level)
{
	struct jerr *e = (struct jerr *)c->err;

	if (level < 0) {
		e->warnings++;
		c->err->format_message(c, e->msg);
	}
}

/* Zigzag index -> natural (row-major) index. */
static const unsigned char zz[64] = {
    0,	1,  8,	16, 9,	2,  3,	10, 17, 24, 32, 25, 18, 11, 4,	5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,	14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

struct jres {
	int ok; /* decoded with no error and no warning */
	unsigned w, h, comps;
	long coef_bad; /* blocks whose coefficients differ from the PRNG's */
	long coef_blocks;
	char msg[JMSG_LENGTH_MAX];
};

/* Block index in scan order of component c's block (r, q). */
static uint64_t scan_index(enum dl_color col, unsigned W, unsigned c, uint64_t r, uint64_t q)
{
	if (col == DL_COLOR_L)
		return r * ((W + 7) / 8) + q;
	if (col == DL_COLOR_RGB)
		return (r * ((W + 7) / 8) + q) * 3 + c;
	{
		const uint64_t mpr = (W + 15) / 16;

		if (c == 0)
			return ((r / 2) * mpr + q / 2) * 6 + (r % 2) * 2 + (q % 2);
		return (r * mpr + q) * 6 + 3 + c;
	}
}

/* Full decompress (warnings fail), then the quantized coefficients compared
 * with the expected ones: DC 0, coefficient i (zigzag, 1-based) of block b =
 * the value coded by the high nibble of entropy byte start(b) + i. */
static struct jres decode_jpeg(const struct dl_file *f, const uint8_t *p, uint64_t n,
			       const uint8_t *ent, uint64_t E, uint64_t nb)
{
	struct jpeg_decompress_struct d;
	struct jerr e;
	struct jres r;
	JSAMPROW row;

	memset(&r, 0, sizeof(r));
	memset(&e, 0, sizeof(e));
	d.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = jerr_exit;
	e.pub.emit_message = jerr_emit;
	if (setjmp(e.jb)) {
		jpeg_destroy_decompress(&d);
		memcpy(r.msg, e.msg, sizeof(r.msg));
		r.ok = 0;
		return r;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, p, (unsigned long)n);
	jpeg_read_header(&d, TRUE);
	jpeg_start_decompress(&d);
	r.w = d.output_width;
	r.h = d.output_height;
	r.comps = (unsigned)d.output_components;
	row = malloc((size_t)d.output_width * d.output_components);
	while (d.output_scanline < d.output_height)
		jpeg_read_scanlines(&d, &row, 1);
	free(row);
	jpeg_finish_decompress(&d);

	/* Second pass: the coefficients. */
	jpeg_mem_src(&d, p, (unsigned long)n);
	jpeg_read_header(&d, TRUE);
	{
		jvirt_barray_ptr *arr = jpeg_read_coefficients(&d);
		const uint64_t k = E / nb - 1, m = E % nb;

		for (int c = 0; c < d.num_components; c++) {
			jpeg_component_info *ci = &d.comp_info[c];

			for (JDIMENSION br = 0; br < ci->height_in_blocks; br++) {
				JBLOCKARRAY rows = d.mem->access_virt_barray((j_common_ptr)&d,
									     arr[c], br, 1, FALSE);
				for (JDIMENSION bq = 0; bq < ci->width_in_blocks; bq++) {
					const uint64_t b =
					    scan_index(dl_img_params(f->ds)->color, r.w, (unsigned)c, br, bq);
					const uint64_t s = b * (k + 1) + (b < m ? b : m);
					const uint64_t nc = k + (b < m);
					JCOEF *blk = rows[0][bq];
					int bad = blk[0] != 0;

					for (unsigned i = 1; i < 64; i++) {
						int want = 0;

						if (i <= nc) {
							int v = ent[s + i] >> 4;
							want = v >= 8 ? v : v - 15;
						}
						if (blk[zz[i]] != want)
							bad = 1;
					}
					r.coef_bad += bad;
					r.coef_blocks++;
				}
			}
		}
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	r.ok = e.warnings == 0;
	if (e.warnings)
		memcpy(r.msg, e.msg, sizeof(r.msg));
	return r;
}

/* Decode and check one JPEG file; returns its bytes (caller frees). */
static uint8_t *check_jpeg(struct dl_fmt_ctx *ctx, const struct dl_file *f, const char *what)
{
	uint8_t *p = read_all(ctx, f);
	const uint64_t W = f->aux[0], H = f->aux[1], E = f->aux[2], P = f->aux[3];
	const unsigned hdr = dl_img_params(f->ds)->color == DL_COLOR_L ? 157 : 167;
	uint64_t nb;
	struct jpeg_walk w = walk_jpeg(p, f->size);
	struct jres r;
	uint8_t *ref;

	nb = dl_img_params(f->ds)->color == DL_COLOR_L	    ? ((W + 7) / 8) * ((H + 7) / 8)
	     : dl_img_params(f->ds)->color == DL_COLOR_RGB ? ((W + 7) / 8) * ((H + 7) / 8) * 3
					    : ((W + 15) / 16) * ((H + 15) / 16) * 6;
	CHECK(f->size == hdr + P + E + 2, "%s: size %llu", what, (unsigned long long)f->size);
	CHECK(E >= nb && E <= 63 * nb, "%s: E %llu nb %llu", what, (unsigned long long)E,
	      (unsigned long long)nb);
	CHECK(w.ok && w.sos_end == hdr + P, "%s: marker walk (sos_end %llu)", what,
	      (unsigned long long)w.sos_end);
	CHECK(w.com_bytes == P && (P == 0) == (w.com == 0), "%s: COM %u segments %llu bytes", what,
	      w.com, (unsigned long long)w.com_bytes);
	CHECK(!w.ff_in_entropy, "%s: 0xFF in entropy data", what);
	/* expected nibbles straight from the PRNG stream, not from the file */
	ref = malloc(E + 1);
	dl_prng_fill(dl_file_stream(f, DL_IMG_REGION_JPEG), 0, ref, E);
	r = decode_jpeg(f, p, f->size, ref, E, nb);
	free(ref);
	CHECK(r.ok, "%s: libjpeg: %s", what, r.msg);
	CHECK(r.w == W && r.h == H, "%s: decoded %ux%u, want %llux%llu", what, r.w, r.h,
	      (unsigned long long)W, (unsigned long long)H);
	CHECK(r.comps == (dl_img_params(f->ds)->color == DL_COLOR_L ? 1u : 3u), "%s: %u components", what,
	      r.comps);
	CHECK(r.coef_blocks > 0 && r.coef_bad == 0, "%s: %ld of %ld blocks with wrong coefficients",
	      what, r.coef_bad, r.coef_blocks);
	return p;
}

/* ---- PNG: libpng, classic API, default (strict) checks ----------------- */

struct pmem {
	const uint8_t *p;
	size_t n, at;
	int warnings;
	char msg[256];
};

static void pread_fn(png_structp png, png_bytep out, size_t n)
{
	struct pmem *m = png_get_io_ptr(png);

	if (n > m->n - m->at)
		png_error(png, "read past end");
	memcpy(out, m->p + m->at, n);
	m->at += n;
}

static void pwarn_fn(png_structp png, png_const_charp msg)
{
	struct pmem *m = png_get_error_ptr(png);

	m->warnings++;
	snprintf(m->msg, sizeof(m->msg), "warning: %s", msg);
}

static void perr_fn(png_structp png, png_const_charp msg)
{
	struct pmem *m = png_get_error_ptr(png);

	snprintf(m->msg, sizeof(m->msg), "error: %s", msg);
	png_longjmp(png, 1);
}

/* Decode into *pix (w * h * channels bytes); 0 when libpng raised neither an
 * error nor a warning and read through IEND. */
static int decode_png(const uint8_t *p, size_t n, uint8_t **pix, unsigned *w, unsigned *h,
		      unsigned *ch, char *msg)
{
	struct pmem m = {p, n, 0, 0, ""};
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &m, perr_fn, pwarn_fn);
	png_infop info = png_create_info_struct(png);
	uint8_t *volatile img = NULL;
	png_bytep *volatile rows = NULL;
	int ret = -1;

	*pix = NULL;
	if (setjmp(png_jmpbuf(png)))
		goto out;
	png_set_read_fn(png, &m, pread_fn);
	png_read_info(png, info);
	*w = png_get_image_width(png, info);
	*h = png_get_image_height(png, info);
	*ch = png_get_channels(png, info);
	if (png_get_bit_depth(png, info) != 8 || png_get_interlace_type(png, info) != 0)
		png_error(png, "unexpected IHDR");
	img = malloc((size_t)*w * *h * *ch);
	rows = malloc(sizeof(*rows) * *h);
	for (unsigned y = 0; y < *h; y++)
		rows[y] = img + (size_t)y * *w * *ch;
	png_read_image(png, rows);
	png_read_end(png, NULL); /* the Adler-32, the pad chunk, IEND */
	ret = m.warnings ? -2 : 0;
	*pix = img;
	img = NULL;
out:
	snprintf(msg, 256, "%s", m.msg);
	png_destroy_read_struct(&png, &info, NULL);
	free(rows);
	free(img);
	return ret;
}

/* Walk chunks; count pad chunks and check every CRC with zlib-independent
 * bitwise CRC-32. Returns 0 when the layout is as designed. */
static uint32_t ref_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

struct png_walk {
	unsigned idat, pad, bad_crc;
	uint64_t pad_bytes, iend_at;
	int ok;
};

static struct png_walk walk_png(const uint8_t *p, uint64_t n)
{
	struct png_walk w = {0};
	uint64_t i = 8;

	while (i + 12 <= n) {
		uint32_t L = be32(p + i);

		if (i + 12 + L > n)
			return w;
		if (ref_crc32(p + i + 4, 4 + L) != be32(p + i + 8 + L))
			w.bad_crc++;
		if (!memcmp(p + i + 4, "IDAT", 4))
			w.idat++;
		if (!memcmp(p + i + 4, "paDd", 4)) {
			w.pad++;
			w.pad_bytes += 12 + L;
		}
		if (!memcmp(p + i + 4, "IEND", 4)) {
			w.iend_at = i;
			w.ok = i + 12 == n;
			return w;
		}
		i += 12 + L;
	}
	return w;
}

static void check_png(struct dl_fmt_ctx *ctx, const struct dl_file *f, const char *what)
{
	uint8_t *p = read_all(ctx, f), *pix = NULL;
	const uint64_t W = f->aux[0], H = f->aux[1], P = f->aux[2];
	const unsigned C = dl_img_params(f->ds)->color == DL_COLOR_L ? 1 : 3;
	const uint64_t R = H * (1 + W * C), nblk = (R + 65534) / 65535;
	unsigned w = 0, h = 0, ch = 0;
	char msg[256];
	struct png_walk pw = walk_png(p, f->size);
	int ret;

	CHECK(f->size == 63 + 17 * nblk + R + P, "%s: size %llu", what,
	      (unsigned long long)f->size);
	CHECK(pw.ok && pw.bad_crc == 0 && pw.idat == nblk + 1 && pw.pad_bytes == P,
	      "%s: walk ok %d bad crc %u idat %u pad %llu", what, pw.ok, pw.bad_crc, pw.idat,
	      (unsigned long long)pw.pad_bytes);
	CHECK(P == 0 || pw.iend_at == f->size - 12, "%s: pad chunks before IEND", what);
	ret = decode_png(p, f->size, &pix, &w, &h, &ch, msg);
	CHECK(ret == 0, "%s: libpng %d %s", what, ret, msg);
	CHECK(w == W && h == H && ch == C, "%s: decoded %ux%ux%u", what, w, h, ch);
	if (ret == 0 && w == W && h == H && ch == C) {
		const size_t np = (size_t)W * H * C;
		uint8_t *want = malloc(np);

		dl_prng_fill(dl_file_stream(f, DL_IMG_REGION_PNG), 0, want, np);
		CHECK(memcmp(pix, want, np) == 0, "%s: pixels differ from the PRNG stream", what);
		free(want);
	}
	free(pix);
	free(p);
}

/* ---- tests ------------------------------------------------------------- */

static void test_jpeg_worked(void)
{
	struct dl_fmt_ctx *ctx = mkctx(1, 0);
	static const uint64_t targets[] = {106755, 110000, 110001, 123457, 60000};
	struct dl_dataset ds;
	struct dl_file f;

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char what[64];

		ds = mkds(DL_FMT_JPEG, DL_COLOR_L, 500, 375, targets[i]);
		snprintf(what, sizeof(what), "jpeg L 500x375 T=%llu",
			 (unsigned long long)targets[i]);
		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "%s: init", what);
		CHECK(f.size == targets[i] && f.aux[0] == 500 && f.aux[1] == 375 && f.aux[3] == 0,
		      "%s: size %llu dims %llux%llu pad %llu", what, (unsigned long long)f.size,
		      (unsigned long long)f.aux[0], (unsigned long long)f.aux[1],
		      (unsigned long long)f.aux[3]);
		if (targets[i] == 106755)
			CHECK(f.aux[2] == 2961 * 36, "%s: k = 35", what);
		free(check_jpeg(ctx, &f, what));
	}
	ds = mkds(DL_FMT_JPEG, DL_COLOR_RGB420, 500, 375, 96937);
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "420 init");
	CHECK(f.size == 96937 && f.aux[2] == 4608 * 21 && f.aux[3] == 0, "jpeg 420 worked size");
	free(check_jpeg(ctx, &f, "jpeg RGB420 500x375 k=20"));
	dl_fmt_ctx_free(ctx);
}

/* Natural sizes, and the rules for targets outside the reachable range. */
static void test_jpeg_sizes(void)
{
	struct dl_fmt_ctx *ctx = mkctx(2, 0);
	static const struct {
		enum dl_color c;
		uint64_t w, h, T;
	} cases[] = {
	    {DL_COLOR_L, 224, 224, 0},
	    {DL_COLOR_RGB, 224, 224, 0},
	    {DL_COLOR_RGB420, 224, 224, 0},
	    {DL_COLOR_RGB420, 333, 221, 0},
	    {DL_COLOR_RGB, 17, 9, 0},
	    {DL_COLOR_L, 1, 1, 0},
	    {DL_COLOR_RGB420, 1, 1, 0},
	    {DL_COLOR_RGB420, 1000, 700, 110000},
	    {DL_COLOR_RGB, 640, 480, 10000},	  /* below the minimum: shrinks */
	    {DL_COLOR_L, 64, 48, 160},		  /* 1x1 is all that fits */
	    {DL_COLOR_L, 64, 48, 30000},	  /* above the maximum: COM */
	    {DL_COLOR_L, 8, 8, 157 + 2 + 63 + 1}, /* 1 above max: COM of 4 */
	    {DL_COLOR_L, 8, 8, 157 + 2 + 63 + 3}, /* 3 above max */
	    {DL_COLOR_L, 8, 8, 157 + 2 + 63 + 4}, /* 4 above */
	    {DL_COLOR_RGB420, 32, 32, 400000},	  /* several COM segments */
	    {DL_COLOR_RGB, 40, 30, 3 * 65537 + 167 + 2 + 63 * 60 + 2},
	    {DL_COLOR_RGB420, 4000, 3000, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dl_dataset ds =
		    mkds(DL_FMT_JPEG, cases[i].c, cases[i].w, cases[i].h, cases[i].T);
		struct dl_file f;
		char what[96];

		snprintf(what, sizeof(what), "jpeg %s %llux%llu T=%llu", cname(cases[i].c),
			 (unsigned long long)cases[i].w, (unsigned long long)cases[i].h,
			 (unsigned long long)cases[i].T);
		if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 1, 0, &f) != 0) {
			CHECK(0, "%s: init", what);
			continue;
		}
		if (cases[i].T)
			CHECK(f.size == cases[i].T, "%s: size %llu", what,
			      (unsigned long long)f.size);
		else
			CHECK(f.aux[3] == 0 && f.aux[2] % 9 == 0, "%s: natural 9 bytes/block",
			      what);
		if (cases[i].T && (f.aux[0] != cases[i].w || f.aux[1] != cases[i].h)) {
			/* shrunk: aspect kept (up to rounding of small sides), no padding */
			double a = (double)cases[i].w / (double)cases[i].h;
			double b = (double)f.aux[0] / (double)f.aux[1];

			CHECK(f.aux[0] <= cases[i].w && f.aux[1] <= cases[i].h &&
				  (f.aux[0] < 8 || f.aux[1] < 8 || (a / b < 1.2 && b / a < 1.2)),
			      "%s: shrunk to %llux%llu", what, (unsigned long long)f.aux[0],
			      (unsigned long long)f.aux[1]);
			CHECK(f.aux[3] == 0, "%s: no padding after shrinking", what);
		} else {
			CHECK(f.aux[0] == cases[i].w && f.aux[1] == cases[i].h, "%s: dims kept",
			      what);
		}
		if (cases[i].T == 10000 || cases[i].T == 160)
			CHECK(f.aux[0] < cases[i].w, "%s: must shrink", what);
		if (cases[i].T && f.aux[3])
			CHECK(f.aux[3] >= 4, "%s: COM padding %llu", what,
			      (unsigned long long)f.aux[3]);
		free(check_jpeg(ctx, &f, what));
	}
	{
		/* below the 1x1 image: refused */
		struct dl_dataset ds = mkds(DL_FMT_JPEG, DL_COLOR_L, 64, 64, 159);
		struct dl_file f;
		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "jpeg T=159");
		ds = mkds(DL_FMT_JPEG, DL_COLOR_L, 70000, 64, 0);
		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "jpeg w 70000");
	}
	dl_fmt_ctx_free(ctx);
}

static void test_png_sizes(void)
{
	struct dl_fmt_ctx *ctx = mkctx(3, 0);
	static const struct {
		enum dl_color c;
		uint64_t w, h, T;
		uint64_t want_w, want_h; /* 0: as given */
	} cases[] = {
	    {DL_COLOR_L, 500, 375, 0, 0, 0},
	    {DL_COLOR_L, 500, 375, 187989, 0, 0},      /* natural = target */
	    {DL_COLOR_L, 500, 375, 187989 + 12, 0, 0}, /* empty pad chunk */
	    {DL_COLOR_L, 500, 375, 187989 + 5, 0, 0},  /* shrinks */
	    {DL_COLOR_L, 500, 375, 100000, 0, 0},      /* shrinks */
	    {DL_COLOR_RGB, 224, 224, 0, 0, 0},
	    {DL_COLOR_RGB420, 224, 224, 200000, 0, 0},
	    {DL_COLOR_RGB, 10, 10, 0, 0, 0},
	    {DL_COLOR_L, 1, 1, 0, 0, 0},
	    {DL_COLOR_L, 1, 1, 82, 0, 0},
	    {DL_COLOR_RGB, 300, 200, 17000000, 0, 0}, /* three pad chunks */
	    {DL_COLOR_RGB, 1000, 1000, 0, 0, 0},      /* 46 blocks */
	    {DL_COLOR_L, 65535, 1, 0, 0, 0},	      /* a row across two blocks */
	    {DL_COLOR_L, 65534, 1, 0, 0, 0},	      /* exactly one full block */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dl_dataset ds =
		    mkds(DL_FMT_PNG, cases[i].c, cases[i].w, cases[i].h, cases[i].T);
		struct dl_file f;
		char what[96];

		snprintf(what, sizeof(what), "png %s %llux%llu T=%llu", cname(cases[i].c),
			 (unsigned long long)cases[i].w, (unsigned long long)cases[i].h,
			 (unsigned long long)cases[i].T);
		if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 2, 0, &f) != 0) {
			CHECK(0, "%s: init", what);
			continue;
		}
		if (cases[i].T)
			CHECK(f.size == cases[i].T, "%s: size %llu", what,
			      (unsigned long long)f.size);
		if (cases[i].T && (f.aux[0] != cases[i].w || f.aux[1] != cases[i].h)) {
			/* shrunk: the next larger side would not fit */
			const unsigned C = cases[i].c == DL_COLOR_L ? 1 : 3;
			uint64_t w2, h2, big = f.aux[0] > f.aux[1] ? f.aux[0] : f.aux[1];
			uint64_t R, nat;

			dl_img_scale(cases[i].w, cases[i].h, big + 1, &w2, &h2);
			R = h2 * (1 + w2 * C);
			nat = 63 + 17 * ((R + 65534) / 65535) + R;
			CHECK(nat != cases[i].T && nat + 12 > cases[i].T, "%s: shrink not maximal",
			      what);
		}
		if (cases[i].T == 187989 + 5)
			CHECK(f.aux[0] < 500, "%s: shrunk", what);
		if (cases[i].T == 187989 + 12)
			CHECK(f.aux[0] == 500 && f.aux[2] == 12, "%s: pad 12", what);
		check_png(ctx, &f, what);
	}
	{
		struct dl_dataset ds = mkds(DL_FMT_PNG, DL_COLOR_L, 500, 375, 0);
		struct dl_file f;

		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == 0 && f.size == 187989,
		      "png 500x375 L natural size %llu", (unsigned long long)f.size);
		ds = mkds(DL_FMT_PNG, DL_COLOR_L, 5, 5, 81);
		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "png T=81");
	}
	dl_fmt_ctx_free(ctx);
}

/* libpng's checks are live: one flipped bit in an IDAT CRC, in the Adler-32
 * or in a pixel byte (which breaks both) makes the decode fail. */
static void test_png_corrupt(void)
{
	struct dl_fmt_ctx *ctx = mkctx(4, 0);
	struct dl_dataset ds = mkds(DL_FMT_PNG, DL_COLOR_RGB, 120, 90, 0);
	struct dl_file f;
	uint8_t *p, *pix;
	unsigned w, h, ch;
	char msg[256];
	uint64_t adler_crc;

	if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f)) {
		CHECK(0, "init");
		return;
	}
	p = read_all(ctx, &f);
	/* layout: ..., Adler IDAT (16 bytes), IEND (12) */
	adler_crc = f.size - 12 - 16;
	CHECK(decode_png(p, f.size, &pix, &w, &h, &ch, msg) == 0, "clean decode: %s", msg);
	free(pix);
	p[52] ^= 1; /* a pixel of row 0 (raw data starts at 48) */
	CHECK(decode_png(p, f.size, &pix, &w, &h, &ch, msg) != 0, "pixel flip accepted");
	free(pix);
	p[52] ^= 1;
	p[adler_crc + 8] ^= 0x10; /* Adler-32 value (its chunk CRC now wrong too) */
	CHECK(decode_png(p, f.size, &pix, &w, &h, &ch, msg) != 0, "adler flip accepted");
	free(pix);
	/* Fix the chunk CRC: only the Adler-32 is wrong now: zlib must refuse. */
	{
		uint32_t c = ref_crc32(p + adler_crc + 4, 8);
		p[adler_crc + 12] = (uint8_t)(c >> 24);
		p[adler_crc + 13] = (uint8_t)(c >> 16);
		p[adler_crc + 14] = (uint8_t)(c >> 8);
		p[adler_crc + 15] = (uint8_t)c;
	}
	CHECK(decode_png(p, f.size, &pix, &w, &h, &ch, msg) != 0 && strstr(msg, "check"),
	      "bad adler accepted: %s", msg);
	free(pix);
	free(p);
	dl_fmt_ctx_free(ctx);
}

/* Any split of the file into reads, in any order, with a cache that keeps
 * everything, one that keeps almost nothing, and a fresh one each time. */
static void test_pieces(void)
{
	static const struct {
		enum dl_format fmt;
		enum dl_color c;
		uint64_t w, h, T;
	} cases[] = {
	    {DL_FMT_PNG, DL_COLOR_RGB, 500, 375, 0},
	    {DL_FMT_PNG, DL_COLOR_L, 333, 250, 300000},
	    {DL_FMT_PNG, DL_COLOR_RGB, 30, 20, 9000000},
	    {DL_FMT_JPEG, DL_COLOR_RGB420, 500, 375, 0},
	    {DL_FMT_JPEG, DL_COLOR_L, 100, 75, 200000},
	    {DL_FMT_JPEG, DL_COLOR_RGB, 333, 221, 90001},
	};
	uint64_t s = 99;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dl_fmt_ctx *ref_ctx = mkctx(5, 0);
		struct dl_dataset ds =
		    mkds(cases[i].fmt, cases[i].c, cases[i].w, cases[i].h, cases[i].T);
		struct dl_file f;
		uint8_t *full, *got;
		char what[96];

		snprintf(what, sizeof(what), "%s %s %llux%llu",
			 cases[i].fmt == DL_FMT_PNG ? "png" : "jpeg", cname(cases[i].c),
			 (unsigned long long)cases[i].w, (unsigned long long)cases[i].h);
		if (dl_file_init(ref_ctx, &ds, DL_SPLIT_TRAIN, 3, 0, &f)) {
			CHECK(0, "%s: init", what);
			continue;
		}
		full = read_all(ref_ctx, &f);
		got = malloc(f.size);
		for (int mode = 0; mode < 5; mode++) {
			/* 0: sequential 4 KiB; 1: sequential 128 KiB; 2: random pieces
			 * in random order, big cache; 3: same, cache of 1 entry;
			 * 4: single random ranges, each with a fresh context */
			struct dl_fmt_ctx *ctx = mkctx(5, mode == 3 ? 1 : 0);
			long bad = 0;

			memset(got, 0xa5, f.size);
			if (mode <= 1) {
				const uint64_t step = mode == 0 ? 4096 : 131072;
				for (uint64_t o = 0; o < f.size; o += step) {
					uint64_t n = f.size - o < step ? f.size - o : step;
					if (dl_file_read(ctx, &f, got + o, o, n))
						bad++;
				}
				bad += memcmp(got, full, f.size) != 0;
			} else if (mode <= 3) {
				/* cut points, then visit the pieces in a shuffled order */
				enum { NP = 64 };
				uint64_t cut[NP + 1], ord[NP];

				cut[0] = 0;
				cut[NP] = f.size;
				for (int k = 1; k < NP; k++)
					cut[k] = rng(&s) % f.size;
				for (int a = 1; a < NP; a++)
					for (int b = a + 1; b < NP; b++)
						if (cut[b] < cut[a]) {
							uint64_t t = cut[a];
							cut[a] = cut[b];
							cut[b] = t;
						}
				for (int k = 0; k < NP; k++)
					ord[k] = (uint64_t)k;
				for (int k = NP - 1; k > 0; k--) {
					uint64_t j = rng(&s) % (uint64_t)(k + 1), t = ord[k];
					ord[k] = ord[j];
					ord[j] = t;
				}
				for (int k = 0; k < NP; k++) {
					uint64_t a = cut[ord[k]], b = cut[ord[k] + 1];
					if (dl_file_read(ctx, &f, got + a, a, b - a))
						bad++;
				}
				bad += memcmp(got, full, f.size) != 0;
			} else {
				for (int k = 0; k < 40; k++) {
					uint64_t a = rng(&s) % f.size;
					uint64_t n = 1 + rng(&s) % (k & 1 ? 70000 : 20);
					struct dl_fmt_ctx *c2 = mkctx(5, 0);

					if (n > f.size - a)
						n = f.size - a;
					if (k >= 36) /* the file's tail: Adler-32 / EOI */
						a = f.size - n;
					if (dl_file_read(c2, &f, got, a, n) ||
					    memcmp(got, full + a, n))
						bad++;
					dl_fmt_ctx_free(c2);
				}
			}
			CHECK(bad == 0, "%s: mode %d: %ld bad", what, mode, bad);
			dl_fmt_ctx_free(ctx);
		}
		free(got);
		free(full);
		dl_fmt_ctx_free(ref_ctx);
	}
}

/* Per-file dimensions from distributions: within bounds, varied, repeatable;
 * the same file read through two contexts is identical. */
static void test_dists(void)
{
	struct dl_fmt_ctx *a = mkctx(6, 0), *b = mkctx(6, 0), *other = mkctx(7, 0);

	for (int fmt = 0; fmt < 2; fmt++) {
		struct dl_dataset ds =
		    mkds(fmt ? DL_FMT_PNG : DL_FMT_JPEG, DL_COLOR_RGB420, 0, 0, 0);
		uint64_t wmin = UINT64_MAX, wmax = 0, hsum = 0, wsum = 0;
		int diff = 0;
		const char *what = fmt ? "png" : "jpeg";

		DL_DS_PARAMS(&ds, struct dl_img_params)->width = (struct dl_dist){200, 60, 64, 320};
		DL_DS_PARAMS(&ds, struct dl_img_params)->height = (struct dl_dist){150, 40, 48, 256};
		ds.sample_size = (struct dl_dist){60000, 20000, 30000, 120000};
		ds.size_given = fmt == 0;
		ds.files[DL_SPLIT_TRAIN] = 40;
		for (uint64_t i = 0; i < 40; i++) {
			struct dl_file f, g, o;

			if (dl_file_init(a, &ds, DL_SPLIT_TRAIN, i, 0, &f) ||
			    dl_file_init(b, &ds, DL_SPLIT_TRAIN, i, 0, &g) ||
			    dl_file_init(other, &ds, DL_SPLIT_TRAIN, i, 0, &o)) {
				CHECK(0, "%s: init %llu", what, (unsigned long long)i);
				continue;
			}
			CHECK(f.size == g.size && f.aux[0] == g.aux[0] && f.aux[1] == g.aux[1],
			      "%s: repeatable", what);
			diff += f.aux[0] != o.aux[0] || f.size != o.size;
			if (fmt == 0)
				CHECK(f.size == f.sample_bytes && f.size >= 30000 &&
					  f.size <= 120000,
				      "%s: size %llu", what, (unsigned long long)f.size);
			CHECK(f.aux[0] >= 1 && f.aux[0] <= 320 && f.aux[1] >= 1 && f.aux[1] <= 256,
			      "%s: dims %llux%llu", what, (unsigned long long)f.aux[0],
			      (unsigned long long)f.aux[1]);
			wmin = f.aux[0] < wmin ? f.aux[0] : wmin;
			wmax = f.aux[0] > wmax ? f.aux[0] : wmax;
			wsum += f.aux[0];
			hsum += f.aux[1];
			if (i < 6) {
				uint8_t *x = read_all(a, &f), *y = read_all(b, &g);
				CHECK(memcmp(x, y, f.size) == 0, "%s: same bytes", what);
				free(x);
				free(y);
				if (fmt)
					check_png(a, &f, "png dist");
				else
					free(check_jpeg(a, &f, "jpeg dist"));
			}
		}
		CHECK(wmax - wmin > 60, "%s: widths vary %llu..%llu", what,
		      (unsigned long long)wmin, (unsigned long long)wmax);
		CHECK(wsum / 40 > 150 && wsum / 40 < 250 && hsum / 40 > 110 && hsum / 40 < 190,
		      "%s: mean dims %llu %llu", what, (unsigned long long)(wsum / 40),
		      (unsigned long long)(hsum / 40));
		CHECK(diff > 30, "%s: the seed changes the files (%d)", what, diff);
	}
	dl_fmt_ctx_free(a);
	dl_fmt_ctx_free(b);
	dl_fmt_ctx_free(other);
}

/* Serving cost, printed (not asserted). */
static void bench(void)
{
	struct dl_fmt_ctx *ctx = mkctx(8, 0);
	struct dl_dataset dj = mkds(DL_FMT_JPEG, DL_COLOR_RGB420, 500, 375, 110000);
	struct dl_dataset dp = mkds(DL_FMT_PNG, DL_COLOR_RGB, 500, 375, 0);
	struct dl_file f;
	double t;
	uint8_t *buf = malloc(1 << 20);
	const int N = 200;

	dj.files[DL_SPLIT_TRAIN] = dp.files[DL_SPLIT_TRAIN] = (uint64_t)N;
	t = now();
	for (int i = 0; i < N; i++) {
		if (dl_file_init(ctx, &dj, DL_SPLIT_TRAIN, (uint64_t)i, 0, &f) ||
		    dl_file_read(ctx, &f, buf, 0, f.size))
			abort();
	}
	t = now() - t;
	printf("# jpeg 500x375 420 110 kB: %.1f us per file (%.0f MB/s)\n", t / N * 1e6,
	       110000.0 * N / t / 1e6);
	t = now();
	for (int i = 0; i < N; i++) {
		if (dl_file_init(ctx, &dp, DL_SPLIT_TRAIN, (uint64_t)i, 0, &f))
			abort();
		for (uint64_t o = 0; o < f.size; o += 131072)
			if (dl_file_read(ctx, &f, buf, o,
					 f.size - o < 131072 ? f.size - o : 131072))
				abort();
	}
	t = now() - t;
	printf("# png 500x375 RGB %llu B, 128 KiB reads: %.1f us per file (%.0f MB/s)\n",
	       (unsigned long long)f.size, t / N * 1e6, (double)f.size * N / t / 1e6);
	free(buf);
	dl_fmt_ctx_free(ctx);
}

int main(void)
{
	test_jpeg_worked();
	test_jpeg_sizes();
	test_png_sizes();
	test_png_corrupt();
	test_pieces();
	test_dists();
	bench();
	return tap_done("images");
}
