/*
 * Time windows of an analysed capture for outputs whose consumers cap the
 * events of one run (XProf's trace viewer keeps 1,000,000; a serialized
 * XSpace must stay under 2 GiB). Owns the splitting rule: the events counted
 * are every timed event an output draws (ioctls, device jobs, annotation
 * ranges and marks, memory events, CPU samples and off-CPU intervals), each
 * placed by its start; the windows are consecutive, cover all time, and
 * hold at most `limit` events each, except when more than `limit` events
 * start in the same nanosecond (they are never separated). An event that
 * spans a cut belongs to the window where it starts.
 *
 * Memory is fixed (a histogram of KX_WINDOW_BUCKETS counts per level of
 * refinement), whatever the capture's length: the first level is filled
 * as the events pass, and a bucket holding more than `limit` events is
 * refined by another pass over the events (the analysis', or a record
 * file's) for its span.
 */
#ifndef KX_WINDOWS_H
#define KX_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

#define KX_WINDOW_BUCKETS 65536 /* histogram buckets per pass */

struct kx_window {
	uint64_t from_ns;           /* CLOCK_MONOTONIC ns, inclusive; 0 for the first window */
	uint64_t to_ns;             /* exclusive; 0 for the last window (no end) */
	uint64_t first_ns, last_ns; /* starts of its first and last event */
	size_t events;              /* events starting in it */
	size_t part;                /* a slice's window (index in w); a window's own index */
};

/*
 * The windows, and their slices: each window cut again, at bucket bounds,
 * into consecutive slices of at most `slice` events (with the same
 * exception), for an output written a slice at a time (a Chrome file: its
 * events in any order) whose memory is then a slice's, not a window's.
 * Unsliced (slice >= limit), the slices are the windows.
 */
struct kx_windows {
	struct kx_window *w;     /* in time order */
	size_t n;                /* windows: 1 when the capture fits */
	size_t total;            /* events counted, sum of the windows' */
	size_t passes;           /* passes over the events the plan took */
	struct kx_window *slice; /* in time order, each in window slice[i].part */
	size_t nslices;          /* 1 when the capture fits one window */
};

/*
 * Splits the capture into windows of at most limit events (limit 0: one
 * window, its events not counted), unsliced. 0, or -1 when out of memory
 * (err set).
 */
int kx_windows_plan(const struct kx_analysis *an, size_t limit, struct kx_windows *out, char *err,
                    size_t errlen);

/*
 * The same over any source of event starts (a record file read as a
 * stream: analysis/wread.h). The first level is a histogram the caller
 * fills as the events pass (kx_whist_see for each start): KX_WINDOW_BUCKETS
 * buckets of the narrowest power-of-two width that spans every start, so
 * it is the same for the same starts in any order. A bucket holding more
 * than limit events is counted again, finer, by passes over the source: its
 * walk hands every event's start to kx_wpass_see (0, or -1 with err set
 * when it cannot: the plan then fails).
 */
struct kx_whist;
struct kx_whist *kx_whist_new(void); /* NULL when out of memory */
void kx_whist_see(struct kx_whist *h, uint64_t ts);
void kx_whist_free(struct kx_whist *h);

struct kx_wpass {
	uint64_t lo, hi, width; /* counted span [lo, hi), bucket width (ns) */
	size_t nb;              /* buckets */
	size_t *count;          /* events per bucket */
	uint64_t *min, *max;    /* first and last start per bucket (ns) */
};
void kx_wpass_see(struct kx_wpass *p, uint64_t ts);

/*
 * The starts of the events an analysis makes of the records (jobs, memory
 * events, annotation ranges and marks; jobs and rg may be NULL), for a
 * source whose walk sees only the ioctls and samples (a record file read as
 * a stream, with the whole capture's analysed events kept apart).
 */
void kx_whist_see_analysed(struct kx_whist *h, const struct kx_jobs *jobs,
                           const struct kx_ranges *rg);
void kx_wpass_see_analysed(struct kx_wpass *p, const struct kx_jobs *jobs,
                           const struct kx_ranges *rg);

struct kx_wsource {
	int (*walk)(void *ctx, struct kx_wpass *p, char *err, size_t errlen);
	void *ctx;
};
/* slice: events per slice (0, or limit and above: unsliced); a bucket
 * holding more than slice events is counted again, finer. */
int kx_windows_plan_src(const struct kx_wsource *src, const struct kx_whist *h, size_t limit,
                        size_t slice, struct kx_windows *out, char *err, size_t errlen);
void kx_windows_free(struct kx_windows *w);

/* Of the n consecutive windows (or slices) w, in time order, the one
 * holding start ts: the last one starting at or before it (the first when
 * none does). hint: the one of the start before (most fall in it). */
size_t kx_windows_find(const struct kx_window *w, size_t n, uint64_t ts, size_t hint);

#endif /* KX_WINDOWS_H */
