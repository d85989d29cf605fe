/* Minimal check macros for the C unit tests: count, report, exit status. */
#ifndef DLIOFS_TEST_TAP_H
#define DLIOFS_TEST_TAP_H

#include <stdio.h>

static int tap_pass, tap_fail;

#define CHECK(cond, ...)                                                                          \
	do {                                                                                      \
		if (cond) {                                                                       \
			tap_pass++;                                                               \
		} else {                                                                          \
			tap_fail++;                                                               \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
			fprintf(stderr, __VA_ARGS__);                                             \
			fprintf(stderr, "\n");                                                    \
		}                                                                                 \
	} while (0)

static inline int tap_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, tap_pass, tap_fail);
	return tap_fail ? 1 : 0;
}

#endif
