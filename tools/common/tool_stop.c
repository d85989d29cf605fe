/* See tool_stop_i.h. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "dliofs/clock.h"
#include "tool_stop_i.h"

/* A signal handler can only reach static storage: the one piece of global
 * state in these tools, written by the handler, read by the wait loops. */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	if (!stop_sig)
		stop_sig = sig;
}

void tool_stop_install(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int tool_stop_requested(void) { return stop_sig; }

pid_t tool_try_wait(pid_t pid, int *st)
{
	pid_t w;

	do
		w = waitpid(pid, st, WNOHANG);
	while (w < 0 && errno == EINTR);
	return w;
}

static void nap_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};

	nanosleep(&ts, NULL); /* a signal cutting it short is fine */
}

int tool_stop_group(pid_t leader, unsigned grace_ms)
{
	uint64_t deadline = dl_mono_ns() + (uint64_t)grace_ms * 1000000ULL;
	siginfo_t si;
	int st = 0;

	if (leader <= 0)
		return 0;
	killpg(leader, SIGTERM);
	for (;;) {
		/* Ended, not yet reaped: the group's id is still ours to kill. */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)leader, &si, WEXITED | WNOHANG | WNOWAIT) < 0 &&
		    errno != EINTR)
			return 0;
		if (si.si_pid == leader || dl_mono_ns() >= deadline)
			break;
		nap_ms(20);
	}
	/* What is left of the group (workers of a leader that is gone, or
	 * all of it past the grace time) goes now. */
	killpg(leader, SIGKILL);
	while (waitpid(leader, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}
