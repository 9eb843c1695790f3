/*
 * Merging kxprof's capture into another profiler's XSpace of the same run
 * (TensorFlow's or JAX's .xplane.pb): the input's bytes are kept as they
 * are, its planes and lines in their order; kxprof's host events (ioctls
 * and annotation ranges, as the XSpace writer export/xspace.h makes them)
 * are appended to the /host:CPU line of their thread, and kxprof's device
 * planes are added after the input's planes.
 *
 * A thread's line: the input's line whose id is std::hash of the thread's
 * pthread_t (TensorFlow 2.21, JAX 0.10: util/stdhash.h; the record keeps a
 * thread's pthread_t from its first traced ioctl), else the line whose id
 * is its tid, else a new line with id = tid named after the thread.
 *
 * Times: kxprof's CLOCK_MONOTONIC stamps go to CLOCK_REALTIME through the
 * capture's clock sync (as in the XSpace writer), then onto the input's
 * time base: the "Task Environment" plane's profile_start_time plus a
 * line's timestamp_ns (ns), offsets in ps. Events outside the input's span
 * (profile_start_time to profile_stop_time) are left out and counted.
 */
#ifndef KX_XSPACE_MERGE_H
#define KX_XSPACE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

struct kx_xmerge_stats {
	uint64_t host_merged;             /* host events (ioctls, ranges) written */
	uint64_t host_before, host_after; /* left out: starting before the span, ending after it */
	uint64_t dev_merged;              /* device plane events written */
	uint64_t dev_before, dev_after;
	uint32_t lines_matched; /* kxprof's thread lines put on a line of the input */
	uint32_t lines_new;     /* added as lines of their own */
	uint32_t planes_added;  /* kxprof's device planes */
	int64_t span_from_ns;   /* profile_start_time, CLOCK_REALTIME ns */
	int64_t span_to_ns;     /* profile_stop_time */
};

/* Reads the XSpace at in, writes it with an's events to out (temp file
 * renamed). 0, or -1 with err set (what failed, which file). */
int kx_xspace_merge(const struct kx_analysis *an, const char *in, const char *out,
                    struct kx_xmerge_stats *st, char *err, size_t errlen);

#endif /* KX_XSPACE_MERGE_H */
