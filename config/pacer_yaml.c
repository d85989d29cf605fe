/* The `pacer:` and `cache:` sections: nested YAML mappings are flattened into
 * the dotted keys of the pacer's one options table (dl_pacer_cfg_set), so the
 * YAML, live `dliofs set` writes and the dump all speak the same keys.
 *
 * The walk follows YAML aliases (libyaml hands them over as shared nodes,
 * cycles included), so a section is measured first: one whose aliases
 * expand past PACER_MAX_VISIT nodes, or nest past CFG_MAX_DEPTH, is refused
 * once, at the section, instead of being walked for ever. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "dliofs/config.h"
#include "dliofs/exepath.h"
#include "dliofs/pacer.h"
#include "config_i.h"
#include "pacer_yaml.h"

#define MAX_PROFILE_DEPTH 4
/* Nodes one section may expand to (a real one has a few dozen). */
#define PACER_MAX_VISIT 100000UL

struct pwalk {
	struct cfg_ctx *c;	/* messages and their cap; c->name is the file walked */
	yaml_document_t *doc;
	struct dl_pacer_cfg *pc;
	int depth;		/* profile inclusion depth */
};

static struct dl_loc node_loc(const yaml_node_t *n)
{
	return (struct dl_loc){ (unsigned)n->start_mark.line + 1,
				(unsigned)n->start_mark.column + 1 };
}

static void perr(struct pwalk *w, const yaml_node_t *n, const char *key, const char *msg)
{
	/* The options table's messages already start with the key. */
	size_t kl = strlen(key);

	if (!strncmp(msg, key, kl) && msg[kl] == ':')
		cfg_error(w->c, node_loc(n), NULL, "%s", msg);
	else
		cfg_error(w->c, node_loc(n), key, "%s", msg);
}

/* What the walk below would visit, aliases followed: NULL when it is a
 * reasonable size, else why it is not. Stops counting at the limit, so it
 * costs at most PACER_MAX_VISIT steps whatever the document. */
static const char *measure(yaml_document_t *doc, const yaml_node_t *n, unsigned level,
			   unsigned long *count)
{
	const char *why = NULL;

	if (level > CFG_MAX_DEPTH)
		return "nested too deeply (an alias that contains itself?)";
	if (++*count > PACER_MAX_VISIT)
		return "too large once its aliases are expanded";
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     !why && it < n->data.sequence.items.top; it++)
			why = measure(doc, yaml_document_get_node(doc, *it), level + 1, count);
	} else if (n->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     !why && p < n->data.mapping.pairs.top; p++)
			why = measure(doc, yaml_document_get_node(doc, p->value), level + 1, count);
	}
	return why;
}

/* Refuse a section that aliases blow up, at the section, once. */
static int sized_ok(struct pwalk *w, const yaml_node_t *n, const char *section)
{
	unsigned long count = 0;
	const char *why = measure(w->doc, n, 0, &count);

	if (why)
		cfg_error(w->c, node_loc(n), section, "%s", why);
	return !why;
}

static int load_profile(struct pwalk *w, const yaml_node_t *at, const char *name);

/* A key whose value is a latency: "read.latency", "phases.0.meta.latency",
 * or a point of a latency table ("read.latency_by_size.4KiB"). */
static int is_latency_key(const char *key)
{
	size_t n = strlen(key);
	const char *dot = strrchr(key, '.');

	if (n >= 7 && !strcmp(key + n - 7, "latency"))
		return 1;
	return dot && dot - key >= 15 && !strncmp(dot - 15, "latency_by_size", 15);
}

/* empirical(FILE) with a relative FILE names a file beside the YAML file
 * that says it (a profile's tables live beside the profile), wherever the
 * mount is started from. Returns val, or the rewritten text in buf. */
static const char *rebase_empirical(const struct pwalk *w, const char *val, char *buf, size_t len)
{
	char dir[4096];
	const char *arg;

	while (*val == ' ' || *val == '\t')
		val++;
	if (strncmp(val, "empirical", 9))
		return val;
	arg = val + 9;
	while (*arg == ' ' || *arg == '\t')
		arg++;
	if (*arg++ != '(')
		return val;
	while (*arg == ' ' || *arg == '\t')
		arg++;
	if (*arg == '/' || *arg == ')' || !*arg || !w->c->name || !strchr(w->c->name, '/'))
		return val;
	snprintf(dir, sizeof(dir), "%s", w->c->name);
	if ((size_t)snprintf(buf, len, "empirical(%s/%s", dirname(dir), arg) >= len)
		return val;
	return buf;
}

/* Set a leaf of the pacer section (latencies rebased first). */
static int set_leaf(const struct pwalk *w, const char *key, const char *val, char *err, size_t errlen)
{
	char buf[4400];

	if (is_latency_key(key))
		val = rebase_empirical(w, val, buf, sizeof(buf));
	return dl_pacer_cfg_set(w->pc, key, val, err, errlen);
}

/* at: where errors point (the key that names the setting). Only called on
 * a section sized_ok() accepted. */
static void walk(struct pwalk *w, yaml_node_t *n, const char *prefix, yaml_node_t *at)
{
	char key[256], err[768];

	if (w->c->nerr > CFG_MAX_ERRORS)
		return;
	if (n->type == YAML_SCALAR_NODE) {
		/* A leaf: prefix is the full dotted key ("read.bandwidth"). */
		const char *k = prefix;
		if (!strcmp(k, "profile")) {
			load_profile(w, n, (const char *)n->data.scalar.value);
			return;
		}
		if (set_leaf(w, k, (const char *)n->data.scalar.value, err, sizeof(err)))
			perr(w, at ? at : n, k, err);
		return;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		unsigned i = 0;
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top && w->c->nerr <= CFG_MAX_ERRORS; it++, i++) {
			snprintf(key, sizeof(key), "%s.%u", prefix, i);
			walk(w, yaml_document_get_node(w->doc, *it), key, NULL);
		}
		return;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top && w->c->nerr <= CFG_MAX_ERRORS; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		if (!k || k->type != YAML_SCALAR_NODE) {
			perr(w, k ? k : n, prefix[0] ? prefix : "pacer", "keys must be plain names");
			continue;
		}
		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "",
			 (const char *)k->data.scalar.value);
		/* latency: {dist: lognormal, median: 1ms, p99: 10ms} -> lognormal(1ms,10ms);
		 * which keys a distribution takes is the pacer's table (dl_lat_dist_arg). */
		if (v->type == YAML_MAPPING_NODE && is_latency_key(key)) {
			char val[512] = "", forms[512];
			const char *dist = NULL, *arg[2] = {NULL, NULL};
			yaml_node_t *dist_at = v;
			int bad = 0;

			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				yaml_node_t *qk = yaml_document_get_node(w->doc, q->key);
				yaml_node_t *qv = yaml_document_get_node(w->doc, q->value);

				if (qk->type != YAML_SCALAR_NODE || qv->type != YAML_SCALAR_NODE) {
					perr(w, qk, key, "expected dist: and its parameters as scalars");
					goto next;
				}
				if (!strcmp((const char *)qk->data.scalar.value, "dist")) {
					dist = (const char *)qv->data.scalar.value;
					dist_at = qv;
				}
			}
			dl_lat_forms(forms, sizeof(forms));
			if (!dist) {
				snprintf(err, sizeof(err), "expected dist: NAME and its parameters (%s)",
					 forms);
				perr(w, v, key, err);
				continue;
			}
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				yaml_node_t *qk = yaml_document_get_node(w->doc, q->key);
				yaml_node_t *qv = yaml_document_get_node(w->doc, q->value);
				const char *name = (const char *)qk->data.scalar.value;
				int at;

				if (!strcmp(name, "dist"))
					continue;
				at = dl_lat_dist_arg(dist, name, err, sizeof(err));
				if (at == -ENOENT) {
					perr(w, dist_at, key, err);
					goto next;
				}
				if (at < 0) {
					perr(w, qk, key, err);
					bad = 1;
					continue;
				}
				arg[at] = (const char *)qv->data.scalar.value;
			}
			if (bad)
				continue;
			if (!strcmp(dist, "constant") || !strcmp(dist, "const"))
				snprintf(val, sizeof(val), "%s", arg[0] ? arg[0] : "");
			else
				snprintf(val, sizeof(val), "%s(%s%s%s)", dist, arg[0] ? arg[0] : "",
					 arg[1] ? "," : "", arg[1] ? arg[1] : "");
			if (set_leaf(w, key, val, err, sizeof(err)))
				perr(w, v, key, err);
			continue;
		}
		walk(w, v, key, k);
next:;
	}
}

/* Profiles: <config dir>/storage/NAME.yaml, then $DLIOFS_PROFILES/NAME.yaml,
 * then the profiles that come with the binary; or a file (./mystorage.yaml,
 * relative to the YAML that names it). The profile's own `pacer:` mapping
 * is applied first; the including config's keys override it. */
static int is_profile_path(const char *name);
static int load_profile_file(struct pwalk *w, const yaml_node_t *at, const char *name);
static int apply_profile(struct pwalk *w, FILE *f, const char *path, const char *name);

static int load_profile(struct pwalk *w, const yaml_node_t *at, const char *name)
{
	char cdir[4096], dir[4200], exe[4096], build[4200], inst[4200], path[4300], where[2048];
	char msg[2400];
	const char *env = getenv("DLIOFS_PROFILES");
	const char *cands[4];
	FILE *f = NULL;
	int nc = 0;
	size_t o = 0;

	if (!name[0]) {
		perr(w, at, "profile",
		     "expected a profile name like nfs-10g, or a file like ./mystorage.yaml");
		return -EINVAL;
	}
	if (w->depth >= MAX_PROFILE_DEPTH) {
		perr(w, at, "profile", "profiles include each other too deeply");
		return -ELOOP;
	}
	if (is_profile_path(name))
		return load_profile_file(w, at, name);
	if (name[0] == '.') {
		perr(w, at, "profile",
		     "expected a profile name like nfs-10g, or a file like ./mystorage.yaml");
		return -EINVAL;
	}
	/* The config's own storage/, $DLIOFS_PROFILES, then the profiles that
	 * come with the binary: beside it in the build tree, or as installed.
	 * No path of the source tree is compiled in. */
	snprintf(cdir, sizeof(cdir), "%s", w->c->name);
	snprintf(dir, sizeof(dir), "%s/storage", dirname(cdir));
	cands[nc++] = dir;
	if (env && env[0])
		cands[nc++] = env;
	if (!dl_exe_dir(exe, sizeof(exe))) {
		snprintf(build, sizeof(build), "%s/%s", exe, DL_PROFILE_BUILD_REL);
		if (DL_PROFILE_INSTALL_REL[0] == '/')
			snprintf(inst, sizeof(inst), "%s", DL_PROFILE_INSTALL_REL);
		else
			snprintf(inst, sizeof(inst), "%s/%s", exe, DL_PROFILE_INSTALL_REL);
		cands[nc++] = build;
		cands[nc++] = inst;
	}
	for (int i = 0; i < nc && !f; i++) {
		snprintf(path, sizeof(path), "%s/%s.yaml", cands[i], name);
		f = fopen(path, "rb");
	}
	if (!f) {
		for (int i = 0; i < nc && o < sizeof(where); i++)
			o += (size_t)snprintf(where + o, sizeof(where) - o, "%s%s", i ? ", " : "",
					      cands[i]);
		snprintf(msg, sizeof(msg), "no storage profile '%.200s' (looked in %s)", name, where);
		perr(w, at, "profile", msg);
		return -ENOENT;
	}
	return apply_profile(w, f, path, name);
}

/* A profile given as a file (what `dliofs profile` writes): a name with a
 * slash or ending in .yaml, relative to the YAML file that names it. */
static int is_profile_path(const char *name)
{
	size_t n = strlen(name);

	return strchr(name, '/') || (n > 5 && !strcmp(name + n - 5, ".yaml")) ||
	       (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static int load_profile_file(struct pwalk *w, const yaml_node_t *at, const char *name)
{
	char dir[4096], path[8300], base[8300], label[64], msg[8500], *dot;
	FILE *f;

	if (name[0] == '/' || !w->c->name || !strchr(w->c->name, '/')) {
		snprintf(path, sizeof(path), "%s", name);
	} else {
		snprintf(dir, sizeof(dir), "%s", w->c->name);
		snprintf(path, sizeof(path), "%s/%s", dirname(dir), name);
	}
	f = fopen(path, "rb");
	if (!f) {
		snprintf(msg, sizeof(msg), "storage profile %s: %s", path, strerror(errno));
		perr(w, at, "profile", msg);
		return -ENOENT;
	}
	/* The model's profile name (stats, dumps): the file's, without .yaml. */
	memcpy(base, path, sizeof(base));
	snprintf(label, sizeof(label), "%.63s", basename(base));
	dot = strrchr(label, '.');
	if (dot && dot != label)
		*dot = '\0';
	return apply_profile(w, f, path, label);
}

/* Apply the profile open in f (closed here); path names it in messages. */
static int apply_profile(struct pwalk *w, FILE *f, const char *path, const char *name)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int ret = -ENOENT;

	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		const char *name_was = w->c->name;

		w->c->name = path;
		cfg_error(w->c, (struct dl_loc){ (unsigned)parser.problem_mark.line + 1,
						 (unsigned)parser.problem_mark.column + 1 },
			  NULL, "%s", parser.problem ? parser.problem : "invalid YAML");
		w->c->name = name_was;
		goto out_parser;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	yaml_node_t *sect = NULL, *cache = NULL;
	if (root && root->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
		     p < root->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(&doc, p->key);
			if (k->type != YAML_SCALAR_NODE)
				continue;
			if (!strcmp((char *)k->data.scalar.value, "pacer"))
				sect = yaml_document_get_node(&doc, p->value);
			else if (!strcmp((char *)k->data.scalar.value, "cache"))
				cache = yaml_document_get_node(&doc, p->value);
		}
	}
	const char *name_was = w->c->name;
	unsigned nerr_was = w->c->nerr;

	/* The profile's messages name the profile's file. */
	w->c->name = path;
	if (!sect || sect->type != YAML_MAPPING_NODE) {
		cfg_error(w->c, (struct dl_loc){ 1, 1 }, "pacer",
			  "a storage profile holds a `pacer:` mapping");
	} else {
		struct pwalk sub = *w;
		sub.doc = &doc;
		sub.depth = w->depth + 1;
		if (sized_ok(&sub, sect, "pacer"))
			walk(&sub, sect, "", NULL);
		/* The storage's client cache, where it has one, with its size
		 * stated: it applies unless the config has a cache: section. */
		if (cache) {
			char msg[256];

			if (cache->type == YAML_SCALAR_NODE) {
				if (dl_pacer_cfg_set(w->pc, "cache.policy",
						     (const char *)cache->data.scalar.value, msg,
						     sizeof(msg)))
					perr(&sub, cache, "cache", msg);
			} else if (sized_ok(&sub, cache, "cache")) {
				walk(&sub, cache, "cache", NULL);
			}
			snprintf(w->pc->cache.origin, sizeof(w->pc->cache.origin),
				 "profile %s: the storage's client cache", name);
		}
		snprintf(w->pc->profile, sizeof(w->pc->profile), "%s", name);
		ret = w->c->nerr != nerr_was ? -EINVAL : 0;
	}
	w->c->name = name_was;
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	fclose(f);
	return ret;
}

void dl_cfg_parse_pacer(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
			int is_cache, struct dl_pacer_cfg *pc)
{
	struct pwalk w = {.c = c, .doc = doc, .pc = pc};
	unsigned nerr_was = c->nerr;
	char msg[256];

	if (is_cache) {
		/* `cache: kernel` (or none/lru/minio) is shorthand for the policy. */
		if (node->type == YAML_SCALAR_NODE) {
			if (dl_pacer_cfg_set(pc, "cache.policy", (const char *)node->data.scalar.value,
					     msg, sizeof(msg)))
				perr(&w, node, "cache", msg);
			else if (dl_pacer_cfg_check(pc, msg, sizeof(msg)) && !strncmp(msg, "cache", 5))
				perr(&w, node, "cache", msg);
			return;
		}
		if (node->type != YAML_MAPPING_NODE) {
			perr(&w, node, "cache", "expected kernel, or a mapping {size, block, policy}");
			return;
		}
		{
			int has_policy = 0, has_size = 0;

			for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
			     p < node->data.mapping.pairs.top; p++) {
				yaml_node_t *k = yaml_document_get_node(doc, p->key);

				if (k && k->type == YAML_SCALAR_NODE) {
					has_policy |= !strcmp((char *)k->data.scalar.value, "policy");
					has_size |= !strcmp((char *)k->data.scalar.value, "size");
				}
			}
			/* A size alone means an emulated cache of that size. */
			if (has_size && !has_policy)
				dl_pacer_cfg_set(pc, "cache.policy", "lru", msg, sizeof(msg));
		}
		if (sized_ok(&w, node, "cache")) {
			unsigned before = c->nerr;

			walk(&w, node, "cache", NULL);
			if (c->nerr == before && dl_pacer_cfg_check(pc, msg, sizeof(msg)) &&
			    !strncmp(msg, "cache", 5))
				perr(&w, node, "cache", msg);
		}
		return;
	}
	if (node->type != YAML_MAPPING_NODE) {
		perr(&w, node, "pacer", "expected a mapping (profile:, read:, write:, meta:, phases:)");
		return;
	}
	if (!sized_ok(&w, node, "pacer"))
		return;
	/* A pacer section turns shaping on unless it says enabled: false. */
	dl_pacer_cfg_set(pc, "enabled", "true", msg, sizeof(msg));
	/* The profile first, whatever its position, so explicit keys override it. */
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		if (k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, "profile")) {
			if (v->type != YAML_SCALAR_NODE)
				perr(&w, v, "pacer.profile", "expected a profile name");
			else
				load_profile(&w, v, (const char *)v->data.scalar.value);
		}
	}
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
	     p < node->data.mapping.pairs.top && c->nerr <= CFG_MAX_ERRORS; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		if (k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, "profile"))
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			perr(&w, k, "pacer", "keys must be plain names");
			continue;
		}
		walk(&w, v, (const char *)k->data.scalar.value, k);
	}
	if (c->nerr == nerr_was && dl_pacer_cfg_check(pc, msg, sizeof(msg)))
		perr(&w, node, "pacer", msg);
}
