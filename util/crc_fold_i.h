/* Carry-less multiply folding for reflected 32-bit CRCs (CRC-32 and
 * CRC-32C share it; only the constants differ). Private to formats/.
 *
 * A 128-bit chunk A of the message followed by D more bits contributes
 * A(x) * x^D mod P to the CRC; with A = (lo, hi) 64-bit halves (lo holds
 * the higher powers in the reflected order) that is congruent to
 * lo * x^(D+32) + hi * x^(D-32) once each half's product is aligned, which
 * is what one PCLMULQDQ per half computes when the constants are the
 * bit-reflected x^(D+32) mod P and x^(D-32) mod P shifted left by one (the
 * product of two reflected values carries one factor x too many).
 * So folding replaces the bytes seen so far by a 128-bit value with the same
 * remainder, 256 bytes per step with VPCLMULQDQ on 256-bit vectors (four
 * independent accumulators cover the instruction's latency). The last
 * 16 bytes of the fold then go through the ordinary byte-wise CRC.
 *
 * The constants for each distance are produced by the recurrence in
 * tests/unit/util/test_crc.c (which checks them) and every path is tested against zlib
 * (CRC-32) and the table implementation (CRC-32C) on random inputs. */
#ifndef DLIOFS_CRC_FOLD_I_H
#define DLIOFS_CRC_FOLD_I_H

#include <stddef.h>
#include <stdint.h>

struct dl_fold_k {
	uint64_t d1024[2]; /* fold across 128 bytes: the main loop */
	uint64_t d256[2];  /* accumulator j into j + 1 */
	uint64_t d128[2];  /* 16-byte steps */
};

/* x^(D+32), x^(D-32) mod P, reflected, << 1, for D = 1024, 256, 128 bits. */
#define DL_FOLD_K_CRC32                                                                            \
	{{0x1e88ef372ULL, 0x14a7fe880ULL}, {0x0f1da05aaULL, 0x15a546366ULL},                       \
	 {0x1751997d0ULL, 0x0ccaa009eULL}}
#define DL_FOLD_K_CRC32C                                                                           \
	{{0x06992cea2ULL, 0x00d3b6092ULL}, {0x1384aa63aULL, 0x0ba4fc28eULL},                       \
	 {0x0f20c0dfeULL, 0x14cd00bd6ULL}}

/* Smallest input the vector fold takes (two steps of the main loop). */
#define DL_FOLD_MIN 256

#if defined(__x86_64__) && defined(__GNUC__)
#define DL_FOLD_X86 1
#include <immintrin.h>

#define DL_TGT_VPCLMUL __attribute__((target("avx2,pclmul,vpclmulqdq")))

static inline int dl_fold_available(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
	       __builtin_cpu_supports("vpclmulqdq");
}

DL_TGT_VPCLMUL
static inline __m128i dl_fold128(__m128i x, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
					   _mm_clmulepi64_si128(x, k, 0x11)),
			     next);
}

DL_TGT_VPCLMUL
static inline __m256i dl_fold256(__m256i x, __m256i k, __m256i next)
{
	return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
						 _mm256_clmulepi64_epi128(x, k, 0x11)),
				next);
}

/* Fold p[0, n) (n a multiple of 16, n >= DL_FOLD_MIN) with the raw CRC
 * register `reg` (no final XOR) into 16 bytes `out` whose raw CRC from 0
 * is the raw CRC of the input from `reg`. */
DL_TGT_VPCLMUL
static inline void dl_fold(const struct dl_fold_k *k, uint32_t reg, const uint8_t *p, size_t n,
			   uint8_t out[16])
{
	const __m256i k1024 = _mm256_set_epi64x((long long)k->d1024[1], (long long)k->d1024[0],
						(long long)k->d1024[1], (long long)k->d1024[0]);
	const __m256i k256 = _mm256_set_epi64x((long long)k->d256[1], (long long)k->d256[0],
					       (long long)k->d256[1], (long long)k->d256[0]);
	const __m128i k128 = _mm_set_epi64x((long long)k->d128[1], (long long)k->d128[0]);
	const __m256i *v = (const __m256i *)(const void *)p;
	__m256i x0, x1, x2, x3;
	__m128i x;
	size_t i = 128;

	x0 = _mm256_xor_si256(_mm256_loadu_si256(v), _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, (int)reg));
	x1 = _mm256_loadu_si256(v + 1);
	x2 = _mm256_loadu_si256(v + 2);
	x3 = _mm256_loadu_si256(v + 3);
	for (; i + 128 <= n; i += 128) {
		v = (const __m256i *)(const void *)(p + i);
		x0 = dl_fold256(x0, k1024, _mm256_loadu_si256(v));
		x1 = dl_fold256(x1, k1024, _mm256_loadu_si256(v + 1));
		x2 = dl_fold256(x2, k1024, _mm256_loadu_si256(v + 2));
		x3 = dl_fold256(x3, k1024, _mm256_loadu_si256(v + 3));
	}
	x1 = dl_fold256(x0, k256, x1);
	x2 = dl_fold256(x1, k256, x2);
	x3 = dl_fold256(x2, k256, x3);
	x = dl_fold128(_mm256_castsi256_si128(x3), k128, _mm256_extracti128_si256(x3, 1));
	for (; i < n; i += 16)
		x = dl_fold128(x, k128, _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
	_mm_storeu_si128((__m128i *)(void *)out, x);
}

#else
static inline int dl_fold_available(void) { return 0; }
#endif

#endif
