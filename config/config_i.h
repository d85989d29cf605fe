/* Private to config/: the two passes over a YAML document and what they share.
 * parse.c turns nodes into the model and checks each value on its own;
 * validate.c then checks the model as a whole and keeps going after the
 * first problem, pointing at the nodes parse.c remembered. */
#ifndef DLIOFS_CONFIG_I_H
#define DLIOFS_CONFIG_I_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <yaml.h>

#include "dliofs/config.h"

#define CFG_MAX_DATASETS 4096
#define CFG_MAX_FILES (1ULL << 44)
/* A file's size must stay far from 2^64 so offsets plus lengths never wrap. */
#define CFG_MAX_FILE_BYTES (1ULL << 62)
/* Room for headers and framing: per file (npy/zip headers, central
 * directory) and per sample (TFRecord length/CRC, zip member headers). */
#define CFG_FILE_ROOM (1ULL << 20)
#define CFG_SAMPLE_ROOM 256ULL
#define CFG_DLRM_RECORD 160ULL
#define CFG_DEFAULT_CARDINALITY 10000000ULL
#define CFG_DEFAULT_COMPRESSION_LEVEL 4
/* Image sides: JPEG's own limit (libjpeg refuses more than 65500); PNG
 * allows 2^31-1 but the raw image must stay addressable. */
#define CFG_JPEG_MAX_SIDE 65500ULL
#define CFG_PNG_MAX_SIDE 0x7fffffffULL
#define CFG_PNG_MAX_RAW (1ULL << 50)
/* The smallest exact file sizes the image formats can lay out: a 1x1 image
 * (JPEG: header + one MCU's blocks + EOI; PNG: 1x1 natural size + the
 * 12-byte minimum pad chunk, so every larger target is reachable). */
#define CFG_JPEG_MIN_BYTES_L 160ULL
#define CFG_JPEG_MIN_BYTES_RGB 172ULL
#define CFG_JPEG_MIN_BYTES_RGB420 175ULL
#define CFG_PNG_MIN_BYTES_L 94ULL
#define CFG_PNG_MIN_BYTES_RGB 96ULL
/* Derived image sides (sample_size given, width/height not): a square
 * whose raw pixels are this many times the file size. */
#define CFG_IMG_RAW_PER_BYTE 4
#define CFG_MAX_CLASSES 1000000ULL
/* hdf5: the format's own limits (formats/hdf5_i.h). */
#define CFG_H5_MAX_DSETS 4096ULL
#define CFG_H5_MAX_CHUNKS (1ULL << 20)
#define CFG_H5_MAX_CHUNK_BYTES 0xffffffffULL
#define CFG_NAME_MAX (DL_NAME_MAX - 1)
#define CFG_PREFIX_MAX 63
/* Bounds on the document itself, checked before libyaml builds a tree. */
#define CFG_MAX_BYTES (16u << 20)
#define CFG_MAX_DEPTH 64
#define CFG_MAX_NODES 1000000u
/* Past this many messages the rest are only counted. */
#define CFG_MAX_ERRORS 1000u

/* Keys of one dataset mapping, in the order the dump prints them. */
enum cfg_field {
	CF_NAME,
	CF_FORMAT,
	CF_FILES,
	CF_EVAL_FILES,
	CF_SAMPLES,
	CF_SAMPLE_SIZE,
	CF_DTYPE,
	CF_SHAPE,
	CF_SUBFOLDERS,
	CF_EVAL_SUBFOLDERS,
	CF_PREFIX,
	CF_CARDINALITY,
	CF_COMPRESSION,
	CF_COMPRESSION_LEVEL,
	CF_HDF5,
	CF_WIDTH,
	CF_HEIGHT,
	CF_COLOR,
	CF_CLASSES,
	CF__COUNT
};

/* Keys of a distribution mapping (sample_size, width, height). */
enum cfg_dist_field { CD_MEAN, CD_STDEV, CD_MIN, CD_MAX, CD__COUNT };

/* The values that can be a distribution. */
enum cfg_dist_of { CDO_SIZE, CDO_WIDTH, CDO_HEIGHT, CDO__COUNT };

/* Keys of the hdf5 mapping. */
enum cfg_h5_field { CH_LAYOUT, CH_DATASETS, CH_CHUNKS, CH__COUNT };

extern const char *const cfg_field_key[CF__COUNT];
extern const char *const cfg_dist_key[CD__COUNT];
extern const char *const cfg_h5_key[CH__COUNT];
extern const char *const cfg_color_name[3];
extern const char *const cfg_h5_layout_name[2];
extern const char *const cfg_compression_name[3];

/* A key path as the user wrote it, for a document translated from another
 * schema (a DLIO workload): messages about `ours` (and paths below it) name
 * `theirs` instead. */
struct cfg_alias {
	const char *ours, *theirs;
};

struct cfg_ctx {
	const char *name;	/* file name used in messages */
	FILE *err;		/* NULL: count problems, print nothing */
	unsigned nerr;
	int oom;
	const struct cfg_alias *alias;	/* NULL: native document */
	size_t nalias;
};

/* Where a dataset's values came from: validate.c points at these. */
struct cfg_src_ds {
	yaml_node_t *node;			/* the dataset's mapping (NULL: not a mapping) */
	yaml_node_t *val[CF__COUNT];		/* NULL: key absent */
	unsigned char bad[CF__COUNT];		/* present but already reported */
	yaml_node_t *dist_val[CDO__COUNT][CD__COUNT];	/* a distribution given as a mapping */
	unsigned char dist_bad[CDO__COUNT][CD__COUNT];
	unsigned shape_len;			/* items in the shape list, even past 8 */
	yaml_node_t *h5_val[CH__COUNT];		/* keys of the hdf5 mapping */
	unsigned char h5_bad[CH__COUNT];
	unsigned chunks_len;			/* items in hdf5.chunks, even past 8 */
};

struct cfg_src {
	yaml_node_t *root;
	yaml_node_t *datasets;		/* the datasets value, NULL if absent */
	int datasets_bad;		/* present but not a list (reported) */
	size_t nitems;			/* items in the list, even past the limit */
	struct cfg_src_ds *ds;		/* one per dataset in cfg->datasets */
};

void cfg_error(struct cfg_ctx *c, struct dl_loc loc, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void cfg_verror(struct cfg_ctx *c, struct dl_loc loc, const char *key, const char *fmt,
		va_list ap);

struct dl_loc cfg_node_loc(const yaml_node_t *n);
/* A plain empty/~/null scalar. */
int cfg_is_null(const yaml_node_t *n);
/* What a node is, for "expected X, got Y" ("a list", "a mapping", ...). */
const char *cfg_kind_of(const yaml_node_t *n);
/* A scalar's text for a message: escaped, quoted, cut to a readable length. */
void cfg_quote(const char *s, size_t len, char *buf, size_t buflen);
/* The closest candidate to `s` if it is a plausible typo of it, else NULL. */
/* Our key for a DLIO workload key written in a dliofs config, or NULL. */
const char *cfg_dlio_hint(const char *key);

/* Both passes report through c and return 0; only allocation failures are
 * returned (-ENOMEM). Problems are counted in c->nerr. */
int cfg_parse(struct cfg_ctx *c, yaml_document_t *doc, struct dl_config *cfg,
	      struct cfg_src *src);
int cfg_validate(struct cfg_ctx *c, struct dl_config *cfg, const struct cfg_src *src);

/* ---- DLIO workload files (dlio.c) ---- */

/* Is this document a DLIO workload rather than a dliofs config? */
int cfg_dlio_detect(yaml_document_t *doc);

struct cfg_dlio;	/* a translation: the native document and what it owns */

/* Translate a DLIO workload into a native document (`*native`, same node
 * marks as the workload, so messages point into the user's file) and set
 * c->alias so later messages use DLIO's key names. Problems only DLIO's
 * schema can have (unknown format, unusable data_folder, ...) are reported
 * here. Returns 0 (check c->nerr) or -ENOMEM; *out is to be freed with
 * cfg_dlio_free whatever the result. */
int cfg_dlio_translate(struct cfg_ctx *c, yaml_document_t *doc, struct cfg_dlio **out,
		       yaml_document_t **native);
/* The keys the translation did not use, as one line (nothing when none). */
void cfg_dlio_report_ignored(const struct cfg_ctx *c, struct cfg_dlio *t);
void cfg_dlio_free(struct cfg_dlio *t);

#endif
