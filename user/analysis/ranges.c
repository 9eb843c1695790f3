/*
 * Annotation ranges (contract: ranges.h): pairing (analysis/rangetrack.h's
 * rule, the events in the store's order), the per-thread index, nesting
 * with the ioctls, attribution, anomalies.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/range_ends.h"
#include "analysis/ranges.h"
#include "analysis/rangetrack.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

struct pairing {
	const struct kx_store *s;
	struct kx_rangetrack track; /* each open range: its begin event's index (uint32_t) */
	struct kx_rt_open *ended;   /* the range an end took out (track.stride bytes) */
	struct kx_ranges *rg;
	size_t cap;
	struct kx_range_ends ends; /* where open ranges end */
};

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

/* A range from the event that began it (PUSH, START or MARK). */
static struct kx_range *range_from(struct pairing *p, const struct kx_ann *b, int kind)
{
	return kx_ranges_add(p->rg, &p->cap, b, kind);
}

/* The store index of the event that began the open range o. */
static uint32_t begin_index(struct kx_rt_open *o)
{
	uint32_t i;

	memcpy(&i, kx_rt_data(o), sizeof(i));
	return i;
}

/* A closed range, from its begin (event bi) and the POP or END e. */
static int closed(struct pairing *p, const struct kx_ann *e, uint32_t bi)
{
	const struct kx_ann *b = kx_store_ann(p->s, bi);
	struct kx_range *r =
	        range_from(p, b, e->what == KX_ANN_POP ? KX_RANGE_THREAD : KX_RANGE_CROSS);

	if (!r)
		return -1;
	r->dur = r->dur_meas = e->ts > b->ts ? e->ts - b->ts : 0;
	r->end_tid = e->tid;
	if (e->what == KX_ANN_POP)
		r->depth = e->depth;
	return 0;
}

/* What stayed open, in the order of their begins. */
static int left_open(struct pairing *p)
{
	struct kx_rt_open **v = malloc((kx_rangetrack_open_count(&p->track) + 1) * sizeof(*v));
	size_t n;
	int rc = 0;

	if (!v)
		return -1;
	n = kx_rangetrack_left(&p->track, v);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct kx_ann *b = kx_store_ann(p->s, begin_index(v[i]));
		struct kx_range *r =
		        range_from(p, b, b->what == KX_ANN_PUSH ? KX_RANGE_THREAD : KX_RANGE_CROSS);

		if (!r) {
			rc = -1;
			break;
		}
		r->open = 1;
		r->dur = r->dur_meas =
		        (b->what == KX_ANN_PUSH ? kx_range_end_thread(&p->ends, b->tid, b->ts)
		                                : kx_range_end_process(&p->ends, b->pid, b->ts)) -
		        b->ts;
		if (b->what == KX_ANN_PUSH)
			p->rg->anom.open++;
		else
			p->rg->anom.open_cross++;
	}
	free(v);
	return rc;
}

/* Closed ranges and marks in event order, then what stayed open. */
static int pair_all(struct pairing *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct kx_ann *e = kx_store_ann(p->s, i);
		struct kx_rt_open *o;
		uint32_t bi = (uint32_t)i;
		size_t above;

		switch (e->what) {
		case KX_ANN_MARK:
			if (!range_from(p, e, KX_RANGE_MARK))
				return -1;
			break;
		case KX_ANN_PUSH:
		case KX_ANN_START:
			if (!(o = kx_rangetrack_begin(&p->track, e)))
				return -1;
			memcpy(kx_rt_data(o), &bi, sizeof(bi));
			break;
		case KX_ANN_POP:
		case KX_ANN_END:
			if (!kx_rangetrack_end(&p->track, e, p->ended, &above))
				p->rg->anom.lost_begin++;
			else if (closed(p, e, begin_index(p->ended)))
				return -1;
			break;
		}
	}
	return left_open(p);
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

/* One thread's walk: the rule's stack of ends and, beside it, what each is
 * (a range index, or -1 for an ioctl). */
struct walk {
	uint64_t *ends;
	size_t depth, cap;
	int64_t *who;
	size_t who_cap;
	struct kx_tl_fix *fix; /* ioctls the ranges shortened */
	size_t nfix, fix_cap;
};

static int walk_push(struct walk *w, uint64_t start, uint64_t dur, int64_t who, uint64_t *end,
                     int *cut)
{
	if (kx_timeline_nest(&w->ends, &w->depth, &w->cap, start, dur, end, cut) ||
	    kx_grow((void **)&w->who, &w->who_cap, w->depth, sizeof(*w->who)))
		return -1;
	w->who[w->depth - 1] = who;
	return 0;
}

/* The ioctl at timeline position pos counts for every range open around it. */
static int walk_ioctl(struct walk *w, struct kx_ranges *rg, const struct kx_timeline *tl,
                      const struct kx_store *s, const struct devtime *dt, size_t pos)
{
	size_t idx = tl->order[pos];
	const struct kx_ioctl *e = kx_store_ioctl(s, idx);
	uint64_t dur = kx_timeline_dur(tl, idx, e->dur), end;
	const uint32_t *d = kx_hmap_get(&dt->map, idx);
	int cut;

	if (walk_push(w, e->ts, dur, -1, &end, &cut))
		return -1;
	if (cut) {
		if (kx_grow((void **)&w->fix, &w->fix_cap, w->nfix, sizeof(*w->fix)))
			return -1;
		w->fix[w->nfix++] = (struct kx_tl_fix){pos, idx, end - e->ts};
	}
	for (size_t k = 0; k + 1 < w->depth; k++) {
		struct kx_range *r;

		if (w->who[k] < 0)
			continue;
		r = &rg->r[w->who[k]];
		r->ioctls++;
		if (d) {
			r->device_ns += dt->v[*d].ns;
			r->jobs += dt->v[*d].jobs;
		}
	}
	return 0;
}

/* A thread's ranges and ioctls in start order through the rule. */
static int walk_thread(struct walk *w, struct kx_ranges *rg, const struct kx_range_thread *t,
                       const struct kx_timeline *tl, const struct kx_store *s,
                       const struct devtime *dt)
{
	const struct kx_tl_thread *it = NULL;
	size_t lo = 0, hi = tl ? tl->nthreads : 0, i = 0, k = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->threads[mid].tid < t->tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (tl && lo < tl->nthreads && tl->threads[lo].tid == t->tid)
		it = &tl->threads[lo];
	w->depth = 0;
	while (i < t->count || (it && k < it->count)) {
		struct kx_range *r = i < t->count ? &rg->r[t->first + i] : NULL;
		const struct kx_ioctl *e = NULL;
		uint64_t end;
		int cut;

		if (it && k < it->count)
			e = kx_store_ioctl(s, tl->order[it->first + k]);
		if (r && r->kind == KX_RANGE_MARK) {
			i++; /* an instant: it encloses nothing */
			continue;
		}
		if (e && (!r || e->ts < r->begin ||
		          (e->ts == r->begin &&
		           kx_timeline_dur(tl, tl->order[it->first + k], e->dur) > r->dur))) {
			if (walk_ioctl(w, rg, tl, s, dt, it->first + k++))
				return -1;
			continue;
		}
		if (walk_push(w, r->begin, r->dur, (int64_t)(t->first + i), &end, &cut))
			return -1;
		if (cut) {
			r->dur = end - r->begin;
			rg->anom.shortened++;
		}
		i++;
	}
	return 0;
}

static int nest_all(struct kx_ranges *rg, const struct kx_store *s, struct kx_timeline *tl,
                    const struct kx_jobs *jobs)
{
	struct devtime dt = {KX_HMAP_INIT, NULL, 0, 0};
	struct walk w;
	int rc = 0;

	if (!rg->nthreads)
		return 0; /* no thread ranges: nothing to nest or attribute */
	memset(&w, 0, sizeof(w));
	if (devtime_build(&dt, jobs))
		rc = -1;
	for (size_t t = 0; !rc && t < rg->nthreads; t++)
		rc = walk_thread(&w, rg, &rg->threads[t], tl, s, &dt);
	if (!rc && tl)
		rc = kx_timeline_add_fixes(tl, w.fix, w.nfix);
	free(w.ends);
	free(w.who);
	free(w.fix);
	kx_hmap_free(&dt.map);
	free(dt.v);
	return rc;
}

/* Where the ranges left open end: their thread's or process's end
 * (analysis/range_ends.h). 0, or -1 when out of memory. */
static int find_ends(struct kx_range_ends *e, const struct kx_store *s)
{
	size_t n = kx_store_ann_count(s), m = kx_store_ioctl_count(s);

	for (size_t i = 0; i < n; i++) {
		const struct kx_ann *a = kx_store_ann(s, i);

		if (kx_range_ends_ann(e, a->pid, a->tid, a->ts))
			return -1;
	}
	for (size_t i = 0; i < m; i++) {
		const struct kx_ioctl *c = kx_store_ioctl(s, i);

		kx_range_ends_ioctl(e, c->pid, c->tid, c->ts + c->dur);
	}
	kx_range_ends_exits(e, s);
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

int kx_ranges_finish(struct kx_ranges *rg, const struct kx_store *s, struct kx_timeline *tl,
                     const struct kx_jobs *jobs)
{
	if (rg->n > 1)
		qsort(rg->r, rg->n, sizeof(*rg->r), range_cmp);
	if (index_threads(rg) || nest_all(rg, s, tl, jobs))
		return -1;
	rg->found = rg->n;
	return 0;
}

struct kx_ranges *kx_ranges_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                  struct kx_timeline *tl, const struct kx_jobs *jobs)
{
	struct kx_ranges *rg = kx_ranges_new(s, ci);
	size_t n = kx_store_ann_count(s);
	struct pairing p;
	int rc = -1;

	if (!rg)
		return NULL;
	memset(&p, 0, sizeof(p));
	p.s = s;
	p.rg = rg;
	p.ends = (struct kx_range_ends)KX_RANGE_ENDS_INIT;
	kx_rangetrack_init(&p.track, sizeof(uint32_t), 0);
	p.ended = malloc(p.track.stride);
	if (!p.ended || n > UINT32_MAX || find_ends(&p.ends, s) || pair_all(&p, n) ||
	    kx_ranges_finish(rg, s, tl, jobs))
		goto out;
	rg->events = n;
	rc = 0;
out:
	free(p.ended);
	kx_range_ends_free(&p.ends);
	kx_rangetrack_free(&p.track);
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
