/* Emulated cache: residency metadata only. A block is (file id, block index);
 * no data is kept, so a 200 GiB cache of 1 MiB blocks costs 200k entries of
 * 32 bytes. Entries are allocated as the cache fills, not at creation, so a
 * large cache over a small dataset stays small.
 *   lru:   a hit moves the block to the front; a miss inserts it, evicting the
 *          least recently used block when full.
 *   minio: a miss inserts the block while there is room; nothing is ever
 *          evicted (CoorDL's MinIO: the first blocks seen stay for good).
 *   none:  nothing is resident. (kernel: not emulated, no cache object.) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/prng.h"
#include "pacer_i.h"

#define NIL UINT32_MAX

struct centry {
	uint64_t file, blk;
	uint32_t prev, next; /* recency list, most recent at head */
	uint32_t hnext;	     /* hash chain */
	uint32_t pad;
};

struct pacer_cache {
	enum dl_cache_policy policy;
	uint64_t block;
	uint32_t cap;	   /* blocks the cache holds */
	uint32_t n, alloc; /* entries in use / allocated */
	struct centry *e;
	uint32_t *bucket; /* hash heads, nbuckets a power of two */
	uint32_t nbuckets;
	uint32_t head, tail;
};

_Static_assert(PACER_MAX_CACHE_BLOCKS < NIL, "cache indices are 32-bit");

int pacer_cache_new(const struct dl_cache_cfg *cfg, struct pacer_cache **out)
{
	struct pacer_cache *c;
	uint64_t blocks = pacer_cache_blocks(cfg);

	if (!cfg->block || blocks > PACER_MAX_CACHE_BLOCKS)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->policy = cfg->policy;
	c->block = cfg->block;
	c->cap =
	    cfg->policy == DL_CACHE_LRU || cfg->policy == DL_CACHE_MINIO ? (uint32_t)blocks : 0;
	c->head = c->tail = NIL;
	*out = c;
	return 0;
}

void pacer_cache_free(struct pacer_cache *c)
{
	if (!c)
		return;
	free(c->e);
	free(c->bucket);
	free(c);
}

void pacer_cache_clear(struct pacer_cache *c)
{
	/* Keep the allocation: a dropped cache usually fills again. */
	c->n = 0;
	c->head = c->tail = NIL;
	if (c->bucket)
		memset(c->bucket, 0xff, c->nbuckets * sizeof(*c->bucket));
}

uint64_t pacer_cache_resident(const struct pacer_cache *c) { return c->n; }

uint64_t pacer_cache_capacity(const struct pacer_cache *c) { return c->cap; }

static uint32_t hash_of(const struct pacer_cache *c, uint64_t file, uint64_t blk)
{
	return (uint32_t)(dl_key2(file, blk) & (c->nbuckets - 1));
}

static uint32_t find(const struct pacer_cache *c, uint64_t file, uint64_t blk)
{
	uint32_t i;

	if (!c->nbuckets)
		return NIL;
	for (i = c->bucket[hash_of(c, file, blk)]; i != NIL; i = c->e[i].hnext)
		if (c->e[i].blk == blk && c->e[i].file == file)
			return i;
	return NIL;
}

static void list_unlink(struct pacer_cache *c, uint32_t i)
{
	struct centry *e = &c->e[i];

	if (e->prev != NIL)
		c->e[e->prev].next = e->next;
	else
		c->head = e->next;
	if (e->next != NIL)
		c->e[e->next].prev = e->prev;
	else
		c->tail = e->prev;
}

static void list_push_front(struct pacer_cache *c, uint32_t i)
{
	c->e[i].prev = NIL;
	c->e[i].next = c->head;
	if (c->head != NIL)
		c->e[c->head].prev = i;
	c->head = i;
	if (c->tail == NIL)
		c->tail = i;
}

static void hash_unlink(struct pacer_cache *c, uint32_t i)
{
	uint32_t *pp = &c->bucket[hash_of(c, c->e[i].file, c->e[i].blk)];

	while (*pp != i)
		pp = &c->e[*pp].hnext;
	*pp = c->e[i].hnext;
}

static void hash_link(struct pacer_cache *c, uint32_t i)
{
	uint32_t h = hash_of(c, c->e[i].file, c->e[i].blk);

	c->e[i].hnext = c->bucket[h];
	c->bucket[h] = i;
}

/* Room for one more entry: grow the arrays geometrically up to the capacity.
 * Returns -ENOMEM when that is not possible (the block is then not cached). */
static int grow(struct pacer_cache *c)
{
	uint32_t na, nb, i;
	struct centry *ne;
	uint32_t *bk;

	if (c->n < c->alloc && c->n < c->nbuckets)
		return 0;
	if (c->n == c->alloc) {
		na = c->alloc ? c->alloc * 2 : 1024;
		if (na > c->cap)
			na = c->cap;
		ne = realloc(c->e, (size_t)na * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		c->e = ne;
		c->alloc = na;
	}
	if (c->n >= c->nbuckets) {
		/* Load factor at most 1: chains stay short. */
		nb = c->nbuckets ? c->nbuckets * 2 : 1024;
		bk = malloc((size_t)nb * sizeof(*bk));
		if (!bk)
			return -ENOMEM;
		free(c->bucket);
		c->bucket = bk;
		c->nbuckets = nb;
		memset(bk, 0xff, (size_t)nb * sizeof(*bk));
		for (i = 0; i < c->n; i++)
			hash_link(c, i);
	}
	return 0;
}

/* Use block (file, blk): make it most recent, or resident if the policy
 * allows. Returns 1 if it was resident before. */
static int use_block(struct pacer_cache *c, uint64_t file, uint64_t blk)
{
	uint32_t i = find(c, file, blk);

	if (i != NIL) {
		if (c->policy == DL_CACHE_LRU && c->head != i) {
			list_unlink(c, i);
			list_push_front(c, i);
		}
		return 1;
	}
	if (c->n < c->cap && grow(c) == 0) {
		i = c->n++;
	} else if (c->policy == DL_CACHE_LRU && c->tail != NIL) {
		i = c->tail;
		list_unlink(c, i);
		hash_unlink(c, i);
	} else {
		return 0;
	}
	c->e[i].file = file;
	c->e[i].blk = blk;
	hash_link(c, i);
	list_push_front(c, i);
	return 0;
}

uint64_t pacer_cache_access(struct pacer_cache *c, uint64_t file, uint64_t off, uint64_t len)
{
	uint64_t b, first, last, lo, hi, hit = 0;

	if (!c || !c->cap || !len)
		return 0;
	if (len > UINT64_MAX - off)
		len = UINT64_MAX - off;
	first = off / c->block;
	last = (off + len - 1) / c->block;
	for (b = first; b <= last; b++) {
		lo = b == first ? off : b * c->block;
		hi = b == last ? off + len : (b + 1) * c->block;
		if (use_block(c, file, b))
			hit += hi - lo;
	}
	return hit;
}

void pacer_cache_warm(struct pacer_cache *c, uint64_t file, uint64_t len)
{
	uint64_t b, last;

	if (!c || !c->cap || !len)
		return;
	last = (len - 1) / c->block;
	/* LRU keeps only the last `cap` blocks of a long range, so start
	 * there: warming a huge file costs at most `cap` steps. */
	b = c->policy == DL_CACHE_LRU && last >= c->cap ? last - c->cap + 1 : 0;
	for (; b <= last; b++) {
		if (c->policy == DL_CACHE_MINIO && c->n == c->cap)
			break;
		use_block(c, file, b);
	}
}
