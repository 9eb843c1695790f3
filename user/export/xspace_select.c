/*
 * Which host lines an XSpace holds and in what order (see xspace_int.h):
 * the timeline's threads with ioctls in the window (a thread's events are
 * in start order, so those in the window are one range of it), threads
 * with annotations only, then the lanes of each process's cross-thread
 * ranges; and where each line's annotations go among its ioctls.
 */
#include <stdlib.h>

#include "export/xspace_int.h"
#include "util/lbound.h"

/* A thread's events in start order (ctx: where they start in the order). */
struct thread_at {
	const struct exporter *x;
	size_t first; /* the thread's first position in x->order */
};

static uint64_t event_ts_at(const void *ctx, size_t k)
{
	const struct thread_at *ta = ctx;

	return kx_store_ioctl(ta->x->s, ta->x->order[ta->first + k])->ts;
}

/* The first event of thread t at position k0..k1 starting at or after ts (k1: none). */
static size_t first_from(const struct exporter *x, const struct kx_tl_thread *t, size_t k0,
                         size_t k1, uint64_t ts)
{
	struct thread_at ta = {x, t->first};

	return kx_lbound(k0, k1, ts, event_ts_at, &ta);
}

/*
 * The host lines: the timeline's threads (by tid) with events in the
 * window. A thread's events are in start order, so those in the window are
 * one range of it.
 */
static int select_ioctls(struct exporter *x)
{
	const struct kx_timeline *tl = x->tl;

	x->order = tl->order;
	for (size_t i = 0; i < tl->nthreads; i++) {
		const struct kx_tl_thread *t = &tl->threads[i];
		size_t k0 = first_from(x, t, 0, t->count, x->o.from_mono_ns), k1 = t->count;

		if (x->o.to_mono_ns)
			k1 = first_from(x, t, k0, t->count, x->o.to_mono_ns);
		if (k0 == k1)
			continue;
		x->lines[x->nlines++] =
		        (struct line){.tid = t->tid,
		                      .start = t->first + k0,
		                      .count = k1 - k0,
		                      .t0 = kx_store_ioctl(x->s, x->order[t->first + k0])->ts};
		x->nevents += k1 - k0;
	}
	return 0;
}

static uint64_t line_tid_at(const void *ctx, size_t i)
{
	return ((const struct line *)ctx)[i].tid;
}

/* The line of tid among lines [lo, hi), sorted by tid; NULL when none. */
static struct line *find_line(struct exporter *x, size_t lo, size_t hi, uint32_t tid)
{
	lo = kx_lbound(lo, hi, tid, line_tid_at, x->lines);
	return lo < x->nlines && x->lines[lo].tid == tid ? &x->lines[lo] : NULL;
}

/*
 * The line of thread tid, added when it has none yet: lines [0, nio) are
 * the ioctl threads' and those after them threads with annotations only,
 * each run by tid.
 */
static struct line *line_of_tid(struct exporter *x, size_t nio, uint32_t tid, size_t *cap)
{
	struct line *l = find_line(x, 0, nio, tid);

	if (!l)
		l = find_line(x, nio, x->nlines, tid);
	if (l && l < x->lines + x->nlines)
		return l;
	if (kx_grow((void **)&x->lines, cap, x->nlines, sizeof(*x->lines)))
		return NULL;
	x->lines[x->nlines] = (struct line){.tid = tid, .t0 = UINT64_MAX};
	return &x->lines[x->nlines++];
}

/* Room for n more annotations on line l. */
static int line_ann_room(struct line *l, size_t n)
{
	size_t *a = realloc(l->ann, (l->nann + n) * sizeof(*a)), *b;

	if (a)
		l->ann = a;
	b = realloc(l->ins, (l->nann + n) * sizeof(*b));
	if (b)
		l->ins = b;
	return a && b ? 0 : -1;
}

/* Where each annotation of l goes among its ioctls: the nesting walk's order. */
static void line_insertions(struct exporter *x, struct line *l)
{
	size_t k = 0;

	for (size_t j = 0; j < l->nann; j++) {
		const struct kx_range *r = &x->rg->r[l->ann[j]];

		while (k < l->count) {
			size_t idx = x->order[l->start + k];
			const struct kx_ioctl *e = kx_store_ioctl(x->s, idx);

			if (e->ts > r->begin ||
			    (e->ts == r->begin && kx_timeline_dur(x->tl, idx, e->dur) <= r->dur))
				break;
			k++;
		}
		l->ins[j] = k;
	}
	if (l->nann && x->rg->r[l->ann[0]].begin < l->t0)
		l->t0 = x->rg->r[l->ann[0]].begin;
}

/* Each thread's ranges and marks in the window join its line. */
static int select_thread_ranges(struct exporter *x, size_t *cap)
{
	const struct kx_ranges *rg = x->rg;
	size_t nio = x->nlines;

	for (size_t t = 0; t < rg->nthreads; t++) {
		const struct kx_range_thread *th = &rg->threads[t];
		struct line *l = NULL;

		for (size_t i = th->first; i < th->first + th->count; i++) {
			if (!in_window(&x->o, rg->r[i].begin))
				continue;
			if (!l && !(l = line_of_tid(x, nio, th->tid, cap)))
				return -1;
			if (line_ann_room(l, 1))
				return -1;
			l->ann[l->nann++] = i;
		}
	}
	return 0;
}

/* Cross-thread ranges in the window into lanes of their process. */
static int select_cross_ranges(struct exporter *x, size_t *cap)
{
	const struct kx_ranges *rg = x->rg;
	uint64_t lane_end[ASYNC_MAX_LANES];
	size_t first_line = x->nlines;

	for (size_t i = rg->cross_first; i < rg->n; i++) {
		const struct kx_range *r = &rg->r[i];
		struct line *l = NULL;
		uint32_t lane = 0;

		/* A new process: its lanes start empty, whether its first ranges
		 * are in the window or not. */
		if (i == rg->cross_first || rg->r[i - 1].pid != r->pid) {
			first_line = x->nlines;
			memset(lane_end, 0, sizeof(lane_end));
		}
		if (!in_window(&x->o, r->begin))
			continue;
		/* The first lane free at its start; the last one takes what is left. */
		while (lane + 1 < ASYNC_MAX_LANES && lane_end[lane] > r->begin)
			lane++;
		lane_end[lane] =
		        r->begin + r->dur > lane_end[lane] ? r->begin + r->dur : lane_end[lane];
		for (size_t k = first_line; k < x->nlines && !l; k++)
			if (x->lines[k].lane == lane)
				l = &x->lines[k];
		if (!l) {
			if (kx_grow((void **)&x->lines, cap, x->nlines, sizeof(*x->lines)))
				return -1;
			l = &x->lines[x->nlines++];
			*l = (struct line){.tid = ASYNC_LINE_ID(r->pid, lane),
			                   .t0 = r->begin,
			                   .pid = r->pid,
			                   .lane = lane};
		}
		if (line_ann_room(l, 1))
			return -1;
		l->ann[l->nann] = i;
		l->ins[l->nann++] = 0;
	}
	return 0;
}

static int line_cmp(const void *pa, const void *pb)
{
	const struct line *a = pa, *b = pb;

	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/*
 * The host lines: the timeline's threads (by tid) with events in the
 * window, threads with annotations only, then the lanes of cross-thread
 * ranges. A thread's events are in start order, so those in the window are
 * one range of it.
 */
int xs_select_events(struct exporter *x)
{
	size_t cap = x->tl->nthreads + x->rg->nthreads + 1;

	x->lines = calloc(cap, sizeof(*x->lines));
	if (!x->lines)
		return xs_fail(x, "out of memory selecting %zu threads", x->tl->nthreads);
	if (select_ioctls(x) || select_thread_ranges(x, &cap))
		return xs_fail(x, "out of memory selecting the annotations of %zu threads",
		               x->rg->nthreads);
	for (size_t i = 0; i < x->nlines; i++) {
		line_insertions(x, &x->lines[i]);
		x->ann_events += x->lines[i].nann;
	}
	if (x->nlines > 1)
		qsort(x->lines, x->nlines, sizeof(*x->lines), line_cmp);
	if (select_cross_ranges(x, &cap))
		return xs_fail(x, "out of memory selecting the cross-thread annotation ranges");
	for (size_t i = 0; i < x->nlines; i++)
		if (x->lines[i].tid >= ASYNC_LINE_BASE)
			x->ann_events += x->lines[i].nann;
	return 0;
}
