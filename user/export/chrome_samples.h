/*
 * The samples of a capture in Chrome trace JSON (export/chrome.c writes
 * them with the rest of the trace):
 *   - each CPU sample an instant event on its thread ("ph":"i", "s":"t",
 *     category "cpu_sample", named after its leaf function, args: the stack
 *     root first and the traced call it was taken in), and each off-CPU
 *     interval a complete event ("X", "off-CPU") inside the slice of the
 *     ioctl it blocked in: Perfetto shows both under the thread's slices;
 *     one taken under another name than the thread's latest (before an
 *     exec or a rename) says that name in args.thread;
 *   - when asked (convert --chrome-stacks), the trace format's own
 *     "stackFrames" (the call tree, one node per frame in context: name,
 *     category, parent) and "samples" (cpu, pid, tid, ts, sf, weight) for
 *     the CPU samples. Viewers that find them (catapult's trace viewer,
 *     speedscope) show those samples alone, without the timeline, and
 *     speedscope weighs each by the gap to its thread's next sample: the
 *     timeline goes without them, and speedscope reads --speedscope.
 * Threads that only have samples get their thread_name metadata here.
 */
#ifndef KX_EXPORT_CHROME_SAMPLES_H
#define KX_EXPORT_CHROME_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

struct kx_chrome_samples;
struct wbuf; /* export/chrome_json.h */

/* The profiles of an analysed capture. NULL with err set when out of
 * memory; an object with nothing to write when the capture has no samples. */
struct kx_chrome_samples *kx_chrome_samples_new(const struct kx_analysis *an, char *err,
                                                size_t len);
/* The same profiles written for an, another window's analysis of the same
 * capture (analysis/wread.h: every window's store holds the capture's
 * tasks and borrows its samples, and an->whole is the same), after the
 * analysis cs was made from is gone. */
void kx_chrome_samples_rebind(struct kx_chrome_samples *cs, const struct kx_analysis *an);
/* Only the samples starting in [from_ns, to_ns) (CLOCK_MONOTONIC; to_ns 0:
 * no end) are written from now on; by default all are. */
void kx_chrome_samples_window(struct kx_chrome_samples *cs, uint64_t from_ns, uint64_t to_ns);
/* The earliest sample (CLOCK_MONOTONIC ns), UINT64_MAX when none. */
uint64_t kx_chrome_samples_first_ts(const struct kx_chrome_samples *cs);
/* The events into w, each preceded by a comma but where *first says none
 * was written yet (then cleared); ts are (ts - origin_ns) in µs. */
void kx_chrome_samples_events(const struct kx_chrome_samples *cs, uint64_t origin_ns, int *first,
                              struct wbuf *w);
/* The top-level members "stackFrames" and "samples" into w, each followed
 * by a comma (nothing when there are no CPU samples). */
void kx_chrome_samples_members(const struct kx_chrome_samples *cs, uint64_t origin_ns,
                               struct wbuf *w);
void kx_chrome_samples_free(struct kx_chrome_samples *cs);

#endif /* KX_EXPORT_CHROME_SAMPLES_H */
