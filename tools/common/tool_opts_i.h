/* The options table engine: one table per command gives each option its
 * long name, letter, argument name, help line and what it sets, and the
 * engine drives getopt_long, the checks and --help from it, so that a
 * command's parsing and its --help can never disagree. The only caller of
 * getopt_long in the tree (scripts/check-layers.sh enforces it). */
#ifndef DLIOFS_TOOL_OPTS_I_H
#define DLIOFS_TOOL_OPTS_I_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tool_opt;

/* A setter: 0 (go on), 1 (all said, e.g. --version: the command exits 0)
 * or -errno (the setter said why on stderr). */
typedef int (*tool_opt_set_fn)(void *ctx, const struct tool_opt *o, const char *arg);

enum tool_opt_kind {
	TOOL_OPT_FLAG,	/* int at .off = .value */
	TOOL_OPT_STR,	/* const char * at .off = the argument */
	TOOL_OPT_COUNT, /* unsigned at .off: a count in [.min, .max] */
	TOOL_OPT_CALL,	/* .set(ctx, o, arg) */
	TOOL_OPT_HELP,	/* the usage on stdout; the parse answers 1 */
};

struct tool_opt {
	const char *name; /* --name; NULL: only -letter */
	int letter;	  /* -letter; 0: none */
	enum tool_opt_kind kind;
	const char *arg;  /* the argument's name in --help; NULL: takes none */
	const char *help; /* its line in --help; NULL: not listed. A '\n' breaks
			   * the line there (and only there), else words wrap */
	size_t off;	  /* the field it sets in the command's context */
	int value;	  /* what a FLAG stores */
	uint64_t min, max;
	tool_opt_set_fn set;
	const void *data;    /* the setter's own (e.g. the row of a richer table) */
	unsigned hide_letter; /* --help shows the long name only */
};

/* What the engine says on a bad value of a TOOL_OPT_COUNT: "PROG: --NAME
 * VALUE: must be between MIN and MAX". */

/* The table says before its list, the list, then after it. */
struct tool_opts {
	const char *prog;  /* "dlio-gen": the start of its error messages */
	const char *head;  /* before the options; may be NULL */
	const char *tail;  /* after them; may be NULL */
	unsigned col;	   /* where the help lines start */
	const struct tool_opt *opt;
	size_t n;
	int stop_at_operand; /* options end at the first operand (getopt's "+") */
	int usage_on_error;  /* an unknown option or missing argument prints the
			      * usage on stderr after getopt's message */
	const char *hint;    /* or this line on stderr, e.g. where --help is */
	/* Where operands and options mix (dliofs mount MNT -f CFG): each
	 * operand in turn, 0 or -errno (said); NULL: the first operand ends
	 * the options (or, without stop_at_operand, getopt moves them last) */
	int (*operand)(void *ctx, const char *arg);
	/* the whole usage, where the command says more than head, list, tail */
	void (*usage)(FILE *f, const struct tool_opts *t);
};

#define TOOL_OPTS_N(a) (sizeof(a) / sizeof((a)[0]))

/* Parse argv[first..argc) into ctx. *next: the first operand. 0, 1 (help
 * or version said on stdout: exit 0) or -errno (said on stderr). */
int tool_opts_parse(const struct tool_opts *t, int argc, char **argv, int first, void *ctx,
		    int *next);

/* head, the options list, tail. */
void tool_opts_usage(FILE *f, const struct tool_opts *t);
/* The options list alone. */
void tool_opts_list(FILE *f, const struct tool_opts *t);
/* text from column col (the cursor is there) to the line's end, words
 * wrapped at 80 columns, continuation lines indented to col. */
void tool_opts_wrap(FILE *f, const char *text, unsigned col);

#endif
