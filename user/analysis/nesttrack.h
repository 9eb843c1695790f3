/*
 * The timeline's nesting rule (analysis/timeline.h's kx_timeline_nest)
 * applied to calls as they leave the engine's reorder stage
 * (analysis/engine.h): each thread's calls in start order, the longer
 * first at equal starts, as the timeline takes them. Owns each thread's
 * stack of open calls and counts what the rule shortened, as the
 * timeline of the whole capture would count it.
 * Memory: a stack a thread, as deep as its calls nest.
 */
#ifndef KX_NESTTRACK_H
#define KX_NESTTRACK_H

#include <stdint.h>

#include "model/event.h"
#include "util/tidtab.h"

struct kx_nesttrack {
	struct kx_tidtab threads; /* each thread's open calls (struct kx_nest_thread) */
	uint64_t fixed;           /* calls the rule shortened */
	uint64_t fixed_threads;   /* threads with at least one */
};

#define KX_NESTTRACK_INIT                                                                          \
	{                                                                                          \
		KX_TIDTAB_INIT(struct kx_nest_thread), 0, 0                                        \
	}

struct kx_nest_thread {
	uint64_t *stack; /* ns, the ends of the open calls */
	size_t depth, cap;
	int fixed; /* a call of it was shortened */
};

/* The next call of its thread: *cut set when the rule shortens it. 0, or
 * -1 when out of memory. */
int kx_nesttrack_ioctl(struct kx_nesttrack *n, const struct kx_ioctl *e, int *cut);
void kx_nesttrack_free(struct kx_nesttrack *n);

#endif /* KX_NESTTRACK_H */
