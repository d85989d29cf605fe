/* The model as a whole: required keys, values that only make sense together,
 * limits that keep every later computation (file sizes, offsets, names)
 * free of overflow. Every problem is reported; the checks go on. Defaults
 * that depend on other values (the size distribution) are filled here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/htab.h"
#include "dliofs/intmath.h"
#include "dliofs/prng.h"
#include "config_i.h"

struct vds {
	struct cfg_ctx *c;
	struct dl_dataset *ds;
	const struct cfg_src_ds *sd;
	char prefix[32];
};

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

/* The node written at a dotted key ("sample_size", "width.mean",
 * "hdf5.chunks"), NULL if none; *bad when it was already reported. */
static yaml_node_t *node_of(const struct vds *v, const char *key, int *bad)
{
	const struct cfg_ref *r;

	*bad = 0;
	for (unsigned f = 0; f < CF__COUNT; f++) {
		if (!strcmp(key, cfg_field_key[f])) {
			*bad = v->sd->bad[f];
			return v->sd->val[f];
		}
	}
	r = cfg_ref_find(v->sd, key);
	if (!r)
		return NULL;
	*bad = r->bad;
	return r->node;
}

static struct dl_loc loc_at(const struct vds *v, const char *key)
{
	int bad;
	const yaml_node_t *n = key ? node_of(v, key, &bad) : NULL;

	return n ? cfg_node_loc(n) : v->ds->loc;
}

/* A distribution (sample_size, width, height) written at key, defaults
 * filled; 0 when usable. one/many name the unit, cap the largest value. */
static int check_dist(const struct vds *v, const char *key, struct dl_dist *d, const char *one,
		      const char *many, uint64_t cap, const char *cap_why)
{
	static const char *const sub_key[CD__COUNT] = { "mean", "stdev", "min", "max" };
	yaml_node_t *dv[CD__COUNT];
	int top_bad, ret = 0;
	const yaml_node_t *n = node_of(v, key, &top_bad);
	struct dl_loc at;
	char sub[64];

	if (!n || top_bad)
		return -EINVAL;
	at = cfg_node_loc(n);
	if (n->type != YAML_MAPPING_NODE) {
		if (d->mean == 0) {
			verr(v, at, key, "must be at least 1 %s", one);
			return -EINVAL;
		}
		if (d->mean > cap) {
			verr(v, at, key, "%llu %s is too large (at most %llu: %s)",
			     (unsigned long long)d->mean, many, (unsigned long long)cap, cap_why);
			return -EINVAL;
		}
		d->stdev = 0;
		d->min = d->max = d->mean;
		return 0;
	}
	for (unsigned i = 0; i < CD__COUNT; i++) {
		int bad;

		snprintf(sub, sizeof(sub), "%s.%s", key, sub_key[i]);
		dv[i] = node_of(v, sub, &bad);
		if (bad)
			ret = -EINVAL;
	}
	snprintf(sub, sizeof(sub), "%s.mean", key);
	if (!dv[CD_MEAN]) {
		verr(v, at, sub, "missing: a distribution needs a mean");
		return -EINVAL;
	}
	if (ret)
		return ret;
	if (d->mean == 0) {
		verr(v, cfg_node_loc(dv[CD_MEAN]), sub, "must be at least 1 %s", one);
		return -EINVAL;
	}
	if (d->stdev == 0) {
		/* Fixed: min and max say nothing more. */
		d->min = d->max = d->mean;
	} else {
		if (!dv[CD_MIN])
			d->min = 1;
		if (!dv[CD_MAX]) {
			if (d->stdev > (UINT64_MAX - d->mean) / 6) {
				snprintf(sub, sizeof(sub), "%s.max", key);
				verr(v, at, sub, "mean + 6 x stdev is over 2^64-1 %s; give a max",
				     many);
				return -EINVAL;
			}
			d->max = d->mean + 6 * d->stdev;
			/* The default bound stays inside the limit; a written one must. */
			if (d->max > cap && d->mean <= cap)
				d->max = cap;
		}
		if (d->min == 0) {
			snprintf(sub, sizeof(sub), "%s.min", key);
			verr(v, cfg_node_loc(dv[CD_MIN]), sub, "must be at least 1 %s", one);
			ret = -EINVAL;
		}
		if (d->min > d->max) {
			verr(v, dv[CD_MIN] ? cfg_node_loc(dv[CD_MIN]) : at, key,
			     "min (%llu %s) is greater than max (%llu %s)",
			     (unsigned long long)d->min, many, (unsigned long long)d->max, many);
			ret = -EINVAL;
		} else if (d->mean < d->min || d->mean > d->max) {
			snprintf(sub, sizeof(sub), "%s.mean", key);
			verr(v, cfg_node_loc(dv[CD_MEAN]), sub,
			     "%llu %s is outside [min, max] = [%llu, %llu]",
			     (unsigned long long)d->mean, many, (unsigned long long)d->min,
			     (unsigned long long)d->max);
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	if (d->max > cap) {
		const yaml_node_t *m = dv[CD_MAX] ? dv[CD_MAX] : dv[CD_MEAN];

		snprintf(sub, sizeof(sub), "%s.%s", key, dv[CD_MAX] ? "max" : "mean");
		verr(v, cfg_node_loc(m), sub, "%llu %s is too large (at most %llu: %s)",
		     (unsigned long long)(dv[CD_MAX] ? d->max : d->mean), many,
		     (unsigned long long)cap, cap_why);
		return -EINVAL;
	}
	return 0;
}

static int check_size(struct vds *v)
{
	return check_dist(v, "sample_size", &v->ds->sample_size, "byte", "bytes", UINT64_MAX,
			  NULL);
}

/* ---- what a format's check calls (struct dl_check) ---- */

static int chk_given(void *arg, const char *key)
{
	int bad;

	return node_of(arg, key, &bad) != NULL;
}

static int chk_usable(void *arg, const char *key)
{
	int bad;

	return node_of(arg, key, &bad) && !bad;
}

static void chk_error(void *arg, const char *at, const char *key, const char *fmt, va_list ap)
{
	const struct vds *v = arg;
	char path[96];

	snprintf(path, sizeof(path), "%s%s%s", v->prefix, key ? "." : "", key ? key : "");
	cfg_verror(v->c, loc_at(v, at), path, fmt, ap);
}

static int chk_dist(void *arg, const char *key, struct dl_dist *d, const char *one,
		    const char *many, uint64_t cap, const char *cap_why)
{
	return check_dist(arg, key, d, one, many, cap, cap_why);
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

/* Largest file the format could lay out must stay below 2^62 bytes
 * (`copies`: a format that stores every sample several times, named by
 * copies_key, as hdf5's records_0..k-1). */
static void check_file_bytes(struct vds *v, enum cfg_field about, uint64_t copies,
			     const char *copies_key)
{
	const struct dl_dataset *ds = v->ds;
	uint64_t per, total;

	if (__builtin_add_overflow(ds->sample_size.max, CFG_SAMPLE_ROOM, &per) ||
	    __builtin_mul_overflow(per, ds->samples_per_file, &total) ||
	    __builtin_mul_overflow(total, copies, &total) ||
	    __builtin_add_overflow(total, CFG_FILE_ROOM, &total) || total >= CFG_MAX_FILE_BYTES) {
		verr(v, loc_of(v, about), cfg_field_key[about],
		     "a file would be too large: %s%ssamples_per_file (%llu) x sample size (up to "
		     "%llu bytes) must stay below 2^62 bytes per file",
		     copies > 1 ? copies_key : "", copies > 1 ? " x " : "",
		     (unsigned long long)ds->samples_per_file,
		     (unsigned long long)ds->sample_size.max);
	}
}

/* "format hdf5", "formats jpeg and png": the formats that have the key
 * (key NULL: that have the feature). */
static void formats_with(const char *key, unsigned feature, const char *const *what,
			 char *buf, size_t buflen)
{
	unsigned idx[DL_FMT__COUNT], n = 0;
	size_t o;

	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);

		if (key ? dl_format_param(ops, key) != NULL : (ops->features & feature) != 0)
			idx[n++] = f;
	}
	o = (size_t)snprintf(buf, buflen, "format%s ", n == 1 ? "" : "s");
	for (unsigned i = 0; i < n && o < buflen; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";

		o += (size_t)snprintf(buf + o, buflen - o, "%s%s", sep,
				      dl_format_name((enum dl_format)idx[i]));
		if (what && what[idx[i]] && o < buflen)
			o += (size_t)snprintf(buf + o, buflen - o, " (%s)", what[idx[i]]);
	}
}

/* Keys of other formats written for this one. */
static void check_foreign_keys(struct vds *v, const struct dl_format_ops *ops)
{
	char who[256];

	for (unsigned i = 0; i < v->sd->nref; i++) {
		const struct cfg_ref *r = &v->sd->ref[i];

		if (strchr(r->key, '.') || dl_format_param(ops, r->key))
			continue;
		formats_with(r->key, 0, NULL, who, sizeof(who));
		verr(v, cfg_node_loc(r->node), r->key, "only used by %s (this dataset is %s)", who,
		     ops->name);
	}
	if (v->sd->val[CF_CLASSES] && !(ops->features & DL_FF_CLASSES)) {
		formats_with(NULL, DL_FF_CLASSES, NULL, who, sizeof(who));
		verr(v, loc_of(v, CF_CLASSES), "classes",
		     "only used by %s (an ImageNet-style tree) (this dataset is %s)", who,
		     ops->name);
	}
}

static int takes_comp(const struct dl_format_ops *ops, enum dl_compression c, const char **what)
{
	for (unsigned i = 0; i < ops->ncomps; i++) {
		if (ops->comps[i].comp == c) {
			*what = ops->comps[i].what;
			return 1;
		}
	}
	return 0;
}

static void validate_compression(struct vds *v, const struct dl_format_ops *ops)
{
	struct dl_dataset *ds = v->ds;
	const char *what, *whats[DL_FMT__COUNT] = { 0 };
	char who[256] = "";

	if (usable(v, CF_COMPRESSION) && ds->compression != DL_COMP_NONE &&
	    !takes_comp(ops, ds->compression, &what)) {
		unsigned n = 0;
		size_t o;

		/* formats_with by feature cannot say "takes gzip": list them here. */
		for (unsigned f = 0; f < DL_FMT__COUNT; f++)
			if (takes_comp(dl_format_ops((enum dl_format)f), ds->compression, &whats[f]))
				n++;
		o = (size_t)snprintf(who, sizeof(who), "format%s ", n == 1 ? "" : "s");
		for (unsigned f = 0, k = 0; f < DL_FMT__COUNT && o < sizeof(who); f++) {
			if (!whats[f])
				continue;
			o += (size_t)snprintf(who + o, sizeof(who) - o, "%s%s (%s)",
					      k == 0 ? "" : k + 1 == n ? " and " : ", ",
					      dl_format_name((enum dl_format)f), whats[f]);
			k++;
		}
		if (ops->ncomps)
			verr(v, loc_of(v, CF_COMPRESSION), "compression",
			     "%s is for %s; this dataset is %s, which takes %s",
			     dl_compression_name(ds->compression), who, ops->name,
			     dl_compression_name(ops->comps[0].comp));
		else
			verr(v, loc_of(v, CF_COMPRESSION), "compression",
			     "%s is for %s; this dataset is %s", dl_compression_name(ds->compression),
			     who, ops->name);
	}
	if (v->sd->val[CF_COMPRESSION_LEVEL]) {
		if (!v->sd->val[CF_COMPRESSION] || (usable(v, CF_COMPRESSION) &&
						    ds->compression == DL_COMP_NONE))
			verr(v, loc_of(v, CF_COMPRESSION_LEVEL), "compression_level",
			     "only used with compression gzip or zip");
		else if (usable(v, CF_COMPRESSION_LEVEL) &&
			 (ds->compression_level < 1 || ds->compression_level > 9))
			verr(v, loc_of(v, CF_COMPRESSION_LEVEL), "compression_level",
			     "expected 1 to 9, got %u", ds->compression_level);
	}
}

static void validate_classes(struct vds *v, const struct dl_format_ops *ops)
{
	struct dl_dataset *ds = v->ds;
	const struct cfg_src_ds *sd = v->sd;

	if (!usable(v, CF_CLASSES) || !(ops->features & DL_FF_CLASSES))
		return;
	if (ds->classes == 0 || ds->classes > CFG_MAX_CLASSES) {
		verr(v, loc_of(v, CF_CLASSES), "classes", "expected 1 to %llu classes, got %u",
		     CFG_MAX_CLASSES, ds->classes);
		return;
	}
	if (sd->val[CF_PREFIX])
		verr(v, loc_of(v, CF_PREFIX), "file_prefix",
		     "not used with classes (files are named n<class>_<k>.%s, as in ImageNet)",
		     ops->class_ext ? ops->class_ext : ops->ext);
	for (unsigned i = 0; i < 2; i++) {
		enum cfg_field f = i ? CF_EVAL_SUBFOLDERS : CF_SUBFOLDERS;

		if (sd->val[f])
			verr(v, loc_of(v, f), cfg_field_key[f],
			     "cannot be combined with classes (the class directories are the "
			     "subfolders)");
	}
	for (unsigned s = 0; s < DL_SPLIT__COUNT; s++) {
		enum cfg_field f = s == DL_SPLIT_TRAIN ? CF_FILES : CF_EVAL_FILES;

		if (!sd->bad[f] && ds->files[s] && ds->files[s] < ds->classes)
			verr(v, loc_of(v, CF_CLASSES), "classes",
			     "%u classes but only %llu %s files: every class directory needs a file "
			     "(ImageFolder refuses empty classes)", ds->classes,
			     (unsigned long long)ds->files[s], s ? "eval" : "train");
	}
}

/* A format whose records have one fixed size (dlrm): nothing to choose. */
static void fixed_records(struct vds *v, const struct dl_format_ops *ops)
{
	struct dl_dataset *ds = v->ds;
	const uint64_t rb = ops->record_bytes;

	if (v->sd->val[CF_SHAPE])
		verr(v, loc_of(v, CF_SHAPE), "shape", "not used by format %s (its records are %llu "
		     "bytes)", ops->name, (unsigned long long)rb);
	if (v->sd->val[CF_SAMPLE_SIZE] && check_size(v) == 0 &&
	    (ds->sample_size.stdev || ds->sample_size.mean != rb))
		verr(v, loc_of(v, CF_SAMPLE_SIZE), "sample_size",
		     "format %s has fixed %llu-byte records; leave sample_size out", ops->name,
		     (unsigned long long)rb);
	ds->ndims = 0;
	ds->size_given = 0;	/* the dump leaves it out */
	ds->sample_size = (struct dl_dist){ rb, 0, rb, rb };
}

/* Sample size from shape x dtype or from sample_size; 0 when usable. */
static int shaped_samples(struct vds *v)
{
	struct dl_dataset *ds = v->ds;
	const struct cfg_src_ds *sd = v->sd;
	uint64_t bytes;

	if (sd->val[CF_SHAPE]) {
		if (sd->val[CF_SAMPLE_SIZE])
			verr(v, loc_of(v, CF_SAMPLE_SIZE), "sample_size",
			     "cannot be given together with shape (the shape and dtype set the "
			     "sample size)");
		if (sd->bad[CF_SHAPE] || check_shape(v, &bytes))
			return -EINVAL;
		ds->sample_size = (struct dl_dist){ bytes, 0, bytes, bytes };
		return sd->val[CF_SAMPLE_SIZE] ? -EINVAL : 0;
	}
	if (sd->val[CF_SAMPLE_SIZE])
		return check_size(v);
	verr(v, ds->loc, "sample_size", "missing: expected a size like 140MB or 4KiB (or a shape)");
	return -EINVAL;
}

/* Returns whether the name is usable (for the duplicate check). */
static int validate_dataset(struct cfg_ctx *c, struct dl_dataset *ds,
			    const struct cfg_src_ds *sd)
{
	struct vds v = { c, ds, sd, "" };
	struct dl_check chk = { &v, chk_given, chk_usable, chk_error, chk_dist };
	const struct dl_format_ops *ops = usable(&v, CF_FORMAT) ? dl_ds_ops(ds) : NULL;
	int size_ok = 0, name_ok = 0;

	snprintf(v.prefix, sizeof(v.prefix), "datasets[%u]", ds->index);
	if (!sd->val[CF_NAME])
		verr(&v, ds->loc, "name",
		     "missing: every dataset needs a name (its directory under the mount)");
	else if (!sd->bad[CF_NAME])
		name_ok = check_component(&v, CF_NAME, CFG_NAME_MAX, 1) == 0;
	ds->id = dl_mix64(dl_hash_str(0, ds->name)); /* FNV-1a: the content key */
	if (!sd->val[CF_FORMAT]) {
		char list[256];
		size_t o = 0;

		for (unsigned f = 0; f < DL_FMT__COUNT && o < sizeof(list); f++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", f ? ", " : "",
					      dl_format_name((enum dl_format)f));
		verr(&v, ds->loc, "format", "missing: expected one of %s", list);
	}
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
	ds->size_given = sd->val[CF_SAMPLE_SIZE] != NULL;
	if (!ops) {
		/* Without a format only what every dataset has can be checked. */
		if (!sd->bad[CF_FORMAT] && (sd->val[CF_SHAPE] || sd->val[CF_SAMPLE_SIZE]))
			shaped_samples(&v);
		return name_ok;
	}
	check_foreign_keys(&v, ops);
	validate_compression(&v, ops);

	/* Sample size: fixed by the format, decided by it (images), or from
	 * shape or sample_size. */
	if (ops->record_bytes) {
		fixed_records(&v, ops);
		size_ok = 1;
	} else if (!(ops->features & DL_FF_SHAPE)) {
		if (ops->check)
			ops->check(ds, &chk, 1);
		validate_classes(&v, ops);
		return name_ok;		/* the format bounds its own file sizes */
	} else {
		size_ok = shaped_samples(&v) == 0;
	}
	if (size_ok && !sd->bad[CF_SAMPLES] && ds->samples_per_file) {
		const char *copies_key = NULL;
		uint64_t copies = ops->copies ? ops->copies(ds, &copies_key) : 1;

		check_file_bytes(&v, sd->val[CF_SHAPE] ? CF_SHAPE :
				 sd->val[CF_SAMPLE_SIZE] ? CF_SAMPLE_SIZE : CF_SAMPLES,
				 copies, copies_key);
	}
	if (ops->check)
		ops->check(ds, &chk, size_ok);
	validate_classes(&v, ops);
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

/* A name a dataset's file also has at the mount root (dlrm's mlperf_bin)
 * must not be a dataset's, a backing directory's or another such name. */
static void check_root_aliases(struct cfg_ctx *c, const struct dl_config *cfg,
			       const struct cfg_src *src)
{
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dl_format_ops *ops = dl_ds_ops(&cfg->datasets[i]);
		const struct cfg_ref *r = cfg_ref_find(&src->ds[i], "mlperf_bin");
		const yaml_node_t *at = r ? r->node : src->ds[i].node;
		const char *clash = NULL;
		char name[256], other[256], path[48];

		if (!ops->root_alias || ops->root_alias(&cfg->datasets[i], name, sizeof(name)) <= 0)
			continue;
		for (unsigned j = 0; j < cfg->ndatasets && !clash; j++) {
			const struct dl_format_ops *oj = dl_ds_ops(&cfg->datasets[j]);

			if (!strcmp(cfg->datasets[j].name, name))
				clash = "a dataset's name";
			else if (j < i && oj->root_alias &&
				 oj->root_alias(&cfg->datasets[j], other, sizeof(other)) > 0 &&
				 !strcmp(other, name))
				clash = "another dataset's file at the root";
		}
		for (unsigned j = 0; j < cfg->nbacking && !clash; j++)
			if (!strcmp(cfg->backing[j].at, name))
				clash = "a backing directory's name";
		if (!clash)
			continue;
		snprintf(path, sizeof(path), "datasets[%u]%s", i, r ? ".mlperf_bin" : "");
		cfg_error(c, cfg_node_loc(at), path,
			  "its train file is also \"%s\" at the mount root, which is already %s",
			  name, clash);
	}
}

int cfg_validate(struct cfg_ctx *c, struct dl_config *cfg, const struct cfg_src *src)
{
	unsigned char *name_ok;

	if (!src->root)
		return 0;	/* not a mapping: already reported */
	/* A config of backing directories alone is a real use: shaping a real
	 * dataset's directory with no synthetic one beside it. */
	if (!src->datasets && !src->backing) {
		cfg_error(c, cfg_node_loc(src->root), "datasets",
			  "missing: a config needs a list of datasets (- name: ..., format: ..., "
			  "files: ..., sample_size: ...) or of backing directories (backing: - "
			  "{path: DIR, at: NAME})");
	} else if (src->datasets && !src->datasets_bad && src->nitems == 0 && !src->backing) {
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
	check_root_aliases(c, cfg, src);
	free(name_ok);
	return 0;
}
