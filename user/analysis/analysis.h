/*
 * The analysis of one input (a store and its capture header), built once
 * and handed to every exporter (summary, XSpace, Chrome): the device
 * timelines and memory accounting (analysis/jobs.h), the per-thread
 * timeline with the nesting rule applied (analysis/timeline.h), the
 * annotation ranges nested with it (analysis/ranges.h), and the warnings
 * all of them show. Exporters read it and never analyse the
 * store themselves, so they agree.
 *
 * The analysis borrows the store and the capture header: both must outlive
 * it, and neither may change while it lives.
 */
#ifndef KX_ANALYSIS_H
#define KX_ANALYSIS_H

#include <stddef.h>

#include "analysis/ctrstats.h"
#include "analysis/jobs.h"
#include "analysis/ranges.h"
#include "analysis/timeline.h"
#include "analysis/warnings.h"
#include "model/capinfo.h"
#include "model/store.h"

/*
 * What the outputs show of the whole capture when the store holds only one
 * time window of it (analysis/wread.h): every part then has the same time
 * base, totals and thread metadata as when the whole capture is in memory.
 */
struct kx_whole {
	uint64_t first_ts; /* ns, the earliest ioctl start of the capture (UINT64_MAX: none) */
	uint64_t ioctls;   /* ioctl events of the capture */
	uint64_t *threads; /* pid << 32 | tid of each thread with ioctls or annotations, sorted */
	size_t nthreads;
};

/*
 * What one window's analysis shows of the whole capture's device jobs when
 * the store holds one time window of a capture with job records: jobs
 * (the analysis' own) holds the window's jobs only, each job's submit the
 * index of its submitting call among the file's ioctls (>= 0, as in the
 * whole capture's store), that call possibly in an earlier window. The
 * outputs number jobs and calls as the whole capture's analysis does.
 */
struct kx_jobview {
	const uint64_t *job_id;        /* per jobs->jobs: its index in the whole capture's table */
	const struct kx_ioctl *submit; /* per jobs->jobs with submit >= 0: a copy of its submitting
	                                  call, dur its drawn length (the nesting rule's, ns) */
	const uint64_t *call_id;       /* per store ioctl: its index among the file's ioctls */
	const uint8_t *submitted; /* bitmap over store ioctls: submitted a job of the capture */
	const uint8_t *flow_from; /* bitmap over store ioctls: the source of a drawn flow */
	uint64_t njobs;           /* jobs of the whole capture */
	uint64_t job_events;      /* job records of the whole capture */
	uint64_t flows_dropped;   /* the whole capture's jobs with no flow drawn (flows.h) */
	uint64_t first_ns;        /* ns, the earliest job start or in-flight change (UINT64_MAX:
	                             none) */
};

struct kx_analysis {
	const struct kx_store *store;
	const struct kx_capinfo *ci; /* never NULL: an empty header when built without one */
	int has_ci;                  /* 0 when built without a capture header */
	struct kx_jobs *jobs;        /* device timelines, links, memory, anomalies */
	struct kx_timeline *timeline;
	struct kx_ctrstats *counters; /* perf counters inside calls, NULL when none */
	struct kx_ranges *ranges;     /* annotation ranges, nested with the timeline's ioctls */
	int ranges_lent;              /* ranges are another's (kx_analysis_lend_ranges) */
	int jobs_lent;                /* jobs are another's (kx_analysis_lend_jobs) */
	struct kx_read_loss loss;     /* what reading the record file lost (set by the caller) */
	const struct kx_whole *whole; /* set by the caller for one window of a capture, else NULL */
	const struct kx_jobview *jview; /* set by the caller for one window of a capture with
	                                   job records, else NULL */
	struct {
		uint8_t *from;    /* NULL, or the bitmap over store ioctls: the source of a drawn
		                     flow, found once for the outputs and parts of a file read
		                     whole (analysis/flows.h's kx_flows_keep) */
		uint64_t drawn;   /* jobs with a flow */
		uint64_t dropped; /* jobs with a submitting ioctl and no flow */
	} flows;
};

/*
 * Analyses s (ci may be NULL: no device mapping, span from the events).
 * Returns NULL with err set (what failed: out of memory, too many events).
 */
struct kx_analysis *kx_analysis_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                      char *err, size_t errlen);
void kx_analysis_free(struct kx_analysis *an);

/*
 * For one window of a capture (analysis/wread.h): the whole capture's
 * annotation ranges, paired as the file was read, replace those of the
 * window's store (which holds no annotation events). rg stays the
 * lender's: it must outlive an, which does not free it.
 */
void kx_analysis_lend_ranges(struct kx_analysis *an, struct kx_ranges *rg);

/*
 * The same for the device analysis of a capture without job records: the
 * whole capture's memory accounting (made from its memory ioctls alone,
 * which index jobs->store) replaces the window's. jobs stays the lender's.
 */
void kx_analysis_lend_jobs(struct kx_analysis *an, struct kx_jobs *jobs);

/* The whole capture's index of job k of an->jobs. */
static inline uint64_t kx_analysis_job_id(const struct kx_analysis *an, size_t k)
{
	return an->jview ? an->jview->job_id[k] : k;
}

/* The file's index of store ioctl i (its index in a whole capture's store). */
static inline uint64_t kx_analysis_call_id(const struct kx_analysis *an, size_t i)
{
	return an->jview ? an->jview->call_id[i] : i;
}

/* The submitting call of job k of an->jobs, NULL when it has none; *dur
 * its drawn length (ns). */
const struct kx_ioctl *kx_analysis_submitter(const struct kx_analysis *an, size_t k, uint64_t *dur);

/* True when store ioctl i submitted a job of the capture. */
int kx_analysis_submitted(const struct kx_analysis *an, size_t i);

/* Every warning of the analysed capture, in a fixed order: loss and hooks,
 * job anomalies, annotation anomalies, events the nesting rule shortened,
 * what the reader lost. */
void kx_analysis_warnings(const struct kx_analysis *an, kx_warn_fn fn, void *ctx);

#endif /* KX_ANALYSIS_H */
