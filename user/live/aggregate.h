/*
 * Live aggregates of an aggregate-mode session (always-on profiling): reads
 * the in-kernel aggregation map into a named, key-sorted snapshot; diffs two
 * snapshots (rates); folds per-process rows; resets; forgets exited
 * processes. `kxprof top`, `kxprof
 * serve`, the Prometheus exposition and the live summary JSON all read
 * aggregates through this module.
 *
 * Precision: durations are kept as log2 histograms (util/hist.h, which also
 * estimates their percentiles: bucket upper bounds, at most a factor 2 above
 * the true value, clamped to the exact min/max of the key where known).
 *
 * Kernel side (bpf/ioctl.bpf.c): an index hash (key -> slot), an array of
 * slot values and a queue of free slots, which kx_agg_maps_init fills at
 * load. Deleting a key (reset, exited process) takes it out of the index,
 * bumps the generation that makes threads drop the slot they keep, and
 * recycles the slot (cleared, back in the queue) a second later, when no
 * program can still hold it.
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

#include "kxprof.h"
#include "capture/session.h"

/* How rows are split beyond (device, driver, ioctl). */
enum kx_agg_by { KX_AGG_BY_NONE = 0, KX_AGG_BY_PID, KX_AGG_BY_CGROUP };

struct kx_agg_row {
	struct kx_agg_key key;
	uint64_t count; /* sum of slots */
	uint64_t errors;
	uint64_t sum_ns;
	uint64_t offcpu_ns;
	uint64_t min_ns, max_ns; /* exact per key; 0 when unknown (diffs, merges of diffs) */
	uint64_t slots[KX_HIST_SLOTS];
	char driver[24]; /* "kvm", "amdgpu" */
	char device[64]; /* "/dev/kvm", "anon_inode:kvm-vcpu", "char 226:128 (amdgpu)" */
	char ioctl[64];  /* "KVM_RUN", "_IOWR('d',0x44,24)" */
	char comm[16];   /* BY_PID: the process name ("" once it exited) */
};

struct kx_agg_snapshot {
	uint64_t mono_ns;           /* when read (CLOCK_MONOTONIC) */
	uint64_t since_mono_ns;     /* counting since: session start or the last reset */
	int64_t realtime_offset_ns; /* realtime = mono + offset */
	double interval_s;          /* diffs: seconds between the two snapshots, else 0 */
	enum kx_agg_by by;
	int offcpu_measured;     /* off-CPU time is measured (sched_switch attached) */
	uint32_t max_keys;       /* cardinality limit of the kernel map */
	uint64_t overflow;       /* ioctls not counted: key limit reached (cumulative) */
	uint64_t dropped;        /* ring-buffer records lost (cumulative; 0 unless records flow) */
	uint64_t inflight_full;  /* ioctls not traced: too many calls in flight (cumulative) */
	struct kx_agg_row *rows; /* sorted by key */
	size_t nrows;
};

struct kx_agg;

/* At load, before any program runs: every slot cleared and queued as free. */
int kx_agg_maps_init(const struct kx_agg_maps *m, uint32_t nslots, char *err, size_t len);

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

void kx_agg_snapshot_free(struct kx_agg_snapshot *snap);
/* out = cur - prev, row by row (keys only in prev are gone: skipped; keys
 * only in cur count from zero). min_ns/max_ns are 0 in the result. */
int kx_agg_diff(const struct kx_agg_snapshot *cur, const struct kx_agg_snapshot *prev,
                struct kx_agg_snapshot *out);
/* Folds rows that differ only in who (pid or cgroup) into one; by becomes NONE. */
int kx_agg_fold_who(struct kx_agg_snapshot *snap);

/* Folds rows whose names (driver, device, ioctl, who) are equal, e.g. two
 * sizes of one DRM command, so every label set is unique; rows end up sorted
 * by those names. Diff raw snapshots first (diffs match on keys). */
int kx_agg_fold_names(struct kx_agg_snapshot *snap);
/* Deep copy (free with kx_agg_snapshot_free). */
int kx_agg_snapshot_copy(const struct kx_agg_snapshot *in, struct kx_agg_snapshot *out);

#endif /* KX_AGGREGATE_H */
