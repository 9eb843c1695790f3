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

/* Call e of thread t, which the rule just shortened to end (ns), is held
 * (t's held calls are of its start and end). */
static int hold(struct kx_nesttrack *n, struct kx_nest_thread *t, const struct kx_ioctl *e,
                uint64_t end)
{
	if (kx_grow((void **)&t->held, &t->hcap, t->nheld, sizeof(*t->held)))
		return -1;
	t->held[t->nheld++] = (struct kx_nest_held){*e, end};
	n->held++;
	return 0;
}

/* Thread t's calls held, walked in the order they came. */
static int walk_held(struct kx_nesttrack *n, struct kx_nest_thread *t, kx_nest_walk_fn walk,
                     void *ctx)
{
	size_t k = t->nheld;

	t->nheld = 0;
	n->held -= k;
	for (size_t i = 0; i < k; i++)
		if (walk(ctx, &t->held[i].e, t->held[i].end, 1))
			return -1;
	return 0;
}

/* kx_nesttrack_place past its inline common case (nesttrack.h). */
int kx_nesttrack_place_held(struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t end, int cut,
                            kx_nest_walk_fn walk, void *ctx)
{
	/* e's thread: kx_nesttrack_ioctl made it. */
	struct kx_nest_thread *t = kx_tidtab_find(&n->threads, e->tid);

	if (!t)
		return -1;
	/* Held calls go among e only when e is shortened alike (start, end). */
	if (t->nheld && !(cut && t->held[0].e.ts == e->ts && t->held[0].end == end) &&
	    walk_held(n, t, walk, ctx))
		return -1;
	return cut ? hold(n, t, e, end) : walk(ctx, e, end, 0);
}

int kx_nesttrack_range(struct kx_nesttrack *n, uint32_t tid, uint64_t ts_ns, uint64_t len_ns,
                       kx_nest_walk_fn walk, void *ctx)
{
	struct kx_nest_thread *t = n->held ? kx_tidtab_find(&n->threads, tid) : NULL;

	if (!t || !t->nheld)
		return 0;
	/* Ranges before calls of their length (analysis/engine.h's order). */
	if (t->held[0].e.ts == ts_ns && len_ns != UINT64_MAX && len_ns >= t->held[0].end - ts_ns)
		return 0;
	return walk_held(n, t, walk, ctx);
}

int kx_nesttrack_flush(struct kx_nesttrack *n, kx_nest_walk_fn walk, void *ctx)
{
	for (size_t i = 0; n->held && i < n->threads.n; i++)
		if (walk_held(n, kx_tidtab_at(&n->threads, i), walk, ctx))
			return -1;
	return 0;
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
