/* HDF5 format (docs/formats.md 5): the bytes we serve are opened and read back by
 * libhdf5 itself (H5Fopen, H5Dread, chunk info), and, for every config, must be
 * byte-identical to the file libhdf5 writes on disk (sec2 driver) when handed
 * the data it read back from ours. Also: slices equal full reads, template
 * reuse costs no libhdf5 call, big files lay out without allocating their
 * size, concurrent readers with a tiny template cache agree with one thread.
 *
 * `test_hdf5 --bench` prints the template build cost and read throughput. */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "dliofs/clock.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "hdf5_i.h"
#include "tap.h"

struct cfg {
	const char *name;
	enum dl_hdf5_layout layout;
	unsigned dsets;
	enum dl_dtype dt;
	uint64_t samples;
	unsigned nd;
	uint64_t dims[4];
	uint64_t mean; /* sample_size when nd == 0 */
	unsigned cnd;
	uint64_t chunk[5];
	int gzip;
};

static const struct cfg CFGS[] = {
    {"contig_u8", DL_H5_DLIO, 1, DL_DT_UINT8, 4, 2, {64, 64}, 0, 0, {0}, 0},
    {"dlio_k3_f32", DL_H5_DLIO, 3, DL_DT_FLOAT32, 5, 3, {8, 16, 3}, 0, 0, {0}, 0},
    {"plain_i64", DL_H5_PLAIN, 1, DL_DT_INT64, 6, 1, {100}, 0, 0, {0}, 0},
    {"sized_f32", DL_H5_DLIO, 1, DL_DT_FLOAT32, 3, 0, {0}, 10000, 0, {0}, 0},
    {"chunk_u8", DL_H5_DLIO, 1, DL_DT_UINT8, 7, 2, {50, 40}, 0, 3, {2, 16, 40}, 0},
    {"chunk_plain_i16", DL_H5_PLAIN, 1, DL_DT_INT16, 6, 1, {100}, 0, 2, {2, 30}, 0},
    {"gzip_u8", DL_H5_DLIO, 1, DL_DT_UINT8, 3, 2, {300, 300}, 0, 3, {1, 300, 300}, 1},
    {"gzip_k2_f16", DL_H5_DLIO, 2, DL_DT_FLOAT16, 7, 2, {200, 300}, 0, 3, {3, 100, 300}, 1},
    {"gzip_edge_i64", DL_H5_DLIO, 1, DL_DT_INT64, 5, 2, {33, 17}, 0, 3, {2, 8, 9}, 1},
    {"gzip_plain_f64", DL_H5_PLAIN, 1, DL_DT_FLOAT64, 4, 3, {10, 20, 3}, 0, 4, {4, 10, 20, 3}, 1},
    {"chunk_clip_u32", DL_H5_DLIO, 2, DL_DT_UINT32, 3, 2, {10, 10}, 0, 3, {8, 64, 64}, 0},
    {"one_sample_i8", DL_H5_DLIO, 1, DL_DT_INT8, 1, 3, {5, 7, 9}, 0, 0, {0}, 0},
    {"many_dsets_u16", DL_H5_DLIO, 12, DL_DT_UINT16, 2, 2, {9, 9}, 0, 0, {0}, 0},
    {"gzip_bigchunk_u8", DL_H5_DLIO, 1, DL_DT_UINT8, 2, 2, {400, 400}, 0, 3, {2, 400, 400}, 1},
};
#define NCFG (sizeof(CFGS) / sizeof(CFGS[0]))

static double now(void)
{
	return (double)dl_mono_ns() * 1e-9;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static struct dl_dataset mkds(const struct cfg *c)
{
	struct dl_dataset ds;

	memset(&ds, 0, sizeof(ds));
	snprintf(ds.name, sizeof(ds.name), "%s", c->name);
	ds.id = dl_key2(0x68356473, (uint64_t)strlen(c->name) * 131 + (uint64_t)c->name[0]);
	ds.format = DL_FMT_HDF5;
	ds.files[DL_SPLIT_TRAIN] = 8;
	ds.files[DL_SPLIT_VALID] = 1;
	ds.samples_per_file = c->samples;
	ds.sample_size = (struct dl_dist){c->mean, 0, c->mean, c->mean};
	ds.dtype = c->dt;
	ds.ndims = c->nd;
	memcpy(ds.dims, c->dims, sizeof(c->dims));
	snprintf(ds.file_prefix, sizeof(ds.file_prefix), "img");
	DL_DS_PARAMS(&ds, struct dl_h5_params)->layout = c->layout;
	DL_DS_PARAMS(&ds, struct dl_h5_params)->dsets = c->dsets;
	DL_DS_PARAMS(&ds, struct dl_h5_params)->chunk_ndims = c->cnd;
	memcpy(DL_DS_PARAMS(&ds, struct dl_h5_params)->chunk, c->chunk, sizeof(c->chunk));
	ds.compression = c->gzip ? DL_COMP_GZIP : DL_COMP_NONE;
	ds.compression_level = 4;
	return ds;
}

static uint8_t *full_read(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t *b = malloc(f->size);

	if (b && dl_file_read(ctx, f, b, 0, f->size) != 0) {
		free(b);
		b = NULL;
	}
	return b;
}

static int write_tmp(const uint8_t *b, uint64_t n, char *path, size_t cap)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int fd;

	snprintf(path, cap, "%s/dliofs-h5test-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	for (uint64_t o = 0; o < n;) {
		ssize_t w = write(fd, b + o, n - o);
		if (w <= 0) {
			close(fd);
			return -EIO;
		}
		o += (uint64_t)w;
	}
	close(fd);
	return 0;
}

static uint8_t *slurp(const char *path, uint64_t *n)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *b = NULL;
	long sz;

	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (sz = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0) {
		b = malloc((size_t)sz);
		if (b && fread(b, 1, (size_t)sz, fp) != (size_t)sz) {
			free(b);
			b = NULL;
		}
		*n = (uint64_t)sz;
	}
	fclose(fp);
	return b;
}

/* ---- what libhdf5 says about our file ---- */

static unsigned ndata(const struct cfg *c)
{
	return c->layout == DL_H5_DLIO ? (c->dsets ? c->dsets : 1) : 1;
}

static void dset_name(const struct cfg *c, unsigned d, char *buf, size_t n)
{
	if (c->layout == DL_H5_DLIO)
		snprintf(buf, n, "records_%u", d);
	else
		snprintf(buf, n, "x");
}

static void check_type(const struct cfg *c, hid_t t)
{
	unsigned isz = dl_dtype_size(c->dt);
	int is_float = c->dt == DL_DT_FLOAT16 || c->dt == DL_DT_FLOAT32 || c->dt == DL_DT_FLOAT64;

	CHECK(H5Tget_size(t) == isz, "%s: type size %zu", c->name, H5Tget_size(t));
	CHECK(H5Tget_order(t) == H5T_ORDER_LE, "%s: byte order", c->name);
	if (is_float) {
		size_t spos, epos, esize, mpos, msize;
		CHECK(H5Tget_class(t) == H5T_FLOAT, "%s: float class", c->name);
		if (c->dt == DL_DT_FLOAT16) {
			/* h5py maps exactly this layout to numpy float16. */
			CHECK(H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) == 0 &&
				  spos == 15 && epos == 10 && esize == 5 && mpos == 0 &&
				  msize == 10 && H5Tget_ebias(t) == 15,
			      "%s: IEEE half fields", c->name);
		} else {
			CHECK(H5Tequal(t, c->dt == DL_DT_FLOAT32 ? H5T_IEEE_F32LE
								 : H5T_IEEE_F64LE) > 0,
			      "%s: IEEE type", c->name);
		}
	} else {
		int sgn = c->dt == DL_DT_INT8 || c->dt == DL_DT_INT16 || c->dt == DL_DT_INT32 ||
			  c->dt == DL_DT_INT64;
		CHECK(H5Tget_class(t) == H5T_INTEGER, "%s: integer class", c->name);
		CHECK(H5Tget_sign(t) == (sgn ? H5T_SGN_2 : H5T_SGN_NONE), "%s: sign", c->name);
	}
}

/* Values look like DLIO data: floats in [0, 1), integers random. */
static void check_values(const struct cfg *c, const uint8_t *a, uint64_t nelem)
{
	unsigned isz = dl_dtype_size(c->dt);
	int bad = 0, seen[256] = {0}, distinct = 0;

	for (uint64_t e = 0; e < nelem; e++) {
		const uint8_t *p = a + e * isz;
		double v = 0;
		if (c->dt == DL_DT_FLOAT32) {
			float x;
			memcpy(&x, p, 4);
			v = x;
		} else if (c->dt == DL_DT_FLOAT64) {
			memcpy(&v, p, 8);
		} else if (c->dt == DL_DT_FLOAT16) {
			uint16_t h;
			memcpy(&h, p, 2);
			/* [0, 1): sign clear, exponent below 15 (bias 15). */
			v = (h & 0x8000) || ((h >> 10) & 0x1f) >= 15 ? -1 : 0.5;
		} else {
			if (!seen[p[0]]++)
				distinct++;
			continue;
		}
		if (!(v >= 0 && v < 1))
			bad++;
	}
	CHECK(bad == 0, "%s: %d values outside [0, 1)", c->name, bad);
	if (dl_dtype_size(c->dt) && c->dt != DL_DT_FLOAT16 && c->dt != DL_DT_FLOAT32 &&
	    c->dt != DL_DT_FLOAT64 && nelem >= 2000)
		CHECK(distinct > 200, "%s: only %d distinct low bytes", c->name, distinct);
}

/* Compare chunk bytes (row-major inside the chunk) with the in-range elements
 * of the whole-dataset read `all`. */
static int chunk_matches(int rank, const hsize_t *dims, const hsize_t *cdims, const hsize_t *off,
			 const uint8_t *chunk, const uint8_t *all, unsigned isz)
{
	uint64_t n = 1;

	for (int i = 0; i < rank; i++)
		n *= cdims[i];
	for (uint64_t e = 0; e < n; e++) {
		uint64_t rem = e, lin = 0;
		hsize_t g[H5S_MAX_RANK];
		int in = 1;
		for (int i = rank - 1; i >= 0; i--) {
			g[i] = off[i] + rem % cdims[i];
			rem /= cdims[i];
			if (g[i] >= dims[i])
				in = 0;
		}
		if (!in)
			continue;
		for (int i = 0; i < rank; i++)
			lin = lin * dims[i] + g[i];
		if (memcmp(chunk + e * isz, all + lin * isz, isz) != 0)
			return 0;
	}
	return 1;
}

/* One data dataset: shape, type, layout, and values against our bytes. */
static void check_data_dset(const struct cfg *c, const struct dl_file *f, hid_t file, unsigned d,
			    const uint8_t *ours)
{
	char name[32];
	hid_t ds, sp, ty, dcpl;
	hsize_t dims[H5S_MAX_RANK];
	unsigned isz = dl_dtype_size(c->dt);
	uint64_t nelem = 1;
	uint8_t *all;
	int rank;

	dset_name(c, d, name, sizeof(name));
	ds = H5Dopen2(file, name, H5P_DEFAULT);
	CHECK(ds >= 0, "%s: open %s", c->name, name);
	if (ds < 0)
		return;
	sp = H5Dget_space(ds);
	ty = H5Dget_type(ds);
	dcpl = H5Dget_create_plist(ds);
	rank = H5Sget_simple_extent_dims(sp, dims, NULL);
	CHECK(rank == (int)f->ndims + 1, "%s: rank %d", c->name, rank);
	CHECK(rank > 0 && dims[0] == c->samples, "%s: %s has %llu samples", c->name, name,
	      (unsigned long long)dims[0]);
	for (int i = 1; i < rank && i <= (int)f->ndims; i++)
		CHECK(dims[i] == f->dims[i - 1], "%s: dim %d", c->name, i);
	if (c->nd)
		for (unsigned i = 0; i < c->nd; i++)
			CHECK(f->dims[i] == c->dims[i], "%s: sample dim %u", c->name, i);
	for (int i = 0; i < rank; i++)
		nelem *= dims[i];
	check_type(c, ty);
	all = malloc(nelem * isz);
	CHECK(H5Dread(ds, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0, "%s: H5Dread %s", c->name,
	      name);
	check_values(c, all, nelem);
	if (!c->cnd) {
		haddr_t a = H5Dget_offset(ds);
		uint8_t *range = malloc(nelem * isz);
		CHECK(H5Pget_layout(dcpl) == H5D_CONTIGUOUS, "%s: contiguous", c->name);
		CHECK(a != HADDR_UNDEF && a + nelem * isz <= f->size, "%s: offset", c->name);
		CHECK(memcmp(all, ours + a, nelem * isz) == 0, "%s: %s values != bytes at %llu",
		      c->name, name, (unsigned long long)a);
		/* The same range served alone. */
		CHECK(dl_file_read(f->ctx, f, range, a, nelem * isz) == 0 &&
			  memcmp(range, all, nelem * isz) == 0,
		      "%s: range read of %s", c->name, name);
		free(range);
	} else {
		hsize_t cdims[H5S_MAX_RANK], nchunks = 0, want = 1;
		uint64_t craw = isz;
		unsigned flags = 0, cdv[4];
		size_t ncd = 4;
		int bad = 0, nfilt;
		CHECK(H5Pget_layout(dcpl) == H5D_CHUNKED, "%s: chunked", c->name);
		CHECK(H5Pget_chunk(dcpl, rank, cdims) == rank, "%s: chunk rank", c->name);
		for (int i = 0; i < rank; i++) {
			uint64_t w = c->chunk[i] < dims[i] ? c->chunk[i] : dims[i];
			CHECK(cdims[i] == w, "%s: chunk dim %d = %llu", c->name, i,
			      (unsigned long long)cdims[i]);
			craw *= cdims[i];
			want *= (dims[i] + cdims[i] - 1) / cdims[i];
		}
		nfilt = H5Pget_nfilters(dcpl);
		CHECK(nfilt == (c->gzip ? 1 : 0), "%s: %d filters", c->name, nfilt);
		if (c->gzip && nfilt == 1)
			CHECK(H5Pget_filter2(dcpl, 0, &flags, &ncd, cdv, 0, NULL, NULL) ==
				  H5Z_FILTER_DEFLATE,
			      "%s: deflate filter", c->name);
		CHECK(H5Dget_num_chunks(ds, sp, &nchunks) >= 0 && nchunks == want,
		      "%s: %llu chunks", c->name, (unsigned long long)nchunks);
		uint8_t *raw = malloc(craw);
		for (hsize_t i = 0; i < nchunks; i++) {
			hsize_t off[H5S_MAX_RANK], size = 0;
			haddr_t addr = HADDR_UNDEF;
			unsigned mask = 1;
			if (H5Dget_chunk_info(ds, sp, i, off, &mask, &addr, &size) < 0 ||
			    mask != 0 || addr + size > f->size) {
				bad++;
				continue;
			}
			const uint8_t *p = ours + addr;
			if (c->gzip) {
				uLongf out = craw;
				uint64_t nb = (craw + 65534) / 65535;
				/* Stored blocks only: the size is fixed by the payload size. */
				if (size != 2 + craw + 5 * nb + 4 || p[0] != 0x78 || p[1] != 0x01 ||
				    uncompress(raw, &out, p, size) != Z_OK || out != craw) {
					bad++;
					continue;
				}
				p = raw;
			} else if (size != craw) {
				bad++;
				continue;
			}
			if (!chunk_matches(rank, dims, cdims, off, p, all, isz))
				bad++;
		}
		CHECK(bad == 0, "%s: %d of %llu chunks differ from H5Dread", c->name, bad,
		      (unsigned long long)nchunks);
		free(raw);
	}
	free(all);
	H5Pclose(dcpl);
	H5Tclose(ty);
	H5Sclose(sp);
	H5Dclose(ds);
}

static void check_labels(const struct cfg *c, hid_t file, const uint8_t *ours)
{
	const char *name = c->layout == DL_H5_DLIO ? "labels" : "y";
	hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
	hsize_t n = 0;
	int64_t *v;
	int bad = 0, distinct = 0;

	CHECK(ds >= 0, "%s: open %s", c->name, name);
	if (ds < 0)
		return;
	hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds);
	CHECK(H5Sget_simple_extent_ndims(sp) == 1, "%s: labels rank", c->name);
	H5Sget_simple_extent_dims(sp, &n, NULL);
	CHECK(n == c->samples, "%s: %llu labels", c->name, (unsigned long long)n);
	CHECK(H5Tequal(ty, H5T_STD_I64LE) > 0, "%s: labels int64", c->name);
	v = calloc(n, 8);
	CHECK(H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0, "%s: read %s",
	      c->name, name);
	for (hsize_t i = 0; i < n; i++) {
		if (c->layout == DL_H5_DLIO ? v[i] != 0 : (v[i] < 0 || v[i] >= DL_H5_Y_CLASSES))
			bad++;
		if (i > 0 && v[i] != v[0])
			distinct++;
	}
	CHECK(bad == 0, "%s: %d bad labels", c->name, bad);
	if (c->layout == DL_H5_PLAIN && n >= 4)
		CHECK(distinct > 0, "%s: y is constant", c->name);
	CHECK(memcmp(v, ours + H5Dget_offset(ds), n * 8) == 0, "%s: labels bytes", c->name);
	free(v);
	H5Tclose(ty);
	H5Sclose(sp);
	H5Dclose(ds);
}

/* The file libhdf5 writes through its default (sec2) driver with the same
 * creation properties, given the data it read back from ours: contiguous data
 * with H5Dwrite, chunks with H5Dwrite_chunk of the chunk bytes we serve, in the
 * same order. Returns its bytes. */
static uint8_t *libhdf5_rewrite(const struct cfg *c, const struct dl_file *f, hid_t src,
				const uint8_t *ours, uint64_t *n)
{
	char path[4096];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE), file;
	uint8_t *out = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/dliofs-h5ref-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	close(fd);
	H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	H5Pset_obj_track_times(fcpl, 0);
	file = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
	for (unsigned d = 0; d <= ndata(c) && file >= 0; d++) {
		char name[32];
		int labels = d == ndata(c);
		if (labels)
			snprintf(name, sizeof(name), "%s",
				 c->layout == DL_H5_DLIO ? "labels" : "y");
		else
			dset_name(c, d, name, sizeof(name));
		hid_t s = H5Dopen2(src, name, H5P_DEFAULT);
		hid_t ty = H5Dget_type(s), sp = H5Dget_space(s);
		hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
		hsize_t dims[H5S_MAX_RANK];
		int rank = H5Sget_simple_extent_dims(sp, dims, NULL);
		uint64_t nelem = 1;
		for (int i = 0; i < rank; i++)
			nelem *= dims[i];
		H5Pset_obj_track_times(dcpl, 0);
		H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
		if (!labels && c->cnd) {
			hsize_t cd[H5S_MAX_RANK];
			for (int i = 0; i < rank; i++)
				cd[i] = c->chunk[i] < dims[i] ? c->chunk[i] : dims[i];
			H5Pset_chunk(dcpl, rank, cd);
			if (c->gzip)
				H5Pset_deflate(dcpl, 4);
		} else {
			H5Pset_layout(dcpl, H5D_CONTIGUOUS);
			H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
		}
		hid_t o = H5Dcreate2(file, name, ty, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
		/* The DLIO layout names records_0 "records" too (DLIO 2.0.0 reads that). */
		if (!labels && d == 0 && c->layout == DL_H5_DLIO)
			H5Lcreate_hard(file, name, file, "records", H5P_DEFAULT, H5P_DEFAULT);
		if (!labels && c->cnd) {
			/* Same chunk order as a whole-dataset write: row-major grid. */
			hsize_t nch = 0;
			H5Dget_num_chunks(s, sp, &nch);
			for (hsize_t i = 0; i < nch; i++) {
				hsize_t off[H5S_MAX_RANK], size;
				haddr_t addr;
				unsigned mask;
				H5Dget_chunk_info(s, sp, i, off, &mask, &addr, &size);
				H5Dwrite_chunk(o, H5P_DEFAULT, 0, off, size, ours + addr);
			}
		} else {
			uint8_t *buf = malloc(nelem * H5Tget_size(ty));
			H5Dread(s, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
			H5Dwrite(o, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
			free(buf);
		}
		H5Dclose(o);
		H5Pclose(dcpl);
		H5Sclose(sp);
		H5Tclose(ty);
		H5Dclose(s);
	}
	if (file >= 0 && H5Fclose(file) >= 0)
		out = slurp(path, n);
	H5Pclose(fapl);
	H5Pclose(fcpl);
	unlink(path);
	(void)f;
	return out;
}

static void test_configs(struct dl_fmt_ctx *ctx)
{
	for (size_t i = 0; i < NCFG; i++) {
		const struct cfg *c = &CFGS[i];
		struct dl_dataset ds = mkds(c);
		struct dl_file f;
		char path[4096];
		uint8_t *ours, *ref;
		uint64_t nref = 0;
		hid_t file;
		hsize_t fsize = 0;

		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 1, 0, &f) == 0, "%s: init", c->name);
		if (f.size == 0)
			continue;
		ours = full_read(ctx, &f);
		CHECK(ours != NULL, "%s: full read", c->name);
		if (!ours || write_tmp(ours, f.size, path, sizeof(path)) != 0) {
			free(ours);
			continue;
		}
		if (!c->nd) {
			/* DLIO's (d, d) from the sample size. */
			uint64_t d = 1;
			while ((d + 1) * (d + 1) * dl_dtype_size(c->dt) <= c->mean)
				d++;
			CHECK(f.ndims == 2 && f.dims[0] == d && f.dims[1] == d &&
				  f.sample_bytes == d * d * dl_dtype_size(c->dt),
			      "%s: sample shape %llu", c->name, (unsigned long long)f.dims[0]);
		}
		file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
		CHECK(file >= 0, "%s: H5Fopen", c->name);
		if (file >= 0) {
			hsize_t nobj = 0;
			H5G_info_t gi;
			if (H5Gget_info(file, &gi) >= 0)
				nobj = gi.nlinks;
			/* + labels, + the "records" alias of records_0 in the DLIO layout */
			CHECK(nobj == ndata(c) + 1 + (c->layout == DL_H5_DLIO), "%s: %llu objects in /",
			      c->name,
			      (unsigned long long)nobj);
			CHECK(H5Fget_filesize(file, &fsize) >= 0 && fsize == f.size, "%s: size",
			      c->name);
			for (unsigned d = 0; d < ndata(c); d++)
				check_data_dset(c, &f, file, d, ours);
			check_labels(c, file, ours);
			ref = libhdf5_rewrite(c, &f, file, ours, &nref);
			CHECK(ref && nref == f.size && memcmp(ref, ours, f.size) == 0,
			      "%s: libhdf5's own file differs (%llu vs %llu bytes)", c->name,
			      (unsigned long long)nref, (unsigned long long)f.size);
			free(ref);
			H5Fclose(file);
		}
		unlink(path);
		free(ours);
	}
}

/* Any slice equals the same bytes of a full read, including ranges that end
 * inside a chunk's Adler-32 with a cold derived-value cache. */
static void test_slices(void)
{
	for (size_t i = 0; i < NCFG; i++) {
		const struct cfg *c = &CFGS[i];
		struct dl_dataset ds = mkds(c);
		struct dl_fmt_ctx *ctx;
		struct dl_file f;
		uint8_t *full, *b;
		int bad = 0;

		if (dl_fmt_ctx_new(0, 0, &ctx) != 0)
			continue;
		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_VALID, 0, 0, &f) == 0, "%s: init", c->name);
		/* Cold cache first: tails before the chunks they close. */
		b = malloc(f.size);
		for (uint64_t end = f.size; end > 0 && b;) {
			uint64_t len = 1 + dl_prng_below(f.key, end, 97);
			if (len > end)
				len = end;
			if (dl_file_read(ctx, &f, b + end - len, end - len, len) != 0)
				bad++;
			end -= len;
		}
		full = full_read(ctx, &f);
		CHECK(full && b && memcmp(full, b, f.size) == 0, "%s: backward pieces != full",
		      c->name);
		for (int k = 0; k < 300 && full; k++) {
			uint64_t off = dl_prng_below(0x5eed + i, 2 * k, f.size);
			uint64_t len =
			    1 + dl_prng_below(0x5eed + i, 2 * k + 1, k % 3 ? 300 : 70000);
			if (len > f.size - off)
				len = f.size - off;
			if (dl_file_read(ctx, &f, b, off, len) != 0 ||
			    memcmp(b, full + off, len) != 0)
				bad++;
		}
		CHECK(bad == 0, "%s: %d slices differ", c->name, bad);
		CHECK(dl_file_read(ctx, &f, b, f.size, 1) == -EINVAL, "%s: read past EOF", c->name);
		free(b);
		free(full);
		dl_fmt_ctx_free(ctx);
	}
}

/* Same shape, other file: no libhdf5 call, same metadata, other data; a new
 * context rebuilds byte-identical files. */
static void test_reuse(void)
{
	const struct cfg *c = &CFGS[1];
	struct dl_dataset ds = mkds(c);
	struct dl_fmt_ctx *ctx, *ctx2;
	struct dl_h5_stats s0, s1;
	struct dl_file f0, f1, g1;
	uint8_t *b0, *b1, *c1;

	if (dl_fmt_ctx_new(0, 0, &ctx) || dl_fmt_ctx_new(0, 0, &ctx2))
		return;
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f0) == 0, "init");
	b0 = full_read(ctx, &f0);
	CHECK(dl_h5_stats(ctx, &s0) == 0 && s0.builds == 1 && s0.lib_calls == 1,
	      "first file: %llu builds", (unsigned long long)s0.builds);
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 5, 0, &f1) == 0, "init 2");
	b1 = full_read(ctx, &f1);
	CHECK(dl_h5_stats(ctx, &s1) == 0 && s1.builds == 1 && s1.lib_calls == s0.lib_calls,
	      "second file of the same shape called libhdf5 (%llu builds, %llu lock sections)",
	      (unsigned long long)s1.builds, (unsigned long long)s1.lib_calls);
	CHECK(s1.hits >= s0.hits + 2, "cache hits %llu", (unsigned long long)s1.hits);
	CHECK(f0.size == f1.size && f0.aux[0] == f1.aux[0], "same template");
	CHECK(b0 && b1 && memcmp(b0, b1, 2048) == 0, "same metadata");
	CHECK(b0 && b1 && memcmp(b0, b1, f0.size) != 0, "different data");
	CHECK(dl_file_init(ctx2, &ds, DL_SPLIT_TRAIN, 5, 0, &g1) == 0, "init in ctx2");
	c1 = full_read(ctx2, &g1);
	CHECK(c1 && b1 && g1.size == f1.size && memcmp(c1, b1, f1.size) == 0,
	      "a rebuilt template serves the same bytes");
	/* Eviction: with one slot, alternating shapes rebuild and still agree. */
	struct dl_dataset ds2 = mkds(&CFGS[0]);
	struct dl_file h;
	dl_h5_set_cache_max(ctx2, 1);
	CHECK(dl_file_init(ctx2, &ds2, DL_SPLIT_TRAIN, 0, 0, &h) == 0, "other shape");
	uint8_t *c2 = full_read(ctx2, &g1);
	CHECK(c2 && c1 && memcmp(c2, c1, g1.size) == 0, "after eviction");
	CHECK(dl_h5_stats(ctx2, &s1) == 0 && s1.builds == 3 && s1.cached == 1,
	      "evicted and rebuilt: %llu builds, %llu cached", (unsigned long long)s1.builds,
	      (unsigned long long)s1.cached);
	free(c2);
	free(c1);
	free(b0);
	free(b1);
	dl_fmt_ctx_free(ctx2);
	dl_fmt_ctx_free(ctx);
}

/* Ranges to copy into a sparse file. */
struct ranges {
	uint64_t v[2 * 64];
	unsigned n;
};

static void add_range(void *arg, uint64_t at, uint64_t len)
{
	struct ranges *r = arg;

	if (r->n < 64) {
		r->v[2 * r->n] = at;
		r->v[2 * r->n + 1] = len;
		r->n++;
	}
}

/* Sparse copy of a big file holding only the given ranges, so that libhdf5
 * can open it without the disk holding its size. */
static int sparse_file(struct dl_fmt_ctx *ctx, const struct dl_file *f, const struct ranges *r,
		       char *path, size_t cap)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	uint8_t *b;
	int fd, ret = 0;

	snprintf(path, cap, "%s/dliofs-h5big-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)f->size) != 0)
		ret = -errno;
	for (unsigned i = 0; i < r->n && !ret; i++) {
		uint64_t at = r->v[2 * i], len = r->v[2 * i + 1];
		b = malloc(len);
		if (!b || dl_file_read(ctx, f, b, at, len) != 0 ||
		    pwrite(fd, b, len, (off_t)at) != (ssize_t)len)
			ret = -EIO;
		free(b);
	}
	close(fd);
	return ret;
}

/* 10 GiB contiguous (DLIO k = 2) and 4 GiB gzip: sizes without allocation;
 * libhdf5 reads samples at the far end from a sparse copy. */
static void test_big(struct dl_fmt_ctx *ctx)
{
	static const struct cfg big[] = {
	    {"big_contig", DL_H5_DLIO, 2, DL_DT_UINT8, 5120, 2, {1024, 1024}, 0, 0, {0}, 0},
	    {"big_gzip",
	     DL_H5_DLIO,
	     1,
	     DL_DT_FLOAT32,
	     1024,
	     2,
	     {1024, 1024},
	     0,
	     3,
	     {1, 1024, 1024},
	     1},
	};
	for (size_t i = 0; i < 2; i++) {
		const struct cfg *c = &big[i];
		struct dl_dataset ds = mkds(c);
		struct dl_file f;
		uint64_t isz = dl_dtype_size(c->dt), sb = c->dims[0] * c->dims[1] * isz;
		uint64_t data = sb * c->samples * c->dsets;
		long rss0 = maxrss_kb();
		double t0 = now();
		char path[4096];

		CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == 0, "%s: init", c->name);
		printf("# %s: %llu bytes, layout %.1f ms, +%ld kB max RSS\n", c->name,
		       (unsigned long long)f.size, (now() - t0) * 1e3, maxrss_kb() - rss0);
		CHECK(maxrss_kb() - rss0 < 64 * 1024, "%s: layout grew RSS by %ld kB", c->name,
		      maxrss_kb() - rss0);
		if (!c->gzip)
			CHECK(f.size > data && f.size < data + 64 * 1024, "%s: size %llu", c->name,
			      (unsigned long long)f.size);
		else
			CHECK(f.size > data + c->samples * (5 * (sb / 65535) + 6), "%s: size %llu",
			      c->name, (unsigned long long)f.size);
		/* A sparse copy with the metadata only: libhdf5 checksums all of it. */
		struct ranges rg = {.n = 0};
		CHECK(dl_h5_meta_ranges(ctx, &f, add_range, &rg) == 0 && rg.n > 0 && rg.n < 64,
		      "%s: %u metadata ranges", c->name, rg.n);
		if (sparse_file(ctx, &f, &rg, path, sizeof(path)) != 0) {
			CHECK(0, "%s: sparse copy", c->name);
			continue;
		}
		hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
		CHECK(file >= 0, "%s: H5Fopen of the sparse copy", c->name);
		if (file < 0) {
			unlink(path);
			continue;
		}
		char name[32];
		dset_name(c, c->dsets - 1, name, sizeof(name));
		hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
		uint64_t last = c->samples - 1, at, len;
		if (!c->gzip) {
			at = H5Dget_offset(d) + last * sb;
			len = sb;
		} else {
			hsize_t off[3] = {last, 0, 0}, size = 0;
			haddr_t addr = HADDR_UNDEF;
			unsigned mask;
			H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size);
			at = addr;
			len = size;
		}
		H5Dclose(d);
		H5Fclose(file);
		unlink(path);
		CHECK(at + len <= f.size && at > f.size / 2, "%s: last sample at %llu", c->name,
		      (unsigned long long)at);
		/* Second copy adds the last sample of the last dataset: read it
		 * through libhdf5 (gzip: inflate + Adler-32 check) and compare. */
		add_range(&rg, at, len);
		if (sparse_file(ctx, &f, &rg, path, sizeof(path)) != 0) {
			CHECK(0, "%s: sparse copy 2", c->name);
			continue;
		}
		file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
		d = H5Dopen2(file, name, H5P_DEFAULT);
		hid_t fs = H5Dget_space(d);
		hsize_t start[3] = {last, 0, 0}, count[3] = {1, c->dims[0], c->dims[1]};
		hid_t ms = H5Screate_simple(3, count, NULL);
		uint8_t *got = malloc(sb), *want = malloc(sb);
		H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
		CHECK(H5Dread(d, c->gzip ? H5T_IEEE_F32LE : H5T_STD_U8LE, ms, fs, H5P_DEFAULT,
			      got) >= 0,
		      "%s: H5Dread of the last sample", c->name);
		if (c->gzip)
			CHECK(dl_file_read(ctx, &f, want, at + 7, 65535) == 0 &&
				  memcmp(got, want, 65535) == 0,
			      "%s: last sample's first block", c->name);
		else
			CHECK(dl_file_read(ctx, &f, want, at, sb) == 0 &&
				  memcmp(got, want, sb) == 0,
			      "%s: last sample", c->name);
		check_values(c, got, sb / isz);
		free(got);
		free(want);
		H5Sclose(ms);
		H5Sclose(fs);
		H5Dclose(d);
		H5Fclose(file);
		unlink(path);
	}
}

/* Threads on shared context with a 2-slot cache: layouts, evictions and
 * rebuilds race with reads, and every file hashes as it does alone. */
struct thr_arg {
	struct dl_fmt_ctx *ctx;
	const struct dl_dataset *ds;
	const uint64_t *want;
	unsigned seed, bad;
};

static uint64_t hash_file(struct dl_fmt_ctx *ctx, const struct dl_file *f)
{
	uint8_t b[4096];
	uint64_t h = f->size;

	for (uint64_t o = 0; o < f->size; o += sizeof(b)) {
		size_t n = f->size - o < sizeof(b) ? (size_t)(f->size - o) : sizeof(b);
		if (dl_file_read(ctx, f, b, o, n) != 0)
			return 0;
		h = (uint64_t)crc32((uLong)h, b, (uInt)n) ^ (h << 32);
	}
	return h;
}

static void *thr_main(void *p)
{
	struct thr_arg *a = p;

	for (unsigned k = 0; k < 60; k++) {
		unsigned i = (unsigned)dl_prng_below(a->seed, k, NCFG);
		struct dl_file f;
		if (dl_file_init(a->ctx, &a->ds[i], DL_SPLIT_TRAIN, 2, 0, &f) != 0 ||
		    hash_file(a->ctx, &f) != a->want[i])
			a->bad++;
	}
	return NULL;
}

static void test_threads(void)
{
	struct dl_dataset ds[NCFG];
	uint64_t want[NCFG];
	struct dl_fmt_ctx *ctx;
	pthread_t th[4];
	struct thr_arg arg[4];
	unsigned bad = 0;

	if (dl_fmt_ctx_new(0, 0, &ctx) != 0)
		return;
	for (size_t i = 0; i < NCFG; i++) {
		struct dl_file f;
		ds[i] = mkds(&CFGS[i]);
		want[i] = dl_file_init(ctx, &ds[i], DL_SPLIT_TRAIN, 2, 0, &f) == 0
			      ? hash_file(ctx, &f)
			      : 1;
	}
	dl_fmt_ctx_free(ctx);
	if (dl_fmt_ctx_new(0, 64, &ctx) != 0)
		return;
	dl_h5_set_cache_max(ctx, 2);
	for (int t = 0; t < 4; t++) {
		arg[t] = (struct thr_arg){ctx, ds, want, 1000u + (unsigned)t, 0};
		pthread_create(&th[t], NULL, thr_main, &arg[t]);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		bad += arg[t].bad;
	}
	struct dl_h5_stats s;
	dl_h5_stats(ctx, &s);
	CHECK(bad == 0, "%u threaded reads differ", bad);
	CHECK(s.cached <= 2 && s.builds > NCFG, "cache bound held (%llu cached, %llu builds)",
	      (unsigned long long)s.cached, (unsigned long long)s.builds);
	dl_fmt_ctx_free(ctx);
}

static void test_errors(struct dl_fmt_ctx *ctx)
{
	struct cfg c = CFGS[0];
	struct dl_dataset ds;
	struct dl_file f;

	c.gzip = 1; /* deflate without chunks */
	ds = mkds(&c);
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "gzip needs chunks");
	c = CFGS[4];
	c.cnd = 2; /* chunk rank != dataset rank */
	ds = mkds(&c);
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "chunk rank");
	c = CFGS[4];
	c.chunk[1] = 0;
	ds = mkds(&c);
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "zero chunk dim");
	c = CFGS[4];
	ds = mkds(&c);
	ds.compression = DL_COMP_ZIP;
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EINVAL, "zip compression");
	c = CFGS[4];
	c.chunk[0] = c.chunk[1] = c.chunk[2] = 1; /* 14,000 chunks: fine */
	ds = mkds(&c);
	ds.samples_per_file = 1u << 20; /* 2^20 * 2000 chunks: too many */
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) == -EFBIG, "chunk count bound");
	c = CFGS[0];
	ds = mkds(&c);
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 1, &f) == -ENOENT, "no part 1");
	CHECK(dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 8, 0, &f) == -ENOENT, "index out of range");
}

static int bench(void)
{
	struct dl_fmt_ctx *ctx;
	struct dl_h5_stats s;
	struct dl_file f;
	double t0, best = 1e9;

	if (dl_fmt_ctx_new(0, 0, &ctx) != 0)
		return 1;
	/* Template builds: 200 distinct shapes of DLIO's default layout. */
	for (unsigned i = 0; i < 200; i++) {
		struct cfg c = {"b",	    DL_H5_DLIO, 1, DL_DT_UINT8, 1 + i, 2,
				{224, 224}, 0,		0, {0},		0};
		struct dl_dataset ds = mkds(&c);
		if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) != 0)
			return 1;
	}
	dl_h5_stats(ctx, &s);
	printf("# template build (contiguous): %.3f ms each (%llu builds)\n",
	       s.build_ms / (double)s.builds, (unsigned long long)s.builds);
	for (unsigned i = 0; i < 50; i++) {
		struct cfg c = {"g",	    DL_H5_DLIO, 1, DL_DT_UINT8,	  64 + i, 2,
				{224, 224}, 0,		3, {1, 224, 224}, 1};
		struct dl_dataset ds = mkds(&c);
		if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) != 0)
			return 1;
	}
	struct dl_h5_stats s2;
	dl_h5_stats(ctx, &s2);
	printf("# template build (gzip, ~90 chunks): %.3f ms each\n",
	       (s2.build_ms - s.build_ms) / (double)(s2.builds - s.builds));
	/* Read throughput, 1 MiB reads, one thread: 2 GiB contiguous uint8 and
	 * float32, and 2 GiB of 1 MiB gzip chunks (reads straddle chunks, so
	 * most Adler-32s are computed by regenerating the chunk). */
	static const struct cfg tp[] = {
	    {"t8", DL_H5_DLIO, 1, DL_DT_UINT8, 2048, 2, {1024, 1024}, 0, 0, {0}, 0},
	    {"t32", DL_H5_DLIO, 1, DL_DT_FLOAT32, 2048, 2, {1024, 256}, 0, 0, {0}, 0},
	    {"tgz", DL_H5_DLIO, 1, DL_DT_UINT8, 2048, 2, {1024, 1024}, 0, 3, {1, 1024, 1024}, 1},
	};
	for (size_t k = 0; k < sizeof(tp) / sizeof(tp[0]); k++) {
		struct dl_dataset ds = mkds(&tp[k]);
		size_t chunk = 1u << 20;
		uint8_t *b = malloc(chunk);
		if (dl_file_init(ctx, &ds, DL_SPLIT_TRAIN, 0, 0, &f) != 0)
			return 1;
		best = 1e9;
		for (int rep = 0; rep < 3; rep++) {
			t0 = now();
			for (uint64_t o = 0; o < f.size; o += chunk) {
				size_t n = f.size - o < chunk ? (size_t)(f.size - o) : chunk;
				if (dl_file_read(ctx, &f, b, o, n) != 0)
					return 1;
			}
			if (now() - t0 < best)
				best = now() - t0;
		}
		printf("# read %s %.2f GB: %.2f GB/s\n", tp[k].name, f.size / 1e9,
		       f.size / 1e9 / best);
		free(b);
	}
	dl_fmt_ctx_free(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	struct dl_fmt_ctx *ctx;

	if (argc > 1 && strcmp(argv[1], "--bench") == 0)
		return bench();
	if (dl_fmt_ctx_new(0, 0, &ctx) != 0)
		return 1;
	test_configs(ctx);
	test_errors(ctx);
	test_big(ctx);
	dl_fmt_ctx_free(ctx);
	test_slices();
	test_reuse();
	test_threads();
	return tap_done("hdf5");
}
