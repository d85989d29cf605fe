/* The model as a whole: required keys, values that only make sense together,
 * limits that keep every later computation (file sizes, offsets, names)
 * free of overflow. Every problem is reported; the checks go on. Defaults
 * that depend on other values (the size distribution) are filled here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "config_i.h"

struct vds {
	struct cfg_ctx *c;
	struct dl_dataset *ds;
	const struct cfg_src_ds *sd;
	char prefix[32];
};

static const char *const fmt_list = "npy, npz, tfrecord, dlrm, raw, indexed_binary";

static struct dl_loc loc_of(const struct vds *v, enum cfg_field f)
{
	return v->sd->val[f] ? cfg_node_loc(v->sd->val[f]) : v->ds->loc;
}

static void verr(const struct vds *v, struct dl_loc loc, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void verr(const struct vds *v, struct dl_loc loc, const char *key, const char *fmt, ...)
{
	char path[96];
	va_list ap;

	snprintf(path, sizeof(path), "%s%s%s", v->prefix, key ? "." : "", key ? key : "");
	va_start(ap, fmt);
	cfg_verror(v->c, loc, path, fmt, ap);
	va_end(ap);
}

static int usable(const struct vds *v, enum cfg_field f)
{
	return v->sd->val[f] && !v->sd->bad[f];
}

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-';
}

/* A path component we create: checked on the raw scalar, not the copy,
 * so an overlong value is reported as such rather than cut silently. */
static int check_component(const struct vds *v, enum cfg_field f, size_t max, int no_dot)
{
	const yaml_node_t *n = v->sd->val[f];
	const char *s = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	char q[128];

	cfg_quote(s, len, q, sizeof(q));
	if (len == 0) {
		verr(v, loc_of(v, f), cfg_field_key[f], "must not be empty");
		return -EINVAL;
	}
	if (len > max) {
		verr(v, loc_of(v, f), cfg_field_key[f], "%s is too long (%zu characters, at most %zu)",
		     q, len, max);
		return -EINVAL;
	}
	if (!strcmp(s, ".") || !strcmp(s, "..")) {
		verr(v, loc_of(v, f), cfg_field_key[f], "%s is not a usable name", q);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		char one[16];

		if (s[i] == '/') {
			verr(v, loc_of(v, f), cfg_field_key[f],
			     "%s must be a single path component (no '/')", q);
			return -EINVAL;
		}
		if (!name_char(s[i])) {
			cfg_quote(s + i, 1, one, sizeof(one));
			verr(v, loc_of(v, f), cfg_field_key[f],
			     "%s has the character %s; allowed are A-Z a-z 0-9 . _ -", q, one);
			return -EINVAL;
		}
	}
	if (no_dot && s[0] == '.') {
		verr(v, loc_of(v, f), cfg_field_key[f],
		     "%s must not start with '.' (hidden names are reserved for the mount's "
		     "control directory)", q);
		return -EINVAL;
	}
	return 0;
}

/* The size distribution from what was given; 0 when usable. */
static int check_dist(struct vds *v)
{
	const struct cfg_src_ds *sd = v->sd;
	struct dl_dist *d = &v->ds->sample_size;
	const yaml_node_t *n = sd->val[CF_SAMPLE_SIZE];
	struct dl_loc at = loc_of(v, CF_SAMPLE_SIZE);
	int ret = 0;

	if (sd->bad[CF_SAMPLE_SIZE])
		return -EINVAL;
	if (n->type != YAML_MAPPING_NODE) {
		if (d->mean == 0) {
			verr(v, at, "sample_size", "must be at least 1 byte");
			return -EINVAL;
		}
		d->stdev = 0;
		d->min = d->max = d->mean;
		return 0;
	}
	for (unsigned i = 0; i < CD__COUNT; i++)
		if (sd->dist_bad[i])
			ret = -EINVAL;
	if (!sd->dist_val[CD_MEAN]) {
		verr(v, at, "sample_size.mean", "missing: a distribution needs a mean");
		return -EINVAL;
	}
	if (ret)
		return ret;
	if (d->mean == 0) {
		verr(v, cfg_node_loc(sd->dist_val[CD_MEAN]), "sample_size.mean",
		     "must be at least 1 byte");
		return -EINVAL;
	}
	if (d->stdev == 0) {
		/* Fixed size: min and max say nothing more. */
		d->min = d->max = d->mean;
		return 0;
	}
	if (!sd->dist_val[CD_MIN])
		d->min = 1;
	if (!sd->dist_val[CD_MAX]) {
		if (d->stdev > (UINT64_MAX - d->mean) / 6) {
			verr(v, at, "sample_size.max",
			     "mean + 6 x stdev is over 2^64-1 bytes; give a max");
			return -EINVAL;
		}
		d->max = d->mean + 6 * d->stdev;
	}
	if (d->min == 0) {
		verr(v, cfg_node_loc(sd->dist_val[CD_MIN]), "sample_size.min",
		     "must be at least 1 byte");
		ret = -EINVAL;
	}
	if (d->min > d->max) {
		verr(v, sd->dist_val[CD_MIN] ? cfg_node_loc(sd->dist_val[CD_MIN]) : at,
		     "sample_size", "min (%llu bytes) is greater than max (%llu bytes)",
		     (unsigned long long)d->min, (unsigned long long)d->max);
		ret = -EINVAL;
	} else if (d->mean < d->min || d->mean > d->max) {
		verr(v, cfg_node_loc(sd->dist_val[CD_MEAN]), "sample_size.mean",
		     "%llu bytes is outside [min, max] = [%llu, %llu]",
		     (unsigned long long)d->mean, (unsigned long long)d->min,
		     (unsigned long long)d->max);
		ret = -EINVAL;
	}
	return ret;
}

/* Bytes of one shaped sample; 0 when usable. */
static int check_shape(struct vds *v, uint64_t *bytes)
{
	struct dl_dataset *ds = v->ds;
	uint64_t n = dl_dtype_size(ds->dtype);

	for (unsigned i = 0; i < ds->ndims; i++) {
		if (__builtin_mul_overflow(n, ds->dims[i], &n)) {
			verr(v, loc_of(v, CF_SHAPE), "shape",
			     "a sample of this shape and dtype is over 2^64-1 bytes");
			return -ERANGE;
		}
	}
	*bytes = n;
	return 0;
}

/* Largest file the format could lay out must stay below 2^62 bytes. */
static void check_file_bytes(struct vds *v, enum cfg_field about)
{
	const struct dl_dataset *ds = v->ds;
	uint64_t per, total;

	if (__builtin_add_overflow(ds->sample_size.max, CFG_SAMPLE_ROOM, &per) ||
	    __builtin_mul_overflow(per, ds->samples_per_file, &total) ||
	    __builtin_add_overflow(total, CFG_FILE_ROOM, &total) || total >= CFG_MAX_FILE_BYTES) {
		verr(v, loc_of(v, about), cfg_field_key[about],
		     "a file would be too large: samples_per_file (%llu) x sample size (up to "
		     "%llu bytes) must stay below 2^62 bytes per file",
		     (unsigned long long)ds->samples_per_file,
		     (unsigned long long)ds->sample_size.max);
	}
}

/* Returns whether the name is usable (for the duplicate check). */
static int validate_dataset(struct cfg_ctx *c, struct dl_dataset *ds,
			    const struct cfg_src_ds *sd)
{
	struct vds v = { c, ds, sd, "" };
	int size_ok = 0, fmt_ok = usable(&v, CF_FORMAT), name_ok = 0;
	uint64_t bytes;

	snprintf(v.prefix, sizeof(v.prefix), "datasets[%u]", ds->index);
	if (!sd->val[CF_NAME])
		verr(&v, ds->loc, "name",
		     "missing: every dataset needs a name (its directory under the mount)");
	else if (!sd->bad[CF_NAME])
		name_ok = check_component(&v, CF_NAME, CFG_NAME_MAX, 1) == 0;
	ds->id = dl_mix64(fnv1a64(ds->name));
	if (!sd->val[CF_FORMAT])
		verr(&v, ds->loc, "format", "missing: expected one of %s", fmt_list);
	if (usable(&v, CF_PREFIX))
		check_component(&v, CF_PREFIX, CFG_PREFIX_MAX, 0);

	for (unsigned s = 0; s < DL_SPLIT__COUNT; s++) {
		enum cfg_field f = s == DL_SPLIT_TRAIN ? CF_FILES : CF_EVAL_FILES;

		if (usable(&v, f) && ds->files[s] > CFG_MAX_FILES)
			verr(&v, loc_of(&v, f), cfg_field_key[f],
			     "%llu files is too many (at most 2^44 = %llu)",
			     (unsigned long long)ds->files[s], (unsigned long long)CFG_MAX_FILES);
	}
	if (!sd->bad[CF_FILES] && !sd->bad[CF_EVAL_FILES] &&
	    ds->files[DL_SPLIT_TRAIN] == 0 && ds->files[DL_SPLIT_VALID] == 0)
		verr(&v, loc_of(&v, sd->val[CF_FILES] ? CF_FILES : CF_EVAL_FILES), "files",
		     "a dataset needs at least one file (files + eval_files >= 1)");
	if (usable(&v, CF_SAMPLES) && ds->samples_per_file == 0)
		verr(&v, loc_of(&v, CF_SAMPLES), "samples_per_file", "must be at least 1");

	if (sd->val[CF_CARDINALITY]) {
		if (fmt_ok && ds->format != DL_FMT_DLRM)
			verr(&v, loc_of(&v, CF_CARDINALITY), "cardinality",
			     "only used by format dlrm (this dataset is %s)",
			     dl_format_name(ds->format));
		else if (usable(&v, CF_CARDINALITY) && ds->dlrm_cardinality == 0)
			verr(&v, loc_of(&v, CF_CARDINALITY), "cardinality", "must be at least 1");
	}

	ds->size_given = sd->val[CF_SAMPLE_SIZE] != NULL;
	/* Sample size: from shape, from sample_size, or fixed by the format. */
	if (fmt_ok && ds->format == DL_FMT_DLRM) {
		if (sd->val[CF_SHAPE])
			verr(&v, loc_of(&v, CF_SHAPE), "shape",
			     "not used by format dlrm (its records are %llu bytes)", CFG_DLRM_RECORD);
		if (sd->val[CF_SAMPLE_SIZE] && check_dist(&v) == 0 &&
		    (ds->sample_size.stdev || ds->sample_size.mean != CFG_DLRM_RECORD))
			verr(&v, loc_of(&v, CF_SAMPLE_SIZE), "sample_size",
			     "format dlrm has fixed %llu-byte records; leave sample_size out",
			     CFG_DLRM_RECORD);
		ds->ndims = 0;
		ds->size_given = 0;	/* nothing to choose: the dump leaves it out */
		ds->sample_size = (struct dl_dist){ CFG_DLRM_RECORD, 0, CFG_DLRM_RECORD,
						    CFG_DLRM_RECORD };
		size_ok = 1;
	} else if (sd->val[CF_SHAPE]) {
		if (sd->val[CF_SAMPLE_SIZE])
			verr(&v, loc_of(&v, CF_SAMPLE_SIZE), "sample_size",
			     "cannot be given together with shape (the shape and dtype set the "
			     "sample size)");
		if (!sd->bad[CF_SHAPE] && check_shape(&v, &bytes) == 0) {
			ds->sample_size = (struct dl_dist){ bytes, 0, bytes, bytes };
			size_ok = !sd->val[CF_SAMPLE_SIZE];
		}
	} else if (sd->val[CF_SAMPLE_SIZE]) {
		size_ok = check_dist(&v) == 0;
	} else {
		verr(&v, ds->loc, "sample_size",
		     "missing: expected a size like 140MB or 4KiB (or a shape)");
	}
	if (size_ok && !sd->bad[CF_SAMPLES] && ds->samples_per_file)
		check_file_bytes(&v, sd->val[CF_SHAPE] ? CF_SHAPE :
				 sd->val[CF_SAMPLE_SIZE] ? CF_SAMPLE_SIZE : CF_SAMPLES);
	return name_ok;
}

/* Two datasets in one directory would serve one's files as the other's. */
static void check_unique_names(struct cfg_ctx *c, const struct dl_config *cfg,
			       const struct cfg_src *src, const unsigned char *name_ok)
{
	for (unsigned i = 1; i < cfg->ndatasets && c->nerr <= CFG_MAX_ERRORS; i++) {
		if (!name_ok[i])
			continue;
		for (unsigned j = 0; j < i; j++) {
			struct dl_loc first, here;
			char path[48];

			if (!name_ok[j] || strcmp(cfg->datasets[i].name, cfg->datasets[j].name) != 0)
				continue;
			first = cfg_node_loc(src->ds[j].val[CF_NAME]);
			here = cfg_node_loc(src->ds[i].val[CF_NAME]);
			snprintf(path, sizeof(path), "datasets[%u].name", i);
			cfg_error(c, here, path,
				  "duplicate dataset name \"%s\" (also datasets[%u].name at %s:%u:%u)",
				  cfg->datasets[i].name, j, c->name, first.line, first.col);
			break;
		}
	}
}

int cfg_validate(struct cfg_ctx *c, struct dl_config *cfg, const struct cfg_src *src)
{
	unsigned char *name_ok;

	if (!src->root)
		return 0;	/* not a mapping: already reported */
	if (!src->datasets) {
		cfg_error(c, cfg_node_loc(src->root), "datasets",
			  "missing: a config needs a list of datasets (- name: ..., format: ..., "
			  "files: ..., sample_size: ...)");
	} else if (!src->datasets_bad && src->nitems == 0) {
		cfg_error(c, cfg_node_loc(src->datasets), "datasets",
			  "the list is empty; expected at least one dataset");
	} else if (src->nitems > CFG_MAX_DATASETS) {
		cfg_error(c, cfg_node_loc(src->datasets), "datasets",
			  "%zu datasets is too many (at most %u)", src->nitems, CFG_MAX_DATASETS);
	}
	if (!cfg->ndatasets)
		return 0;
	name_ok = calloc(cfg->ndatasets, 1);
	if (!name_ok)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->ndatasets && c->nerr <= CFG_MAX_ERRORS; i++) {
		if (src->ds[i].node)
			name_ok[i] = (unsigned char)validate_dataset(c, &cfg->datasets[i],
								     &src->ds[i]);
	}
	check_unique_names(c, cfg, src, name_ok);
	free(name_ok);
	return 0;
}
