/* A JSON document as (dotted path, value) pairs (json.h), read with
 * dl_json_flatten, so that a tool can difference any counter the daemon
 * adds later without knowing its layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"

struct build {
	struct dl_jdoc *d;
	unsigned flags;
};

static int add(void *arg, const char *path, const char *value, int is_string)
{
	struct build *b = arg;
	struct dl_jdoc *j = b->d;
	struct dl_jval *v;
	double num = 0;
	int is_null = 0;

	if (!is_string) {
		char *end;

		if (!strcmp(value, "null")) {
			if (!(b->flags & DL_JDOC_NULLS))
				return 0;
			is_null = 1;
		} else if (!strcmp(value, "true") || !strcmp(value, "false")) {
			num = value[0] == 't';
		} else {
			num = strtod(value, &end);
			if (end == value || *end)
				return -EINVAL;
		}
	}
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		struct dl_jval *nv = realloc(j->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		j->v = nv;
		j->cap = cap;
	}
	v = &j->v[j->n];
	v->path = strdup(path);
	v->text = strdup(value);
	v->num = num;
	v->str = is_string ? v->text : NULL;
	v->is_null = is_null;
	if (!v->path || !v->text) {
		free(v->path);
		free(v->text);
		return -ENOMEM;
	}
	j->n++;
	return 0;
}

int dl_jdoc_parse(const char *text, size_t len, unsigned flags, struct dl_jdoc *out)
{
	struct build b = {out, flags};
	int ret;

	memset(out, 0, sizeof(*out));
	ret = dl_json_flatten(text, len, add, &b);
	/* A truncated document still carries its leading counters. */
	if (ret == -EINVAL && out->n && (flags & DL_JDOC_PARTIAL))
		ret = 0;
	if (ret)
		dl_jdoc_free(out);
	return ret;
}

void dl_jdoc_free(struct dl_jdoc *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->v[i].path);
		free(j->v[i].text);
	}
	free(j->v);
	memset(j, 0, sizeof(*j));
}

const struct dl_jval *dl_jdoc_get(const struct dl_jdoc *j, const char *path)
{
	for (size_t i = 0; i < j->n; i++)
		if (!strcmp(j->v[i].path, path))
			return &j->v[i];
	return NULL;
}

double dl_jdoc_num(const struct dl_jdoc *j, const char *path, double dflt)
{
	const struct dl_jval *v = dl_jdoc_get(j, path);

	return v && !v->str && !v->is_null ? v->num : dflt;
}
