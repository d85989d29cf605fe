/* `dliofs formats`: what the registry serves, from the formats' own
 * tables, so the list people read is the list the loader checks against. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dliofs/format.h"

/* A format's own keys, dotted below mappings: "hdf5.layout, hdf5.chunks". */
static size_t put_keys(char *buf, size_t len, size_t o, const char *prefix,
		       const struct dl_param *p, unsigned n)
{
	for (unsigned i = 0; i < n && o < len; i++) {
		if (p[i].kind == DL_PK_MAP) {
			char sub[64];

			snprintf(sub, sizeof(sub), "%s%s.", prefix, p[i].key);
			o = put_keys(buf, len, o, sub, p[i].sub, p[i].nsub);
			continue;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s%s%s", o ? ", " : "", prefix, p[i].key);
	}
	return o;
}

static void print_table(FILE *out)
{
	fprintf(out, "%-19s %-19s %-30s %-10s %-9s %s\n", "FORMAT", "DLIO FORMAT", "FILE",
		"READ PLAN", "COMPRESS", "OWN KEYS");
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);
		char keys[256] = "", comps[32] = "", ext[48];
		size_t o = 0;

		put_keys(keys, sizeof(keys), 0, "", ops->params, ops->nparams);
		if (ops->features & DL_FF_CLASSES)
			snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%sclasses",
				 keys[0] ? ", " : "");
		for (unsigned i = 0; i < ops->ncomps && o < sizeof(comps); i++)
			o += (size_t)snprintf(comps + o, sizeof(comps) - o, "%s%s", i ? "," : "",
					      dl_compression_name(ops->comps[i].comp));
		snprintf(ext, sizeof(ext), "*.%s%s", ops->ext, ops->nparts > 1 ? " + index" : "");
		fprintf(out, "%-19s %-19s %-30s %-10s %-9s %s\n", ops->name,
			ops->dlio_name ? ops->dlio_name : "-", ext,
			dl_read_plan_name(ops->read_hints.plan), comps[0] ? comps : "-",
			keys[0] ? keys : "-");
	}
	fprintf(out, "\nEvery dataset also takes name, format, files, eval_files, samples_per_file,\n"
		     "sample_size or shape and dtype, subfolders, file_prefix, compression.\n"
		     "`dliofs formats --config` prints a config with one small dataset of each.\n");
}

/* One dataset per format from its example: a config to start from, and
 * what the registry's tests mount to prove every format is served. */
static void print_config(FILE *out)
{
	fprintf(out, "# every format dliofs serves, one small dataset each (dliofs formats "
		     "--config)\nseed: 1\ndatasets:\n");
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);

		fprintf(out, "  - {name: %s, format: %s, files: 4, eval_files: 2, %s}\n", ops->name,
			ops->name, ops->example);
	}
}

int dl_cli_formats(int argc, char **argv)
{
	if (argc == 0) {
		print_table(stdout);
		return 0;
	}
	if (argc == 1 && !strcmp(argv[0], "--config")) {
		print_config(stdout);
		return 0;
	}
	fprintf(stderr, "usage: dliofs formats [--config]\n");
	return 2;
}
