/* DLIO's csv and mmap_indexed_binary: the csv text parsed back (header,
 * row indices, one record per file as DLIO repeats it, values 0..254, each
 * block of 255 a permutation), exact sizes at the digit boundaries, and any
 * read split equals the full read; mmap_indexed_binary is indexed_binary's
 * bytes under its own names. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "tap.h"

static uint64_t rng(uint64_t *s)
{
	return dl_mix64(*s += DL_GOLDEN64);
}

static struct dl_fmt_ctx *mkctx(uint64_t seed)
{
	struct dl_fmt_ctx *ctx = NULL;

	if (dl_fmt_ctx_new(seed, 1024, &ctx))
		abort();
	return ctx;
}

static struct dl_dataset mkds(enum dl_format fmt, uint64_t values, uint64_t stdev,
			      uint64_t samples, uint64_t files)
{
	struct dl_dataset ds;

	memset(&ds, 0, sizeof(ds));
	strcpy(ds.name, "d");
	ds.id = dl_key3(fmt, values, samples);
	ds.format = fmt;
	ds.files[DL_SPLIT_TRAIN] = files;
	ds.samples_per_file = samples;
	ds.sample_size.mean = values;
	ds.sample_size.stdev = stdev;
	ds.sample_size.min = stdev ? 1 : values;
	ds.sample_size.max = stdev ? values + 6 * stdev : values;
	strcpy(ds.file_prefix, "img");
	return ds;
}

static uint8_t *read_all(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t *b = malloc(f->size + 1);

	if (!b || dl_file_read(ctx, f, b, 0, f->size))
		abort();
	b[f->size] = 0;
	return b;
}

/* Random ranges, and every small range near the start and the end, equal
 * the full read. */
static int pieces_match(struct dl_fmt_ctx *ctx, const struct dl_file *f, const uint8_t *full,
			int n)
{
	uint64_t s = f->key;
	uint8_t *tmp = malloc(70000);
	int bad = 0;

	for (int k = 0; k < n; k++) {
		uint64_t off;
		size_t l;

		if (k < 300) {
			off = k < 150 ? (uint64_t)k : f->size - 1 - (uint64_t)(k - 150) % f->size;
			off %= f->size;
			l = 1 + (size_t)k % 37;
		} else {
			off = rng(&s) % f->size;
			l = 1 + rng(&s) % (k & 1 ? 70000 : 300);
		}
		if (l > f->size - off)
			l = f->size - off;
		if (dl_file_read(ctx, f, tmp, off, l))
			bad++;
		else
			bad += memcmp(tmp, full + off, l) != 0;
	}
	free(tmp);
	return bad;
}

/* Parse a decimal at *p up to the delimiter; -1 when not a number. */
static long long number(const char **p)
{
	long long v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
		return -1;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	*p = s;
	return v;
}

/* The text as pandas would read it: 0 when it is DLIO's layout for n values
 * and rows rows, every block of 255 values a permutation of 0..254. */
static int parse_csv(const char *t, uint64_t n, uint64_t rows, uint8_t *first)
{
	const char *p = t;
	int seen[255];

	for (uint64_t k = 0; k < n; k++)
		if (*p++ != ',' || number(&p) != (long long)k)
			return 1;
	if (*p++ != '\n')
		return 2;
	for (uint64_t r = 0; r < rows; r++) {
		if (number(&p) != (long long)r)
			return 3;
		for (uint64_t k = 0; k < n; k++) {
			long long v;

			if (*p++ != ',' || (v = number(&p)) < 0 || v > 254)
				return 4;
			if (r == 0)
				first[k] = (uint8_t)v;
			else if (first[k] != v)
				return 5; /* DLIO repeats the file's record */
		}
		if (*p++ != '\n')
			return 6;
	}
	if (*p)
		return 7;
	for (uint64_t b = 0; b + 255 <= n; b += 255) {
		memset(seen, 0, sizeof(seen));
		for (int i = 0; i < 255; i++)
			seen[first[b + (uint64_t)i]]++;
		for (int i = 0; i < 255; i++)
			if (seen[i] != 1)
				return 8;
	}
	return 0;
}

static void test_csv(void)
{
	/* Values and rows around the digit and block boundaries. */
	static const uint64_t values[] = {1, 9, 10, 11, 254, 255, 256, 510, 1001, 4096};
	static const uint64_t rows[] = {1, 2, 10, 11, 101};
	struct dl_fmt_ctx *ctx = mkctx(7), *c2 = mkctx(8);
	const struct dl_format_ops *ops = dl_format_ops(DL_FMT_CSV);

	CHECK(ops && !strcmp(ops->name, "csv") && !strcmp(ops->dlio_name, "csv") &&
		      !strcmp(ops->ext, "csv") && ops->nparts == 1,
	      "csv ops");
	for (size_t vi = 0; vi < sizeof(values) / sizeof(values[0]); vi++) {
		for (size_t ri = 0; ri < sizeof(rows) / sizeof(rows[0]); ri++) {
			struct dl_dataset ds = mkds(DL_FMT_CSV, values[vi], 0, rows[ri], 2);
			uint8_t *first = malloc(values[vi]);
			struct dl_file f, g;
			uint8_t *b, *o;
			int ret;

			CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 1, 0, &f) == 0, "init");
			b = read_all(ctx, &f);
			ret = parse_csv((const char *)b, values[vi], rows[ri], first);
			CHECK(ret == 0 && strlen((const char *)b) == f.size,
			      "%llu values x %llu rows: layout (%d)", (unsigned long long)values[vi],
			      (unsigned long long)rows[ri], ret);
			CHECK(pieces_match(ctx, &f, b, 600) == 0, "%llu x %llu: pieces",
			      (unsigned long long)values[vi], (unsigned long long)rows[ri]);
			dl_file_init(c2, &ds, DL_SPLIT_TRAIN, 1, 0, &g);
			o = read_all(c2, &g);
			CHECK(values[vi] < 2 || g.size != f.size || memcmp(o, b, f.size),
			      "the seed changes the values");
			free(o);
			free(b);
			free(first);
		}
	}
	{
		/* Sizes drawn per file, as DLIO draws the record's sides. */
		struct dl_dataset ds = mkds(DL_FMT_CSV, 3000, 1000, 3, 6);
		uint64_t sz[6];
		int distinct = 0;

		for (uint64_t i = 0; i < 6; i++) {
			struct dl_file f;
			uint8_t *b, *first;

			dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, i, 0, &f);
			first = malloc(f.sample_bytes);
			b = read_all(ctx, &f);
			CHECK(parse_csv((const char *)b, f.sample_bytes, 3, first) == 0,
			      "drawn size: layout");
			sz[i] = f.sample_bytes;
			distinct |= i && sz[i] != sz[0];
			free(first);
			free(b);
		}
		CHECK(distinct, "values per row follow the distribution");
	}
	dl_fmt_ctx_free(ctx);
	dl_fmt_ctx_free(c2);
}

static void test_mmap_indexed_binary(void)
{
	struct dl_fmt_ctx *ctx = mkctx(42);
	const struct dl_format_ops *ops = dl_format_ops(DL_FMT_MMAP_INDEXED_BINARY);
	struct dl_dataset a = mkds(DL_FMT_MMAP_INDEXED_BINARY, 2048, 0, 9, 2);
	struct dl_dataset b = a;

	CHECK(ops && !strcmp(ops->dlio_name, "mmap_indexed_binary") &&
		      !strcmp(ops->ext, "mmap_indexed_binary") && ops->nparts == 3 &&
		      !strcmp(ops->part_suffix[1], ".off.idx") &&
		      !strcmp(ops->part_suffix[2], ".sz.idx"),
	      "mmap_indexed_binary ops");
	b.format = DL_FMT_INDEXED_BINARY;
	for (uint32_t part = 0; part < 3; part++) {
		struct dl_file f, g;
		uint8_t *x, *y;

		CHECK(dl_file_init(ctx, &a, DL_SPLIT_TRAIN, 1, part, &f) == 0 &&
			      dl_file_init(ctx, &b, DL_SPLIT_TRAIN, 1, part, &g) == 0 &&
			      f.size == g.size,
		      "part %u sizes", part);
		x = read_all(ctx, &f);
		y = read_all(ctx, &g);
		CHECK(!memcmp(x, y, f.size), "part %u: indexed_binary's bytes", part);
		CHECK(pieces_match(ctx, &f, x, 300) == 0, "part %u pieces", part);
		free(x);
		free(y);
	}
	dl_fmt_ctx_free(ctx);
}

int main(void)
{
	test_csv();
	test_mmap_indexed_binary();
	return tap_done("csv");
}
