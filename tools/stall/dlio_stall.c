/* dlio-stall: DS-Analyzer's data-stall answer for an unmodified PyTorch or
 * TensorFlow job.
 *
 *   dlio-stall run  [options] -- python train.py ...
 *   dlio-stall diff [options] -- python train.py ...
 *
 * `run` injects a Python hook that times every wait for the next batch, and a
 * CUPTI library that records when the GPU is busy, then reports the data-wait
 * share, the GPU idle time explained by input waits and what the dliofs mount
 * served meanwhile. `diff` runs the job three ways (batches replayed from
 * memory; data cached with the storage model off; as configured, cold) and
 * splits the stall into prep and fetch by differencing. */
#include <errno.h>
#include <sched.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stall_i.h"
#include "dliofs/subst.h"
#include "tool_opts_i.h"
#include "tool_path_i.h"
#include "tool_progress_i.h"
#include "tool_stop_i.h"

struct opts {
	const char *cmd;
	const char *mount, *data, *json, *plot, *cupti;
	size_t warmup;
	int interval_ms, replay, cold, keep, quiet;
	unsigned nworkers, workers[ST_CPU_MAX]; /* diff --workers */
	char **argv;
	struct tool_progress *pl; /* diff's steps, on a terminal */
};

static int parse_num(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "1,2,4": 1 to ST_CPU_MAX distinct counts from 1 to 4096. */
static int parse_workers(const char *s, struct opts *o)
{
	char buf[256], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	o->nworkers = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long v;

		if (o->nworkers == ST_CPU_MAX || parse_num(t, 1, 4096, &v))
			return -EINVAL;
		for (unsigned i = 0; i < o->nworkers; i++)
			if (o->workers[i] == (unsigned)v)
				return -EINVAL;
		o->workers[o->nworkers++] = (unsigned)v;
	}
	return o->nworkers ? 0 : -EINVAL;
}

static int set_workers(void *ctx, const struct tool_opt *r, const char *arg)
{
	(void)r;
	if (parse_workers(arg, ctx)) {
		fprintf(stderr,
			"dlio-stall: --workers '%s': expected distinct worker counts "
			"from 1 to 4096, comma-separated, at most %d\n",
			arg, ST_CPU_MAX);
		return -EINVAL;
	}
	return 0;
}

/* --warmup, --interval, --replay: a whole number from .min to 1000000. */
static int set_num(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct opts *o = ctx;
	long v;

	if (parse_num(arg, (long)r->min, 1000000, &v)) {
		fprintf(stderr, "dlio-stall: bad number '%s'\n", arg);
		return -EINVAL;
	}
	if (r->value == 'w')
		o->warmup = (size_t)v;
	else if (r->value == 'i')
		o->interval_ms = (int)v;
	else
		o->replay = (int)v;
	return 0;
}

#define OFF(f) offsetof(struct opts, f)

/* clang-format off */
static const struct tool_opt stall_opt[] = {
	{.name = "mount", .kind = TOOL_OPT_STR, .off = OFF(mount), .arg = "DIR",
	 .help = "dliofs mountpoint the job reads"},
	{.name = "data", .kind = TOOL_OPT_STR, .off = OFF(data), .arg = "PATH",
	 .help = "what diff/--cold drop and warm (default: the whole mount)"},
	{.name = "json", .kind = TOOL_OPT_STR, .off = OFF(json), .arg = "FILE",
	 .help = "write the report as JSON"},
	{.name = "plot", .kind = TOOL_OPT_STR, .off = OFF(plot), .arg = "FILE.png",
	 .help = "timeline of steps, GPU busy and mount throughput"},
	{.name = "warmup", .kind = TOOL_OPT_CALL, .set = set_num, .value = 'w', .min = 0,
	 .arg = "N", .help = "first steps left out of the figures (default 2)"},
	{.name = "interval", .kind = TOOL_OPT_CALL, .set = set_num, .value = 'i', .min = 1,
	 .arg = "MS", .help = "mount statistics sampling period (default 200)"},
	{.name = "cold", .kind = TOOL_OPT_FLAG, .off = OFF(cold), .value = 1,
	 .help = "(run) drop the mount's caches first"},
	{.name = "replay", .kind = TOOL_OPT_CALL, .set = set_num, .value = 'r', .min = 1,
	 .arg = "K", .help = "(diff) batches cached for the compute-only run (default 4)"},
	{.name = "workers", .kind = TOOL_OPT_CALL, .set = set_workers, .arg = "W1,W2",
	 .help = "(diff) the CPU what-if: the prep run again at each loader\n"
		 "worker count (the three runs use W1), told to the job by\n"
		 "{workers} in its arguments and $DLIO_STALL_WORKERS; the\n"
		 "prep ceiling P is fitted against workers and cores and\n"
		 "predicted for more of both"},
	{.name = "cupti", .kind = TOOL_OPT_STR, .off = OFF(cupti), .arg = "PATH|off",
	 .help = "CUPTI injection library (default $DLIO_CUPTI_LIB, else\n"
		 "libdlio_cupti.so next to dlio-stall)"},
	{.name = "keep", .kind = TOOL_OPT_FLAG, .off = OFF(keep), .value = 1,
	 .help = "keep the working directory with the raw records"},
	{.name = "quiet", .letter = 'q', .kind = TOOL_OPT_FLAG, .off = OFF(quiet), .value = 1,
	 .help = "no terminal report"},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */

static const struct tool_opts stall_opts = {
	.prog = "dlio-stall",
	.head = "usage: dlio-stall run  [options] -- COMMAND [ARGS...]\n"
		"       dlio-stall diff [options] -- COMMAND [ARGS...]\n"
		"       dlio-stall report [options] STEPS_FILE [GPU_FILE]\n"
		"\n"
		"run   time every wait for the next batch (PyTorch DataLoader, tf.data) of an\n"
		"      unmodified job, GPU busy/idle through CUPTI injection, and the mount's\n"
		"      statistics over the run\n"
		"diff  DS-Analyzer's differencing: (1) compute only: the first batches replayed\n"
		"      from memory; (2) prep: storage model off, dataset cached; (3) as\n"
		"      configured, cold. prep stall = T2 - T1, fetch stall = T3 - T2\n"
		"report  analyse records kept by --keep (run.steps, run.gpu) again\n"
		"\n"
		"options:\n",
	.col = 20,
	.opt = stall_opt,
	.n = TOOL_OPTS_N(stall_opt),
	/* '+': stop at the first non-option, the job's argv is not ours. */
	.stop_at_operand = 1,
	.usage_on_error = 1,
};

static void usage(FILE *f)
{
	tool_opts_usage(f, &stall_opts);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int next, ret;

	memset(o, 0, sizeof(*o));
	o->warmup = 2;
	o->interval_ms = 200;
	o->replay = 4;
	if (argc < 2) {
		usage(stderr);
		return -EINVAL;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		exit(0);
	}
	o->cmd = argv[1];
	if (strcmp(o->cmd, "run") && strcmp(o->cmd, "diff") && strcmp(o->cmd, "report")) {
		fprintf(stderr, "dlio-stall: unknown command '%s'\n", o->cmd);
		usage(stderr);
		return -EINVAL;
	}
	if ((ret = tool_opts_parse(&stall_opts, argc, argv, 2, o, &next)) > 0)
		exit(0);
	if (ret)
		return -EINVAL;
	if (next >= argc) {
		fprintf(stderr, "dlio-stall: no command to run (put it after --)\n");
		return -EINVAL;
	}
	o->argv = argv + next;
	if (o->nworkers && strcmp(o->cmd, "diff")) {
		fprintf(stderr, "dlio-stall: --workers is for diff\n");
		return -EINVAL;
	}
	return 0;
}

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* A helper (the hook, the plotter): $env, else found relative to this
 * binary; NULL, said on stderr, when it is nowhere. */
static const char *tool_file(const char *env, const char *rel, char *buf, size_t len)
{
	if (!tool_helper(env, rel, buf, len))
		return buf;
	fprintf(stderr, "dlio-stall: %s not found (looked at %s); set %s to it\n", rel, buf, env);
	return NULL;
}

/* $DLIO_CUPTI_LIB, else the library next to this binary (build tree) or
 * where it is installed. */
static const char *find_cupti(const char *opt, char *buf, size_t len)
{
	const char *e = getenv("DLIO_CUPTI_LIB");

	if (opt)
		return strcmp(opt, "off") ? opt : NULL;
	if (e && *e)
		return exists(e) ? e : NULL;
	return tool_library("libdlio_cupti.so", buf, len) ? NULL : buf;
}

static int gpu_present(void)
{
	return exists("/dev/nvidia0") || exists("/proc/driver/nvidia/gpus");
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* `report`: records written by an earlier run (kept with --keep). The job's
 * start and end are not known: its first and last recorded events stand in. */
static int load_saved(struct st_run *r, const char *steps, const char *gpu)
{
	int ret;

	snprintf(r->name, sizeof(r->name), "report");
	ret = st_records_load(steps, &r->rec);
	if (ret)
		return ret;
	r->main = st_main_proc(&r->rec);
	if (gpu) {
		ret = st_gpu_load(gpu, r->main ? r->main->pid : 0, &r->rec.gpu);
		if (ret)
			return ret;
		r->cupti_state = 1;
	} else {
		r->cupti_state = -1;
		snprintf(r->cupti_note, sizeof(r->cupti_note), "no GPU records given");
	}
	if (r->main && r->main->nsteps) {
		const struct st_proc *p = r->main;
		const struct st_step *last = &p->steps[p->nsteps - 1];
		r->t_start = p->steps[0].start;
		r->t_end = last->start + last->wait + (last->compute > 0 ? last->compute : 0);
		for (size_t i = 0; i < p->nends; i++)
			if (p->ends[i].start + p->ends[i].wait > r->t_end)
				r->t_end = p->ends[i].start + p->ends[i].wait;
	}
	return 0;
}

static void analyse(struct st_run *r, size_t warmup)
{
	st_summarize(r->main, warmup, &r->sum);
	st_gpu_summarize(r->main, &r->sum, &r->rec.gpu, &r->gsum);
}

static int run_plot(const char *json, const char *png)
{
	char pbuf[2 * PATH_MAX + 8];
	const char *plot = tool_file("DLIO_STALL_PLOT", "stall/plot.py", pbuf, sizeof(pbuf));
	const char *py = getenv("DLIO_STALL_PYTHON");
	pid_t pid;
	int st;

	if (!plot)
		return -ENOENT;
	if (!py || !*py)
		py = exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Our hook must not time the plotter. */
		unsetenv("DLIO_STALL_OUT");
		execlp(py, py, plot, json, png, (char *)NULL);
		fprintf(stderr, "dlio-stall: cannot run %s: %s\n", py, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* On a terminal, which of diff's three runs of the job starts now (the
 * job's own output shares the terminal, so a line each, not a redrawn one);
 * nothing otherwise, or with -q. */
static void diff_progress(const struct opts *o, int k, const char *what)
{
	tool_progress_line(o->pl, "dlio-stall diff: run %d of 3: %s", k, what);
}

static void argv_free(char **av)
{
	for (size_t i = 0; av && av[i]; i++)
		free(av[i]);
	free(av);
}

/* The job's arguments with every "{workers}" replaced by w. */
static char **workers_argv(char **argv, unsigned w)
{
	size_t n = 0;
	char num[16], **av;

	snprintf(num, sizeof(num), "%u", w);
	while (argv[n])
		n++;
	av = calloc(n + 1, sizeof(*av));
	if (!av)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(av[i] = dl_subst(argv[i], "{workers}", num))) {
			argv_free(av);
			return NULL;
		}
	return av;
}

/* Tell the job to use w loader workers: {workers} in its arguments and
 * $DLIO_STALL_WORKERS. *owned: the arguments made for the last count. */
static int use_workers(const struct opts *o, struct st_launch *l, unsigned w, char ***owned)
{
	char num[16], **av;

	if (!o->nworkers)
		return 0;
	av = workers_argv(o->argv, w);
	if (!av)
		return -ENOMEM;
	argv_free(*owned);
	*owned = av;
	l->argv = av;
	snprintf(num, sizeof(num), "%u", w);
	return setenv("DLIO_STALL_WORKERS", num, 1) ? -errno : 0;
}

/* The CPU what-if's extra prep runs, still with the storage model off and
 * the data warm: one per further worker count. */
static int extra_preps(const struct opts *o, struct st_launch *l, struct st_run *xruns,
		       char ***owned)
{
	char tag[32];
	int ret = 0;

	for (unsigned i = 1; i < o->nworkers && !ret; i++) {
		snprintf(xruns[i].name, sizeof(xruns[i].name), "prep-%uw", o->workers[i]);
		snprintf(tag, sizeof(tag), "prep-%uw", o->workers[i]);
		tool_progress_line(o->pl, "dlio-stall diff: CPU what-if: prep with %u workers",
				   o->workers[i]);
		ret = use_workers(o, l, o->workers[i], owned);
		l->tag = tag;
		if (!ret)
			ret = st_launch(l, &xruns[i]);
	}
	l->tag = NULL;
	return ret ? ret : use_workers(o, l, o->workers[0], owned);
}

/* Warm the emulated cache for the prep run; a policy that holds nothing
 * (none, kernel, or an emulated one of no size) is not asked (the mount
 * would refuse): one line says what serves the prep run's reads instead. */
static void warm_or_say(const struct opts *o, const char *policy, double capacity)
{
	const char *what = NULL;

	if (!strcmp(policy, "none"))
		what = "no cache to warm (cache.policy none): the prep run reads every byte "
		       "from the daemon with the storage model off, so it still pays the "
		       "daemon's own time, not the storage's";
	else if (!strcmp(policy, "kernel"))
		what = "no emulated cache to warm (cache.policy kernel): the kernel page cache "
		       "serves the prep run's reads of what it still holds, the rest come from "
		       "the daemon with the storage model off";
	else if ((!strcmp(policy, "lru") || !strcmp(policy, "minio")) && !(capacity > 0))
		what = "the emulated cache has no size to warm (cache.size 0): the prep run "
		       "reads every byte from the daemon with the storage model off";
	if (!what) {
		st_mount_warm(o->mount, o->data);
		return;
	}
	if (!o->quiet)
		fprintf(stderr, "dlio-stall diff: %s\n", what);
}

/* (2) prep: storage model off, data warm; (1) compute only: replayed batches,
 * told each iterator's length by (2); (3) as configured: settings restored,
 * caches dropped. Reported in DS-Analyzer's order 1, 2, 3. */
static int do_diff(const struct opts *o, struct st_launch *l, struct st_run *runs,
		   struct st_run *xruns, char ***owned)
{
	struct dl_jdoc before;
	char hint[8192] = "", policy[16] = "";
	double capacity = 0;
	int was_enabled = 1, have_ctl = 0, ret;

	if (o->mount) {
		have_ctl = st_mount_is_dliofs(o->mount);
		if (!have_ctl)
			fprintf(stderr,
				"dlio-stall: %s has no " DL_CTL_DIRNAME
				"/: prep and configured runs use the same storage\n",
				o->mount);
		else if (st_mount_stats(o->mount, &before) == 0) {
			const struct dl_jval *pol = dl_jdoc_get(&before, "cache.policy");

			was_enabled = dl_jdoc_num(&before, "enabled", 1) != 0;
			if (pol && pol->str)
				snprintf(policy, sizeof(policy), "%s", pol->str);
			capacity = dl_jdoc_num(&before, "cache.capacity_bytes", 0);
			dl_jdoc_free(&before);
		}
	}
	if (have_ctl) {
		dl_ctl_send(o->mount, DL_CTL_PACER, "enabled=false\n", 14,
			    "dlio-stall: pacer enabled=false on %s failed", o->mount);
		warm_or_say(o, policy, capacity);
	}
	snprintf(runs[1].name, sizeof(runs[1].name), "prep");
	diff_progress(o, 1, "prep (storage model off, data cached)");
	ret = use_workers(o, l, o->workers[0], owned);
	l->tag = "prep";
	l->replay = 0;
	if (!ret)
		ret = st_launch(l, &runs[1]);
	if (!ret)
		ret = extra_preps(o, l, xruns, owned);
	if (ret)
		goto restore;
	if (runs[1].main)
		st_epoch_steps(runs[1].main, hint, sizeof(hint));
	snprintf(runs[0].name, sizeof(runs[0].name), "compute-only");
	diff_progress(o, 2, "compute only (the first batches replayed from memory)");
	l->tag = "compute";
	l->replay = o->replay;
	l->epoch_steps = hint;
	ret = st_launch(l, &runs[0]);
	l->replay = 0;
	l->epoch_steps = NULL;
restore:
	if (have_ctl) {
		const char *setting = was_enabled ? "enabled=true\n" : "enabled=false\n";

		dl_ctl_send(o->mount, DL_CTL_PACER, setting, strlen(setting),
			    "dlio-stall: pacer restore on %s failed", o->mount);
		st_mount_drop(o->mount, o->data);
	}
	if (ret)
		return ret;
	snprintf(runs[2].name, sizeof(runs[2].name), "configured");
	diff_progress(o, 3, "as configured, caches dropped");
	l->tag = "configured";
	return st_launch(l, &runs[2]);
}

/* The job's own exit status, first failing run first. */
static int job_status(const struct st_run *runs, size_t nruns)
{
	for (size_t i = 0; i < nruns; i++) {
		int st = runs[i].status;
		int code = WIFEXITED(st)     ? WEXITSTATUS(st)
			   : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
					     : 1;
		if (code)
			return code;
	}
	return 0;
}

/* Analyse the runs and say what they show: terminal, --json, --plot.
 * Returns the exit status (the job's, or 1 when the JSON was not written). */
/* The cores this process may run on (its affinity), else those online. */
static unsigned usable_cores(void)
{
	cpu_set_t set;
	long n;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* The prep rate at each worker count, in the diff's unit, and the fit. */
static void cpu_whatif(const struct opts *o, struct st_run *runs, struct st_run *xruns,
		       size_t warmup, const struct st_diff *d, struct st_cpu *cpu)
{
	double unit = d->per_sample ? (double)runs[2].sum.batch : 1.0;

	memset(cpu, 0, sizeof(*cpu));
	cpu->cores = usable_cores();
	cpu->n = o->nworkers;
	for (unsigned i = 0; i < o->nworkers; i++) {
		struct st_run *r = i ? &xruns[i] : &runs[1];

		cpu->workers[i] = o->workers[i];
		if (i)
			analyse(r, warmup);
		cpu->P[i] = r->main && r->sum.counted && r->sum.step_mean_s > 0 && !r->status
				? unit / r->sum.step_mean_s
				: NAN;
	}
	st_cpu_fit(cpu);
}

static int report(const struct opts *o, struct st_report_ctx *ctx, struct st_run *runs,
		  size_t nruns, struct st_run *xruns, const char *workdir)
{
	char jbuf[PATH_MAX + 32];
	const char *json = o->json;
	struct st_diff d;
	struct st_cpu cpu;
	int ret;

	/* The compute-only run fetches its first K batches for real: leave as
	 * many steps out of every run so the three are compared alike. */
	if (nruns == 3 && (size_t)o->replay > o->warmup)
		ctx->warmup = (size_t)o->replay;
	for (size_t i = 0; i < nruns; i++)
		analyse(&runs[i], ctx->warmup);
	if (nruns == 3)
		st_diff_compute(runs, &d);
	if (nruns == 3 && o->nworkers) {
		cpu_whatif(o, runs, xruns, ctx->warmup, &d, &cpu);
		ctx->cpu = &cpu;
	}
	if (!o->quiet) {
		if (nruns == 3)
			st_report_diff(stdout, ctx, runs, nruns, &d);
		if (ctx->cpu)
			st_report_cpu(stdout, ctx->cpu, d.per_sample ? "samples/s" : "steps/s");
		if (nruns != 3)
			st_report_run(stdout, ctx, &runs[0]);
		fflush(stdout);
	}
	if (!json && o->plot) {
		snprintf(jbuf, sizeof(jbuf), "%s/report.json", workdir);
		json = jbuf;
	}
	if (json && (ret = st_json_write(json, o->cmd, ctx, runs, nruns, nruns == 3 ? &d : NULL))) {
		fprintf(stderr, "dlio-stall: cannot write %s: %s\n", json, strerror(-ret));
		ctx->cpu = NULL;
		return 1;
	}
	ctx->cpu = NULL; /* cpu goes with this frame */
	if (o->plot && run_plot(json, o->plot))
		fprintf(stderr, "dlio-stall: the plot %s was not drawn\n", o->plot);
	return job_status(runs, nruns);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct st_launch l = {0};
	struct st_run runs[3], *xruns = calloc(ST_CPU_MAX, sizeof(*xruns));
	char **wargv = NULL;
	struct st_report_ctx ctx = {0};
	char hbuf[2 * PATH_MAX + 8], cbuf[2 * PATH_MAX + 8], workdir[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	struct tool_progress pl;
	size_t nruns;
	int ret, rc = 1;

	memset(runs, 0, sizeof(runs));
	if (parse_opts(argc, argv, &o))
		return 2;
	tool_progress_init(&pl, o.quiet, 0);
	o.pl = &pl;
	tool_stop_install();
	snprintf(workdir, sizeof(workdir), "%s/dlio-stall-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(workdir)) {
		fprintf(stderr, "dlio-stall: mkdtemp %s: %s\n", workdir, strerror(errno));
		return 1;
	}
	l.argv = o.argv;
	/* The hook is what run and diff inject; report reads records only. */
	if (strcmp(o.cmd, "report")) {
		l.hook_src =
		    tool_file("DLIO_STALL_HOOK", "stall/sitecustomize.py", hbuf, sizeof(hbuf));
		if (!l.hook_src) {
			rmdir(workdir);
			return 1;
		}
	}
	l.cupti_lib = find_cupti(o.cupti, cbuf, sizeof(cbuf));
	l.mount = o.mount;
	l.workdir = workdir;
	l.interval_ms = o.interval_ms;
	ctx.mount = o.mount;
	ctx.gpu_present = gpu_present();
	ctx.cupti_lib = l.cupti_lib;
	ctx.cupti_built = l.cupti_lib != NULL;
	ctx.warmup = o.warmup;
	if (!strcmp(o.cmd, "report") && (!o.argv[0] || (o.argv[1] && o.argv[2]))) {
		fprintf(stderr, "dlio-stall report: expected STEPS_FILE [GPU_FILE]\n");
		rmdir(workdir);
		return 2;
	}
	if (o.mount && !st_mount_is_dliofs(o.mount))
		fprintf(stderr,
			"dlio-stall: %s/" DL_CTL_DIRNAME
			"/stats.json missing: no storage figures\n",
			o.mount);

	if (!strcmp(o.cmd, "report")) {
		nruns = 1;
		ctx.mount = NULL;
		ret = load_saved(&runs[0], o.argv[0], o.argv[1]);
	} else if (!strcmp(o.cmd, "run")) {
		nruns = 1;
		snprintf(runs[0].name, sizeof(runs[0].name), "run");
		l.tag = "run";
		if (o.cold && o.mount)
			st_mount_drop(o.mount, o.data);
		ret = st_launch(&l, &runs[0]);
	} else {
		nruns = 3;
		ret = xruns ? do_diff(&o, &l, runs, xruns, &wargv) : -ENOMEM;
	}
	if (ret && !tool_stop_requested()) {
		fprintf(stderr, "dlio-stall: %s\n", strerror(-ret));
		goto out;
	}
	if (!tool_stop_requested())
		rc = report(&o, &ctx, runs, nruns, xruns, workdir);
out:
	for (size_t i = 0; i < 3; i++)
		st_run_free(&runs[i]);
	for (size_t i = 0; xruns && i < ST_CPU_MAX; i++)
		st_run_free(&xruns[i]);
	free(xruns);
	argv_free(wargv);
	if (tool_stop_requested()) {
		int sig = tool_stop_requested();

		fprintf(stderr, "dlio-stall: stopped by signal %d (%s): the job was stopped%s\n",
			sig, strsignal(sig), o.keep ? "" : ", its records removed");
		rc = 128 + sig;
	}
	if (o.keep)
		fprintf(stderr, "dlio-stall: records kept in %s\n", workdir);
	else
		nftw(workdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
