/* Can a stream give the in-memory analysis exactly? (contract: streamcheck.h) */
#include <stdlib.h>

#include "analysis/streamcheck.h"
#include "util/grow.h"

static void because(struct kx_streamcheck *c, const char *why)
{
	if (!c->why)
		c->why = why;
}

/* Does e start before its thread's last call ended? Records e's end. -1: OOM. */
static int overlaps(struct kx_streamcheck *c, const struct kx_ioctl *e)
{
	uint32_t *idx = kx_hmap_get(&c->tids, e->tid);
	uint64_t end = e->ts + e->dur;
	int ov;

	if (!idx) {
		if (c->nends >= UINT32_MAX ||
		    kx_grow((void **)&c->ends, &c->endcap, c->nends, sizeof(*c->ends)) ||
		    kx_hmap_add(&c->tids, e->tid, (uint32_t)c->nends))
			return -1;
		c->ends[c->nends++] = end;
		return 0;
	}
	ov = e->ts < c->ends[*idx];
	c->ends[*idx] = end;
	return ov;
}

int kx_streamcheck_ioctl(struct kx_streamcheck *c, const struct kx_ioctl *e, const uint8_t *arg)
{
	int64_t delta = 0;
	int ov = overlaps(c, e), mem = KX_MEM_NONE;

	if (e->ret >= 0 && arg)
		mem = kx_memacct_step(&c->mem, e, arg, &delta);
	if (ov < 0 || mem < 0)
		return -1;
	if (ov)
		because(c, "calls of one thread overlap (the nesting rule applies)");
	c->last_mem = mem != KX_MEM_NONE;
	if (c->last_mem && !c->keep_mem)
		because(c, "ioctls allocate or free device memory (memory rows)");
	return 0;
}

int kx_streamcheck_last_end(const struct kx_streamcheck *c, uint32_t tid, uint64_t *end)
{
	const uint32_t *idx = c->nends ? kx_hmap_get(&c->tids, tid) : NULL;

	if (!idx)
		return 0;
	*end = c->ends[*idx];
	return 1;
}

void kx_streamcheck_job(struct kx_streamcheck *c)
{
	because(c, "device jobs (timelines link jobs to their ioctls)");
}

void kx_streamcheck_ctr(struct kx_streamcheck *c)
{
	because(c, "perf counters (matched with their calls)");
}

void kx_streamcheck_free(struct kx_streamcheck *c)
{
	kx_memacct_free(&c->mem);
	kx_hmap_free(&c->tids);
	free(c->ends);
	c->ends = NULL;
	c->nends = c->endcap = 0;
}
