/* The `s3:` section: {access_key: K, secret_key: S}, both or neither, and
 * listen: HOST:PORT for a mount that serves the endpoint beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "dliofs/config.h"
#include "config_i.h"
#include "pacer_yaml.h"

static int set_key(struct cfg_ctx *c, yaml_node_t *v, const char *key, char *dst, size_t len)
{
	const char *val = v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;

	if (!val || !*val || strlen(val) >= len) {
		cfg_error(c, cfg_node_loc(v), key, "expected a non-empty string of at most %zu bytes",
			  len - 1);
		return 1;
	}
	snprintf(dst, len, "%s", val);
	return 0;
}

/* HOST:PORT with a port 0..65535 (HOST may be [v6]); resolved when served. */
static int set_listen(struct cfg_ctx *c, yaml_node_t *v, char *dst, size_t len)
{
	const char *colon;
	char *end;
	long port;

	if (set_key(c, v, "s3.listen", dst, len))
		return 1;
	colon = strrchr(dst, ':');
	port = colon && colon[1] ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == dst || !colon[1] || *end || port < 0 || port > 65535) {
		cfg_error(c, cfg_node_loc(v), "s3.listen", "expected HOST:PORT (127.0.0.1:9000)");
		dst[0] = 0;
		return 1;
	}
	return 0;
}

void dl_cfg_parse_s3(struct cfg_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		     struct dl_s3_cfg *sc)
{
	unsigned nerr = 0;

	if (node->type != YAML_MAPPING_NODE) {
		cfg_error(c, cfg_node_loc(node), "s3", "expected a mapping {access_key, secret_key}");
		return;
	}
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
	     p < node->data.mapping.pairs.top && c->nerr <= CFG_MAX_ERRORS; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";

		if (!strcmp(key, "access_key"))
			nerr += set_key(c, v, "s3.access_key", sc->access_key, sizeof(sc->access_key));
		else if (!strcmp(key, "secret_key"))
			nerr += set_key(c, v, "s3.secret_key", sc->secret_key, sizeof(sc->secret_key));
		else if (!strcmp(key, "listen"))
			nerr += set_listen(c, v, sc->listen, sizeof(sc->listen));
		else {
			cfg_error(c, cfg_node_loc(k), "s3",
				  "unknown key (expected access_key, secret_key, listen)");
			nerr++;
		}
	}
	if (!nerr && !sc->access_key[0] != !sc->secret_key[0])
		cfg_error(c, cfg_node_loc(node), "s3",
			  "access_key and secret_key go together: give both or neither");
}
