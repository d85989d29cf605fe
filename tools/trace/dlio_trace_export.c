/* dlio-trace export --chrome|--csv|--dxt TRACE [-o FILE]: the records in
 * formats existing viewers read.
 *   --chrome  Chrome trace-event JSON (chrome://tracing, Perfetto): one "X"
 *             event per request, ts/dur in microseconds since the Unix
 *             epoch, pid/tid of the client; "M" events name the processes.
 *   --csv     one line per request, with a header line.
 *   --dxt     Darshan-DXT-like text: per file, one line per read or write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dliofs/json.h"
#include "dlio_trace_i.h"
#include "tool_opts_i.h"

/* Wall-clock ns of a monotonic time: header epoch + (t - start). */
static uint64_t wall_ns(const struct dl_trace_file *t, uint64_t mono)
{
	return t->h.epoch_ns + (uint64_t)(int64_t)(mono - t->h.start_mono_ns);
}

/* The metadata event that names a client process or thread. */
static void meta_event(struct dl_jw *w, const char *what, uint32_t pid, uint32_t tid,
		       const char *prefix, uint32_t id)
{
	char name[48];

	snprintf(name, sizeof(name), "%s%u", prefix, id);
	dl_jw_obj(w, NULL);
	dl_jw_str(w, "name", what);
	dl_jw_str(w, "ph", "M");
	dl_jw_u64(w, "ts", 0);
	dl_jw_u64(w, "pid", pid);
	dl_jw_u64(w, "tid", tid);
	dl_jw_obj(w, "args");
	dl_jw_str(w, "name", name);
	dl_jw_end(w);
	dl_jw_end(w);
}

/* One "X" event per request; ts, dur and queue_us in microseconds with
 * three decimals, exactly (a double would round epoch microseconds to a
 * quarter). */
static void request_event(struct dl_jw *w, const struct dl_trace_file *t, uint64_t i)
{
	const struct dl_trace_rec *r = &t->recs[i];
	const char *op = dt_op_name(r->op);
	char tmp[32];

	dl_jw_obj(w, NULL);
	dl_jw_str(w, "name", op);
	dl_jw_str(w, "cat", op);
	dl_jw_str(w, "ph", "X");
	dl_jw_us(w, "ts", wall_ns(t, r->start_ns));
	dl_jw_us(w, "dur", dl_trace_dur(r));
	dl_jw_u64(w, "pid", r->pid);
	dl_jw_u64(w, "tid", r->tid);
	dl_jw_obj(w, "args");
	dl_jw_str(w, "file", dl_trace_name_of(t, r->file_id, tmp, sizeof(tmp)));
	dl_jw_u64(w, "offset", r->offset);
	dl_jw_u64(w, "size", r->size);
	dl_jw_us(w, "queue_us", r->queue_ns);
	dl_jw_bool(w, "hit", r->flags & 1);
	dl_jw_i64(w, "result", r->result);
	if (t->nodes)
		dl_jw_u64(w, "node", t->nodes[i]);
	dl_jw_end(w);
	dl_jw_end(w);
}

static int export_chrome(const struct dl_trace_file *t, FILE *fp)
{
	struct dt_map seen = {0};
	struct dl_jw w;
	int created;

	/* One event a line. */
	dl_jw_init(&w, fp, 2);
	dl_jw_obj(&w, NULL);
	dl_jw_arr(&w, "traceEvents");
	/* Name each client process and thread once. */
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];

		char prefix[40] = "client pid ";

		/* A merged trace's process lanes say their node. */
		if (t->nodes)
			snprintf(prefix, sizeof(prefix), "node %u, client pid ", t->nodes[i]);
		if (!dt_map_get(&seen, dt_proc(t, i), UINT64_MAX, &created))
			goto nomem;
		if (created)
			meta_event(&w, "process_name", r->pid, r->pid, prefix, r->pid);
		if (!dt_map_get(&seen, dt_proc(t, i), r->tid, &created))
			goto nomem;
		if (created)
			meta_event(&w, "thread_name", r->pid, r->tid, "tid ", r->tid);
	}
	dt_map_free(&seen);
	for (uint64_t i = 0; i < t->nrecs; i++)
		request_event(&w, t, i);
	dl_jw_end(&w);
	dl_jw_str(&w, "displayTimeUnit", "ms");
	dl_jw_obj(&w, "otherData");
	dl_jw_str(&w, "trace", t->path);
	dl_jw_str(&w, "config", t->h.config);
	dl_jw_u64(&w, "records", t->nrecs);
	dl_jw_u64(&w, "dropped", t->f.dropped);
	dl_jw_end(&w);
	return dl_jw_finish(&w);
nomem:
	dt_map_free(&seen);
	return -ENOMEM;
}

static int export_csv(const struct dl_trace_file *t, FILE *fp)
{
	char tmp[32];

	/* A merged trace's records carry their node: one more column. */
	fprintf(fp, "time_s,start_ns,dur_ns,queue_ns,op,pid,tid,file_id,file,offset,size,result,"
		    "hit,error%s\n",
		t->nodes ? ",node" : "");
	for (uint64_t i = 0; i < t->nrecs; i++) {
		const struct dl_trace_rec *r = &t->recs[i];
		int64_t rel = (int64_t)(r->start_ns - t->h.start_mono_ns);
		uint64_t a = rel < 0 ? (uint64_t)-rel : (uint64_t)rel;
		fprintf(fp, "%s%llu.%09llu,%llu,%llu,%u,%s,%u,%u,%llu,", rel < 0 ? "-" : "",
			(unsigned long long)(a / DT_NS), (unsigned long long)(a % DT_NS),
			(unsigned long long)r->start_ns, (unsigned long long)dl_trace_dur(r),
			r->queue_ns, dt_op_name(r->op), r->pid, r->tid,
			(unsigned long long)r->file_id);
		dt_csv_str(fp, dl_trace_name_of(t, r->file_id, tmp, sizeof(tmp)));
		fprintf(fp, ",%llu,%u,%d,%d,%d", (unsigned long long)r->offset, r->size,
			r->result, r->flags & 1, (r->flags & 2) || r->result < 0);
		if (t->nodes)
			fprintf(fp, ",%u", t->nodes[i]);
		fputc('\n', fp);
	}
	return 0;
}

static int cmp_by_file(const void *pa, const void *pb, void *arg)
{
	const struct dl_trace_file *t = arg;
	uint64_t ia = *(const uint64_t *)pa, ib = *(const uint64_t *)pb;
	uint64_t fa = t->recs[ia].file_id, fb = t->recs[ib].file_id;
	if (fa != fb)
		return fa < fb ? -1 : 1;
	return ia < ib ? -1 : ia > ib; /* records are in arrival order */
}

static int export_dxt(const struct dl_trace_file *t, FILE *fp)
{
	uint64_t n = 0;
	uint64_t *idx = malloc((t->nrecs ? t->nrecs : 1) * sizeof(*idx));
	struct dt_map seg = {0};
	char tmp[32];
	int ret = 0;

	if (!idx)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->nrecs; i++)
		if (t->recs[i].op == DL_TOP_READ || t->recs[i].op == DL_TOP_WRITE)
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_by_file, (void *)t);

	fprintf(fp, "# DXT-like trace from dliofs\n# trace: %s\n# config: %s\n", t->path,
		t->h.config);
	fprintf(fp, "# times in seconds since the trace started; Rank is the client pid; "
		    "Length is the bytes returned (requested size on error)\n");
	fprintf(fp, "# ***************************************************\n"
		    "# DXT_POSIX module data\n"
		    "# ***************************************************\n");
	for (uint64_t k = 0; k < n;) {
		uint64_t id = t->recs[idx[k]].file_id, end = k, nr = 0, nw = 0;
		struct dt_map pids = {0};
		uint64_t npids = 0;
		int created;
		for (; end < n && t->recs[idx[end]].file_id == id; end++) {
			const struct dl_trace_rec *r = &t->recs[idx[end]];
			nr += r->op == DL_TOP_READ;
			nw += r->op == DL_TOP_WRITE;
			if (!dt_map_get(&pids, r->pid, 0, &created)) {
				ret = -ENOMEM;
				break;
			}
			npids += created;
		}
		dt_map_free(&pids);
		if (ret)
			break;
		fprintf(fp, "\n# DXT, file_id: %llu, file_name: %s\n", (unsigned long long)id,
			dl_trace_name_of(t, id, tmp, sizeof(tmp)));
		fprintf(fp, "# DXT, clients: %llu, write_count: %llu, read_count: %llu\n",
			(unsigned long long)npids, (unsigned long long)nw, (unsigned long long)nr);
		fprintf(fp, "# Module    Rank  Wt/Rd  Segment          Offset       Length    "
			    "Start(s)      End(s)\n");
		for (; k < end; k++) {
			const struct dl_trace_rec *r = &t->recs[idx[k]];
			int rd = r->op == DL_TOP_READ;
			/* Segment: the request's number within (file, client, direction). */
			uint64_t *s = dt_map_get(&seg, ((uint64_t)r->pid << 1) | (uint64_t)rd, id,
						 NULL);
			if (!s) {
				ret = -ENOMEM;
				break;
			}
			uint64_t len = r->result >= 0 ? (uint64_t)r->result : r->size;
			fprintf(fp, " X_POSIX %7u  %-5s %8llu %15llu %12llu %11.6f %11.6f\n", r->pid,
				rd ? "read" : "write", (unsigned long long)(*s)++,
				(unsigned long long)r->offset, (unsigned long long)len,
				dl_trace_rel_s(t, r->start_ns), dl_trace_rel_s(t, r->start_ns + dl_trace_dur(r)));
		}
		if (ret)
			break;
	}
	dt_map_free(&seg);
	free(idx);
	return ret;
}

struct export_opts {
	int fmt; /* 'c', 's', 'd' */
	const char *out;
};

static int set_fmt(void *ctx, const struct tool_opt *o, const char *arg)
{
	struct export_opts *e = ctx;

	(void)arg;
	if (e->fmt && e->fmt != o->value) {
		fprintf(stderr, "dlio-trace export: one format at a time\n");
		return -EINVAL;
	}
	e->fmt = o->value;
	return 0;
}

/* clang-format off */
static const struct tool_opt export_opt[] = {
	{.name = "chrome", .kind = TOOL_OPT_CALL, .set = set_fmt, .value = 'c',
	 .help = "Chrome trace-event JSON for Perfetto / chrome://tracing: one \"X\"\n"
		 "event per request (ts, dur in us since the Unix epoch; pid, tid of\n"
		 "the client; args file, offset, size, queue_us, hit, result)"},
	{.name = "csv", .kind = TOOL_OPT_CALL, .set = set_fmt, .value = 's',
	 .help = "one line per request, with a header"},
	{.name = "dxt", .kind = TOOL_OPT_CALL, .set = set_fmt, .value = 'd',
	 .help = "Darshan-DXT-like text: per file, one line per read/write"},
	{.name = "output", .letter = 'o', .kind = TOOL_OPT_STR, .arg = "FILE",
	 .off = offsetof(struct export_opts, out)},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */

static const struct tool_opts export_opts = {
	.prog = "dlio-trace export",
	.head = "usage: dlio-trace export --chrome|--csv|--dxt TRACE [-o FILE]\n",
	.col = 12,
	.opt = export_opt,
	.n = TOOL_OPTS_N(export_opt),
};

int dt_export(int argc, char **argv)
{
	struct export_opts e = {0};
	int next, ret;

	if ((ret = tool_opts_parse(&export_opts, argc, argv, 1, &e, &next)))
		return ret > 0 ? 0 : 2;
	if (!e.fmt || next != argc - 1) {
		tool_opts_usage(stderr, &export_opts);
		return 2;
	}
	int fmt = e.fmt;
	const char *out = e.out;

	struct dl_trace_file t;
	if (dt_load(argv[next], &t))
		return 1;
	FILE *fp = out ? fopen(out, "w") : stdout;
	if (!fp) {
		fprintf(stderr, "dlio-trace: %s: %s\n", out, strerror(errno));
		dl_trace_file_free(&t);
		return 1;
	}
	if (fmt == 'c')
		ret = export_chrome(&t, fp);
	else if (fmt == 's')
		ret = export_csv(&t, fp);
	else
		ret = export_dxt(&t, fp);
	if (ret)
		fprintf(stderr, "dlio-trace: %s\n", strerror(-ret));
	if (fflush(fp) || ferror(fp)) {
		fprintf(stderr, "dlio-trace: writing %s: %s\n", out ? out : "stdout",
			strerror(errno));
		ret = -EIO;
	}
	if (out)
		fclose(fp);
	dl_trace_file_free(&t);
	return ret ? 1 : 0;
}
