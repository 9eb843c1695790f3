/*
 * Snapshots of live aggregates: per key (device, driver, ioctl and, when
 * split, process or cgroup) the call count, errors, time and the fine
 * latency histogram of the kernel's aggregation maps (bpf/kxprof.h, slot rule
 * in util/hist.h), named for display; and of the live job and annotation
 * aggregates.
 * live/ makes them from a running session; the exporters (Prometheus, the
 * live summary) read them.
 */
#ifndef KX_MODEL_AGG_H
#define KX_MODEL_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "kxprof.h"
#include "model/annot.h"

/* How rows are split beyond (device, driver, ioctl). */
enum kx_agg_by { KX_AGG_BY_NONE = 0, KX_AGG_BY_PID, KX_AGG_BY_CGROUP };

struct kx_agg_row {
	struct kx_agg_key key;
	uint64_t count; /* sum of the fine slots */
	uint64_t errors;
	uint64_t sum_ns;
	uint64_t offcpu_ns;
	uint64_t min_ns, max_ns;      /* exact per key; 0 when unknown (diffs, merges of diffs) */
	uint64_t fine[KX_FINE_SLOTS]; /* calls per fine slot (util/hist.h; log2: their sums) */
	char driver[24];              /* "kvm", "amdgpu" */
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
	uint64_t bpf_missed;     /* runs of the programs the kernel skipped (cumulative) */
	uint64_t job_done_lost;  /* block completions that never reached the program (cumulative) */
	struct kx_agg_row *rows; /* sorted by key */
	size_t nrows;
};

/* Live job aggregates (live/jobagg.c): per (device, ring) histograms of queue
 * delay and exec time, and per device the jobs seen, completed and in flight
 * and busy time. */
struct kx_jobagg_series {
	char device[48]; /* "loop0", "gpu_scheduler" */
	char ring[16];   /* the record's ring name, "default" when it has none */
	uint64_t queue_slots[KX_HIST_SLOTS], queue_sum_ns;
	uint64_t exec_slots[KX_HIST_SLOTS], exec_sum_ns;
};

struct kx_jobagg_dev {
	char device[48];
	uint64_t jobs;        /* jobs seen (since the last reset) */
	uint64_t completed;   /* jobs done (since the last reset) */
	uint64_t inflight;    /* jobs queued or running now */
	uint64_t busy_ns;     /* cumulative, up to the snapshot time */
	uint64_t busy_cut_ns; /* at most this much busy time is missing from busy_ns: the
	                       * parts of late intervals cut at intervals already folded
	                       * in (live/jobagg.h); 0: busy_ns is exact */
};

struct kx_jobagg_snapshot {
	struct kx_jobagg_series *series; /* in order of first appearance */
	size_t nseries;
	struct kx_jobagg_dev *devs;
	size_t ndevs;
	uint64_t overflow; /* jobs lost to the bounds (cumulative) */
	uint64_t pending;  /* jobs open in the table (not done) */
};

/* Live annotation aggregates (live/annagg.c): per range name and category
 * the count and a fine histogram of range durations (util/hist.h); per mark
 * name, the count. */
struct kx_annagg_series {
	char name[KX_ANN_NAME_MAX];
	char cat[KX_ANN_CAT_MAX]; /* "" when none */
	int mark;                 /* a mark: count only */
	uint64_t count;
	uint64_t sum_ns, min_ns, max_ns; /* min/max 0 when count is 0 */
	uint64_t fine[KX_FINE_SLOTS];    /* ranges per fine slot */
};

struct kx_annagg_snapshot {
	struct kx_annagg_series *series; /* in order of first appearance */
	size_t nseries;
	uint32_t max_series; /* the limit */
	uint64_t overflow;   /* ranges and marks not aggregated: series limit (cumulative) */
	uint64_t lost;       /* ends whose begin was not seen: begun before the start or a
	                        reset, or evicted from a full table (cumulative) */
};

/* Sorts rows by key. */
void kx_agg_snapshot_sort(struct kx_agg_snapshot *snap);
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

#endif /* KX_MODEL_AGG_H */
