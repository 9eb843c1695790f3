/*
 * Live aggregates of an aggregate-mode session (always-on profiling): reads
 * the in-kernel aggregation map into a named, key-sorted snapshot; diffs two
 * snapshots (rates); folds per-process rows; resets; forgets exited
 * processes. `kxprof top`, `kxprof
 * serve`, the Prometheus exposition and the live summary JSON all read
 * aggregates through this module.
 *
 * Precision: durations are kept as fine histograms (util/hist.h, which also
 * estimates their percentiles: slot midpoints, within 1/16 of the true
 * value, clamped to the exact min/max of the key where known).
 *
 * Kernel side (bpf/ioctl.bpf.c, run by capture/ioctl.c): an index hash
 * (key -> slot), an array of slot values and a queue of free slots. Deleting
 * a key (reset, exited process) takes it out of the index, bumps the
 * generation that makes threads drop the slot they keep, and recycles the
 * slot (cleared, back in the queue) a second later, when no program can
 * still hold it. This module asks the session for reads and deletions and
 * owns what user space makes of them.
 *
 * Reset semantics: a reset takes each key out of the index in one kernel
 * call (BPF_MAP_LOOKUP_AND_DELETE_ELEM), then reads its slot, so every
 * ioctl is counted in exactly one of the summaries before and after the
 * reset, except an ioctl whose exit updates the slot in the few
 * nanoseconds between its program's generation check and the read: that
 * one is lost (never counted twice). Resetting also frees the keys, so the
 * cardinality limit applies per reset period.
 */
#ifndef KX_AGGREGATE_H
#define KX_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "capture/session.h"
#include "model/agg.h"

struct kx_agg;

/* Wraps an open aggregate-mode session (the caller keeps owning it). by
 * must match the session's agg_by_pid/agg_by_cgroup. NULL when out of memory. */
struct kx_agg *kx_agg_new(struct kx_session *s, enum kx_agg_by by);
void kx_agg_free(struct kx_agg *a);

/* Reads every key into out (freed with kx_agg_snapshot_free); with reset,
 * deletes what it read (see the reset semantics above). Thread-safe. */
int kx_agg_snapshot(struct kx_agg *a, struct kx_agg_snapshot *out, int reset, char *err,
                    size_t len);
/* Replaces the traced devices (kx_session_set_devices), serialized with
 * snapshots, which label rows from the device list. */
int kx_agg_set_devices(struct kx_agg *a, const struct kx_device *d, int n, char *err, size_t len);
/* BY_PID: deletes the keys of processes that no longer exist (their counts
 * are dropped, so per-process series end). Returns the keys deleted. */
int kx_agg_prune_exited(struct kx_agg *a);
/* Copy of the session's capture facts (counters read now), serialized with
 * everything else that touches the session. */
void kx_agg_capinfo(struct kx_agg *a, struct kx_capinfo *out);

#endif /* KX_AGGREGATE_H */
