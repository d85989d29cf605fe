/* The `cluster:` section: {period: 10ms, window: 100ms}, or `cluster: {}`.
 * The mounts started together under mpirun are then one storage system
 * (fs/cluster.c); a dliofs built without MPI refuses it here, naming the
 * place, rather than mounting a node that believes it is alone. */
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "dliofs/config.h"
#include "dliofs/units.h"
#include "config_i.h"
#include "pacer_yaml.h"

static unsigned get_time(struct cfg_ctx *c, yaml_node_t *v, const char *key, uint64_t lo,
			 uint64_t hi, uint64_t *out)
{
	const char *val = v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;
	const char *why = NULL;
	uint64_t ns;

	if (!val || dl_parse_time(val, &ns, &why)) {
		cfg_error(c, cfg_node_loc(v), key, "expected a time like 10ms%s%s", why ? ": " : "",
			  why ? why : "");
		return 1;
	}
	if (ns < lo || ns > hi) {
		cfg_error(c, cfg_node_loc(v), key, "expected a time from %llums to %llums",
			  (unsigned long long)(lo / 1000000), (unsigned long long)(hi / 1000000));
		return 1;
	}
	*out = ns;
	return 0;
}

void dl_cfg_parse_cluster(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
			  struct dl_cluster_cfg *cc)
{
	unsigned nerr = 0;

	cc->period_ns = DL_CLUSTER_DEFAULT_PERIOD;
	cc->window_ns = DL_CLUSTER_DEFAULT_WINDOW;
	if (node->type != YAML_MAPPING_NODE) {
		cfg_error(c, cfg_node_loc(node), "cluster",
			  "expected a mapping {period, window} (cluster: {} for the defaults)");
		return;
	}
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
	     p < node->data.mapping.pairs.top && c->nerr <= CFG_MAX_ERRORS; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";

		if (!strcmp(key, "period"))
			nerr += get_time(c, v, "cluster.period", 1000000ULL, 1000000000ULL,
					 &cc->period_ns);
		else if (!strcmp(key, "window"))
			nerr += get_time(c, v, "cluster.window", 1000000ULL, 10000000000ULL,
					 &cc->window_ns);
		else {
			cfg_error(c, cfg_node_loc(k), "cluster", "unknown key (expected period, window)");
			nerr++;
		}
	}
	if (!nerr && cc->window_ns < 2 * cc->period_ns) {
		cfg_error(c, cfg_node_loc(node), "cluster.window",
			  "expected at least two periods (the demand is measured over it)");
		nerr++;
	}
#ifndef DL_HAVE_MPI
	if (!nerr) {
		cfg_error(c, cfg_node_loc(node), "cluster",
			  "this dliofs was built without MPI: a cluster of mounts needs Open MPI "
			  "(install libopenmpi-dev and rebuild: meson setup -Dmpi=enabled)");
		nerr++;
	}
#endif
	cc->enabled = !nerr;
}
