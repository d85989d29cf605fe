/* Pool adjacent violators: scan left to right keeping blocks of pooled
 * points (their weighted mean, total weight, length); a block below the one
 * before it merges with it, as often as needed. */
#include <errno.h>

#include "dliofs/isotonic.h"

int dl_isotonic_up(double *v, const double *w, size_t n)
{
	double mean[DL_ISOTONIC_MAX], weight[DL_ISOTONIC_MAX];
	size_t len[DL_ISOTONIC_MAX], nb = 0, k = 0;

	if (n > DL_ISOTONIC_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		double wi = w ? w[i] : 1.0;

		if (!(wi > 0))
			return -EINVAL;
		mean[nb] = v[i];
		weight[nb] = wi;
		len[nb] = 1;
		nb++;
		while (nb > 1 && mean[nb - 2] > mean[nb - 1]) {
			double tw = weight[nb - 2] + weight[nb - 1];

			mean[nb - 2] = (mean[nb - 2] * weight[nb - 2] + mean[nb - 1] * weight[nb - 1]) / tw;
			weight[nb - 2] = tw;
			len[nb - 2] += len[nb - 1];
			nb--;
		}
	}
	for (size_t b = 0; b < nb; b++)
		for (size_t j = 0; j < len[b]; j++)
			v[k++] = mean[b];
	return 0;
}
