/* A measurement replayed on the model in virtual time: what `dliofs
 * profile` did on the real storage (N clients, each with one request of a
 * size in flight, for a time, the first part not counted), done on a pacer
 * instead. The profile's fit chooses its model with it, and says for each
 * point it measured what the model predicts there; the same numbers are
 * what the mount gives for that pattern (less the mount's own overhead).
 * Closed loop: a client sends its next request when the last one is due
 * (the profile's clients have no think time beyond a system call). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pacer_i.h"

#define SIM_T0 1000000000ULL /* virtual time starts here */
#define SIM_MAX_CLIENTS 1024

int dl_pacer_sim_point(const struct dl_pacer_cfg *cfg, enum dl_op_class cls, uint64_t seed,
		       struct dl_fit_point *pt)
{
	struct dl_pacer_cfg c;
	struct dl_pacer *p = NULL;
	struct dl_hist *h = NULL;
	struct dl_pacer_req *req = NULL;
	struct dl_pacer_result *res = NULL;
	uint64_t t_end, t_warm, last = 0, ops = 0, bytes = 0, el;
	unsigned n, live;
	int ret;

	if (!cfg || !pt || (unsigned)cls >= DL_OP__COUNT || !pt->clients ||
	    pt->clients > SIM_MAX_CLIENTS || !pt->time_ns)
		return -EINVAL;
	n = pt->clients;
	ret = dl_pacer_cfg_copy(&c, cfg);
	if (ret)
		return ret;
	/* Every request reaches the device, one queue for all. */
	c.cache.policy = DL_CACHE_KERNEL;
	c.share.policy = DL_SHARE_FCFS;
	c.share.nrules = 0;
	c.enabled = 1;
	ret = -ENOMEM;
	h = calloc(1, sizeof(*h));
	req = calloc(n, sizeof(*req));
	res = calloc(n, sizeof(*res));
	if (!h || !req || !res)
		goto out;
	ret = dl_pacer_new(&c, SIM_T0, seed, &p);
	if (ret)
		goto out;
	t_warm = SIM_T0 + pt->warm_ns;
	t_end = SIM_T0 + pt->time_ns;
	for (unsigned i = 0; i < n; i++) {
		req[i] = (struct dl_pacer_req){.cls = cls, .file_id = i + 1, .len = pt->size};
		ret = dl_pacer_submit(p, &req[i], SIM_T0, &res[i]);
		if (ret)
			goto out;
	}
	live = n;
	while (live) {
		unsigned j = n;
		uint64_t now, sub;

		for (unsigned i = 0; i < n; i++)
			if (res[i].due_ns != UINT64_MAX && (j == n || res[i].due_ns < res[j].due_ns))
				j = i;
		if (j == n)
			break;
		now = res[j].due_ns;
		sub = now - res[j].queue_ns - res[j].service_ns;
		dl_pacer_complete(p, &req[j], &res[j], now);
		if (sub >= t_warm) {
			ops++;
			bytes += req[j].len;
			dl_hist_add(h, now - sub);
			last = now > last ? now : last;
		}
		if (now >= t_end) {
			res[j].due_ns = UINT64_MAX;
			live--;
			continue;
		}
		req[j].off += req[j].len;
		ret = dl_pacer_submit(p, &req[j], now, &res[j]);
		if (ret)
			goto out;
	}
	el = last > t_warm ? last - t_warm : 0;
	pt->mb_s = el ? (double)bytes * 1e3 / (double)el : 0;
	pt->iops = el ? (double)ops * 1e9 / (double)el : 0;
	pt->p10_ns = dl_hist_quantile(h, 0.10);
	pt->p50_ns = dl_hist_quantile(h, 0.50);
	pt->p90_ns = dl_hist_quantile(h, 0.90);
	pt->p99_ns = dl_hist_quantile(h, 0.99);
	ret = 0;
out:
	dl_pacer_free(p);
	dl_pacer_cfg_free(&c);
	free(h);
	free(req);
	free(res);
	return ret;
}
