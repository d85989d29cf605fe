/* Clocks (clock.h). */
#include "dliofs/clock.h"

uint64_t dl_clock_ns(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

uint64_t dl_mono_ns(void) { return dl_clock_ns(CLOCK_MONOTONIC); }

uint64_t dl_real_ns(void) { return dl_clock_ns(CLOCK_REALTIME); }
