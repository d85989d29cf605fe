/* DLRM Criteo binary (facebookresearch/dlrm --mlperf-bin-loader): records of
 * 40 little-endian int32, no header: label, 13 dense, 26 categorical
 * (docs/formats.md 8). Record r's field j comes from 32 bits of word r * 20 + j / 2
 * of the file's stream (low half for even j, high half for odd j), so each
 * field is a pure function of (file key, record, field) and a large read is
 * one vectorized stream fill followed by an in-place mapping pass.
 *
 * Value mapping, from the field's 32 random bits u:
 *   label        u & 1
 *   dense        (u >> 16) >> (u & 15): a log-uniform-like skew over
 *                [0, 65535] with most values small, like Criteo's counts
 *                (the loader takes log(x + 1) of them; never negative)
 *   categorical  (u * cardinality) >> 32: uniform in [0, cardinality)
 * cardinality 0 means 10M; ids are int32, so it is capped at 2^31. */
#include <errno.h>
#include <string.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "dlrm_i.h"
#include "formats_i.h"

#define FIELDS 40
#define DENSE 13
#define REC_BYTES (4 * FIELDS)
#define DEFAULT_CARD 10000000ull
#define MAX_CARD (1ull << 31)
/* Region id of the record stream. */
#define REGION_DLRM 0x646c726dULL
/* Records mapped per chunk of a large read (40 KiB, stays in L1/L2). */
#define CHUNK_RECS 256

static uint64_t cardinality(const struct dl_file *f)
{
	uint64_t c = dl_dlrm_params(f->ds)->cardinality;

	if (c == 0)
		return DEFAULT_CARD;
	return c > MAX_CARD ? MAX_CARD : c;
}

/* Turn nrec records of raw stream bytes into field values, in place: plain
 * integer arithmetic on a word copy of each record (the reference; the AVX2
 * path below gives the same bytes). */
static void map_records_scalar(uint8_t *p, size_t nrec, uint64_t card)
{
	for (size_t i = 0; i < nrec; i++, p += REC_BYTES) {
		uint32_t w[FIELDS];

		memcpy(w, p, REC_BYTES);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		for (int j = 0; j < FIELDS; j++)
			w[j] = __builtin_bswap32(w[j]);
#endif
		w[0] &= 1;
		for (int j = 1; j <= DENSE; j++)
			w[j] = (w[j] >> 16) >> (w[j] & 15);
		for (int j = DENSE + 1; j < FIELDS; j++)
			w[j] = (uint32_t)(((uint64_t)w[j] * card) >> 32);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		for (int j = 0; j < FIELDS; j++)
			w[j] = __builtin_bswap32(w[j]);
#endif
		memcpy(p, w, REC_BYTES);
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* A record is exactly five 8-lane vectors, so each vector position has a
 * fixed field mix: [label, dense x7], [dense x6, cat x2], then cat x8 three
 * times. The scalar loop above ran at a tenth of the generator's speed; this
 * keeps the mapping far below the generator's cost. */
__attribute__((target("avx2")))
static inline __m256i dense8(__m256i u)
{
	return _mm256_srlv_epi32(_mm256_srli_epi32(u, 16), _mm256_and_si256(u, _mm256_set1_epi32(15)));
}

/* High 32 bits of u * card per lane (card < 2^32): even and odd lanes
 * through two 32 x 32 -> 64 multiplies. */
__attribute__((target("avx2")))
static inline __m256i cat8(__m256i u, __m256i card)
{
	__m256i even = _mm256_srli_epi64(_mm256_mul_epu32(u, card), 32);
	__m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(u, 32), card);

	return _mm256_blend_epi32(even, odd, 0xaa);
}

__attribute__((target("avx2")))
static void map_records_avx2(uint8_t *p, size_t nrec, uint64_t card)
{
	const __m256i c = _mm256_set1_epi64x((long long)card);

	for (size_t i = 0; i < nrec; i++, p += REC_BYTES) {
		__m256i *v = (__m256i *)(void *)p;
		__m256i a = _mm256_loadu_si256(v), b = _mm256_loadu_si256(v + 1);

		a = _mm256_blend_epi32(dense8(a), _mm256_and_si256(a, _mm256_set1_epi32(1)), 0x01);
		b = _mm256_blend_epi32(dense8(b), cat8(b, c), 0xc0);
		_mm256_storeu_si256(v, a);
		_mm256_storeu_si256(v + 1, b);
		for (int k = 2; k < 5; k++)
			_mm256_storeu_si256(v + k, cat8(_mm256_loadu_si256(v + k), c));
	}
}

static void map_records(uint8_t *p, size_t nrec, uint64_t card)
{
	if (__builtin_cpu_supports("avx2"))
		map_records_avx2(p, nrec, card);
	else
		map_records_scalar(p, nrec, card);
}
#else
#define map_records map_records_scalar
#endif

static int dlrm_layout(struct dl_file *f)
{
	f->sample_bytes = REC_BYTES;
	if (__builtin_mul_overflow(f->samples, (uint64_t)REC_BYTES, &f->size))
		return -EFBIG;
	return 0;
}

static int dlrm_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		     size_t len)
{
	const uint64_t key = dl_file_stream(f, REGION_DLRM), card = cardinality(f);
	uint64_t r = off / REC_BYTES;
	uint8_t tmp[REC_BYTES];
	size_t done = 0;

	(void)ctx;
	/* Partial first record (and a read inside one record). */
	if (off % REC_BYTES) {
		size_t skip = off % REC_BYTES;
		size_t n = REC_BYTES - skip < len ? REC_BYTES - skip : len;

		dl_prng_fill(key, r * REC_BYTES, tmp, REC_BYTES);
		map_records(tmp, 1, card);
		memcpy(buf, tmp + skip, n);
		done = n;
		r++;
	}
	/* Whole records: the loader's 160 * B reads land here. */
	while (len - done >= REC_BYTES) {
		size_t nrec = (len - done) / REC_BYTES;

		if (nrec > CHUNK_RECS)
			nrec = CHUNK_RECS;
		dl_prng_fill(key, r * REC_BYTES, buf + done, nrec * REC_BYTES);
		map_records(buf + done, nrec, card);
		done += nrec * REC_BYTES;
		r += nrec;
	}
	if (done < len) {
		dl_prng_fill(key, r * REC_BYTES, tmp, REC_BYTES);
		map_records(tmp, 1, card);
		memcpy(buf + done, tmp, len - done);
	}
	return 0;
}

static const struct dl_param dlrm_params[] = {
	{.key = "cardinality",
	 .kind = DL_PK_COUNT,
	 .off = offsetof(struct dl_dlrm_params, cardinality),
	 .width = 8,
	 .def = DL_DLRM_DEFAULT_CARDINALITY,
	 .max = UINT64_MAX},
};

static void dlrm_check(struct dl_dataset *ds, const struct dl_check *chk, int size_ok)
{
	(void)size_ok;
	if (chk->usable(chk->arg, "cardinality") && dl_dlrm_params(ds)->cardinality == 0)
		dl_check_error(chk, "cardinality", "cardinality", "must be at least 1");
}

const struct dl_format_ops dl_fmt_dlrm_ops = {
	.id = DL_FMT_DLRM,
	.name = "dlrm",
	.ext = "bin",
	.example = "samples_per_file: 64, cardinality: 1000",
	.record_bytes = DL_DLRM_RECORD_BYTES,
	.size_note = "fixed by the format",
	.params = dlrm_params,
	.nparams = 1,
	.check = dlrm_check,
	.nparts = 1,
	.read_hints = {.plan = DL_PLAN_CHUNK, .batch = 2048, .read_threads = 4},
	.layout = dlrm_layout,
	.read = dlrm_read,
};
