/* libFuzzer: the live `set` parser (dl_pacer_cfg_set, pacer/options.c) and
 * what a parsed configuration is then used for. The input is lines of
 * key=value, as `dliofs set` writes them to .dliofs/pacer: each is applied
 * to a configuration, which is checked, printed, copied; a valid one builds
 * a pacer that the same lines are applied to live (all-or-nothing) and that
 * then paces a few requests of each class on a made-up clock. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/pacer.h"

#define MAX_LINES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	char *text, *keys[MAX_LINES], *vals[MAX_LINES], err[512], *save = NULL;
	struct dl_pacer_cfg cfg, copy;
	struct dl_pacer *p = NULL;
	unsigned n = 0;

	if (!sink)
		sink = fopen("/dev/null", "w");
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	for (char *line = strtok_r(text, "\n", &save); line && n < MAX_LINES;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = 0;
		keys[n] = line;
		vals[n++] = eq + 1;
	}
	dl_pacer_cfg_init(&cfg);
	for (unsigned i = 0; i < n; i++)
		dl_pacer_cfg_set(&cfg, keys[i], vals[i], err, sizeof(err));
	if (dl_pacer_cfg_check(&cfg, err, sizeof(err)) == 0) {
		dl_pacer_cfg_dump(&cfg, sink, 2);
		if (dl_pacer_cfg_copy(&copy, &cfg) == 0)
			dl_pacer_cfg_free(&copy);
		if (dl_pacer_new(&cfg, 1000, 42, &p) == 0) {
			uint64_t now = 1000;

			for (unsigned i = 0; i < n; i++)
				dl_pacer_set(p, keys[i], vals[i], err, sizeof(err));
			for (unsigned i = 0; i < 24; i++) {
				struct dl_pacer_req r = {.cls = (enum dl_op_class)(i % DL_OP__COUNT),
							 .file_id = i % 5, .off = (uint64_t)i << 20,
							 .len = i % DL_OP__COUNT == DL_OP_META ? 0 : 1u << 20,
							 .job = 7};
				struct dl_pacer_result res;

				if (dl_pacer_submit(p, &r, now, &res) == 0)
					dl_pacer_complete(p, &r, &res, res.due_ns);
				now += 250000;
			}
			dl_pacer_free(p);
		}
	}
	dl_pacer_cfg_free(&cfg);
	free(text);
	return 0;
}
