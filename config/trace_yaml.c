/* The `trace:` section: {enabled: true, file: /abs/path, ops: [read, open] | all}. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "dliofs/config.h"
#include "dliofs/trace.h"
#include "config_i.h"
#include "pacer_yaml.h"


/* One problem: reported (and capped) through c, counted by the caller. */
static unsigned terr(struct cfg_ctx *c, const yaml_node_t *n, const char *key, const char *msg)
{
	cfg_error(c, cfg_node_loc(n), key, "%s", msg);
	return 1;
}

void dl_cfg_parse_trace(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
			struct dl_trace_cfg *tc)
{
	unsigned nerr = 0;
	char msg[256];

	if (node->type != YAML_MAPPING_NODE) {
		terr(c, node, "trace", "expected a mapping {enabled, file, ops}");
		return;
	}
	tc->enabled = 1;
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
	     p < node->data.mapping.pairs.top && c->nerr <= CFG_MAX_ERRORS; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
		const char *val = v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;

		if (!strcmp(key, "enabled")) {
			if (val && (!strcmp(val, "true") || !strcmp(val, "yes")))
				tc->enabled = 1;
			else if (val && (!strcmp(val, "false") || !strcmp(val, "no")))
				tc->enabled = 0;
			else
				nerr += terr(c, v, "trace.enabled", "expected true or false");
		} else if (!strcmp(key, "file")) {
			if (!val || val[0] != '/' || strlen(val) >= sizeof(tc->file))
				nerr += terr(c, v, "trace.file",
					     "expected an absolute path for the trace file");
			else
				snprintf(tc->file, sizeof(tc->file), "%s", val);
		} else if (!strcmp(key, "ops")) {
			uint32_t m = 0, bit;
			if (val) {
				if (dl_trace_ops_parse(val, &m, msg, sizeof(msg)))
					nerr += terr(c, v, "trace.ops", msg);
			} else if (v->type == YAML_SEQUENCE_NODE) {
				for (yaml_node_item_t *it = v->data.sequence.items.start;
				     it < v->data.sequence.items.top && c->nerr <= CFG_MAX_ERRORS;
				     it++) {
					yaml_node_t *e = yaml_document_get_node(doc, *it);
					if (e->type != YAML_SCALAR_NODE ||
					    dl_trace_op_bit((const char *)e->data.scalar.value, &bit)) {
						nerr += terr(c, e, "trace.ops",
							     "expected an op name: lookup, getattr, open, "
							     "read, write, readdir, opendir, release, statfs, "
							     "create, fsync, other or all");
						continue;
					}
					m |= bit;
				}
			} else {
				nerr += terr(c, v, "trace.ops", "expected a list of op names");
			}
			tc->ops_mask = m;
		} else {
			nerr += terr(c, k, "trace", "unknown key (expected enabled, file, ops)");
		}
	}
	if (tc->enabled && !tc->file[0] && !nerr)
		terr(c, node, "trace.file", "a trace needs a file: /abs/path");
}
