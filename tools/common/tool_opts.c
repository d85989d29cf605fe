/* The options table engine (tool_opts_i.h): getopt_long's long options
 * and letters built from a command's table, each value checked and stored
 * as its row says, and --help written from the same rows. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/units.h"
#include "tool_opts_i.h"

#define HELP_WIDTH 80
/* Rows in one table: a command's options, with room to spare. */
#define OPTS_MAX 128

void tool_opts_wrap(FILE *f, const char *text, unsigned col)
{
	unsigned at = col;

	if (strchr(text, '\n')) {
		/* broken by hand: kept as written */
		for (const char *nl; (nl = strchr(text, '\n')); text = nl + 1)
			fprintf(f, "%.*s\n%*s", (int)(nl - text), text, (int)col, "");
		fprintf(f, "%s\n", text);
		return;
	}
	while (*text) {
		size_t n = strcspn(text, " ");
		if (at > col && at + 1 + n > HELP_WIDTH) {
			fprintf(f, "\n%*s", (int)col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)n, text);
		at += (unsigned)n;
		text += n;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

static void list_one(FILE *f, const struct tool_opts *t, const struct tool_opt *o)
{
	char left[160];
	const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
	int n;

	if (o->letter && !o->hide_letter && o->name)
		n = snprintf(left, sizeof(left), "  -%c, --%s%s%s", o->letter, o->name, sp, arg);
	else if (o->name)
		n = snprintf(left, sizeof(left), "  --%s%s%s", o->name, sp, arg);
	else
		n = snprintf(left, sizeof(left), "  -%c%s%s", o->letter, sp, arg);
	fputs(left, f);
	if (n + 1 >= (int)t->col)
		fprintf(f, "\n%*s", (int)t->col, "");
	else
		fprintf(f, "%*s", (int)t->col - n, "");
	tool_opts_wrap(f, o->help, t->col);
}

void tool_opts_list(FILE *f, const struct tool_opts *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->opt[i].help)
			list_one(f, t, &t->opt[i]);
}

void tool_opts_usage(FILE *f, const struct tool_opts *t)
{
	if (t->usage) {
		t->usage(f, t);
		return;
	}
	if (t->head)
		fputs(t->head, f);
	tool_opts_list(f, t);
	if (t->tail)
		fputs(t->tail, f);
}

/* "--name" or "-l", as the user may have written it. */
static const char *said(const struct tool_opt *o, char *buf, size_t len)
{
	if (o->name)
		snprintf(buf, len, "--%s", o->name);
	else
		snprintf(buf, len, "-%c", o->letter);
	return buf;
}

static int take(const struct tool_opts *t, const struct tool_opt *o, const char *arg, void *ctx)
{
	void *field = (char *)ctx + o->off;
	const char *why = NULL;
	uint64_t v;
	char nm[64];

	switch (o->kind) {
	case TOOL_OPT_FLAG:
		*(int *)field = o->value;
		return 0;
	case TOOL_OPT_STR:
		*(const char **)field = arg;
		return 0;
	case TOOL_OPT_COUNT:
		if (dl_parse_count(arg, &v, &why) || v < o->min || v > o->max) {
			fprintf(stderr, "%s: %s %s: must be between %llu and %llu\n", t->prog,
				said(o, nm, sizeof(nm)), arg, (unsigned long long)o->min,
				(unsigned long long)o->max);
			return -EINVAL;
		}
		*(unsigned *)field = (unsigned)v;
		return 0;
	case TOOL_OPT_CALL:
		return o->set(ctx, o, arg);
	case TOOL_OPT_HELP:
		tool_opts_usage(stdout, t);
		return 1;
	}
	return -EINVAL;
}

int tool_opts_parse(const struct tool_opts *t, int argc, char **argv, int first, void *ctx,
		    int *next)
{
	struct option lo[OPTS_MAX + 1];
	char letters[2 * OPTS_MAX + 2];
	char **av = argv;
	size_t k = 0, j = 0;
	int ac = argc, c, ret = 0;

	if (t->n > OPTS_MAX)
		abort(); /* a table larger than the engine's: raise OPTS_MAX */
	if (t->operand)
		letters[j++] = '-'; /* operands in order, as code 1, among the options */
	else if (t->stop_at_operand)
		letters[j++] = '+';
	for (size_t i = 0; i < t->n; i++) {
		const struct tool_opt *o = &t->opt[i];
		int has = o->arg ? required_argument : no_argument;
		if (o->name)
			lo[k++] = (struct option){o->name, has, NULL, 256 + (int)i};
		if (o->letter) {
			letters[j++] = (char)o->letter;
			if (o->arg)
				letters[j++] = ':';
		}
	}
	lo[k] = (struct option){NULL, 0, NULL, 0};
	letters[j] = 0;
	if (first > argc)
		first = argc;
	/* getopt starts afresh only from optind 0, which means argv[1]: a
	 * later first argument (after a subcommand) is parsed in a copy whose
	 * argv[0] is still the program's name for getopt's messages. */
	if (first > 1) {
		ac = argc - first + 1;
		av = malloc(((size_t)ac + 1) * sizeof(*av));
		if (!av) {
			fprintf(stderr, "%s: out of memory\n", t->prog);
			return -ENOMEM;
		}
		av[0] = argv[0];
		memcpy(av + 1, argv + first, (size_t)(ac - 1) * sizeof(*av));
		av[ac] = NULL;
	}
	optind = 0;
	opterr = 1;
	for (;;) {
		const struct tool_opt *o = NULL;

		c = getopt_long(ac, av, letters, lo, NULL);
		if (c == -1) {
			/* What follows "--": operands all; getopt is not asked
			 * again (a second scan of a permuted argv hands back the
			 * first operand again). */
			while (t->operand && optind < ac)
				if ((ret = t->operand(ctx, av[optind++])))
					goto out;
			break;
		}
		if (c == 1 && t->operand) {
			if ((ret = t->operand(ctx, optarg)))
				goto out;
			continue;
		}
		if (c >= 256 && (size_t)(c - 256) < t->n)
			o = &t->opt[c - 256];
		for (size_t i = 0; !o && c > 0 && c < 256 && c != '?' && i < t->n; i++)
			if (t->opt[i].letter == c)
				o = &t->opt[i];
		if (!o) {
			if (t->usage_on_error)
				tool_opts_usage(stderr, t);
			else if (t->hint)
				fputs(t->hint, stderr);
			ret = -EINVAL;
			goto out;
		}
		if ((ret = take(t, o, optarg, ctx)))
			goto out;
	}
	*next = optind + (first > 1 ? first - 1 : 0);
out:
	if (av != argv) {
		/* getopt's reordering, back into the caller's argv */
		memcpy(argv + first, av + 1, (size_t)(ac - 1) * sizeof(*av));
		free(av);
	}
	return ret;
}
