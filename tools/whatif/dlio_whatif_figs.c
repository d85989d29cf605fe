/* What a run of the job gives: its figures (run time, AU, data-wait share,
 * samples/s, MB/s) from dlio-drive's or dlio-stall's JSON report, and the
 * job's own split of its time into compute and waiting for data, which is
 * what turns a predicted change of its I/O time into predicted figures. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlio_whatif_i.h"
#include "dliofs/json.h"

void wi_figs_set(struct wi_figs *f, int m, double v)
{
	if (isnan(v))
		return;
	f->v[m] = v;
	f->have |= 1u << m;
}

int wi_figs_has(const struct wi_figs *f, int m) { return (f->have >> m) & 1u; }

static int read_doc(const char *path, struct dl_jdoc *j)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	int ret;

	memset(j, 0, sizeof(*j));
	if (!f)
		return -errno;
	for (;;) {
		if (len + 4096 > cap) {
			char *t = realloc(text, cap = cap ? 2 * cap : 65536);

			if (!t) {
				free(text);
				fclose(f);
				return -ENOMEM;
			}
			text = t;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (!n)
			break;
	}
	fclose(f);
	ret = len ? dl_jdoc_parse(text, len, DL_JDOC_PARTIAL, j) : -EINVAL;
	free(text);
	return ret;
}

static double num(const struct dl_jdoc *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static double num(const struct dl_jdoc *j, const char *fmt, ...)
{
	char path[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return dl_jdoc_num(j, path, NAN);
}

static void load_drive(const struct dl_jdoc *j, struct wi_jobmodel *m)
{
	double skip = num(j, "config.warmup_steps_excluded") + num(j, "config.end_steps_excluded");

	if (isnan(skip))
		skip = 1;
	for (unsigned e = 0; e < WI_MAX_EPOCHS && !isnan(num(j, "epochs.%u.wall_s", e)); e++) {
		m->ep[e].wall = num(j, "epochs.%u.wall_s", e);
		m->ep[e].compute = num(j, "epochs.%u.compute_s", e);
		m->ep[e].stall = num(j, "epochs.%u.stall_s", e);
		m->ep[e].au = num(j, "epochs.%u.au", e);
		m->ep[e].steps = num(j, "epochs.%u.steps", e);
		m->ep[e].samples = num(j, "epochs.%u.samples", e);
		m->ep[e].counted = m->ep[e].steps > skip ? m->ep[e].steps - skip : 0;
		m->nep = e + 1;
	}
}

static void load_stall(const struct dl_jdoc *j, struct wi_jobmodel *m)
{
	double wait = num(j, "runs.0.summary.wait_share");

	m->nep = 1;
	m->ep[0].wall = num(j, "runs.0.summary.window_s");
	m->ep[0].compute = num(j, "runs.0.summary.compute_s");
	m->ep[0].stall = num(j, "runs.0.summary.wait_s");
	m->ep[0].au = 1 - wait;
	m->ep[0].steps = num(j, "runs.0.summary.steps");
	m->ep[0].counted = num(j, "runs.0.summary.counted");
	m->ep[0].samples = num(j, "runs.0.summary.samples");
	m->wait_all_s = 0;
	for (unsigned i = 0; !isnan(num(j, "runs.0.steps.wait_s.%u", i)); i++)
		m->wait_all_s += num(j, "runs.0.steps.wait_s.%u", i);
	if (!(m->ep[0].counted > 0))
		m->nep = 0;
}

int wi_figs_load(const char *path, enum wi_job_kind kind, struct wi_figs *figs,
		 struct wi_jobmodel *model)
{
	struct dl_jdoc j;
	struct wi_jobmodel scratch;
	int ret = read_doc(path, &j);

	if (!model)
		model = &scratch;
	memset(figs, 0, sizeof(*figs));
	memset(model, 0, sizeof(*model));
	model->kind = (int)kind;
	if (ret) {
		fprintf(stderr, "dlio-whatif: the job's report %s: %s\n", path,
			ret == -EINVAL ? "not JSON" : strerror(-ret));
		return ret;
	}
	/* The figures: what the metric table says the report holds. */
	for (int m = 0; m < WI_NM; m++) {
		const struct wi_metric_src *src =
		    kind == WI_JOB_DRIVE ? &wi_metrics[m].drive : &wi_metrics[m].stall;
		if (src->path)
			wi_figs_set(figs, m, dl_jdoc_num(&j, src->path, NAN));
		else if (src->get)
			wi_figs_set(figs, m, src->get(&j));
	}
	if (kind == WI_JOB_DRIVE)
		load_drive(&j, model);
	else
		load_stall(&j, model);
	dl_jdoc_free(&j);
	model->figs = *figs;
	return 0;
}

unsigned wi_figs_load_ranks(const char *path, struct wi_figs *node, unsigned max)
{
	struct dl_jdoc j;
	unsigned n = 0;

	if (read_doc(path, &j))
		return 0;
	for (; n < max && !isnan(num(&j, "per_rank.%u.rank", n)); n++) {
		double mb = 0, wait = 0;
		unsigned k = 0, kw = 0;

		memset(&node[n], 0, sizeof(node[n]));
		wi_figs_set(&node[n], WI_M_AU, num(&j, "per_rank.%u.au_mean", n));
		wi_figs_set(&node[n], WI_M_SPS, num(&j, "per_rank.%u.samples_per_s_mean", n));
		/* The job's MB/s is the mean over epochs of the ranks' sum: each
		 * rank's is the mean over epochs of its own. */
		for (; !isnan(num(&j, "per_rank.%u.epochs.%u.mb_per_s", n, k)); k++) {
			double st = num(&j, "per_rank.%u.epochs.%u.stall_s", n, k);
			double wall = num(&j, "per_rank.%u.epochs.%u.wall_s", n, k);

			mb += num(&j, "per_rank.%u.epochs.%u.mb_per_s", n, k);
			if (st >= 0 && wall > 0) {
				wait += st / wall;
				kw++;
			}
		}
		if (k)
			wi_figs_set(&node[n], WI_M_MBPS, mb / k);
		/* Its data-wait share: its own waits over its own epochs. */
		if (kw)
			wi_figs_set(&node[n], WI_M_WAIT, wait / kw);
	}
	dl_jdoc_free(&j);
	return n;
}

void wi_figs_total(const struct wi_figs *c, unsigned n, struct wi_figs *t)
{
	memset(t, 0, sizeof(*t));
	for (int m = 0; m < WI_NM; m++) {
		double acc = 0;
		unsigned k = 0;

		for (unsigned i = 0; i < n; i++) {
			if (!wi_figs_has(&c[i], m))
				continue;
			if (wi_metrics[m].form == WI_MF_SECONDS)
				acc = c[i].v[m] > acc ? c[i].v[m] : acc;
			else
				acc += c[i].v[m];
			k++;
		}
		if (!k)
			continue;
		if (wi_metrics[m].form == WI_MF_SHARE)
			acc /= k;
		wi_figs_set(t, m, acc);
	}
}

void wi_stat_of(const double *v, unsigned n, struct wi_stat *s)
{
	double sum = 0, sq = 0;
	unsigned k = 0;

	memset(s, 0, sizeof(*s));
	s->mean = s->min = s->max = s->sd = NAN;
	for (unsigned i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		if (!k || v[i] < s->min)
			s->min = v[i];
		if (!k || v[i] > s->max)
			s->max = v[i];
		sum += v[i];
		k++;
	}
	if (!k)
		return;
	s->n = k;
	s->mean = sum / k;
	for (unsigned i = 0; i < n; i++)
		if (!isnan(v[i]))
			sq += (v[i] - s->mean) * (v[i] - s->mean);
	/* The sample standard deviation: R runs are a sample of the job's runs. */
	s->sd = k > 1 ? sqrt(sq / (k - 1)) : 0;
}

/* ---- prediction from a change of the job's I/O time ----
 * A job's steps wait for data or compute. Storage that makes its I/O end
 * delta seconds later (or earlier) lengthens (shortens) its data waits by
 * as much, down to what no storage hides: the first batch of an epoch is
 * always waited for, and its wait scales with the job's time in storage
 * (rho: predicted over recorded time of its reads). The rest of the change
 * goes to the counted steps, whose waits cannot fall below nothing: there
 * the job is bound by its own compute, which does not change. The two
 * estimates of the change (rho from the reads, delta from the I/O's end)
 * can disagree in sign for the counted steps; slower storage never makes
 * them wait less, faster storage never more. */

static double counted_wait(double counted, double first, double first2, double delta)
{
	double c = counted + delta - (first2 - first);

	if (delta >= 0)
		return fmax(c, counted);
	return fmin(fmax(c, 0), counted);
}

static void predict_drive(const struct wi_jobmodel *m, double delta, double rho,
			  struct wi_pred *o)
{
	double walls = 0, au = 0, wait = 0, sps = 0, run = m->run_s;
	unsigned k = 0;

	for (unsigned e = 0; e < m->nep; e++)
		walls += m->ep[e].wall;
	for (unsigned e = 0; e < m->nep && walls > 0; e++) {
		double d = delta * m->ep[e].wall / walls;
		double frac = m->ep[e].steps > 0 ? m->ep[e].counted / m->ep[e].steps : 0;
		/* AU counts the steps past each epoch's first: their compute and
		 * their waits (AU = compute / (compute + wait) over them). */
		double cc = m->ep[e].compute * frac;
		double sc = m->ep[e].au > 0 ? cc * (1 - m->ep[e].au) / m->ep[e].au : 0;
		double s0 = fmax(0, m->ep[e].stall - sc), s1 = s0 * rho;
		double sc2 = counted_wait(m->ep[e].stall - s0, s0, s1, d);
		double stall = s1 + sc2;
		double wall = m->ep[e].wall + stall - m->ep[e].stall;

		run += stall - m->ep[e].stall;
		if (cc + sc2 > 0) {
			au += cc / (cc + sc2);
			k++;
		}
		wait += wall > 0 ? stall / wall : 0;
		sps += wall > 0 ? m->ep[e].samples / wall : 0;
	}
	o->run_s = run;
	if (k)
		o->au = au / k;
	if (m->nep) {
		o->wait_share = wait / m->nep;
		o->samples_per_s = sps / m->nep;
	}
}

static void predict_stall(const struct wi_jobmodel *m, double delta, double rho,
			  struct wi_pred *o)
{
	double first0 = fmax(0, m->wait_all_s - m->ep[0].stall), first = first0 * rho;
	double wc = counted_wait(m->wait_all_s - first0, first0, first, delta);
	double all = first + wc, win = wc + m->ep[0].compute;

	o->run_s = m->run_s + all - m->wait_all_s;
	if (win > 0) {
		o->wait_share = wc / win;
		if (wi_figs_has(&m->figs, WI_M_AU))
			o->au = 1 - wc / win;
		if (m->ep[0].samples > 0)
			o->samples_per_s = m->ep[0].samples / win;
	}
}

void wi_model_predict(const struct wi_jobmodel *m, double delta_s, double rho,
		      struct wi_pred *out)
{
	out->run_s = out->au = out->wait_share = out->samples_per_s = NAN;
	if (!(rho >= 0) || !isfinite(rho))
		rho = 1;
	if (!m->nep) {
		out->run_s = m->run_s + delta_s;
		return;
	}
	if (m->kind == WI_JOB_DRIVE)
		predict_drive(m, delta_s, rho, out);
	else
		predict_stall(m, delta_s, rho, out);
}

/* ---- the model in the trace's side file ---- */

void wi_model_write(struct dl_jw *w, const char *key, const struct wi_jobmodel *m)
{
	dl_jw_obj(w, key);
	dl_jw_str(w, "name", m->name);
	dl_jw_str(w, "kind", m->kind == WI_JOB_DRIVE ? "dlio-drive" : "dlio-stall");
	dl_jw_f64(w, "run_s", m->run_s, 9);
	dl_jw_u64(w, "t_start_ns", m->t_start);
	dl_jw_u64(w, "t_end_ns", m->t_end);
	dl_jw_f64(w, "wait_all_s", m->wait_all_s, 9);
	dl_jw_obj(w, "figures");
	for (int k = 0; k < WI_NM; k++)
		if (wi_figs_has(&m->figs, k))
			dl_jw_f64(w, wi_metrics[k].name, m->figs.v[k], 9);
	dl_jw_end(w);
	dl_jw_arr(w, "epochs");
	for (unsigned e = 0; e < m->nep; e++) {
		dl_jw_obj(w, NULL);
		dl_jw_f64(w, "wall_s", m->ep[e].wall, 9);
		dl_jw_f64(w, "compute_s", m->ep[e].compute, 9);
		dl_jw_f64(w, "stall_s", m->ep[e].stall, 9);
		dl_jw_f64(w, "au", m->ep[e].au, 9);
		dl_jw_f64(w, "steps", m->ep[e].steps, 9);
		dl_jw_f64(w, "counted", m->ep[e].counted, 9);
		dl_jw_f64(w, "samples", m->ep[e].samples, 9);
		dl_jw_end(w);
	}
	dl_jw_end(w);
	dl_jw_end(w);
}

int wi_model_read(const char *path, const char *prefix, struct wi_jobmodel *m)
{
	struct dl_jdoc j;
	const struct dl_jval *kind, *name;
	int ret = read_doc(path, &j);

	memset(m, 0, sizeof(*m));
	if (ret)
		return ret;
	{
		char p[256];

		snprintf(p, sizeof(p), "%skind", prefix);
		kind = dl_jdoc_get(&j, p);
		snprintf(p, sizeof(p), "%sname", prefix);
		name = dl_jdoc_get(&j, p);
	}
	if (!kind || !kind->str) {
		dl_jdoc_free(&j);
		return -ENOENT;
	}
	m->kind = strcmp(kind->str, "dlio-drive") ? WI_JOB_STALL : WI_JOB_DRIVE;
	if (name && name->str)
		snprintf(m->name, sizeof(m->name), "%s", name->str);
	m->run_s = num(&j, "%srun_s", prefix);
	m->t_start = (uint64_t)num(&j, "%st_start_ns", prefix);
	m->t_end = (uint64_t)num(&j, "%st_end_ns", prefix);
	m->wait_all_s = num(&j, "%swait_all_s", prefix);
	for (int k = 0; k < WI_NM; k++)
		wi_figs_set(&m->figs, k, num(&j, "%sfigures.%s", prefix, wi_metrics[k].name));
	for (unsigned e = 0; e < WI_MAX_EPOCHS && !isnan(num(&j, "%sepochs.%u.wall_s", prefix, e));
	     e++) {
		m->ep[e].wall = num(&j, "%sepochs.%u.wall_s", prefix, e);
		m->ep[e].compute = num(&j, "%sepochs.%u.compute_s", prefix, e);
		m->ep[e].stall = num(&j, "%sepochs.%u.stall_s", prefix, e);
		m->ep[e].au = num(&j, "%sepochs.%u.au", prefix, e);
		m->ep[e].steps = num(&j, "%sepochs.%u.steps", prefix, e);
		m->ep[e].counted = num(&j, "%sepochs.%u.counted", prefix, e);
		m->ep[e].samples = num(&j, "%sepochs.%u.samples", prefix, e);
		m->nep = e + 1;
	}
	dl_jdoc_free(&j);
	return 0;
}
