/* Least-squares non-decreasing fit of a short series (pool adjacent
 * violators): dliofs profile smooths what a device delivers by
 * concurrency, where one point measured during a dip of a shared or
 * throttled device would otherwise become the model. */
#ifndef DLIOFS_ISOTONIC_H
#define DLIOFS_ISOTONIC_H

#include <stddef.h>

/* Replace v[0..n) by the non-decreasing sequence closest to it in the sum
 * of w[i] (v[i] - fit[i])^2 (w NULL: equal weights; weights must be > 0).
 * Returns 0, or -EINVAL for n > DL_ISOTONIC_MAX or a weight <= 0. */
#define DL_ISOTONIC_MAX 64
int dl_isotonic_up(double *v, const double *w, size_t n);

#endif
