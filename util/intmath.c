/* Integer arithmetic (intmath.h). */
#include "dliofs/intmath.h"

uint64_t dl_isqrt64(uint64_t q)
{
	uint64_t d = 0;

	/* Bit by bit: exact for every 64-bit value, no floating point. */
	for (int b = 31; b >= 0; b--) {
		uint64_t t = d | (1ULL << b);

		if (t <= UINT32_MAX && t * t <= q)
			d = t;
	}
	return d;
}
