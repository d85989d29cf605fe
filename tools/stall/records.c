/* Reading what the injected pieces wrote: the Python hook's step records
 * (tools/stall/sitecustomize.py) and the CUPTI library's GPU intervals
 * (tools/stall/cupti_inject.c). Unknown or malformed lines are skipped: a
 * job killed mid-write leaves a torn last line, and newer writers may add
 * line types. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stall_i.h"

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static struct st_proc *proc_get(struct st_records *r, int pid)
{
	struct st_proc *np;

	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	np = realloc(r->procs, (r->nprocs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	r->procs = np;
	np = &r->procs[r->nprocs++];
	memset(np, 0, sizeof(*np));
	np->pid = pid;
	np->overhead_ns = -1;
	strcpy(np->mode, "normal");
	return np;
}

static int cmp_step(const void *a, const void *b)
{
	const struct st_step *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Each step's compute: from the end of its wait to the start of the next
 * event (the next wait, or the call that found the iterator exhausted). */
static void fill_compute(struct st_proc *p)
{
	size_t e = 0;

	qsort(p->steps, p->nsteps, sizeof(*p->steps), cmp_step);
	for (size_t i = 0; i < p->nsteps; i++) {
		struct st_step *s = &p->steps[i];
		int64_t end = s->start + s->wait, next = -1;

		if (i + 1 < p->nsteps)
			next = p->steps[i + 1].start;
		/* An exhaustion event of the same iterator in between ends the step. */
		for (e = 0; e < p->nends; e++) {
			const struct st_iter_end *x = &p->ends[e];
			if (x->iter == s->iter && x->start >= end && (next < 0 || x->start < next))
				next = x->start;
		}
		s->compute = next >= end ? next - end : -1;
	}
}

int st_records_load(const char *path, struct st_records *r)
{
	char line[1024], mode[16], fw[48], argv0[64], flag;
	FILE *f;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct st_proc *p;
		int pid, ppid, batch;
		long long ovh, a, b, c;
		unsigned it, idx, k;

		if (!strchr(line, '\n'))
			continue; /* torn */
		if (line[0] == 'P' && sscanf(line, "P %d %d %15s %lld %u %47s %63s", &pid, &ppid,
					     mode, &ovh, &k, fw, argv0) == 7) {
			p = proc_get(r, pid);
			if (!p) {
				ret = -ENOMEM;
				break;
			}
			p->ppid = ppid;
			snprintf(p->mode, sizeof(p->mode), "%s", mode);
			snprintf(p->fw, sizeof(p->fw), "%s", fw);
			snprintf(p->argv0, sizeof(p->argv0), "%s", argv0);
			if (ovh > p->overhead_ns)
				p->overhead_ns = ovh;
		} else if (line[0] == 'S' && sscanf(line, "S %d %u %u %lld %lld %lld %d %c", &pid,
						    &it, &idx, &a, &b, &c, &batch, &flag) == 8) {
			p = proc_get(r, pid);
			if (!p ||
			    grow((void **)&p->steps, &p->capsteps, p->nsteps, sizeof(*p->steps))) {
				ret = -ENOMEM;
				break;
			}
			p->steps[p->nsteps++] = (struct st_step){.start = a,
								 .wait = b,
								 .compute = -1,
								 .batch = batch,
								 .iter = it,
								 .idx = idx,
								 .flag = flag};
		} else if (line[0] == 'E' &&
			   sscanf(line, "E %d %u %u %lld %lld", &pid, &it, &idx, &a, &b) == 5) {
			p = proc_get(r, pid);
			if (!p ||
			    grow((void **)&p->ends, &p->capends, p->nends, sizeof(*p->ends))) {
				ret = -ENOMEM;
				break;
			}
			p->ends[p->nends++] =
			    (struct st_iter_end){.iter = it, .n = idx, .start = a, .wait = b};
		}
	}
	fclose(f);
	if (ret) {
		st_records_free(r);
		return ret;
	}
	for (size_t i = 0; i < r->nprocs; i++)
		fill_compute(&r->procs[i]);
	return 0;
}

void st_records_free(struct st_records *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].steps);
		free(r->procs[i].ends);
	}
	free(r->procs);
	free(r->gpu.busy);
	memset(r, 0, sizeof(*r));
}

struct st_proc *st_main_proc(struct st_records *r)
{
	struct st_proc *best = NULL;

	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].nsteps && (!best || r->procs[i].nsteps > best->nsteps))
			best = &r->procs[i];
	return best;
}

int st_epoch_steps(const struct st_proc *p, char *buf, size_t len)
{
	uint32_t maxit = 0;
	size_t off = 0;

	for (size_t i = 0; i < p->nsteps; i++)
		if (p->steps[i].iter > maxit)
			maxit = p->steps[i].iter;
	for (size_t i = 0; i < p->nends; i++)
		if (p->ends[i].iter > maxit)
			maxit = p->ends[i].iter;
	buf[0] = 0;
	for (uint32_t it = 1; it <= maxit; it++) {
		int n = -1;
		for (size_t i = 0; i < p->nends; i++)
			if (p->ends[i].iter == it)
				n = (int)p->ends[i].n;
		int w = n >= 0 ? snprintf(buf + off, len - off, "%s%d", it > 1 ? "," : "", n)
			       : snprintf(buf + off, len - off, "%s-", it > 1 ? "," : "");
		if (w < 0 || (size_t)w >= len - off) {
			buf[off] = 0; /* whole entries only: the rest falls back to len() */
			return -ENAMETOOLONG;
		}
		off += (size_t)w;
	}
	return 0;
}

static int add_busy(struct st_gpu *g, int64_t s, int64_t e)
{
	if (e <= s)
		return 0;
	if (grow((void **)&g->busy, &g->capbusy, g->nbusy, sizeof(*g->busy)))
		return -ENOMEM;
	g->busy[g->nbusy++] = (struct st_ival){s, e};
	return 0;
}

int st_gpu_load(const char *path, int main_pid, struct st_gpu *g)
{
	char line[512], a1[64], a2[64];
	FILE *f;
	int ret = 0;

	memset(g, 0, sizeof(*g));
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		int pid, code;
		unsigned dev, stream;
		long long s, e;
		unsigned long long bytes, n;

		if (!strchr(line, '\n'))
			continue;
		g->seen = 1;
		switch (line[0]) {
		case 'G':
			g->inits++;
			break;
		case 'C':
			if (sscanf(line, "C %d %63s", &pid, a1) == 2 && !strcmp(a1, "monotonic"))
				g->monotonic = 1;
			break;
		case 'F':
			if (sscanf(line, "F %d %63s %63s %d", &pid, a1, a2, &code) == 4) {
				if (code == 39 || strstr(a2, "MULTIPLE_SUBSCRIBERS"))
					g->multiple_subscribers = 1;
				if (g->nfails < sizeof(g->fails) / sizeof(g->fails[0])) {
					struct st_gpu_fail *x = &g->fails[g->nfails++];
					x->pid = pid;
					x->code = code;
					snprintf(x->call, sizeof(x->call), "%s", a1);
					snprintf(x->err, sizeof(x->err), "%s", a2);
				}
			}
			break;
		case 'D':
			if (sscanf(line, "D %d %llu", &pid, &n) == 2)
				g->dropped += n;
			break;
		case 'K':
		case 'M':
		case 'Z':
			bytes = 0;
			if (sscanf(line + 1, " %d %u %u %lld %lld %llu", &pid, &dev, &stream, &s,
				   &e, &bytes) < 5)
				break;
			if (main_pid > 0 && pid != main_pid)
				break;
			if (line[0] == 'K')
				g->kernels++;
			else if (line[0] == 'M') {
				g->memcpys++;
				g->memcpy_bytes += bytes;
			} else {
				g->memsets++;
			}
			if (dev < 32)
				g->devices |= 1u << dev;
			ret = add_busy(g, s, e);
			break;
		default:
			break;
		}
		if (ret)
			break;
	}
	fclose(f);
	return ret;
}
