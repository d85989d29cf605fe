/* What the endpoint shows about itself, as a mount does through .dliofs/:
 * stats.json (the pacer's figures, per class and per job, and the trace's
 * counts), the pacer's settings and their live change, the emulated
 * cache's drop, and per-request tracing into the mount's trace format
 * (dlio-trace reads it). obs.c keeps the trace; ctl.c serves the control
 * files on a local socket for `dliofs stat | set | cache | trace SOCKET`. */
#ifndef DLIOFS_S3_OBS_H
#define DLIOFS_S3_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "dliofs/ctl_client.h"
#include "dliofs/pacer.h"

struct dl_s3;
struct dl_s3_obs;

/* The trace state; with cfg_trace_file (the config's trace: section) a
 * trace runs from now on. 0 or -errno (said on stderr). */
int dl_s3_obs_new(const char *config_path, const char *trace_file, uint32_t trace_ops,
		  struct dl_s3_obs **out);
/* Stops a running trace (its footer written). */
void dl_s3_obs_free(struct dl_s3_obs *o);

/* Is a trace running (a hint: a request that sees 0 is not recorded)? */
int dl_s3_obs_tracing(struct dl_s3_obs *o);
/* One request's record, when a trace runs and takes its op: key is
 * "bucket/key" (named in the trace's table once per file id), job the
 * pacer's job id and its name. */
void dl_s3_obs_record(struct dl_s3_obs *o, unsigned op, uint64_t file_id, const char *key,
		      uint32_t job, const char *job_name, uint64_t start_ns, uint64_t end_ns,
		      uint64_t queue_ns, uint64_t off, uint64_t len, int64_t result);

/* stats.json: the pacer's members and "trace"; malloc'd. 0 or -errno. */
int dl_s3_obs_stats_json(struct dl_s3 *s, char **buf, size_t *len);

/* The content of control file f (what the mount's .dliofs/ would give);
 * malloc'd text. 0 or -errno with why. */
int dl_s3_obs_read(struct dl_s3 *s, enum dl_ctl_file f, char **buf, size_t *len, char *why,
		   size_t wl);
/* A command written to control file f, applied whole or not at all. 0 or
 * -errno with why (the reason, as the mount's refusal says it). */
int dl_s3_obs_write(struct dl_s3 *s, enum dl_ctl_file f, const char *text, size_t len,
		    char *why, size_t wl);

/* ctl.c: the control socket at path (made here, owner-only; a stale one
 * left by a killed server is replaced). 0 or -errno with why. */
struct dl_s3_ctl;
int dl_s3_ctl_start(struct dl_s3 *s, const char *path, struct dl_s3_ctl **out, char *why,
		    size_t wl);
void dl_s3_ctl_stop(struct dl_s3_ctl *c);

#endif
