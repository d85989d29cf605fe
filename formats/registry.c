/* The one place formats are registered. */
#include <stddef.h>

#include "dliofs/format.h"
#include "formats_i.h"

static const struct dl_format_ops *const registry[DL_FMT__COUNT] = {
	[DL_FMT_NPY] = &dl_fmt_npy_ops,
	[DL_FMT_NPZ] = &dl_fmt_npz_ops,
	[DL_FMT_TFRECORD] = &dl_fmt_tfrecord_ops,
	[DL_FMT_DLRM] = &dl_fmt_dlrm_ops,
	[DL_FMT_RAW] = &dl_fmt_raw_ops,
	[DL_FMT_INDEXED_BINARY] = &dl_fmt_indexed_binary_ops,
	[DL_FMT_HDF5] = &dl_fmt_hdf5_ops,
	[DL_FMT_JPEG] = &dl_fmt_jpeg_ops,
	[DL_FMT_PNG] = &dl_fmt_png_ops,
};

const struct dl_format_ops *dl_format_ops(enum dl_format f)
{
	if ((unsigned)f >= DL_FMT__COUNT)
		return NULL;
	return registry[f];
}

const struct dl_format_ops *dl_ds_ops(const struct dl_dataset *ds)
{
	return dl_format_ops(ds->format);
}
