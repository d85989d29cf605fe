/* 8-bit gray or RGB PNG, no interlace, filter 0 on every row, the zlib stream
 * made of stored deflate blocks (docs/formats.md 7):
 *
 *   signature, IHDR,
 *   IDAT 0 = zlib header 78 01 + stored block 0, IDAT j = stored block j,
 *   IDAT of 4 bytes = the Adler-32 of the raw image,
 *   [pad chunks "paDd" (ancillary, private, safe to copy) of zeros],
 *   IEND.
 *
 * Raw image (R = H (1 + W C) bytes): each row is a 0 filter byte then the
 * row's pixels; pixel byte q (row-major) is byte q of stream
 * DL_IMG_REGION_PNG. Stored blocks hold 65535 raw bytes (the last the rest),
 * so every block's IDAT but the last is full (65554 bytes for IDAT 0, which
 * carries the zlib header, 65552 for the others) and any offset maps to
 * (chunk, raw offset) arithmetically.
 *
 * Derived bytes (strategy S3): the CRC-32 of each block's IDAT and the
 * Adler-32 of the whole raw image (plus the CRC of its chunk). A chunk's CRC
 * and its block's Adler-32 are computed together from the bytes a read holds
 * when it holds the chunk from its start, continued from a running value kept
 * by the previous read when it holds a later part, and otherwise by
 * regenerating the chunk; the whole-image Adler-32 is dl_adler32_combine over the
 * blocks. All of them go to the (lossy) derived-value cache.
 *
 * Size: 63 + 17 nblocks + R, plus padding. With an exact target T: a pad
 * chunk costs at least 12 bytes, so T must equal the natural size or exceed
 * it by 12 or more; otherwise the image shrinks (aspect kept, dl_img_scale) to
 * the largest size for which that holds. The padding P is split into
 * ceil(P / 8,000,012) chunks of equal size (+1 byte for the first P mod n):
 * libpng warns about unknown chunks above 8,000,000 data bytes.
 *
 * f->aux: [0] width, [1] height, [2] padding bytes P. */
#include <errno.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/crc32.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "image_i.h"

#define PNG_MAX_DIM 0x7fffffffULL	/* PNG spec */
#define RAW_MAX (1ULL << 50)		/* keeps every offset and combine length sane */
#define BLK 65535ULL			/* raw bytes per stored block */
#define STRIDE (BLK + 17)		/* file bytes per full block chunk */
#define IHDR_END 33			/* signature + IHDR */
#define PAD_DATA_MAX 8000000ULL	/* libpng's silent limit for unknown chunks */
#define PAD_MAX (PAD_DATA_MAX + 12)
#define PAD_MIN 12
#define SCRATCH 16384
/* Key spaces of the derived-value cache besides (f->key, chunk) = IDAT CRC. */
#define TAG_BLK_ADLER 0x706e672d62616434ULL
#define TAG_FILE_ADLER 0x706e672d66616434ULL
#define TAG_PART_CRC 0x706e672d70637263ULL
#define TAG_PART_ADLER 0x706e672d7061646cULL

struct png_geom {
	uint64_t w, h, ch, row;	/* row = 1 + w * ch raw bytes */
	uint64_t R, nblk;
	uint64_t adler_at;	/* the 4-byte IDAT */
	uint64_t pad_at, pad;	/* pad chunks, total bytes */
	uint64_t size;
};

static uint64_t natural(uint64_t w, uint64_t h, uint64_t ch)
{
	uint64_t R = h * (1 + w * ch);

	return 63 + 17 * ((R + BLK - 1) / BLK) + R;
}

static void geom_fill(struct png_geom *g, uint64_t w, uint64_t h, uint64_t ch, uint64_t pad)
{
	g->w = w;
	g->h = h;
	g->ch = ch;
	g->row = 1 + w * ch;
	g->R = h * g->row;
	g->nblk = (g->R + BLK - 1) / BLK;
	g->adler_at = IHDR_END + 2 + 17 * g->nblk + g->R;
	g->pad_at = g->adler_at + 16;
	g->pad = pad;
	g->size = g->pad_at + pad + 12;
}

/* A target T is reachable from w x h without resizing. */
static int fits(uint64_t T, uint64_t nat)
{
	return nat == T || (T >= PAD_MIN && nat <= T - PAD_MIN);
}

static int png_layout(struct dl_file *f)
{
	const uint64_t ch = dl_img_channels(dl_img_params(f->ds)->color);
	struct png_geom g;
	uint64_t w, h, pad = 0;

	dl_img_dims(f, &w, &h);
	if (w < 1 || h < 1 || w > PNG_MAX_DIM || h > PNG_MAX_DIM || 1 + w * ch > RAW_MAX / h)
		return -EINVAL;
	if (f->ds->size_given) {
		const uint64_t T = f->sample_bytes;

		if (!fits(T, natural(w, h, ch))) {
			/* natural() strictly grows with the larger side: the sizes
			 * with nat <= T - 12 are a prefix, and at most one larger
			 * side above it can hit T exactly. */
			uint64_t lo = 0, hi = w > h ? w : h, w2, h2, best;

			while (lo < hi) {
				uint64_t mid = lo + (hi - lo + 1) / 2;

				dl_img_scale(w, h, mid, &w2, &h2);
				if (T >= PAD_MIN && natural(w2, h2, ch) <= T - PAD_MIN)
					lo = mid;
				else
					hi = mid - 1;
			}
			best = lo;
			for (uint64_t L = lo + 1; L <= (w > h ? w : h); L++) {
				dl_img_scale(w, h, L, &w2, &h2);
				if (natural(w2, h2, ch) > T)
					break;
				if (natural(w2, h2, ch) == T)
					best = L;
			}
			if (best == 0)
				return -EINVAL;	/* below the 1x1 image */
			dl_img_scale(w, h, best, &w2, &h2);
			w = w2;
			h = h2;
		}
		pad = T - natural(w, h, ch);
	}
	geom_fill(&g, w, h, ch, pad);
	f->samples = 1;
	f->size = g.size;
	f->aux[0] = w;
	f->aux[1] = h;
	f->aux[2] = pad;
	dl_img_set_dims(f, w, h);
	return 0;
}

static void geom_from_file(const struct dl_file *f, struct png_geom *g)
{
	geom_fill(g, f->aux[0], f->aux[1], dl_img_channels(dl_img_params(f->ds)->color), f->aux[2]);
}

static uint64_t chunk_at(uint64_t j)
{
	return j ? IHDR_END + 2 + j * STRIDE : IHDR_END;
}

static uint64_t data_at(uint64_t j)
{
	return IHDR_END + 15 + j * STRIDE;
}

static uint64_t blk_len(const struct png_geom *g, uint64_t j)
{
	return j + 1 < g->nblk ? BLK : g->R - j * BLK;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Raw image bytes [p, p + n) (filter bytes and pixels) into out. */
static void fill_raw(const struct dl_file *f, const struct png_geom *g, uint8_t *out, uint64_t p,
		     uint64_t n)
{
	const uint64_t key = dl_file_stream(f, DL_IMG_REGION_PNG);

	while (n) {
		const uint64_t r = p / g->row, c = p % g->row;
		uint64_t k;

		if (c == 0) {
			*out++ = 0;	/* filter: None */
			p++;
			n--;
			continue;
		}
		k = g->row - c < n ? g->row - c : n;
		dl_prng_fill(key, r * (g->row - 1) + (c - 1), out, k);
		out += k;
		p += k;
		n -= k;
	}
}

/* Bytes from the length field to the block's first raw byte: 15 for IDAT 0
 * (zlib header included), 13 for the others. */
static unsigned chunk_head(const struct png_geom *g, uint64_t j, uint8_t *p)
{
	const uint64_t L = blk_len(g, j);
	unsigned n = 0;

	put_be32(p, (uint32_t)(L + 5 + (j == 0 ? 2 : 0)));
	memcpy(p + 4, "IDAT", 4);
	n = 8;
	if (j == 0) {
		p[n++] = 0x78;	/* deflate, 32 KiB window, FCHECK for level "fastest" */
		p[n++] = 0x01;
	}
	p[n++] = j + 1 == g->nblk ? 1 : 0;	/* BFINAL, BTYPE 00 (stored) */
	dl_put_le16(p + n, (uint16_t)L);
	dl_put_le16(p + n + 2, (uint16_t)~L);
	return n + 4;
}

/* CRC-32 of n zero bytes, by doubling. */
static uint32_t crc_zeros(uint64_t n)
{
	static const uint8_t z = 0;
	uint32_t c = 0, p = dl_crc32(0, &z, 1);
	uint64_t plen = 1;

	while (n) {
		if (n & 1)
			c = dl_crc32_combine(c, p, plen);
		p = dl_crc32_combine(p, p, plen);
		plen <<= 1;
		n >>= 1;
	}
	return c;
}

/* Pad chunks: bytes [lo, hi) in padding coordinates into out. */
static void fill_pad(const struct png_geom *g, uint8_t *out, uint64_t lo, uint64_t hi)
{
	const uint64_t nch = (g->pad + PAD_MAX - 1) / PAD_MAX;
	const uint64_t q = g->pad / nch, r = g->pad % nch;
	const uint64_t big = r * (q + 1);
	uint64_t i = lo < big ? lo / (q + 1) : r + (lo - big) / q;

	memset(out, 0, hi - lo);
	for (; i < nch; i++) {
		const uint64_t s = i * q + (i < r ? i : r);
		const uint64_t dlen = q + (i < r) - 12;
		uint8_t h[8], t[4];

		if (s >= hi)
			break;
		put_be32(h, (uint32_t)dlen);
		memcpy(h + 4, "paDd", 4);
		dl_copy_overlap(out, lo, hi - lo, h, s, sizeof(h));
		if (s + 8 + dlen < hi && s + 12 + dlen > lo) {
			uint32_t c = dl_crc32(0, h + 4, 4);

			put_be32(t, dl_crc32_combine(c, crc_zeros(dlen), dlen));
			dl_copy_overlap(out, lo, hi - lo, t, s + 8 + dlen, sizeof(t));
		}
	}
}

/* Every byte but the derived ones (IDAT CRCs, the Adler-32 and its CRC,
 * left as zeros) of file range [off, off + len). */
static void fill_fixed(const struct dl_file *f, const struct png_geom *g, uint8_t *buf,
		       uint64_t off, size_t len)
{
	static const uint8_t iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	static const uint8_t zero[4];
	const uint64_t end = off + len;
	uint64_t lo, hi;

	/* Every byte is written below (derived fields as zeros, filled in by
	 * png_read): no clearing pass over the whole request. */
	if (off < IHDR_END) {
		uint8_t h[IHDR_END] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
					'I', 'H', 'D', 'R' };

		put_be32(h + 16, (uint32_t)g->w);
		put_be32(h + 20, (uint32_t)g->h);
		h[24] = 8;				/* bit depth */
		h[25] = g->ch == 1 ? 0 : 2;		/* gray / truecolor */
		h[26] = h[27] = h[28] = 0;		/* deflate, filter set 0, no interlace */
		put_be32(h + 29, dl_crc32(0, h + 12, 17));
		dl_copy_overlap(buf, off, len, h, 0, IHDR_END);
	}
	if (off < g->adler_at && end > IHDR_END) {
		uint64_t j = off < chunk_at(1) ? 0 : (off - IHDR_END - 2) / STRIDE;

		for (; j < g->nblk && chunk_at(j) < end; j++) {
			uint8_t h[16];
			const uint64_t d = data_at(j), L = blk_len(g, j);
			unsigned hn = chunk_head(g, j, h);

			dl_copy_overlap(buf, off, len, h, d - hn, hn);
			lo = off > d ? off : d;
			hi = end < d + L ? end : d + L;
			if (lo < hi)
				fill_raw(f, g, buf + (lo - off), j * BLK + (lo - d), hi - lo);
			dl_copy_overlap(buf, off, len, zero, d + L, 4); /* the chunk's CRC */
		}
	}
	{
		static const uint8_t ah[16] = { 0, 0, 0, 4, 'I', 'D', 'A', 'T' };
		dl_copy_overlap(buf, off, len, ah, g->adler_at, sizeof(ah));
	}
	lo = off > g->pad_at ? off : g->pad_at;
	hi = end < g->pad_at + g->pad ? end : g->pad_at + g->pad;
	if (lo < hi)
		fill_pad(g, buf + (lo - off), lo - g->pad_at, hi - g->pad_at);
	dl_copy_overlap(buf, off, len, iend, g->size - 12, sizeof(iend));
}

/* Running CRC (type + data) and Adler-32 (raw bytes) of IDAT j. */
struct run {
	uint32_t crc, adler;
	int adler_ok;
};

/* Continue `s` over file bytes [at, at + n) of chunk j, held in p. */
static void scan(uint64_t j, const uint8_t *p, uint64_t at, uint64_t n, struct run *s)
{
	const uint64_t d = data_at(j);

	s->crc = dl_crc32(s->crc, p, n);
	if (at + n > d) {
		uint64_t skip = at < d ? d - at : 0;
		s->adler = dl_adler32(s->adler, p + skip, n - skip);
	}
}

/* Continue `s` over [from, to) of chunk j's CRC range, regenerating it. */
static void regen(const struct dl_file *f, const struct png_geom *g, uint64_t j, uint64_t from,
		  uint64_t to, struct run *s)
{
	uint8_t tmp[SCRATCH];

	while (from < to) {
		size_t k = to - from < SCRATCH ? (size_t)(to - from) : SCRATCH;

		fill_fixed(f, g, tmp, from, k);
		scan(j, tmp, from, k, s);
		from += k;
	}
}

static void run_init(struct run *s)
{
	s->crc = 0;
	s->adler = 1; /* Adler-32 of nothing */
	s->adler_ok = 1;
}

/* CRC of IDAT j and Adler-32 of block j by regenerating the chunk; cached. */
static void chunk_full(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct png_geom *g,
		       uint64_t j, struct run *s)
{
	run_init(s);
	regen(f, g, j, chunk_at(j) + 4, data_at(j) + blk_len(g, j), s);
	dl_dcache_put(ctx, f->key, j, s->crc);
	dl_dcache_put(ctx, dl_key2(f->key, TAG_BLK_ADLER), j, s->adler);
}

static void put_be32_overlap(uint8_t *buf, uint64_t off, size_t len, uint64_t at, uint32_t v)
{
	uint8_t b[4];

	put_be32(b, v);
	dl_copy_overlap(buf, off, len, b, at, 4);
}

/* The CRC of IDAT j for a read whose other bytes are already in buf. */
static void chunk_derive(struct dl_fmt_ctx *ctx, const struct dl_file *f,
			 const struct png_geom *g, uint64_t j, uint8_t *buf, uint64_t off,
			 size_t len)
{
	const uint64_t c0 = chunk_at(j) + 4, c1 = data_at(j) + blk_len(g, j), end = off + len;
	const int want = end > c1;
	const uint64_t pk_crc = dl_key2(f->key, TAG_PART_CRC);
	const uint64_t pk_adl = dl_key2(f->key, TAG_PART_ADLER);
	struct run s;
	uint64_t a, b;
	uint32_t v;

	if (end <= c0)
		return;
	if (want && dl_dcache_get(ctx, f->key, j, &v) == 0) {
		put_be32_overlap(buf, off, len, c1, v);
		return;
	}
	if (off >= c1) {
		chunk_full(ctx, f, g, j, &s);
		put_be32_overlap(buf, off, len, c1, s.crc);
		return;
	}
	a = off > c0 ? off : c0;
	b = end < c1 ? end : c1;
	run_init(&s);
	if (a > c0) {
		if (dl_dcache_get(ctx, pk_crc, a, &s.crc) == 0) {
			s.adler_ok = dl_dcache_get(ctx, pk_adl, a, &s.adler) == 0;
		} else {
			if (!want)
				return;	/* a later read holding the CRC computes it */
			regen(f, g, j, c0, a, &s);
		}
	}
	scan(j, buf + (a - off), a, b - a, &s);
	if (b < c1) {
		dl_dcache_put(ctx, pk_crc, b, s.crc);
		if (s.adler_ok)
			dl_dcache_put(ctx, pk_adl, b, s.adler);
		return;
	}
	dl_dcache_put(ctx, f->key, j, s.crc);
	if (s.adler_ok)
		dl_dcache_put(ctx, dl_key2(f->key, TAG_BLK_ADLER), j, s.adler);
	if (want)
		put_be32_overlap(buf, off, len, c1, s.crc);
}

/* Adler-32 of the raw image: combine of the blocks' values. */
static uint32_t image_adler(struct dl_fmt_ctx *ctx, const struct dl_file *f,
			    const struct png_geom *g)
{
	const uint64_t fk = dl_key2(f->key, TAG_FILE_ADLER), bk = dl_key2(f->key, TAG_BLK_ADLER);
	uint32_t a, v;

	if (dl_dcache_get(ctx, fk, 0, &a) == 0)
		return a;
	a = 1; /* Adler-32 of nothing */
	for (uint64_t j = 0; j < g->nblk; j++) {
		if (dl_dcache_get(ctx, bk, j, &v) != 0) {
			struct run s;

			chunk_full(ctx, f, g, j, &s);
			v = s.adler;
		}
		a = dl_adler32_combine(a, v, blk_len(g, j));
	}
	dl_dcache_put(ctx, fk, 0, a);
	return a;
}

static int png_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	struct png_geom g;
	const uint64_t end = off + len;

	geom_from_file(f, &g);
	fill_fixed(f, &g, buf, off, len);
	if (off < g.adler_at && end > IHDR_END) {
		uint64_t j = off < chunk_at(1) ? 0 : (off - IHDR_END - 2) / STRIDE;

		for (; j < g.nblk && chunk_at(j) < end; j++)
			chunk_derive(ctx, f, &g, j, buf, off, len);
	}
	if (end > g.adler_at + 8 && off < g.adler_at + 16) {
		uint8_t t[12];

		memcpy(t, "IDAT", 4);
		put_be32(t + 4, image_adler(ctx, f, &g));
		put_be32(t + 8, dl_crc32(0, t, 8));
		dl_copy_overlap(buf, off, len, t + 4, g.adler_at + 8, 8);
	}
	return 0;
}

static void png_check(struct dl_dataset *ds, const struct dl_check *chk, int size_ok)
{
	/* Smallest files: a 1x1 image at its natural size plus the 12-byte
	 * minimum pad chunk, so every larger target is reachable. */
	static const struct dl_img_limits lim = {
		.max_side = 0x7fffffff, /* PNG's */
		.max_why = "PNG's limit",
		.max_raw = 1ULL << 50,	/* the raw image must stay addressable */
		.min_bytes = {[DL_COLOR_L] = 94, [DL_COLOR_RGB] = 96, [DL_COLOR_RGB420] = 96},
	};

	(void)size_ok;
	dl_img_check(ds, chk, &lim);
}

const struct dl_format_ops dl_fmt_png_ops = {
	.id = DL_FMT_PNG,
	.name = "png",
	.dlio_name = "png",
	.ext = "png",
	.example = "width: 40, height: 30, color: L",
	.nparts = 1,
	.read_hints = {.plan = DL_PLAN_WHOLE, .batch = 24, .read_threads = 8, .flags = DL_RH_IMAGE},
	.features = DL_FF_CLASSES | DL_FF_ONE_SAMPLE | DL_FF_UINT8,
	.size_note = "set by the image (no exact file size asked)",
	.params = dl_img_param_table,
	.nparams = 3,
	.check = png_check,
	.layout = png_layout,
	.read = png_read,
};
