/* dliofs command line: mount, umount, check. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dliofs/config.h"
#include "dliofs/format.h"
#include "dliofs/units.h"
#include "cli.h"
#include "cluster.h"
#include "fs_i.h"
#include "profile.h"
#include "s3.h"
#include "tool_opts_i.h"

/* Beyond this many files per split, `check` samples sizes instead of summing all. */
#define DL_CHECK_EXACT_FILES 50000000ULL
#define DL_CHECK_SAMPLE 100000ULL
/* Measured on the 2-core dev box: 128 KiB (kernel default) 1.7 GB/s cold,
 * 4 MiB 2.7 GB/s (bench/bench_read.sh). */
#define DL_DEFAULT_READAHEAD (4ULL << 20)
/* The kernel's share of a FUSE round trip (request to the daemon, reply copy
 * back), measured as fio's 4 KiB latency minus the daemon's on the dev box. */
#define DL_DEFAULT_FUSE_OVERHEAD_NS 8000ULL

static void usage(FILE *o)
{
	fprintf(o,
		"usage: dliofs mount MOUNTPOINT CONFIG.yaml [-f] [-d] [-o OPTS] [--log FILE] [--threads N]\n"
		"                    [--readahead SIZE] [--no-pacer] [--fuse-overhead TIME]\n"
		"       dliofs umount MOUNTPOINT\n"
		"       dliofs check CONFIG.yaml\n"
		"       dliofs formats [--config]\n"
		"       dliofs s3 serve CONFIG.yaml [--listen HOST:PORT]\n"
		"       dliofs profile DIR -o OUT.yaml [--time 60s] [--read-only] (--help: more)\n"
		"       dliofs stat MOUNTPOINT [--watch [SECONDS]] [--all | --json] [--reset]\n"
		"       dliofs set MOUNTPOINT key=value ...\n"
		"       dliofs cache drop MOUNTPOINT | dliofs cache warm MOUNTPOINT PATH\n"
		"       dliofs trace start MOUNTPOINT FILE [OPS] | dliofs trace stop MOUNTPOINT\n"
		"       dliofs --help | --version\n"
		"\n"
		"mount   serve the datasets of CONFIG.yaml at MOUNTPOINT; returns once the\n"
		"        filesystem answers. -f stays in the foreground, -d prints FUSE debug,\n"
		"        -o passes FUSE mount options, --log keeps the daemon's messages,\n"
		"        --readahead sets the kernel readahead (default 4MiB; root only),\n"
		"        --no-pacer serves without storage model or statistics, --fuse-overhead\n"
		"        is the kernel's share of a request that delayed replies are sent\n"
		"        early by (default 8us), so jobs see the configured latency.\n"
		"        SIGINT/SIGTERM unmount cleanly. With cluster: in CONFIG, the daemons\n"
		"        of one `mpirun -np N dliofs mount -f MOUNTPOINT CONFIG` are one storage\n"
		"        system ({rank} in MOUNTPOINT and trace.file: the node's rank).\n"
		"umount  unmount MOUNTPOINT (the daemon then exits)\n"
		"check   validate CONFIG.yaml and print every dataset: files, sizes, total bytes\n"
		"formats the formats served, their own keys and read plans (--config: a config\n"
		"        with one small dataset of every format)\n"
		"s3      serve the datasets of CONFIG.yaml as S3 buckets over HTTP, shaped by\n"
		"        its pacer (foreground; SIGINT/SIGTERM stop it; README: S3 endpoint)\n"
		"profile measure the storage DIR is on (cache bypassed) and write a storage\n"
		"        profile, pacer: {profile: ./OUT.yaml}, that the mount reproduces\n"
		"stat    the mount's live statistics: a table per class and per job (--all:\n"
		"        every figure of .dliofs/stats.json; --json: the file; --watch redraws)\n"
		"set     change storage-model settings live, e.g. read.bandwidth=500MB/s\n"
		"cache   drop the emulated cache, or warm it with a file or directory\n"
		"trace   record every request to FILE (OPS: read,open,... or all) until stopped\n"
		"\n"
		"storage-model keys (for `set` and the config's pacer:/cache: sections):\n");
	dl_pacer_cfg_help(o);
}

struct size_summary {
	uint64_t files, min, max;
	long double total;
	int estimated;
};

static int summarize(struct dl_fmt_ctx *ctx, const struct dl_dataset *ds, uint32_t split,
		     struct size_summary *s)
{
	const struct dl_format_ops *ops = dl_format_ops(ds->format);
	uint64_t n = ds->files[split], step = 1, seen = 0;
	struct dl_file f;
	int ret;

	memset(s, 0, sizeof(*s));
	s->min = UINT64_MAX;
	s->files = n * ops->nparts;
	if (n > DL_CHECK_EXACT_FILES) {
		step = n / DL_CHECK_SAMPLE;
		s->estimated = 1;
	}
	for (uint64_t i = 0; i < n; i += step) {
		for (uint32_t p = 0; p < ops->nparts; p++) {
			ret = dl_file_init(ctx, ds, split, i, p, &f);
			if (ret)
				return ret;
			s->total += f.size;
			s->min = f.size < s->min ? f.size : s->min;
			s->max = f.size > s->max ? f.size : s->max;
		}
		seen++;
	}
	if (s->estimated)
		s->total = s->total / seen * n;
	if (!n)
		s->min = 0;
	return 0;
}

static int cmd_check(const char *path)
{
	struct dl_config *cfg = NULL;
	struct dl_fmt_ctx *ctx = NULL;
	long double grand = 0;
	int ret, estimated = 0;
	char a[32], b[32], c[32];

	ret = dl_config_load(path, stderr, &cfg);
	if (ret)
		return 2;
	ret = dl_fmt_ctx_new(cfg->seed, 1024, &ctx);
	if (ret)
		goto out;
	printf("%s: seed %llu, io %s, %u dataset%s\n", path, (unsigned long long)cfg->seed,
	       cfg->io_mode == DL_IO_DIRECT ? "direct" : "cache", cfg->ndatasets,
	       cfg->ndatasets == 1 ? "" : "s");
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dl_dataset *ds = &cfg->datasets[i];
		printf("  %s: %s, %llu sample%s per file\n", ds->name, dl_format_name(ds->format),
		       (unsigned long long)ds->samples_per_file, ds->samples_per_file == 1 ? "" : "s");
		for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
			struct size_summary sum;
			if (!ds->files[s])
				continue;
			ret = summarize(ctx, ds, s, &sum);
			if (ret)
				goto out;
			printf("    %s/%s: %llu files, %s..%s each, %s%s total\n", ds->name,
			       s ? "valid" : "train", (unsigned long long)sum.files,
			       dl_format_size(sum.min, a, sizeof(a)),
			       dl_format_size(sum.max, b, sizeof(b)), sum.estimated ? "~" : "",
			       dl_format_size((uint64_t)sum.total, c, sizeof(c)));
			grand += sum.total;
			estimated |= sum.estimated;
		}
		if (dl_ds_ops(ds)->root_alias) {
			char alias[256];

			if (dl_ds_ops(ds)->root_alias(ds, alias, sizeof(alias)) > 0)
				printf("    %s/train's file is also %s at the mount root\n", ds->name,
				       alias);
		}
	}
	for (unsigned i = 0; i < cfg->nbacking; i++) {
		const struct dl_backing_cfg *b = &cfg->backing[i];

		if (b->sink)
			printf("  %s: sink (writes counted and discarded)\n", b->at);
		else
			printf("  %s: backing directory %s (%s)\n", b->at, b->path,
			       b->writable ? "writable" : "read-only");
	}
	if (cfg->overlay.path[0])
		printf("  overlay: names created in synthetic directories go to %s\n",
		       cfg->overlay.path);
	printf("total: %s%s (%.0Lf bytes)\n", estimated ? "~" : "",
	       dl_format_size((uint64_t)grand, a, sizeof(a)), grand);
	/* The storage model the mount will use, as .dliofs/pacer will show it. */
	printf("storage model (pacer):\n");
	dl_pacer_cfg_dump(&cfg->pacer, stdout, 2);
	if (cfg->trace.enabled)
		printf("trace: %s from mount time on\n", cfg->trace.file);
out:
	if (ret)
		fprintf(stderr, "dliofs: check: %s\n", strerror(-ret));
	dl_fmt_ctx_free(ctx);
	dl_config_free(cfg);
	return ret ? 1 : 0;
}

/* What `dliofs mount` was given. */
struct mount_args {
	struct dl_mount_opts o;
	const char *pos[2];	/* MOUNTPOINT CONFIG */
	int npos, readahead_set, overhead_set;
	char logp[PATH_MAX];
};

/* One option of `dliofs mount` (its row's value the letter below): 0, or
 * -EINVAL (said on stderr). */
static int mount_opt(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct mount_args *a = ctx;
	int c = r->value;
	const char *why = NULL;
	char cwd[PATH_MAX], *end;

	switch (c) {
	case 'f':
		a->o.foreground = 1;
		return 0;
	case 'd':
		a->o.debug = 1;
		a->o.foreground = 1;
		return 0;
	case 'o':
		a->o.fuse_opts = arg;
		return 0;
	case 'l':
		if (!realpath(arg, a->logp)) {
			/* The log file need not exist yet: resolve its directory. */
			if (arg[0] == '/')
				snprintf(a->logp, sizeof(a->logp), "%s", arg);
			else if (getcwd(cwd, sizeof(cwd)))
				snprintf(a->logp, sizeof(a->logp), "%.2000s/%.2000s", cwd, arg);
		}
		a->o.log_path = a->logp;
		return 0;
	case 't':
		errno = 0;
		a->o.max_threads = (unsigned)strtoul(arg, &end, 10);
		if (errno || *end || a->o.max_threads == 0 || a->o.max_threads > 1024) {
			fprintf(stderr, "dliofs mount: --threads: expected 1..1024, got '%s'\n",
				arg);
			return -EINVAL;
		}
		return 0;
	case 'r':
		if (dl_parse_size(arg, &a->o.readahead, &why) || a->o.readahead > (1ULL << 30)) {
			fprintf(stderr, "dliofs mount: --readahead: expected a size up to 1GiB "
					"like 4MiB, got '%s'%s%s\n",
				arg, why ? ": " : "", why ? why : "");
			return -EINVAL;
		}
		a->readahead_set = 1;
		return 0;
	case 'n':
		a->o.no_pacer = 1;
		return 0;
	case 'F':
		if (dl_parse_time(arg, &a->o.fuse_overhead_ns, &why) ||
		    a->o.fuse_overhead_ns > 1000000) {
			fprintf(stderr, "dliofs mount: --fuse-overhead: expected a time up to "
					"1ms like 8us, got '%s'%s%s\n",
				arg, why ? ": " : "", why ? why : "");
			return -EINVAL;
		}
		a->overhead_set = 1;
		return 0;
	}
	return -EINVAL;
}

static int mount_operand(void *ctx, const char *arg)
{
	struct mount_args *a = ctx;

	if (a->npos == 2) {
		fprintf(stderr, "dliofs mount: unexpected argument '%s'\n", arg);
		return -EINVAL;
	}
	a->pos[a->npos++] = arg;
	return 0;
}

static void usage_of(FILE *f, const struct tool_opts *t)
{
	(void)t;
	usage(f);
}

/* The help is dliofs's usage, whose mount paragraph says each of these. */
#define ROW(n, l, c, a) {.name = n, .letter = l, .kind = TOOL_OPT_CALL, .set = mount_opt, .value = c, .arg = a}
static const struct tool_opt mount_opt_rows[] = {
    ROW("foreground", 'f', 'f', NULL),
    ROW("debug", 'd', 'd', NULL),
    ROW("options", 'o', 'o', "OPTS"),
    ROW("log", 0, 'l', "FILE"),
    ROW("threads", 0, 't', "N"),
    ROW("readahead", 0, 'r', "SIZE"),
    ROW("no-pacer", 0, 'n', NULL),
    ROW("fuse-overhead", 0, 'F', "TIME"),
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
#undef ROW

static const struct tool_opts mount_opts = {
    .prog = "dliofs mount",
    .opt = mount_opt_rows,
    .n = TOOL_OPTS_N(mount_opt_rows),
    .stop_at_operand = 1,
    .operand = mount_operand,
    .usage_on_error = 1,
    .usage = usage_of,
};

/* Options and the two positional arguments, in any order: 0, or the exit
 * status (-1: --help, answered). */
static int mount_args(int argc, char **argv, struct mount_args *a)
{
	int next, ret = tool_opts_parse(&mount_opts, argc, argv, 1, a, &next);

	if (ret)
		return ret > 0 ? -1 : 2;
	if (a->npos != 2) {
		usage(stderr);
		return 2;
	}
	return 0;
}

/* A node of a cluster of mounts: join it (MPI) and name the mountpoint
 * with its rank (*mp, malloc'd). 0, or the exit status (said on stderr). */
static int cluster_join(struct dl_config *cfg, struct mount_args *a, char **mp)
{
	char buf[PATH_MAX], tf[sizeof(cfg->trace.file)];

	if (!cfg->cluster.enabled) {
		fprintf(stderr, "dliofs mount: %s: {rank} in MOUNTPOINT is a cluster node's rank: "
				"%s has no cluster: section\n",
			a->pos[0], a->pos[1]);
		return 2;
	}
	if (!a->o.foreground) {
		/* mpirun waits for its ranks: a daemon in the background
		 * would be a process it does not know. */
		fprintf(stderr, "dliofs mount: cluster: run each node in the foreground "
				"(mpirun -np N dliofs mount -f MOUNTPOINT CONFIG)\n");
		return 2;
	}
	if (a->o.no_pacer) {
		fprintf(stderr, "dliofs mount: cluster: the nodes share a storage model: "
				"--no-pacer has none\n");
		return 2;
	}
	if (dl_cluster_init(NULL, NULL, &cfg->cluster, &a->o.cluster))
		return 1;
	if (dl_cluster_expand(a->o.cluster, a->pos[0], buf, sizeof(buf)) ||
	    !(*mp = strdup(buf))) {
		fprintf(stderr, "dliofs mount: %s: too long with the rank\n", a->pos[0]);
		dl_cluster_abort(a->o.cluster, 1);
		return 1;
	}
	/* Each node its own trace: trace.file may name it by rank too. */
	if (cfg->trace.enabled) {
		if (dl_cluster_expand(a->o.cluster, cfg->trace.file, tf, sizeof(tf))) {
			fprintf(stderr, "dliofs mount: trace.file: too long with the rank\n");
			dl_cluster_abort(a->o.cluster, 1);
			return 1;
		}
		memcpy(cfg->trace.file, tf, sizeof(tf));
	}
	return 0;
}

static int cmd_mount(int argc, char **argv)
{
	struct mount_args a = {0};
	struct dl_config *cfg = NULL;
	char mnt[PATH_MAX], *mp = NULL;
	int ret = mount_args(argc, argv, &a);

	if (ret)
		return ret < 0 ? 0 : ret;
	ret = dl_config_load(a.pos[1], stderr, &cfg);
	if (ret)
		return 2;
	if (cfg->cluster.enabled || strstr(a.pos[0], "{rank}")) {
		ret = cluster_join(cfg, &a, &mp);
		if (ret) {
			dl_config_free(cfg);
			return ret;
		}
	}
	if (!realpath(mp ? mp : a.pos[0], mnt)) {
		fprintf(stderr, "dliofs mount: %s: %s\n", mp ? mp : a.pos[0], strerror(errno));
		free(mp);
		dl_config_free(cfg);
		/* The other nodes would wait for this one in every exchange. */
		if (a.o.cluster)
			dl_cluster_abort(a.o.cluster, 1);
		return 1;
	}
	free(mp);
	a.o.mountpoint = mnt;
	if (!a.readahead_set)
		a.o.readahead = DL_DEFAULT_READAHEAD;
	if (!a.overhead_set)
		a.o.fuse_overhead_ns = DL_DEFAULT_FUSE_OVERHEAD_NS;
	ret = dl_fs_mount(cfg, &a.o);
	dl_config_free(cfg);
	if (a.o.cluster) {
		if (!dl_cluster_started(a.o.cluster)) {
			fprintf(stderr, "dliofs mount: node %d of the cluster did not mount: ending "
					"the cluster\n",
				dl_cluster_rank(a.o.cluster));
			dl_cluster_abort(a.o.cluster, 1);
		}
		dl_cluster_fini(a.o.cluster);
	}
	return ret ? 1 : 0;
}

/* What `dliofs stat` was given. */
struct stat_args {
	const char *mnt;
	int watch, raw, all, reset;
	int after_watch; /* the operand right after --watch may be its SECONDS */
	double interval;
};

static int stat_opt(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct stat_args *a = ctx;

	(void)arg;
	a->after_watch = r->value == 'w';
	switch (r->value) {
	case 'w':
		a->watch = 1;
		break;
	case 'j':
		a->raw = 1;
		break;
	case 'a':
		a->all = 1;
		break;
	case 'r':
		a->reset = 1;
		break;
	}
	return 0;
}

/* MOUNTPOINT, or the SECONDS of a --watch just before it (`--watch 2`). */
static int stat_operand(void *ctx, const char *arg)
{
	struct stat_args *a = ctx;
	int seconds = a->after_watch && atof(arg) > 0;

	a->after_watch = 0;
	if (seconds) {
		a->interval = atof(arg);
		return 0;
	}
	if (a->mnt) {
		fprintf(stderr, "dliofs stat: unexpected argument '%s'\n", arg);
		return -EINVAL;
	}
	a->mnt = arg;
	return 0;
}

/* The help is dliofs's usage, whose stat paragraph says each of these. */
#define ROW(n, c) {.name = n, .kind = TOOL_OPT_CALL, .set = stat_opt, .value = c}
static const struct tool_opt stat_opt_rows[] = {
    ROW("watch", 'w'), ROW("json", 'j'), ROW("all", 'a'), ROW("reset", 'r'),
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
#undef ROW

static const struct tool_opts stat_opts = {
    .prog = "dliofs stat",
    .opt = stat_opt_rows,
    .n = TOOL_OPTS_N(stat_opt_rows),
    .operand = stat_operand,
    .usage_on_error = 1,
    .usage = usage_of,
};

static int cmd_stat(int argc, char **argv)
{
	struct stat_args a = {.interval = 1.0};
	int next, ret = tool_opts_parse(&stat_opts, argc, argv, 2, &a, &next);

	if (ret > 0)
		return 0;
	if (ret || !a.mnt) {
		if (!ret)
			usage(stderr);
		return 2;
	}
	return dl_cli_stat(a.mnt, a.watch, a.interval, a.raw, a.all, a.reset);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("dliofs %s (libfuse %d.%d API)\n", DLIOFS_VERSION, FUSE_MAJOR_VERSION,
		       FUSE_MINOR_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "mount"))
		return cmd_mount(argc - 1, argv + 1);
	if (!strcmp(argv[1], "s3"))
		return dl_s3_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "umount") || !strcmp(argv[1], "unmount")) {
		if (argc != 3) {
			usage(stderr);
			return 2;
		}
		return dl_fs_umount(argv[2]) ? 1 : 0;
	}
	if (!strcmp(argv[1], "stat"))
		return cmd_stat(argc, argv);
	if (!strcmp(argv[1], "set")) {
		if (argc < 4) {
			usage(stderr);
			return 2;
		}
		return dl_cli_set(argv[2], argc - 3, argv + 3);
	}
	if (!strcmp(argv[1], "cache")) {
		if (argc < 4) {
			usage(stderr);
			return 2;
		}
		return dl_cli_cache(argv[3], argv[2], argc > 4 ? argv[4] : NULL);
	}
	if (!strcmp(argv[1], "trace")) {
		if (argc < 4) {
			usage(stderr);
			return 2;
		}
		return dl_cli_trace(argv[3], argv[2], argc > 4 ? argv[4] : NULL,
				    argc > 5 ? argv[5] : NULL);
	}
	if (!strcmp(argv[1], "formats"))
		return dl_cli_formats(argc - 2, argv + 2);
	if (!strcmp(argv[1], "profile"))
		return dl_cli_profile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check")) {
		if (argc != 3) {
			usage(stderr);
			return 2;
		}
		return cmd_check(argv[2]);
	}
	fprintf(stderr, "dliofs: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
