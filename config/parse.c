/* A libyaml document -> the model. Each value is checked on its own here
 * (type, syntax, range of one number); everything that involves several
 * values is validate.c's. Every problem is reported with file:line:column
 * and the key path, and parsing goes on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config_i.h"
#include "backing_yaml.h"
#include "pacer_yaml.h"

enum top_key {
	TK_SEED, TK_IO, TK_DATASETS, TK_PACER, TK_CACHE, TK_BACKING, TK_TRACE, TK_S3, TK_CLUSTER,
	TK_OVERLAY, TK__COUNT
};

static const char *const top_keys[TK__COUNT] = {
	"seed", "io", "datasets", "pacer", "cache", "backing", "trace", "s3", "cluster", "overlay",
};

/* ---- the dataset mapping ---- */

#define EXPECT_PIXELS "a number of pixels like 224"

static struct cfg_ref *add_ref(struct cfg_src_ds *sd, const char *rel, yaml_node_t *n)
{
	struct cfg_ref *r;
	size_t len;

	if (sd->nref == CFG_MAX_REFS)
		return NULL;
	r = &sd->ref[sd->nref++];
	len = strnlen(rel, sizeof(r->key) - 1);
	memcpy(r->key, rel, len);
	r->key[len] = '\0';
	r->node = n;
	r->bad = 0;
	return r;
}

/* A distribution (sample_size, an image side) at path: one value, or
 * {mean, stdev, min, max}, whose keys are remembered as rel.mean, ...
 * Returns -EINVAL when the value itself is unusable; problems in the
 * mapping's values are marked on their own references. */
static int parse_dist(struct cfg_walk *w, yaml_node_t *n, const char *path, const char *rel,
		      int is_size, struct dl_dist *d, struct cfg_src_ds *sd)
{
	yaml_node_t *vals[CD__COUNT] = { 0 }, *keys[CD__COUNT] = { 0 };
	uint64_t *dst[CD__COUNT] = { &d->mean, &d->stdev, &d->min, &d->max };

	if (n->type != YAML_MAPPING_NODE) {
		const char *s;

		if (is_size)
			return cfg_get_size(w, n, path, &d->mean);
		s = cfg_scalar_of(w, n, path, EXPECT_PIXELS " or {mean: ..., stdev: ...}");
		return s ? cfg_get_count(w, n, path, UINT64_MAX, &d->mean) : -EINVAL;
	}
	cfg_walk_mapping(w, n, path, cfg_dist_key, CD__COUNT, vals, keys, 0);
	for (unsigned i = 0; i < CD__COUNT; i++) {
		char sub[340], subrel[64];
		struct cfg_ref *r;
		int ret;

		if (!vals[i])
			continue;
		snprintf(sub, sizeof(sub), "%s.%s", path, cfg_dist_key[i]);
		snprintf(subrel, sizeof(subrel), "%s.%s", rel, cfg_dist_key[i]);
		r = add_ref(sd, subrel, vals[i]);
		ret = is_size ? cfg_get_size(w, vals[i], sub, dst[i])
			      : cfg_get_count(w, vals[i], sub, UINT64_MAX, dst[i]);
		if (ret && r)
			r->bad = 1;
	}
	return 0;
}

/* A list of 1..8 dimensions, each >= 1: shape and hdf5.chunks. Returns
 * the number of items (even past 8); *bad is set on any problem. */
static unsigned parse_dims(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t *dims,
			   unsigned char *bad)
{
	unsigned i = 0, len;

	if (n->type != YAML_SEQUENCE_NODE) {
		cfg_error(w->c, cfg_node_loc(n), path,
			  "expected a list of 1 to %u dimensions like [224, 224, 3], got %s",
			  DL_MAX_DIMS, cfg_kind_of(n));
		*bad = 1;
		return 0;
	}
	len = (unsigned)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (len == 0 || len > DL_MAX_DIMS) {
		cfg_error(w->c, cfg_node_loc(n), path, "expected 1 to %u dimensions, got %u",
			  DL_MAX_DIMS, len);
		*bad = 1;
		return len;
	}
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, i++) {
		yaml_node_t *d = cfg_node_at(w, *it);
		char sub[340];

		if (!d)
			continue;
		snprintf(sub, sizeof(sub), "%s[%u]", path, i);
		if (cfg_get_count(w, d, sub, UINT64_MAX, &dims[i])) {
			*bad = 1;
		} else if (dims[i] == 0) {
			cfg_error(w->c, cfg_node_loc(d), sub, "a dimension must be at least 1");
			*bad = 1;
		}
	}
	return len;
}

static void parse_shape(struct cfg_walk *w, yaml_node_t *n, const char *prefix,
			struct dl_dataset *ds, struct cfg_src_ds *sd)
{
	char path[300];

	snprintf(path, sizeof(path), "%s.shape", prefix);
	sd->shape_len = parse_dims(w, n, path, ds->dims, &sd->bad[CF_SHAPE]);
	if (!sd->bad[CF_SHAPE])
		ds->ndims = sd->shape_len;
}

#define MAX_SUB_KEYS 16

/* One of a format's own keys, into its parameter block, as its table says
 * (format.h): the value, and where it was written (rel, dotted). */
static void parse_param(struct cfg_walk *w, yaml_node_t *n, const char *path, const char *rel,
			const struct dl_param *p, unsigned char *block, struct cfg_src_ds *sd)
{
	struct cfg_ref *r = add_ref(sd, rel, n);
	unsigned char *at = block + p->off, bad = 0;
	unsigned choice, len;
	uint64_t u;
	int ret = 0;

	switch (p->kind) {
	case DL_PK_COUNT:
		ret = cfg_get_count(w, n, path, p->unit || !p->max ? UINT64_MAX : p->max, &u);
		if (!ret && p->unit && (u < p->min || u > p->max)) {
			cfg_error(w->c, cfg_node_loc(n), path, "expected %llu to %llu %s, got %llu",
				  (unsigned long long)p->min, (unsigned long long)p->max, p->unit,
				  (unsigned long long)u);
			ret = -ERANGE;
		}
		if (!ret && p->width == 4)
			*(unsigned *)(void *)at = (unsigned)u;
		else if (!ret)
			*(uint64_t *)(void *)at = u;
		break;
	case DL_PK_CHOICE:
		ret = cfg_get_choice(w, n, path, p->names, p->nnames, &choice);
		if (!ret)
			*(unsigned *)(void *)at = choice;
		break;
	case DL_PK_PIXELS:
		ret = parse_dist(w, n, path, rel, 0, (struct dl_dist *)(void *)at, sd);
		break;
	case DL_PK_DIMS:
		len = parse_dims(w, n, path, (uint64_t *)(void *)at, &bad);
		if (!bad)
			*(unsigned *)(void *)(block + p->count_off) = len;
		ret = bad ? -EINVAL : 0;
		break;
	case DL_PK_MAP: {
		yaml_node_t *vals[MAX_SUB_KEYS] = { 0 }, *keys[MAX_SUB_KEYS] = { 0 };
		const char *names[MAX_SUB_KEYS] = { 0 };
		unsigned nsub = p->nsub < MAX_SUB_KEYS ? p->nsub : MAX_SUB_KEYS;

		if (n->type != YAML_MAPPING_NODE) {
			cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s", p->expected,
				  cfg_kind_of(n));
			ret = -EINVAL;
			break;
		}
		for (unsigned i = 0; i < nsub; i++)
			names[i] = p->sub[i].key;
		cfg_walk_mapping(w, n, path, names, nsub, vals, keys, 0);
		for (unsigned i = 0; i < nsub; i++) {
			char sub[340], subrel[64];

			if (!vals[i])
				continue;
			snprintf(sub, sizeof(sub), "%s.%s", path, names[i]);
			snprintf(subrel, sizeof(subrel), "%s.%s", rel, names[i]);
			parse_param(w, vals[i], sub, subrel, &p->sub[i], block, sd);
		}
		break;
	}
	}
	if (ret && r)
		r->bad = 1;
}

/* A format's key written for a dataset: into the dataset's parameters when
 * its format has it; otherwise (validate.c says which formats use it) into
 * a scratch block, so a bad value is still reported where it stands. */
static void parse_format_key(struct cfg_walk *w, yaml_node_t *v, const char *prefix,
			     const char *key, int fmt_ok, struct dl_dataset *ds,
			     struct cfg_src_ds *sd)
{
	const struct dl_param *p = fmt_ok ? dl_format_param(dl_ds_ops(ds), key) : NULL;
	char path[300];

	snprintf(path, sizeof(path), "%s.%s", prefix, key);
	if (p) {
		parse_param(w, v, path, key, p, ds->params, sd);
		return;
	}
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		struct dl_dataset scratch = { .format = (enum dl_format)f };

		p = dl_format_param(dl_format_ops((enum dl_format)f), key);
		if (p) {
			dl_format_param_defaults(&scratch);
			parse_param(w, v, path, key, p, scratch.params, sd);
			return;
		}
	}
}

/* names[nkeys]: the keys a dataset takes; vals and keys: room for as many. */
static void parse_dataset_keys(struct cfg_walk *w, yaml_node_t *n, unsigned index,
			       struct dl_dataset *ds, struct cfg_src_ds *sd, const char **names,
			       unsigned nkeys, yaml_node_t **vals, yaml_node_t **keys)
{
	char prefix[64], path[300];
	const char *s;
	unsigned choice;
	int fmt_ok = 0;

	snprintf(prefix, sizeof(prefix), "datasets[%u]", index);
	ds->index = index;
	ds->loc = cfg_node_loc(n);
	ds->files[DL_SPLIT_TRAIN] = 1;
	ds->samples_per_file = 1;
	ds->dtype = DL_DT_UINT8;
	ds->compression_level = CFG_DEFAULT_COMPRESSION_LEVEL;
	cfg_copy_text(ds->file_prefix, sizeof(ds->file_prefix), "img");
	if (n->type != YAML_MAPPING_NODE) {
		cfg_error(w->c, cfg_node_loc(n), prefix,
			  "expected a mapping (name: ..., format: ..., ...), got %s", cfg_kind_of(n));
		return;
	}
	sd->node = n;
	cfg_walk_mapping(w, n, prefix, names, nkeys, vals, keys, 1);
	memcpy(sd->val, vals, sizeof(sd->val));

	/* The format first: it says which keys follow and their defaults. */
	if (sd->val[CF_FORMAT]) {
		const char *fmts[DL_FMT__COUNT];

		for (unsigned i = 0; i < DL_FMT__COUNT; i++)
			fmts[i] = dl_format_name((enum dl_format)i);
		snprintf(path, sizeof(path), "%s.format", prefix);
		if (cfg_get_choice(w, sd->val[CF_FORMAT], path, fmts, DL_FMT__COUNT, &choice)) {
			sd->bad[CF_FORMAT] = 1;
		} else {
			ds->format = (enum dl_format)choice;
			dl_format_param_defaults(ds);
			fmt_ok = 1;
		}
	}
	for (unsigned f = 0; f < CF__COUNT; f++) {
		yaml_node_t *v = sd->val[f];
		uint64_t u;
		int ret = 0;

		if (!v || f == CF_FORMAT)
			continue;
		snprintf(path, sizeof(path), "%s.%s", prefix, cfg_field_key[f]);
		switch ((enum cfg_field)f) {
		case CF_NAME:
			s = cfg_scalar_of(w, v, path, "a directory name like unet3d");
			if (s)
				cfg_copy_text(ds->name, sizeof(ds->name), s);
			ret = s ? 0 : -EINVAL;
			break;
		case CF_PREFIX:
			s = cfg_scalar_of(w, v, path, "a file name prefix like img");
			if (s)
				cfg_copy_text(ds->file_prefix, sizeof(ds->file_prefix), s);
			ret = s ? 0 : -EINVAL;
			break;
		case CF_DTYPE: {
			const char *dts[DL_DT__COUNT];

			for (unsigned i = 0; i < DL_DT__COUNT; i++)
				dts[i] = dl_dtype_name((enum dl_dtype)i);
			ret = cfg_get_choice(w, v, path, dts, DL_DT__COUNT, &choice);
			if (!ret)
				ds->dtype = (enum dl_dtype)choice;
			break;
		}
		case CF_FILES:
			ret = cfg_get_count(w, v, path, UINT64_MAX, &ds->files[DL_SPLIT_TRAIN]);
			break;
		case CF_EVAL_FILES:
			ret = cfg_get_count(w, v, path, UINT64_MAX, &ds->files[DL_SPLIT_VALID]);
			break;
		case CF_SAMPLES:
			ret = cfg_get_count(w, v, path, UINT64_MAX, &ds->samples_per_file);
			break;
		case CF_SUBFOLDERS:
		case CF_EVAL_SUBFOLDERS:
			ret = cfg_get_count(w, v, path, UINT32_MAX, &u);
			if (!ret)
				ds->subfolders[f == CF_SUBFOLDERS ? DL_SPLIT_TRAIN : DL_SPLIT_VALID] =
					(uint32_t)u;
			break;
		case CF_SAMPLE_SIZE:
			ret = parse_dist(w, v, path, "sample_size", 1, &ds->sample_size, sd);
			break;
		case CF_SHAPE:
			parse_shape(w, v, prefix, ds, sd);
			break;
		case CF_COMPRESSION: {
			const char *comps[DL_COMP__COUNT];

			for (unsigned i = 0; i < DL_COMP__COUNT; i++)
				comps[i] = dl_compression_name((enum dl_compression)i);
			ret = cfg_get_choice(w, v, path, comps, DL_COMP__COUNT, &choice);
			if (!ret)
				ds->compression = (enum dl_compression)choice;
			break;
		}
		case CF_COMPRESSION_LEVEL:
			ret = cfg_get_count(w, v, path, UINT32_MAX, &u);
			if (!ret)
				ds->compression_level = (unsigned)u;
			break;
		case CF_CLASSES:
			ret = cfg_get_count(w, v, path, UINT32_MAX, &u);
			if (!ret)
				ds->classes = (uint32_t)u;
			break;
		case CF_FORMAT:
		case CF__COUNT:
			break;
		}
		if (ret)
			sd->bad[f] = 1;
	}
	for (unsigned i = CF__COUNT; i < nkeys; i++)
		if (vals[i])
			parse_format_key(w, vals[i], prefix, names[i], fmt_ok, ds, sd);
}

static void parse_dataset(struct cfg_walk *w, yaml_node_t *n, unsigned index, struct dl_dataset *ds,
			  struct cfg_src_ds *sd)
{
	/* As many keys as the registered formats have: never a fixed cap. */
	unsigned max = cfg_dataset_keys(NULL, 0), nkeys;
	const char **names = calloc(max, sizeof(*names));
	yaml_node_t **vals = calloc(max, sizeof(*vals)), **keys = calloc(max, sizeof(*keys));

	if (!names || !vals || !keys) {
		w->c->oom = 1;
		goto out;
	}
	nkeys = cfg_dataset_keys(names, max);
	parse_dataset_keys(w, n, index, ds, sd, names, nkeys, vals, keys);
out:
	free(names);
	free(vals);
	free(keys);
}

static void parse_datasets(struct cfg_walk *w, yaml_node_t *n, struct dl_config *cfg,
			   struct cfg_src *src)
{
	size_t i = 0, nparse;

	if (n->type != YAML_SEQUENCE_NODE) {
		cfg_error(w->c, cfg_node_loc(n), "datasets",
			  "expected a list of datasets (- name: ..., format: ...), got %s",
			  cfg_kind_of(n));
		src->datasets_bad = 1;
		return;
	}
	src->nitems = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	/* Past the limit validate.c says so once; the rest is not looked at. */
	nparse = src->nitems > CFG_MAX_DATASETS ? CFG_MAX_DATASETS : src->nitems;
	if (!nparse)
		return;
	cfg->datasets = calloc(nparse, sizeof(*cfg->datasets));
	src->ds = calloc(nparse, sizeof(*src->ds));
	if (!cfg->datasets || !src->ds) {
		w->c->oom = 1;
		return;
	}
	cfg->ndatasets = (unsigned)nparse;
	for (yaml_node_item_t *it = n->data.sequence.items.start; i < nparse; it++, i++) {
		yaml_node_t *d = cfg_node_at(w, *it);

		if (d && !cfg_too_many(w->c))
			parse_dataset(w, d, (unsigned)i, &cfg->datasets[i], &src->ds[i]);
	}
}

int cfg_parse(struct cfg_ctx *c, yaml_document_t *doc, struct dl_config *cfg,
	      struct cfg_src *src)
{
	struct cfg_walk w = { c, doc };
	yaml_node_t *root = yaml_document_get_root_node(doc);
	yaml_node_t *vals[TK__COUNT] = { 0 }, *keys[TK__COUNT] = { 0 };
	unsigned choice;

	cfg->seed = 1;
	cfg->io_mode = DL_IO_CACHE;
	if (!root) {
		cfg_error(c, (struct dl_loc){ 1, 1 }, NULL,
			  "empty config: expected a mapping with a 'datasets' list");
		return 0;
	}
	if (root->type != YAML_MAPPING_NODE) {
		cfg_error(c, cfg_node_loc(root), NULL,
			  "expected a mapping of settings (seed, io, datasets) at the top level, "
			  "got %s",
			  cfg_kind_of(root));
		return 0;
	}
	src->root = root;
	cfg_walk_mapping(&w, root, "", top_keys, TK__COUNT, vals, keys, 0);
	if (vals[TK_PACER]) {
		dl_cfg_parse_pacer(c, doc, vals[TK_PACER], 0, &cfg->pacer);
		/* A storage model with no client cache stated: every read reaches
		 * it, so a second epoch costs what the first did. The kernel's
		 * page cache (this machine's RAM, whatever its size) would hide
		 * repeated reads from the model. */
		if (cfg->pacer.enabled && strncmp(cfg->pacer.cache.origin, "profile", 7)) {
			cfg->pacer.cache.policy = DL_CACHE_NONE;
			snprintf(cfg->pacer.cache.origin, sizeof(cfg->pacer.cache.origin),
				 "default with a storage model: no client cache");
		}
	}
	if (vals[TK_CACHE] && !cfg_too_many(c)) {
		dl_cfg_parse_pacer(c, doc, vals[TK_CACHE], 1, &cfg->pacer);
		snprintf(cfg->pacer.cache.origin, sizeof(cfg->pacer.cache.origin), "config");
	}
	if (vals[TK_TRACE] && !cfg_too_many(c))
		dl_cfg_parse_trace(c, doc, vals[TK_TRACE], &cfg->trace);
	if (vals[TK_S3] && !cfg_too_many(c))
		dl_cfg_parse_s3(c, doc, vals[TK_S3], &cfg->s3);
	if (vals[TK_CLUSTER] && !cfg_too_many(c))
		dl_cfg_parse_cluster(c, doc, vals[TK_CLUSTER], &cfg->cluster);
	if (vals[TK_SEED])
		cfg_get_u64(&w, vals[TK_SEED], "seed", &cfg->seed);
	if (vals[TK_IO]) {
		static const char *const modes[] = { [DL_IO_CACHE] = "cache",
						     [DL_IO_DIRECT] = "direct" };

		if (!cfg_get_choice(&w, vals[TK_IO], "io", modes, 2, &choice))
			cfg->io_mode = (enum dl_io_mode)choice;
	}
	if (vals[TK_DATASETS]) {
		src->datasets = vals[TK_DATASETS];
		parse_datasets(&w, vals[TK_DATASETS], cfg, src);
	}
	/* After the datasets: a backing name must not clash with one. */
	src->backing = vals[TK_BACKING];
	if (vals[TK_OVERLAY])
		cfg_parse_overlay(c, doc, vals[TK_OVERLAY], cfg);
	if (vals[TK_BACKING] && cfg_parse_backing(c, doc, vals[TK_BACKING], cfg))
		c->oom = 1;
	return c->oom ? -ENOMEM : 0;
}
