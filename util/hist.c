/* Log-linear histogram: values below 2*SUB are counted exactly; above, each
 * power of two is split into SUB equal buckets, so a bucket is at most 1/SUB
 * (3.1% for SUB = 32) of its value wide and a quantile read at the bucket's
 * midpoint is within half of that. Fixed size, no allocation: cheap enough
 * to update under a lock on every request. */
#include "dliofs/hist.h"

_Static_assert((DL_HIST_SUB & (DL_HIST_SUB - 1)) == 0, "DL_HIST_SUB must be a power of two");
_Static_assert(DL_HIST_SUB >= 2, "DL_HIST_SUB too small");

#define SUB_BITS (__builtin_ctz(DL_HIST_SUB))

static unsigned bucket_of(uint64_t v)
{
	unsigned e, shift;

	if (v < 2 * DL_HIST_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	shift = e - (unsigned)SUB_BITS;
	return (shift + 1) * DL_HIST_SUB + (unsigned)((v >> shift) & (DL_HIST_SUB - 1));
}

/* [lo, lo + width) of bucket i. */
static void bucket_range(unsigned i, uint64_t *lo, uint64_t *width)
{
	unsigned g = i / DL_HIST_SUB, sub = i % DL_HIST_SUB;

	if (g < 2) {
		*lo = i;
		*width = 1;
		return;
	}
	*lo = (uint64_t)(DL_HIST_SUB + sub) << (g - 1);
	*width = 1ULL << (g - 1);
}

_Static_assert((64 - __builtin_ctz(DL_HIST_SUB)) * DL_HIST_SUB <= DL_HIST_BUCKETS,
	       "DL_HIST_BUCKETS too small for 64-bit values");

void dl_hist_add(struct dl_hist *h, uint64_t v)
{
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	h->b[bucket_of(v)]++;
}

uint64_t dl_hist_quantile(const struct dl_hist *h, double q)
{
	uint64_t rank, cum = 0, lo, width, v;
	unsigned i;

	if (!h->count)
		return 0;
	if (!(q > 0))
		return h->min;
	if (q >= 1)
		return h->max;
	/* The nearest-rank definition: the smallest value with at least q of
	 * the samples at or below it. */
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (!rank)
		rank = 1;
	for (i = 0; i < DL_HIST_BUCKETS; i++) {
		cum += h->b[i];
		if (cum >= rank)
			break;
	}
	if (i == DL_HIST_BUCKETS)
		return h->max;
	bucket_range(i, &lo, &width);
	v = lo + (width - 1) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

void dl_hist_merge(struct dl_hist *dst, const struct dl_hist *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	for (unsigned i = 0; i < DL_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}
