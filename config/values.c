/* The YAML side of reading a config: where a node is, what it is, its
 * value as a size, count, integer or choice, a mapping's keys matched
 * against the keys expected, and every message with file:line:column and
 * the key path (DLIO's names for a translated workload). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/suggest.h"
#include "dliofs/units.h"
#include "config_i.h"

struct dl_loc cfg_node_loc(const yaml_node_t *n)
{
	struct dl_loc l = { (unsigned)n->start_mark.line + 1, (unsigned)n->start_mark.column + 1 };

	return l;
}

/* The key path as the user wrote it (see struct cfg_alias). */
static const char *user_key(const struct cfg_ctx *c, const char *key, char *buf, size_t buflen)
{
	const struct cfg_alias *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; key && i < c->nalias; i++) {
		size_t n = strlen(c->alias[i].ours);

		if (n > best_len && !strncmp(key, c->alias[i].ours, n) &&
		    (key[n] == '\0' || key[n] == '.' || key[n] == '['))
			best = &c->alias[i], best_len = n;
	}
	if (!best)
		return key;
	snprintf(buf, buflen, "%s%s", best->theirs, key + best_len);
	return buf;
}

void cfg_verror(struct cfg_ctx *c, struct dl_loc loc, const char *key, const char *fmt,
		va_list ap)
{
	char shown[320];

	c->nerr++;
	if (!c->err || c->nerr > CFG_MAX_ERRORS + 1)
		return;
	if (c->nerr == CFG_MAX_ERRORS + 1) {
		fprintf(c->err, "%s: too many problems; stopping after %u\n", c->name,
			CFG_MAX_ERRORS);
		return;
	}
	if (loc.line)
		fprintf(c->err, "%s:%u:%u: ", c->name, loc.line, loc.col);
	else
		fprintf(c->err, "%s: ", c->name);
	key = user_key(c, key, shown, sizeof(shown));
	if (key && *key)
		fprintf(c->err, "%s: ", key);
	vfprintf(c->err, fmt, ap);
	fputc('\n', c->err);
}

void cfg_error(struct cfg_ctx *c, struct dl_loc loc, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cfg_verror(c, loc, key, fmt, ap);
	va_end(ap);
}

int cfg_too_many(const struct cfg_ctx *c)
{
	return c->nerr > CFG_MAX_ERRORS;
}

/* ---- nodes ---- */

yaml_node_t *cfg_node_at(struct cfg_walk *w, int index)
{
	return yaml_document_get_node(w->doc, index);
}

int cfg_is_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

const char *cfg_kind_of(const yaml_node_t *n)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (cfg_is_null(n))
		return "nothing (an empty value)";
	return "a single value";
}

/* The scalar's text, or NULL after saying what was expected instead. */
const char *cfg_scalar_of(struct cfg_walk *w, yaml_node_t *n, const char *path,
			  const char *expected)
{
	if (n->type != YAML_SCALAR_NODE || cfg_is_null(n)) {
		cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s", expected,
			  cfg_kind_of(n));
		return NULL;
	}
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
		cfg_error(w->c, cfg_node_loc(n), path,
			  "expected %s, got a value containing a NUL character", expected);
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

/* A key as it can be shown in a key path. */
static void key_text(const yaml_node_t *k, char *buf, size_t buflen)
{
	const char *v = (const char *)k->data.scalar.value;
	size_t n = k->data.scalar.length, i;

	for (i = 0; i < n && i < 40; i++) {
		char ch = v[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			break;
	}
	if (i == n && n > 0)
		snprintf(buf, buflen, "%s", v);
	else
		cfg_quote(v, n, buf, buflen);
}

/* Match the keys of a mapping against `keys`: vals[i] gets the value node
 * of keys[i]. Unknown keys and repeated keys are reported here. */
void cfg_walk_mapping(struct cfg_walk *w, yaml_node_t *map, const char *prefix,
		      const char *const *keys, size_t nkeys, yaml_node_t **vals,
		      yaml_node_t **key_nodes, int dlio_hints)
{
	char path[256], shown[128];

	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top && !cfg_too_many(w->c); pr++) {
		yaml_node_t *k = cfg_node_at(w, pr->key), *v = cfg_node_at(w, pr->value);
		const char *name, *hint;
		size_t i;

		if (!k || !v)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			snprintf(path, sizeof(path), "%s", prefix);
			cfg_error(w->c, cfg_node_loc(k), path, "expected a key name, got %s",
				  cfg_kind_of(k));
			continue;
		}
		name = (const char *)k->data.scalar.value;
		for (i = 0; i < nkeys; i++)
			if (k->data.scalar.length == strlen(keys[i]) && !strcmp(name, keys[i]))
				break;
		key_text(k, shown, sizeof(shown));
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", shown);
		if (i == nkeys) {
			hint = dlio_hints ? cfg_dlio_hint(name) : NULL;
			if (hint) {
				cfg_error(w->c, cfg_node_loc(k), path,
					  "unknown key (this is DLIO's name; dliofs calls it %s)",
					  hint);
			} else if ((hint = dl_suggest(name, keys, nkeys))) {
				cfg_error(w->c, cfg_node_loc(k), path,
					  "unknown key (did you mean \"%s\"?)", hint);
			} else {
				char list[256] = "";
				size_t o = 0;

				for (size_t j = 0; j < nkeys && o < sizeof(list); j++)
					o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
							      j ? ", " : "", keys[j]);
				cfg_error(w->c, cfg_node_loc(k), path,
					  "unknown key; expected one of: %s", list);
			}
			continue;
		}
		if (vals[i]) {
			struct dl_loc first = cfg_node_loc(key_nodes[i]);

			cfg_error(w->c, cfg_node_loc(k), path,
				  "duplicate key (first given at line %u, column %u)", first.line,
				  first.col);
			continue;
		}
		vals[i] = v;
		key_nodes[i] = k;
	}
}

/* ---- values ---- */

static void value_error(struct cfg_walk *w, yaml_node_t *n, const char *path, const char *expected,
			const char *text, int ret, const char *why)
{
	char q[128];

	cfg_quote(text, strlen(text), q, sizeof(q));
	if (ret == -ERANGE)
		cfg_error(w->c, cfg_node_loc(n), path, "%s is %s", q, why);
	else if (why && strcmp(why, "expected a number") != 0)
		cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s (%s)", expected, q,
			  why);
	else
		cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s", expected, q);
}

#define EXPECT_SIZE "a size like 140MB or 4KiB"
#define EXPECT_COUNT "a count like 168, 2k or 1M"

int cfg_get_size(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t *out)
{
	const char *s = cfg_scalar_of(w, n, path, EXPECT_SIZE), *why = NULL;
	int ret;

	if (!s)
		return -EINVAL;
	ret = dl_parse_size(s, out, &why);
	if (ret)
		value_error(w, n, path, EXPECT_SIZE, s, ret, why);
	return ret;
}

int cfg_get_count(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t max,
		  uint64_t *out)
{
	const char *s = cfg_scalar_of(w, n, path, EXPECT_COUNT), *why = NULL;
	int ret;

	if (!s)
		return -EINVAL;
	ret = dl_parse_count(s, out, &why);
	if (ret) {
		value_error(w, n, path, EXPECT_COUNT, s, ret, why);
		return ret;
	}
	if (*out > max) {
		cfg_error(w->c, cfg_node_loc(n), path, "%llu is too large (at most %llu)",
			  (unsigned long long)*out, (unsigned long long)max);
		return -ERANGE;
	}
	return 0;
}

/* A plain unsigned 64-bit integer, decimal or 0x hex: a seed is not a quantity. */
int cfg_get_u64(struct cfg_walk *w, yaml_node_t *n, const char *path, uint64_t *out)
{
	static const char expected[] = "an unsigned 64-bit integer like 42";
	const char *s = cfg_scalar_of(w, n, path, expected), *p;
	unsigned base = 10;
	uint64_t v = 0;

	if (!s)
		return -EINVAL;
	p = s;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (!*p)
		goto bad;
	for (; *p; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			goto bad;
		if (v > (UINT64_MAX - d) / base) {
			value_error(w, n, path, expected, s, -ERANGE,
				    "too large: over 2^64-1");
			return -ERANGE;
		}
		v = v * base + d;
	}
	*out = v;
	return 0;
bad:
	value_error(w, n, path, expected, s, -EINVAL,
		    s[0] == '-' ? "negative values are not allowed" : NULL);
	return -EINVAL;
}

/* One of a fixed set of names, with a suggestion for a near miss. */
int cfg_get_choice(struct cfg_walk *w, yaml_node_t *n, const char *path, const char *const *names,
		   size_t nnames, unsigned *out)
{
	char expected[256], q[128];
	const char *s, *hint;
	size_t o;

	o = (size_t)snprintf(expected, sizeof(expected), "one of ");
	for (size_t i = 0; i < nnames && o < sizeof(expected); i++)
		o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s",
				      i ? ", " : "", names[i]);
	s = cfg_scalar_of(w, n, path, expected);
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < nnames; i++) {
		if (!strcmp(s, names[i])) {
			*out = (unsigned)i;
			return 0;
		}
	}
	cfg_quote(s, strlen(s), q, sizeof(q));
	hint = dl_suggest(s, names, nnames);
	if (hint)
		cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s (did you mean \"%s\"?)",
			  expected, q, hint);
	else
		cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s", expected, q);
	return -EINVAL;
}

void cfg_copy_text(char *dst, size_t dstlen, const char *s)
{
	size_t n = strnlen(s, dstlen - 1);

	memcpy(dst, s, n);
	dst[n] = '\0';
}
