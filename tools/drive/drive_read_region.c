/* The region reader (DL_PLAN_REGION: raw, indexed_binary): per sample, one
 * pread of the sample at its offset in the file, the file kept open per
 * reader thread. A format with companion index files (DL_RH_INDEXED) gives
 * each sample's offset and size there: loaded once for the run when they
 * fit in memory, else per file; with --read-amplification dlio both index
 * files and the data file are opened per sample, as DLIO does. Otherwise
 * samples are the file's fixed sample size apart. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "dliofs/bytes.h"
#include "dliofs/format.h"
#include "drive_read_i.h"

#define IB_PRELOAD_MAX (256ull << 20) /* index bytes kept for the whole run */

/* Run-wide: every index entry when they fit (offsets, sizes), per split. */
struct region_run {
	int indexed;
	uint64_t *off[DL_SPLIT__COUNT], *size[DL_SPLIT__COUNT];
};

struct region {
	uint64_t sample_bytes; /* not indexed: bytes per sample of the open file */
	/* indexed: the index of one file, when not preloaded */
	uint64_t *off, *size, n;
	uint32_t split;
	uint64_t index;
	int valid;
};

static enum drv_unit_kind region_plan(enum drv_amp amp, int iterative)
{
	(void)amp;
	(void)iterative;
	return DRV_U_SAMPLE;
}

static void region_teardown(struct drv_ctx *c)
{
	struct region_run *r = c->rd_state;

	if (!r)
		return;
	for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
		free(r->off[s]);
		free(r->size[s]);
	}
	free(r);
	c->rd_state = NULL;
}

static void region_close(struct drv_worker *w)
{
	struct region *s = w->state;

	free(s->off);
	free(s->size);
}

/* n little-endian u64 of an index file into dst. */
static int read_u64_file(const char *path, uint64_t *dst, uint64_t n, struct drv_io *io)
{
	int fd = drv_open(path, io, 0); /* small, unaligned: never O_DIRECT */
	uint64_t got = 0, want = n * 8;

	if (fd < 0)
		return fd;
	while (got < want) {
		ssize_t r = pread(fd, (uint8_t *)dst + got, want - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : -ENODATA;
			close(fd);
			drv_say(path, e);
			return e;
		}
		io->reads++;
		got += (uint64_t)r;
	}
	io->index_bytes += got;
	close(fd);
	for (uint64_t i = 0; i < n; i++)
		dst[i] = dl_get_le64((const uint8_t *)&dst[i]);
	return 0;
}

/* Offsets and sizes of every sample of file `index` (parts 1 and 2). */
static int index_load(const struct drv_ctx *c, uint32_t split, uint64_t index, uint64_t *off,
		      uint64_t *size, struct drv_io *io)
{
	char path[4096];
	int ret;

	if ((ret = drv_relpath(c, split, index, 1, path, sizeof(path))) ||
	    (ret = read_u64_file(path, off, c->spf, io)) ||
	    (ret = drv_relpath(c, split, index, 2, path, sizeof(path))) ||
	    (ret = read_u64_file(path, size, c->spf, io)))
		return ret;
	return 0;
}

/* Efficient reads of an indexed format: every index that fits, loaded now. */
static int preload(struct drv_ctx *c, struct region_run *r, FILE *err)
{
	struct drv_io io = {0};
	int ret = 0;

	for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
		uint64_t n = c->ds->files[s] * c->spf;
		if (!n || n * 16 > IB_PRELOAD_MAX)
			continue;
		r->off[s] = malloc(n * 8);
		r->size[s] = malloc(n * 8);
		if (!r->off[s] || !r->size[s])
			return -ENOMEM;
	}
	for (uint32_t s = 0; s < DL_SPLIT__COUNT && !ret; s++)
		for (uint64_t f = 0; r->off[s] && f < c->ds->files[s] && !ret; f++)
			ret = index_load(c, s, f, r->off[s] + f * c->spf, r->size[s] + f * c->spf,
					 &io);
	c->setup_bytes += io.index_bytes;
	if (ret && err)
		fprintf(err, "dlio-drive: cannot read the %s index files\n",
			dl_ds_ops(c->ds)->name);
	return ret;
}

static int region_setup(struct drv_ctx *c, FILE *err)
{
	struct region_run *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	c->rd_state = r;
	r->indexed = !!(dl_ds_ops(c->ds)->read_hints.flags & DL_RH_INDEXED);
	if (r->indexed && c->p->amp == DRV_AMP_EFFICIENT)
		return preload(c, r, err);
	return 0;
}

static int index_entry(struct drv_worker *w, uint32_t split, uint64_t index, uint64_t sample,
		       uint64_t *off, uint64_t *size, struct drv_io *io)
{
	struct drv_ctx *c = w->c;
	struct region_run *r = c->rd_state;
	struct region *s = w->state;
	int dlio = c->p->amp == DRV_AMP_DLIO;

	if (r->off[split] && !dlio) {
		*off = r->off[split][index * c->spf + sample];
		*size = r->size[split][index * c->spf + sample];
		return 0;
	}
	/* DLIO opens the file (and reads both indexes) per sample on demand. */
	if (dlio || !s->valid || s->split != split || s->index != index) {
		if (s->n < c->spf) {
			free(s->off);
			free(s->size);
			s->off = malloc(c->spf * 8);
			s->size = malloc(c->spf * 8);
			s->n = s->off && s->size ? c->spf : 0;
			if (!s->n)
				return -ENOMEM;
		}
		s->valid = 0;
		int ret = index_load(c, split, index, s->off, s->size, io);
		if (ret)
			return ret;
		s->valid = 1;
		s->split = split;
		s->index = index;
	}
	*off = s->off[sample];
	*size = s->size[sample];
	return 0;
}

/* The data file of the unit open as w->fd; a newly opened file's sample size. */
static int data_file(struct drv_worker *w, uint32_t split, uint64_t index, int indexed,
		     struct drv_io *io)
{
	struct region *s = w->state;
	struct dl_file f;
	int ret = drv_data_fd(w, split, index, io);

	if (ret <= 0 || indexed)
		return ret;
	ret = dl_file_init(w->c->fmt, w->c->ds, split, index, 0, &f);
	if (ret) {
		drv_data_close(w);
		return ret;
	}
	s->sample_bytes = f.sample_bytes;
	return 0;
}

static int region_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		       uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	const struct region_run *r = w->c->rd_state;
	struct region *s = w->state;
	int dlio = w->c->p->amp == DRV_AMP_DLIO;
	const char *path = w->fpath;
	uint64_t off = 0, len = 0;
	int ret;

	(void)l;
	if (r->indexed && (ret = index_entry(w, split, u->file, u->sample, &off, &len, io)))
		return ret;
	if (dlio)
		drv_data_close(w);
	if ((ret = data_file(w, split, u->file, r->indexed, io)) < 0)
		return ret;
	if (!r->indexed) {
		off = u->sample * s->sample_bytes;
		len = s->sample_bytes;
	}
	ssize_t n = drv_read_range(w, w->fd, off, len, io);
	if (n < 0) {
		drv_say(path, (int)n);
		return (int)n;
	}
	if ((uint64_t)n < len) {
		drv_say(path, -ENODATA);
		return -ENODATA;
	}
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, (int64_t)u->sample, (int64_t)off,
			       (uint64_t)n);
	if (dlio)
		drv_data_close(w);
	return 0;
}

const struct drv_reader_ops drv_read_region_ops = {
    .name = "region",
    .plan = region_plan,
    .setup = region_setup,
    .teardown = region_teardown,
    .state_size = sizeof(struct region),
    .read = region_read,
    .close = region_close,
};
