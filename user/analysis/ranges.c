/*
 * Annotation ranges (contract: ranges.h): the store's events and calls
 * through analysis/rangewalk.h (pairing, nesting, attribution, anomalies:
 * the walk a stream makes, at once), then the per-thread index.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/range_ends.h"
#include "analysis/ranges.h"
#include "analysis/rangewalk.h"
#include "util/grow.h"
#include "util/hashmap.h"

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

/* ---- nesting with the ioctls, attribution ---- */

/* Device time of the jobs each ioctl submitted: ioctl index -> dev[] entry. */
struct devtime {
	struct kx_hmap map;
	struct {
		uint64_t ns, jobs;
	} * v;
	size_t n, cap;
};

static int devtime_build(struct devtime *d, const struct kx_jobs *jb)
{
	for (size_t k = 0; jb && k < jb->njobs; k++) {
		const struct kx_jobrec *j = &jb->jobs[k];
		uint64_t start = kx_jobrec_start(j);
		uint32_t *slot;
		int isnew;

		if (j->submit < 0 || !j->done_ts || j->done_ts < start)
			continue;
		slot = kx_hmap_put(&d->map, (uint64_t)j->submit, (uint32_t)d->n, &isnew);
		if (!slot)
			return -1;
		if (isnew) {
			if (kx_grow((void **)&d->v, &d->cap, d->n, sizeof(*d->v)))
				return -1;
			d->v[d->n].ns = d->v[d->n].jobs = 0;
			d->n++;
		}
		d->v[*slot].ns += j->done_ts - start;
		d->v[*slot].jobs++;
	}
	return 0;
}

/* The device time of the call at timeline position pos (rangewalk.h's dev). */
struct devctx {
	const struct devtime *dt;
	const struct kx_timeline *tl;
};

static uint64_t call_dev(void *ctx, uint32_t pos, uint64_t *jobs)
{
	const struct devctx *c = ctx;
	const uint32_t *d = kx_hmap_get(&c->dt->map, c->tl->order[pos]);

	*jobs = d ? c->dt->v[*d].jobs : 0;
	return d ? c->dt->v[*d].ns : 0;
}

/* The calls of the threads with ranges, in the timeline's order, with the
 * timeline's lengths; the other calls only end their threads. */
static int feed_calls(struct kx_rangewalk *w, const struct kx_store *s,
                      const struct kx_timeline *tl)
{
	for (size_t t = 0; tl && t < tl->nthreads; t++) {
		const struct kx_tl_thread *it = &tl->threads[t];
		struct kx_rt_thread *th = kx_rangetrack_thread(&w->track, it->tid, 0);

		for (size_t k = 0; k < it->count; k++) {
			size_t pos = it->first + k, idx = tl->order[pos];
			const struct kx_ioctl *e = kx_store_ioctl(s, idx);

			if (!th)
				kx_range_ends_ioctl(&w->ends, e->pid, e->tid, e->ts + e->dur);
			else if (kx_rangewalk_call(w, e, e->ts + kx_timeline_dur(tl, idx, e->dur),
			                           (uint32_t)pos))
				return -1;
		}
	}
	return 0;
}

/* The calls the ranges cut join the timeline's fixes. */
static int add_cuts(struct kx_timeline *tl, struct kx_rangewalk *w)
{
	if (!tl)
		return 0;
	for (size_t i = 0; i < w->ncuts; i++)
		w->cuts[i].idx = tl->order[w->cuts[i].pos];
	return kx_timeline_add_fixes(tl, w->cuts, w->ncuts);
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

struct kx_ranges *kx_ranges_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                  struct kx_timeline *tl, const struct kx_jobs *jobs)
{
	struct kx_ranges *rg = kx_ranges_new(s, ci);
	struct devtime dt = {KX_HMAP_INIT, NULL, 0, 0};
	struct devctx dc = {&dt, tl};
	size_t n = kx_store_ann_count(s);
	struct kx_rangewalk w;
	int rc = -1;

	if (!rg)
		return NULL;
	kx_rangewalk_init(&w);
	w.out = rg;
	w.window = SIZE_MAX;
	w.no_rows = w.keep_cuts = 1;
	w.dev = call_dev;
	w.dev_ctx = &dc;
	if (devtime_build(&dt, jobs))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (kx_rangewalk_ann(&w, kx_store_ann(s, i), NULL, NULL))
			goto out;
	if (feed_calls(&w, s, tl) || kx_rangewalk_finish(&w, s, NULL) || add_cuts(tl, &w) ||
	    kx_ranges_finish(rg))
		goto out;
	rg->events = n;
	rc = 0;
out:
	kx_rangewalk_free(&w);
	kx_hmap_free(&dt.map);
	free(dt.v);
	if (rc) {
		kx_ranges_free(rg);
		return NULL;
	}
	return rg;
}

void kx_ranges_free(struct kx_ranges *rg)
{
	if (!rg)
		return;
	free(rg->r);
	free(rg->threads);
	free(rg);
}

const struct kx_range_thread *kx_ranges_thread(const struct kx_ranges *rg, uint32_t tid)
{
	size_t lo = 0, hi = rg ? rg->nthreads : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rg->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return rg && lo < rg->nthreads && rg->threads[lo].tid == tid ? &rg->threads[lo] : NULL;
}

static void say(kx_warn_fn fn, void *ctx, uint64_t n, const char *what)
{
	char msg[512];

	if (!n)
		return;
	snprintf(msg, sizeof(msg), "%" PRIu64 " %s", n, what);
	fn(ctx, msg);
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
	say(fn, ctx, k->dropped,
	    "annotation events dropped (ring buffer full): ranges have gaps; raise --ringbuf-mb");
	say(fn, ctx, rg->anom.open,
	    "annotation ranges still open at the end of the capture (pushed, never popped): "
	    "closed where their thread ended (its exit, else its last event), left out of the "
	    "statistics");
	say(fn, ctx, rg->anom.open_cross,
	    "cross-thread annotation ranges never ended: closed where their process ended (its "
	    "threads' exits, else its last event), left out of the statistics");
	say(fn, ctx, k->pop_no_push,
	    "annotation pops without a push on their thread (unbalanced, or pushed before the "
	    "capture): ignored");
	say(fn, ctx, k->depth_overflow,
	    "annotation ranges nested deeper than " STR(KX_ANN_DEPTH) " levels: not recorded");
	say(fn, ctx, k->end_no_start,
	    "cross-thread annotation range ends with no open start (ended twice, or started "
	    "before the capture): ignored");
	say(fn, ctx, rg->anom.lost_begin,
	    "annotation range ends whose begin is not in the capture (lost or not stored): "
	    "ignored");
	say(fn, ctx, k->threads_full + k->ranges_full,
	    "annotation ranges not recorded: the kernel's table of open ranges was full");
	say(fn, ctx, k->name_faults, "annotation names could not be read: left empty");
	say(fn, ctx, k->more_copies, "more copies of the annotation library than listed");
	say(fn, ctx, k->capped,
	    "copies of the annotation library (per process) not attached: past the capture's "
	    "cap of copies or uprobes; their annotations are not recorded");
	say(fn, ctx, rg->anom.shortened,
	    "annotation ranges partially overlapped an earlier event of their thread: shortened "
	    "to nest in it");
	copy_warnings(k, fn, ctx);
}
