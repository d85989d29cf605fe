/* The DLIO translation's two documents: reading the workload's nodes
 * (and saying which keys are ignored), building the native document whose
 * nodes carry the workload's marks, and the aliases that make messages
 * name DLIO's keys. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/intmath.h"
#include "dlio_i.h"

/* ---- the source document ---- */

yaml_node_t *dtr_node(yaml_document_t *d, int i)
{
	return yaml_document_get_node(d, i);
}

int dtr_key_is(const yaml_node_t *k, const char *name)
{
	return k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(name) &&
	       !memcmp(k->data.scalar.value, name, k->data.scalar.length);
}

yaml_node_t *dtr_find(yaml_document_t *d, yaml_node_t *map, const char *name)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++)
		if (dtr_key_is(dtr_node(d, p->key), name))
			return dtr_node(d, p->value);
	return NULL;
}

/* ---- messages and the ignored list ---- */

void dtr_err(struct dtr *r, const yaml_node_t *at, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

void dtr_err(struct dtr *r, const yaml_node_t *at, const char *key, const char *fmt, ...)
{
	char path[160];
	va_list ap;

	snprintf(path, sizeof(path), "%s%s", r->wrap, key);
	va_start(ap, fmt);
	cfg_verror(r->c, at ? cfg_node_loc(at) : (struct dl_loc){ 1, 1 }, path, fmt, ap);
	va_end(ap);
}

/* A key as it is shown in the ignored list. */
static void shown_key(const yaml_node_t *k, char *buf, size_t buflen)
{
	if (!k || k->type != YAML_SCALAR_NODE) {
		snprintf(buf, buflen, "?");
		return;
	}
	for (size_t i = 0; i < k->data.scalar.length; i++) {
		char ch = (char)k->data.scalar.value[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) {
			cfg_quote((const char *)k->data.scalar.value, k->data.scalar.length, buf,
				  buflen);
			return;
		}
	}
	snprintf(buf, buflen, "%.*s",
		 (int)(k->data.scalar.length < 60 ? k->data.scalar.length : 60),
		 (const char *)k->data.scalar.value);
}

void dtr_ignore(struct dtr *r, const char *section, const yaml_node_t *k)
{
	struct cfg_dlio *t = r->t;
	char key[80];
	int n;

	shown_key(k, key, sizeof(key));
	if (t->nignored == DLIO_MAX_IGNORED) {
		t->icut++;
		return;
	}
	n = snprintf(t->itext + t->ilen, sizeof(t->itext) - t->ilen, "%s%s%s%s", r->wrap,
		     section ? section : "", section ? "." : "", key);
	if (n < 0 || (size_t)n >= sizeof(t->itext) - t->ilen) {
		t->icut++;
		return;
	}
	t->ign[t->nignored].at = k ? cfg_node_loc(k) : (struct dl_loc){ 0, 0 };
	t->ign[t->nignored].off = (unsigned)t->ilen;
	t->nignored++;
	t->ilen += (size_t)n + 1;
}

/* Every key of a section we do not read; a non-mapping section as one. */
void dtr_ignore_section(struct dtr *r, const yaml_node_t *k, yaml_node_t *v)
{
	char sec[80];

	if (!v || v->type != YAML_MAPPING_NODE || v->data.mapping.pairs.top ==
						      v->data.mapping.pairs.start) {
		dtr_ignore(r, NULL, k);
		return;
	}
	shown_key(k, sec, sizeof(sec));
	for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++)
		dtr_ignore(r, sec, dtr_node(r->src, p->key));
}

/* ---- aliases ---- */

const char *dtr_pool_str(struct dtr *r, const char *a, const char *b)
{
	struct cfg_dlio *t = r->t;
	size_t room = sizeof(t->pool) - t->pool_used;
	int n = snprintf(t->pool + t->pool_used, room, "%s%s%s", r->wrap, a, b ? b : "");
	const char *s = t->pool + t->pool_used;

	if (n < 0 || (size_t)n >= room)
		return NULL;
	t->pool_used += (size_t)n + 1;
	return s;
}

void dtr_alias(struct dtr *r, const char *ours, const char *theirs_section,
	       const char *theirs_key)
{
	struct cfg_dlio *t = r->t;
	const char *s = dtr_pool_str(r, theirs_section, theirs_key);

	if (s && t->nalias < DLIO_MAX_ALIAS)
		t->alias[t->nalias++] = (struct cfg_alias){ ours, s };
}

/* ---- the native document ---- */

int dtr_nscalar(struct dtr *r, const char *text, size_t len, yaml_scalar_style_t style,
		const yaml_node_t *at)
{
	yaml_document_t *d = &r->t->doc;
	/* `at` may be a node of d itself: adding one can move them all. */
	yaml_mark_t start = at ? at->start_mark : (yaml_mark_t){ 0, 0, 0 };
	yaml_mark_t end = at ? at->end_mark : (yaml_mark_t){ 0, 0, 0 };
	int id = yaml_document_add_scalar(d, NULL, (yaml_char_t *)text, (int)len, style);

	if (!id) {
		r->c->oom = 1;
		return 0;
	}
	if (at) {
		dtr_node(d, id)->start_mark = start;
		dtr_node(d, id)->end_mark = end;
	}
	return id;
}

int dtr_ntext(struct dtr *r, const char *text, const yaml_node_t *at)
{
	return dtr_nscalar(r, text, strlen(text), YAML_DOUBLE_QUOTED_SCALAR_STYLE, at);
}

int dtr_nmark(struct dtr *r, int id, const yaml_node_t *at)
{
	if (id && at) {
		dtr_node(&r->t->doc, id)->start_mark = at->start_mark;
		dtr_node(&r->t->doc, id)->end_mark = at->end_mark;
	}
	if (!id)
		r->c->oom = 1;
	return id;
}

/* key: value into map; the key takes the mark of `kat` (the user's key), or
 * else the value's. */
void dtr_npair_at(struct dtr *r, int map, const char *key, int value, const yaml_node_t *kat)
{
	int k;

	if (!map || !value)
		return;
	k = dtr_nscalar(r, key, strlen(key), YAML_PLAIN_SCALAR_STYLE,
			kat ? kat : dtr_node(&r->t->doc, value));
	if (k && !yaml_document_append_mapping_pair(&r->t->doc, map, k, value))
		r->c->oom = 1;
}

void dtr_npair(struct dtr *r, int map, const char *key, int value)
{
	dtr_npair_at(r, map, key, value, NULL);
}

/* The user's scalar as it is: parse.c checks it and says what is wrong. */
int dtr_ncopy(struct dtr *r, const yaml_node_t *v)
{
	if (v->type == YAML_MAPPING_NODE)
		return dtr_nmark(r, yaml_document_add_mapping(&r->t->doc, NULL,
							      YAML_FLOW_MAPPING_STYLE), v);
	if (v->type != YAML_SCALAR_NODE)
		return dtr_nmark(r, yaml_document_add_sequence(&r->t->doc, NULL,
							       YAML_FLOW_SEQUENCE_STYLE), v);
	return dtr_nscalar(r, (const char *)v->data.scalar.value, v->data.scalar.length,
			   v->data.scalar.style, v);
}

/* A whole subtree of the workload (a dliofs section), marks kept. Aliases
 * are expanded, so both depth and size are bounded. */
int dtr_ncopy_tree(struct dtr *r, const yaml_node_t *v, unsigned depth, const char *key)
{
	yaml_document_t *d = &r->t->doc;
	int id, child, k;

	if (r->copied > DLIO_MAX_COPY)
		return 0;	/* said once already */
	if (depth > CFG_MAX_DEPTH || ++r->copied > DLIO_MAX_COPY) {
		dtr_err(r, v, key, "%s", depth > CFG_MAX_DEPTH ?
			"nested too deeply (an alias that contains itself?)" :
			"too large once its aliases are expanded");
		r->copied = DLIO_MAX_COPY + 1;
		return 0;
	}
	switch (v->type) {
	case YAML_SEQUENCE_NODE:
		id = dtr_nmark(r, yaml_document_add_sequence(d, NULL, v->data.sequence.style), v);
		for (yaml_node_item_t *it = v->data.sequence.items.start;
		     id && it < v->data.sequence.items.top; it++) {
			child = dtr_ncopy_tree(r, dtr_node(r->src, *it), depth + 1, key);
			if (!child)
				return 0;
			if (!yaml_document_append_sequence_item(d, id, child)) {
				r->c->oom = 1;
				return 0;
			}
		}
		return id;
	case YAML_MAPPING_NODE:
		id = dtr_nmark(r, yaml_document_add_mapping(d, NULL, v->data.mapping.style), v);
		for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
		     id && p < v->data.mapping.pairs.top; p++) {
			k = dtr_ncopy_tree(r, dtr_node(r->src, p->key), depth + 1, key);
			child = k ? dtr_ncopy_tree(r, dtr_node(r->src, p->value), depth + 1, key) : 0;
			if (!child)
				return 0;
			if (!yaml_document_append_mapping_pair(d, id, k, child)) {
				r->c->oom = 1;
				return 0;
			}
		}
		return id;
	default:
		return dtr_ncopy(r, v);
	}
}

int dtr_nflow_map(struct dtr *r)
{
	return yaml_document_add_mapping(&r->t->doc, NULL, YAML_FLOW_MAPPING_STYLE);
}

int dtr_nnumber(struct dtr *r, uint64_t v, const yaml_node_t *at)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);

	return dtr_nscalar(r, buf, (size_t)n, YAML_PLAIN_SCALAR_STYLE, at);
}

/* ---- values ---- */

const char *dtr_scalar(struct dtr *r, const yaml_node_t *v, const char *key,
		       const char *expected)
{
	if (v->type != YAML_SCALAR_NODE || cfg_is_null(v)) {
		dtr_err(r, v, key, "expected %s, got %s", expected, cfg_kind_of(v));
		return NULL;
	}
	if (strlen((const char *)v->data.scalar.value) != v->data.scalar.length) {
		dtr_err(r, v, key, "expected %s, got a value containing a NUL character", expected);
		return NULL;
	}
	return (const char *)v->data.scalar.value;
}

/* A YAML number as DLIO reads it (int or float), floored: "114660.07",
 * "1.5e6". Exact for integers of any size up to 2^64-1. */
int dtr_number(struct dtr *r, const yaml_node_t *v, const char *key, const char *expected,
	       uint64_t *out)
{
	const char *s = dtr_scalar(r, v, key, expected), *p;
	char q[80];
	uint64_t ip = 0;
	int digits = 0, frac = 0, exp = 0, big = 0;

	if (!s)
		return -EINVAL;
	p = s + (*s == '+');
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (ip > (UINT64_MAX - 9) / 10)
			big = 1;
		else
			ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			frac++;
	if (digits + frac > 0 && (*p == 'e' || *p == 'E')) {
		const char *e = p + 1 + (p[1] == '+' || p[1] == '-');

		if (*e >= '0' && *e <= '9') {
			exp = 1;
			for (p = e; *p >= '0' && *p <= '9'; p++)
				;
		}
	}
	cfg_quote(s, strlen(s), q, sizeof(q));
	if (*p || digits + frac == 0) {
		dtr_err(r, v, key, "expected %s, got %s%s", expected, q,
			s[0] == '-' ? " (negative values are not allowed)" : "");
		return -EINVAL;
	}
	if (exp) {
		long double x = strtold(s, NULL);

		if (!(x >= 0) || x >= 18446744073709551616.0L) {
			dtr_err(r, v, key, "%s is too large (over 2^64-1)", q);
			return -ERANGE;
		}
		*out = (uint64_t)floorl(x);
		return 0;
	}
	if (big) {
		dtr_err(r, v, key, "%s is too large (over 2^64-1)", q);
		return -ERANGE;
	}
	*out = ip;
	return 0;
}

int dtr_boolean(struct dtr *r, const yaml_node_t *v, const char *key, int *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on", "On",
					   "1" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "off", "Off",
					  "0" };
	const char *s = dtr_scalar(r, v, key, "true or false");

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < NELEM(yes); i++) {
		if (!strcmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	dtr_err(r, v, key, "expected true or false, got \"%s\"", s);
	return -EINVAL;
}

