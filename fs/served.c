/* A bit per synthetic file (dataset, split, part, index), in chunks of
 * 64 Ki files allocated when a file of the chunk is first opened: a full
 * pass over 10 million files costs 1.25 MB, a few files a few chunks.
 * Marking happens once per open, so one mutex is plenty. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"
#include "served.h"

#define CHUNK_BITS 16
#define CHUNK_FILES (1ULL << CHUNK_BITS)
#define CHUNK_WORDS (CHUNK_FILES / 64)

struct chunk {
	uint64_t key; /* the file's inode number with its index >> CHUNK_BITS */
	uint64_t bits[CHUNK_WORDS];
};

struct dl_served {
	pthread_mutex_t lock;
	struct chunk **tab; /* open addressing, cap a power of two */
	size_t n, cap;
};

static uint64_t key_of(const struct dl_node *n)
{
	return dl_ino_make(DL_NODE_FILE, n->ds, n->split, n->part, n->index >> CHUNK_BITS);
}

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

int dl_served_new(struct dl_served **out)
{
	struct dl_served *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

static void free_tab(struct chunk **tab, size_t cap)
{
	for (size_t i = 0; tab && i < cap; i++)
		free(tab[i]);
	free(tab);
}

void dl_served_free(struct dl_served *s)
{
	if (!s)
		return;
	free_tab(s->tab, s->cap);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int grow(struct dl_served *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 64;
	struct chunk **nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		struct chunk *c = s->tab[i];
		size_t j;

		if (!c)
			continue;
		for (j = slot_of(c->key, ncap); nt[j]; j = (j + 1) & (ncap - 1))
			;
		nt[j] = c;
	}
	free(s->tab);
	s->tab = nt;
	s->cap = ncap;
	return 0;
}

int dl_served_mark(struct dl_served *s, const struct dl_node *n)
{
	uint64_t key = key_of(n), bit = n->index & (CHUNK_FILES - 1);
	struct chunk *c = NULL;
	int ret = 0;
	size_t j;

	pthread_mutex_lock(&s->lock);
	if (2 * (s->n + 1) > s->cap && (ret = grow(s)))
		goto out;
	for (j = slot_of(key, s->cap); s->tab[j]; j = (j + 1) & (s->cap - 1)) {
		if (s->tab[j]->key == key) {
			c = s->tab[j];
			break;
		}
	}
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c) {
			ret = -ENOMEM;
			goto out;
		}
		c->key = key;
		s->tab[j] = c;
		s->n++;
	}
	c->bits[bit / 64] |= 1ULL << (bit % 64);
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

uint64_t dl_served_drain(struct dl_served *s, void (*fn)(void *arg, const struct dl_node *n),
			 void *arg)
{
	struct chunk **tab;
	uint64_t count = 0;
	size_t cap;

	/* Take the table: opens from now on mark a fresh one. */
	pthread_mutex_lock(&s->lock);
	tab = s->tab;
	cap = s->cap;
	s->tab = NULL;
	s->cap = s->n = 0;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < cap; i++) {
		struct chunk *c = tab[i];
		struct dl_node n = {.type = DL_NODE_FILE};

		if (!c)
			continue;
		n.ds = dl_ino_ds(c->key);
		n.split = dl_ino_split(c->key);
		n.part = dl_ino_part(c->key);
		for (uint64_t w = 0; w < CHUNK_WORDS; w++) {
			for (uint64_t b = c->bits[w]; b; b &= b - 1) {
				n.index = (dl_ino_index(c->key) << CHUNK_BITS) |
					  (w * 64 + (uint64_t)__builtin_ctzll(b));
				fn(arg, &n);
				count++;
			}
		}
	}
	free_tab(tab, cap);
	return count;
}
