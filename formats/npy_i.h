/* Private to formats/npy.c and formats/npz.c: the NPY pieces both share
 * (per-sample shape, numpy's exact header, array contents). */
#ifndef DLIOFS_NPY_I_H
#define DLIOFS_NPY_I_H

#include <stddef.h>
#include <stdint.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"

/* Largest header we can produce: 9 axes of 20 digits stay far below this. */
#define DL_NPY_HDR_MAX 512

/* Content region of the array data: npy and npz of the same key share it. */
#define DL_NPY_REGION_DATA 0x6e70796461746100ULL /* "npydata" */

/* npz CRC cache keys: (f->key, dl_npz_x_cache_key(f)) for x.npy, (Y_TAG,
 * samples) for y.npy, whose CRC depends only on its length. */
#define DL_NPZ_DCACHE_X_TAG 0x6e707a7863726332ULL /* "npzxcrc2" */
#define DL_NPZ_DCACHE_Y_TAG 0x6e707a7963726332ULL /* "npzycrc2" */

/* DLIO's per-sample shape: ds->dims, else (d, d) with d = isqrt(sample_bytes /
 * itemsize), at least 1. Sets f->ndims/f->dims and the real f->sample_bytes;
 * -EFBIG when the file would not fit in 64 bits. */
int dl_npy_sample_shape(struct dl_file *f);

/* Bytes of the array data of f: prod(dims) * samples * itemsize (checked by
 * dl_npy_sample_shape). */
uint64_t dl_npy_data_bytes(const struct dl_file *f);

/* numpy 1.24's np.save header (magic .. final '\n') for a C-order array of
 * `ndims` axes; buf holds DL_NPY_HDR_MAX bytes. Returns its length, or 0 if
 * it cannot be represented (never for the shapes we build). */
size_t dl_npy_header(uint8_t *buf, enum dl_dtype dtype, const uint64_t *shape, unsigned ndims);

/* Header of f's array: shape f->dims + (f->samples,), sample axis last (DLIO). */
size_t dl_npy_file_header(const struct dl_file *f, uint8_t *buf);

/* Array data bytes [off, off + len) of f (offset within the data, not the
 * file). Integers: raw stream bytes. Floats: uniform in [0, 1), element i made
 * from the stream bytes of element i only, so any slice equals a full read. */
void dl_npy_fill_data(const struct dl_file *f, uint8_t *buf, uint64_t off, size_t len);

/* Second cache key of x.npy's CRC: everything its bytes depend on besides
 * f->key, so that a reused key (same name, other dtype/shape) never hits. */
static inline uint64_t dl_npz_x_cache_key(const struct dl_file *f)
{
	uint64_t k = dl_key3(DL_NPZ_DCACHE_X_TAG, f->ds->dtype, f->samples);

	for (unsigned i = 0; i < f->ndims; i++)
		k = dl_key2(k, f->dims[i]);
	return k;
}

#endif
