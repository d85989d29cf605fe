/* HDF5's sparse driver (hdf5_template.c builds through it). The core driver cannot build large templates: once any
 * metadata lands after a big data region it grows (and zero-fills) its buffer
 * up to that address, and H5Fget_file_image copies the whole file (measured:
 * 3 GB resident for three 1 GB datasets). This driver keeps every non-raw write
 * as a sorted list of extents, drops raw-data writes (we generate those bytes
 * anyway), and reads unwritten space as zeros. Its feature flags are sec2's
 * allocation flags, so the library lays the file out as it does on disk. */
#include <errno.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "formats_i.h"
#include "hdf5_tmpl_i.h"

struct drv_fapl {
	struct h5_sink *sink;
};

struct drv_file {
	H5FD_t pub; /* first: the library casts */
	struct h5_sink *sink;
	haddr_t eoa, eof;
};

#define DRV_MAXADDR ((haddr_t)INT64_MAX)

void dl_h5_sink_reset(struct h5_sink *s)
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

void dl_h5_sink_read(const struct h5_sink *s, uint64_t at, uint8_t *dst, size_t len)
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
	dl_h5_sink_reset(f->sink);
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
	dl_h5_sink_read(f->sink, addr, buf, size);
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


int dl_h5_sink_fapl(hid_t *drv, hid_t fapl, struct h5_sink *sink)
{
	/* H5Pset_driver copies fapl_size bytes of this: a local is enough. */
	struct drv_fapl fa = {sink};

	if (*drv < 0) {
		*drv = H5FDregister(&drv_class);
		if (*drv < 0)
			return -EIO;
	}
	return H5Pset_driver(fapl, *drv, &fa) < 0 ? -EIO : 0;
}
