/* `dliofs s3 serve CONFIG [--listen HOST:PORT] [--control SOCKET]`: load
 * the config, make its pacer, start the server (server.c), serve until
 * SIGINT or SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/clock.h"
#include "s3.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: dliofs s3 serve CONFIG.yaml [--listen HOST:PORT] [--control SOCKET]\n"
		     "                 [--idle-timeout S]\n"
		     "  Serve every dataset of CONFIG as a bucket over S3's HTTP API,\n"
		     "  and every backing directory as a bucket named by its `at`\n"
		     "  (writes go there when it is writable), shaped by the config's\n"
		     "  pacer (default listen: the config's s3.listen, else\n"
		     "  127.0.0.1:9000; port 0 picks a free one; the address is printed\n"
		     "  once listening). A connection silent for S seconds (default 60)\n"
		     "  is closed.\n"
		     "  --control SOCKET: a local socket (owner-only) for `dliofs stat | set |\n"
		     "  cache drop | trace SOCKET`, as a mount's .dliofs/ gives them.\n");
}

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
	const char *listen = NULL, *cfg = NULL, *control = NULL;
	unsigned long idle_s = 60;
	char *end;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "serve") != 0) {
		fprintf(stderr, "dliofs s3: unknown command '%s' (expected: serve)\n", argv[1]);
		usage(stderr);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
			listen = argv[++i];
		} else if (!strncmp(argv[i], "--listen=", 9)) {
			listen = argv[i] + 9;
		} else if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			control = argv[++i];
		} else if (!strncmp(argv[i], "--control=", 10)) {
			control = argv[i] + 10;
		} else if (!strcmp(argv[i], "--idle-timeout") && i + 1 < argc) {
			idle_s = strtoul(argv[++i], &end, 10);
			if (*argv[i] < '0' || *argv[i] > '9' || *end || idle_s < 1 || idle_s > 86400) {
				fprintf(stderr, "dliofs s3 serve: --idle-timeout %s: expected "
					"seconds from 1 to 86400\n", argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-' || cfg) {
			fprintf(stderr, "dliofs s3 serve: unexpected argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			cfg = argv[i];
		}
	}
	if (!cfg) {
		fprintf(stderr, "dliofs s3 serve: missing CONFIG.yaml\n");
		usage(stderr);
		return 2;
	}
	return serve(cfg, listen, control, (unsigned)idle_s);
}
