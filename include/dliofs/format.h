/* formats/: given a dataset and a file index, the exact size and any byte
 * range; and everything the project knows about a format (its names, the
 * config keys it takes and their checks, how a job reads it) in the
 * format's own ops table, reached through the registry (formats/registry.c,
 * format_list.h). Knows nothing of FUSE or YAML; shared by the daemon, the
 * config loader and the tools. */
#ifndef DLIOFS_FORMAT_H
#define DLIOFS_FORMAT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "dliofs/dataset.h"

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

/* One per process: holds the content seed and a bounded, thread-safe cache of
 * derived values (CRCs). cache_entries 0 picks the default (1 Mi entries, ~24 MB). */
int dl_fmt_ctx_new(uint64_t seed, size_t cache_entries, struct dl_fmt_ctx **out);
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

/* ---- what a format takes in a config, beyond the keys of every dataset ---- */

enum dl_param_kind {
	DL_PK_COUNT,	/* an integer up to max (a uint64_t, or with width 4 an unsigned) */
	DL_PK_PIXELS,	/* a number of pixels, or {mean, stdev, min, max} (a struct dl_dist) */
	DL_PK_CHOICE,	/* one of names (an unsigned) */
	DL_PK_DIMS,	/* a list of 1..DL_MAX_DIMS dimensions >= 1 (uint64_t[DL_MAX_DIMS];
			 * their number, an unsigned, at count_off) */
	DL_PK_MAP,	/* a mapping of the parameters in sub */
};

/* One key of a format's parameter table: where its value goes in the
 * dataset's parameter block (DL_DS_PARAMS), its default, what it takes.
 * The config loader parses, reports and dumps every parameter from this. */
struct dl_param {
	const char *key;
	enum dl_param_kind kind;
	size_t off;			/* into the parameter block */
	unsigned width;			/* COUNT: 4 (unsigned) or 8 (uint64_t) */
	uint64_t def;			/* COUNT, CHOICE: the value when absent */
	uint64_t min, max;		/* COUNT: the range parsed (max 0: up to 2^64-1) */
	const char *unit;		/* COUNT: what it counts, for a range message */
	const char *const *names;	/* CHOICE */
	unsigned nnames;
	const struct dl_param *sub;	/* MAP */
	unsigned nsub;
	size_t count_off;		/* DIMS */
	const char *expected;		/* MAP: what a value looks like, for messages */
	const char *dlio_key;		/* DLIO's dataset key for the same thing, if any */
};

/* How a format's check speaks to the loader: keys are dotted and relative
 * to the dataset ("width", "hdf5.chunks", "sample_size.min"). */
struct dl_check {
	void *arg;
	int (*given)(void *arg, const char *key);	/* written */
	int (*usable)(void *arg, const char *key);	/* written and parsed without a problem */
	/* A problem, pointing at where `at` was written (NULL, or not written:
	 * the dataset), naming `key` (NULL: the dataset). */
	void (*error)(void *arg, const char *at, const char *key, const char *fmt, va_list ap);
	/* The loader's check of a distribution written at key (a number or a
	 * {mean, stdev, min, max} mapping), defaults filled; 0 when usable.
	 * one/many name the unit ("pixel"), cap the largest value and why. */
	int (*dist)(void *arg, const char *key, struct dl_dist *d, const char *one,
		    const char *many, uint64_t cap, const char *cap_why);
};

void dl_check_error(const struct dl_check *c, const char *at, const char *key, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));

/* Which of the keys every dataset has a format uses. */
#define DL_FF_SHAPE 1u		/* samples are shape x dtype, or sample_size bytes */
#define DL_FF_CLASSES 2u	/* files can form an ImageNet class tree (classes:) */
#define DL_FF_ONE_SAMPLE 4u	/* one sample per file */
#define DL_FF_UINT8 8u		/* samples are bytes: dtype is uint8 */

/* A compression a format takes, and what it means for it ("a GZIP file"). */
struct dl_comp_use {
	enum dl_compression comp;
	const char *what;
};

/* One format behind one small interface; registered in formats/registry.c. */
struct dl_format_ops {
	enum dl_format id;
	const char *name;		/* config name: "npz" */
	const char *dlio_name;		/* DLIO's dataset.format for it, NULL: DLIO has none */
	const char *ext;		/* file extension without dot (DLIO's) */
	const char *class_ext;		/* in a class tree, if not ext ("JPEG", as ImageNet) */
	/* A small dataset of the format's keys, as a YAML flow mapping's body:
	 * `dliofs formats --config` and the registry's tests serve every one. */
	const char *example;
	unsigned nparts;		/* 1, or data + companions */
	const char *part_suffix[4];	/* appended to the data file name for part > 0 */
	struct dl_read_hints read_hints;	/* how a job reads it */
	unsigned features;		/* DL_FF_* */
	uint64_t record_bytes;		/* > 0: every sample has this fixed size */
	const char *size_note;		/* dump's comment when the format sets the size */
	const struct dl_comp_use *comps;	/* compressions it takes (none aside) */
	unsigned ncomps;
	unsigned dlio_comps;		/* bit (1 << comp): DLIO's writer honours them */
	const struct dl_param *params;	/* its own config keys */
	unsigned nparams;
	/* Check what only the format knows and complete ds (derived values);
	 * size_ok: the loader's checks of the sample size passed (formats with
	 * DL_FF_SHAPE), or the format decides sizes itself (without). */
	void (*check)(struct dl_dataset *ds, const struct dl_check *chk, int size_ok);
	/* Copies of every sample in a file (hdf5's records_0..k-1): 1 if NULL;
	 * *key names the parameter that says so, for messages. */
	uint64_t (*copies)(const struct dl_dataset *ds, const char **key);
	/* Fill f->dims/ndims/samples/size/aux from f->ds, f->sample_bytes, f->part. */
	int (*layout)(struct dl_file *f);
	/* Bytes [off, off + len) of f, already clipped to f->size. */
	int (*read)(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		    size_t len);
	/* Optional: a second name, at the mount root, for the dataset's one
	 * train file (dlrm's <file_prefix>_train.bin, where MLPerf's DLRM
	 * binary loader looks). Writes it into buf and returns its length; 0:
	 * none; -errno. The config loader keeps these names unique. */
	int (*root_alias)(const struct dl_dataset *ds, char *buf, size_t len);
	/* Optional per-context state (template caches, library locks): created by
	 * dl_fmt_ctx_new, reached with dl_fmt_state(), destroyed by dl_fmt_ctx_free. */
	int (*state_new)(void **state);
	void (*state_free)(void *state);
};

void *dl_fmt_state(struct dl_fmt_ctx *ctx, enum dl_format f);

/* ---- the registry ---- */
const struct dl_format_ops *dl_format_ops(enum dl_format f);
const char *dl_format_name(enum dl_format f);
int dl_format_from_name(const char *s, enum dl_format *out);
/* The parameter of ops at a dotted key ("hdf5.chunks"), NULL if none. */
const struct dl_param *dl_format_param(const struct dl_format_ops *ops, const char *key);
/* Set every parameter of ds's format to its default. */
void dl_format_param_defaults(struct dl_dataset *ds);
/* The format of a dataset. */
const struct dl_format_ops *dl_ds_ops(const struct dl_dataset *ds);
/* "whole", "stream", ...: a read plan's name. */
const char *dl_read_plan_name(enum dl_read_plan p);

#endif
