/*
 * Annotation ranges as one walk makes them, a record at a time: the
 * streamed report's (analysis/sreport.h: the summary rows, percentiles
 * from a log-linear histogram, counts and anomalies), the windowed
 * conversion's (analysis/wread.h: the ranges themselves, out, 80 bytes
 * each, not their events) and the in-memory build's (kx_ranges_build
 * below: the whole capture at once). Memory, streamed: each thread's open
 * ranges and walk, the open cross-thread ranges and the rows, not per
 * event.
 *
 * Each walk takes its records from the engine (analysis/engine.h): the
 * annotation records in file order (kx_rangewalk_ann, the engine's ann
 * sink), then each thread's ranges and calls in the nesting rule's order
 * out of its reorder stage (kx_rangewalk_range, kx_rangewalk_call); the
 * in-memory build feeds an engine of an unbounded window, the stream one
 * of the measured lateness. Pairing is analysis/rangetrack.h's, in file
 * order (lost pops, lost pushes, cross-thread starts and ends of one id
 * alike). Nesting and attribution are analysis/timeline.h's rule, walked
 * a thread at a time through the rule's stack: a call counts for every
 * range around it (with its jobs' device time), and what partially
 * overlaps an earlier event of its thread is cut to nest in it. A range
 * whose end had not come when it left the reorder stage was walked as the
 * longest, open to its end; when the end comes it is checked against what
 * was walked inside it and beside it at its start (a range whose pop was
 * lost, cut to its parent, is exactly what memory makes). Ranges left open
 * end where their thread or process ended (analysis/range_ends.h).
 *
 * A call that a range's end cuts (a call of a thread spanning a pop of the
 * same thread) is no reason: in memory it joins the timeline's fixes
 * (keep_cuts); else the walk notes it (cut_last and cut_end after each
 * call, and kx_rangewalk_cut_threads), and the streamed report counts it
 * as the timeline counts its fixes, the windowed conversion keeps it with
 * its cut length for the windows' timelines.
 *
 * Reasons to read the file whole (why):
 *   - a thread's records out of the rule's order by more than the reorder
 *     stage held them (its bound: a thread with ranges keeps its last
 *     KX_ENGINE_RANGE_HOLD records, or its measured window): a record
 *     whose place had gone by when it came, or a range that left before
 *     its end and ended before what was walked inside it, or out of the
 *     rule's order with what was walked after it at its start;
 *   - names past the store's limit (the windowed conversion's out);
 *   - streamed with device jobs (dev_stream), a job of a call let go past
 *     dc_budget (the calls remembered past KX_RANGEWALK_DEV_BYTES), of a call walked inside ranges
 * before the first job record came (dev_jobs) and more than KX_JOBFLOW_RECENT calls of its thread
 * before it (jobflow.h gives its own reason first: its records link only to a thread's recent
 * calls), or of a call inside more than 8 ranges; with out, more than 4294967295 ranges
 * (serial_out).
 *
 * Device time, streamed (dev_stream: the streamed report's rows, the
 * windowed conversion's out): jobs are counted by the streamed device
 * timelines (analysis/jobflow.h), after the calls that submitted
 * them were walked or before. Each call walked inside ranges is remembered
 * by its thread and number (its place among its thread's calls, from 1:
 * the walk's order is jobflow's, each thread's calls in start order out
 * of a reorder stage of one rule) with the ranges around it (each: its record and
 * serial while it lives, then its row), from the first job record on
 * (dev_jobs: before it, each thread keeps its last KX_JOBFLOW_RECENT calls
 * walked in a ring, remembered when the first job record comes,
 * kx_rangewalk_dev_start); a job counted (kx_rangewalk_dev)
 * adds its device time and one job to each range's record, which adds them
 * to its row when it retires unless left open (and to its entry in out,
 * kept), or to the row of a range already retired and its entry in out
 * (serial_out: all jobs are counted before the ranges left open are
 * closed). A job of a call not walked yet waits for it. A job linked to
 * its call when its record is paired (jobflow.h's on_link: block requests
 * and GPU jobs, kx_rangewalk_link) is held by the call until it is
 * counted. A call is forgotten once jobflow's sweeps passed its end by
 * more than the submit link's window (no job counted later links to it:
 * its job would start before the sweeps, jobflow's reason). Past
 * dc_budget, the oldest calls that the records paired passed so
 * (kx_jobflow_linked_to: no record to come links to them; while KVM
 * records came, none) go first, those holding jobs not counted yet set
 * aside (aside) until they are; else the oldest goes (a reason if one of
 * its jobs comes). A KVM exit, not paired in time order, that comes for a
 * call let go by the records' rule is a reason (KVM records after other
 * job records). In memory (kx_ranges_build) dev gives a call's jobs as it
 * is walked.
 *
 * Memory, streamed with device jobs: the calls remembered, at most 65,536
 * (KX_RANGEWALK_DEV_BYTES, 16 MiB, at KX_RANGEWALK_DEV_CALL_BYTES each: a
 * call's record, its map entry and its share of the map's index; the
 * arrays holding them grow by doubling), those set aside included. A call
 * is remembered until the sweeps pass it: up to 1 s of capture time or
 * 16,384 jobs behind the latest record, 32,768 behind a job not counted
 * yet (jobflow.h's KX_JOBFLOW_WINDOW_NS, KX_JOBFLOW_HELD and
 * KX_JOBFLOW_BEHIND: a GPU job done 100 ms or more after its submit, or
 * never, holds them). Past the budget, block and GPU jobs' calls stay
 * only while the records' reorder stage may still link a job to them
 * (the latest record paired, up to 1 s or 16,384 records behind the
 * latest read, plus the 1 ms link window), and then only those with jobs
 * not counted: the budget holds that stage's calls inside ranges at 4
 * calls a record, or at 65,000 calls a second (ioctl rates on dma_fence
 * drivers reach about 10,000 a second).
 */
#ifndef KX_RANGEWALK_H
#define KX_RANGEWALK_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/nesttrack.h"
#include "analysis/range_ends.h"
#include "analysis/ranges.h"
#include "analysis/rangetrack.h"
#include "analysis/stats.h"
#include "analysis/timeline.h"
#include "util/keymap.h"
#include "util/slots.h"
#include "model/annot.h"
#include "model/event.h"

struct kx_rw_rec;
struct kx_rw_devcall;

/* bytes the calls remembered for their jobs may take (streamed) */
#define KX_RANGEWALK_DEV_BYTES (16u << 20)
/* bytes a call remembered takes at most, its map entry and index included */
#define KX_RANGEWALK_DEV_CALL_BYTES 256u

struct kx_rangewalk {
	const char *why;      /* the first reason the stream cannot give the file; NULL: it can */
	struct kx_stats rows; /* the annotation rows so far */
	struct kx_range_rows builder; /* finds the row of a name */
	struct kx_ranges_anomalies anom;
	uint64_t events;            /* annotation events */
	uint64_t found;             /* ranges and marks made (as kx_ranges.found) */
	struct kx_rangetrack track; /* open ranges (each: its record index) and every thread's
	                               walk */
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
	/* Set by the in-memory build (kx_ranges_build); no_rows by the
	 * windowed conversion too (it keeps out, not rows): */
	int no_rows;            /* no summary rows (sum NULL at finish; found still counted) */
	int keep_cuts;          /* calls a range's end cuts are listed in cuts */
	int closed;             /* the ranges left open were closed (kx_rangewalk_close) */
	struct kx_tl_fix *cuts; /* pos: the call's (kx_rangewalk_call), dur: its cut length */
	size_t ncuts, cuts_cap;
	/* Unless keep_cuts: the walk cut the call just walked, to end at
	 * cut_end (the streamed report counts it, the windowed conversion
	 * keeps it). */
	int cut_last;
	uint64_t cut_end; /* ns, valid with cut_last */
	/* The device time and jobs of the call at pos (NULL: none). */
	uint64_t (*dev)(void *ctx, uint32_t pos, uint64_t *jobs);
	void *dev_ctx;
	/* Set by the streamed report and the windowed conversion: each call
	 * walked inside ranges is remembered (by its thread and number) with the ranges around it,
	 * for the device time of its jobs (kx_rangewalk_dev), until forgotten
	 * (kx_rangewalk_dev_forget) or past dc_budget (the oldest goes). */
	int dev_stream;
	int dev_jobs;             /* a job record came (kx_rangewalk_dev_start) */
	size_t dc_budget;         /* calls remembered at most (KX_RANGEWALK_DEV_BYTES /
	                             KX_RANGEWALK_DEV_CALL_BYTES) */
	struct kx_keymap dc_map;  /* (tid, call number) -> the call's index + dc_base */
	struct kx_rw_devcall *dc; /* the calls remembered, in the order walked (from dc_head) */
	size_t dc_head, dc_n, dc_cap;
	uint64_t dc_base; /* the index of dc[0] */
	size_t dc_peak;   /* the most remembered at once (set aside too) */
	/* Calls no job record to come links to, set aside while jobs linked to
	 * them are not counted (kx_rangewalk_dev_forget): */
	struct kx_keymap aside_map; /* (tid, call number) -> its slot in aside */
	struct kx_slots aside;      /* struct kx_rw_devcall */
	uint64_t linked_ns; /* ns: no job record to come links to a call that ended more than the
	                       link window before it (kx_rangewalk_dev_forget's; 0: not known) */
	uint32_t serial;    /* the last serial given to a range record */
	/* With out and dev_stream: each retired range's index in out by its
	 * serial (UINT32_MAX: none), 4 bytes a range, for the jobs counted
	 * after it retired. */
	uint32_t *serial_out;
	size_t serial_cap;
};

void kx_rangewalk_init(struct kx_rangewalk *w);
/* As the records come, in file order: */
/* One annotation event (name, cat: its strings for PUSH, MARK, START; ""
 * else). *ref: the engine's ann sink's (a PUSH's range handle, the range a
 * POP ended; KX_ENGINE_NOREF: none). 0, or -1 when out of memory. */
int kx_rangewalk_ann(struct kx_rangewalk *w, const struct kx_ann *a, const char *name,
                     const char *cat, uint32_t *ref);
/* One ioctl: it ends its thread's open ranges no earlier than its end. */
void kx_rangewalk_ioctl(struct kx_rangewalk *w, const struct kx_ioctl *e);
/* Out of the engine's reorder stage, each thread's in the rule's order: */
/* A call, its end for the nesting end_ns (the timeline's) and pos, a
 * position of the caller's (dev, cuts; UINT32_MAX: none). 0, or -1 when
 * out of memory. */
int kx_rangewalk_call(struct kx_rangewalk *w, const struct kx_ioctl *e, uint64_t end_ns,
                      uint32_t pos);
/* The range ref (kx_rangewalk_ann's) of thread tid. 0, or -1 when out of memory. */
int kx_rangewalk_range(struct kx_rangewalk *w, uint32_t tid, uint32_t ref);
/* A record of a thread later than the reorder stage held it (its late sinks): a reason. */
void kx_rangewalk_late(struct kx_rangewalk *w);
/*
 * Once every record is fed, before the engine's kx_engine_finish: what is
 * still open is closed where its thread or process ended (tasks holds
 * every task record of the capture, for the exits); a range of those still
 * waiting in eng's reorder stage takes its length there (eng may be NULL).
 * 0, or -1 when out of memory.
 */
struct kx_engine;
int kx_rangewalk_close(struct kx_rangewalk *w, const struct kx_store *tasks, struct kx_engine *eng);
/*
 * Once the engine finished: (kx_rangewalk_close if not done: tasks) the
 * walks are ended, the rows are finished and moved to the end of sum
 * (unless no_rows). 0 (w->why may be set now), or -1 when out
 * of memory.
 */
int kx_rangewalk_finish(struct kx_rangewalk *w, const struct kx_store *tasks, struct kx_stats *sum);
/*
 * A job of call call_n of thread tid (its number among the thread's
 * calls, from 1, as jobflow's on_linked names it) was counted
 * (analysis/jobflow.h's on_linked, how its KX_JOBFLOW_* bits): with
 * KX_JOBFLOW_DEV its device time dev_ns and one job go to every range
 * around the call, as kx_ranges_build gives them (before the call is
 * walked they wait for it); with KX_JOBFLOW_LINKED it was announced
 * (kx_rangewalk_link) and the call waits for it no more. 0, or -1 when
 * out of memory.
 */
int kx_rangewalk_dev(struct kx_rangewalk *w, uint32_t tid, uint64_t call_n, uint64_t dev_ns,
                     unsigned int how);
/* A job was linked to call call_n of thread tid (jobflow.h's on_link): the
 * call is remembered until that job is counted. 0, or -1 when out of
 * memory. */
int kx_rangewalk_link(struct kx_rangewalk *w, uint32_t tid, uint64_t call_n);
/* The first job record came (streamed): the calls each thread's ring kept
 * are remembered, every call inside ranges from now on. 0, or -1 when out
 * of memory. */
int kx_rangewalk_dev_start(struct kx_rangewalk *w);
/* No job counted from now on starts before swept_ns (jobflow's sweeps):
 * the calls that ended more than the link window before it are
 * forgotten; and no job record to come links to a call that ended more
 * than the link window before linked_ns (jobflow.h's kx_jobflow_linked_to;
 * 0: not known): past the budget such calls go first. 0, or -1 when out
 * of memory. */
int kx_rangewalk_dev_forget(struct kx_rangewalk *w, uint64_t swept_ns, uint64_t linked_ns);
/* The threads some call of which the walk cut while n's rule shortened
 * none of theirs: with n's fixed_threads, the timeline's count of threads
 * with a call shortened (kx_timeline_add_fixes of the cuts, in memory). */
uint64_t kx_rangewalk_cut_threads(const struct kx_rangewalk *w, const struct kx_nesttrack *n);
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
