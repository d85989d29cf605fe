/* The JSON reader (json.h): a recursive descent over the text that calls
 * back with each scalar and its dotted path. Bounded: nesting is capped and
 * a path or string longer than its buffer is cut, never overrun. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dliofs/json.h"

#define PATH_MAX_LEN 1024
#define VALUE_MAX_LEN 4096

struct flat {
	const char *p, *end;
	int (*fn)(void *, const char *, const char *, int);
	void *arg;
	char path[PATH_MAX_LEN];
	char val[VALUE_MAX_LEN];
};

static void skip_ws(struct flat *s)
{
	while (s->p < s->end && isspace((unsigned char)*s->p))
		s->p++;
}

/* A string literal into buf (decoded, cut at cap - 1). */
static int string(struct flat *s, char *buf, size_t cap)
{
	size_t n = 0;

	if (s->p >= s->end || *s->p != '"')
		return -EINVAL;
	s->p++;
	while (s->p < s->end && *s->p != '"') {
		char c = *s->p++;

		if (c == '\\') {
			if (s->p >= s->end)
				return -EINVAL;
			c = *s->p++;
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
			case 'u': {
				unsigned v = 0;

				if (s->end - s->p < 4)
					return -EINVAL;
				for (int i = 0; i < 4; i++) {
					char h = *s->p++;

					if (!isxdigit((unsigned char)h))
						return -EINVAL;
					v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0'
										 : (h | 0x20) - 'a' + 10);
				}
				c = v < 0x80 && v ? (char)v : '?';
				break;
			}
			default:
				break; /* \" \\ \/ */
			}
		}
		if (n + 1 < cap)
			buf[n++] = c;
	}
	if (s->p >= s->end)
		return -EINVAL;
	s->p++;
	buf[n] = 0;
	return 0;
}

static int value(struct flat *s, unsigned depth);

static int member(struct flat *s, unsigned depth, size_t base, const char *name)
{
	int ret;

	snprintf(s->path + base, sizeof(s->path) - base, "%s%s", base ? "." : "", name);
	ret = value(s, depth + 1);
	s->path[base] = 0;
	return ret;
}

static int container(struct flat *s, unsigned depth)
{
	char close = *s->p == '{' ? '}' : ']', key[256];
	size_t base = strlen(s->path);
	unsigned idx = 0;
	int ret;

	if (depth >= DL_JSON_MAX_DEPTH)
		return -EINVAL;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 0;
	}
	for (;;) {
		skip_ws(s);
		if (close == '}') {
			if (string(s, key, sizeof(key)))
				return -EINVAL;
			skip_ws(s);
			if (s->p >= s->end || *s->p++ != ':')
				return -EINVAL;
		} else {
			snprintf(key, sizeof(key), "%u", idx++);
		}
		ret = member(s, depth, base, key);
		if (ret)
			return ret;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return 0;
		}
		return -EINVAL;
	}
}

static int value(struct flat *s, unsigned depth)
{
	const char *start;
	size_t n;

	skip_ws(s);
	if (s->p >= s->end)
		return -EINVAL;
	if (*s->p == '{' || *s->p == '[')
		return container(s, depth);
	if (*s->p == '"') {
		if (string(s, s->val, sizeof(s->val)))
			return -EINVAL;
		return s->fn(s->arg, s->path, s->val, 1);
	}
	start = s->p;
	while (s->p < s->end && *s->p != ',' && *s->p != '}' && *s->p != ']' &&
	       !isspace((unsigned char)*s->p))
		s->p++;
	n = (size_t)(s->p - start);
	if (!n)
		return -EINVAL;
	if (n >= sizeof(s->val))
		n = sizeof(s->val) - 1;
	memcpy(s->val, start, n);
	s->val[n] = 0;
	return s->fn(s->arg, s->path, s->val, 0);
}

int dl_json_flatten(const char *text, size_t len,
		    int (*fn)(void *arg, const char *path, const char *value, int is_string),
		    void *arg)
{
	struct flat s = {.p = text, .end = text + len, .fn = fn, .arg = arg};
	int ret = value(&s, 0);

	if (ret)
		return ret;
	skip_ws(&s);
	return s.p == s.end ? 0 : -EINVAL;
}
