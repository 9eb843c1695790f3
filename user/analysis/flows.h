/*
 * Flow arrows from the ioctl that submitted a job to the job on its device
 * track, and the one rule XSpace and Chrome draw them by: a flow runs
 * forward in time.
 *
 * A flow starts at the submit point, where the host thread submitted the
 * job: the job's queue event when it fired inside the submitting ioctl on
 * the calling thread (a GPU driver's queue tracepoint), else the ioctl's
 * enter. It finishes at the start of the job's device slice. A job whose
 * device slice starts before its submit point (device and host clocks that
 * disagree, or a wrong link) gets no flow: such jobs are counted, and the
 * exporters say how many in a warning (kx_flows_warnings).
 */
#ifndef KX_FLOWS_H
#define KX_FLOWS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

struct kx_flow {
	uint64_t from_ns; /* CLOCK_MONOTONIC ns: the submit point, inside the submitting ioctl */
	uint64_t to_ns;   /* CLOCK_MONOTONIC ns: the job's device slice start, >= from_ns */
};

/*
 * The flow of job k of an->jobs: 1 with *fl set when it is drawn; 0 when
 * the job has no submitting ioctl or starts on its device before its
 * submit point.
 */
int kx_job_flow(const struct kx_analysis *an, size_t k, struct kx_flow *fl);

struct kx_flows {
	uint8_t *from;    /* bitmap over store ioctls: the source of at least one drawn flow */
	size_t nioctls;   /* bits in from */
	uint64_t drawn;   /* jobs with a flow */
	uint64_t dropped; /* jobs with a submitting ioctl and no flow (started before the submit) */
};

/* Every flow of an (one window's, analysis.h's kx_jobview: its sources
 * and the whole capture's count not drawn, as given). 0, or -1 when out of
 * memory (fl left empty). */
int kx_flows_build(struct kx_flows *fl, const struct kx_analysis *an);
void kx_flows_free(struct kx_flows *fl);

/* Finds an's flows once for every output and part that follows
 * (kx_flows_build then copies them), kept until kx_analysis_free. 0, or -1
 * when out of memory (each output then finds them again). */
int kx_flows_keep(struct kx_analysis *an);

/* True when store ioctl i is the source of a drawn flow. */
static inline int kx_flows_from(const struct kx_flows *fl, size_t i)
{
	return i < fl->nioctls && (fl->from[i / 8] >> (i % 8) & 1);
}

/* The warning of the flows not drawn (none when every flow is). */
void kx_flows_warnings(const struct kx_flows *fl, kx_warn_fn fn, void *ctx);

#endif /* KX_FLOWS_H */
