/* Jobs: the clients of a mount grouped as fs/ knows them (one training job's
 * processes and threads are one job). A bounded table of slots; each slot
 * has per-class statistics and share state in the classes (pacer_job_cls).
 * When the table is full the least recently seen job with nothing in flight
 * is folded into the "other" slot, so totals always add up; a job with no
 * id known (0) is counted there too. */
#include <string.h>

#include "pacer_i.h"

void pacer_job_cls_reset(struct pacer_job_cls *jc)
{
	jc->ops = jc->bytes = jc->nodev = 0;
	jc->hits = jc->misses = jc->partial = jc->hit_bytes = jc->miss_bytes = 0;
	jc->queue_ns = 0;
	memset(&jc->lat, 0, sizeof(jc->lat));
}

void pacer_job_cls_fold(struct pacer_job_cls *dst, struct pacer_job_cls *src)
{
	dst->ops += src->ops;
	dst->bytes += src->bytes;
	dst->nodev += src->nodev;
	dst->hits += src->hits;
	dst->misses += src->misses;
	dst->partial += src->partial;
	dst->hit_bytes += src->hit_bytes;
	dst->miss_bytes += src->miss_bytes;
	dst->queue_ns += src->queue_ns;
	dl_hist_merge(&dst->lat, &src->lat);
}

/* A slot handed to another job starts with nothing: no statistics, no
 * share state (its device starts empty at its first request). Class locks
 * held. */
static void clear_slot(struct dl_pacer *p, uint32_t slot)
{
	for (int c = 0; c < DL_OP__COUNT; c++) {
		struct pacer_job_cls *jc = &p->cls[c].jobs[slot];
		uint64_t *heap = jc->dev.slots;
		uint32_t cap = jc->dev.slots_cap;

		memset(jc, 0, sizeof(*jc));
		jc->dev.slots = heap;
		jc->dev.slots_cap = cap;
		jc->weight = 1;
	}
}

/* Jobs lock held. */
static uint32_t evict(struct dl_pacer *p)
{
	uint32_t v = PACER_JOB_OTHER;

	for (uint32_t i = 0; i < PACER_MAX_JOBS; i++) {
		const struct pacer_job *j = &p->jobs.slot[i];

		if (atomic_load(&j->refs))
			continue;
		if (v == PACER_JOB_OTHER || j->last_ns < p->jobs.slot[v].last_ns)
			v = i;
	}
	if (v == PACER_JOB_OTHER)
		return v;
	for (int c = 0; c < DL_OP__COUNT; c++)
		pthread_mutex_lock(&p->cls[c].lock);
	for (int c = 0; c < DL_OP__COUNT; c++)
		pacer_job_cls_fold(&p->cls[c].jobs[PACER_JOB_OTHER], &p->cls[c].jobs[v]);
	clear_slot(p, v);
	for (int c = DL_OP__COUNT - 1; c >= 0; c--)
		pthread_mutex_unlock(&p->cls[c].lock);
	p->jobs.evicted++;
	return v;
}

uint32_t pacer_job_get(struct dl_pacer *p, uint32_t id, uint64_t now, int *is_new)
{
	struct pacer_job *j;
	uint32_t i, free_slot = PACER_JOB_OTHER;

	*is_new = 0;
	pthread_mutex_lock(&p->jobs.lock);
	if (p->since_ns == UINT64_MAX)
		p->since_ns = now;
	i = PACER_JOB_OTHER;
	if (id) {
		for (i = 0; i < PACER_MAX_JOBS; i++) {
			if (p->jobs.slot[i].id == id)
				break;
			if (!p->jobs.slot[i].id && free_slot == PACER_JOB_OTHER)
				free_slot = i;
		}
		if (i == PACER_MAX_JOBS) {
			i = free_slot != PACER_JOB_OTHER ? free_slot : evict(p);
			if (i != PACER_JOB_OTHER) {
				j = &p->jobs.slot[i];
				if (free_slot == i) {
					for (int c = 0; c < DL_OP__COUNT; c++)
						pthread_mutex_lock(&p->cls[c].lock);
					clear_slot(p, i);
					for (int c = DL_OP__COUNT - 1; c >= 0; c--)
						pthread_mutex_unlock(&p->cls[c].lock);
				}
				memset(j->name, 0, sizeof(j->name));
				j->id = id;
				j->named = 0;
				j->rule = -1;
				j->procs = j->threads = 0;
				j->first_ns = now;
			}
		}
	}
	j = &p->jobs.slot[i];
	if (!j->first_ns)
		j->first_ns = now;
	j->last_ns = now;
	*is_new = id && i != PACER_JOB_OTHER && !j->named;
	atomic_fetch_add(&j->refs, 1);
	pthread_mutex_unlock(&p->jobs.lock);
	return i;
}

void pacer_job_put(struct dl_pacer *p, uint32_t slot)
{
	if (slot < PACER_JOB_SLOTS)
		atomic_fetch_sub(&p->jobs.slot[slot].refs, 1);
}
