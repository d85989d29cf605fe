/* What a device actually does for the requests a mount receives. The mount
 * sees requests as the FUSE kernel module sends them; a block device behind
 * a local file system would see less:
 *
 * - merged runs: the page cache reads a file ahead in windows, and the
 *   block layer merges a window's pages into one bio. Only reads the caller
 *   marks DL_PREQ_BUFFERED (not O_DIRECT: an O_DIRECT read is one IO, as on
 *   a real device) of a file merge, each with the read that ended where it
 *   starts (its file's stream):
 *     . while that one is in service (not yet due): the pieces of one window
 *       the kernel split (FUSE's max_read), merged up to a bio of
 *       PACER_RUN_MAX bytes;
 *     . after it, within PACER_RUN_WINDOW_NS: a reader's next call (small
 *       read() calls reach the mount one by one when it bypasses the page
 *       cache), merged while the run stays within its readahead window. The
 *       windows grow as the kernel's do (mm/readahead.c): the first is the
 *       first read's size rounded up to a power of two times 4 (small) or 2,
 *       each next one 4 or 2 times the last, up to PACER_RUN_MAX; a stream
 *       that breaks (a seek, a pause) starts over. A reader of 8 KiB calls
 *       costs a 110 kB file two IOs (32 KiB, then the rest), as ext4 does.
 *   A continuation moves its bytes but takes no IOPS slot and pays no
 *   per-request cost. Streams are kept in a small table (the most recent
 *   PACER_RUN_SLOTS files), so the state is bounded.
 * - the inode cache: once a file's inode is read, its stat, open and lookup
 *   are answered from the client's memory until evicted. With
 *   meta.cached_latency set, a metadata request for an inode seen before
 *   takes that latency, a first touch `latency`. The set of inodes seen is
 *   a direct-mapped table of PACER_INODE_SLOTS numbers (a collision evicts,
 *   as a cache of that many inodes would); `dliofs cache drop` clears it.
 * Everything here is under the class lock of the caller. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pacer_i.h"

#define PAGE 4096ULL
#define MAX_PAGES (PACER_RUN_MAX / PAGE)

static uint64_t pow2_up(uint64_t x)
{
	uint64_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* The first readahead window of a stream whose first read is len bytes
 * (get_init_ra_size), in bytes: never less than the read itself. */
static uint64_t first_window(uint64_t len)
{
	uint64_t n = pow2_up((len + PAGE - 1) / PAGE);

	if (n <= MAX_PAGES / 32)
		n *= 4;
	else if (n <= MAX_PAGES / 4)
		n *= 2;
	else
		n = MAX_PAGES;
	return n * PAGE > len ? n * PAGE : len;
}

/* The window after one of cur bytes (get_next_ra_size). */
static uint64_t next_window(uint64_t cur)
{
	uint64_t n = cur / PAGE;

	if (n < MAX_PAGES / 16)
		n *= 4;
	else if (n <= MAX_PAGES / 2)
		n *= 2;
	else
		n = MAX_PAGES;
	return n * PAGE;
}

static struct pacer_run *stream_of(struct pacer_runs *t, uint64_t file)
{
	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++)
		if (t->run[i].live && t->run[i].file == file)
			return &t->run[i];
	return NULL;
}

/* The read at off continues the stream: it starts where the stream's last
 * read ended, in service or not long after. */
static int in_stream(const struct pacer_run *r, uint64_t off, uint64_t now)
{
	return r && r->end == off && now <= r->due + PACER_RUN_WINDOW_NS;
}

const struct pacer_run *pacer_run_continues(struct pacer_runs *t, uint64_t file, uint64_t off,
					    uint64_t len, uint64_t now)
{
	struct pacer_run *r = stream_of(t, file);

	if (!in_stream(r, off, now))
		return NULL;
	/* In service: a piece of the same window, up to a bio. */
	if (now <= r->due)
		return r->bytes + len <= PACER_RUN_MAX ? r : NULL;
	/* After it: the reader's next call, inside the window read ahead. */
	return r->bytes + len <= r->window ? r : NULL;
}

void pacer_run_note(struct pacer_runs *t, uint64_t file, uint64_t off, uint64_t len, uint64_t now,
		    uint64_t due, int cont)
{
	struct pacer_run *r = stream_of(t, file);
	unsigned i;

	if (cont) {
		r->bytes += len;
		if (r->window < r->bytes)
			r->window = r->bytes;
	} else if (in_stream(r, off, now)) {
		/* The stream goes on past its window: the next, larger one. */
		r->window = next_window(r->window);
		if (r->window < len)
			r->window = len;
		r->bytes = len;
	} else {
		if (!r) {
			/* A new stream takes the slot of the one done longest ago. */
			r = &t->run[0];
			for (i = 1; i < PACER_RUN_SLOTS && r->live; i++)
				if (!t->run[i].live || t->run[i].due < r->due)
					r = &t->run[i];
		}
		r->window = first_window(len);
		r->bytes = len;
	}
	r->live = 1;
	r->file = file;
	r->end = off + len;
	/* A run completes as one IO: its end is its latest piece's. */
	if (!cont || due > r->due)
		r->due = due;
}

void pacer_runs_clear(struct pacer_runs *t) { memset(t, 0, sizeof(*t)); }

/* Fibonacci hashing: inode numbers are often sequential, the top bits of
 * the product spread them over the table. */
static size_t inode_slot(uint64_t ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ULL) >> (64 - PACER_INODE_BITS));
}

int pacer_inode_seen(struct pacer_inodes *c, uint64_t ino)
{
	size_t s;
	int hit;

	if (!ino)
		return 0; /* not known: always a first touch */
	if (!c->seen) {
		c->seen = calloc(PACER_INODE_SLOTS, sizeof(*c->seen));
		if (!c->seen)
			return 0; /* without memory, every touch is a first one */
	}
	s = inode_slot(ino);
	hit = c->seen[s] == ino;
	c->seen[s] = ino;
	return hit;
}

void pacer_inodes_clear(struct pacer_inodes *c)
{
	if (c->seen)
		memset(c->seen, 0, PACER_INODE_SLOTS * sizeof(*c->seen));
}

void pacer_inodes_free(struct pacer_inodes *c)
{
	free(c->seen);
	c->seen = NULL;
}

uint64_t pacer_run_latency(const struct dl_dev_model *m, uint64_t key, uint64_t i,
			   uint64_t run_bytes, uint64_t len)
{
	uint64_t before, after;

	/* A plain model's latency is a per-request cost, and a device model's
	 * (transfer) its fixed cost: a continuation's bytes only go through
	 * the token bucket, or the device's transfer. */
	if (!m->lat_size.n || m->transfer)
		return 0;
	/* latency_by_size holds a whole request's time: growing the run's IO
	 * from run_bytes by len takes the difference (the same draw at both
	 * sizes, so the fixed part cancels). */
	before = pacer_dev_latency(m, key, i, run_bytes);
	after = pacer_dev_latency(m, key, i, run_bytes + len);
	return after > before ? after - before : 0;
}
