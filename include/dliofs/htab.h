/* An intrusive chained hash table (util/htab.c), the one behind the inode
 * tables of backing directories (by handle id and by (dev, ino)) and of
 * sinks (by id and by (parent, name)).
 *
 * An entry embeds a struct dl_hlink per table it is in and is filed under a
 * 64-bit hash of its key that the caller computes; entries whose hashes are
 * equal are told apart by the caller's own comparison. The load factor stays
 * at most one: dl_htab_reserve() before an add, which then cannot fail.
 * No locking. */
#ifndef DLIOFS_HTAB_H
#define DLIOFS_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct dl_hlink {
	struct dl_hlink *next;
	uint64_t hash;
};

struct dl_htab {
	struct dl_hlink **b;
	size_t nbuckets;	/* 0 (nothing allocated yet) or a power of two */
	size_t count;		/* entries filed */
};

/* The entry of type `type` whose member `member` is the link l. */
#define dl_hentry(l, type, member) ((type *)(void *)((char *)(l) - offsetof(type, member)))

/* A 64-bit hash of a string under a seed (FNV-1a), for keys with names. */
uint64_t dl_hash_str(uint64_t seed, const char *s);

/* Room for n entries (buckets doubled from 64 as needed); -ENOMEM. */
int dl_htab_reserve(struct dl_htab *t, size_t n);
/* File l under hash; room must have been reserved. */
void dl_htab_add(struct dl_htab *t, struct dl_hlink *l, uint64_t hash);
/* Take out l, which must be filed. */
void dl_htab_del(struct dl_htab *t, struct dl_hlink *l);
/* The first entry filed under hash, then the next one: NULL after the last. */
struct dl_hlink *dl_htab_first(const struct dl_htab *t, uint64_t hash);
struct dl_hlink *dl_htab_next(const struct dl_hlink *l);
/* fn(l, arg) for every entry (fn may free it), then dl_htab_free(). */
void dl_htab_drain(struct dl_htab *t, void (*fn)(struct dl_hlink *l, void *arg), void *arg);
/* Free the buckets (not the entries); t is empty again. */
void dl_htab_free(struct dl_htab *t);

#endif
