/*
 * Late annotation probes: whether the probes of a copy of
 * libkxprof_annotate.so attached in a process too late for what the copy
 * waited. A copy of a process launched with KX_ANN_WAIT_ENV
 * ("TRACER_PID:MAX_MS", in its environment) holds its constructor up to
 * MAX_MS for its probes, then goes on untraced (saying so on the program's
 * stderr only); a copy of another process does not wait. Given when the
 * loader reported the mapping and when the probes attached, this says
 * whether annotations may be missing and from when to when, for the
 * capture info (model/annot.h, struct kx_ann_late). Owns that rule and the
 * reading of the hold from /proc/PID/environ.
 *
 * For tests only: KX_ANN_TEST_DELAY_ENV (ms, in the recorder's or the
 * daemon's environment) makes the capture attach a newly mapped copy no
 * sooner than that long after the loader reported it, so that a test can
 * make the copy give up its wait deterministically. Never set it otherwise.
 */
#ifndef KX_CAPTURE_ANNWAIT_H
#define KX_CAPTURE_ANNWAIT_H

#include <stdint.h>

#include "model/annot.h"

#define KX_ANN_TEST_DELAY_ENV "KXPROF_TEST_ANN_ATTACH_DELAY_MS"
#define KX_ANN_WAIT_MAX_MS    10000 /* the longest hold a copy honours (plugin/annotate) */
/* A copy that does not wait is reported when its probes came this late, ms:
 * below it is the few ms a scan takes, which capture/annotate.h documents. */
#define KX_ANN_UNHELD_LATE_MS 100

/* The hold, ms, the process open at procdir asked its copies for (its
 * KX_ANN_WAIT_ENV, capped as the library caps it); 0 when it asked none or
 * its environment cannot be read. */
uint32_t kx_annwait_hold_ms(int procdir);

/*
 * Whether probes attached at attach_ns for a copy the loader reported at
 * map_ns, in a process that asked hold_ms, came too late: 1 with out's
 * times and hold filled (pid, comm and path are the caller's), else 0.
 * Times CLOCK_MONOTONIC ns.
 */
int kx_annwait_late(uint64_t map_ns, uint64_t attach_ns, uint32_t hold_ms, struct kx_ann_late *out);

/* KX_ANN_TEST_DELAY_ENV's value, ms (0 when unset or not a number). */
uint32_t kx_annwait_test_delay_ms(void);

#endif /* KX_CAPTURE_ANNWAIT_H */
