/* The S3 benchmark's client (bench/bench_s3.py): N threads, one keep-alive
 * HTTP/1.1 connection each, GET the given paths round robin for a while and
 * throw the bodies away. A client of its own, not curl: it must cost the
 * servers' shared 2 cores as little as possible and the same for both
 * servers (one recv per 1 MiB, no per-request setup), so that what differs
 * between two runs is the server. Every reply must be 200/206 with a
 * Content-Length, and the body is read to its last byte (a short or bad
 * reply counts as an error and ends that connection).
 *
 * dl-bench-http HOST PORT CONNS SECS PATH... -> one JSON line:
 *   {"requests": R, "bytes": B, "secs": S, "errors": E}
 * Prints figures; asserts nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dliofs/clock.h"

#define RBUF (1u << 20)

struct conn {
	const char *host;
	int port, first, npaths;
	char **paths;
	uint64_t deadline_ns;
	uint64_t requests, bytes, errors;
	pthread_t th;
};

static int dial(const char *host, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd, one = 1;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* One request and its whole reply on fd; the body's size, or -errno. */
static int64_t get_one(int fd, const char *host, const char *path, char *buf)
{
	char req[2048];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: dl-bench-http"
			 "\r\n\r\n", path, host);
	size_t have = 0;
	char *eoh = NULL, *cl;
	uint64_t len, got;
	int status;

	if (n <= 0 || (size_t)n >= sizeof(req) || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		return -EIO;
	while (!eoh) {
		ssize_t r = recv(fd, buf + have, RBUF - 1 - have, 0);

		if (r <= 0)
			return -EIO;
		have += (size_t)r;
		buf[have] = 0;
		eoh = strstr(buf, "\r\n\r\n");
		if (!eoh && have >= RBUF - 1)
			return -EMSGSIZE;
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || (status != 200 && status != 206))
		return -EPROTO;
	*eoh = 0;
	cl = strcasestr(buf, "\r\nContent-Length:");
	if (!cl)
		return -EPROTO;
	len = strtoull(cl + 17, NULL, 10);
	got = have - (size_t)(eoh + 4 - buf);
	if (got > len)
		return -EPROTO;	/* no pipelining: nothing may follow the body */
	while (got < len) {
		ssize_t r = recv(fd, buf, len - got < RBUF ? (size_t)(len - got) : RBUF, 0);

		if (r <= 0)
			return -EIO;
		got += (uint64_t)r;
	}
	return (int64_t)len;
}

static void *run(void *arg)
{
	struct conn *c = arg;
	char *buf = malloc(RBUF);
	int fd = -1, i = c->first;

	if (!buf)
		goto out;
	fd = dial(c->host, c->port);
	while (fd >= 0 && dl_mono_ns() < c->deadline_ns) {
		int64_t n = get_one(fd, c->host, c->paths[i], buf);

		if (n < 0) {
			c->errors++;
			break;
		}
		c->requests++;
		c->bytes += (uint64_t)n;
		i = (i + 1) % c->npaths;
	}
	if (fd < 0)
		c->errors++;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct conn *cs;
	uint64_t t0, t1, req = 0, bytes = 0, errs = 0;
	int nconn;
	double secs;

	if (argc < 6) {
		fprintf(stderr, "usage: dl-bench-http HOST PORT CONNS SECS PATH...\n");
		return 2;
	}
	nconn = atoi(argv[3]);
	secs = atof(argv[4]);
	if (nconn < 1 || nconn > 1024 || secs <= 0) {
		fprintf(stderr, "dl-bench-http: CONNS 1..1024, SECS > 0\n");
		return 2;
	}
	cs = calloc((size_t)nconn, sizeof(*cs));
	if (!cs)
		return 1;
	t0 = dl_mono_ns();
	for (int i = 0; i < nconn; i++) {
		cs[i] = (struct conn){.host = argv[1], .port = atoi(argv[2]), .paths = argv + 5,
				      .npaths = argc - 5, .first = (i * 7919) % (argc - 5),
				      .deadline_ns = t0 + (uint64_t)(secs * 1e9)};
		if (pthread_create(&cs[i].th, NULL, run, &cs[i])) {
			fprintf(stderr, "dl-bench-http: cannot start thread %d\n", i);
			return 1;
		}
	}
	for (int i = 0; i < nconn; i++) {
		pthread_join(cs[i].th, NULL);
		req += cs[i].requests;
		bytes += cs[i].bytes;
		errs += cs[i].errors;
	}
	t1 = dl_mono_ns();
	printf("{\"requests\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"secs\": %.6f, \"errors\": %"
	       PRIu64 "}\n", req, bytes, (double)(t1 - t0) * 1e-9, errs);
	free(cs);
	return errs ? 1 : 0;
}
