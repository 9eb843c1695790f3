/*
 * Annotation ranges as one walk makes them, a record at a time: the
 * streamed report's (analysis/sreport.h: the summary rows, percentiles
 * from a log-linear histogram, counts and anomalies), the windowed
 * conversion's (analysis/wread.h: the ranges themselves, out, 80 bytes
 * each, not their events) and the in-memory build's (kx_ranges_build
 * below: the whole capture at once, an unbounded window). Memory, streamed:
 * each thread's open ranges and reorder window, the open cross-thread
 * ranges and the rows, not per event.
 *
 * Pairing is analysis/rangetrack.h's, in file order as in memory (lost
 * pops, lost pushes, cross-thread starts and ends of one id alike).
 * Nesting and attribution are analysis/timeline.h's rule, walked a thread
 * at a time: each thread's ranges and calls enter a reorder window
 * (window: KX_RW_WINDOW records a thread) and leave it in the rule's order
 * (start, longer first, ranges before calls at equal length, the outer
 * range first), through the rule's stack: a call counts for every range
 * around it (with its jobs' device time), and what partially overlaps an
 * earlier event of its thread is cut to nest in it. A range whose end has
 * not come when it leaves the window is walked as the longest, open to its
 * end; when the end comes it is checked against what was walked inside it
 * and beside it (a range whose pop was lost, cut to its parent, is exactly
 * what memory makes). Ranges left open end where their thread or process
 * ended (analysis/range_ends.h).
 *
 * Reasons to read the file whole (why), each a budget the stream keeps:
 *   - a thread's records out of the rule's order by more than the window
 *     (a record whose start is before what left it, or an end before what
 *     was walked inside its range), or two ranges of one start and
 *     nanosecond neither of which has ended when they leave it;
 *   - names past the store's limit (the windowed conversion's out);
 *   - a call that a range's end cuts, streamed (the calls' timeline keeps
 *     the cuts: a call of a thread spanning a pop of the same thread); in
 *     memory it joins the timeline's fixes (keep_cuts).
 */
#ifndef KX_RANGEWALK_H
#define KX_RANGEWALK_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/range_ends.h"
#include "analysis/ranges.h"
#include "analysis/rangetrack.h"
#include "analysis/stats.h"
#include "analysis/timeline.h"
#include "model/annot.h"
#include "model/event.h"

#define KX_RW_WINDOW 256 /* records a thread's reorder window holds */

struct kx_rw_rec;

struct kx_rangewalk {
	const char *why;      /* the first reason the stream cannot give the file; NULL: it can */
	struct kx_stats rows; /* the annotation rows so far */
	struct kx_range_rows builder; /* finds the row of a name */
	struct kx_ranges_anomalies anom;
	uint64_t events;            /* annotation events */
	uint64_t found;             /* ranges and marks made (as kx_ranges.found) */
	struct kx_rangetrack track; /* open ranges (each: its record index) and every thread's
	                               window and walk */
	uint64_t ended[8];          /* the range an end took out (track.stride bytes) */
	struct kx_rw_rec *recs;     /* ranges pairing or walking has not let go */
	size_t nrecs, rec_cap;
	uint32_t free_rec;                  /* first free record (UINT32_MAX: none) */
	struct kx_range_ends ends;          /* where the ranges left open will end */
	uint32_t line_tid[64], line_at[64]; /* tid + 1 -> its thread's index in track (a cache) */
	/* Set by a caller that keeps the ranges themselves (the windowed
	 * conversion): each range and mark is appended to out (kx_ranges_add's
	 * order), names interned in strings; at finish the open ones and the
	 * counts. out is then for kx_ranges_finish. */
	struct kx_ranges *out;
	struct kx_store *strings; /* NULL: the events' name and cat are ids of out's store */
	size_t out_cap;
	/* Set by the in-memory build (analysis/ranges.h), which walks the whole
	 * capture at finish: */
	size_t window; /* records a thread with ranges holds (KX_RW_WINDOW; SIZE_MAX: all) */
	int no_rows;   /* no summary rows (sum NULL at finish) */
	int keep_cuts; /* calls a range's end cuts are listed in cuts, not a reason */
	struct kx_tl_fix *cuts; /* pos: the call's (kx_rangewalk_call), dur: its cut length */
	size_t ncuts, cuts_cap;
	/* The device time and jobs of the call at pos (NULL: none). */
	uint64_t (*dev)(void *ctx, uint32_t pos, uint64_t *jobs);
	void *dev_ctx;
};

void kx_rangewalk_init(struct kx_rangewalk *w);
/* One annotation event (name, cat: its strings for PUSH, MARK, START; ""
 * else). 0, or -1 when out of memory. */
int kx_rangewalk_ann(struct kx_rangewalk *w, const struct kx_ann *a, const char *name,
                     const char *cat);
/* One ioctl. 0, or -1 when out of memory. */
int kx_rangewalk_ioctl(struct kx_rangewalk *w, const struct kx_ioctl *e);
/* The same, its end for the nesting end_ns (the timeline's) and pos, a
 * position of the caller's (dev, cuts; UINT32_MAX: none). */
int kx_rangewalk_call(struct kx_rangewalk *w, const struct kx_ioctl *e, uint64_t end_ns,
                      uint32_t pos);
/*
 * Once every record is in: what is still open is closed where its thread
 * or process ended (tasks holds every task record of the capture, for the
 * exits), every window is walked, the rows are finished and moved to the
 * end of sum (unless no_rows). 0 (w->why may be set now), or -1 when out
 * of memory.
 */
int kx_rangewalk_finish(struct kx_rangewalk *w, const struct kx_store *tasks, struct kx_stats *sum);
/* The counts of the ranges for an analysis made without them (rg's rows empty). */
void kx_rangewalk_counts(const struct kx_rangewalk *w, struct kx_ranges *rg);
void kx_rangewalk_free(struct kx_rangewalk *w);

/*
 * The ranges of a capture in memory: the annotation events of s paired,
 * each thread's ranges nested with its ioctls in one walk (tl: the calls
 * the ranges cut are added to its fixes) and the ioctls attributed with
 * their jobs' device time (jobs may be NULL). ci (may be NULL) gives the
 * kernel's counts; the tasks of s say where threads exited. Returns NULL
 * when out of memory.
 */
struct kx_ranges *kx_ranges_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                  struct kx_timeline *tl, const struct kx_jobs *jobs);

#endif /* KX_RANGEWALK_H */
