/* dl_isotonic_up: least-squares non-decreasing fits, worked by hand. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "dliofs/isotonic.h"
#include "tap.h"

static int same(const double *a, const double *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fabs(a[i] - b[i]) > 1e-9)
			return 0;
	return 1;
}

int main(void)
{
	/* Already non-decreasing: unchanged. */
	double a[] = {1, 2, 2, 5};
	double a_fit[] = {1, 2, 2, 5};
	CHECK(dl_isotonic_up(a, NULL, 4) == 0 && same(a, a_fit, 4), "monotone input kept");

	/* A profile's 1 MiB row with a dip at 4 clients: 696 and 670 pool to
	 * 683, 332 joins them, (696 + 670 + 332) / 3 = 566; 1026 and 582 pool
	 * to 804. */
	double b[] = {696, 670, 332, 586, 1026, 582};
	double b_fit[] = {566, 566, 566, 586, 804, 804};
	CHECK(dl_isotonic_up(b, NULL, 6) == 0 && same(b, b_fit, 6),
	      "profile row: %.1f %.1f %.1f %.1f %.1f %.1f", b[0], b[1], b[2], b[3], b[4], b[5]);

	/* Weights: the heavier point moves less: (3*10 + 1*4) / 4 = 8.5. */
	double c[] = {10, 4};
	double cw[] = {3, 1};
	double c_fit[] = {8.5, 8.5};
	CHECK(dl_isotonic_up(c, cw, 2) == 0 && same(c, c_fit, 2), "weighted pool");

	/* A falling series becomes its mean. */
	double d[] = {4, 3, 2, 1};
	double d_fit[] = {2.5, 2.5, 2.5, 2.5};
	CHECK(dl_isotonic_up(d, NULL, 4) == 0 && same(d, d_fit, 4), "falling series");

	/* Refusals. */
	double e[] = {1, 2};
	double ew[] = {1, 0};
	CHECK(dl_isotonic_up(e, ew, 2) == -EINVAL, "zero weight refused");
	double big[DL_ISOTONIC_MAX + 1] = {0};
	CHECK(dl_isotonic_up(big, NULL, DL_ISOTONIC_MAX + 1) == -EINVAL, "too long refused");
	CHECK(dl_isotonic_up(NULL, NULL, 0) == 0, "empty");
	return tap_done("isotonic");
}
