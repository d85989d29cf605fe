/* DLIO workload files as configs: `dliofs mount MNT unet3d_a100.yaml` with
 * the workload exactly as DLIO ships it.
 *
 * Detection: a top-level `dataset` mapping (or any of DLIO's sections:
 * model, framework, workflow, reader, train, ...) and no `datasets` list. A
 * Hydra-resolved config (everything under `workload:`) is read the same way.
 *
 * The `dataset` section becomes one native dataset, built as a native YAML
 * document whose nodes carry the workload's own line:column marks, so that
 * parse.c and validate.c check it exactly like a dliofs config and their
 * messages point into the user's file under DLIO's key names (cfg_alias):
 *
 *   name             last path component of data_folder (default ./data/ ->
 *                    "data"). The mount root stands for data_folder's
 *                    parent: DLIO's data_folder is <mount>/<name>.
 *   format           npz npy tfrecord hdf5 jpeg png indexed_binary (default
 *                    tfrecord, DLIO's); anything else is an error.
 *   files            num_files_train (default 8, DLIO's); eval_files
 *                    num_files_eval; samples_per_file num_samples_per_file.
 *   sample_size      DLIO writes d x d elements per sample, d =
 *                    floor(sqrt(record_length_bytes)) (record_length in older
 *                    files; a fractional value is floored): sample_size is
 *                    d * d * itemsize, so npz/npy/hdf5 get DLIO's (d, d) and
 *                    tfrecord/indexed_binary DLIO's byte count. A stdev
 *                    (record_length_bytes_stdev / record_length_stdev) makes
 *                    it a distribution {mean, stdev, min: itemsize}; DLIO
 *                    itself reaches only ~0.7x that spread (dlio.md 6.7).
 *   shape, dtype     record_dims, record_element_type. hdf5 with
 *                    num_dset_per_record k splits record_dims[0] k ways, and
 *                    a leading 1 is dropped, as DLIO does.
 *   jpeg / png       one grayscale (color L) image per file, d x d or
 *                    record_dims (height, width); a stdev draws each side
 *                    from normal(d, stdev / (2 sqrt(L))) as DLIO does. File
 *                    sizes are the encoder's (DLIO does not set them either).
 *   hdf5             hdf5.num_dset_per_record, hdf5.chunk_dims (or the legacy
 *                    enable_chunking + chunk_size: chunks (1, c, c), c =
 *                    ceil(sqrt(chunk_size))); compression gzip without chunks
 *                    gets one sample per chunk (h5py would guess a shape).
 *   compression      zip for npz and gzip for hdf5, where DLIO's writers use
 *                    them; DLIO ignores it elsewhere, so do we.
 *   seed             train.seed (default 123, DLIO's).
 *
 * dliofs's own top-level keys (seed, io, pacer, cache, trace) written in a
 * workload are honoured as in a dliofs config (a top-level seed wins over
 * train.seed): DLIO ignores keys it does not know, so one file can drive both.
 * Everything else (framework, reader, checkpoint, ...) is accepted and named
 * once, on one line, as ignored. dliofs keys written in the dataset section
 * (files, sample_size, ...) are errors: such a file was meant as a dliofs
 * config. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/intmath.h"
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

static const char *const dk_name[DK__COUNT] = {
	[DK_FORMAT] = "format",
	[DK_DATA_FOLDER] = "data_folder",
	[DK_FILES_TRAIN] = "num_files_train",
	[DK_FILES_EVAL] = "num_files_eval",
	[DK_SAMPLES] = "num_samples_per_file",
	[DK_RECORD_BYTES] = "record_length_bytes",
	[DK_RECORD] = "record_length",
	[DK_STDEV_BYTES] = "record_length_bytes_stdev",
	[DK_STDEV] = "record_length_stdev",
	[DK_SUB_TRAIN] = "num_subfolders_train",
	[DK_SUB_EVAL] = "num_subfolders_eval",
	[DK_PREFIX] = "file_prefix",
	[DK_COMPRESSION] = "compression",
	[DK_COMPRESSION_LEVEL] = "compression_level",
	[DK_ENABLE_CHUNKING] = "enable_chunking",
	[DK_CHUNK_SIZE] = "chunk_size",
	[DK_ELEMENT_TYPE] = "record_element_type",
	[DK_RECORD_DIMS] = "record_dims",
	[DK_HDF5] = "hdf5",
};

enum hk { HK_NUM_DSET, HK_CHUNK_DIMS, HK__COUNT };

static const char *const hk_name[HK__COUNT] = {
	[HK_NUM_DSET] = "num_dset_per_record",
	[HK_CHUNK_DIMS] = "chunk_dims",
};

/* dliofs's own top-level keys, honoured in a DLIO workload (DLIO ignores
 * keys it does not know, so one file serves both). */
static const char *const native_top[] = { "seed", "io", "pacer", "cache", "trace", "backing" };

/* DLIO's top-level sections (utils/config.py LoadConfig), `dataset` first. */
static const char *const dlio_sections[] = {
	"dataset", "model", "framework", "workflow", "reader", "data_reader", "train",
	"evaluation", "checkpoint", "output", "metric", "profiling", "storage",
};

/* dliofs dataset keys that DLIO does not have, and DLIO's name if any. */
static const struct {
	const char *ours, *theirs;
} native_keys[] = {
	{ "name", "data_folder" },
	{ "files", "num_files_train" },
	{ "eval_files", "num_files_eval" },
	{ "samples_per_file", "num_samples_per_file" },
	{ "sample_size", "record_length_bytes" },
	{ "dtype", "record_element_type" },
	{ "shape", "record_dims" },
	{ "subfolders", "num_subfolders_train" },
	{ "eval_subfolders", "num_subfolders_eval" },
	{ "cardinality", NULL },
	{ "width", "record_dims" },
	{ "height", "record_dims" },
	{ "color", NULL },
	{ "classes", NULL },
};

/* numpy's names for the dtypes we have (np.dtype(...) spellings). */
static const struct {
	const char *np;
	enum dl_dtype dt;
} np_dtypes[] = {
	{ "uint8", DL_DT_UINT8 }, { "u1", DL_DT_UINT8 }, { "B", DL_DT_UINT8 },
	{ "ubyte", DL_DT_UINT8 }, { "int8", DL_DT_INT8 }, { "i1", DL_DT_INT8 },
	{ "byte", DL_DT_INT8 }, { "uint16", DL_DT_UINT16 }, { "u2", DL_DT_UINT16 },
	{ "<u2", DL_DT_UINT16 }, { "int16", DL_DT_INT16 }, { "i2", DL_DT_INT16 },
	{ "<i2", DL_DT_INT16 }, { "short", DL_DT_INT16 }, { "uint32", DL_DT_UINT32 },
	{ "u4", DL_DT_UINT32 }, { "<u4", DL_DT_UINT32 }, { "int32", DL_DT_INT32 },
	{ "i4", DL_DT_INT32 }, { "<i4", DL_DT_INT32 }, { "intc", DL_DT_INT32 },
	{ "uint64", DL_DT_UINT64 }, { "u8", DL_DT_UINT64 }, { "<u8", DL_DT_UINT64 },
	{ "int64", DL_DT_INT64 }, { "i8", DL_DT_INT64 }, { "<i8", DL_DT_INT64 },
	{ "int", DL_DT_INT64 }, { "float16", DL_DT_FLOAT16 }, { "f2", DL_DT_FLOAT16 },
	{ "<f2", DL_DT_FLOAT16 }, { "half", DL_DT_FLOAT16 }, { "float32", DL_DT_FLOAT32 },
	{ "f4", DL_DT_FLOAT32 }, { "<f4", DL_DT_FLOAT32 }, { "single", DL_DT_FLOAT32 },
	{ "float64", DL_DT_FLOAT64 }, { "f8", DL_DT_FLOAT64 }, { "<f8", DL_DT_FLOAT64 },
	{ "float", DL_DT_FLOAT64 }, { "double", DL_DT_FLOAT64 },
};

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
struct tr {
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
	size_t copied;			/* nodes copied by ncopy_tree */
};

/* ---- the source document ---- */

static yaml_node_t *node(yaml_document_t *d, int i)
{
	return yaml_document_get_node(d, i);
}

static int key_is(const yaml_node_t *k, const char *name)
{
	return k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(name) &&
	       !memcmp(k->data.scalar.value, name, k->data.scalar.length);
}

static yaml_node_t *find(yaml_document_t *d, yaml_node_t *map, const char *name)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++)
		if (key_is(node(d, p->key), name))
			return node(d, p->value);
	return NULL;
}

/* Any of DLIO's sections other than `dataset`. */
static int has_dlio_section(yaml_document_t *d, yaml_node_t *map)
{
	for (size_t i = 1; i < NELEM(dlio_sections); i++)
		if (find(d, map, dlio_sections[i]))
			return 1;
	return 0;
}

int cfg_dlio_detect(yaml_document_t *doc)
{
	yaml_node_t *root = yaml_document_get_root_node(doc), *w;

	if (!root || root->type != YAML_MAPPING_NODE || find(doc, root, "datasets"))
		return 0;
	w = find(doc, root, "workload");
	if (w && w->type == YAML_MAPPING_NODE &&
	    (find(doc, w, "dataset") || has_dlio_section(doc, w)))
		return 1;
	w = find(doc, root, "dataset");
	if (w && w->type == YAML_MAPPING_NODE)
		return 1;
	/* Alone, `dataset` as a list is a typo of `datasets`: parse.c says so. */
	return has_dlio_section(doc, root);
}

/* ---- messages and the ignored list ---- */

static void terr(struct tr *r, const yaml_node_t *at, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void terr(struct tr *r, const yaml_node_t *at, const char *key, const char *fmt, ...)
{
	char path[160];
	va_list ap;

	snprintf(path, sizeof(path), "%s%s", r->wrap, key);
	va_start(ap, fmt);
	cfg_verror(r->c, at ? cfg_node_loc(at) : (struct dl_loc){ 1, 1 }, path, fmt, ap);
	va_end(ap);
}

/* A key as it is shown in the ignored list. */
static void shown_key(const yaml_node_t *k, char *buf, size_t buflen)
{
	if (!k || k->type != YAML_SCALAR_NODE) {
		snprintf(buf, buflen, "?");
		return;
	}
	for (size_t i = 0; i < k->data.scalar.length; i++) {
		char ch = (char)k->data.scalar.value[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) {
			cfg_quote((const char *)k->data.scalar.value, k->data.scalar.length, buf,
				  buflen);
			return;
		}
	}
	snprintf(buf, buflen, "%.*s",
		 (int)(k->data.scalar.length < 60 ? k->data.scalar.length : 60),
		 (const char *)k->data.scalar.value);
}

static void ignore(struct tr *r, const char *section, const yaml_node_t *k)
{
	struct cfg_dlio *t = r->t;
	char key[80];
	int n;

	shown_key(k, key, sizeof(key));
	if (t->nignored == DLIO_MAX_IGNORED) {
		t->icut++;
		return;
	}
	n = snprintf(t->itext + t->ilen, sizeof(t->itext) - t->ilen, "%s%s%s%s", r->wrap,
		     section ? section : "", section ? "." : "", key);
	if (n < 0 || (size_t)n >= sizeof(t->itext) - t->ilen) {
		t->icut++;
		return;
	}
	t->ign[t->nignored].at = k ? cfg_node_loc(k) : (struct dl_loc){ 0, 0 };
	t->ign[t->nignored].off = (unsigned)t->ilen;
	t->nignored++;
	t->ilen += (size_t)n + 1;
}

/* Every key of a section we do not read; a non-mapping section as one. */
static void ignore_section(struct tr *r, const yaml_node_t *k, yaml_node_t *v)
{
	char sec[80];

	if (!v || v->type != YAML_MAPPING_NODE || v->data.mapping.pairs.top ==
						      v->data.mapping.pairs.start) {
		ignore(r, NULL, k);
		return;
	}
	shown_key(k, sec, sizeof(sec));
	for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++)
		ignore(r, sec, node(r->src, p->key));
}

static int ign_cmp(const void *a, const void *b)
{
	const struct ign *x = a, *y = b;

	if (x->at.line != y->at.line)
		return x->at.line < y->at.line ? -1 : 1;
	return x->at.col < y->at.col ? -1 : x->at.col > y->at.col;
}

void cfg_dlio_report_ignored(const struct cfg_ctx *c, struct cfg_dlio *t)
{
	if (!c->err || !t || !(t->nignored + t->icut))
		return;
	/* In the order they are written. */
	qsort(t->ign, t->nignored, sizeof(t->ign[0]), ign_cmp);
	fprintf(c->err, "%s: ignored DLIO keys:", c->name);
	for (unsigned i = 0; i < t->nignored; i++)
		fprintf(c->err, "%s %s", i ? "," : "", t->itext + t->ign[i].off);
	if (t->icut)
		fprintf(c->err, " and %u more", t->icut);
	fputc('\n', c->err);
}

/* ---- aliases ---- */

static const char *pool_str(struct tr *r, const char *a, const char *b)
{
	struct cfg_dlio *t = r->t;
	size_t room = sizeof(t->pool) - t->pool_used;
	int n = snprintf(t->pool + t->pool_used, room, "%s%s%s", r->wrap, a, b ? b : "");
	const char *s = t->pool + t->pool_used;

	if (n < 0 || (size_t)n >= room)
		return NULL;
	t->pool_used += (size_t)n + 1;
	return s;
}

static void alias(struct tr *r, const char *ours, const char *theirs_section,
		  const char *theirs_key)
{
	struct cfg_dlio *t = r->t;
	const char *s = pool_str(r, theirs_section, theirs_key);

	if (s && t->nalias < DLIO_MAX_ALIAS)
		t->alias[t->nalias++] = (struct cfg_alias){ ours, s };
}

/* ---- the native document ---- */

static int nscalar(struct tr *r, const char *text, size_t len, yaml_scalar_style_t style,
		   const yaml_node_t *at)
{
	yaml_document_t *d = &r->t->doc;
	/* `at` may be a node of d itself: adding one can move them all. */
	yaml_mark_t start = at ? at->start_mark : (yaml_mark_t){ 0, 0, 0 };
	yaml_mark_t end = at ? at->end_mark : (yaml_mark_t){ 0, 0, 0 };
	int id = yaml_document_add_scalar(d, NULL, (yaml_char_t *)text, (int)len, style);

	if (!id) {
		r->c->oom = 1;
		return 0;
	}
	if (at) {
		node(d, id)->start_mark = start;
		node(d, id)->end_mark = end;
	}
	return id;
}

static int ntext(struct tr *r, const char *text, const yaml_node_t *at)
{
	return nscalar(r, text, strlen(text), YAML_DOUBLE_QUOTED_SCALAR_STYLE, at);
}

static int nmark(struct tr *r, int id, const yaml_node_t *at)
{
	if (id && at) {
		node(&r->t->doc, id)->start_mark = at->start_mark;
		node(&r->t->doc, id)->end_mark = at->end_mark;
	}
	if (!id)
		r->c->oom = 1;
	return id;
}

/* key: value into map; the key takes the mark of `kat` (the user's key), or
 * else the value's. */
static void npair_at(struct tr *r, int map, const char *key, int value, const yaml_node_t *kat)
{
	int k;

	if (!map || !value)
		return;
	k = nscalar(r, key, strlen(key), YAML_PLAIN_SCALAR_STYLE,
		    kat ? kat : node(&r->t->doc, value));
	if (k && !yaml_document_append_mapping_pair(&r->t->doc, map, k, value))
		r->c->oom = 1;
}

static void npair(struct tr *r, int map, const char *key, int value)
{
	npair_at(r, map, key, value, NULL);
}

/* The user's scalar as it is: parse.c checks it and says what is wrong. */
static int ncopy(struct tr *r, const yaml_node_t *v)
{
	if (v->type == YAML_MAPPING_NODE)
		return nmark(r, yaml_document_add_mapping(&r->t->doc, NULL,
							   YAML_FLOW_MAPPING_STYLE), v);
	if (v->type != YAML_SCALAR_NODE)
		return nmark(r, yaml_document_add_sequence(&r->t->doc, NULL,
							    YAML_FLOW_SEQUENCE_STYLE), v);
	return nscalar(r, (const char *)v->data.scalar.value, v->data.scalar.length,
		       v->data.scalar.style, v);
}

/* A whole subtree of the workload (a dliofs section), marks kept. Aliases
 * are expanded, so both depth and size are bounded. */
static int ncopy_tree(struct tr *r, const yaml_node_t *v, unsigned depth, const char *key)
{
	yaml_document_t *d = &r->t->doc;
	int id, child, k;

	if (r->copied > DLIO_MAX_COPY)
		return 0;	/* said once already */
	if (depth > CFG_MAX_DEPTH || ++r->copied > DLIO_MAX_COPY) {
		terr(r, v, key, "%s", depth > CFG_MAX_DEPTH ?
		     "nested too deeply (an alias that contains itself?)" :
		     "too large once its aliases are expanded");
		r->copied = DLIO_MAX_COPY + 1;
		return 0;
	}
	switch (v->type) {
	case YAML_SEQUENCE_NODE:
		id = nmark(r, yaml_document_add_sequence(d, NULL, v->data.sequence.style), v);
		for (yaml_node_item_t *it = v->data.sequence.items.start;
		     id && it < v->data.sequence.items.top; it++) {
			child = ncopy_tree(r, node(r->src, *it), depth + 1, key);
			if (!child)
				return 0;
			if (!yaml_document_append_sequence_item(d, id, child)) {
				r->c->oom = 1;
				return 0;
			}
		}
		return id;
	case YAML_MAPPING_NODE:
		id = nmark(r, yaml_document_add_mapping(d, NULL, v->data.mapping.style), v);
		for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
		     id && p < v->data.mapping.pairs.top; p++) {
			k = ncopy_tree(r, node(r->src, p->key), depth + 1, key);
			child = k ? ncopy_tree(r, node(r->src, p->value), depth + 1, key) : 0;
			if (!child)
				return 0;
			if (!yaml_document_append_mapping_pair(d, id, k, child)) {
				r->c->oom = 1;
				return 0;
			}
		}
		return id;
	default:
		return ncopy(r, v);
	}
}

static int nflow_map(struct tr *r)
{
	return yaml_document_add_mapping(&r->t->doc, NULL, YAML_FLOW_MAPPING_STYLE);
}

static int nnumber(struct tr *r, uint64_t v, const yaml_node_t *at)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);

	return nscalar(r, buf, (size_t)n, YAML_PLAIN_SCALAR_STYLE, at);
}

/* ---- values ---- */

static const char *scalar(struct tr *r, const yaml_node_t *v, const char *key,
			  const char *expected)
{
	if (v->type != YAML_SCALAR_NODE || cfg_is_null(v)) {
		terr(r, v, key, "expected %s, got %s", expected, cfg_kind_of(v));
		return NULL;
	}
	if (strlen((const char *)v->data.scalar.value) != v->data.scalar.length) {
		terr(r, v, key, "expected %s, got a value containing a NUL character", expected);
		return NULL;
	}
	return (const char *)v->data.scalar.value;
}

/* A YAML number as DLIO reads it (int or float), floored: "114660.07",
 * "1.5e6". Exact for integers of any size up to 2^64-1. */
static int number(struct tr *r, const yaml_node_t *v, const char *key, const char *expected,
		  uint64_t *out)
{
	const char *s = scalar(r, v, key, expected), *p;
	char q[80];
	uint64_t ip = 0;
	int digits = 0, frac = 0, exp = 0, big = 0;

	if (!s)
		return -EINVAL;
	p = s + (*s == '+');
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (ip > (UINT64_MAX - 9) / 10)
			big = 1;
		else
			ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			frac++;
	if (digits + frac > 0 && (*p == 'e' || *p == 'E')) {
		const char *e = p + 1 + (p[1] == '+' || p[1] == '-');

		if (*e >= '0' && *e <= '9') {
			exp = 1;
			for (p = e; *p >= '0' && *p <= '9'; p++)
				;
		}
	}
	cfg_quote(s, strlen(s), q, sizeof(q));
	if (*p || digits + frac == 0) {
		terr(r, v, key, "expected %s, got %s%s", expected, q,
		     s[0] == '-' ? " (negative values are not allowed)" : "");
		return -EINVAL;
	}
	if (exp) {
		long double x = strtold(s, NULL);

		if (!(x >= 0) || x >= 18446744073709551616.0L) {
			terr(r, v, key, "%s is too large (over 2^64-1)", q);
			return -ERANGE;
		}
		*out = (uint64_t)floorl(x);
		return 0;
	}
	if (big) {
		terr(r, v, key, "%s is too large (over 2^64-1)", q);
		return -ERANGE;
	}
	*out = ip;
	return 0;
}

static int boolean(struct tr *r, const yaml_node_t *v, const char *key, int *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on", "On",
					   "1" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "off", "Off",
					  "0" };
	const char *s = scalar(r, v, key, "true or false");

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < NELEM(yes); i++) {
		if (!strcmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	terr(r, v, key, "expected true or false, got \"%s\"", s);
	return -EINVAL;
}

/* ---- the dataset section ---- */

static void read_dataset_keys(struct tr *r)
{
	yaml_document_t *d = r->src;

	for (yaml_node_pair_t *p = r->dmap->data.mapping.pairs.start;
	     p < r->dmap->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key), *v = node(d, p->value);
		size_t i;

		if (!k || !v)
			continue;
		for (i = 0; i < DK__COUNT; i++)
			if (key_is(k, dk_name[i]))
				break;
		if (i < DK__COUNT) {
			if (r->dv[i]) {
				struct dl_loc first = cfg_node_loc(r->dkeys[i]);
				char key[64];

				snprintf(key, sizeof(key), "dataset.%s", dk_name[i]);
				terr(r, k, key, "duplicate key (first given at line %u, column %u)",
				     first.line, first.col);
				continue;
			}
			r->dv[i] = v;
			r->dkeys[i] = k;
			continue;
		}
		for (size_t j = 0; j < NELEM(native_keys); j++) {
			static const char why[] =
				"a dliofs key in a DLIO workload (this file is read as DLIO's: it "
				"has a top-level 'dataset' section and no 'datasets' list)";
			char key[64];

			if (!key_is(k, native_keys[j].ours))
				continue;
			snprintf(key, sizeof(key), "dataset.%s", native_keys[j].ours);
			if (native_keys[j].theirs)
				terr(r, k, key, "%s; DLIO calls it %s", why, native_keys[j].theirs);
			else
				terr(r, k, key, "%s; DLIO has no equivalent: write a dliofs config "
				     "(datasets: [...])", why);
		}
	}
}

/* The dataset's name: data_folder's last path component. */
static void tr_name(struct tr *r)
{
	const yaml_node_t *v = r->dv[DK_DATA_FOLDER];
	const char *s, *e, *b;
	char name[DL_NAME_MAX + 64];
	size_t n;

	if (!v) {
		npair(r, r->map, "name", ntext(r, "data", r->dmap));
		return;
	}
	r->used[DK_DATA_FOLDER] = 1;
	s = scalar(r, v, "dataset.data_folder", "a directory like ./data/unet3d/");
	if (!s)
		return;
	e = s + strlen(s);
	while (e > s && e[-1] == '/')
		e--;
	for (b = e; b > s && b[-1] != '/'; b--)
		;
	n = (size_t)(e - b);
	if (n == 0 || (n == 1 && b[0] == '.') || (n == 2 && b[0] == '.' && b[1] == '.')) {
		char q[80];

		cfg_quote(s, strlen(s), q, sizeof(q));
		terr(r, v, "dataset.data_folder",
		     "%s has no last path component to name the dataset by (dliofs serves "
		     "data_folder as <mount>/<its last component>)", q);
		return;
	}
	/* Overlong names are cut here and refused by validate.c. */
	if (n > sizeof(name) - 1)
		n = sizeof(name) - 1;
	memcpy(name, b, n);
	name[n] = '\0';
	npair(r, r->map, "name", ntext(r, name, v));
	alias(r, "datasets[0].name", "dataset.data_folder", NULL);
}

/* The format DLIO calls `name`, NULL if dliofs serves none. */
static const struct dl_format_ops *dlio_format(const char *name)
{
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);

		if (ops->dlio_name && !strcmp(ops->dlio_name, name))
			return ops;
	}
	return NULL;
}

static int tr_format(struct tr *r)
{
	const yaml_node_t *v = r->dv[DK_FORMAT];
	const struct dl_format_ops *ops;
	char q[80], served[256];
	const char *s;
	size_t o = 0;

	r->ops = dlio_format("tfrecord");	/* DLIO's default */
	if (!v) {
		npair(r, r->map, "format", ntext(r, r->ops->name, r->dmap));
		return 0;
	}
	r->used[DK_FORMAT] = 1;
	s = scalar(r, v, "dataset.format", "a DLIO format like npz");
	if (!s)
		return -EINVAL;
	ops = dlio_format(s);
	if (ops) {
		r->ops = ops;
		npair(r, r->map, "format", ntext(r, ops->name, v));
		alias(r, "datasets[0].format", "dataset.format", NULL);
		return 0;
	}
	for (unsigned f = 0; f < DL_FMT__COUNT && o < sizeof(served); f++) {
		const char *dn = dl_format_ops((enum dl_format)f)->dlio_name;

		if (dn)
			o += (size_t)snprintf(served + o, sizeof(served) - o, "%s%s", o ? ", " : "",
					      dn);
	}
	cfg_quote(s, strlen(s), q, sizeof(q));
	terr(r, v, "dataset.format", "DLIO format %s is not served by dliofs (it serves %s)", q,
	     served);
	return -EINVAL;
}

/* A format whose samples are images of two sides (DLIO's record_dims are
 * (height, width) for them). */
static int takes_sides(const struct dl_format_ops *ops)
{
	return dl_format_param(ops, "width") && dl_format_param(ops, "height");
}

/* A count passed through as written: parse.c reports a bad one. */
static void tr_count(struct tr *r, enum dk k, int map, const char *ours, const char *path)
{
	if (!r->dv[k])
		return;
	r->used[k] = 1;
	npair(r, map, ours, ncopy(r, r->dv[k]));
	alias(r, path, "dataset.", dk_name[k]);
}

static int tr_dtype(struct tr *r)
{
	const yaml_node_t *v = r->dv[DK_ELEMENT_TYPE];
	const char *s;
	char q[80];

	r->dtype = DL_DT_UINT8;
	if (!v)
		return 0;
	if (r->ops->features & DL_FF_UINT8)
		return 0;	/* DLIO forces uint8 for images */
	r->used[DK_ELEMENT_TYPE] = 1;
	s = scalar(r, v, "dataset.record_element_type", "a numpy dtype like uint8");
	if (!s)
		return -EINVAL;
	if (!strncmp(s, "np.", 3))
		s += 3;
	else if (!strncmp(s, "numpy.", 6))
		s += 6;
	for (size_t i = 0; i < NELEM(np_dtypes); i++) {
		if (!strcmp(s, np_dtypes[i].np)) {
			r->dtype = np_dtypes[i].dt;
			npair(r, r->map, "dtype", ntext(r, dl_dtype_name(r->dtype), v));
			alias(r, "datasets[0].dtype", "dataset.record_element_type", NULL);
			return 0;
		}
	}
	cfg_quote((const char *)v->data.scalar.value, v->data.scalar.length, q, sizeof(q));
	terr(r, v, "dataset.record_element_type",
	     "%s is not a dtype dliofs serves (uint8, int8, uint16, int16, uint32, int32, uint64, "
	     "int64, float16, float32, float64)", q);
	return -EINVAL;
}

/* record_dims (or hdf5.chunk_dims) read as numbers; returns the count or -1. */
static int read_dims(struct tr *r, const yaml_node_t *v, const char *key, uint64_t *dims)
{
	char sub[80];
	int n = 0;

	if (v->type != YAML_SEQUENCE_NODE) {
		terr(r, v, key, "expected a list of dimensions like [224, 224], got %s",
		     cfg_kind_of(v));
		return -1;
	}
	if (v->data.sequence.items.top - v->data.sequence.items.start > DL_MAX_DIMS + 1) {
		terr(r, v, key, "expected at most %u dimensions, got %d", DL_MAX_DIMS,
		     (int)(v->data.sequence.items.top - v->data.sequence.items.start));
		return -1;
	}
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++, n++) {
		const yaml_node_t *d = node(r->src, *it);

		snprintf(sub, sizeof(sub), "%s[%d]", key, n);
		if (!d || number(r, d, sub, "a dimension like 224", &dims[n]))
			return -1;
		if (dims[n] == 0) {
			terr(r, d, sub, "a dimension must be at least 1");
			return -1;
		}
	}
	return n;
}

static void nlist(struct tr *r, int map, const char *key, const uint64_t *dims, int n,
		  const yaml_node_t *at)
{
	int seq = nmark(r, yaml_document_add_sequence(&r->t->doc, NULL, YAML_FLOW_SEQUENCE_STYLE),
			at);

	for (int i = 0; seq && i < n; i++) {
		int it = nnumber(r, dims[i], at);

		if (it && !yaml_document_append_sequence_item(&r->t->doc, seq, it))
			r->c->oom = 1;
	}
	npair(r, map, key, seq);
}

/* Sizes: shape, sample_size, or the image's sides. */
static void tr_sizes(struct tr *r, unsigned dsets)
{
	const int image = takes_sides(r->ops);
	const enum dk rk = r->dv[DK_RECORD_BYTES] ? DK_RECORD_BYTES : DK_RECORD;
	const enum dk sk = r->dv[DK_STDEV_BYTES] ? DK_STDEV_BYTES : DK_STDEV;
	const yaml_node_t *rv = r->dv[rk], *sv = r->dv[sk], *dv = r->dv[DK_RECORD_DIMS];
	uint64_t L = DLIO_DEFAULT_RECORD, S = 0, dims[DL_MAX_DIMS + 1], d;
	uint64_t esize = dl_dtype_size(r->dtype);
	char key[64];
	int n = 0;

	if (dv && dv->type == YAML_SEQUENCE_NODE &&
	    dv->data.sequence.items.top == dv->data.sequence.items.start)
		dv = NULL;	/* [] is DLIO's default: no dims */
	if (dv) {
		r->used[DK_RECORD_DIMS] = 1;
		n = read_dims(r, dv, "dataset.record_dims", dims);
		if (n < 0)
			return;
		if (sv) {
			r->used[sk] = 1;
			snprintf(key, sizeof(key), "dataset.%s", dk_name[sk]);
			if (number(r, sv, key, "a number of bytes", &S) == 0 && S > 0) {
				terr(r, sv, key,
				     "cannot be combined with record_dims (DLIO refuses it too: "
				     "give record_length_bytes with a stdev instead)");
				return;
			}
		}
		if (image) {
			if (n != 2) {
				terr(r, dv, "dataset.record_dims",
				     "a DLIO image has 2 dimensions (height, width), got %d", n);
				return;
			}
			npair(r, r->map, "height", nnumber(r, dims[0], dv));
			npair(r, r->map, "width", nnumber(r, dims[1], dv));
			alias(r, "datasets[0].height", "dataset.record_dims", NULL);
			alias(r, "datasets[0].width", "dataset.record_dims", NULL);
			return;
		}
		if (dsets > 1) {
			/* DLIO splits the first dimension over records_0..k-1 and then
			 * drops it when it became 1. */
			if (dims[0] % dsets) {
				terr(r, dv, "dataset.record_dims",
				     "record_dims[0] (%llu) must be divisible by "
				     "hdf5.num_dset_per_record (%u), as DLIO requires",
				     (unsigned long long)dims[0], dsets);
				return;
			}
			dims[0] /= dsets;
			if (dims[0] == 1 && n > 1) {
				n--;
				memmove(dims, dims + 1, (size_t)n * sizeof(dims[0]));
			}
		}
		memcpy(r->sdims, dims, (size_t)n * sizeof(dims[0]));
		r->nsdims = n;
		nlist(r, r->map, "shape", dims, n, dv);
		alias(r, "datasets[0].shape", "dataset.record_dims", NULL);
		return;
	}
	if (rv) {
		r->used[rk] = 1;
		snprintf(key, sizeof(key), "dataset.%s", dk_name[rk]);
		if (number(r, rv, key, "a number of bytes like 146600628", &L))
			return;
	}
	if (sv) {
		r->used[sk] = 1;
		snprintf(key, sizeof(key), "dataset.%s", dk_name[sk]);
		if (number(r, sv, key, "a number of bytes like 68341808", &S))
			return;
	}
	d = dl_isqrt64(L);
	if (image) {
		/* DLIO draws each side from normal(d, S / (2 sqrt(L))). */
		uint64_t ps = L ? (uint64_t)llroundl((long double)S /
						       (2.0L * sqrtl((long double)L))) : 0;
		const yaml_node_t *at = rv ? rv : r->dmap;
		const char *sides[2] = { "width", "height" };

		for (int i = 0; i < 2; i++) {
			if (ps == 0) {
				npair(r, r->map, sides[i], nnumber(r, d, at));
			} else {
				int m = nmark(r, nflow_map(r), at);

				npair(r, m, "mean", nnumber(r, d, at));
				npair(r, m, "stdev", nnumber(r, ps, sv));
				npair(r, m, "min", nnumber(r, 1, at));
				npair(r, r->map, sides[i], m);
			}
		}
		alias(r, "datasets[0].width", "dataset.", dk_name[rk]);
		alias(r, "datasets[0].height", "dataset.", dk_name[rk]);
		npair(r, r->map, "color", ntext(r, "L", r->dv[DK_FORMAT]));
		return;
	}
	if (d > UINT32_MAX || d * d > UINT64_MAX / esize) {
		snprintf(key, sizeof(key), "dataset.%s", dk_name[rk]);
		terr(r, rv, key, "too large for record_element_type %s", dl_dtype_name(r->dtype));
		return;
	}
	r->sdims[0] = r->sdims[1] = d ? d : 1;
	r->nsdims = 2;
	if (S == 0) {
		npair(r, r->map, "sample_size", nnumber(r, d * d * esize, rv ? rv : r->dmap));
	} else {
		int m = nmark(r, nflow_map(r), rv ? rv : r->dmap);

		if (S > UINT64_MAX / esize) {
			snprintf(key, sizeof(key), "dataset.%s", dk_name[sk]);
			terr(r, sv, key, "too large");
			return;
		}
		npair(r, m, "mean", nnumber(r, d * d * esize, rv ? rv : r->dmap));
		npair(r, m, "stdev", nnumber(r, S * esize, sv));
		npair(r, m, "min", nnumber(r, esize, rv ? rv : r->dmap));
		npair(r, r->map, "sample_size", m);
		alias(r, "datasets[0].sample_size.stdev", "dataset.", dk_name[sk]);
		alias(r, "datasets[0].sample_size.max", "dataset.", dk_name[sk]);
	}
	alias(r, "datasets[0].sample_size", "dataset.", dk_name[rk]);
	alias(r, "datasets[0].sample_size.mean", "dataset.", dk_name[rk]);
	alias(r, "datasets[0].sample_size.min", "dataset.", dk_name[rk]);
}

/* hdf5: num_dset_per_record, chunks, gzip. Returns the dataset count. */
static unsigned tr_hdf5_dsets(struct tr *r)
{
	const yaml_node_t *hv = r->dv[DK_HDF5], *v;
	const struct dl_param *range;
	uint64_t k = 1;

	if (!hv || hv->type != YAML_MAPPING_NODE)
		return 1;
	for (yaml_node_pair_t *p = hv->data.mapping.pairs.start; p < hv->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *key = node(r->src, p->key);

		for (unsigned i = 0; i < HK__COUNT; i++)
			if (key_is(key, hk_name[i]) && !r->hv[i])
				r->hv[i] = node(r->src, p->value);
	}
	v = r->hv[HK_NUM_DSET];
	range = dl_format_param(r->ops, "hdf5.datasets");
	if (!range || !v)
		return 1;
	r->hused[HK_NUM_DSET] = 1;
	if (number(r, v, "dataset.hdf5.num_dset_per_record", "a count like 1", &k))
		return 1;
	if (k < range->min || k > range->max) {
		terr(r, v, "dataset.hdf5.num_dset_per_record", "expected %llu to %llu, got %llu",
		     (unsigned long long)range->min, (unsigned long long)range->max,
		     (unsigned long long)k);
		return 1;
	}
	return (unsigned)k;
}

static void tr_hdf5(struct tr *r, unsigned dsets)
{
	const yaml_node_t *cv = r->hv[HK_CHUNK_DIMS];
	const yaml_node_t *at = r->dv[DK_HDF5] ? r->dv[DK_HDF5] : r->dmap;
	uint64_t dims[DL_MAX_DIMS + 1];
	int m, n, gzip = 0, chunked = 0;
	const char *s;

	m = nmark(r, nflow_map(r), at);
	npair(r, m, "layout", ntext(r, "dlio", at));
	npair(r, m, "datasets", nnumber(r, dsets, r->hv[HK_NUM_DSET] ? r->hv[HK_NUM_DSET] : at));
	alias(r, "datasets[0].hdf5.datasets", "dataset.hdf5.num_dset_per_record", NULL);
	alias(r, "datasets[0].hdf5", "dataset.hdf5", NULL);
	if (r->dv[DK_COMPRESSION] && r->dv[DK_COMPRESSION]->type == YAML_SCALAR_NODE) {
		s = (const char *)r->dv[DK_COMPRESSION]->data.scalar.value;
		gzip = !strcmp(s, "gzip");
	}
	if (cv && !(cv->type == YAML_SEQUENCE_NODE &&
		    cv->data.sequence.items.top == cv->data.sequence.items.start)) {
		r->hused[HK_CHUNK_DIMS] = 1;
		n = read_dims(r, cv, "dataset.hdf5.chunk_dims", dims);
		if (n > 0) {
			nlist(r, m, "chunks", dims, n, cv);
			alias(r, "datasets[0].hdf5.chunks", "dataset.hdf5.chunk_dims", NULL);
			chunked = 1;
		}
		if (n < 0)
			return;
	} else if (r->dv[DK_ENABLE_CHUNKING] && !r->dv[DK_RECORD_DIMS]) {
		int on = 0;
		uint64_t cs = 0, c;

		r->used[DK_ENABLE_CHUNKING] = 1;
		if (boolean(r, r->dv[DK_ENABLE_CHUNKING], "dataset.enable_chunking", &on))
			return;
		if (on) {
			r->used[DK_CHUNK_SIZE] = 1;
			if (r->dv[DK_CHUNK_SIZE] &&
			    number(r, r->dv[DK_CHUNK_SIZE], "dataset.chunk_size",
				   "a number of bytes", &cs))
				return;
			if (cs == 0) {
				terr(r, r->dv[DK_CHUNK_SIZE] ? r->dv[DK_CHUNK_SIZE] :
				     r->dv[DK_ENABLE_CHUNKING], "dataset.chunk_size",
				     "enable_chunking needs a chunk_size of at least 1 byte");
				return;
			}
			/* DLIO 2.0's legacy rule: (1, c, c), c = ceil(sqrt(chunk_size)). */
			c = dl_isqrt64(cs);
			c += c * c < cs;
			dims[0] = 1;
			dims[1] = dims[2] = c;
			nlist(r, m, "chunks", dims, 3, r->dv[DK_CHUNK_SIZE]);
			alias(r, "datasets[0].hdf5.chunks", "dataset.chunk_size", NULL);
			chunked = 1;
		}
	}
	if (gzip && !chunked && r->nsdims) {
		/* h5py would guess a chunk shape; one sample per chunk here. */
		dims[0] = 1;
		memcpy(dims + 1, r->sdims, (size_t)r->nsdims * sizeof(dims[0]));
		nlist(r, m, "chunks", dims, 1 + r->nsdims, r->dv[DK_COMPRESSION]);
		alias(r, "datasets[0].hdf5.chunks", "dataset.compression", NULL);
	}
	npair(r, r->map, "hdf5", m);
}

static void tr_compression(struct tr *r)
{
	const yaml_node_t *v = r->dv[DK_COMPRESSION];
	const char *s, *ours = NULL;
	char q[80];

	if (!v)
		return;
	s = scalar(r, v, "dataset.compression", "a DLIO compression like none, gzip or zip");
	if (!s)
		return;
	if (!strcmp(s, "none")) {
		r->used[DK_COMPRESSION] = 1;
		return;
	}
	/* Only what DLIO's writer for the format honours (npz: zip as
	 * np.savez_compressed; hdf5: gzip as h5py's filter). */
	for (unsigned c = 0; c < DL_COMP__COUNT; c++)
		if ((r->ops->dlio_comps & (1u << c)) && !strcmp(s, dl_compression_name(c)))
			ours = dl_compression_name(c);
	if (dl_format_param(r->ops, "hdf5") && !ours) {
		cfg_quote(s, strlen(s), q, sizeof(q));
		terr(r, v, "dataset.compression",
		     "hdf5 compression %s is not supported by dliofs (it serves gzip)%s", q,
		     strcmp(s, "lzf") ? "; h5py has no such filter either" : "");
		return;
	}
	if (!ours)
		return;		/* DLIO's writer for this format ignores it */
	r->used[DK_COMPRESSION] = 1;
	npair(r, r->map, "compression", ntext(r, ours, v));
	alias(r, "datasets[0].compression", "dataset.compression", NULL);
	if (r->dv[DK_COMPRESSION_LEVEL]) {
		r->used[DK_COMPRESSION_LEVEL] = 1;
		npair(r, r->map, "compression_level", ncopy(r, r->dv[DK_COMPRESSION_LEVEL]));
		alias(r, "datasets[0].compression_level", "dataset.compression_level", NULL);
	}
}

static void tr_dataset(struct tr *r)
{
	unsigned dsets;

	if (r->dv[DK_FILES_TRAIN])
		tr_count(r, DK_FILES_TRAIN, r->map, "files", "datasets[0].files");
	else
		npair(r, r->map, "files", nscalar(r, DLIO_DEFAULT_FILES, 1, YAML_PLAIN_SCALAR_STYLE,
						 r->dmap));
	tr_count(r, DK_FILES_EVAL, r->map, "eval_files", "datasets[0].eval_files");
	/* DLIO writes one image per file whatever num_samples_per_file says. */
	if (!(r->ops->features & DL_FF_ONE_SAMPLE))
		tr_count(r, DK_SAMPLES, r->map, "samples_per_file", "datasets[0].samples_per_file");
	tr_count(r, DK_SUB_TRAIN, r->map, "subfolders", "datasets[0].subfolders");
	tr_count(r, DK_SUB_EVAL, r->map, "eval_subfolders", "datasets[0].eval_subfolders");
	tr_count(r, DK_PREFIX, r->map, "file_prefix", "datasets[0].file_prefix");
	if (tr_dtype(r))
		return;
	dsets = tr_hdf5_dsets(r);
	tr_sizes(r, dsets);
	tr_compression(r);
	if (dl_format_param(r->ops, "hdf5"))
		tr_hdf5(r, dsets);
}

static void tr_ignored_dataset(struct tr *r)
{
	for (yaml_node_pair_t *p = r->dmap->data.mapping.pairs.start;
	     p < r->dmap->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(r->src, p->key), *v = node(r->src, p->value);
		size_t i;

		for (i = 0; i < DK__COUNT; i++)
			if (key_is(k, dk_name[i]))
				break;
		if (i == DK_HDF5 && v && v->type == YAML_MAPPING_NODE &&
		    v->data.mapping.pairs.top > v->data.mapping.pairs.start) {
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				yaml_node_t *hk = node(r->src, q->key);
				unsigned j;

				for (j = 0; j < HK__COUNT; j++)
					if (key_is(hk, hk_name[j]))
						break;
				if (j == HK__COUNT || !r->hused[j] ||
				    node(r->src, q->value) != r->hv[j])
					ignore(r, "dataset.hdf5", hk);
			}
			continue;
		}
		/* Unused, a repeat, or unknown (DLIO ignores unknown keys too). */
		if (i == DK__COUNT || !r->used[i] || r->dkeys[i] != k) {
			int native = 0;

			for (size_t j = 0; j < NELEM(native_keys); j++)
				native |= key_is(k, native_keys[j].ours);
			if (!native)
				ignore(r, "dataset", k);
		}
	}
}

/* ---- the whole workload ---- */

static void tr_top(struct tr *r)
{
	yaml_document_t *d = r->src;
	yaml_node_t *top = yaml_document_get_root_node(d), *train = NULL, *seedv = NULL;
	yaml_node_t *ntop[NELEM(native_top)] = { 0 }, *ntopk[NELEM(native_top)] = { 0 };
	yaml_node_t *seedk = NULL;
	int root, seq, seed = 0;

	/* Keys around workload: (Hydra's own settings) are not DLIO's. */
	if (top != r->root)
		for (yaml_node_pair_t *p = top->data.mapping.pairs.start;
		     p < top->data.mapping.pairs.top; p++)
			if (node(d, p->value) != r->root) {
				const char *w = r->wrap;

				r->wrap = "";
				ignore_section(r, node(d, p->key), node(d, p->value));
				r->wrap = w;
			}
	root = nmark(r, yaml_document_add_mapping(&r->t->doc, NULL, YAML_BLOCK_MAPPING_STYLE),
		     r->root);
	seq = nmark(r, yaml_document_add_sequence(&r->t->doc, NULL, YAML_BLOCK_SEQUENCE_STYLE),
		    r->dmap);
	r->map = nmark(r, yaml_document_add_mapping(&r->t->doc, NULL, YAML_BLOCK_MAPPING_STYLE),
		       r->dmap);
	if (!root || !seq || !r->map)
		return;
	if (!yaml_document_append_sequence_item(&r->t->doc, seq, r->map)) {
		r->c->oom = 1;
		return;
	}
	alias(r, "datasets[0]", "dataset", NULL);
	alias(r, "datasets", "dataset", NULL);

	for (yaml_node_pair_t *p = r->root->data.mapping.pairs.start;
	     p < r->root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key), *v = node(d, p->value);

		size_t i;

		if (key_is(k, "dataset"))
			continue;
		for (i = 0; i < NELEM(native_top); i++)
			if (key_is(k, native_top[i]) && !ntop[i])
				break;
		if (i < NELEM(native_top)) {
			ntop[i] = v;
			ntopk[i] = k;
			continue;
		}
		if (key_is(k, "train") && v && v->type == YAML_MAPPING_NODE && !train) {
			train = v;
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				if (key_is(node(d, q->key), "seed") && !seedv) {
					seedv = node(d, q->value);
					seedk = node(d, q->key);
				} else {
					ignore(r, "train", node(d, q->key));
				}
			}
			continue;
		}
		ignore_section(r, k, v);
	}
	/* dliofs's own keys as they are; a top-level seed wins over train.seed. */
	for (size_t i = 0; i < NELEM(native_top); i++) {
		if (!ntop[i])
			continue;
		npair_at(r, root, native_top[i], ncopy_tree(r, ntop[i], 1, native_top[i]),
			 ntopk[i]);
		if (!strcmp(native_top[i], "seed") && seedv) {
			ignore(r, "train", seedk);
			seedv = NULL;
		}
	}
	if (ntop[0]) {
		/* given above */
	} else if (seedv) {
		seed = ncopy(r, seedv);
		alias(r, "seed", "train.seed", NULL);
	} else {
		seed = nscalar(r, DLIO_DEFAULT_SEED, strlen(DLIO_DEFAULT_SEED),
			       YAML_PLAIN_SCALAR_STYLE, r->root);
	}
	if (seed)
		npair(r, root, "seed", seed);
	npair(r, root, "datasets", seq);

	read_dataset_keys(r);
	tr_name(r);
	if (tr_format(r) == 0)
		tr_dataset(r);
	tr_ignored_dataset(r);
}

int cfg_dlio_translate(struct cfg_ctx *c, yaml_document_t *doc, struct cfg_dlio **out,
		       yaml_document_t **native)
{
	yaml_node_t *top = yaml_document_get_root_node(doc), *w;
	struct tr r = { .c = c, .src = doc, .wrap = "" };
	struct cfg_dlio *t;
	unsigned nerr = c->nerr;

	*out = NULL;
	*native = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*out = t;
	if (!yaml_document_initialize(&t->doc, NULL, NULL, NULL, 1, 1))
		return -ENOMEM;
	t->have_doc = 1;
	r.t = t;
	r.root = top;
	w = find(doc, top, "workload");
	if (w && w->type == YAML_MAPPING_NODE &&
	    (find(doc, w, "dataset") || has_dlio_section(doc, w))) {
		r.root = w;
		r.wrap = "workload.";
	}
	r.dmap = find(doc, r.root, "dataset");
	if (!r.dmap) {
		terr(&r, r.root, "dataset",
		     "missing: this is a DLIO workload (it has DLIO's sections and no 'datasets' "
		     "list) without a dataset section, so there is nothing to serve "
		     "(checkpoint-only workloads read no data)");
		return 0;
	}
	if (r.dmap->type != YAML_MAPPING_NODE) {
		terr(&r, r.dmap, "dataset",
		     "expected a mapping of DLIO dataset settings (data_folder, format, "
		     "num_files_train, ...), got %s", cfg_kind_of(r.dmap));
		return 0;
	}
	tr_top(&r);
	if (c->oom)
		return -ENOMEM;
	c->alias = t->alias;
	c->nalias = t->nalias;
	if (c->nerr == nerr)
		*native = &t->doc;
	return 0;
}

void cfg_dlio_free(struct cfg_dlio *t)
{
	if (!t)
		return;
	if (t->have_doc)
		yaml_document_delete(&t->doc);
	free(t);
}
