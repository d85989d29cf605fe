/* Bounded cache of derived 32-bit values (CRCs) keyed by two 64-bit words.
 * Direct-mapped with lock striping: memory is fixed at creation whatever the
 * dataset size, and a lost entry only costs a recomputation. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "dliofs/format.h"
#include "dliofs/prng.h"
#include "formats_i.h"

#define DCACHE_STRIPES 64

struct dcache_entry {
	uint64_t k1, k2;
	uint32_t val;
	uint32_t used;
};

struct dl_dcache {
	size_t nentries; /* power of two */
	struct dcache_entry *e;
	pthread_mutex_t lock[DCACHE_STRIPES];
};

int dl_dcache_init(struct dl_dcache **out, size_t entries)
{
	struct dl_dcache *c;
	size_t n = 1;

	while (n < entries)
		n <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->e = calloc(n, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return -ENOMEM;
	}
	c->nentries = n;
	for (int i = 0; i < DCACHE_STRIPES; i++)
		pthread_mutex_init(&c->lock[i], NULL);
	*out = c;
	return 0;
}

void dl_dcache_destroy(struct dl_dcache *c)
{
	if (!c)
		return;
	for (int i = 0; i < DCACHE_STRIPES; i++)
		pthread_mutex_destroy(&c->lock[i]);
	free(c->e);
	free(c);
}

static inline size_t slot(const struct dl_dcache *c, uint64_t k1, uint64_t k2)
{
	return (size_t)(dl_key2(k1, k2) & (c->nentries - 1));
}

int dl_dcache_get(struct dl_fmt_ctx *ctx, uint64_t k1, uint64_t k2, uint32_t *val)
{
	struct dl_dcache *c = ctx->dcache;
	size_t s = slot(c, k1, k2);
	pthread_mutex_t *l = &c->lock[s % DCACHE_STRIPES];
	int ret = -ENOENT;

	pthread_mutex_lock(l);
	if (c->e[s].used && c->e[s].k1 == k1 && c->e[s].k2 == k2) {
		*val = c->e[s].val;
		ret = 0;
	}
	pthread_mutex_unlock(l);
	return ret;
}

void dl_dcache_put(struct dl_fmt_ctx *ctx, uint64_t k1, uint64_t k2, uint32_t val)
{
	struct dl_dcache *c = ctx->dcache;
	size_t s = slot(c, k1, k2);
	pthread_mutex_t *l = &c->lock[s % DCACHE_STRIPES];

	pthread_mutex_lock(l);
	c->e[s] = (struct dcache_entry){.k1 = k1, .k2 = k2, .val = val, .used = 1};
	pthread_mutex_unlock(l);
}
