/* --accelerator cuda: the accelerator is a real GPU. Per step the batch is
 * copied host -> device from pinned memory and a kernel spins on the GPU's
 * nanosecond timer for the step's computation time; CUDA events around the
 * copy and the kernel give the GPU's own view of the stall: the time between
 * one kernel's end and the next one's start.
 *
 * The driver API is loaded at run time (dlopen libcuda.so.1), so one binary
 * runs everywhere and says "no CUDA driver found" where there is none; the
 * kernel is PTX text JIT-compiled by the driver, so no CUDA toolkit is needed
 * to build. Only the few driver types used are declared here. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drive_i.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0
#define CU_MEMHOSTALLOC_PORTABLE 0x1

/* Spin until `ns` nanoseconds of %globaltimer have passed. One thread is
 * enough: the point is GPU time, not GPU work. PTX 6.0 / sm_50 is JIT-able
 * by every driver since CUDA 9 on every GPU since Maxwell. */
static const char spin_ptx[] = ".version 6.0\n"
			       ".target sm_50\n"
			       ".address_size 64\n"
			       "\n"
			       ".visible .entry dl_spin(\n"
			       "\t.param .u64 dl_spin_ns\n"
			       ")\n"
			       "{\n"
			       "\t.reg .pred %p<2>;\n"
			       "\t.reg .b64 %rd<5>;\n"
			       "\n"
			       "\tld.param.u64 %rd1, [dl_spin_ns];\n"
			       "\tmov.u64 %rd2, %globaltimer;\n"
			       "$L_spin:\n"
			       "\tmov.u64 %rd3, %globaltimer;\n"
			       "\tsub.s64 %rd4, %rd3, %rd2;\n"
			       "\tsetp.lt.u64 %p1, %rd4, %rd1;\n"
			       "\t@%p1 bra $L_spin;\n"
			       "\tret;\n"
			       "}\n";

struct cu_api {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*PrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemHostAlloc)(void **, size_t, unsigned);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, CUstream, void **, void **);
	CUresult (*GetErrorString)(CUresult, const char **);
};

/* Symbol names, newest ABI first (the _v2 entry points replaced the plain
 * ones in CUDA 3.2 / 11.0; drivers keep both). */
static const struct {
	const char *name, *alt;
	size_t off;
} cu_syms[] = {
#define SYM(field, name)                                                                           \
	{                                                                                          \
		name, NULL, offsetof(struct cu_api, field)                                         \
	}
#define SYM2(field, name, alt)                                                                     \
	{                                                                                          \
		name, alt, offsetof(struct cu_api, field)                                          \
	}
    SYM(Init, "cuInit"),
    SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGet, "cuDeviceGet"),
    SYM(DeviceGetName, "cuDeviceGetName"),
    /* The primary context: the one the CUDA runtime (and PyTorch) use. */
    SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM2(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(ModuleLoadData, "cuModuleLoadData"),
    SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"),
    SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"),
    SYM(MemHostAlloc, "cuMemHostAlloc"),
    SYM(MemFreeHost, "cuMemFreeHost"),
    SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    SYM(StreamCreate, "cuStreamCreate"),
    SYM2(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy"),
    SYM(EventCreate, "cuEventCreate"),
    SYM2(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
    SYM(EventRecord, "cuEventRecord"),
    SYM(EventSynchronize, "cuEventSynchronize"),
    SYM(EventElapsedTime, "cuEventElapsedTime"),
    SYM(LaunchKernel, "cuLaunchKernel"),
    SYM(GetErrorString, "cuGetErrorString"),
#undef SYM
#undef SYM2
};

enum { EV_COPY, EV_KSTART, EV_KEND, EV__COUNT };

struct drv_cuda {
	void *lib;
	struct cu_api api;
	CUcontext ctx;
	CUdevice dev_id;
	CUmodule mod;
	CUfunction spin;
	CUstream stream;
	CUevent ev[2][EV__COUNT]; /* this step's and the previous step's */
	unsigned cur;
	int have_prev;
	void *host;
	CUdeviceptr dev;
	size_t bytes;
	char name[256];
	struct drv_cuda_stats st;
};

static int cu_fail(struct drv_cuda *c, CUresult r, const char *what, char *msg, size_t msglen)
{
	const char *s = NULL;

	if (c->api.GetErrorString)
		c->api.GetErrorString(r, &s);
	snprintf(msg, msglen, "CUDA %s failed: %s (%d)", what, s ? s : "unknown error", r);
	return r == CUDA_ERROR_NO_DEVICE ? -ENODEV : -EIO;
}

#define CU_CHECK(call, what)                                                                       \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS) {                                                          \
			ret = cu_fail(c, r_, what, msg, msglen);                                   \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

int drv_cuda_open(size_t h2d, struct drv_cuda **out, char *msg, size_t msglen)
{
	struct drv_cuda *c = calloc(1, sizeof(*c));
	int ret, count = 0;
	CUdevice dev;

	if (!c)
		return -ENOMEM;
	c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		const char *e = dlerror();
		snprintf(msg, msglen, "no CUDA driver found (dlopen libcuda.so.1: %s)",
			 e ? e : "not found");
		free(c);
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(cu_syms) / sizeof(cu_syms[0]); i++) {
		void *fn = dlsym(c->lib, cu_syms[i].name);
		if (!fn && cu_syms[i].alt)
			fn = dlsym(c->lib, cu_syms[i].alt);
		if (!fn) {
			snprintf(msg, msglen, "CUDA driver too old: no %s in libcuda.so.1",
				 cu_syms[i].name);
			ret = -ENOSYS;
			goto fail;
		}
		memcpy((char *)&c->api + cu_syms[i].off, &fn, sizeof(fn));
	}
	CU_CHECK(c->api.Init(0), "cuInit");
	CU_CHECK(c->api.DeviceGetCount(&count), "cuDeviceGetCount");
	if (count < 1) {
		snprintf(msg, msglen, "CUDA driver found but no CUDA device");
		ret = -ENODEV;
		goto fail;
	}
	CU_CHECK(c->api.DeviceGet(&dev, 0), "cuDeviceGet");
	CU_CHECK(c->api.DeviceGetName(c->name, (int)sizeof(c->name) - 1, dev), "cuDeviceGetName");
	CU_CHECK(c->api.PrimaryCtxRetain(&c->ctx, dev), "cuDevicePrimaryCtxRetain");
	c->dev_id = dev;
	CU_CHECK(c->api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
	CU_CHECK(c->api.ModuleLoadData(&c->mod, spin_ptx), "cuModuleLoadData (PTX JIT)");
	CU_CHECK(c->api.ModuleGetFunction(&c->spin, c->mod, "dl_spin"), "cuModuleGetFunction");
	CU_CHECK(c->api.StreamCreate(&c->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	for (int k = 0; k < 2; k++)
		for (int e = 0; e < EV__COUNT; e++)
			CU_CHECK(c->api.EventCreate(&c->ev[k][e], CU_EVENT_DEFAULT),
				 "cuEventCreate");
	c->bytes = h2d ? h2d : 1;
	CU_CHECK(c->api.MemHostAlloc(&c->host, c->bytes, CU_MEMHOSTALLOC_PORTABLE),
		 "cuMemHostAlloc (pinned batch buffer)");
	/* Touch the pinned pages once so the first copy does not pay for faults. */
	memset(c->host, 0x5a, c->bytes);
	CU_CHECK(c->api.MemAlloc(&c->dev, c->bytes), "cuMemAlloc");
	*out = c;
	return 0;
fail:
	drv_cuda_close(c);
	return ret;
}

int drv_cuda_step(struct drv_cuda *c, double seconds, char *msg, size_t msglen)
{
	CUevent *ev = c->ev[c->cur], *pv = c->ev[c->cur ^ 1];
	unsigned long long ns = seconds > 0 ? (unsigned long long)(seconds * 1e9 + 0.5) : 0;
	void *params[] = {&ns};
	float ms;
	int ret = 0;

	CU_CHECK(c->api.EventRecord(ev[EV_COPY], c->stream), "cuEventRecord");
	CU_CHECK(c->api.MemcpyHtoDAsync(c->dev, c->host, c->bytes, c->stream), "cuMemcpyHtoDAsync");
	CU_CHECK(c->api.EventRecord(ev[EV_KSTART], c->stream), "cuEventRecord");
	CU_CHECK(c->api.LaunchKernel(c->spin, 1, 1, 1, 1, 1, 1, 0, c->stream, params, NULL),
		 "cuLaunchKernel");
	CU_CHECK(c->api.EventRecord(ev[EV_KEND], c->stream), "cuEventRecord");
	/* The host waits for the step like a training loop that reads its loss. */
	CU_CHECK(c->api.EventSynchronize(ev[EV_KEND]), "cuEventSynchronize");

	CU_CHECK(c->api.EventElapsedTime(&ms, ev[EV_COPY], ev[EV_KSTART]), "cuEventElapsedTime");
	c->st.h2d_s += ms * 1e-3;
	CU_CHECK(c->api.EventElapsedTime(&ms, ev[EV_KSTART], ev[EV_KEND]), "cuEventElapsedTime");
	c->st.kernel_s += ms * 1e-3;
	if (c->have_prev) {
		CU_CHECK(c->api.EventElapsedTime(&ms, pv[EV_KEND], ev[EV_KSTART]),
			 "cuEventElapsedTime");
		c->st.idle_s += ms * 1e-3;
	}
	c->st.kernels++;
	c->st.h2d_bytes += c->bytes;
	c->have_prev = 1;
	c->cur ^= 1;
	return 0;
fail:
	return ret;
}

void drv_cuda_phase(struct drv_cuda *c) { c->have_prev = 0; }

void drv_cuda_take(struct drv_cuda *c, struct drv_cuda_stats *out)
{
	*out = c->st;
	memset(&c->st, 0, sizeof(c->st));
}

const char *drv_cuda_device(const struct drv_cuda *c) { return c->name; }

void drv_cuda_close(struct drv_cuda *c)
{
	if (!c)
		return;
	if (c->ctx) {
		if (c->stream)
			c->api.StreamDestroy(c->stream);
		for (int k = 0; k < 2; k++)
			for (int e = 0; e < EV__COUNT; e++)
				if (c->ev[k][e])
					c->api.EventDestroy(c->ev[k][e]);
		if (c->dev)
			c->api.MemFree(c->dev);
		if (c->host)
			c->api.MemFreeHost(c->host);
		if (c->mod)
			c->api.ModuleUnload(c->mod);
		c->api.CtxSetCurrent(NULL);
		c->api.PrimaryCtxRelease(c->dev_id);
	}
	if (c->lib)
		dlclose(c->lib);
	free(c);
}
