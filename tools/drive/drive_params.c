/* The run parameters, layered: the options table's defaults (batch and
 * threads from the format's read hints) < the DLIO workload file's keys <
 * MLPerf Storage's table (--accelerator-type) < the command line; then
 * checked against the dataset, with a note for every adjustment. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dliofs/format.h"
#include "drive_i.h"

/* unet3d_small -> unet3d: the table's workload from a model or dataset name. */
static const char *guess_workload(const char *name)
{
	static const char *const known[] = {"unet3d", "resnet50", "cosmoflow"};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strncasecmp(name, known[i], strlen(known[i])))
			return known[i];
	return NULL;
}

static const char *nonempty(const char *s) { return s && *s ? s : NULL; }

/* --accelerator-type [--workload]: MLPerf Storage's figures for the pair.
 * 0 and *row (NULL when not asked), or -EINVAL (said). */
static int workload_row(const struct drv_cli *cl, const struct dl_dataset *ds,
			const struct drv_params *p, const struct drv_workload **row)
{
	const char *accel = nonempty(cl->accel_type), *wl = nonempty(cl->workload);

	*row = NULL;
	if (!accel && !wl)
		return 0;
	if (!accel) {
		fprintf(stderr, "dlio-drive: --workload needs --accelerator-type "
				"(a100, h100, v100, b200)\n");
		return -EINVAL;
	}
	if (!wl)
		wl = guess_workload(p->model);
	if (!wl)
		wl = guess_workload(ds->name);
	if (!wl) {
		fprintf(stderr, "dlio-drive: --accelerator-type: which workload? give "
				"--workload unet3d|resnet50|cosmoflow\n");
		return -EINVAL;
	}
	if ((*row = drv_workload_find(wl, accel)))
		return 0;
	size_t n;
	const struct drv_workload *t = drv_workload_table(&n);
	fprintf(stderr, "dlio-drive: no MLPerf Storage figures for %s on %s; known:", wl, accel);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %s/%s", t[i].workload, t[i].accel);
	fputc('\n', stderr);
	return -EINVAL;
}

/* The table's row over the workload file; it gives batch and compute. */
static void apply_workload(const struct drv_workload *w, struct drv_params *p,
			   struct drv_optset *set)
{
	size_t n;
	const struct drv_opt *o = drv_opts(&n);

	snprintf(p->workload, sizeof(p->workload), "%s", w->workload);
	snprintf(p->accel_type, sizeof(p->accel_type), "%s", w->accel);
	p->compute = (struct drv_dist){DRV_DIST_CONST, w->seconds, 0};
	p->batch = w->batch;
	p->read_threads = w->read_threads;
	p->au_threshold = w->au;
	for (size_t i = 0; i < n; i++)
		if (o[i].flag && (o[i].off == DRV_P(batch) || o[i].off == DRV_P(compute)))
			drv_optset_add(set, &o[i]);
}

/* The command line over the rest, and what its options imply together. */
static void apply_cli(const struct drv_cli *cl, const struct drv_workload *w, struct drv_params *p)
{
	const struct drv_optset *g = &cl->given;

	drv_params_merge(p, &cl->p, g);
	/* --eval-every turns evaluation on; --no-eval (workflow.evaluation's
	 * field) keeps it off whatever else says. */
	if (drv_given(g, DRV_P(eval_every)) && !drv_given(g, DRV_P(eval)))
		p->eval = 1;
	/* An epoch schedule replaces the config's steps. */
	if (drv_given(g, DRV_P(ckpt_every_epochs)) && !drv_given(g, DRV_P(ckpt_every_steps)))
		p->ckpt_every_steps = 0;
	/* A per-batch time from the table, with another batch size: scale it. */
	if (w && drv_given(g, DRV_P(batch)) && !drv_given(g, DRV_P(compute)) &&
	    p->batch != w->batch) {
		drv_dist_scale(&p->compute, (double)p->batch / (double)w->batch);
		drv_note(p,
			 "computation time scaled to batch %llu: %.6g s (%s/%s: %.6g s per %llu)",
			 (unsigned long long)p->batch, p->compute.a, w->workload, w->accel,
			 w->seconds, (unsigned long long)w->batch);
	}
}

/* Batch sizes and evaluation against the dataset's samples; `set`: what
 * any layer gave. 0 or -EINVAL (said). */
static int check_batches(const struct dl_dataset *ds, uint64_t spf, const struct drv_optset *set,
			 struct drv_params *p)
{
	uint64_t T = ds->files[DL_SPLIT_TRAIN] * spf;

	if (!T) {
		fprintf(stderr, "dlio-drive: dataset %s has no training samples\n", ds->name);
		return -EINVAL;
	}
	if (p->batch > T) {
		if (drv_given(set, DRV_P(batch))) {
			fprintf(stderr,
				"dlio-drive: batch size %llu is more than the %llu training "
				"samples: no full batch to take (the last partial batch is "
				"dropped, as DLIO does)\n",
				(unsigned long long)p->batch, (unsigned long long)T);
			return -EINVAL;
		}
		drv_note(p, "default batch size %llu > %llu samples: batch %llu",
			 (unsigned long long)p->batch, (unsigned long long)T,
			 (unsigned long long)T);
		p->batch = T;
	}
	if (!drv_given(set, DRV_P(eval_batch)))
		p->eval_batch = p->batch;
	if (p->eval) {
		uint64_t ET = ds->files[DL_SPLIT_VALID] * spf;
		if (!ET || ET < p->eval_batch) {
			drv_note(p, "evaluation skipped: %llu validation samples for batch %llu",
				 (unsigned long long)ET, (unsigned long long)p->eval_batch);
			p->eval = 0;
		}
	}
	return 0;
}

/* Checkpoints: the command line names the directory (a workload file's
 * folder is relative to wherever DLIO ran). 0 or -EINVAL (said). */
static int check_checkpoints(const struct drv_cli *cl, struct drv_params *p)
{
	if (drv_given_any(&cl->given, DRV_OF_CKPT)) {
		if (!p->checkpoint_dir[0]) {
			fprintf(stderr, "dlio-drive: checkpoint options need --checkpoint-dir\n");
			return -EINVAL;
		}
		p->checkpoint = 1;
	} else if (p->checkpoint) {
		drv_note(p, "the workload asks for checkpoints: give --checkpoint-dir to write "
			    "them; none written");
		p->checkpoint = 0;
	}
	return 0;
}

/* What the report should say about how this format is read, and what of
 * the command line does not apply to it. */
static void reader_notes(const struct dl_dataset *ds, uint64_t spf, struct drv_params *p)
{
	const struct dl_format_ops *f = dl_ds_ops(ds);
	const struct drv_reader_ops *rd = drv_reader_for_loader(ds, p);

	if (p->odirect && rd->no_odirect) {
		drv_note(p, "O_DIRECT not used for %s (%s)", f->name, rd->no_odirect);
		p->odirect = 0;
	}
	if (p->check_crc && !(f->read_hints.flags & DL_RH_CRC))
		drv_note(p, "--check-crc applies to formats whose records carry a checksum, not %s",
			 f->name);
	if (p->decode && !(f->read_hints.flags & DL_RH_IMAGE))
		drv_note(p, "--decode applies to image formats, not %s", f->name);
	if (p->amp == DRV_AMP_DLIO &&
	    rd->plan(DRV_AMP_EFFICIENT, 0) != rd->plan(p->amp, p->iterative) && spf > 1)
		drv_note(p, "read amplification as DLIO: each file read %llu times per epoch",
			 (unsigned long long)spf);
	if (p->loader == DRV_LOADER_MLPERF_V3 && rd == drv_reader_for(ds))
		drv_note(p,
			 "--loader mlperf-v3 reads %s as DLIO does: the fork prefetches whole files "
			 "for npz, npy, image and hdf5 datasets only",
			 f->name);
	if (rd->notes)
		rd->notes(ds, p);
}

int drv_build_params(const struct drv_cli *cl, const struct dl_config *cfg,
		     const struct dl_dataset *ds, uint64_t spf, struct drv_params *p)
{
	const struct drv_workload *w;
	struct drv_optset set = {{0}};
	int is_dlio = 0, ret;

	drv_params_defaults(p, &dl_ds_ops(ds)->read_hints);
	if ((ret = drv_params_from_yaml(cfg->path, p, &set, &is_dlio, stderr)))
		return ret;
	p->from_dlio = is_dlio;
	if ((ret = workload_row(cl, ds, p, &w)))
		return ret;
	if (w)
		apply_workload(w, p, &set);
	/* A DLIO workload file asks for DLIO's run: its loader's reads are
	 * what DLIO's storage sees, so they are the default; efficient reads
	 * are asked for by name. */
	if (is_dlio)
		p->amp = DRV_AMP_DLIO;
	apply_cli(cl, w, p);
	drv_optset_or(&set, &cl->given);
	if ((ret = check_batches(ds, spf, &set, p)) || (ret = check_checkpoints(cl, p)))
		return ret;
	if (p->total_steps && p->from_dlio && !drv_given(&cl->given, DRV_P(total_steps)))
		drv_note(p,
			 "total_training_steps %llu counts across epochs (DLIO's log says so; "
			 "its loop resets the count each epoch)",
			 (unsigned long long)p->total_steps);
	reader_notes(ds, spf, p);
	p->progress = !cl->quiet && isatty(STDERR_FILENO);
	return 0;
}
