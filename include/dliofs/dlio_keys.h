/* A DLIO workload file's own keys (reader, train, evaluation, checkpoint,
 * workflow, model, metric, output...), read by config/ so that a tool that
 * runs a workload (dlio-drive) needs no YAML parser of its own.
 *
 * dl_config_load() turns the file's dataset section into a dliofs dataset;
 * what a dliofs config has no place for (batch size, threads, computation
 * time, the checkpoint's sizes) is read here, as a tree of the keys under
 * the workload's root (inside `workload:` for a Hydra-resolved file). What a
 * value means is the tool's to decide (its options table holds DLIO's
 * conventions); each value keeps its place in the file, so an error still
 * names file:line:column. */
#ifndef DLIOFS_DLIO_KEYS_H
#define DLIOFS_DLIO_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum dl_dlio_kind { DL_DLIO_SCALAR, DL_DLIO_MAP, DL_DLIO_LIST };

/* One value of the workload: a scalar's text as written ("" for a mapping
 * or a list), and where it starts (1-based). */
struct dl_dlio_val {
	enum dl_dlio_kind kind;
	const char *text;
	unsigned line, column;
};

struct dl_dlio_keys;

/* Read PATH. 0; -errno where it cannot be opened (why: empty); -EINVAL
 * where it is not YAML (why: "PATH:LINE: YAML: problem"); -ENOMEM. A file
 * whose root is not a mapping loads as one without keys. */
int dl_dlio_keys_load(const char *path, struct dl_dlio_keys **out, char *why, size_t whylen);
void dl_dlio_keys_free(struct dl_dlio_keys *k);
/* The file it was read from. */
const char *dl_dlio_keys_path(const struct dl_dlio_keys *k);

/* Whether the file is a DLIO workload (one of DLIO's sections at its root
 * and no dliofs `datasets:`), not a dliofs config. */
int dl_dlio_keys_is_workload(const struct dl_dlio_keys *k);

/* The value at a dotted key ("reader.batch_size"), NULL where absent. DLIO
 * also calls the reader section data_reader: it answers where the file has
 * no reader section. */
const struct dl_dlio_val *dl_dlio_key(const struct dl_dlio_keys *k, const char *dotted);
/* A mapping's value at NAME (the first, as YAML readers do), NULL where
 * absent or where map is not a mapping. */
const struct dl_dlio_val *dl_dlio_child(const struct dl_dlio_keys *k, const struct dl_dlio_val *map,
					const char *name);
/* A list's length and its I-th item (NULL past the end or for a non-list). */
size_t dl_dlio_nitems(const struct dl_dlio_keys *k, const struct dl_dlio_val *list);
const struct dl_dlio_val *dl_dlio_item(const struct dl_dlio_keys *k, const struct dl_dlio_val *list,
				       size_t i);

/* "PREFIXPATH:LINE:COLUMN: KEY: WHAT\n" on err (nothing where err is NULL),
 * as config/ names a place. */
void dl_dlio_say(const struct dl_dlio_keys *k, FILE *err, const char *prefix,
		 const struct dl_dlio_val *at, const char *key, const char *what);

/* The checkpoint section as DLIO 2.0.0 sizes a checkpoint (its
 * utils/config.py defaults where a key is absent; docs/dlio.md 4.8). */
#define DL_DLIO_CK_MAX_LIST 64
struct dl_dlio_checkpoint {
	uint64_t model_size;		      /* checkpoint.model_size, bytes */
	uint64_t groups[DL_DLIO_CK_MAX_LIST]; /* optimization_groups */
	unsigned ngroups;
	uint64_t num_layers;
	uint64_t layers[DL_DLIO_CK_MAX_LIST]; /* layer_parameters */
	unsigned nlayers;
	uint64_t tp, pp; /* tensor_, pipeline_parallelism */
	int all_ranks;	 /* type: all_ranks (else rank_zero) */
};

/* DLIO's defaults into ck, then the keys of k's checkpoint mapping (none
 * where it has none). 0, or -EINVAL with the first problem said on err as
 * "PREFIXPATH:LINE:COLUMN: checkpoint.KEY: why" (DLIO's own refusals, a
 * layer count that is no multiple of the parallelisms, name the file). */
int dl_dlio_checkpoint(const struct dl_dlio_keys *k, const char *prefix, FILE *err,
		       struct dl_dlio_checkpoint *ck);

#endif
