/* Private to the DLIO translation (dlio.c: the workload as a whole;
 * dlio_doc.c: reading DLIO's document and building the native one;
 * dlio_dataset.c: the dataset section). */
#ifndef DLIOFS_CONFIG_DLIO_I_H
#define DLIOFS_CONFIG_DLIO_I_H

#include <stdint.h>
#include <yaml.h>

#include "config_i.h"

#define DLIO_MAX_ALIAS 40
#define DLIO_MAX_IGNORED 160
/* Nodes of dliofs sections copied from a workload (aliases expanded). */
#define DLIO_MAX_COPY 100000
#define DLIO_DEFAULT_SEED "123"
#define DLIO_DEFAULT_FILES "8"
#define DLIO_DEFAULT_RECORD 65536ULL


enum dk {
	DK_FORMAT,
	DK_DATA_FOLDER,
	DK_FILES_TRAIN,
	DK_FILES_EVAL,
	DK_SAMPLES,
	DK_RECORD_BYTES,
	DK_RECORD,
	DK_STDEV_BYTES,
	DK_STDEV,
	DK_SUB_TRAIN,
	DK_SUB_EVAL,
	DK_PREFIX,
	DK_COMPRESSION,
	DK_COMPRESSION_LEVEL,
	DK_ENABLE_CHUNKING,
	DK_CHUNK_SIZE,
	DK_ELEMENT_TYPE,
	DK_RECORD_DIMS,
	DK_HDF5,
	DK__COUNT
};


extern const char *const dk_name[DK__COUNT];

enum hk { HK_NUM_DSET, HK_CHUNK_DIMS, HK__COUNT };


extern const char *const hk_name[HK__COUNT];

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct cfg_dlio {
	yaml_document_t doc;
	int have_doc;
	struct cfg_alias alias[DLIO_MAX_ALIAS];
	size_t nalias;
	char pool[4096];	/* the alias texts */
	size_t pool_used;
	char itext[4096];	/* the ignored keys' paths, NUL-separated */
	size_t ilen;
	struct ign {
		struct dl_loc at;
		unsigned off;
	} ign[DLIO_MAX_IGNORED];
	unsigned nignored, icut;
};

/* One translation in progress. */
struct dtr {
	struct cfg_ctx *c;
	yaml_document_t *src;
	struct cfg_dlio *t;
	const char *wrap;		/* "workload." for a Hydra-resolved config */
	yaml_node_t *root;		/* DLIO's root (inside workload: if wrapped) */
	yaml_node_t *dmap;		/* the dataset mapping */
	yaml_node_t *dv[DK__COUNT];	/* its values */
	yaml_node_t *dkeys[DK__COUNT];
	yaml_node_t *hv[HK__COUNT];	/* dataset.hdf5's values */
	unsigned char used[DK__COUNT], hused[HK__COUNT];
	int map;			/* the native dataset mapping */
	const struct dl_format_ops *ops;	/* the format DLIO named */
	enum dl_dtype dtype;
	uint64_t sdims[DL_MAX_DIMS + 1];	/* a sample's shape as DLIO writes it */
	int nsdims;			/* 0: unknown (an error was reported) */
	size_t copied;			/* nodes copied by dtr_ncopy_tree */
};

/* ---- shared by the three files ---- */

/* The source document (dlio_doc.c). */
yaml_node_t *dtr_node(yaml_document_t *d, int i);
int dtr_key_is(const yaml_node_t *k, const char *name);
yaml_node_t *dtr_find(yaml_document_t *d, yaml_node_t *map, const char *name);
void dtr_err(struct dtr *r, const yaml_node_t *at, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void dtr_ignore(struct dtr *r, const char *section, const yaml_node_t *k);
void dtr_ignore_section(struct dtr *r, const yaml_node_t *k, yaml_node_t *v);
/* Messages, the ignored keys, DLIO names for our keys (dlio_doc.c). */
const char *dtr_pool_str(struct dtr *r, const char *a, const char *b);
void dtr_alias(struct dtr *r, const char *ours, const char *theirs_section,
	       const char *theirs_key);
/* Nodes of the native document, marked with the workload's place (dlio_doc.c). */
int dtr_nscalar(struct dtr *r, const char *text, size_t len, yaml_scalar_style_t style,
		const yaml_node_t *at);
int dtr_ntext(struct dtr *r, const char *text, const yaml_node_t *at);
int dtr_nmark(struct dtr *r, int id, const yaml_node_t *at);
void dtr_npair_at(struct dtr *r, int map, const char *key, int value, const yaml_node_t *kat);
void dtr_npair(struct dtr *r, int map, const char *key, int value);
int dtr_ncopy(struct dtr *r, const yaml_node_t *v);
int dtr_ncopy_tree(struct dtr *r, const yaml_node_t *v, unsigned depth, const char *key);
int dtr_nflow_map(struct dtr *r);
int dtr_nnumber(struct dtr *r, uint64_t v, const yaml_node_t *at);
/* Values read from the workload, problems reported (dlio_doc.c). */
const char *dtr_scalar(struct dtr *r, const yaml_node_t *v, const char *key,
		       const char *expected);
int dtr_number(struct dtr *r, const yaml_node_t *v, const char *key, const char *expected,
	       uint64_t *out);
int dtr_boolean(struct dtr *r, const yaml_node_t *v, const char *key, int *out);
/* The dataset section (dlio_dataset.c). */
void dtr_dataset_keys(struct dtr *r);
void dtr_name(struct dtr *r);
int dtr_format(struct dtr *r);
void dtr_dataset(struct dtr *r);
void dtr_ignored_dataset(struct dtr *r);

#endif
