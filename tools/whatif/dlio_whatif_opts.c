/* The command line sweep and search share:
 *   VERB CONFIG [--set K=V,...] [--vary K=LO..HI] [--repeat R] [--warmup W]
 *        [--jobs N] [--json F] [--plot F.png] [--metric M] [--target T]
 *        [--workload NAME] [--mount DIR] [--trace DIR] [--keep] [-q]
 *        [--nodes N [--launcher 'CMD' --mountpoint DIR]] -- JOB...
 * Options are read up to the "--"; what follows is the job, untouched. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dlio_whatif_i.h"
#include "dliofs/clock.h"
#include "tool_opts_i.h"

static int parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "dlio-whatif: %s '%s': expected a whole number from %u to %u\n",
			opt, s, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

static int add_axis(struct wi_opts *o, const char *opt, const char *arg, int range)
{
	struct wi_axis *ax;

	if (o->grid.nax == WI_MAX_AXES) {
		fprintf(stderr, "dlio-whatif: at most %d keys\n", WI_MAX_AXES);
		return -EINVAL;
	}
	ax = &o->grid.ax[o->grid.nax];
	if (wi_axis_parse(opt, arg, range, ax))
		return -EINVAL;
	for (unsigned a = 0; a < o->grid.nax; a++) {
		if (!strcmp(o->grid.ax[a].key, ax->key)) {
			fprintf(stderr, "dlio-whatif: %s %s: the key is given twice\n", opt,
				ax->key);
			return -EINVAL;
		}
	}
	o->grid.nax++;
	return 0;
}

static int parse_resolution(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || (*end && strcmp(end, "%")) || !(v > 0)) {
		fprintf(stderr, "dlio-whatif: --resolution '%s': expected a percentage (5%%)\n", s);
		return -EINVAL;
	}
	*out = *end == '%' || v >= 1 ? v / 100 : v;
	return 0;
}

static int one_opt(struct wi_opts *o, int c, const char *arg)
{
	switch (c) {
	case 's':
		return add_axis(o, "--set", arg, 0);
	case 'v':
		return add_axis(o, "--vary", arg, 1);
	case 'r':
		return parse_uint("--repeat", arg, 1, 1000, &o->repeat);
	case 'w':
		return parse_uint("--warmup", arg, 0, 100, &o->warmup);
	case 'n':
		return parse_uint("--jobs", arg, 1, WI_MAX_COPIES, &o->jobs);
	case 'j':
		o->json = arg;
		return 0;
	case 'p':
		o->plot = arg;
		return 0;
	case 'M':
		o->metric = wi_metric_find(arg);
		if (o->metric < 0) {
			char names[512];
			wi_metric_names(names, sizeof(names));
			fprintf(stderr, "dlio-whatif: --metric '%s': one of %s\n", arg, names);
			return -EINVAL;
		}
		return 0;
	case 'T':
		o->target_text = arg;
		return 0;
	case 'W':
		o->workload = arg;
		return 0;
	case 'm':
		o->mount = arg;
		return 0;
	case 't':
		mkdir(arg, 0755);
		if (!realpath(arg, o->trace_dir)) {
			fprintf(stderr, "dlio-whatif: --trace %s: %s\n", arg, strerror(errno));
			return -errno;
		}
		return 0;
	case 'R':
		return parse_resolution(arg, &o->resolution);
	case 'k':
		o->keep = 1;
		return 0;
	case 'q':
		o->quiet = 1;
		return 0;
	case 'P':
		o->progress = 1;
		return 0;
	case 'N':
		return parse_uint("--nodes", arg, 1, WI_MAX_NODES, &o->nodes);
	case 'L':
		o->launcher = arg;
		return 0;
	case 'D':
		o->mountpoint = arg;
		return 0;
	}
	return -EINVAL;
}

/* The workload MLPerf's thresholds are looked up by: --workload, the job's
 * own --workload, else the config's file name (unet3d_a100.yaml). */
static const char *workload_of(const struct wi_opts *o)
{
	const char *b;

	if (o->workload)
		return o->workload;
	for (size_t i = 0; o->argv[i]; i++)
		if (!strcmp(o->argv[i], "--workload") && o->argv[i + 1])
			return o->argv[i + 1];
	b = strrchr(o->config, '/');
	return b ? b + 1 : o->config;
}

static int finish(struct wi_opts *o, int range_axes)
{
	if (!o->nodes && (o->launcher || o->mountpoint)) {
		fprintf(stderr, "dlio-whatif %s: %s is for a cluster: give --nodes N too\n",
			o->verb, o->launcher ? "--launcher" : "--mountpoint");
		return -EINVAL;
	}
	if (o->nodes && !o->launcher) {
		const char *l = getenv("DLIO_WHATIF_LAUNCHER");

		o->launcher = l && *l ? l : NULL;
	}
	if (!strcmp(o->verb, "sweep") && range_axes) {
		fprintf(stderr, "dlio-whatif sweep: --vary is search's; give --set lists\n");
		return -EINVAL;
	}
	if (!strcmp(o->verb, "sweep") && !o->grid.nax) {
		fprintf(stderr, "dlio-whatif sweep: nothing to sweep (--set KEY=V1,V2,...)\n");
		return -EINVAL;
	}
	if (!strcmp(o->verb, "search") && range_axes != 1) {
		fprintf(stderr, "dlio-whatif search: give exactly one --vary KEY=LOW..HIGH "
				"(the other keys fixed: --vary KEY=VALUE[,VALUE...])\n");
		return -EINVAL;
	}
	if (!strcmp(o->verb, "search") && !o->target_text) {
		fprintf(stderr, "dlio-whatif search: --target is needed (au>=0.90, au>=mlperf, "
				"wait_share<=0.10, samples_per_s>=X)\n");
		return -EINVAL;
	}
	if (o->target_text) {
		if (wi_target_parse(o->target_text, workload_of(o), &o->target))
			return -EINVAL;
		o->have_target = 1;
	}
	return 0;
}

static int set_one(void *ctx, const struct tool_opt *r, const char *arg)
{
	return one_opt(ctx, r->value, arg);
}

/* sweep's and search's tables: the same options (one parser, one_opt),
 * each verb's --help lines its own; a row without one is not listed. */
#define ROW(n, c, a, h) {.name = n, .kind = TOOL_OPT_CALL, .set = set_one, .value = c, .arg = a, .help = h}
/* clang-format off */
static const struct tool_opt sweep_opt[] = {
    ROW("set", 's', "KEY=V1,V2,...",
	"pacer keys as `dliofs set` takes them: read.bandwidth=\n"
	"100MB/s,1GB/s; read.latency=1ms,lognormal(1ms,10ms);\n"
	"cache.size=8GiB,64GiB (dliofs --help lists every key)"),
    ROW("repeat", 'r', "R", "measured runs per point (default 1)"),
    ROW("warmup", 'w', "W", "runs per point before those, discarded (default 0)"),
    ROW("jobs", 'n', "N",
	"N copies of JOB at once on the same mount (N users\n"
	"on one node): each copy and the total are reported"),
    ROW("json", 'j', "FILE",
	"every run of every point, and per point the mean, min,\n"
	"max and standard deviation of each figure"),
    ROW("plot", 'p', "FILE.png",
	"the metric against each swept key, min-max bars,\n"
	"the target as a line"),
    ROW("metric", 'M', "M",
	"au | wait_share | samples_per_s | mb_per_s | run_s |\n"
	"wait_p90_s | cache_hit_bytes | cache_hit_requests\n"
	"(default: au for dlio-drive, wait_share otherwise)"),
    ROW("target", 'T', "EXPR",
	"mark the points that meet it: au>=0.90, au>=mlperf,\n"
	"wait_share<=0.10, samples_per_s>=500"),
    ROW("workload", 'W', "NAME",
	"for au>=mlperf (default: the job's --workload, else\n"
	"the config's file name): unet3d, resnet50, cosmoflow"),
    ROW("mount", 'm', "DIR", "run on this dliofs mount instead of fresh ones"),
    ROW("trace", 't', "DIR",
	"trace every run into DIR/pP-rR.trace, with the job's\n"
	"figures beside it (.trace.json): input for predict"),
    ROW("keep", 'k', NULL, "keep the runs' logs and reports (the path is said)"),
    {.name = "quiet", .letter = 'q', .kind = TOOL_OPT_CALL, .set = set_one, .value = 'q',
     .help = "no progress line (it is drawn only when stderr is a\nterminal)"},
    ROW("progress", 'P', NULL, "a progress line per run even into a file or a pipe"),
    ROW("nodes", 'N', "N",
	"a cluster of N mounts sharing one storage model (the\n"
	"config's limits are the cluster's), the job (dlio-drive)\n"
	"one rank per mount under mpirun; each point set on\n"
	"every node; the total and each node reported"),
    ROW("launcher", 'L', "'CMD'",
	"what starts one process per node on a real allocation\n"
	"('srun --overlap -N 4 --ntasks-per-node=1', 'mpirun -np\n"
	"4 -H a,b,c,d'; default $DLIO_WHATIF_LAUNCHER, else\n"
	"mpirun -np N on this machine)"),
    ROW("mountpoint", 'D', "DIR",
	"with --launcher: each node's mountpoint, the same\n"
	"directory on every node ({rank} in it: the node's rank)"),
    ROW("vary", 'v', "KEY=LOW..HIGH", NULL),
    ROW("resolution", 'R', "R", NULL),
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};

static const struct tool_opt search_opt[] = {
    ROW("target", 'T', "EXPR",
	"au>=0.90 | au>=90% | au>=mlperf (unet3d and resnet50 90%,\n"
	"cosmoflow 70%, by the workload's name) | wait_share<=0.10 |\n"
	"samples_per_s>=X | mb_per_s>=X | run_s<=X |\n"
	"wait_p90_s<=X (a step's wait for data, 90th percentile)"),
    ROW("resolution", 'R', "R", "relative width of the final bracket (default 5%)"),
    ROW("set", 's', "KEY=V1,V2,...", NULL),
    ROW("vary", 'v', "KEY=LOW..HIGH", NULL),
    ROW("repeat", 'r', "R", NULL),
    ROW("warmup", 'w', "W", NULL),
    ROW("jobs", 'n', "N", NULL),
    ROW("json", 'j', "FILE", NULL),
    ROW("plot", 'p', "FILE.png", NULL),
    ROW("metric", 'M', "M", NULL),
    ROW("workload", 'W', "NAME", NULL),
    ROW("mount", 'm', "DIR", NULL),
    ROW("trace", 't', "DIR", NULL),
    ROW("keep", 'k', NULL, NULL),
    {.name = "quiet", .letter = 'q', .kind = TOOL_OPT_CALL, .set = set_one, .value = 'q'},
    ROW("progress", 'P', NULL, NULL),
    ROW("nodes", 'N', "N", NULL),
    ROW("launcher", 'L', "'CMD'", NULL),
    ROW("mountpoint", 'D', "DIR", NULL),
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */
#undef ROW

static const struct tool_opts sweep_opts = {
    .prog = "dlio-whatif sweep",
    .head =
	"usage: dlio-whatif sweep CONFIG --set KEY=V1,V2,... [--set KEY=...] [options] -- JOB...\n"
	"\n"
	"Mount CONFIG (a dliofs config or a DLIO workload file, with its storage model)\n"
	"and run JOB at every point of the grid of --set values (their product), each\n"
	"run cold: a fresh mount per run (with --mount: settings applied, caches\n"
	"dropped, statistics reset). {mount} in JOB is replaced by the mountpoint.\n"
	"JOB is dlio-drive (its --json gives AU, samples/s, stall), or any command,\n"
	"run under `dlio-stall run` so that an unmodified PyTorch/TensorFlow script's\n"
	"data-wait share, step time and samples/s are known.\n"
	"\n",
    .tail =
	"\n"
	"example:\n"
	"  dlio-whatif sweep job.yaml --set read.bandwidth=100MB/s,500MB/s,2GB/s \\\n"
	"      --repeat 3 --warmup 1 --plot bw.png -- dlio-drive --config job.yaml {mount}\n",
    .col = 23,
    .opt = sweep_opt,
    .n = TOOL_OPTS_N(sweep_opt),
    .hint = "(dlio-whatif sweep --help lists the options)\n",
};

static const struct tool_opts search_opts = {
    .prog = "dlio-whatif search",
    .head =
	"usage: dlio-whatif search CONFIG --vary KEY=LOW..HIGH --target EXPR\n"
	"        [--vary KEY2=V[,V...]] [--resolution 5%] [options] -- JOB...\n"
	"\n"
	"Find the least demanding KEY in [LOW, HIGH] at which JOB meets the target,\n"
	"by bisection on a log scale to the resolution (the answer and the next\n"
	"value that failed differ by at most that much). \"Least demanding\" is the\n"
	"lowest bandwidth, IOPS, queue depth or cache size, or the highest latency.\n"
	"Other --vary keys with values are fixed: one search per combination.\n"
	"\n",
    .tail =
	"  --repeat, --warmup, --jobs, --json, --plot, --workload, --mount, --trace,\n"
	"  --keep, -q, --progress, --nodes, --launcher, --mountpoint\n"
	"                   as for sweep (dlio-whatif sweep --help)\n"
	"\n"
	"example:\n"
	"  dlio-whatif search job.yaml --vary read.bandwidth=10MB/s..10GB/s \\\n"
	"      --target au>=0.90 -- dlio-drive --config job.yaml {mount}\n"
	"  -> needs read bandwidth >= 740 MB/s (AU 90.4% at 740 MB/s, 86.1% at 705 MB/s)\n",
    .col = 19,
    .opt = search_opt,
    .n = TOOL_OPTS_N(search_opt),
    .hint = "(dlio-whatif search --help lists the options)\n",
};

int wi_opts_parse(int argc, char **argv, const char *verb, struct wi_opts *o)
{
	const struct tool_opts *t = !strcmp(verb, "search") ? &search_opts : &sweep_opts;
	int dd, next, ret, range_axes = 0;

	memset(o, 0, sizeof(*o));
	o->verb = verb;
	o->repeat = 1;
	o->jobs = 1;
	o->metric = -1;
	o->resolution = 0.05;
	for (dd = 1; dd < argc && strcmp(argv[dd], "--"); dd++)
		if (!strcmp(argv[dd], "-h") || !strcmp(argv[dd], "--help")) {
			tool_opts_usage(stdout, t);
			return 1;
		}
	if ((ret = tool_opts_parse(t, dd, argv, 1, o, &next)))
		return ret > 0 ? 1 : -EINVAL;
	if (next + 1 != dd) {
		fprintf(stderr,
			"dlio-whatif %s: expected one CONFIG (a dliofs config or a DLIO "
			"workload file), then -- and the job\n",
			verb);
		return -EINVAL;
	}
	o->config = argv[next];
	if (dd + 1 >= argc) {
		fprintf(stderr,
			"dlio-whatif %s: no job to run (after --: dlio-drive ... {mount}, "
			"or python train.py --data {mount})\n",
			verb);
		return -EINVAL;
	}
	o->argv = argv + dd + 1;
	for (unsigned a = 0; a < o->grid.nax; a++)
		range_axes += o->grid.ax[a].range;
	return finish(o, range_axes);
}

int wi_opts_metric(const struct wi_opts *o, const struct wi_env *e)
{
	if (o->metric >= 0)
		return o->metric;
	if (o->have_target)
		return o->target.metric;
	return e->kind == WI_JOB_DRIVE ? WI_M_AU : WI_M_WAIT;
}

int wi_measure(struct wi_env *e, const struct wi_kv *kv, unsigned n, const char *tag, size_t done,
	       size_t total, const char *what, struct wi_run *run)
{
	int ret;

	if (!e->quiet)
		wi_progress(e, done, total, what);
	ret = wi_run_once(e, kv, n, tag, run);
	if (ret == -EINTR) {
		wi_progress_end(e);
		return ret;
	}
	if (ret || !run->ok) {
		wi_progress_end(e);
		fprintf(stderr, "dlio-whatif: run %s (%s) failed%s%s\n", tag, what,
			run->note[0] ? ": " : "", run->note);
		/* A job that failed: its log, which the note points into, is kept.
		 * A mount that failed has said all it had to say above. */
		if (ret != -EIO)
			e->keep = 1;
	}
	return ret;
}
