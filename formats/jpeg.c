/* Baseline JPEG with a fixed number of bytes per 8x8 block (docs/formats.md 6):
 * every byte is fixed or payload, any byte is found in O(1), exact sizes.
 *
 * File: SOI, APP0 JFIF, [COM padding], DQT, SOF0, DHT DC, DHT AC, SOS, E
 * entropy bytes, EOI. One quantization table (all entries Q) and one Huffman
 * table pair shared by all components:
 *   DC table: one 4-bit code 0000 for "difference 0" (DC stays 0: mid-gray);
 *   AC table: 0000 -> (run 0, size 4), 0001 -> EOB.
 * A block with n AC coefficients (0 <= n <= 62) is DC 0000, n times
 * (0000 + 4 value bits: magnitude 8..15, sign from the top bit), then EOB
 * 0001: 8 (n + 1) bits, so exactly n + 1 bytes, 0x00 then n - 1 bytes v<<4
 * then (v<<4)|1 (or the single byte 0x01 when n = 0). No byte can be 0xFF,
 * so there is never any stuffing.
 *
 * With nb blocks and E entropy bytes, every block gets k = E / nb - 1
 * coefficients and the first m = E % nb blocks one more; block b starts at
 * b (k + 1) + min(b, m). Value nibbles are the high nibbles of stream
 * DL_IMG_REGION_JPEG at the entropy offset (the low nibble and the block
 * boundary bytes are then fixed up), which lets a read fill a range in one
 * vectorized PRNG pass.
 *
 * Size rules (deterministic functions of the drawn dimensions and target):
 * - no target (size not given): n = 8 coefficients per block, 9 bytes per
 *   block: 1.1 bits/pixel for L, 1.7 for RGB420, 3.4 for RGB 4:4:4, about what
 *   a quality-75 encoder gives on a photograph;
 * - target T given, E = T - header - 2:
 *   E < nb: the image shrinks, aspect kept (dl_img_scale), to the largest
 *     size whose block count is at most E; T below the 1x1 minimum is -EINVAL;
 *   nb <= E <= 63 nb: no padding;
 *   E > 63 nb: blocks are full (63 bytes) and the excess P = E - 63 nb goes to
 *     COM segments right after APP0 (decoders skip them, docs/formats.md 6.3). A
 *     COM segment is at least 4 bytes, so P < 4 becomes P = 4 with the entropy
 *     data 4 - P bytes short of full. P is split into ceil(P / 65537) segments
 *     of equal size (+1 for the first P mod n), zero payload.
 *
 * - size_model pil_noise (no target; DLIO workload files, config/dlio_dataset.c):
 *   T = pil_size(w, h), the size PIL's encoder (quality 75, 4:2:0 tables, no
 *   optimize) gives a w x h grayscale image of uniform noise, which is what
 *   DLIO 2.0.0's jpeg generator writes (np.random.randint(255) pixels), then
 *   as with a target. Our blocks do not compress like PIL's, so the entropy
 *   bytes are spread over them (and small images get COM padding); only the
 *   size is PIL's (docs/formats.md 6.4).
 *
 * f->aux: [0] width, [1] height, [2] entropy bytes E, [3] COM padding bytes P. */
#include <errno.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "image_i.h"

#define JPEG_MAX_DIM 65500	/* libjpeg's JPEG_MAX_DIMENSION */
#define Q 2			/* every quantization entry: noise of a few levels */
#define HDR_MAX 167
#define APP0_END 20		/* SOI + APP0: COM padding goes here */
#define COM_MAX 65537		/* FF FE, u16 length, 65533 payload bytes */
#define COM_MIN 4
#define NAT_BYTES 9		/* bytes per block without a target: 8 coefficients */
#define MAX_BYTES 63		/* 62 coefficients: 63 is the most without EOB games */

struct jpeg_geom {
	uint64_t w, h, nb, E, pad;
	uint64_t k, m;		/* bytes per block: k + 1 (first m blocks: k + 2) */
	unsigned hdr;		/* header bytes, padding excluded */
};

static unsigned header_len(enum dl_color c)
{
	return c == DL_COLOR_L ? 157 : 167;
}

static uint64_t nblocks(enum dl_color c, uint64_t w, uint64_t h)
{
	switch (c) {
	case DL_COLOR_L:
		return ((w + 7) / 8) * ((h + 7) / 8);
	case DL_COLOR_RGB:
		return ((w + 7) / 8) * ((h + 7) / 8) * 3;
	default:		/* 4:2:0: MCU of 16x16, 4 Y + Cb + Cr */
		return ((w + 15) / 16) * ((h + 15) / 16) * 6;
	}
}

static unsigned put_be16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

/* The header without padding: [0, APP0_END) goes before the COM segments,
 * the rest after them. */
static unsigned build_header(enum dl_color c, uint64_t w, uint64_t h, uint8_t *p)
{
	static const uint8_t app0[] = { 0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0,
					1, 1, 0, 0, 1, 0, 1, 0, 0 };
	static const uint8_t dht[] = {
		/* DC table 0: one code of length 4, symbol 0 */
		0xff, 0xc4, 0x00, 0x14, 0x00, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00,
		/* AC table 0: two codes of length 4: 0x04 (run 0, size 4), 0x00 EOB */
		0xff, 0xc4, 0x00, 0x15, 0x10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x04,
		0x00 };
	const unsigned nc = c == DL_COLOR_L ? 1 : 3;
	unsigned n = 0;

	memcpy(p, app0, sizeof(app0));
	n = sizeof(app0);
	/* DQT: table 0, 8-bit, all entries Q */
	p[n++] = 0xff;
	p[n++] = 0xdb;
	n += put_be16(p + n, 67);
	p[n++] = 0x00;
	memset(p + n, Q, 64);
	n += 64;
	/* SOF0 */
	p[n++] = 0xff;
	p[n++] = 0xc0;
	n += put_be16(p + n, 8 + 3 * nc);
	p[n++] = 8;
	n += put_be16(p + n, (unsigned)h);
	n += put_be16(p + n, (unsigned)w);
	p[n++] = (uint8_t)nc;
	for (unsigned i = 0; i < nc; i++) {
		p[n++] = (uint8_t)(i + 1);
		p[n++] = (c == DL_COLOR_RGB420 && i == 0) ? 0x22 : 0x11;
		p[n++] = 0;
	}
	memcpy(p + n, dht, sizeof(dht));
	n += sizeof(dht);
	/* SOS: all components, tables 0/0, Ss 0, Se 63, Ah/Al 0 */
	p[n++] = 0xff;
	p[n++] = 0xda;
	n += put_be16(p + n, 6 + 2 * nc);
	p[n++] = (uint8_t)nc;
	for (unsigned i = 0; i < nc; i++) {
		p[n++] = (uint8_t)(i + 1);
		p[n++] = 0x00;
	}
	p[n++] = 0;
	p[n++] = 63;
	p[n++] = 0;
	return n;
}

/* PIL 13 (libjpeg-turbo), quality 75, of a grayscale image of uniform noise
 * in 0..254: 330 bytes of header and EOI, and per 8x8 block, in hundredths
 * of a byte, by the columns (first index) and rows of it inside the image;
 * the edge blocks' replicated pixels compress better. Least squares over
 * 600 images a size (the script is in docs/formats.md 6.4); the model is
 * within 0.25% of PIL's own sizes above 1000 pixels, within 1.5% below. */
#define PIL_HEADER 330
static const uint16_t pil_block[8][8] = {
	{209, 1249, 1449, 1529, 1559, 1548, 1554, 1502},
	{1215, 2116, 2401, 2616, 2772, 2849, 2888, 2870},
	{1286, 2397, 2766, 2990, 3178, 3225, 3266, 3238},
	{1316, 2570, 2971, 3184, 3342, 3347, 3385, 3390},
	{1398, 2775, 3086, 3304, 3431, 3448, 3489, 3459},
	{1386, 2852, 3185, 3414, 3480, 3532, 3561, 3527},
	{1404, 2869, 3294, 3455, 3535, 3568, 3563, 3550},
	{1364, 2897, 3240, 3375, 3464, 3534, 3557, 3549},
};

static uint64_t pil_size(uint64_t w, uint64_t h)
{
	const uint64_t qw = w / 8, rw = w % 8, qh = h / 8, rh = h % 8;
	uint64_t c = qw * qh * pil_block[7][7];

	if (rw)
		c += qh * pil_block[rw - 1][7];
	if (rh)
		c += qw * pil_block[7][rh - 1];
	if (rw && rh)
		c += pil_block[rw - 1][rh - 1];
	return PIL_HEADER + (c + 50) / 100;
}

static int jpeg_geom(const struct dl_file *f, struct jpeg_geom *g)
{
	const struct dl_img_params *ip = dl_img_params(f->ds);
	const enum dl_color c = ip->color;
	uint64_t w, h, E;

	dl_img_dims(f, &w, &h);
	if (w < 1 || h < 1 || w > JPEG_MAX_DIM || h > JPEG_MAX_DIM)
		return -EINVAL;
	g->hdr = header_len(c);
	g->pad = 0;
	if (!f->ds->size_given && ip->size_model == DL_IMG_SIZE_BLOCKS) {
		g->nb = nblocks(c, w, h);
		E = g->nb * NAT_BYTES;
	} else {
		const uint64_t T = f->ds->size_given ? f->sample_bytes : pil_size(w, h);

		if (T < (uint64_t)g->hdr + 2 + nblocks(c, 1, 1))
			return -EINVAL;
		E = T - g->hdr - 2;
		if (nblocks(c, w, h) > E) {
			/* largest larger side whose block count fits: nblocks grows with it */
			uint64_t lo = 1, hi = w > h ? w : h, w2, h2;

			while (lo < hi) {
				uint64_t mid = lo + (hi - lo + 1) / 2;

				dl_img_scale(w, h, mid, &w2, &h2);
				if (nblocks(c, w2, h2) <= E)
					lo = mid;
				else
					hi = mid - 1;
			}
			dl_img_scale(w, h, lo, &w2, &h2);
			w = w2;
			h = h2;
		}
		g->nb = nblocks(c, w, h);
		if (E > MAX_BYTES * g->nb) {
			g->pad = E - MAX_BYTES * g->nb;
			if (g->pad < COM_MIN)
				g->pad = COM_MIN;
			E -= g->pad;
		}
	}
	g->w = w;
	g->h = h;
	g->E = E;
	g->k = E / g->nb - 1;
	g->m = E % g->nb;
	return 0;
}

static int jpeg_layout(struct dl_file *f)
{
	struct jpeg_geom g;
	int ret = jpeg_geom(f, &g);

	if (ret)
		return ret;
	f->samples = 1;
	f->size = g.hdr + g.pad + g.E + 2;
	f->aux[0] = g.w;
	f->aux[1] = g.h;
	f->aux[2] = g.E;
	f->aux[3] = g.pad;
	dl_img_set_dims(f, g.w, g.h);
	return 0;
}

/* Geometry back from f->aux (layout did the searching). */
static void geom_from_file(const struct dl_file *f, struct jpeg_geom *g)
{
	g->w = f->aux[0];
	g->h = f->aux[1];
	g->E = f->aux[2];
	g->pad = f->aux[3];
	g->hdr = header_len(dl_img_params(f->ds)->color);
	g->nb = nblocks(dl_img_params(f->ds)->color, g->w, g->h);
	g->k = g->E / g->nb - 1;
	g->m = g->E % g->nb;
}

/* Start (entropy offset) of block b, and the block holding entropy byte x. */
static uint64_t block_start(const struct jpeg_geom *g, uint64_t b)
{
	return b * (g->k + 1) + (b < g->m ? b : g->m);
}

static uint64_t block_of(const struct jpeg_geom *g, uint64_t x)
{
	const uint64_t big = g->m * (g->k + 2);

	return x < big ? x / (g->k + 2) : g->m + (x - big) / (g->k + 1);
}

/* Entropy bytes [lo, hi) into out. The nibble mask goes 8 bytes per step
 * and the block boundaries are walked incrementally: a byte loop and a
 * multiply per block held a 110 kB file to under 1 GB/s. */
static void fill_entropy(const struct dl_file *f, const struct jpeg_geom *g, uint8_t *out,
			 uint64_t lo, uint64_t hi)
{
	typedef uint8_t v16u8 __attribute__((vector_size(16)));
	const uint64_t key = dl_file_stream(f, DL_IMG_REGION_JPEG);
	const size_t n = hi - lo;

	/* Generate and mask piece by piece while the piece is in L1. */
	for (size_t c = 0; c < n; c += 16384) {
		const size_t m = n - c < 16384 ? n - c : 16384;
		uint8_t *p = out + c;
		size_t i = 0;

		dl_prng_fill(key, lo + c, p, m);
		for (; i + 16 <= m; i += 16) {
			v16u8 v;
			memcpy(&v, p + i, 16);
			v &= 0xf0;
			memcpy(p + i, &v, 16);
		}
		for (; i < m; i++)
			p[i] &= 0xf0;
	}
	/* Block boundaries: first byte 00 (01 for an empty block), last |= 1.
	 * Block b is k + 2 bytes long while b < m, then k + 1: whole blocks in
	 * the range go through two tight loops of constant stride (a 110 kB
	 * image has 4608 blocks), the cut ones at the ends through the general
	 * case. */
	uint64_t b = block_of(g, lo);
	uint64_t s = block_start(g, b);
	while (b < g->nb && s < hi) {
		const uint64_t len = g->k + 1 + (b < g->m);
		const uint64_t seg_end = b < g->m ? g->m : g->nb;

		if (s >= lo && s + len <= hi) {
			uint64_t cnt = (hi - s) / len;
			if (cnt > seg_end - b)
				cnt = seg_end - b;
			uint8_t *p = out + (s - lo);
			for (uint64_t j = 0; j < cnt; j++, p += len) {
				p[0] = 0x00;
				p[len - 1] |= 0x01; /* an empty block's one byte: 01 */
			}
			b += cnt;
			s += cnt * len;
			continue;
		}
		const uint64_t last = s + len - 1;
		if (s >= lo)
			out[s - lo] = last == s ? 0x01 : 0x00;
		if (last >= lo && last < hi)
			out[last - lo] |= 0x01;
		s += len;
		b++;
	}
}

/* COM padding bytes [lo, hi) (padding coordinates) into out. */
static void fill_pad(const struct jpeg_geom *g, uint8_t *out, uint64_t lo, uint64_t hi)
{
	const uint64_t nseg = (g->pad + COM_MAX - 1) / COM_MAX;
	const uint64_t q = g->pad / nseg, r = g->pad % nseg;
	const uint64_t big = r * (q + 1);
	uint64_t i = lo < big ? lo / (q + 1) : r + (lo - big) / q;

	memset(out, 0, hi - lo);
	for (; i < nseg; i++) {
		const uint64_t s = i * q + (i < r ? i : r);
		const uint64_t len = q + (i < r);
		uint8_t m[4] = { 0xff, 0xfe, (uint8_t)((len - 2) >> 8), (uint8_t)(len - 2) };

		if (s >= hi)
			break;
		dl_copy_overlap(out, lo, hi - lo, m, s, sizeof(m));
	}
}

static int jpeg_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		     size_t len)
{
	static const uint8_t eoi[2] = { 0xff, 0xd9 };
	struct jpeg_geom g;
	uint8_t hdr[HDR_MAX];
	const uint64_t end = off + len;
	uint64_t at, lo, hi;

	(void)ctx;
	geom_from_file(f, &g);
	build_header(dl_img_params(f->ds)->color, g.w, g.h, hdr);
	dl_copy_overlap(buf, off, len, hdr, 0, APP0_END);
	at = APP0_END;
	lo = off > at ? off : at;
	hi = end < at + g.pad ? end : at + g.pad;
	if (lo < hi)
		fill_pad(&g, buf + (lo - off), lo - at, hi - at);
	at += g.pad;
	dl_copy_overlap(buf, off, len, hdr + APP0_END, at, g.hdr - APP0_END);
	at += g.hdr - APP0_END;
	lo = off > at ? off : at;
	hi = end < at + g.E ? end : at + g.E;
	if (lo < hi)
		fill_entropy(f, &g, buf + (lo - off), lo - at, hi - at);
	at += g.E;
	dl_copy_overlap(buf, off, len, eoi, at, sizeof(eoi));
	return 0;
}

static void jpeg_check(struct dl_dataset *ds, const struct dl_check *chk, int size_ok)
{
	/* Smallest files: header + one MCU's blocks + EOI of a 1x1 image. */
	static const struct dl_img_limits lim = {
		.max_side = 65500, /* libjpeg refuses more */
		.max_why = "JPEG's limit",
		.min_bytes = {[DL_COLOR_L] = 160, [DL_COLOR_RGB] = 172, [DL_COLOR_RGB420] = 175},
	};

	const struct dl_img_params *p = dl_img_params(ds);

	(void)size_ok;
	dl_img_check(ds, chk, &lim);
	if (p->size_model == DL_IMG_SIZE_PIL_NOISE && p->color != DL_COLOR_L)
		dl_check_error(chk, "size_model", "size_model",
			       "pil_noise is PIL's size for grayscale noise: needs color L");
	if (p->size_model == DL_IMG_SIZE_PIL_NOISE && chk->given(chk->arg, "sample_size"))
		dl_check_error(chk, "size_model", "size_model",
			       "pil_noise sizes files by their dimensions: drop sample_size");
}

const struct dl_format_ops dl_fmt_jpeg_ops = {
	.id = DL_FMT_JPEG,
	.name = "jpeg",
	.dlio_name = "jpeg",
	.ext = "jpeg",
	.example = "width: 48, height: {mean: 32, stdev: 4}, classes: 2",
	.class_ext = "JPEG", /* as in ImageNet's tree */
	.nparts = 1,
	.read_hints = {.plan = DL_PLAN_WHOLE, .batch = 24, .read_threads = 8, .flags = DL_RH_IMAGE},
	.features = DL_FF_CLASSES | DL_FF_ONE_SAMPLE | DL_FF_UINT8,
	.size_note = "set by the image (no exact file size asked)",
	.params = dl_img_param_table,
	.nparams = 4, /* with size_model */
	.check = jpeg_check,
	.layout = jpeg_layout,
	.read = jpeg_read,
};
