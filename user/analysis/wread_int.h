/*
 * The parts of a record file read in time windows (analysis/wread.h) and
 * what they share: the rule of a late record, the slice of a start, pass
 * 1's state (struct p1), and each part's entry points. Owned by the
 * wread*.c files; nothing outside them includes it.
 *   wread.c         the fixes (the lengths the nesting rule gave calls in
 *                   the whole capture), the windows' plan, the plan of a file
 *                   kept whole, the jobs lent to a window, the end
 *   wread_first.c   pass 1: the stream read, the store kept while the file
 *                   may be wanted whole, the lazy or eager device timelines'
 *                   feed (and a kept file's, from its store), the late
 *                   ioctls, the annotation ranges' walk feed, the whole
 *                   capture's facts
 *   wread_links.c   the jobs the device timelines count: their starts, their
 *                   links to their submitting calls (bits a call, flows),
 *                   their device time to the ranges; the timelines' end
 *   wread_second.c  pass 2: the windows' stores filled in file order, the
 *                   late calls put in, the jobs filed by window, the windows
 *                   handed over
 */
#ifndef KX_WREAD_INT_H
#define KX_WREAD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/engine.h"
#include "analysis/jobflow.h"
#include "analysis/nesttrack.h"
#include "analysis/rangewalk.h"
#include "analysis/wcallmap.h"
#include "analysis/windows.h"
#include "analysis/wjobfeed.h"
#include "util/hashmap.h"

struct kx_wread;

/* Is a record starting at ts late, the latest start read before it being
 * max (any: some start was read)? The one rule of both passes. */
static inline int is_late(int any, uint64_t max, uint64_t ts)
{
	return any && max > ts && max - ts > KX_ENGINE_LATE_NS; /* KX_WREAD_LATE_NS */
}

/* Bit i of map (nbytes long). */
static inline int bit_of(const uint8_t *map, size_t nbytes, uint64_t i)
{
	return i / 8 < nbytes && (map[i / 8] >> (i % 8) & 1);
}

/* The slice holding start ts (windows.h's kx_windows_find). */
static inline size_t wr_window_of(const struct kx_windows *pl, uint64_t ts, size_t hint)
{
	return kx_windows_find(pl->slice, pl->nslices, ts, hint);
}

/* Calls pass 1 keeps for the links of the jobs counted (a power of 2): a
 * job whose submitting call came more than this many calls before the
 * latest the device timelines had is a reason to read the file whole. */
#define P1_CALLS 16384u

/* A call the device timelines took, by its place among the file's calls. */
struct p1_call {
	uint64_t idx, ts, dur; /* its place (UINT64_MAX: none yet); ns */
	uint32_t tid;
};

/* A job whose flow depends on the length the nesting rule gave its
 * submitting call (its start between the call's start and its queue
 * event): drawn once the file is read and the lengths known. */
struct p1_undecided {
	uint64_t idx, ts, dur, queue_ts; /* the call: place, start, length; the queue (ns) */
	uint32_t tid;
};

struct p1 {
	struct kx_wread *w;
	struct kx_engine eng;       /* each thread's calls in start order, to nest */
	struct kx_nesttrack nest;   /* the nesting rule on them */
	int flushed;                /* the reorder stage was emptied for a reason found */
	struct kx_rangewalk ranges; /* the annotation ranges, built as they pass */
	struct kx_whist *starts;    /* the plan's first level */
	struct kx_hmap threads;     /* pid << 32 | tid of the threads with ioctls or annotations */
	uint64_t last_key;          /* the latest added (calls come in runs of a thread) */
	uint64_t maxstart, seq;
	/* Records that may begin a trace event: ioctls, samples, ranges, marks. */
	uint64_t records;
	int any, oom, stop;
	int drop; /* w->store given up (kx_kxp_visitor's drop_store) */
	int want; /* w->store to be given up, once the device timelines took what it holds */
	/* The calls and samples that came while the store was kept: the store's
	 * first ones. Their starts join the plan's first level only once the
	 * file is to be read in windows (wr_starts_catch_up). */
	size_t kept_ioctls, kept_samples;
	/* Device jobs: the timelines fed as the file is read once the store is
	 * let go, or annotation and job records both came (eager; till then the
	 * records noted: jobrec.order), the calls they
	 * took last (calls[idx % P1_CALLS]), the latest's place, the jobs whose
	 * flow waits for the calls' lengths, and a reason found linking them. */
	struct kx_wjobfeed jf;
	struct kx_jobflow_sink sink; /* the jobs it counts (p1_job_counted) */
	int fed;                     /* the timelines took every record noted (jobrec.order) */
	/* Annotation records and job records both came, and the file is to be
	 * read in windows (p1_eager): the timelines take the records noted now
	 * (the ranges' walk remembers the calls inside ranges a while only:
	 * rangewalk.h) and then each as it comes. */
	int eager;
	uint64_t seen_to;              /* res.read_to at the latest counted record */
	uint64_t at_bytes, at_records; /* the latest chunk boundary seen: bytes, records */
	struct kx_wcallmap names;      /* the calls the timelines took, by place: thread, number */
	size_t cur, cur_calls, cur_jobs; /* the next noted record to feed, its store index */
	struct p1_call *calls;
	uint64_t top_idx;
	struct p1_undecided *und;
	size_t nund, und_cap;
	const char *link_why;
	uint64_t anns; /* annotation records so far */
};

/* wread_first.c */
/* A kept file with job records: the device timelines, run now from the
 * store. 0 (w->in_memory set when they cannot be exact), or -1 when out of
 * memory. */
int wr_kept_timelines(struct kx_wread *w);

/* wread_links.c (the jobflow sink's and the wjobfeed's callbacks of pass 1) */
int p1_flow_call(void *ctx, const struct kx_ioctl *e, uint64_t idx);
int p1_linked(void *ctx, uint32_t tid, uint64_t idx, uint64_t dev_ns, unsigned int how);
int p1_linking(void *ctx, uint32_t tid, uint64_t idx);
int p1_job_counted(void *ctx, const struct kx_jobrec *r, uint32_t *id);
int p1_job_lane(void *ctx, uint32_t id, uint32_t lane);
/* Once every record of a file with job records is in: the whole capture's
 * device timelines and memory accounting (w->jobs). */
void p1_device_end(struct p1 *c);
/* Once the file is read, of a file with job records: the flows of the jobs
 * undecided. 0 (w->in_memory may be set now), or -1 when out of memory. */
int p1_device(struct p1 *c);

/* wread.c */
/* Orders the fixes by (tid, ts, dur) (qsort, bsearch). */
int wr_fix_cmp(const void *pa, const void *pb);
/* The length the rule gave call e in the whole capture (ctx: the kx_wread). */
uint64_t wr_fix_of(void *ctx, const struct kx_ioctl *e);
/* The windows planned from starts, the late calls' and counter records'
 * windows. 0, or -1 (err says why). */
int wr_plan(struct kx_wread *w, const struct kx_whist *starts, char *err, size_t errlen);
/* Pass 2's filing of the jobs by slice (f: pass 1's timelines, finished).
 * 0, or -1 when out of memory (err says so). */
int wr_jobs_filing(struct kx_wread *w, const struct kx_jobflow *f, char *err, size_t errlen);
/* The starts of the first nio calls and nsmp samples of store s into h.
 * 0, or -1 when it could not take them all (out of memory). */
int wr_starts_catch_up(struct kx_whist *h, const struct kx_store *s, size_t nio, size_t nsmp);

#endif /* KX_WREAD_INT_H */
