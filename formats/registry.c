/* The one place formats are registered (the list is format_list.h), and
 * what the registry answers about them. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "dliofs/format.h"
#include "formats_i.h"

static const struct dl_format_ops *const registry[DL_FMT__COUNT] = {
#define DL_FORMAT(UPPER, lower) [DL_FMT_##UPPER] = &dl_fmt_##lower##_ops,
#include "dliofs/format_list.h"
#undef DL_FORMAT
};

const struct dl_format_ops *dl_format_ops(enum dl_format f)
{
	if ((unsigned)f >= DL_FMT__COUNT)
		return NULL;
	return registry[f];
}

const struct dl_format_ops *dl_ds_ops(const struct dl_dataset *ds)
{
	return dl_format_ops(ds->format);
}

const char *dl_format_name(enum dl_format f)
{
	return (unsigned)f < DL_FMT__COUNT ? registry[f]->name : NULL;
}

int dl_format_from_name(const char *s, enum dl_format *out)
{
	for (unsigned i = 0; s && i < DL_FMT__COUNT; i++) {
		if (!strcmp(s, registry[i]->name)) {
			*out = (enum dl_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct dl_param *find(const struct dl_param *p, unsigned n, const char *key)
{
	const char *dot = strchr(key, '.');
	size_t len = dot ? (size_t)(dot - key) : strlen(key);

	for (unsigned i = 0; i < n; i++) {
		if (strlen(p[i].key) != len || strncmp(p[i].key, key, len))
			continue;
		if (!dot)
			return &p[i];
		return p[i].kind == DL_PK_MAP ? find(p[i].sub, p[i].nsub, dot + 1) : NULL;
	}
	return NULL;
}

const struct dl_param *dl_format_param(const struct dl_format_ops *ops, const char *key)
{
	return ops && key ? find(ops->params, ops->nparams, key) : NULL;
}

static void defaults(unsigned char *block, const struct dl_param *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned char *at = block + p[i].off;

		switch (p[i].kind) {
		case DL_PK_COUNT:
			if (p[i].width == 4)
				*(unsigned *)(void *)at = (unsigned)p[i].def;
			else
				*(uint64_t *)(void *)at = p[i].def;
			break;
		case DL_PK_CHOICE:
			*(unsigned *)(void *)at = (unsigned)p[i].def;
			break;
		case DL_PK_PIXELS:
			memset(at, 0, sizeof(struct dl_dist));
			break;
		case DL_PK_DIMS:
			memset(at, 0, DL_MAX_DIMS * sizeof(uint64_t));
			*(unsigned *)(void *)(block + p[i].count_off) = 0;
			break;
		case DL_PK_MAP:
			defaults(block, p[i].sub, p[i].nsub);
			break;
		}
	}
}

void dl_format_param_defaults(struct dl_dataset *ds)
{
	const struct dl_format_ops *ops = dl_ds_ops(ds);

	memset(ds->params, 0, sizeof(ds->params));
	if (ops)
		defaults(ds->params, ops->params, ops->nparams);
}

const char *dl_read_plan_name(enum dl_read_plan p)
{
	static const char *const names[] = {
		[DL_PLAN_WHOLE] = "whole",
		[DL_PLAN_STREAM] = "stream",
		[DL_PLAN_HYPERSLAB] = "hyperslab",
		[DL_PLAN_REGION] = "region",
		[DL_PLAN_CHUNK] = "chunk",
	};

	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

void dl_check_error(const struct dl_check *c, const char *at, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	c->error(c->arg, at, key, fmt, ap);
	va_end(ap);
}
