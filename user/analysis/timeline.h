/*
 * Per-thread timeline of a capture's ioctls and the one nesting rule every
 * exporter shows: the store's events grouped by thread (a thread is a tid,
 * as Linux names it), each thread's events in start order, and the
 * durations the rule changed.
 *
 * The rule, for the events of one thread taken by start (the longer first
 * at equal starts, then by store index):
 *   - an event that starts and ends inside an earlier one nests: both keep
 *     their durations;
 *   - an event that starts inside an earlier one and ends after it (a
 *     partial overlap: ioctls of one thread do not really overlap, clocks
 *     or replayed data say so) is shortened to end where the innermost
 *     event enclosing its start ends, so that it nests there;
 *   - an event that starts at or after an earlier one's end is not inside it.
 * Zero-length events are instants at their start. Shortened events are
 * counted (events and threads) and reported once as a warning
 * (analysis/warnings.h), the same in the summary, XSpace and Chrome.
 *
 * Memory: 4 bytes per event (the ordering), and when some event was
 * shortened a bitmap and rank table over the store (3 bits per event) and
 * a record per shortened event; the store is not copied.
 */
#ifndef KX_TIMELINE_H
#define KX_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "model/store.h"

struct kx_tl_thread {
	uint32_t tid;
	uint32_t pid;        /* pid of its first stored event */
	uint32_t mixed_pids; /* 1 when other events of this tid carry other pids (a reused tid) */
	size_t first, count; /* its events: kx_timeline.order[first .. first + count) */
};

/* An event the rule shortened. */
struct kx_tl_fix {
	size_t pos;   /* in kx_timeline.order */
	size_t idx;   /* store ioctl index */
	uint64_t dur; /* ns, the resolved duration (the stored one is longer) */
};

struct kx_timeline {
	struct kx_tl_thread *threads; /* by tid */
	size_t nthreads;
	uint32_t *order; /* store indices, grouped by thread, each thread in start order */
	size_t nevents;
	struct kx_tl_fix *fix; /* shortened events, by pos */
	size_t nfix;
	uint64_t *fixed;        /* bit i: store event i was shortened (NULL when none was) */
	uint32_t *fixed_rank;   /* per word of fixed: set bits in the words before it */
	uint64_t *dur_by_rank;  /* ns, resolved durations of the shortened, by store index */
	uint64_t fixed_threads; /* threads with at least one shortened event */
	uint64_t first_ts;      /* ns, earliest event start; UINT64_MAX with no events */
	/* Set when a stream nested every call of the capture while the
	 * timeline holds a few (the streamed report, kx_timeline_counted):
	 * the warning gives the stream's counts. */
	int counted;
	uint64_t counted_fix, counted_threads;
};

/* The counts of a stream that nested the capture's calls (analysis/nesttrack.h). */
static inline void kx_timeline_counted(struct kx_timeline *tl, uint64_t fix, uint64_t threads)
{
	tl->counted = 1;
	tl->counted_fix = fix;
	tl->counted_threads = threads;
}

/*
 * Builds the timeline of every ioctl of s. Returns NULL with err set (out of
 * memory, or more events than 32-bit indices hold).
 */
struct kx_timeline *kx_timeline_build(const struct kx_store *s, char *err, size_t errlen);
void kx_timeline_free(struct kx_timeline *tl);

/*
 * The rule for the next event of a thread, events taken by start (the
 * longer first at equal starts): *stack holds the ends (ns) of the *depth
 * events open before it; those that ended by start are popped, then its
 * end is pushed, cut to the innermost open event's end when it would end
 * after it (*cut set). *end: its end. Other event kinds that nest with a
 * thread's ioctls (analysis/ranges.h) go through this same rule. 0, or -1
 * when out of memory.
 */
int kx_timeline_nest_open(uint64_t **stack, size_t *depth, size_t *cap, uint64_t start,
                          uint64_t dur, uint64_t *end, int *cut);
static inline int kx_timeline_nest(uint64_t **stack, size_t *depth, size_t *cap, uint64_t start,
                                   uint64_t dur, uint64_t *end, int *cut)
{
	/* The common case, inline: calls one after the other, none open. */
	if (*depth == 1 && (*stack)[0] <= start && dur <= UINT64_MAX - start) {
		*end = (*stack)[0] = start + dur;
		*cut = 0;
		return 0;
	}
	return kx_timeline_nest_open(stack, depth, cap, start, dur, end, cut);
}

/*
 * Adds fixes found when the thread's ioctls were nested with other events
 * (add[i].pos, idx, dur as in struct kx_tl_fix; an event fixed already
 * keeps the shorter duration), and rebuilds the tables. 0, or -1 when out
 * of memory (the timeline is then left without fixes: free it).
 */
int kx_timeline_add_fixes(struct kx_timeline *tl, const struct kx_tl_fix *add, size_t n);

/*
 * The fixes of a timeline built from part of a capture (one window of a
 * windowed read, analysis/wread.h) replaced by those of the whole capture:
 * cut(ctx, e) gives the length (ns) the rule gave ioctl e of s (tl's
 * store) in the whole capture, e->dur when it kept it. 0, or -1 when out
 * of memory (the timeline is then left without fixes: free it).
 */
int kx_timeline_set_fixes(struct kx_timeline *tl, const struct kx_store *s,
                          uint64_t (*cut)(void *ctx, const struct kx_ioctl *e), void *ctx);

/* The first fix at position pos of order or after it (nfix when none). */
size_t kx_timeline_fix_from(const struct kx_timeline *tl, size_t pos);

/* The rank of store ioctl idx among the shortened events: those of a lower index. */
static inline size_t kx_timeline_rank(const struct kx_timeline *tl, size_t idx)
{
	uint64_t below = tl->fixed[idx / 64] & ((1ULL << (idx % 64)) - 1);

	return tl->fixed_rank[idx / 64] + (size_t)__builtin_popcountll(below);
}

/* The resolved duration (ns) of store ioctl idx, whose stored duration is dur; O(1). */
static inline uint64_t kx_timeline_dur(const struct kx_timeline *tl, size_t idx, uint64_t dur)
{
	if (!tl->fixed || !(tl->fixed[idx / 64] >> (idx % 64) & 1))
		return dur;
	return tl->dur_by_rank[kx_timeline_rank(tl, idx)];
}

#endif /* KX_TIMELINE_H */
