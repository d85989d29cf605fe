/* Clocks (util/clock.c): every duration the project measures is on the
 * monotonic clock, in nanoseconds. */
#ifndef DLIOFS_CLOCK_H
#define DLIOFS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on clk (CLOCK_MONOTONIC, CLOCK_REALTIME, ...). */
uint64_t dl_clock_ns(clockid_t clk);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t dl_mono_ns(void);
/* CLOCK_REALTIME in nanoseconds since the epoch. */
uint64_t dl_real_ns(void);

#endif
