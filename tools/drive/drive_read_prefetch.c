/* --loader mlperf-v3: the training reads of MLPerf Storage v3, which runs
 * the MLCommons DLIO fork (github.com/mlcommons/DLIO_local_changes), not
 * DLIO 2.0.0. Its local file readers (NPZ, NPY, image and HDF5 readers,
 * through reader/_local_fs_iterable_mixin.py) never decode: each PyTorch
 * worker takes its files in windows of storage_options.prefetch_window
 * (256) files, reads a window whole with a ThreadPoolExecutor of
 * min(64, files) threads, `open(path, 'rb').read()` each, keeps only the
 * byte counts, and yields the window's batches while one background
 * thread already reads the next window.
 *
 * Here: every file is one unit read whole, the way CPython's readall()
 * reads a regular file (fstat, one read of st_size + 1 bytes, one more
 * that returns 0 at EOF), nothing decoded; the loader runs 64 threads per
 * reader thread (fewer when a reader has fewer files in a window) and lets
 * them run two windows ahead of the accelerator (drv_mlperf_threads,
 * drv_mlperf_depth). Not modelled: the fork's stagger (worker i sleeps i
 * times the computation time before its first window), and its waiting
 * for a whole window before the first batch of it is handed over (batches
 * here are handed over as their files are read). */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "drive_read_i.h"

#define MLPERF_WINDOW 256 /* storage_options.prefetch_window's default */
#define MLPERF_POOL 64	  /* ThreadPoolExecutor(max_workers=min(64, len(paths))) */
#define MLPERF_THREADS_MAX 1024

static enum drv_unit_kind prefetch_plan(enum drv_amp amp, int iterative)
{
	(void)amp, (void)iterative;
	return DRV_U_FILE;
}

static void prefetch_notes(const struct dl_dataset *ds, struct drv_params *p)
{
	drv_note(p,
		 "%s read as MLPerf Storage v3's DLIO fork reads it: whole files, %u threads a "
		 "reader in windows of %u files, byte counts only",
		 dl_ds_ops(ds)->name, MLPERF_POOL, MLPERF_WINDOW);
}

/* CPython's FileIO.readall on a regular file: a buffer of the size fstat
 * gives plus one, read until a read returns 0. A file larger than the
 * thread's buffer gets a mapping of its own for the call, unmapped after:
 * like the fork, which drops the bytes once counted, a thread holds a
 * large file's pages only while it reads it (a file over 256 MiB is read
 * in 256 MiB calls). */
static ssize_t readall(struct drv_worker *w, int fd, struct drv_io *io)
{
	struct stat st;
	uint64_t got = 0;
	uint8_t *buf = w->buf;
	size_t cap = w->cap;
	ssize_t ret = 0;

	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size + 1 > cap) {
		cap = (size_t)((uint64_t)st.st_size + 1 < DRV_BUF_MAX ? (uint64_t)st.st_size + 1
								      : DRV_BUF_MAX);
		buf = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (buf == MAP_FAILED)
			return -ENOMEM;
	}
	for (;;) {
		uint64_t want = (uint64_t)st.st_size + 1 > got ? (uint64_t)st.st_size + 1 - got : 1;
		size_t n = want < cap ? (size_t)want : cap;
		ssize_t r = read(fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		io->reads++;
		if (r == 0)
			break;
		got += (uint64_t)r;
		io->bytes += (uint64_t)r;
	}
	if (buf != w->buf)
		munmap(buf, cap);
	return ret ? ret : (ssize_t)got;
}

static int prefetch_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
			 uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	char path[4096];
	int ret = drv_relpath(w->c, split, u->file, 0, path, sizeof(path));
	ssize_t n;

	(void)l;
	if (ret)
		return ret;
	int fd = drv_open_data(w, path, io);
	if (fd < 0)
		return fd;
	/* O_DIRECT (the fork's direct:// path through s3dlio) needs aligned
	 * reads: the shared whole-file reader does them. */
	n = w->c->p->odirect ? drv_read_whole(w, fd, 0, io) : readall(w, fd, io);
	if (n < 0) {
		drv_say(path, (int)n);
		ret = (int)n;
	} else if (w->c->trace) {
		drv_trace_line(w->c, epoch, split, seq, path, -1, 0, (uint64_t)n);
	}
	drv_dontneed(w, fd);
	close(fd);
	return ret;
}

const struct drv_reader_ops drv_read_prefetch_ops = {
    .name = "prefetch",
    .plan = prefetch_plan,
    .notes = prefetch_notes,
    .read = prefetch_read,
};

const struct drv_reader_ops *drv_reader_for_loader(const struct dl_dataset *ds,
						   const struct drv_params *p)
{
	const struct drv_reader_ops *rd = drv_reader_for(ds);

	/* The fork's mixin serves the NPZ, NPY, image and HDF5 readers. */
	if (p->loader == DRV_LOADER_MLPERF_V3 &&
	    (rd == &drv_read_whole_ops || rd == &drv_read_hyperslab_ops))
		return &drv_read_prefetch_ops;
	return rd;
}

int drv_mlperf_reads(const struct drv_ctx *c) { return c->rd == &drv_read_prefetch_ops; }

/* Files a reader thread holds in one window: its share of the split's. */
static uint64_t window_files(const struct drv_ctx *c, uint64_t nfiles)
{
	unsigned t = c->p->read_threads ? c->p->read_threads : 1;
	uint64_t per = (nfiles + t - 1) / t;

	per = (per + (c->ranks ? c->ranks : 1) - 1) / (c->ranks ? c->ranks : 1);
	return per < MLPERF_WINDOW ? (per ? per : 1) : MLPERF_WINDOW;
}

unsigned drv_mlperf_threads(const struct drv_ctx *c, uint64_t nfiles)
{
	unsigned t = c->p->read_threads ? c->p->read_threads : 1;
	uint64_t w = window_files(c, nfiles), n = t * (w < MLPERF_POOL ? w : MLPERF_POOL);

	/* 16 reader threads' pools; more would only queue in the kernel. */
	return n > MLPERF_THREADS_MAX ? MLPERF_THREADS_MAX : (unsigned)n;
}

unsigned drv_mlperf_depth(const struct drv_ctx *c, uint64_t nfiles, uint64_t batch)
{
	unsigned t = c->p->read_threads ? c->p->read_threads : 1;
	uint64_t samples = 2 * window_files(c, nfiles) * c->spf * t;
	uint64_t d = (samples + batch - 1) / batch;

	return d > 65536 ? 65536 : (unsigned)(d ? d : 1);
}
