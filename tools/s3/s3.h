/* The S3 endpoint (tools/s3/): `dliofs s3 serve CONFIG --listen HOST:PORT`
 * serves every dataset as a bucket and every file as an object, with the
 * bytes, sizes and names the mount has. */
#ifndef DLIOFS_S3_H
#define DLIOFS_S3_H

#include <stddef.h>
#include <stdint.h>

#include "dliofs/config.h"
#include "dliofs/pacer.h"

/* `dliofs s3 ...`: argv[0] is "s3". Returns the process exit status. */
int dl_s3_main(int argc, char **argv);

/* The server itself (server.c), for `dliofs s3 serve` and for a mount whose
 * config has `s3: {listen: HOST:PORT}` (the mount's pacer then shapes both). */
struct dl_s3_server_opts {
	const char *listen;	 /* HOST:PORT; port 0 picks a free one */
	const char *config_path; /* named in the trace's header */
	const char *trace_file;	 /* NULL: no trace from the start */
	uint32_t trace_ops;	 /* 0: all */
	const char *control;	 /* a control socket (obs.h); NULL: none */
	unsigned idle_s;	 /* a silent connection is closed after this; 0: 60 s */
};
struct dl_s3_server;
/* 0 when HOST:PORT is one this machine can resolve, else -EINVAL. */
int dl_s3_listen_check(const char *listen);
/* Serve cfg's datasets shaped by pacer (NULL: unshaped; not freed here),
 * until dl_s3_server_stop. 0, or -errno with why (one line). Signals are the
 * caller's: the server's threads inherit the calling thread's mask. */
int dl_s3_server_start(struct dl_config *cfg, struct dl_pacer *pacer,
		       const struct dl_s3_server_opts *o, struct dl_s3_server **out, char *why,
		       size_t wl);
unsigned dl_s3_server_port(const struct dl_s3_server *srv);
unsigned dl_s3_server_buckets(const struct dl_s3_server *srv);
void dl_s3_server_stop(struct dl_s3_server *srv);

#endif
