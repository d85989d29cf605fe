/* The stream reader (DL_PLAN_STREAM: tfrecord): each file a sequential
 * record stream through one transfer_size buffer, as tf.data reads it,
 * framing parsed (drive_tfr.c) and, with --check-crc, CRCs checked. Records
 * are reserved and completed as they are read, so the prefetch bound holds
 * inside a file too. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "drive_read_i.h"

/* Records reserved and completed per lock when they are small (see
 * drive_loader.c's CLAIM_MAX): tf.data hands records on in batches too. */
#define STREAM_GROUP 32
#define STREAM_SMALL (64u << 10)

static enum drv_unit_kind stream_plan(enum drv_amp amp, int iterative)
{
	(void)amp;
	(void)iterative;
	return DRV_U_STREAM;
}

static void stream_notes(const struct dl_dataset *ds, struct drv_params *p)
{
	if (p->sample_shuffle != DRV_SHUF_OFF)
		drv_note(p,
			 "%s: sample shuffle is a memory buffer in tf.data; it does not "
			 "change what is read, so streams stay in file order",
			 dl_ds_ops(ds)->name);
}

/* tf.data reads with transfer_size buffers. */
static int stream_open(struct drv_worker *w) { return drv_reserve_buf(w, w->c->p->transfer_size); }

struct fd_src {
	int fd;
	struct drv_io *io;
};

static ssize_t fd_fill(void *src, uint8_t *buf, size_t cap)
{
	struct fd_src *s = src;

	for (;;) {
		ssize_t r = read(s->fd, buf, cap);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		s->io->reads++;
		return r;
	}
}

static int stream_read(struct drv_worker *w, struct drv_loader *l, uint32_t split, uint64_t epoch,
		       uint64_t seq, const struct drv_unit *u, struct drv_io *io)
{
	char path[4096];
	struct drv_tfr t;
	uint64_t counted = 0, rec = 0;
	/* held: reserved samples not yet read; done: read, not yet completed */
	uint64_t held = 0, done = 0;
	const uint64_t group = w->c->ds->sample_size.mean <= STREAM_SMALL ? STREAM_GROUP : 1;
	int fd = -1, ret;

	if ((ret = drv_relpath(w->c, split, u->file, 0, path, sizeof(path))))
		return ret;
	/* tf.data reads with transfer_size buffers; O_DIRECT wants them aligned. */
	size_t cap = w->c->p->transfer_size;
	if (drv_reserve_buf(w, cap))
		return -ENOMEM;
	if (cap > w->cap)
		cap = w->cap;
	struct fd_src src = {.io = io};
	for (;; rec++) {
		/* Records another rank keeps (a record-sharded stream) are read
		 * and passed over, as tf.data's shard() does. */
		int mine = !u->rec_mod || rec % u->rec_mod == u->rec_phase;
		/* A file is opened only for a sample the phase still needs... */
		if (mine && !held) {
			/* Completions first: the reservation may wait for the
			 * accelerator, which waits for them. */
			if (done) {
				drv_loader_complete(l, done, io);
				done = 0;
			}
			if (fd < 0 && !(held = drv_loader_reserve(l, group)))
				break;
		}
		if (fd < 0) {
			if ((fd = drv_open_data(w, path, io)) < 0) {
				if (held)
					drv_loader_release(l, held);
				return fd;
			}
			src.fd = fd;
			drv_tfr_init(&t, w->buf, cap, w->c->p->check_crc, fd_fill, &src);
		}
		/* ...but then, like tf.data's pipeline, the next record is read
		 * before anyone asks for it: at the end of a file that is the
		 * read that finds EOF. */
		uint64_t len, off;
		ret = drv_tfr_next(&t, &len, &off);
		if (ret <= 0) {
			if (ret < 0) {
				fprintf(stderr, "dlio-drive: %s: %s at offset %llu\n", path,
					ret == -EBADMSG ? "corrupted record" : strerror(-ret),
					(unsigned long long)t.off);
			}
			break;
		}
		if (mine && !held && !(held = drv_loader_reserve(l, group)))
			break;
		io->bytes += t.bytes_in - counted;
		counted = t.bytes_in;
		if (!mine)
			continue;
		held--;
		if (w->c->trace)
			drv_trace_line(w->c, epoch, split, seq, path, (int64_t)rec, (int64_t)off,
				       len + DRV_TFR_HDR + DRV_TFR_FOOT);
		if (++done >= group) {
			drv_loader_complete(l, done, io);
			done = 0;
		}
	}
	if (held)
		drv_loader_release(l, held);
	if (fd >= 0) {
		/* Bytes read ahead into the buffer past the last record we used. */
		io->bytes += t.bytes_in - counted;
		drv_dontneed(w, fd);
		close(fd);
	}
	drv_loader_complete(l, done, io);
	return ret < 0 ? ret : 0;
}

const struct drv_reader_ops drv_read_stream_ops = {
    .name = "stream",
    .no_odirect = "a buffered stream",
    .plan = stream_plan,
    .notes = stream_notes,
    .open = stream_open,
    .read = stream_read,
};
