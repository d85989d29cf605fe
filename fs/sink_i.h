/* Private to fs/sink*.c: a sink's in-memory tree. Every function here
 * expects s->lock held. */
#ifndef DLIOFS_FS_SINK_I_H
#define DLIOFS_FS_SINK_I_H

#include <time.h>

#include "backing_i.h"

struct sk_node {
	uint64_t id;
	struct sk_node *parent;	/* NULL: the root, or unlinked */
	char *name;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	int dirty;		/* written since its journal line (sink_journal.c) */
	struct timespec atime, mtime, ctime;
	uint64_t nlookup;
	struct sk_keep *keep;	/* bytes kept of what was written (sink_keep.c), or NULL */
	struct sk_node **kids;	/* directories: children sorted by id */
	size_t nkids, kcap;
	uint32_t nsubdirs;
	struct dl_hlink by_id, by_name;	/* in dl_sink's tables (by_name: while linked) */
};

struct dl_sink {
	pthread_mutex_t lock;
	const char *at;
	struct sk_node root;
	struct dl_htab by_id;	/* every node but the root, unlinked ones the kernel holds too */
	struct dl_htab by_name;	/* linked nodes by (parent id, name) */
	size_t max;		/* entries at most (the root not counted): ENOSPC beyond */
	uint64_t next_id;
	_Atomic uint64_t discarded, read_back;	/* bytes written, bytes read */
	uint64_t kept, unkept;	/* bytes kept now (sink_keep.c); small writes not kept (caps) */
	int keep_said;		/* the log said a cap was reached */
	/* The journal (sink_journal.c; jfd -1: none): the table kept across
	 * mounts. jlines: lines since it was last rewritten; jerr: the error
	 * that stopped it (fsync then fails). */
	int jfd;
	char *jpath;
	uint64_t jlines;
	int jerr;
};

struct sk_node *sk_find_id(struct dl_sink *s, uint64_t id);
struct sk_node *sk_find_name(struct dl_sink *s, const struct sk_node *dir, const char *name);
/* First child of dir with an id >= id (children are sorted by id). */
size_t sk_kid_pos(const struct sk_node *dir, uint64_t id);
/* A new file or directory in dir, owned by the caller c; -ENOSPC past s->max. */
int sk_add(struct dl_sink *s, struct sk_node *dir, const char *name, mode_t mode,
	   const struct fuse_ctx *c, struct sk_node **out);
int sk_remove_locked(struct dl_sink *s, struct sk_node *d, const char *name, int dir);
int sk_rename_locked(struct dl_sink *s, struct sk_node *d, const char *name,
		     struct sk_node *nd, const char *newname, unsigned flags);
void sk_fill_stat(const struct sk_node *n, fuse_ino_t ino, struct stat *st);
/* Path below the sink ("a/b"); -ENOENT once unlinked. */
int sk_path_locked(struct dl_sink *s, const struct sk_node *n, char *buf, size_t len);
void sk_now(struct timespec *t);

/* Kept bytes (sink_keep.c): the headers and small writes a reader must
 * parse, bounded a file and a sink. */
#define SK_KEEP_HEAD 4096u		/* offsets below: always kept */
#define SK_KEEP_SMALL (64u << 10)	/* requests smaller: kept whole */
#define SK_KEEP_GLUE 512u		/* first bytes of a larger request kept */
#define SK_KEEP_FILE (1ull << 20)	/* kept bytes a file at most */
#define SK_KEEP_SINK (256ull << 20)	/* kept bytes a sink at most */
/* A write request of size bytes at off; max_req: the largest request the
 * kernel sends (its pieces of one large write). */
void sk_keep_write(struct dl_sink *s, struct sk_node *n, const char *buf, size_t size,
		   uint64_t off, size_t max_req);
void sk_keep_truncate(struct dl_sink *s, struct sk_node *n, uint64_t size);
/* Lay n's kept bytes in [off, off + len) over dst. */
void sk_keep_read(const struct sk_node *n, uint64_t off, uint8_t *dst, size_t len);
/* s may be NULL (the sink itself is going). */
void sk_keep_free(struct dl_sink *s, struct sk_node *n);

/* The journal (sink_journal.c): opened and replayed at mount (it must lie
 * outside mnt_real); a line for each change; sync at fsync. */
int sk_journal_open(struct dl_sink *s, const char *path, const char *mnt_real);
void sk_journal_close(struct dl_sink *s);
void sk_journal_node(struct dl_sink *s, struct sk_node *n); /* clears n->dirty */
void sk_journal_remove(struct dl_sink *s, const struct sk_node *dir, const char *name);
void sk_journal_rename(struct dl_sink *s, const struct sk_node *d, const char *name,
		       const struct sk_node *nd, const char *newname, unsigned flags);
/* fsync: a descriptor of the journal taken under s->lock (-ENOENT: no
 * journal), then synced and closed without it (the disk's wait holds
 * nobody up): 0 or -EIO. */
int sk_journal_sync_fd(struct dl_sink *s);
int sk_journal_sync(struct dl_sink *s, int fd);

#endif
