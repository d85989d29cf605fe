/* A DLIO workload file's keys as a tree a tool can walk without libyaml
 * (include/dliofs/dlio_keys.h). Each node of the YAML document becomes one
 * value, in the document's own order, so an alias is the node it names (no
 * copy, and one that refers to itself is harmless) and lookups behave as
 * walking the document does: the first key of a name in a mapping wins. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "dliofs/dlio_keys.h"

struct ent {
	struct dl_dlio_val v; /* first: a value's address is its entry's */
	char *text;	      /* a scalar's own copy of its text */
	char **names;	      /* a mapping's keys (NULL where not a scalar) */
	size_t *kids;	      /* a mapping's values or a list's items */
	size_t nkids;
};

struct dl_dlio_keys {
	char *path;
	struct ent *e;
	size_t n;
	size_t root; /* DLIO's root: the document's, or its workload: mapping */
};

static const struct ent *ent_of(const struct dl_dlio_val *v) { return (const struct ent *)v; }

/* Entry i from the document's node i + 1. */
static int mirror(struct ent *e, yaml_document_t *d, yaml_node_t *n)
{
	e->v.line = (unsigned)n->start_mark.line + 1;
	e->v.column = (unsigned)n->start_mark.column + 1;
	e->v.text = "";
	switch (n->type) {
	case YAML_SCALAR_NODE:
		e->v.kind = DL_DLIO_SCALAR;
		if (!(e->text = strndup((const char *)n->data.scalar.value, n->data.scalar.length)))
			return -ENOMEM;
		e->v.text = e->text;
		return 0;
	case YAML_SEQUENCE_NODE:
		e->v.kind = DL_DLIO_LIST;
		e->nkids = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
		if (e->nkids && !(e->kids = calloc(e->nkids, sizeof(*e->kids))))
			return -ENOMEM;
		for (size_t i = 0; i < e->nkids; i++)
			e->kids[i] = (size_t)n->data.sequence.items.start[i] - 1;
		return 0;
	case YAML_MAPPING_NODE:
		e->v.kind = DL_DLIO_MAP;
		e->nkids = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
		if (e->nkids && (!(e->kids = calloc(e->nkids, sizeof(*e->kids))) ||
				 !(e->names = calloc(e->nkids, sizeof(*e->names)))))
			return -ENOMEM;
		for (size_t i = 0; i < e->nkids; i++) {
			yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
			yaml_node_t *key = yaml_document_get_node(d, p->key);
			e->kids[i] = (size_t)p->value - 1;
			/* Only a scalar key can be named by a dotted path. */
			if (key && key->type == YAML_SCALAR_NODE &&
			    !(e->names[i] = strndup((const char *)key->data.scalar.value,
						    key->data.scalar.length)))
				return -ENOMEM;
		}
		return 0;
	default:
		e->v.kind = DL_DLIO_SCALAR;
		return 0;
	}
}

void dl_dlio_keys_free(struct dl_dlio_keys *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++) {
		struct ent *e = &k->e[i];
		for (size_t j = 0; e->names && j < e->nkids; j++)
			free(e->names[j]);
		free(e->names);
		free(e->kids);
		free(e->text);
	}
	free(k->e);
	free(k->path);
	free(k);
}

const char *dl_dlio_keys_path(const struct dl_dlio_keys *k) { return k->path; }

int dl_dlio_keys_load(const char *path, struct dl_dlio_keys **out, char *why, size_t whylen)
{
	struct dl_dlio_keys *k = calloc(1, sizeof(*k));
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	FILE *f = NULL;
	int ret, have_parser = 0, have_doc = 0;

	*out = NULL;
	if (whylen)
		*why = 0;
	if (!k || !(k->path = strdup(path))) {
		ret = -ENOMEM;
		goto out;
	}
	if (!(f = fopen(path, "rb"))) {
		ret = -errno;
		goto out;
	}
	if (!yaml_parser_initialize(&parser)) {
		ret = -ENOMEM;
		goto out;
	}
	have_parser = 1;
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(why, whylen, "%s:%zu: YAML: %s", path, parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "syntax error");
		ret = -EINVAL;
		goto out;
	}
	have_doc = 1;
	root = yaml_document_get_root_node(&doc);
	/* Empty, or a bare scalar: no keys. libyaml's root is node 1. */
	if (root && root->type == YAML_MAPPING_NODE) {
		size_t n = (size_t)(doc.nodes.top - doc.nodes.start);
		if (!(k->e = calloc(n, sizeof(*k->e)))) {
			ret = -ENOMEM;
			goto out;
		}
		for (k->n = 0; k->n < n; k->n++)
			if ((ret = mirror(&k->e[k->n], &doc, &doc.nodes.start[k->n]))) {
				k->n++;
				goto out;
			}
		const struct dl_dlio_val *w = dl_dlio_child(k, &k->e[0].v, "workload");
		if (w && w->kind == DL_DLIO_MAP)
			k->root = (size_t)(ent_of(w) - k->e);
	}
	ret = 0;
	*out = k;
	k = NULL;
out:
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	if (f)
		fclose(f);
	dl_dlio_keys_free(k);
	return ret;
}

const struct dl_dlio_val *dl_dlio_child(const struct dl_dlio_keys *k, const struct dl_dlio_val *map,
					const char *name)
{
	const struct ent *e = ent_of(map);

	if (!map || map->kind != DL_DLIO_MAP)
		return NULL;
	for (size_t i = 0; i < e->nkids; i++)
		if (e->names[i] && !strcmp(e->names[i], name))
			return &k->e[e->kids[i]].v;
	return NULL;
}

int dl_dlio_keys_is_workload(const struct dl_dlio_keys *k)
{
	static const char *const sections[] = {
	    "dataset",	   "model", "framework",  "workflow",	"reader",
	    "data_reader", "train", "evaluation", "checkpoint", "metric"};

	if (!k->n)
		return 0;
	const struct dl_dlio_val *root = &k->e[k->root].v;
	if (dl_dlio_child(k, root, "datasets"))
		return 0;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (dl_dlio_child(k, root, sections[i]))
			return 1;
	return 0;
}

const struct dl_dlio_val *dl_dlio_key(const struct dl_dlio_keys *k, const char *dotted)
{
	const struct dl_dlio_val *root, *v;
	char part[64];

	if (!k->n)
		return NULL;
	root = v = &k->e[k->root].v;
	while (v && *dotted) {
		size_t len = strcspn(dotted, ".");
		snprintf(part, sizeof(part), "%.*s", (int)len, dotted);
		const struct dl_dlio_val *next = dl_dlio_child(k, v, part);
		if (!next && v == root && !strcmp(part, "reader"))
			next = dl_dlio_child(k, v, "data_reader");
		v = next;
		dotted += len + (dotted[len] == '.');
	}
	return v;
}

size_t dl_dlio_nitems(const struct dl_dlio_keys *k, const struct dl_dlio_val *list)
{
	(void)k;
	return list && list->kind == DL_DLIO_LIST ? ent_of(list)->nkids : 0;
}

const struct dl_dlio_val *dl_dlio_item(const struct dl_dlio_keys *k, const struct dl_dlio_val *list,
				       size_t i)
{
	if (!list || list->kind != DL_DLIO_LIST || i >= ent_of(list)->nkids)
		return NULL;
	return &k->e[ent_of(list)->kids[i]].v;
}

void dl_dlio_say(const struct dl_dlio_keys *k, FILE *err, const char *prefix,
		 const struct dl_dlio_val *at, const char *key, const char *what)
{
	if (err)
		fprintf(err, "%s%s:%u:%u: %s: %s\n", prefix ? prefix : "", k->path, at->line,
			at->column, key, what);
}
