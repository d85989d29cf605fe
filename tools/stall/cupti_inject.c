/* libdlio_cupti.so: CUPTI injection library for dlio-stall.
 *
 * The CUDA driver loads the library named by CUDA_INJECTION64_PATH when a
 * process initializes CUDA and calls InitializeInjection(); the job is not
 * edited or relinked. We record when the GPU is busy (concurrent kernels,
 * memcpys, memsets) and append one text line per interval to
 * $DLIO_STALL_GPU_OUT, on CLOCK_MONOTONIC so the intervals line up with the
 * data waits the Python hook records (time.monotonic_ns):
 *
 *   G pid init mono_ns real_ns        the library started
 *   C pid monotonic|realtime offset   clock of the intervals (offset: add to get monotonic)
 *   F pid call CUPTI_ERROR_NAME code  a CUPTI call failed (MULTIPLE_SUBSCRIBERS: a profiler holds
 * CUPTI) K pid dev stream start end        kernel M pid dev stream start end bytes copykind Z pid
 * dev stream start end bytes  memset D pid dropped                     records CUPTI dropped
 * (buffers full) X pid exit                        flushed at exit
 *
 * CUPTI's buffer callbacks carry no user pointer, so the state of this one
 * collector per process is necessarily file-scope. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "dliofs/clock.h"

#define BUF_SIZE (8u << 20)
#define LINE_BUF (64u << 10)

struct collector {
	atomic_int started;
	int fd; /* -1: not collecting */
	pid_t pid;
	int64_t clock_offset; /* added to CUPTI times to get CLOCK_MONOTONIC */
	CUpti_SubscriberHandle sub;
	pthread_mutex_t write_lock;
	atomic_uint_fast64_t dropped;
};

static struct collector col = {.fd = -1, .write_lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t CUPTIAPI monotonic_ns(void) { return dl_mono_ns(); }

/* One write() per call: lines of processes sharing the file stay whole. */
static void emit(const char *buf, size_t len)
{
	if (col.fd < 0 || !len)
		return;
	pthread_mutex_lock(&col.write_lock);
	while (len) {
		ssize_t n = write(col.fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf += n;
		len -= (size_t)n;
	}
	pthread_mutex_unlock(&col.write_lock);
}

static void emitf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emitf(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		emit(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Record a failed CUPTI call; returns nonzero when it failed. */
static int failed(CUptiResult r, const char *call)
{
	const char *name = NULL;

	if (r == CUPTI_SUCCESS)
		return 0;
	if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS || !name)
		name = "CUPTI_ERROR_UNKNOWN";
	emitf("F %d %s %s %d\n", (int)col.pid, call, name, (int)r);
	fprintf(stderr, "dlio-stall: CUPTI %s failed: %s%s\n", call, name,
		r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
		    ? " (another CUPTI client, e.g. a profiler, is active)"
		    : "");
	return 1;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, BUF_SIZE);
	*size = *buffer ? BUF_SIZE : 0;
	*max_records = 0;
}

struct lines {
	char b[LINE_BUF];
	size_t n;
};

static void put(struct lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (LINE_BUF - l->n < 256) {
		emit(l->b, l->n);
		l->n = 0;
	}
	va_start(ap, fmt);
	n = vsnprintf(l->b + l->n, LINE_BUF - l->n, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < LINE_BUF - l->n)
		l->n += (size_t)n;
}

static void record(struct lines *l, const CUpti_Activity *a)
{
	int64_t off = col.clock_offset;
	int pid = (int)col.pid;

	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)a;
		put(l, "K %d %u %u %" PRId64 " %" PRId64 "\n", pid, k->deviceId, k->streamId,
		    (int64_t)k->start + off, (int64_t)k->end + off);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)a;
		put(l, "M %d %u %u %" PRId64 " %" PRId64 " %" PRIu64 " %u\n", pid, m->deviceId,
		    m->streamId, (int64_t)m->start + off, (int64_t)m->end + off, m->bytes,
		    (unsigned)m->copyKind);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)a;
		put(l, "Z %d %u %u %" PRId64 " %" PRId64 " %" PRIu64 "\n", pid, m->deviceId,
		    m->streamId, (int64_t)m->start + off, (int64_t)m->end + off, m->bytes);
		break;
	}
	default:
		break;
	}
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	struct lines *l = malloc(sizeof(*l));
	CUpti_Activity *a = NULL;
	size_t dropped = 0;

	(void)size;
	if (l) {
		l->n = 0;
		while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
			record(l, a);
		emit(l->b, l->n);
		free(l);
	}
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add(&col.dropped, dropped);
	free(buffer);
}

/* Flush before the context (and its pending records) goes away. */
static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			    const void *data)
{
	const CUpti_CallbackData *cb = data;

	(void)ud;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 &&
	    cb->callbackSite == CUPTI_API_ENTER)
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static void at_exit(void)
{
	if (col.fd < 0 || getpid() != col.pid)
		return;
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (atomic_load(&col.dropped))
		emitf("D %d %" PRIuFAST64 "\n", (int)col.pid, atomic_load(&col.dropped));
	emitf("X %d exit\n", (int)col.pid);
	close(col.fd);
	col.fd = -1;
}

static int enable_kinds(void)
{
	static const struct {
		CUpti_ActivityKind kind;
		const char *name;
	} kinds[] = {
	    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"},
	    {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
	    {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)"},
	};
	int ok = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		ok += !failed(cuptiActivityEnable(kinds[i].kind), kinds[i].name);
	return ok ? 0 : -1;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	const char *out = getenv("DLIO_STALL_GPU_OUT");
	uint64_t mono, real;
	int expected = 0;

	if (!atomic_compare_exchange_strong(&col.started, &expected, 1))
		return 1;
	if (!out || !*out)
		return 1;
	col.fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (col.fd < 0) {
		fprintf(stderr, "dlio-stall: cannot open %s: %s\n", out, strerror(errno));
		return 1;
	}
	col.pid = getpid();
	mono = dl_mono_ns();
	real = dl_real_ns();
	emitf("G %d init %" PRIu64 " %" PRIu64 "\n", (int)col.pid, mono, real);
	/* CUPTI's own clock is CLOCK_REALTIME on Linux: ask for ours, or
	 * convert with the offset sampled above when the call is missing. */
	if (cuptiActivityRegisterTimestampCallback(monotonic_ns) == CUPTI_SUCCESS) {
		col.clock_offset = 0;
		emitf("C %d monotonic 0\n", (int)col.pid);
	} else {
		col.clock_offset = (int64_t)mono - (int64_t)real;
		emitf("C %d realtime %" PRId64 "\n", (int)col.pid, col.clock_offset);
	}
	if (!failed(cuptiSubscribe(&col.sub, on_api, NULL), "cuptiSubscribe"))
		failed(cuptiEnableCallback(1, col.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
					   CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020),
		       "cuptiEnableCallback");
	if (failed(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
		   "cuptiActivityRegisterCallbacks") ||
	    enable_kinds()) {
		emitf("X %d exit\n", (int)col.pid);
		close(col.fd);
		col.fd = -1;
		return 1;
	}
	atexit(at_exit);
	return 1;
}
