/* The dataset model's names and sizes (dataset.h). */
#include <errno.h>
#include <string.h>

#include "dliofs/dataset.h"

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

static const char *const compression_names[DL_COMP__COUNT] = {
	[DL_COMP_NONE] = "none",
	[DL_COMP_GZIP] = "gzip",
	[DL_COMP_ZIP] = "zip",
};

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

const char *dl_compression_name(enum dl_compression c)
{
	return (unsigned)c < DL_COMP__COUNT ? compression_names[c] : NULL;
}
