/* Can a stream give the in-memory analysis exactly? (contract: streamcheck.h) */
#include "analysis/streamcheck.h"

static void because(struct kx_streamcheck *c, const char *why)
{
	if (!c->why)
		c->why = why;
}

/* Does e start before its thread's last call ended? Records e's end. -1: OOM. */
static int overlaps(struct kx_streamcheck *c, const struct kx_ioctl *e)
{
	uint64_t *end = kx_tidtab_find(&c->ends, e->tid);
	int ov = end && e->ts < *end;

	if (!end)
		end = kx_tidtab_get(&c->ends, e->tid, 1);
	if (!end)
		return -1;
	*end = e->ts + e->dur;
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
	const uint64_t *e = kx_tidtab_find(&c->ends, tid);

	if (!e)
		return 0;
	*end = *e;
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
	kx_tidtab_free(&c->ends);
}
