/* CRC-32 (zlib's, ISO-HDLC: zip members, gzip trailers, PNG chunks) and
 * Adler-32 (zlib streams) at memory speed (util/crc32.c).
 *
 * zlib conventions: values are finished (init and final XOR applied), a CRC
 * starts from 0 and an Adler-32 from 1, and pieces chain:
 * dl_crc32(dl_crc32(0, a, na), b, nb) == CRC of a || b. */
#ifndef DLIOFS_CRC32_H
#define DLIOFS_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Best path for this CPU: VPCLMULQDQ folding, else libdeflate (PCLMULQDQ
 * where the CPU has it, tables otherwise). */
uint32_t dl_crc32(uint32_t crc, const void *buf, size_t len);

/* crc(A || B) from crc(A), crc(B) and len(B). */
uint32_t dl_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* libdeflate's Adler-32 (AVX2 where the CPU has it). */
uint32_t dl_adler32(uint32_t adler, const void *buf, size_t len);

uint32_t dl_adler32_combine(uint32_t adler_a, uint32_t adler_b, uint64_t len_b);

/* The individual CRC-32 paths, for tests and benchmarks: dl_crc32_fold is
 * valid only when dl_crc32_fold_available() says so. */
uint32_t dl_crc32_lib(uint32_t crc, const void *buf, size_t len);
uint32_t dl_crc32_fold(uint32_t crc, const void *buf, size_t len);
int dl_crc32_fold_available(void);

#endif
