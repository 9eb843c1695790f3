/*
 * Device timelines (contract and rules: jobs.h): memory accounting from
 * decoded ioctl arguments, and a result's lifetime. The timelines of a
 * whole store are built by analysis/jobsink.c, through the streamed ones
 * (analysis/jobflow.h).
 */
#include <stddef.h>
#include <stdlib.h>

#include "analysis/jobpair.h"
#include "analysis/jobs.h"
#include "util/grow.h"
#include "util/lbound.h"

/* ---- memory ---- */

struct mem_ev {
	uint64_t ts;
	size_t idx;
};

static int mem_ev_cmp(const void *pa, const void *pb)
{
	const struct mem_ev *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int mem_add(struct kx_jobdevtab *devs, long dev, const struct kx_ioctl *e, size_t idx,
                   int64_t delta)
{
	struct kx_jobdev *d = &devs->devs[dev];
	size_t n = d->nmem;
	/* The capacity is not kept: kx_grow's sizes are 0, 16, 32, 64, ..., so
	 * it is the count rounded up to one of them. */
	size_t cap = n <= 16 ? (n ? 16 : 0) : (size_t)1 << (64 - __builtin_clzll(n - 1));
	uint64_t usage;

	if (kx_grow((void **)&d->mem, &cap, n, sizeof(*d->mem)))
		return -1;
	usage = kx_jobdev_mem_apply(d, delta);
	d->mem[n] = (struct kx_mem_pt){kx_ioctl_end(e), delta, usage, idx};
	return 0;
}

int kx_jobs_memory(const struct kx_store *s, struct kx_jobdevtab *devs, struct kx_nvmem *nv)
{
	size_t n = kx_store_ioctl_count(s), nev = 0, cap = 0;
	struct mem_ev *ev = NULL; /* the calls with an argument copy: few in most captures */
	struct kx_memacct m = KX_MEMACCT_INIT;
	int rc = -1;

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		if (e->ret < 0 || e->arg_off == KX_NO_ARG)
			continue;
		if (kx_grow((void **)&ev, &cap, nev, sizeof(*ev)))
			goto out;
		ev[nev++] = (struct mem_ev){kx_ioctl_end(e), i};
	}
	if (nev)
		qsort(ev, nev, sizeof(*ev), mem_ev_cmp);
	for (size_t k = 0; k < nev; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, ev[k].idx);
		int64_t delta = 0;
		int what = kx_memacct_step(&m, e, kx_store_arg(s, e), &delta);
		long dev;

		if (what < 0)
			goto out;
		if (what == KX_MEM_NONE)
			continue;
		dev = kx_jobdevtab_mem(devs, e);
		if (dev < 0)
			goto out;
		if (what == KX_MEM_UNKNOWN_FREE)
			devs->devs[dev].mem_unknown_frees++;
		else if (mem_add(devs, dev, e, ev[k].idx, delta))
			goto out;
		if ((m.nv[KX_NVMEM_VID] || m.nv[KX_NVMEM_SYS]) &&
		    kx_nvmem_add(nv, e->pid, kx_ioctl_end(e), m.nv))
			goto out;
	}
	for (size_t i = 0; i < devs->n; i++)
		kx_jobdev_mem_finish(&devs->devs[i]);
	rc = 0;
out:
	free(ev);
	kx_memacct_free(&m);
	return rc;
}

static uint64_t start_at(const void *ctx, size_t i)
{
	return kx_jobrec_start(&((const struct kx_jobrec *)ctx)[i]);
}

void kx_jobring_starting(const struct kx_jobs *j, const struct kx_jobring *rg, uint64_t from,
                         uint64_t to, size_t *lo, size_t *hi)
{
	const struct kx_jobrec *jobs = &j->jobs[rg->first];

	*lo = kx_lbound(0, rg->njobs, from, start_at, jobs);
	*hi = to ? kx_lbound(*lo, rg->njobs, to, start_at, jobs) : rg->njobs;
}

void kx_jobs_free(struct kx_jobs *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->ndevs; i++) {
		free(j->devs[i].depth);
		free(j->devs[i].mem);
	}
	free(j->jobs);
	free(j->rings);
	free(j->devs);
	free(j->submitted);
	kx_nvmem_free(&j->nvmem);
	free(j);
}
