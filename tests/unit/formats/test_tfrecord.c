/* CRC-32C (both code paths, combine) and TFRecord files: the worked sizes of
 * docs/formats.md 2.2, records parsed back by an independent parser that checks
 * both CRCs with a bitwise reference CRC, any read split equals the full read
 * whatever the state of the CRC cache, and the measured costs. The GZIP
 * variant: its arithmetic, zlib's gzip inflate (which checks the trailer's
 * CRC-32 and length) giving exactly the uncompressed variant, the same split
 * reads, and when its trailer CRC is (and is not) computed. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "dliofs/clock.h"
#include "dliofs/crc32c.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "tap.h"
#include "tfrecord_i.h"

/* ---- independent references ------------------------------------------- */

/* Bit at a time, straight from the definition. */
static uint32_t ref_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

static uint32_t ref_mask(uint32_t c)
{
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t rd_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t rd_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- minimal protobuf reader for tf.train.Example ---------------------- */

struct cur {
	const uint8_t *p, *end;
};

static int varint(struct cur *c, uint64_t *v)
{
	uint64_t x = 0;

	for (int s = 0; s < 64; s += 7) {
		if (c->p >= c->end)
			return -1;
		uint8_t b = *c->p++;
		x |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Next field: number, wire type, and for wire type 2 a sub-cursor. */
static int field(struct cur *c, unsigned *num, unsigned *wt, struct cur *sub, uint64_t *ival)
{
	uint64_t tag, n;

	if (varint(c, &tag))
		return -1;
	*num = (unsigned)(tag >> 3);
	*wt = (unsigned)(tag & 7);
	if (*wt == 0)
		return varint(c, ival);
	if (*wt != 2 || varint(c, &n) || n > (uint64_t)(c->end - c->p))
		return -1;
	sub->p = c->p;
	sub->end = c->p + n;
	c->p += n;
	return 0;
}

struct example {
	const uint8_t *image;
	uint64_t image_len;
	int have_image, have_size;
	int64_t size;
	unsigned nfeatures;
};

static int parse_feature(struct cur f, const char *key, size_t keylen, struct example *ex)
{
	unsigned num, wt;
	struct cur sub, list;
	uint64_t v;

	while (f.p < f.end) {
		if (field(&f, &num, &wt, &sub, &v))
			return -1;
		if (num == 1 && wt == 2 && keylen == 5 && !memcmp(key, "image", 5)) {
			while (sub.p < sub.end) {	/* BytesList */
				if (field(&sub, &num, &wt, &list, &v) || num != 1 || wt != 2)
					return -1;
				ex->image = list.p;
				ex->image_len = (uint64_t)(list.end - list.p);
				ex->have_image++;
			}
		} else if (num == 3 && wt == 2 && keylen == 4 && !memcmp(key, "size", 4)) {
			while (sub.p < sub.end) {	/* Int64List: packed or not */
				if (field(&sub, &num, &wt, &list, &v) || num != 1)
					return -1;
				if (wt == 0) {
					ex->size = (int64_t)v;
					ex->have_size++;
				}
				while (wt == 2 && list.p < list.end) {
					if (varint(&list, &v))
						return -1;
					ex->size = (int64_t)v;
					ex->have_size++;
				}
			}
		} else {
			return -1;
		}
	}
	return 0;
}

static int parse_example(const uint8_t *p, size_t n, struct example *ex)
{
	struct cur c = {p, p + n}, feats, entry, val;
	unsigned num, wt;
	uint64_t v;

	memset(ex, 0, sizeof(*ex));
	while (c.p < c.end) {
		if (field(&c, &num, &wt, &feats, &v) || num != 1 || wt != 2)
			return -1;
		while (feats.p < feats.end) {
			const uint8_t *key = NULL;
			size_t keylen = 0;
			int have_val = 0;

			if (field(&feats, &num, &wt, &entry, &v) || num != 1 || wt != 2)
				return -1;
			while (entry.p < entry.end) {
				struct cur sub;
				if (field(&entry, &num, &wt, &sub, &v) || wt != 2)
					return -1;
				if (num == 1) {
					key = sub.p;
					keylen = (size_t)(sub.end - sub.p);
				} else if (num == 2) {
					val = sub;
					have_val = 1;
				}
			}
			if (!key || !have_val || parse_feature(val, (const char *)key, keylen, ex))
				return -1;
			ex->nfeatures++;
		}
	}
	return 0;
}

/* Check every record of a file image: framing, both CRCs (reference CRC),
 * Example contents and image bytes against the generator. Returns the
 * number of good records, or -1 after printing the first problem. */
static long check_file(const struct dl_file *f, const uint8_t *buf, uint64_t size)
{
	uint64_t pos = 0;
	long r = 0;

	while (pos < size) {
		struct example ex;
		uint64_t n;

		if (size - pos < 16) {
			fprintf(stderr, "record %ld: truncated\n", r);
			return -1;
		}
		n = rd_le64(buf + pos);
		if (rd_le32(buf + pos + 8) != ref_mask(ref_crc32c(buf + pos, 8))) {
			fprintf(stderr, "record %ld: bad length CRC\n", r);
			return -1;
		}
		if (n > size - pos - 16) {
			fprintf(stderr, "record %ld: length %llu too large\n", r, (unsigned long long)n);
			return -1;
		}
		if (rd_le32(buf + pos + 12 + n) != ref_mask(ref_crc32c(buf + pos + 12, n))) {
			fprintf(stderr, "record %ld: bad data CRC\n", r);
			return -1;
		}
		if (parse_example(buf + pos + 12, n, &ex) || ex.have_image != 1 ||
		    ex.have_size != 1 || ex.nfeatures != 2) {
			fprintf(stderr, "record %ld: bad Example\n", r);
			return -1;
		}
		if (ex.image_len != f->sample_bytes || (uint64_t)ex.size != f->sample_bytes) {
			fprintf(stderr, "record %ld: image %llu size %lld, want %llu\n", r,
				(unsigned long long)ex.image_len, (long long)ex.size,
				(unsigned long long)f->sample_bytes);
			return -1;
		}
		if ((uint64_t)(ex.image - (buf + pos)) != f->aux[2]) {
			fprintf(stderr, "record %ld: image at %lld, aux says %llu\n", r,
				(long long)(ex.image - (buf + pos)), (unsigned long long)f->aux[2]);
			return -1;
		}
		if (ex.image_len) {
			uint8_t *want = malloc(ex.image_len);
			int same;

			dl_prng_fill(dl_file_stream(f, (uint64_t)r), 0, want, ex.image_len);
			same = !memcmp(want, ex.image, ex.image_len);
			free(want);
			if (!same) {
				fprintf(stderr, "record %ld: image bytes differ\n", r);
				return -1;
			}
		}
		pos += n + 16;
		r++;
	}
	return r;
}

/* ---- fixtures ---------------------------------------------------------- */

static struct dl_dataset mkds(uint64_t N, uint64_t stdev, uint64_t samples, uint64_t files)
{
	struct dl_dataset ds;

	memset(&ds, 0, sizeof(ds));
	strcpy(ds.name, "tfr");
	/* Content (and cached CRCs) are keyed by dataset id: one id per shape. */
	ds.id = dl_key3(N, stdev, samples);
	ds.format = DL_FMT_TFRECORD;
	ds.files[DL_SPLIT_TRAIN] = files;
	ds.files[DL_SPLIT_VALID] = 1;
	ds.samples_per_file = samples;
	ds.sample_size.mean = N;
	ds.sample_size.stdev = stdev;
	ds.sample_size.min = stdev ? 1 : N;
	ds.sample_size.max = stdev ? N + 6 * stdev : N;
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

static double now(void)
{
	return (double)dl_mono_ns() * 1e-9;
}

static uint64_t rng(uint64_t *s)
{
	return dl_mix64(*s += DL_GOLDEN64);
}

/* ---- CRC-32C ----------------------------------------------------------- */

static void test_crc_vectors(void)
{
	static const char digits[] = "123456789";
	uint8_t z[32], ff[32];

	memset(z, 0, sizeof(z));
	memset(ff, 0xff, sizeof(ff));
	CHECK(ref_crc32c((const uint8_t *)digits, 9) == 0xe3069283u, "reference");
	CHECK(dl_crc32c_sw(0, digits, 9) == 0xe3069283u, "sw 123456789");
	CHECK(dl_crc32c_sw(0, z, 32) == 0x8a9136aau, "sw zeros");
	CHECK(dl_crc32c_sw(0, ff, 32) == 0x62a8ab43u, "sw 0xff");
	CHECK(dl_crc32c(0, digits, 9) == 0xe3069283u, "dispatch 123456789");
	CHECK(dl_crc32c(0, z, 32) == 0x8a9136aau, "dispatch zeros");
	CHECK(dl_crc32c(0, ff, 32) == 0x62a8ab43u, "dispatch 0xff");
	CHECK(dl_crc32c(0, "", 0) == 0, "empty");
	if (dl_crc32c_hw_available()) {
		CHECK(dl_crc32c_hw(0, digits, 9) == 0xe3069283u, "hw 123456789");
		CHECK(dl_crc32c_hw(0, z, 32) == 0x8a9136aau, "hw zeros");
		CHECK(dl_crc32c_hw(0, ff, 32) == 0x62a8ab43u, "hw 0xff");
	} else {
		printf("note: no SSE4.2, hw path not tested\n");
	}
	/* Incremental feeding equals one call. */
	CHECK(dl_crc32c(dl_crc32c(0, digits, 4), digits + 4, 5) == 0xe3069283u, "continue");
	CHECK(dl_crc32c_unmask(dl_crc32c_mask(0xe3069283u)) == 0xe3069283u, "unmask");
	CHECK(dl_crc32c_mask(0x12345678u) == ref_mask(0x12345678u), "mask");
}

/* Both paths on random data at every alignment and many lengths (covering
 * the 3-stream blocks of 3 * 256 and 3 * 8192 bytes and their edges). */
static void test_crc_paths(void)
{
	const size_t max = 200000;
	uint8_t *b = malloc(max + 16);
	int bad_sw = 0, bad_hw = 0, bad_ref = 0, n = 0;
	static const size_t edge[] = {767, 768, 769, 1536, 24575, 24576, 24577, 49152, 49159, 73728};

	dl_prng_fill(99, 0, b, max + 16);
	for (size_t len = 0; len < max; len = len < 64 ? len + 1 : len * 5 / 4 + 3) {
		for (size_t a = 0; a < 8; a++) {
			uint32_t want = len <= 4096 ? ref_crc32c(b + a, len) : dl_crc32c_sw(0, b + a, len);
			if (len <= 4096 && dl_crc32c_sw(0, b + a, len) != want)
				bad_ref++;
			if (dl_crc32c(0, b + a, len) != want)
				bad_sw++;
			if (dl_crc32c_hw_available() && dl_crc32c_hw(0, b + a, len) != want)
				bad_hw++;
			n++;
		}
	}
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		uint32_t want = ref_crc32c(b + 3, edge[i]);
		CHECK(dl_crc32c_sw(0, b + 3, edge[i]) == want, "sw len %zu", edge[i]);
		CHECK(dl_crc32c(0, b + 3, edge[i]) == want, "best len %zu", edge[i]);
	}
	CHECK(bad_ref == 0, "slice-by-8 vs bitwise: %d of %d", bad_ref, n);
	CHECK(bad_sw == 0, "dispatch vs slice-by-8: %d of %d", bad_sw, n);
	CHECK(bad_hw == 0, "hw vs slice-by-8: %d of %d", bad_hw, n);
	free(b);
}

static void test_crc_combine(void)
{
	const size_t n = 3 << 20;
	uint8_t *b = malloc(n);
	uint32_t whole;
	uint64_t s = 11;
	int bad = 0;

	dl_prng_fill(5, 0, b, n);
	whole = dl_crc32c(0, b, n);
	for (int i = 0; i < 40; i++) {
		size_t cut = i < 4 ? (size_t[]){0, 1, n - 1, n}[i] : (size_t)(rng(&s) % n) | 1;
		uint32_t a = dl_crc32c(0, b, cut), c = dl_crc32c(0, b + cut, n - cut);
		if (dl_crc32c_combine(a, c, n - cut) != whole)
			bad++;
	}
	CHECK(bad == 0, "combine at odd cuts: %d bad", bad);
	/* Three pieces, both association orders. */
	{
		uint32_t a = dl_crc32c(0, b, 1001), m = dl_crc32c(0, b + 1001, 77777);
		uint32_t z = dl_crc32c(0, b + 78778, n - 78778);
		CHECK(dl_crc32c_combine(dl_crc32c_combine(a, m, 77777), z, n - 78778) == whole, "l");
		CHECK(dl_crc32c_combine(a, dl_crc32c_combine(m, z, n - 78778), n - 1001) == whole,
		      "r");
	}
	/* Appending zeros: combine with the CRC of a zero block. */
	{
		uint8_t *zz = calloc(1, 100003);
		uint32_t a = dl_crc32c(0, b, 999);
		memset(b + 999, 0, 100003);
		CHECK(dl_crc32c_combine(a, dl_crc32c(0, zz, 100003), 100003) ==
			      dl_crc32c(0, b, 999 + 100003),
		      "zeros");
		free(zz);
	}
	/* The shift operator: x^0 for no bytes, and additive in the length
	 * including lengths whose bit count exceeds 64 (reduced modulo the order). */
	CHECK(dl_crc32c_x8n(0) == 0x80000000u, "x^0");
	CHECK(dl_crc32c_x8n(1) == 0x00800000u, "x^8");
	{
		uint32_t c1 = 0xdeadbeef;
		uint64_t big = 1ull << 61;
		uint32_t t = dl_crc32c_combine(dl_crc32c_combine(c1, 0, big), 0, big + 12345);
		CHECK(t == dl_crc32c_combine(c1, 0, 2 * big + 12345), "huge lengths");
	}
	free(b);
}

/* ---- TFRecord ---------------------------------------------------------- */

static void test_worked_table(void)
{
	static const struct {
		uint64_t N, n, rec, pay, after;
	} t[] = {
		{0, 32, 48, 29, 15},
		{100, 133, 149, 30, 15},
		{114244, 114288, 114304, 39, 17},
		{150528, 150572, 150588, 39, 17},
		{2825761, 2825811, 2825827, 44, 18},
		{268435456, 268435512, 268435528, 49, 19},
	};
	struct dl_fmt_ctx *ctx = mkctx(1, 0);

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct dl_dataset ds = mkds(t[i].N, 0, 3, 1);
		struct dl_file f;
		int ret = dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f);

		CHECK(ret == 0, "init N=%llu: %d", (unsigned long long)t[i].N, ret);
		CHECK(f.sample_bytes == t[i].N, "N");
		CHECK(f.aux[1] == t[i].n && f.aux[0] == t[i].rec && f.aux[2] == t[i].pay &&
			      f.aux[3] == t[i].after,
		      "N=%llu: n %llu rec %llu pay %llu after %llu", (unsigned long long)t[i].N,
		      (unsigned long long)f.aux[1], (unsigned long long)f.aux[0],
		      (unsigned long long)f.aux[2], (unsigned long long)f.aux[3]);
		CHECK(f.size == 3 * t[i].rec, "size");
	}
	/* docs/formats.md 2.2: the first 16 bytes of a DLIO record with N = 338 * 338. */
	{
		static const uint8_t want[16] = {0x70, 0xbe, 0x01, 0, 0, 0, 0, 0,
						 0x6e, 0x2a, 0x66, 0x73, 0x0a, 0xec, 0xfc, 0x06};
		struct dl_dataset ds = mkds(114244, 0, 2, 1);
		struct dl_file f;
		uint8_t got[16];

		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
		dl_file_read(ctx, &f, got, f.aux[0], 16);
		CHECK(!memcmp(got, want, 16), "record head bytes");
	}
	dl_fmt_ctx_free(ctx);
}

/* Full files of several sizes parse back with both CRCs right. */
static void test_parse(void)
{
	static const uint64_t Ns[] = {0, 1, 100, 127, 128, 16383, 16384, 114244, 150528, 2825761};
	struct dl_fmt_ctx *ctx = mkctx(42, 0);

	for (size_t i = 0; i < sizeof(Ns) / sizeof(Ns[0]); i++) {
		uint64_t recs = Ns[i] > 1000000 ? 3 : 5;
		struct dl_dataset ds = mkds(Ns[i], 0, recs, 2);
		struct dl_file f;
		uint8_t *b;

		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 1, 0, &f);
		b = read_all(ctx, &f);
		CHECK(check_file(&f, b, f.size) == (long)recs, "parse N=%llu",
		      (unsigned long long)Ns[i]);
		free(b);
	}
	/* A size distribution: each file its own N. */
	{
		struct dl_dataset ds = mkds(100000, 40000, 4, 6);
		uint64_t first = 0;
		int distinct = 0;

		for (uint64_t k = 0; k < 6; k++) {
			struct dl_file f;
			uint8_t *b;

			dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, k, 0, &f);
			if (k == 0)
				first = f.sample_bytes;
			else if (f.sample_bytes != first)
				distinct = 1;
			b = read_all(ctx, &f);
			CHECK(check_file(&f, b, f.size) == 4, "parse dist file %llu (N=%llu)",
			      (unsigned long long)k, (unsigned long long)f.sample_bytes);
			free(b);
		}
		CHECK(distinct, "file sizes vary");
	}
	dl_fmt_ctx_free(ctx);
}

/* Reading in pieces (any order, any size, cold or warm cache, a cache that
 * keeps nothing) gives exactly the bytes of one full read. */
static void test_pieces(void)
{
	static const uint64_t Ns[] = {100, 114244, 2825761};
	uint64_t s = 3;

	for (size_t i = 0; i < sizeof(Ns) / sizeof(Ns[0]); i++) {
		struct dl_dataset ds = mkds(Ns[i], 0, Ns[i] > 1000000 ? 3 : 9, 1);
		struct dl_fmt_ctx *c0 = mkctx(42, 0);
		struct dl_file f;
		uint8_t *full, *b;
		int bad_seq = 0, bad_rand = 0, bad_tiny = 0, bad_tail = 0;

		dl_file_init(c0, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
		full = read_all(c0, &f);
		b = malloc(f.size);

		/* Sequential small pieces of random size, fresh cache: exercises
		 * the running-CRC chain across reads. */
		for (int pass = 0; pass < 2; pass++) {
			struct dl_fmt_ctx *c = mkctx(42, pass ? 1 : 0);
			uint64_t off = 0;

			memset(b, 0xa5, f.size);
			while (off < f.size) {
				uint64_t l = 1 + rng(&s) % (pass ? 70000 : 9000);
				if (l > f.size - off)
					l = f.size - off;
				dl_file_read(c, &f, b + off, off, l);
				off += l;
			}
			bad_seq += memcmp(b, full, f.size) != 0;
			dl_fmt_ctx_free(c);
		}
		/* Random pieces in random order, fresh cache: data CRCs are often
		 * read before (or without) their payload. */
		{
			struct dl_fmt_ctx *c = mkctx(42, 0);
			const uint64_t piece = f.size / 64 + 1;
			uint64_t np = (f.size + piece - 1) / piece;
			uint64_t *order = malloc(np * sizeof(*order));

			for (uint64_t k = 0; k < np; k++)
				order[k] = k;
			for (uint64_t k = np - 1; k > 0; k--) {
				uint64_t j = rng(&s) % (k + 1), t = order[k];
				order[k] = order[j];
				order[j] = t;
			}
			memset(b, 0x5a, f.size);
			for (uint64_t k = 0; k < np; k++) {
				uint64_t off = order[k] * piece;
				uint64_t l = off + piece > f.size ? f.size - off : piece;
				dl_file_read(c, &f, b + off, off, l);
			}
			bad_rand = memcmp(b, full, f.size) != 0;
			free(order);
			dl_fmt_ctx_free(c);
		}
		/* Many tiny random-range reads against the slice of the full read. */
		{
			struct dl_fmt_ctx *c = mkctx(42, 0);
			uint8_t tmp[300];

			for (int k = 0; k < 3000; k++) {
				uint64_t off = rng(&s) % f.size;
				size_t l = 1 + rng(&s) % sizeof(tmp);
				if (l > f.size - off)
					l = f.size - off;
				dl_file_read(c, &f, tmp, off, l);
				bad_tiny += memcmp(tmp, full + off, l) != 0;
			}
			dl_fmt_ctx_free(c);
		}
		/* Cold cache: only the 4 CRC bytes (and 1 byte of them) of each record. */
		for (uint64_t r = 0; r < f.samples; r++) {
			struct dl_fmt_ctx *c = mkctx(42, 0);
			uint64_t at = r * f.aux[0] + 12 + f.aux[1];
			uint8_t crc[4], one;

			dl_file_read(c, &f, crc, at, 4);
			dl_fmt_ctx_free(c);
			c = mkctx(42, 0);
			dl_file_read(c, &f, &one, at + 2, 1);
			dl_fmt_ctx_free(c);
			bad_tail += memcmp(crc, full + at, 4) != 0 || one != full[at + 2];
		}
		CHECK(check_file(&f, full, f.size) == (long)f.samples, "full N=%llu",
		      (unsigned long long)Ns[i]);
		CHECK(bad_seq == 0, "sequential pieces N=%llu", (unsigned long long)Ns[i]);
		CHECK(bad_rand == 0, "shuffled pieces N=%llu", (unsigned long long)Ns[i]);
		CHECK(bad_tiny == 0, "tiny reads N=%llu: %d bad", (unsigned long long)Ns[i],
		      bad_tiny);
		CHECK(bad_tail == 0, "cold CRC reads N=%llu", (unsigned long long)Ns[i]);
		free(b);
		free(full);
		dl_fmt_ctx_free(c0);
	}
}

/* Same seed, same bytes; another seed or file, other bytes; out of range. */
static void test_identity(void)
{
	struct dl_dataset ds = mkds(5000, 0, 4, 3);
	struct dl_fmt_ctx *a = mkctx(42, 0), *b = mkctx(42, 0), *c = mkctx(43, 0);
	struct dl_file fa, fb, fc, f2;
	uint8_t *xa, *xb, *xc, *x2;

	dl_file_init(a, &ds, DL_SPLIT_TRAIN, 1, 0, &fa);
	dl_file_init(b, &ds, DL_SPLIT_TRAIN, 1, 0, &fb);
	dl_file_init(c, &ds, DL_SPLIT_TRAIN, 1, 0, &fc);
	dl_file_init(a, &ds, DL_SPLIT_TRAIN, 2, 0, &f2);
	xa = read_all(a, &fa);
	xb = read_all(b, &fb);
	xc = read_all(c, &fc);
	x2 = read_all(a, &f2);
	CHECK(!memcmp(xa, xb, fa.size), "deterministic");
	CHECK(memcmp(xa, xc, fa.size) != 0, "seed changes bytes");
	CHECK(memcmp(xa, x2, fa.size) != 0, "file changes bytes");
	/* Records of one file differ from each other. */
	CHECK(memcmp(xa + fa.aux[2], xa + fa.aux[0] + fa.aux[2], 5000) != 0, "records differ");
	CHECK(dl_file_init(a, &ds, DL_SPLIT_TRAIN, 3, 0, &f2) == -ENOENT, "index range");
	CHECK(dl_file_init(a, &ds, DL_SPLIT_TRAIN, 0, 1, &f2) == -ENOENT, "one part");
	CHECK(dl_file_read(a, &fa, xa, fa.size - 1, 2) == -EINVAL, "read past end");
	{
		const struct dl_format_ops *ops = dl_format_ops(DL_FMT_TFRECORD);
		CHECK(ops && !strcmp(ops->name, "tfrecord") && !strcmp(ops->ext, "tfrecord") &&
			      ops->nparts == 1,
		      "ops");
	}
	free(xa);
	free(xb);
	free(xc);
	free(x2);
	dl_fmt_ctx_free(a);
	dl_fmt_ctx_free(b);
	dl_fmt_ctx_free(c);
}

/* ---- GZIP variant ------------------------------------------------------ */

static struct dl_dataset mkgz(uint64_t N, uint64_t samples, unsigned level)
{
	/* Same id as the uncompressed twin: same record stream. */
	struct dl_dataset ds = mkds(N, 0, samples, 2);

	ds.compression = DL_COMP_GZIP;
	ds.compression_level = level;
	return ds;
}

static uint64_t gz_size(uint64_t S)
{
	return 10 + S + 5 * (S ? (S + 65534) / 65535 : 1) + 8;
}

/* zlib's gzip decoder (window 16 + 15): checks header, CRC-32 and ISIZE.
 * Returns the output (exactly `ulen` bytes, consuming all `n`) or NULL,
 * saying why unless `quiet`. */
static uint8_t *gunzip(const uint8_t *in, uint64_t n, uint64_t ulen, int quiet)
{
	uint8_t *out = malloc(ulen + 1);
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (!out || inflateInit2(&z, 16 + 15) != Z_OK)
		abort();
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)(ulen + 1);
	rc = inflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END || z.total_in != n || z.total_out != ulen) {
		if (!quiet)
			fprintf(stderr, "gunzip: rc %d (%s), in %lu of %llu, out %lu of %llu\n", rc,
			z.msg ? z.msg : "", z.total_in, (unsigned long long)n, z.total_out,
			(unsigned long long)ulen);
		free(out);
		out = NULL;
	}
	inflateEnd(&z);
	return out;
}

/* Record lengths of exactly 65535 and 65536 bytes put block edges on record
 * edges: the payload size giving record length R. */
static uint64_t n_for_record(struct dl_fmt_ctx *ctx, uint64_t R)
{
	for (uint64_t N = R - 80; N < R; N++) {
		struct dl_dataset ds = mkds(N, 0, 1, 1);
		struct dl_file f;
		if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == 0 && f.aux[0] == R)
			return N;
	}
	abort();
}

static void test_gz_layout(void)
{
	struct dl_fmt_ctx *ctx = mkctx(42, 0);
	struct {
		uint64_t N, samples;
	} t[] = {
		{0, 1}, {1, 25}, {100, 3}, {0, 1}, {0, 2}, {0, 1}, {114244, 5}, {2825761, 2},
	};
	t[3].N = n_for_record(ctx, 65535);	/* S = 65535: one full block */
	t[4].N = t[3].N;			/* two full blocks */
	t[5].N = n_for_record(ctx, 65536);	/* a 1-byte last block */

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		static const unsigned levels[] = {4, 1, 9, 6, 0};
		unsigned level = levels[i % 5];
		struct dl_dataset dz = mkgz(t[i].N, t[i].samples, level);
		struct dl_dataset du = mkds(t[i].N, 0, t[i].samples, 2);
		struct dl_file fz, fu;
		uint8_t *z, *u, *x;
		uint64_t S, nb, bad_blk = 0;
		uint8_t xfl = level == 9 ? 2 : level == 1 ? 4 : 0;

		CHECK(dl_file_init(ctx, &dz, DL_SPLIT_TRAIN, 1, 0, &fz) == 0 &&
			  dl_file_init(ctx, &du, DL_SPLIT_TRAIN, 1, 0, &fu) == 0,
		      "init");
		S = fu.size;
		nb = (S + 65534) / 65535;
		CHECK(fz.size == gz_size(S), "N=%llu x %llu: size %llu, want %llu",
		      (unsigned long long)t[i].N, (unsigned long long)t[i].samples,
		      (unsigned long long)fz.size, (unsigned long long)gz_size(S));
		CHECK(!memcmp(fz.aux, fu.aux, sizeof(fz.aux)), "same record geometry");
		z = read_all(ctx, &fz);
		u = read_all(ctx, &fu);
		CHECK(z[0] == 0x1f && z[1] == 0x8b && z[2] == 8 && z[3] == 0 && rd_le32(z + 4) == 0 &&
			  z[8] == xfl && z[9] == 3,
		      "gzip header (level %u: XFL %u)", level, z[8]);
		for (uint64_t j = 0; j < nb; j++) {
			const uint8_t *h = z + 10 + j * 65540;
			uint64_t blen = j + 1 < nb ? 65535 : S - j * 65535;
			if (h[0] != (j + 1 == nb) || (uint64_t)(h[1] | h[2] << 8) != blen ||
			    ((uint64_t)(h[3] | h[4] << 8) ^ blen) != 0xffff || memcmp(h + 5, u + j * 65535, blen))
				bad_blk++;
		}
		CHECK(bad_blk == 0, "N=%llu: %llu of %llu stored blocks wrong",
		      (unsigned long long)t[i].N, (unsigned long long)bad_blk,
		      (unsigned long long)nb);
		CHECK(rd_le32(z + fz.size - 8) == (uint32_t)crc32(0, u, (uInt)S) &&
			  rd_le32(z + fz.size - 4) == (uint32_t)S,
		      "trailer: CRC-32 and ISIZE");
		x = gunzip(z, fz.size, S, 0);
		CHECK(x && !memcmp(x, u, S), "zlib's gunzip gives the uncompressed variant");
		CHECK(check_file(&fu, u, S) == (long)t[i].samples, "records parse");
		free(x);
		/* A wrong trailer CRC must make zlib fail: the check is real. */
		z[fz.size - 6] ^= 0x10;
		x = gunzip(z, fz.size, S, 1);
		CHECK(x == NULL, "gunzip refuses a bad CRC-32");
		free(x);
		free(z);
		free(u);
	}
	/* ISIZE is the length mod 2^32: a 4.3 GB stream, read only at its end. */
	{
		struct dl_dataset d = mkgz(4300000, 1000, 4);
		struct dl_file f;
		uint8_t tr[4], h[5];
		uint64_t S, nb;

		CHECK(dl_file_init(ctx, &d, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "init 4.3 GB");
		S = f.samples * f.aux[0];
		nb = (S + 65534) / 65535;
		CHECK(S > 0xffffffffULL && f.size == gz_size(S), "4.3 GB size");
		CHECK(dl_file_read(ctx, &f, tr, f.size - 4, 4) == 0 && rd_le32(tr) == (uint32_t)S,
		      "ISIZE mod 2^32");
		CHECK(dl_file_read(ctx, &f, h, 10 + (nb - 1) * 65540, 5) == 0 && h[0] == 1 &&
			  (uint64_t)(h[1] | h[2] << 8) == S - (nb - 1) * 65535,
		      "last block header");
	}
	dl_fmt_ctx_free(ctx);
}

/* Pieces in any order and size, cold caches, a cache that keeps nothing:
 * always the bytes of one full read. */
static void test_gz_pieces(void)
{
	static const uint64_t Ns[] = {100, 114244, 2825761};
	uint64_t s = 17;

	for (size_t i = 0; i < sizeof(Ns) / sizeof(Ns[0]); i++) {
		struct dl_dataset ds = mkgz(Ns[i], Ns[i] > 1000000 ? 3 : Ns[i] > 1000 ? 20 : 900, 4);
		struct dl_fmt_ctx *c0 = mkctx(42, 0);
		struct dl_file f;
		uint8_t *full, *b;
		int bad_seq = 0, bad_rand = 0, bad_tiny = 0, bad_tail = 0;

		dl_file_init(c0, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
		full = read_all(c0, &f);
		b = malloc(f.size);
		for (int pass = 0; pass < 3; pass++) {
			/* Cache: default, one entry, default with big pieces. */
			struct dl_fmt_ctx *c = mkctx(42, pass == 1 ? 1 : 0);
			uint64_t off = 0, maxp = pass == 2 ? 3 << 20 : pass ? 70000 : 9000;

			memset(b, 0xa5, f.size);
			while (off < f.size) {
				uint64_t l = 1 + rng(&s) % maxp;
				if (l > f.size - off)
					l = f.size - off;
				dl_file_read(c, &f, b + off, off, l);
				off += l;
			}
			bad_seq += memcmp(b, full, f.size) != 0;
			dl_fmt_ctx_free(c);
		}
		{
			struct dl_fmt_ctx *c = mkctx(42, 0);
			const uint64_t piece = f.size / 64 + 1;
			uint64_t np = (f.size + piece - 1) / piece;
			uint64_t *order = malloc(np * sizeof(*order));

			for (uint64_t k = 0; k < np; k++)
				order[k] = k;
			for (uint64_t k = np - 1; k > 0; k--) {
				uint64_t j = rng(&s) % (k + 1), t = order[k];
				order[k] = order[j];
				order[j] = t;
			}
			memset(b, 0x5a, f.size);
			for (uint64_t k = 0; k < np; k++) {
				uint64_t off = order[k] * piece;
				uint64_t l = off + piece > f.size ? f.size - off : piece;
				dl_file_read(c, &f, b + off, off, l);
			}
			bad_rand = memcmp(b, full, f.size) != 0;
			free(order);
			dl_fmt_ctx_free(c);
		}
		{
			struct dl_fmt_ctx *c = mkctx(42, 0);
			uint8_t tmp[300];

			for (int k = 0; k < 3000; k++) {
				uint64_t off = rng(&s) % f.size;
				size_t l = 1 + rng(&s) % sizeof(tmp);
				if (l > f.size - off)
					l = f.size - off;
				dl_file_read(c, &f, tmp, off, l);
				bad_tiny += memcmp(tmp, full + off, l) != 0;
			}
			dl_fmt_ctx_free(c);
		}
		/* Cold: each trailer byte alone, the trailer, the last 100 bytes. */
		for (uint64_t k = 0; k < 10; k++) {
			struct dl_fmt_ctx *c = mkctx(42, 0);
			uint64_t at = k < 8 ? f.size - 8 + k : k == 8 ? f.size - 8 : f.size - 100;
			uint8_t t[100];
			size_t l = (size_t)(f.size - at);

			if (k < 8)
				l = 1;
			dl_file_read(c, &f, t, at, l);
			bad_tail += memcmp(t, full + at, l) != 0;
			dl_fmt_ctx_free(c);
		}
		CHECK(bad_seq == 0, "gzip sequential pieces N=%llu: %d bad", (unsigned long long)Ns[i],
		      bad_seq);
		CHECK(bad_rand == 0, "gzip shuffled pieces N=%llu", (unsigned long long)Ns[i]);
		CHECK(bad_tiny == 0, "gzip tiny reads N=%llu: %d bad", (unsigned long long)Ns[i],
		      bad_tiny);
		CHECK(bad_tail == 0, "gzip cold trailer reads N=%llu: %d bad",
		      (unsigned long long)Ns[i], bad_tail);
		free(b);
		free(full);
		dl_fmt_ctx_free(c0);
	}
}

static unsigned gz_segments_cached(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint64_t S)
{
	uint64_t k1 = dl_tfr_gz_key(f, DL_TFR_GZ_SEG_TAG);
	unsigned n = 0;
	uint32_t v;

	for (uint64_t k = 0; k * DL_TFR_GZ_SEG < S; k++)
		n += dl_dcache_get(ctx, k1, k, &v) == 0;
	return n;
}

/* The whole-stream CRC-32 is computed only by a read that returns one of its
 * bytes; sequential reads leave the segment CRCs behind so that this read is
 * then cheap. ~143 MB: DLIO resnet50's 1251 records of 114,660 bytes. */
static void test_gz_lazy(void)
{
	struct dl_dataset dz = mkgz(114660, 1251, 4), du = mkds(114660, 0, 1251, 2);
	struct dl_fmt_ctx *ctx = mkctx(42, 0), *cu = mkctx(42, 0);
	struct dl_file f, fu;
	const size_t piece = 128 << 10;
	uint8_t *b = malloc(4 << 20), tr[8];
	uint64_t S, nseg, k1;
	uint32_t whole, v, want = 0;
	double t0, t_cold, t_seq, t_warm;
	unsigned cached;

	dl_file_init(ctx, &dz, DL_SPLIT_TRAIN, 0, 0, &f);
	dl_file_init(cu, &du, DL_SPLIT_TRAIN, 0, 0, &fu);
	S = fu.size;
	nseg = (S + DL_TFR_GZ_SEG - 1) / DL_TFR_GZ_SEG;
	k1 = dl_tfr_gz_key(&f, DL_TFR_GZ_SEG_TAG);
	/* The expected CRC-32, from the uncompressed variant's bytes. */
	for (uint64_t o = 0; o < S; o += 4 << 20) {
		size_t n = S - o < (4u << 20) ? (size_t)(S - o) : (4u << 20);
		dl_file_read(cu, &fu, b, o, n);
		want = (uint32_t)crc32(want, b, (uInt)n);
	}

	/* Header, payload in the middle, the ISIZE bytes: no CRC pass. */
	CHECK(dl_file_read(ctx, &f, b, 0, 4096) == 0, "head");
	CHECK(dl_file_read(ctx, &f, b, f.size / 2 + 12345, 3 << 20) == 0, "middle");
	CHECK(dl_file_read(ctx, &f, tr, f.size - 4, 4) == 0 && rd_le32(tr) == (uint32_t)S, "ISIZE");
	CHECK(dl_dcache_get(ctx, k1, DL_TFR_GZ_WHOLE, &v) == -ENOENT,
	      "reads without the CRC bytes computed it");
	cached = gz_segments_cached(ctx, &f, S);
	CHECK(cached >= 2 && cached <= 4, "a 3 MiB read holds 2 or 3 whole segments: %u", cached);

	/* Cold trailer CRC: the rest of the stream generated once. */
	t0 = now();
	CHECK(dl_file_read(ctx, &f, tr, f.size - 8, 8) == 0, "trailer");
	t_cold = now() - t0;
	CHECK(rd_le32(tr) == want, "cold trailer CRC %08x, want %08x", rd_le32(tr), want);
	CHECK(dl_dcache_get(ctx, k1, DL_TFR_GZ_WHOLE, &whole) == 0 && whole == want, "cached");
	dl_fmt_ctx_free(ctx);

	/* A sequential reader (128 KiB reads, as FUSE sends them) to the end. */
	ctx = mkctx(42, 0);
	t0 = now();
	for (uint64_t o = 0; o < f.size - 8; o += piece) {
		size_t n = f.size - 8 - o < piece ? (size_t)(f.size - 8 - o) : piece;
		dl_file_read(ctx, &f, b, o, n);
	}
	t_seq = now() - t0;
	cached = gz_segments_cached(ctx, &f, S);
	/* The cache is lossy (direct-mapped): allow a few collisions. */
	CHECK(cached + 3 >= nseg, "segments left by the sequential reads: %u of %llu", cached,
	      (unsigned long long)nseg);
	t0 = now();
	CHECK(dl_file_read(ctx, &f, tr, f.size - 8, 8) == 0 && rd_le32(tr) == want,
	      "trailer after a sequential pass");
	t_warm = now() - t0;
	dl_fmt_ctx_free(ctx);

	/* The same pass over the uncompressed variant, for the cost of the CRC-32. */
	{
		struct dl_fmt_ctx *c = mkctx(42, 0);
		double t_u;

		t0 = now();
		for (uint64_t o = 0; o < S; o += piece) {
			size_t n = S - o < piece ? (size_t)(S - o) : piece;
			dl_file_read(c, &fu, b, o, n);
		}
		t_u = now() - t0;
		printf("bench: gzip tfrecord %.1f MB (%llu segments): first trailer CRC cold %.3f s; "
		       "after a sequential pass %.6f s\n",
		       f.size / 1e6, (unsigned long long)nseg, t_cold, t_warm);
		printf("bench: sequential 128 KiB reads: gzip %.2f GB/s, uncompressed %.2f GB/s\n",
		       f.size / t_seq / 1e9, S / t_u / 1e9);
		dl_fmt_ctx_free(c);
	}
	free(b);
	dl_fmt_ctx_free(cu);
}

/* ---- measured costs (printed, not asserted) ----------------------------- */

static void bench(void)
{
	const size_t n = 64 << 20;
	uint8_t *b = malloc(n);
	double t;
	uint32_t sink = 0;

	dl_prng_fill(1, 0, b, n);
	if (dl_crc32c_hw_available()) {
		t = now();
		for (int i = 0; i < 4; i++)
			sink ^= dl_crc32c_hw(0, b, n);
		printf("bench: crc32c hw (sse4.2%s): %.2f GB/s\n",
		       __builtin_cpu_supports("pclmul") ? ", 3 streams" : "",
		       4.0 * n / (now() - t) / 1e9);
	}
	t = now();
	sink ^= dl_crc32c_sw(0, b, n);
	printf("bench: crc32c slice-by-8: %.2f GB/s\n", 1.0 * n / (now() - t) / 1e9);
	t = now();
	for (int i = 0; i < 4; i++)
		dl_prng_fill(1, 0, b, n);
	printf("bench: prng fill: %.2f GB/s\n", 4.0 * n / (now() - t) / 1e9);
	free(b);

	static const uint64_t Ns[] = {114244, 2825761};
	for (size_t i = 0; i < 2; i++) {
		struct dl_dataset ds = mkds(Ns[i], 0, Ns[i] > 1000000 ? 24 : 600, 1);
		struct dl_fmt_ctx *ctx = mkctx(42, 0);
		struct dl_file f;
		const size_t piece = 1 << 20;
		uint8_t *p = malloc(piece);

		dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f);
		t = now();
		for (uint64_t off = 0; off < f.size; off += piece) {
			size_t l = f.size - off < piece ? (size_t)(f.size - off) : piece;
			dl_file_read(ctx, &f, p, off, l);
			sink ^= p[0];
		}
		printf("bench: tfrecord N=%llu sequential 1 MiB reads: %.2f GB/s (%.0f MB file)\n",
		       (unsigned long long)Ns[i], f.size / (now() - t) / 1e9, f.size / 1e6);
		free(p);
		dl_fmt_ctx_free(ctx);
	}
	if (sink == 0x12345678)
		printf(" \n");
}

int main(void)
{
	test_crc_vectors();
	test_crc_paths();
	test_crc_combine();
	test_worked_table();
	test_parse();
	test_pieces();
	test_identity();
	test_gz_layout();
	test_gz_pieces();
	test_gz_lazy();
	bench();
	return tap_done("tfrecord");
}
