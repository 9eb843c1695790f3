/*
 * Summary of a capture (the summary format of specs/outputs.md): the
 * statistics of analysis/stats.h per category ("ioctl/<driver>") and name
 * (count, errors by errno, total, min, max, avg, p50/p90/p99, a log2
 * latency histogram), the device timelines and the warnings of the
 * capture's analysis, sorted and rendered as a table or JSON.
 */
#ifndef KX_SUMMARY_H
#define KX_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "model/capinfo.h"

enum kx_sort_key { KX_SORT_AVG = 0, KX_SORT_MIN, KX_SORT_MAX, KX_SORT_TOTAL, KX_SORT_COUNT };

struct kx_summary;

/* Summary of an analysed capture; the analysis must outlive it. NULL on out of memory. */
struct kx_summary *kx_summary_build(const struct kx_analysis *an);
/* The same from ioctl rows aggregated elsewhere (a streamed record file,
 * analysis/sreport.h): st's rows are taken over (st emptied); an analyses
 * what was kept besides (no ioctls: its jobs and ranges are empty). NULL
 * on out of memory (st then freed). */
struct kx_stats;
struct kx_summary *kx_summary_build_stats(const struct kx_analysis *an, struct kx_stats *st);
struct kx_agg_snapshot;
/* Summary of live in-kernel aggregates (kxprof serve): same keys and rows;
 * Min/Max exact per key, p50/p90/p99 from the fine slots (within 6.25%),
 * no per-errno breakdown (a warning says so); the capture time is
 * the time since the aggregates started or were last reset. */
struct kx_summary *kx_summary_from_agg(const struct kx_agg_snapshot *snap,
                                       const struct kx_capinfo *ci);
/* Adds the rows of live annotation aggregates (category "annotation[/<cat>]",
 * percentiles from the log2 buckets; which ioctls they hold is not known
 * live). 0, or -1 when out of memory. */
struct kx_annagg_snapshot;
int kx_summary_add_annagg(struct kx_summary *sum, const struct kx_annagg_snapshot *as);
/* Adds live job aggregates (kxprof serve with a job source): per device the
 * jobs, in flight and busy time, and the busy time that may be cut from it
 * (a warning names each device whose busy time is a lower bound). The
 * devices are copied. 0, or -1 when out of memory. */
struct kx_jobagg_snapshot;
int kx_summary_add_jobagg(struct kx_summary *sum, const struct kx_jobagg_snapshot *js);
void kx_summary_free(struct kx_summary *sum);
/* Parses "avg|min|max|total|count"; -1 when unknown. */
int kx_sort_key_parse(const char *s);
void kx_summary_sort(struct kx_summary *sum, enum kx_sort_key key, int ascending);
#define KX_TABLE_HIST 1u /* a log2 latency histogram under each row */
#define KX_TABLE_WIDE 2u /* every column (Min, p90, Blocked and On-CPU times), no width limit */
/*
 * Table: capture line (a live-aggregates line for kx_summary_from_agg;
 * figures the record file lost with its trailer, see kx_analysis.loss, print
 * as unknown, JSON null),
 * warnings (drops, skipped hooks of the traced devices, store limit), then
 * per category the rows: ioctl rows with Count, Errors, Total, Avg, p50,
 * p99, Max and the Blocked% share (when off-CPU time was measured), job
 * rows ("jobs/<device>") with Jobs, Total, Avg, p50, p99, Max. Times in a
 * unit chosen per value (ns, µs, ms, s). Within 120 columns unless
 * KX_TABLE_WIDE; flags: KX_TABLE_*.
 */
void kx_summary_print_table(const struct kx_summary *sum, FILE *f, unsigned int flags);
/* JSON: {"Time": {...}, "Memory": {...}, "Unit": {...}, "Jobs": {...}, "Capture": {...},
 * "Warnings": [...]}; Time also has "jobs/<device>" categories (see summary.c);
 * live job aggregates are "Live jobs" after "Unit". */
void kx_summary_print_json(const struct kx_summary *sum, FILE *f, int hist);
/* The same with more top-level keys: extra(ctx, f) writes them before
 * "Warnings", each as `  "Key": value,` and a line break. */
void kx_summary_print_json_ext(const struct kx_summary *sum, FILE *f, int hist,
                               void (*extra)(void *ctx, FILE *f), void *ctx);

#endif /* KX_SUMMARY_H */
