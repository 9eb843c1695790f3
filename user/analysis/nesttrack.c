/* The nesting rule on a stream of calls (contract: nesttrack.h). */
#include "analysis/engine.h"
#include "analysis/nesttrack.h"
#include "analysis/timeline.h"

_Static_assert(KX_ENGINE_LATE_NS == 50000000ULL, "KX_NESTTRACK_LATE says 50 ms");

int kx_nesttrack_ioctl(struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t *end, int *cut)
{
	struct kx_nest_thread *t = kx_tidtab_get(&n->threads, e->tid, 1);

	*cut = 0;
	if (!t)
		return -1;
	if (kx_timeline_nest(&t->stack, &t->depth, &t->cap, e->ts, e->dur, end, cut))
		return -1;
	if (*cut) {
		n->fixed++;
		n->fixed_threads += !t->fixed;
		t->fixed = 1;
		t->cut_ts = e->ts;
		t->cut_len = *end - e->ts;
	}
	return 0;
}

int kx_nesttrack_fed(struct kx_nesttrack *n, const struct kx_ioctl *e)
{
	struct kx_nest_thread *t = kx_tidtab_get(&n->threads, e->tid, 1);

	if (!t)
		return -1;
	if (t->fed && e->ts < t->fed_ts)
		n->unordered++;
	else
		t->fed_ts = e->ts;
	t->fed = 1;
	return 0;
}

int kx_nesttrack_range_misplaced(const struct kx_nesttrack *n, uint32_t tid, uint64_t ts_ns,
                                 uint64_t len_ns)
{
	const struct kx_nest_thread *t = kx_tidtab_find(&n->threads, tid);

	/* Calls of one start leave longest first, each nesting in the one
	 * before: the last shortened is the shortest of them. A range whose
	 * end had not come left as the longest, before them. */
	return t && t->fixed && t->cut_ts == ts_ns && len_ns != UINT64_MAX && len_ns >= t->cut_len;
}

void kx_nesttrack_free(struct kx_nesttrack *n)
{
	for (size_t i = 0; i < n->threads.n; i++)
		free(((struct kx_nest_thread *)kx_tidtab_at(&n->threads, i))->stack);
	kx_tidtab_free(&n->threads);
}
