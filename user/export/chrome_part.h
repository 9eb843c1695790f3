/*
 * What a Chrome trace export takes (export/chrome.h): the part of a split
 * capture it writes and what it holds besides the timeline. Its own header
 * so that the exporter's parts (chrome_int.h) see it without the entry
 * points.
 */
#ifndef KX_CHROME_PART_H
#define KX_CHROME_PART_H

#include <stddef.h>
#include <stdint.h>

/* One part of a capture split by time (analysis/windows.h): the events
 * starting in [from_ns, to_ns) (CLOCK_MONOTONIC; to_ns 0: no end). */
struct kx_chrome_part {
	size_t index, count;     /* part index (1-based) of count */
	uint64_t from_ns, to_ns; /* ns, CLOCK_MONOTONIC */
	size_t events;           /* events the window holds (analysis/windows.h) */
};

/* What a trace holds besides the timeline (flags of kx_chrome_write_part
 * and kx_chrome_open). */
enum {
	/* The trace format's top-level "stackFrames" and "samples" members
	 * (export/chrome_samples.h). Off by default: a viewer that finds them
	 * (speedscope, catapult) shows the CPU samples alone and drops the
	 * timeline; the instant samples on the threads are written either way. */
	KX_CHROME_STACKS = 1u << 0,
};

#endif /* KX_CHROME_PART_H */
