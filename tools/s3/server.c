/* The S3 server (s3.h): the buckets of a config, its statistics and trace
 * (obs.c), an optional control socket (ctl.c), and libmicrohttpd with one
 * thread per connection, so that the pacer's wait for a request blocks
 * that connection only. `dliofs s3 serve` runs one with a pacer of its own;
 * a mount with `s3: {listen: ...}` runs one with the mount's pacer. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "dliofs/clock.h"

#include "obs.h"
#include "s3.h"
#include "s3_i.h"

struct dl_s3_server {
	struct dl_s3 s;
	struct MHD_Daemon *d;
	struct dl_s3_ctl *ctl;
	unsigned port;
};

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

int dl_s3_listen_check(const char *listen)
{
	struct sockaddr_storage sa;
	socklen_t salen;

	return resolve(listen, &sa, &salen) ? -EINVAL : 0;
}

int dl_s3_server_start(struct dl_config *cfg, struct dl_pacer *pacer,
		       const struct dl_s3_server_opts *o, struct dl_s3_server **out, char *why,
		       size_t wl)
{
	struct dl_s3_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_storage sa;
	const union MHD_DaemonInfo *info;
	socklen_t salen;
	int ret;

	why[0] = 0;
	if (!srv)
		return -ENOMEM;
	if (resolve(o->listen, &sa, &salen)) {
		snprintf(why, wl, "listen %s: expected HOST:PORT with a resolvable host and a port "
			 "0..65535", o->listen);
		ret = -EINVAL;
		goto fail;
	}
	srv->s.cfg = cfg;
	srv->s.pacer = pacer;
	pthread_mutex_init(&srv->s.log_lock, NULL);
	srv->s.start_real_s = (uint64_t)time(NULL);
	dl_s3_crc_init(&srv->s.crc);
	dl_s3_http_date(srv->s.start_real_s, srv->s.last_modified, sizeof(srv->s.last_modified));
	ret = dl_fmt_ctx_new(cfg->seed, 0, &srv->s.fmt);
	if (!ret)
		ret = dl_s3_buckets_init(&srv->s);
	if (!ret)
		ret = dl_s3_obs_new(o->config_path, o->trace_file, o->trace_ops, &srv->s.obs);
	if (ret) {
		snprintf(why, wl, "cannot set up: %s", strerror(-ret));
		goto fail;
	}
	if (o->control && (ret = dl_s3_ctl_start(&srv->s, o->control, &srv->ctl, why, wl)))
		goto fail;
	srv->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				  MHD_USE_POLL | MHD_USE_ERROR_LOG |
				  (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, dl_s3_handle, &srv->s,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, &srv->s,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  /* The raw URI, for SigV4's canonical request. */
				  MHD_OPTION_URI_LOG_CALLBACK, dl_s3_req_start, NULL,
				  MHD_OPTION_NOTIFY_COMPLETED, dl_s3_req_done, NULL,
				  /* A slow or silent client is dropped, not waited for. */
				  MHD_OPTION_CONNECTION_TIMEOUT, o->idle_s ? o->idle_s : 60u,
				  /* poll(), not select(): any descriptor number; a thread
				   * each, with a small stack, so 10,000 held connections
				   * cost address space, not memory. */
				  MHD_OPTION_CONNECTION_LIMIT, raise_nofile(),
				  MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				  MHD_OPTION_END);
	if (!srv->d) {
		snprintf(why, wl, "cannot listen on %s (in use, or not an address of this machine?)",
			 o->listen);
		ret = -EADDRINUSE;
		goto fail;
	}
	info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info ? info->port : 0;
	*out = srv;
	return 0;
fail:
	dl_s3_server_stop(srv);
	return ret;
}

unsigned dl_s3_server_port(const struct dl_s3_server *srv)
{
	return srv->port;
}

unsigned dl_s3_server_buckets(const struct dl_s3_server *srv)
{
	return srv->s.nbuckets;
}

void dl_s3_server_stop(struct dl_s3_server *srv)
{
	if (!srv)
		return;
	dl_s3_ctl_stop(srv->ctl);
	if (srv->d)
		MHD_stop_daemon(srv->d);
	dl_s3_obs_free(srv->s.obs);
	if (srv->s.fmt)
		dl_fmt_ctx_free(srv->s.fmt);
	dl_s3_buckets_free(&srv->s);
	pthread_mutex_destroy(&srv->s.log_lock);
	free(srv);
}
