/*
 * Annotation ranges of a capture: the store's annotation events
 * (model/annot.h) paired into thread ranges (a PUSH and its POP: the
 * kernel pairs them and a POP says when its range began), cross-thread
 * ranges (START and END of one id in one process) and marks, with the
 * ioctls each thread range holds. Every exporter and the summary read them
 * from here.
 *
 * Nesting: each thread's ranges and ioctls go through the one rule of
 * analysis/timeline.h together (ranges first at equal start and length):
 * a range or ioctl that partially overlaps an earlier one of its thread is
 * shortened to nest (the ioctls' fixes join the timeline's, so every output
 * agrees, and the warning counts them). Live captures never need it: a
 * thread's ranges and calls follow one another.
 *
 * Attribution: an ioctl counts for every thread range open around it on
 * its thread (the enclosing ones of nested ranges included), with the
 * device time of the jobs it submitted (analysis/jobs.h: exec time of
 * completed jobs linked to it). Ioctls outside every range count for none.
 * Cross-thread ranges are not attributed.
 *
 * Anomalies (counted, reported): thread ranges still open at the end of
 * the capture (closed where their thread ended, analysis/range_ends.h,
 * still flagged open, left out of the statistics), cross-thread ranges
 * never ended (closed where their process ended, the same), pops and ends whose begin record is not
 * in the capture (lost in the ring buffer, or not stored), and the kernel's own counts (struct
 * kx_ann_info: pops without a push, too deep nesting, ends without a start, full tables, unreadable
 * names).
 */
#ifndef KX_RANGES_H
#define KX_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobs.h"
#include "analysis/stats.h"
#include "analysis/timeline.h"
#include "analysis/warnings.h"
#include "model/capinfo.h"
#include "model/store.h"
#include "util/hashmap.h"

enum kx_range_kind {
	KX_RANGE_THREAD = 1, /* push .. pop on one thread */
	KX_RANGE_MARK,       /* a point on one thread (dur 0) */
	KX_RANGE_CROSS,      /* start .. end, on any threads of one process */
};

struct kx_range {
	uint64_t begin;     /* ns, CLOCK_MONOTONIC */
	uint64_t dur;       /* ns: the nesting rule's (open ranges: to their thread's or
	                       process's end, analysis/range_ends.h) */
	uint64_t dur_meas;  /* ns as measured (statistics use it) */
	uint64_t id;        /* cross-thread: the range id; else 0 */
	uint64_t ioctls;    /* thread ranges: ioctls of the thread inside it */
	uint64_t device_ns; /* device time of the jobs those ioctls submitted, ns */
	uint64_t jobs;      /* those jobs (completed ones) */
	uint32_t pid;
	uint32_t tid;     /* its thread; cross-thread: the thread that started it */
	uint32_t end_tid; /* cross-thread: the thread that ended it (0: open) */
	uint32_t name;    /* store string id (kx_store_ann_str) */
	uint32_t cat;     /* store string id of its category, 0: none */
	uint16_t depth;   /* thread ranges: level, 1 = outermost; marks: ranges open */
	uint8_t kind;     /* enum kx_range_kind */
	uint8_t open;     /* still open at the end of the capture */
};

/* A thread's ranges and marks: kx_ranges.r[first .. first + count), by start. */
struct kx_range_thread {
	uint32_t tid, pid;
	size_t first, count;
};

struct kx_ranges_anomalies {
	uint64_t open;       /* thread ranges open at the end of the capture */
	uint64_t open_cross; /* cross-thread ranges never ended */
	uint64_t lost_begin; /* pops and ends whose push or start is not in the capture */
	uint64_t shortened;  /* ranges the nesting rule shortened */
};

struct kx_ranges {
	struct kx_range *r;              /* thread ranges and marks by (tid, start), then
	                                    cross-thread ranges by (pid, start) */
	size_t n;                        /* entries of r */
	size_t cross_first;              /* index of the first cross-thread range */
	struct kx_range_thread *threads; /* by tid */
	size_t nthreads;
	struct kx_ranges_anomalies anom;
	struct kx_ann_info kernel;      /* the capture's own counts (capinfo) */
	uint64_t first_ts;              /* ns, earliest start; UINT64_MAX when none */
	uint64_t events;                /* annotation events read */
	uint64_t found;                 /* ranges and marks made of them (n, when r holds them) */
	const struct kx_store *strings; /* the store whose strings name and cat are ids of */
};

/*
 * The ranges as analysis/rangewalk.h makes them (its kx_ranges_build for
 * it, the windowed conversion as its file streams): empty ranges whose
 * names are strings of strings and kernel counts from ci (may be NULL);
 * each range or mark appended from the event that began it (b: its ts,
 * pid, tid, depth, id, and name and cat as string ids; kind: enum
 * kx_range_kind; cap: the caller's room count, 0 at first): closed ranges
 * and marks in the order of the events that end or make them, then the
 * open ones in the order of their begins, with the fields the walk sets;
 * then finished: sorted, indexed by thread. NULL or -1 when out of memory.
 */
struct kx_ranges *kx_ranges_new(const struct kx_store *strings, const struct kx_capinfo *ci);
struct kx_range *kx_ranges_add(struct kx_ranges *rg, size_t *cap, const struct kx_ann *b, int kind);
int kx_ranges_finish(struct kx_ranges *rg);
void kx_ranges_free(struct kx_ranges *rg);

/* The ranges of thread tid, or NULL. */
const struct kx_range_thread *kx_ranges_thread(const struct kx_ranges *rg, uint32_t tid);

/* The anomalies, worded once for every output. */
void kx_ranges_warnings(const struct kx_ranges *rg, kx_warn_fn fn, void *ctx);

/*
 * The annotation rows of a summary, built one range or mark at a time (the
 * in-memory ranges below, and the streamed ones, analysis/rangewalk.h): a row
 * per category ("annotation", or "annotation/<category>"), name and kind.
 */
struct kx_range_rows {
	struct kx_stats *sum; /* rows are appended to it */
	size_t first, cap;    /* sum's first annotation row; its rows' room */
	struct kx_hmap map;   /* row key -> row index */
};
void kx_range_rows_init(struct kx_range_rows *w, struct kx_stats *sum);
/* Index in sum->rows of the row of (category cat, name, mark or range),
 * appended when new (cat "": none). -1 when out of memory. Indexes stay
 * valid as rows are added; pointers do not. */
long kx_range_rows_get(struct kx_range_rows *w, const char *cat, const char *name, int mark);
/*
 * Once every range is in: rows no range or mark reached are removed (a
 * streamed range that never ended), percentiles (exact from durations, else
 * from the row's histogram), and a mark row sharing its name with a range
 * row says it is one: "<name> (mark)". 0, or -1 when out of memory; the map
 * is freed either way.
 */
int kx_range_rows_finish(struct kx_range_rows *w);

/*
 * Appends the summary rows of the ranges to sum: per category
 * ("annotation", or "annotation/<category>") and name, the closed ranges
 * (count, times, percentiles, Ioctls, Device time) and the marks (a row of
 * their own, zero time, named "<name> (mark)" when a range has the name).
 * 0, or -1 when out of memory.
 */
int kx_stats_add_ranges(struct kx_stats *sum, const struct kx_ranges *rg, const struct kx_store *s);

#endif /* KX_RANGES_H */
