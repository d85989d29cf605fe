/* Reading a config: bytes -> libyaml document -> model.
 * Each value is checked on its own here (type, syntax, range of one number);
 * everything that involves several values is validate.c's. Every problem is
 * reported with file:line:column and the key path, and parsing goes on. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/units.h"
#include "config_i.h"
#include "dliofs/suggest.h"
#include "backing_yaml.h"
#include "pacer_yaml.h"

struct walk {
	struct cfg_ctx *c;
	yaml_document_t *doc;
};

enum top_key { TK_SEED, TK_IO, TK_DATASETS, TK_PACER, TK_CACHE, TK_BACKING, TK_TRACE, TK__COUNT };

static const char *const top_keys[TK__COUNT] = {
	"seed", "io", "datasets", "pacer", "cache", "backing", "trace",
};

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

static int too_many(const struct cfg_ctx *c)
{
	return c->nerr > CFG_MAX_ERRORS;
}

/* ---- the raw text and libyaml's own errors ---- */

/* 1-based line and column of byte `off`, counting characters as libyaml does. */
static struct dl_loc loc_of_offset(const char *buf, size_t len, size_t off)
{
	struct dl_loc l = { 1, 1 };

	for (size_t i = 0; i < off && i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n' || (ch == '\r' && !(i + 1 < len && buf[i + 1] == '\n'))) {
			l.line++;
			l.col = 1;
		} else if ((ch & 0xc0) != 0x80 && ch != '\r') {
			l.col++;
		}
	}
	return l;
}

/* Does line `line` (0-based) hold a tab at or before character `col`? */
static int tab_near(const char *buf, size_t len, size_t line, size_t col)
{
	size_t i = 0, l = 0, c = 0;

	while (i < len && l < line) {
		if (buf[i] == '\n' || (buf[i] == '\r' && !(i + 1 < len && buf[i + 1] == '\n')))
			l++;
		i++;
	}
	for (; i < len && buf[i] != '\n' && buf[i] != '\r' && c <= col; i++) {
		if (buf[i] == '\t')
			return 1;
		if (((unsigned char)buf[i] & 0xc0) != 0x80)
			c++;
	}
	return 0;
}

static int report_yaml_error(struct cfg_ctx *c, const yaml_parser_t *p, const char *buf,
			     size_t len)
{
	struct dl_loc loc, end;
	const char *problem = p->problem ? p->problem : "malformed YAML", *utf8;
	char ctx[160] = "";
	size_t off;

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		cfg_error(c, (struct dl_loc){ 0, 0 }, NULL, "out of memory while reading YAML");
		return -ENOMEM;
	case YAML_READER_ERROR:
		off = p->problem_offset;
		/* A bad continuation byte: point at the character it breaks. */
		if (p->problem && strstr(p->problem, "trailing")) {
			for (unsigned back = 1; back <= 3 && back <= off && off <= len; back++) {
				if (((unsigned char)buf[off - back] & 0xc0) == 0xc0) {
					off -= back;
					break;
				}
			}
		}
		loc = loc_of_offset(buf, len, off);
		utf8 = strstr(problem, "UTF") ? "; a config must be UTF-8 text" : "";
		if (p->problem_value != -1)
			cfg_error(c, loc, NULL, "invalid input: %s (byte 0x%02x)%s", problem,
				  (unsigned)p->problem_value & 0xff, utf8);
		else
			cfg_error(c, loc, NULL, "invalid input: %s%s", problem, utf8);
		return -EINVAL;
	default:
		loc.line = (unsigned)p->problem_mark.line + 1;
		loc.col = (unsigned)p->problem_mark.column + 1;
		/* At end of input libyaml points one line past the last: point at
		 * where the text really ends. */
		end = loc_of_offset(buf, len, len);
		if (loc.line > end.line || (loc.line == end.line && loc.col > end.col))
			loc = end;
		if (p->context)
			snprintf(ctx, sizeof(ctx), " (%s at line %u, column %u)", p->context,
				 (unsigned)p->context_mark.line + 1,
				 (unsigned)p->context_mark.column + 1);
		cfg_error(c, loc, NULL, "YAML syntax error: %s%s%s", problem, ctx,
			  tab_near(buf, len, p->problem_mark.line, p->problem_mark.column) ?
				  "; tabs cannot indent YAML, use spaces" : "");
		return -EINVAL;
	}
}

/* Walk the event stream once before libyaml builds a tree: syntax errors,
 * a second document and absurd nesting or size are caught without memory
 * growing with them. */
static int prescan(struct cfg_ctx *c, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	unsigned depth = 0, nodes = 0, docs = 0;
	int ret = 0;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (;;) {
		yaml_event_type_t type;
		struct dl_loc at;

		if (!yaml_parser_parse(&p, &ev)) {
			ret = report_yaml_error(c, &p, buf, len);
			break;
		}
		type = ev.type;
		at.line = (unsigned)ev.start_mark.line + 1;
		at.col = (unsigned)ev.start_mark.column + 1;
		switch (type) {
		case YAML_DOCUMENT_START_EVENT:
			if (++docs == 2) {
				cfg_error(c, at, NULL,
					  "a second YAML document starts here; a config is one "
					  "document (remove the '---' or split the file)");
				ret = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			nodes++;
			if (++depth > CFG_MAX_DEPTH) {
				cfg_error(c, at, NULL, "nested more than %u levels deep",
					  CFG_MAX_DEPTH);
				ret = -EINVAL;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
			nodes++;
			break;
		default:
			break;
		}
		if (!ret && nodes > CFG_MAX_NODES) {
			cfg_error(c, at, NULL, "more than %u YAML nodes; a config has a few hundred",
				  CFG_MAX_NODES);
			ret = -EINVAL;
		}
		yaml_event_delete(&ev);
		if (ret || type == YAML_STREAM_END_EVENT)
			break;
	}
	if (!ret && docs == 0) {
		cfg_error(c, (struct dl_loc){ 1, 1 }, NULL,
			  "empty config: expected a mapping with a 'datasets' list");
		ret = -EINVAL;
	}
	yaml_parser_delete(&p);
	return ret;
}

/* ---- nodes ---- */

static yaml_node_t *node_at(struct walk *w, int index)
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
static const char *scalar_of(struct walk *w, yaml_node_t *n, const char *path,
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
static void walk_mapping(struct walk *w, yaml_node_t *map, const char *prefix,
			 const char *const *keys, size_t nkeys, yaml_node_t **vals,
			 yaml_node_t **key_nodes, int dlio_hints)
{
	char path[256], shown[128];

	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top && !too_many(w->c); pr++) {
		yaml_node_t *k = node_at(w, pr->key), *v = node_at(w, pr->value);
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

static void value_error(struct walk *w, yaml_node_t *n, const char *path, const char *expected,
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

static int get_size(struct walk *w, yaml_node_t *n, const char *path, uint64_t *out)
{
	const char *s = scalar_of(w, n, path, EXPECT_SIZE), *why = NULL;
	int ret;

	if (!s)
		return -EINVAL;
	ret = dl_parse_size(s, out, &why);
	if (ret)
		value_error(w, n, path, EXPECT_SIZE, s, ret, why);
	return ret;
}

static int get_count(struct walk *w, yaml_node_t *n, const char *path, uint64_t max,
		     uint64_t *out)
{
	const char *s = scalar_of(w, n, path, EXPECT_COUNT), *why = NULL;
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
static int get_u64(struct walk *w, yaml_node_t *n, const char *path, uint64_t *out)
{
	static const char expected[] = "an unsigned 64-bit integer like 42";
	const char *s = scalar_of(w, n, path, expected), *p;
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
static int get_choice(struct walk *w, yaml_node_t *n, const char *path, const char *const *names,
		      size_t nnames, unsigned *out)
{
	char expected[256], q[128];
	const char *s, *hint;
	size_t o;

	o = (size_t)snprintf(expected, sizeof(expected), "one of ");
	for (size_t i = 0; i < nnames && o < sizeof(expected); i++)
		o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s",
				      i ? ", " : "", names[i]);
	s = scalar_of(w, n, path, expected);
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

/* ---- the dataset mapping ---- */

#define EXPECT_PIXELS "a number of pixels like 224"

static struct cfg_ref *add_ref(struct cfg_src_ds *sd, const char *rel, yaml_node_t *n)
{
	struct cfg_ref *r;
	size_t len;

	if (sd->nref == CFG_MAX_REFS)
		return NULL;
	r = &sd->ref[sd->nref++];
	len = strnlen(rel, sizeof(r->key) - 1);
	memcpy(r->key, rel, len);
	r->key[len] = '\0';
	r->node = n;
	r->bad = 0;
	return r;
}

/* A distribution (sample_size, an image side) at path: one value, or
 * {mean, stdev, min, max}, whose keys are remembered as rel.mean, ...
 * Returns -EINVAL when the value itself is unusable; problems in the
 * mapping's values are marked on their own references. */
static int parse_dist(struct walk *w, yaml_node_t *n, const char *path, const char *rel,
		      int is_size, struct dl_dist *d, struct cfg_src_ds *sd)
{
	yaml_node_t *vals[CD__COUNT] = { 0 }, *keys[CD__COUNT] = { 0 };
	uint64_t *dst[CD__COUNT] = { &d->mean, &d->stdev, &d->min, &d->max };

	if (n->type != YAML_MAPPING_NODE) {
		const char *s;

		if (is_size)
			return get_size(w, n, path, &d->mean);
		s = scalar_of(w, n, path, EXPECT_PIXELS " or {mean: ..., stdev: ...}");
		return s ? get_count(w, n, path, UINT64_MAX, &d->mean) : -EINVAL;
	}
	walk_mapping(w, n, path, cfg_dist_key, CD__COUNT, vals, keys, 0);
	for (unsigned i = 0; i < CD__COUNT; i++) {
		char sub[340], subrel[64];
		struct cfg_ref *r;
		int ret;

		if (!vals[i])
			continue;
		snprintf(sub, sizeof(sub), "%s.%s", path, cfg_dist_key[i]);
		snprintf(subrel, sizeof(subrel), "%s.%s", rel, cfg_dist_key[i]);
		r = add_ref(sd, subrel, vals[i]);
		ret = is_size ? get_size(w, vals[i], sub, dst[i])
			      : get_count(w, vals[i], sub, UINT64_MAX, dst[i]);
		if (ret && r)
			r->bad = 1;
	}
	return 0;
}

/* A list of 1..8 dimensions, each >= 1: shape and hdf5.chunks. Returns
 * the number of items (even past 8); *bad is set on any problem. */
static unsigned parse_dims(struct walk *w, yaml_node_t *n, const char *path, uint64_t *dims,
			   unsigned char *bad)
{
	unsigned i = 0, len;

	if (n->type != YAML_SEQUENCE_NODE) {
		cfg_error(w->c, cfg_node_loc(n), path,
			  "expected a list of 1 to %u dimensions like [224, 224, 3], got %s",
			  DL_MAX_DIMS, cfg_kind_of(n));
		*bad = 1;
		return 0;
	}
	len = (unsigned)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (len == 0 || len > DL_MAX_DIMS) {
		cfg_error(w->c, cfg_node_loc(n), path, "expected 1 to %u dimensions, got %u",
			  DL_MAX_DIMS, len);
		*bad = 1;
		return len;
	}
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, i++) {
		yaml_node_t *d = node_at(w, *it);
		char sub[340];

		if (!d)
			continue;
		snprintf(sub, sizeof(sub), "%s[%u]", path, i);
		if (get_count(w, d, sub, UINT64_MAX, &dims[i])) {
			*bad = 1;
		} else if (dims[i] == 0) {
			cfg_error(w->c, cfg_node_loc(d), sub, "a dimension must be at least 1");
			*bad = 1;
		}
	}
	return len;
}

static void parse_shape(struct walk *w, yaml_node_t *n, const char *prefix,
			struct dl_dataset *ds, struct cfg_src_ds *sd)
{
	char path[300];

	snprintf(path, sizeof(path), "%s.shape", prefix);
	sd->shape_len = parse_dims(w, n, path, ds->dims, &sd->bad[CF_SHAPE]);
	if (!sd->bad[CF_SHAPE])
		ds->ndims = sd->shape_len;
}

#define MAX_SUB_KEYS 16

/* One of a format's own keys, into its parameter block, as its table says
 * (format.h): the value, and where it was written (rel, dotted). */
static void parse_param(struct walk *w, yaml_node_t *n, const char *path, const char *rel,
			const struct dl_param *p, unsigned char *block, struct cfg_src_ds *sd)
{
	struct cfg_ref *r = add_ref(sd, rel, n);
	unsigned char *at = block + p->off, bad = 0;
	unsigned choice, len;
	uint64_t u;
	int ret = 0;

	switch (p->kind) {
	case DL_PK_COUNT:
		ret = get_count(w, n, path, p->unit || !p->max ? UINT64_MAX : p->max, &u);
		if (!ret && p->unit && (u < p->min || u > p->max)) {
			cfg_error(w->c, cfg_node_loc(n), path, "expected %llu to %llu %s, got %llu",
				  (unsigned long long)p->min, (unsigned long long)p->max, p->unit,
				  (unsigned long long)u);
			ret = -ERANGE;
		}
		if (!ret && p->width == 4)
			*(unsigned *)(void *)at = (unsigned)u;
		else if (!ret)
			*(uint64_t *)(void *)at = u;
		break;
	case DL_PK_CHOICE:
		ret = get_choice(w, n, path, p->names, p->nnames, &choice);
		if (!ret)
			*(unsigned *)(void *)at = choice;
		break;
	case DL_PK_PIXELS:
		ret = parse_dist(w, n, path, rel, 0, (struct dl_dist *)(void *)at, sd);
		break;
	case DL_PK_DIMS:
		len = parse_dims(w, n, path, (uint64_t *)(void *)at, &bad);
		if (!bad)
			*(unsigned *)(void *)(block + p->count_off) = len;
		ret = bad ? -EINVAL : 0;
		break;
	case DL_PK_MAP: {
		yaml_node_t *vals[MAX_SUB_KEYS] = { 0 }, *keys[MAX_SUB_KEYS] = { 0 };
		const char *names[MAX_SUB_KEYS] = { 0 };
		unsigned nsub = p->nsub < MAX_SUB_KEYS ? p->nsub : MAX_SUB_KEYS;

		if (n->type != YAML_MAPPING_NODE) {
			cfg_error(w->c, cfg_node_loc(n), path, "expected %s, got %s", p->expected,
				  cfg_kind_of(n));
			ret = -EINVAL;
			break;
		}
		for (unsigned i = 0; i < nsub; i++)
			names[i] = p->sub[i].key;
		walk_mapping(w, n, path, names, nsub, vals, keys, 0);
		for (unsigned i = 0; i < nsub; i++) {
			char sub[340], subrel[64];

			if (!vals[i])
				continue;
			snprintf(sub, sizeof(sub), "%s.%s", path, names[i]);
			snprintf(subrel, sizeof(subrel), "%s.%s", rel, names[i]);
			parse_param(w, vals[i], sub, subrel, &p->sub[i], block, sd);
		}
		break;
	}
	}
	if (ret && r)
		r->bad = 1;
}

static void copy_text(char *dst, size_t dstlen, const char *s)
{
	size_t n = strnlen(s, dstlen - 1);

	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* A format's key written for a dataset: into the dataset's parameters when
 * its format has it; otherwise (validate.c says which formats use it) into
 * a scratch block, so a bad value is still reported where it stands. */
static void parse_format_key(struct walk *w, yaml_node_t *v, const char *prefix,
			     const char *key, int fmt_ok, struct dl_dataset *ds,
			     struct cfg_src_ds *sd)
{
	const struct dl_param *p = fmt_ok ? dl_format_param(dl_ds_ops(ds), key) : NULL;
	char path[300];

	snprintf(path, sizeof(path), "%s.%s", prefix, key);
	if (p) {
		parse_param(w, v, path, key, p, ds->params, sd);
		return;
	}
	for (unsigned f = 0; f < DL_FMT__COUNT; f++) {
		struct dl_dataset scratch = { .format = (enum dl_format)f };

		p = dl_format_param(dl_format_ops((enum dl_format)f), key);
		if (p) {
			dl_format_param_defaults(&scratch);
			parse_param(w, v, path, key, p, scratch.params, sd);
			return;
		}
	}
}

static void parse_dataset(struct walk *w, yaml_node_t *n, unsigned index, struct dl_dataset *ds,
			  struct cfg_src_ds *sd)
{
	const char *names[CFG_MAX_DS_KEYS];
	yaml_node_t *vals[CFG_MAX_DS_KEYS] = { 0 }, *keys[CFG_MAX_DS_KEYS] = { 0 };
	unsigned nkeys = cfg_dataset_keys(names, CFG_MAX_DS_KEYS);
	char prefix[64], path[300];
	const char *s;
	unsigned choice;
	int fmt_ok = 0;

	snprintf(prefix, sizeof(prefix), "datasets[%u]", index);
	ds->index = index;
	ds->loc = cfg_node_loc(n);
	ds->files[DL_SPLIT_TRAIN] = 1;
	ds->samples_per_file = 1;
	ds->dtype = DL_DT_UINT8;
	ds->compression_level = CFG_DEFAULT_COMPRESSION_LEVEL;
	copy_text(ds->file_prefix, sizeof(ds->file_prefix), "img");
	if (n->type != YAML_MAPPING_NODE) {
		cfg_error(w->c, cfg_node_loc(n), prefix,
			  "expected a mapping (name: ..., format: ..., ...), got %s", cfg_kind_of(n));
		return;
	}
	sd->node = n;
	walk_mapping(w, n, prefix, names, nkeys, vals, keys, 1);
	memcpy(sd->val, vals, sizeof(sd->val));

	/* The format first: it says which keys follow and their defaults. */
	if (sd->val[CF_FORMAT]) {
		const char *fmts[DL_FMT__COUNT];

		for (unsigned i = 0; i < DL_FMT__COUNT; i++)
			fmts[i] = dl_format_name((enum dl_format)i);
		snprintf(path, sizeof(path), "%s.format", prefix);
		if (get_choice(w, sd->val[CF_FORMAT], path, fmts, DL_FMT__COUNT, &choice)) {
			sd->bad[CF_FORMAT] = 1;
		} else {
			ds->format = (enum dl_format)choice;
			dl_format_param_defaults(ds);
			fmt_ok = 1;
		}
	}
	for (unsigned f = 0; f < CF__COUNT; f++) {
		yaml_node_t *v = sd->val[f];
		uint64_t u;
		int ret = 0;

		if (!v || f == CF_FORMAT)
			continue;
		snprintf(path, sizeof(path), "%s.%s", prefix, cfg_field_key[f]);
		switch ((enum cfg_field)f) {
		case CF_NAME:
			s = scalar_of(w, v, path, "a directory name like unet3d");
			if (s)
				copy_text(ds->name, sizeof(ds->name), s);
			ret = s ? 0 : -EINVAL;
			break;
		case CF_PREFIX:
			s = scalar_of(w, v, path, "a file name prefix like img");
			if (s)
				copy_text(ds->file_prefix, sizeof(ds->file_prefix), s);
			ret = s ? 0 : -EINVAL;
			break;
		case CF_DTYPE: {
			const char *dts[DL_DT__COUNT];

			for (unsigned i = 0; i < DL_DT__COUNT; i++)
				dts[i] = dl_dtype_name((enum dl_dtype)i);
			ret = get_choice(w, v, path, dts, DL_DT__COUNT, &choice);
			if (!ret)
				ds->dtype = (enum dl_dtype)choice;
			break;
		}
		case CF_FILES:
			ret = get_count(w, v, path, UINT64_MAX, &ds->files[DL_SPLIT_TRAIN]);
			break;
		case CF_EVAL_FILES:
			ret = get_count(w, v, path, UINT64_MAX, &ds->files[DL_SPLIT_VALID]);
			break;
		case CF_SAMPLES:
			ret = get_count(w, v, path, UINT64_MAX, &ds->samples_per_file);
			break;
		case CF_SUBFOLDERS:
		case CF_EVAL_SUBFOLDERS:
			ret = get_count(w, v, path, UINT32_MAX, &u);
			if (!ret)
				ds->subfolders[f == CF_SUBFOLDERS ? DL_SPLIT_TRAIN : DL_SPLIT_VALID] =
					(uint32_t)u;
			break;
		case CF_SAMPLE_SIZE:
			ret = parse_dist(w, v, path, "sample_size", 1, &ds->sample_size, sd);
			break;
		case CF_SHAPE:
			parse_shape(w, v, prefix, ds, sd);
			break;
		case CF_COMPRESSION: {
			const char *comps[DL_COMP__COUNT];

			for (unsigned i = 0; i < DL_COMP__COUNT; i++)
				comps[i] = dl_compression_name((enum dl_compression)i);
			ret = get_choice(w, v, path, comps, DL_COMP__COUNT, &choice);
			if (!ret)
				ds->compression = (enum dl_compression)choice;
			break;
		}
		case CF_COMPRESSION_LEVEL:
			ret = get_count(w, v, path, UINT32_MAX, &u);
			if (!ret)
				ds->compression_level = (unsigned)u;
			break;
		case CF_CLASSES:
			ret = get_count(w, v, path, UINT32_MAX, &u);
			if (!ret)
				ds->classes = (uint32_t)u;
			break;
		case CF_FORMAT:
		case CF__COUNT:
			break;
		}
		if (ret)
			sd->bad[f] = 1;
	}
	for (unsigned i = CF__COUNT; i < nkeys; i++)
		if (vals[i])
			parse_format_key(w, vals[i], prefix, names[i], fmt_ok, ds, sd);
}

static void parse_datasets(struct walk *w, yaml_node_t *n, struct dl_config *cfg,
			   struct cfg_src *src)
{
	size_t i = 0, nparse;

	if (n->type != YAML_SEQUENCE_NODE) {
		cfg_error(w->c, cfg_node_loc(n), "datasets",
			  "expected a list of datasets (- name: ..., format: ...), got %s",
			  cfg_kind_of(n));
		src->datasets_bad = 1;
		return;
	}
	src->nitems = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	/* Past the limit validate.c says so once; the rest is not looked at. */
	nparse = src->nitems > CFG_MAX_DATASETS ? CFG_MAX_DATASETS : src->nitems;
	if (!nparse)
		return;
	cfg->datasets = calloc(nparse, sizeof(*cfg->datasets));
	src->ds = calloc(nparse, sizeof(*src->ds));
	if (!cfg->datasets || !src->ds) {
		w->c->oom = 1;
		return;
	}
	cfg->ndatasets = (unsigned)nparse;
	for (yaml_node_item_t *it = n->data.sequence.items.start; i < nparse; it++, i++) {
		yaml_node_t *d = node_at(w, *it);

		if (d && !too_many(w->c))
			parse_dataset(w, d, (unsigned)i, &cfg->datasets[i], &src->ds[i]);
	}
}

int cfg_parse(struct cfg_ctx *c, yaml_document_t *doc, struct dl_config *cfg,
	      struct cfg_src *src)
{
	struct walk w = { c, doc };
	yaml_node_t *root = yaml_document_get_root_node(doc);
	yaml_node_t *vals[TK__COUNT] = { 0 }, *keys[TK__COUNT] = { 0 };
	unsigned choice;

	cfg->seed = 1;
	cfg->io_mode = DL_IO_CACHE;
	if (!root) {
		cfg_error(c, (struct dl_loc){ 1, 1 }, NULL,
			  "empty config: expected a mapping with a 'datasets' list");
		return 0;
	}
	if (root->type != YAML_MAPPING_NODE) {
		cfg_error(c, cfg_node_loc(root), NULL,
			  "expected a mapping of settings (seed, io, datasets) at the top level, "
			  "got %s",
			  cfg_kind_of(root));
		return 0;
	}
	src->root = root;
	walk_mapping(&w, root, "", top_keys, TK__COUNT, vals, keys, 0);
	if (vals[TK_PACER]) {
		dl_cfg_parse_pacer(c, doc, vals[TK_PACER], 0, &cfg->pacer);
		/* A storage model with no client cache stated: every read reaches
		 * it, so a second epoch costs what the first did. The kernel's
		 * page cache (this machine's RAM, whatever its size) would hide
		 * repeated reads from the model. */
		if (cfg->pacer.enabled && strncmp(cfg->pacer.cache.origin, "profile", 7)) {
			cfg->pacer.cache.policy = DL_CACHE_NONE;
			snprintf(cfg->pacer.cache.origin, sizeof(cfg->pacer.cache.origin),
				 "default with a storage model: no client cache");
		}
	}
	if (vals[TK_CACHE] && !too_many(c)) {
		dl_cfg_parse_pacer(c, doc, vals[TK_CACHE], 1, &cfg->pacer);
		snprintf(cfg->pacer.cache.origin, sizeof(cfg->pacer.cache.origin), "config");
	}
	if (vals[TK_TRACE] && !too_many(c))
		dl_cfg_parse_trace(c, doc, vals[TK_TRACE], &cfg->trace);
	if (vals[TK_SEED])
		get_u64(&w, vals[TK_SEED], "seed", &cfg->seed);
	if (vals[TK_IO]) {
		static const char *const modes[] = { [DL_IO_CACHE] = "cache",
						     [DL_IO_DIRECT] = "direct" };

		if (!get_choice(&w, vals[TK_IO], "io", modes, 2, &choice))
			cfg->io_mode = (enum dl_io_mode)choice;
	}
	if (vals[TK_DATASETS]) {
		src->datasets = vals[TK_DATASETS];
		parse_datasets(&w, vals[TK_DATASETS], cfg, src);
	}
	/* After the datasets: a backing name must not clash with one. */
	if (vals[TK_BACKING] && cfg_parse_backing(c, doc, vals[TK_BACKING], cfg))
		c->oom = 1;
	return c->oom ? -ENOMEM : 0;
}

/* ---- loading ---- */

void dl_config_free(struct dl_config *cfg)
{
	if (!cfg)
		return;
	dl_pacer_cfg_free(&cfg->pacer);
	free(cfg->backing);
	free(cfg->datasets);
	free(cfg);
}

int dl_config_load_buf(const char *name, const char *yaml, size_t len, FILE *err,
		       struct dl_config **out)
{
	struct cfg_ctx c = { .name = name ? name : "<config>", .err = err };
	struct cfg_src src = { 0 };
	struct dl_config *cfg = NULL;
	struct cfg_dlio *dlio = NULL;
	yaml_parser_t parser;
	yaml_document_t doc, *model_doc = &doc;
	int have_parser = 0, have_doc = 0, ret;

	if (out)
		*out = NULL;
	if (!yaml)
		yaml = "";
	if (len > CFG_MAX_BYTES) {
		cfg_error(&c, (struct dl_loc){ 0, 0 }, NULL,
			  "too large (%zu bytes, at most %u); a config is a few kB", len,
			  CFG_MAX_BYTES);
		ret = -EINVAL;
		goto out;
	}
	ret = prescan(&c, yaml, len);
	if (ret)
		goto out;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || !yaml_parser_initialize(&parser)) {
		ret = -ENOMEM;
		goto out;
	}
	dl_pacer_cfg_init(&cfg->pacer);
	have_parser = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		ret = report_yaml_error(&c, &parser, yaml, len);
		goto out;
	}
	have_doc = 1;
	copy_text(cfg->path, sizeof(cfg->path), c.name);
	if (cfg_dlio_detect(&doc)) {
		/* A DLIO workload: checked as the native document it stands for. */
		ret = cfg_dlio_translate(&c, &doc, &dlio, &model_doc);
		if (ret || !model_doc) {
			ret = ret ? ret : -EINVAL;
			goto out;
		}
	}
	ret = cfg_parse(&c, model_doc, cfg, &src);
	if (!ret && !too_many(&c))
		ret = cfg_validate(&c, cfg, &src);
	if (!ret && c.nerr)
		ret = -EINVAL;
	if (!ret && dlio)
		cfg_dlio_report_ignored(&c, dlio);
out:
	cfg_dlio_free(dlio);
	if (ret == -ENOMEM && err)
		fprintf(err, "%s: out of memory\n", c.name);
	free(src.ds);
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	if (ret || !out)
		dl_config_free(cfg);
	else
		*out = cfg;
	return ret;
}

static int errno_class(int e)
{
	if (e == ENOENT || e == ENOTDIR)
		return -ENOENT;
	if (e == EACCES || e == EPERM)
		return -EACCES;
	return -EIO;
}

/* The whole file in memory (configs are small; the cap keeps it so). */
static int read_all(const char *path, FILE *err, char **bufp, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = NULL, *nb;
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = errno;
		if (err)
			fprintf(err, "%s: cannot open: %s\n", path, strerror(ret));
		return errno_class(ret);
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (err)
			fprintf(err, "%s: cannot open: %s\n", path, strerror(EISDIR));
		ret = -EIO;
		goto out;
	}
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (len == cap) {
			if (cap > CFG_MAX_BYTES) {
				if (err)
					fprintf(err, "%s: too large (over %u bytes); a config is a "
						"few kB\n", path, CFG_MAX_BYTES);
				ret = -EINVAL;
				goto out;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			if (err)
				fprintf(err, "%s: cannot read: %s\n", path, strerror(e));
			ret = errno_class(e) == -EACCES ? -EACCES : -EIO;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	*bufp = buf;
	*lenp = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

int dl_config_load(const char *path, FILE *err, struct dl_config **out)
{
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (out)
		*out = NULL;
	if (!path || !*path) {
		if (err)
			fprintf(err, "config: cannot open: %s\n", strerror(ENOENT));
		return -ENOENT;
	}
	ret = read_all(path, err, &buf, &len);
	if (ret)
		return ret;
	ret = dl_config_load_buf(path, buf, len, err, out);
	free(buf);
	return ret;
}
