/* libFuzzer: the trace reader (tools/dlio_trace_load.c) on any bytes, and
 * the statistics every dlio-trace command computes from what it loaded. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dlio_trace_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_trace t;
	struct dt_stats s;

	if (dt_load_mem("fuzz.trace", data, size, &t))
		return 0;
	if (dt_stats_compute(&t, &s) == 0) {
		free(dt_files_by_bytes(&s));
		dt_stats_free(&s);
	}
	dt_free(&t);
	return 0;
}
