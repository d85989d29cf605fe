/* `dliofs s3 serve CONFIG [--listen HOST:PORT]`: load the config, start
 * libmicrohttpd (one thread per connection: the pacer's wait blocks only
 * that connection), serve until SIGINT or SIGTERM. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "dliofs/clock.h"
#include "s3.h"
#include "s3_i.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: dliofs s3 serve CONFIG.yaml [--listen HOST:PORT] [--idle-timeout S]\n"
		     "  Serve every dataset of CONFIG as a bucket over S3's HTTP API,\n"
		     "  and every backing directory as a bucket named by its `at`\n"
		     "  (writes go there when it is writable), shaped by the config's\n"
		     "  pacer (default listen 127.0.0.1:9000; port 0 picks a free one;\n"
		     "  the address is printed once listening). A connection silent\n"
		     "  for S seconds (default 60) is closed.\n");
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

/* libmicrohttpd says something for each client that goes away mid-request:
 * 10,000 of them must not flood the log (nor block every thread on a full
 * stderr pipe). At most LOG_PER_S lines a second; the rest are counted and
 * the count said with the next line let through. */
#define LOG_PER_S 10

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct dl_s3 *s = cls;
	uint64_t now = dl_mono_ns() / 1000000000ULL;
	char line[512];
	unsigned dropped = 0;
	int pass;

	vsnprintf(line, sizeof(line), fmt, ap);
	pthread_mutex_lock(&s->log_lock);
	if (now != s->log_second) {
		s->log_second = now;
		s->log_lines = 0;
	}
	pass = s->log_lines++ < LOG_PER_S;
	if (pass) {
		dropped = s->log_dropped;
		s->log_dropped = 0;
	} else {
		s->log_dropped++;
	}
	pthread_mutex_unlock(&s->log_lock);
	if (!pass)
		return;
	if (dropped)
		fprintf(stderr, "dliofs s3: (%u more messages not shown)\n", dropped);
	fprintf(stderr, "dliofs s3: %s%s", line, line[0] && line[strlen(line) - 1] == '\n' ? "" : "\n");
}

/* Connections are bounded by descriptors: the soft limit goes up to the
 * hard one, and a few are kept for files, the listener and the log. */
static unsigned raise_nofile(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1000;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	n = rl.rlim_cur == RLIM_INFINITY ? 65536 : rl.rlim_cur;
	n = n > 65536 ? 65536 : n;
	/* Kept: the listener, the log, the config, files being read or written
	 * (a connection short of one gets an S3 error, not a crash). */
	return n > 512 ? (unsigned)(n - 256) : 64;
}

static int serve(const char *cfgpath, const char *listen, unsigned idle_s)
{
	struct dl_s3 s = {.log_lock = PTHREAD_MUTEX_INITIALIZER};
	struct sockaddr_storage sa;
	socklen_t salen;
	struct MHD_Daemon *d = NULL;
	const union MHD_DaemonInfo *info;
	sigset_t set;
	unsigned conn_max;
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
	dl_s3_crc_init(&s.crc);
	conn_max = raise_nofile();

	/* The daemon's threads inherit this mask: only sigwait sees the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_POLL | MHD_USE_ERROR_LOG | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, dl_s3_handle, &s,
			     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, &s,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			     /* The raw URI, for SigV4's canonical request. */
			     MHD_OPTION_URI_LOG_CALLBACK, dl_s3_req_start, NULL,
			     MHD_OPTION_NOTIFY_COMPLETED, dl_s3_req_done, NULL,
			     /* A slow or silent client is dropped, not waited for. */
			     MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
			     /* poll(), not select(): any descriptor number; a thread
			     * each, with a small stack, so 10,000 held connections
			     * cost address space, not memory. */
			     MHD_OPTION_CONNECTION_LIMIT, conn_max,
			     MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
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
	if (d)
		MHD_stop_daemon(d);
	if (s.pacer)
		dl_pacer_free(s.pacer);
	if (s.fmt)
		dl_fmt_ctx_free(s.fmt);
	dl_s3_buckets_free(&s);
	dl_config_free(s.cfg);
	return ret;
}

int dl_s3_main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:9000", *cfg = NULL;
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
	return serve(cfg, listen, (unsigned)idle_s);
}
