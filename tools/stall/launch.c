/* Running the job once: inject the hook (PYTHONPATH) and the CUPTI library
 * (CUDA_INJECTION64_PATH), sample the mount's statistics while it runs, then
 * load what the injected pieces wrote. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool_stop_i.h"
#include "dliofs/clock.h"
#include "stall_i.h"

/* The job runs in its own process group, so that stopping it reaches every
 * process it started. On our terminal, that group is made the foreground
 * one, as a shell does: Ctrl-C goes to the job alone (it ends, and we
 * report), and it may read the terminal. Returns whether it was handed the
 * terminal (to be taken back). */
static int give_terminal(pid_t pgid)
{
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	int given = 0;

	if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp())
		return 0;
	/* A background group changing the foreground would be stopped. */
	sigaction(SIGTTOU, &ign, &old);
	given = tcsetpgrp(STDIN_FILENO, pgid) == 0;
	sigaction(SIGTTOU, &old, NULL);
	return given;
}

static void take_terminal(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;

	sigaction(SIGTTOU, &ign, &old);
	tcsetpgrp(STDIN_FILENO, getpgrp());
	sigaction(SIGTTOU, &old, NULL);
}

static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			ret = -EIO;
			break;
		}
	}
	if (n < 0)
		ret = -errno;
	if (close(out) && !ret)
		ret = -errno;
out:
	close(in);
	return ret;
}

/* The hook lives alone in its directory: that directory goes first on
 * PYTHONPATH, and nothing else of ours should shadow the job's modules. */
static int install_hook(const struct st_launch *l, char *dir, size_t len)
{
	char dst[4200];
	struct stat st;

	int n = snprintf(dir, len, "%s/hook", l->workdir);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	n = snprintf(dst, sizeof(dst), "%s/sitecustomize.py", dir);
	if (n < 0 || (size_t)n >= sizeof(dst))
		return -ENAMETOOLONG;
	if (stat(dst, &st) == 0)
		return 0;
	return copy_file(l->hook_src, dst);
}

static void child_env(const struct st_launch *l, const char *hookdir, const struct st_run *run)
{
	const char *pp = getenv("PYTHONPATH");
	char *v = NULL;
	char k[16];

	if (pp && *pp) {
		if (asprintf(&v, "%s:%s", hookdir, pp) < 0)
			_exit(127);
		setenv("PYTHONPATH", v, 1);
	} else {
		setenv("PYTHONPATH", hookdir, 1);
	}
	setenv("DLIO_STALL_OUT", run->steps_path, 1);
	if (l->replay > 0) {
		snprintf(k, sizeof(k), "%d", l->replay);
		setenv("DLIO_STALL_MODE", "replay", 1);
		setenv("DLIO_STALL_REPLAY", k, 1);
		if (l->epoch_steps && *l->epoch_steps)
			setenv("DLIO_STALL_EPOCH_STEPS", l->epoch_steps, 1);
		else
			unsetenv("DLIO_STALL_EPOCH_STEPS");
	} else {
		unsetenv("DLIO_STALL_MODE");
		unsetenv("DLIO_STALL_REPLAY");
		unsetenv("DLIO_STALL_EPOCH_STEPS");
	}
	if (run->cupti_state == 1) {
		setenv("CUDA_INJECTION64_PATH", l->cupti_lib, 1);
		setenv("DLIO_STALL_GPU_OUT", run->gpu_path, 1);
	}
	free(v);
}

int st_launch(const struct st_launch *l, struct st_run *run)
{
	char hookdir[4200];
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	int64_t last_sample = 0;
	pid_t pid;
	int ret, st = 0, tty = 0;

	snprintf(run->steps_path, sizeof(run->steps_path), "%s/%s.steps", l->workdir, l->tag);
	snprintf(run->gpu_path, sizeof(run->gpu_path), "%s/%s.gpu", l->workdir, l->tag);
	unlink(run->steps_path);
	unlink(run->gpu_path);
	ret = install_hook(l, hookdir, sizeof(hookdir));
	if (ret) {
		fprintf(stderr, "dlio-stall: cannot install the hook from %s: %s\n", l->hook_src,
			strerror(-ret));
		return ret;
	}
	run->cupti_state = 0;
	if (l->cupti_lib && inj && *inj && strcmp(inj, l->cupti_lib)) {
		/* nsys and friends inject themselves the same way: leave them be. */
		run->cupti_state = -1;
		snprintf(run->cupti_note, sizeof(run->cupti_note),
			 "CUDA_INJECTION64_PATH already set (%s): GPU tracing left to it", inj);
	} else if (l->cupti_lib) {
		run->cupti_state = 1;
	}
	if (l->mount) {
		ret = st_mount_stats(l->mount, &run->io.before);
		run->io.have_before = ret == 0;
		st_mount_pacer_desc(l->mount, run->io.pacer, sizeof(run->io.pacer));
	}

	if (tool_stop_requested())
		return -EINTR;
	run->t_start = (int64_t)dl_mono_ns();
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct sigaction dfl = {.sa_handler = SIG_DFL};

		setpgid(0, 0);
		/* The job gets the signals as they were, not our handlers. */
		sigaction(SIGINT, &dfl, NULL);
		sigaction(SIGTERM, &dfl, NULL);
		sigaction(SIGHUP, &dfl, NULL);
		child_env(l, hookdir, run);
		execvp(l->argv[0], l->argv);
		fprintf(stderr, "dlio-stall: cannot run %s: %s\n", l->argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* both sides: whichever runs first */
	tty = give_terminal(pid);
	for (;;) {
		pid_t w = tool_try_wait(pid, &st);
		int64_t now = (int64_t)dl_mono_ns();

		if (w == pid)
			break;
		if (w < 0) {
			ret = -errno;
			goto restore;
		}
		if (tool_stop_requested()) {
			/* The job's group: SIGTERM, then SIGKILL after 2 s. */
			run->status = tool_stop_group(pid, 2000);
			ret = -EINTR;
			goto restore;
		}
		if (l->mount && now - last_sample >= (int64_t)l->interval_ms * 1000000) {
			st_io_sample(l->mount, &run->io, now);
			last_sample = now;
		}
		usleep(10000);
	}
	run->t_end = (int64_t)dl_mono_ns();
	run->status = st;
	if (l->mount) {
		st_io_sample(l->mount, &run->io, run->t_end);
		ret = st_mount_stats(l->mount, &run->io.after);
		run->io.have_after = ret == 0;
	}
	ret = st_records_load(run->steps_path, &run->rec);
	if (ret) {
		fprintf(stderr, "dlio-stall: cannot read %s: %s\n", run->steps_path,
			strerror(-ret));
		goto restore;
	}
	run->main = st_main_proc(&run->rec);
	ret = st_gpu_load(run->gpu_path, run->main ? run->main->pid : 0, &run->rec.gpu);
	if (ret)
		fprintf(stderr, "dlio-stall: cannot read %s: %s\n", run->gpu_path, strerror(-ret));
	ret = 0;
restore:
	if (tty)
		take_terminal();
	return ret;
}

void st_run_free(struct st_run *run)
{
	st_records_free(&run->rec);
	st_io_free(&run->io);
	st_gpu_summary_free(&run->gsum);
	run->main = NULL;
}
