/* The nesting rule on a stream of calls (contract: nesttrack.h). */
#include <stdlib.h>

#include "analysis/engine.h"
#include "analysis/nesttrack.h"
#include "analysis/timeline.h"
#include "util/grow.h"

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

int kx_nesttrack_hold(struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t end)
{
	struct kx_nest_thread *t = kx_tidtab_get(&n->threads, e->tid, 1);

	if (!t || kx_grow((void **)&t->held, &t->hcap, t->nheld, sizeof(*t->held)))
		return -1;
	t->held[t->nheld++] = (struct kx_nest_held){*e, end};
	return 0;
}

int kx_nesttrack_range_first(const struct kx_nesttrack *n, uint32_t tid, uint64_t ts_ns,
                             uint64_t len_ns)
{
	const struct kx_nest_thread *t = kx_tidtab_find(&n->threads, tid);

	/* Ranges before calls of their length (analysis/engine.h's order). */
	return t && t->nheld && t->held[0].e.ts == ts_ns && len_ns != UINT64_MAX &&
	       len_ns >= t->held[0].end - ts_ns;
}

int kx_nesttrack_holds_with(const struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t end)
{
	const struct kx_nest_thread *t = kx_tidtab_find(&n->threads, e->tid);

	return t && t->nheld && t->held[0].e.ts == e->ts && t->held[0].end == end;
}

size_t kx_nesttrack_take(struct kx_nesttrack *n, uint32_t tid, const struct kx_nest_held **v)
{
	struct kx_nest_thread *t = kx_tidtab_find(&n->threads, tid);
	size_t k = t ? t->nheld : 0;

	*v = t ? t->held : NULL;
	if (t)
		t->nheld = 0;
	return k;
}

void kx_nesttrack_free(struct kx_nesttrack *n)
{
	for (size_t i = 0; i < n->threads.n; i++) {
		struct kx_nest_thread *t = kx_tidtab_at(&n->threads, i);

		free(t->stack);
		free(t->held);
	}
	kx_tidtab_free(&n->threads);
}
