/* Private to formats/tfrecord.c and its unit test: where the GZIP variant
 * keeps its derived CRC-32 values in the derived-value cache. */
#ifndef DLIOFS_TFRECORD_I_H
#define DLIOFS_TFRECORD_I_H

#include <stdint.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"

/* CRC-32 of U, the uncompressed record stream, per segment of this size. */
#define DL_TFR_GZ_SEG (1ull << 20)
/* Entries (gz key SEG_TAG, k): segment k; (SEG_TAG, DL_TFR_GZ_WHOLE): all of
 * U; (PART_TAG, offset): a segment's running CRC up to that offset of U. */
#define DL_TFR_GZ_SEG_TAG 0x746672677a736567ULL	 /* "tfrgzseg" */
#define DL_TFR_GZ_PART_TAG 0x746672677a707274ULL /* "tfrgzprt" */
#define DL_TFR_GZ_WHOLE UINT64_MAX

/* First key word of those entries: everything U depends on. */
static inline uint64_t dl_tfr_gz_key(const struct dl_file *f, uint64_t tag)
{
	return dl_key2(dl_key3(f->key, tag, f->sample_bytes), f->samples);
}

#endif
