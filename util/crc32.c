/* CRC-32 and Adler-32 for the formats' derived bytes. libdeflate (Debian's
 * libdeflate0) gives Adler-32 with AVX2 and CRC-32 with 128-bit PCLMULQDQ;
 * on CPUs with VPCLMULQDQ our own 256-bit fold (crc_fold_i.h) is about twice
 * as fast as that, so large buffers take it. zlib keeps the combines (they
 * cost O(log n) whatever the data). */
#include <libdeflate.h>
#include <zlib.h>

#include "crc_fold_i.h"
#include "dliofs/crc32.h"

uint32_t dl_crc32_lib(uint32_t crc, const void *buf, size_t len)
{
	return libdeflate_crc32(crc, buf, len);
}

int dl_crc32_fold_available(void)
{
	return dl_fold_available();
}

uint32_t dl_crc32_fold(uint32_t crc, const void *buf, size_t len)
{
#ifdef DL_FOLD_X86
	static const struct dl_fold_k k = DL_FOLD_K_CRC32;
	const uint8_t *p = buf;
	uint8_t x[16];
	size_t n = len & ~(size_t)15;

	if (len < DL_FOLD_MIN || !dl_fold_available())
		return libdeflate_crc32(crc, buf, len);
	dl_fold(&k, ~crc, p, n, x);
	/* The folded 16 bytes from a zero register: finished value of ~0 in. */
	crc = libdeflate_crc32(0xffffffffu, x, 16);
	return libdeflate_crc32(crc, p + n, len - n);
#else
	return libdeflate_crc32(crc, buf, len);
#endif
}

uint32_t dl_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (len >= DL_FOLD_MIN && dl_fold_available())
		return dl_crc32_fold(crc, buf, len);
	return libdeflate_crc32(crc, buf, len);
}

uint32_t dl_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return (uint32_t)crc32_combine64(crc_a, crc_b, (z_off64_t)len_b);
}

uint32_t dl_adler32(uint32_t adler, const void *buf, size_t len)
{
	return libdeflate_adler32(adler, buf, len);
}

uint32_t dl_adler32_combine(uint32_t adler_a, uint32_t adler_b, uint64_t len_b)
{
	return (uint32_t)adler32_combine64(adler_a, adler_b, (z_off64_t)len_b);
}
