/* Per-request tracing: one compact binary record per request, written through
 * per-thread buffers by a writer thread; never blocks a request. When the
 * writer falls behind, records are dropped and counted (stats and footer).
 *
 * File layout (little-endian):
 *   header: struct dl_trace_header
 *   records: struct dl_trace_rec, in arrival order per writer batch (not globally sorted)
 *   name table: for each file id seen, a struct dl_trace_name followed by len bytes of path;
 *               for each job seen, its name under the id DL_TRACE_JOB_ID(job)
 *   footer: struct dl_trace_footer (fixed size, last bytes of the file)
 * Version 2: pid is the client's process, tid its thread, job its job (fs/clients.h).
 * Version 1: pid was the client's thread, tid the daemon's worker thread, no job.
 * Version 3: the traces of a cluster's nodes merged into one timeline (dlio-trace
 *   merge): each record is a struct dl_trace_rec_node (its node after the
 *   version 2 record), all on the monotonic clock of the node that started
 *   first (the header's start_mono_ns and epoch_ns are that node's); file
 *   and job ids are the merged ones (one per name), and the name table also
 *   names each node's source trace under DL_TRACE_NODE_ID(node).
 */
#ifndef DLIOFS_TRACE_H
#define DLIOFS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define DL_TRACE_MAGIC "DLIOTRC1"
#define DL_TRACE_VERSION 2
/* A merged trace: the records carry their node. */
#define DL_TRACE_VERSION_MERGED 3

enum dl_trace_op {
	DL_TOP_LOOKUP = 1,
	DL_TOP_GETATTR,
	DL_TOP_OPEN,
	DL_TOP_READ,
	DL_TOP_WRITE,
	DL_TOP_READDIR,
	DL_TOP_OPENDIR,
	DL_TOP_RELEASE,
	DL_TOP_STATFS,
	DL_TOP_CREATE,
	DL_TOP_FSYNC,
	DL_TOP_OTHER,
	/* since version 2 */
	DL_TOP_FLUSH,
	DL_TOP_RELEASEDIR,
	DL_TOP_SETATTR,
	DL_TOP_READLINK,
	DL_TOP_MKNOD,		/* mknod, mkdir, symlink, link: a new name */
	DL_TOP_UNLINK,		/* unlink, rmdir */
	DL_TOP_RENAME,
	DL_TOP_FSYNCDIR,
	DL_TOP__COUNT
};

/* Names of jobs share the name table with files, under these ids. */
#define DL_TRACE_JOB_BIT (1ULL << 63)
#define DL_TRACE_JOB_ID(job) (DL_TRACE_JOB_BIT | (uint64_t)(job))
/* A merged trace names each node's source trace under this id (both bits:
 * a file's id may have bit 62, a job's never). */
#define DL_TRACE_NODE_BIT (1ULL << 62)
#define DL_TRACE_NODE_ID(node) (DL_TRACE_JOB_BIT | DL_TRACE_NODE_BIT | (uint64_t)(node))

struct dl_trace_header {
	char magic[8];		/* DL_TRACE_MAGIC */
	uint32_t version;
	uint32_t rec_size;	/* sizeof(struct dl_trace_rec) */
	uint64_t epoch_ns;	/* CLOCK_REALTIME at start_mono_ns: converts to wall time */
	uint64_t start_mono_ns;	/* CLOCK_MONOTONIC when tracing started */
	uint32_t ops_mask;	/* bit (1 << op) set for traced ops */
	uint32_t node;		/* a cluster of mounts' node: its rank + 1 (0: a mount alone;
				 * traces before the cluster had 0 here) */
	char config[256];	/* config file of the mount */
};

struct dl_trace_rec {
	uint64_t start_ns;	/* CLOCK_MONOTONIC at arrival */
	uint32_t dur_ns_lo;	/* duration until the reply, low 32 bits */
	uint16_t dur_ns_hi;	/* high 16 bits (48-bit durations: ~78 h) */
	uint8_t op;		/* enum dl_trace_op */
	uint8_t flags;		/* bit 0: cache hit (emulated), bit 1: error, bit 2: a buffered
				 * reader's call (the model reads ahead for it) */
	uint32_t queue_ns;	/* delay added by the pacer (saturating) */
	uint32_t pid;		/* the client's process */
	uint32_t tid;		/* the client's thread */
	int32_t result;		/* bytes, or -errno */
	uint64_t file_id;	/* see the name table */
	uint64_t offset;
	uint32_t size;		/* bytes requested */
	uint32_t job;		/* the client's job (0: none known; version 1: always 0) */
};

/* A record of a merged trace (version 3): rec_size is at least its size. */
struct dl_trace_rec_node {
	struct dl_trace_rec rec;
	uint32_t node;		/* the node that served it (rank + 1) */
	uint32_t reserved;	/* 0 */
};

struct dl_trace_name {
	uint64_t file_id;
	uint32_t len;		/* bytes of path that follow (no NUL) */
	uint32_t reserved;
};

struct dl_trace_footer {
	uint64_t nrecords;
	uint64_t dropped;	/* records lost because the writer fell behind */
	uint64_t names_offset;	/* file offset of the name table */
	uint64_t nnames;
	uint64_t end_mono_ns;
	char magic[8];		/* DL_TRACE_MAGIC again */
};

static inline uint64_t dl_trace_dur(const struct dl_trace_rec *r)
{
	return (uint64_t)r->dur_ns_lo | ((uint64_t)r->dur_ns_hi << 32);
}

/* ---- op names (trace/ops.c) ---- */
/* "read", "open", ...; "other" for an unknown op. */
const char *dl_trace_op_name(unsigned op);
/* One name ("all": every op) to its bit (1 << enum dl_trace_op). */
int dl_trace_op_bit(const char *name, uint32_t *bit);
/* "read,open" (commas or blanks; NULL or "": all) to a mask. */
int dl_trace_ops_parse(const char *s, uint32_t *mask, char *err, size_t errlen);

/* ---- trace targets (trace/target.c) ---- */
/* Open path for a trace: an existing regular file (followed through links)
 * or a new one made with O_EXCL (mode 0644), on an ordinary filesystem.
 * Refused with -EINVAL and why: a directory, FIFO, device or socket (looked
 * at before it is opened, so nothing blocks and no driver is opened), or a
 * file of /proc, /sys or another kernel interface filesystem. Nothing is
 * truncated or written. *created: the file is new (for
 * dl_trace_discard_target). why may be NULL. */
int dl_trace_open_target(const char *path, int *fd, int *created, char *why, size_t whylen);
/* Close fd, and remove path first if created and it still names fd's file. */
void dl_trace_discard_target(const char *path, int fd, int created);

/* ---- the recorder (trace/recorder.c) ---- */
struct dl_trace;
/* Start writing to path (opened with dl_trace_open_target; a file this call
 * created is removed again if the start fails). path_of(file_id) gives the
 * path for the name table at stop time (called from the writer thread; may
 * return NULL). */
int dl_trace_start(const char *path, const char *config, uint32_t ops_mask,
		   int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len), void *arg,
		   struct dl_trace **out);
/* The same on a target fd from dl_trace_open_target (and whatever checks the
 * caller adds): truncated here, then written. Takes fd, closed on failure. */
int dl_trace_start_fd(int fd, const char *config, uint32_t ops_mask,
		      int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
		      void *arg, struct dl_trace **out);
/* The same for node `node` of a cluster of mounts (its rank + 1), which the
 * header carries. */
int dl_trace_start_fd_node(int fd, const char *config, uint32_t ops_mask, uint32_t node,
			   int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
			   void *arg, struct dl_trace **out);
/* Never blocks; a full buffer drops the record and counts it. Thread-safe. */
void dl_trace_record(struct dl_trace *t, const struct dl_trace_rec *r);
/* Call fn once, from the writer thread, when writing fails (a full disk):
 * records are dropped and counted from then on, and the file still gets
 * its footer. written: records in the file so far. */
void dl_trace_on_error(struct dl_trace *t, void (*fn)(void *arg, int err, uint64_t written),
		       void *arg);
/* The write error that stopped recording (-ENOSPC...), 0: none. */
int dl_trace_error(const struct dl_trace *t);
/* What a stopped trace holds: the footer's counts, and why records were
 * lost (the rings full: the writer fell behind; io: a write failed). */
struct dl_trace_result {
	uint64_t written;	/* records in the file */
	uint64_t dropped_rings;	/* lost because the writer fell behind */
	uint64_t dropped_io;	/* lost because a write failed */
	int err;		/* that write's error (-ENOSPC...), 0: none */
	int footer;		/* the file was closed with its footer */
};
/* Flush, write the name table and footer, close; res (may be NULL) says
 * what the file holds. Returns 0, or the first write error (-errno): after
 * one the file is still closed with its footer when the reserve allowed,
 * which it does for a full disk (res->footer). */
int dl_trace_finish(struct dl_trace *t, struct dl_trace_result *res);
int dl_trace_stop(struct dl_trace *t);
uint64_t dl_trace_dropped(const struct dl_trace *t);
uint64_t dl_trace_written(const struct dl_trace *t);

/* ---- reading a trace file (trace/load.c): the layer reads what it writes ---- */
struct dl_trace_file_name {
	uint64_t id;
	const char *name; /* NUL-terminated, in dl_trace_file.name_buf */
};

struct dl_trace_file {
	const char *path;
	struct dl_trace_header h;
	int has_footer; /* 0: the trace was not closed (daemon killed) */
	struct dl_trace_footer f;
	uint64_t nrecs;
	struct dl_trace_rec *recs;	  /* sorted by start time */
	uint32_t *nodes;		  /* a merged trace: each record's node; else NULL */
	uint32_t nnodes;		  /* distinct nodes among the records (1 unless merged) */
	struct dl_trace_file_name *names; /* sorted by id */
	size_t nnames;
	char *name_buf;
};

/* Load and check path: 0, or a negative errno (-EINVAL: not a sound trace)
 * with why saying what was wrong in a few words; t is empty on failure. */
int dl_trace_load(const char *path, struct dl_trace_file *t, char *why, size_t whylen);
/* The same for a trace already in memory; name stands for the path and
 * must outlive t. */
int dl_trace_load_mem(const char *name, const void *buf, size_t len, struct dl_trace_file *t,
		      char *why, size_t whylen);
/* What a loaded trace lacks, to say once (no footer: no names, no drop
 * count), or NULL. */
const char *dl_trace_file_warning(const struct dl_trace_file *t);
void dl_trace_file_free(struct dl_trace_file *t);
/* Name of a file id, or NULL when the name table lacks it. */
const char *dl_trace_name_find(const struct dl_trace_file *t, uint64_t id);
/* Name of a file id, or "#ID" (written into tmp) when it has none. */
const char *dl_trace_name_of(const struct dl_trace_file *t, uint64_t id, char *tmp, size_t len);
/* The node of record i: its own in a merged trace, else the header's. */
static inline uint32_t dl_trace_node(const struct dl_trace_file *t, uint64_t i)
{
	return t->nodes ? t->nodes[i] : t->h.node;
}
/* Seconds since the trace started (negative for requests that arrived
 * before tracing began and were replied to after). */
double dl_trace_rel_s(const struct dl_trace_file *t, uint64_t mono_ns);
/* End of the trace: the footer's, or the last reply when there is none. */
uint64_t dl_trace_end_ns(const struct dl_trace_file *t);

#endif
