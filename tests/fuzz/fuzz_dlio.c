/* libFuzzer: the DLIO workload translation (config/dlio.c). Same entry as a
 * dliofs config, but inputs that cannot be a DLIO workload (no `dataset`
 * key, or a `datasets:` list, which makes it a native config) are kept out
 * of the corpus, so the search stays in the translator. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct dl_config *cfg = NULL;

	if (!memmem(data, size, "dataset", 7) || memmem(data, size, "datasets", 8))
		return -1;
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (dl_config_load_buf("workload.yaml", (const char *)data, size, sink, &cfg) == 0) {
		dl_config_dump(cfg, sink);
		dl_config_free(cfg);
	}
	return 0;
}
