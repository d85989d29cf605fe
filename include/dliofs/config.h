/* The config model: what `dliofs mount` and every tool is told to build
 * (datasets as dataset.h models them, the storage model, tracing, backing
 * directories). Parsing (libyaml) and validation live in config/. */
#ifndef DLIOFS_CONFIG_H
#define DLIOFS_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "dliofs/dataset.h"
#include "dliofs/format.h"
#include "dliofs/pacer.h"

enum dl_io_mode {
	DL_IO_CACHE,	/* kernel page cache, bytes kept across opens (content never changes) */
	DL_IO_DIRECT,	/* direct_io: every read reaches the daemon */
};

/* `trace:` section: record every request from mount time on. */
struct dl_trace_cfg {
	int enabled;
	char file[4096];
	uint32_t ops_mask;	/* bit (1 << enum dl_trace_op); 0 means all */
};


/* `backing:` list: a real directory (or a sink) shown at <mount>/<at>. */
#define DL_BACKING_MAX 256
struct dl_backing_cfg {
	char at[DL_NAME_MAX];	/* name under the mount root; one path component */
	char path[4096];	/* absolute path of the real directory; "" for a sink */
	int writable;		/* modifications reach the real directory (default: read-only) */
	int sink;		/* writes accepted, shaped, counted and discarded; no path */
	uint64_t max_entries;	/* sink: files and directories it holds at most (ENOSPC beyond) */
	char journal[4096];	/* sink: its table is kept in this file across mounts ("": none) */
	struct dl_loc loc;	/* the entry's mapping in the YAML */
};

/* `s3:` section: the S3 endpoint's credentials (dliofs s3 serve). With
 * none, any request is accepted; with a key pair, requests must carry a
 * SigV4 signature made with it. `listen` serves it beside a mount. */
struct dl_s3_cfg {
	char access_key[128];
	char secret_key[128];
	char listen[256];	/* a mount serves the endpoint beside it on HOST:PORT ("": not) */
};

/* `cluster:` section: the mounts of one mpirun are one storage system
 * (fs/cluster.c): every period they exchange their demand, and each
 * decides its requests against its share, measured over the window. */
#define DL_CLUSTER_DEFAULT_PERIOD (10ULL * 1000000)
#define DL_CLUSTER_DEFAULT_WINDOW (100ULL * 1000000)
struct dl_cluster_cfg {
	int enabled;
	uint64_t period_ns, window_ns;
};

struct dl_config {
	char path[4096];		/* file it came from */
	uint64_t seed;
	enum dl_io_mode io_mode;
	unsigned ndatasets;
	struct dl_dataset *datasets;
	struct dl_pacer_cfg pacer;	/* `pacer:` and `cache:` sections (without them:
				 * dl_pacer_cfg_init's no limits, kernel cache) */
	struct dl_trace_cfg trace;
	unsigned nbacking;
	struct dl_backing_cfg *backing;
	struct dl_s3_cfg s3;
	struct dl_cluster_cfg cluster;
	/* `overlay: {path: /dir}`: names created in synthetic directories go
	 * into this real directory at the same relative path (path[0] == 0:
	 * none; always writable, no `at`). */
	struct dl_backing_cfg overlay;
};

/* Parse and validate `path`. Every problem goes to `err` as
 * "file:line:column: key: what was expected" and the call returns -EINVAL
 * (or -ENOENT/-EIO for an unreadable file). On success *out is owned by the caller. */
int dl_config_load(const char *path, FILE *err, struct dl_config **out);
/* Same from a memory buffer; `name` is used in messages. */
int dl_config_load_buf(const char *name, const char *yaml, size_t len, FILE *err,
		       struct dl_config **out);
void dl_config_free(struct dl_config *cfg);

/* Print the effective config back as YAML (every default filled in). */
int dl_config_dump(const struct dl_config *cfg, FILE *out);


#endif
