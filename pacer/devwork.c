/* What a device actually does for the requests a mount receives. The mount
 * sees requests as the FUSE kernel module sends them; a block device behind
 * a local file system would see less:
 *
 * - merged runs: the page cache reads a file ahead and the block layer
 *   merges adjacent pages into one bio (up to max_sectors_kb), so the
 *   pieces a buffered reader's file arrives in (a whole-file read split in
 *   128 KiB FUSE reads, or a reader's 8 KiB read() calls without the page
 *   cache) are one IO on the device. A read that starts where the previous
 *   read of its file ended, while that one is in service or within
 *   PACER_RUN_WINDOW_NS of its due time, and keeps the run within
 *   PACER_RUN_MAX bytes, continues the run: its bytes are transferred but it
 *   takes no IOPS slot and pays no per-request cost. Only requests the
 *   caller marks DL_PREQ_BUFFERED merge: an O_DIRECT read is one IO as on a
 *   real device. Streams are kept in a small table (the most recent
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

const struct pacer_run *pacer_run_continues(struct pacer_runs *t, uint64_t file, uint64_t off,
					    uint64_t len, uint64_t now)
{
	struct pacer_run *r;

	for (unsigned i = 0; i < PACER_RUN_SLOTS; i++) {
		r = &t->run[i];
		if (!r->live || r->file != file || r->end != off)
			continue;
		if (now > r->due + PACER_RUN_WINDOW_NS || r->bytes + len > PACER_RUN_MAX)
			return NULL;
		return r;
	}
	return NULL;
}

void pacer_run_note(struct pacer_runs *t, uint64_t file, uint64_t off, uint64_t len, uint64_t due,
		    int cont)
{
	struct pacer_run *r = NULL;
	unsigned i;

	/* The file's stream (continued or restarted), else the oldest slot. */
	for (i = 0; i < PACER_RUN_SLOTS; i++)
		if (t->run[i].live && t->run[i].file == file) {
			r = &t->run[i];
			break;
		}
	if (!r) {
		r = &t->run[0];
		for (i = 1; i < PACER_RUN_SLOTS && r->live; i++)
			if (!t->run[i].live || t->run[i].due < r->due)
				r = &t->run[i];
	}
	if (!cont || !r->live || r->file != file)
		r->bytes = 0;
	r->live = 1;
	r->file = file;
	r->end = off + len;
	r->bytes += len;
	/* Pieces of one run complete in order on the device: the run's end
	 * is its latest piece's. */
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
