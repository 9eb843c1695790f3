/*
 * The streamed device timelines' GPU jobs of shared fence sources (i915,
 * amdgpu, amdxdna, gpu_scheduler, dma_fence) without a submitting call
 * (jobflow_int.h): such a job's device is its ring's, learnt from the
 * ring's first linked job (jobs.h's device rule), so it waits in its
 * open slot (still holding the sweeps back) until that job is counted and
 * no linked job made before it is still held; at the end a ring that never
 * linked gets the fallback device (kx_jobdevtab_assign with no ring
 * driver), as the builder gives it. Past the budget (f->pend_max waiting,
 * KX_JOBFLOW_HELD counted behind one, or KX_JOBFLOW_WAITS wait calls kept)
 * the jobs waiting are counted on their ring's fallback device, and so are
 * that ring's unlinked jobs from then on: the figures stay exact unless the
 * ring's first linked job gives another device, checked once that is
 * known (then the file is read into memory, PEND_BUDGET).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"
#include "util/grow.h"

/* The earliest DONE of the jobs waiting (the wait calls that may hold it
 * are kept), once the waiting ones changed. */
static void pend_low_again(struct kx_jobflow *f)
{
	f->pend_low = UINT64_MAX;
	for (size_t i = 0; i < f->nrdrv; i++)
		for (size_t k = 0; k < f->rdrv[i].npend; k++) {
			const struct fl_kjob *o = kx_slots_at(&f->open, f->rdrv[i].pend[k]);

			if (o->t.r.done_ts < f->pend_low)
				f->pend_low = o->t.r.done_ts;
		}
}

/* Job slot of f->open counted now, on ring driver drv (0: the fallback). */
static int pend_count(struct kx_jobflow *f, uint32_t slot, unsigned int drv)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	struct fl_kjob j = *o;

	o->gen = 0;
	o->pending = 0;
	kx_slots_put(&f->open, slot);
	return jf_job_out(f, &j.t, j.ts, j.seq, f->end_ns, j.submit_drv, drv, KEYED_LATE);
}

/* Job slot of f->open waits for its ring's driver (its ring past the
 * budget: counted now on the fallback). 0, or -1 when out of memory. */
int jf_pend_add(struct kx_jobflow *f, size_t slot)
{
	struct fl_kjob *o;
	struct kx_jobflow_ringdrv *e;

	if (f->npend >= f->pend_max) {
		int spilt = jf_pend_spill(f);

		if (spilt < 0 || (spilt && jf_release(f, 0)))
			return -1;
	}
	o = kx_slots_at(&f->open, slot);
	e = jf_ring_entry(f, o->t.r.src, o->t.ring, 1);
	if (!e)
		return -1;
	e->src = o->t.r.src;
	if (e->counted)
		return pend_count(f, (uint32_t)slot, 0);
	if (kx_grow((void **)&e->pend, &e->pcap, e->npend, sizeof(*e->pend)))
		return -1;
	e->pend[e->npend++] = (uint32_t)slot;
	o->pending = 1;
	if (!f->npend || o->t.r.done_ts < f->pend_low)
		f->pend_low = o->t.r.done_ts;
	if (++f->npend > f->peak_pend)
		f->peak_pend = f->npend;
	return 0;
}

/* The jobs waiting on ring e counted, on ring driver drv (0: the fallback).
 * The list is taken first: counting may sweep, and the sweeps may spill. */
static int pend_out(struct kx_jobflow *f, struct kx_jobflow_ringdrv *e, unsigned int drv)
{
	uint32_t *list = e->pend;
	size_t n = e->npend;
	int rc = 0;

	e->pend = NULL;
	e->npend = e->pcap = 0;
	for (size_t k = 0; k < n && !rc; k++) {
		f->npend--;
		rc = pend_count(f, list[k], drv);
	}
	free(list);
	return rc;
}

/* Past the budget: the jobs waiting counted on their ring's fallback device
 * now, and their rings' unlinked jobs from now on (jobflow_sweep.c holds no
 * job for them). 1 when some were counted, 0 when none, -1 when out of
 * memory. */
int jf_pend_spill(struct kx_jobflow *f)
{
	int any = 0, rc = 0;

	if (f->spilling || !f->npend)
		return 0;
	f->spilling = 1;
	for (size_t i = 0; i < f->nrdrv && !rc; i++) {
		if (!f->rdrv[i].npend)
			continue;
		f->rdrv[i].counted = 1;
		f->nspilt++;
		rc = pend_out(f, &f->rdrv[i], 0);
		any = 1;
	}
	f->spilling = 0;
	pend_low_again(f);
	return rc ? -1 : any;
}

/* Is ring e (counted on its fallback) on another device by its first
 * linked job? The devices compared as kx_jobdevtab_assign gives them. */
static int spilt_elsewhere(struct kx_jobflow *f, const struct kx_jobflow_ringdrv *e)
{
	struct kx_tjob t;
	long a, b;

	memset(&t, 0, sizeof(t));
	t.r.src = e->src;
	a = kx_jobdevtab_assign(&f->devs, &t, 0, 0);
	b = kx_jobdevtab_assign(&f->devs, &t, 0, e->drv);
	if (a < 0 || b < 0)
		return -1;
	return a != b;
}

/* The rings counted on their fallback whose driver is final now (every one
 * linked at the end) checked: on another device, the figures cannot be
 * exact. 0, or -1 when out of memory. */
int jf_pend_check(struct kx_jobflow *f, int end)
{
	for (size_t i = 0; i < f->nrdrv && f->nspilt; i++) {
		struct kx_jobflow_ringdrv *e = &f->rdrv[i];
		int other;

		if (!e->counted || e->checked || !e->learnt || (!end && !jf_ring_known(f, e)))
			continue;
		other = spilt_elsewhere(f, e);
		if (other < 0)
			return -1;
		if (other)
			jf_because(f, PEND_BUDGET);
		e->checked = 1;
	}
	return 0;
}

/* The jobs of every ring whose driver is final now counted. */
int jf_pend_retry(struct kx_jobflow *f)
{
	int any = 0;

	for (size_t i = 0; i < f->nrdrv; i++) {
		struct kx_jobflow_ringdrv *e = &f->rdrv[i];

		if (!e->npend || !jf_ring_known(f, e))
			continue;
		if (pend_out(f, e, e->drv))
			return -1;
		any = 1;
	}
	if (any)
		pend_low_again(f);
	return 0;
}

/* At the end (every linked job counted): every job still waiting counted,
 * on its ring's driver, else the fallback; the rings counted on their
 * fallback checked. */
int jf_pend_flush(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->nrdrv; i++) {
		struct kx_jobflow_ringdrv *e = &f->rdrv[i];

		if (e->npend && pend_out(f, e, e->learnt ? e->drv : 0))
			return -1;
	}
	return jf_pend_check(f, 1);
}

/* low lowered to the earliest DONE of a job waiting. */
void jf_pend_low(const struct kx_jobflow *f, uint64_t *low)
{
	if (f->npend && f->pend_low < *low)
		*low = f->pend_low;
}

void jf_pend_free(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->nrdrv; i++)
		free(f->rdrv[i].pend);
}
