/* HDF5 through libhdf5 itself (formats.md 5, strategy S2). Once per shape the
 * library creates the whole file, with the same calls h5py makes for DLIO,
 * into a sparse in-memory driver that keeps only the metadata it writes; the
 * template is those bytes plus the raw data ranges the library reports
 * (H5Dget_offset, chunk info). A read copies template bytes and generates data
 * ranges on demand; no data is ever written or kept.
 *
 * Gzip datasets hold stored-deflate chunks written with H5Dwrite_chunk
 * (formats.md 5.4): every chunk has the same fixed size, so the metadata stays
 * data-independent and the only derived bytes are each chunk's Adler-32 (S3,
 * kept in the dcache).
 *
 * libhdf5 (Debian's build) is not thread-safe: every call into it runs under
 * the state's lib_lock. Templates are shared read-only and refcounted under
 * cache_lock, so reads of cached shapes never wait for a template build. */
#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dliofs/crc32.h"
#include "dliofs/prng.h"
#include "formats_i.h"
#include "hdf5_i.h"
#include "npy_i.h"

#define H5_RANK_MAX (DL_MAX_DIMS + 1)
/* Largest raw size we hand the library (its addresses stop at 2^63). */
#define H5_DATA_LIMIT (1ULL << 62)
/* HDF5 chunks are at most 4 GiB - 1 bytes. */
#define H5_CHUNK_LIMIT 0xffffffffULL

/* Stored deflate blocks: 5-byte header, at most 65535 payload bytes. */
#define GZ_BLOCK 65535u
#define GZ_HDR 2u
#define GZ_BLK_HDR 5u
#define GZ_TAIL 4u
/* Piece size when regenerating a chunk for its Adler-32. */
#define GZ_PIECE (32u * 1024u)

/* ---------------------------------------------------------------------------
 * The sparse driver. The core driver cannot build large templates: once any
 * metadata lands after a big data region it grows (and zero-fills) its buffer
 * up to that address, and H5Fget_file_image copies the whole file (measured:
 * 3 GB resident for three 1 GB datasets). This driver keeps every non-raw write
 * as a sorted list of extents, drops raw-data writes (we generate those bytes
 * anyway), and reads unwritten space as zeros. Its feature flags are sec2's
 * allocation flags, so the library lays the file out as it does on disk. */

struct sink_ext {
	uint64_t at, len;
	uint8_t *b;
};

struct h5_sink {
	struct sink_ext *ext; /* sorted, disjoint, not adjacent */
	size_t n, cap;
	uint64_t eof; /* end of file when the library closed it */
	int err;
	/* Raw writes since the last reset: where H5Dwrite_chunk put a chunk. */
	uint64_t raw_at, raw_len, raw_writes;
};

struct drv_fapl {
	struct h5_sink *sink;
};

struct drv_file {
	H5FD_t pub; /* first: the library casts */
	struct h5_sink *sink;
	haddr_t eoa, eof;
};

#define DRV_MAXADDR ((haddr_t)INT64_MAX)

static void sink_reset(struct h5_sink *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->ext[i].b);
	free(s->ext);
	memset(s, 0, sizeof(*s));
}

static int sink_write(struct h5_sink *s, uint64_t at, const uint8_t *src, uint64_t len)
{
	uint64_t end = at + len, lo = at, hi = end;
	size_t i0 = 0, i1;
	uint8_t *b;

	if (len == 0)
		return 0;
	/* Extents [i0, i1) touch the write: merge them with it into one. */
	while (i0 < s->n && s->ext[i0].at + s->ext[i0].len < at)
		i0++;
	i1 = i0;
	while (i1 < s->n && s->ext[i1].at <= end)
		i1++;
	if (i1 == i0 + 1 && s->ext[i0].at <= at && end <= s->ext[i0].at + s->ext[i0].len) {
		memcpy(s->ext[i0].b + (at - s->ext[i0].at), src, len);
		return 0;
	}
	if (i1 > i0) {
		if (s->ext[i0].at < lo)
			lo = s->ext[i0].at;
		if (s->ext[i1 - 1].at + s->ext[i1 - 1].len > hi)
			hi = s->ext[i1 - 1].at + s->ext[i1 - 1].len;
	}
	b = malloc(hi - lo);
	if (!b)
		return -ENOMEM;
	for (size_t i = i0; i < i1; i++) {
		memcpy(b + (s->ext[i].at - lo), s->ext[i].b, s->ext[i].len);
		free(s->ext[i].b);
	}
	memcpy(b + (at - lo), src, len);
	if (i1 == i0) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct sink_ext *e = realloc(s->ext, cap * sizeof(*e));
			if (!e) {
				free(b);
				return -ENOMEM;
			}
			s->ext = e;
			s->cap = cap;
		}
		memmove(s->ext + i0 + 1, s->ext + i0, (s->n - i0) * sizeof(*s->ext));
		s->n++;
	} else {
		memmove(s->ext + i0 + 1, s->ext + i1, (s->n - i1) * sizeof(*s->ext));
		s->n -= i1 - i0 - 1;
	}
	s->ext[i0] = (struct sink_ext){lo, hi - lo, b};
	return 0;
}

static void sink_read(const struct h5_sink *s, uint64_t at, uint8_t *dst, size_t len)
{
	memset(dst, 0, len);
	for (size_t i = 0; i < s->n; i++)
		dl_copy_overlap(dst, at, len, s->ext[i].b, s->ext[i].at, s->ext[i].len);
}

static H5FD_t *drv_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
	const struct drv_fapl *fa = H5Pget_driver_info(fapl);
	struct drv_file *f;

	(void)name;
	(void)maxaddr;
	/* Nothing exists to be opened: only creation succeeds. */
	if (!fa || !fa->sink || !(flags & H5F_ACC_CREAT) || !(flags & H5F_ACC_RDWR))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->sink = fa->sink;
	sink_reset(f->sink);
	return &f->pub;
}

static herr_t drv_close(H5FD_t *file)
{
	free(file);
	return 0;
}

static herr_t drv_query(const H5FD_t *file, unsigned long *flags)
{
	(void)file;
	if (flags)
		*flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
			 H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;
	return 0;
}

static haddr_t drv_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
	(void)type;
	return ((const struct drv_file *)file)->eoa;
}

static herr_t drv_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
	(void)type;
	if (addr > DRV_MAXADDR)
		return -1;
	((struct drv_file *)file)->eoa = addr;
	return 0;
}

static haddr_t drv_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
	(void)type;
	return ((const struct drv_file *)file)->eof;
}

static herr_t drv_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
		       void *buf)
{
	struct drv_file *f = (struct drv_file *)file;

	(void)type;
	(void)dxpl;
	if (addr > DRV_MAXADDR || size > DRV_MAXADDR - addr)
		return -1;
	sink_read(f->sink, addr, buf, size);
	return 0;
}

static herr_t drv_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
			const void *buf)
{
	struct drv_file *f = (struct drv_file *)file;
	int ret;

	(void)dxpl;
	if (addr > DRV_MAXADDR || size > DRV_MAXADDR - addr)
		return -1;
	if (type != H5FD_MEM_DRAW) {
		ret = sink_write(f->sink, addr, buf, size);
		if (ret) {
			f->sink->err = ret;
			return -1;
		}
	} else {
		f->sink->raw_at = addr;
		f->sink->raw_len = size;
		f->sink->raw_writes++;
	}
	if (addr + size > f->eof)
		f->eof = addr + size;
	return 0;
}

static herr_t drv_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
	struct drv_file *f = (struct drv_file *)file;

	(void)dxpl;
	(void)closing;
	f->eof = f->eoa;
	f->sink->eof = f->eoa;
	return 0;
}

/* H5FDregister copies the class: this table stays constant. */
static const H5FD_class_t drv_class = {
#ifdef H5FD_CLASS_VERSION
    /* libhdf5 >= 1.13 checks these; user driver values start at 256. */
    .version = H5FD_CLASS_VERSION,
    .value = (H5FD_class_value_t)0x646c,
#endif
    .name = "dliofs_sparse",
    .maxaddr = DRV_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .fapl_size = sizeof(struct drv_fapl),
    .open = drv_open,
    .close = drv_close,
    .query = drv_query,
    .get_eoa = drv_get_eoa,
    .set_eoa = drv_set_eoa,
    .get_eof = drv_get_eof,
    .read = drv_read,
    .write = drv_write,
    .truncate = drv_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

/* ---------------------------------------------------------------------------
 * Shape keys and templates. */

/* Everything the metadata depends on; zero-padded so it compares with memcmp. */
struct h5_shape {
	uint32_t layout, dtype, comp, level;
	uint32_t ndsets, rank, chunked, pad;
	uint64_t dims[H5_RANK_MAX]; /* each data dataset: (samples, *sample shape) */
	uint64_t chunk[H5_RANK_MAX];
};

enum seg_kind {
	SEG_ZERO,   /* free space inside the file */
	SEG_META,   /* template bytes: meta[arg ..] */
	SEG_DATA,   /* contiguous data dataset `dset` */
	SEG_CHUNKS, /* chunks arg, arg + 1, ... of dataset `dset`, back to back */
	SEG_LABELS, /* labels (zeros) or y (class ids) */
};

struct h5_seg {
	uint64_t at, len;
	uint64_t arg;
	uint32_t kind, dset;
};

struct h5_tmpl {
	struct h5_shape sh;
	uint64_t hash;
	uint64_t eof;
	uint64_t chunk_raw;    /* uncompressed bytes of one chunk */
	uint64_t chunk_stored; /* bytes of one chunk in the file */
	struct h5_seg *seg;    /* sorted, covering [0, eof) */
	size_t nseg;
	uint8_t *meta;
	size_t bytes; /* memory held, for the cache budget */
	unsigned refs;
	uint64_t used;
};

struct h5_state {
	pthread_mutex_t lib_lock;   /* every libhdf5 call; taken before cache_lock */
	pthread_mutex_t cache_lock; /* slot[], refs, tick, counters below */
	hid_t drv;		    /* our driver, registered on first build */
	unsigned n, max;
	struct h5_tmpl *slot[DL_H5_CACHE_MAX + 1]; /* + 1: insert, then evict */
	uint64_t tick, bytes;
	struct dl_h5_stats stats; /* builds/lib_calls/build_ms under lib_lock */
};

static uint64_t shape_hash(const struct h5_shape *sh)
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

static uint64_t gz_stored(uint64_t n)
{
	return GZ_HDR + n + GZ_BLK_HDR * ((n + GZ_BLOCK - 1) / GZ_BLOCK) + GZ_TAIL;
}

/* The shape key of f (per-sample shape already in f->dims). Chunk sizes larger
 * than the dataset are clipped to it, as h5py requires, so that a chunk shape
 * fits every per-file shape of a size distribution. */
static int shape_of(const struct dl_file *f, struct h5_shape *sh, uint64_t *nchunks)
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
			cb = gz_stored(cb);
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

static void tmpl_free(struct h5_tmpl *t)
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

	sink_read(s, 0, sb, sizeof(sb));
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

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Build the template of sh. Caller holds lib_lock. */
static int tmpl_build(struct h5_state *st, const struct h5_shape *sh, uint64_t nchunks,
		      struct h5_tmpl **out)
{
	struct h5_sink sink = {0};
	struct drv_fapl fa = {&sink};
	struct h5_tmpl *t = NULL;
	struct region *r = NULL;
	size_t nr = 0, nreg;
	hid_t fapl = -1, fcpl = -1, file = -1;
	void *zero = MAP_FAILED;
	double t0 = now_ms();
	int ret = -ENOMEM;

	if (st->drv < 0) {
		st->drv = H5FDregister(&drv_class);
		if (st->drv < 0)
			return -EIO;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->sh = *sh;
	t->hash = shape_hash(sh);
	t->chunk_raw = dl_dtype_size(sh->dtype);
	for (unsigned i = 0; i < sh->rank; i++)
		t->chunk_raw *= sh->chunked ? sh->chunk[i] : sh->dims[i];
	t->chunk_stored = sh->comp == DL_COMP_GZIP ? gz_stored(t->chunk_raw) : t->chunk_raw;
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
	if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 || H5Pset_driver(fapl, st->drv, &fa) < 0 ||
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
	sink_reset(&sink);
	st->stats.builds++;
	st->stats.build_ms += now_ms() - t0;
	if (ret) {
		tmpl_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

/* ---------------------------------------------------------------------------
 * The cache: at most max templates and DL_H5_CACHE_BUDGET bytes, least
 * recently used out first. A template leaves the table when evicted and is
 * freed by whoever drops its last reference. */

static struct h5_tmpl *cache_find(struct h5_state *st, const struct h5_shape *sh, uint64_t hash)
{
	for (unsigned i = 0; i < st->n; i++) {
		struct h5_tmpl *t = st->slot[i];
		if (t->hash == hash && memcmp(&t->sh, sh, sizeof(*sh)) == 0) {
			t->refs++;
			t->used = ++st->tick;
			st->stats.hits++;
			return t;
		}
	}
	return NULL;
}

static void tmpl_unref(struct h5_state *st, struct h5_tmpl *t)
{
	int last;

	pthread_mutex_lock(&st->cache_lock);
	last = --t->refs == 0;
	pthread_mutex_unlock(&st->cache_lock);
	if (last)
		tmpl_free(t);
}

/* Evict least recently used templates (never `keep`) until the table is
 * within its limits; returns how many lost their last reference (to free once
 * the lock is dropped). */
static unsigned cache_trim(struct h5_state *st, const struct h5_tmpl *keep, struct h5_tmpl **dead)
{
	unsigned ndead = 0;

	while (st->n > 0 && (st->n > st->max || st->bytes > DL_H5_CACHE_BUDGET)) {
		unsigned v = st->n;
		for (unsigned i = 0; i < st->n; i++)
			if (st->slot[i] != keep &&
			    (v == st->n || st->slot[i]->used < st->slot[v]->used))
				v = i;
		if (v == st->n)
			break;
		struct h5_tmpl *e = st->slot[v];
		st->slot[v] = st->slot[--st->n];
		st->bytes -= e->bytes;
		if (--e->refs == 0)
			dead[ndead++] = e;
	}
	return ndead;
}

/* Insert t with one reference for the table and one for the caller. */
static unsigned cache_insert(struct h5_state *st, struct h5_tmpl *t, struct h5_tmpl **dead)
{
	t->refs = 2;
	t->used = ++st->tick;
	st->slot[st->n++] = t;
	st->bytes += t->bytes;
	return cache_trim(st, t, dead);
}

/* A referenced template of f's shape, built if needed. */
static int tmpl_get(struct h5_state *st, const struct h5_shape *sh, uint64_t nchunks,
		    struct h5_tmpl **out)
{
	struct h5_tmpl *dead[DL_H5_CACHE_MAX + 1];
	uint64_t hash = shape_hash(sh);
	struct h5_tmpl *t;
	H5E_auto2_t efunc = NULL;
	void *edata = NULL;
	unsigned ndead = 0;
	int ret = 0;

	pthread_mutex_lock(&st->cache_lock);
	t = cache_find(st, sh, hash);
	pthread_mutex_unlock(&st->cache_lock);
	if (t) {
		*out = t;
		return 0;
	}
	pthread_mutex_lock(&st->lib_lock);
	st->stats.lib_calls++;
	/* Another thread may have built it while we waited. */
	pthread_mutex_lock(&st->cache_lock);
	t = cache_find(st, sh, hash);
	pthread_mutex_unlock(&st->cache_lock);
	if (!t) {
		/* Failures are reported as errno values, not on stderr. */
		H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		ret = tmpl_build(st, sh, nchunks, &t);
		H5Eclear2(H5E_DEFAULT);
		H5Eset_auto2(H5E_DEFAULT, efunc, edata);
		if (ret == 0) {
			pthread_mutex_lock(&st->cache_lock);
			ndead = cache_insert(st, t, dead);
			pthread_mutex_unlock(&st->cache_lock);
		}
	}
	pthread_mutex_unlock(&st->lib_lock);
	for (unsigned i = 0; i < ndead; i++)
		tmpl_free(dead[i]);
	if (ret)
		return ret;
	*out = t;
	return 0;
}

static int h5_state_new(void **out)
{
	struct h5_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lib_lock, NULL);
	pthread_mutex_init(&st->cache_lock, NULL);
	st->drv = -1;
	st->max = DL_H5_CACHE_MAX;
	*out = st;
	return 0;
}

static void h5_state_free(void *p)
{
	struct h5_state *st = p;

	if (!st)
		return;
	for (unsigned i = 0; i < st->n; i++)
		tmpl_free(st->slot[i]);
	if (st->drv >= 0) {
		pthread_mutex_lock(&st->lib_lock);
		H5FDunregister(st->drv);
		pthread_mutex_unlock(&st->lib_lock);
	}
	pthread_mutex_destroy(&st->cache_lock);
	pthread_mutex_destroy(&st->lib_lock);
	free(st);
}

int dl_h5_stats(struct dl_fmt_ctx *ctx, struct dl_h5_stats *out)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);

	if (!st)
		return -ENOENT;
	pthread_mutex_lock(&st->lib_lock);
	pthread_mutex_lock(&st->cache_lock);
	*out = st->stats;
	out->cached = st->n;
	out->cached_bytes = st->bytes;
	pthread_mutex_unlock(&st->cache_lock);
	pthread_mutex_unlock(&st->lib_lock);
	return 0;
}

int dl_h5_set_cache_max(struct dl_fmt_ctx *ctx, unsigned max)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);
	struct h5_tmpl *dead[DL_H5_CACHE_MAX + 1];
	unsigned ndead;

	if (!st)
		return -ENOENT;
	if (max == 0 || max > DL_H5_CACHE_MAX)
		max = DL_H5_CACHE_MAX;
	pthread_mutex_lock(&st->cache_lock);
	st->max = max;
	ndead = cache_trim(st, NULL, dead);
	pthread_mutex_unlock(&st->cache_lock);
	for (unsigned i = 0; i < ndead; i++)
		tmpl_free(dead[i]);
	return 0;
}

/* ---------------------------------------------------------------------------
 * Serving. */

/* f with the key whose npy data stream is data dataset d's content. */
static struct dl_file data_view(const struct dl_file *f, unsigned d)
{
	struct dl_file v = *f;

	v.key = dl_file_stream(f, DL_H5_REGION_DATA + d);
	return v;
}

/* Data stream bytes [soff, soff + n) of v into p. (The generator writes at
 * any alignment of p and soff at full speed, so chunk addresses and
 * stored-block payloads need no bounce buffer.) */
static void fill_data(const struct dl_file *v, uint8_t *p, uint64_t soff, size_t n)
{
	dl_npy_fill_data(v, p, soff, n);
}

static void fill_labels(const struct dl_file *f, const struct h5_tmpl *t, uint8_t *buf,
			uint64_t rel, size_t len)
{
	uint64_t key = dl_file_stream(f, DL_H5_REGION_Y);

	if (t->sh.layout == DL_H5_DLIO) {
		memset(buf, 0, len); /* DLIO's labels: int64 zeros */
		return;
	}
	while (len) {
		uint64_t e = rel / 8;
		size_t in = (size_t)(rel % 8), n = 8 - in < len ? 8 - in : len;
		uint8_t v[8];
		dl_put_le64(v, dl_prng_below(key, e, DL_H5_Y_CLASSES));
		memcpy(buf, v + in, n);
		buf += n;
		rel += n;
		len -= n;
	}
}

/* Adler-32 of chunk c's payload (stream bytes [c * raw, (c + 1) * raw)). */
static uint32_t chunk_adler(struct dl_fmt_ctx *ctx, const struct dl_file *f,
			    const struct h5_tmpl *t, unsigned d, uint64_t c)
{
	uint64_t k2 = dl_key3(DL_H5_DCACHE_TAG ^ t->hash, d, c);
	struct dl_file v = data_view(f, d);
	uint8_t piece[GZ_PIECE];
	uint32_t a = 1; /* Adler-32 of nothing */

	if (dl_dcache_get(ctx, f->key, k2, &a) == 0)
		return a;
	for (uint64_t o = 0; o < t->chunk_raw; o += GZ_PIECE) {
		size_t n = t->chunk_raw - o < GZ_PIECE ? (size_t)(t->chunk_raw - o) : GZ_PIECE;
		dl_npy_fill_data(&v, piece, c * t->chunk_raw + o, n);
		a = dl_adler32(a, piece, n);
	}
	dl_dcache_put(ctx, f->key, k2, a);
	return a;
}

/* Key of the running Adler-32 of chunk c's payload up to stream offset
 * `at` (a sequential reader's previous request ended there). */
static uint64_t part_key(const struct h5_tmpl *t, unsigned d, uint64_t c, uint64_t at)
{
	return dl_key3(dl_key3(DL_H5_PART_TAG ^ t->hash, d, c), at, 0);
}

/* Bytes [in, in + len) of chunk c stored as a zlib stream of stored blocks:
 * 78 01, then per block of up to 65535 payload bytes BFINAL|00, LEN, ~LEN and
 * the payload, then the Adler-32 (big-endian). The Adler-32 is taken from the
 * payload bytes the request holds when it holds them from the start, or
 * continues the running value the previous request of a sequential reader
 * left at its end: chunks larger than a request (2 MiB chunks, 1 MiB reads)
 * then cost no second generation pass when their trailer is read. */
static void serve_gz_chunk(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct h5_tmpl *t,
			   unsigned d, uint64_t c, uint8_t *buf, uint64_t in, size_t len)
{
	static const uint8_t zhdr[GZ_HDR] = {0x78, 0x01};
	uint64_t n = t->chunk_raw, nb = (n + GZ_BLOCK - 1) / GZ_BLOCK;
	uint64_t tail = GZ_HDR + n + GZ_BLK_HDR * nb, end = in + len;
	const uint64_t pk = dl_key2(f->key, DL_H5_PART_TAG);
	struct dl_file v = data_view(f, d);
	/* run: s holds the Adler-32 of the payload before this request's. */
	uint32_t s = 1; /* Adler-32 of nothing */
	int run = in <= GZ_HDR + GZ_BLK_HDR ||
		  (in < tail && dl_dcache_get(ctx, pk, part_key(t, d, c, in), &s) == 0);

	dl_copy_overlap(buf, in, len, zhdr, 0, GZ_HDR);
	if (end > GZ_HDR && in < tail) {
		uint64_t b = in > GZ_HDR ? (in - GZ_HDR) / (GZ_BLOCK + GZ_BLK_HDR) : 0;
		for (; b < nb; b++) {
			uint64_t at = GZ_HDR + b * (GZ_BLOCK + GZ_BLK_HDR);
			uint64_t blen = n - b * GZ_BLOCK < GZ_BLOCK ? n - b * GZ_BLOCK : GZ_BLOCK;
			uint64_t lo = at + GZ_BLK_HDR, hi = lo + blen;
			uint8_t h[GZ_BLK_HDR];
			if (at >= end)
				break;
			h[0] = b + 1 == nb;
			dl_put_le16(h + 1, (uint16_t)blen);
			dl_put_le16(h + 3, (uint16_t)~blen);
			dl_copy_overlap(buf, in, len, h, at, GZ_BLK_HDR);
			if (lo < in)
				lo = in;
			if (hi > end)
				hi = end;
			if (lo < hi) {
				uint8_t *p = buf + (lo - in);
				fill_data(&v, p, c * n + b * GZ_BLOCK + (lo - at - GZ_BLK_HDR),
					  (size_t)(hi - lo));
				if (run)
					s = dl_adler32(s, p, (size_t)(hi - lo));
			}
		}
	}
	const uint64_t k2 = dl_key3(DL_H5_DCACHE_TAG ^ t->hash, d, c);
	if (run && end >= tail)
		dl_dcache_put(ctx, f->key, k2, s); /* the whole payload went by */
	else if (run)
		dl_dcache_put(ctx, pk, part_key(t, d, c, end), s);
	if (end > tail) {
		uint32_t a;
		uint8_t be[GZ_TAIL];
		if (run)
			a = s;
		else
			a = chunk_adler(ctx, f, t, d, c);
		be[0] = (uint8_t)(a >> 24);
		be[1] = (uint8_t)(a >> 16);
		be[2] = (uint8_t)(a >> 8);
		be[3] = (uint8_t)a;
		dl_copy_overlap(buf, in, len, be, tail, GZ_TAIL);
	}
}

static void serve_chunks(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct h5_tmpl *t,
			 const struct h5_seg *sg, uint8_t *buf, uint64_t rel, size_t len)
{
	uint64_t stored = t->chunk_stored;

	if (t->sh.comp != DL_COMP_GZIP) {
		/* A run of chunks c0, c0 + 1, ... is one stretch of the stream. */
		struct dl_file v = data_view(f, sg->dset);
		fill_data(&v, buf, sg->arg * t->chunk_raw + rel, len);
		return;
	}
	while (len) {
		uint64_t j = rel / stored, in = rel % stored;
		size_t n = stored - in < len ? (size_t)(stored - in) : len;
		serve_gz_chunk(ctx, f, t, sg->dset, sg->arg + j, buf, in, n);
		buf += n;
		rel += n;
		len -= n;
	}
}

static void serve(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct h5_tmpl *t,
		  uint8_t *buf, uint64_t off, size_t len)
{
	size_t lo = 0, hi = t->nseg;

	/* Last segment starting at or before off. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->seg[mid].at <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = lo; len && i < t->nseg; i++) {
		const struct h5_seg *sg = &t->seg[i];
		uint64_t rel = off - sg->at;
		size_t n = sg->len - rel < len ? (size_t)(sg->len - rel) : len;
		struct dl_file v;

		switch (sg->kind) {
		case SEG_ZERO:
			memset(buf, 0, n);
			break;
		case SEG_META:
			memcpy(buf, t->meta + sg->arg + rel, n);
			break;
		case SEG_DATA:
			v = data_view(f, sg->dset);
			fill_data(&v, buf, rel, n);
			break;
		case SEG_CHUNKS:
			serve_chunks(ctx, f, t, sg, buf, rel, n);
			break;
		case SEG_LABELS:
			fill_labels(f, t, buf, rel, n);
			break;
		}
		buf += n;
		off += n;
		len -= n;
	}
}

/* ---------------------------------------------------------------------------
 * Format ops. */

/* aux[0]: shape hash of the template (informational). */
static int h5_layout(struct dl_file *f)
{
	struct h5_state *st;
	struct h5_shape sh;
	struct h5_tmpl *t;
	uint64_t nchunks;
	int ret;

	if (f->part != 0)
		return -ENOENT;
	st = f->ctx ? dl_fmt_state(f->ctx, DL_FMT_HDF5) : NULL;
	if (!st)
		return -EINVAL;
	ret = dl_npy_sample_shape(f);
	if (ret)
		return ret;
	ret = shape_of(f, &sh, &nchunks);
	if (ret)
		return ret;
	ret = tmpl_get(st, &sh, nchunks, &t);
	if (ret)
		return ret;
	f->size = t->eof;
	f->aux[0] = t->hash;
	tmpl_unref(st, t);
	return 0;
}

static int h5_read(struct dl_fmt_ctx *ctx, const struct dl_file *f, uint8_t *buf, uint64_t off,
		   size_t len)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);
	struct h5_shape sh;
	struct h5_tmpl *t;
	uint64_t nchunks;
	int ret;

	if (!st)
		return -EINVAL;
	ret = shape_of(f, &sh, &nchunks);
	if (ret)
		return ret;
	/* Usually a cache hit; rebuilt (same bytes) if evicted since layout. */
	ret = tmpl_get(st, &sh, nchunks, &t);
	if (ret)
		return ret;
	if (t->eof != f->size)
		ret = -EIO;
	else
		serve(ctx, f, t, buf, off, len);
	tmpl_unref(st, t);
	return ret;
}

int dl_h5_meta_ranges(struct dl_fmt_ctx *ctx, const struct dl_file *f,
		      void (*fn)(void *arg, uint64_t at, uint64_t len), void *arg)
{
	struct h5_state *st = dl_fmt_state(ctx, DL_FMT_HDF5);
	struct h5_shape sh;
	struct h5_tmpl *t;
	uint64_t nchunks;
	int ret;

	if (!st)
		return -EINVAL;
	ret = shape_of(f, &sh, &nchunks);
	if (ret == 0)
		ret = tmpl_get(st, &sh, nchunks, &t);
	if (ret)
		return ret;
	for (size_t i = 0; i < t->nseg; i++)
		if (t->seg[i].kind == SEG_META)
			fn(arg, t->seg[i].at, t->seg[i].len);
	tmpl_unref(st, t);
	return 0;
}

const struct dl_format_ops dl_fmt_hdf5_ops = {
    .id = DL_FMT_HDF5,
    .name = "hdf5",
    .dlio_name = "hdf5",
    .ext = "hdf5",
    .example = "shape: [16, 16], dtype: float32, samples_per_file: 4, "
               "hdf5: {chunks: [1, 16, 16]}, compression: gzip",
    .features = DL_FF_SHAPE,
    .comps = (const struct dl_comp_use[]){{DL_COMP_GZIP, "deflate chunks"}},
    .ncomps = 1,
    .dlio_comps = 1u << DL_COMP_GZIP,
    .params = dl_h5_param_table,
    .nparams = 1,
    .check = dl_h5_check,
    .copies = dl_h5_copies,
    .nparts = 1,
    .read_hints = {.plan = DL_PLAN_HYPERSLAB, .batch = 64, .read_threads = 4},
    .layout = h5_layout,
    .read = h5_read,
    .state_new = h5_state_new,
    .state_free = h5_state_free,
};
