/*
 * One window's device jobs as its analysis shows them (a capture with job
 * records read in time windows, analysis/wread.h): a job table
 * (analysis/jobs.h) that is the whole capture's but for its jobs and
 * in-flight points, which are the window's (analysis/wjobs.h's part), and
 * the window's job view (analysis.h's kx_jobview) that numbers its jobs
 * and calls as the whole capture does. Lent to the window's analysis
 * (kx_analysis_lend_jobs, an->jview = &t->view), exporters drawing the
 * window's events from it draw what they draw of the window from the whole
 * capture's analysis.
 *
 * The table: the whole table's rings (each ring's first and count its
 * jobs in the window, in table order), devices (their figures the whole
 * capture's; depth the window's points; memory rows, borrowed), anomalies,
 * span and NVIDIA memory (borrowed); the store its memory rows index, the
 * whole table's. Memory: the window's jobs (the part's, borrowed), a
 * submitting call (88 bytes) and an index a job, and a copy of the rings and
 * devices.
 */
#ifndef KX_WJOBTAB_H
#define KX_WJOBTAB_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "analysis/jobs.h"
#include "analysis/wjobs.h"

struct kx_wjobtab {
	struct kx_jobs jobs;     /* the window's table (lend it) */
	struct kx_jobview view;  /* job_id and submit set; the rest the caller's */
	uint64_t *job_id;        /* per job: its index in the whole table */
	struct kx_ioctl *submit; /* per job: a copy of its submitting call (submit >= 0) */
};

/* The submitting call of a job: file call idx, with its drawn length in
 * *dur (ns). NULL when it cannot be found (then the table is not made). */
typedef const struct kx_ioctl *(*kx_wjobtab_call_fn)(void *ctx, uint64_t idx, uint64_t *dur);

/*
 * t for window part p (kx_wjobs_take; borrowed: it must outlive t) of the
 * capture whose whole table is o (kx_jobflow_finish's of the same feed:
 * rings, devices, anomalies, span, memory; borrowed), each submitting call
 * from call (NULL: the copy each job of p holds, kx_wjobs.call's). 0, or
 * -1 when out of memory or a call is not found (t freed).
 */
int kx_wjobtab_make(struct kx_wjobtab *t, const struct kx_jobs *o, const struct kx_wjobs_part *p,
                    kx_wjobtab_call_fn call, void *ctx);
void kx_wjobtab_free(struct kx_wjobtab *t);

#endif /* KX_WJOBTAB_H */
