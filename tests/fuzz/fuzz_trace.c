/* libFuzzer: the trace reader (trace/load.c) on any bytes, and
 * the statistics every dlio-trace command computes from what it loaded. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dlio_trace_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dl_trace_file t;
	char why[256];
	struct dt_stats s;

	if (dl_trace_load_mem("fuzz.trace", data, size, &t, why, sizeof(why)))
		return 0;
	if (dt_stats_compute(&t, &s) == 0) {
		free(dt_files_by_bytes(&s));
		dt_stats_free(&s);
	}
	dl_trace_file_free(&t);
	return 0;
}
