/* HDF5 templates: once per shape libhdf5 creates the whole file, with the
 * calls h5py makes for DLIO, into the sparse driver (hdf5_sink.c); the
 * template is the metadata it wrote plus the raw data ranges the library
 * reports (H5Dget_offset, chunk info), as a sorted list of segments. */
#include <errno.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dliofs/clock.h"
#include "dliofs/crc32.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "hdf5_tmpl_i.h"
#include "npy_i.h"

uint64_t dl_h5_shape_hash(const struct h5_shape *sh)
{
	const uint8_t *p = (const uint8_t *)sh;
	uint64_t h = 0x6864663573686170ULL, w;

	_Static_assert(sizeof(*sh) % 8 == 0, "shape key is whole words");
	for (size_t i = 0; i < sizeof(*sh); i += 8) {
		memcpy(&w, p + i, 8);
		h = dl_key2(h, w);
	}
	return h;
}

/* The shape key of f (per-sample shape already in f->dims). Chunk sizes larger
 * than the dataset are clipped to it, as h5py requires, so that a chunk shape
 * fits every per-file shape of a size distribution. */
int dl_h5_shape_of(const struct dl_file *f, struct h5_shape *sh, uint64_t *nchunks)
{
	const struct dl_dataset *ds = f->ds;
	const struct dl_h5_params *hp = dl_h5_params(ds);
	uint64_t raw = dl_dtype_size(ds->dtype), n = 1;

	memset(sh, 0, sizeof(*sh));
	if (hp->layout != DL_H5_DLIO && hp->layout != DL_H5_PLAIN)
		return -EINVAL;
	if ((unsigned)ds->dtype >= DL_DT__COUNT || f->ndims + 1 > H5_RANK_MAX)
		return -EINVAL;
	sh->layout = hp->layout;
	sh->dtype = ds->dtype;
	sh->ndsets = hp->layout == DL_H5_DLIO && hp->dsets > 1 ? hp->dsets : 1;
	if (sh->ndsets > DL_H5_MAX_DSETS)
		return -EINVAL;
	sh->rank = f->ndims + 1;
	sh->dims[0] = f->samples;
	memcpy(sh->dims + 1, f->dims, f->ndims * sizeof(f->dims[0]));
	for (unsigned i = 0; i < sh->rank; i++)
		if (sh->dims[i] == 0 || __builtin_mul_overflow(raw, sh->dims[i], &raw))
			return -EFBIG;
	if (raw > H5_DATA_LIMIT / sh->ndsets)
		return -EFBIG;
	if (ds->compression != DL_COMP_NONE && ds->compression != DL_COMP_GZIP)
		return -EINVAL;
	if (hp->chunk_ndims) {
		uint64_t cb = dl_dtype_size(ds->dtype);
		if (hp->chunk_ndims != sh->rank)
			return -EINVAL;
		sh->chunked = 1;
		for (unsigned i = 0; i < sh->rank; i++) {
			uint64_t c = hp->chunk[i];
			if (c == 0)
				return -EINVAL;
			sh->chunk[i] = c < sh->dims[i] ? c : sh->dims[i];
			cb *= sh->chunk[i]; /* <= raw: no overflow */
			if (__builtin_mul_overflow(
				n, (sh->dims[i] + sh->chunk[i] - 1) / sh->chunk[i], &n))
				return -EFBIG;
		}
		if (ds->compression == DL_COMP_GZIP) {
			sh->comp = DL_COMP_GZIP;
			sh->level = ds->compression_level > 9 ? 9 : ds->compression_level;
			cb = dl_h5_gz_stored(cb);
		}
		if (cb > H5_CHUNK_LIMIT)
			return -EFBIG;
		if (n > DL_H5_MAX_CHUNKS / sh->ndsets)
			return -EFBIG;
	} else if (ds->compression == DL_COMP_GZIP) {
		return -EINVAL; /* deflate needs chunks */
	}
	*nchunks = sh->chunked ? n : 0;
	return 0;
}

void dl_h5_tmpl_free(struct h5_tmpl *t)
{
	if (!t)
		return;
	free(t->seg);
	free(t->meta);
	free(t);
}

/* A raw data range the library reported. */
struct region {
	uint64_t at, len, idx;
	uint32_t kind, dset;
};

static int region_cmp(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* A new copy of the file type of a dtype (little-endian, as h5py writes it);
 * float16 is h5py's IEEE half, built from single precision. */
static hid_t file_type(enum dl_dtype t)
{
	hid_t h;

	switch (t) {
	case DL_DT_UINT8:
		return H5Tcopy(H5T_STD_U8LE);
	case DL_DT_INT8:
		return H5Tcopy(H5T_STD_I8LE);
	case DL_DT_UINT16:
		return H5Tcopy(H5T_STD_U16LE);
	case DL_DT_INT16:
		return H5Tcopy(H5T_STD_I16LE);
	case DL_DT_UINT32:
		return H5Tcopy(H5T_STD_U32LE);
	case DL_DT_INT32:
		return H5Tcopy(H5T_STD_I32LE);
	case DL_DT_UINT64:
		return H5Tcopy(H5T_STD_U64LE);
	case DL_DT_INT64:
		return H5Tcopy(H5T_STD_I64LE);
	case DL_DT_FLOAT32:
		return H5Tcopy(H5T_IEEE_F32LE);
	case DL_DT_FLOAT64:
		return H5Tcopy(H5T_IEEE_F64LE);
	case DL_DT_FLOAT16:
		h = H5Tcopy(H5T_IEEE_F32LE);
		if (h >= 0 && (H5Tset_fields(h, 15, 10, 5, 0, 10) < 0 || H5Tset_size(h, 2) < 0 ||
			       H5Tset_ebias(h, 15) < 0)) {
			H5Tclose(h);
			h = -1;
		}
		return h;
	default:
		return -1;
	}
}

struct seg_list {
	struct h5_seg *v;
	size_t n, cap;
};

static int seg_add(struct seg_list *l, struct h5_seg s)
{
	if (s.len == 0)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct h5_seg *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

/* Segments of the gap [lo, hi) between data ranges: the metadata the library
 * wrote there, zeros elsewhere. Appends the bytes to t->meta at *mlen. */
static int add_gap(struct seg_list *l, struct h5_tmpl *t, size_t *mlen, const struct h5_sink *s,
		   uint64_t lo, uint64_t hi)
{
	uint64_t pos = lo;
	int ret;

	for (size_t i = 0; i < s->n && pos < hi; i++) {
		uint64_t a = s->ext[i].at, b = a + s->ext[i].len;
		if (b <= pos)
			continue;
		if (a >= hi)
			break;
		if (a < pos)
			a = pos;
		if (b > hi)
			b = hi;
		ret = seg_add(l, (struct h5_seg){pos, a - pos, 0, SEG_ZERO, 0});
		if (ret)
			return ret;
		memcpy(t->meta + *mlen, s->ext[i].b + (a - s->ext[i].at), b - a);
		ret = seg_add(l, (struct h5_seg){a, b - a, *mlen, SEG_META, 0});
		if (ret)
			return ret;
		*mlen += b - a;
		pos = b;
	}
	return seg_add(l, (struct h5_seg){pos, hi - pos, 0, SEG_ZERO, 0});
}

/* Sorted data ranges + what the driver kept -> the segment map. */
static int tmpl_segments(struct h5_tmpl *t, const struct h5_sink *s, struct region *r, size_t nr)
{
	struct seg_list l = {0};
	uint64_t pos = 0, metabytes = 0;
	size_t mlen = 0;
	int ret = 0;

	qsort(r, nr, sizeof(*r), region_cmp);
	for (size_t i = 0; i < s->n; i++)
		metabytes += s->ext[i].len;
	t->meta = malloc(metabytes ? metabytes : 1);
	if (!t->meta)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		struct h5_seg sg = {r[i].at, r[i].len, r[i].idx, r[i].kind, r[i].dset};
		if (r[i].at < pos || r[i].len > t->eof || r[i].at > t->eof - r[i].len) {
			ret = -EIO; /* overlapping or past EOF: not a file we understand */
			goto out;
		}
		ret = add_gap(&l, t, &mlen, s, pos, r[i].at);
		if (ret)
			goto out;
		/* Chunks written back to back in index order form one run. */
		if (sg.kind == SEG_CHUNKS && l.n > 0) {
			struct h5_seg *p = &l.v[l.n - 1];
			if (p->kind == SEG_CHUNKS && p->dset == sg.dset &&
			    p->at + p->len == sg.at &&
			    p->arg + p->len / t->chunk_stored == sg.arg) {
				p->len += sg.len;
				pos = sg.at + sg.len;
				continue;
			}
		}
		ret = seg_add(&l, sg);
		if (ret)
			goto out;
		pos = r[i].at + r[i].len;
	}
	ret = add_gap(&l, t, &mlen, s, pos, t->eof);
out:
	if (ret) {
		free(l.v);
		return ret;
	}
	t->seg = l.v;
	t->nseg = l.n;
	t->bytes = sizeof(*t) + l.cap * sizeof(*l.v) + metabytes;
	return 0;
}

/* The library's own record of the file: superblock v2/v3 stores the EOF at 28. */
static int check_superblock(const struct h5_sink *s, uint64_t eof)
{
	static const uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	uint8_t sb[48];

	dl_h5_sink_read(s, 0, sb, sizeof(sb));
	if (memcmp(sb, sig, 8) != 0 || sb[8] < 2 || dl_get_le64(sb + 28) != eof)
		return -EIO;
	return 0;
}

/* Create one data dataset; write its chunks (DLIO writes the data right after
 * creating it) and record where the library put its raw data. */
static int make_dataset(hid_t file, const struct h5_shape *sh, const struct h5_tmpl *t, unsigned d,
			const void *zero, struct h5_sink *sink, struct region *r, size_t *nr)
{
	hsize_t dims[H5_RANK_MAX], chunk[H5_RANK_MAX], off[H5_RANK_MAX];
	uint64_t grid[H5_RANK_MAX], ci[H5_RANK_MAX] = {0}, c = 0;
	hid_t type = -1, space = -1, dcpl = -1, dset = -1;
	char name[32];
	int ret = -EIO;

	for (unsigned i = 0; i < sh->rank; i++) {
		dims[i] = sh->dims[i];
		chunk[i] = sh->chunk[i];
		if (sh->chunked)
			grid[i] = (sh->dims[i] + sh->chunk[i] - 1) / sh->chunk[i];
	}
	if (sh->layout == DL_H5_DLIO)
		snprintf(name, sizeof(name), "records_%u", d);
	else
		snprintf(name, sizeof(name), "x");
	if ((type = file_type(sh->dtype)) < 0 ||
	    (space = H5Screate_simple((int)sh->rank, dims, NULL)) < 0 ||
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0)
		goto out;
	if (H5Pset_obj_track_times(dcpl, 0) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0)
		goto out;
	if (sh->chunked) {
		if (H5Pset_chunk(dcpl, (int)sh->rank, chunk) < 0)
			goto out;
		if (sh->comp == DL_COMP_GZIP && H5Pset_deflate(dcpl, sh->level) < 0)
			goto out;
	} else if (H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 ||
		   H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0) {
		goto out;
	}
	dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (dset < 0)
		goto out;
	/* DLIO 2.0.0 (the PyPI release) reads one dataset `records`, DLIO's main
	 * branch `records_0..k-1`: a hard link gives the first one both names. */
	if (sh->layout == DL_H5_DLIO && d == 0 &&
	    H5Lcreate_hard(file, name, file, "records", H5P_DEFAULT, H5P_DEFAULT) < 0)
		goto out;
	if (!sh->chunked) {
		haddr_t a = H5Dget_offset(dset);
		if (a == HADDR_UNDEF || H5Dget_storage_size(dset) != t->chunk_raw)
			goto out;
		r[(*nr)++] = (struct region){a, t->chunk_raw, 0, SEG_DATA, d};
		ret = 0;
		goto out;
	}
	/* Every chunk, in row-major grid order as one H5Dwrite of the whole
	 * dataset would allocate them; the driver drops the (zero) bytes and
	 * notes where they went. Asking the library instead costs a walk of
	 * the whole chunk index per chunk in 1.10 (by_coord iterates). */
	size_t first = *nr;
	for (;;) {
		for (unsigned i = 0; i < sh->rank; i++)
			off[i] = ci[i] * sh->chunk[i];
		sink->raw_writes = 0;
		if (H5Dwrite_chunk(dset, H5P_DEFAULT, 0, off, t->chunk_stored, zero) < 0 ||
		    sink->raw_writes != 1 || sink->raw_len != t->chunk_stored)
			goto out;
		r[(*nr)++] = (struct region){sink->raw_at, t->chunk_stored, c, SEG_CHUNKS, d};
		c++;
		unsigned i = sh->rank;
		while (i > 0 && ++ci[i - 1] == grid[i - 1])
			ci[--i] = 0;
		if (i == 0)
			break;
	}
	/* The library agrees on the first and last chunks. */
	for (unsigned k = 0; k < 2; k++) {
		const struct region *q = &r[k ? *nr - 1 : first];
		uint64_t rem = q->idx;
		unsigned mask = 1;
		haddr_t a = HADDR_UNDEF;
		hsize_t sz = 0;
		for (unsigned i = sh->rank; i-- > 0;) {
			off[i] = rem % grid[i] * sh->chunk[i];
			rem /= grid[i];
		}
		if (H5Dget_chunk_info_by_coord(dset, off, &mask, &a, &sz) < 0 || a != q->at ||
		    sz != q->len || mask != 0)
			goto out;
	}
	ret = 0;
out:
	if (dset >= 0)
		H5Dclose(dset);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	if (type >= 0)
		H5Tclose(type);
	return ret;
}

static int make_labels(hid_t file, const struct h5_shape *sh, struct region *r, size_t *nr)
{
	hsize_t n = sh->dims[0];
	hid_t space = -1, dcpl = -1, dset = -1;
	int ret = -EIO;
	haddr_t a;

	if ((space = H5Screate_simple(1, &n, NULL)) < 0 ||
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_obj_track_times(dcpl, 0) < 0 ||
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0 ||
	    H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 ||
	    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0)
		goto out;
	dset = H5Dcreate2(file, sh->layout == DL_H5_DLIO ? "labels" : "y", H5T_STD_I64LE, space,
			  H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (dset < 0)
		goto out;
	a = H5Dget_offset(dset);
	if (a == HADDR_UNDEF || H5Dget_storage_size(dset) != 8 * n)
		goto out;
	r[(*nr)++] = (struct region){a, 8 * n, 0, SEG_LABELS, 0};
	ret = 0;
out:
	if (dset >= 0)
		H5Dclose(dset);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	return ret;
}

/* Build the template of sh. Caller holds lib_lock. */
int dl_h5_tmpl_build(struct h5_state *st, const struct h5_shape *sh, uint64_t nchunks,
		      struct h5_tmpl **out)
{
	struct h5_sink sink = {0};
	struct h5_tmpl *t = NULL;
	struct region *r = NULL;
	size_t nr = 0, nreg;
	hid_t fapl = -1, fcpl = -1, file = -1;
	void *zero = MAP_FAILED;
	uint64_t t0 = dl_mono_ns();
	int ret = -ENOMEM;

	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->sh = *sh;
	t->hash = dl_h5_shape_hash(sh);
	t->chunk_raw = dl_dtype_size(sh->dtype);
	for (unsigned i = 0; i < sh->rank; i++)
		t->chunk_raw *= sh->chunked ? sh->chunk[i] : sh->dims[i];
	t->chunk_stored = sh->comp == DL_COMP_GZIP ? dl_h5_gz_stored(t->chunk_raw) : t->chunk_raw;
	nreg = sh->ndsets * (sh->chunked ? nchunks : 1) + 1;
	r = malloc(nreg * sizeof(*r));
	if (!r)
		goto out;
	if (sh->chunked) {
		/* The bytes handed to H5Dwrite_chunk are dropped by the driver:
		 * untouched anonymous pages cost no memory however big the chunk. */
		zero = mmap(NULL, t->chunk_stored, PROT_READ,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (zero == MAP_FAILED)
			goto out;
	}
	ret = -EIO;
	/* h5py's File(..., libver='latest') without time tracking, which would put
	 * the creation time in the root group's header. */
	if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 || dl_h5_sink_fapl(&st->drv, fapl, &sink) ||
	    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0 ||
	    (fcpl = H5Pcreate(H5P_FILE_CREATE)) < 0 || H5Pset_obj_track_times(fcpl, 0) < 0)
		goto out;
	file = H5Fcreate("dliofs-template.hdf5", H5F_ACC_TRUNC, fcpl, fapl);
	if (file < 0)
		goto out;
	for (unsigned d = 0; d < sh->ndsets; d++) {
		ret = make_dataset(file, sh, t, d, zero, &sink, r, &nr);
		if (ret)
			goto out;
	}
	ret = make_labels(file, sh, r, &nr);
	if (ret)
		goto out;
	ret = -EIO;
	if (H5Fclose(file) < 0) {
		file = -1;
		goto out;
	}
	file = -1;
	if (sink.err) {
		ret = sink.err;
		goto out;
	}
	t->eof = sink.eof;
	ret = check_superblock(&sink, t->eof);
	if (ret)
		goto out;
	ret = tmpl_segments(t, &sink, r, nr);
out:
	if (file >= 0)
		H5Fclose(file);
	if (fcpl >= 0)
		H5Pclose(fcpl);
	if (fapl >= 0)
		H5Pclose(fapl);
	if (zero != MAP_FAILED)
		munmap(zero, t->chunk_stored);
	free(r);
	dl_h5_sink_reset(&sink);
	st->stats.builds++;
	st->stats.build_ms += (double)(dl_mono_ns() - t0) / 1e6;
	if (ret) {
		dl_h5_tmpl_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

