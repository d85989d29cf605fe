/* Names people write and read: the keys every dataset has, and how a
 * value or a DLIO key is shown back to them in a message. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config_i.h"

const char *const cfg_field_key[CF__COUNT] = {
	[CF_NAME] = "name",
	[CF_FORMAT] = "format",
	[CF_FILES] = "files",
	[CF_EVAL_FILES] = "eval_files",
	[CF_SAMPLES] = "samples_per_file",
	[CF_SAMPLE_SIZE] = "sample_size",
	[CF_DTYPE] = "dtype",
	[CF_SHAPE] = "shape",
	[CF_SUBFOLDERS] = "subfolders",
	[CF_EVAL_SUBFOLDERS] = "eval_subfolders",
	[CF_PREFIX] = "file_prefix",
	[CF_COMPRESSION] = "compression",
	[CF_COMPRESSION_LEVEL] = "compression_level",
	[CF_CLASSES] = "classes",
};

const char *const cfg_dist_key[CD__COUNT] = {
	[CD_MEAN] = "mean",
	[CD_STDEV] = "stdev",
	[CD_MIN] = "min",
	[CD_MAX] = "max",
};

unsigned cfg_dataset_keys(const char **keys, unsigned max)
{
	unsigned n = 0;

	if (!keys) {
		/* An upper bound: every format's keys, shared ones counted twice. */
		n = CF__COUNT;
		for (unsigned f = 0; f < DL_FMT__COUNT; f++)
			n += dl_format_ops((enum dl_format)f)->nparams;
		return n;
	}
	for (unsigned f = 0; f < CF__COUNT && n < max; f++)
		keys[n++] = cfg_field_key[f];
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		const struct dl_format_ops *ops = dl_format_ops((enum dl_format)f);

		for (unsigned i = 0; i < ops->nparams && n < max; i++) {
			unsigned j = 0;

			while (j < n && strcmp(keys[j], ops->params[i].key))
				j++;
			if (j == n)
				keys[n++] = ops->params[i].key;
		}
	}
	return n;
}

const struct cfg_ref *cfg_ref_find(const struct cfg_src_ds *sd, const char *key)
{
	for (unsigned i = 0; i < sd->nref; i++)
		if (!strcmp(sd->ref[i].key, key))
			return &sd->ref[i];
	return NULL;
}

void cfg_quote(const char *s, size_t len, char *buf, size_t buflen)
{
	/* Long enough to recognize the value, short enough for one line. */
	const size_t shown = 48;
	size_t o = 0, i;

	if (buflen < 16) {
		if (buflen)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (i = 0; i < len && i < shown && o + 8 < buflen; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch >= 0x20 && ch < 0x7f) {
			buf[o++] = (char)ch;
		} else if (ch == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else if (ch == '\t') {
			buf[o++] = '\\';
			buf[o++] = 't';
		} else {
			o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", ch);
		}
	}
	buf[o++] = '"';
	if (i < len && o + 4 < buflen) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

const char *cfg_dlio_hint(const char *key)
{
	static const struct {
		const char *dlio, *ours;
	} hints[] = {
		{ "num_files_train", "files" },
		{ "num_files_eval", "eval_files" },
		{ "num_samples_per_file", "samples_per_file" },
		{ "record_length", "sample_size" },
		{ "record_length_bytes", "sample_size" },
		{ "record_length_stdev", "sample_size: {mean: ..., stdev: ...}" },
		{ "record_length_bytes_stdev", "sample_size: {mean: ..., stdev: ...}" },
		{ "record_length_resize", "sample_size" },
		{ "num_subfolders_train", "subfolders" },
		{ "num_subfolders_eval", "eval_subfolders" },
		{ "record_element_type", "dtype" },
		{ "record_dims", "shape" },
		{ "data_folder", "name" },
		{ "prefix", "file_prefix" },
		{ "num_dset_per_record", "hdf5: {datasets: ...}" },
		{ "chunk_dims", "hdf5: {chunks: [...]}" },
		{ "enable_chunking", "hdf5: {chunks: [...]}" },
		{ "chunk_size", "hdf5: {chunks: [...]}" },
	};

	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (strcmp(key, hints[i].dlio) == 0)
			return hints[i].ours;
	return NULL;
}
