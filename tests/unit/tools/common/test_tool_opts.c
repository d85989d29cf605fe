/* The options table engine (tools/common/tool_opts.c): each row kind
 * parsed and stored, values checked with the option named, unknown options,
 * --help, operands (first, mixed, ending the options) and the --help list
 * written from the rows (columns, wrapping, hand breaks, hidden rows). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tool_opts_i.h"

struct ctx {
	int quiet;
	const char *name;
	unsigned count;
	char called[32];
	const char *ops[4];
	int nops;
};

static int set_call(void *c, const struct tool_opt *o, const char *arg)
{
	struct ctx *x = c;

	if (!strcmp(arg, "stop"))
		return 1;
	if (!strcmp(arg, "bad")) {
		fprintf(stderr, "p: --call bad: no\n");
		return -EINVAL;
	}
	snprintf(x->called, sizeof(x->called), "%c:%s", o->value, arg);
	return 0;
}

static int operand(void *c, const char *arg)
{
	struct ctx *x = c;

	if (x->nops == 2) {
		fprintf(stderr, "p: unexpected argument '%s'\n", arg);
		return -EINVAL;
	}
	x->ops[x->nops++] = arg;
	return 0;
}

static const struct tool_opt rows[] = {
    {.name = "quiet", .letter = 'q', .kind = TOOL_OPT_FLAG, .off = offsetof(struct ctx, quiet),
     .value = 7, .help = "no output"},
    {.name = "name", .kind = TOOL_OPT_STR, .off = offsetof(struct ctx, name), .arg = "NAME",
     .help = "a name, and a help line long enough that its words wrap at eighty columns "
	     "onto a second line"},
    {.name = "count", .letter = 'c', .hide_letter = 1, .kind = TOOL_OPT_COUNT,
     .off = offsetof(struct ctx, count), .min = 1, .max = 10, .arg = "N",
     .help = "broken\nby hand"},
    {.name = "call", .kind = TOOL_OPT_CALL, .set = set_call, .value = 'k', .arg = "V"},
    {.name = "a-very-long-option-name", .kind = TOOL_OPT_FLAG, .off = offsetof(struct ctx, quiet),
     .value = 1, .help = "below its name"},
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP, .help = "this text"},
};

static const char list[] =
    "  -q, --quiet     no output\n"
    "  --name NAME     a name, and a help line long enough that its words wrap at\n"
    "                  eighty columns onto a second line\n"
    "  --count N       broken\n"
    "                  by hand\n"
    "  --a-very-long-option-name\n"
    "                  below its name\n"
    "  -h, --help      this text\n";

static struct tool_opts table(void)
{
	return (struct tool_opts){.prog = "p", .head = "usage: p\n", .tail = "end\n", .col = 18,
				  .opt = rows, .n = TOOL_OPTS_N(rows)};
}

/* Run a parse with stdout and stderr captured: the answer, and what each said. */
static int parse(const struct tool_opts *t, int argc, char **argv, int first, struct ctx *c,
		 int *next, char *out, char *err)
{
	FILE *so = stdout, *se = stderr, *fo = tmpfile(), *fe = tmpfile();
	int ret;

	memset(c, 0, sizeof(*c));
	stdout = fo;
	stderr = fe;
	ret = tool_opts_parse(t, argc, argv, first, c, next);
	stdout = so;
	stderr = se;
	for (FILE *f = fo; f; f = f == fo ? fe : NULL) {
		char *b = f == fo ? out : err;
		size_t n;
		rewind(f);
		n = fread(b, 1, 4095, f);
		b[n] = 0;
		fclose(f);
	}
	return ret;
}

#define ARGV(...) ((char *[]){"p", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"p", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(t, first, ...) parse(t, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), first, &c, &next, out, err)

int main(void)
{
	struct tool_opts t = table();
	struct ctx c;
	char out[4096], err[4096], *buf = NULL;
	size_t len;
	int next, ret;

	/* every kind stored; the operand after the options */
	ret = PARSE(&t, 1, "-q", "--name", "x", "-c", "5", "--call", "v", "op");
	CHECK(ret == 0, "parse: %d (%s)", ret, err);
	CHECK(c.quiet == 7 && c.name && !strcmp(c.name, "x") && c.count == 5, "stored: %d %s %u",
	      c.quiet, c.name ? c.name : "-", c.count);
	CHECK(!strcmp(c.called, "k:v"), "setter: %s", c.called);
	CHECK(next == 8, "next %d", next);
	/* a count out of range, named with its value */
	ret = PARSE(&t, 1, "--count", "11");
	CHECK(ret == -EINVAL, "11 accepted: %d", ret);
	CHECK(!strcmp(err, "p: --count 11: must be between 1 and 10\n"), "said: %s", err);
	ret = PARSE(&t, 1, "--count=x");
	CHECK(ret == -EINVAL && strstr(err, "--count x:"), "x: %d %s", ret, err);
	/* a setter's own answers */
	CHECK(PARSE(&t, 1, "--call", "bad") == -EINVAL && !strcmp(err, "p: --call bad: no\n"),
	      "bad: %s", err);
	CHECK(PARSE(&t, 1, "--call", "stop", "--bogus") == 1, "a setter's 1 ends the parse");
	/* an unknown option: getopt's message, then the usage or the hint */
	ret = PARSE(&t, 1, "--bogus");
	CHECK(ret == -EINVAL && strstr(err, "--bogus") && !strstr(err, "usage"), "bogus: %s", err);
	t.usage_on_error = 1;
	ret = PARSE(&t, 1, "-x");
	CHECK(ret == -EINVAL && strstr(err, "usage: p\n  -q, --quiet"), "usage: %s", err);
	t.usage_on_error = 0;
	t.hint = "(p --help lists the options)\n";
	ret = PARSE(&t, 1, "--name");
	CHECK(ret == -EINVAL && strstr(err, "(p --help lists the options)\n"), "hint: %s", err);
	t.hint = NULL;
	/* --help: head, list, tail on stdout; the parse answers 1 */
	ret = PARSE(&t, 1, "-q", "--help");
	CHECK(ret == 1, "help: %d", ret);
	CHECK(!strncmp(out, "usage: p\n", 9) && !strncmp(out + 9, list, sizeof(list) - 1) &&
		  !strcmp(out + 9 + sizeof(list) - 1, "end\n"),
	      "help text:\n%s", out);
	/* the same list from tool_opts_list: hidden rows (--call) left out */
	FILE *m = open_memstream(&buf, &len);
	tool_opts_list(m, &t);
	fclose(m);
	CHECK(!strcmp(buf, list), "list:\n%s", buf);
	free(buf);
	/* operands: moved last by default, ending the options with stop_at_operand */
	ret = PARSE(&t, 1, "op", "-q");
	CHECK(ret == 0 && c.quiet == 7 && next == 2, "permuted: %d %d %d", ret, c.quiet, next);
	t.stop_at_operand = 1;
	ret = PARSE(&t, 1, "op", "-q");
	CHECK(ret == 0 && c.quiet == 0 && next == 1, "stopped: %d %d %d", ret, c.quiet, next);
	/* from argv[2] on (a subcommand before) */
	ret = PARSE(&t, 2, "run", "-q", "job");
	CHECK(ret == 0 && c.quiet == 7 && next == 3, "first 2: %d %d %d", ret, c.quiet, next);
	/* operands mixed with options, each to the callback in order */
	t.operand = operand;
	ret = PARSE(&t, 1, "a", "-q", "b");
	CHECK(ret == 0 && c.quiet == 7 && c.nops == 2 && !strcmp(c.ops[0], "a") &&
		  !strcmp(c.ops[1], "b"),
	      "mixed: %d %d %d", ret, c.quiet, c.nops);
	ret = PARSE(&t, 1, "a", "b", "c");
	CHECK(ret == -EINVAL && strstr(err, "unexpected argument 'c'"), "third: %d %s", ret, err);
	/* the same without stop_at_operand: getopt permutes, and each operand
	 * still reaches the callback once, in order (a second scan after the
	 * end handed the first one back again) */
	t.stop_at_operand = 0;
	ret = PARSE(&t, 1, "a", "-q", "b");
	CHECK(ret == 0 && c.quiet == 7 && c.nops == 2 && !strcmp(c.ops[0], "a") &&
		  !strcmp(c.ops[1], "b"),
	      "mixed, permuting: %d %d %d", ret, c.quiet, c.nops);
	ret = PARSE(&t, 1, "a", "b", "c");
	CHECK(ret == -EINVAL && strstr(err, "unexpected argument 'c'"), "third, permuting: %d %s",
	      ret, err);
	return tap_done("tool_opts");
}
