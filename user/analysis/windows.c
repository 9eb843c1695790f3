/* Time windows of at most N events (contract: windows.h): histogram passes, greedy cuts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/windows.h"
#include "model/samples.h"
#include "util/grow.h"

/* What a pass does with each event's start. */
struct pass {
	uint64_t lo, hi, width; /* counted span [lo, hi), bucket width (ns) */
	size_t nb;              /* buckets */
	size_t *count;          /* events per bucket */
	uint64_t *min, *max;    /* first and last start per bucket (ns) */
};

static inline void see(struct pass *p, uint64_t ts)
{
	if (ts < p->lo || ts >= p->hi)
		return;
	size_t b = (size_t)((ts - p->lo) / p->width);

	if (!p->count[b]++ || ts < p->min[b])
		p->min[b] = ts;
	if (ts > p->max[b])
		p->max[b] = ts;
}

/* One walk over every event the outputs draw, by its start. */
static void walk(const struct kx_analysis *an, struct pass *p)
{
	const struct kx_store *s = an->store;
	const struct kx_samples *smp = kx_store_samples(s);
	size_t n = kx_store_ioctl_count(s);

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
}

struct plan {
	const struct kx_analysis *an;
	size_t limit;
	struct kx_windows *out;
	size_t cap; /* windows allocated */
	int oom;
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
	struct pass p = {.lo = lo, .hi = hi};
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
	walk(pl->an, &p);
	pl->out->passes++;
	for (size_t b = 0; b < p.nb && !pl->oom; b++) {
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

int kx_windows_plan(const struct kx_analysis *an, size_t limit, struct kx_windows *out, char *err,
                    size_t errlen)
{
	struct plan pl = {.an = an, .limit = limit ? limit : SIZE_MAX, .out = out};
	struct pass all = {.lo = 0, .hi = UINT64_MAX, .width = UINT64_MAX, .nb = 1};
	uint64_t min = 0, max = 0;
	size_t one = 0;

	memset(out, 0, sizeof(*out));
	all.count = &one;
	all.min = &min;
	all.max = &max;
	walk(an, &all);
	out->passes = 1;
	if (kx_grow((void **)&out->w, &pl.cap, 0, sizeof(*out->w))) {
		snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	memset(out->w, 0, sizeof(*out->w));
	out->n = 1;
	if (one <= pl.limit) {
		out->w[0].events = out->total = one;
		out->w[0].first_ns = min;
		out->w[0].last_ns = max;
		return 0;
	}
	split(&pl, min, max + 1);
	if (pl.oom) {
		kx_windows_free(out);
		snprintf(err, errlen, "out of memory planning the output's time windows");
		return -1;
	}
	return 0;
}

void kx_windows_free(struct kx_windows *w)
{
	free(w->w);
	memset(w, 0, sizeof(*w));
}
