/* Stopping a tool that runs jobs (dlio-whatif, dlio-stall) from outside:
 * SIGINT, SIGTERM or SIGHUP (a scheduler, `timeout`, Ctrl-C, a closed
 * terminal) is only recorded by the handler; the tool's wait loops see it,
 * stop the job's process group, unmount and remove what they made, and the
 * tool exits 128 + the signal (tools/common/tool_stop.c). */
#ifndef DLIOFS_TOOL_STOP_I_H
#define DLIOFS_TOOL_STOP_I_H

#include <sys/types.h>

/* Catch the three signals (no SA_RESTART: a blocking wait returns EINTR),
 * even where they were ignored when the tool started. */
void tool_stop_install(void);
/* The signal that asked the tool to stop, 0 when none has. */
int tool_stop_requested(void);
/* Stop the process group of leader (its own group): SIGTERM to the group,
 * SIGKILL to whatever of it is left after grace_ms (or at once once the
 * leader is gone), the leader reaped. Returns its wait status. */
int tool_stop_group(pid_t leader, unsigned grace_ms);
/* waitpid(pid, WNOHANG) that never fails on EINTR: pid when it ended (status
 * in *st), 0 while it runs, -1 on error. */
pid_t tool_try_wait(pid_t pid, int *st);

#endif
