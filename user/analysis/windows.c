/* Time windows of at most N events (contract: windows.h): histogram passes, greedy cuts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/windows.h"
#include "model/samples.h"
#include "util/grow.h"

static inline void see(struct kx_wpass *p, uint64_t ts)
{
	if (ts < p->lo || ts >= p->hi)
		return;
	size_t b = (size_t)((ts - p->lo) / p->width);

	if (!p->count[b]++ || ts < p->min[b])
		p->min[b] = ts;
	if (ts > p->max[b])
		p->max[b] = ts;
}

void kx_wpass_see(struct kx_wpass *p, uint64_t ts)
{
	see(p, ts);
}

/* The analysis as a source: one walk over every event the outputs draw, by its start. */
static int walk(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	const struct kx_analysis *an = ctx;
	const struct kx_store *s = an->store;
	const struct kx_samples *smp = kx_store_samples(s);
	size_t n = kx_store_ioctl_count(s);

	(void)err, (void)errlen;
	for (size_t i = 0; i < n;) {
		size_t run;
		const struct kx_ioctl *e = kx_store_ioctl_run(s, i, &run);

		for (size_t k = 0; k < run; k++)
			see(p, e[k].ts);
		i += run ? run : 1;
	}
	for (size_t k = 0; an->jobs && k < an->jobs->njobs; k++)
		see(p, kx_jobrec_start(&an->jobs->jobs[k]));
	for (size_t d = 0; an->jobs && d < an->jobs->ndevs; d++)
		for (size_t k = 0; k < an->jobs->devs[d].nmem; k++)
			see(p, an->jobs->devs[d].mem[k].ts);
	for (size_t i = 0; i < an->ranges->n; i++)
		see(p, an->ranges->r[i].begin);
	for (size_t i = 0; smp && i < kx_samples_count(smp); i++)
		see(p, kx_samples_get(smp, i)->ts);
	return 0;
}

struct plan {
	const struct kx_wsource *src;
	size_t limit;
	struct kx_windows *out;
	size_t cap; /* windows allocated */
	int oom;
	int failed; /* the source failed (err set) */
	char *err;
	size_t errlen;
};

/* The open (last) window. */
static struct kx_window *open_window(struct plan *pl)
{
	return &pl->out->w[pl->out->n - 1];
}

/* Adds c events starting in [lo, lo + width), first at min, last at max. */
static void take(struct plan *pl, uint64_t lo, size_t c, uint64_t min, uint64_t max)
{
	struct kx_window *w = open_window(pl);

	if (w->events && w->events + c > pl->limit) {
		if (kx_grow((void **)&pl->out->w, &pl->cap, pl->out->n, sizeof(*pl->out->w))) {
			pl->oom = 1;
			return;
		}
		w = &pl->out->w[pl->out->n - 1];
		w->to_ns = lo;
		w = &pl->out->w[pl->out->n++];
		memset(w, 0, sizeof(*w));
		w->from_ns = lo;
	}
	if (!w->events)
		w->first_ns = min;
	w->last_ns = max;
	w->events += c;
	pl->out->total += c;
}

/* Counts the starts in [lo, hi) and cuts between buckets; a bucket over the
 * limit is counted again, finer. */
static void split(struct plan *pl, uint64_t lo, uint64_t hi)
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

		if (!p.count[b])
			continue;
		if (p.count[b] > pl->limit && p.width > 1) {
			split(pl, blo, bhi);
			continue;
		}
		take(pl, blo, p.count[b], p.min[b], p.max[b]);
	}
out:
	free(p.count);
	free(p.min);
	free(p.max);
}

int kx_windows_plan_src(const struct kx_wsource *src, const struct kx_wpass *all, size_t limit,
                        struct kx_windows *out, char *err, size_t errlen)
{
	struct plan pl = {.src = src,
	                  .limit = limit ? limit : SIZE_MAX,
	                  .out = out,
	                  .err = err,
	                  .errlen = errlen};
	size_t one = all->count[0];

	memset(out, 0, sizeof(*out));
	out->passes = 1;
	if (kx_grow((void **)&out->w, &pl.cap, 0, sizeof(*out->w))) {
		snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	memset(out->w, 0, sizeof(*out->w));
	out->n = 1;
	if (one <= pl.limit) {
		out->w[0].events = out->total = one;
		out->w[0].first_ns = all->min[0];
		out->w[0].last_ns = all->max[0];
		return 0;
	}
	split(&pl, all->min[0], all->max[0] + 1);
	if (pl.oom || pl.failed) {
		kx_windows_free(out);
		if (pl.oom)
			snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	return 0;
}

void kx_wpass_one(struct kx_wpass *p, size_t *count, uint64_t *min, uint64_t *max)
{
	*count = 0;
	*min = *max = 0;
	*p = (struct kx_wpass){.lo = 0, .hi = UINT64_MAX, .width = UINT64_MAX, .nb = 1};
	p->count = count;
	p->min = min;
	p->max = max;
}

int kx_windows_plan(const struct kx_analysis *an, size_t limit, struct kx_windows *out, char *err,
                    size_t errlen)
{
	const struct kx_wsource src = {walk, (void *)an};
	struct kx_wpass all;
	uint64_t min, max;
	size_t one;

	kx_wpass_one(&all, &one, &min, &max);
	walk((void *)an, &all, err, errlen);
	return kx_windows_plan_src(&src, &all, limit, out, err, errlen);
}

void kx_windows_free(struct kx_windows *w)
{
	free(w->w);
	memset(w, 0, sizeof(*w));
}
