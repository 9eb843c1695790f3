/*
 * Warnings of a capture, worded once for every output (report, XSpace,
 * Chrome JSON, live summaries): loss counters, hooks that did not attach
 * (grouped per family so a machine without GPUs does not print a page of
 * them), job-analysis anomalies, and the partial overlaps the timeline's
 * nesting rule resolved. Exporters add only their own.
 */
#ifndef KX_WARNINGS_H
#define KX_WARNINGS_H

#include <stdint.h>

#include "model/capinfo.h"

struct kx_jobs;
struct kx_timeline;

typedef void (*kx_warn_fn)(void *ctx, const char *msg);

/*
 * Loss and hook warnings of ci. not_stored: events refused by a memory limit,
 * the larger of the capture's and the reader's (0 to use ci's alone).
 */
void kx_capture_warnings(const struct kx_capinfo *ci, uint64_t not_stored, kx_warn_fn fn,
                         void *ctx);

/* Anomalies found while pairing and linking jobs (jobs may be NULL). */
void kx_jobs_warnings(const struct kx_jobs *jobs, kx_warn_fn fn, void *ctx);

/* Events the nesting rule shortened (timeline may be NULL). */
void kx_timeline_warnings(const struct kx_timeline *tl, kx_warn_fn fn, void *ctx);

#endif /* KX_WARNINGS_H */
