/* The config model: what `dliofs mount` and every tool is told to build.
 * Parsing (libyaml) and validation live in config/; this is the result. */
#ifndef DLIOFS_CONFIG_H
#define DLIOFS_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "dliofs/pacer.h"

enum dl_format {
	DL_FMT_NPY,
	DL_FMT_NPZ,
	DL_FMT_TFRECORD,
	DL_FMT_DLRM,
	DL_FMT_RAW,
	DL_FMT_INDEXED_BINARY,
	DL_FMT_HDF5,
	DL_FMT_JPEG,
	DL_FMT_PNG,
	DL_FMT__COUNT
};

enum dl_dtype {
	DL_DT_UINT8,
	DL_DT_INT8,
	DL_DT_UINT16,
	DL_DT_INT16,
	DL_DT_UINT32,
	DL_DT_INT32,
	DL_DT_UINT64,
	DL_DT_INT64,
	DL_DT_FLOAT16,
	DL_DT_FLOAT32,
	DL_DT_FLOAT64,
	DL_DT__COUNT
};

enum dl_io_mode {
	DL_IO_CACHE,	/* kernel page cache, bytes kept across opens (content never changes) */
	DL_IO_DIRECT,	/* direct_io: every read reaches the daemon */
};

/* Compression of a whole file or its members. Payload is random, so real
 * deflate would emit stored blocks anyway: we emit exactly those. */
enum dl_compression {
	DL_COMP_NONE,
	DL_COMP_GZIP,	/* tfrecord: GZIP stream; hdf5: deflate filter on chunks */
	DL_COMP_ZIP,	/* npz: np.savez_compressed (deflate members) */
};

enum dl_color {
	DL_COLOR_L,		/* 1 channel */
	DL_COLOR_RGB,		/* 3 channels, no chroma subsampling */
	DL_COLOR_RGB420,	/* 3 channels, JPEG 4:2:0 (PNG: same as RGB) */
};

enum dl_hdf5_layout {
	DL_H5_DLIO,	/* records_0..k-1 (samples, d, d) + labels, as DLIO writes */
	DL_H5_PLAIN,	/* x (samples, ...) + y (samples,) */
};

#define DL_MAX_DIMS 8
#define DL_NAME_MAX 128

/* Where a value was written, for error messages (1-based; 0 = not from a file). */
struct dl_loc {
	unsigned line, col;
};

/* A size distribution: fixed when stdev == 0 (then min == max == mean);
 * otherwise normal(mean, stdev) clipped to [min, max]. */
struct dl_dist {
	uint64_t mean, stdev, min, max;
};

enum dl_split { DL_SPLIT_TRAIN, DL_SPLIT_VALID, DL_SPLIT__COUNT };

struct dl_dataset {
	char name[DL_NAME_MAX];		/* directory under the mount root; one path component */
	uint64_t id;			/* hash of name: content does not depend on list order */
	unsigned index;			/* position in the config */
	enum dl_format format;
	uint64_t files[DL_SPLIT__COUNT];	/* train, valid ("files", "eval_files") */
	uint32_t subfolders[DL_SPLIT__COUNT];	/* 0 or 1: flat; N > 1: DLIO's N subfolders */
	uint64_t samples_per_file;
	struct dl_dist sample_size;	/* bytes per sample (ignored when shape is set) */
	enum dl_dtype dtype;
	unsigned ndims;			/* > 0: fixed per-sample shape */
	uint64_t dims[DL_MAX_DIMS];
	char file_prefix[64];		/* DLIO default "img" */
	uint64_t dlrm_cardinality;	/* categorical ids drawn below this (dlrm only) */
	enum dl_compression compression;
	unsigned compression_level;	/* 1..9, informational for stored-block deflate */
	/* hdf5 */
	enum dl_hdf5_layout h5_layout;
	unsigned h5_dsets;		/* DLIO's num_dset_per_record (records_0..k-1), >= 1 */
	unsigned h5_chunk_ndims;	/* 0: contiguous; else chunk shape (per dataset dims) */
	uint64_t h5_chunk[DL_MAX_DIMS];
	/* jpeg / png: per-file dimensions; sample_size, when set, is the exact file size */
	struct dl_dist width, height;
	enum dl_color color;
	int size_given;			/* sample_size was written in the config */
	uint32_t classes;		/* > 0: ImageNet tree <split>/<class>/<name>.JPEG */
	struct dl_loc loc;		/* the dataset's mapping in the YAML */
};

/* `trace:` section: record every request from mount time on. */
struct dl_trace_cfg {
	int enabled;
	char file[4096];
	uint32_t ops_mask;	/* bit (1 << enum dl_trace_op); 0 means all */
};


/* `backing:` list: a real directory (or a sink) shown at <mount>/<at>. */
#define DL_BACKING_MAX 256
struct dl_backing_cfg {
	char at[DL_NAME_MAX];	/* name under the mount root; one path component */
	char path[4096];	/* absolute path of the real directory; "" for a sink */
	int writable;		/* modifications reach the real directory (default: read-only) */
	int sink;		/* writes accepted, shaped, counted and discarded; no path */
	uint64_t max_entries;	/* sink: files and directories it holds at most (ENOSPC beyond) */
	struct dl_loc loc;	/* the entry's mapping in the YAML */
};

struct dl_config {
	char path[4096];		/* file it came from */
	uint64_t seed;
	enum dl_io_mode io_mode;
	unsigned ndatasets;
	struct dl_dataset *datasets;
	struct dl_pacer_cfg pacer;	/* `pacer:` and `cache:` sections (zeroed: off, kernel cache) */
	struct dl_trace_cfg trace;
	unsigned nbacking;
	struct dl_backing_cfg *backing;
};

/* Parse and validate `path`. Every problem goes to `err` as
 * "file:line:column: key: what was expected" and the call returns -EINVAL
 * (or -ENOENT/-EIO for an unreadable file). On success *out is owned by the caller. */
int dl_config_load(const char *path, FILE *err, struct dl_config **out);
/* Same from a memory buffer; `name` is used in messages. */
int dl_config_load_buf(const char *name, const char *yaml, size_t len, FILE *err,
		       struct dl_config **out);
void dl_config_free(struct dl_config *cfg);

/* Print the effective config back as YAML (every default filled in). */
int dl_config_dump(const struct dl_config *cfg, FILE *out);

const char *dl_format_name(enum dl_format f);
int dl_format_from_name(const char *s, enum dl_format *out);
const char *dl_dtype_name(enum dl_dtype t);		/* "uint8", "float32" */
const char *dl_dtype_descr(enum dl_dtype t);		/* numpy descr: "|u1", "<f4" */
unsigned dl_dtype_size(enum dl_dtype t);
int dl_dtype_from_name(const char *s, enum dl_dtype *out);

#endif
