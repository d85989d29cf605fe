/* Private to config/: the `backing:` section. */
#ifndef DLIOFS_CONFIG_BACKING_YAML_H
#define DLIOFS_CONFIG_BACKING_YAML_H

#include <yaml.h>

#include "config_i.h"

/* Parse a `backing:` node into cfg->backing. Called once the datasets are
 * parsed, so names that clash with a dataset are caught here. Problems are
 * reported through c (file:line:column); returns 0 or -ENOMEM. */
int cfg_parse_backing(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		      struct dl_config *cfg);

/* Parse `overlay: {path: /dir}` into cfg->overlay (problems through c). */
void cfg_parse_overlay(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		       struct dl_config *cfg);

#endif
