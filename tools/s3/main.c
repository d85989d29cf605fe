/* `dliofs s3 serve CONFIG [--listen HOST:PORT]`: load the config, start
 * libmicrohttpd (one thread per connection: the pacer's wait blocks only
 * that connection), serve until SIGINT or SIGTERM. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dliofs/clock.h"
#include "s3.h"
#include "obs.h"
#include "s3_i.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: dliofs s3 serve CONFIG.yaml [--listen HOST:PORT] [--control SOCKET]\n"
		     "  Serve every dataset of CONFIG as a bucket over S3's HTTP API,\n"
		     "  shaped by the config's pacer (default listen 127.0.0.1:9000;\n"
		     "  port 0 picks a free one; the address is printed once listening).\n"
		     "  --control SOCKET: a local socket (owner-only) for `dliofs stat | set |\n"
		     "  cache drop | trace SOCKET`, as a mount's .dliofs/ gives them.\n");
}

/* HOST:PORT (HOST may be [v6]) into an address. */
static int resolve(const char *listen, struct sockaddr_storage *sa, socklen_t *salen)
{
	char host[256];
	const char *colon = strrchr(listen, ':'), *h = listen;
	size_t hlen;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *ai = NULL;
	char *end;
	long port;

	if (!colon)
		return -EINVAL;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == 0 || *end || port < 0 || port > 65535)
		return -EINVAL;
	hlen = (size_t)(colon - listen);
	if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
		h++;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = 0;
	if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
		return -EADDRNOTAVAIL;
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	*salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fprintf(stderr, "dliofs s3: ");
	vfprintf(stderr, fmt, ap);
}

static int serve(const char *cfgpath, const char *listen, const char *control)
{
	struct dl_s3 s = {0};
	struct sockaddr_storage sa;
	socklen_t salen;
	struct MHD_Daemon *d = NULL;
	struct dl_s3_ctl *ctl = NULL;
	char why[512];
	const union MHD_DaemonInfo *info;
	sigset_t set;
	int sig, ret;

	ret = resolve(listen, &sa, &salen);
	if (ret) {
		fprintf(stderr, "dliofs s3: --listen %s: expected HOST:PORT with a resolvable "
			"host and a port 0..65535\n", listen);
		return 2;
	}
	ret = dl_config_load(cfgpath, stderr, &s.cfg);
	if (ret)
		return 1;
	ret = dl_fmt_ctx_new(s.cfg->seed, 0, &s.fmt);
	if (!ret)
		ret = dl_s3_buckets_init(&s);
	if (!ret)
		ret = dl_pacer_new(&s.cfg->pacer, dl_mono_ns(), s.cfg->seed, &s.pacer);
	if (ret) {
		fprintf(stderr, "dliofs s3: %s: cannot set up: %s\n", cfgpath, strerror(-ret));
		ret = 1;
		goto out;
	}
	s.start_real_s = (uint64_t)time(NULL);
	/* The config's trace: section records from the start, as a mount's. */
	ret = dl_s3_obs_new(cfgpath, s.cfg->trace.enabled ? s.cfg->trace.file : NULL,
			    s.cfg->trace.ops_mask, &s.obs);
	if (ret) {
		ret = 1;
		goto out;
	}
	if (control && (ret = dl_s3_ctl_start(&s, control, &ctl, why, sizeof(why)))) {
		fprintf(stderr, "dliofs s3: --control %s\n", why);
		ret = 1;
		goto out;
	}

	/* The daemon's threads inherit this mask: only sigwait sees the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_POLL | MHD_USE_ERROR_LOG | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, dl_s3_handle, &s,
			     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			     /* The raw URI, for SigV4's canonical request. */
			     MHD_OPTION_URI_LOG_CALLBACK, dl_s3_req_start, NULL,
			     MHD_OPTION_NOTIFY_COMPLETED, dl_s3_req_done, NULL,
			     /* A slow or silent client is dropped, not waited for. */
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "dliofs s3: cannot listen on %s (in use, or not an address of "
			"this machine?)\n", listen);
		ret = 1;
		goto out;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	{
		const char *colon = strrchr(listen, ':');

		printf("dliofs s3: serving %u bucket%s on http://%.*s:%u\n", s.nbuckets,
		       s.nbuckets == 1 ? "" : "s", (int)(colon - listen), listen,
		       info ? (unsigned)info->port : 0u);
		fflush(stdout);
	}
	while (sigwait(&set, &sig) == 0 && sig != SIGINT && sig != SIGTERM)
		;
	ret = 0;
out:
	dl_s3_ctl_stop(ctl);
	if (d)
		MHD_stop_daemon(d);
	dl_s3_obs_free(s.obs);
	if (s.pacer)
		dl_pacer_free(s.pacer);
	if (s.fmt)
		dl_fmt_ctx_free(s.fmt);
	free(s.buckets);
	dl_config_free(s.cfg);
	return ret;
}

int dl_s3_main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:9000", *cfg = NULL, *control = NULL;

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
	return serve(cfg, listen, control);
}
