/*
 * Annotation ranges (contract: ranges.h): the ranges as analysis/rangewalk.h
 * made them, sorted and indexed by thread; the anomalies worded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ranges.h"
#include "analysis/warnings.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/lbound.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

struct kx_range *kx_ranges_add(struct kx_ranges *rg, size_t *cap, const struct kx_ann *b, int kind)
{
	struct kx_range *r;

	if (kx_grow((void **)&rg->r, cap, rg->n, sizeof(*rg->r)))
		return NULL;
	r = &rg->r[rg->n++];
	memset(r, 0, sizeof(*r));
	r->begin = b->ts;
	r->pid = b->pid;
	r->tid = b->tid;
	r->name = b->name;
	r->cat = b->cat;
	r->depth = b->depth;
	r->id = kind == KX_RANGE_CROSS ? b->id : 0;
	r->kind = (uint8_t)kind;
	return r;
}

/* Thread ranges and marks by (tid, start, longer first as measured, ranges
 * before marks), then cross-thread ranges by (pid, start). */
static int range_cmp(const void *pa, const void *pb)
{
	const struct kx_range *a = pa, *b = pb;
	int ca = a->kind == KX_RANGE_CROSS, cb = b->kind == KX_RANGE_CROSS;
	uint32_t ka = ca ? a->pid : a->tid, kb = cb ? b->pid : b->tid;

	if (ca != cb)
		return ca - cb;
	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	if (a->dur_meas != b->dur_meas)
		return a->dur_meas > b->dur_meas ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->depth < b->depth ? -1 : a->depth > b->depth;
}

static int index_threads(struct kx_ranges *rg)
{
	size_t cap = 0;

	rg->cross_first = rg->n;
	rg->first_ts = UINT64_MAX;
	for (size_t i = 0; i < rg->n; i++) {
		struct kx_range *r = &rg->r[i];

		if (r->begin < rg->first_ts)
			rg->first_ts = r->begin;
		if (r->kind == KX_RANGE_CROSS) {
			if (rg->cross_first == rg->n)
				rg->cross_first = i;
			continue;
		}
		if (!rg->nthreads || rg->threads[rg->nthreads - 1].tid != r->tid) {
			if (kx_grow((void **)&rg->threads, &cap, rg->nthreads,
			            sizeof(*rg->threads)))
				return -1;
			rg->threads[rg->nthreads++] =
			        (struct kx_range_thread){r->tid, r->pid, i, 0};
		}
		rg->threads[rg->nthreads - 1].count++;
	}
	return 0;
}

struct kx_ranges *kx_ranges_new(const struct kx_store *strings, const struct kx_capinfo *ci)
{
	struct kx_ranges *rg = calloc(1, sizeof(*rg));

	if (!rg)
		return NULL;
	rg->first_ts = UINT64_MAX;
	rg->strings = strings;
	if (ci)
		rg->kernel = ci->ann;
	return rg;
}

int kx_ranges_finish(struct kx_ranges *rg)
{
	if (rg->n > 1)
		qsort(rg->r, rg->n, sizeof(*rg->r), range_cmp);
	if (index_threads(rg))
		return -1;
	rg->found = rg->n;
	return 0;
}

void kx_ranges_free(struct kx_ranges *rg)
{
	if (!rg)
		return;
	free(rg->r);
	free(rg->threads);
	free(rg);
}

static uint64_t thread_tid_at(const void *threads, size_t i)
{
	return ((const struct kx_range_thread *)threads)[i].tid;
}

const struct kx_range_thread *kx_ranges_thread(const struct kx_ranges *rg, uint32_t tid)
{
	size_t lo = rg ? kx_lbound(0, rg->nthreads, tid, thread_tid_at, rg->threads) : 0;

	return rg && lo < rg->nthreads && rg->threads[lo].tid == tid ? &rg->threads[lo] : NULL;
}

/* Copies of the library whose probes were not all attached. */
static void copy_warnings(const struct kx_ann_info *k, kx_warn_fn fn, void *ctx)
{
	char msg[512];

	for (uint32_t i = 0; i < k->ncopies && i < KX_ANN_MAX_COPIES; i++) {
		const struct kx_ann_copy *c = &k->copies[i];

		if (!c->why[0])
			continue;
		snprintf(msg, sizeof(msg), "annotation library %.*s: %.*s",
		         (int)strnlen(c->path, sizeof(c->path)), c->path,
		         (int)strnlen(c->why, sizeof(c->why)), c->why);
		fn(ctx, msg);
	}
}

void kx_ranges_warnings(const struct kx_ranges *rg, kx_warn_fn fn, void *ctx)
{
	const struct kx_ann_info *k;

	if (!rg)
		return;
	k = &rg->kernel;
	kx_warn_count(fn, ctx, k->dropped,
	              "annotation events dropped (ring buffer full): ranges have gaps; raise "
	              "--ringbuf-mb");
	kx_warn_count(
	        fn, ctx, rg->anom.open,
	        "annotation ranges still open at the end of the capture (pushed, never popped): "
	        "closed where their thread ended (its exit, else its last event), left out of the "
	        "statistics");
	kx_warn_count(
	        fn, ctx, rg->anom.open_cross,
	        "cross-thread annotation ranges never ended: closed where their process ended (its "
	        "threads' exits, else its last event), left out of the statistics");
	kx_warn_count(
	        fn, ctx, k->pop_no_push,
	        "annotation pops without a push on their thread (unbalanced, or pushed before the "
	        "capture): ignored");
	kx_warn_count(
	        fn, ctx, k->depth_overflow,
	        "annotation ranges nested deeper than " STR(KX_ANN_DEPTH) " levels: not recorded");
	kx_warn_count(
	        fn, ctx, k->end_no_start,
	        "cross-thread annotation range ends with no open start (ended twice, or started "
	        "before the capture): ignored");
	kx_warn_count(
	        fn, ctx, rg->anom.lost_begin,
	        "annotation range ends whose begin is not in the capture (lost or not stored): "
	        "ignored");
	kx_warn_count(fn, ctx, k->threads_full + k->ranges_full,
	              "annotation ranges not recorded: the kernel's table of open ranges was full");
	kx_warn_count(fn, ctx, k->name_faults, "annotation names could not be read: left empty");
	kx_warn_count(fn, ctx, k->more_copies, "more copies of the annotation library than listed");
	kx_warn_count(
	        fn, ctx, k->capped,
	        "copies of the annotation library (per process) not attached: past the capture's "
	        "cap of copies or uprobes; their annotations are not recorded");
	kx_warn_count(fn, ctx, rg->anom.shortened,
	              "annotation ranges partially overlapped an earlier event of their thread: "
	              "shortened "
	              "to nest in it");
	copy_warnings(k, fn, ctx);
}
