/* dlio-drive's options: one table gives each option its command-line flag,
 * the DLIO workload key it stands for, its type, its field, its default and
 * its help, so that parsing, the workload file (drive_config.c), the
 * defaults, --help and the record of which layer set what can never
 * disagree. How the layers combine is drv_build_params (drive_setup.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dliofs/units.h"
#include "drive_i.h"
#include "tool_opts_i.h"

#ifndef DLIOFS_VERSION
#define DLIOFS_VERSION "0"
#endif

_Static_assert(offsetof(struct drv_cli, p) == 0, "run parameters first in struct drv_cli");

#define FIELD(f) DRV_P(f), sizeof(((struct drv_cli *)0)->p.f)
#define TOOL(f) DRV_C(f), sizeof(((struct drv_cli *)0)->f)
#define MiB (1ull << 20)

/* A row per option reads better than a field per line. */
/* clang-format off */
static const struct drv_name shuffles[] = {
    {"off", DRV_SHUF_OFF, 0},	  {"seed", DRV_SHUF_SEED, 0},  {"random", DRV_SHUF_RANDOM, 0},
    {"false", DRV_SHUF_OFF, 1}, {"none", DRV_SHUF_OFF, 1}, {NULL, 0, 0},
};
static const struct drv_name accels[] = {
    {"sleep", DRV_ACCEL_SLEEP, 0}, {"cuda", DRV_ACCEL_CUDA, 0}, {NULL, 0, 0}};
static const struct drv_name amps[] = {
    {"efficient", DRV_AMP_EFFICIENT, 0}, {"dlio", DRV_AMP_DLIO, 0}, {NULL, 0, 0}};
/* DLIO's loaders: tf.data's iterative sampler (1) or PyTorch's index sampler. */
static const struct drv_name loaders[] = {
    {"pytorch", 0, 0},	 {"tensorflow", 1, 0}, {"dali", 0, 1},
    {"native_dali", 1, 1}, {NULL, 0, 0},
};

static const struct drv_name loader_names[] = {
    {"dlio", DRV_LOADER_DLIO, 0}, {"mlperf-v3", DRV_LOADER_MLPERF_V3, 0}, {NULL, 0, 0}};
static const struct drv_name storages[] = {
    {"file", DRV_STORAGE_FILE, 0}, {"s3", DRV_STORAGE_S3, 0}, {NULL, 0, 0}};
static const struct drv_name s3clients[] = {
    {"s3torchconnector", DRV_S3C_S3TORCH, 0}, {"s3dlio", DRV_S3C_S3DLIO, 0}, {NULL, 0, 0}};

/* In --help order; a workload key read after another of the same field
 * (a *_stdev, a fallback) comes after it. */
static const struct drv_opt opts[] = {
    {.flag = "config", .type = DRV_T_ARG, TOOL(config), .arg = "CFG",
     .help = "dliofs config or DLIO workload YAML, required"},
    {.flag = "dataset", .type = DRV_T_ARG, TOOL(dataset), .arg = "NAME",
     .help = "which dataset of CFG; by default the first"},
    {.flag = "data-dir", .type = DRV_T_ARG, TOOL(dir), .arg = "DIR",
     .help = "the directory holding the dataset, instead of the DIR operand; {rank} in it is "
	     "the rank (--data-dir '/mnt/dl{rank}': rank r reads mount r)"},
    {.flag = "rank", .type = DRV_T_COUNT, TOOL(rank), .max = (1u << 20) - 1, .arg = "R",
     .help = "this process's rank; by default the launcher's (OMPI_COMM_WORLD_RANK, "
	     "PMIX_RANK, PMI_RANK, SLURM_PROCID), else 0. Under MPI it must be MPI's"},
    {.flag = "ranks", .type = DRV_T_COUNT, TOOL(ranks), .min = 1, .max = 1u << 20, .arg = "N",
     .help = "how many ranks share the dataset; by default the launcher's "
	     "(OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS), else 1"},
    {.flag = "epochs", .key = "train.epochs", .type = DRV_T_COUNT, FIELD(epochs), .min = 1,
     .max = 1000000, .def = "1", .arg = "N", .help = "epochs"},
    {.flag = "batch-size", .key = "reader.batch_size", .type = DRV_T_COUNT, FIELD(batch),
     .min = 1, .max = 1ull << 32, .arg = "N",
     .help = "samples per step; by default DLIO's for the format"},
    {.flag = "eval-batch-size", .key = "reader.batch_size_eval", .type = DRV_T_COUNT,
     FIELD(eval_batch), .min = 1, .max = 1ull << 32, .arg = "N",
     .help = "samples per evaluation step; by default the batch size"},
    {.flag = "read-threads", .key = "reader.read_threads", .type = DRV_T_COUNT,
     FIELD(read_threads), .min = 1, .max = 1024, .flags = DRV_OF_YMAIN | DRV_OF_YMAX,
     .arg = "N", .help = "reader threads; by default DLIO's for the format"},
    {.flag = "prefetch", .key = "reader.prefetch_size", .type = DRV_T_COUNT, FIELD(prefetch),
     .max = 65536, .flags = DRV_OF_YCLAMP, .def = "2", .arg = "N",
     .help = "batches read ahead, as PyTorch at least one per reader thread"},
    {.flag = "computation-time", .key = "train.computation_time", .type = DRV_T_TIME,
     FIELD(compute), .def = "0", .arg = "T",
     .help = "per step: seconds (0.323, 50ms) or a distribution: normal:MEAN,STDEV "
	     "uniform:MIN,MAX gamma:SHAPE,SCALE exponential:SCALE poisson:LAMBDA"},
    {.key = "train.computation_time_stdev", .type = DRV_T_STDEV, FIELD(compute)},
    {.flag = "eval-time", .key = "evaluation.eval_time", .type = DRV_T_TIME,
     FIELD(eval_compute), .arg = "T", .help = "per evaluation step, in the same forms"},
    {.key = "evaluation.eval_time_stdev", .type = DRV_T_STDEV, FIELD(eval_compute)},
    {.flag = "accelerator", .type = DRV_T_ENUM, FIELD(accel), .names = accels, .def = "sleep",
     .help = "compute by sleeping or on a GPU"},
    {.flag = "accelerator-type", .type = DRV_T_ARG, TOOL(accel_type), .arg = "TYPE",
     .help = "a100 h100 v100 b200: MLPerf Storage's computation time, batch, threads and AU "
	     "threshold for --workload"},
    {.flag = "workload", .type = DRV_T_ARG, TOOL(workload), .arg = "NAME",
     .help = "unet3d resnet50 cosmoflow; by default from the config"},
    {.flag = "file-shuffle", .key = "reader.file_shuffle", .type = DRV_T_ENUM,
     FIELD(file_shuffle), .names = shuffles, .def = "off",
     .help = "the files' order, per epoch"},
    {.flag = "sample-shuffle", .key = "reader.sample_shuffle", .type = DRV_T_ENUM,
     FIELD(sample_shuffle), .names = shuffles, .def = "off",
     .help = "the samples' order, per epoch"},
    {.flag = "seed", .key = "train.seed", .type = DRV_T_COUNT, FIELD(seed), .max = UINT64_MAX,
     .def = "123", .arg = "N", .help = "shuffle and compute-draw seed"},
    {.flag = "same-seed-every-epoch", .key = "train.seed_change_epoch", .type = DRV_T_BOOL,
     FIELD(seed_change_epoch), .value = 0, .def = "true",
     .help = "do not change the shuffle seed per epoch"},
    {.flag = "total-steps", .key = "train.total_training_steps", .type = DRV_T_COUNT,
     FIELD(total_steps), .min = 1, .max = UINT64_MAX, .flags = DRV_OF_YOFF, .arg = "N",
     .help = "stop after N training steps in all"},
    {.flag = "eval-every", .key = "evaluation.epochs_between_evals", .type = DRV_T_COUNT,
     FIELD(eval_every), .min = 1, .max = 1000000, .def = "1", .arg = "N",
     .help = "evaluate every N epochs, on the valid/ files"},
    {.flag = "eval-after", .key = "evaluation.eval_after_epoch", .type = DRV_T_COUNT,
     FIELD(eval_after), .max = 1000000, .def = "1", .arg = "N",
     .help = "first evaluation after epoch N"},
    {.flag = "no-eval", .key = "workflow.evaluation", .type = DRV_T_BOOL, FIELD(eval),
     .value = 0, .help = "no evaluation even if the config asks"},
    {.key = "workflow.checkpoint", .type = DRV_T_BOOL, FIELD(checkpoint), .value = 1},
    {.flag = "checkpoint-dir", .type = DRV_T_DIR, FIELD(checkpoint_dir), .flags = DRV_OF_CKPT,
     .arg = "DIR", .help = "write checkpoints there (fsynced)"},
    /* DLIO 2.0.0 reads checkpoint.model_size (utils/config.py; its shipped
     * unet3d: 499153191); later DLIO model.model_size_bytes. */
    {.flag = "checkpoint-size", .key = "checkpoint.model_size", .type = DRV_T_SIZE,
     FIELD(checkpoint_size), .flags = DRV_OF_CKPT, .def = "10240", .arg = "SIZE",
     .help = "model bytes per checkpoint; a DLIO workload file's checkpoint writes DLIO "
	     "2.0.0's files (model, optimizer, layers)"},
    {.key = "model.model_size_bytes", .type = DRV_T_SIZE, FIELD(checkpoint_size),
     .flags = DRV_OF_FALLBACK},
    /* Neither DLIO reads model.model_size (docs/dlio.md 4.7); a file that
     * has only it meant this size. */
    {.key = "model.model_size", .type = DRV_T_SIZE, FIELD(checkpoint_size),
     .flags = DRV_OF_FALLBACK,
     .ynote = "model.model_size read as the checkpoint size (%llu bytes); DLIO 2.0.0 reads "
	      "checkpoint.model_size and would write 10 KiB"},
    {.flag = "checkpoint-every-steps", .key = "checkpoint.steps_between_checkpoints",
     .type = DRV_T_COUNT, FIELD(ckpt_every_steps), .min = 1, .max = UINT64_MAX,
     .flags = DRV_OF_YOFF | DRV_OF_CKPT, .arg = "N", .help = "checkpoint every N steps"},
    {.flag = "checkpoint-every-epochs", .key = "checkpoint.epochs_between_checkpoints",
     .type = DRV_T_COUNT, FIELD(ckpt_every_epochs), .min = 1, .max = 1000000,
     .flags = DRV_OF_CKPT, .def = "1", .arg = "N",
     .help = "or every N epochs, instead of the config's steps"},
    {.flag = "checkpoint-after-epoch", .key = "checkpoint.checkpoint_after_epoch",
     .type = DRV_T_COUNT, FIELD(ckpt_after_epoch), .max = 1000000, .flags = DRV_OF_CKPT,
     .def = "1", .arg = "N", .help = "first checkpoint after epoch N"},
    /* DLIO's MB/s counts samples x record_length, whatever was read. */
    {.key = "dataset.record_length_bytes", .type = DRV_T_SIZE, FIELD(record_length)},
    {.key = "dataset.record_length", .type = DRV_T_SIZE, FIELD(record_length),
     .flags = DRV_OF_FALLBACK},
    /* DLIO's older `model: unet3d`, or model.name. */
    {.key = "model", .type = DRV_T_STRING, FIELD(model)},
    {.key = "model.name", .type = DRV_T_STRING, FIELD(model)},
    {.flag = "read-amplification", .type = DRV_T_ENUM, FIELD(amp), .names = amps,
     .def = "efficient",
     .help = "dlio: read as DLIO's Python readers do: whole-file formats and hdf5 opened per "
	     "sample (pytorch loader) or per file (tensorflow), npz through np.load's buffered "
	     "reads; the default for a DLIO workload file, efficient for a dliofs config"},
    {.flag = "data-loader", .key = "reader.data_loader", .type = DRV_T_ENUM, FIELD(iterative),
     .names = loaders, .flags = DRV_OF_YLAX, .def = "pytorch",
     .help = "which DLIO loader's reads --read-amplification dlio copies"},
    {.flag = "loader", .type = DRV_T_ENUM, FIELD(loader), .names = loader_names, .def = "dlio",
     .help = "whose I/O: dlio (DLIO 2.0.0, its loader from --data-loader) or mlperf-v3 "
	     "(MLPerf Storage v3's DLIO fork: files read whole by 64 threads a reader thread, "
	     "byte counts only; checkpoints in 32 MiB writes, read back by parallel 128 MiB "
	     "range reads)"},
    {.flag = "checkpoint-readers", .type = DRV_T_COUNT, FIELD(ckpt_readers), .min = 1,
     .max = 256, .def = "4", .arg = "N",
     .help = "with --loader mlperf-v3: threads reading a checkpoint back, each a contiguous "
	     "block (the fork's local file system: 4; mlpstorage's own default: 8)"},
    {.flag = "check-crc", .type = DRV_T_BOOL, FIELD(check_crc), .value = 1,
     .help = "verify record checksums: TFRecord's CRC-32C"},
    {.flag = "decode", .type = DRV_T_BOOL, FIELD(decode), .value = 1,
     .help = "decode images: JPEG with libjpeg, PNG with zlib"},
    {.flag = "io-size", .type = DRV_T_SIZE, FIELD(io_size), .min = 4096, .max = 256 * MiB,
     .def = "4MiB", .arg = "SIZE", .help = "read size for whole files and large samples"},
    {.flag = "transfer-size", .key = "reader.transfer_size", .type = DRV_T_SIZE,
     FIELD(transfer_size), .min = 4096, .max = 256 * MiB, .flags = DRV_OF_YNULL,
     .def = "256KiB", .arg = "SIZE", .help = "record stream buffer, as tf.data's"},
    {.flag = "odirect", .key = "reader.odirect", .type = DRV_T_BOOL, FIELD(odirect),
     .value = 1, .help = "O_DIRECT reads, not for record streams and hdf5"},
    {.flag = "fadvise-dontneed", .type = DRV_T_BOOL, FIELD(dontneed), .value = 1,
     .help = "drop each file from the page cache after reading it"},
    {.flag = "au-threshold", .key = "metric.au", .type = DRV_T_FRACTION, FIELD(au_threshold),
     .def = "0.90", .arg = "F", .help = "pass threshold"},
    {.flag = "warmup-steps", .key = "output.metric.exclude_start_steps", .type = DRV_T_COUNT,
     FIELD(skip_start), .max = 1000000, .flags = DRV_OF_YCLAMP, .def = "1", .arg = "N",
     .help = "steps per epoch left out of AU"},
    {.key = "output.metric.exclude_end_steps", .type = DRV_T_COUNT, FIELD(skip_end),
     .max = 1000000, .flags = DRV_OF_YCLAMP},
    {.flag = "h2d-size", .type = DRV_T_SIZE, FIELD(h2d_bytes), .arg = "SIZE",
     .help = "bytes copied to the GPU per step with cuda; by default a batch, at most 256MiB"},
    {.flag = "storage", .type = DRV_T_ENUM, FIELD(s3.storage), .names = storages, .def = "file",
     .help = "file: DIR's files; s3: the objects of --endpoint (DIR not needed), "
	     "every format read as whole objects in range GETs"},
    {.flag = "endpoint", .type = DRV_T_STRING, FIELD(s3.endpoint), .arg = "URL",
     .help = "with --storage s3: http://HOST:PORT (dliofs s3 serve, or any S3)"},
    {.flag = "bucket", .type = DRV_T_STRING, FIELD(s3.bucket), .arg = "NAME",
     .help = "with --storage s3: the bucket; by default the dataset's name"},
    {.flag = "access-key", .type = DRV_T_STRING, FIELD(s3.access_key), .arg = "KEY",
     .help = "with --storage s3: SigV4-sign with KEY and $AWS_SECRET_ACCESS_KEY; by "
	     "default $AWS_ACCESS_KEY_ID; none: unsigned requests"},
    {.flag = "region", .type = DRV_T_STRING, FIELD(s3.region), .def = "us-east-1",
     .arg = "NAME", .help = "with --storage s3: the region signed for"},
    {.flag = "s3-client", .type = DRV_T_ENUM, FIELD(s3.client), .names = s3clients,
     .def = "s3torchconnector",
     .help = "whose range GETs to copy: s3torchconnector (8 MiB parts, every object "
	     "ranged) or s3dlio (one GET below 32 MiB, 64 MiB ranges above)"},
    {.flag = "range-size", .type = DRV_T_SIZE, FIELD(s3.range), .max = 1ull << 40,
     .arg = "SIZE", .help = "with --storage s3: bytes per range GET instead of the client's"},
    {.flag = "s3-connections", .type = DRV_T_COUNT, FIELD(s3.conns), .min = 1, .max = 256,
     .def = "8", .arg = "N",
     .help = "with --storage s3: connections per reader thread (an object's ranges in "
	     "parallel)"},
    {.flag = "s3-verify", .type = DRV_T_BOOL, FIELD(s3.verify), .value = 1,
     .help = "with --storage s3: compare every byte with the config's generator"},
    {.flag = "json", .type = DRV_T_ARG, TOOL(json), .arg = "FILE",
     .help = "write the JSON report (- for stdout); {rank} in FILE is the rank, and ranks "
	     "running alone (no MPI) write FILE.RANK each"},
    {.flag = "trace-files", .type = DRV_T_ARG, TOOL(trace), .arg = "FILE",
     .help = "log every read: epoch split seq file sample offset bytes; {rank} in FILE is "
	     "the rank, else with several ranks FILE.RANK per rank"},
    {.flag = "checkpoint-workload", .type = DRV_T_BOOL, TOOL(ckpt_workload), .value = 1,
     .help = "run CFG's checkpoint section alone, as DLIO sizes it (model, optimizer, "
	     "layers; tensor/pipeline parallelism; rank_zero or all_ranks): write under DIR, "
	     "then read back, GB/s per rank and overall"},
    {.flag = "checkpoints", .type = DRV_T_COUNT, TOOL(checkpoints), .min = 1, .max = 1000000,
     .def = "1", .arg = "N", .help = "with --checkpoint-workload: checkpoints in a row"},
    {.flag = "quiet", .letter = 'q', .type = DRV_T_BOOL, TOOL(quiet), .value = 1,
     .help = "no table, no progress bar"},
    {.flag = "help", .letter = 'h', .type = DRV_T_HELP, .help = "this text"},
    {.flag = "version", .type = DRV_T_VERSION, .help = "version, and whether MPI is built in"},
};

/* clang-format on */

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
_Static_assert(NOPTS <= DRV_OPTS_MAX, "raise DRV_OPTS_MAX");

const struct drv_opt *drv_opts(size_t *n)
{
	*n = NOPTS;
	return opts;
}

/* ---- which options were given ---- */

void drv_optset_add(struct drv_optset *s, const struct drv_opt *o)
{
	size_t i = (size_t)(o - opts);

	s->bits[i / 64] |= 1ull << (i % 64);
}

static int has(const struct drv_optset *s, size_t i) { return s->bits[i / 64] >> (i % 64) & 1; }

void drv_optset_or(struct drv_optset *d, const struct drv_optset *s)
{
	for (size_t i = 0; i < DRV_OPTS_MAX / 64; i++)
		d->bits[i] |= s->bits[i];
}

int drv_optset_empty(const struct drv_optset *s)
{
	for (size_t i = 0; i < DRV_OPTS_MAX / 64; i++)
		if (s->bits[i])
			return 0;
	return 1;
}

int drv_given(const struct drv_optset *s, size_t off)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].off == off && opts[i].size && has(s, i))
			return 1;
	return 0;
}

int drv_given_any(const struct drv_optset *s, unsigned f)
{
	for (size_t i = 0; i < NOPTS; i++)
		if ((opts[i].flags & f) && has(s, i))
			return 1;
	return 0;
}

/* A run parameter (not one of the tool's own fields). */
static int is_param(const struct drv_opt *o)
{
	return o->size && o->off + o->size <= sizeof(struct drv_params);
}

void drv_params_merge(struct drv_params *d, const struct drv_params *s,
		      const struct drv_optset *set)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (has(set, i) && is_param(&opts[i]))
			memcpy((char *)d + opts[i].off, (const char *)s + opts[i].off,
			       opts[i].size);
}

/* ---- values ---- */

void drv_opt_expected(const struct drv_opt *o, char *buf, size_t len)
{
	size_t n = 0, k = 0, j = 0;

	for (const struct drv_name *nm = o->names; nm && nm->name; nm++)
		n += !nm->yaml_only;
	buf[0] = 0;
	for (const struct drv_name *nm = o->names; nm && nm->name && j < len; nm++) {
		if (nm->yaml_only)
			continue;
		k++;
		j += (size_t)snprintf(buf + j, len - j, "%s%s",
				      k == 1   ? ""
				      : k == n ? " or "
					       : ", ",
				      nm->name);
	}
}

/* "4KiB": a power-of-two size as --help writes it. */
static void size_name(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = {"", "KiB", "MiB", "GiB"};
	unsigned u = 0;

	while (u < 3 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)v, unit[u]);
}

static void store_u64(const struct drv_opt *o, void *field, uint64_t v)
{
	if (o->size == sizeof(unsigned))
		*(unsigned *)field = (unsigned)v;
	else
		*(uint64_t *)field = v;
}

/* The value s of option o into its field (a command-line argument or a
 * default). 0, or -EINVAL with the reason in why. */
static int parse_value(const struct drv_opt *o, const char *s, void *field, char *why, size_t len)
{
	const char *w = NULL;
	uint64_t v;
	char a[32], b[32];

	switch (o->type) {
	case DRV_T_COUNT:
		if (dl_parse_count(s, &v, &w))
			break;
		if (v < o->min || v > o->max) {
			snprintf(why, len, "must be between %llu and %llu",
				 (unsigned long long)o->min, (unsigned long long)o->max);
			return -EINVAL;
		}
		store_u64(o, field, v);
		return 0;
	case DRV_T_SIZE:
		if (dl_parse_size(s, &v, &w))
			break;
		if (o->min && (v < o->min || v > o->max || v % o->min)) {
			size_name(o->min, a, sizeof(a));
			size_name(o->max, b, sizeof(b));
			snprintf(why, len, "must be a multiple of %s up to %s", a, b);
			return -EINVAL;
		}
		store_u64(o, field, v);
		return 0;
	case DRV_T_TIME:
		if (drv_dist_parse(s, field, &w))
			break;
		return 0;
	case DRV_T_FRACTION: {
		char *end;
		double f = strtod(s, &end);
		if (*end || end == s || !(f >= 0 && f <= 1)) {
			w = "expected a fraction in [0, 1]";
			break;
		}
		*(double *)field = f;
		return 0;
	}
	case DRV_T_BOOL: /* a default */
		*(int *)field = !strcmp(s, "true");
		return 0;
	case DRV_T_ENUM:
		for (const struct drv_name *nm = o->names; nm->name; nm++) {
			if (!nm->yaml_only && !strcasecmp(s, nm->name)) {
				*(int *)field = nm->value;
				return 0;
			}
		}
		drv_opt_expected(o, b, sizeof(b));
		snprintf(why, len, "expected %s", b);
		return -EINVAL;
	case DRV_T_STRING:
		snprintf(field, o->size, "%s", s);
		return 0;
	case DRV_T_DIR:
		if (strlen(s) >= o->size - 64) {
			w = "path too long";
			break;
		}
		snprintf(field, o->size, "%s", s);
		return 0;
	case DRV_T_ARG:
		*(const char **)field = s;
		return 0;
	default:
		break;
	}
	snprintf(why, len, "%s", w ? w : "invalid value");
	return -EINVAL;
}

/* The batch size and reader threads come from the format's read hints:
 * what the MLPerf/DLIO workload of that format uses (unet3d for npz/npy,
 * resnet50-like for tfrecord, retinanet for images, ...). The run clamps a
 * default batch to the dataset when the dataset is smaller. */
void drv_params_defaults(struct drv_params *p, const struct dl_read_hints *h)
{
	char why[128];

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].def && is_param(&opts[i]) &&
		    parse_value(&opts[i], opts[i].def, (char *)p + opts[i].off, why, sizeof(why)))
			/* the table's own default: tests/unit/tools/drive/test_drive.c parses them all */
			abort();
	p->batch = h && h->batch ? h->batch : 64;
	p->read_threads = h && h->read_threads ? h->read_threads : 4;
	p->eval_batch = p->batch;
}

/* ---- --help and the command line: the engine's (tool_opts_i.h) ---- */

/* The engine's rows for the table's flags: each help line with DLIO's key
 * and the default where a flag takes a value, an enum's argument its names. */
struct view {
	struct tool_opt row[NOPTS];
	char help[NOPTS][512];
	char names[NOPTS][96];
	struct tool_opts t;
};

static int take(void *ctx, const struct tool_opt *r, const char *arg);
static void usage(FILE *f, const struct tool_opts *t);

static void view_init(struct view *v)
{
	size_t k = 0;

	for (size_t i = 0; i < NOPTS; i++) {
		const struct drv_opt *o = &opts[i];
		const char *arg = o->arg, *def = o->type == DRV_T_BOOL ? NULL : o->def;
		char *names = v->names[k];

		if (!o->flag)
			continue;
		names[0] = 0;
		if (o->type == DRV_T_ENUM) {
			for (const struct drv_name *nm = o->names; nm->name; nm++)
				if (!nm->yaml_only)
					snprintf(names + strlen(names),
						 sizeof(v->names[k]) - strlen(names), "%s%s",
						 names[0] ? "|" : "", nm->name);
			arg = names;
		}
		snprintf(v->help[k], sizeof(v->help[k]), "%s%s%s%s%s%s%s", o->help ? o->help : "",
			 o->key || def ? (o->help ? " (" : "(") : "", o->key ? o->key : "",
			 o->key && def ? "; " : "", def ? "default " : "", def ? def : "",
			 o->key || def ? ")" : "");
		v->row[k] = (struct tool_opt){
		    .name = o->flag,
		    .letter = o->letter,
		    .kind = o->type == DRV_T_HELP ? TOOL_OPT_HELP : TOOL_OPT_CALL,
		    .arg = o->type == DRV_T_BOOL || o->type == DRV_T_HELP ||
				   o->type == DRV_T_VERSION
			       ? NULL
			       : arg,
		    .help = v->help[k],
		    .set = take,
		    .data = o,
		};
		k++;
	}
	v->t = (struct tool_opts){.prog = "dlio-drive", .col = 28, .opt = v->row, .n = k,
				  .usage_on_error = 1, .usage = usage};
}

static void usage(FILE *f, const struct tool_opts *t)
{
	char keys[512] = "";

	fputs("usage: dlio-drive --config CFG DIR [options]\n"
	      "Replays a training job's reads from DIR/<dataset>/ and reports accelerator\n"
	      "utilization (AU), stalls, samples/s and MB/s as MLPerf Storage does.\n"
	      "A DLIO workload file sets an option by the key in its parentheses; the\n"
	      "command line wins over MLPerf Storage's table, which wins over the file.\n\n",
	      f);
	tool_opts_list(f, t);
	for (size_t i = 0; i < NOPTS; i++)
		if (!opts[i].flag)
			snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s%s",
				 keys[0] ? ", " : "", opts[i].key);
	fputs("\nAlso read from a DLIO workload file:", f);
	fputc('\n', f);
	fprintf(f, "%*s", 2, "");
	tool_opts_wrap(f, keys, 2);
	fputs("\nRanks: under mpirun (mpirun -np N dlio-drive ...) each process is one\n"
	      "accelerator, as in DLIO 2.0.0: rank r reads samples [r*ceil(T/N), (r+1)*ceil(T/N))\n"
	      "(tfrecord: files r, r+N, ...), every step ends with an all-reduce, and rank 0\n"
	      "reports for the job (samples/s summed, AU the mean over ranks). Without MPI\n"
	      "(--rank R --ranks N by hand, or a launcher of another MPI) rank R reads the\n"
	      "same shard alone and reports it; sum the ranks' reports for the job.\n"
	      "\n"
	      "Exit status: 0 the run completed (pass or fail is in the report), 1 it\n"
	      "stopped on an I/O error, 2 bad arguments or config, 3 no usable CUDA.\n",
	      f);
}

void drv_usage(FILE *f)
{
	struct view v;

	view_init(&v);
	usage(f, &v.t);
}

static int bad(const char *flag, const char *val, const char *why)
{
	fprintf(stderr, "dlio-drive: --%s %s: %s\n", flag, val, why);
	return -EINVAL;
}

/* One option with argument arg (NULL: a flag). 0, 1 (--version said all)
 * or -EINVAL (said). */
static int take(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct drv_cli *c = ctx;
	const struct drv_opt *o = r->data;
	char why[160], mpi[160];
	void *field = (char *)c + o->off;

	switch (o->type) {
	case DRV_T_VERSION:
		drv_comm_describe(mpi, sizeof(mpi));
		printf("dlio-drive %s (%s)\n", DLIOFS_VERSION, mpi);
		return 1;
	case DRV_T_BOOL:
		*(int *)field = o->value;
		break;
	default:
		if (parse_value(o, arg, field, why, sizeof(why)))
			return bad(o->flag, arg, why);
	}
	drv_optset_add(&c->given, o);
	return 0;
}

int drv_cli_parse(int argc, char **argv, struct drv_cli *c)
{
	struct view v;
	int next, ret;

	memset(c, 0, sizeof(*c));
	view_init(&v);
	if ((ret = tool_opts_parse(&v.t, argc, argv, 1, c, &next)))
		return ret > 0 ? 1 : -EINVAL;
	/* S3 reads objects from --endpoint: a DIR would go unused (a checkpoint
	 * workload still writes into one). */
	if (c->p.s3.storage == DRV_STORAGE_S3 && next == argc && c->config && !c->ckpt_workload)
		return 0; /* c->dir: --data-dir's, if given */
	/* DIR as an operand or --data-dir, not both. */
	if (c->dir && next < argc) {
		fprintf(stderr, "dlio-drive: DIR %s and --data-dir %s: give one\n", argv[next],
			c->dir);
		return -EINVAL;
	}
	if (c->dir && c->config && next == argc)
		return 0;
	if (next + 1 != argc || !c->config) {
		fprintf(stderr, "dlio-drive: %s\n",
			!c->config ? "--config CFG is required" : "exactly one DIR is required");
		drv_usage(stderr);
		return -EINVAL;
	}
	c->dir = argv[next];
	return 0;
}
