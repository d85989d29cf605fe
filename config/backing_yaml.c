/* The `backing:` section: a list of real directories (or sinks) to show
 * under the mount root.
 *   - {path: /real/dir, at: name, writable: false}
 *   - {at: ckpt, sink: true}
 * Everything about one entry is checked here, including that the directory
 * exists now: a mount that fails later for a typo helps nobody. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dliofs/units.h"
#include "backing_yaml.h"
#include "dliofs/suggest.h"

enum bk_key { BK_PATH, BK_AT, BK_WRITABLE, BK_SINK, BK_MAX_ENTRIES, BK_JOURNAL, BK__COUNT };

static const char *const bk_keys[BK__COUNT] = { "path", "at", "writable", "sink", "max_entries",
						"journal" };

/* A sink's memory is bounded by its entries (about 100 bytes each). */
#define SINK_DEFAULT_ENTRIES (1ULL << 20)
#define SINK_MAX_ENTRIES (1ULL << 26)

static const char *scalar(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || cfg_is_null(n) ||
	    strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return NULL;
	return (const char *)n->data.scalar.value;
}

static int get_bool(struct cfg_ctx *c, const yaml_node_t *n, const char *path, int *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "off" };
	const char *s = scalar(n);

	for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) {
			*out = !strcmp(s, yes[i]);
			return 0;
		}
	}
	cfg_error(c, cfg_node_loc(n), path, "expected true or false, got %s",
		  s ? s : cfg_kind_of(n));
	return -EINVAL;
}

/* The same rules as a dataset name: it is a directory under the root. */
static int check_at(struct cfg_ctx *c, const yaml_node_t *n, const char *path, const char *s)
{
	size_t len = n->data.scalar.length;
	char q[160];

	cfg_quote(s, len, q, sizeof(q));
	if (len == 0 || len > DL_NAME_MAX - 1) {
		cfg_error(c, cfg_node_loc(n), path, "%s: expected 1 to %d characters", q,
			  DL_NAME_MAX - 1);
		return -EINVAL;
	}
	if (s[0] == '.') {
		cfg_error(c, cfg_node_loc(n), path,
			  "%s must not start with '.' (%s is the mount's control directory)", q,
			  DL_CTL_DIRNAME);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == '/') {
			cfg_error(c, cfg_node_loc(n), path,
				  "%s must be a single path component (no '/')", q);
			return -EINVAL;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-')) {
			cfg_error(c, cfg_node_loc(n), path,
				  "%s has a character outside A-Z a-z 0-9 . _ -", q);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_path(struct cfg_ctx *c, const yaml_node_t *n, const char *path, const char *s,
		      struct dl_backing_cfg *b)
{
	struct stat st;
	char q[300];

	cfg_quote(s, strlen(s), q, sizeof(q));
	if (s[0] != '/') {
		cfg_error(c, cfg_node_loc(n), path, "%s: expected an absolute path (starting with /)",
			  q);
		return -EINVAL;
	}
	if (strlen(s) >= sizeof(b->path)) {
		cfg_error(c, cfg_node_loc(n), path, "too long (at most %zu characters)",
			  sizeof(b->path) - 1);
		return -EINVAL;
	}
	if (stat(s, &st) != 0) {
		cfg_error(c, cfg_node_loc(n), path, "%s: %s", q, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		cfg_error(c, cfg_node_loc(n), path, "%s is not a directory", q);
		return -EINVAL;
	}
	memcpy(b->path, s, strlen(s) + 1);
	return 0;
}

/* Keys of one entry: vals[k] is the value of bk_keys[k]. */
/* A sink's journal: an absolute path whose directory exists, and a regular
 * file if it exists (never a device or FIFO). That it lies outside the
 * mount is checked at mount, when the mountpoint is known. */
static void check_journal(struct cfg_ctx *c, const yaml_node_t *n, const char *path,
			  struct dl_backing_cfg *b)
{
	const char *s = scalar(n);
	char q[160], dir[4096], *slash;
	struct stat st;

	if (!s) {
		cfg_error(c, cfg_node_loc(n), path, "expected a file path, got %s", cfg_kind_of(n));
		return;
	}
	cfg_quote(s, strlen(s), q, sizeof(q));
	if (s[0] != '/' || s[strlen(s) - 1] == '/') {
		cfg_error(c, cfg_node_loc(n), path,
			  "%s: expected the absolute path of a file (e.g. /var/lib/dliofs/ckpt.journal)",
			  q);
		return;
	}
	if (strlen(s) >= sizeof(b->journal) - 8) {
		cfg_error(c, cfg_node_loc(n), path, "too long (at most %zu characters)",
			  sizeof(b->journal) - 9);
		return;
	}
	memcpy(dir, s, strlen(s) + 1);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		cfg_error(c, cfg_node_loc(n), path, "%s: its directory %s %s", q, dir,
			  errno == ENOENT ? "does not exist" : "is not a directory");
		return;
	}
	if (lstat(s, &st) == 0 && !S_ISREG(st.st_mode)) {
		cfg_error(c, cfg_node_loc(n), path, "%s is not a regular file", q);
		return;
	}
	memcpy(b->journal, s, strlen(s) + 1);
}

static void entry_keys(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *map,
		       const char *prefix, yaml_node_t **vals, yaml_node_t **keys)
{
	char path[300];

	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *name = k ? scalar(k) : NULL, *hint;
		unsigned i;

		if (!k || !v)
			continue;
		if (!name) {
			cfg_error(c, cfg_node_loc(k), prefix, "expected a key name, got %s",
				  cfg_kind_of(k));
			continue;
		}
		for (i = 0; i < BK__COUNT && strcmp(name, bk_keys[i]); i++)
			;
		snprintf(path, sizeof(path), "%s.%.64s", prefix, name);
		if (i == BK__COUNT) {
			hint = dl_suggest(name, bk_keys, BK__COUNT);
			if (hint)
				cfg_error(c, cfg_node_loc(k), path, "unknown key (did you mean \"%s\"?)",
					  hint);
			else
				cfg_error(c, cfg_node_loc(k), path,
					  "unknown key; expected one of: path, at, writable, sink, "
					  "max_entries, journal");
			continue;
		}
		if (vals[i]) {
			struct dl_loc first = cfg_node_loc(keys[i]);

			cfg_error(c, cfg_node_loc(k), path,
				  "duplicate key (first given at line %u, column %u)", first.line,
				  first.col);
			continue;
		}
		vals[i] = v;
		keys[i] = k;
	}
}

/* Returns whether `at` is usable (for the clash checks). */
static int parse_entry(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *n, unsigned i,
		       struct dl_backing_cfg *b, yaml_node_t **at_node)
{
	yaml_node_t *vals[BK__COUNT] = { 0 }, *keys[BK__COUNT] = { 0 };
	char prefix[32], path[64];
	const char *s;
	int at_ok = 0, wr = 0;

	snprintf(prefix, sizeof(prefix), "backing[%u]", i);
	b->loc = cfg_node_loc(n);
	if (n->type != YAML_MAPPING_NODE) {
		cfg_error(c, cfg_node_loc(n), prefix,
			  "expected a mapping {path: /dir, at: name, writable: false} or "
			  "{at: name, sink: true}, got %s",
			  cfg_kind_of(n));
		return 0;
	}
	entry_keys(c, doc, n, prefix, vals, keys);
	if (vals[BK_SINK]) {
		snprintf(path, sizeof(path), "%s.sink", prefix);
		get_bool(c, vals[BK_SINK], path, &b->sink);
	}
	if (vals[BK_WRITABLE]) {
		snprintf(path, sizeof(path), "%s.writable", prefix);
		if (!get_bool(c, vals[BK_WRITABLE], path, &wr)) {
			b->writable = wr;
			if (b->sink && !wr)
				cfg_error(c, cfg_node_loc(vals[BK_WRITABLE]), path,
					  "a sink always accepts writes (it discards them); "
					  "leave writable out");
		}
	}
	if (b->sink)
		b->writable = 1;
	b->max_entries = SINK_DEFAULT_ENTRIES;
	if (vals[BK_MAX_ENTRIES]) {
		const char *why = NULL;
		uint64_t v = 0;

		snprintf(path, sizeof(path), "%s.max_entries", prefix);
		s = scalar(vals[BK_MAX_ENTRIES]);
		if (!b->sink)
			cfg_error(c, cfg_node_loc(vals[BK_MAX_ENTRIES]), path,
				  "only a sink has entries to bound (add sink: true)");
		else if (!s || dl_parse_count(s, &v, &why) || v < 1 || v > SINK_MAX_ENTRIES)
			cfg_error(c, cfg_node_loc(vals[BK_MAX_ENTRIES]), path,
				  "expected a count from 1 to %llu, like 100k",
				  (unsigned long long)SINK_MAX_ENTRIES);
		else
			b->max_entries = v;
	}
	if (vals[BK_JOURNAL]) {
		snprintf(path, sizeof(path), "%s.journal", prefix);
		if (!b->sink)
			cfg_error(c, cfg_node_loc(vals[BK_JOURNAL]), path,
				  "only a sink keeps a journal of its files (add sink: true)");
		else
			check_journal(c, vals[BK_JOURNAL], path, b);
	}
	snprintf(path, sizeof(path), "%s.at", prefix);
	if (!vals[BK_AT]) {
		cfg_error(c, b->loc, path,
			  "missing: the name the directory gets under the mount root");
	} else if (!(s = scalar(vals[BK_AT]))) {
		cfg_error(c, cfg_node_loc(vals[BK_AT]), path, "expected a name, got %s",
			  cfg_kind_of(vals[BK_AT]));
	} else if (check_at(c, vals[BK_AT], path, s) == 0) {
		memcpy(b->at, s, strlen(s) + 1);
		*at_node = vals[BK_AT];
		at_ok = 1;
	}
	snprintf(path, sizeof(path), "%s.path", prefix);
	if (b->sink) {
		if (vals[BK_PATH])
			cfg_error(c, cfg_node_loc(vals[BK_PATH]), path,
				  "a sink has no directory (its writes are discarded); give either "
				  "path or sink: true");
	} else if (!vals[BK_PATH]) {
		cfg_error(c, b->loc, path,
			  "missing: the real directory to show (or sink: true to discard writes)");
	} else if (!(s = scalar(vals[BK_PATH]))) {
		cfg_error(c, cfg_node_loc(vals[BK_PATH]), path, "expected a path, got %s",
			  cfg_kind_of(vals[BK_PATH]));
	} else {
		check_path(c, vals[BK_PATH], path, s, b);
	}
	return at_ok;
}

int cfg_parse_backing(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		      struct dl_config *cfg)
{
	yaml_node_t **at_nodes;
	size_t n, i = 0;

	if (cfg_is_null(node))
		return 0;
	if (node->type != YAML_SEQUENCE_NODE) {
		cfg_error(c, cfg_node_loc(node), "backing",
			  "expected a list of directories (- {path: /dir, at: name} or "
			  "- {at: name, sink: true}), got %s",
			  cfg_kind_of(node));
		return 0;
	}
	n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	if (n > DL_BACKING_MAX) {
		cfg_error(c, cfg_node_loc(node), "backing", "%zu entries is too many (at most %d)", n,
			  DL_BACKING_MAX);
		return 0;
	}
	if (!n)
		return 0;
	cfg->backing = calloc(n, sizeof(*cfg->backing));
	at_nodes = calloc(n, sizeof(*at_nodes));
	if (!cfg->backing || !at_nodes) {
		free(at_nodes);
		return -ENOMEM;
	}
	cfg->nbacking = (unsigned)n;
	for (yaml_node_item_t *it = node->data.sequence.items.start; i < n; it++, i++) {
		yaml_node_t *e = yaml_document_get_node(doc, *it);
		struct dl_backing_cfg *b = &cfg->backing[i];
		char path[48];

		if (!e || !parse_entry(c, doc, e, (unsigned)i, b, &at_nodes[i]))
			continue;
		snprintf(path, sizeof(path), "backing[%zu].at", i);
		for (unsigned d = 0; d < cfg->ndatasets; d++) {
			if (strcmp(cfg->datasets[d].name, b->at))
				continue;
			cfg_error(c, cfg_node_loc(at_nodes[i]), path,
				  "\"%s\" is already the name of datasets[%u] (line %u); "
				  "each name under the mount root is one directory",
				  b->at, d, cfg->datasets[d].loc.line);
			break;
		}
		for (size_t j = 0; j < i; j++) {
			if (!at_nodes[j] || strcmp(cfg->backing[j].at, b->at))
				continue;
			cfg_error(c, cfg_node_loc(at_nodes[i]), path,
				  "duplicate name \"%s\" (also backing[%zu].at at line %u)", b->at, j,
				  cfg_node_loc(at_nodes[j]).line);
			break;
		}
	}
	free(at_nodes);
	return 0;
}

/* `overlay: {path: /dir}`: one real directory under the synthetic tree.
 * It has no name of its own under the root (it is the root's, the
 * datasets' and the splits' writable half) and always takes writes. */
void cfg_parse_overlay(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		       struct dl_config *cfg)
{
	struct dl_backing_cfg *b = &cfg->overlay;
	yaml_node_t *path = NULL;
	const char *s;

	b->loc = cfg_node_loc(node);
	if (node->type != YAML_MAPPING_NODE) {
		cfg_error(c, cfg_node_loc(node), "overlay",
			  "expected a mapping {path: /shared/dir}, got %s", cfg_kind_of(node));
		return;
	}
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *name = k ? scalar(k) : NULL;

		if (!k || !v)
			continue;
		if (name && !strcmp(name, "path") && !path) {
			path = v;
			continue;
		}
		cfg_error(c, cfg_node_loc(k), "overlay",
			  name && !strcmp(name, "path") ? "duplicate key path"
			  : name && (!strcmp(name, "at") || !strcmp(name, "writable") ||
				     !strcmp(name, "sink"))
				  ? "an overlay has no name of its own and always takes writes; "
				    "give path only"
				  : "unknown key (expected path)");
	}
	if (!path) {
		cfg_error(c, b->loc, "overlay.path",
			  "missing: the real (shared) directory that takes the names created in "
			  "synthetic directories");
		return;
	}
	if (!(s = scalar(path))) {
		cfg_error(c, cfg_node_loc(path), "overlay.path", "expected a path, got %s",
			  cfg_kind_of(path));
		return;
	}
	if (check_path(c, path, "overlay.path", s, b))
		b->path[0] = 0;
	b->writable = 1;
}
