/* libFuzzer: the config loader on any bytes. dl_config_load_buf runs the
 * prescan, libyaml, DLIO detection and translation, parse and validate, and
 * a config that loads is printed back (the effective config dump). Messages
 * are formatted (that code is under test too) and dropped. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dliofs/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* One sink for the process: opening it per input would dominate. */
	static FILE *sink;
	struct dl_config *cfg = NULL;

	if (!sink)
		sink = fopen("/dev/null", "w");
	if (dl_config_load_buf("fuzz.yaml", (const char *)data, size, sink, &cfg) == 0) {
		dl_config_dump(cfg, sink);
		dl_config_free(cfg);
	}
	return 0;
}
