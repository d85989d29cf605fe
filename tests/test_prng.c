/* The generator: random access equals sequential, bytes are pinned forever
 * (golden values), and the vectorized path equals a scalar reference. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "tap.h"

/* Independent scalar splitmix64, written from the published algorithm. */
static uint64_t ref_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void ref_fill(uint64_t key, uint64_t off, uint8_t *out, size_t len)
{
	uint64_t st = key + (off / 8) * 0x9e3779b97f4a7c15ULL;
	uint64_t w = ref_splitmix(&st);
	unsigned b = (unsigned)(off % 8);

	for (size_t i = 0; i < len; i++) {
		out[i] = (uint8_t)(w >> (8 * b));
		if (++b == 8 && i + 1 < len) {
			b = 0;
			w = ref_splitmix(&st);
		}
	}
}

int main(void)
{
	static const uint64_t gold[4] = {0x5f642f87d5e23888ULL, 0x5a4d78533d034cb5ULL,
					 0x8a85ffdaea35a5a6ULL, 0xad002edb4259d53aULL};
	const size_t n = 1 << 20;
	uint8_t *full = malloc(n + 64), *part = malloc(n + 64), *ref = malloc(n);
	uint64_t counts[256] = {0};
	unsigned bad = 0;

	/* Golden: these bytes are part of the on-disk contract; never change them. */
	for (int i = 0; i < 4; i++)
		CHECK(dl_prng_word(0x1234, (uint64_t)i) == gold[i], "word %d", i);
	uint8_t le[32];
	dl_prng_fill(0x1234, 0, le, 32);
	CHECK(le[0] == 0x88 && le[7] == 0x5f && le[8] == 0xb5 && le[31] == 0xad,
	      "little-endian byte order");

	/* Vectorized fill equals the scalar reference, at every alignment. */
	dl_prng_fill(42, 0, full, n);
	ref_fill(42, 0, ref, n);
	CHECK(memcmp(full, ref, n) == 0, "full fill vs reference");
	for (unsigned a = 0; a < 16; a++) {
		dl_prng_fill(42, 0, part + a, n - 64);
		if (memcmp(part + a, ref, n - 64))
			bad++;
	}
	CHECK(bad == 0, "%u misaligned destinations differ", bad);

	/* Random access: any (offset, length) equals the slice of the full stream. */
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

	/* Reference at a large offset (beyond 4 GiB) agrees too. */
	dl_prng_fill(42, (1ULL << 40) + 3, part, 4096);
	ref_fill(42, (1ULL << 40) + 3, ref, 4096);
	CHECK(memcmp(part, ref, 4096) == 0, "offset 2^40 + 3");

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
