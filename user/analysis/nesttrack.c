/* The nesting rule on a stream of calls (contract: nesttrack.h). */
#include "analysis/nesttrack.h"
#include "analysis/timeline.h"

int kx_nesttrack_ioctl(struct kx_nesttrack *n, const struct kx_ioctl *e, int *cut)
{
	struct kx_nest_thread *t = kx_tidtab_get(&n->threads, e->tid, 1);
	uint64_t end;

	*cut = 0;
	if (!t)
		return -1;
	if (kx_timeline_nest(&t->stack, &t->depth, &t->cap, e->ts, e->dur, &end, cut))
		return -1;
	if (*cut) {
		n->fixed++;
		n->fixed_threads += !t->fixed;
		t->fixed = 1;
	}
	return 0;
}

void kx_nesttrack_free(struct kx_nesttrack *n)
{
	for (size_t i = 0; i < n->threads.n; i++)
		free(((struct kx_nest_thread *)kx_tidtab_at(&n->threads, i))->stack);
	kx_tidtab_free(&n->threads);
}
