/* The dataset model: what a dataset is (its format, files, samples, sizes,
 * element type and layout), whatever it was described in. config/ builds
 * it from YAML; formats/ lays files out from it; fs/ and tools/ serve and
 * read it. */
#ifndef DLIOFS_DATASET_H
#define DLIOFS_DATASET_H

#include <stdint.h>

/* DL_FMT_NPY, ... in the order of format_list.h. */
enum dl_format {
#define DL_FORMAT(UPPER, lower) DL_FMT_##UPPER,
#include "dliofs/format_list.h"
#undef DL_FORMAT
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

/* Compression of a whole file or its members. Payload is random, so real
 * deflate would emit stored blocks anyway: we emit exactly those. Which a
 * format takes is in its ops table. */
enum dl_compression {
	DL_COMP_NONE,
	DL_COMP_GZIP,
	DL_COMP_ZIP,
	DL_COMP__COUNT
};

/* The control directory in the mount root (hidden from listings): no
 * dataset or backing directory may take its name. */
#define DL_CTL_DIRNAME ".dliofs"

#define DL_MAX_DIMS 8
#define DL_NAME_MAX 128

/* Where a value was written, for error messages (1-based; 0 = not from a file). */
struct dl_loc {
	unsigned line, col;
};

/* A distribution: fixed when stdev == 0 (then min == max == mean);
 * otherwise normal(mean, stdev) clipped to [min, max]. */
struct dl_dist {
	uint64_t mean, stdev, min, max;
};

enum dl_split { DL_SPLIT_TRAIN, DL_SPLIT_VALID, DL_SPLIT__COUNT };

/* Bytes of a format's own parameters (image sides, hdf5 layout...), which
 * the format's parameter table describes (format.h). */
#define DL_FORMAT_PARAMS_BYTES 128

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
	enum dl_compression compression;
	unsigned compression_level;	/* 1..9, informational for stored-block deflate */
	int size_given;			/* sample_size was written in the config */
	uint32_t classes;		/* > 0: ImageNet tree <split>/<class>/<name>.<ext> */
	struct dl_loc loc;		/* the dataset's mapping in the YAML */
	/* The format's own parameters, as its parameter table lays them out. */
	_Alignas(8) unsigned char params[DL_FORMAT_PARAMS_BYTES];
};

/* The parameter block of ds as the format's own struct type. */
#define DL_DS_PARAMS(ds, type) ((type *)(void *)(ds)->params)
#define DL_DS_PARAMS_FIT(type)                                                       \
	_Static_assert(sizeof(type) <= DL_FORMAT_PARAMS_BYTES, #type " does not fit")

const char *dl_dtype_name(enum dl_dtype t);		/* "uint8", "float32" */
const char *dl_dtype_descr(enum dl_dtype t);		/* numpy descr: "|u1", "<f4" */
unsigned dl_dtype_size(enum dl_dtype t);
int dl_dtype_from_name(const char *s, enum dl_dtype *out);
const char *dl_compression_name(enum dl_compression c);	/* "none", "gzip", "zip" */

#endif
