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
	CF__COUNT
};

/* Keys of a sample_size mapping. */
enum cfg_dist_field { CD_MEAN, CD_STDEV, CD_MIN, CD_MAX, CD__COUNT };

extern const char *const cfg_field_key[CF__COUNT];
extern const char *const cfg_dist_key[CD__COUNT];

struct cfg_ctx {
	const char *name;	/* file name used in messages */
	FILE *err;		/* NULL: count problems, print nothing */
	unsigned nerr;
	int oom;
};

/* Where a dataset's values came from: validate.c points at these. */
struct cfg_src_ds {
	yaml_node_t *node;			/* the dataset's mapping (NULL: not a mapping) */
	yaml_node_t *val[CF__COUNT];		/* NULL: key absent */
	unsigned char bad[CF__COUNT];		/* present but already reported */
	yaml_node_t *dist_val[CD__COUNT];	/* sample_size given as a mapping */
	unsigned char dist_bad[CD__COUNT];
	unsigned shape_len;			/* items in the shape list, even past 8 */
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
/* A scalar's text for a message: escaped, quoted, cut to a readable length. */
void cfg_quote(const char *s, size_t len, char *buf, size_t buflen);
/* The closest candidate to `s` if it is a plausible typo of it, else NULL. */
const char *cfg_suggest(const char *s, const char *const *cands, size_t ncands);
/* Our key for a DLIO workload key written in a dliofs config, or NULL. */
const char *cfg_dlio_hint(const char *key);

/* Both passes report through c and return 0; only allocation failures are
 * returned (-ENOMEM). Problems are counted in c->nerr. */
int cfg_parse(struct cfg_ctx *c, yaml_document_t *doc, struct dl_config *cfg,
	      struct cfg_src *src);
int cfg_validate(struct cfg_ctx *c, struct dl_config *cfg, const struct cfg_src *src);

#endif
