/* Reading a trace file (dliofs/trace.h): header, records (sorted by
 * arrival), name table and footer. The layer that writes the format reads
 * it, for dlio-trace, dlio-whatif and the fuzzer alike. A trace whose
 * writer never closed it (no footer) still loads: its whole records are
 * read, without names, and dl_trace_file_warning says so. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdio.h>

#include "dliofs/trace.h"

double dl_trace_rel_s(const struct dl_trace_file *t, uint64_t mono_ns)
{
	return (double)(int64_t)(mono_ns - t->h.start_mono_ns) / 1e9;
}

uint64_t dl_trace_end_ns(const struct dl_trace_file *t)
{
	uint64_t end = t->h.start_mono_ns;
	if (t->has_footer)
		return t->f.end_mono_ns > end ? t->f.end_mono_ns : end;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		uint64_t e = t->recs[i].start_ns + dl_trace_dur(&t->recs[i]);
		if (e > end)
			end = e;
	}
	return end;
}

static int cmp_rec(const void *pa, const void *pb)
{
	const struct dl_trace_rec *a = pa, *b = pb;
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->file_id != b->file_id)
		return a->file_id < b->file_id ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return a->op - b->op;
}

static int cmp_rec_node(const void *pa, const void *pb)
{
	const struct dl_trace_rec_node *a = pa, *b = pb;
	int c = cmp_rec(&a->rec, &b->rec);

	if (c)
		return c;
	return a->node < b->node ? -1 : a->node > b->node;
}

static int cmp_name(const void *pa, const void *pb)
{
	const struct dl_trace_file_name *a = pa, *b = pb;
	return a->id < b->id ? -1 : a->id > b->id;
}

const char *dl_trace_name_find(const struct dl_trace_file *t, uint64_t id)
{
	size_t lo = 0, hi = t->nnames;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->names[mid].id == id)
			return t->names[mid].name;
		if (t->names[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *dl_trace_name_of(const struct dl_trace_file *t, uint64_t id, char *tmp, size_t len)
{
	const char *n = dl_trace_name_find(t, id);
	if (n)
		return n;
	snprintf(tmp, len, "#%llu", (unsigned long long)id);
	return tmp;
}

static int load_names(struct dl_trace_file *t, const char *map, size_t names_end)
{
	size_t off = t->f.names_offset;
	size_t n = t->f.nnames;

	if (n > (names_end - off) / sizeof(struct dl_trace_name))
		return -EINVAL;
	t->names = calloc(n ? n : 1, sizeof(*t->names));
	/* Room for every path plus its NUL: never more than the table. */
	t->name_buf = malloc(names_end - off + n + 1);
	if (!t->names || !t->name_buf)
		return -ENOMEM;
	char *p = t->name_buf;
	for (size_t i = 0; i < n; i++) {
		struct dl_trace_name nm;
		if (off + sizeof(nm) > names_end)
			return -EINVAL;
		memcpy(&nm, map + off, sizeof(nm));
		off += sizeof(nm);
		if (nm.len > names_end - off)
			return -EINVAL;
		memcpy(p, map + off, nm.len);
		p[nm.len] = 0;
		t->names[i] = (struct dl_trace_file_name){.id = nm.file_id, .name = p};
		p += nm.len + 1;
		off += nm.len;
	}
	t->nnames = n;
	qsort(t->names, n, sizeof(*t->names), cmp_name);
	return 0;
}

static int cmp_u32(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	return a < b ? -1 : a > b;
}

/* A merged trace's records with their nodes, sorted together (the merge
 * writes them in order; a crafted file need not be). */
static int parse_nodes(struct dl_trace_file *t, const char *map)
{
	struct dl_trace_rec_node *v = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*v));
	uint32_t *seen;

	t->nodes = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*t->nodes));
	if (!v || !t->nodes) {
		free(v);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < t->nrecs; i++)
		memcpy(&v[i], map + sizeof(t->h) + i * t->h.rec_size, sizeof(*v));
	qsort(v, t->nrecs, sizeof(*v), cmp_rec_node);
	for (uint64_t i = 0; i < t->nrecs; i++) {
		t->recs[i] = v[i].rec;
		t->nodes[i] = v[i].node;
	}
	/* The distinct nodes: reuse the scratch for a sorted copy. */
	seen = (uint32_t *)v;
	memcpy(seen, t->nodes, t->nrecs * sizeof(*seen));
	qsort(seen, t->nrecs, sizeof(*seen), cmp_u32);
	t->nnodes = 0;
	for (uint64_t i = 0; i < t->nrecs; i++)
		t->nnodes += !i || seen[i] != seen[i - 1];
	free(v);
	return 0;
}

/* The checks and copies of dl_trace_load on bytes already in memory (also what
 * the fuzzer feeds): returns 0, or -EINVAL with *why set, or -errno. */
static int parse(struct dl_trace_file *t, const char *map, size_t len, const char **why)
{
	int ret;

	if (len < sizeof(t->h)) {
		*why = "too short for a trace header";
		return -EINVAL;
	}
	memcpy(&t->h, map, sizeof(t->h));
	if (memcmp(t->h.magic, DL_TRACE_MAGIC, sizeof(t->h.magic))) {
		*why = "not a dliofs trace (bad magic)";
		return -EINVAL;
	}
	/* Version 1 traces load as they are: their pid is the client's
	 * thread, their tid the daemon's worker, and they have no jobs. */
	if (t->h.version != 1 && t->h.version != DL_TRACE_VERSION &&
	    t->h.version != DL_TRACE_VERSION_MERGED) {
		*why = "unsupported trace version";
		return -EINVAL;
	}
	/* Later versions may grow the record: read the fields we know. */
	size_t need = t->h.version == DL_TRACE_VERSION_MERGED ? sizeof(struct dl_trace_rec_node)
							      : sizeof(struct dl_trace_rec);
	if (t->h.rec_size < need || t->h.rec_size > 4096) {
		*why = "bad record size in the header";
		return -EINVAL;
	}
	t->h.config[sizeof(t->h.config) - 1] = 0;

	size_t recs_end = len;
	if (len >= sizeof(t->h) + sizeof(t->f)) {
		memcpy(&t->f, map + len - sizeof(t->f), sizeof(t->f));
		if (!memcmp(t->f.magic, DL_TRACE_MAGIC, sizeof(t->f.magic))) {
			uint64_t body = len - sizeof(t->f);
			if (t->f.names_offset < sizeof(t->h) || t->f.names_offset > body ||
			    (t->f.names_offset - sizeof(t->h)) % t->h.rec_size ||
			    (t->f.names_offset - sizeof(t->h)) / t->h.rec_size != t->f.nrecords) {
				*why = "footer does not match the file";
				return -EINVAL;
			}
			t->has_footer = 1;
			recs_end = t->f.names_offset;
		}
	}
	if (!t->has_footer)
		memset(&t->f, 0, sizeof(t->f));
	t->nrecs = (recs_end - sizeof(t->h)) / t->h.rec_size;
	t->recs = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*t->recs));
	if (!t->recs)
		return -ENOMEM;
	if (t->h.version == DL_TRACE_VERSION_MERGED) {
		ret = parse_nodes(t, map);
		if (ret)
			return ret;
	} else {
		for (uint64_t i = 0; i < t->nrecs; i++)
			memcpy(&t->recs[i], map + sizeof(t->h) + i * t->h.rec_size,
			       sizeof(*t->recs));
		/* The file holds writer batches; everything downstream wants arrival order. */
		qsort(t->recs, t->nrecs, sizeof(*t->recs), cmp_rec);
		t->nnodes = 1;
	}
	if (t->has_footer) {
		ret = load_names(t, map, len - sizeof(t->f));
		if (ret == -EINVAL)
			*why = "corrupt name table";
		return ret;
	}
	return 0;
}

/* t is emptied on failure, and why says what was wrong. */
static int finish(struct dl_trace_file *t, int ret, const char *bad, char *why, size_t len)
{
	if (bad)
		ret = -EINVAL;
	if (ret) {
		snprintf(why, len, "%s", bad ? bad : strerror(-ret));
		dl_trace_file_free(t);
	}
	return ret;
}

const char *dl_trace_file_warning(const struct dl_trace_file *t)
{
	return t->has_footer ? NULL
			     : "no footer (tracing was not stopped cleanly): reading the whole "
			       "records, without file names or a drop count";
}

int dl_trace_load_mem(const char *name, const void *buf, size_t len, struct dl_trace_file *t,
		      char *why, size_t whylen)
{
	const char *bad = NULL;
	int ret;

	memset(t, 0, sizeof(*t));
	t->path = name;
	ret = parse(t, buf, len, &bad);
	return finish(t, ret, bad, why, whylen);
}

int dl_trace_load(const char *path, struct dl_trace_file *t, char *why, size_t whylen)
{
	struct stat st;
	char *map = MAP_FAILED;
	const char *bad = NULL;
	size_t len = 0;
	int fd, ret = 0;

	memset(t, 0, sizeof(*t));
	t->path = path;
	/* Non-blocking: a FIFO's open would wait for a writer that never comes. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		bad = "not a regular file (a trace is one: not a FIFO, a device or a directory)";
		goto out;
	}
	len = (size_t)st.st_size;
	if (len < sizeof(t->h)) {
		bad = "too short for a trace header";
		goto out;
	}
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	ret = parse(t, map, len, &bad);
out:
	if (map != MAP_FAILED)
		munmap(map, len);
	if (fd >= 0)
		close(fd);
	return finish(t, ret, bad, why, whylen);
}

void dl_trace_file_free(struct dl_trace_file *t)
{
	free(t->recs);
	free(t->nodes);
	free(t->names);
	free(t->name_buf);
	t->recs = NULL;
	t->nodes = NULL;
	t->names = NULL;
	t->name_buf = NULL;
	t->nrecs = 0;
	t->nnames = 0;
}
