/* Private to config/: the pacer and cache sections. */
#ifndef DLIOFS_CONFIG_PACER_YAML_H
#define DLIOFS_CONFIG_PACER_YAML_H

#include <stdio.h>
#include <yaml.h>

#include "dliofs/config.h"
#include "dliofs/pacer.h"

struct cfg_ctx;

/* Apply a `pacer:` (is_cache 0) or `cache:` (1) node to pc. Problems are
 * reported through c (file:line:column, counted and capped there). */
void dl_cfg_parse_pacer(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
			int is_cache, struct dl_pacer_cfg *pc);

/* Apply a `trace:` node; problems are reported through c. */
void dl_cfg_parse_trace(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
			struct dl_trace_cfg *tc);

/* Apply a `cluster:` node (config/cluster_yaml.c). */
void dl_cfg_parse_cluster(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
			  struct dl_cluster_cfg *cc);
/* Apply an `s3:` node (config/s3_yaml.c); problems are reported through c. */
void dl_cfg_parse_s3(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		     struct dl_s3_cfg *sc);

#endif
