/* dlio-trace merge -o OUT TRACE...: the traces of a cluster's nodes (one per
 * daemon, each naming its node in the header) as one timeline, a version 3
 * trace whose records carry their node (dliofs/trace.h).
 *
 * Time: every record is stamped with its daemon's CLOCK_MONOTONIC, and each
 * header pairs the monotonic start with CLOCK_REALTIME read between two
 * monotonic reads. A node's records are moved onto the clock of the node
 * that started first through the two pairs: shift = (wall - mono) of the
 * node less that of the first. On one machine the monotonic clock is one
 * clock and the shift is the jitter of the pairs (well under a
 * microsecond), unless the wall clock was stepped between the starts:
 * --mono takes the monotonic times as they are. Across hosts the merge is
 * as good as the hosts' wall clocks agree (NTP: about a millisecond; PTP:
 * microseconds).
 *
 * Names: a file is the same file on every node when its path is (the data
 * set is), so file ids are merged by name, keeping a node's id where it is
 * free (identical inode numbers on every node keep all of them); jobs are
 * merged by name the same way. An id a trace has no name for (no footer)
 * stays its node's own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlio_trace_i.h"
#include "tool_opts_i.h"

#define PROG "dlio-trace merge"

struct min {
	const char *path;
	struct dl_trace_file t;
	int64_t shift; /* ns added to each of its monotonic times */
};

/* A name of one input's id, for the merge by name. */
struct ment {
	const char *name;
	uint32_t in;
	uint64_t id;
};

struct mname {
	uint64_t id;
	const char *name;
};

/* Merged ids of one kind (files or jobs). */
struct idspace {
	struct dt_map map;  /* (input, id) -> merged id */
	struct dt_map used; /* merged ids taken */
	uint64_t fresh;	    /* next id to try when a wanted one is taken */
};

struct merge {
	struct min *in;
	size_t nin;
	struct idspace files, jobs;
	struct mname *names;
	size_t nnames, ncap;
	int mono;
	const char *out;
};

static void idspace_free(struct idspace *s)
{
	dt_map_free(&s->map);
	dt_map_free(&s->used);
}

/* want when it is free, else the next free one from fresh. */
static int take_id(struct idspace *s, uint64_t want, uint64_t *got)
{
	int created;

	if (!dt_map_get(&s->used, want, 0, &created))
		return -ENOMEM;
	if (created) {
		*got = want;
		return 0;
	}
	for (;;) {
		uint64_t id = s->fresh++;

		if (!dt_map_get(&s->used, id, 0, &created))
			return -ENOMEM;
		if (created) {
			*got = id;
			return 0;
		}
	}
}

/* The merged id of (input, id): from the merge by name, or the input's own
 * id (or a fresh one) for an id without a name. */
static int map_id(struct idspace *s, uint32_t in, uint64_t id, uint64_t *out)
{
	int created;
	uint64_t *v = dt_map_get(&s->map, in, id, &created);

	if (!v)
		return -ENOMEM;
	if (created) {
		int ret = take_id(s, id, v);

		if (ret)
			return ret;
	}
	*out = *v;
	return 0;
}

static int add_name(struct merge *m, uint64_t id, const char *name)
{
	if (m->nnames == m->ncap) {
		size_t nc = m->ncap ? m->ncap * 2 : 256;
		struct mname *n = realloc(m->names, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->names = n;
		m->ncap = nc;
	}
	m->names[m->nnames++] = (struct mname){id, name};
	return 0;
}

static int cmp_ment(const void *pa, const void *pb)
{
	const struct ment *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	if (a->in != b->in)
		return a->in < b->in ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* One kind of names (jobs: 1, files: 0) merged by name. Within a name the
 * k-th id of each input (a path that named two files in one run, say)
 * joins the k-th of the others. */
static int merge_names(struct merge *m, int jobs)
{
	struct idspace *s = jobs ? &m->jobs : &m->files;
	struct ment *v;
	uint64_t *slot = NULL;
	size_t n = 0, cap = 0;
	int ret = -ENOMEM;

	for (size_t i = 0; i < m->nin; i++)
		cap += m->in[i].t.nnames;
	v = malloc((cap ? cap : 1) * sizeof(*v));
	slot = malloc((cap ? cap : 1) * sizeof(*slot));
	if (!v || !slot)
		goto out;
	for (size_t i = 0; i < m->nin; i++) {
		const struct dl_trace_file *t = &m->in[i].t;

		for (size_t k = 0; k < t->nnames; k++) {
			uint64_t id = t->names[k].id;
			int is_job = !!(id & DL_TRACE_JOB_BIT);

			/* A node's entry has both bits; a file's id may have
			 * bit 62 (the mount's synthetic inode numbers do). */
			if ((is_job && (id & DL_TRACE_NODE_BIT)) || is_job != jobs)
				continue;
			v[n++] = (struct ment){t->names[k].name, (uint32_t)i,
					       jobs ? id & 0xffffffffULL : id};
		}
	}
	qsort(v, n, sizeof(*v), cmp_ment);
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		size_t nslots = 0;

		for (hi = lo; hi < n && !strcmp(v[hi].name, v[lo].name); hi++)
			;
		for (size_t k = lo, run = 0; k < hi; k++) {
			int created;
			uint64_t *p;

			run = k > lo && v[k].in == v[k - 1].in ? run + 1 : 0;
			if (run == nslots) {
				ret = take_id(s, v[k].id, &slot[nslots]);
				if (!ret)
					ret = add_name(m, jobs ? DL_TRACE_JOB_ID(slot[nslots])
							       : slot[nslots],
						       v[k].name);
				if (ret)
					goto out;
				nslots++;
			}
			p = dt_map_get(&s->map, v[k].in, v[k].id, &created);
			if (!p) {
				ret = -ENOMEM;
				goto out;
			}
			*p = slot[run];
		}
	}
	ret = 0;
out:
	free(v);
	free(slot);
	return ret;
}

/* The inputs belong together: version 2 traces of distinct cluster nodes. */
static int check_inputs(const struct merge *m)
{
	for (size_t i = 0; i < m->nin; i++) {
		const struct dl_trace_file *t = &m->in[i].t;

		if (t->h.version == DL_TRACE_VERSION_MERGED) {
			fprintf(stderr, PROG ": %s: already a merged trace (merge the nodes' own "
					"traces)\n", t->path);
			return -EINVAL;
		}
		if (t->h.version != DL_TRACE_VERSION) {
			fprintf(stderr, PROG ": %s: a version %u trace (before jobs and nodes); "
					"merge takes version %u traces\n",
				t->path, t->h.version, DL_TRACE_VERSION);
			return -EINVAL;
		}
		if (!t->h.node) {
			fprintf(stderr, PROG ": %s: node 0 in the header: a mount alone, not a "
					"node of a cluster (trace.file with {rank} under mpirun "
					"gives each node's trace its node)\n",
				t->path);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (m->in[j].t.h.node == t->h.node) {
				fprintf(stderr, PROG ": node %u twice: %s and %s (one trace per "
						"node)\n",
					t->h.node, m->in[j].t.path, t->path);
				return -EINVAL;
			}
	}
	return 0;
}

/* Each input's shift onto the clock of the node that started first. */
static size_t set_shifts(struct merge *m)
{
	size_t base = 0;

	for (size_t i = 1; i < m->nin; i++) {
		const struct dl_trace_header *h = &m->in[i].t.h, *b = &m->in[base].t.h;

		if (m->mono ? h->start_mono_ns < b->start_mono_ns : h->epoch_ns < b->epoch_ns)
			base = i;
	}
	const struct dl_trace_header *b = &m->in[base].t.h;
	int64_t boff = (int64_t)(b->epoch_ns - b->start_mono_ns);

	for (size_t i = 0; i < m->nin; i++) {
		const struct dl_trace_header *h = &m->in[i].t.h;

		m->in[i].shift = m->mono ? 0 : (int64_t)(h->epoch_ns - h->start_mono_ns) - boff;
	}
	return base;
}

static uint64_t shifted(const struct min *in, uint64_t ns)
{
	return ns + (uint64_t)in->shift;
}

static int cmp_recn(const void *pa, const void *pb)
{
	const struct dl_trace_rec_node *a = pa, *b = pb;

	if (a->rec.start_ns != b->rec.start_ns)
		return a->rec.start_ns < b->rec.start_ns ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	if (a->rec.pid != b->rec.pid)
		return a->rec.pid < b->rec.pid ? -1 : 1;
	if (a->rec.tid != b->rec.tid)
		return a->rec.tid < b->rec.tid ? -1 : 1;
	if (a->rec.file_id != b->rec.file_id)
		return a->rec.file_id < b->rec.file_id ? -1 : 1;
	if (a->rec.offset != b->rec.offset)
		return a->rec.offset < b->rec.offset ? -1 : 1;
	return a->rec.op - b->rec.op;
}

/* Every record with its node, merged ids and shifted time, in time order. */
static int merge_records(struct merge *m, struct dl_trace_rec_node **out, uint64_t *nout)
{
	uint64_t n = 0, k = 0;
	struct dl_trace_rec_node *v;

	for (size_t i = 0; i < m->nin; i++)
		n += m->in[i].t.nrecs;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->nin; i++) {
		const struct min *in = &m->in[i];

		for (uint64_t r = 0; r < in->t.nrecs; r++) {
			struct dl_trace_rec_node *x = &v[k++];
			uint64_t id, job = 0;

			x->rec = in->t.recs[r];
			x->node = in->t.h.node;
			x->rec.start_ns = shifted(in, x->rec.start_ns);
			if (map_id(&m->files, (uint32_t)i, x->rec.file_id, &id) ||
			    (x->rec.job && map_id(&m->jobs, (uint32_t)i, x->rec.job, &job))) {
				free(v);
				return -ENOMEM;
			}
			x->rec.file_id = id;
			x->rec.job = (uint32_t)job;
		}
	}
	qsort(v, n, sizeof(*v), cmp_recn);
	*out = v;
	*nout = n;
	return 0;
}

static int write_all(FILE *f, const void *p, size_t len)
{
	return fwrite(p, 1, len, f) == len ? 0 : -EIO;
}

static int write_merged(struct merge *m, size_t base, const struct dl_trace_rec_node *v,
			uint64_t n, FILE *f)
{
	struct dl_trace_header h = m->in[base].t.h;
	struct dl_trace_footer ft = {0};
	uint64_t end = 0;
	int ret = 0;

	h.version = DL_TRACE_VERSION_MERGED;
	h.rec_size = sizeof(*v);
	h.node = 0;
	h.ops_mask = 0;
	for (size_t i = 0; i < m->nin; i++) {
		uint64_t e = shifted(&m->in[i], dl_trace_end_ns(&m->in[i].t));

		h.ops_mask |= m->in[i].t.h.ops_mask;
		ft.dropped += m->in[i].t.f.dropped;
		end = e > end ? e : end;
	}
	ret = write_all(f, &h, sizeof(h));
	if (!ret)
		ret = write_all(f, v, n * sizeof(*v));
	ft.nrecords = n;
	ft.names_offset = sizeof(h) + n * sizeof(*v);
	for (size_t i = 0; i < m->nnames && !ret; i++) {
		struct dl_trace_name nm = {.file_id = m->names[i].id,
					   .len = (uint32_t)strlen(m->names[i].name)};

		ret = write_all(f, &nm, sizeof(nm));
		if (!ret)
			ret = write_all(f, m->names[i].name, nm.len);
	}
	ft.nnames = m->nnames;
	ft.end_mono_ns = end;
	memcpy(ft.magic, DL_TRACE_MAGIC, sizeof(ft.magic));
	if (!ret)
		ret = write_all(f, &ft, sizeof(ft));
	if (!ret && fflush(f))
		ret = -errno;
	return ret;
}

/* The output file: a trace target (dl_trace_open_target's checks), and not
 * one of the inputs. */
static int open_out(const struct merge *m, int *fd, int *created)
{
	char why[256];
	struct stat so, si;
	int ret = dl_trace_open_target(m->out, fd, created, why, sizeof(why));

	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", m->out, ret == -EINVAL ? why : strerror(-ret));
		return ret;
	}
	if (fstat(*fd, &so))
		goto fail;
	for (size_t i = 0; i < m->nin; i++)
		if (!stat(m->in[i].path, &si) && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			fprintf(stderr, PROG ": %s: is the input %s (write the merge elsewhere)\n",
				m->out, m->in[i].path);
			dl_trace_discard_target(m->out, *fd, *created);
			return -EINVAL;
		}
	if (ftruncate(*fd, 0))
		goto fail;
	return 0;
fail:
	ret = -errno;
	fprintf(stderr, PROG ": %s: %s\n", m->out, strerror(-ret));
	dl_trace_discard_target(m->out, *fd, *created);
	return ret;
}

static int write_out(struct merge *m, size_t base, const struct dl_trace_rec_node *v, uint64_t n)
{
	int fd, created, ret;
	FILE *f;

	ret = open_out(m, &fd, &created);
	if (ret)
		return ret;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		dl_trace_discard_target(m->out, fd, created);
		goto say;
	}
	ret = write_merged(m, base, v, n, f);
	if (fclose(f) && !ret)
		ret = -errno;
	if (ret && created)
		unlink(m->out);
say:
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", m->out, strerror(-ret));
	return ret;
}

static void report(const struct merge *m, size_t base, uint64_t n)
{
	printf("%s: %llu records of %zu nodes, on node %u's clock (%s)\n", m->out,
	       (unsigned long long)n, m->nin, m->in[base].t.h.node,
	       m->mono ? "--mono: the monotonic times as they are"
		       : "shifted by the wall-clock time at each start");
	for (size_t i = 0; i < m->nin; i++) {
		const struct min *in = &m->in[i];

		printf("  node %-4u %10llu records %8llu dropped  shift %+.3f us  %s\n",
		       in->t.h.node, (unsigned long long)in->t.nrecs,
		       (unsigned long long)in->t.f.dropped, (double)in->shift / 1e3, in->path);
	}
}

static int do_merge(struct merge *m)
{
	struct dl_trace_rec_node *v = NULL;
	uint64_t n = 0;
	size_t base;
	int ret = check_inputs(m);

	if (ret)
		return ret;
	base = set_shifts(m);
	/* Fresh ids start past every id of every input. */
	for (size_t i = 0; i < m->nin; i++) {
		const struct dl_trace_file *t = &m->in[i].t;

		for (uint64_t r = 0; r < t->nrecs; r++) {
			if (t->recs[r].file_id >= m->files.fresh)
				m->files.fresh = t->recs[r].file_id + 1;
			if (t->recs[r].job >= m->jobs.fresh)
				m->jobs.fresh = t->recs[r].job + 1;
		}
		for (size_t k = 0; k < t->nnames; k++) {
			uint64_t id = t->names[k].id;

			if (!(id & DL_TRACE_JOB_BIT) && id >= m->files.fresh)
				m->files.fresh = id + 1;
			else if ((id & DL_TRACE_JOB_BIT) && (id & 0xffffffffULL) >= m->jobs.fresh)
				m->jobs.fresh = (id & 0xffffffffULL) + 1;
		}
	}
	/* Job 0 is "no job", never a merged job's id. */
	m->jobs.fresh = m->jobs.fresh ? m->jobs.fresh : 1;
	uint64_t zero;
	ret = take_id(&m->jobs, 0, &zero);
	if (!ret)
		ret = merge_names(m, 0);
	if (!ret)
		ret = merge_names(m, 1);
	for (size_t i = 0; i < m->nin && !ret; i++)
		ret = add_name(m, DL_TRACE_NODE_ID(m->in[i].t.h.node), m->in[i].path);
	if (!ret)
		ret = merge_records(m, &v, &n);
	if (ret == -ENOMEM)
		fprintf(stderr, PROG ": out of memory\n");
	if (!ret)
		ret = write_out(m, base, v, n);
	if (!ret)
		report(m, base, n);
	free(v);
	return ret;
}

static int cmp_min(const void *pa, const void *pb)
{
	const struct min *a = pa, *b = pb;

	return a->t.h.node < b->t.h.node ? -1 : a->t.h.node > b->t.h.node;
}

static const char merge_head[] =
	"usage: dlio-trace merge -o OUT TRACE... [--mono]\n"
	"  The traces of a cluster's nodes (one per daemon: trace.file with {rank},\n"
	"  each header naming its node) as one timeline: OUT is a trace whose\n"
	"  records carry their node, in time order, which summary, export, plot,\n"
	"  compare and dlio-whatif predict read. Each node's times are moved onto\n"
	"  the clock of the node that started first through the wall-clock time\n"
	"  each trace took at its start: on one machine the merge is exact to a\n"
	"  microsecond, across hosts as good as their clocks agree (NTP: about a\n"
	"  millisecond). Files and jobs are matched by name across nodes. Refused:\n"
	"  a trace of a mount alone (node 0), one node twice, a version 1 trace, an\n"
	"  already merged one.\n";

struct merge_opts {
	const char *out;
	int mono;
};

/* clang-format off */
static const struct tool_opt merge_opt[] = {
	{.name = "output", .letter = 'o', .kind = TOOL_OPT_STR, .arg = "OUT",
	 .off = offsetof(struct merge_opts, out), .help = "the merged trace (required)"},
	{.name = "mono", .kind = TOOL_OPT_FLAG, .value = 1,
	 .off = offsetof(struct merge_opts, mono),
	 .help = "the traces come from one machine: take their monotonic\n"
		 "times as they are (immune to a wall-clock step between\n"
		 "the daemons' starts)"},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */

static const struct tool_opts merge_opts = {
	.prog = PROG,
	.head = merge_head,
	.opt = merge_opt,
	.n = TOOL_OPTS_N(merge_opt),
	.col = 20,
};

int dt_merge(int argc, char **argv)
{
	struct merge_opts mo = {0};
	struct merge m = {0};
	int next, ret;

	if ((ret = tool_opts_parse(&merge_opts, argc, argv, 1, &mo, &next)))
		return ret > 0 ? 0 : 2;
	if (!mo.out || next >= argc) {
		fprintf(stderr, PROG ": %s\n", !mo.out ? "-o OUT is required" : "no trace to merge");
		tool_opts_usage(stderr, &merge_opts);
		return 2;
	}
	m.out = mo.out;
	m.mono = mo.mono;
	m.nin = (size_t)(argc - next);
	m.in = calloc(m.nin, sizeof(*m.in));
	if (!m.in)
		return 1;
	ret = 0;
	for (size_t i = 0; i < m.nin && !ret; i++) {
		m.in[i].path = argv[next + (int)i];
		ret = dt_load(m.in[i].path, &m.in[i].t);
	}
	/* In node order: the ids a node keeps do not depend on the argument order. */
	if (!ret)
		qsort(m.in, m.nin, sizeof(*m.in), cmp_min);
	if (!ret)
		ret = do_merge(&m);
	for (size_t i = 0; i < m.nin; i++)
		dl_trace_file_free(&m.in[i].t);
	free(m.in);
	free(m.names);
	idspace_free(&m.files);
	idspace_free(&m.jobs);
	return ret ? 1 : 0;
}
