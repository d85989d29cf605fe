/* A log-linear histogram of nanosecond (or any) values: 32 linear
 * sub-buckets per power of two, so a quantile is within about 3% of the
 * value it stands for, in fixed memory (util/hist.c). */
#ifndef DLIOFS_HIST_H
#define DLIOFS_HIST_H

#include <stdint.h>

#define DL_HIST_SUB 32	/* linear sub-buckets per power of two */
#define DL_HIST_BUCKETS (64 * DL_HIST_SUB)
struct dl_hist {
	uint64_t count, sum, min, max;
	uint64_t b[DL_HIST_BUCKETS];
};
void dl_hist_add(struct dl_hist *h, uint64_t v);
uint64_t dl_hist_quantile(const struct dl_hist *h, double q); /* q in [0,1] */
void dl_hist_merge(struct dl_hist *dst, const struct dl_hist *src);

#endif
