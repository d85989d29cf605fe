/* dlio-whatif predict: from one traced run, what the job would get under
 * other storage settings, and what N copies of it would get on one shared
 * device, without running anything: the trace is replayed through the
 * pacer in virtual time (dlio_whatif_replay.c), and each job's predicted
 * change of I/O time becomes its figures through its own split of time
 * into compute and data waits (the recorded report, TRACE.json, written by
 * sweep --trace). The first row is always the recorded setting itself,
 * predicted, beside what was measured: the check of the prediction. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dliofs/trace.h"
#include "dlio_whatif_i.h"
#include "dliofs/clock.h"
#include "dliofs/config.h"
#include "dliofs/json.h"
#include "tool_opts_i.h"

#define MAX_CLIENTS_LIST 16

struct popts {
	const char *trace, *config, *side, *json;
	struct wi_grid grid;
	unsigned clients[MAX_CLIENTS_LIST], nclients;
	int quiet;
};

/* What the recording says: its settings, its config, its jobs' figures. */
struct recorded {
	char config[4096];
	unsigned nkv;
	struct wi_kv kv[WI_MAX_AXES * 2];
	unsigned ncopies;
	struct wi_jobmodel *copies;
	uint64_t origin; /* CLOCK_MONOTONIC the replay's time 0 stands for */
};

struct prow {
	struct wi_kv kv[WI_MAX_AXES];
	unsigned nkv, clients;
	int recorded;
	struct wi_replay rp;
	struct wi_figs *figs; /* per replay job */
	struct wi_figs total;
	double replay_s;
};

static int parse_clients(const char *s, struct popts *o)
{
	char *end;

	do {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 1 || v > 100000 || (*end && *end != ',') ||
		    o->nclients == MAX_CLIENTS_LIST) {
			fprintf(stderr,
				"dlio-whatif predict: --clients: expected counts from 1 to "
				"100000, comma-separated (at most %d)\n",
				MAX_CLIENTS_LIST);
			return -EINVAL;
		}
		o->clients[o->nclients++] = (unsigned)v;
		s = *end ? end + 1 : end;
	} while (*end);
	return 0;
}

static int set_axis(void *ctx, const struct tool_opt *r, const char *arg)
{
	struct popts *o = ctx;

	(void)r;
	if (o->grid.nax == WI_MAX_AXES || wi_axis_parse("--set", arg, 0, &o->grid.ax[o->grid.nax]))
		return -EINVAL;
	o->grid.nax++;
	return 0;
}

static int set_clients(void *ctx, const struct tool_opt *r, const char *arg)
{
	(void)r;
	return parse_clients(arg, ctx);
}

#define OFF(f) offsetof(struct popts, f)

/* clang-format off */
static const struct tool_opt predict_opt[] = {
	{.name = "set", .kind = TOOL_OPT_CALL, .set = set_axis, .arg = "KEY=V1,...",
	 .help = "settings to predict (the product of the lists), on top\n"
		 "of the recorded ones; the recorded setting is always\n"
		 "the first row, beside its measured figures"},
	{.name = "clients", .kind = TOOL_OPT_CALL, .set = set_clients, .arg = "N,...",
	 .help = "N copies of every traced job at once on one shared\n"
		 "device (N nodes or N users); default 1"},
	{.name = "config", .kind = TOOL_OPT_STR, .off = OFF(config), .arg = "CONFIG",
	 .help = "the storage model the trace was taken under (default:\n"
		 "TRACE.json's, else the config named in the trace)"},
	{.name = "job", .kind = TOOL_OPT_STR, .off = OFF(side), .arg = "FILE",
	 .help = "the job's figures (default TRACE.json)"},
	{.name = "json", .kind = TOOL_OPT_STR, .off = OFF(json), .arg = "FILE",
	 .help = "every prediction, per job and in total"},
	{.name = "quiet", .letter = 'q', .kind = TOOL_OPT_FLAG, .off = OFF(quiet), .value = 1},
	{.name = "help", .letter = 'h', .kind = TOOL_OPT_HELP},
};
/* clang-format on */

static const struct tool_opts predict_opts = {
	.prog = "dlio-whatif predict",
	.head = "usage: dlio-whatif predict TRACE [--set KEY=V1,V2,...]... [--clients N[,N...]]\n"
		"        [--config CONFIG] [--job TRACE.json] [--json FILE] [-q]\n"
		"\n"
		"Replay TRACE (a dliofs trace: dlio-whatif sweep --trace DIR, or dliofs trace\n"
		"start) through the pacer in virtual time at each point of the --set grid:\n"
		"every client thread keeps its order and think time (the gap between the\n"
		"reply it waited for and its next request), only the storage's service\n"
		"times change. Each job's change of I/O time is turned into its run time,\n"
		"AU (dlio-drive) or data-wait share (a job under dlio-stall) and samples/s\n"
		"with the job's own figures from TRACE.json (written beside the trace by\n"
		"sweep --trace); without them only the I/O is predicted.\n"
		"A merged trace of a cluster's nodes (dlio-trace merge) replays as the\n"
		"whole cluster on one pacer at the cluster's limits, each node's part of a\n"
		"job a job of its own (each node had its own pacer).\n"
		"\n",
	.tail = "\n"
		"example:\n"
		"  dlio-whatif sweep job.yaml --set read.bandwidth=100MB/s --trace tr -- \\\n"
		"      dlio-drive --config job.yaml {mount}\n"
		"  dlio-whatif predict tr/p0-r0.trace --set read.bandwidth=250MB/s,1GB/s \\\n"
		"      --clients 1,8\n",
	.col = 20,
	.opt = predict_opt,
	.n = TOOL_OPTS_N(predict_opt),
	.hint = "(dlio-whatif predict --help lists the options)\n",
};

static int parse(int argc, char **argv, struct popts *o)
{
	int next, ret;

	memset(o, 0, sizeof(*o));
	if ((ret = tool_opts_parse(&predict_opts, argc, argv, 1, o, &next)))
		return ret > 0 ? 1 : -EINVAL;
	if (next + 1 != argc) {
		fprintf(stderr, "dlio-whatif predict: expected one TRACE\n");
		return -EINVAL;
	}
	o->trace = argv[next];
	if (!o->nclients)
		o->clients[o->nclients++] = 1;
	return 0;
}


/* A regular file for reading, or NULL with errno (EINVAL: not a regular
 * file); opened without blocking, so a FIFO never holds us up. */
static FILE *open_regular(const char *path)
{
	struct stat st;
	FILE *f;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* TRACE.json (or --job): absent is fine (I/O only), unreadable is not. */
static int read_side(const struct popts *o, struct recorded *r)
{
	char path[4200], key[64];
	struct dl_jdoc j;
	const struct dl_jval *v, *w;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s.json", o->trace);
	if (o->side)
		snprintf(path, sizeof(path), "%s", o->side);
	f = open_regular(path);
	if (!f) {
		if (o->side || errno != ENOENT) {
			fprintf(stderr, "dlio-whatif predict: %s: %s\n", path,
				errno == EINVAL ? "not a regular file" : strerror(errno));
			return -errno;
		}
		return 0;
	}
	{
		FILE *m = open_memstream(&text, &len);
		char buf[65536];
		size_t n;

		while (m && (n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, m);
		if (m)
			fclose(m);
	}
	fclose(f);
	ret = text ? dl_jdoc_parse(text, len, DL_JDOC_PARTIAL, &j) : -ENOMEM;
	free(text);
	if (ret) {
		fprintf(stderr, "dlio-whatif predict: %s: not JSON\n", path);
		return ret;
	}
	if ((v = dl_jdoc_get(&j, "config")) && v->str)
		snprintf(r->config, sizeof(r->config), "%s", v->str);
	for (unsigned i = 0; i < WI_MAX_AXES * 2; i++) {
		snprintf(key, sizeof(key), "settings.%u.key", i);
		v = dl_jdoc_get(&j, key);
		snprintf(key, sizeof(key), "settings.%u.value", i);
		w = dl_jdoc_get(&j, key);
		if (!v || !w || !v->str || !w->str)
			break;
		snprintf(r->kv[i].key, sizeof(r->kv[i].key), "%s", v->str);
		snprintf(r->kv[i].val, sizeof(r->kv[i].val), "%s", w->str);
		r->nkv = i + 1;
	}
	dl_jdoc_free(&j);
	r->copies = calloc(WI_MAX_COPIES, sizeof(*r->copies));
	if (!r->copies)
		return -ENOMEM;
	for (unsigned c = 0; c < WI_MAX_COPIES; c++) {
		snprintf(key, sizeof(key), "copies.%u.", c);
		if (wi_model_read(path, key, &r->copies[c]))
			break;
		r->ncopies = c + 1;
	}
	return 0;
}

static int apply(struct dl_pacer_cfg *cfg, const struct wi_kv *kv, unsigned n, const char *what)
{
	char err[512];

	for (unsigned i = 0; i < n; i++) {
		if (dl_pacer_cfg_set(cfg, kv[i].key, kv[i].val, err, sizeof(err))) {
			fprintf(stderr, "dlio-whatif predict: %s %s=%s: %s\n", what, kv[i].key,
				kv[i].val, err);
			return -EINVAL;
		}
	}
	return 0;
}

/* The model of the trace's job j, by its name in the trace (whatif-N). */
static const struct wi_jobmodel *model_of(const struct recorded *r, const struct dl_trace_file *t,
					  uint32_t job)
{
	const char *name = dl_trace_name_find(t, DL_TRACE_JOB_ID(job));

	for (unsigned c = 0; name && c < r->ncopies; c++)
		if (!strcmp(r->copies[c].name, name))
			return &r->copies[c];
	return NULL;
}

/* Recorded end of a job's I/O (its last reply), since the origin, and the
 * time its reads took in all. */
static uint64_t recorded_end(const struct dl_trace_file *t, uint32_t job, uint64_t origin,
			     double *read_s)
{
	uint64_t end = 0;

	*read_s = 0;
	for (uint64_t i = 0; i < t->nrecs; i++) {
		uint64_t e = t->recs[i].start_ns + dl_trace_dur(&t->recs[i]);

		if (t->recs[i].job != job)
			continue;
		if (e > origin && e - origin > end)
			end = e - origin;
		if (t->recs[i].op == DL_TOP_READ)
			*read_s += (double)dl_trace_dur(&t->recs[i]) / 1e9;
	}
	return end;
}

/* A job's (or the jobs') cache counters of the replay, added to c. */
static void add_counts(struct wi_cache_counts *c, const struct wi_rjob *jb)
{
	c->reqs += (double)jb->cache_reqs;
	c->hits += (double)jb->cache_hits;
	c->hit_bytes += (double)jb->hit_bytes;
	c->bytes += (double)(jb->hit_bytes + jb->miss_bytes);
}

static int predict_row(const struct dl_trace_file *t, const struct recorded *r,
		       const struct dl_pacer_cfg *rec, const struct dl_pacer_cfg *cfg,
		       uint64_t seed, struct prow *row)
{
	uint64_t t0 = dl_mono_ns();
	int ret = wi_replay_run(t, r->origin, rec, cfg, row->clients, seed, &row->rp);

	row->replay_s = (double)(dl_mono_ns() - t0) / 1e9;
	if (ret)
		return ret;
	row->figs = calloc(row->rp.njobs ? row->rp.njobs : 1, sizeof(*row->figs));
	if (!row->figs)
		return -ENOMEM;
	for (size_t k = 0; k < row->rp.njobs; k++) {
		const struct wi_rjob *jb = &row->rp.jobs[k];
		const struct wi_jobmodel *m = model_of(r, t, jb->job);
		double read_s, end = (double)recorded_end(t, jb->job, r->origin, &read_s);
		double delta = ((double)jb->last_ns - end) / 1e9;
		struct wi_pred p = {.run_s = NAN, .au = NAN, .wait_share = NAN,
				    .samples_per_s = NAN, .read_bytes = NAN};

		if (m)
			wi_model_predict(m, delta, read_s > 0 ? jb->read_wait_s / read_s : 1, &p);
		else /* No report: the job's I/O, from its start to its last reply. */
			p.run_s = (double)jb->last_ns / 1e9;
		if (jb->last_ns > jb->first_ns)
			p.read_bytes = (double)jb->read_bytes;
		wi_figs_from_pred(&row->figs[k], &p);
		if (row->rp.emulated_cache) {
			struct wi_cache_counts c = {0};
			add_counts(&c, jb);
			wi_figs_from_cache(&row->figs[k], &c);
		}
	}
	wi_figs_total(row->figs, (unsigned)row->rp.njobs, &row->total);
	if (row->rp.emulated_cache) {
		struct wi_cache_counts c = {0};

		for (size_t k = 0; k < row->rp.njobs; k++)
			add_counts(&c, &row->rp.jobs[k]);
		wi_figs_from_cache(&row->total, &c);
	}
	return 0;
}

static void print_row(const struct popts *o, const struct prow *row, const struct wi_figs *f,
		      const char *label, unsigned seen)
{
	struct wi_kv kv[WI_MAX_AXES];
	char b[64];

	memcpy(kv, row->kv, sizeof(kv));
	for (unsigned a = 0; a < o->grid.nax; a++)
		printf("%-17s ", row->recorded ? "(recorded)" : kv[a].val);
	printf("%-8u %-10s", row->clients, label);
	for (int m = 0; m < WI_NM; m++) {
		if (!(seen >> m & 1))
			continue;
		wi_fmt_metric(m, wi_figs_has(f, m) ? f->v[m] : NAN, b, sizeof(b));
		printf(" %-11s", b);
	}
	printf("\n");
}

static void print_table(const struct popts *o, const struct recorded *r, struct prow *rows,
			size_t nrows)
{
	struct wi_figs meas[WI_MAX_COPIES], mt = {0};
	double slowest = 0;
	unsigned seen = 0;

	if (r->ncopies) {
		for (unsigned c = 0; c < r->ncopies; c++)
			meas[c] = r->copies[c].figs;
		wi_figs_total(meas, r->ncopies, &mt);
	}
	/* A column for what some row has: no AU for a job without an
	 * accelerator, no hit ratios without an emulated cache. */
	seen = mt.have;
	for (size_t i = 0; i < nrows; i++)
		seen |= rows[i].total.have;
	seen |= 1u << WI_M_RUN;

	printf("dlio-whatif predict: %s, recorded at", o->trace);
	for (unsigned i = 0; i < r->nkv; i++)
		printf(" %s=%s", r->kv[i].key, r->kv[i].val);
	printf("%s\n", r->nkv ? "" : " the config's settings");
	for (unsigned a = 0; a < o->grid.nax; a++)
		printf("%-17s ", o->grid.ax[a].key);
	printf("%-8s %-10s", "clients", "");
	for (int m = 0; m < WI_NM; m++)
		if (seen >> m & 1)
			printf(" %-11s", wi_metrics[m].head);
	printf("\n");
	for (size_t i = 0; i < nrows; i++) {
		print_row(o, &rows[i], &rows[i].total, "predicted", seen);
		if (rows[i].recorded && r->ncopies)
			print_row(o, &rows[i], &mt, "measured", seen);
	}
	for (size_t i = 0; i < nrows; i++)
		slowest = rows[i].replay_s > slowest ? rows[i].replay_s : slowest;
	if (nrows)
		printf("(%zu requests per client replayed, each prediction in %.3f s or less; %.0f%% "
		       "of the recorded reads took the daemon's time, not the storage's)\n",
		       rows[0].rp.reqs / (rows[0].clients ? rows[0].clients : 1), slowest,
		       rows[0].rp.daemon_share * 100);
	if (!r->ncopies)
		printf("(no job report beside the trace: run time is the I/O's, from the trace's "
		       "start to the last reply)\n");
}

static int write_json(const struct popts *o, const struct dl_trace_file *t, const struct recorded *r,
		      const struct prow *rows, size_t nrows)
{
	struct dl_jw w;
	FILE *f = fopen(o->json, "w");

	if (!f) {
		fprintf(stderr, "dlio-whatif predict: %s: %s\n", o->json, strerror(errno));
		return -errno;
	}
	dl_jw_init(&w, f, 3);
	dl_jw_obj(&w, NULL);
	dl_jw_str(&w, "tool", "dlio-whatif");
	dl_jw_str(&w, "command", "predict");
	dl_jw_str(&w, "trace", o->trace);
	dl_jw_u64(&w, "requests", t->nrecs);
	wi_json_settings(&w, r->kv, r->nkv);
	dl_jw_arr(&w, "measured");
	for (unsigned c = 0; c < r->ncopies; c++) {
		dl_jw_obj(&w, NULL);
		dl_jw_str(&w, "name", r->copies[c].name);
		wi_json_figs(&w, "figures", &r->copies[c].figs);
		dl_jw_end(&w);
	}
	dl_jw_end(&w);
	dl_jw_arr(&w, "predictions");
	for (size_t i = 0; i < nrows; i++) {
		dl_jw_obj(&w, NULL);
		dl_jw_bool(&w, "recorded", rows[i].recorded);
		wi_json_settings(&w, rows[i].kv, rows[i].nkv);
		dl_jw_u64(&w, "clients", rows[i].clients);
		dl_jw_f64(&w, "replay_s", rows[i].replay_s, 6);
		dl_jw_f64(&w, "io_span_s", rows[i].rp.span_s, 9);
		dl_jw_f64(&w, "read_mb_per_s", rows[i].rp.read_mb_per_s, 6);
		dl_jw_f64(&w, "read_latency_mean_s", rows[i].rp.read_lat_mean_s, 6);
		dl_jw_f64(&w, "daemon_share", rows[i].rp.daemon_share, 6);
		wi_json_figs(&w, "total", &rows[i].total);
		dl_jw_arr(&w, "jobs");
		for (size_t k = 0; k < rows[i].rp.njobs; k++) {
			const char *n = dl_trace_name_find(t, DL_TRACE_JOB_ID(rows[i].rp.jobs[k].job));

			dl_jw_obj(&w, NULL);
			dl_jw_str(&w, "name", n ? n : "");
			dl_jw_u64(&w, "client", rows[i].rp.jobs[k].client);
			dl_jw_u64(&w, "requests", rows[i].rp.jobs[k].reqs);
			dl_jw_f64(&w, "io_end_s", (double)rows[i].rp.jobs[k].last_ns / 1e9, 9);
			wi_json_figs(&w, "figures", &rows[i].figs[k]);
			dl_jw_end(&w);
		}
		dl_jw_end(&w);
		dl_jw_end(&w);
	}
	dl_jw_end(&w);
	return wi_json_close(&w, f);
}

/* The configs: as recorded, and the pacer it stands for. */
static int load_model(const struct popts *o, const struct dl_trace_file *t, struct recorded *r,
		      struct dl_config **cfg, struct dl_pacer_cfg *rec)
{
	const char *path = o->config ? o->config : r->config[0] ? r->config : t->h.config;

	if (!path[0]) {
		fprintf(stderr, "dlio-whatif predict: %s names no config: give --config\n",
			o->trace);
		return -EINVAL;
	}
	if (dl_config_load(path, stderr, cfg)) {
		fprintf(stderr,
			"dlio-whatif predict: cannot load the config %s (--config names "
			"another)\n",
			path);
		return -EINVAL;
	}
	if (dl_pacer_cfg_copy(rec, &(*cfg)->pacer))
		return -ENOMEM;
	return apply(rec, r->kv, r->nkv, "recorded setting");
}

static uint64_t origin_of(const struct dl_trace_file *t, const struct recorded *r)
{
	uint64_t o = t->h.start_mono_ns;

	for (unsigned c = 0; c < r->ncopies; c++)
		if (r->copies[c].t_start && r->copies[c].t_start < o)
			o = r->copies[c].t_start;
	if (t->nrecs && t->recs[0].start_ns < o)
		o = t->recs[0].start_ns;
	return o;
}

static int run_rows(const struct popts *o, const struct dl_trace_file *t, const struct recorded *r,
		    const struct dl_config *cfg, const struct dl_pacer_cfg *rec, struct prow *rows,
		    size_t *nrows)
{
	size_t np = wi_grid_points(&o->grid);
	struct dl_pacer_cfg pc;
	int ret = 0;

	*nrows = 0;
	for (size_t p = 0; p <= np && !ret; p++) {
		for (unsigned ci = 0; ci < o->nclients && !ret; ci++) {
			struct prow *row = &rows[*nrows];

			/* Row 0: the recorded setting, one client, to check against. */
			if (p == 0 && ci > 0)
				break;
			row->recorded = p == 0;
			row->clients = p == 0 ? 1 : o->clients[ci];
			row->nkv = o->grid.nax;
			if (p > 0 && o->grid.nax)
				wi_grid_point(&o->grid, p - 1, row->kv);
			if (dl_pacer_cfg_copy(&pc, rec))
				return -ENOMEM;
			ret = p ? apply(&pc, row->kv, row->nkv, "--set") : 0;
			if (!ret)
				ret = predict_row(t, r, rec, &pc, cfg->seed, row);
			dl_pacer_cfg_free(&pc);
			(*nrows)++;
		}
		if (p == 0 && !o->grid.nax && o->nclients == 1 && o->clients[0] == 1)
			break;
	}
	return ret;
}

int wi_predict(int argc, char **argv)
{
	struct popts o;
	struct recorded r;
	struct dl_trace_file t;
	char why[256];
	struct dl_config *cfg = NULL;
	struct dl_pacer_cfg rec;
	struct prow *rows = NULL;
	size_t nrows = 0;
	int ret, rc = 1;

	memset(&r, 0, sizeof(r));
	memset(&t, 0, sizeof(t));
	dl_pacer_cfg_init(&rec);
	ret = parse(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (dl_trace_load(o.trace, &t, why, sizeof(why))) {
		fprintf(stderr, "dlio-whatif: %s: %s\n", o.trace, why);
		return 1;
	}
	if (dl_trace_file_warning(&t))
		fprintf(stderr, "dlio-whatif: %s: %s\n", o.trace, dl_trace_file_warning(&t));
	if (read_side(&o, &r) || load_model(&o, &t, &r, &cfg, &rec))
		goto out;
	r.origin = origin_of(&t, &r);
	rows = calloc((wi_grid_points(&o.grid) + 1) * o.nclients, sizeof(*rows));
	if (!rows)
		goto out;
	ret = run_rows(&o, &t, &r, cfg, &rec, rows, &nrows);
	if (ret) {
		fprintf(stderr, "dlio-whatif predict: the replay failed: %s\n", strerror(-ret));
		goto out;
	}
	if (!o.quiet)
		print_table(&o, &r, rows, nrows);
	rc = o.json && write_json(&o, &t, &r, rows, nrows) ? 1 : 0;
out:
	for (size_t i = 0; rows && i < nrows; i++) {
		wi_replay_free(&rows[i].rp);
		free(rows[i].figs);
	}
	free(rows);
	free(r.copies);
	dl_pacer_cfg_free(&rec);
	dl_config_free(cfg);
	dl_trace_file_free(&t);
	return rc;
}
