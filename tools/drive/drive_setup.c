/* Everything before dlio-drive's first epoch: the config and dataset, the
 * run parameters, the directory holding the files, the reader's run-wide
 * state, the trace file and the accelerator. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "drive_i.h"
#include "drive_read_i.h"

#define H2D_MAX (256ull << 20)

static int is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int find_root(struct drv_ctx *c, const char *dir)
{
	char train[4200];

	snprintf(c->root, sizeof(c->root), "%s/%s", dir, c->ds->name);
	snprintf(train, sizeof(train), "%s/train", c->root);
	if (is_dir(train))
		return 0;
	/* DIR may be the dataset directory itself. */
	snprintf(train, sizeof(train), "%s/train", dir);
	if (is_dir(train)) {
		snprintf(c->root, sizeof(c->root), "%s", dir);
		return 0;
	}
	fprintf(stderr,
		"dlio-drive: no %s/%s/train (nor %s/train): is %s the directory holding "
		"dataset %s?\n",
		dir, c->ds->name, dir, dir, c->ds->name);
	return -ENOENT;
}

/* The first file: there, and of the size the config gives? A different size
 * is fine (another generator wrote it) but worth saying. */
static int check_first(struct drv_ctx *c, uint64_t *sample_bytes)
{
	char path[4096];
	struct dl_file f;
	struct stat st;
	int ret;

	if ((ret = drv_relpath(c, DL_SPLIT_TRAIN, 0, 0, path, sizeof(path))))
		return ret;
	if (stat(path, &st)) {
		ret = -errno;
		fprintf(stderr, "dlio-drive: %s: %s\n", path, strerror(errno));
		return ret;
	}
	*sample_bytes = 0;
	if (!dl_file_init(c->fmt, c->ds, DL_SPLIT_TRAIN, 0, 0, &f)) {
		*sample_bytes = f.sample_bytes;
		if ((uint64_t)st.st_size != f.size)
			drv_note(c->p,
				 "%s is %llu bytes, the config says %llu: files not written "
				 "from this config?",
				 path, (unsigned long long)st.st_size, (unsigned long long)f.size);
	}
	return 0;
}

/* --trace-files FILE, its name already this rank's (drv_cli_paths: {rank}
 * replaced, or FILE.RANK with several ranks). */
static FILE *open_trace(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "dlio-drive: %s: %s\n", path, strerror(errno));
	return f;
}

/* The config, its loader's messages said only when loading fails: for a
 * DLIO file they list the keys it ignores, which are the very ones
 * drv_build_params reads. 0 or -errno (said). */
static int load_config(const char *path, struct dl_config **cfg)
{
	char *errbuf = NULL;
	size_t errlen = 0;
	FILE *err = open_memstream(&errbuf, &errlen);
	int ret = dl_config_load(path, err ? err : stderr, cfg);

	if (err)
		fclose(err);
	if (ret) {
		if (errbuf)
			fputs(errbuf, stderr);
		fprintf(stderr, "dlio-drive: %s: cannot load the config (%s)\n", path,
			strerror(-ret));
	}
	free(errbuf);
	return ret;
}

/* --dataset NAME, or the first. NULL when there is no such (said). */
static const struct dl_dataset *pick_dataset(const struct dl_config *cfg, const char *name,
					     const char *path)
{
	if (!name)
		return &cfg->datasets[0];
	for (unsigned i = 0; i < cfg->ndatasets; i++)
		if (!strcmp(cfg->datasets[i].name, name))
			return &cfg->datasets[i];
	fprintf(stderr, "dlio-drive: no dataset %s in %s; there are:", name, path);
	for (unsigned i = 0; i < cfg->ndatasets; i++)
		fprintf(stderr, " %s", cfg->datasets[i].name);
	fputc('\n', stderr);
	return NULL;
}

/* The ranks: each takes floor(T / B / P) steps from its own share. 0 or
 * -EINVAL (said by rank 0). */
static int check_ranks(struct drv_ctx *c, const struct drv_comm *comm, struct drv_params *p)
{
	uint64_t steps;

	if (c->rank != 0)
		p->progress = 0;
	if (c->ranks > 1 && !(comm->mpi && comm->size > 1))
		drv_note(p,
			 "rank %u of %u runs alone (%s): it reads its shard and reports it; the "
			 "ranks do not wait for each other between steps, and the job's figures "
			 "are their reports combined (samples/s, MB/s and bytes summed, AU the "
			 "mean)",
			 c->rank, c->ranks,
			 comm->launched > 1 ? (drv_comm_have_mpi() ? "not the mpirun of dlio-drive's MPI"
								   : "dlio-drive built without MPI")
					    : "no MPI launcher");
	else if (comm->launched > 1 && comm->size == 1)
		drv_note(p,
			 "%d processes were launched but each runs as one rank (%s): each read "
			 "the whole dataset",
			 comm->launched,
			 drv_comm_have_mpi() ? "not the mpirun of dlio-drive's MPI"
					     : "built without MPI");
	if (drv_shard_check(c, DL_SPLIT_TRAIN, p->batch, &steps, stderr))
		return -EINVAL;
	if (p->eval && drv_shard_check(c, DL_SPLIT_VALID, p->eval_batch, &steps, NULL)) {
		drv_note(p,
			 "evaluation skipped: the validation files do not give each of %u ranks "
			 "a full batch of %llu",
			 c->ranks, (unsigned long long)p->eval_batch);
		p->eval = 0;
	}
	if (c->ranks > 1 && p->checkpoint)
		drv_note(p, "checkpoints are written by rank 0 only (DLIO's rank_zero)");
	return 0;
}

/* --accelerator cuda: the GPU, with a batch's bytes to copy per step
 * unless --h2d-size says. The exit status (3: no usable CUDA). */
static int open_cuda(const struct drv_params *p, uint64_t sample_bytes, struct drv_cuda **cuda,
		     struct drv_result *res)
{
	uint64_t h2d = p->h2d_bytes, one = sample_bytes ? sample_bytes : 1;
	char msg[512];

	if (!h2d) {
		h2d = p->batch * one;
		if (h2d > H2D_MAX || h2d / p->batch != one)
			h2d = H2D_MAX;
	}
	if (drv_cuda_open((size_t)h2d, cuda, msg, sizeof(msg))) {
		fprintf(
		    stderr,
		    "dlio-drive: --accelerator cuda: %s; use --accelerator sleep to run without "
		    "a GPU\n",
		    msg);
		return 3;
	}
	res->cuda_device = drv_cuda_device(*cuda);
	return 0;
}

/* Everything before the first epoch. Returns the exit status (0: ready). */
int drv_setup(const struct drv_cli *cl, const struct drv_comm *comm, struct drv_ctx *c,
	      struct drv_params *p, struct dl_config **cfgp, struct drv_cuda **cuda,
	      struct drv_result *res)
{
	uint64_t sample_bytes = 0;
	int ret;

	if (load_config(cl->config, cfgp))
		return 2;
	c->cfg = *cfgp;
	if (!(c->ds = pick_dataset(c->cfg, cl->dataset, cl->config)))
		return 2;
	c->spf = c->ds->samples_per_file ? c->ds->samples_per_file : 1;
	if (!(c->rd = drv_reader_for(c->ds))) {
		fprintf(stderr, "dlio-drive: no reader for %s's read plan\n",
			dl_ds_ops(c->ds)->name);
		return 2;
	}
	if (drv_build_params(cl, c->cfg, c->ds, c->spf, p))
		return 2;
	c->p = p;
	c->rd = drv_reader_for_loader(c->ds, p);
	if (p->s3.storage == DRV_STORAGE_S3) {
		/* Paths are then BUCKET/KEY: the reader's URLs and the trace's names. */
		c->rd = &drv_read_s3_ops;
		snprintf(c->root, sizeof(c->root), "%s", p->s3.bucket[0] ? p->s3.bucket : c->ds->name);
	} else if (!cl->dir) {
		fprintf(stderr, "dlio-drive: exactly one DIR is required\n");
		return 2;
	}
	c->kind = c->rd->plan(p->amp, p->iterative);
	if (check_ranks(c, comm, p))
		return 2;
	if (p->s3.storage == DRV_STORAGE_S3 && cl->dir)
		drv_note(p, "DIR %s not used: --storage s3 reads objects", cl->dir);
	else if (p->s3.storage != DRV_STORAGE_S3 && find_root(c, cl->dir))
		return 2;
	if ((ret = dl_fmt_ctx_new(c->cfg->seed, 4096, &c->fmt))) {
		fprintf(stderr, "dlio-drive: format context: %s\n", strerror(-ret));
		return 2;
	}
	/* S3: the reader's setup asks for the first object instead. */
	if ((p->s3.storage != DRV_STORAGE_S3 && check_first(c, &sample_bytes)) ||
	    (c->rd->setup && c->rd->setup(c, stderr)))
		return 2;
	if (cl->trace) {
		if (!(c->trace = open_trace(cl->trace)))
			return 2;
		fprintf(c->trace, "# epoch\tsplit\tseq\tfile\tsample\toffset\tbytes\n");
	}
	return p->accel == DRV_ACCEL_CUDA ? open_cuda(p, sample_bytes, cuda, res) : 0;
}
