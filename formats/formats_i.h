/* Private to formats/. */
#ifndef DLIOFS_FORMATS_I_H
#define DLIOFS_FORMATS_I_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "dliofs/bytes.h"
#include "dliofs/format.h"
#include "dliofs/prng.h"

struct dl_dcache;

struct dl_fmt_ctx {
	uint64_t seed;
	struct dl_dcache *dcache;
	void *state[DL_FMT__COUNT];	/* per-format state (state_new/state_free) */
};

int dl_dcache_init(struct dl_dcache **out, size_t entries);
void dl_dcache_destroy(struct dl_dcache *c);

/* Per-ISA clones of a hot loop (AVX-512, AVX2, baseline), picked at run time.
 * Only plain integer arithmetic goes in them, so every clone gives the same
 * bytes. The sanitizer build uses the baseline alone. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_ADDRESS__)
#define DL_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define DL_CLONES
#endif

/* A value drawn from a distribution with stream `key`: normal(mean, stdev)
 * clipped to [min, max], or the mean when stdev == 0. */
static inline uint64_t dl_dist_draw(const struct dl_dist *d, uint64_t key)
{
	double v;

	if (d->stdev == 0)
		return d->mean;
	v = (double)d->mean + (double)d->stdev * dl_prng_normal(key, 0);
	if (v < (double)d->min)
		return d->min;
	if (v > (double)d->max)
		return d->max;
	return (uint64_t)llround(v);
}

/* Per-format ops tables (one file each), as format_list.h names them. */
#define DL_FORMAT(UPPER, lower) extern const struct dl_format_ops dl_fmt_##lower##_ops;
#include "dliofs/format_list.h"
#undef DL_FORMAT

/* Content sub-streams of one file: a format keys each region with its own id so
 * that, e.g., sample data and labels never share a stream. */
static inline uint64_t dl_file_stream(const struct dl_file *f, uint64_t region)
{
	return dl_key2(f->key, region);
}

/* Copy the part of a fixed byte string [src, src + n) placed at file offset
 * `at` that overlaps the request [off, off + len) into buf. */
void dl_copy_overlap(uint8_t *buf, uint64_t off, size_t len, const void *src, uint64_t at,
		     size_t n);
/* Fill the overlap of the request with a generated region [at, at + n) whose
 * bytes are stream `key` from stream offset 0. */
void dl_fill_overlap(uint8_t *buf, uint64_t off, size_t len, uint64_t key, uint64_t at,
		     uint64_t n);

#endif
