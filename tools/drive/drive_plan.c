/* What an epoch reads and in which order.
 *
 * DLIO maps global sample g to file floor(g / spf), sample g mod spf, after
 * shuffling the file list (file_shuffle) and the sample list (sample_shuffle)
 * with seed + epoch. We keep that mapping but never build the lists: orders
 * are keyed bijections (Feistel network with cycle walking), so memory stays
 * O(1) in the dataset size and unit i of an epoch is computed when needed.
 *
 * With several ranks each plan is one rank's shard of the split, cut the way
 * DLIO cuts it (drv_plan_shard); the shuffles then permute within the shard
 * (DLIO's samplers shuffle the rank's own range) while the file order stays
 * global, so ranks sharing a seed never read each other's samples. */
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
	p->all_units = p->units;
	p->stride = 1;
	p->s_hi = total;
	p->shard_samples = total;
	drv_perm_init(&p->file_perm, nfiles, 0, 0);
	drv_perm_init(&p->unit_perm, p->units, 0, 0);
	return 0;
}

/* Samples in chunk units [0, u) of a DRV_U_CHUNK plan. */
static uint64_t chunk_samples_before(const struct drv_plan *p, uint64_t u)
{
	uint64_t in = (u % p->cpf) * p->chunk;

	return u / p->cpf * p->spf + (in < p->spf ? in : p->spf);
}

int drv_plan_shard(struct drv_plan *p, unsigned rank, unsigned ranks)
{
	uint64_t total = p->nfiles * p->spf, P = ranks, r = rank;

	if (ranks == 0 || rank >= ranks)
		return -EINVAL;
	p->first = 0;
	p->stride = 1;
	p->rec_mod = p->rec_phase = 0;
	p->s_lo = 0;
	p->s_hi = total;
	p->units = p->all_units;
	p->shard_samples = total;
	p->lanes = p->lane_block = 0;
	if (ranks == 1)
		goto out;
	/* DLIO's samplers give rank r the global samples [r * S, (r + 1) * S),
	 * S = ceil(T / P); the last rank's range stops at T. */
	uint64_t S = total / P + (total % P != 0);
	uint64_t lo = r * S < total ? r * S : total, hi = lo + S < total ? lo + S : total;
	switch (p->kind) {
	case DRV_U_SAMPLE:
		p->first = lo;
		p->units = hi - lo;
		p->shard_samples = hi - lo;
		break;
	case DRV_U_FILE:
		/* The files holding those samples; a file on a range's edge is read
		 * by both ranks, each for its own samples (as DLIO's would). */
		p->s_lo = lo;
		p->s_hi = hi;
		p->first = lo / p->spf;
		p->units = hi > lo ? (hi + p->spf - 1) / p->spf - p->first : 0;
		p->shard_samples = hi - lo;
		break;
	case DRV_U_STREAM:
		if (p->nfiles >= P) {
			/* tf.data's shard(P, r) over the file list: r, r + P, ... */
			p->first = r;
			p->stride = P;
			p->units = (p->nfiles - r + P - 1) / P;
			p->shard_samples = p->units * p->spf;
		} else {
			/* Fewer files than ranks: DLIO shards the record stream, so
			 * every rank reads every file and keeps every P-th record. */
			p->rec_mod = P;
			p->rec_phase = r;
			p->shard_samples = p->nfiles * (r < p->spf ? (p->spf - r + P - 1) / P : 0);
		}
		break;
	case DRV_U_CHUNK: {
		uint64_t U = p->all_units, per = U / P + (U % P != 0);
		uint64_t a = r * per < U ? r * per : U, b = a + per < U ? a + per : U;
		p->first = a;
		p->units = b - a;
		p->shard_samples = chunk_samples_before(p, b) - chunk_samples_before(p, a);
		break;
	}
	}
out:
	drv_perm_init(&p->unit_perm, p->units, p->unit_perm.key, !p->unit_perm.identity);
	return 0;
}

void drv_plan_lanes(struct drv_plan *p, unsigned threads, uint64_t batch)
{
	uint64_t per_unit = p->kind == DRV_U_FILE ? p->spf : 1, blk;

	p->lanes = p->lane_block = 0;
	if ((p->kind != DRV_U_FILE && p->kind != DRV_U_SAMPLE) || threads < 2 || !batch ||
	    batch % per_unit)
		return;
	blk = batch / per_unit;
	/* DLIO splits the rank's samples into equal contiguous parts, one per
	 * thread; with whole batches in every part the interleave is exact. */
	if (!blk || p->units % ((uint64_t)threads * blk) ||
	    (p->kind == DRV_U_FILE && p->shard_samples != p->units * p->spf))
		return;
	p->lanes = threads;
	p->lane_block = blk;
}

/* Position in the epoch -> position in the shard's (shuffled) order. */
static uint64_t lane_pos(const struct drv_plan *p, uint64_t pos)
{
	if (!p->lanes)
		return pos;
	uint64_t b = pos / p->lane_block, within = pos % p->lane_block;
	uint64_t per = p->units / p->lanes;

	return b % p->lanes * per + b / p->lanes * p->lane_block + within;
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
	/* A position in this rank's epoch, to a unit of the whole split. */
	uint64_t g = p->first + drv_perm_at(&p->unit_perm, lane_pos(p, pos)) * p->stride;

	u->rec_mod = p->rec_mod;
	u->rec_phase = p->rec_phase;
	switch (p->kind) {
	case DRV_U_FILE: {
		/* The file slot's samples that fall in the rank's range. */
		uint64_t a = g * p->spf, b = a + p->spf;
		if (a < p->s_lo)
			a = p->s_lo;
		if (b > p->s_hi)
			b = p->s_hi;
		u->file = drv_perm_at(&p->file_perm, g);
		u->sample = a - g * p->spf;
		u->nsamples = b > a ? b - a : 0;
		return;
	}
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

uint64_t drv_plan_samples(const struct drv_plan *p) { return p->shard_samples; }
