/* Access mode of each file and the job's pattern, as Darshan-based studies
 * of HPC and DL jobs report them: is a file read by one process (file per
 * process), shared by several (each reading its part of a shared file), or
 * read whole by each of them (every rank reads the same file)?
 *
 * A file's processes are those that read or wrote it (opening is not
 * sharing). The size of a file is not in the trace: a process reads a file
 * whole when its reads cover [0, extent), extent being the furthest byte
 * any read of the file reached. Version 1 traces have the client's thread
 * in pid: there "process" means thread. */
#include <errno.h>
#include <stdlib.h>

#include "dlio_trace_i.h"

const char *dt_mode_key(enum dt_mode m)
{
	switch (m) {
	case DT_MODE_ONE:
		return "one_process";
	case DT_MODE_SHARED:
		return "shared";
	case DT_MODE_WHOLE:
		return "whole_by_each";
	default:
		return "no_data";
	}
}

const char *dt_pattern_name(enum dt_pattern p)
{
	switch (p) {
	case DT_PAT_SINGLE:
		return "single process";
	case DT_PAT_FPP:
		return "file per process";
	case DT_PAT_SHARED:
		return "shared file";
	case DT_PAT_MIXED:
		return "mixed";
	default:
		return "none";
	}
}

/* One read or write: its file (index in s->files), process and bytes. */
struct piece {
	size_t file;
	uint64_t pid; /* the process: its node above the pid (dt_proc) */
	int read;
	uint64_t off, end;
};

static int cmp_piece(const void *pa, const void *pb)
{
	const struct piece *a = pa, *b = pb;

	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->off < b->off ? -1 : a->off > b->off;
}

/* Bytes of [0, ...) covered by the reads v[0..n) (sorted by offset). */
static uint64_t covered(const struct piece *v, size_t n)
{
	uint64_t sum = 0, lo = 0, hi = 0;
	int open = 0;

	for (size_t i = 0; i < n; i++) {
		if (!v[i].read || v[i].end <= v[i].off)
			continue;
		if (open && v[i].off <= hi) {
			hi = v[i].end > hi ? v[i].end : hi;
			continue;
		}
		sum += hi - lo;
		lo = v[i].off;
		hi = v[i].end;
		open = 1;
	}
	return sum + (hi - lo);
}

static void classify(struct dt_stats *s)
{
	uint64_t one = 0, several = 0;

	for (size_t i = 0; i < s->nfiles; i++) {
		struct dt_file_stats *f = &s->files[i];

		if (!f->nprocs)
			f->mode = DT_MODE_NONE;
		else if (f->nprocs == 1)
			f->mode = DT_MODE_ONE;
		else if (f->whole_procs == f->nprocs)
			f->mode = DT_MODE_WHOLE;
		else
			f->mode = DT_MODE_SHARED;
		s->mode_files[f->mode]++;
		one += f->mode == DT_MODE_ONE;
		several += f->mode == DT_MODE_SHARED || f->mode == DT_MODE_WHOLE;
	}
	if (!s->data_procs)
		s->pattern = DT_PAT_NONE;
	else if (s->data_procs == 1)
		s->pattern = DT_PAT_SINGLE;
	else if (!several)
		s->pattern = DT_PAT_FPP;
	else if (!one)
		s->pattern = DT_PAT_SHARED;
	else
		s->pattern = DT_PAT_MIXED;
}

int dt_modes_compute(const struct dl_trace_file *t, struct dt_stats *s)
{
	struct dt_map idx = {0}, procs = {0};
	struct piece *v = NULL;
	size_t n = 0;
	int ret = -ENOMEM, created;

	for (size_t i = 0; i < s->nfiles; i++) {
		uint64_t *x = dt_map_get(&idx, s->files[i].id, 0, NULL);

		if (!x)
			goto out;
		*x = i;
	}
	for (uint64_t i = 0; i < t->nrecs; i++)
		n += t->recs[i].op == DL_TOP_READ || t->recs[i].op == DL_TOP_WRITE;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		goto out;
	n = 0;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		uint64_t *x, got = r->result > 0 ? (uint64_t)r->result : 0;

		if (r->op != DL_TOP_READ && r->op != DL_TOP_WRITE)
			continue;
		x = dt_map_find(&idx, r->file_id, 0);
		if (!x) /* every data request's file is in the stats */
			continue;
		v[n++] = (struct piece){*x, dt_proc(t, i), r->op == DL_TOP_READ, r->offset,
					r->offset + got};
		if (r->op == DL_TOP_READ && got && r->offset + got > s->files[*x].extent)
			s->files[*x].extent = r->offset + got;
		if (!dt_map_get(&procs, dt_proc(t, i), 0, &created))
			goto out;
		s->data_procs += created;
	}
	qsort(v, n, sizeof(*v), cmp_piece);
	for (size_t i = 0, j; i < n; i = j) {
		struct dt_file_stats *f = &s->files[v[i].file];

		for (j = i; j < n && v[j].file == v[i].file && v[j].pid == v[i].pid; j++)
			;
		f->nprocs++;
		if (f->extent && covered(v + i, j - i) >= f->extent)
			f->whole_procs++;
	}
	classify(s);
	ret = 0;
out:
	free(v);
	dt_map_free(&idx);
	dt_map_free(&procs);
	return ret;
}
