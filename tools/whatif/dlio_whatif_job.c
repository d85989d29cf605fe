/* One cold run of the job: mount (or make the given mount cold), apply the
 * point's settings, start --jobs copies at once (each its own process group
 * and DLIOFS_JOB, so the mount sees N jobs), wait, read their reports.
 * dlio-drive reports for itself (--json); any other command runs under
 * `dlio-stall run`, whose hook times the job's waits for data without
 * touching the script. With --trace the run is traced, and the figures
 * predict needs are written beside the trace (TRACE.json). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlio_whatif_i.h"
#include "tool_stop_i.h"
#include "dliofs/clock.h"
#include "dliofs/subst.h"
#include "dliofs/json.h"

void wi_argv_free(char **av)
{
	for (size_t i = 0; av && av[i]; i++)
		free(av[i]);
	free(av);
}

char **wi_job_argv(const struct wi_env *e, const char *report)
{
	size_t n = 0, k = 0;
	char **av;

	while (e->argv[n])
		n++;
	av = calloc(n + 12, sizeof(*av));
	if (!av)
		return NULL;
	if (e->kind == WI_JOB_STALL) {
		const char *pre[] = {e->stall, "run",  "--mount", e->mnt,
				     "--json", report, "-q",	  "--"};

		for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
			if (!(av[k++] = strdup(pre[i])))
				goto fail;
	}
	for (size_t i = 0; i < n; i++)
		if (!(av[k++] = dl_subst(e->argv[i], "{mount}", e->mnt)))
			goto fail;
	if (e->kind == WI_JOB_DRIVE) {
		/* The last --json wins: the report is ours to read. */
		if (!(av[k++] = strdup("--json")) || !(av[k++] = strdup(report)))
			goto fail;
	}
	return av;
fail:
	wi_argv_free(av);
	return NULL;
}

struct copy {
	pid_t pid;
	int status;
	uint64_t t_start, t_end;
	char report[PATH_MAX + 96], log[PATH_MAX + 96];
};

static pid_t start_copy(const struct wi_env *e, unsigned c, struct copy *cp)
{
	char **av = wi_job_argv(e, cp->report);
	char job[32];
	pid_t pid;

	/* A cluster's job: one rank per node, started by the launcher. */
	if (av && e->nodes) {
		char **one = av;

		av = wi_cluster_job_argv(e, one);
		wi_argv_free(one);
	}
	if (!av)
		return -ENOMEM;
	snprintf(job, sizeof(job), "whatif-%u", c);
	cp->t_start = dl_mono_ns();
	pid = fork();
	if (pid == 0) {
		int fd = open(cp->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		/* Its own process group and job name: N copies are N jobs to
		 * the mount, and a signal to the group reaches its workers. */
		setsid();
		setenv("DLIOFS_JOB", job, 1);
		if (e->nodes) {
			/* mpirun would hand the terminal's input to rank 0. */
			int in = open("/dev/null", O_RDONLY | O_CLOEXEC);

			if (in >= 0)
				dup2(in, 0);
		}
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(av[0], av);
		fprintf(stderr, "dlio-whatif: cannot run %s: %s\n", av[0], strerror(errno));
		_exit(127);
	}
	wi_argv_free(av);
	return pid < 0 ? -errno : pid;
}

/* Wait for the copies; stopped (a signal to the tool), each copy still
 * running is stopped with its process group (a dlio-stall copy stops its
 * own job's group first: it is given the longer grace). */
static void wait_copies(struct copy *cp, unsigned n)
{
	unsigned left = 0;

	for (unsigned i = 0; i < n; i++)
		left += cp[i].pid > 0;
	while (left) {
		for (unsigned i = 0; i < n; i++) {
			int st;

			if (cp[i].pid <= 0 || cp[i].t_end)
				continue;
			if (tool_stop_requested())
				st = tool_stop_group(cp[i].pid, 5000);
			else if (tool_try_wait(cp[i].pid, &st) == 0)
				continue;
			cp[i].status = st;
			cp[i].t_end = dl_mono_ns();
			left--;
		}
		if (left) {
			struct timespec ts = {0, 20 * 1000000L};

			nanosleep(&ts, NULL);
		}
	}
}

/* The copy's last lines, and before them its own tools' messages from
 * further up: under mpirun an abort's banner (15-20 lines) follows the
 * job's one error line and pushed it out of the tail. */
static void tail_log(const char *path, unsigned c)
{
	enum { TAIL = 12, OWN = 6 };
	FILE *f = fopen(path, "r");
	char lines[TAIL][512], own[OWN][512];
	unsigned n = 0, n_own = 0;

	if (!f)
		return;
	while (fgets(lines[n % TAIL], sizeof(lines[0]), f)) {
		if (strncmp(lines[n % TAIL], "dlio-", 5) == 0 && n_own < OWN)
			memcpy(own[n_own++], lines[n % TAIL], sizeof(own[0]));
		n++;
	}
	fclose(f);
	fprintf(stderr, "dlio-whatif: copy %u's last output (%s):\n", c, path);
	unsigned first = n > TAIL ? n - TAIL : 0;

	/* Lines that are in the tail anyway are not printed twice: own[] holds
	 * the first OWN tool lines, those before the tail are the ones to add. */
	for (unsigned i = 0; i < n_own && first > 0; i++) {
		int in_tail = 0;

		for (unsigned j = first; j < n; j++)
			if (strcmp(own[i], lines[j % TAIL]) == 0)
				in_tail = 1;
		if (!in_tail)
			fprintf(stderr, "  %s", own[i]);
	}
	if (first > 0)
		fprintf(stderr, "  ...\n");
	for (unsigned i = first; i < n; i++)
		fprintf(stderr, "  %s", lines[i % TAIL]);
}

/* TRACE.json: the settings and each copy's figures, for predict. */
static int write_side(const struct wi_env *e, const struct wi_kv *kv, unsigned n,
		      const struct wi_jobmodel *m, unsigned copies, const char *trace)
{
	char path[PATH_MAX + 8];
	struct dl_jw w;
	FILE *f;

	snprintf(path, sizeof(path), "%s.json", trace);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	dl_jw_init(&w, f, 2);
	dl_jw_obj(&w, NULL);
	dl_jw_str(&w, "tool", "dlio-whatif");
	dl_jw_str(&w, "trace", trace);
	dl_jw_str(&w, "config", e->config);
	dl_jw_arr(&w, "settings");
	for (unsigned i = 0; i < n; i++) {
		dl_jw_obj(&w, NULL);
		dl_jw_str(&w, "key", kv[i].key);
		dl_jw_str(&w, "value", kv[i].val);
		dl_jw_end(&w);
	}
	dl_jw_end(&w);
	dl_jw_arr(&w, "command");
	for (size_t i = 0; e->argv[i]; i++)
		dl_jw_str(&w, NULL, e->argv[i]);
	dl_jw_end(&w);
	dl_jw_arr(&w, "copies");
	for (unsigned c = 0; c < copies; c++)
		wi_model_write(&w, NULL, &m[c]);
	dl_jw_end(&w);
	return wi_json_close(&w, f);
}

/* A cluster's job: each rank's figures, and a job that was not one job of
 * N ranks (a dlio-drive without MPI runs N jobs of one rank, each reading
 * everything) is a failed run, not figures. */
static void node_figs(const struct wi_env *e, const struct copy *cp, struct wi_run *out)
{
	out->nnodes = wi_figs_load_ranks(cp->report, out->node, WI_MAX_NODES);
	if (out->nnodes == e->nodes || (e->nodes == 1 && out->nnodes == 0)) {
		if (e->nodes == 1) {
			out->nnodes = 1;
			out->node[0] = out->copy[0];
		}
		return;
	}
	out->ok = 0;
	snprintf(out->note, sizeof(out->note),
		 "the job reported %u rank%s, not one per node (%u): is dlio-drive built with "
		 "the MPI of the launcher? (see %.120s)",
		 out->nnodes ? out->nnodes : 1, out->nnodes > 1 ? "s" : "", e->nodes, cp->log);
	out->nnodes = 0;
}

/* Start the copies, wait for them, read what they reported. */
static void run_copies(struct wi_env *e, const char *tag, struct copy *cp,
		       struct wi_jobmodel *models, struct wi_run *out)
{
	out->ok = 1;
	for (unsigned c = 0; c < e->copies; c++) {
		snprintf(cp[c].report, sizeof(cp[c].report), "%s/%s-c%u.json", e->workdir, tag, c);
		snprintf(cp[c].log, sizeof(cp[c].log), "%s/%s-c%u.log", e->workdir, tag, c);
		unlink(cp[c].report);
		cp[c].pid = start_copy(e, c, &cp[c]);
		if (cp[c].pid < 0) {
			out->ok = 0;
			snprintf(out->note, sizeof(out->note), "cannot start copy %u: %s", c,
				 strerror((int)-cp[c].pid));
		}
	}
	wait_copies(cp, e->copies);
	if (tool_stop_requested())
		return; /* stopped: no figures, nothing to say about the copies */
	for (unsigned c = 0; c < e->copies; c++) {
		int st = cp[c].status;
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);

		if (cp[c].pid < 0)
			continue;
		if (code) {
			out->ok = 0;
			snprintf(out->note, sizeof(out->note),
				 "copy %u exited with %d (see %.180s)", c, code, cp[c].log);
			tail_log(cp[c].log, c);
		}
		if (!wi_figs_load(cp[c].report, e->kind, &out->copy[c], &models[c])) {
			double run = (double)(cp[c].t_end - cp[c].t_start) / 1e9;

			wi_figs_set(&out->copy[c], WI_M_RUN, run);
			models[c].run_s = run;
			models[c].t_start = cp[c].t_start;
			models[c].t_end = cp[c].t_end;
			models[c].figs = out->copy[c];
			snprintf(models[c].name, sizeof(models[c].name), "whatif-%u", c);
			if (e->nodes)
				node_figs(e, &cp[c], out);
		} else {
			out->ok = 0;
			if (!code)
				snprintf(out->note, sizeof(out->note), "copy %u wrote no report",
					 c);
		}
	}
	out->ncopies = e->copies;
	wi_figs_total(out->copy, out->ncopies, &out->total);
}

int wi_run_once(struct wi_env *e, const struct wi_kv *kv, unsigned n, const char *tag,
		struct wi_run *out)
{
	struct copy cp[WI_MAX_COPIES];
	struct wi_jobmodel *models = calloc(WI_MAX_COPIES, sizeof(*models));
	char log[PATH_MAX + 64];
	uint64_t t0 = dl_mono_ns();
	int ret, traced = 0;

	memset(out, 0, sizeof(*out));
	memset(cp, 0, sizeof(cp));
	if (!models)
		return -ENOMEM;
	if (tool_stop_requested()) {
		free(models);
		return -EINTR;
	}
	snprintf(log, sizeof(log), "%s/daemon-%s.log", e->workdir, tag);
	ret = wi_mount(e, log);
	if (ret)
		goto out;
	ret = wi_cold(e, kv, n);
	if (!ret && e->trace_dir) {
		snprintf(out->trace, sizeof(out->trace), "%s/%s.trace", e->trace_dir, tag);
		ret = wi_trace_start(e, out->trace);
		traced = !ret;
	}
	if (!ret && !tool_stop_requested()) {
		run_copies(e, tag, cp, models, out);
		wi_cache_figs(e, out);
		/* The trace's side file carries them to predict's measured row. */
		for (unsigned c = 0; c < out->ncopies; c++)
			for (int m = 0; m < WI_NM; m++)
				if (wi_metrics[m].cache && wi_figs_has(&out->copy[c], m))
					wi_figs_set(&models[c].figs, m, out->copy[c].v[m]);
	}
	if (!ret && tool_stop_requested())
		ret = -EINTR;
	if (traced) {
		int r2 = wi_trace_stop(e);

		if (!r2)
			r2 = write_side(e, kv, n, models, e->copies, out->trace);
		if (r2 && !ret)
			ret = r2;
	}
	if (e->own) {
		int r2 = wi_umount(e);

		if (r2 && !ret)
			ret = r2;
	}
out:
	out->elapsed_s = (double)(dl_mono_ns() - t0) / 1e9;
	free(models);
	return ret;
}
