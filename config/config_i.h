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
#define CFG_DEFAULT_COMPRESSION_LEVEL 4
#define CFG_MAX_CLASSES 1000000ULL
#define CFG_NAME_MAX (DL_NAME_MAX - 1)
#define CFG_PREFIX_MAX 63
/* Bounds on the document itself, checked before libyaml builds a tree. */
#define CFG_MAX_BYTES (16u << 20)
#define CFG_MAX_DEPTH 64
#define CFG_MAX_NODES 1000000u
/* Past this many messages the rest are only counted. */
#define CFG_MAX_ERRORS 1000u

/* The keys every dataset mapping has, in the order the dump prints them
 * (a format's own keys, from its parameter table, follow file_prefix). */
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
	CF_COMPRESSION,
	CF_COMPRESSION_LEVEL,
	CF_CLASSES,
	CF__COUNT
};

/* Keys of a distribution mapping (sample_size, an image's sides). */
enum cfg_dist_field { CD_MEAN, CD_STDEV, CD_MIN, CD_MAX, CD__COUNT };

extern const char *const cfg_field_key[CF__COUNT];
extern const char *const cfg_dist_key[CD__COUNT];

/* Keys a dataset mapping takes: cfg_field_key, then every format's own
 * top-level keys once each, in registry order. Returns their number; with
 * keys NULL, how many there can be at most (the room to give it). */
unsigned cfg_dataset_keys(const char **keys, unsigned max);

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

/* A key written in a dataset mapping, below the keys every dataset has
 * (sample_size.mean, a format's own keys and theirs): where, and whether
 * its value was already reported. */
#define CFG_MAX_REFS 64
struct cfg_ref {
	char key[64];		/* dotted, relative to the dataset: "hdf5.chunks" */
	yaml_node_t *node;
	unsigned char bad;
};

/* Where a dataset's values came from: validate.c points at these. */
struct cfg_src_ds {
	yaml_node_t *node;			/* the dataset's mapping (NULL: not a mapping) */
	yaml_node_t *val[CF__COUNT];		/* NULL: key absent */
	unsigned char bad[CF__COUNT];		/* present but already reported */
	unsigned shape_len;			/* items in the shape list, even past 8 */
	struct cfg_ref ref[CFG_MAX_REFS];
	unsigned nref;
};

/* The reference for key, NULL if it was not written. */
const struct cfg_ref *cfg_ref_find(const struct cfg_src_ds *sd, const char *key);

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

/* ---- reading values (values.c) ---- */

struct cfg_walk {
	struct cfg_ctx *c;
	yaml_document_t *doc;
};

/* Past CFG_MAX_ERRORS messages: stop looking. */
int cfg_too_many(const struct cfg_ctx *c);
yaml_node_t *cfg_node_at(struct cfg_walk *w, int index);
/* The scalar's text, or NULL after saying what was expected instead. */
const char *cfg_scalar_of(struct cfg_walk *w, yaml_node_t *n, const char *path,
			  const char *expected);
/* Match the keys of a mapping against `keys`: vals[i] gets the value node
 * of keys[i]. Unknown keys (with a suggestion, or DLIO's name for it when
 * dlio_hints) and repeated keys are reported. */
void cfg_walk_mapping(struct cfg_walk *w, yaml_node_t *map, const char *prefix,
		      const char *const *keys, size_t nkeys, yaml_node_t **vals,
		      yaml_node_t **key_nodes, int dlio_hints);
/* A size (140MB), a count up to max (2k), a plain integer (a seed), one of
 * names: 0, or a reported problem (-EINVAL, -ERANGE). */
int cfg_get_size(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t *out);
int cfg_get_count(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t max,
		  uint64_t *out);
int cfg_get_u64(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t *out);
int cfg_get_choice(struct cfg_walk *w, yaml_node_t *n, const char *path,
		   const char *const *names, size_t nnames, unsigned *out);
/* s cut to dstlen - 1 bytes, NUL-terminated. */
void cfg_copy_text(char *dst, size_t dstlen, const char *s);
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
