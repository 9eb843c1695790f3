/*
 * speedscope's own file format (https://www.speedscope.app/file-format-schema.json):
 * one frame table shared by every profile ("shared.frames": name, and the
 * module or category as "file"), then per thread, by process and thread id:
 *   - an evented profile ("type": "evented", unit nanoseconds) of its
 *     ioctls ("[driver] IOCTL", the frame CPU stacks hold for the call),
 *     annotation ranges (file "annotation" or "annotation/<category>";
 *     marks have no length and are left out) and off-CPU intervals
 *     ("off-CPU"): open ("O") and close ("C") events, properly nested by the
 *     timeline's one rule (analysis/timeline.h: an event that partially
 *     overlaps an enclosing one is cut to end with it; ranges enclose
 *     ioctls of the same start and length, ioctls their off-CPU intervals);
 *   - a sampled profile ("type": "sampled") of its CPU samples, each
 *     weighted by the sampling period in nanoseconds, in time order, with
 *     the stacks of analysis/profile.h (root first, the driver-call frame
 *     between user and kernel frames), the same frames as pprof and folded
 *     stacks;
 *   - a sampled profile of its off-CPU intervals, each weighted by its time
 *     away (nanoseconds).
 * Times ("at", "startValue", "endValue" of the evented profiles) are ns
 * after the capture's first event, so every thread's profile lines up.
 * A profile is named "<thread name> (pid P, tid T): ..." after what it holds;
 * a thread whose samples were taken under several names (an exec, a
 * rename) has a sampled profile per name, each named after it.
 */
#ifndef KX_EXPORT_SPEEDSCOPE_H
#define KX_EXPORT_SPEEDSCOPE_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/analysis.h"

/* Writes the speedscope file of the analysed capture to f. 0, or -1 out of memory (err set). */
int kx_speedscope_print(const struct kx_analysis *an, FILE *f, char *err, size_t len);
/* The same into path ("-": standard output), a temporary file renamed
 * into place when complete. 0, or -1 with err. */
int kx_speedscope_write(const struct kx_analysis *an, const char *path, char *err, size_t len);

#endif /* KX_EXPORT_SPEEDSCOPE_H */
