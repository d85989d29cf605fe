/* DLRM Criteo binary, raw and indexed_binary: exact sizes, field ranges,
 * index values, and any read split equals the full read. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dliofs/clock.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "dlrm_i.h"
#include "formats_i.h"
#include "tap.h"

static int32_t rd_i32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static uint64_t rd_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t rng(uint64_t *s)
{
	return dl_mix64(*s += DL_GOLDEN64);
}

static double now(void)
{
	return (double)dl_mono_ns() * 1e-9;
}

static struct dl_dataset mkds(enum dl_format fmt, uint64_t S, uint64_t stdev, uint64_t samples,
			      uint64_t files, uint64_t card)
{
	struct dl_dataset ds;

	memset(&ds, 0, sizeof(ds));
	strcpy(ds.name, "d");
	ds.id = dl_key3(fmt, S, card);
	ds.format = fmt;
	ds.files[DL_SPLIT_TRAIN] = files;
	ds.samples_per_file = samples;
	ds.sample_size.mean = S;
	ds.sample_size.stdev = stdev;
	ds.sample_size.min = stdev ? 1 : S;
	ds.sample_size.max = stdev ? S + 6 * stdev : S;
	DL_DS_PARAMS(&ds, struct dl_dlrm_params)->cardinality = card;
	strcpy(ds.file_prefix, "img");
	return ds;
}

static struct dl_fmt_ctx *mkctx(uint64_t seed)
{
	struct dl_fmt_ctx *ctx = NULL;

	if (dl_fmt_ctx_new(seed, 1024, &ctx))
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

/* Random ranges (and every alignment near the start) equal the full read. */
static int pieces_match(struct dl_fmt_ctx *ctx, const struct dl_file *f, const uint8_t *full,
			int n)
{
	uint64_t s = f->key;
	uint8_t *tmp = malloc(70000);
	int bad = 0;

	for (int k = 0; k < n; k++) {
		uint64_t off = k < 200 ? (uint64_t)k % (f->size ? f->size : 1) : rng(&s) % f->size;
		size_t l = 1 + (k < 200 ? (size_t)k : rng(&s) % (k & 1 ? 70000 : 500));
		if (l > f->size - off)
			l = f->size - off;
		dl_file_read(ctx, f, tmp, off, l);
		bad += memcmp(tmp, full + off, l) != 0;
	}
	free(tmp);
	return bad;
}

static void test_dlrm(void)
{
	static const uint64_t cards[] = {0, 1000, 1, 5000000000ull};
	struct dl_fmt_ctx *ctx = mkctx(42);

	for (size_t ci = 0; ci < sizeof(cards) / sizeof(cards[0]); ci++) {
		const uint64_t recs = 10007;
		struct dl_dataset ds = mkds(DL_FMT_DLRM, 0, 0, recs, 2, cards[ci]);
		uint64_t card = cards[ci] == 0 ? 10000000 : cards[ci] > (1ull << 31) ? 1ull << 31 : cards[ci];
		struct dl_file f;
		uint8_t *b;
		int bad_label = 0, bad_dense = 0, bad_cat = 0;
		long ones = 0, dense_small = 0, dense_big = 0;
		int64_t cat_max = 0;

		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 1, 0, &f) == 0, "init");
		CHECK(f.size == 160 * recs, "size %llu", (unsigned long long)f.size);
		b = read_all(ctx, &f);
		for (uint64_t r = 0; r < recs; r++) {
			const uint8_t *p = b + 160 * r;
			int32_t l = rd_i32(p);

			bad_label += l != 0 && l != 1;
			ones += l;
			for (int j = 1; j <= 13; j++) {
				int32_t d = rd_i32(p + 4 * j);
				bad_dense += d < 0 || d > 65535;
				dense_small += d < 16;
				dense_big += d >= 4096;
			}
			for (int j = 14; j < 40; j++) {
				int32_t c = rd_i32(p + 4 * j);
				bad_cat += c < 0 || (uint64_t)c >= card;
				if (c > cat_max)
					cat_max = c;
			}
		}
		CHECK(bad_label == 0, "labels 0/1");
		CHECK(ones > (long)recs * 4 / 10 && ones < (long)recs * 6 / 10, "label balance %ld",
		      ones);
		CHECK(bad_dense == 0, "dense in [0, 65535]");
		CHECK(dense_small > (long)recs * 13 / 4 && dense_big > (long)recs * 13 / 20,
		      "dense skewed but spread: %ld small, %ld big", dense_small, dense_big);
		CHECK(bad_cat == 0, "categorical below %llu", (unsigned long long)card);
		/* The ids use the whole range (the largest of 260k uniform draws is
		 * within 0.01% of the top). */
		CHECK(card == 1 ? cat_max == 0 : (uint64_t)cat_max > card - card / 1000 - 2,
		      "categorical range used: max %lld of %llu", (long long)cat_max,
		      (unsigned long long)card);
		CHECK(pieces_match(ctx, &f, b, 2000) == 0, "pieces card %llu",
		      (unsigned long long)card);
		{
			/* Exact values from the mapping in dlrm.c's header (whatever
			 * vector path the read took): stream 'dlrm' region of the file. */
			uint8_t *raw = malloc(160 * recs);
			unsigned bad = 0;
			dl_prng_fill(dl_file_stream(&f, 0x646c726dULL), 0, raw, 160 * recs);
			for (uint64_t i = 0; i < 40 * recs; i++) {
				uint32_t u = (uint32_t)rd_i32(raw + 4 * i), want;
				unsigned j = (unsigned)(i % 40);
				want = j == 0 ? (u & 1)
				       : j <= 13 ? (u >> 16) >> (u & 15)
						 : (uint32_t)(((uint64_t)u * card) >> 32);
				bad += (uint32_t)rd_i32(b + 4 * i) != want;
			}
			CHECK(bad == 0, "%u fields differ from the documented mapping (card %llu)", bad,
			      (unsigned long long)card);
			free(raw);
		}
		/* Records are distinct; another file differs. */
		CHECK(memcmp(b, b + 160, 160) != 0, "records differ");
		{
			struct dl_file f0;
			uint8_t *b0;
			dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f0);
			b0 = read_all(ctx, &f0);
			CHECK(memcmp(b0, b, f.size) != 0, "files differ");
			free(b0);
		}
		free(b);
	}
	/* Batch reads as the MLPerf loader does them: 160 * B at i * 160 * B. */
	{
		const uint64_t recs = 1000, B = 128;
		struct dl_dataset ds = mkds(DL_FMT_DLRM, 0, 0, recs, 1, 0);
		struct dl_file f;
		uint8_t *full, *b = malloc(160 * B);
		int bad = 0, nreads = 0;

		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
		full = read_all(ctx, &f);
		for (uint64_t i = 0; i * 160 * B < f.size; i++, nreads++) {
			uint64_t off = i * 160 * B, l = f.size - off < 160 * B ? f.size - off : 160 * B;
			dl_file_read(ctx, &f, b, off, l);
			bad += memcmp(b, full + off, l) != 0;
		}
		CHECK(bad == 0 && nreads == 8, "batch reads (%d)", nreads);
		free(b);
		free(full);
	}
	{
		const struct dl_format_ops *ops = dl_format_ops(DL_FMT_DLRM);
		CHECK(ops && !strcmp(ops->name, "dlrm") && !strcmp(ops->ext, "bin") &&
			      ops->nparts == 1,
		      "dlrm ops");
	}
	dl_fmt_ctx_free(ctx);
}

static void test_raw(void)
{
	struct dl_fmt_ctx *ctx = mkctx(42), *c2 = mkctx(43);
	struct dl_dataset ds = mkds(DL_FMT_RAW, 50000, 20000, 7, 4, 0);
	uint64_t first = 0;
	int distinct = 0;

	for (uint64_t i = 0; i < 4; i++) {
		struct dl_file f, g;
		uint8_t *b, *o;

		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, i, 0, &f) == 0, "init");
		CHECK(f.size == 7 * f.sample_bytes && f.sample_bytes >= 1, "raw size");
		if (i == 0)
			first = f.sample_bytes;
		else
			distinct |= f.sample_bytes != first;
		b = read_all(ctx, &f);
		CHECK(pieces_match(ctx, &f, b, 1000) == 0, "raw pieces");
		dl_file_init(c2, &ds, DL_SPLIT_TRAIN, i, 0, &g);
		o = read_all(c2, &g);
		CHECK(g.size != f.size || memcmp(o, b, f.size) != 0, "seed changes raw bytes");
		free(o);
		free(b);
	}
	CHECK(distinct, "raw sizes follow the distribution");
	{
		const struct dl_format_ops *ops = dl_format_ops(DL_FMT_RAW);
		CHECK(ops && !strcmp(ops->name, "raw") && !strcmp(ops->ext, "raw") &&
			      ops->nparts == 1,
		      "raw ops");
	}
	dl_fmt_ctx_free(ctx);
	dl_fmt_ctx_free(c2);
}

static void test_indexed_binary(void)
{
	struct dl_fmt_ctx *ctx = mkctx(42);
	struct dl_dataset ds = mkds(DL_FMT_INDEXED_BINARY, 4096, 1000, 33, 3, 0);
	const struct dl_format_ops *ops = dl_format_ops(DL_FMT_INDEXED_BINARY);
	struct dl_file f;

	CHECK(ops && !strcmp(ops->name, "indexed_binary") && !strcmp(ops->ext, "indexed_binary") &&
		      ops->nparts == 3 && !strcmp(ops->part_suffix[1], ".off.idx") &&
		      !strcmp(ops->part_suffix[2], ".sz.idx"),
	      "indexed_binary ops");
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 3, &f) == -ENOENT, "part 3");
	for (uint64_t i = 0; i < 3; i++) {
		struct dl_file d, o, z;
		uint8_t *bd, *bo, *bz;
		int bad_off = 0, bad_sz = 0;

		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, i, 0, &d);
		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, i, 1, &o);
		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, i, 2, &z);
		CHECK(d.sample_bytes == o.sample_bytes && d.sample_bytes == z.sample_bytes,
		      "parts agree on the sample size");
		CHECK(d.size == 33 * d.sample_bytes && o.size == 33 * 8 && z.size == 33 * 8,
		      "sizes %llu %llu %llu", (unsigned long long)d.size, (unsigned long long)o.size,
		      (unsigned long long)z.size);
		bd = read_all(ctx, &d);
		bo = read_all(ctx, &o);
		bz = read_all(ctx, &z);
		for (uint64_t k = 0; k < 33; k++) {
			bad_off += rd_le64(bo + 8 * k) != k * d.sample_bytes;
			bad_sz += rd_le64(bz + 8 * k) != d.sample_bytes;
		}
		CHECK(bad_off == 0, "offsets i * S");
		CHECK(bad_sz == 0, "sizes S");
		CHECK(pieces_match(ctx, &d, bd, 500) == 0, "data pieces");
		CHECK(pieces_match(ctx, &o, bo, 500) == 0, "off pieces");
		CHECK(pieces_match(ctx, &z, bz, 500) == 0, "sz pieces");
		free(bd);
		free(bo);
		free(bz);
	}
	dl_fmt_ctx_free(ctx);
}

static void bench(void)
{
	struct dl_fmt_ctx *ctx = mkctx(42);
	struct dl_dataset ds = mkds(DL_FMT_DLRM, 0, 0, 400000, 1, 0);
	struct dl_file f;
	const size_t piece = 160 * 2048;
	uint8_t *p = malloc(piece);
	double t;

	dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
	t = now();
	for (uint64_t off = 0; off < f.size; off += piece) {
		size_t l = f.size - off < piece ? (size_t)(f.size - off) : piece;
		dl_file_read(ctx, &f, p, off, l);
	}
	printf("bench: dlrm sequential 160*2048-byte reads: %.2f GB/s\n",
	       f.size / (now() - t) / 1e9);
	free(p);
	dl_fmt_ctx_free(ctx);
}

int main(void)
{
	test_dlrm();
	test_raw();
	test_indexed_binary();
	bench();
	return tap_done("dlrm_raw");
}
