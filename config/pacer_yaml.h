/* Private to config/: the pacer and cache sections. */
#ifndef DLIOFS_CONFIG_PACER_YAML_H
#define DLIOFS_CONFIG_PACER_YAML_H

#include <stdio.h>
#include <yaml.h>

#include "dliofs/config.h"
#include "dliofs/pacer.h"

/* Apply a `pacer:` (is_cache 0) or `cache:` (1) node to pc; errors to err as
 * file:line:column. Returns the number of errors. */
unsigned dl_cfg_parse_pacer(const char *file, yaml_document_t *doc, yaml_node_t *node,
			    int is_cache, struct dl_pacer_cfg *pc, FILE *err);

/* Apply a `trace:` node; returns the number of errors. */
unsigned dl_cfg_parse_trace(const char *file, yaml_document_t *doc, yaml_node_t *node,
			    struct dl_trace_cfg *tc, FILE *err);

#endif
