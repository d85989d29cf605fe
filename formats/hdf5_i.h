/* Private to formats/hdf5.c and its unit test: content regions, limits and
 * the template-cache counters the test uses to prove reuse. */
#ifndef DLIOFS_HDF5_I_H
#define DLIOFS_HDF5_I_H

#include <stdint.h>

#include "dliofs/format.h"

enum dl_hdf5_layout {
	DL_H5_DLIO,	/* records_0..k-1 (samples, d, d) + labels, as DLIO writes */
	DL_H5_PLAIN,	/* x (samples, ...) + y (samples,) */
};

/* An hdf5 dataset's own parameters (the hdf5: mapping). */
struct dl_h5_params {
	unsigned layout;	/* enum dl_hdf5_layout */
	unsigned dsets;		/* DLIO's num_dset_per_record (records_0..k-1), >= 1 */
	unsigned chunk_ndims;	/* 0: contiguous; else chunk shape (per dataset dims) */
	uint64_t chunk[DL_MAX_DIMS];
};
DL_DS_PARAMS_FIT(struct dl_h5_params);

static inline const struct dl_h5_params *dl_h5_params(const struct dl_dataset *ds)
{
	return DL_DS_PARAMS(ds, const struct dl_h5_params);
}

/* The format's config side (hdf5_config.c). */
extern const struct dl_param dl_h5_param_table[];
extern const unsigned dl_h5_nparams;
void dl_h5_check(struct dl_dataset *ds, const struct dl_check *chk, int size_ok);
uint64_t dl_h5_copies(const struct dl_dataset *ds, const char **key);

/* Content streams: data dataset i (records_i, or x) is stream
 * dl_file_stream(f, DL_H5_REGION_DATA + i) fed through the npy conversion
 * (dl_npy_fill_data), so integers are raw stream bytes and floats uniform in
 * [0, 1). Contiguous: element e at stream offset e * itemsize. Chunked: chunk
 * c (row-major index in the chunk grid) holds stream bytes
 * [c * chunk_bytes, (c + 1) * chunk_bytes) in the chunk's own row-major order,
 * edge chunks included (their out-of-range elements are never read). */
#define DL_H5_REGION_DATA 0x6864663564617400ULL /* "hdf5dat" */
/* Plain layout's y: y[i] = dl_prng_below(dl_file_stream(f, DL_H5_REGION_Y), i,
 * DL_H5_Y_CLASSES), a class id per sample. DLIO's labels are zeros. */
#define DL_H5_REGION_Y 0x6864663579000000ULL /* "hdf5y" */
#define DL_H5_Y_CLASSES 1000

/* Second dcache key word of a stored-deflate chunk's Adler-32 (first: f->key). */
#define DL_H5_DCACHE_TAG 0x6864663561646c72ULL /* "hdf5adlr" */
#define DL_H5_PART_TAG 0x6864663570617274ULL /* "hdf5part": running Adler-32s */

/* Templates kept per context, and the metadata bytes they may hold together
 * (the newest template is kept even when it alone is over the budget). */
#define DL_H5_CACHE_MAX 256
#define DL_H5_CACHE_BUDGET (64u << 20)
/* Chunks per file (all datasets): building the template writes each one
 * through the library (about 1 us each). */
#define DL_H5_MAX_CHUNKS (1u << 20)
/* Data datasets per file (DLIO's num_dset_per_record). */
#define DL_H5_MAX_DSETS 4096

struct dl_h5_stats {
	uint64_t builds;       /* templates built: one libhdf5 file creation each */
	uint64_t lib_calls;    /* sections run under the libhdf5 lock */
	uint64_t hits;	       /* lookups answered from the cache */
	uint64_t cached;       /* templates held now */
	uint64_t cached_bytes; /* memory they hold */
	double build_ms;       /* wall time of all builds */
};

/* Counters of ctx's hdf5 state; -ENOENT when it has none. */
int dl_h5_stats(struct dl_fmt_ctx *ctx, struct dl_h5_stats *out);
/* Lower the number of cached templates (tests force eviction); 0 restores
 * DL_H5_CACHE_MAX. */
int dl_h5_set_cache_max(struct dl_fmt_ctx *ctx, unsigned max);

/* Call fn for each range of f that holds bytes libhdf5 wrote (metadata), in
 * file order; tests use it to make sparse copies of huge files. */
int dl_h5_meta_ranges(struct dl_fmt_ctx *ctx, const struct dl_file *f,
		      void (*fn)(void *arg, uint64_t at, uint64_t len), void *arg);

#endif
