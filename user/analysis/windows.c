/* Time windows of at most N events (contract: windows.h): histogram passes, greedy cuts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/windows.h"
#include "model/perfdata.h"
#include "util/grow.h"

/* c more starts in bucket b, the first at lo, the last at hi: its count,
 * first and last. An empty bucket's first and last are not read
 * (re-bucketing leaves stale ones). */
static inline void bucket_add(size_t *count, uint64_t *min, uint64_t *max, size_t b, size_t c,
                              uint64_t lo, uint64_t hi)
{
	if (!count[b] || lo < min[b])
		min[b] = lo;
	if (!count[b] || hi > max[b])
		max[b] = hi;
	count[b] += c;
}

void kx_wpass_see(struct kx_wpass *p, uint64_t ts)
{
	if (ts < p->lo || ts >= p->hi)
		return;
	bucket_add(p->count, p->min, p->max, (size_t)((ts - p->lo) / p->width), 1, ts, ts);
}

/* The analysis' own events (jobs, memory events, annotation ranges and
 * marks; jobs and rg may be NULL), by their starts, to fn. */
static void analysed_starts(const struct kx_jobs *jobs, const struct kx_ranges *rg,
                            void (*fn)(void *, uint64_t), void *ctx)
{
	for (size_t k = 0; jobs && k < jobs->njobs; k++)
		fn(ctx, kx_jobrec_start(&jobs->jobs[k]));
	for (size_t d = 0; jobs && d < jobs->ndevs; d++)
		for (size_t k = 0; k < jobs->devs[d].nmem; k++)
			fn(ctx, jobs->devs[d].mem[k].ts);
	for (size_t i = 0; rg && i < rg->n; i++)
		fn(ctx, rg->r[i].begin);
}

/* Every event the outputs draw, by its start, to fn. */
static void walk_starts(const struct kx_analysis *an, void (*fn)(void *, uint64_t), void *ctx)
{
	const struct kx_store *s = an->store;
	const struct kx_samples *smp = kx_store_samples(s);
	size_t n = kx_store_ioctl_count(s);

	for (size_t i = 0; i < n;) {
		size_t run;
		const struct kx_ioctl *e = kx_store_ioctl_run(s, i, &run);

		for (size_t k = 0; k < run; k++)
			fn(ctx, e[k].ts);
		i += run ? run : 1;
	}
	analysed_starts(an->jobs, an->ranges, fn, ctx);
	for (size_t i = 0; smp && i < kx_samples_count(smp); i++)
		fn(ctx, kx_samples_get(smp, i)->ts);
}

/* How many starts, the earliest and the latest (0 and 0 when none). */
struct extent {
	size_t n;
	uint64_t first, last;
};

static void see_extent(void *p, uint64_t ts)
{
	struct extent *x = p;

	bucket_add(&x->n, &x->first, &x->last, 0, 1, ts, ts);
}

static void see_pass(void *p, uint64_t ts)
{
	kx_wpass_see(p, ts);
}

static void see_hist(void *h, uint64_t ts)
{
	kx_whist_see(h, ts);
}

void kx_whist_see_analysed(struct kx_whist *h, const struct kx_jobs *jobs,
                           const struct kx_ranges *rg)
{
	analysed_starts(jobs, rg, see_hist, h);
}

void kx_wpass_see_analysed(struct kx_wpass *p, const struct kx_jobs *jobs,
                           const struct kx_ranges *rg)
{
	analysed_starts(jobs, rg, see_pass, p);
}

/* The analysis as a source of starts. */
static int walk(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	walk_starts(ctx, see_pass, p);
	return 0;
}

struct plan {
	const struct kx_wsource *src;
	size_t limit, slice; /* events per window, per slice */
	struct kx_windows *out;
	size_t cap, scap; /* windows, slices allocated */
	int oom;
	int failed; /* the source failed (err set) */
	char *err;
	size_t errlen;
};

/* The last of ws[*n] ends at lo, and a new one, empty, starts there. 0, or
 * -1 when out of memory. */
static int cut(struct kx_window **ws, size_t *n, size_t *cap, uint64_t lo)
{
	struct kx_window *w;

	if (kx_grow((void **)ws, cap, *n, sizeof(**ws)))
		return -1;
	(*ws)[*n - 1].to_ns = lo;
	w = &(*ws)[(*n)++];
	memset(w, 0, sizeof(*w));
	w->from_ns = lo;
	return 0;
}

/* c more events in w, first at min, last at max. */
static void add(struct kx_window *w, size_t c, uint64_t min, uint64_t max)
{
	if (!w->events)
		w->first_ns = min;
	w->last_ns = max;
	w->events += c;
}

/* c events starting in [lo, lo + width), first at min, last at max, in the
 * open window, or in a new one from lo when they would overflow it (and in
 * a new slice from lo then). */
static void take_window(struct plan *pl, uint64_t lo, size_t c, uint64_t min, uint64_t max)
{
	struct kx_windows *o = pl->out;
	const struct kx_window *w = &o->w[o->n - 1];

	if (w->events && w->events + c > pl->limit) {
		if (cut(&o->w, &o->n, &pl->cap, lo) || cut(&o->slice, &o->nslices, &pl->scap, lo)) {
			pl->oom = 1;
			return;
		}
		o->w[o->n - 1].part = o->n - 1;
		o->slice[o->nslices - 1].part = o->n - 1;
	}
	add(&o->w[o->n - 1], c, min, max);
	o->total += c;
}

/* The same events in the open slice, or in a new one from lo. */
static void take_slice(struct plan *pl, uint64_t lo, size_t c, uint64_t min, uint64_t max)
{
	struct kx_windows *o = pl->out;
	const struct kx_window *s = &o->slice[o->nslices - 1];

	if (s->events && s->events + c > pl->slice) {
		if (cut(&o->slice, &o->nslices, &pl->scap, lo)) {
			pl->oom = 1;
			return;
		}
		o->slice[o->nslices - 1].part = o->n - 1;
	}
	add(&o->slice[o->nslices - 1], c, min, max);
}

static void split(struct plan *pl, uint64_t lo, uint64_t hi, int slices_only);

/*
 * The c events of a bucket [lo, hi) of the given width, first at min, last
 * at max. The windows are cut between the buckets of the levels that hold
 * at most limit events each, whatever the slices: over the limit, the
 * bucket is counted again, finer. The slices are then cut between buckets
 * of at most slice events: a bucket within the limit but over the slice is
 * counted again, finer, for its slices alone (slices_only).
 */
static void bucket(struct plan *pl, int slices_only, uint64_t lo, uint64_t hi, uint64_t width,
                   size_t c, uint64_t min, uint64_t max)
{
	if (!slices_only && c > pl->limit && width > 1) {
		split(pl, lo, hi, 0);
		return;
	}
	if (!slices_only)
		take_window(pl, lo, c, min, max);
	if (c > pl->slice && width > 1)
		split(pl, lo, hi, 1);
	else if (!pl->oom)
		take_slice(pl, lo, c, min, max);
}

/* Counts the starts in [lo, hi) again, finer, each bucket to bucket(). */
static void split(struct plan *pl, uint64_t lo, uint64_t hi, int slices_only)
{
	struct kx_wpass p = {.lo = lo, .hi = hi};
	size_t nb = hi - lo < KX_WINDOW_BUCKETS ? (size_t)(hi - lo) : KX_WINDOW_BUCKETS;

	p.width = (hi - lo + nb - 1) / nb;
	p.nb = (size_t)((hi - lo + p.width - 1) / p.width);
	p.count = calloc(p.nb, sizeof(*p.count));
	p.min = calloc(p.nb, sizeof(*p.min));
	p.max = calloc(p.nb, sizeof(*p.max));
	if (!p.count || !p.min || !p.max) {
		pl->oom = 1;
		goto out;
	}
	if (pl->src->walk(pl->src->ctx, &p, pl->err, pl->errlen)) {
		pl->failed = 1;
		goto out;
	}
	pl->out->passes++;
	for (size_t b = 0; b < p.nb && !pl->oom && !pl->failed; b++) {
		uint64_t blo = lo + b * p.width, bhi = hi - blo > p.width ? blo + p.width : hi;

		if (p.count[b])
			bucket(pl, slices_only, blo, bhi, p.width, p.count[b], p.min[b], p.max[b]);
	}
out:
	free(p.count);
	free(p.min);
	free(p.max);
}

/* ---- the first level: a histogram that adapts its span to the starts ---- */

struct kx_whist {
	uint64_t lo;          /* bucket 0's start, a multiple of the width */
	unsigned int shift;   /* width 1 << shift ns */
	uint64_t first, last; /* the earliest and latest start seen */
	size_t total;
	size_t *count; /* KX_WINDOW_BUCKETS of each */
	uint64_t *min, *max;
	size_t *tcount; /* room to re-bucket into */
	uint64_t *tmin, *tmax;
};

struct kx_whist *kx_whist_new(void)
{
	struct kx_whist *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->count = calloc(KX_WINDOW_BUCKETS, sizeof(*h->count));
	h->min = calloc(KX_WINDOW_BUCKETS, sizeof(*h->min));
	h->max = calloc(KX_WINDOW_BUCKETS, sizeof(*h->max));
	h->tcount = calloc(KX_WINDOW_BUCKETS, sizeof(*h->tcount));
	h->tmin = calloc(KX_WINDOW_BUCKETS, sizeof(*h->tmin));
	h->tmax = calloc(KX_WINDOW_BUCKETS, sizeof(*h->tmax));
	if (!h->count || !h->min || !h->max || !h->tcount || !h->tmin || !h->tmax) {
		kx_whist_free(h);
		return NULL;
	}
	return h;
}

void kx_whist_free(struct kx_whist *h)
{
	if (!h)
		return;
	free(h->count);
	free(h->min);
	free(h->max);
	free(h->tcount);
	free(h->tmin);
	free(h->tmax);
	free(h);
}

/* The buckets again for the span [first, last]: the narrowest power-of-two
 * width whose aligned buckets hold it (never narrower than now), each old
 * bucket falling whole into a new one. */
static void rebucket(struct kx_whist *h, uint64_t first, uint64_t last)
{
	unsigned int shift = h->shift;
	uint64_t lo;

	while (shift < 63 && (last >> shift) - (first >> shift) >= KX_WINDOW_BUCKETS)
		shift++;
	lo = (first >> shift) << shift;
	memset(h->tcount, 0, KX_WINDOW_BUCKETS * sizeof(*h->tcount));
	for (size_t b = 0; h->total && b < KX_WINDOW_BUCKETS; b++) {
		size_t j;

		if (!h->count[b])
			continue;
		j = (size_t)((h->lo + ((uint64_t)b << h->shift) - lo) >> shift);
		bucket_add(h->tcount, h->tmin, h->tmax, j, h->count[b], h->min[b], h->max[b]);
	}
	memcpy(h->count, h->tcount, KX_WINDOW_BUCKETS * sizeof(*h->count));
	memcpy(h->min, h->tmin, KX_WINDOW_BUCKETS * sizeof(*h->min));
	memcpy(h->max, h->tmax, KX_WINDOW_BUCKETS * sizeof(*h->max));
	h->lo = lo;
	h->shift = shift;
}

void kx_whist_see(struct kx_whist *h, uint64_t ts)
{
	size_t b;

	if (!h->total) {
		h->first = h->last = ts;
		h->lo = ts;
		h->shift = 0;
	} else if (ts < h->lo || ((ts - h->lo) >> h->shift) >= KX_WINDOW_BUCKETS) {
		rebucket(h, ts < h->first ? ts : h->first, ts > h->last ? ts : h->last);
	}
	if (ts < h->first)
		h->first = ts;
	if (ts > h->last)
		h->last = ts;
	b = (size_t)((ts - h->lo) >> h->shift);
	bucket_add(h->count, h->min, h->max, b, 1, ts, ts);
	h->total++;
}

/* out: one window and its one slice, of n events from first to last, after
 * one pass (*cap, *scap: their room). 0, or -1 when out of memory (err set). */
static int one_window(struct kx_windows *out, size_t *cap, size_t *scap, size_t n, uint64_t first,
                      uint64_t last, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->passes = 1;
	if (kx_grow((void **)&out->w, cap, 0, sizeof(*out->w)) ||
	    kx_grow((void **)&out->slice, scap, 0, sizeof(*out->slice))) {
		kx_windows_free(out);
		snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	memset(out->w, 0, sizeof(*out->w));
	out->w[0].events = out->total = n;
	out->w[0].first_ns = n ? first : 0;
	out->w[0].last_ns = n ? last : 0;
	out->slice[0] = out->w[0];
	out->n = out->nslices = 1;
	return 0;
}

int kx_windows_plan_src(const struct kx_wsource *src, const struct kx_whist *h, size_t limit,
                        size_t slice, struct kx_windows *out, char *err, size_t errlen)
{
	struct plan pl = {.src = src,
	                  .limit = limit ? limit : SIZE_MAX,
	                  .out = out,
	                  .err = err,
	                  .errlen = errlen};
	uint64_t width = (uint64_t)1 << h->shift;

	pl.slice = slice && slice < pl.limit ? slice : pl.limit;
	if (h->total <= pl.limit)
		return one_window(out, &pl.cap, &pl.scap, h->total, h->first, h->last, err, errlen);
	if (one_window(out, &pl.cap, &pl.scap, 0, 0, 0, err, errlen))
		return -1;
	for (size_t b = 0; b < KX_WINDOW_BUCKETS && !pl.oom && !pl.failed; b++) {
		uint64_t blo = h->lo + ((uint64_t)b << h->shift);
		uint64_t bhi = UINT64_MAX - blo > width ? blo + width : UINT64_MAX;

		if (h->count[b])
			bucket(&pl, 0, blo, bhi, width, h->count[b], h->min[b], h->max[b]);
	}
	if (pl.oom || pl.failed) {
		kx_windows_free(out);
		if (pl.oom)
			snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	return 0;
}

int kx_windows_plan(const struct kx_analysis *an, size_t limit, struct kx_windows *out, char *err,
                    size_t errlen)
{
	const struct kx_wsource src = {walk, (void *)an};
	struct extent x = {0, 0, 0};
	struct kx_whist *h;
	size_t cap = 0, scap = 0;
	int rc;

	if (!limit) { /* never split: one window, nothing to count */
		rc = one_window(out, &cap, &scap, 0, 0, 0, err, errlen);
		out->passes = 0;
		return rc;
	}
	/* Most captures fit one window: their count and extremes are the plan. */
	walk_starts(an, see_extent, &x);
	if (x.n <= limit)
		return one_window(out, &cap, &scap, x.n, x.first, x.last, err, errlen);
	h = kx_whist_new();
	if (!h) {
		snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	walk_starts(an, see_hist, h);
	rc = kx_windows_plan_src(&src, h, limit, limit, out, err, errlen);
	kx_whist_free(h);
	return rc;
}

size_t kx_windows_find(const struct kx_window *w, size_t n, uint64_t ts, size_t hint)
{
	size_t lo = 0, hi = n;

	if (hint < n && w[hint].from_ns <= ts && (hint + 1 == n || ts < w[hint + 1].from_ns))
		return hint;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (w[mid].from_ns <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void kx_windows_free(struct kx_windows *w)
{
	free(w->w);
	free(w->slice);
	memset(w, 0, sizeof(*w));
}
