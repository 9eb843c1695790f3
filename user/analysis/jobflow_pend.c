/*
 * The streamed device timelines' GPU jobs of shared fence sources (i915,
 * amdgpu, amdxdna, gpu_scheduler, dma_fence) without a submitting call
 * (jobflow_int.h): such a job's device is its ring's, learnt from the
 * ring's first linked job (jobs.c's learn_ring_drivers), so it waits in its
 * open slot (still holding the sweeps back) until that job is counted and
 * no linked job made before it is still held; at the end a ring that never
 * linked gets the fallback device (kx_jobdevtab_assign with no ring
 * driver), as the builder gives it. At most f->pend_max wait: past that
 * budget the file is read into memory.
 */
#include <stdlib.h>

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

/* Job slot of f->open waits for its ring's driver. 0, or -1 when out of memory. */
int jf_pend_add(struct kx_jobflow *f, size_t slot)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	struct kx_jobflow_ringdrv *e;

	if (f->npend >= f->pend_max) {
		jf_because(f, PEND_BUDGET);
		o->gen = 0;
		kx_slots_put(&f->open, slot);
		return 0;
	}
	e = jf_ring_entry(f, o->t.r.src, o->t.ring, 1);
	if (!e || kx_grow((void **)&e->pend, &e->pcap, e->npend, sizeof(*e->pend)))
		return -1;
	e->pend[e->npend++] = (uint32_t)slot;
	o->pending = 1;
	if (!f->npend || o->t.r.done_ts < f->pend_low)
		f->pend_low = o->t.r.done_ts;
	if (++f->npend > f->peak_pend)
		f->peak_pend = f->npend;
	return 0;
}

/* The jobs waiting on ring e counted, on ring driver drv (0: the fallback). */
static int pend_out(struct kx_jobflow *f, struct kx_jobflow_ringdrv *e, unsigned int drv)
{
	for (size_t k = 0; k < e->npend; k++) {
		struct fl_kjob *o = kx_slots_at(&f->open, e->pend[k]);
		struct fl_kjob j = *o;

		o->gen = 0;
		o->pending = 0;
		kx_slots_put(&f->open, e->pend[k]);
		f->npend--;
		if (jf_job_out(f, &j.t, j.ts, j.seq, f->end_ns, j.submit_drv, drv, KEYED_LATE))
			return -1;
	}
	e->npend = 0;
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
 * on its ring's driver, else the fallback. */
int jf_pend_flush(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->nrdrv; i++) {
		struct kx_jobflow_ringdrv *e = &f->rdrv[i];

		if (e->npend && pend_out(f, e, e->learnt ? e->drv : 0))
			return -1;
	}
	return 0;
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
