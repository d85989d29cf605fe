/* Integer arithmetic shared by the layers (util/intmath.c). */
#ifndef DLIOFS_INTMATH_H
#define DLIOFS_INTMATH_H

#include <stdint.h>

/* floor(sqrt(q)), exact for every 64-bit q. */
uint64_t dl_isqrt64(uint64_t q);

#endif
