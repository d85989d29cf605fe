/* dlio-gen: write the bytes the mount would serve into a real directory,
 * as the reference the tests compare against and for runs on real storage. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dliofs/clock.h"
#include "dliofs/config.h"
#include "dliofs/format.h"
#include "dliofs/naming.h"
#include "dliofs/units.h"
#include "tool_opts_i.h"
#include "tool_progress_i.h"

#define CHUNK (4u << 20)
/* How often the progress line is redrawn on a terminal. */
#define PROGRESS_NS 250000000ull

struct job {
	const struct dl_config *cfg;
	struct dl_fmt_ctx *ctx;
	const char *outdir;
	/* Flattened work list: (dataset, split) ranges of file indices. */
	unsigned nranges;
	struct range {
		unsigned ds;
		uint32_t split;
		uint64_t first; /* global position of its first file */
		uint64_t nfiles;
	} *ranges;
	uint64_t total;
	atomic_uint_fast64_t next;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t files_done;	/* files with every part written */
	atomic_uint workers_done;
	atomic_int failed;
};

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The directory tree exactly as the mount shows it, empty directories
 * included (DLIO always creates train/ and valid/). */
static int make_tree(const struct dl_config *cfg, const char *outdir)
{
	char path[4096], sub[64];
	int ret;

	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dl_dataset *ds = &cfg->datasets[i];
		for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
			uint32_t nsub = dl_split_nsub(ds, s);
			snprintf(path, sizeof(path), "%s/%s/%s", outdir, ds->name, dl_split_dir[s]);
			ret = mkdir_p(path);
			for (uint32_t k = 0; !ret && (nsub > 1 || ds->classes) && k < nsub; k++) {
				dl_name_subdir(ds, s, k, sub, sizeof(sub));
				snprintf(path, sizeof(path), "%s/%s/%s/%s", outdir, ds->name,
					 dl_split_dir[s], sub);
				ret = mkdir_p(path);
			}
			if (ret) {
				fprintf(stderr, "dlio-gen: %s: %s\n", path, strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

static int write_one(struct job *j, const struct dl_dataset *ds, uint32_t split, uint64_t index,
		     uint32_t part, void *buf)
{
	char rel[1024], path[4096];
	struct dl_file f;
	int fd = -1, ret, n;
	char *slash;

	ret = dl_file_init(j->ctx, ds, split, index, part, &f);
	if (ret)
		return ret;
	n = dl_name_relpath(ds, split, index, part, rel, sizeof(rel));
	if (n < 0)
		return n;
	if (snprintf(path, sizeof(path), "%s/%s/%s", j->outdir, ds->name, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	slash = strrchr(path, '/');
	*slash = 0;
	ret = mkdir_p(path);
	*slash = '/';
	if (ret)
		goto out;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	for (uint64_t off = 0; off < f.size;) {
		size_t len = f.size - off < CHUNK ? (size_t)(f.size - off) : CHUNK;
		ret = dl_file_read(j->ctx, &f, buf, off, len);
		if (ret)
			goto out;
		for (size_t done = 0; done < len;) {
			ssize_t w = pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done));
			if (w < 0) {
				ret = -errno;
				goto out;
			}
			done += (size_t)w;
		}
		off += len;
	}
	atomic_fetch_add(&j->bytes, f.size);
	ret = 0;
out:
	if (fd >= 0 && close(fd) && !ret)
		ret = -errno;
	if (ret)
		fprintf(stderr, "dlio-gen: %s: %s\n", path, strerror(-ret));
	return ret;
}

/* Names a dataset's train file also has at the root (dlrm's mlperf_bin):
 * hard links, as the mount shows one file under two names. */
static int link_root_aliases(const struct dl_config *cfg, const char *outdir)
{
	char alias[256], rel[1024], from[4096], to[4096];

	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		const struct dl_dataset *ds = &cfg->datasets[i];
		const struct dl_format_ops *ops = dl_format_ops(ds->format);

		if (!ops->root_alias || ops->root_alias(ds, alias, sizeof(alias)) <= 0)
			continue;
		if (dl_name_relpath(ds, DL_SPLIT_TRAIN, 0, 0, rel, sizeof(rel)) < 0)
			return -ENAMETOOLONG;
		snprintf(from, sizeof(from), "%s/%s/%s", outdir, ds->name, rel);
		snprintf(to, sizeof(to), "%s/%s", outdir, alias);
		if ((unlink(to) && errno != ENOENT) || link(from, to)) {
			fprintf(stderr, "dlio-gen: %s: %s\n", to, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	void *buf = malloc(CHUNK);

	if (!buf) {
		atomic_store(&j->failed, 1);
		return NULL;
	}
	for (;;) {
		uint64_t g = atomic_fetch_add(&j->next, 1);
		unsigned r = 0;

		if (g >= j->total || atomic_load(&j->failed))
			break;
		while (g >= j->ranges[r].first + j->ranges[r].nfiles)
			r++;
		const struct dl_dataset *ds = &j->cfg->datasets[j->ranges[r].ds];
		uint64_t index = g - j->ranges[r].first;
		unsigned nparts = dl_format_ops(ds->format)->nparts;
		for (uint32_t p = 0; p < nparts; p++) {
			if (write_one(j, ds, j->ranges[r].split, index, p, buf)) {
				atomic_store(&j->failed, 1);
				break;
			}
		}
		atomic_fetch_add(&j->files_done, 1);
	}
	free(buf);
	atomic_fetch_add(&j->workers_done, 1);
	return NULL;
}

struct gen_opts {
	unsigned nthreads;
	int quiet;
};

static int set_threads(void *ctx, const struct tool_opt *o, const char *arg)
{
	struct gen_opts *g = ctx;
	char *end;

	(void)o;
	errno = 0;
	g->nthreads = (unsigned)strtoul(arg, &end, 10);
	if (errno || *end || g->nthreads == 0 || g->nthreads > 256) {
		fprintf(stderr, "dlio-gen: -j: expected 1..256, got '%s'\n", arg);
		return -EINVAL;
	}
	return 0;
}

/* clang-format off */
static const struct tool_opt gen_opt[] = {
	{.name = "threads", .letter = 'j', .kind = TOOL_OPT_CALL, .set = set_threads, .arg = "N",
	 .help = "writer threads (default: one per CPU)"},
	{.name = "quiet", .letter = 'q', .kind = TOOL_OPT_FLAG, .off = offsetof(struct gen_opts, quiet),
	 .value = 1, .help = "no progress line, no summary"},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP, .help = "this help"},
};
/* clang-format on */

static const struct tool_opts gen_opts = {
	.prog = "dlio-gen",
	.head = "usage: dlio-gen [-j THREADS] [-q] CONFIG.yaml OUTDIR\n"
		"Writes every file of CONFIG's datasets under OUTDIR/<dataset>/, byte for byte\n"
		"what `dliofs mount` serves.\n"
		"\n",
	.tail = "\n"
		"On a terminal a progress line (files, bytes, rate, time left) is redrawn on\n"
		"stderr; a summary line ends every run on stdout.\n",
	.col = 20,
	.opt = gen_opt,
	.n = TOOL_OPTS_N(gen_opt),
	.usage_on_error = 1,
};

/* One progress line on stderr, redrawn in place. Time left is the files
 * still to write at the rate of those written: file sizes of a dataset are
 * close to each other, and knowing total bytes would cost a pass over
 * every file before the first is written. */
static void progress(struct tool_progress *pl, struct job *j, uint64_t t0)
{
	uint64_t files = atomic_load(&j->files_done), bytes = atomic_load(&j->bytes);
	double s = (double)(dl_mono_ns() - t0) * 1e-9;
	char b[32], left[48] = "";

	if (files && files < j->total)
		snprintf(left, sizeof(left), ", %.0f s left",
			 s / (double)files * (double)(j->total - files));
	tool_progress(pl, "dlio-gen: %llu/%llu files, %s, %.1f MB/s%s", (unsigned long long)files,
		      (unsigned long long)j->total, dl_format_size(bytes, b, sizeof(b)),
		      s > 0 ? (double)bytes / s / 1e6 : 0.0, left);
}

/* Wait for the workers; on a terminal, redraw the progress line meanwhile. */
static void wait_workers(struct job *j, pthread_t *th, unsigned started, int quiet, uint64_t t0)
{
	const struct timespec tick = {0, PROGRESS_NS};
	struct tool_progress pl;

	tool_progress_init(&pl, quiet, 0);
	while (tool_progress_on(&pl) && atomic_load(&j->workers_done) < started) {
		progress(&pl, j, t0);
		nanosleep(&tick, NULL);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (tool_progress_on(&pl)) {
		progress(&pl, j, t0);
		tool_progress_end(&pl);
	}
}

int main(int argc, char **argv)
{
	struct job j = {0};
	struct dl_config *cfg = NULL;
	pthread_t *th = NULL;
	unsigned nthreads = 0, started = 0;
	struct gen_opts go = {0};
	int ret = 1, next;
	uint64_t t0, t1;

	if ((ret = tool_opts_parse(&gen_opts, argc, argv, 1, &go, &next)))
		return ret > 0 ? 0 : 2;
	ret = 1;
	nthreads = go.nthreads;
	if (argc - next != 2) {
		tool_opts_usage(stderr, &gen_opts);
		return 2;
	}
	if (dl_config_load(argv[next], stderr, &cfg))
		return 2;
	if (!nthreads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = n > 0 ? (unsigned)n : 1;
	}
	j.cfg = cfg;
	j.outdir = argv[next + 1];
	if (dl_fmt_ctx_new(cfg->seed, 0, &j.ctx))
		goto out;
	j.ranges = calloc((size_t)cfg->ndatasets * DL_SPLIT__COUNT, sizeof(*j.ranges));
	th = calloc(nthreads, sizeof(*th));
	if (!j.ranges || !th)
		goto out;
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		for (uint32_t s = 0; s < DL_SPLIT__COUNT; s++) {
			if (!cfg->datasets[i].files[s])
				continue;
			j.ranges[j.nranges++] = (struct range){.ds = i, .split = s, .first = j.total,
							       .nfiles = cfg->datasets[i].files[s]};
			j.total += cfg->datasets[i].files[s];
		}
	}
	t0 = dl_mono_ns();
	if (make_tree(cfg, j.outdir))
		goto out;
	for (; started < nthreads; started++)
		if (pthread_create(&th[started], NULL, worker, &j))
			break;
	wait_workers(&j, th, started, go.quiet, t0);
	t1 = dl_mono_ns();
	if (!started || atomic_load(&j.failed) || link_root_aliases(cfg, j.outdir))
		goto out;
	if (!go.quiet) {
		double s = (double)(t1 - t0) * 1e-9;
		char b[32];
		uint64_t bytes = atomic_load(&j.bytes);
		printf("dlio-gen: %llu files, %s in %.3f s (%.1f MB/s, %u threads)\n",
		       (unsigned long long)j.total, dl_format_size(bytes, b, sizeof(b)), s,
		       s > 0 ? (double)bytes / s / 1e6 : 0.0, started);
	}
	ret = 0;
out:
	free(th);
	free(j.ranges);
	dl_fmt_ctx_free(j.ctx);
	dl_config_free(cfg);
	return ret;
}
