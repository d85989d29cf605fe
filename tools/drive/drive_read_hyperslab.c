/* The hyperslab reader (DL_PLAN_HYPERSLAB: hdf5): per sample, one hyperslab
 * of each records_k dataset (or x) through libhdf5, the file kept open per
 * reader thread; with --read-amplification dlio and the pytorch loader
 * reopened per sample, as h5py in DLIO. */
#include <errno.h>
#include <hdf5.h>
#include <stdio.h>

#include "drive_read_i.h"

#define H5_MAX_DSETS 64

struct h5 {
	hid_t f, d[H5_MAX_DSETS], fs[H5_MAX_DSETS], ms[H5_MAX_DSETS], t[H5_MAX_DSETS];
	unsigned n;
	uint64_t samples, sbytes[H5_MAX_DSETS];
	uint32_t split;
	uint64_t index;
	char path[4096]; /* the open file's */
};

static enum drv_unit_kind h5_plan(enum drv_amp amp, int iterative)
{
	(void)amp;
	(void)iterative;
	return DRV_U_SAMPLE;
}

static int h5_open_state(struct drv_worker *w)
{
	struct h5 *h = w->state;

	h->f = -1;
	return 0;
}

static void h5_close(struct drv_worker *w)
{
	struct h5 *h = w->state;

	for (unsigned i = 0; i < h->n; i++) {
		H5Sclose(h->ms[i]);
		H5Sclose(h->fs[i]);
		H5Tclose(h->t[i]);
		H5Dclose(h->d[i]);
	}
	h->n = 0;
	if (h->f >= 0)
		H5Fclose(h->f);
	h->f = -1;
}

static int h5_add(struct h5 *h, const char *name)
{
	unsigned i = h->n;
	hsize_t dims[H5S_MAX_RANK];
	hid_t d = H5Dopen2(h->f, name, H5P_DEFAULT);

	if (d < 0)
		return -EIO;
	hid_t fs = H5Dget_space(d), ft = H5Dget_type(d);
	int rank = fs >= 0 ? H5Sget_simple_extent_dims(fs, dims, NULL) : -1;
	hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
	if (ft >= 0)
		H5Tclose(ft);
	if (rank < 1 || mt < 0) {
		if (mt >= 0)
			H5Tclose(mt);
		if (fs >= 0)
			H5Sclose(fs);
		H5Dclose(d);
		return -EIO;
	}
	/* One sample: the first dimension is the sample index. */
	hsize_t one = 1;
	hid_t ms =
	    rank > 1 ? H5Screate_simple(rank - 1, dims + 1, NULL) : H5Screate_simple(1, &one, NULL);
	uint64_t bytes = H5Tget_size(mt);
	for (int k = 1; k < rank; k++)
		bytes *= dims[k];
	if (i == 0)
		h->samples = dims[0];
	else if (dims[0] < h->samples)
		h->samples = dims[0];
	h->d[i] = d;
	h->fs[i] = fs;
	h->ms[i] = ms;
	h->t[i] = mt;
	h->sbytes[i] = bytes;
	h->n++;
	return 0;
}

static int h5_file(struct drv_worker *w, uint32_t split, uint64_t index, struct drv_io *io)
{
	struct h5 *h = w->state;

	h5_close(w);
	/* The error stack is per thread in thread-safe builds: silence it here. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
	/* No flock: not every mount supports it, and readers only read. */
	H5Pset_file_locking(fapl, 0, 1);
#endif
	h->f = H5Fopen(h->path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	if (h->f < 0) {
		drv_say(h->path, -EIO);
		return -EIO;
	}
	io->opens++;
	/* DLIO's records_0..k-1, or our plain layout's x. */
	char name[32];
	for (unsigned k = 0; k < H5_MAX_DSETS; k++) {
		snprintf(name, sizeof(name), "records_%u", k);
		if (H5Lexists(h->f, name, H5P_DEFAULT) <= 0)
			break;
		if (h5_add(h, name))
			goto bad;
	}
	if (!h->n && (H5Lexists(h->f, "x", H5P_DEFAULT) <= 0 || h5_add(h, "x")))
		goto bad;
	h->split = split;
	h->index = index;
	return 0;
bad:
	fprintf(stderr, "dlio-drive: %s: no records_0 or x dataset\n", h->path);
	h5_close(w);
	return -EIO;
}

/* One sample of dataset i into the buffer. Efficient mode reads a sample
 * larger than --io-size as slabs of whole rows of at most io_size through the
 * reused buffer (what fio's blocks are; a 256 MiB hyperslab into a 256 MiB
 * buffer ran at a third of fio's rate); with --read-amplification dlio it is
 * one H5Dread, as h5py's records[i] is. Returns the H5Dread calls. */
static int h5_sample(struct drv_worker *w, unsigned i, uint64_t sample)
{
	struct h5 *h = w->state;
	hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
	int rank = H5Sget_simple_extent_dims(h->fs[i], count, NULL);
	const uint64_t bytes = h->sbytes[i], io_size = w->c->p->io_size;
	uint64_t rows = 1, row_bytes = bytes;

	if (rank < 1)
		return -EIO;
	start[0] = sample;
	count[0] = 1;
	if (w->c->p->amp == DRV_AMP_EFFICIENT && rank > 1 && bytes > io_size) {
		row_bytes = bytes / count[1];
		rows = io_size / row_bytes ? io_size / row_bytes : 1;
	}
	if (rows * row_bytes >= bytes) {
		if (drv_reserve_buf(w, bytes) || bytes > w->cap)
			return -EFBIG;
		if (H5Sselect_hyperslab(h->fs[i], H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
		    H5Dread(h->d[i], h->t[i], h->ms[i], h->fs[i], H5P_DEFAULT, w->buf) < 0)
			return -EIO;
		return 1;
	}
	if (drv_reserve_buf(w, rows * row_bytes) || rows * row_bytes > w->cap)
		return -EFBIG;
	const hsize_t nrows = count[1];
	int reads = 0;
	for (hsize_t r = 0; r < nrows; r += rows) {
		hsize_t mdims[H5S_MAX_RANK];
		count[1] = nrows - r < rows ? nrows - r : rows;
		start[1] = r;
		for (int k = 1; k < rank; k++)
			mdims[k - 1] = count[k];
		hid_t ms = H5Screate_simple(rank - 1, mdims, NULL);
		herr_t e = ms < 0 ? -1
				  : H5Sselect_hyperslab(h->fs[i], H5S_SELECT_SET, start, NULL,
							count, NULL);
		if (e >= 0)
			e = H5Dread(h->d[i], h->t[i], ms, h->fs[i], H5P_DEFAULT, w->buf);
		if (ms >= 0)
			H5Sclose(ms);
		if (e < 0)
			return -EIO;
		reads++;
	}
	return reads;
}

static int h5_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		   uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	struct h5 *h = w->state;
	int ret = 0;

	(void)l;
	/* The path only when the file changes (per-sample formatting costs as
	 * much as a small read). */
	if (!(h->f >= 0 && h->split == split && h->index == u->file)) {
		if ((ret = drv_relpath(w->c, split, u->file, 0, h->path, sizeof(h->path))) ||
		    (ret = h5_file(w, split, u->file, io)))
			return ret;
	}
	if (u->sample >= h->samples) {
		fprintf(stderr, "dlio-drive: %s: sample %llu beyond the file's %llu\n", h->path,
			(unsigned long long)u->sample, (unsigned long long)h->samples);
		ret = -ENODATA;
		goto out;
	}
	uint64_t total = 0;
	for (unsigned i = 0; i < h->n; i++) {
		int n = h5_sample(w, i, u->sample);
		if (n < 0) {
			ret = n;
			drv_say(h->path, ret == -EFBIG ? -EFBIG : -EIO);
			goto out;
		}
		io->reads += (uint64_t)n;
		total += h->sbytes[i];
	}
	io->bytes += total;
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, h->path, (int64_t)u->sample, -1, total);
out:
	/* DLIO's pytorch reader reopens per sample; its tf.data one keeps a file
	 * open for the reader's consecutive samples, as we do. */
	if (ret || (w->c->p->amp == DRV_AMP_DLIO && !w->c->p->iterative))
		h5_close(w);
	return ret;
}

const struct drv_reader_ops drv_read_hyperslab_ops = {
    .name = "hyperslab",
    .no_odirect = "libhdf5",
    .plan = h5_plan,
    .state_size = sizeof(struct h5),
    .open = h5_open_state,
    .read = h5_read,
    .close = h5_close,
};
