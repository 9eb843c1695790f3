/* One window's device jobs as its analysis shows them (contract: wjobtab.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/wjobtab.h"

/* The whole table's rings, each holding its window's jobs of p (in table
 * order: grouped by ring in the whole table's ring order). 0, or -1. */
static int window_rings(struct kx_wjobtab *t, const struct kx_jobs *o,
                        const struct kx_wjobs_part *p)
{
	t->jobs.rings = malloc((o->nrings + 1) * sizeof(*t->jobs.rings));
	if (!t->jobs.rings)
		return -1;
	t->jobs.nrings = o->nrings;
	for (size_t r = 0; r < o->nrings; r++) {
		t->jobs.rings[r] = o->rings[r];
		t->jobs.rings[r].first = 0;
		t->jobs.rings[r].njobs = 0;
	}
	for (size_t k = p->njobs; k-- > 0;) {
		uint32_t r = p->jobs[k].r.ring;

		if (r >= o->nrings)
			return -1;
		t->jobs.rings[r].first = k;
		t->jobs.rings[r].njobs++;
	}
	return 0;
}

/* The whole table's devices, each with its window's depth points of p. */
static int window_devs(struct kx_wjobtab *t, const struct kx_jobs *o, const struct kx_wjobs_part *p)
{
	t->jobs.devs = malloc((o->ndevs + 1) * sizeof(*t->jobs.devs));
	if (!t->jobs.devs)
		return -1;
	t->jobs.ndevs = o->ndevs;
	for (size_t d = 0; d < o->ndevs; d++) {
		t->jobs.devs[d] = o->devs[d];
		t->jobs.devs[d].depth = d < p->ndevs ? p->depth[d] : NULL;
		t->jobs.devs[d].ndepth = d < p->ndevs ? p->ndepth[d] : 0;
	}
	return 0;
}

/* The window's jobs, their ids and submitting calls. 0, or -1. */
static int window_jobs(struct kx_wjobtab *t, const struct kx_wjobs_part *p, kx_wjobtab_call_fn call,
                       void *ctx)
{
	size_t n = p->njobs + 1;

	t->jobs.jobs = malloc(n * sizeof(*t->jobs.jobs));
	t->job_id = malloc(n * sizeof(*t->job_id));
	t->submit = calloc(n, sizeof(*t->submit));
	if (!t->jobs.jobs || !t->job_id || !t->submit)
		return -1;
	t->jobs.njobs = p->njobs;
	for (size_t k = 0; k < p->njobs; k++) {
		const struct kx_jobrec *j = &p->jobs[k].r;
		const struct kx_ioctl *e;
		uint64_t dur = 0;

		t->jobs.jobs[k] = *j;
		t->job_id[k] = p->jobs[k].index;
		if (j->submit < 0)
			continue;
		if (!call) {
			t->submit[k] = p->jobs[k].call;
			continue;
		}
		e = call(ctx, (uint64_t)j->submit, &dur);
		if (!e)
			return -1;
		t->submit[k] = *e;
		t->submit[k].dur = dur;
	}
	return 0;
}

int kx_wjobtab_make(struct kx_wjobtab *t, const struct kx_jobs *o, const struct kx_wjobs_part *p,
                    kx_wjobtab_call_fn call, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->jobs.anom = o->anom;
	t->jobs.start_ns = o->start_ns;
	t->jobs.end_ns = o->end_ns;
	t->jobs.nvmem = o->nvmem; /* borrowed: kx_wjobtab_free leaves it */
	t->jobs.store = o->store;
	if (window_rings(t, o, p) || window_devs(t, o, p) || window_jobs(t, p, call, ctx)) {
		kx_wjobtab_free(t);
		return -1;
	}
	t->view.job_id = t->job_id;
	t->view.submit = t->submit;
	return 0;
}

void kx_wjobtab_free(struct kx_wjobtab *t)
{
	free(t->jobs.jobs);
	free(t->jobs.rings);
	free(t->jobs.devs);
	free(t->job_id);
	free(t->submit);
	memset(t, 0, sizeof(*t));
}
