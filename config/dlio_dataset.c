/* The DLIO workload's dataset section as one native dataset (the mapping
 * of DLIO's keys to ours is in dlio.c's opening comment). What a format
 * takes comes from the registry (its DLIO name, sides, compressions). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/intmath.h"
#include "dlio_i.h"

const char *const dk_name[DK__COUNT] = {
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


const char *const hk_name[HK__COUNT] = {
	[HK_NUM_DSET] = "num_dset_per_record",
	[HK_CHUNK_DIMS] = "chunk_dims",
};


/* dliofs dataset keys that DLIO does not have, and DLIO's name if any (a
 * format's own keys say theirs in their parameter table). */
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
	{ "classes", NULL },
};

/* A dliofs key that is not DLIO's: whether it is one, and DLIO's name. */
static int native_key(const yaml_node_t *k, const char **ours, const char **theirs)
{
	for (size_t j = 0; j < NELEM(native_keys); j++) {
		if (dtr_key_is(k, native_keys[j].ours)) {
			*ours = native_keys[j].ours;
			*theirs = native_keys[j].theirs;
			return 1;
		}
	}
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);

		for (unsigned i = 0; i < ops->nparams; i++) {
			const struct dl_param *p = &ops->params[i];

			/* hdf5: is DLIO's section too (read above). */
			if (dtr_key_is(k, p->key) && p->kind != DL_PK_MAP) {
				*ours = p->key;
				*theirs = p->dlio_key;
				return 1;
			}
		}
	}
	return 0;
}


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


/* ---- the dataset section ---- */

void dtr_dataset_keys(struct dtr *r)
{
	yaml_document_t *d = r->src;

	for (yaml_node_pair_t *p = r->dmap->data.mapping.pairs.start;
	     p < r->dmap->data.mapping.pairs.top; p++) {
		yaml_node_t *k = dtr_node(d, p->key), *v = dtr_node(d, p->value);
		const char *ours, *theirs;
		size_t i;

		if (!k || !v)
			continue;
		for (i = 0; i < DK__COUNT; i++)
			if (dtr_key_is(k, dk_name[i]))
				break;
		if (i < DK__COUNT) {
			if (r->dv[i]) {
				struct dl_loc first = cfg_node_loc(r->dkeys[i]);
				char key[64];

				snprintf(key, sizeof(key), "dataset.%s", dk_name[i]);
				dtr_err(r, k, key, "duplicate key (first given at line %u, column %u)",
					first.line, first.col);
				continue;
			}
			r->dv[i] = v;
			r->dkeys[i] = k;
			continue;
		}
		if (native_key(k, &ours, &theirs)) {
			static const char why[] =
				"a dliofs key in a DLIO workload (this file is read as DLIO's: it "
				"has a top-level 'dataset' section and no 'datasets' list)";
			char key[64];

			snprintf(key, sizeof(key), "dataset.%s", ours);
			if (theirs)
				dtr_err(r, k, key, "%s; DLIO calls it %s", why, theirs);
			else
				dtr_err(r, k, key, "%s; DLIO has no equivalent: write a dliofs "
					"config (datasets: [...])", why);
		}
	}
}

/* The dataset's name: data_folder's last path component. */
void dtr_name(struct dtr *r)
{
	const yaml_node_t *v = r->dv[DK_DATA_FOLDER];
	const char *s, *e, *b;
	char name[DL_NAME_MAX + 64];
	size_t n;

	if (!v) {
		dtr_npair(r, r->map, "name", dtr_ntext(r, "data", r->dmap));
		return;
	}
	r->used[DK_DATA_FOLDER] = 1;
	s = dtr_scalar(r, v, "dataset.data_folder", "a directory like ./data/unet3d/");
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
		dtr_err(r, v, "dataset.data_folder",
			"%s has no last path component to name the dataset by (dliofs serves "
			"data_folder as <mount>/<its last component>)", q);
		return;
	}
	/* Overlong names are cut here and refused by validate.c. */
	if (n > sizeof(name) - 1)
		n = sizeof(name) - 1;
	memcpy(name, b, n);
	name[n] = '\0';
	dtr_npair(r, r->map, "name", dtr_ntext(r, name, v));
	dtr_alias(r, "datasets[0].name", "dataset.data_folder", NULL);
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

int dtr_format(struct dtr *r)
{
	const yaml_node_t *v = r->dv[DK_FORMAT];
	const struct dl_format_ops *ops;
	char q[80], served[256];
	const char *s;
	size_t o = 0;

	r->ops = dlio_format("tfrecord");	/* DLIO's default */
	if (!v) {
		dtr_npair(r, r->map, "format", dtr_ntext(r, r->ops->name, r->dmap));
		return 0;
	}
	r->used[DK_FORMAT] = 1;
	s = dtr_scalar(r, v, "dataset.format", "a DLIO format like npz");
	if (!s)
		return -EINVAL;
	ops = dlio_format(s);
	if (ops) {
		r->ops = ops;
		dtr_npair(r, r->map, "format", dtr_ntext(r, ops->name, v));
		dtr_alias(r, "datasets[0].format", "dataset.format", NULL);
		return 0;
	}
	for (unsigned f = 0; f < DL_FMT__COUNT && o < sizeof(served); f++) {
		const char *dn = dl_format_ops((enum dl_format)f)->dlio_name;

		if (dn)
			o += (size_t)snprintf(served + o, sizeof(served) - o, "%s%s", o ? ", " : "",
					      dn);
	}
	cfg_quote(s, strlen(s), q, sizeof(q));
	dtr_err(r, v, "dataset.format", "DLIO format %s is not served by dliofs (it serves %s)", q,
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
static void tr_count(struct dtr *r, enum dk k, int map, const char *ours, const char *path)
{
	if (!r->dv[k])
		return;
	r->used[k] = 1;
	dtr_npair(r, map, ours, dtr_ncopy(r, r->dv[k]));
	dtr_alias(r, path, "dataset.", dk_name[k]);
}

static int tr_dtype(struct dtr *r)
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
	s = dtr_scalar(r, v, "dataset.record_element_type", "a numpy dtype like uint8");
	if (!s)
		return -EINVAL;
	if (!strncmp(s, "np.", 3))
		s += 3;
	else if (!strncmp(s, "numpy.", 6))
		s += 6;
	for (size_t i = 0; i < NELEM(np_dtypes); i++) {
		if (!strcmp(s, np_dtypes[i].np)) {
			r->dtype = np_dtypes[i].dt;
			dtr_npair(r, r->map, "dtype", dtr_ntext(r, dl_dtype_name(r->dtype), v));
			dtr_alias(r, "datasets[0].dtype", "dataset.record_element_type", NULL);
			return 0;
		}
	}
	cfg_quote((const char *)v->data.scalar.value, v->data.scalar.length, q, sizeof(q));
	dtr_err(r, v, "dataset.record_element_type",
		"%s is not a dtype dliofs serves (uint8, int8, uint16, int16, uint32, int32, uint64, "
		"int64, float16, float32, float64)", q);
	return -EINVAL;
}

/* A number (already read by dtr_number) with no fractional part: 224, 224.0,
 * 2.24e2; not 1.5. */
static int whole(const yaml_node_t *d)
{
	const char *s = (const char *)d->data.scalar.value;
	long double x;

	if (!strpbrk(s, ".eE"))
		return 1;
	x = strtold(s, NULL);
	return x == (long double)(uint64_t)x; /* in range: dtr_number said so */
}

/* record_dims (or hdf5.chunk_dims) read as numbers; returns the count or -1. */
static int read_dims(struct dtr *r, const yaml_node_t *v, const char *key, uint64_t *dims)
{
	char sub[80];
	int n = 0;

	if (v->type != YAML_SEQUENCE_NODE) {
		dtr_err(r, v, key, "expected a list of dimensions like [224, 224], got %s",
			cfg_kind_of(v));
		return -1;
	}
	if (v->data.sequence.items.top - v->data.sequence.items.start > DL_MAX_DIMS + 1) {
		dtr_err(r, v, key, "expected at most %u dimensions, got %d", DL_MAX_DIMS,
			(int)(v->data.sequence.items.top - v->data.sequence.items.start));
		return -1;
	}
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++, n++) {
		const yaml_node_t *d = dtr_node(r->src, *it);

		snprintf(sub, sizeof(sub), "%s[%d]", key, n);
		if (!d || dtr_number(r, d, sub, "a dimension like 224", &dims[n]))
			return -1;
		if (!whole(d)) {
			dtr_err(r, d, sub, "%s is not a whole number: a dimension counts elements",
				(const char *)d->data.scalar.value);
			return -1;
		}
		if (dims[n] == 0) {
			dtr_err(r, d, sub, "a dimension must be at least 1");
			return -1;
		}
	}
	return n;
}

static void nlist(struct dtr *r, int map, const char *key, const uint64_t *dims, int n,
		  const yaml_node_t *at)
{
	int seq = yaml_document_add_sequence(&r->t->doc, NULL, YAML_FLOW_SEQUENCE_STYLE);

	seq = dtr_nmark(r, seq, at);

	for (int i = 0; seq && i < n; i++) {
		int it = dtr_nnumber(r, dims[i], at);

		if (it && !yaml_document_append_sequence_item(&r->t->doc, seq, it))
			r->c->oom = 1;
	}
	dtr_npair(r, map, key, seq);
}

/* Sizes: shape, sample_size, or the image's sides. */
static void tr_sizes(struct dtr *r, unsigned dsets)
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
			if (dtr_number(r, sv, key, "a number of bytes", &S) == 0 && S > 0) {
				dtr_err(r, sv, key,
					"cannot be combined with record_dims (DLIO refuses it too: "
					"give record_length_bytes with a stdev instead)");
				return;
			}
		}
		if (image) {
			if (n != 2) {
				dtr_err(r, dv, "dataset.record_dims",
					"a DLIO image has 2 dimensions (height, width), got %d", n);
				return;
			}
			dtr_npair(r, r->map, "height", dtr_nnumber(r, dims[0], dv));
			dtr_npair(r, r->map, "width", dtr_nnumber(r, dims[1], dv));
			dtr_alias(r, "datasets[0].height", "dataset.record_dims", NULL);
			dtr_alias(r, "datasets[0].width", "dataset.record_dims", NULL);
			return;
		}
		if (dsets > 1) {
			/* DLIO splits the first dimension over records_0..k-1 and then
			 * drops it when it became 1. */
			if (dims[0] % dsets) {
				dtr_err(r, dv, "dataset.record_dims",
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
		dtr_alias(r, "datasets[0].shape", "dataset.record_dims", NULL);
		return;
	}
	if (rv) {
		r->used[rk] = 1;
		snprintf(key, sizeof(key), "dataset.%s", dk_name[rk]);
		if (dtr_number(r, rv, key, "a number of bytes like 146600628", &L))
			return;
	}
	if (sv) {
		r->used[sk] = 1;
		snprintf(key, sizeof(key), "dataset.%s", dk_name[sk]);
		if (dtr_number(r, sv, key, "a number of bytes like 68341808", &S))
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
				dtr_npair(r, r->map, sides[i], dtr_nnumber(r, d, at));
			} else {
				int m = dtr_nmark(r, dtr_nflow_map(r), at);

				dtr_npair(r, m, "mean", dtr_nnumber(r, d, at));
				dtr_npair(r, m, "stdev", dtr_nnumber(r, ps, sv));
				dtr_npair(r, m, "min", dtr_nnumber(r, 1, at));
				dtr_npair(r, r->map, sides[i], m);
			}
		}
		dtr_alias(r, "datasets[0].width", "dataset.", dk_name[rk]);
		dtr_alias(r, "datasets[0].height", "dataset.", dk_name[rk]);
		dtr_npair(r, r->map, "color", dtr_ntext(r, "L", r->dv[DK_FORMAT]));
		/* DLIO 2.0.0 writes PIL's JPEG of noise: its sizes (formats/jpeg.c). */
		if (dl_format_param(r->ops, "size_model"))
			dtr_npair(r, r->map, "size_model",
				  dtr_ntext(r, "pil_noise", r->dv[DK_FORMAT]));
		return;
	}
	if (d > UINT32_MAX || d * d > UINT64_MAX / esize) {
		snprintf(key, sizeof(key), "dataset.%s", dk_name[rk]);
		dtr_err(r, rv, key, "too large for record_element_type %s", dl_dtype_name(r->dtype));
		return;
	}
	r->sdims[0] = r->sdims[1] = d ? d : 1;
	r->nsdims = 2;
	if (S == 0) {
		dtr_npair(r, r->map, "sample_size", dtr_nnumber(r, d * d * esize, rv ? rv : r->dmap));
	} else {
		int m = dtr_nmark(r, dtr_nflow_map(r), rv ? rv : r->dmap);

		if (S > UINT64_MAX / esize) {
			snprintf(key, sizeof(key), "dataset.%s", dk_name[sk]);
			dtr_err(r, sv, key, "too large");
			return;
		}
		dtr_npair(r, m, "mean", dtr_nnumber(r, d * d * esize, rv ? rv : r->dmap));
		dtr_npair(r, m, "stdev", dtr_nnumber(r, S * esize, sv));
		dtr_npair(r, m, "min", dtr_nnumber(r, esize, rv ? rv : r->dmap));
		dtr_npair(r, r->map, "sample_size", m);
		dtr_alias(r, "datasets[0].sample_size.stdev", "dataset.", dk_name[sk]);
		dtr_alias(r, "datasets[0].sample_size.max", "dataset.", dk_name[sk]);
	}
	dtr_alias(r, "datasets[0].sample_size", "dataset.", dk_name[rk]);
	dtr_alias(r, "datasets[0].sample_size.mean", "dataset.", dk_name[rk]);
	dtr_alias(r, "datasets[0].sample_size.min", "dataset.", dk_name[rk]);
}

/* hdf5: num_dset_per_record, chunks, gzip. Returns the dataset count. */
static unsigned tr_hdf5_dsets(struct dtr *r)
{
	const yaml_node_t *hv = r->dv[DK_HDF5], *v;
	const struct dl_param *range;
	uint64_t k = 1;

	if (!hv || hv->type != YAML_MAPPING_NODE)
		return 1;
	for (yaml_node_pair_t *p = hv->data.mapping.pairs.start; p < hv->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *key = dtr_node(r->src, p->key);

		for (unsigned i = 0; i < HK__COUNT; i++)
			if (dtr_key_is(key, hk_name[i]) && !r->hv[i])
				r->hv[i] = dtr_node(r->src, p->value);
	}
	v = r->hv[HK_NUM_DSET];
	range = dl_format_param(r->ops, "hdf5.datasets");
	if (!range || !v)
		return 1;
	r->hused[HK_NUM_DSET] = 1;
	if (dtr_number(r, v, "dataset.hdf5.num_dset_per_record", "a count like 1", &k))
		return 1;
	if (k < range->min || k > range->max) {
		dtr_err(r, v, "dataset.hdf5.num_dset_per_record", "expected %llu to %llu, got %llu",
			(unsigned long long)range->min, (unsigned long long)range->max,
			(unsigned long long)k);
		return 1;
	}
	return (unsigned)k;
}

static void tr_hdf5(struct dtr *r, unsigned dsets)
{
	const yaml_node_t *cv = r->hv[HK_CHUNK_DIMS];
	const yaml_node_t *at = r->dv[DK_HDF5] ? r->dv[DK_HDF5] : r->dmap;
	uint64_t dims[DL_MAX_DIMS + 1];
	int m, n, gzip = 0, chunked = 0;
	const char *s;

	m = dtr_nmark(r, dtr_nflow_map(r), at);
	dtr_npair(r, m, "layout", dtr_ntext(r, "dlio", at));
	dtr_npair(r, m, "datasets", dtr_nnumber(r, dsets, r->hv[HK_NUM_DSET] ? r->hv[HK_NUM_DSET] : at));
	dtr_alias(r, "datasets[0].hdf5.datasets", "dataset.hdf5.num_dset_per_record", NULL);
	dtr_alias(r, "datasets[0].hdf5", "dataset.hdf5", NULL);
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
			dtr_alias(r, "datasets[0].hdf5.chunks", "dataset.hdf5.chunk_dims", NULL);
			chunked = 1;
		}
		if (n < 0)
			return;
	} else if (r->dv[DK_ENABLE_CHUNKING] && !r->dv[DK_RECORD_DIMS]) {
		int on = 0;
		uint64_t cs = 0, c;

		r->used[DK_ENABLE_CHUNKING] = 1;
		if (dtr_boolean(r, r->dv[DK_ENABLE_CHUNKING], "dataset.enable_chunking", &on))
			return;
		if (on) {
			r->used[DK_CHUNK_SIZE] = 1;
			if (r->dv[DK_CHUNK_SIZE] &&
			    dtr_number(r, r->dv[DK_CHUNK_SIZE], "dataset.chunk_size",
				       "a number of bytes", &cs))
				return;
			if (cs == 0) {
				dtr_err(r, r->dv[DK_CHUNK_SIZE] ? r->dv[DK_CHUNK_SIZE] :
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
			dtr_alias(r, "datasets[0].hdf5.chunks", "dataset.chunk_size", NULL);
			chunked = 1;
		}
	}
	if (gzip && !chunked && r->nsdims) {
		/* h5py would guess a chunk shape; one sample per chunk here. */
		dims[0] = 1;
		memcpy(dims + 1, r->sdims, (size_t)r->nsdims * sizeof(dims[0]));
		nlist(r, m, "chunks", dims, 1 + r->nsdims, r->dv[DK_COMPRESSION]);
		dtr_alias(r, "datasets[0].hdf5.chunks", "dataset.compression", NULL);
	}
	dtr_npair(r, r->map, "hdf5", m);
}

static void tr_compression(struct dtr *r)
{
	const yaml_node_t *v = r->dv[DK_COMPRESSION];
	const char *s, *ours = NULL;
	char q[80];

	if (!v)
		return;
	s = dtr_scalar(r, v, "dataset.compression", "a DLIO compression like none, gzip or zip");
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
		dtr_err(r, v, "dataset.compression",
			"hdf5 compression %s is not supported by dliofs (it serves gzip)%s", q,
			strcmp(s, "lzf") ? "; h5py has no such filter either" : "");
		return;
	}
	if (!ours)
		return;		/* DLIO's writer for this format ignores it */
	r->used[DK_COMPRESSION] = 1;
	dtr_npair(r, r->map, "compression", dtr_ntext(r, ours, v));
	dtr_alias(r, "datasets[0].compression", "dataset.compression", NULL);
	if (r->dv[DK_COMPRESSION_LEVEL]) {
		r->used[DK_COMPRESSION_LEVEL] = 1;
		dtr_npair(r, r->map, "compression_level", dtr_ncopy(r, r->dv[DK_COMPRESSION_LEVEL]));
		dtr_alias(r, "datasets[0].compression_level", "dataset.compression_level", NULL);
	}
}

void dtr_dataset(struct dtr *r)
{
	unsigned dsets;

	if (r->dv[DK_FILES_TRAIN])
		tr_count(r, DK_FILES_TRAIN, r->map, "files", "datasets[0].files");
	else
		dtr_npair(r, r->map, "files", dtr_nscalar(r, DLIO_DEFAULT_FILES, 1, YAML_PLAIN_SCALAR_STYLE,
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

void dtr_ignored_dataset(struct dtr *r)
{
	for (yaml_node_pair_t *p = r->dmap->data.mapping.pairs.start;
	     p < r->dmap->data.mapping.pairs.top; p++) {
		yaml_node_t *k = dtr_node(r->src, p->key), *v = dtr_node(r->src, p->value);
		size_t i;

		for (i = 0; i < DK__COUNT; i++)
			if (dtr_key_is(k, dk_name[i]))
				break;
		if (i == DK_HDF5 && v && v->type == YAML_MAPPING_NODE &&
		    v->data.mapping.pairs.top > v->data.mapping.pairs.start) {
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				yaml_node_t *hk = dtr_node(r->src, q->key);
				unsigned j;

				for (j = 0; j < HK__COUNT; j++)
					if (dtr_key_is(hk, hk_name[j]))
						break;
				if (j == HK__COUNT || !r->hused[j] ||
				    dtr_node(r->src, q->value) != r->hv[j])
					dtr_ignore(r, "dataset.hdf5", hk);
			}
			continue;
		}
		/* Unused, a repeat, or unknown (DLIO ignores unknown keys too). */
		if (i == DK__COUNT || !r->used[i] || r->dkeys[i] != k) {
			int native = 0;

			for (size_t j = 0; j < NELEM(native_keys); j++)
				native |= dtr_key_is(k, native_keys[j].ours);
			if (!native)
				dtr_ignore(r, "dataset", k);
		}
	}
}

