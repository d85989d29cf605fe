/* TFRecord files as DLIO writes them: f->samples records, each a serialized
 * tf.train.Example {"image": bytes_list[N bytes], "size": int64_list[N]} framed
 * by a length, its masked CRC-32C and the masked CRC-32C of the Example.
 * N = f->sample_bytes is one size per file, so record r starts at r * R and
 * any offset maps to (record, offset in record) by one division.
 *
 * Everything but the image bytes and the data CRC is fixed per N. The image
 * bytes of record r are stream dl_file_stream(f, r). The data CRC is derived:
 * computed from the bytes a read already holds when it can be, otherwise by
 * regenerating the missing part of the record, and kept in the derived-value
 * cache (docs/formats.md 2.4, strategy S3).
 *
 * With `compression: gzip` the file is that record stream U (S bytes) in one
 * gzip member, as tf.io.TFRecordWriter with compression_type "GZIP" writes it
 * through zlib: a 10-byte header (1f 8b 08, no flags, mtime 0, XFL from the
 * level as zlib sets it, OS 3 = Unix), a raw deflate stream of stored blocks
 * over U (deflate_stored.h), the CRC-32 of U and S mod 2^32 (u32le each).
 * Size 10 + S + 5 ceil(S / 65535) + 8, exact at stat time. The CRC-32 of U is
 * derived per 1 MiB segment of U (S3): each segment's CRC is taken from the
 * bytes of sequential reads as they pass (a running value per read end keeps
 * the chain across reads), and whatever is missing is generated when the
 * trailer is read; the segments then combine with crc32_combine_op.
 *
 * f->aux: [0] record length R = n + 16, [1] Example length n,
 *         [2] offset of the image bytes in the record, [3] Example suffix length. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dliofs/crc32c.h"
#include "deflate_stored.h"
#include "dliofs/format.h"
#include "dliofs/crc32.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "tfrecord_i.h"

#define HDR_LEN 12		/* u64le length + masked CRC of it */
#define CRC_LEN 4
#define PREFIX_MAX 64		/* 12 fixed bytes + 5 varints of at most 10 bytes */
#define SUFFIX_MAX 48		/* 14 fixed bytes + 4 varints */
/* Largest payload we describe: keeps every length below 2^63. */
#define N_MAX (1ull << 60)
/* Scratch for regenerating a record's bytes when computing its CRC: small
 * enough for a worker thread's stack, large enough for the 3-stream CRC. */
#define SCRATCH 32768
/* Key space of the running-CRC entries (see record_crc). */
#define PARTIAL_TAG 0x7466722d70617274ULL

/* GZIP variant: member header and trailer, CRC-32 segments of U. */
#define GZ_HDR 10
#define GZ_TRAILER 8
#define GZ_SEG DL_TFR_GZ_SEG
#define GZ_WHOLE DL_TFR_GZ_WHOLE

/* Joining CRC-32s of full segments: one precomputed operator (zlib >= 1.2.12). */
#define SEG_OP_INIT() crc32_combine_gen((z_off_t)GZ_SEG)
#define SEG_JOIN(a, b, op) crc32_combine_op(a, b, op)

/* The fixed bytes of one record for a given N. */
struct tfr_geom {
	uint64_t N;		/* image bytes */
	uint64_t n;		/* Example length */
	uint64_t rec;		/* record length n + 16 */
	unsigned pre;		/* Example bytes before the image */
	unsigned suf;		/* Example bytes after the image (the "size" entry) */
	uint8_t hdr[HDR_LEN];
	uint8_t prefix[PREFIX_MAX];
	uint8_t suffix[SUFFIX_MAX];
};

static unsigned vl(uint64_t v)
{
	unsigned n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Length of a length-delimited field with a 1-byte tag. */
static uint64_t ld(uint64_t n)
{
	return 1 + vl(n) + n;
}

static unsigned put_varint(uint8_t *p, uint64_t v)
{
	unsigned n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static unsigned put_ld_head(uint8_t *p, uint8_t tag, uint64_t n)
{
	p[0] = tag;
	return 1 + put_varint(p + 1, n);
}

/* Sizes per docs/formats.md 2.2; the serialized order is protobuf's deterministic
 * one (map keys sorted: "image" before "size"). */
static int tfr_geom(uint64_t N, struct tfr_geom *g)
{
	const uint64_t v = N;	/* the "size" value: DLIO stores the sample's bytes */
	uint64_t B, V1, E1, P, I, V2, E2, F;
	unsigned k = 0;

	if (N > N_MAX)
		return -EFBIG;
	B = ld(N);
	V1 = ld(B);
	E1 = ld(5) + ld(V1);
	P = vl(v);
	I = ld(P);
	V2 = ld(I);
	E2 = ld(4) + ld(V2);
	F = ld(E1) + ld(E2);
	g->N = N;
	g->n = ld(F);
	g->rec = g->n + HDR_LEN + CRC_LEN;

	k += put_ld_head(g->prefix + k, 0x0a, F);	/* Example.features */
	k += put_ld_head(g->prefix + k, 0x0a, E1);	/* map entry "image" */
	k += put_ld_head(g->prefix + k, 0x0a, 5);	/* entry.key */
	memcpy(g->prefix + k, "image", 5);
	k += 5;
	k += put_ld_head(g->prefix + k, 0x12, V1);	/* entry.value: Feature */
	k += put_ld_head(g->prefix + k, 0x0a, B);	/* Feature.bytes_list */
	k += put_ld_head(g->prefix + k, 0x0a, N);	/* BytesList.value[0] */
	g->pre = k;

	k = 0;
	k += put_ld_head(g->suffix + k, 0x0a, E2);	/* map entry "size" */
	k += put_ld_head(g->suffix + k, 0x0a, 4);
	memcpy(g->suffix + k, "size", 4);
	k += 4;
	k += put_ld_head(g->suffix + k, 0x12, V2);	/* entry.value: Feature */
	k += put_ld_head(g->suffix + k, 0x1a, I);	/* Feature.int64_list */
	k += put_ld_head(g->suffix + k, 0x0a, P);	/* packed values */
	k += put_varint(g->suffix + k, v);
	g->suf = k;

	dl_put_le64(g->hdr, g->n);
	dl_put_le32(g->hdr + 8, dl_crc32c_mask(dl_crc32c(0, g->hdr, 8)));
	return 0;
}

static int tfr_layout(struct dl_file *f)
{
	struct tfr_geom g;
	uint64_t S;
	int ret = tfr_geom(f->sample_bytes, &g);

	if (ret)
		return ret;
	if (__builtin_mul_overflow(f->samples, g.rec, &S))
		return -EFBIG;
	if (f->ds->compression == DL_COMP_GZIP) {
		/* Below 2^63 the stored-block overhead cannot overflow. */
		if (S > (UINT64_MAX >> 1))
			return -EFBIG;
		f->size = GZ_HDR + dl_ds_size(S) + GZ_TRAILER;
	} else {
		f->size = S;
	}
	f->aux[0] = g.rec;
	f->aux[1] = g.n;
	f->aux[2] = HDR_LEN + g.pre;
	f->aux[3] = g.suf;
	return 0;
}

/* CRC (continued from `c`) of Example bytes [from, to) of record r, generated
 * here without touching the caller's buffer. */
static uint32_t example_crc(const struct dl_file *f, const struct tfr_geom *g, uint64_t r,
			    uint32_t c, uint64_t from, uint64_t to)
{
	uint64_t pay0 = g->pre, pay1 = g->pre + g->N;
	uint64_t key = dl_file_stream(f, r);
	uint64_t tmp[SCRATCH / 8];

	if (from < pay0) {
		uint64_t e = to < pay0 ? to : pay0;
		c = dl_crc32c(c, g->prefix + from, e - from);
		from = e;
	}
	while (from < to && from < pay1) {
		uint64_t e = to < pay1 ? to : pay1;
		size_t k = e - from < SCRATCH ? (size_t)(e - from) : SCRATCH;

		dl_prng_fill(key, from - pay0, tmp, k);
		c = dl_crc32c(c, tmp, k);
		from += k;
	}
	if (from < to)
		c = dl_crc32c(c, g->suffix + (from - pay1), to - from);
	return c;
}

/* Running-CRC entries: after a read that ends inside a record's Example, the
 * CRC of the Example bytes up to that file offset, so the next sequential read
 * continues it instead of regenerating the record (large records arrive in
 * many reads). Keyed by file offset in a key space apart from final CRCs. */
static int partial_get(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint64_t at, uint32_t *c)
{
	return dl_dcache_get(ctx, dl_key2(f->key, PARTIAL_TAG), at, c);
}

static void partial_put(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint64_t at, uint32_t c)
{
	dl_dcache_put(ctx, dl_key2(f->key, PARTIAL_TAG), at, c);
}

static void put_crc(uint8_t *buf, uint64_t off, size_t len, uint64_t at, uint32_t c)
{
	uint8_t b[CRC_LEN];

	dl_put_le32(b, dl_crc32c_mask(c));
	dl_copy_overlap(buf, off, len, b, at, CRC_LEN);
}

/* Data CRC of record r (starting at file offset `at`) for a read whose other
 * bytes of the record are already in buf. */
static void record_crc(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct tfr_geom *g,
		       uint64_t r, uint64_t at, uint8_t *buf, uint64_t off, size_t len)
{
	const uint64_t ex = at + HDR_LEN, ex_end = ex + g->n, end = off + len;
	const int want = end > ex_end;	/* the read holds CRC bytes */
	uint64_t a, b;
	uint32_t c;

	if (end <= ex)
		return;
	if (want && dl_dcache_get(ctx, f->key, r, &c) == 0) {
		put_crc(buf, off, len, ex_end, c);
		return;
	}
	if (off >= ex_end) {
		c = example_crc(f, g, r, 0, 0, g->n);
		dl_dcache_put(ctx, f->key, r, c);
		put_crc(buf, off, len, ex_end, c);
		return;
	}
	/* The read holds Example bytes [a, b). */
	a = off > ex ? off : ex;
	b = end < ex_end ? end : ex_end;
	if (a == ex)
		c = 0;
	else if (partial_get(ctx, f, a, &c) != 0) {
		if (!want)
			return;	/* nothing to serve now; a later read computes it */
		c = example_crc(f, g, r, 0, 0, a - ex);
	}
	c = dl_crc32c(c, buf + (a - off), b - a);
	if (b < ex_end) {
		partial_put(ctx, f, b, c);
		return;
	}
	dl_dcache_put(ctx, f->key, r, c);
	if (want)
		put_crc(buf, off, len, ex_end, c);
}

/* Bytes [off, off + len) of the record stream U. */
static void tfr_raw(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct tfr_geom *g,
		    uint8_t *buf, uint64_t off, size_t len)
{
	const uint64_t end = off + len;

	for (uint64_t r = off / g->rec; r < f->samples && r * g->rec < end; r++) {
		const uint64_t at = r * g->rec;
		const uint64_t pay = at + HDR_LEN + g->pre;

		dl_copy_overlap(buf, off, len, g->hdr, at, HDR_LEN);
		dl_copy_overlap(buf, off, len, g->prefix, at + HDR_LEN, g->pre);
		dl_fill_overlap(buf, off, len, dl_file_stream(f, r), pay, g->N);
		dl_copy_overlap(buf, off, len, g->suffix, pay + g->N, g->suf);
		record_crc(ctx, f, g, r, at, buf, off, len);
	}
}

/* ---- GZIP variant ---- */

static void gzip_head(const struct dl_file *f, uint8_t h[GZ_HDR])
{
	unsigned level = f->ds->compression_level;

	memset(h, 0, GZ_HDR);
	h[0] = 0x1f;
	h[1] = 0x8b;
	h[2] = 8; /* deflate */
	/* zlib's XFL: 2 at level 9, 4 at level 1, else 0; OS 3 as zlib on Unix. */
	h[8] = level == 9 ? 2 : level == 1 ? 4 : 0;
	h[9] = 3;
}

/* A read following the 1 MiB segments of U through its raw runs. */
struct gz_walk {
	struct dl_fmt_ctx *ctx;
	const struct dl_file *f;
	const struct tfr_geom *g;
	uint64_t S, kseg, kpart;
	uint64_t seg;	/* segment last entered, GZ_WHOLE before the first */
	int run;	/* crc holds the segment's bytes up to `at` */
	uint32_t crc;
	uint64_t at;
};

/* Extend the segment CRCs with the final bytes p = U[o, o + n): a segment's
 * CRC is taken when the walk holds all of it, counting a running value left
 * by the previous read at this offset. */
static void gz_follow(struct gz_walk *w, const uint8_t *p, uint64_t o, size_t n)
{
	while (n) {
		const uint64_t k = o / GZ_SEG;
		const uint64_t e = (k + 1) * GZ_SEG < w->S ? (k + 1) * GZ_SEG : w->S;
		const size_t m = e - o < n ? (size_t)(e - o) : n;
		uint32_t c;

		if (k != w->seg) {
			w->seg = k;
			w->run = 0;
			if (dl_dcache_get(w->ctx, w->kseg, k, &c) == 0) {
				/* known: nothing to do */
			} else if (o == k * GZ_SEG) {
				w->crc = 0;
				w->run = 1;
			} else if (dl_dcache_get(w->ctx, w->kpart, o, &c) == 0) {
				w->crc = c;
				w->run = 1;
			}
		}
		if (w->run) {
			w->crc = dl_crc32(w->crc, p, m);
			if (o + m == e) {
				dl_dcache_put(w->ctx, w->kseg, k, w->crc);
				w->run = 0;
			}
		}
		o += m;
		p += m;
		n -= m;
	}
	w->at = o;
}

static int gz_fill(void *arg, uint8_t *dst, uint64_t raw_off, size_t len)
{
	struct gz_walk *w = arg;

	tfr_raw(w->ctx, w->f, w->g, dst, raw_off, len);
	gz_follow(w, dst, raw_off, len);
	return 0;
}

/* CRC-32 of U: the segments' CRCs joined, generating the missing ones. */
static int gz_crc(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct tfr_geom *g,
		  uint64_t S, uint32_t *out)
{
	const uint64_t kseg = dl_tfr_gz_key(f, DL_TFR_GZ_SEG_TAG);
	const uLong op = SEG_OP_INIT();
	uint8_t *buf = NULL;
	uLong acc = 0;

	if (dl_dcache_get(ctx, kseg, GZ_WHOLE, out) == 0)
		return 0;
	for (uint64_t k = 0, o = 0; o < S; k++, o += GZ_SEG) {
		size_t n = S - o < GZ_SEG ? (size_t)(S - o) : GZ_SEG;
		uint32_t c;

		if (dl_dcache_get(ctx, kseg, k, &c) != 0) {
			if (!buf && !(buf = malloc(GZ_SEG)))
				return -ENOMEM;
			tfr_raw(ctx, f, g, buf, o, n);
			c = dl_crc32(0, buf, n);
			dl_dcache_put(ctx, kseg, k, c);
		}
		acc = n == GZ_SEG ? SEG_JOIN(acc, c, op) : dl_crc32_combine((uint32_t)acc, c, n);
	}
	free(buf);
	*out = (uint32_t)acc;
	dl_dcache_put(ctx, kseg, GZ_WHOLE, *out);
	return 0;
}

static int gz_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct tfr_geom *g,
		   uint8_t *buf, uint64_t off, size_t len)
{
	const uint64_t S = f->samples * g->rec;
	const uint64_t tr = GZ_HDR + dl_ds_size(S); /* trailer offset */
	struct gz_walk w = {
	    .ctx = ctx,
	    .f = f,
	    .g = g,
	    .S = S,
	    .kseg = dl_tfr_gz_key(f, DL_TFR_GZ_SEG_TAG),
	    .kpart = dl_tfr_gz_key(f, DL_TFR_GZ_PART_TAG),
	    .seg = GZ_WHOLE,
	};
	uint8_t h[GZ_HDR > GZ_TRAILER ? GZ_HDR : GZ_TRAILER];
	int ret;

	if (off < GZ_HDR) {
		gzip_head(f, h);
		dl_copy_overlap(buf, off, len, h, 0, GZ_HDR);
	}
	ret = dl_ds_read(buf, off, len, GZ_HDR, S, gz_fill, &w);
	if (ret)
		return ret;
	if (w.run)
		dl_dcache_put(ctx, w.kpart, w.at, w.crc);
	if (off + len > tr) {
		uint32_t crc = 0;

		/* The CRC only when this read returns one of its bytes. */
		if (off < tr + 4) {
			ret = gz_crc(ctx, f, g, S, &crc);
			if (ret)
				return ret;
		}
		dl_put_le32(h, crc);
		dl_put_le32(h + 4, (uint32_t)S);
		dl_copy_overlap(buf, off, len, h, tr, GZ_TRAILER);
	}
	return 0;
}

static int tfr_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len)
{
	struct tfr_geom g;
	int ret = tfr_geom(f->sample_bytes, &g);

	if (ret)
		return ret;
	if (f->ds->compression == DL_COMP_GZIP)
		return gz_read(ctx, f, &g, buf, off, len);
	tfr_raw(ctx, f, &g, buf, off, len);
	return 0;
}

const struct dl_format_ops dl_fmt_tfrecord_ops = {
	.id = DL_FMT_TFRECORD,
	.name = "tfrecord",
	.dlio_name = "tfrecord",
	.ext = "tfrecord",
	.example = "sample_size: {mean: 3000, stdev: 500}, samples_per_file: 5",
	.features = DL_FF_SHAPE,
	.comps = (const struct dl_comp_use[]){{DL_COMP_GZIP, "a GZIP file"}},
	.ncomps = 1,
	/* DLIO's TFRecord writer ignores its compression key. */
	.nparts = 1,
	.read_hints = {.plan = DL_PLAN_STREAM, .batch = 64, .read_threads = 8, .flags = DL_RH_CRC},
	.layout = tfr_layout,
	.read = tfr_read,
};
