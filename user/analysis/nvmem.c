/* NVIDIA device memory per process and region (see nvmem.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/nvmem.h"
#include "util/grow.h"
#include "util/lbound.h"

const char *kx_nvmem_region_name(int region)
{
	return region == KX_NVMEM_VID ? "vidmem" : "sysmem";
}

static uint64_t proc_pid_at(const void *procs, size_t i)
{
	return ((const struct kx_nvmem_proc *)procs)[i].pid;
}

/* The process's entry, added in pid order when new; NULL when out of memory. */
static struct kx_nvmem_proc *proc_get(struct kx_nvmem *m, uint32_t pid)
{
	size_t lo = kx_lbound(0, m->nprocs, pid, proc_pid_at, m->procs);

	if (lo < m->nprocs && m->procs[lo].pid == pid)
		return &m->procs[lo];
	if (kx_grow((void **)&m->procs, &m->cap, m->nprocs + 1, sizeof(*m->procs)))
		return NULL;
	memmove(&m->procs[lo + 1], &m->procs[lo], (m->nprocs - lo) * sizeof(*m->procs));
	memset(&m->procs[lo], 0, sizeof(*m->procs));
	m->procs[lo].pid = pid;
	m->nprocs++;
	return &m->procs[lo];
}

static int reg_add(struct kx_nvmem_reg *r, uint64_t ts, int64_t delta)
{
	if (kx_grow((void **)&r->pts, &r->cap, r->npts + 1, sizeof(*r->pts)))
		return -1;
	if (delta > 0) {
		r->allocs++;
		r->allocated += (uint64_t)delta;
		r->live += (uint64_t)delta;
	} else {
		uint64_t d = (uint64_t)-delta;

		r->frees++;
		r->freed += d;
		r->live = d > r->live ? 0 : r->live - d;
	}
	if (r->live > r->peak)
		r->peak = r->live;
	r->pts[r->npts++] = (struct kx_nvmem_pt){ts, r->live};
	return 0;
}

int kx_nvmem_add(struct kx_nvmem *m, uint32_t pid, uint64_t ts, const int64_t *delta)
{
	struct kx_nvmem_proc *p = proc_get(m, pid);

	if (!p)
		return -1;
	for (int r = 0; r < KX_NVMEM_NREG; r++)
		if (delta[r] && reg_add(&p->reg[r], ts, delta[r]))
			return -1;
	return 0;
}

void kx_nvmem_free(struct kx_nvmem *m)
{
	for (size_t i = 0; i < m->nprocs; i++)
		for (int r = 0; r < KX_NVMEM_NREG; r++)
			free(m->procs[i].reg[r].pts);
	free(m->procs);
	m->procs = NULL;
	m->nprocs = m->cap = 0;
}
