/* The whole-file reader (DL_PLAN_WHOLE: npz, npy, jpeg, png), as np.load
 * and PIL.Image.open read a file. Efficient: once per epoch however many
 * samples it holds; with --read-amplification dlio once per sample, as
 * DLIO's on-demand reader does (once per file with the tensorflow loader),
 * and for a format with an np.load model (drive_pyio.c) through np.load's
 * own reads. --decode decodes images (DL_RH_IMAGE) with the decoder the
 * format's name picks (drive_decode.c). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "drive_read_i.h"

/* The run's choices, made once (setup). */
struct whole_run {
	const struct drv_decoder *dec;	     /* --decode on an image format, else NULL */
	const struct drv_numpy_model *numpy; /* dlio reads through np.load, else NULL */
	int dec_warned, numpy_warned;	     /* said once per run */
};

struct whole {
	uint8_t *scratch; /* the decoder's row/inflate space */
	size_t scap;
	struct drv_pyio *pyio; /* np.load's buffers */
};

/* DLIO's readers hold a file open for the consecutive samples a tf.data
 * reader thread takes from it; PyTorch's reopen per sample. */
static enum drv_unit_kind whole_plan(enum drv_amp amp, int iterative)
{
	return amp == DRV_AMP_DLIO && !iterative ? DRV_U_SAMPLE : DRV_U_FILE;
}

static const struct drv_numpy_model *numpy_model(const struct dl_dataset *ds,
						 const struct drv_params *p)
{
	const struct dl_format_ops *f = dl_ds_ops(ds);

	if (p->amp != DRV_AMP_DLIO || p->odirect || !(f->read_hints.flags & DL_RH_NUMPY))
		return NULL;
	return drv_numpy_model_for(f->name);
}

static void whole_notes(const struct dl_dataset *ds, struct drv_params *p)
{
	if (numpy_model(ds, p))
		drv_note(p,
			 "%s read as np.load reads it: through a buffer of st_blksize bytes, "
			 "the file's head twice",
			 dl_ds_ops(ds)->name);
}

static int whole_setup(struct drv_ctx *c, FILE *err)
{
	const struct dl_format_ops *f = dl_ds_ops(c->ds);
	struct whole_run *r = calloc(1, sizeof(*r));

	(void)err;
	if (!r)
		return -ENOMEM;
	if (c->p->decode && (f->read_hints.flags & DL_RH_IMAGE))
		r->dec = drv_decoder_for(f->name);
	r->numpy = numpy_model(c->ds, c->p);
	c->rd_state = r;
	return 0;
}

static void whole_teardown(struct drv_ctx *c)
{
	free(c->rd_state);
	c->rd_state = NULL;
}

static void whole_close(struct drv_worker *w)
{
	struct whole *s = w->state;

	free(s->scratch);
	drv_pyio_free(s->pyio);
}

static int decode(struct drv_worker *w, size_t n, struct drv_io *io, const char *path)
{
	struct whole_run *r = w->c->rd_state;
	struct whole *s = w->state;
	uint64_t px = 0;
	int ret = r->dec->decode(w->buf, n, &s->scratch, &s->scap, &px);

	if (ret == -ENOTSUP) {
		if (!__atomic_exchange_n(&r->dec_warned, 1, __ATOMIC_RELAXED))
			fprintf(stderr, "dlio-drive: %s: %s; reading only\n", path,
				r->dec->unsupported);
		return 0;
	}
	if (ret) {
		drv_say(path, ret);
		return ret;
	}
	io->decoded += px;
	return 0;
}

/* The file through the format's np.load model: bytes read, or -ENOTSUP for
 * a layout the model does not cover (said once; the caller reads it whole). */
static ssize_t numpy_load(struct drv_worker *w, int fd, struct drv_io *io, const char *path)
{
	struct whole_run *r = w->c->rd_state;
	struct whole *s = w->state;
	uint64_t b0 = io->bytes;
	/* Its reads are pread()s: the fd's offset stays at 0 for a fallback. */
	int ret = r->numpy->load(&s->pyio, fd, io);

	if (ret == -ENOTSUP && !__atomic_exchange_n(&r->numpy_warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "dlio-drive: %s: %s; reading whole files\n", path,
			r->numpy->unsupported);
	return ret < 0 ? ret : (ssize_t)(io->bytes - b0);
}

static int whole_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		      uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	struct whole_run *r = w->c->rd_state;
	int64_t sample = w->c->kind == DRV_U_SAMPLE ? (int64_t)u->sample : -1;
	int keep = r->dec != NULL;
	char path[4096];
	int ret = drv_relpath(w->c, split, u->file, 0, path, sizeof(path));

	(void)l;
	if (ret)
		return ret;
	int fd = drv_open_data(w, path, io);
	if (fd < 0)
		return fd;
	ssize_t n = r->numpy ? numpy_load(w, fd, io, path) : -ENOTSUP;
	if (n == -ENOTSUP)
		n = drv_read_whole(w, fd, keep, io);
	if (n < 0) {
		drv_say(path, (int)n);
		ret = (int)n;
		goto out;
	}
	if (keep)
		ret = decode(w, (size_t)n, io, path);
	if (w->c->trace)
		drv_trace_line(w->c, epoch, split, seq, path, sample, 0, (uint64_t)n);
	drv_dontneed(w, fd);
out:
	close(fd);
	return ret;
}

const struct drv_reader_ops drv_read_whole_ops = {
    .name = "whole",
    .plan = whole_plan,
    .notes = whole_notes,
    .setup = whole_setup,
    .teardown = whole_teardown,
    .state_size = sizeof(struct whole),
    .close = whole_close,
    .read = whole_read,
};
