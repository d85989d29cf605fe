/* The mount's stats.json as (dotted path, value) pairs, read with the
 * project's JSON reader (dl_json_flatten), so that the tool can difference
 * any counter the daemon adds later without knowing its layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"
#include "stall_i.h"

static int add(void *arg, const char *path, const char *value, int is_string)
{
	struct st_json *j = arg;
	struct st_jv *v;
	double num = 0;

	if (!is_string) {
		char *end;

		if (!strcmp(value, "null"))
			return 0;
		if (!strcmp(value, "true") || !strcmp(value, "false")) {
			num = value[0] == 't';
		} else {
			num = strtod(value, &end);
			if (end == value || *end)
				return -EINVAL;
		}
	}
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		struct st_jv *nv = realloc(j->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		j->v = nv;
		j->cap = cap;
	}
	v = &j->v[j->n];
	v->path = strdup(path);
	v->num = num;
	v->str = is_string ? strdup(value) : NULL;
	if (!v->path || (is_string && !v->str)) {
		free(v->path);
		free(v->str);
		return -ENOMEM;
	}
	j->n++;
	return 0;
}

int st_json_parse(const char *text, size_t len, struct st_json *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = dl_json_flatten(text, len, add, out);
	/* Keep what was read before a syntax error: a truncated document
	 * still carries its leading counters. */
	if (ret == -EINVAL && out->n)
		ret = 0;
	if (ret)
		st_json_free(out);
	return ret;
}

void st_json_free(struct st_json *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->v[i].path);
		free(j->v[i].str);
	}
	free(j->v);
	memset(j, 0, sizeof(*j));
}

const struct st_jv *st_json_get(const struct st_json *j, const char *path)
{
	for (size_t i = 0; i < j->n; i++)
		if (!strcmp(j->v[i].path, path))
			return &j->v[i];
	return NULL;
}

double st_json_num(const struct st_json *j, const char *path, double dflt)
{
	const struct st_jv *v = st_json_get(j, path);

	return v && !v->str ? v->num : dflt;
}
