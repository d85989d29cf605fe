/* A small JSON reader for the mount's stats.json: the document is flattened
 * into (dotted path, value) pairs, so the tool can difference any counter the
 * daemon adds later without knowing its layout in advance. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stall_i.h"

#define MAX_DEPTH 32

struct parser {
	const char *p, *end;
	struct st_json *out;
	char path[1024];
};

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && isspace((unsigned char)*ps->p))
		ps->p++;
}

static int add(struct parser *ps, double num, const char *str, size_t slen)
{
	struct st_jv *v;

	if (ps->out->n == ps->out->cap) {
		size_t cap = ps->out->cap ? ps->out->cap * 2 : 64;
		struct st_jv *nv = realloc(ps->out->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		ps->out->v = nv;
		ps->out->cap = cap;
	}
	v = &ps->out->v[ps->out->n];
	v->path = strdup(ps->path);
	v->num = num;
	v->str = str ? strndup(str, slen) : NULL;
	if (!v->path || (str && !v->str)) {
		free(v->path);
		free(v->str);
		return -ENOMEM;
	}
	ps->out->n++;
	return 0;
}

/* Reads a string literal into buf (escapes decoded, \u kept as '?'). */
static int parse_string(struct parser *ps, char *buf, size_t cap, size_t *len)
{
	size_t n = 0;

	if (ps->p >= ps->end || *ps->p != '"')
		return -EINVAL;
	ps->p++;
	while (ps->p < ps->end && *ps->p != '"') {
		char c = *ps->p++;
		if (c == '\\' && ps->p < ps->end) {
			c = *ps->p++;
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u':
				ps->p += ps->end - ps->p >= 4 ? 4 : ps->end - ps->p;
				c = '?';
				break;
			default:
				break;
			}
		}
		if (n + 1 < cap)
			buf[n++] = c;
	}
	if (ps->p >= ps->end)
		return -EINVAL;
	ps->p++;
	buf[n] = 0;
	*len = n;
	return 0;
}

static int parse_value(struct parser *ps, int depth);

static int push(struct parser *ps, const char *key, size_t *saved)
{
	size_t n = strlen(ps->path);
	int w;

	*saved = n;
	w = snprintf(ps->path + n, sizeof(ps->path) - n, "%s%s", n ? "." : "", key);
	return w < 0 || (size_t)w >= sizeof(ps->path) - n ? -ENAMETOOLONG : 0;
}

static int parse_object(struct parser *ps, int depth)
{
	char key[256];
	size_t klen, saved;
	int ret;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		ret = parse_string(ps, key, sizeof(key), &klen);
		if (ret)
			return ret;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return -EINVAL;
		ps->p++;
		ret = push(ps, key, &saved);
		if (!ret)
			ret = parse_value(ps, depth + 1);
		ps->path[saved] = 0;
		if (ret)
			return ret;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			return 0;
		}
		return -EINVAL;
	}
}

static int parse_array(struct parser *ps, int depth)
{
	char key[32];
	size_t saved;
	int ret;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (unsigned i = 0;; i++) {
		snprintf(key, sizeof(key), "%u", i);
		ret = push(ps, key, &saved);
		if (!ret)
			ret = parse_value(ps, depth + 1);
		ps->path[saved] = 0;
		if (ret)
			return ret;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return 0;
		}
		return -EINVAL;
	}
}

static int parse_value(struct parser *ps, int depth)
{
	char sbuf[1024];
	size_t slen;
	char *endp;
	double d;

	if (depth > MAX_DEPTH)
		return -EINVAL;
	skip_ws(ps);
	if (ps->p >= ps->end)
		return -EINVAL;
	switch (*ps->p) {
	case '{':
		return parse_object(ps, depth);
	case '[':
		return parse_array(ps, depth);
	case '"':
		if (parse_string(ps, sbuf, sizeof(sbuf), &slen))
			return -EINVAL;
		return add(ps, 0, sbuf, slen);
	case 't':
		if (ps->end - ps->p >= 4 && !strncmp(ps->p, "true", 4)) {
			ps->p += 4;
			return add(ps, 1, NULL, 0);
		}
		return -EINVAL;
	case 'f':
		if (ps->end - ps->p >= 5 && !strncmp(ps->p, "false", 5)) {
			ps->p += 5;
			return add(ps, 0, NULL, 0);
		}
		return -EINVAL;
	case 'n':
		if (ps->end - ps->p >= 4 && !strncmp(ps->p, "null", 4)) {
			ps->p += 4;
			return 0;
		}
		return -EINVAL;
	default:
		/* The text is NUL-terminated by the caller, so strtod stops in time. */
		d = strtod(ps->p, &endp);
		if (endp == ps->p)
			return -EINVAL;
		ps->p = endp;
		return add(ps, d, NULL, 0);
	}
}

int st_json_parse(const char *text, size_t len, struct st_json *out)
{
	struct parser ps = {.p = text, .end = text + len, .out = out};
	char *copy = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	if (len && text[len - 1] != 0 && memchr(text, 0, len) == NULL) {
		copy = strndup(text, len);
		if (!copy)
			return -ENOMEM;
		ps.p = copy;
		ps.end = copy + len;
	}
	ret = parse_value(&ps, 0);
	free(copy);
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

void st_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}
