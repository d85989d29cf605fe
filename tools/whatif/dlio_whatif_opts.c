/* The command line sweep and search share:
 *   VERB CONFIG [--set K=V,...] [--vary K=LO..HI] [--repeat R] [--warmup W]
 *        [--jobs N] [--json F] [--plot F.png] [--metric M] [--target T]
 *        [--workload NAME] [--mount DIR] [--trace DIR] [--keep] [-q] -- JOB...
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
			fprintf(stderr,
				"dlio-whatif: --metric '%s': one of au, wait_share, "
				"samples_per_s, mb_per_s, run_s, cache_hit_bytes, "
				"cache_hit_requests\n",
				arg);
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

/* sweep's and search's: the help is the verb's text (wi_sweep_help,
 * wi_search_help), which says each of these in its own words. */
#define ROW(n, c, a) {.name = n, .kind = TOOL_OPT_CALL, .set = set_one, .value = c, .arg = a}
static const struct tool_opt wi_opt[] = {
    ROW("set", 's', "KEY=V1,V2,..."),
    ROW("vary", 'v', "KEY=LOW..HIGH"),
    ROW("repeat", 'r', "R"),
    ROW("warmup", 'w', "W"),
    ROW("jobs", 'n', "N"),
    ROW("json", 'j', "FILE"),
    ROW("plot", 'p', "FILE.png"),
    ROW("metric", 'M', "M"),
    ROW("target", 'T', "EXPR"),
    ROW("workload", 'W', "NAME"),
    ROW("mount", 'm', "DIR"),
    ROW("trace", 't', "DIR"),
    ROW("resolution", 'R', "PCT"),
    ROW("keep", 'k', NULL),
    {.name = "quiet", .letter = 'q', .kind = TOOL_OPT_CALL, .set = set_one, .value = 'q'},
    ROW("progress", 'P', NULL),
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
#undef ROW

int wi_opts_parse(int argc, char **argv, const char *verb, const char *help, struct wi_opts *o)
{
	char hint[96];
	struct tool_opts t = {.prog = "dlio-whatif", .head = help, .hint = hint, .opt = wi_opt,
			      .n = TOOL_OPTS_N(wi_opt)};
	int dd, next, ret, range_axes = 0;

	memset(o, 0, sizeof(*o));
	o->verb = verb;
	o->repeat = 1;
	o->jobs = 1;
	o->metric = -1;
	o->resolution = 0.05;
	for (dd = 1; dd < argc && strcmp(argv[dd], "--"); dd++)
		if (!strcmp(argv[dd], "-h") || !strcmp(argv[dd], "--help")) {
			fputs(help, stdout);
			return 1;
		}
	snprintf(hint, sizeof(hint), "(dlio-whatif %s --help lists the options)\n", verb);
	if ((ret = tool_opts_parse(&t, dd, argv, 1, o, &next)))
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
