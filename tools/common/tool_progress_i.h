/* One progress line for every tool (tools/common/tool_progress.c), on
 * stderr. On a terminal it is redrawn in place and cleared at the end;
 * off a terminal it is silent, or, for a tool whose runs are long enough to
 * want a log (dlio-whatif), a line each. -q makes it silent everywhere. */
#ifndef DLIOFS_TOOL_PROGRESS_I_H
#define DLIOFS_TOOL_PROGRESS_I_H

struct tool_progress {
	int tty;   /* stderr is a terminal (and not quiet) */
	int log;   /* off a terminal: a line per update */
	int drawn; /* a redrawn line is on the terminal now */
};

/* quiet: nothing at all; log: off a terminal, a line per update. */
void tool_progress_init(struct tool_progress *p, int quiet, int log);
/* Is anything shown at all? (A tool skips computing its figures if not.) */
int tool_progress_on(const struct tool_progress *p);
/* The line, redrawn in place on a terminal; a line of its own when logging. */
void tool_progress(struct tool_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A line that stays, on a terminal only (a step announced while the job's
 * own output shares the terminal); it replaces a redrawn line. */
void tool_progress_line(struct tool_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Clear a redrawn line (the report follows on a clean terminal). */
void tool_progress_end(struct tool_progress *p);

#endif
