/* util/htab.c, the hash table of the backing and sink inode tables: growth
 * keeps every entry findable, equal hashes are told apart by the caller,
 * deletes take out exactly one entry, drain visits each entry once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/htab.h"
#include "tap.h"

struct ent {
	uint64_t key;
	int drained;
	struct dl_hlink by_key, by_mod;	/* two tables, as the inode tables have */
};

#define N 20000
#define MOD 97 /* by_mod: many entries share a hash */

static struct ent *find(struct dl_htab *t, uint64_t key)
{
	for (struct dl_hlink *l = dl_htab_first(t, key); l; l = dl_htab_next(l)) {
		struct ent *e = dl_hentry(l, struct ent, by_key);

		if (e->key == key)
			return e;
	}
	return NULL;
}

static size_t count_mod(struct dl_htab *t, uint64_t m)
{
	size_t n = 0;

	for (struct dl_hlink *l = dl_htab_first(t, m); l; l = dl_htab_next(l)) {
		struct ent *e = dl_hentry(l, struct ent, by_mod);

		n += e->key % MOD == m;
	}
	return n;
}

static void mark(struct dl_hlink *l, void *arg)
{
	dl_hentry(l, struct ent, by_key)->drained++;
	(*(size_t *)arg)++;
}

int main(void)
{
	struct dl_htab by_key = {0}, by_mod = {0};
	struct ent *v = calloc(N, sizeof(*v));
	size_t bad = 0, visited = 0;

	CHECK(v != NULL, "calloc");
	CHECK(dl_htab_first(&by_key, 1) == NULL, "an empty table finds nothing");
	for (size_t i = 0; i < N; i++) {
		v[i].key = i * 7 + 1;
		CHECK(dl_htab_reserve(&by_key, by_key.count + 1) == 0, "reserve");
		CHECK(dl_htab_reserve(&by_mod, by_mod.count + 1) == 0, "reserve");
		dl_htab_add(&by_key, &v[i].by_key, v[i].key);
		dl_htab_add(&by_mod, &v[i].by_mod, v[i].key % MOD);
	}
	CHECK(by_key.count == N && by_key.nbuckets >= N, "count %zu, buckets %zu", by_key.count,
	      by_key.nbuckets);
	CHECK((by_key.nbuckets & (by_key.nbuckets - 1)) == 0, "a power of two");
	for (size_t i = 0; i < N; i++)
		bad += find(&by_key, v[i].key) != &v[i];
	CHECK(bad == 0, "%zu entries lost in growth", bad);
	CHECK(find(&by_key, 0) == NULL && find(&by_key, 3) == NULL, "absent keys");
	CHECK(count_mod(&by_mod, 5) > 1, "equal hashes chained");

	/* Delete every other entry from both tables. */
	for (size_t i = 0; i < N; i += 2) {
		dl_htab_del(&by_key, &v[i].by_key);
		dl_htab_del(&by_mod, &v[i].by_mod);
	}
	CHECK(by_key.count == N / 2 && by_mod.count == N / 2, "count after deletes");
	bad = 0;
	for (size_t i = 0; i < N; i++)
		bad += find(&by_key, v[i].key) != (i % 2 ? &v[i] : NULL);
	CHECK(bad == 0, "%zu wrong after deletes", bad);
	bad = 0;
	for (uint64_t m = 0; m < MOD; m++) {
		size_t want = 0;

		for (size_t i = 1; i < N; i += 2)
			want += v[i].key % MOD == m;
		bad += count_mod(&by_mod, m) != want;
	}
	CHECK(bad == 0, "%zu shared hashes miscounted", bad);

	/* Drain: every filed entry once, then an empty table. */
	dl_htab_drain(&by_key, mark, &visited);
	CHECK(visited == N / 2, "drained %zu", visited);
	bad = 0;
	for (size_t i = 0; i < N; i++)
		bad += v[i].drained != (int)(i % 2);
	CHECK(bad == 0, "%zu drained wrongly", bad);
	CHECK(by_key.count == 0 && by_key.nbuckets == 0 && !by_key.b, "empty after drain");
	dl_htab_free(&by_mod);

	CHECK(dl_hash_str(1, "a") != dl_hash_str(2, "a"), "the seed matters");
	CHECK(dl_hash_str(1, "ab") != dl_hash_str(1, "ba"), "the order matters");
	free(v);
	return tap_done("htab");
}
