/* formats/: given a dataset and a file index, the exact size and any byte range.
 * Knows nothing of FUSE; shared by the daemon and the tools (dlio-gen). */
#ifndef DLIOFS_FORMAT_H
#define DLIOFS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "dliofs/config.h"

/* Everything about one file, computed in O(1) from (config seed, dataset, split, index, part).
 * Cheap enough to build per request; holds no pointers the caller must free. */
struct dl_fmt_ctx;

struct dl_file {
	const struct dl_dataset *ds;
	struct dl_fmt_ctx *ctx;		/* borrowed: the context that built it (for layout caches) */
	uint32_t split;			/* enum dl_split */
	uint32_t part;			/* 0: the data file; > 0: a companion (indexed_binary .off.idx ...) */
	uint64_t index;			/* file number within the split */
	uint64_t key;			/* content key: f(seed, ds->id, split, index) */
	uint64_t sample_bytes;		/* bytes of one sample in this file (after the size draw) */
	unsigned ndims;			/* per-sample shape in this file (npy/npz), C order */
	uint64_t dims[DL_MAX_DIMS];
	uint64_t samples;		/* samples (records) in this file */
	uint64_t size;			/* exact file size in bytes */
	uint64_t aux[4];		/* format-private precomputed layout values */
};

struct dl_fmt_ctx;

/* One per process: holds the config's seed and a bounded, thread-safe cache of
 * derived values (CRCs). cache_entries 0 picks the default (1 Mi entries, ~24 MB). */
int dl_fmt_ctx_new(const struct dl_config *cfg, size_t cache_entries, struct dl_fmt_ctx **out);
void dl_fmt_ctx_free(struct dl_fmt_ctx *ctx);

/* Build the file description. -ENOENT when index/part is out of range. */
int dl_file_init(struct dl_fmt_ctx *ctx, const struct dl_dataset *ds, uint32_t split,
		 uint64_t index, uint32_t part, struct dl_file *out);

/* Fill buf with bytes [off, off + len) of the file; off + len must be <= f->size.
 * Thread-safe. Returns 0 or -errno. */
int dl_file_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, void *buf, uint64_t off,
		 size_t len);

/* Derived-value cache (CRCs): 0 and the value, or -ENOENT. Lossy: an entry may be
 * evicted at any time, so callers must be able to recompute. */
int dl_dcache_get(struct dl_fmt_ctx *ctx, uint64_t k1, uint64_t k2, uint32_t *val);
void dl_dcache_put(struct dl_fmt_ctx *ctx, uint64_t k1, uint64_t k2, uint32_t val);

/* How a training job reads a format: dlio-drive picks its reader from the
 * plan and its defaults from the hints, so a new format with an existing
 * plan needs nothing in tools/. */
enum dl_read_plan {
	DL_PLAN_WHOLE,		/* a file, or a sample of it, is read whole (npy, npz, images) */
	DL_PLAN_STREAM,		/* framed records read as a stream, record by record (tfrecord) */
	DL_PLAN_HYPERSLAB,	/* per-sample selections through the format's library (hdf5) */
	DL_PLAN_REGION,		/* samples at computed offsets (raw, indexed_binary) */
	DL_PLAN_CHUNK,		/* batches of fixed-size records in large reads (dlrm) */
};

#define DL_RH_IMAGE 1u		/* decodable image: --decode applies */
#define DL_RH_CRC 2u		/* records carry a checksum a reader can check */
#define DL_RH_NUMPY 4u		/* loaded with numpy.load: DLIO's buffered re-reads */
#define DL_RH_INDEXED 8u	/* samples located through the companion index files */

struct dl_read_hints {
	enum dl_read_plan plan;
	unsigned batch;		/* DLIO's default batch size for the format */
	unsigned read_threads;	/* DLIO's default reader threads */
	unsigned flags;		/* DL_RH_* */
};

/* One format behind one small interface; registered in formats/registry.c. */
struct dl_format_ops {
	enum dl_format id;
	const char *name;		/* config name: "npz" */
	const char *ext;		/* file extension without dot (DLIO's) */
	unsigned nparts;		/* 1, or data + companions */
	const char *part_suffix[4];	/* appended to the data file name for part > 0 */
	struct dl_read_hints read_hints;	/* how a job reads it */
	/* Fill f->dims/ndims/samples/size/aux from f->ds, f->sample_bytes, f->part. */
	int (*layout)(struct dl_file *f);
	/* Bytes [off, off + len) of f, already clipped to f->size. */
	int (*read)(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len);
	/* Optional per-context state (template caches, library locks): created by
	 * dl_fmt_ctx_new, reached with dl_fmt_state(), destroyed by dl_fmt_ctx_free. */
	int (*state_new)(const struct dl_config *cfg, void **state);
	void (*state_free)(void *state);
};

void *dl_fmt_state(struct dl_fmt_ctx *ctx, enum dl_format f);

const struct dl_format_ops *dl_format_ops(enum dl_format f);
/* The format of a dataset. */
const struct dl_format_ops *dl_ds_ops(const struct dl_dataset *ds);

#endif
