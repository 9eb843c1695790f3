/*
 * Annotation ranges paired as a record file streams by: their summary rows
 * (analysis/ranges.h's rows, percentiles from a log-linear histogram) and
 * anomalies for the streamed report (analysis/sreport.h), with memory per
 * thread's open ranges, open cross-thread ranges and rows, not per event;
 * and, for the windowed conversion (analysis/wread.h), the ranges
 * themselves (out), 80 bytes each, not their events.
 *
 * Exactly what analysis/ranges.h makes of the same file in memory, or a
 * reason why not, found as the records pass (why). A thread's records
 * come in the order it made them (its ranges' pushes and pops, its calls
 * at their return), so a thread's open ranges are a stack (the pairing is
 * analysis/rangetrack.h's): a POP closes the top one, and an ioctl counts
 * for every range open on its thread. Reasons
 * (each is a case where the in-memory rule would pair, nest or attribute
 * differently, or where this order does not hold):
 *   - a thread's push, pop or ioctl before the end of what came before it
 *     on the thread (a range and a call would partially overlap), or at the
 *     same nanosecond as an ioctl's bound (the rule's tie order decides);
 *   - a pop that is not the top open range's, at or above its depth (a
 *     range whose pop was lost: in memory it stays open over the others);
 *   - a push no deeper than the top open range;
 *   - a cross-thread start whose (process, id) is open, or whose end came
 *     earlier without it; an end whose start has another time.
 * Ranges still open at the end are closed where their thread or process
 * ended (analysis/range_ends.h: the same facts as in memory), which is
 * never before one of its calls.
 * A pop deeper than every open range of its thread (its push was lost),
 * or an end with no open start, is counted as a lost begin, as in memory.
 */
#ifndef KX_SRANGES_H
#define KX_SRANGES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/range_ends.h"
#include "analysis/ranges.h"
#include "analysis/stats.h"
#include "model/annot.h"
#include "analysis/rangetrack.h"
#include "model/event.h"
#include "util/hashmap.h"

struct kx_sranges {
	const char *why;      /* the first reason the stream cannot pair exactly; NULL: it can */
	struct kx_stats rows; /* the annotation rows so far */
	struct kx_range_rows builder; /* finds the row of a name */
	struct kx_ranges_anomalies anom;
	uint64_t events;            /* annotation events */
	uint64_t found;             /* ranges and marks made (as kx_ranges.found) */
	struct kx_rangetrack track; /* open ranges (each with its row, ioctls, names) and
	                               each annotating thread's last times */
	uint64_t ended[16];         /* the range an end took out (track.stride bytes) */
	struct kx_hmap lost;        /* hash(pid, id, begin): ends whose start was not open */
	struct kx_range_ends ends;  /* where the ranges left open will end */
	/* Set by a caller that keeps the ranges themselves (the windowed
	 * conversion): each range and mark is appended to out as it closes
	 * (kx_ranges_add's order), names interned in strings, with the ioctls
	 * it held; at finish, the open ones and the counts. out is then for
	 * kx_ranges_finish. */
	struct kx_ranges *out;
	struct kx_store *strings;
	size_t out_cap;
};

void kx_sranges_init(struct kx_sranges *s);
/*
 * One annotation event (name, cat: its strings for PUSH, MARK, START; ""
 * else). last_end: ns, the end of the thread's last ioctl before it, NULL
 * when the thread has made none. 0, or -1 when out of memory.
 */
int kx_sranges_ann(struct kx_sranges *s, const struct kx_ann *a, const char *name, const char *cat,
                   const uint64_t *last_end);
/* One ioctl: counted for the ranges open on its thread. 0, or -1 when out of memory. */
int kx_sranges_ioctl(struct kx_sranges *s, const struct kx_ioctl *e);
/*
 * Once every record is in: what is still open is counted (closed where its
 * thread or process ended: tasks holds every task record of the capture,
 * for the exits), the rows are finished and moved to the end of sum. 0
 * (s->why may be set now), or -1 when out of memory.
 */
int kx_sranges_finish(struct kx_sranges *s, const struct kx_store *tasks, struct kx_stats *sum);
/* The counts of the ranges for an analysis made without them (rg's rows empty). */
void kx_sranges_counts(const struct kx_sranges *s, struct kx_ranges *rg);
void kx_sranges_free(struct kx_sranges *s);

#endif /* KX_SRANGES_H */
