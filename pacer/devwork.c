/* What a device actually does for the requests a mount receives. The mount
 * sees requests as the FUSE kernel module sends them; a block device behind
 * a local file system would see less:
 *
 * - readahead: a buffered reader (not O_DIRECT: an O_DIRECT read is one IO,
 *   as on a real device) gets its file from the page cache, which the
 *   device fills a readahead window at a time, one IO per window; what the
 *   reader asks for again, or skips to inside a window, is there already.
 *   With the mount's page cache bypassed (cache.policy other than kernel)
 *   every read call reaches the mount, and a read the caller marks
 *   DL_PREQ_BUFFERED goes through an emulated readahead per file (its
 *   stream): a read inside the bytes its stream has fetched costs no IO
 *   (it is due when those bytes are); one that starts inside them or right
 *   after them and goes beyond takes the next window; any other starts a
 *   stream. Windows grow as the kernel's (mm/readahead.c): a stream that
 *   starts inside a file reads as is, one from its start or going on from
 *   a read as is takes the first window, its size rounded up to a power of
 *   two times 4 (small) or 2,
 *   each next one 4 or 2 times the last, up to PACER_RUN_MAX, never past
 *   the end of the file. An IO moves its window's bytes (so a reader of
 *   8 KiB calls costs a 110 kB file two IOs, 32 KiB then the rest, and PIL's
 *   header pass then second pass over a JPEG three, as on ext4). A stream
 *   keeps only the last PACER_RUN_KEEP bytes it fetched, and is forgotten
 *   PACER_RUN_WINDOW_NS after its last read or when its job closes the
 *   file (its pages stand for the pages a kernel keeps while a file is
 *   open and read, which serve PIL's second pass over a JPEG; not a cache
 *   of data across opens or epochs: with no client cache, a file opened
 *   and read again pays its IOs again, as on a device whose page cache is
 *   far smaller than the data set), and is a job's own: another job reading the same file pays
 *   its own IOs, as the cache policy says no cache is shared; the table
 *   holds the most recent PACER_RUN_SLOTS streams.
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

static struct pacer_run *stream_of(struct pacer_runs *t, uint64_t file, uint32_t job, uint64_t now)
{
	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++) {
		struct pacer_run *r = &t->run[i];

		if (r->live && r->file == file && r->job == job)
			return now <= r->last + PACER_RUN_WINDOW_NS ? r : NULL;
	}
	return NULL;
}

/* The slot for file's new stream: its old one, a free one, or the one read
 * longest ago. */
static struct pacer_run *new_stream(struct pacer_runs *t, uint64_t file, uint32_t job)
{
	struct pacer_run *r = &t->run[0];

	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++)
		if (t->run[i].live && t->run[i].file == file && t->run[i].job == job)
			return &t->run[i];
	for (unsigned i = 1; i < PACER_RUN_SLOTS && r->live; i++)
		if (!t->run[i].live || t->run[i].last < r->last)
			r = &t->run[i];
	return r;
}

int pacer_ra_read(struct pacer_runs *t, uint64_t file, uint32_t job, uint64_t size, uint64_t off,
		  uint64_t len, uint64_t now, uint64_t *fetch, uint64_t *after)
{
	struct pacer_run *r = stream_of(t, file, job, now);
	uint64_t end = off + len, from, w;

	*after = now;
	if (r && off >= r->lo && off <= r->fetched) {
		if (r->due > now)
			*after = r->due;
		r->last = now;
		if (end <= r->fetched)
			return 0; /* read ahead already */
		/* The stream goes on past what was read: the next window (the
		 * first one after a read that was read as is). */
		from = r->fetched;
		w = r->window ? next_window(r->window) : first_window(end - from);
	} else {
		r = new_stream(t, file, job);
		memset(r, 0, sizeof(*r));
		r->live = 1;
		r->file = file;
		r->job = job;
		r->lo = from = off;
		r->last = now;
		/* The kernel reads ahead from the start of a file; a read
		 * elsewhere is read as is until the reader goes on from it. */
		w = off ? 0 : first_window(len);
	}
	if (w && w < end - from)
		w = end - from;
	/* A read as is leaves no window: the next read takes the first. */
	r->window = w;
	if (!w)
		w = end - from;
	/* Never past the end of the file (a window there reads what is left). */
	if (size && from + w > size)
		w = size > end ? size - from : end - from;
	r->fetched = from + w;
	/* Its pages are what it read last, not all it ever read: no cache
	 * of the file's data is kept. */
	if (r->fetched - r->lo > PACER_RUN_KEEP)
		r->lo = r->fetched - PACER_RUN_KEEP;
	*fetch = w;
	return 1;
}

void pacer_ra_done(struct pacer_runs *t, uint64_t file, uint32_t job, uint64_t due)
{
	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++)
		if (t->run[i].live && t->run[i].file == file && t->run[i].job == job) {
			if (due > t->run[i].due)
				t->run[i].due = due;
			return;
		}
}

void pacer_ra_close(struct pacer_runs *t, uint64_t file, uint32_t job)
{
	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++)
		if (t->run[i].live && t->run[i].file == file && t->run[i].job == job)
			t->run[i].live = 0;
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
