/* What an epoch reads and in which order.
 *
 * DLIO maps global sample g to file floor(g / spf), sample g mod spf, after
 * shuffling the file list (file_shuffle) and the sample list (sample_shuffle)
 * with seed + epoch. We keep that mapping but never build the lists: orders
 * are keyed bijections (Feistel network with cycle walking), so memory stays
 * O(1) in the dataset size and unit i of an epoch is computed when needed. */
#include <errno.h>

#include "dliofs/prng.h"
#include "drive_i.h"

#define FEISTEL_ROUNDS 6

void drv_perm_init(struct drv_perm *p, uint64_t n, uint64_t key, int shuffle)
{
	unsigned half = 1;

	while (half < 32 && (1ull << (2 * half)) < n)
		half++;
	p->n = n;
	p->key = key;
	p->half = half;
	p->identity = !shuffle || n < 2;
}

static uint64_t feistel(const struct drv_perm *p, uint64_t x)
{
	const uint64_t mask = (1ull << p->half) - 1;
	uint64_t l = x >> p->half, r = x & mask;

	for (unsigned i = 0; i < FEISTEL_ROUNDS; i++) {
		uint64_t f = dl_mix64(r ^ dl_key2(p->key, i)) & mask;
		uint64_t t = l ^ f;
		l = r;
		r = t;
	}
	return l << p->half | r;
}

uint64_t drv_perm_at(const struct drv_perm *p, uint64_t i)
{
	if (p->identity)
		return i;
	/* The network permutes [0, 4^half), at most 4n values: walking the cycle
	 * until it lands below n takes under 4 steps on average and stays a
	 * bijection of [0, n). */
	uint64_t x = i;
	do
		x = feistel(p, x);
	while (x >= p->n);
	return x;
}

uint64_t drv_epoch_key(uint64_t seed, uint64_t epoch, int change_per_epoch, uint32_t purpose)
{
	return dl_key3(seed, change_per_epoch ? epoch : 0, purpose);
}

int drv_plan_init(struct drv_plan *p, enum drv_unit_kind kind, uint64_t nfiles, uint64_t spf,
		  uint64_t chunk)
{
	*p = (struct drv_plan){.kind = kind, .nfiles = nfiles, .spf = spf};
	if (spf == 0)
		return -EINVAL;
	switch (kind) {
	case DRV_U_FILE:
	case DRV_U_STREAM:
		p->units = nfiles;
		break;
	case DRV_U_SAMPLE:
		if (__builtin_mul_overflow(nfiles, spf, &p->units))
			return -EOVERFLOW;
		break;
	case DRV_U_CHUNK:
		if (chunk == 0)
			return -EINVAL;
		p->chunk = chunk;
		p->cpf = spf / chunk + (spf % chunk != 0);
		if (__builtin_mul_overflow(nfiles, p->cpf, &p->units))
			return -EOVERFLOW;
		break;
	}
	uint64_t total;
	if (__builtin_mul_overflow(nfiles, spf, &total))
		return -EOVERFLOW;
	drv_perm_init(&p->file_perm, nfiles, 0, 0);
	drv_perm_init(&p->unit_perm, p->units, 0, 0);
	return 0;
}

void drv_plan_order(struct drv_plan *p, enum drv_shuffle fs, uint64_t fkey, enum drv_shuffle ss,
		    uint64_t skey)
{
	drv_perm_init(&p->file_perm, p->nfiles, fkey, fs != DRV_SHUF_OFF);
	/* A TFRecord stream's sample order is a shuffle buffer in memory (tf.data):
	 * it changes nothing on storage, so only the file order matters there.
	 * Whole-file units read each file once: the sample order then decides the
	 * order in which files come up. */
	int ssh = ss != DRV_SHUF_OFF && p->kind != DRV_U_STREAM;
	drv_perm_init(&p->unit_perm, p->units, skey, ssh);
}

void drv_plan_unit(const struct drv_plan *p, uint64_t pos, struct drv_unit *u)
{
	uint64_t g = drv_perm_at(&p->unit_perm, pos);

	switch (p->kind) {
	case DRV_U_FILE:
	case DRV_U_STREAM:
		u->file = drv_perm_at(&p->file_perm, g);
		u->sample = 0;
		u->nsamples = p->spf;
		return;
	case DRV_U_SAMPLE:
		u->file = drv_perm_at(&p->file_perm, g / p->spf);
		u->sample = g % p->spf;
		u->nsamples = 1;
		return;
	case DRV_U_CHUNK: {
		uint64_t c = g % p->cpf;
		u->file = drv_perm_at(&p->file_perm, g / p->cpf);
		u->sample = c * p->chunk;
		u->nsamples = p->spf - u->sample < p->chunk ? p->spf - u->sample : p->chunk;
		return;
	}
	}
}

uint64_t drv_plan_samples(const struct drv_plan *p) { return p->nfiles * p->spf; }
