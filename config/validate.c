/* The model as a whole: required keys, values that only make sense together,
 * limits that keep every later computation (file sizes, offsets, names)
 * free of overflow. Every problem is reported; the checks go on. Defaults
 * that depend on other values (the size distribution) are filled here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/intmath.h"
#include "dliofs/prng.h"
#include "config_i.h"

struct vds {
	struct cfg_ctx *c;
	struct dl_dataset *ds;
	const struct cfg_src_ds *sd;
	char prefix[32];
};

static const char *const fmt_list =
	"npy, npz, tfrecord, dlrm, raw, indexed_binary, hdf5, jpeg, png";

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

/* What a distribution counts, for messages and limits. */
struct dist_kind {
	enum cfg_field f;
	enum cfg_dist_of which;
	const char *one, *many;		/* "byte", "bytes" */
	uint64_t cap;			/* largest allowed value */
	const char *cap_why;		/* why (NULL: the 2^64 limit only) */
};

/* A distribution (sample_size, width, height) from what was given, defaults
 * filled; 0 when usable. */
static int check_dist(struct vds *v, const struct dist_kind *k, struct dl_dist *d)
{
	const struct cfg_src_ds *sd = v->sd;
	yaml_node_t *const *dv = sd->dist_val[k->which];
	const unsigned char *db = sd->dist_bad[k->which];
	const yaml_node_t *n = sd->val[k->f];
	const char *key = cfg_field_key[k->f];
	struct dl_loc at = loc_of(v, k->f);
	char sub[48];
	int ret = 0;

	if (sd->bad[k->f])
		return -EINVAL;
	if (n->type != YAML_MAPPING_NODE) {
		if (d->mean == 0) {
			verr(v, at, key, "must be at least 1 %s", k->one);
			return -EINVAL;
		}
		if (d->mean > k->cap) {
			verr(v, at, key, "%llu %s is too large (at most %llu: %s)",
			     (unsigned long long)d->mean, k->many, (unsigned long long)k->cap,
			     k->cap_why);
			return -EINVAL;
		}
		d->stdev = 0;
		d->min = d->max = d->mean;
		return 0;
	}
	for (unsigned i = 0; i < CD__COUNT; i++)
		if (db[i])
			ret = -EINVAL;
	snprintf(sub, sizeof(sub), "%s.mean", key);
	if (!dv[CD_MEAN]) {
		verr(v, at, sub, "missing: a distribution needs a mean");
		return -EINVAL;
	}
	if (ret)
		return ret;
	if (d->mean == 0) {
		verr(v, cfg_node_loc(dv[CD_MEAN]), sub, "must be at least 1 %s", k->one);
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
				     k->many);
				return -EINVAL;
			}
			d->max = d->mean + 6 * d->stdev;
			/* The default bound stays inside the limit; a written one must. */
			if (d->max > k->cap && d->mean <= k->cap)
				d->max = k->cap;
		}
		if (d->min == 0) {
			snprintf(sub, sizeof(sub), "%s.min", key);
			verr(v, cfg_node_loc(dv[CD_MIN]), sub, "must be at least 1 %s", k->one);
			ret = -EINVAL;
		}
		if (d->min > d->max) {
			verr(v, dv[CD_MIN] ? cfg_node_loc(dv[CD_MIN]) : at, key,
			     "min (%llu %s) is greater than max (%llu %s)",
			     (unsigned long long)d->min, k->many, (unsigned long long)d->max,
			     k->many);
			ret = -EINVAL;
		} else if (d->mean < d->min || d->mean > d->max) {
			snprintf(sub, sizeof(sub), "%s.mean", key);
			verr(v, cfg_node_loc(dv[CD_MEAN]), sub,
			     "%llu %s is outside [min, max] = [%llu, %llu]",
			     (unsigned long long)d->mean, k->many, (unsigned long long)d->min,
			     (unsigned long long)d->max);
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	if (d->max > k->cap) {
		const yaml_node_t *m = dv[CD_MAX] ? dv[CD_MAX] : dv[CD_MEAN];

		snprintf(sub, sizeof(sub), "%s.%s", key, dv[CD_MAX] ? "max" : "mean");
		verr(v, cfg_node_loc(m), sub, "%llu %s is too large (at most %llu: %s)",
		     (unsigned long long)(dv[CD_MAX] ? d->max : d->mean), k->many,
		     (unsigned long long)k->cap, k->cap_why);
		return -EINVAL;
	}
	return 0;
}

static int check_size(struct vds *v)
{
	static const struct dist_kind k = { CF_SAMPLE_SIZE, CDO_SIZE, "byte", "bytes",
					    UINT64_MAX, NULL };

	return check_dist(v, &k, &v->ds->sample_size);
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
 * (`copies`: hdf5's records_0..k-1 each hold every sample). */
static void check_file_bytes(struct vds *v, enum cfg_field about, uint64_t copies)
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
		     copies > 1 ? "hdf5.datasets" : "", copies > 1 ? " x " : "",
		     (unsigned long long)ds->samples_per_file,
		     (unsigned long long)ds->sample_size.max);
	}
}

static int is_image(enum dl_format f)
{
	return f == DL_FMT_JPEG || f == DL_FMT_PNG;
}

/* A key given for a format that has no use for it. */
static void only_for(struct vds *v, enum cfg_field f, const char *which)
{
	if (v->sd->val[f])
		verr(v, loc_of(v, f), cfg_field_key[f], "only used by %s (this dataset is %s)",
		     which, dl_format_name(v->ds->format));
}

static uint64_t image_min_bytes(const struct dl_dataset *ds)
{
	if (ds->format == DL_FMT_PNG)
		return ds->color == DL_COLOR_L ? CFG_PNG_MIN_BYTES_L : CFG_PNG_MIN_BYTES_RGB;
	return ds->color == DL_COLOR_L ? CFG_JPEG_MIN_BYTES_L :
	       ds->color == DL_COLOR_RGB ? CFG_JPEG_MIN_BYTES_RGB : CFG_JPEG_MIN_BYTES_RGB420;
}

/* jpeg / png: one image per file of width x height pixels; sample_size,
 * when given, is the exact file size. Returns whether sizes are usable. */
static int validate_image(struct vds *v)
{
	struct dl_dataset *ds = v->ds;
	const struct cfg_src_ds *sd = v->sd;
	const int jpeg = ds->format == DL_FMT_JPEG;
	const uint64_t side_max = jpeg ? CFG_JPEG_MAX_SIDE : CFG_PNG_MAX_SIDE;
	const char *why = jpeg ? "JPEG's limit" : "PNG's limit";
	const struct dist_kind kw = { CF_WIDTH, CDO_WIDTH, "pixel", "pixels", side_max, why };
	const struct dist_kind kh = { CF_HEIGHT, CDO_HEIGHT, "pixel", "pixels", side_max, why };
	unsigned ch;
	int size_ok = 1, w_ok = 0, h_ok = 0;

	if (!sd->val[CF_COLOR])
		ds->color = DL_COLOR_RGB;
	ch = ds->color == DL_COLOR_L ? 1 : 3;
	if (sd->val[CF_SHAPE])
		verr(v, loc_of(v, CF_SHAPE), "shape",
		     "not used by format %s: give width and height (and color)",
		     dl_format_name(ds->format));
	if (usable(v, CF_SAMPLES) && ds->samples_per_file != 1)
		verr(v, loc_of(v, CF_SAMPLES), "samples_per_file",
		     "format %s holds one image per file: must be 1", dl_format_name(ds->format));
	if (usable(v, CF_DTYPE) && ds->dtype != DL_DT_UINT8)
		verr(v, loc_of(v, CF_DTYPE), "dtype", "images are 8-bit: must be uint8");

	if (sd->val[CF_SAMPLE_SIZE]) {
		size_ok = check_size(v) == 0;
		if (size_ok && ds->sample_size.min < image_min_bytes(ds)) {
			const yaml_node_t *at = sd->dist_val[CDO_SIZE][CD_MIN] ?
				sd->dist_val[CDO_SIZE][CD_MIN] : sd->val[CF_SAMPLE_SIZE];

			verr(v, cfg_node_loc(at), "sample_size",
			     "%llu bytes is below the smallest %s file of color %s (%llu bytes, "
			     "a 1x1 image)", (unsigned long long)ds->sample_size.min,
			     dl_format_name(ds->format), cfg_color_name[ds->color],
			     (unsigned long long)image_min_bytes(ds));
			size_ok = 0;
		}
		if (size_ok && ds->sample_size.max >= CFG_MAX_FILE_BYTES) {
			verr(v, loc_of(v, CF_SAMPLE_SIZE), "sample_size",
			     "a file would be too large: must stay below 2^62 bytes");
			size_ok = 0;
		}
	}
	if (sd->val[CF_WIDTH])
		w_ok = check_dist(v, &kw, &ds->width) == 0;
	if (sd->val[CF_HEIGHT])
		h_ok = check_dist(v, &kh, &ds->height) == 0;
	if (!sd->val[CF_WIDTH] && !sd->val[CF_HEIGHT]) {
		if (!sd->val[CF_SAMPLE_SIZE]) {
			verr(v, ds->loc, "width",
			     "missing: format %s needs width and height (or a sample_size, from "
			     "which a square is derived)", dl_format_name(ds->format));
			return 0;
		}
		if (!size_ok)
			return 0;
		/* A square whose raw pixels are a few times the file: both
		 * encoders then sit in the middle of their range (JPEG about
		 * 16 bytes per 8x8 block; PNG shrinks it to fit). */
		uint64_t q = ds->sample_size.mean / ch, side;

		q = q > UINT64_MAX / CFG_IMG_RAW_PER_BYTE ? UINT64_MAX : q * CFG_IMG_RAW_PER_BYTE;
		side = dl_isqrt64(q);
		side = side < 1 ? 1 : side > CFG_JPEG_MAX_SIDE ? CFG_JPEG_MAX_SIDE : side;
		ds->width = ds->height = (struct dl_dist){ side, 0, side, side };
		return 1;
	}
	/* One side given: the other is the same (a square, or the same spread). */
	if (!sd->val[CF_HEIGHT]) {
		ds->height = ds->width;
		h_ok = w_ok;
	} else if (!sd->val[CF_WIDTH]) {
		ds->width = ds->height;
		w_ok = h_ok;
	}
	if (!w_ok || !h_ok)
		return 0;
	if (!jpeg) {
		uint64_t raw;

		if (__builtin_mul_overflow(ds->width.max, (uint64_t)ch, &raw) ||
		    __builtin_add_overflow(raw, 1, &raw) ||
		    __builtin_mul_overflow(raw, ds->height.max, &raw) || raw > CFG_PNG_MAX_RAW) {
			verr(v, loc_of(v, sd->val[CF_WIDTH] ? CF_WIDTH : CF_HEIGHT),
			     sd->val[CF_WIDTH] ? "width" : "height",
			     "an image of up to %llu x %llu pixels is too large (at most 2^50 raw "
			     "bytes)", (unsigned long long)ds->width.max,
			     (unsigned long long)ds->height.max);
			return 0;
		}
	}
	return size_ok;
}

/* Per-file sample dims (the largest of a size distribution) as hdf5 lays
 * them out: the shape, or (d, d) with d = isqrt(bytes / itemsize). */
static unsigned h5_sample_dims(const struct dl_dataset *ds, uint64_t *dims)
{
	uint64_t d;

	if (ds->ndims) {
		memcpy(dims, ds->dims, ds->ndims * sizeof(dims[0]));
		return ds->ndims;
	}
	d = dl_isqrt64(ds->sample_size.max / dl_dtype_size(ds->dtype));
	dims[0] = dims[1] = d ? d : 1;
	return 2;
}

static void validate_hdf5(struct vds *v, int size_ok)
{
	struct dl_dataset *ds = v->ds;
	const struct cfg_src_ds *sd = v->sd;
	yaml_node_t *const *hv = sd->h5_val;
	uint64_t dims[DL_MAX_DIMS + 1], cbytes = dl_dtype_size(ds->dtype), nchunks = 1;
	unsigned rank;
	int dsets_ok = !sd->h5_bad[CH_DATASETS];

	if (hv[CH_DATASETS] && dsets_ok) {
		if (ds->h5_dsets == 0 || ds->h5_dsets > CFG_H5_MAX_DSETS) {
			verr(v, cfg_node_loc(hv[CH_DATASETS]), "hdf5.datasets",
			     "expected 1 to %llu data datasets (records_0..), got %u",
			     CFG_H5_MAX_DSETS, ds->h5_dsets);
			dsets_ok = 0;
		} else if (ds->h5_layout == DL_H5_PLAIN && ds->h5_dsets > 1) {
			verr(v, cfg_node_loc(hv[CH_DATASETS]), "hdf5.datasets",
			     "layout plain has one data dataset (x); datasets > 1 needs layout dlio");
		}
	}
	/* The chunk count below is per data dataset and per sample row: without
	 * a usable count of either (0 is reported elsewhere) there is nothing to
	 * check it against, and nothing to divide by. */
	if (!ds->h5_chunk_ndims || !size_ok || sd->bad[CF_SAMPLES] || !ds->samples_per_file ||
	    !dsets_ok)
		return;
	dims[0] = ds->samples_per_file;
	rank = 1 + h5_sample_dims(ds, dims + 1);
	if (ds->h5_chunk_ndims != rank) {
		verr(v, cfg_node_loc(hv[CH_CHUNKS]), "hdf5.chunks",
		     "expected %u dimensions (samples, then the %u of a sample%s), got %u", rank,
		     rank - 1, ds->ndims ? "" : ": (d, d) from sample_size", ds->h5_chunk_ndims);
		return;
	}
	/* Chunks larger than the data are clipped to it (as h5py requires). */
	for (unsigned i = 0; i < rank; i++) {
		uint64_t c = ds->h5_chunk[i] < dims[i] ? ds->h5_chunk[i] : dims[i];

		if (__builtin_mul_overflow(cbytes, c, &cbytes))
			cbytes = UINT64_MAX;
		if (__builtin_mul_overflow(nchunks, (dims[i] + c - 1) / c, &nchunks))
			nchunks = UINT64_MAX;
	}
	if (cbytes > CFG_H5_MAX_CHUNK_BYTES)
		verr(v, cfg_node_loc(hv[CH_CHUNKS]), "hdf5.chunks",
		     "a chunk of %llu bytes is too large (HDF5 chunks are below 4 GiB)",
		     (unsigned long long)cbytes);
	else if (nchunks > CFG_H5_MAX_CHUNKS / ds->h5_dsets)
		verr(v, cfg_node_loc(hv[CH_CHUNKS]), "hdf5.chunks",
		     "too small: a file would have over %llu chunks (give larger chunks)",
		     CFG_H5_MAX_CHUNKS);
}

static void validate_compression(struct vds *v)
{
	struct dl_dataset *ds = v->ds;
	const struct cfg_src_ds *sd = v->sd;
	const enum dl_format f = ds->format;

	if (usable(v, CF_COMPRESSION)) {
		if (ds->compression == DL_COMP_GZIP && f != DL_FMT_TFRECORD && f != DL_FMT_HDF5)
			verr(v, loc_of(v, CF_COMPRESSION), "compression",
			     "gzip is for formats tfrecord (a GZIP file) and hdf5 (deflate chunks)%s; "
			     "this dataset is %s", f == DL_FMT_NPZ ? "; npz uses zip" : "",
			     dl_format_name(f));
		else if (ds->compression == DL_COMP_ZIP && f != DL_FMT_NPZ)
			verr(v, loc_of(v, CF_COMPRESSION), "compression",
			     "zip is for format npz (np.savez_compressed)%s; this dataset is %s",
			     f == DL_FMT_TFRECORD || f == DL_FMT_HDF5 ? "; use gzip" : "",
			     dl_format_name(f));
		else if (ds->compression == DL_COMP_GZIP && f == DL_FMT_HDF5 &&
			 !sd->h5_val[CH_CHUNKS])
			verr(v, loc_of(v, CF_COMPRESSION), "compression",
			     "hdf5 compresses chunks: gzip needs hdf5.chunks");
	}
	if (sd->val[CF_COMPRESSION_LEVEL]) {
		if (!sd->val[CF_COMPRESSION] || (usable(v, CF_COMPRESSION) &&
						 ds->compression == DL_COMP_NONE))
			verr(v, loc_of(v, CF_COMPRESSION_LEVEL), "compression_level",
			     "only used with compression gzip or zip");
		else if (usable(v, CF_COMPRESSION_LEVEL) &&
			 (ds->compression_level < 1 || ds->compression_level > 9))
			verr(v, loc_of(v, CF_COMPRESSION_LEVEL), "compression_level",
			     "expected 1 to 9, got %u", ds->compression_level);
	}
}

static void validate_classes(struct vds *v)
{
	struct dl_dataset *ds = v->ds;
	const struct cfg_src_ds *sd = v->sd;

	if (!usable(v, CF_CLASSES))
		return;
	if (ds->classes == 0 || ds->classes > CFG_MAX_CLASSES) {
		verr(v, loc_of(v, CF_CLASSES), "classes", "expected 1 to %llu classes, got %u",
		     CFG_MAX_CLASSES, ds->classes);
		return;
	}
	if (sd->val[CF_PREFIX])
		verr(v, loc_of(v, CF_PREFIX), "file_prefix",
		     "not used with classes (files are named n<class>_<k>.%s, as in ImageNet)",
		     ds->format == DL_FMT_JPEG ? "JPEG" : "png");
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
	if (fmt_ok) {
		if (ds->format != DL_FMT_HDF5)
			only_for(&v, CF_HDF5, "format hdf5");
		if (!is_image(ds->format)) {
			only_for(&v, CF_WIDTH, "formats jpeg and png");
			only_for(&v, CF_HEIGHT, "formats jpeg and png");
			only_for(&v, CF_COLOR, "formats jpeg and png");
			only_for(&v, CF_CLASSES, "formats jpeg and png (an ImageNet-style tree)");
		}
		validate_compression(&v);
	}

	ds->size_given = sd->val[CF_SAMPLE_SIZE] != NULL;
	/* Sample size: from shape, from sample_size, or fixed by the format. */
	if (fmt_ok && ds->format == DL_FMT_DLRM) {
		if (sd->val[CF_SHAPE])
			verr(&v, loc_of(&v, CF_SHAPE), "shape",
			     "not used by format dlrm (its records are %llu bytes)", CFG_DLRM_RECORD);
		if (sd->val[CF_SAMPLE_SIZE] && check_size(&v) == 0 &&
		    (ds->sample_size.stdev || ds->sample_size.mean != CFG_DLRM_RECORD))
			verr(&v, loc_of(&v, CF_SAMPLE_SIZE), "sample_size",
			     "format dlrm has fixed %llu-byte records; leave sample_size out",
			     CFG_DLRM_RECORD);
		ds->ndims = 0;
		ds->size_given = 0;	/* nothing to choose: the dump leaves it out */
		ds->sample_size = (struct dl_dist){ CFG_DLRM_RECORD, 0, CFG_DLRM_RECORD,
						    CFG_DLRM_RECORD };
		size_ok = 1;
	} else if (fmt_ok && is_image(ds->format)) {
		validate_image(&v);
		validate_classes(&v);
		return name_ok;		/* file sizes bounded by the image checks */
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
		size_ok = check_size(&v) == 0;
	} else {
		verr(&v, ds->loc, "sample_size",
		     "missing: expected a size like 140MB or 4KiB (or a shape)");
	}
	if (size_ok && !sd->bad[CF_SAMPLES] && ds->samples_per_file)
		check_file_bytes(&v, sd->val[CF_SHAPE] ? CF_SHAPE :
				 sd->val[CF_SAMPLE_SIZE] ? CF_SAMPLE_SIZE : CF_SAMPLES,
				 ds->format == DL_FMT_HDF5 && ds->h5_layout == DL_H5_DLIO &&
				 ds->h5_dsets > 1 ? ds->h5_dsets : 1);
	if (fmt_ok && ds->format == DL_FMT_HDF5)
		validate_hdf5(&v, size_ok);
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
