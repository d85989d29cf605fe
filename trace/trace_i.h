/* Private interface of trace/: tunables of the recorder that the public
 * dl_trace_start fixes, open here so the unit test can shrink the buffers
 * and slow the writer down to provoke (and count) drops. */
#ifndef DLIOFS_TRACE_I_H
#define DLIOFS_TRACE_I_H

#include <stdint.h>

#include "dliofs/trace.h"

/* Defaults: 16 stripes x 8192 slots x 64 bytes = 8 MiB of buffers, enough
 * for ~4M records/s per stripe with the writer waking every millisecond. */
#define TRACE_DEFAULT_STRIPES 16u
#define TRACE_DEFAULT_SLOTS 8192u
#define TRACE_DEFAULT_POLL_US 1000u
/* Size of the writer's output buffer: one write() per this many bytes. */
#define TRACE_WRITE_BUF (1u << 20)
/* Kept allocated beyond the last record for the name table and footer. */
#define TRACE_RESERVE (1u << 20)
/* At most this many distinct file ids get a name (8 bytes each). */
#define TRACE_MAX_NAMES (1u << 22)

struct dl_trace_opts {
	uint32_t stripes;	/* rounded up to a power of two; 0: default */
	uint32_t slots;		/* per stripe, rounded up to a power of two; 0: default */
	uint32_t poll_us;	/* writer's sleep when it found nothing; 0: default */
	uint32_t write_delay_us; /* test hook: extra sleep after each pass */
	uint32_t node;		/* the header's node (dl_trace_start_fd_node) */
};

int dl_trace_start_fd_opts(int fd, const char *config, uint32_t ops_mask,
			   int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
			   void *arg, const struct dl_trace_opts *opts, struct dl_trace **out);
int dl_trace_start_opts(const char *path, const char *config, uint32_t ops_mask,
			int (*path_of)(void *arg, uint64_t file_id, char *buf, size_t len),
			void *arg, const struct dl_trace_opts *opts, struct dl_trace **out);

#endif
