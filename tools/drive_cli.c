/* dlio-drive's command line: the options, --help, and the run parameters
 * layered from the format's defaults, the workload file, MLPerf Storage's
 * table and the command line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "dliofs/units.h"
#include "drive_i.h"

static void usage(FILE *f)
{
	fputs(
	    "usage: dlio-drive --config CFG DIR [options]\n"
	    "Replays a training job's reads from DIR/<dataset>/ and reports accelerator\n"
	    "utilization (AU), stalls, samples/s and MB/s as MLPerf Storage does.\n"
	    "\n"
	    "  --config CFG              dliofs config or DLIO workload YAML (required)\n"
	    "  --dataset NAME            which dataset of CFG (default: the first)\n"
	    "  --epochs N                epochs (DLIO train.epochs; default 1)\n"
	    "  --batch-size N            samples per step (reader.batch_size)\n"
	    "  --eval-batch-size N       samples per evaluation step\n"
	    "  --read-threads N          reader threads (reader.read_threads)\n"
	    "  --prefetch N              batches read ahead (reader.prefetch_size; default 2;\n"
	    "                            as PyTorch: at least one per reader thread)\n"
	    "  --computation-time T      per step: seconds (0.323, 50ms) or a distribution:\n"
	    "                            normal:MEAN,STDEV uniform:MIN,MAX gamma:SHAPE,SCALE\n"
	    "                            exponential:SCALE poisson:LAMBDA\n"
	    "  --eval-time T             per evaluation step (same forms)\n"
	    "  --accelerator sleep|cuda  compute by sleeping (default) or on a GPU\n"
	    "  --accelerator-type TYPE   a100 h100 v100 b200: MLPerf Storage's computation\n"
	    "                            time, batch, threads and AU threshold for --workload\n"
	    "  --workload NAME           unet3d resnet50 cosmoflow (default: from the config)\n"
	    "  --file-shuffle MODE       off seed random (reader.file_shuffle)\n"
	    "  --sample-shuffle MODE     off seed random (reader.sample_shuffle)\n"
	    "  --seed N                  shuffle and compute-draw seed (train.seed; default 123)\n"
	    "  --same-seed-every-epoch   do not change the shuffle seed per epoch\n"
	    "  --total-steps N           stop after N training steps in all\n"
	    "  --eval-every N            evaluate every N epochs (valid/ files)\n"
	    "  --eval-after N            first evaluation after epoch N (default 1)\n"
	    "  --no-eval                 no evaluation even if the config asks\n"
	    "  --checkpoint-dir DIR      write checkpoints there (fsynced)\n"
	    "  --checkpoint-size SIZE    bytes per checkpoint (model.model_size_bytes)\n"
	    "  --checkpoint-every-steps N, --checkpoint-every-epochs N,\n"
	    "  --checkpoint-after-epoch N  checkpoint schedule (DLIO's)\n"
	    "  --read-amplification M    efficient (default) or dlio: read as DLIO's Python\n"
	    "                            readers do: whole-file formats and hdf5 opened per\n"
	    "                            sample (pytorch loader) or per file (tensorflow),\n"
	    "                            npz through np.load's buffered reads\n"
	    "  --data-loader L           pytorch (default) or tensorflow (reader.data_loader):\n"
	    "                            how often --read-amplification dlio opens a file\n"
	    "  --check-crc               verify TFRecord CRC-32C\n"
	    "  --decode                  decode JPEG (libjpeg) and PNG (zlib) images\n"
	    "  --io-size SIZE            read size for whole files (default 4MiB)\n"
	    "  --transfer-size SIZE      TFRecord stream buffer (default 256KiB)\n"
	    "  --odirect                 O_DIRECT reads (not tfrecord/hdf5)\n"
	    "  --fadvise-dontneed        drop each file from the page cache after reading it\n"
	    "  --au-threshold F          pass threshold (metric.au; default 0.90)\n"
	    "  --warmup-steps N          steps per epoch left out of AU (default 1)\n"
	    "  --h2d-size SIZE           bytes copied to the GPU per step (cuda)\n"
	    "  --json FILE               write the JSON report (- for stdout)\n"
	    "  --trace-files FILE        log every read: epoch split seq file sample offset bytes\n"
	    "                            (several ranks: FILE.RANK per rank)\n"
	    "  --quiet                   no table, no progress bar\n"
	    "  --help, --version\n"
	    "\n"
	    "Ranks: under mpirun (mpirun -np N dlio-drive ...) each process is one\n"
	    "accelerator, as in DLIO: rank r reads samples [r*ceil(T/N), (r+1)*ceil(T/N))\n"
	    "(tfrecord: files r, r+N, ...), every step ends with an all-reduce, and rank 0\n"
	    "reports for the job (samples/s summed, AU the mean over ranks).\n"
	    "\n"
	    "Exit status: 0 the run completed (pass or fail is in the report), 1 it\n"
	    "stopped on an I/O error, 2 bad arguments or config, 3 no usable CUDA.\n",
	    f);
}

enum opt {
	OPT_CONFIG = 256,
	OPT_DATASET,
	OPT_EPOCHS,
	OPT_BATCH,
	OPT_EVAL_BATCH,
	OPT_THREADS,
	OPT_PREFETCH,
	OPT_COMPUTE,
	OPT_EVAL_TIME,
	OPT_ACCEL,
	OPT_ACCEL_TYPE,
	OPT_WORKLOAD,
	OPT_FSHUF,
	OPT_SSHUF,
	OPT_SEED,
	OPT_SAME_SEED,
	OPT_TOTAL,
	OPT_EVAL_EVERY,
	OPT_EVAL_AFTER,
	OPT_NO_EVAL,
	OPT_CKPT_DIR,
	OPT_CKPT_SIZE,
	OPT_CKPT_STEPS,
	OPT_CKPT_EPOCHS,
	OPT_CKPT_AFTER,
	OPT_AMP,
	OPT_LOADER,
	OPT_CRC,
	OPT_DECODE,
	OPT_IO_SIZE,
	OPT_TRANSFER,
	OPT_ODIRECT,
	OPT_DONTNEED,
	OPT_AU,
	OPT_WARMUP,
	OPT_H2D,
	OPT_JSON,
	OPT_TRACE,
	OPT_QUIET,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"batch-size", required_argument, NULL, OPT_BATCH},
    {"eval-batch-size", required_argument, NULL, OPT_EVAL_BATCH},
    {"read-threads", required_argument, NULL, OPT_THREADS},
    {"prefetch", required_argument, NULL, OPT_PREFETCH},
    {"computation-time", required_argument, NULL, OPT_COMPUTE},
    {"eval-time", required_argument, NULL, OPT_EVAL_TIME},
    {"accelerator", required_argument, NULL, OPT_ACCEL},
    {"accelerator-type", required_argument, NULL, OPT_ACCEL_TYPE},
    {"workload", required_argument, NULL, OPT_WORKLOAD},
    {"file-shuffle", required_argument, NULL, OPT_FSHUF},
    {"sample-shuffle", required_argument, NULL, OPT_SSHUF},
    {"seed", required_argument, NULL, OPT_SEED},
    {"same-seed-every-epoch", no_argument, NULL, OPT_SAME_SEED},
    {"total-steps", required_argument, NULL, OPT_TOTAL},
    {"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
    {"eval-after", required_argument, NULL, OPT_EVAL_AFTER},
    {"no-eval", no_argument, NULL, OPT_NO_EVAL},
    {"checkpoint-dir", required_argument, NULL, OPT_CKPT_DIR},
    {"checkpoint-size", required_argument, NULL, OPT_CKPT_SIZE},
    {"checkpoint-every-steps", required_argument, NULL, OPT_CKPT_STEPS},
    {"checkpoint-every-epochs", required_argument, NULL, OPT_CKPT_EPOCHS},
    {"checkpoint-after-epoch", required_argument, NULL, OPT_CKPT_AFTER},
    {"read-amplification", required_argument, NULL, OPT_AMP},
    {"data-loader", required_argument, NULL, OPT_LOADER},
    {"check-crc", no_argument, NULL, OPT_CRC},
    {"decode", no_argument, NULL, OPT_DECODE},
    {"io-size", required_argument, NULL, OPT_IO_SIZE},
    {"transfer-size", required_argument, NULL, OPT_TRANSFER},
    {"odirect", no_argument, NULL, OPT_ODIRECT},
    {"fadvise-dontneed", no_argument, NULL, OPT_DONTNEED},
    {"au-threshold", required_argument, NULL, OPT_AU},
    {"warmup-steps", required_argument, NULL, OPT_WARMUP},
    {"h2d-size", required_argument, NULL, OPT_H2D},
    {"json", required_argument, NULL, OPT_JSON},
    {"trace-files", required_argument, NULL, OPT_TRACE},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "dlio-drive: --%s %s: %s\n", opt, val, why ? why : "invalid value");
	return -EINVAL;
}

static int count_arg(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *why = NULL;

	if (dl_parse_count(s, out, &why))
		return bad(opt, s, why);
	if (*out < min || *out > max) {
		char m[96];
		snprintf(m, sizeof(m), "must be between %llu and %llu", (unsigned long long)min,
			 (unsigned long long)max);
		return bad(opt, s, m);
	}
	return 0;
}

static int size_arg(const char *opt, const char *s, uint64_t *out)
{
	const char *why = NULL;

	if (dl_parse_size(s, out, &why))
		return bad(opt, s, why);
	return 0;
}

static int shuffle_arg(const char *opt, const char *s, enum drv_shuffle *out)
{
	if (!strcasecmp(s, "off"))
		*out = DRV_SHUF_OFF;
	else if (!strcasecmp(s, "seed"))
		*out = DRV_SHUF_SEED;
	else if (!strcasecmp(s, "random"))
		*out = DRV_SHUF_RANDOM;
	else
		return bad(opt, s, "expected off, seed or random");
	return 0;
}

int drv_cli_parse(int argc, char **argv, struct drv_cli *c)
{
	struct drv_params *p = &c->p;
	const char *why;
	uint64_t v;
	int o;

	memset(c, 0, sizeof(*c));
	while ((o = getopt_long(argc, argv, "hq", long_opts, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *lo = long_opts; lo->name; lo++)
			if (lo->val == o)
				name = lo->name;
		switch (o) {
		case OPT_CONFIG:
			c->config = optarg;
			break;
		case OPT_DATASET:
			c->dataset = optarg;
			break;
		case OPT_EPOCHS:
			if (count_arg(name, optarg, 1, 1000000, &p->epochs))
				return -EINVAL;
			c->set |= DRV_SET_EPOCHS;
			break;
		case OPT_BATCH:
			if (count_arg(name, optarg, 1, 1ull << 32, &p->batch))
				return -EINVAL;
			c->set |= DRV_SET_BATCH;
			break;
		case OPT_EVAL_BATCH:
			if (count_arg(name, optarg, 1, 1ull << 32, &p->eval_batch))
				return -EINVAL;
			c->set |= DRV_SET_EVAL_BATCH;
			break;
		case OPT_THREADS:
			if (count_arg(name, optarg, 1, 1024, &v))
				return -EINVAL;
			p->read_threads = (unsigned)v;
			c->set |= DRV_SET_THREADS;
			break;
		case OPT_PREFETCH:
			if (count_arg(name, optarg, 0, 65536, &v))
				return -EINVAL;
			p->prefetch = (unsigned)v;
			c->set |= DRV_SET_PREFETCH;
			break;
		case OPT_COMPUTE:
			if (drv_dist_parse(optarg, &p->compute, &why))
				return bad(name, optarg, why);
			c->set |= DRV_SET_COMPUTE;
			break;
		case OPT_EVAL_TIME:
			if (drv_dist_parse(optarg, &p->eval_compute, &why))
				return bad(name, optarg, why);
			c->set |= DRV_SET_EVAL_TIME;
			break;
		case OPT_ACCEL:
			if (!strcmp(optarg, "sleep"))
				p->accel = DRV_ACCEL_SLEEP;
			else if (!strcmp(optarg, "cuda"))
				p->accel = DRV_ACCEL_CUDA;
			else
				return bad(name, optarg, "expected sleep or cuda");
			break;
		case OPT_ACCEL_TYPE:
			snprintf(p->accel_type, sizeof(p->accel_type), "%s", optarg);
			break;
		case OPT_WORKLOAD:
			snprintf(p->workload, sizeof(p->workload), "%s", optarg);
			break;
		case OPT_FSHUF:
			if (shuffle_arg(name, optarg, &p->file_shuffle))
				return -EINVAL;
			c->set |= DRV_SET_FSHUF;
			break;
		case OPT_SSHUF:
			if (shuffle_arg(name, optarg, &p->sample_shuffle))
				return -EINVAL;
			c->set |= DRV_SET_SSHUF;
			break;
		case OPT_SEED:
			if (count_arg(name, optarg, 0, UINT64_MAX, &p->seed))
				return -EINVAL;
			c->set |= DRV_SET_SEED;
			break;
		case OPT_SAME_SEED:
			c->same_seed = 1;
			break;
		case OPT_TOTAL:
			if (count_arg(name, optarg, 1, UINT64_MAX, &p->total_steps))
				return -EINVAL;
			c->set |= DRV_SET_TOTAL;
			break;
		case OPT_EVAL_EVERY:
			if (count_arg(name, optarg, 1, 1000000, &p->eval_every))
				return -EINVAL;
			p->eval = 1;
			c->set |= DRV_SET_EVAL;
			break;
		case OPT_EVAL_AFTER:
			if (count_arg(name, optarg, 0, 1000000, &p->eval_after))
				return -EINVAL;
			c->eval_after_set = 1;
			break;
		case OPT_NO_EVAL:
			c->no_eval = 1;
			break;
		case OPT_CKPT_DIR:
			if (strlen(optarg) >= sizeof(p->checkpoint_dir) - 64)
				return bad(name, optarg, "path too long");
			snprintf(p->checkpoint_dir, sizeof(p->checkpoint_dir), "%s", optarg);
			c->ckpt_opt = 1;
			break;
		case OPT_CKPT_SIZE:
			if (size_arg(name, optarg, &p->checkpoint_size))
				return -EINVAL;
			c->set |= DRV_SET_CKPT_SIZE;
			c->ckpt_opt = 1;
			break;
		case OPT_CKPT_STEPS:
			if (count_arg(name, optarg, 1, UINT64_MAX, &p->ckpt_every_steps))
				return -EINVAL;
			c->ck_steps_set = 1;
			c->ckpt_opt = 1;
			break;
		case OPT_CKPT_EPOCHS:
		case OPT_CKPT_AFTER:
			if (count_arg(name, optarg, o == OPT_CKPT_EPOCHS, 1000000, &v))
				return -EINVAL;
			if (o == OPT_CKPT_EPOCHS) {
				p->ckpt_every_epochs = v;
				c->ck_epochs_set = 1;
			} else {
				p->ckpt_after_epoch = v;
				c->ck_after_set = 1;
			}
			c->ckpt_opt = 1;
			break;
		case OPT_AMP:
			if (!strcmp(optarg, "dlio"))
				p->amp = DRV_AMP_DLIO;
			else if (!strcmp(optarg, "efficient"))
				p->amp = DRV_AMP_EFFICIENT;
			else
				return bad(name, optarg, "expected efficient or dlio");
			break;
		case OPT_LOADER:
			if (!strcmp(optarg, "pytorch"))
				p->iterative = 0;
			else if (!strcmp(optarg, "tensorflow"))
				p->iterative = 1;
			else
				return bad(name, optarg, "expected pytorch or tensorflow");
			c->set |= DRV_SET_LOADER;
			break;
		case OPT_CRC:
			c->crc = 1;
			break;
		case OPT_DECODE:
			c->decode = 1;
			break;
		case OPT_IO_SIZE:
		case OPT_TRANSFER:
			if (size_arg(name, optarg, &v))
				return -EINVAL;
			if (v < 4096 || v > (256ull << 20) || v % 4096)
				return bad(name, optarg, "must be a multiple of 4KiB up to 256MiB");
			if (o == OPT_IO_SIZE)
				c->io_size = v;
			else
				c->transfer_size = v;
			break;
		case OPT_ODIRECT:
			c->odirect = 1;
			break;
		case OPT_DONTNEED:
			c->dontneed = 1;
			break;
		case OPT_AU: {
			char *end;
			double au = strtod(optarg, &end);
			if (*end || end == optarg || !(au >= 0 && au <= 1))
				return bad(name, optarg, "expected a fraction in [0, 1]");
			p->au_threshold = au;
			c->set |= DRV_SET_AU;
			break;
		}
		case OPT_WARMUP:
			if (count_arg(name, optarg, 0, 1000000, &v))
				return -EINVAL;
			p->skip_start = (unsigned)v;
			c->warmup_set = 1;
			break;
		case OPT_H2D:
			if (size_arg(name, optarg, &c->h2d))
				return -EINVAL;
			break;
		case OPT_JSON:
			c->json = optarg;
			break;
		case OPT_TRACE:
			c->trace = optarg;
			break;
		case 'q':
		case OPT_QUIET:
			c->quiet = 1;
			break;
		case 'h':
		case OPT_HELP:
			usage(stdout);
			return 1;
		case OPT_VERSION: {
			char mpi[160];
			drv_comm_describe(mpi, sizeof(mpi));
			printf("dlio-drive %s (%s)\n", DLIOFS_VERSION, mpi);
			return 1;
		}
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind + 1 != argc || !c->config) {
		fprintf(stderr, "dlio-drive: %s\n",
			!c->config ? "--config CFG is required" : "exactly one DIR is required");
		usage(stderr);
		return -EINVAL;
	}
	c->dir = argv[optind];
	return 0;
}

/* unet3d_small -> unet3d: the table's workload from a model or dataset name. */
static const char *guess_workload(const char *name)
{
	static const char *const known[] = {"unet3d", "resnet50", "cosmoflow"};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strncasecmp(name, known[i], strlen(known[i])))
			return known[i];
	return NULL;
}

/* What the report should say about how this format is read, and what of
 * the command line does not apply to it. */
static void reader_notes(const struct dl_dataset *ds, uint64_t spf, struct drv_params *p)
{
	const struct dl_format_ops *f = dl_ds_ops(ds);
	const struct drv_reader_ops *rd = drv_reader_for(ds);

	if (p->odirect && rd->no_odirect) {
		drv_note(p, "O_DIRECT not used for %s (%s)", f->name, rd->no_odirect);
		p->odirect = 0;
	}
	if (p->check_crc && !(f->read_hints.flags & DL_RH_CRC))
		drv_note(p, "--check-crc applies to formats whose records carry a checksum, not %s",
			 f->name);
	if (p->decode && !(f->read_hints.flags & DL_RH_IMAGE))
		drv_note(p, "--decode applies to image formats, not %s", f->name);
	if (p->amp == DRV_AMP_DLIO && rd->plan(DRV_AMP_EFFICIENT, 0) != rd->plan(p->amp, p->iterative) &&
	    spf > 1)
		drv_note(p, "read amplification as DLIO: each file read %llu times per epoch",
			 (unsigned long long)spf);
	if (rd->notes)
		rd->notes(ds, p);
}

/* Layer the run parameters: format defaults < workload YAML < MLPerf table <
 * command line. */
int drv_build_params(const struct drv_cli *cl, const struct dl_config *cfg, const struct dl_dataset *ds,
			uint64_t spf, struct drv_params *p)
{
	unsigned yset = 0;
	int is_dlio = 0, ret;
	const struct drv_workload *wrow = NULL;

	drv_params_defaults(p, &dl_ds_ops(ds)->read_hints);
	ret = drv_params_from_yaml(cfg->path, p, &yset, &is_dlio, stderr);
	if (ret)
		return ret;
	p->from_dlio = is_dlio;
	if (cl->p.accel_type[0] || cl->p.workload[0]) {
		const char *wl = cl->p.workload[0] ? cl->p.workload : NULL;
		if (!cl->p.accel_type[0]) {
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
		wrow = drv_workload_find(wl, cl->p.accel_type);
		if (!wrow) {
			size_t n;
			const struct drv_workload *t = drv_workload_table(&n);
			fprintf(stderr,
				"dlio-drive: no MLPerf Storage figures for %s on %s; known:", wl,
				cl->p.accel_type);
			for (size_t i = 0; i < n; i++)
				fprintf(stderr, " %s/%s", t[i].workload, t[i].accel);
			fputc('\n', stderr);
			return -EINVAL;
		}
		snprintf(p->workload, sizeof(p->workload), "%s", wrow->workload);
		snprintf(p->accel_type, sizeof(p->accel_type), "%s", wrow->accel);
		p->compute = (struct drv_dist){DRV_DIST_CONST, wrow->seconds, 0};
		p->batch = wrow->batch;
		p->read_threads = wrow->read_threads;
		p->au_threshold = wrow->au;
		yset |= DRV_SET_BATCH | DRV_SET_COMPUTE;
	}
	drv_params_merge(p, &cl->p, cl->set);
	yset |= cl->set;
	p->accel = cl->p.accel;
	p->amp = cl->p.amp;
	if (cl->warmup_set)
		p->skip_start = cl->p.skip_start;
	if (cl->same_seed)
		p->seed_change_epoch = 0;
	if (cl->eval_after_set)
		p->eval_after = cl->p.eval_after;
	if (cl->ck_steps_set)
		p->ckpt_every_steps = cl->p.ckpt_every_steps;
	if (cl->ck_epochs_set) {
		p->ckpt_every_epochs = cl->p.ckpt_every_epochs;
		if (!cl->ck_steps_set)
			p->ckpt_every_steps = 0; /* an epoch schedule replaces the config's steps */
	}
	if (cl->ck_after_set)
		p->ckpt_after_epoch = cl->p.ckpt_after_epoch;
	if (cl->no_eval)
		p->eval = 0;
	/* A per-batch time from the table, with another batch size: scale it. */
	if (wrow && (cl->set & DRV_SET_BATCH) && !(cl->set & DRV_SET_COMPUTE) &&
	    p->batch != wrow->batch) {
		drv_dist_scale(&p->compute, (double)p->batch / (double)wrow->batch);
		drv_note(p,
			 "computation time scaled to batch %llu: %.6g s (%s/%s: %.6g s per %llu)",
			 (unsigned long long)p->batch, p->compute.a, wrow->workload, wrow->accel,
			 wrow->seconds, (unsigned long long)wrow->batch);
	}

	uint64_t T = ds->files[DL_SPLIT_TRAIN] * spf;
	if (!T) {
		fprintf(stderr, "dlio-drive: dataset %s has no training samples\n", ds->name);
		return -EINVAL;
	}
	if (p->batch > T) {
		if (yset & DRV_SET_BATCH) {
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
	if (!(yset & DRV_SET_EVAL_BATCH))
		p->eval_batch = p->batch;
	if (p->eval) {
		uint64_t ET = ds->files[DL_SPLIT_VALID] * spf;
		if (!ET || ET < p->eval_batch) {
			drv_note(p, "evaluation skipped: %llu validation samples for batch %llu",
				 (unsigned long long)ET, (unsigned long long)p->eval_batch);
			p->eval = 0;
		}
	}
	/* Checkpoints: the command line names the directory (a workload file's
	 * folder is relative to wherever DLIO ran). */
	if (cl->ckpt_opt) {
		if (!p->checkpoint_dir[0] && !cl->p.checkpoint_dir[0]) {
			fprintf(stderr, "dlio-drive: checkpoint options need --checkpoint-dir\n");
			return -EINVAL;
		}
		snprintf(p->checkpoint_dir, sizeof(p->checkpoint_dir), "%s", cl->p.checkpoint_dir);
		p->checkpoint = 1;
	} else if (p->checkpoint) {
		drv_note(p, "the workload asks for checkpoints: give --checkpoint-dir to write "
			    "them; none written");
		p->checkpoint = 0;
	}
	if (p->total_steps && !(yset & DRV_SET_TOTAL))
		p->total_steps = 0;
	if (p->total_steps && p->from_dlio && !(cl->set & DRV_SET_TOTAL))
		drv_note(p,
			 "total_training_steps %llu counts across epochs (DLIO's log says so; "
			 "its loop resets the count each epoch)",
			 (unsigned long long)p->total_steps);

	p->check_crc = cl->crc;
	p->decode = cl->decode;
	p->dontneed = cl->dontneed;
	if (cl->io_size)
		p->io_size = cl->io_size;
	if (cl->transfer_size)
		p->transfer_size = cl->transfer_size;
	if (p->transfer_size < 4096)
		p->transfer_size = 4096;
	p->odirect = cl->odirect || p->odirect;
	reader_notes(ds, spf, p);
	p->h2d_bytes = cl->h2d;
	p->progress = !cl->quiet && isatty(STDERR_FILENO);
	return 0;
}
