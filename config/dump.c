/* The effective config as YAML: every default written out, sizes exact, so
 * that loading the output gives back the same model. */
#include <errno.h>
#include <stdio.h>

#include "config_i.h"
#include "dliofs/trace.h"

/* The exact size with the unit that gives the shortest number
 * ("140MB", "4KiB", "1536"): never a rounded value. */
static const char *exact_size(uint64_t v, char *buf, size_t buflen)
{
	static const struct {
		const char *sym;
		uint64_t mult;
	} units[] = {
		{ "EiB", 1ULL << 60 }, { "EB", 1000000000000000000ULL },
		{ "PiB", 1ULL << 50 }, { "PB", 1000000000000000ULL },
		{ "TiB", 1ULL << 40 }, { "TB", 1000000000000ULL },
		{ "GiB", 1ULL << 30 }, { "GB", 1000000000ULL },
		{ "MiB", 1ULL << 20 }, { "MB", 1000000ULL },
		{ "KiB", 1ULL << 10 }, { "kB", 1000ULL },
	};
	const char *sym = "";
	uint64_t best = v;

	for (size_t i = 0; v && i < sizeof(units) / sizeof(units[0]); i++) {
		if (v % units[i].mult == 0 && v / units[i].mult < best) {
			best = v / units[i].mult;
			sym = units[i].sym;
		}
	}
	snprintf(buf, buflen, "%llu%s", (unsigned long long)best, sym);
	return buf;
}

/* A file name in a YAML comment: nothing that ends the line. */
static void put_comment_text(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

/* A double-quoted YAML scalar. */
static void put_quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void put_dims(FILE *out, const uint64_t *dims, unsigned n)
{
	fputc('[', out);
	for (unsigned i = 0; i < n; i++)
		fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
	fputc(']', out);
}

/* A list of no dimensions (hdf5's contiguous chunks) is left out. */
static int param_empty(const struct dl_param *p, const unsigned char *block)
{
	return p->kind == DL_PK_DIMS && !*(const unsigned *)(const void *)(block + p->count_off);
}

/* One of a format's own parameters, as its table lays it out. */
static void put_param(FILE *out, const struct dl_param *p, const unsigned char *block)
{
	const unsigned char *at = block + p->off;
	const struct dl_dist *d;
	unsigned n;

	switch (p->kind) {
	case DL_PK_COUNT:
		fprintf(out, "%s: %llu", p->key,
			p->width == 4 ? (unsigned long long)*(const unsigned *)(const void *)at
				      : (unsigned long long)*(const uint64_t *)(const void *)at);
		return;
	case DL_PK_CHOICE:
		n = *(const unsigned *)(const void *)at;
		fprintf(out, "%s: %s", p->key, n < p->nnames ? p->names[n] : "?");
		return;
	case DL_PK_PIXELS:
		d = (const struct dl_dist *)(const void *)at;
		if (d->stdev == 0)
			fprintf(out, "%s: %llu", p->key, (unsigned long long)d->mean);
		else
			fprintf(out, "%s: {mean: %llu, stdev: %llu, min: %llu, max: %llu}", p->key,
				(unsigned long long)d->mean, (unsigned long long)d->stdev,
				(unsigned long long)d->min, (unsigned long long)d->max);
		return;
	case DL_PK_DIMS:
		n = *(const unsigned *)(const void *)(block + p->count_off);
		fprintf(out, "%s: ", p->key);
		put_dims(out, (const uint64_t *)(const void *)at, n);
		return;
	case DL_PK_MAP:
		fprintf(out, "%s: {", p->key);
		for (unsigned i = 0, first = 1; i < p->nsub; i++) {
			if (param_empty(&p->sub[i], block))
				continue;
			fprintf(out, "%s", first ? "" : ", ");
			put_param(out, &p->sub[i], block);
			first = 0;
		}
		fputc('}', out);
		return;
	}
}

static void dump_dataset(const struct dl_dataset *ds, FILE *out)
{
	const struct dl_format_ops *ops = dl_ds_ops(ds);
	char a[32], b[32], c[32], d[32];

	/* Names are [A-Za-z0-9._-]: quoting keeps "null" or "123" strings. */
	fprintf(out, "  - name: \"%s\"\n", ds->name);
	fprintf(out, "    format: %s\n", ops->name);
	fprintf(out, "    files: %llu\n", (unsigned long long)ds->files[DL_SPLIT_TRAIN]);
	fprintf(out, "    eval_files: %llu\n", (unsigned long long)ds->files[DL_SPLIT_VALID]);
	fprintf(out, "    samples_per_file: %llu\n", (unsigned long long)ds->samples_per_file);
	if (ops->record_bytes) {
		fprintf(out, "    # sample_size: %llu (%s)\n",
			(unsigned long long)ds->sample_size.mean, ops->size_note);
	} else if (ds->ndims) {
		fprintf(out, "    shape: ");
		put_dims(out, ds->dims, ds->ndims);
		fprintf(out, "    # %s per sample\n", exact_size(ds->sample_size.mean, a, sizeof(a)));
	} else if (!(ops->features & DL_FF_SHAPE) && !ds->size_given) {
		fprintf(out, "    # sample_size: %s\n", ops->size_note);
	} else if (ds->sample_size.stdev == 0) {
		fprintf(out, "    sample_size: %s\n", exact_size(ds->sample_size.mean, a, sizeof(a)));
	} else {
		fprintf(out, "    sample_size: {mean: %s, stdev: %s, min: %s, max: %s}\n",
			exact_size(ds->sample_size.mean, a, sizeof(a)),
			exact_size(ds->sample_size.stdev, b, sizeof(b)),
			exact_size(ds->sample_size.min, c, sizeof(c)),
			exact_size(ds->sample_size.max, d, sizeof(d)));
	}
	fprintf(out, "    dtype: %s\n", dl_dtype_name(ds->dtype));
	if (ds->classes) {
		/* The class directories are the subfolders (the keys exclude each other). */
		fprintf(out, "    classes: %u\n", ds->classes);
	} else {
		fprintf(out, "    subfolders: %u\n", ds->subfolders[DL_SPLIT_TRAIN]);
		fprintf(out, "    eval_subfolders: %u\n", ds->subfolders[DL_SPLIT_VALID]);
	}
	if (!ds->classes)	/* class trees name files n<class>_<k> */
		fprintf(out, "    file_prefix: \"%s\"\n", ds->file_prefix);
	for (unsigned i = 0; i < ops->nparams; i++) {
		if (param_empty(&ops->params[i], ds->params))
			continue;
		fprintf(out, "    ");
		put_param(out, &ops->params[i], ds->params);
		fputc('\n', out);
	}
	if (ds->compression != DL_COMP_NONE) {
		fprintf(out, "    compression: %s\n", dl_compression_name(ds->compression));
		fprintf(out, "    compression_level: %u\n", ds->compression_level);
	}
}

int dl_config_dump(const struct dl_config *cfg, FILE *out)
{
	if (!cfg || !out)
		return -EINVAL;
	fprintf(out, "# effective dliofs config");
	if (cfg->path[0]) {
		fprintf(out, " (from ");
		put_comment_text(out, cfg->path);
		fprintf(out, ")");
	}
	fprintf(out, "\nseed: %llu\n", (unsigned long long)cfg->seed);
	fprintf(out, "io: %s\n", cfg->io_mode == DL_IO_DIRECT ? "direct" : "cache");
	/* A config of backing directories alone reloads as one (an empty
	 * "datasets:" would be a mapping key with nothing in it). */
	fprintf(out, cfg->ndatasets ? "datasets:\n" : "datasets: []\n");
	for (unsigned i = 0; i < cfg->ndatasets; i++)
		dump_dataset(&cfg->datasets[i], out);
	/* The storage model in the pacer's own keys; its cache: mapping reads
	 * back as the cache.* keys it came from. */
	fprintf(out, "pacer:\n");
	dl_pacer_cfg_dump(&cfg->pacer, out, 2);
	if (cfg->trace.enabled) {
		fprintf(out, "trace:\n  enabled: true\n  file: ");
		put_quoted(out, cfg->trace.file);
		fprintf(out, "\n  ops: [");
		for (unsigned op = 1, first = 1; op < 32; op++) {
			if (!(cfg->trace.ops_mask ? cfg->trace.ops_mask & (1u << op) : 0))
				continue;
			fprintf(out, "%s%s", first ? "" : ", ", dl_trace_op_name(op));
			first = 0;
		}
		if (!cfg->trace.ops_mask)
			fprintf(out, "all");
		fprintf(out, "]\n");
	}
	if (cfg->cluster.enabled)
		fprintf(out, "cluster:\n  period: %lluus\n  window: %lluus\n",
			(unsigned long long)(cfg->cluster.period_ns / 1000),
			(unsigned long long)(cfg->cluster.window_ns / 1000));
	if (cfg->s3.access_key[0] || cfg->s3.listen[0])
		fprintf(out, "s3:\n");
	if (cfg->s3.listen[0]) {
		fprintf(out, "  listen: ");
		put_quoted(out, cfg->s3.listen);
		fprintf(out, "\n");
	}
	if (cfg->s3.access_key[0]) {
		fprintf(out, "  access_key: ");
		put_quoted(out, cfg->s3.access_key);
		/* The secret is never written back: this text is `dliofs check`'s
		 * output and the mount's .dliofs/config.yaml, which any local user
		 * may read. Loaded again, it asks for the secret by name. */
		fprintf(out, "\n  # secret_key: set, not shown\n");
	}
	if (cfg->nbacking) {
		fprintf(out, "backing:\n");
		for (unsigned i = 0; i < cfg->nbacking; i++) {
			const struct dl_backing_cfg *b = &cfg->backing[i];

			fprintf(out, "  - {at: ");
			put_quoted(out, b->at);
			if (b->sink) {
				fprintf(out, ", sink: true, max_entries: %llu",
					(unsigned long long)b->max_entries);
				if (b->journal[0]) {
					fprintf(out, ", journal: ");
					put_quoted(out, b->journal);
				}
				fprintf(out, "}\n");
				continue;
			}
			fprintf(out, ", path: ");
			put_quoted(out, b->path);
			fprintf(out, ", writable: %s}\n", b->writable ? "true" : "false");
		}
	}
	if (cfg->overlay.path[0]) {
		fprintf(out, "overlay: {path: ");
		put_quoted(out, cfg->overlay.path);
		fprintf(out, "}\n");
	}
	if (ferror(out))
		return -EIO;
	return 0;
}
