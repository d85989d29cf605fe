/* The intrusive hash table (dliofs/htab.h). */
#include <errno.h>
#include <stdlib.h>

#include "dliofs/htab.h"

#define MIN_BUCKETS 64

/* Keys are ids and inode numbers, often consecutive: mix before masking
 * (the finalizer of MurmurHash3). */
static size_t bucket(uint64_t h, size_t nbuckets)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (size_t)(h & (nbuckets - 1));
}

uint64_t dl_hash_str(uint64_t seed, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (seed * 0x9e3779b97f4a7c15ULL);

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

int dl_htab_reserve(struct dl_htab *t, size_t n)
{
	size_t nb = t->nbuckets ? t->nbuckets : MIN_BUCKETS;
	struct dl_hlink **b;

	while (nb < n)
		nb *= 2;
	if (nb == t->nbuckets)
		return 0;
	b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct dl_hlink *l = t->b[i], *next; l; l = next) {
			size_t k = bucket(l->hash, nb);

			next = l->next;
			l->next = b[k];
			b[k] = l;
		}
	}
	free(t->b);
	t->b = b;
	t->nbuckets = nb;
	return 0;
}

void dl_htab_add(struct dl_htab *t, struct dl_hlink *l, uint64_t hash)
{
	size_t k = bucket(hash, t->nbuckets);

	l->hash = hash;
	l->next = t->b[k];
	t->b[k] = l;
	t->count++;
}

void dl_htab_del(struct dl_htab *t, struct dl_hlink *l)
{
	struct dl_hlink **pp = &t->b[bucket(l->hash, t->nbuckets)];

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	l->next = NULL;
	t->count--;
}

static struct dl_hlink *same_hash(struct dl_hlink *l, uint64_t hash)
{
	while (l && l->hash != hash)
		l = l->next;
	return l;
}

struct dl_hlink *dl_htab_first(const struct dl_htab *t, uint64_t hash)
{
	return t->nbuckets ? same_hash(t->b[bucket(hash, t->nbuckets)], hash) : NULL;
}

struct dl_hlink *dl_htab_next(const struct dl_hlink *l)
{
	return same_hash(l->next, l->hash);
}

void dl_htab_drain(struct dl_htab *t, void (*fn)(struct dl_hlink *l, void *arg), void *arg)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct dl_hlink *l = t->b[i], *next; l; l = next) {
			next = l->next;
			fn(l, arg);
		}
	}
	dl_htab_free(t);
}

void dl_htab_free(struct dl_htab *t)
{
	free(t->b);
	t->b = NULL;
	t->nbuckets = t->count = 0;
}
