/*
 * Statistics of a capture's calls: rows keyed by category ("ioctl/<driver>")
 * and ioctl name with count, errors (by errno), total, min, max, p50/p90/p99
 * and a log2 latency histogram, the time blocked off-CPU inside the calls,
 * and per job ring "<ring> exec" and "<ring> queue delay" rows under
 * "jobs/<device>". From a store (exact nearest-rank percentiles) or from a
 * snapshot of the live in-kernel aggregates (percentiles from the log2
 * buckets). Statistics only: export/summary.c sorts and renders them.
 */
#ifndef KX_STATS_H
#define KX_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobs.h"
#include "model/capinfo.h"
#include "model/store.h"
#include "util/hashmap.h"
#include "util/hist.h"
#include "util/llhist.h"

#define KX_STAT_ERRNO_SLOTS 32        /* distinct errnos kept per row; the rest are "other" */
#define KX_STAT_ERRNO_OTHER INT64_MIN /* the errno key of "other" */
#define KX_STAT_CAT_LEN     48

struct kx_errno_count {
	int64_t ret;    /* the negative return value (-errno), or KX_STAT_ERRNO_OTHER */
	uint64_t count; /* calls */
};

struct kx_stat_row {
	uint8_t drv;   /* enum kx_driver of an ioctl row */
	uint32_t cmd;  /* ioctl command of an ioctl row */
	uint32_t xfer; /* transfer command (multiplexed ioctls), else 0 */
	char *name;
	char cat[KX_STAT_CAT_LEN];
	uint64_t count, errors;   /* calls; calls that failed */
	uint64_t total, min, max; /* ns */
	uint64_t p50, p90, p99;   /* ns */
	uint64_t *durs;           /* ns, every call's duration (not from aggregates) */
	size_t ndurs, cap;        /* durations held, room */
	struct kx_llhist *lh;     /* streamed rows: the durations' histogram (no durs kept) */
	uint64_t *fine;           /* rows of live aggregates: KX_FINE_SLOTS calls per fine slot */
	struct kx_errno_count errs[KX_STAT_ERRNO_SLOTS];
	int nerrs;
	uint64_t hist[KX_HIST_SLOTS]; /* calls per log2 slot (util/hist.h) */
	uint64_t offcpu;              /* ns blocked (off-CPU) inside the calls */
	int job;                      /* a device ring row (jobs/<device>): no errors, no off-CPU */
	/* Annotation rows (analysis/ranges.h): no errors, no off-CPU. */
	int annot;          /* a range row: 1 with Ioctls and Device time below, 2 from live
	                       aggregates (not known) */
	int mark;           /* a row of marks: counts only, zero time */
	uint64_t ioctls;    /* ioctls the threads issued inside the ranges (nested included) */
	uint64_t device_ns; /* device time of the jobs those ioctls submitted, ns */
	uint64_t jobs;      /* those jobs (0: no device time known) */
};

struct kx_stats {
	struct kx_stat_row *rows; /* ioctl rows by (category, name), then job rows */
	size_t nrows;
	uint64_t stored;     /* ioctl events summarized */
	int offcpu_measured; /* sched_switch attached, or some ioctl blocked */
};

/*
 * Statistics of every ioctl of s and, when jobs is not NULL, of its job
 * rings; ci (may be NULL) tells whether off-CPU time was measured. 0, or -1
 * when out of memory (sum left empty).
 */
int kx_stats_build(struct kx_stats *sum, const struct kx_store *s, const struct kx_capinfo *ci,
                   const struct kx_jobs *jobs);

/*
 * Streaming: the same ioctl rows fed one event at a time, with memory per
 * row instead of per event. Each row keeps a log-linear histogram
 * (util/llhist.h) instead of its durations: count, errors, total, min, max,
 * off-CPU time and the log2 histogram are exact, p50/p90/p99 are within
 * 1/256 of the exact nearest-rank values. Job rows are not made here.
 */
struct kx_stats_acc {
	struct kx_hmap m; /* row key -> row index */
	size_t rcap;      /* rows' room */
};
#define KX_STATS_ACC_INIT                                                                          \
	{                                                                                          \
		KX_HMAP_INIT, 0                                                                    \
	}
/* One more ioctl into sum (zeroed before the first). 0, or -1 when out of
 * memory (sum and acc then only good for kx_stats_acc_finish to free). */
int kx_stats_acc_add(struct kx_stats *sum, struct kx_stats_acc *acc, const struct kx_ioctl *e);
/* Names, merges and ranks the rows once every event is in (ok 0: an
 * earlier failure, sum emptied); ci (may be NULL) tells whether off-CPU
 * time was measured. 0, or -1 with sum emptied. */
int kx_stats_acc_finish(struct kx_stats *sum, struct kx_stats_acc *acc, const struct kx_capinfo *ci,
                        int ok);

struct kx_agg_snapshot;
/* Statistics of live aggregates: same rows; Min/Max exact per key, p50/p90/p99
 * from the fine slots (within 1/16), no per-errno breakdown. 0, or -1 when out of
 * memory (sum left empty). */
int kx_stats_from_agg(struct kx_stats *sum, const struct kx_agg_snapshot *snap);

void kx_stats_free(struct kx_stats *sum);

/* Off-CPU time is measured: the capture attached sched_switch (ci NULL: not
 * known, 0). The live aggregates say it of their snapshots the same way. */
int kx_stats_offcpu_attached(const struct kx_capinfo *ci);

/* For rows made elsewhere (annotation rows, analysis/ranges.h): one more
 * call of dur ns that returned ret (0, or -1 when out of memory), and the
 * percentiles once every call is in (exact, or from the buckets when the
 * row holds no durations). */
int kx_stat_row_add(struct kx_stat_row *r, uint64_t dur, int64_t ret);
/* The same for a streamed row: the duration goes into the row's log-linear
 * histogram, not kept (percentiles within 1/256). */
int kx_stat_row_add_streamed(struct kx_stat_row *r, uint64_t dur, int64_t ret);
/* A row fed one value at a time that keeps its values while they number
 * fewer than max_exact (exact percentiles), then only the log-linear
 * histogram of the streamed rows (the values kept move into it;
 * percentiles within 1/256). 0, or -1 when out of memory. */
int kx_stat_row_add_bounded(struct kx_stat_row *r, uint64_t dur, size_t max_exact);
/* A row of live aggregates: KX_FINE_SLOTS counts (util/hist.h) join the
 * row's fine slots and its log2 histogram; *lo and *hi become the lowest and
 * highest values those slots can hold (untouched when all are empty). Count
 * and extremes are the caller's. 0, or -1 when out of memory. */
int kx_stat_row_add_fine(struct kx_stat_row *r, const uint64_t *fine, uint64_t *lo, uint64_t *hi);
void kx_stat_row_percentiles(struct kx_stat_row *r);
/* The job rows of jobs (NULL: none) appended to sum, as kx_stats_build
 * appends them (rows made elsewhere: the streamed report). 0, or -1 when
 * out of memory. */
int kx_stats_add_jobs(struct kx_stats *sum, const struct kx_jobs *jobs);
/* Frees what row r holds (name, durations, histogram). */
void kx_stat_row_free(struct kx_stat_row *r);
/* Moves every row of src to the end of dst (src emptied, its counts
 * dropped). 0, or -1 when out of memory (both unchanged). */
int kx_stats_append(struct kx_stats *dst, struct kx_stats *src);

#endif /* KX_STATS_H */
