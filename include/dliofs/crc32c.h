/* CRC-32C (Castagnoli), as TFRecord uses it (util/crc32c.c; also used by the tools).
 *
 * All functions take and return finished CRC values (init and final XOR
 * 0xFFFFFFFF applied), zlib style: start from 0 and feed pieces in order,
 * dl_crc32c(dl_crc32c(0, a, na), b, nb) == crc of a || b. */
#ifndef DLIOFS_CRC32C_H
#define DLIOFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Best code path for this CPU (crc32 instruction with VPCLMULQDQ folding beside
 * it, the instruction alone, else slice-by-8 tables). */
uint32_t dl_crc32c(uint32_t crc, const void *buf, size_t len);

/* crc(A || B) from crc(A), crc(B) and len(B), in O(log len(B)). */
uint32_t dl_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* TFRecord's stored form: rotate right by 15, add a constant. */
static inline uint32_t dl_crc32c_mask(uint32_t c)
{
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static inline uint32_t dl_crc32c_unmask(uint32_t m)
{
	uint32_t r = m - 0xa282ead8u;
	return (r >> 17) | (r << 15);
}

/* The individual code paths, for tests and benchmarks. dl_crc32c_hw is only
 * valid when dl_crc32c_hw_available() says so. */
uint32_t dl_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t dl_crc32c_hw(uint32_t crc, const void *buf, size_t len);
int dl_crc32c_hw_available(void);
/* 256-bit carry-less multiply folding (VPCLMULQDQ), finished with the
 * crc32 instruction; valid only when dl_crc32c_fold_available() says so. */
uint32_t dl_crc32c_fold(uint32_t crc, const void *buf, size_t len);
int dl_crc32c_fold_available(void);
/* Both at once on different parts of each 8.5 KiB (the default for long
 * buffers where the CPU has both); valid where dl_crc32c_hybrid_available(). */
uint32_t dl_crc32c_hybrid(uint32_t crc, const void *buf, size_t len);
int dl_crc32c_hybrid_available(void);

/* x^(8 * n) modulo the polynomial, bit-reflected: the operator that appends
 * n zero bytes. Exposed so tests can check the constants of the hw path. */
uint32_t dl_crc32c_x8n(uint64_t n);

#endif
