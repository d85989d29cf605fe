/* A DLIO workload's checkpoint section, sized as DLIO 2.0.0 sizes a
 * checkpoint (dlio_benchmark/utils/config.py: its defaults and the
 * refusals of its validate()), for the tool that writes one
 * (dlio-drive --checkpoint-workload, and checkpoints within a run). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/dlio_keys.h"

struct ckctx {
	const struct dl_dlio_keys *k;
	const char *prefix;
	FILE *err;
};

static int whole(const struct ckctx *c, const char *key, const struct dl_dlio_val *n, uint64_t *out)
{
	char *end;

	if (!n)
		return 0;
	if (n->kind == DL_DLIO_SCALAR) {
		errno = 0;
		*out = strtoull(n->text, &end, 10);
		if (!errno && end != n->text && !*end && n->text[0] != '-')
			return 0;
	}
	dl_dlio_say(c->k, c->err, c->prefix, n, key, "expected a whole number >= 0");
	return -EINVAL;
}

static int sizes(const struct ckctx *c, const char *key, const struct dl_dlio_val *n, uint64_t *out,
		 unsigned *count)
{
	size_t items = dl_dlio_nitems(c->k, n);
	int ret;

	if (!n)
		return 0;
	if (n->kind != DL_DLIO_LIST || items > DL_DLIO_CK_MAX_LIST) {
		char why[64];
		snprintf(why, sizeof(why), "expected a list of at most %d sizes",
			 DL_DLIO_CK_MAX_LIST);
		dl_dlio_say(c->k, c->err, c->prefix, n, key, why);
		return -EINVAL;
	}
	*count = 0;
	for (size_t i = 0; i < items; i++) {
		if ((ret = whole(c, key, dl_dlio_item(c->k, n, i), &out[*count])))
			return ret;
		(*count)++;
	}
	return 0;
}

int dl_dlio_checkpoint(const struct dl_dlio_keys *k, const char *prefix, FILE *err,
		       struct dl_dlio_checkpoint *ck)
{
	const struct ckctx c = {k, prefix ? prefix : "", err};
	const struct dl_dlio_val *sec = dl_dlio_key(k, "checkpoint"), *n;
	int ret;

	memset(ck, 0, sizeof(*ck));
	ck->model_size = 10240;
	ck->num_layers = 1;
	ck->layers[0] = 17371;
	ck->layers[1] = 24740228;
	ck->nlayers = 2;
	ck->tp = ck->pp = 1;
	if (!sec || sec->kind != DL_DLIO_MAP)
		return 0;
	if ((ret = whole(&c, "checkpoint.model_size", dl_dlio_child(k, sec, "model_size"),
			 &ck->model_size)) ||
	    (ret = sizes(&c, "checkpoint.optimization_groups",
			 dl_dlio_child(k, sec, "optimization_groups"), ck->groups, &ck->ngroups)) ||
	    (ret = whole(&c, "checkpoint.num_layers", dl_dlio_child(k, sec, "num_layers"),
			 &ck->num_layers)) ||
	    (ret = sizes(&c, "checkpoint.layer_parameters",
			 dl_dlio_child(k, sec, "layer_parameters"), ck->layers, &ck->nlayers)) ||
	    (ret = whole(&c, "checkpoint.tensor_parallelism",
			 dl_dlio_child(k, sec, "tensor_parallelism"), &ck->tp)) ||
	    (ret = whole(&c, "checkpoint.pipeline_parallelism",
			 dl_dlio_child(k, sec, "pipeline_parallelism"), &ck->pp)))
		return ret;
	n = dl_dlio_child(k, sec, "type");
	if (n && n->kind == DL_DLIO_SCALAR && !strcmp(n->text, "all_ranks")) {
		ck->all_ranks = 1;
	} else if (n && (n->kind != DL_DLIO_SCALAR || strcmp(n->text, "rank_zero"))) {
		dl_dlio_say(k, err, c.prefix, n, "checkpoint.type",
			    "expected rank_zero or all_ranks");
		return -EINVAL;
	}
	/* DLIO refuses these at startup (utils/config.py validate). */
	if (!ck->tp || !ck->pp || ck->num_layers % ck->pp || ck->num_layers % ck->tp) {
		if (err)
			fprintf(err,
				"%s%s: checkpoint.num_layers (%llu) must be a multiple of "
				"tensor_parallelism (%llu) and pipeline_parallelism (%llu)\n",
				c.prefix, dl_dlio_keys_path(k), (unsigned long long)ck->num_layers,
				(unsigned long long)ck->tp, (unsigned long long)ck->pp);
		return -EINVAL;
	}
	return 0;
}
