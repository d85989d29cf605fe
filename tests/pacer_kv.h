/* What the pacer's unit tests share: a config from "key=value" strings as
 * `dliofs set` takes them, a pacer built from one, the config's YAML dump,
 * and a refused setting that must name its key and leave the config as it
 * was. Header-only, like tap.h. */
#ifndef DLIOFS_TEST_PACER_KV_H
#define DLIOFS_TEST_PACER_KV_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/pacer.h"
#include "tap.h"

/* cfg from a NULL-terminated list of "key=value"; 0, or -1 with the reason
 * on stderr (cfg must still be freed). */
static inline int test_pacer_cfg(struct dl_pacer_cfg *cfg, const char *const *kv)
{
	char err[512], key[128];
	const char *eq;

	dl_pacer_cfg_init(cfg);
	for (; *kv; kv++) {
		eq = strchr(*kv, '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
		if (dl_pacer_cfg_set(cfg, key, eq + 1, err, sizeof(err))) {
			fprintf(stderr, "set %s: %s\n", *kv, err);
			return -1;
		}
	}
	if (dl_pacer_cfg_check(cfg, err, sizeof(err))) {
		fprintf(stderr, "check: %s\n", err);
		return -1;
	}
	return 0;
}

/* A pacer from "key=value" settings at clock `now`; NULL on any error. */
static inline struct dl_pacer *test_pacer(const char *const *kv, uint64_t now, uint64_t seed)
{
	struct dl_pacer_cfg cfg;
	struct dl_pacer *p = NULL;
	int ret = test_pacer_cfg(&cfg, kv);

	if (!ret)
		ret = dl_pacer_new(&cfg, now, seed, &p);
	dl_pacer_cfg_free(&cfg);
	return ret ? NULL : p;
}

static inline char *test_pacer_dump(const struct dl_pacer_cfg *cfg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	dl_pacer_cfg_dump(cfg, f, 2);
	fclose(f);
	return buf;
}

/* key=val is refused with EINVAL, the message names the key and says `has`,
 * and the config dumps the same before and after. */
static inline void test_pacer_expect_err(struct dl_pacer_cfg *cfg, const char *key,
					 const char *val, const char *has)
{
	char err[1024] = "", *before = test_pacer_dump(cfg), *after;
	int ret = dl_pacer_cfg_set(cfg, key, val, err, sizeof(err));

	after = test_pacer_dump(cfg);
	CHECK(ret == -EINVAL && strstr(err, has) && strstr(err, key),
	      "%s=%s: ret %d, err \"%s\" (want \"%s\")", key, val, ret, err, has);
	CHECK(!strcmp(before, after), "%s=%s: failed set changed the config", key, val);
	free(before);
	free(after);
}

#endif
