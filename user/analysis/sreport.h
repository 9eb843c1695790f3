/*
 * The report of a record file read as a stream (io/kxp.h's
 * kx_kxp_read_stream): the ioctl rows are aggregated as the records pass
 * (analysis/stats.h's streaming rows), so memory grows with the rows, not
 * with the events. Tasks, CPU and off-CPU samples and their symbols are
 * kept in a side store, for the profiles and thread names, and so are the
 * ioctls the memory rows look at. Device timelines (KVM jobs, block
 * requests, GPU jobs of every source) are made as the records pass
 * (analysis/jobflow.h: memory does not grow with the jobs); no job record
 * is kept. No other ioctl is kept.
 * Annotation records go through the engine (analysis/engine.h), paired as
 * they come and each thread's ranges walked with its calls as they leave
 * its reorder stage (analysis/rangewalk.h): their rows join the ioctl
 * rows, their counts go to the analysis of the side store
 * (kx_sreport_apply); counter records are joined to their calls as they
 * leave it too (analysis/ctrstats.h's kx_ctrjoin: each thread's records in
 * start order; a record that comes after its call left finds it by its
 * key, as in memory). Records of counters the header does not name are
 * not analysed, as in memory.
 *
 * Each thread's calls pass the engine's reorder stage into the nesting
 * rule (analysis/nesttrack.h): its counts are the summary's warning
 * (kx_sreport_apply), and the ranges walk each call with the end the rule
 * gives it, as the in-memory build walks the timeline's. The engine also
 * says which calls memory accounting counts.
 *
 * Exactly the in-memory report's figures (percentiles within 1/256), or a
 * reason to read the file into memory instead, found as the records pass:
 * calls later than the reorder window or past its memory budget, a range
 * that starts with a call the rule shortens and memory orders before it
 * (nesttrack.h), a call that came after the device timelines took a later
 * call of its thread (they take each thread's calls in start order, from
 * the nesting stage until the first job record, then from a reorder stage
 * of their own, and every call begun at or before a job record they pair:
 * jobflow.h's calls_upto), a counter record that may be a call's given up past
 * the counter join's budget (ctrstats.h); job records and annotations: analysis/jobflow.h and
 * rangewalk.h say when they are. With both, each job jobflow counts with its submit link
 * (jobflow.h's on_linked) gives its device time to the ranges around its
 * call (rangewalk.h's kx_rangewalk_dev); the device timelines are finished
 * before the ranges left open are closed. The read then
 * stops at the next chunk (the caller reads the file again into memory,
 * damage and all).
 */
#ifndef KX_SREPORT_H
#define KX_SREPORT_H

#include <stddef.h>

#include "analysis/stats.h"
#include "io/kxp.h"
#include "model/capinfo.h"
#include "model/store.h"

struct kx_rangewalk;
struct kx_ctrstats;

struct kx_sreport {
	struct kx_store *side;         /* tasks, samples, symbols, the ioctls memory rows need */
	struct kx_stats st;            /* the ioctl rows (empty when in_memory) */
	struct kx_capinfo ci;          /* header, then trailer facts */
	struct kx_kxp_read_result res; /* what reading lost */
	struct kx_rangewalk *ranges;   /* the annotation ranges, built as they came */
	struct kx_ctrstats *counters;  /* counters joined to their calls; NULL: none named */
	const char *in_memory;         /* why the file must be read into memory; NULL: streamed */
	uint64_t threads;              /* distinct threads whose calls were seen */
	uint64_t nest_fixed;           /* calls the nesting rule shortened (on the stream; those a
	                                  range's end cut included, as in memory) */
	uint64_t nest_threads;         /* threads with such calls */
	uint64_t flow_jobs;            /* device jobs paired as they came (none kept) */
	size_t flow_held;              /* the most of them held at once (by start) */
	uint64_t flow_unblocked;       /* device jobs counted early: they held more than
	                                  KX_JOBFLOW_BEHIND later ones (jobflow.h) */
	struct kx_jobs *timelines;     /* their device timelines, NULL: from side */
	struct kx_stats timeline_rows; /* their job rows (moved into st by apply) */
	uint64_t kept;                 /* ioctls kept in side (memory rows, device timelines) */
};

/*
 * Reads path as a stream into r (zeroed here), the side store taking at most
 * budget bytes (what reading into a store may take). 0 when read (err non-empty
 * when the file is damaged or cut short: what was lost, as kx_kxp_read
 * says it), -1 when it is not a readable record file or memory ran out
 * (err says which). Check r->in_memory before using r->st.
 */
int kx_sreport_read(struct kx_sreport *r, const char *path, size_t budget, char *err,
                    size_t errlen);
/* What the stream found that an analysis of r->side cannot see, or that
 * the rows need of it: the annotation ranges' counts and anomalies (their
 * rows are in r->st), the counters (handed over to an), the streamed
 * device timelines (lent to an: r must outlive it) and the job rows (added
 * to r->st). 0, or -1 when out of memory. */
struct kx_analysis;
int kx_sreport_apply(struct kx_sreport *r, struct kx_analysis *an);
void kx_sreport_free(struct kx_sreport *r);

#endif /* KX_SREPORT_H */
