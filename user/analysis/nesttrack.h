/*
 * The timeline's nesting rule (analysis/timeline.h's kx_timeline_nest)
 * applied to calls as they leave the engine's reorder stage
 * (analysis/engine.h): each thread's calls in start order, the longer
 * first at equal starts, as the timeline takes them. Owns each thread's
 * stack of open calls and counts what the rule shortened, as the
 * timeline of the whole capture would count it. Each call leaves with the
 * end the rule gives it, the end every later stage sees in memory (the
 * annotation ranges' walk: analysis/rangewalk.h).
 *
 * The one place the in-memory order differs: memory orders a thread's
 * calls and ranges by the calls' shortened lengths, the reorder stage by
 * their recorded ones. A range that starts with a shortened call and is at
 * least its shortened length goes before it in memory, after it (being
 * shorter than the recorded length) on the stream. The streamed report
 * holds the shortened calls of a start (kx_nesttrack_hold) until a record
 * of their thread that memory orders after them leaves, the ranges that
 * memory orders before them going first (kx_nesttrack_range_first); so
 * does the windowed read.
 * Memory: a stack a thread, as deep as its calls nest, and the shortened
 * calls held (of one start: 64 bytes each).
 */
#ifndef KX_NESTTRACK_H
#define KX_NESTTRACK_H

#include <stdint.h>

#include "model/event.h"
#include "util/tidtab.h"

/* The reason a stream cannot nest a thread's calls as memory does (the
 * streamed report's and the windowed read's): a call later than its
 * thread's reorder window (analysis/engine.h: KX_ENGINE_LATE_NS at most). */
#define KX_NESTTRACK_LATE                                                                          \
	"a call came after a later call of its thread had left the reorder window (a thread's "    \
	"window: the lateness measured so far, at most 50 ms)"

struct kx_nesttrack {
	struct kx_tidtab threads; /* each thread's open calls (struct kx_nest_thread) */
	uint64_t fixed;           /* calls the rule shortened */
	uint64_t fixed_threads;   /* threads with at least one */
	uint64_t held; /* shortened calls held now, every thread's (kx_nesttrack_place) */
};

#define KX_NESTTRACK_INIT                                                                          \
	{                                                                                          \
		KX_TIDTAB_INIT(struct kx_nest_thread), 0, 0, 0                                     \
	}

struct kx_nest_thread {
	uint64_t *stack; /* ns, the ends of the open calls */
	size_t depth, cap;
	int fixed;                 /* a call of it was shortened */
	struct kx_nest_held *held; /* its shortened calls held, of one start and end */
	size_t nheld, hcap;
};

/* A shortened call held: the call, its end as the rule shortened it (ns). */
struct kx_nest_held {
	struct kx_ioctl e;
	uint64_t end;
};

/* The next call of its thread: *end (ns) the end the rule gives it, *cut
 * set when the rule shortens it. 0, or -1 when out of memory. */
int kx_nesttrack_ioctl(struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t *end, int *cut);
/* A call given to the caller's walk (the annotation ranges'): e with the
 * end the rule gave it (ns; cut: shortened). 0, or -1 to stop. */
typedef int (*kx_nest_walk_fn)(void *ctx, const struct kx_ioctl *e, uint64_t end, int cut);
/* Call e, which the rule gave end (cut: shortened) in kx_nesttrack_ioctl
 * just before (which made its thread's record), in memory's order among
 * the ranges of its start: the calls its thread holds that it does not go
 * among are walked first, then e is walked, or held when shortened (the
 * ranges of its start memory orders before it, by its shortened length,
 * go first). 0, or -1 when walk stops or out of memory. */
int kx_nesttrack_place_held(struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t end, int cut,
                            kx_nest_walk_fn walk, void *ctx);
static inline int kx_nesttrack_place(struct kx_nesttrack *n, const struct kx_ioctl *e, uint64_t end,
                                     int cut, kx_nest_walk_fn walk, void *ctx)
{
	/* The common case, inline: none held, e not shortened: walked now. */
	if (!n->held && !cut)
		return walk(ctx, e, end, 0);
	return kx_nesttrack_place_held(n, e, end, cut, walk, ctx);
}
/* A range of thread tid starting at ts_ns, len_ns long (UINT64_MAX: its
 * end not come), goes next: the calls held that memory orders before it
 * are walked first. 0, or -1 when walk stops. */
int kx_nesttrack_range(struct kx_nesttrack *n, uint32_t tid, uint64_t ts_ns, uint64_t len_ns,
                       kx_nest_walk_fn walk, void *ctx);
/* Every thread's calls held, walked (every record is out). 0, or -1 when
 * walk stops. */
int kx_nesttrack_flush(struct kx_nesttrack *n, kx_nest_walk_fn walk, void *ctx);
void kx_nesttrack_free(struct kx_nesttrack *n);

#endif /* KX_NESTTRACK_H */
