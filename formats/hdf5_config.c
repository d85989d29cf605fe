/* hdf5's config side: the hdf5: mapping (layout, datasets, chunks) and
 * what only hdf5 checks (data datasets, chunk shapes against the sample
 * shape, gzip without chunks). */
#include <string.h>

#include "dliofs/intmath.h"
#include "hdf5_tmpl_i.h"

/* Limits of a chunk and of the chunk count, as libhdf5 and the template
 * cache bear them (hdf5.c). */
#define MAX_CHUNK_BYTES 0xffffffffULL

static const char *const layout_names[] = {
	[DL_H5_DLIO] = "dlio",
	[DL_H5_PLAIN] = "plain",
};

static const struct dl_param h5_keys[] = {
	{.key = "layout",
	 .kind = DL_PK_CHOICE,
	 .off = offsetof(struct dl_h5_params, layout),
	 .def = DL_H5_DLIO,
	 .names = layout_names,
	 .nnames = 2},
	{.key = "datasets",
	 .kind = DL_PK_COUNT,
	 .off = offsetof(struct dl_h5_params, dsets),
	 .width = 4,
	 .def = 1,
	 .min = 1,
	 .max = DL_H5_MAX_DSETS,
	 .unit = "data datasets (records_0..)"},
	{.key = "chunks",
	 .kind = DL_PK_DIMS,
	 .off = offsetof(struct dl_h5_params, chunk),
	 .count_off = offsetof(struct dl_h5_params, chunk_ndims)},
};

const struct dl_param dl_h5_param_table[] = {
	{.key = "hdf5",
	 .kind = DL_PK_MAP,
	 .sub = h5_keys,
	 .nsub = 3,
	 .expected = "a mapping like {layout: dlio, datasets: 1, chunks: [1, 64, 64]}"},
};
const unsigned dl_h5_nparams = 1;

uint64_t dl_h5_copies(const struct dl_dataset *ds, const char **key)
{
	const struct dl_h5_params *hp = dl_h5_params(ds);

	*key = "hdf5.datasets";
	return hp->layout == DL_H5_DLIO && hp->dsets > 1 ? hp->dsets : 1;
}

/* Per-file sample dims (the largest of a size distribution) as hdf5 lays
 * them out: the shape, or (d, d) with d = isqrt(bytes / itemsize). */
static unsigned sample_dims(const struct dl_dataset *ds, uint64_t *dims)
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

static int bad(const struct dl_check *chk, const char *key)
{
	return chk->given(chk->arg, key) && !chk->usable(chk->arg, key);
}

void dl_h5_check(struct dl_dataset *ds, const struct dl_check *chk, int size_ok)
{
	struct dl_h5_params *hp = DL_DS_PARAMS(ds, struct dl_h5_params);
	uint64_t dims[DL_MAX_DIMS + 1], cbytes = dl_dtype_size(ds->dtype), nchunks = 1, stored;
	int dsets_ok = !bad(chk, "hdf5.datasets");
	unsigned rank;

	if (ds->compression == DL_COMP_GZIP && chk->usable(chk->arg, "compression") &&
	    !chk->given(chk->arg, "hdf5.chunks"))
		dl_check_error(chk, "compression", "compression",
			       "hdf5 compresses chunks: gzip needs hdf5.chunks");
	/* The range of hdf5.datasets is its parameter's (parsed). */
	if (chk->given(chk->arg, "hdf5.datasets") && dsets_ok && hp->layout == DL_H5_PLAIN &&
	    hp->dsets > 1)
		dl_check_error(chk, "hdf5.datasets", "hdf5.datasets",
			       "layout plain has one data dataset (x); datasets > 1 needs layout "
			       "dlio");
	/* The chunk count below is per data dataset and per sample row: without
	 * a usable count of either (0 is reported elsewhere) there is nothing to
	 * check it against, and nothing to divide by. */
	if (!hp->chunk_ndims || !size_ok || bad(chk, "samples_per_file") ||
	    !ds->samples_per_file || !dsets_ok)
		return;
	dims[0] = ds->samples_per_file;
	rank = 1 + sample_dims(ds, dims + 1);
	if (hp->chunk_ndims != rank) {
		dl_check_error(chk, "hdf5.chunks", "hdf5.chunks",
			       "expected %u dimensions (samples, then the %u of a sample%s), got %u",
			       rank, rank - 1, ds->ndims ? "" : ": (d, d) from sample_size",
			       hp->chunk_ndims);
		return;
	}
	/* Chunks larger than the data are clipped to it (as h5py requires). */
	for (unsigned i = 0; i < rank; i++) {
		uint64_t c = hp->chunk[i] < dims[i] ? hp->chunk[i] : dims[i];

		if (__builtin_mul_overflow(cbytes, c, &cbytes))
			cbytes = UINT64_MAX;
		if (__builtin_mul_overflow(nchunks, (dims[i] + c - 1) / c, &nchunks))
			nchunks = UINT64_MAX;
	}
	/* A gzip chunk is stored with its deflate framing: that must fit. */
	if (ds->compression == DL_COMP_GZIP && cbytes < UINT64_MAX / 2)
		stored = dl_h5_gz_stored(cbytes);
	else
		stored = cbytes;
	if (stored > MAX_CHUNK_BYTES)
		dl_check_error(chk, "hdf5.chunks", "hdf5.chunks",
			       "a chunk of %llu bytes%s is too large (HDF5 chunks are below 4 GiB)",
			       (unsigned long long)stored,
			       stored != cbytes ? " (with its deflate framing)" : "");
	else if (nchunks > DL_H5_MAX_CHUNKS / (hp->dsets ? hp->dsets : 1))
		dl_check_error(chk, "hdf5.chunks", "hdf5.chunks",
			       "too small: a file would have over %llu chunks (give larger chunks)",
			       (unsigned long long)DL_H5_MAX_CHUNKS);
}
