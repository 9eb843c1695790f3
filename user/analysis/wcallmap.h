/*
 * The calls a windowed read's device timelines took (analysis/wjobfeed.h),
 * found by their place among the file's calls (the name a whole store's
 * feed gives a job's submitting call) with their thread and number among
 * the thread's calls taken (from 1: the name the annotation ranges' walk
 * gives them, analysis/rangewalk.h), so that a job counted names its call
 * to the ranges around it (analysis/wread.c). Each thread's last
 * KX_JOBFLOW_RECENT calls are found (a job record links to one of them, or
 * to a later call: jobflow.h); a call kept (kx_wcallmap_add's keep) is
 * found while a job counted later may still link to it: until the
 * timelines' sweeps pass its end by more than the submit link's window (as
 * the walk forgets it), at most KX_WCALLMAP_MAX calls back from the latest
 * place (past that the oldest goes: a job of it is a reason,
 * kx_wcallmap_find says so).
 *
 * Memory: 24 bytes a call kept (a ring over the places from the oldest
 * kept to the latest), and 136 bytes a thread.
 */
#ifndef KX_WCALLMAP_H
#define KX_WCALLMAP_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobflow.h"
#include "model/event.h"
#include "util/tidtab.h"

#define KX_WCALLMAP_MAX ((size_t)1 << 22) /* places kept at most (a power of 2) */

struct kx_wcallmap_ent;

struct kx_wcallmap {
	struct kx_tidtab threads;     /* per thread: its calls taken, its last ones */
	struct kx_wcallmap_ent *ring; /* place p at ring[p % cap], for p in [lo, hi) */
	size_t cap;                   /* a power of 2, 0: none yet */
	uint64_t lo, hi;              /* the places kept: from the oldest to past the latest */
	uint64_t lost;                /* places below it let go for the bound (0: none) */
};

void kx_wcallmap_init(struct kx_wcallmap *m);
/* Call e, at place idx, the next of its thread the timelines took: counted,
 * and kept when keep (a call not kept is not found). 0, or -1 when out of
 * memory. */
int kx_wcallmap_add(struct kx_wcallmap *m, const struct kx_ioctl *e, uint64_t idx, int keep);
/* The timelines swept the jobs starting before swept_ns: the calls that
 * ended more than the link window before it are let go. */
void kx_wcallmap_forget(struct kx_wcallmap *m, uint64_t swept_ns);
/* The call at place idx of thread *tid: 1 with its thread and number, 0
 * when not found (let go for the bound: *lost set, or as no job may link
 * to it). */
int kx_wcallmap_find(const struct kx_wcallmap *m, uint64_t idx, uint32_t *tid, uint64_t *n,
                     int *lost);
void kx_wcallmap_free(struct kx_wcallmap *m);

#endif /* KX_WCALLMAP_H */
