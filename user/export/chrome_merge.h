/*
 * Merging kxprof's ioctls into another profiler's Chrome trace of the same
 * run (PyTorch's Kineto, torch.profiler ... export_chrome_trace): the input
 * is kept verbatim; kxprof's calls are added as "X" slices on their real
 * pid/tid (the rows Kineto gives its CPU operators), its annotation ranges
 * on the same rows and its device tracks as processes of their own (both as
 * kxprof's own Chrome trace, export/chrome.h, writes them), their ts in µs from the
 * trace's baseTimeNanoseconds (CLOCK_REALTIME; kxprof's CLOCK_MONOTONIC
 * stamps converted through the capture's clock syncs at start and stop).
 * Calls outside the trace's span (its first event's start to its last
 * event's end) are left out and counted; the counts and the clock offset go
 * into a top-level "kxprofMerge" member. The input may be gzipped; the
 * output is when its name ends in .gz.
 */
#ifndef KX_CHROME_MERGE_H
#define KX_CHROME_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

struct kx_merge_stats {
	uint64_t merged;        /* calls written */
	uint64_t before, after; /* calls left out: started before the span, ended after it */
	int64_t span_from_ns;   /* the trace's span, CLOCK_REALTIME ns */
	int64_t span_to_ns;
	int64_t offset_ns;       /* realtime - monotonic at the capture's start */
	uint64_t uncertainty_ns; /* of the clock syncs (the wider of start and stop) */
	/* kxprof's annotation ranges (and marks) and its device tracks' timed events
	 * (jobs, counters), taken from its own Chrome trace, counted the same way. */
	uint64_t ranges_merged, ranges_before, ranges_after;
	uint64_t dev_merged, dev_before, dev_after;
};

/* Reads the Chrome trace at in (read whole into memory), writes it with an's calls to out (temp
 * file renamed). 0, or -1 with err set (what failed, which file). */
int kx_chrome_merge(const struct kx_analysis *an, const char *in, const char *out,
                    struct kx_merge_stats *st, char *err, size_t errlen);

#endif /* KX_CHROME_MERGE_H */
