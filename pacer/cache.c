/* Emulated cache: residency metadata only. A block is (file id, block index);
 * no data is kept, so a 200 GiB cache of 1 MiB blocks costs 200k entries of
 * 32 bytes. Entries are allocated as the cache fills, not at creation, so a
 * large cache over a small dataset stays small.
 * Capacity is in bytes: a block occupies what the file holds in it, rounded
 * up to DL_CACHE_UNIT, so the last block of a file (all of a small file)
 * costs its own size, not a whole block. A cache of half a dataset of 110 kB
 * JPEGs then holds half of the files, as a page cache would.
 *   lru:   a hit moves the block to the front; a miss inserts it, evicting the
 *          least recently used blocks until it fits.
 *   minio: a miss inserts the block while it fits; nothing is ever evicted
 *          (CoorDL's MinIO: the first blocks seen stay for good).
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
	uint32_t hnext;	     /* hash chain; the free list for free entries */
	uint32_t units;	     /* DL_CACHE_UNITs the block occupies; 0: a free entry */
};

struct pacer_cache {
	enum dl_cache_policy policy;
	uint64_t block;
	uint64_t cap_units;   /* DL_CACHE_UNITs the cache holds */
	uint64_t used_units;  /* DL_CACHE_UNITs resident */
	uint32_t max_entries; /* entries it may ever need (at most PACER_MAX_CACHE_BLOCKS) */
	uint32_t n;	      /* resident entries */
	uint32_t top, alloc;  /* entries ever handed out / allocated */
	uint32_t free_head;   /* entries given back by eviction */
	struct centry *e;
	uint32_t *bucket; /* hash heads, nbuckets a power of two */
	uint32_t nbuckets;
	uint32_t head, tail;
};

_Static_assert(PACER_MAX_CACHE_BLOCKS < NIL, "cache indices are 32-bit");

int pacer_cache_new(const struct dl_cache_cfg *cfg, struct pacer_cache **out)
{
	struct pacer_cache *c;
	uint64_t blocks = pacer_cache_blocks(cfg), entries;

	if (!cfg->block || blocks > PACER_MAX_CACHE_BLOCKS)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->policy = cfg->policy;
	c->block = cfg->block;
	if (cfg->policy == DL_CACHE_LRU || cfg->policy == DL_CACHE_MINIO)
		c->cap_units = cfg->size / DL_CACHE_UNIT;
	/* Small files need an entry each: up to one per unit of capacity,
	 * bounded like blocks are (past it LRU recycles, MinIO stops filling). */
	entries = c->cap_units;
	if (entries > PACER_MAX_CACHE_BLOCKS)
		entries = PACER_MAX_CACHE_BLOCKS;
	c->max_entries = (uint32_t)entries;
	c->head = c->tail = c->free_head = NIL;
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
	c->n = c->top = 0;
	c->used_units = 0;
	c->head = c->tail = c->free_head = NIL;
	if (c->bucket)
		memset(c->bucket, 0xff, c->nbuckets * sizeof(*c->bucket));
}

uint64_t pacer_cache_resident(const struct pacer_cache *c) { return c->used_units * DL_CACHE_UNIT; }

uint64_t pacer_cache_entries(const struct pacer_cache *c) { return c->n; }

uint64_t pacer_cache_capacity(const struct pacer_cache *c) { return c->cap_units * DL_CACHE_UNIT; }

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

/* Room for one more entry: grow the arrays geometrically up to the bound.
 * Returns -ENOSPC at the bound, -ENOMEM when memory runs out. */
static int grow(struct pacer_cache *c)
{
	uint32_t na, nb, i;
	struct centry *ne;
	uint32_t *bk;

	if (c->top == c->alloc) {
		if (c->alloc >= c->max_entries)
			return -ENOSPC;
		na = c->alloc ? c->alloc * 2 : 1024;
		if (na > c->max_entries)
			na = c->max_entries;
		ne = realloc(c->e, (size_t)na * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		c->e = ne;
		c->alloc = na;
	}
	if (c->top >= c->nbuckets) {
		/* Load factor at most 1: chains stay short. */
		nb = c->nbuckets ? c->nbuckets * 2 : 1024;
		bk = malloc((size_t)nb * sizeof(*bk));
		if (!bk)
			return -ENOMEM;
		free(c->bucket);
		c->bucket = bk;
		c->nbuckets = nb;
		memset(bk, 0xff, (size_t)nb * sizeof(*bk));
		for (i = 0; i < c->top; i++)
			if (c->e[i].units)
				hash_link(c, i);
	}
	return 0;
}

/* Take the least recently used entry out; it goes to the free list. */
static void evict_tail(struct pacer_cache *c)
{
	uint32_t i = c->tail;

	list_unlink(c, i);
	hash_unlink(c, i);
	c->used_units -= c->e[i].units;
	c->e[i].units = 0;
	c->e[i].hnext = c->free_head;
	c->free_head = i;
	c->n--;
}

/* An entry to fill: a freed one, a new one, or (LRU at the entry bound) the
 * least recently used one. NIL when none can be had. */
static uint32_t take_entry(struct pacer_cache *c)
{
	uint32_t i;

	if (c->free_head == NIL && grow(c) && c->policy == DL_CACHE_LRU && c->tail != NIL)
		evict_tail(c);
	if (c->free_head != NIL) {
		i = c->free_head;
		c->free_head = c->e[i].hnext;
		return i;
	}
	if (c->top < c->alloc && c->top < c->nbuckets)
		return c->top++;
	return NIL;
}

/* Use block (file, blk) of `units` units: make it most recent, or resident
 * if the policy allows. Returns 1 if it was resident before. */
static int use_block(struct pacer_cache *c, uint64_t file, uint64_t blk, uint32_t units)
{
	uint32_t i = find(c, file, blk);

	if (i != NIL) {
		if (c->policy == DL_CACHE_LRU && c->head != i) {
			list_unlink(c, i);
			list_push_front(c, i);
		}
		return 1;
	}
	if (units > c->cap_units)
		return 0;
	if (c->policy == DL_CACHE_LRU) {
		while (c->used_units + units > c->cap_units && c->tail != NIL)
			evict_tail(c);
	} else if (c->used_units + units > c->cap_units) {
		return 0;
	}
	i = take_entry(c);
	if (i == NIL)
		return 0;
	c->e[i].file = file;
	c->e[i].blk = blk;
	c->e[i].units = units;
	c->used_units += units;
	c->n++;
	hash_link(c, i);
	list_push_front(c, i);
	return 0;
}

/* Units block blk of a file of size bytes occupies (size 0: unknown, a
 * whole block). */
static uint32_t block_units(const struct pacer_cache *c, uint64_t size, uint64_t blk)
{
	uint64_t lo = blk * c->block, bytes = c->block;

	if (size && size > lo && size - lo < bytes)
		bytes = size - lo;
	return (uint32_t)((bytes + DL_CACHE_UNIT - 1) / DL_CACHE_UNIT);
}

uint64_t pacer_cache_access(struct pacer_cache *c, uint64_t file, uint64_t size, uint64_t off,
			    uint64_t len)
{
	uint64_t b, first, last, lo, hi, hit = 0;

	if (!c || !c->cap_units || !len)
		return 0;
	if (len > UINT64_MAX - off)
		len = UINT64_MAX - off;
	first = off / c->block;
	last = (off + len - 1) / c->block;
	for (b = first; b <= last; b++) {
		lo = b == first ? off : b * c->block;
		hi = b == last ? off + len : (b + 1) * c->block;
		if (use_block(c, file, b, block_units(c, size, b)))
			hit += hi - lo;
	}
	return hit;
}

void pacer_cache_warm(struct pacer_cache *c, uint64_t file, uint64_t len)
{
	uint64_t b, last, keep;

	if (!c || !c->cap_units || !len)
		return;
	last = (len - 1) / c->block;
	/* LRU keeps only the last blocks that fit of a long range, so start
	 * there: warming a huge file costs at most a cache's worth of steps. */
	keep = c->cap_units / block_units(c, 0, 0) + 1;
	b = c->policy == DL_CACHE_LRU && last >= keep ? last - keep + 1 : 0;
	for (; b <= last; b++) {
		uint32_t u = block_units(c, len, b);

		if (c->policy == DL_CACHE_MINIO && c->used_units + u > c->cap_units)
			break;
		use_block(c, file, b, u);
	}
}
