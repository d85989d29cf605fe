/* The metric table (WI_METRICS in dlio_whatif_i.h made into wi_metrics[])
 * and the getters its rows name: how a figure is derived from a job's
 * report, from the emulated cache's counters and from predict's answer. A
 * figure that is a number in a report needs no getter, only its path. */
#include <math.h>
#include <string.h>

#include "dlio_whatif_i.h"
#include "dliofs/json.h"

#define WI_METRIC_ROW(id, ...) [WI_M_##id] = {__VA_ARGS__},
const struct wi_metric_row wi_metrics[WI_NM] = {WI_METRICS(WI_METRIC_ROW)};
#undef WI_METRIC_ROW

int wi_metric_find(const char *name)
{
	for (int m = 0; m < WI_NM; m++)
		if (!strcmp(name, wi_metrics[m].name))
			return m;
	if (!strcmp(name, "stall_share"))
		return WI_M_WAIT;
	return -1;
}

void wi_metric_names(char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		*buf = 0;
	for (int m = 0; m < WI_NM && used < len; m++) {
		int n = snprintf(buf + used, len - used, "%s%s", m ? ", " : "", wi_metrics[m].name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* AU is an accelerator's: a job that never initialized CUDA has none (its
 * compute share is 1 - the data-wait share, which is shown). */
double wi_stall_au(const struct dl_jdoc *j)
{
	if (!(dl_jdoc_num(j, "runs.0.gpu.cupti_loaded", NAN) > 0))
		return NAN;
	return 1 - dl_jdoc_num(j, "runs.0.summary.wait_share", NAN);
}

double wi_stall_mbps(const struct dl_jdoc *j)
{
	double wall = dl_jdoc_num(j, "runs.0.wall_s", NAN);
	double rb = dl_jdoc_num(j, "runs.0.io.read_bytes", NAN);

	return wall > 0 && rb >= 0 ? rb / wall / 1e6 : NAN;
}

double wi_cache_hitb(const struct wi_cache_counts *c)
{
	return c->bytes > 0 ? c->hit_bytes / c->bytes : NAN;
}

double wi_cache_hitr(const struct wi_cache_counts *c)
{
	return c->reqs > 0 ? c->hits / c->reqs : NAN;
}

double wi_pred_run(const struct wi_pred *p) { return p->run_s; }
double wi_pred_au(const struct wi_pred *p) { return p->au; }
double wi_pred_wait(const struct wi_pred *p) { return p->wait_share; }
double wi_pred_sps(const struct wi_pred *p) { return p->samples_per_s; }

/* The replay's read bytes over the predicted run time (NAN where either is
 * unknown). */
double wi_pred_mbps(const struct wi_pred *p) { return p->read_bytes / p->run_s / 1e6; }

void wi_figs_from_cache(struct wi_figs *f, const struct wi_cache_counts *c)
{
	for (int m = 0; m < WI_NM; m++)
		if (wi_metrics[m].cache)
			wi_figs_set(f, m, wi_metrics[m].cache(c));
}

void wi_figs_from_pred(struct wi_figs *f, const struct wi_pred *p)
{
	for (int m = 0; m < WI_NM; m++)
		if (wi_metrics[m].pred)
			wi_figs_set(f, m, wi_metrics[m].pred(p));
}
