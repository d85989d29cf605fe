/* Names people write and read: formats, dtypes, config keys, and how a
 * value or a near-miss key is shown back to them in a message. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config_i.h"

static const char *const format_names[DL_FMT__COUNT] = {
	[DL_FMT_NPY] = "npy",
	[DL_FMT_NPZ] = "npz",
	[DL_FMT_TFRECORD] = "tfrecord",
	[DL_FMT_DLRM] = "dlrm",
	[DL_FMT_RAW] = "raw",
	[DL_FMT_INDEXED_BINARY] = "indexed_binary",
	[DL_FMT_HDF5] = "hdf5",
	[DL_FMT_JPEG] = "jpeg",
	[DL_FMT_PNG] = "png",
};

static const struct {
	const char *name, *descr;
	unsigned size;
} dtypes[DL_DT__COUNT] = {
	[DL_DT_UINT8] = { "uint8", "|u1", 1 },
	[DL_DT_INT8] = { "int8", "|i1", 1 },
	[DL_DT_UINT16] = { "uint16", "<u2", 2 },
	[DL_DT_INT16] = { "int16", "<i2", 2 },
	[DL_DT_UINT32] = { "uint32", "<u4", 4 },
	[DL_DT_INT32] = { "int32", "<i4", 4 },
	[DL_DT_UINT64] = { "uint64", "<u8", 8 },
	[DL_DT_INT64] = { "int64", "<i8", 8 },
	[DL_DT_FLOAT16] = { "float16", "<f2", 2 },
	[DL_DT_FLOAT32] = { "float32", "<f4", 4 },
	[DL_DT_FLOAT64] = { "float64", "<f8", 8 },
};

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
	[CF_CARDINALITY] = "cardinality",
	[CF_COMPRESSION] = "compression",
	[CF_COMPRESSION_LEVEL] = "compression_level",
	[CF_HDF5] = "hdf5",
	[CF_WIDTH] = "width",
	[CF_HEIGHT] = "height",
	[CF_COLOR] = "color",
	[CF_CLASSES] = "classes",
};

const char *const cfg_h5_key[CH__COUNT] = {
	[CH_LAYOUT] = "layout",
	[CH_DATASETS] = "datasets",
	[CH_CHUNKS] = "chunks",
};

const char *const cfg_color_name[3] = {
	[DL_COLOR_L] = "L",
	[DL_COLOR_RGB] = "RGB",
	[DL_COLOR_RGB420] = "RGB420",
};

const char *const cfg_h5_layout_name[2] = {
	[DL_H5_DLIO] = "dlio",
	[DL_H5_PLAIN] = "plain",
};

const char *const cfg_compression_name[3] = {
	[DL_COMP_NONE] = "none",
	[DL_COMP_GZIP] = "gzip",
	[DL_COMP_ZIP] = "zip",
};

const char *const cfg_dist_key[CD__COUNT] = {
	[CD_MEAN] = "mean",
	[CD_STDEV] = "stdev",
	[CD_MIN] = "min",
	[CD_MAX] = "max",
};

const char *dl_format_name(enum dl_format f)
{
	return (unsigned)f < DL_FMT__COUNT ? format_names[f] : NULL;
}

int dl_format_from_name(const char *s, enum dl_format *out)
{
	for (unsigned i = 0; s && i < DL_FMT__COUNT; i++) {
		if (format_names[i] && strcmp(s, format_names[i]) == 0) {
			*out = (enum dl_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *dl_dtype_name(enum dl_dtype t)
{
	return (unsigned)t < DL_DT__COUNT ? dtypes[t].name : NULL;
}

const char *dl_dtype_descr(enum dl_dtype t)
{
	return (unsigned)t < DL_DT__COUNT ? dtypes[t].descr : NULL;
}

unsigned dl_dtype_size(enum dl_dtype t)
{
	return (unsigned)t < DL_DT__COUNT ? dtypes[t].size : 0;
}

int dl_dtype_from_name(const char *s, enum dl_dtype *out)
{
	for (unsigned i = 0; s && i < DL_DT__COUNT; i++) {
		if (strcmp(s, dtypes[i].name) == 0) {
			*out = (enum dl_dtype)i;
			return 0;
		}
	}
	return -EINVAL;
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
