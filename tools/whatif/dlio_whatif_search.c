/* dlio-whatif search: the least demanding value of one storage key that
 * meets a target, by bisection on a log scale (storage settings span
 * decades; a knee at 740 MB/s is as far from 10 MB/s as 10 GB/s is from
 * 135 GB/s). The demanding end is measured first: if even it misses the
 * target, nothing in the range will. Then the bracket [fails, meets] is
 * halved (geometric mean, rounded to 3 significant digits, the value the
 * job really ran at) until its ends are within the resolution; the cheap
 * end is only measured when the bracket closes on it. Each probe is a full
 * point: R cold runs after W warm-ups, judged on their mean. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlio_whatif_i.h"
#include "dliofs/json.h"

#define MAX_PROBES 64

struct probe {
	double value;
	struct wi_kv kv[WI_MAX_AXES];
	struct wi_run *runs;
	struct wi_stat st[WI_NM];
	int met;
};

struct search {
	unsigned var; /* the axis searched */
	size_t fixed; /* point of the fixed axes */
	size_t nprobes;
	struct probe p[MAX_PROBES];
	int found, good, bad; /* indices into p, -1: none */
	int failed;
};

struct ctx {
	struct wi_opts *o;
	struct wi_env *e;
	int metric;
	size_t done, total; /* runs, for the progress line */
};

/* Settings of a probe: the fixed axes at their point, the searched one at v. */
static void probe_kv(const struct ctx *c, const struct search *s, double v, struct wi_kv *kv)
{
	const struct wi_axis *ax = &c->o->grid.ax[s->var];

	wi_grid_point(&c->o->grid, s->fixed, kv);
	wi_value_fmt(ax->kind, v, kv[s->var].val, sizeof(kv[s->var].val));
}

/* The value a setting really is once written with 3 significant digits. */
static double as_run(const struct wi_axis *ax, double v)
{
	struct wi_axis t;
	char buf[WI_KEY + WI_VAL + 2], val[WI_VAL];

	wi_value_fmt(ax->kind, v, val, sizeof(val));
	snprintf(buf, sizeof(buf), "%s=%s", ax->key, val);
	if (wi_axis_parse("search", buf, 0, &t) || t.nvals != 1)
		return v;
	return t.num[0];
}

static int measure(struct ctx *c, struct search *s, double v)
{
	struct probe *p = &s->p[s->nprobes];
	unsigned nr = c->o->warmup + c->o->repeat;
	char what[1100], tag[64], label[1200];
	size_t off = 0;

	if (s->nprobes == MAX_PROBES)
		return -ENOSPC;
	p->value = v;
	probe_kv(c, s, v, p->kv);
	p->runs = calloc(nr, sizeof(*p->runs));
	if (!p->runs)
		return -ENOMEM;
	for (unsigned a = 0; a < c->o->grid.nax; a++)
		off += (size_t)snprintf(what + off, sizeof(what) - off, "%s%s=%s", a ? ", " : "",
					p->kv[a].key, p->kv[a].val);
	for (unsigned r = 0; r < nr; r++) {
		int ret;

		snprintf(tag, sizeof(tag), "s%zu-p%zu-r%u", s->fixed, s->nprobes, r);
		snprintf(label, sizeof(label), "probe %zu (%s), %s %u", s->nprobes + 1, what,
			 r < c->o->warmup ? "warm-up" : "run",
			 r < c->o->warmup ? r + 1 : r - c->o->warmup + 1);
		ret = wi_measure(c->e, p->kv, c->o->grid.nax, tag, c->done++, c->total, label,
				 &p->runs[r]);
		if (ret == -EIO || ret == -EINTR)
			return ret;
		s->failed |= ret || !p->runs[r].ok;
	}
	wi_point_stats(p->runs, nr, c->o->warmup, -1, p->st);
	p->met = p->st[c->metric].n && wi_target_met(&c->o->target, p->st[c->metric].mean);
	s->nprobes++;
	return (int)s->nprobes - 1;
}

static int close_enough(double a, double b, double res)
{
	double r = a > b ? a / b : b / a;

	return r <= 1 + res + 1e-9;
}

static int run_search(struct ctx *c, struct search *s)
{
	const struct wi_axis *ax = &c->o->grid.ax[s->var];
	int hib = wi_key_higher_is_better(ax->key);
	double good_v = hib ? ax->num[1] : ax->num[0], bad_v = hib ? ax->num[0] : ax->num[1];
	int i;

	s->found = s->good = s->bad = -1;
	i = measure(c, s, good_v);
	if (i < 0)
		return i;
	if (!s->p[i].met)
		return 0; /* even the most demanding setting misses the target */
	s->good = i;
	while (!close_enough(s->p[s->good].value, bad_v, c->o->resolution)) {
		double mid = as_run(ax, sqrt(s->p[s->good].value * bad_v));

		if (mid == s->p[s->good].value || mid == bad_v)
			break; /* 3 digits cannot split it further */
		i = measure(c, s, mid);
		if (i < 0)
			return i;
		if (s->p[i].met)
			s->good = i;
		else {
			s->bad = i;
			bad_v = mid;
		}
	}
	if (s->bad < 0) {
		/* The bracket closed on the cheap end, never run: run it. */
		i = measure(c, s, bad_v);
		if (i < 0)
			return i;
		if (s->p[i].met)
			s->good = i;
		else
			s->bad = i;
	}
	s->found = s->good;
	return 0;
}

static void answer_line(const struct ctx *c, const struct search *s, char *buf, size_t len)
{
	const struct wi_axis *ax = &c->o->grid.ax[s->var];
	int hib = wi_key_higher_is_better(ax->key);
	char key[WI_KEY], v[64], m1[32], m2[32], bv[64];
	const char *name = wi_metrics[c->metric].says;
	const struct probe *g = s->found >= 0 ? &s->p[s->found] : &s->p[0];

	wi_key_label(ax->key, key, sizeof(key));
	wi_value_label(ax->kind, g->value, v, sizeof(v));
	wi_fmt_metric(c->metric, g->st[c->metric].mean, m1, sizeof(m1));
	if (s->found < 0) {
		snprintf(buf, len, "no %s in %s..%s meets %s (%s%s at %s)", key, ax->vals[0],
			 ax->vals[1], c->o->target.text, name, m1, v);
		return;
	}
	if (s->bad < 0) {
		snprintf(buf, len, "%s %s %s %s: the whole range meets %s (%s%s at %s)",
			 hib ? "needs no more than" : "tolerates", key, hib ? "=" : ">=", v,
			 c->o->target.text, name, m1, v);
		return;
	}
	wi_value_label(ax->kind, s->p[s->bad].value, bv, sizeof(bv));
	wi_fmt_metric(c->metric, s->p[s->bad].st[c->metric].mean, m2, sizeof(m2));
	snprintf(buf, len, "%s %s %s %s (%s%s at %s, %s at %s)", hib ? "needs" : "tolerates", key,
		 hib ? ">=" : "<=", v, name, m1, v, m2, bv);
}

static void json_probe(struct dl_jw *w, const struct ctx *c, const struct search *s,
		       const struct probe *p)
{
	unsigned nr = c->o->warmup + c->o->repeat;
	struct wi_axis t;

	dl_jw_obj(w, NULL);
	wi_json_settings(w, p->kv, c->o->grid.nax);
	dl_jw_arr(w, "values");
	for (unsigned a = 0; a < c->o->grid.nax; a++) {
		char buf[WI_KEY + WI_VAL + 2];

		snprintf(buf, sizeof(buf), "%s=%s", p->kv[a].key, p->kv[a].val);
		dl_jw_f64(w, NULL,
			  a == s->var				 ? p->value
			  : !wi_axis_parse("search", buf, 0, &t) ? t.num[0]
								 : NAN,
			  9);
	}
	dl_jw_end(w);
	dl_jw_bool(w, "met", p->met);
	wi_json_stats(w, "stats", p->st);
	wi_json_runs(w, p->runs, nr, c->o->warmup);
	dl_jw_end(w);
}

static int write_json(const char *path, const struct ctx *c, const struct search *ss, size_t n)
{
	struct dl_jw w;
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "dlio-whatif: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	dl_jw_init(&w, f, 3);
	dl_jw_obj(&w, NULL);
	wi_json_head(&w, "search", c->e, c->o->repeat, c->o->warmup);
	dl_jw_str(&w, "metric", wi_metrics[c->metric].name);
	wi_json_target(&w, &c->o->target);
	dl_jw_f64(&w, "resolution", c->o->resolution, 6);
	dl_jw_arr(&w, "keys");
	for (unsigned a = 0; a < c->o->grid.nax; a++)
		dl_jw_str(&w, NULL, c->o->grid.ax[a].key);
	dl_jw_end(&w);
	dl_jw_arr(&w, "probes");
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < ss[k].nprobes; i++)
			json_probe(&w, c, &ss[k], &ss[k].p[i]);
	dl_jw_end(&w);
	dl_jw_arr(&w, "answers");
	for (size_t k = 0; k < n; k++) {
		const struct wi_axis *ax = &c->o->grid.ax[ss[k].var];
		char line[512], label[64];

		answer_line(c, &ss[k], line, sizeof(line));
		dl_jw_obj(&w, NULL);
		dl_jw_str(&w, "key", ax->key);
		dl_jw_bool(&w, "found", ss[k].found >= 0);
		if (ss[k].found >= 0) {
			wi_value_label(ax->kind, ss[k].p[ss[k].found].value, label, sizeof(label));
			dl_jw_f64(&w, "value", ss[k].p[ss[k].found].value, 9);
			dl_jw_str(&w, "label", label);
		}
		if (ss[k].bad >= 0)
			dl_jw_f64(&w, "failed_at", ss[k].p[ss[k].bad].value, 9);
		dl_jw_u64(&w, "probes", ss[k].nprobes);
		dl_jw_str(&w, "text", line);
		dl_jw_end(&w);
	}
	dl_jw_end(&w);
	return wi_json_close(&w, f);
}

/* Probes one search may take: the ends and the halvings. */
static size_t probes_bound(const struct wi_axis *ax, double res)
{
	double steps = log(ax->num[1] / ax->num[0]) / log(1 + res);

	return (size_t)ceil(log2(steps > 1 ? steps : 1)) + 2;
}

static int report(struct ctx *c, struct search *ss, size_t n)
{
	char line[512], json[PATH_MAX + 16];
	int rc = 0;

	for (size_t k = 0; k < n; k++) {
		size_t runs = ss[k].nprobes * (c->o->warmup + c->o->repeat);

		answer_line(c, &ss[k], line, sizeof(line));
		printf("%s\n", line);
		printf("  (%zu probe%s, %zu run%s; resolution %.3g%%; every run cold", ss[k].nprobes,
		       ss[k].nprobes == 1 ? "" : "s", runs, runs == 1 ? "" : "s",
		       c->o->resolution * 100);
		if (c->e->nodes)
			printf("; a cluster of %u mounts, the setting on every node, the job's "
			       "ranks together",
			       c->e->nodes);
		printf(")\n");
		if (ss[k].failed)
			rc = 1;
		else if (ss[k].found < 0 && !rc)
			rc = 3;
	}
	snprintf(json, sizeof(json), "%s/search.json", c->e->workdir);
	if ((c->o->json || c->o->plot) && write_json(c->o->json ? c->o->json : json, c, ss, n))
		return 1;
	if (c->o->plot &&
	    wi_plot(c->o->json ? c->o->json : json, c->o->plot, wi_metrics[c->metric].name))
		return 1;
	return rc;
}

int wi_search(int argc, char **argv)
{
	struct wi_opts o;
	struct wi_env e;
	struct search *ss = NULL;
	struct ctx c;
	size_t n = 1;
	unsigned var = 0;
	int ret, rc = 1;

	ret = wi_opts_parse(argc, argv, "search", &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = wi_env_from_opts(&e, &o);
	if (ret) {
		rc = ret == -EINVAL ? 2 : 1; /* refused before anything ran: as a bad option */
		goto out;
	}
	for (unsigned a = 0; a < o.grid.nax; a++)
		if (o.grid.ax[a].range)
			var = a;
	n = wi_grid_points(&o.grid);
	ss = calloc(n, sizeof(*ss));
	if (!ss)
		goto out;
	c = (struct ctx){&o, &e, o.target.metric, 0, 0};
	c.total = n * probes_bound(&o.grid.ax[var], o.resolution) * (o.warmup + o.repeat);
	for (size_t k = 0; k < n; k++) {
		ss[k].var = var;
		ss[k].fixed = k;
		ret = run_search(&c, &ss[k]);
		if (ret < 0) {
			wi_progress_end(&e);
			goto out;
		}
	}
	wi_progress_end(&e);
	rc = report(&c, ss, n);
out:
	for (size_t k = 0; ss && k < n; k++)
		for (size_t i = 0; i < ss[k].nprobes; i++)
			free(ss[k].p[i].runs);
	free(ss);
	wi_env_fini(&e);
	return rc;
}
