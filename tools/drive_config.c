/* Run parameters: defaults per format, DLIO's run keys read straight from a
 * workload YAML, MLPerf Storage's per-accelerator table, merged in that
 * order under the command line.
 *
 * The dataset itself always comes from dl_config_load(); here we only read
 * what a dliofs config has no place for (batch size, threads, compute
 * time...). Keys are DLIO's (dlio.md 1); a Hydra-resolved file with
 * everything under `workload:` works too. DLIO ignores unknown keys and so do
 * we, but a known key with a bad value is an error with its line:column. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "dliofs/units.h"
#include "drive_i.h"

/* MLPerf Storage computation time per batch (dlio.md 2: DLIO/MLPerf
 * unet3d/resnet50/cosmoflow configs; b200 from MLPerf v3 development). */
static const struct drv_workload workloads[] = {
    {"unet3d", "a100", 0.636, 7, 4, 0.90},	{"unet3d", "h100", 0.323, 7, 4, 0.90},
    {"unet3d", "v100", 1.3604, 4, 4, 0.90},	{"unet3d", "b200", 0.162, 7, 4, 0.90},
    {"resnet50", "a100", 0.435, 400, 8, 0.90},	{"resnet50", "h100", 0.224, 400, 8, 0.90},
    {"resnet50", "v100", 0.195, 64, 8, 0.90},	{"cosmoflow", "a100", 0.00551, 1, 4, 0.70},
    {"cosmoflow", "h100", 0.00350, 1, 4, 0.70}, {"cosmoflow", "v100", 0.00936, 1, 4, 0.70},
};

const struct drv_workload *drv_workload_table(size_t *n)
{
	*n = sizeof(workloads) / sizeof(workloads[0]);
	return workloads;
}

const struct drv_workload *drv_workload_find(const char *workload, const char *accel)
{
	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (!strcasecmp(workloads[i].workload, workload) &&
		    !strcasecmp(workloads[i].accel, accel))
			return &workloads[i];
	return NULL;
}

void drv_note(struct drv_params *p, const char *fmt, ...)
{
	size_t used = strlen(p->notes);
	va_list ap;

	if (used + 2 >= sizeof(p->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(p->notes + used, sizeof(p->notes) - used - 1, fmt, ap);
	va_end(ap);
	used = strlen(p->notes);
	p->notes[used] = '\n';
	p->notes[used + 1] = 0;
}

/* The batch size and reader threads come from the format's read hints:
 * what the MLPerf/DLIO workload of that format uses (unet3d for npz/npy,
 * resnet50-like for tfrecord, retinanet for images, ...). The run clamps a
 * default batch to the dataset when the dataset is smaller. */
void drv_params_defaults(struct drv_params *p, const struct dl_read_hints *h)
{
	memset(p, 0, sizeof(*p));
	p->epochs = 1;
	p->prefetch = 2;
	p->compute.type = DRV_DIST_CONST;
	p->eval_compute.type = DRV_DIST_CONST;
	p->seed = 123;
	p->seed_change_epoch = 1;
	p->eval_after = 1;
	p->eval_every = 1;
	p->ckpt_after_epoch = 1;
	p->ckpt_every_epochs = 1;
	p->checkpoint_size = 10240; /* DLIO's model_size_bytes default */
	p->au_threshold = 0.90;
	p->skip_start = 1;
	p->io_size = 4u << 20;
	p->transfer_size = 256u << 10;
	p->batch = h && h->batch ? h->batch : 64;
	p->read_threads = h && h->read_threads ? h->read_threads : 4;
	p->eval_batch = p->batch;
}

/* ---- YAML ---- */

struct yctx {
	yaml_document_t *doc;
	const char *path;
	FILE *err;
	int errors;
};

static yaml_node_t *ynode(struct yctx *y, int i) { return yaml_document_get_node(y->doc, i); }

static void yerr(struct yctx *y, const yaml_node_t *n, const char *key, const char *what)
{
	if (y->err)
		fprintf(y->err, "%s:%lu:%lu: %s: %s\n", y->path,
			(unsigned long)n->start_mark.line + 1,
			(unsigned long)n->start_mark.column + 1, key, what);
	y->errors++;
}

static yaml_node_t *yget(struct yctx *y, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = ynode(y, pr->key);
		if (k && k->type == YAML_SCALAR_NODE && strlen(key) == k->data.scalar.length &&
		    !memcmp(k->data.scalar.value, key, k->data.scalar.length))
			return ynode(y, pr->value);
	}
	return NULL;
}

static const char *ystr(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int yis_null(const yaml_node_t *n)
{
	const char *s = ystr(n);

	return s && (!*s || !strcmp(s, "~") || !strcasecmp(s, "null") || !strcasecmp(s, "none"));
}

static int ynum(struct yctx *y, yaml_node_t *n, const char *key, double *out)
{
	const char *s = ystr(n);
	char *end;

	if (!s) {
		yerr(y, n, key, "expected a number");
		return -EINVAL;
	}
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v)) {
		yerr(y, n, key, "expected a number");
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* Integer; `neg_ok` lets DLIO's "-1 = off" through as *off. */
static int yint(struct yctx *y, yaml_node_t *n, const char *key, int64_t min, int64_t *out)
{
	double v;

	if (ynum(y, n, key, &v))
		return -EINVAL;
	if (v != floor(v) || v < (double)min || v > 9.0e18) {
		char why[64];
		snprintf(why, sizeof(why), "expected a whole number >= %lld", (long long)min);
		yerr(y, n, key, why);
		return -EINVAL;
	}
	*out = (int64_t)v;
	return 0;
}

static int ybool(struct yctx *y, yaml_node_t *n, const char *key, int *out)
{
	const char *s = ystr(n);

	if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1") ||
		  !strcasecmp(s, "on"))) {
		*out = 1;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0") ||
		  !strcasecmp(s, "off"))) {
		*out = 0;
		return 0;
	}
	yerr(y, n, key, "expected true or false");
	return -EINVAL;
}

static int yshuffle(struct yctx *y, yaml_node_t *n, const char *key, enum drv_shuffle *out)
{
	const char *s = ystr(n);

	if (s && (!strcasecmp(s, "off") || !strcasecmp(s, "false") || !strcasecmp(s, "none"))) {
		*out = DRV_SHUF_OFF;
		return 0;
	}
	if (s && !strcasecmp(s, "seed")) {
		*out = DRV_SHUF_SEED;
		return 0;
	}
	if (s && !strcasecmp(s, "random")) {
		*out = DRV_SHUF_RANDOM;
		return 0;
	}
	yerr(y, n, key, "expected off, seed or random");
	return -EINVAL;
}

/* A DLIO time value: scalar seconds, or {mean[, stdev]} (normal), or
 * {type: normal|uniform|gamma|exponential|poisson, ...}. */
static int ytime(struct yctx *y, yaml_node_t *n, const char *key, struct drv_dist *d)
{
	const char *why;

	if (n->type == YAML_SCALAR_NODE) {
		d->type = DRV_DIST_CONST;
		d->b = 0;
		if (ynum(y, n, key, &d->a))
			return -EINVAL;
		d->a = fabs(d->a);
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE) {
		yerr(y, n, key, "expected seconds or a distribution mapping");
		return -EINVAL;
	}
	const char *type = ystr(yget(y, n, "type"));
	static const struct {
		const char *type;
		enum drv_dist_type t;
		const char *a, *b;
	} forms[] = {
	    {"normal", DRV_DIST_NORMAL, "mean", "stdev"},
	    {"uniform", DRV_DIST_UNIFORM, "min", "max"},
	    {"gamma", DRV_DIST_GAMMA, "shape", "scale"},
	    {"exponential", DRV_DIST_EXP, "scale", NULL},
	    {"poisson", DRV_DIST_POISSON, "lam", NULL},
	};
	if (!type) {
		/* DLIO: {mean} alone is a constant, {mean, stdev} a normal. */
		yaml_node_t *m = yget(y, n, "mean"), *s = yget(y, n, "stdev");
		if (!m) {
			yerr(y, n, key, "a time mapping needs `mean` (or `type`)");
			return -EINVAL;
		}
		d->type = s ? DRV_DIST_NORMAL : DRV_DIST_CONST;
		d->b = 0;
		if (ynum(y, m, key, &d->a) || (s && ynum(y, s, key, &d->b)))
			return -EINVAL;
	} else {
		size_t i;
		for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
			if (!strcmp(type, forms[i].type))
				break;
		if (i == sizeof(forms) / sizeof(forms[0])) {
			yerr(y, yget(y, n, "type"), key,
			     "type must be normal, uniform, gamma, exponential or poisson");
			return -EINVAL;
		}
		yaml_node_t *a = yget(y, n, forms[i].a),
			    *b = forms[i].b ? yget(y, n, forms[i].b) : NULL;
		if (!a || (forms[i].b && !b)) {
			char why2[96];
			snprintf(why2, sizeof(why2), "%s needs %s%s%s", type, forms[i].a,
				 forms[i].b ? " and " : "", forms[i].b ? forms[i].b : "");
			yerr(y, n, key, why2);
			return -EINVAL;
		}
		d->type = forms[i].t;
		d->b = 0;
		if (ynum(y, a, key, &d->a) || (b && ynum(y, b, key, &d->b)))
			return -EINVAL;
	}
	if (drv_dist_valid(d, &why)) {
		yerr(y, n, key, why);
		return -EINVAL;
	}
	return 0;
}

static int is_dlio_doc(struct yctx *y, yaml_node_t *root)
{
	static const char *const sections[] = {
	    "dataset",	   "model", "framework",  "workflow",	"reader",
	    "data_reader", "train", "evaluation", "checkpoint", "metric"};

	if (!root || root->type != YAML_MAPPING_NODE || yget(y, root, "datasets"))
		return 0;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (yget(y, root, sections[i]))
			return 1;
	return 0;
}

static void read_reader(struct yctx *y, yaml_node_t *r, struct drv_params *p, unsigned *set)
{
	yaml_node_t *n;
	int64_t v;

	if ((n = yget(y, r, "batch_size")) && !yint(y, n, "reader.batch_size", 1, &v)) {
		p->batch = (uint64_t)v;
		*set |= DRV_SET_BATCH;
	}
	if ((n = yget(y, r, "batch_size_eval")) && !yint(y, n, "reader.batch_size_eval", 1, &v)) {
		p->eval_batch = (uint64_t)v;
		*set |= DRV_SET_EVAL_BATCH;
	}
	if ((n = yget(y, r, "read_threads")) && !yint(y, n, "reader.read_threads", 0, &v)) {
		if (v > 1024) {
			yerr(y, n, "reader.read_threads", "at most 1024");
		} else {
			/* DLIO's 0 = load in the main process; we still need one reader. */
			p->read_threads = v ? (unsigned)v : 1;
			*set |= DRV_SET_THREADS;
		}
	}
	if ((n = yget(y, r, "prefetch_size")) && !yint(y, n, "reader.prefetch_size", 0, &v)) {
		p->prefetch = v > 65536 ? 65536 : (unsigned)v;
		*set |= DRV_SET_PREFETCH;
	}
	if ((n = yget(y, r, "file_shuffle")) &&
	    !yshuffle(y, n, "reader.file_shuffle", &p->file_shuffle))
		*set |= DRV_SET_FSHUF;
	if ((n = yget(y, r, "sample_shuffle")) &&
	    !yshuffle(y, n, "reader.sample_shuffle", &p->sample_shuffle))
		*set |= DRV_SET_SSHUF;
	if ((n = yget(y, r, "transfer_size")) && !yis_null(n) &&
	    !yint(y, n, "reader.transfer_size", 4096, &v))
		p->transfer_size = (uint64_t)v;
	if ((n = yget(y, r, "odirect")))
		ybool(y, n, "reader.odirect", &p->odirect);
	/* The loader decides how often DLIO opens a file (dlio.md 5): tf.data's
	 * iterative sampler once per file, PyTorch's index sampler per sample. */
	const char *dl = ystr(yget(y, r, "data_loader"));
	if (dl && (!strcasecmp(dl, "tensorflow") || !strcasecmp(dl, "native_dali"))) {
		p->iterative = 1;
		*set |= DRV_SET_LOADER;
	} else if (dl && (!strcasecmp(dl, "pytorch") || !strcasecmp(dl, "dali"))) {
		p->iterative = 0;
		*set |= DRV_SET_LOADER;
	}
}

static void read_train(struct yctx *y, yaml_node_t *t, struct drv_params *p, unsigned *set)
{
	yaml_node_t *n;
	int64_t v;
	double sd = 0;

	if ((n = yget(y, t, "epochs")) && !yint(y, n, "train.epochs", 1, &v)) {
		p->epochs = (uint64_t)v;
		*set |= DRV_SET_EPOCHS;
	}
	if ((n = yget(y, t, "computation_time")) &&
	    !ytime(y, n, "train.computation_time", &p->compute))
		*set |= DRV_SET_COMPUTE;
	if ((n = yget(y, t, "computation_time_stdev")) &&
	    !ynum(y, n, "train.computation_time_stdev", &sd) && sd > 0 &&
	    p->compute.type == DRV_DIST_CONST) {
		p->compute.type = DRV_DIST_NORMAL;
		p->compute.b = sd;
		*set |= DRV_SET_COMPUTE;
	}
	if ((n = yget(y, t, "total_training_steps")) &&
	    !yint(y, n, "train.total_training_steps", -1, &v)) {
		p->total_steps = v > 0 ? (uint64_t)v : 0;
		*set |= DRV_SET_TOTAL;
	}
	if ((n = yget(y, t, "seed")) && !yint(y, n, "train.seed", 0, &v)) {
		p->seed = (uint64_t)v;
		*set |= DRV_SET_SEED;
	}
	if ((n = yget(y, t, "seed_change_epoch")))
		ybool(y, n, "train.seed_change_epoch", &p->seed_change_epoch);
}

static void read_eval(struct yctx *y, yaml_node_t *e, struct drv_params *p, unsigned *set)
{
	yaml_node_t *n;
	int64_t v;
	double sd = 0;

	if ((n = yget(y, e, "eval_time")) && !ytime(y, n, "evaluation.eval_time", &p->eval_compute))
		*set |= DRV_SET_EVAL_TIME;
	if ((n = yget(y, e, "eval_time_stdev")) && !ynum(y, n, "evaluation.eval_time_stdev", &sd) &&
	    sd > 0 && p->eval_compute.type == DRV_DIST_CONST) {
		p->eval_compute.type = DRV_DIST_NORMAL;
		p->eval_compute.b = sd;
		*set |= DRV_SET_EVAL_TIME;
	}
	if ((n = yget(y, e, "eval_after_epoch")) &&
	    !yint(y, n, "evaluation.eval_after_epoch", 0, &v))
		p->eval_after = (uint64_t)v;
	if ((n = yget(y, e, "epochs_between_evals")) &&
	    !yint(y, n, "evaluation.epochs_between_evals", 1, &v))
		p->eval_every = (uint64_t)v;
}

static void read_ckpt(struct yctx *y, yaml_node_t *c, struct drv_params *p, unsigned *set)
{
	yaml_node_t *n;
	int64_t v;

	if ((n = yget(y, c, "checkpoint_after_epoch")) &&
	    !yint(y, n, "checkpoint.checkpoint_after_epoch", 0, &v)) {
		p->ckpt_after_epoch = (uint64_t)v;
		*set |= DRV_SET_CKPT_SCHED;
	}
	if ((n = yget(y, c, "epochs_between_checkpoints")) &&
	    !yint(y, n, "checkpoint.epochs_between_checkpoints", 1, &v)) {
		p->ckpt_every_epochs = (uint64_t)v;
		*set |= DRV_SET_CKPT_SCHED;
	}
	if ((n = yget(y, c, "steps_between_checkpoints")) &&
	    !yint(y, n, "checkpoint.steps_between_checkpoints", -1, &v)) {
		p->ckpt_every_steps = v > 0 ? (uint64_t)v : 0;
		*set |= DRV_SET_CKPT_SCHED;
	}
}

static void read_model(struct yctx *y, yaml_node_t *m, struct drv_params *p, unsigned *set)
{
	yaml_node_t *n;
	int64_t v;
	const char *s;

	if (m && m->type == YAML_SCALAR_NODE) { /* DLIO's older `model: unet3d` */
		snprintf(p->model, sizeof(p->model), "%s", ystr(m));
		return;
	}
	if ((s = ystr(yget(y, m, "name"))))
		snprintf(p->model, sizeof(p->model), "%s", s);
	if ((n = yget(y, m, "model_size_bytes")) && !yint(y, n, "model.model_size_bytes", 0, &v)) {
		p->checkpoint_size = (uint64_t)v;
		*set |= DRV_SET_CKPT_SIZE;
	} else if ((n = yget(y, m, "model_size")) && !yint(y, n, "model.model_size", 0, &v)) {
		/* DLIO reads only model_size_bytes, so the shipped unet3d configs write
		 * 10 KiB checkpoints (dlio.md 6.5); the size they meant is this one. */
		p->checkpoint_size = (uint64_t)v;
		*set |= DRV_SET_CKPT_SIZE;
		drv_note(p,
			 "model.model_size read as the checkpoint size (%lld bytes); DLIO "
			 "ignores that key and writes 10 KiB",
			 (long long)v);
	}
}

int drv_params_from_yaml(const char *path, struct drv_params *p, unsigned *set, int *is_dlio,
			 FILE *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct yctx y = {.doc = &doc, .path = path, .err = err};
	FILE *f = fopen(path, "rb");
	int ret = 0;

	*is_dlio = 0;
	if (!f)
		return -errno;
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		return -ENOMEM;
	}
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		/* dl_config_load has already said what is wrong with the YAML. */
		yaml_parser_delete(&parser);
		fclose(f);
		return -EINVAL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	yaml_node_t *w = yget(&y, root, "workload");
	if (w && w->type == YAML_MAPPING_NODE)
		root = w;
	if (!is_dlio_doc(&y, root))
		goto out;
	*is_dlio = 1;

	yaml_node_t *n, *sec;
	int b;
	if ((sec = yget(&y, root, "reader")) || (sec = yget(&y, root, "data_reader")))
		read_reader(&y, sec, p, set);
	if ((sec = yget(&y, root, "train")))
		read_train(&y, sec, p, set);
	if ((sec = yget(&y, root, "evaluation")))
		read_eval(&y, sec, p, set);
	if ((sec = yget(&y, root, "checkpoint")))
		read_ckpt(&y, sec, p, set);
	if ((sec = yget(&y, root, "model")))
		read_model(&y, sec, p, set);
	if ((sec = yget(&y, root, "workflow"))) {
		if ((n = yget(&y, sec, "evaluation")) && !ybool(&y, n, "workflow.evaluation", &b)) {
			p->eval = b;
			*set |= DRV_SET_EVAL;
		}
		if ((n = yget(&y, sec, "checkpoint")) && !ybool(&y, n, "workflow.checkpoint", &b)) {
			p->checkpoint = b;
			*set |= DRV_SET_CKPT;
		}
	}
	if ((sec = yget(&y, root, "metric")) && (n = yget(&y, sec, "au"))) {
		double au;
		if (!ynum(&y, n, "metric.au", &au)) {
			if (au > 1 && au <= 100)
				au /= 100; /* someone wrote a percentage */
			if (au < 0 || au > 1)
				yerr(&y, n, "metric.au", "expected a fraction in [0, 1]");
			else {
				p->au_threshold = au;
				*set |= DRV_SET_AU;
			}
		}
	}
	if ((sec = yget(&y, yget(&y, root, "output"), "metric"))) {
		int64_t v;
		if ((n = yget(&y, sec, "exclude_start_steps")) &&
		    !yint(&y, n, "output.metric.exclude_start_steps", 0, &v))
			p->skip_start = v > 1000000 ? 1000000 : (unsigned)v;
		if ((n = yget(&y, sec, "exclude_end_steps")) &&
		    !yint(&y, n, "output.metric.exclude_end_steps", 0, &v))
			p->skip_end = v > 1000000 ? 1000000 : (unsigned)v;
	}
	if (y.errors)
		ret = -EINVAL;
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	return ret;
}

void drv_params_merge(struct drv_params *d, const struct drv_params *s, unsigned bits)
{
	if (bits & DRV_SET_EPOCHS)
		d->epochs = s->epochs;
	if (bits & DRV_SET_BATCH)
		d->batch = s->batch;
	if (bits & DRV_SET_EVAL_BATCH)
		d->eval_batch = s->eval_batch;
	if (bits & DRV_SET_THREADS)
		d->read_threads = s->read_threads;
	if (bits & DRV_SET_PREFETCH)
		d->prefetch = s->prefetch;
	if (bits & DRV_SET_COMPUTE)
		d->compute = s->compute;
	if (bits & DRV_SET_EVAL_TIME)
		d->eval_compute = s->eval_compute;
	if (bits & DRV_SET_FSHUF)
		d->file_shuffle = s->file_shuffle;
	if (bits & DRV_SET_SSHUF)
		d->sample_shuffle = s->sample_shuffle;
	if (bits & DRV_SET_SEED)
		d->seed = s->seed;
	if (bits & DRV_SET_AU)
		d->au_threshold = s->au_threshold;
	if (bits & DRV_SET_TOTAL)
		d->total_steps = s->total_steps;
	/* The schedule's other fields (first evaluation, checkpoint epochs) keep
	 * their own values: only what the bit names moves. */
	if (bits & DRV_SET_EVAL) {
		d->eval = s->eval;
		d->eval_every = s->eval_every;
	}
	if (bits & DRV_SET_CKPT)
		d->checkpoint = s->checkpoint;
	if (bits & DRV_SET_CKPT_SIZE)
		d->checkpoint_size = s->checkpoint_size;
	if (bits & DRV_SET_LOADER)
		d->iterative = s->iterative;
}
