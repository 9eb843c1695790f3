/*
 * The parts of the Chrome trace exporter (export/chrome.h) and what they
 * share: the exporter's state and each part's entry points. Owned by the
 * chrome*.c files that write a trace; nothing outside them includes it.
 *   chrome.c         the writer: its output, the head and tail, the windows added
 *   chrome_json.c    the buffered JSON writer (chrome_json.h)
 *   chrome_warn.c    the warnings: collected once each, as events and in otherData
 *   chrome_meta.c    process and thread names, device tracks and ring threads
 *   chrome_calls.c   the ioctl slices, formatted in pieces on worker threads
 *   chrome_jobs.c    device timelines: job slices, flows, counters
 *   chrome_drm.c     DRM usage (record --drm-usage) counters
 *   chrome_annot.c   annotation ranges and marks
 *   chrome_samples.c CPU samples and off-CPU intervals (chrome_samples.h)
 *
 * Times: store stamps are CLOCK_MONOTONIC ns; an event's ts is
 * ts - first_ts + rem ns from baseTimeNanoseconds (CLOCK_REALTIME, rounded
 * down to a µs), written in µs with three decimals.
 */
#ifndef KX_CHROME_INT_H
#define KX_CHROME_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "analysis/threadnames.h"
#include "export/chrome_json.h"
#include "export/chrome_part.h"
#include "export/chrome_samples.h"

/* Device pseudo-processes: real pids stay below 2^22 (pid_max limit). */
#define DEV_PID_BASE  1000000000u
#define MANY_EVENTS   1000000
#define MAX_WARN      (KX_MAX_HOOKS + 16)
#define WARN_LEN      1024
#define LANE_TID_STEP 1000 /* tid of lane l of ring r: r + 1 + l * LANE_TID_STEP */

/* The exporter's state: the analysis it writes (a window's, for a part
 * written a window at a time) and what it has written. */
struct ctx {
	const struct kx_analysis *an;
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	const struct kx_timeline *tl; /* threads, first timestamp, resolved durations */
	int ndev;                     /* capinfo devices written (at most KX_MAX_DEVICES) */
	uint64_t first_ts;            /* ns, CLOCK_MONOTONIC: the trace's first event */
	int64_t base_ns;              /* baseTimeNanoseconds: ns, CLOCK_REALTIME */
	const struct kx_jobs *jobs;
	uint32_t devpid[KX_MAX_DEVICES]; /* pseudo-process of each capinfo device */
	uint32_t *jobpid;                /* pseudo-process of each job device */
	char warn[MAX_WARN][WARN_LEN];   /* the warnings, each once */
	int nwarn;
	struct kx_chrome_samples *smp;     /* CPU samples and off-CPU intervals */
	unsigned int flags;                /* KX_CHROME_* */
	struct kx_thread_names names;      /* threads renamed during the capture */
	uint64_t origin_ns;                /* ns, CLOCK_MONOTONIC: the time of ts 0 */
	const struct kx_chrome_part *part; /* the time window written; NULL: all */
	struct kx_chrome_part part_copy;   /* part points here */
	uint64_t rem;                      /* ns, first_ts's offset from baseTimeNanoseconds */
	int first;                         /* no event written yet */
	int nwarn_head;                    /* warnings written at the head */
	size_t nadded;                     /* windows added */
	uint64_t not_stored, job_events;   /* events, sums over the windows added */
};

/* Whether an event starting at ts is in the part written. */
static inline int in_part(const struct ctx *c, uint64_t ts)
{
	return !c->part || (ts >= c->part->from_ns && (!c->part->to_ns || ts < c->part->to_ns));
}

/* chrome_warn.c: a warning, once (the windows of a part may say the same);
 * the analysis' and the flows' warnings and what this exporter had to do
 * (0, or -1 out of memory); the warnings from the from-th on as events. */
void cr_warn_add(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cr_collect_warnings(struct ctx *c);
void cr_write_warn_events(struct wbuf *w, const struct ctx *c, int from, int *first);
/* otherData's member "warnings": all of them. */
void cr_write_warn_list(struct wbuf *w, const struct ctx *c);

/* chrome_meta.c: process and thread names of the host, then the device
 * tracks (c->devpid, c->jobpid set). 0, or -1 out of memory. */
int cr_write_metadata(struct wbuf *w, struct ctx *c, int *first);

/* chrome_calls.c: the ioctls of c's store in the part, each led by ",\n"
 * but the trace's first (0, or -1 out of memory; a write failure in w->err);
 * args.thread of an event of tid at ts made under an earlier name. */
int cr_write_ioctls(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem);
void cr_write_thread_name(struct wbuf *w, const struct ctx *c, uint32_t tid, uint64_t ts);

/* chrome_jobs.c: c->jobpid made and the time base moved to the jobs' first
 * event if earlier (0, or -1 out of memory); the job slices, flows and
 * counters. */
int cr_jobs_prepare(struct ctx *c);
void cr_write_jobs(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem);

/* chrome_drm.c: the DRM counters; the first row's start (UINT64_MAX: none). */
void cr_write_drm(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem);
uint64_t cr_drm_first_ts(const struct kx_store *s);

/* chrome_annot.c: the annotation ranges and marks in the part. */
void cr_write_annotations(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem);

#endif /* KX_CHROME_INT_H */
