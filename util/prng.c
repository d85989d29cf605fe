/* Bulk byte stream of the counter-based generator, and its code paths.
 *
 * Why AES rounds: the stream is the hot loop of every read, and it must run
 * near memory speed on every x86-64 server, not only on AVX-512 ones. The
 * previous splitmix64-per-word stream needs 64-bit multiplies, which AVX2
 * lacks (three 32-bit multiplies each), so it ran at 0.2-0.3x memcpy on
 * AVX2-only CPUs. Every x86-64 server CPU of the last decade has AES-NI, and
 * one AES round is a strong 128-bit mix in one instruction; AMD Milan and
 * Intel Ice Lake onward do two blocks per instruction (VAES on 256 bits).
 *
 * Definition (every path computes exactly this; the generic C path is the
 * reference). For a 64-bit key:
 *   kl = mix64(key ^ 0x243f6a8885a308d3), kh = mix64(key ^ 0x13198a2e03707344)
 *   counter state j (128 bits, two little-endian u64 lanes):
 *     c_j = (kl + j * W0, kh + j * W1)           mod 2^64 per lane
 *   round keys r_i = (kh + i * K0, kl + i * K1), i = 1..4
 *   p_j = aesenc(aesenc(c_j, r1), r2)
 *   64-byte block b = aesenc(p_2b, r3) | aesenc(p_2b+1, r3)
 *                   | aesdec(p_2b, r4) | aesdec(p_2b+1, r4)
 * where aesenc/aesdec are one AES encryption/decryption round as the x86
 * AESENC/AESDEC instructions define them (state byte k = memory byte k).
 * Byte o of the stream is byte o % 64 of block o / 64, so any offset is O(1).
 *
 * Quality: each output is three AES rounds from its counter (full diffusion
 * takes two). Two outputs per p (an encryption and a decryption round of it)
 * is the construction of AESRand (dragontamer, 2018), reported to pass
 * PractRand to 32 TB with one round fewer than here. The counter walks a Weyl
 * sequence per lane (odd increments, as in Random123's ARS key schedule), so
 * consecutive inputs differ in many bytes; a plain +1 counter would leave
 * AES's known 3-round integral (XOR of 256 outputs = 0) in the stream. The
 * byte histogram and serial correlation are tested in tests/unit/util/test_prng.c. */
#include <math.h>
#include <string.h>

#include "dliofs/prng.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define DL_PRNG_X86 1
#include <cpuid.h>
#include <stdatomic.h>
#include <immintrin.h>
#endif

#define KEY_LO 0x243f6a8885a308d3ULL
#define KEY_HI 0x13198a2e03707344ULL
#define W0 0x9e3779b97f4a7c15ULL
#define W1 0xbb67ae8584caa73bULL
#define K0 0x3c6ef372fe94f82bULL
#define K1 0xa54ff53a5f1d36f1ULL
#define BLOCK 64

/* Per-call constants: both counter lanes' start and the four round keys. */
struct ars {
	uint64_t kl, kh;
	uint64_t rk[5][2]; /* rk[i] for i = 1..4 */
};

static void ars_init(struct ars *a, uint64_t key)
{
	a->kl = dl_mix64(key ^ KEY_LO);
	a->kh = dl_mix64(key ^ KEY_HI);
	for (int i = 1; i <= 4; i++) {
		a->rk[i][0] = a->kh + (uint64_t)i * K0;
		a->rk[i][1] = a->kl + (uint64_t)i * K1;
	}
}

/* ---- Generic path: byte-wise AES rounds (the reference). ---- */

static const uint8_t sbox[256] = {
	0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b,
	0xfe, 0xd7, 0xab, 0x76, 0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0,
	0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0, 0xb7, 0xfd, 0x93, 0x26,
	0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
	0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2,
	0xeb, 0x27, 0xb2, 0x75, 0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0,
	0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84, 0x53, 0xd1, 0x00, 0xed,
	0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
	0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f,
	0x50, 0x3c, 0x9f, 0xa8, 0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5,
	0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2, 0xcd, 0x0c, 0x13, 0xec,
	0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
	0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14,
	0xde, 0x5e, 0x0b, 0xdb, 0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c,
	0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79, 0xe7, 0xc8, 0x37, 0x6d,
	0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
	0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f,
	0x4b, 0xbd, 0x8b, 0x8a, 0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e,
	0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e, 0xe1, 0xf8, 0x98, 0x11,
	0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
	0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f,
	0xb0, 0x54, 0xbb, 0x16,
};

static const uint8_t inv_sbox[256] = {
	0x52, 0x09, 0x6a, 0xd5, 0x30, 0x36, 0xa5, 0x38, 0xbf, 0x40, 0xa3, 0x9e,
	0x81, 0xf3, 0xd7, 0xfb, 0x7c, 0xe3, 0x39, 0x82, 0x9b, 0x2f, 0xff, 0x87,
	0x34, 0x8e, 0x43, 0x44, 0xc4, 0xde, 0xe9, 0xcb, 0x54, 0x7b, 0x94, 0x32,
	0xa6, 0xc2, 0x23, 0x3d, 0xee, 0x4c, 0x95, 0x0b, 0x42, 0xfa, 0xc3, 0x4e,
	0x08, 0x2e, 0xa1, 0x66, 0x28, 0xd9, 0x24, 0xb2, 0x76, 0x5b, 0xa2, 0x49,
	0x6d, 0x8b, 0xd1, 0x25, 0x72, 0xf8, 0xf6, 0x64, 0x86, 0x68, 0x98, 0x16,
	0xd4, 0xa4, 0x5c, 0xcc, 0x5d, 0x65, 0xb6, 0x92, 0x6c, 0x70, 0x48, 0x50,
	0xfd, 0xed, 0xb9, 0xda, 0x5e, 0x15, 0x46, 0x57, 0xa7, 0x8d, 0x9d, 0x84,
	0x90, 0xd8, 0xab, 0x00, 0x8c, 0xbc, 0xd3, 0x0a, 0xf7, 0xe4, 0x58, 0x05,
	0xb8, 0xb3, 0x45, 0x06, 0xd0, 0x2c, 0x1e, 0x8f, 0xca, 0x3f, 0x0f, 0x02,
	0xc1, 0xaf, 0xbd, 0x03, 0x01, 0x13, 0x8a, 0x6b, 0x3a, 0x91, 0x11, 0x41,
	0x4f, 0x67, 0xdc, 0xea, 0x97, 0xf2, 0xcf, 0xce, 0xf0, 0xb4, 0xe6, 0x73,
	0x96, 0xac, 0x74, 0x22, 0xe7, 0xad, 0x35, 0x85, 0xe2, 0xf9, 0x37, 0xe8,
	0x1c, 0x75, 0xdf, 0x6e, 0x47, 0xf1, 0x1a, 0x71, 0x1d, 0x29, 0xc5, 0x89,
	0x6f, 0xb7, 0x62, 0x0e, 0xaa, 0x18, 0xbe, 0x1b, 0xfc, 0x56, 0x3e, 0x4b,
	0xc6, 0xd2, 0x79, 0x20, 0x9a, 0xdb, 0xc0, 0xfe, 0x78, 0xcd, 0x5a, 0xf4,
	0x1f, 0xdd, 0xa8, 0x33, 0x88, 0x07, 0xc7, 0x31, 0xb1, 0x12, 0x10, 0x59,
	0x27, 0x80, 0xec, 0x5f, 0x60, 0x51, 0x7f, 0xa9, 0x19, 0xb5, 0x4a, 0x0d,
	0x2d, 0xe5, 0x7a, 0x9f, 0x93, 0xc9, 0x9c, 0xef, 0xa0, 0xe0, 0x3b, 0x4d,
	0xae, 0x2a, 0xf5, 0xb0, 0xc8, 0xeb, 0xbb, 0x3c, 0x83, 0x53, 0x99, 0x61,
	0x17, 0x2b, 0x04, 0x7e, 0xba, 0x77, 0xd6, 0x26, 0xe1, 0x69, 0x14, 0x63,
	0x55, 0x21, 0x0c, 0x7d,
};

/* Multiply by x in GF(2^8) modulo AES's polynomial x^8 + x^4 + x^3 + x + 1. */
static inline uint8_t xtime(uint8_t a)
{
	return (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
}

static uint8_t gmul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = xtime(a);
		b >>= 1;
	}
	return r;
}

/* State byte 4c + r is row r of column c (AES-NI's layout). */
static void aesenc_ref(uint8_t s[16], const uint64_t rk[2])
{
	uint8_t t[16];

	/* ShiftRows and SubBytes: row r rotates left by r columns. */
	for (int c = 0; c < 4; c++)
		for (int r = 0; r < 4; r++)
			t[4 * c + r] = sbox[s[4 * ((c + r) & 3) + r]];
	for (int c = 0; c < 4; c++) {
		uint8_t *a = t + 4 * c, all = a[0] ^ a[1] ^ a[2] ^ a[3], a0 = a[0];
		/* MixColumns: b_r = 2 a_r + 3 a_r+1 + a_r+2 + a_r+3. */
		s[4 * c + 0] = a[0] ^ all ^ xtime(a[0] ^ a[1]);
		s[4 * c + 1] = a[1] ^ all ^ xtime(a[1] ^ a[2]);
		s[4 * c + 2] = a[2] ^ all ^ xtime(a[2] ^ a[3]);
		s[4 * c + 3] = a[3] ^ all ^ xtime(a[3] ^ a0);
	}
	for (int k = 0; k < 16; k++)
		s[k] ^= (uint8_t)(rk[k >> 3] >> (8 * (k & 7)));
}

static void aesdec_ref(uint8_t s[16], const uint64_t rk[2])
{
	uint8_t t[16];

	/* InvShiftRows and InvSubBytes: row r rotates right by r columns. */
	for (int c = 0; c < 4; c++)
		for (int r = 0; r < 4; r++)
			t[4 * c + r] = inv_sbox[s[4 * ((c - r) & 3) + r]];
	for (int c = 0; c < 4; c++) {
		const uint8_t *a = t + 4 * c;
		/* InvMixColumns: rows of (14 11 13 9) rotated. */
		for (int r = 0; r < 4; r++)
			s[4 * c + r] = gmul(a[r], 14) ^ gmul(a[(r + 1) & 3], 11) ^
				       gmul(a[(r + 2) & 3], 13) ^ gmul(a[(r + 3) & 3], 9);
	}
	for (int k = 0; k < 16; k++)
		s[k] ^= (uint8_t)(rk[k >> 3] >> (8 * (k & 7)));
}

static void put_lanes(uint8_t s[16], uint64_t lo, uint64_t hi)
{
	for (int k = 0; k < 8; k++) {
		s[k] = (uint8_t)(lo >> (8 * k));
		s[8 + k] = (uint8_t)(hi >> (8 * k));
	}
}

static void blocks_generic(const struct ars *a, uint64_t b, uint8_t *out, size_t nb)
{
	for (size_t i = 0; i < nb; i++, b++, out += BLOCK) {
		for (int h = 0; h < 2; h++) {
			uint64_t j = 2 * b + (uint64_t)h;
			uint8_t p[16];

			put_lanes(p, a->kl + j * W0, a->kh + j * W1);
			aesenc_ref(p, a->rk[1]);
			aesenc_ref(p, a->rk[2]);
			memcpy(out + 16 * h, p, 16);
			memcpy(out + 32 + 16 * h, p, 16);
			aesenc_ref(out + 16 * h, a->rk[3]);
			aesdec_ref(out + 32 + 16 * h, a->rk[4]);
		}
	}
}

#ifdef DL_PRNG_X86

/* ---- AES-NI, 128-bit: four blocks (eight AES states) per iteration keep
 * both AES units busy through the four-cycle round latency. ---- */

#define TGT_AESNI __attribute__((target("sse4.1,aes")))
#define TGT_VAES __attribute__((target("avx2,aes,vaes")))

TGT_AESNI
static inline __m128i rk128(const struct ars *a, int i)
{
	return _mm_set_epi64x((long long)a->rk[i][1], (long long)a->rk[i][0]);
}

TGT_AESNI
static void blocks_aesni(const struct ars *a, uint64_t b, uint8_t *out, size_t nb)
{
	const __m128i r1 = rk128(a, 1), r2 = rk128(a, 2), r3 = rk128(a, 3), r4 = rk128(a, 4);
	const __m128i w = _mm_set_epi64x((long long)W1, (long long)W0);
	const __m128i w8 = _mm_slli_epi64(w, 3);
	__m128i c[8];

	c[0] = _mm_set_epi64x((long long)(a->kh + 2 * b * W1), (long long)(a->kl + 2 * b * W0));
	for (int k = 1; k < 8; k++)
		c[k] = _mm_add_epi64(c[k - 1], w);
	while (nb) {
		__m128i p[8];
		int n = nb < 4 ? (int)nb : 4;

		for (int k = 0; k < 8; k++)
			p[k] = _mm_aesenc_si128(_mm_aesenc_si128(c[k], r1), r2);
		for (int k = 0; k < n; k++) {
			__m128i *o = (__m128i *)(void *)(out + BLOCK * k);
			_mm_storeu_si128(o, _mm_aesenc_si128(p[2 * k], r3));
			_mm_storeu_si128(o + 1, _mm_aesenc_si128(p[2 * k + 1], r3));
			_mm_storeu_si128(o + 2, _mm_aesdec_si128(p[2 * k], r4));
			_mm_storeu_si128(o + 3, _mm_aesdec_si128(p[2 * k + 1], r4));
		}
		for (int k = 0; k < 8; k++)
			c[k] = _mm_add_epi64(c[k], w8);
		out += BLOCK * n;
		nb -= (size_t)n;
	}
}

/* ---- VAES, 256-bit: one vector holds the two states of a block, so the
 * encryption and decryption outputs are its two 32-byte halves. ---- */

TGT_VAES
static inline __m256i rk256(const struct ars *a, int i)
{
	return _mm256_set_epi64x((long long)a->rk[i][1], (long long)a->rk[i][0],
				 (long long)a->rk[i][1], (long long)a->rk[i][0]);
}

TGT_VAES
static void blocks_vaes(const struct ars *a, uint64_t b, uint8_t *out, size_t nb)
{
	const __m256i r1 = rk256(a, 1), r2 = rk256(a, 2), r3 = rk256(a, 3), r4 = rk256(a, 4);
	const __m256i w2 = _mm256_set_epi64x((long long)(2 * W1), (long long)(2 * W0),
					     (long long)(2 * W1), (long long)(2 * W0));
	const __m256i w8 = _mm256_slli_epi64(w2, 2);
	const uint64_t j = 2 * b;
	__m256i c[4];

	c[0] = _mm256_set_epi64x((long long)(a->kh + (j + 1) * W1), (long long)(a->kl + (j + 1) * W0),
				 (long long)(a->kh + j * W1), (long long)(a->kl + j * W0));
	for (int k = 1; k < 4; k++)
		c[k] = _mm256_add_epi64(c[k - 1], w2);
	while (nb) {
		__m256i p[4];
		int n = nb < 4 ? (int)nb : 4;

		for (int k = 0; k < 4; k++)
			p[k] = _mm256_aesenc_epi128(_mm256_aesenc_epi128(c[k], r1), r2);
		for (int k = 0; k < n; k++) {
			__m256i *o = (__m256i *)(void *)(out + BLOCK * k);
			_mm256_storeu_si256(o, _mm256_aesenc_epi128(p[k], r3));
			_mm256_storeu_si256(o + 1, _mm256_aesdec_epi128(p[k], r4));
		}
		for (int k = 0; k < 4; k++)
			c[k] = _mm256_add_epi64(c[k], w8);
		out += BLOCK * n;
		nb -= (size_t)n;
	}
}

#endif /* DL_PRNG_X86 */

typedef void (*blocks_fn)(const struct ars *a, uint64_t b, uint8_t *out, size_t nb);

static blocks_fn path_fn(enum dl_prng_path path)
{
#ifdef DL_PRNG_X86
	if (path == DL_PRNG_VAES)
		return blocks_vaes;
	if (path == DL_PRNG_AESNI)
		return blocks_aesni;
#endif
	(void)path;
	return blocks_generic;
}

#ifdef DL_PRNG_X86
/* CPUID leaf 7 ECX bit 9: clang 14 has no __builtin_cpu_supports("vaes").
 * AVX2's check (above it) already covers the OS saving the YMM state.
 * CPUID traps to the hypervisor in a VM (4.5 us each on the dev VM) and
 * every fill asks, so the answer, a fact of the CPU that cannot change
 * while the process runs, is kept after the first question (-1: not asked;
 * a race only asks twice and stores the same value). */
static int has_vaes(void)
{
	static _Atomic int known = -1;
	unsigned a, b, c, d;
	int v = atomic_load_explicit(&known, memory_order_relaxed);

	if (v < 0) {
		v = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 9));
		atomic_store_explicit(&known, v, memory_order_relaxed);
	}
	return v;
}
#endif

int dl_prng_path_available(enum dl_prng_path path)
{
	switch (path) {
	case DL_PRNG_GENERIC:
		return 1;
#ifdef DL_PRNG_X86
	case DL_PRNG_AESNI:
		return __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
	case DL_PRNG_VAES:
		return __builtin_cpu_supports("aes") && __builtin_cpu_supports("avx2") && has_vaes();
#endif
	default:
		return 0;
	}
}

enum dl_prng_path dl_prng_best_path(void)
{
	if (dl_prng_path_available(DL_PRNG_VAES))
		return DL_PRNG_VAES;
	if (dl_prng_path_available(DL_PRNG_AESNI))
		return DL_PRNG_AESNI;
	return DL_PRNG_GENERIC;
}

const char *dl_prng_path_name(enum dl_prng_path path)
{
	static const char *const names[DL_PRNG__PATHS] = {"generic", "aesni", "vaes"};

	return (unsigned)path < DL_PRNG__PATHS ? names[path] : "?";
}

const char *dl_prng_isa(void)
{
	return dl_prng_path_name(dl_prng_best_path());
}

void dl_prng_fill_path(enum dl_prng_path path, uint64_t key, uint64_t off, void *buf, size_t len)
{
	const blocks_fn fn = path_fn(path);
	uint8_t *p = buf, tmp[BLOCK];
	uint64_t b = off / BLOCK;
	unsigned skip = (unsigned)(off % BLOCK);
	struct ars a;

	if (len == 0)
		return;
	ars_init(&a, key);
	if (skip) {
		size_t n = BLOCK - skip < len ? BLOCK - skip : len;
		fn(&a, b, tmp, 1);
		memcpy(p, tmp + skip, n);
		p += n;
		len -= n;
		b++;
	}
	if (len >= BLOCK) {
		size_t nb = len / BLOCK;
		fn(&a, b, p, nb);
		p += nb * BLOCK;
		len -= nb * BLOCK;
		b += nb;
	}
	if (len) {
		fn(&a, b, tmp, 1);
		memcpy(p, tmp, len);
	}
}

void dl_prng_fill(uint64_t key, uint64_t off, void *buf, size_t len)
{
	dl_prng_fill_path(dl_prng_best_path(), key, off, buf, len);
}

double dl_prng_normal(uint64_t key, uint64_t i)
{
	/* 1 - u keeps the log argument in (0, 1]. */
	double u1 = 1.0 - dl_prng_unit(key, 2 * i);
	double u2 = dl_prng_unit(key, 2 * i + 1);
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
