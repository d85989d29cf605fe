/* Checksums: every CRC-32 / CRC-32C / Adler-32 path against zlib (CRC-32,
 * Adler-32) and the table CRC-32C on random inputs of every length class and
 * alignment, chained pieces, combines; the folding constants from their
 * definition. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "crc_fold_i.h"
#include "dliofs/crc32.h"
#include "dliofs/crc32c.h"
#include "dliofs/prng.h"
#include "tap.h"

/* x^e mod P, bit-reflected (bit 31 = x^0), one shift per power. */
static uint32_t xpow(uint32_t poly, uint64_t e)
{
	uint32_t r = 0x80000000u;

	while (e--)
		r = (r & 1) ? (r >> 1) ^ poly : r >> 1;
	return r;
}

static void check_consts(const char *name, uint32_t poly, const struct dl_fold_k *k)
{
	static const unsigned d[3] = {1024, 256, 128};
	const uint64_t *got[3] = {k->d1024, k->d256, k->d128};

	for (int i = 0; i < 3; i++) {
		uint64_t lo = (uint64_t)xpow(poly, d[i] + 32) << 1;
		uint64_t hi = (uint64_t)xpow(poly, d[i] - 32) << 1;
		CHECK(got[i][0] == lo && got[i][1] == hi, "%s fold constants for %u bits", name, d[i]);
	}
}

int main(void)
{
	static const struct dl_fold_k k32 = DL_FOLD_K_CRC32, k32c = DL_FOLD_K_CRC32C;
	const size_t n = 1 << 20;
	uint8_t *buf = malloc(n + 64);
	unsigned bad32 = 0, bad32c = 0, badad = 0, badlib = 0;

	check_consts("CRC-32", 0xedb88320u, &k32);
	check_consts("CRC-32C", 0x82f63b78u, &k32c);
	CHECK(dl_crc32(0, "123456789", 9) == 0xcbf43926u, "CRC-32 check value");
	CHECK(dl_crc32c(0, "123456789", 9) == 0xe3069283u, "CRC-32C check value");
	CHECK(dl_adler32(1, "123456789", 9) == 0x091e01deu, "Adler-32 check value");
	printf("crc: fold paths %s\n",
	       dl_crc32_fold_available() ? "available" : "not available on this CPU");

	dl_prng_fill(5, 0, buf, n + 64);
	srand(11);
	for (int i = 0; i < 3000; i++) {
		/* Lengths around every boundary of the fold (16, 128, 256 and
		 * their multiples) as well as large ones. */
		size_t len = i < 600 ? (size_t)i : i < 2000 ? (size_t)rand() % 5000 : (size_t)rand() % n;
		size_t off = (size_t)rand() % 64;
		uint32_t seed = (uint32_t)rand();
		const uint8_t *p = buf + off;
		uint32_t z = (uint32_t)crc32(seed, p, (uInt)len);

		if (dl_crc32(seed, p, len) != z || dl_crc32_fold(seed, p, len) != z)
			bad32++;
		if (dl_crc32_lib(seed, p, len) != z)
			badlib++;
		uint32_t c = dl_crc32c_sw(seed, p, len);
		if (dl_crc32c(seed, p, len) != c || dl_crc32c_fold(seed, p, len) != c ||
		    dl_crc32c_hybrid(seed, p, len) != c ||
		    (dl_crc32c_hw_available() && dl_crc32c_hw(seed, p, len) != c))
			bad32c++;
		uint32_t a = (uint32_t)adler32(seed % 65521 + 1, p, (uInt)len);
		if (dl_adler32(seed % 65521 + 1, p, len) != a)
			badad++;
	}
	CHECK(bad32 == 0, "%u CRC-32 mismatches against zlib", bad32);
	CHECK(badlib == 0, "%u libdeflate CRC-32 mismatches", badlib);
	CHECK(bad32c == 0, "%u CRC-32C mismatches against the tables", bad32c);
	CHECK(badad == 0, "%u Adler-32 mismatches against zlib", badad);

	/* Chained pieces and combines equal the whole. */
	uint32_t whole = dl_crc32(0, buf, n), a = dl_crc32(0, buf, 123457);
	uint32_t b = dl_crc32(0, buf + 123457, n - 123457);
	CHECK(dl_crc32(a, buf + 123457, n - 123457) == whole, "CRC-32 chained");
	CHECK(dl_crc32_combine(a, b, n - 123457) == whole, "CRC-32 combine");
	uint32_t aw = dl_adler32(1, buf, n), aa = dl_adler32(1, buf, 99999);
	uint32_t ab = dl_adler32(1, buf + 99999, n - 99999);
	CHECK(dl_adler32_combine(aa, ab, n - 99999) == aw, "Adler-32 combine");
	uint32_t cw = dl_crc32c(0, buf, n), ca = dl_crc32c(0, buf, 4097);
	CHECK(dl_crc32c_fold(ca, buf + 4097, n - 4097) == cw, "CRC-32C fold chained");

	free(buf);
	return tap_done("crc");
}
