/* `dliofs s3 serve CONFIG [--listen HOST:PORT] [--control SOCKET]`: load
 * the config, make its pacer, start the server (server.c), serve until
 * SIGINT or SIGTERM. */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/clock.h"
#include "s3.h"
#include "tool_opts_i.h"

/* `dliofs s3 serve`'s command line, parsed by the tools' options engine. */
struct s3_cli {
	const char *listen, *cfg, *control;
	unsigned idle_s;
};

/* CONFIG.yaml, the one operand, wherever it stands among the options. */
static int set_config(void *ctx, const char *arg)
{
	struct s3_cli *c = ctx;

	if (c->cfg) {
		fprintf(stderr, "dliofs s3 serve: unexpected argument '%s'\n", arg);
		return -EINVAL;
	}
	c->cfg = arg;
	return 0;
}

static const struct tool_opt serve_opt[] = {
    {.name = "listen", .kind = TOOL_OPT_STR, .arg = "HOST:PORT",
     .off = offsetof(struct s3_cli, listen),
     .help = "where to listen (default: the config's s3.listen, else\n"
	     "127.0.0.1:9000; port 0 picks a free one; the address is\n"
	     "printed once listening)"},
    {.name = "control", .kind = TOOL_OPT_STR, .arg = "SOCKET",
     .off = offsetof(struct s3_cli, control),
     .help = "a local socket (owner-only) for `dliofs stat | set |\n"
	     "cache drop | trace SOCKET`, as a mount's .dliofs/ gives them"},
    {.name = "idle-timeout", .kind = TOOL_OPT_COUNT, .arg = "S",
     .off = offsetof(struct s3_cli, idle_s), .min = 1, .max = 86400,
     .help = "a connection silent for S seconds is closed (default 60)"},
    {.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};

static const struct tool_opts serve_opts = {
	.prog = "dliofs s3 serve",
	.head = "usage: dliofs s3 serve CONFIG.yaml [--listen HOST:PORT] [--control SOCKET]\n"
		"                 [--idle-timeout S]\n"
		"  Serve every dataset of CONFIG as a bucket over S3's HTTP API,\n"
		"  and every backing directory as a bucket named by its `at`\n"
		"  (writes go there when it is writable), shaped by the config's\n"
		"  pacer. SIGINT or SIGTERM stops it.\n\n",
	.col = 24,
	.opt = serve_opt,
	.n = TOOL_OPTS_N(serve_opt),
	.usage_on_error = 1,
	.operand = set_config,
};

static int serve(const char *cfgpath, const char *listen, const char *control, unsigned idle_s)
{
	struct dl_config *cfg = NULL;
	struct dl_pacer *pacer = NULL;
	struct dl_s3_server *srv = NULL;
	struct dl_s3_server_opts o = {.listen = listen, .control = control, .config_path = cfgpath,
				       .idle_s = idle_s};
	char why[1024];
	sigset_t set;
	int sig, ret;

	/* A bad --listen is said before the config is read; without one, the
	 * config's s3.listen, else the default. */
	if (listen && dl_s3_listen_check(listen)) {
		fprintf(stderr, "dliofs s3: --listen %s: expected HOST:PORT with a resolvable "
			"host and a port 0..65535\n", listen);
		return 2;
	}
	ret = dl_config_load(cfgpath, stderr, &cfg);
	if (ret)
		return 1;
	if (!listen)
		listen = cfg->s3.listen[0] ? cfg->s3.listen : "127.0.0.1:9000";
	o.listen = listen;
	if (dl_s3_listen_check(listen)) {
		fprintf(stderr, "dliofs s3: %s: s3.listen %s: not an address of this machine\n",
			cfgpath, listen);
		ret = 2;
		goto out;
	}
	ret = dl_pacer_new(&cfg->pacer, dl_mono_ns(), cfg->seed, &pacer);
	if (ret) {
		fprintf(stderr, "dliofs s3: %s: cannot set up: %s\n", cfgpath, strerror(-ret));
		ret = 1;
		goto out;
	}
	/* The config's trace: section records from the start, as a mount's. */
	o.trace_file = cfg->trace.enabled ? cfg->trace.file : NULL;
	o.trace_ops = cfg->trace.ops_mask;

	/* The daemon's threads inherit this mask: only sigwait sees the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	ret = dl_s3_server_start(cfg, pacer, &o, &srv, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "dliofs s3: %s\n", why);
		ret = 1;
		goto out;
	}
	{
		const char *colon = strrchr(listen, ':');

		printf("dliofs s3: serving %u bucket%s on http://%.*s:%u\n", dl_s3_server_buckets(srv),
		       dl_s3_server_buckets(srv) == 1 ? "" : "s", (int)(colon - listen), listen,
		       dl_s3_server_port(srv));
		fflush(stdout);
	}
	while (sigwait(&set, &sig) == 0 && sig != SIGINT && sig != SIGTERM)
		;
	ret = 0;
out:
	dl_s3_server_stop(srv);
	if (pacer)
		dl_pacer_free(pacer);
	dl_config_free(cfg);
	return ret;
}

int dl_s3_main(int argc, char **argv)
{
	struct s3_cli c = {.idle_s = 60};
	char *prog;
	int next, ret;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		tool_opts_usage(argc < 2 ? stderr : stdout, &serve_opts);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "serve") != 0) {
		fprintf(stderr, "dliofs s3: unknown command '%s' (expected: serve)\n", argv[1]);
		tool_opts_usage(stderr, &serve_opts);
		return 2;
	}
	/* getopt's own messages (an unknown option) name argv[0]: the verb's
	 * whole name rather than "s3". */
	prog = argv[0];
	argv[0] = (char *)serve_opts.prog;
	ret = tool_opts_parse(&serve_opts, argc, argv, 2, &c, &next);
	argv[0] = prog;
	if (ret)
		return ret > 0 ? 0 : 2;
	if (!c.cfg) {
		fprintf(stderr, "dliofs s3 serve: missing CONFIG.yaml\n");
		tool_opts_usage(stderr, &serve_opts);
		return 2;
	}
	return serve(c.cfg, c.listen, c.control, c.idle_s);
}
