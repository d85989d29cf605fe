/* DLIO workload files as configs: `dliofs mount MNT unet3d_a100.yaml` with
 * the workload exactly as DLIO ships it.
 *
 * Detection: a top-level `dataset` mapping (or any of DLIO's sections:
 * model, framework, workflow, reader, train, ...) and no `datasets` list. A
 * Hydra-resolved config (everything under `workload:`) is read the same way.
 *
 * The `dataset` section becomes one native dataset, built as a native YAML
 * document whose nodes carry the workload's own line:column marks, so that
 * parse.c and validate.c check it exactly like a dliofs config and their
 * messages point into the user's file under DLIO's key names (cfg_alias):
 *
 *   name             last path component of data_folder (default ./data/ ->
 *                    "data"). The mount root stands for data_folder's
 *                    parent: DLIO's data_folder is <mount>/<name>.
 *   format           every format whose ops table names a dlio_name (npz npy
 *                    tfrecord hdf5 jpeg png indexed_binary mmap_indexed_binary
 *                    csv; default tfrecord, DLIO's); anything else is an error.
 *   files            num_files_train (default 8, DLIO's); eval_files
 *                    num_files_eval; samples_per_file num_samples_per_file.
 *   sample_size      DLIO writes d x d elements per sample, d =
 *                    floor(sqrt(record_length_bytes)) (record_length in older
 *                    files; a fractional value is floored): sample_size is
 *                    d * d * itemsize, so npz/npy/hdf5 get DLIO's (d, d) and
 *                    tfrecord/indexed_binary DLIO's byte count. A stdev
 *                    (record_length_bytes_stdev / record_length_stdev) makes
 *                    it a distribution {mean, stdev, min: itemsize}. DLIO
 *                    itself draws each of the two sides with the stdev, so
 *                    its sizes spread less (docs/dlio.md 2.3).
 *   shape, dtype     record_dims, record_element_type. hdf5 with
 *                    num_dset_per_record k splits record_dims[0] k ways, and
 *                    a leading 1 is dropped, as DLIO does.
 *   jpeg / png       one grayscale (color L) image per file, d x d or
 *                    record_dims (height, width); a stdev draws each side
 *                    from normal(d, stdev / (2 sqrt(L))) as DLIO does. File
 *                    sizes are the encoder's (DLIO does not set them either).
 *   hdf5             hdf5.num_dset_per_record, hdf5.chunk_dims (or the legacy
 *                    enable_chunking + chunk_size: chunks (1, c, c), c =
 *                    ceil(sqrt(chunk_size))); compression gzip without chunks
 *                    gets one sample per chunk (h5py would guess a shape).
 *   compression      zip for npz and gzip for hdf5, where DLIO's writers use
 *                    them; DLIO ignores it elsewhere, so do we.
 *   seed             train.seed (default 123, DLIO's).
 *
 * dliofs's own top-level keys (seed, io, pacer, cache, trace, backing) written in a
 * workload are honoured as in a dliofs config (a top-level seed wins over
 * train.seed): DLIO ignores keys it does not know, so one file can drive both.
 * Everything else (framework, reader, checkpoint, ...) is accepted and named
 * once, on one line, as ignored. dliofs keys written in the dataset section
 * (files, sample_size, ...) are errors: such a file was meant as a dliofs
 * config. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/intmath.h"
#include "dlio_i.h"

/* dliofs's own top-level keys, honoured in a DLIO workload (DLIO ignores
 * keys it does not know, so one file serves both). */
static const char *const native_top[] = { "seed", "io", "pacer", "cache", "trace", "backing", "s3",
					      "cluster", "overlay" };


/* DLIO's top-level sections (utils/config.py LoadConfig), `dataset` first. */
static const char *const dlio_sections[] = {
	"dataset", "model", "framework", "workflow", "reader", "data_reader", "train",
	"evaluation", "checkpoint", "output", "metric", "profiling", "storage",
};

/* Any of DLIO's sections other than `dataset`. */
static int has_dlio_section(yaml_document_t *d, yaml_node_t *map)
{
	for (size_t i = 1; i < NELEM(dlio_sections); i++)
		if (dtr_find(d, map, dlio_sections[i]))
			return 1;
	return 0;
}

int cfg_dlio_detect(yaml_document_t *doc)
{
	yaml_node_t *root = yaml_document_get_root_node(doc), *w;

	if (!root || root->type != YAML_MAPPING_NODE || dtr_find(doc, root, "datasets"))
		return 0;
	w = dtr_find(doc, root, "workload");
	if (w && w->type == YAML_MAPPING_NODE &&
	    (dtr_find(doc, w, "dataset") || has_dlio_section(doc, w)))
		return 1;
	w = dtr_find(doc, root, "dataset");
	if (w && w->type == YAML_MAPPING_NODE)
		return 1;
	/* Alone, `dataset` as a list is a typo of `datasets`: parse.c says so. */
	return has_dlio_section(doc, root);
}


static int ign_cmp(const void *a, const void *b)
{
	const struct ign *x = a, *y = b;

	if (x->at.line != y->at.line)
		return x->at.line < y->at.line ? -1 : 1;
	return x->at.col < y->at.col ? -1 : x->at.col > y->at.col;
}

void cfg_dlio_report_ignored(const struct cfg_ctx *c, struct cfg_dlio *t)
{
	if (!c->err || !t || !(t->nignored + t->icut))
		return;
	/* In the order they are written. */
	qsort(t->ign, t->nignored, sizeof(t->ign[0]), ign_cmp);
	fprintf(c->err, "%s: ignored DLIO keys:", c->name);
	for (unsigned i = 0; i < t->nignored; i++)
		fprintf(c->err, "%s %s", i ? "," : "", t->itext + t->ign[i].off);
	if (t->icut)
		fprintf(c->err, " and %u more", t->icut);
	fputc('\n', c->err);
}


/* ---- the whole workload ---- */

static void tr_top(struct dtr *r)
{
	yaml_document_t *d = r->src;
	yaml_node_t *top = yaml_document_get_root_node(d), *train = NULL, *seedv = NULL;
	yaml_node_t *ntop[NELEM(native_top)] = { 0 }, *ntopk[NELEM(native_top)] = { 0 };
	yaml_node_t *seedk = NULL;
	int root, seq, seed = 0;

	/* Keys around workload: (Hydra's own settings) are not DLIO's. */
	if (top != r->root)
		for (yaml_node_pair_t *p = top->data.mapping.pairs.start;
		     p < top->data.mapping.pairs.top; p++)
			if (dtr_node(d, p->value) != r->root) {
				const char *w = r->wrap;

				r->wrap = "";
				dtr_ignore_section(r, dtr_node(d, p->key), dtr_node(d, p->value));
				r->wrap = w;
			}
	root = dtr_nmark(r, yaml_document_add_mapping(&r->t->doc, NULL, YAML_BLOCK_MAPPING_STYLE),
			 r->root);
	seq = dtr_nmark(r, yaml_document_add_sequence(&r->t->doc, NULL, YAML_BLOCK_SEQUENCE_STYLE),
			r->dmap);
	r->map = dtr_nmark(r, yaml_document_add_mapping(&r->t->doc, NULL, YAML_BLOCK_MAPPING_STYLE),
			   r->dmap);
	if (!root || !seq || !r->map)
		return;
	if (!yaml_document_append_sequence_item(&r->t->doc, seq, r->map)) {
		r->c->oom = 1;
		return;
	}
	dtr_alias(r, "datasets[0]", "dataset", NULL);
	dtr_alias(r, "datasets", "dataset", NULL);

	for (yaml_node_pair_t *p = r->root->data.mapping.pairs.start;
	     p < r->root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = dtr_node(d, p->key), *v = dtr_node(d, p->value);

		size_t i;

		if (dtr_key_is(k, "dataset"))
			continue;
		for (i = 0; i < NELEM(native_top); i++)
			if (dtr_key_is(k, native_top[i]) && !ntop[i])
				break;
		if (i < NELEM(native_top)) {
			ntop[i] = v;
			ntopk[i] = k;
			continue;
		}
		if (dtr_key_is(k, "train") && v && v->type == YAML_MAPPING_NODE && !train) {
			train = v;
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				if (dtr_key_is(dtr_node(d, q->key), "seed") && !seedv) {
					seedv = dtr_node(d, q->value);
					seedk = dtr_node(d, q->key);
				} else {
					dtr_ignore(r, "train", dtr_node(d, q->key));
				}
			}
			continue;
		}
		dtr_ignore_section(r, k, v);
	}
	/* dliofs's own keys as they are; a top-level seed wins over train.seed. */
	for (size_t i = 0; i < NELEM(native_top); i++) {
		if (!ntop[i])
			continue;
		dtr_npair_at(r, root, native_top[i], dtr_ncopy_tree(r, ntop[i], 1, native_top[i]),
			     ntopk[i]);
		if (!strcmp(native_top[i], "seed") && seedv) {
			dtr_ignore(r, "train", seedk);
			seedv = NULL;
		}
	}
	if (ntop[0]) {
		/* given above */
	} else if (seedv) {
		seed = dtr_ncopy(r, seedv);
		dtr_alias(r, "seed", "train.seed", NULL);
	} else {
		seed = dtr_nscalar(r, DLIO_DEFAULT_SEED, strlen(DLIO_DEFAULT_SEED),
				   YAML_PLAIN_SCALAR_STYLE, r->root);
	}
	if (seed)
		dtr_npair(r, root, "seed", seed);
	dtr_npair(r, root, "datasets", seq);

	dtr_dataset_keys(r);
	dtr_name(r);
	if (dtr_format(r) == 0)
		dtr_dataset(r);
	dtr_ignored_dataset(r);
}

int cfg_dlio_translate(struct cfg_ctx *c, yaml_document_t *doc, struct cfg_dlio **out,
		       yaml_document_t **native)
{
	yaml_node_t *top = yaml_document_get_root_node(doc), *w;
	struct dtr r = { .c = c, .src = doc, .wrap = "" };
	struct cfg_dlio *t;
	unsigned nerr = c->nerr;

	*out = NULL;
	*native = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*out = t;
	if (!yaml_document_initialize(&t->doc, NULL, NULL, NULL, 1, 1))
		return -ENOMEM;
	t->have_doc = 1;
	r.t = t;
	r.root = top;
	w = dtr_find(doc, top, "workload");
	if (w && w->type == YAML_MAPPING_NODE &&
	    (dtr_find(doc, w, "dataset") || has_dlio_section(doc, w))) {
		r.root = w;
		r.wrap = "workload.";
	}
	r.dmap = dtr_find(doc, r.root, "dataset");
	if (!r.dmap) {
		dtr_err(&r, r.root, "dataset",
			"missing: this is a DLIO workload (it has DLIO's sections and no 'datasets' "
			"list) without a dataset section, so there is nothing to serve "
			"(checkpoint-only workloads read no data)");
		return 0;
	}
	if (r.dmap->type != YAML_MAPPING_NODE) {
		dtr_err(&r, r.dmap, "dataset",
			"expected a mapping of DLIO dataset settings (data_folder, format, "
			"num_files_train, ...), got %s", cfg_kind_of(r.dmap));
		return 0;
	}
	tr_top(&r);
	if (c->oom)
		return -ENOMEM;
	c->alias = t->alias;
	c->nalias = t->nalias;
	if (c->nerr == nerr)
		*native = &t->doc;
	return 0;
}

void cfg_dlio_free(struct cfg_dlio *t)
{
	if (!t)
		return;
	if (t->have_doc)
		yaml_document_delete(&t->doc);
	free(t);
}

