/*
 * The analysis engine's front: records go in by kind (kx_engine_feed_*),
 * results come out through sinks (struct kx_engine_sinks), and
 * kx_engine_finish closes. Owns the reorder stage and its memory.
 *
 * The reorder stage: a record is written when its call returns, so a
 * thread's calls come in the order they returned, and a call that holds
 * another (nesting) comes after it. Each thread's ioctls, counter records
 * and annotation ranges leave in start order, the order the timeline's
 * nesting rule takes them in (analysis/timeline.h: by start, the longer
 * first at equal starts, ranges before calls of their length, the range of
 * the lower level first, then in file order; a counter record, which starts with its
 * call, before the calls that start when it does). A record waits until
 * its thread has had a record starting more than window_ns after it, or
 * until kx_engine_finish.
 *   - window_ns bounds the wait: the measured lateness for streamed and
 *     windowed reads (measured: each thread's, the most a record of it
 *     came after a later start of it so far, at most KX_ENGINE_LATE_NS: a
 *     thread whose calls come in start order holds none back, and the
 *     calls of one that partially overlap come in start order too, their
 *     records being written at their ends; a call that holds another whole
 *     comes after it, late the first time); KX_ENGINE_UNBOUNDED for a
 *     capture held in memory (every record leaves at the end, each
 *     thread's sorted once).
 *   - A thread with annotation ranges keeps at least KX_ENGINE_RANGE_HOLD
 *     records waiting besides: its annotation records and its calls come
 *     from two ring buffers, each drained in its own batches, so either
 *     may come some records after the other's later ones.
 *   - A record that comes after a record of its thread it should precede
 *     has left is late: it goes to the late sink at once (kept aside, as
 *     wread keeps late calls) and is counted.
 *   - budget bounds the bytes the waiting records take: past it the
 *     thread's earliest record leaves at once, and is counted (forced):
 *     the order is then no longer certain, and the caller says so.
 *
 * Annotation records go to the ann sink as they come, in file order (the
 * pairing: analysis/rangetrack.h; their names are valid only then). A
 * thread range (a PUSH the sink gave a handle) then waits as a record of
 * its start, its length that of the longest until its POP comes (the sink
 * names the range the POP ended): waiting, it moves to its place; gone
 * already, it left as the longest, and the range sink's owner checks that
 * the order holds (analysis/rangewalk.h). Other annotation records are not
 * reordered.
 *
 * What the feed order itself tells, kept as the calls come: whether the
 * last call is one memory accounting counts (analysis/jobpair.h's
 * kx_memacct_step: the caller keeps those, few as they are, for the memory
 * rows and series).
 *
 * Memory: the records within the window of their thread's latest start,
 * or its last KX_ENGINE_RANGE_HOLD (32 bytes each, and 60 more for a
 * call's or counter record's copy; a span or range has none), and 96
 * bytes a thread.
 */
#ifndef KX_ENGINE_H
#define KX_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobpair.h"
#include "model/counter.h"
#include "model/event.h"
#include "model/annot.h"
#include "util/slots.h"
#include "util/tidtab.h"

#define KX_ENGINE_UNBOUNDED UINT64_MAX
/* ns, the most a streamed or windowed read lets a record wait (wread.h's
 * lateness bound) */
#define KX_ENGINE_LATE_NS 50000000ULL
/* bytes the waiting records of a streamed read may take */
#define KX_ENGINE_BUDGET (64u << 20)
#define KX_ENGINE_NOREF  UINT32_MAX /* a record without the caller's handle */
/* records a thread with annotation ranges keeps waiting at least */
#define KX_ENGINE_RANGE_HOLD 256

/* Where the records come out; a NULL member drops its kind. Each returns
 * 0, or -1 (out of memory: the engine stops and says so). */
struct kx_engine_sinks {
	void *ctx;
	/* Each thread's calls, counter records and ranges, in start order. */
	int (*ioctl)(void *ctx, const struct kx_ioctl *e);
	int (*ctr)(void *ctx, const struct kx_ctr_ev *c);
	int (*range)(void *ctx, uint32_t tid, uint32_t ref);
	/* Records later than the window, as they come. */
	int (*late_ioctl)(void *ctx, const struct kx_ioctl *e);
	int (*late_ctr)(void *ctx, const struct kx_ctr_ev *c);
	int (*late_range)(void *ctx, uint32_t tid, uint32_t ref);
	/* Each annotation record as it comes (name, cat: as kx_engine_feed_ann
	 * has them). *ref (KX_ENGINE_NOREF when called): for a PUSH, the
	 * range's handle, to have it ordered (the range sink gets it back);
	 * for a POP, the handle of the range it ended. */
	int (*ann)(void *ctx, const struct kx_ann *a, const char *name, const char *cat,
	           uint32_t *ref);
};

struct kx_engine {
	struct kx_engine_sinks out;
	uint64_t window_ns;       /* ns, the longest a record waits for earlier ones */
	int measured;             /* set by the caller: each thread's window is its measured
	                             lateness so far, at most window_ns */
	size_t budget;            /* bytes the waiting records may take (0: no bound) */
	struct kx_tidtab threads; /* each thread's waiting records (struct kx_eng_thread) */
	struct kx_slots copies;   /* the waiting calls' and counter records' copies */
	uint64_t seq;             /* records fed (their file order) */
	uint64_t out_seq;         /* the place in the file of the record a sink has now */
	uint32_t out_ref;         /* its handle (kx_engine_feed_span's, a range's) */
	uint64_t out_ts, out_dur; /* ns, its start and length as ordered (UINT64_MAX: a range
	                             whose end had not come, a counter record) */
	size_t held, peak;        /* bytes of the waiting records: now, the most */
	uint64_t late_ioctls;     /* calls later than the window (to out.late_ioctl) */
	uint64_t late_ctrs;       /* counter records later than the window */
	uint64_t late_ranges;     /* ranges later than the window (to out.late_range) */
	uint64_t forced;          /* records let out early for the budget */
	uint64_t ioctl_threads;   /* distinct threads whose calls were fed */
	struct kx_memacct mem;    /* the memory accounting of the calls fed */
	int last_mem;             /* the last call fed is one memory accounting counts */
	uint64_t low;             /* ns, no waiting record starts before it (kx_engine_release) */
	int failed;               /* a sink or the engine ran out of memory */
};

/* e with window_ns and budget (bytes, 0: none), the records going to out. */
void kx_engine_init(struct kx_engine *e, uint64_t window_ns, size_t budget,
                    const struct kx_engine_sinks *out);
/* Each: 0, or -1 when out of memory (a sink's or the engine's). */
/* A call (arg: its argument bytes, NULL when none): e->last_mem says
 * whether memory accounting counts it. */
int kx_engine_feed_ioctl(struct kx_engine *e, const struct kx_ioctl *ev, const uint8_t *arg);
/* A call the caller holds itself (a capture in memory): only its thread,
 * start, length (ns) and handle ref wait, no copy; it leaves to the ioctl
 * sink as a call of those (its other fields zero), out_ref ref. */
int kx_engine_feed_span(struct kx_engine *e, uint32_t tid, uint64_t ts, uint64_t dur, uint32_t ref);
int kx_engine_feed_ctr(struct kx_engine *e, const struct kx_ctr_ev *c);
int kx_engine_feed_ann(struct kx_engine *e, const struct kx_ann *a, const char *name,
                       const char *cat);
/* Range ref of thread tid is len ns long (one its POP did not end: where
 * its thread ended): waiting, it moves to its place; gone, nothing. */
void kx_engine_range_end(struct kx_engine *e, uint32_t tid, uint32_t ref, uint64_t len);
/* Every waiting record that starts at or before ts out, each thread's in
 * order (a later stage needs all of them now: a record that comes after
 * and should precede one let out is late). 0, or -1 when out of memory. */
int kx_engine_release(struct kx_engine *e, uint64_t ts);
/* A copy of every call waiting in e (each thread's in order) fed to to,
 * each thread's measured lateness with them (a later stage that took e's
 * calls takes them from to from now on). 0, or -1 when out of memory. */
int kx_engine_hand_calls(struct kx_engine *e, struct kx_engine *to);
/* Every waiting record out, each thread's in order. 0, or -1 when out of memory. */
int kx_engine_finish(struct kx_engine *e);
/* Thread tid's waiting records out, in order, as kx_engine_finish lets
 * them out (a capture in memory is walked a thread at a time, each one's
 * records waiting only until its turn). 0, or -1 when out of memory. */
int kx_engine_finish_thread(struct kx_engine *e, uint32_t tid);
/* The budget's message when it was exceeded ("" when not), in buf. */
const char *kx_engine_budget_note(const struct kx_engine *e, char *buf, size_t len);
void kx_engine_free(struct kx_engine *e);

#endif /* KX_ENGINE_H */
