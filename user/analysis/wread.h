/*
 * A record file read in time windows (analysis/windows.h), each window into
 * a store of its own, so that converting a long capture needs the memory
 * of a window, not of the capture. Only for captures a stream gives exactly;
 * the others are read into memory whole. Each thread's
 * calls pass the engine's reorder stage into the nesting rule in start
 * order (analysis/engine.h, nesttrack.h): the calls it shortens, and those
 * the annotation ranges' walk cuts at the end of a range of their thread
 * (the shorter cut kept, as memory's timeline keeps it), are kept (fixes,
 * at most a window's events: past that the file is read whole) and given
 * their whole-capture lengths in their windows (kx_wread_nest); one the
 * rule shortens is walked after the ranges of its start memory orders
 * before it (held: nesttrack.h); a call later than the stage's window is a
 * reason.
 *
 * Pass 1 (kx_wread_open) reads the file as a stream: the stream check, the
 * events' count, first and last start, the whole capture's facts every part
 * shows (analysis.h's kx_whole), and, in a side store, what every window
 * needs whole: tasks (thread names), CPU samples and off-CPU intervals with
 * their symbols (a rate per CPU, not per event), and the annotation names.
 * The annotation ranges are built as the records pass (analysis/rangewalk.h:
 * paired as they come, nested with the calls as each thread's leave the
 * engine's reorder stage, each with the ioctls it holds; the file is read
 * whole only past its budget), and
 * kept, not their records (nor summary rows: rangewalk.h's no_rows): once
 * the file is read, they are the whole
 * capture's ranges (ranges), lent to every window's analysis
 * (kx_analysis_lend_ranges); a range that spans a cut is drawn, whole, in
 * the part where it starts. The ioctls memory accounting counts (few) are
 * kept apart (mem), and once the file is read, the whole capture's memory
 * accounting is made of them (jobs: a capture without job records has no
 * other device analysis) and lent to every window's analysis
 * (kx_analysis_lend_jobs): each part shows the usage the whole capture
 * reached, and its events count in the plan. It also keeps the late
 * ioctls: a record is written when its call returns, so a long call's
 * record comes after those of calls that started after it. A record whose
 * start is more than KX_WREAD_LATE_NS before the latest start read before
 * it is late: it is kept, with its place among the file's ioctls, and so
 * is the counter record of a late call (record --counters: written just
 * before its ioctl's, with the call's start). The windows are planned from
 * the starts seen, ranges' and memory events' included (more passes over
 * the file only when some bucket of the plan holds more events than a
 * window may).
 *
 * Pass 1 also reads the file into a store of its own (store), as reading it
 * whole would, while the file may still be wanted whole: until it has had
 * more records than a window holds (ioctls, CPU samples and annotations,
 * each at most one trace event's start) and more than keep records
 * (KX_WREAD_KEEP_RECORDS: the records a window of the default split holds,
 * so that a smaller window costs the first read no more memory than the
 * default one does), or for good once a reason to read it whole comes
 * first. A file that fits one window, or must be read whole, is then
 * read once, not twice; a store kept past a window's records with no reason
 * come is let go once the file is read (the file is read in windows). Only
 * a file whose store was given up that way before a reason to read it whole
 * came is to be read again (store NULL with in_memory set; see
 * analysis/capread.h, which counts and says it).
 *
 * Device jobs (a file with job records; analysis/wjobfeed.h): pass 1 runs
 * the streamed device timelines over the file, their reason (a budget) the
 * reason to read it whole, but only once the file is known not to be read
 * from its store: while the store keeps the file, its calls and job records
 * are only noted (a bit each, in file order: jobrec.order). When the store
 * is to be let go (more than keep records, in the middle of the read or at
 * its end) the timelines first take the noted records from it, in file
 * order (jobrec.fed, the records they took), and then the rest as it
 * comes; the store is let go only once they took them all (a reason found
 * meanwhile keeps it: the file is read once). A file kept whole never runs
 * them (a conversion reads it from its store: analysis/capread.h), unless
 * its plan is asked for (kx_wread_plan_kept runs them from the store). They
 * give the whole capture's rings, devices, anomalies and memory rows
 * (jobs, no job kept), the plan's job starts, the whole counts every part
 * shows (jobrec), and two bits a file call: which submitted a job, which is the source of a drawn
 * flow (analysis/flows.h; a job's submitting call is found among the last
 * 16384 calls the timelines took, else that is a reason). Pass 2 runs them
 * again, the same feed, and files each job by window (analysis/wjobs.h),
 * with a copy of its submitting call as drawn (kept from the last calls,
 * as many as pass 1 found a link reach back): a window is handed over
 * only once the timelines have swept a job starting lead_ns past its end,
 * and with it its job table and view (analysis/wjobtab.h:
 * kx_wread_lend_jobs), numbering its jobs and calls as the whole capture
 * does. Such a file is read a window, not a slice, at a time (a Chrome
 * part's job tracks are drawn from its window's table whole). One with
 * annotation records too runs them once it has had both an annotation
 * record and a job record and is known not to fit one window (its records
 * past a window's, or the file at the rate of its records up to the latest
 * chunk boundary holding more; the noted records taken from the store
 * then, the rest as they come): the jobs they count give
 * their device time to the ranges around their calls (jobflow.h's
 * on_linked to rangewalk.h's kx_rangewalk_dev, the call named by its
 * thread and number, found among the last 16384 calls they took), the
 * ranges kept (out) having it once the file is read; the ranges' walk
 * remembers a call while a job may still come for it, within its budget
 * (rangewalk.h: KX_RANGEWALK_DEV_BYTES, 8 ranges a call), a reason
 * past it.
 *
 * Pass 2 (kx_wread_run) reads the file again and fills the windows' stores
 * in file order, each late ioctl at its own place, each counter record in
 * the window of its call (kx_store_add_ctr: the window's own, beside the
 * samples it borrows), where the window's analysis joins them. The window
 * [from, to) is complete once a record starting at or after to + lag_ns is
 * read: lag_ns, measured in pass 1, is the most any record that is not late
 * started before the latest start read before it (at most
 * KX_WREAD_LATE_NS; a few microseconds for a flood of short calls), so a
 * later record of that window would be late, and the late ones are in
 * already. It is handed to the caller, windows in order, then freed. Each
 * store holds every task and borrows the side store's samples, so a
 * window's analysis gives its events what the whole capture's gives them,
 * and an output part written from it is the one written from the whole
 * capture in memory.
 *
 * Sliced (kx_wread_open_sliced), pass 2 does the same with the windows'
 * slices (windows.h): a store a slice, handed over in order, each with its
 * window's index, so that an output written a slice at a time needs the
 * memory of a slice.
 *
 * Memory: the windows (or slices) open at once (those that end less than
 * lag_ns before the latest start: one, or two for lag_ns after a cut), the
 * side store,
 * the annotation ranges (80 bytes a range or mark, as many as the capture
 * has, and their names once), and the late ioctls (calls longer than about
 * KX_WREAD_LATE_NS). A file with more late ioctls than a window holds
 * (records far from the order of time, which a recorder does not write) is
 * to be read whole. With device jobs: the timelines' (jobflow.h: its
 * bounds, not the jobs), 2 bits a file call, the jobs of the windows not
 * handed over yet (wjobs.h) and copies of the submitting calls a job
 * counted later may link to, in pass 1 the last 16384 calls' starts and
 * lengths (32 bytes each) and, while the store keeps the file, a bit for
 * each of its calls and job records; the windows stay open until the
 * timelines sweep past them, which hold a job up to 1 s of capture time or 16384
 * jobs behind the latest record, 32768 behind a job done late (a capture
 * with fewer jobs than that keeps its windows open to its end). With annotation ranges too: the
 * calls inside ranges the walk remembers for their jobs (rangewalk.h) and
 * 4 bytes a range.
 */
#ifndef KX_WREAD_H
#define KX_WREAD_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "analysis/engine.h"
#include "analysis/jobs.h"
#include "analysis/ranges.h"
#include "analysis/windows.h"
#include "analysis/wjobs.h"
#include "analysis/wjobtab.h"
#include "io/kxp.h"
#include "model/counter.h"
#include "model/capinfo.h"
#include "model/store.h"

#define KX_WREAD_LATE_NS KX_ENGINE_LATE_NS /* 50 ms: the engine's bound */
/* Records pass 1's store may hold past a smaller window's: those of a
 * window of export/splitplan.h's default split (1,000,000 events). */
#define KX_WREAD_KEEP_RECORDS ((size_t)1000000)

/* A call the nesting rule shortened in the whole capture, or the end of an
 * annotation range of its thread cut (pass 1), found again in its window by
 * (thread, start, recorded length). */
struct kx_wread_fix {
	uint64_t ts, dur; /* ns, its start and recorded length */
	uint64_t cut;     /* ns, its length as shortened (the shorter cut of the two) */
	uint32_t tid;
};

/*
 * What pass 1 keeps of a capture with job records, for pass 2 and every
 * window's job view (analysis.h's kx_jobview): the whole capture's counts,
 * and two bits a file call (which submitted a job, which is the source of a
 * drawn flow: analysis/flows.h).
 */
struct kx_wread_jobs {
	uint64_t records;       /* job records of the file (0: none, the rest unused) */
	uint64_t njobs;         /* jobs of the whole capture */
	uint64_t first_ns;      /* ns, the earliest job start or in-flight change (UINT64_MAX) */
	uint64_t lead_ns;       /* ns, the most a job's in-flight change falls before its start */
	uint64_t gap;           /* calls: the most a job's submitting call came before the latest
	                           call the device timelines had when they counted the job */
	uint64_t flows_dropped; /* jobs with a submitting call and no flow drawn */
	uint8_t *submitted;     /* bitmap over the file's calls: submitted a job */
	uint8_t *flow_from;     /* bitmap over the file's calls: the source of a drawn flow */
	size_t nbytes;          /* bytes of each bitmap */
	struct kx_wjobs *wj;    /* the windows' jobs (pass 2), NULL: none */
	struct kx_wjobtab *tab; /* pass 2: the job table of the slice being handed over */
	/* Pass 1's device timelines, fed only once the store is let go. */
	uint64_t fed;     /* calls and job records they took (pass 1, and kx_wread_plan_kept:
	                     0 for a file kept whole) */
	uint8_t *order;   /* while store keeps the file: its calls and job records in file
	                     order, not fed yet, a bit each (1: a job record) */
	size_t norder;    /* bits of order */
	size_t order_cap; /* bytes allocated */
};

/* A late call's counter record and its window. */
struct kx_wread_ctr {
	struct kx_ctr_ev e;
	uint32_t win;
};

struct kx_wread {
	const char *in_memory;         /* NULL: read in windows; else why it must be read whole */
	struct kx_store *store;        /* the whole file, NULL: given up (past a window) */
	struct kx_capinfo ci;          /* header, then trailer facts */
	struct kx_kxp_read_result res; /* what reading lost */
	char damage[512];              /* its message (empty: nothing lost) */
	struct kx_store *side;         /* tasks, samples and their symbols, annotation events */
	struct kx_ranges *ranges;      /* the whole capture's annotation ranges, NULL: none */
	struct kx_store *mem;          /* the ioctls memory accounting counts, in file order */
	struct kx_jobs *jobs;          /* the whole capture's memory accounting, NULL: none */
	struct kx_store *late;         /* the late ioctls, in file order */
	uint64_t *late_seq;            /* their places among the file's ioctl records */
	uint32_t *late_win;            /* their windows */
	size_t nlate, late_cap;
	struct kx_wread_ctr *late_ctr; /* the late calls' counter records, by window */
	size_t *late_ctr_off;          /* window k's: late_ctr[off[k] .. off[k + 1]) */
	size_t nlate_ctr, late_ctr_cap;
	struct kx_whole whole;            /* what every part shows of the whole capture */
	struct kx_windows plan;           /* the windows and their slices (plan.n 1: the capture
	                                     fits one); none made while store holds the file
	                                     (kx_wread_plan_kept) */
	struct kx_whist *starts;          /* store kept: the plan's first level, but for... */
	size_t kept_ioctls, kept_samples; /* ...the starts of the store's first ones */
	size_t limit;                     /* events per window */
	size_t slice;                     /* events per slice (windows.h; limit: unsliced) */
	size_t budget;                    /* bytes each store may take */
	size_t keep;                      /* records store may hold past limit's (pass 1) */
	struct kx_wread_fix *fixes;       /* the calls shortened to nest, by (tid, ts, dur) */
	size_t nfix, fix_cap;
	uint64_t fix_threads;        /* threads with such calls */
	uint64_t lag_ns;             /* ns, the largest lag of a record in its place (pass 1) */
	struct kx_wread_jobs jobrec; /* a capture with job records: its device jobs */
	size_t peak_open;            /* pass 2: the most windows open at once */
	const char *path;
};

/*
 * Pass 1 and the plan, windows of at most limit events, stores of at most
 * budget bytes: w zeroed and filled. 0 (check w->in_memory), or -1 when the
 * file is not a readable record file or memory ran out (err says which).
 */
int kx_wread_open(struct kx_wread *w, const char *path, size_t limit, size_t budget, char *err,
                  size_t errlen);
/* The same, the windows cut into slices of at most slice events
 * (windows.h), which pass 2 reads one store at a time: the memory of a
 * slice, not a window (slice >= limit: unsliced); pass 1's store kept up to
 * keep records when a window holds fewer (kx_wread_open:
 * KX_WREAD_KEEP_RECORDS; 0: a window's). */
int kx_wread_open_sliced(struct kx_wread *w, const char *path, size_t limit, size_t slice,
                         size_t budget, size_t keep, char *err, size_t errlen);

/*
 * When the first read kept the whole file (w->store) with no reason to read
 * it whole: the windows it would make, in w->plan (the starts of the
 * records the store holds join the first level only now: a file read whole
 * needs no plan of its own; a crowded bucket is counted again from the
 * store, not the file). A file with job records runs the device timelines
 * now, from the store, as pass 1 would have (their jobs' starts join the
 * plan): their reason, if any, in w->in_memory (no plan made then). 0, or
 * -1 when out of memory (err says so).
 */
int kx_wread_plan_kept(struct kx_wread *w, char *err, size_t errlen);

/* Gets slice k's store (plan.slice[k], of window plan.slice[k].part; its
 * analysis is the caller's to build), in slice order; 0 to go on, else the
 * read stops and kx_wread_run returns that. Unsliced, slice k is window k. */
typedef int (*kx_wread_fn)(void *ctx, struct kx_store *window, size_t k);

/* Pass 2: every slice to fn. 0; fn's non-zero value; or -1 with err set
 * (the file changed since pass 1, memory ran out). For a file pass 1 let
 * its store go (w->store NULL, w->in_memory NULL): a file kept whole is
 * read from its store (analysis/capread.h), and its device jobs are not
 * filed by window. */
int kx_wread_run(struct kx_wread *w, kx_wread_fn fn, void *ctx, char *err, size_t errlen);

/*
 * For slice k's analysis an (built from its store): the lengths the
 * nesting rule and the annotation ranges' ends gave its calls in the whole
 * capture replace those its timeline gave them (a window lacks the calls
 * before it that a call of it nests in, and the ranges), and its warning
 * counts the whole capture's. 0, or -1 when out of memory.
 */
struct kx_analysis;
int kx_wread_nest(const struct kx_wread *w, const struct kx_store *s, struct kx_analysis *an);

/*
 * For slice k's analysis an, while kx_wread_run hands slice k over: the
 * device jobs it shows, lent (kx_analysis_lend_jobs): a capture with job
 * records, the slice's job table and view (analysis/wjobtab.h: its jobs,
 * numbered as in the whole capture); else the whole capture's memory
 * accounting (w->jobs), or nothing.
 */
void kx_wread_lend_jobs(const struct kx_wread *w, struct kx_analysis *an);

void kx_wread_free(struct kx_wread *w);

#endif /* KX_WREAD_H */
