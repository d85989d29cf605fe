/* The generator: every code path equals an independent reference written
 * here from the AES specification (itself checked against FIPS-197's worked
 * example), random access equals sequential, bytes are pinned (golden
 * values), and the stream looks uniform. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "tap.h"

/* ---- Reference AES rounds, from FIPS-197: the S-box is computed here from
 * its definition (multiplicative inverse in GF(2^8), then the affine map),
 * not copied from util/prng.c's tables. ---- */

static uint8_t gf_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	for (int i = 0; i < 8; i++) {
		if (b & (1u << i))
			r ^= a;
		a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1b : 0));
	}
	return r;
}

static uint8_t S[256], IS[256];

static void make_sbox(void)
{
	for (int a = 0; a < 256; a++) {
		uint8_t inv = 0, s;
		for (int b = 1; b < 256 && a; b++)
			if (gf_mul((uint8_t)a, (uint8_t)b) == 1)
				inv = (uint8_t)b;
		s = inv;
		for (int i = 1; i <= 4; i++)
			s ^= (uint8_t)((inv << i) | (inv >> (8 - i)));
		S[a] = s ^ 0x63;
		IS[S[a]] = (uint8_t)a;
	}
}

/* state[r][c] = byte 4c + r (the column-major order of FIPS-197 and AES-NI). */
static void sub_shift(uint8_t s[16], int inverse)
{
	uint8_t t[16];

	for (int c = 0; c < 4; c++)
		for (int r = 0; r < 4; r++) {
			int from = inverse ? (c + 4 - r) % 4 : (c + r) % 4;
			uint8_t v = s[4 * from + r];
			t[4 * c + r] = inverse ? IS[v] : S[v];
		}
	memcpy(s, t, 16);
}

static void mix(uint8_t s[16], const uint8_t m[4])
{
	for (int c = 0; c < 4; c++) {
		uint8_t a[4];
		memcpy(a, s + 4 * c, 4);
		for (int r = 0; r < 4; r++)
			s[4 * c + r] = gf_mul(a[r], m[0]) ^ gf_mul(a[(r + 1) % 4], m[1]) ^
				       gf_mul(a[(r + 2) % 4], m[2]) ^ gf_mul(a[(r + 3) % 4], m[3]);
	}
}

static const uint8_t MC[4] = {2, 3, 1, 1}, IMC[4] = {14, 11, 13, 9};

static void xor16(uint8_t s[16], const uint8_t k[16])
{
	for (int i = 0; i < 16; i++)
		s[i] ^= k[i];
}

/* AESENC / AESENCLAST / AESDEC as the x86 instructions define them. */
static void enc_round(uint8_t s[16], const uint8_t k[16], int last)
{
	sub_shift(s, 0);
	if (!last)
		mix(s, MC);
	xor16(s, k);
}

static void dec_round(uint8_t s[16], const uint8_t k[16])
{
	sub_shift(s, 1);
	mix(s, IMC);
	xor16(s, k);
}

/* FIPS-197 appendix B: AES-128 of 3243f6a8... under 2b7e1516... */
static int fips197_ok(void)
{
	static const uint8_t key[16] = {0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
					0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};
	static const uint8_t pt[16] = {0x32, 0x43, 0xf6, 0xa8, 0x88, 0x5a, 0x30, 0x8d,
				       0x31, 0x31, 0x98, 0xa2, 0xe0, 0x37, 0x07, 0x34};
	static const uint8_t ct[16] = {0x39, 0x25, 0x84, 0x1d, 0x02, 0xdc, 0x09, 0xfb,
				       0xdc, 0x11, 0x85, 0x97, 0x19, 0x6a, 0x0b, 0x32};
	uint8_t w[176], s[16], rcon = 1;

	memcpy(w, key, 16);
	for (int i = 4; i < 44; i++) {
		uint8_t t[4];
		memcpy(t, w + 4 * (i - 1), 4);
		if (i % 4 == 0) {
			uint8_t t0 = t[0];
			t[0] = S[t[1]] ^ rcon;
			t[1] = S[t[2]];
			t[2] = S[t[3]];
			t[3] = S[t0];
			rcon = gf_mul(rcon, 2);
		}
		for (int j = 0; j < 4; j++)
			w[4 * i + j] = w[4 * (i - 4) + j] ^ t[j];
	}
	memcpy(s, pt, 16);
	xor16(s, w);
	for (int r = 1; r <= 10; r++)
		enc_round(s, w + 16 * r, r == 10);
	return memcmp(s, ct, 16) == 0;
}

/* The stream's definition (util/prng.c's header comment), written again. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void lanes(uint8_t s[16], uint64_t lo, uint64_t hi)
{
	for (int i = 0; i < 8; i++) {
		s[i] = (uint8_t)(lo >> (8 * i));
		s[8 + i] = (uint8_t)(hi >> (8 * i));
	}
}

static void ref_block(uint64_t key, uint64_t b, uint8_t out[64])
{
	const uint64_t W0 = 0x9e3779b97f4a7c15ULL, W1 = 0xbb67ae8584caa73bULL;
	const uint64_t K0 = 0x3c6ef372fe94f82bULL, K1 = 0xa54ff53a5f1d36f1ULL;
	uint64_t kl = mix64(key ^ 0x243f6a8885a308d3ULL), kh = mix64(key ^ 0x13198a2e03707344ULL);
	uint8_t rk[5][16];

	for (int i = 1; i <= 4; i++)
		lanes(rk[i], kh + (uint64_t)i * K0, kl + (uint64_t)i * K1);
	for (int h = 0; h < 2; h++) {
		uint64_t j = 2 * b + (uint64_t)h;
		uint8_t p[16];

		lanes(p, kl + j * W0, kh + j * W1);
		enc_round(p, rk[1], 0);
		enc_round(p, rk[2], 0);
		memcpy(out + 16 * h, p, 16);
		memcpy(out + 32 + 16 * h, p, 16);
		enc_round(out + 16 * h, rk[3], 0);
		dec_round(out + 32 + 16 * h, rk[4]);
	}
}

static void ref_fill(uint64_t key, uint64_t off, uint8_t *out, size_t len)
{
	uint8_t blk[64];

	for (size_t i = 0; i < len; i++) {
		uint64_t o = off + i;
		if (i == 0 || o % 64 == 0)
			ref_block(key, o / 64, blk);
		out[i] = blk[o % 64];
	}
}

int main(void)
{
	static const uint64_t gold[4] = {0x5f642f87d5e23888ULL, 0x5a4d78533d034cb5ULL,
					 0x8a85ffdaea35a5a6ULL, 0xad002edb4259d53aULL};
	/* Bytes 0..15 of stream 0x1234 and 16 bytes at 2^40 + 3 of stream 42:
	 * part of the on-disk contract; change only with the generator. */
	static const uint8_t gold_fill[16] = {0x6c, 0xda, 0xa1, 0x02, 0xa7, 0x48, 0x21, 0x2d,
					      0xa6, 0x17, 0x1d, 0xb6, 0x3a, 0x69, 0x67, 0x80};
	static const uint8_t gold_far[16] = {0xd1, 0xf3, 0xc4, 0xda, 0xa0, 0xef, 0xa7, 0xd0,
					     0x11, 0xcd, 0x8b, 0x3a, 0xa6, 0x45, 0xc4, 0x6d};
	const size_t n = 1 << 20;
	uint8_t *full = malloc(n + 64), *part = malloc(n + 64), *ref = malloc(n);
	uint64_t counts[256] = {0};
	unsigned bad = 0;

	make_sbox();
	CHECK(S[0] == 0x63 && S[0x53] == 0xed && IS[0x63] == 0, "S-box from its definition");
	CHECK(fips197_ok(), "reference AES rounds give FIPS-197's AES-128 example");
	{
		/* InvMixColumns undoes MixColumns, the inverse S-box the S-box. */
		uint8_t s[16], t[16];
		for (int i = 0; i < 16; i++)
			s[i] = t[i] = (uint8_t)(37 * i + 11);
		mix(s, MC);
		mix(s, IMC);
		sub_shift(s, 0);
		sub_shift(s, 1);
		CHECK(memcmp(s, t, 16) == 0, "inverse round parts");
	}

	/* Scalar draws (dl_prng_word): splitmix64, unchanged. */
	for (int i = 0; i < 4; i++)
		CHECK(dl_prng_word(0x1234, (uint64_t)i) == gold[i], "word %d", i);

	/* The bulk stream: every path this CPU runs equals the reference. */
	ref_fill(42, 0, ref, n);
	for (int p = 0; p < DL_PRNG__PATHS; p++) {
		enum dl_prng_path path = (enum dl_prng_path)p;
		if (!dl_prng_path_available(path)) {
			printf("prng: path %s not available on this CPU\n", dl_prng_path_name(path));
			continue;
		}
		printf("prng: checking path %s\n", dl_prng_path_name(path));
		dl_prng_fill_path(path, 42, 0, full, n);
		CHECK(memcmp(full, ref, n) == 0, "path %s: 1 MiB vs reference", dl_prng_path_name(path));
		bad = 0;
		for (unsigned a = 0; a < 16; a++) {
			size_t off = 64 * a + 7 * a, len = 4096 + 13 * a;
			dl_prng_fill_path(path, 42, off, part + a, len);
			if (memcmp(part + a, ref + off, len))
				bad++;
		}
		CHECK(bad == 0, "path %s: %u offsets/alignments differ", dl_prng_path_name(path), bad);
		for (size_t len = 0; len < 200; len++) {
			dl_prng_fill_path(path, 42, 1000 - len / 2, part, len);
			if (memcmp(part, ref + 1000 - len / 2, len))
				bad++;
		}
		CHECK(bad == 0, "path %s: short fills differ", dl_prng_path_name(path));
		uint8_t far[4096], rfar[4096];
		dl_prng_fill_path(path, 7, (1ULL << 40) + 3, far, sizeof(far));
		ref_fill(7, (1ULL << 40) + 3, rfar, sizeof(rfar));
		CHECK(memcmp(far, rfar, sizeof(far)) == 0, "path %s: offset 2^40 + 3",
		      dl_prng_path_name(path));
	}
	printf("prng: best path %s\n", dl_prng_isa());

	/* Golden bytes. */
	uint8_t g[16];
	dl_prng_fill(0x1234, 0, g, 16);
	CHECK(memcmp(g, gold_fill, 16) == 0, "golden bytes of stream 0x1234: %02x%02x%02x%02x..",
	      g[0], g[1], g[2], g[3]);
	dl_prng_fill(42, (1ULL << 40) + 3, g, 16);
	CHECK(memcmp(g, gold_far, 16) == 0, "golden bytes at 2^40 + 3: %02x%02x%02x%02x..", g[0],
	      g[1], g[2], g[3]);

	/* Random access: any (offset, length) equals the slice of the full stream. */
	dl_prng_fill(42, 0, full, n);
	srand(7);
	bad = 0;
	for (int i = 0; i < 2000; i++) {
		size_t off = (size_t)rand() % n, len = (size_t)rand() % 70000;
		if (off + len > n)
			len = n - off;
		dl_prng_fill(42, off, part + (i % 8), len);
		if (memcmp(part + (i % 8), full + off, len))
			bad++;
	}
	CHECK(bad == 0, "%u random slices differ", bad);

	/* Streams with different keys differ. */
	dl_prng_fill(43, 0, part, 4096);
	CHECK(memcmp(part, full, 4096) != 0, "key 43 vs 42");

	/* Byte histogram: chi-square with 255 dof stays far below 400. */
	for (size_t i = 0; i < n; i++)
		counts[full[i]]++;
	double chi = 0, e = (double)n / 256;
	for (int i = 0; i < 256; i++)
		chi += (counts[i] - e) * (counts[i] - e) / e;
	CHECK(chi < 400, "chi-square %.1f", chi);

	/* Serial correlation of bytes at lags 1, 16, 32, 64 (within and across
	 * the two outputs of one AES state and across blocks): |r| < 0.01. */
	static const size_t lags[] = {1, 16, 32, 64};
	for (unsigned l = 0; l < 4; l++) {
		double sxy = 0, sx = 0, sxx = 0;
		size_t m = n - lags[l];
		for (size_t i = 0; i < m; i++) {
			sx += full[i];
			sxx += (double)full[i] * full[i];
			sxy += (double)full[i] * full[i + lags[l]];
		}
		double mean = sx / m, var = sxx / m - mean * mean;
		double r = (sxy / m - mean * mean) / var;
		CHECK(fabs(r) < 0.01, "lag %zu correlation %.4f", lags[l], r);
	}

	/* Bit balance per bit position of 64-bit words: each near 1/2. */
	unsigned long ones[64] = {0};
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, full + i, 8);
		for (int b = 0; b < 64; b++)
			ones[b] += (w >> b) & 1;
	}
	bad = 0;
	for (int b = 0; b < 64; b++)
		if (fabs((double)ones[b] / (n / 8) - 0.5) > 0.006)
			bad++;
	CHECK(bad == 0, "%u bit positions unbalanced", bad);

	/* Normal draws: mean ~ 0, stdev ~ 1. */
	double s = 0, s2 = 0;
	for (uint64_t i = 0; i < 100000; i++) {
		double v = dl_prng_normal(9, i);
		s += v;
		s2 += v * v;
	}
	double mean = s / 100000, sd = sqrt(s2 / 100000 - mean * mean);
	CHECK(fabs(mean) < 0.02 && fabs(sd - 1) < 0.02, "normal mean %.4f sd %.4f", mean, sd);

	/* dl_prng_below stays in range. */
	bad = 0;
	for (uint64_t i = 0; i < 10000; i++)
		if (dl_prng_below(5, i, 7) >= 7)
			bad++;
	CHECK(bad == 0, "below out of range");
	CHECK(dl_key2(1, 2) != dl_key2(2, 1), "key derivation is ordered");

	free(full);
	free(part);
	free(ref);
	return tap_done("prng");
}
