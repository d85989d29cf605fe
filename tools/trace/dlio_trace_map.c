/* Open-addressing hash map from (a, b) to a 64-bit value: per-file,
 * per-pid and per-(pid, file) state of the analyses, millions of entries. */
#include <stdlib.h>

#include "dlio_trace_i.h"

static size_t slot_of(size_t cap, uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

static int grow(struct dt_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct dt_map_ent *ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		const struct dt_map_ent *o = &m->e[i];
		if (!o->used)
			continue;
		size_t j = slot_of(ncap, o->a, o->b);
		while (ne[j].used)
			j = (j + 1) & (ncap - 1);
		ne[j] = *o;
	}
	free(m->e);
	m->e = ne;
	m->cap = ncap;
	return 0;
}

uint64_t *dt_map_find(const struct dt_map *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return NULL;
	size_t j = slot_of(m->cap, a, b);
	while (m->e[j].used) {
		if (m->e[j].a == a && m->e[j].b == b)
			return &m->e[j].v;
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

uint64_t *dt_map_get(struct dt_map *m, uint64_t a, uint64_t b, int *created)
{
	uint64_t *v = dt_map_find(m, a, b);
	if (created)
		*created = !v;
	if (v)
		return v;
	/* At most half full: probes stay short. */
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return NULL;
	size_t j = slot_of(m->cap, a, b);
	while (m->e[j].used)
		j = (j + 1) & (m->cap - 1);
	m->e[j] = (struct dt_map_ent){.a = a, .b = b, .v = 0, .used = 1};
	m->n++;
	return &m->e[j].v;
}

void dt_map_free(struct dt_map *m)
{
	free(m->e);
	m->e = NULL;
	m->cap = m->n = 0;
}
