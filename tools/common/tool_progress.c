/* The tools' progress line (tool_progress_i.h). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "tool_progress_i.h"

#define CLEAR "\r\033[K"

void tool_progress_init(struct tool_progress *p, int quiet, int log)
{
	p->tty = !quiet && isatty(STDERR_FILENO);
	p->log = !quiet && !p->tty && log;
	p->drawn = 0;
}

int tool_progress_on(const struct tool_progress *p) { return p->tty || p->log; }

void tool_progress(struct tool_progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!tool_progress_on(p))
		return;
	if (p->tty)
		fputs(CLEAR, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (p->log)
		fputc('\n', stderr);
	p->drawn = p->tty;
	fflush(stderr);
}

void tool_progress_line(struct tool_progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->tty)
		return;
	if (p->drawn)
		fputs(CLEAR, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	p->drawn = 0;
	fflush(stderr);
}

void tool_progress_end(struct tool_progress *p)
{
	if (p->drawn)
		fputs(CLEAR, stderr);
	p->drawn = 0;
}
