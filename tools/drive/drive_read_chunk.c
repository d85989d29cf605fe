/* The chunk reader (DL_PLAN_CHUNK: dlrm): a batch of fixed-size records in
 * one contiguous range, as the DLRM binary loader reads B * record bytes at
 * a time; the record size is the file's sample size. */
#include <errno.h>

#include "dliofs/format.h"
#include "drive_read_i.h"

struct chunk {
	uint64_t rec_bytes; /* of the open file */
};

static enum drv_unit_kind chunk_plan(enum drv_amp amp, int iterative)
{
	(void)amp;
	(void)iterative;
	return DRV_U_CHUNK;
}

static int chunk_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		      uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	struct chunk *s = w->state;
	const char *path = w->fpath;
	int ret = drv_data_fd(w, split, u->file, io);

	(void)l;
	if (ret < 0)
		return ret;
	if (ret) {
		struct dl_file f;
		if ((ret = dl_file_init(w->c->fmt, w->c->ds, split, u->file, 0, &f))) {
			drv_data_close(w);
			return ret;
		}
		s->rec_bytes = f.sample_bytes;
	}
	uint64_t off = u->sample * s->rec_bytes, len = u->nsamples * s->rec_bytes;
	ssize_t n = drv_read_range(w, w->fd, off, len, io);
	if (n < 0) {
		drv_say(path, (int)n);
		return (int)n;
	}
	if ((uint64_t)n < len && !w->c->p->odirect) {
		drv_say(path, -ENODATA);
		return -ENODATA;
	}
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, (int64_t)u->sample, (int64_t)off,
			       (uint64_t)n);
	return 0;
}

const struct drv_reader_ops drv_read_chunk_ops = {
    .name = "chunk",
    .plan = chunk_plan,
    .state_size = sizeof(struct chunk),
    .read = chunk_read,
};
