/*
 * Pass 1 of a record file read in time windows (contract: wread.h; the
 * parts: wread_int.h): the file read as a stream, the store kept while it
 * may be wanted whole, the device timelines fed lazily from that store or
 * eagerly as records come, the late ioctls and counter records, the
 * reorder stage feeding the nesting rule and the annotation ranges' walk,
 * and, once the file is read, the whole capture's ranges, memory
 * accounting and threads; and the timelines of a file kept whole, run
 * from its store when its plan is asked for (kx_wread_plan_kept). The jobs
 * the timelines count go to wread_links.c; the plan is wread.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/wread.h"
#include "analysis/wread_int.h"
#include "model/annot.h"
#include "model/perfdata.h"
#include "util/grow.h"

static int p1_active(const struct p1 *c)
{
	return !c->oom && !c->w->in_memory;
}

/* Pass 1: the lag of a record kept in its place (not late) counts for lag_ns. */
static void see_lag(struct kx_wread *w, int any, uint64_t max, uint64_t ts)
{
	if (any && max > ts && max - ts <= KX_WREAD_LATE_NS && max - ts > w->lag_ns)
		w->lag_ns = max - ts;
}

static void p1_stop(struct p1 *c)
{
	__atomic_store_n(&c->drop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

static void p1_oom(struct p1 *c)
{
	c->oom = 1;
	p1_stop(c);
}

/* The file is to be read whole, for reason why: the read goes on to the
 * end if the store still holds all of it so far, else it stops. */
static void p1_whole_file(struct p1 *c, const char *why)
{
	/* The calls waiting in the reorder stage came before this reason: one
	 * the rule shortens among them is the reason (p1_nest, here again). */
	if (!c->flushed) {
		c->flushed = 1;
		if (kx_engine_finish(&c->eng))
			c->oom = 1;
	}
	if (c->w->in_memory)
		return;
	c->w->in_memory = why;
	if (__atomic_load_n(&c->drop, __ATOMIC_RELAXED))
		p1_stop(c);
}

/* The device timelines cannot be exact (a budget): the file is read whole. */
static void p1_jobs_why(struct p1 *c)
{
	const char *why = c->link_why ? c->link_why : kx_wjobfeed_why(&c->jf);

	if (why && p1_active(c))
		p1_whole_file(c, why);
}

/* ---- pass 1's device timelines: fed once the store is let go (or eager) ---- */

/* The calls whose jobs the timelines can no longer count are forgotten by
 * the ranges' walk (rangewalk.h). */
static void p1_forget(struct p1 *c)
{
	if (kx_rangewalk_dev_forget(&c->ranges, c->jf.f.swept ? c->jf.f.swept_start : 0,
	                            kx_jobflow_linked_to(&c->jf.f)))
		return p1_oom(c);
	if (c->jf.f.swept)
		kx_wcallmap_forget(&c->names, c->jf.f.swept_start);
}

/* A call to the device timelines. */
static void p1_feed_call(struct p1 *c, const struct kx_ioctl *e)
{
	if (kx_wjobfeed_ioctl(&c->jf, e))
		return p1_oom(c);
	c->w->jobrec.fed++;
	p1_forget(c);
	if (c->jf.records)
		p1_jobs_why(c);
}

/* A job record to the device timelines. */
static void p1_feed_job(struct p1 *c, const struct kx_job *j)
{
	if (kx_wjobfeed_job(&c->jf, j))
		return p1_oom(c);
	c->w->jobrec.fed++;
	p1_forget(c);
	p1_jobs_why(c);
}

/*
 * The records noted while the store kept the file, fed to the timelines
 * from it in file order (its calls and job records are the file's, in
 * file order), as far as it holds them yet (a read stores a run of calls
 * after handing it over): fed once it held them all. With all, it holds
 * them all now (the read is over), else that is out of memory: a store
 * that refused a record (its limit) has lost their places.
 */
static void p1_catch_up(struct p1 *c, int all)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;
	const struct kx_store *s = c->w->store;

	if (!s || kx_store_not_stored(s))
		return p1_oom(c);
	while (c->cur < jb->norder && p1_active(c)) {
		if (bit_of(jb->order, jb->order_cap, c->cur)) {
			if (c->cur_jobs >= kx_store_job_count(s))
				break;
			p1_feed_job(c, kx_store_job(s, c->cur_jobs++));
		} else {
			if (c->cur_calls >= kx_store_ioctl_count(s))
				break;
			p1_feed_call(c, kx_store_ioctl(s, c->cur_calls++));
		}
		c->cur++;
	}
	if (!p1_active(c))
		return;
	if (c->cur < jb->norder)
		return all ? p1_oom(c) : (void)0;
	c->fed = 1;
	free(jb->order);
	jb->order = NULL;
	jb->norder = jb->order_cap = 0;
}

/* A call (job 0) or job record for the timelines: 1 when noted (the store
 * keeps it; fed once the store is let go, if it is), 0 when to be fed now. */
static int p1_noted(struct p1 *c, int job)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;

	if (c->fed)
		return 0;
	if (!(jb->norder % 8)) {
		if (kx_grow((void **)&jb->order, &jb->order_cap, jb->norder / 8, 1)) {
			p1_oom(c);
			return 1;
		}
		jb->order[jb->norder / 8] = 0;
	}
	jb->order[jb->norder / 8] |= (uint8_t)((unsigned)job << (jb->norder % 8));
	jb->norder++;
	return 1;
}

/*
 * A file with annotation records and job records: the timelines are fed
 * eagerly once it is known not to fit one window (its records so far past
 * a window's, or the file at the rate of its records up to the latest
 * chunk boundary holding more: it is then read in windows, its ranges
 * needing their calls' jobs), so that a file that fits, read from the
 * store whole, runs none. The estimate is made again at each boundary; a
 * file that fits by it and then does not is fed from its store late (its
 * walk remembers the calls inside ranges since the first job record
 * within its budget, rangewalk.h; past it, a reason: read once, from the
 * store).
 */
static void p1_eager(struct p1 *c)
{
	const struct kx_kxp_read_result *r = &c->w->res;
	double limit = (double)c->w->limit, est = 0;

	if (c->eager || !c->anns || !c->w->jobrec.records)
		return;
	if (c->at_bytes)
		est = (double)c->at_records * ((double)r->size / (double)c->at_bytes);
	if (c->want || (double)c->records > limit || est > limit)
		c->eager = 1;
}

/* The store to be given up: let go once the timelines took what it holds
 * of the file so far (every record noted, none of the current run of calls
 * missing from it), a reason they find meanwhile keeping it for good. */
static void p1_try_drop(struct p1 *c)
{
	p1_eager(c);
	if (c->eager && !c->fed && p1_active(c))
		p1_catch_up(c, 0);
	if (!c->want || c->drop || !p1_active(c))
		return;
	if (!c->fed)
		p1_catch_up(c, 0);
	if (c->fed && p1_active(c))
		__atomic_store_n(&c->drop, 1, __ATOMIC_RELAXED);
}

/* How often the file's records are reckoned from its size (a power of 2). */
#define P1_RECKON 65536

/* Records pass 1's store may hold: a window's, and at least keep. */
static size_t p1_keep(const struct kx_wread *w)
{
	return w->limit > w->keep ? w->limit : w->keep;
}

/*
 * A record that may begin a trace event: past the records the store may
 * hold (p1_keep), the file is not wanted whole (unless a reason comes) and
 * the store is given up (once the device timelines took what it holds:
 * p1_try_drop); also as soon as the file, at the rate of its records so
 * far, holds more than twice as many (a long capture is not stored only to
 * be let go).
 */
static void p1_count(struct p1 *c)
{
	const struct kx_kxp_read_result *r = &c->w->res;
	double keep = (double)p1_keep(c->w);

	if (r->read_to != c->seen_to) { /* a chunk began: the records before it */
		c->at_bytes = c->seen_to;
		c->at_records = c->records;
		c->seen_to = r->read_to;
	}
	if (!c->want) { /* once to be given up, nothing more to count */
		c->records++;
		if ((double)c->records > keep ||
		    (!(c->records % P1_RECKON) && r->read_to &&
		     (double)c->records * ((double)r->size / (double)r->read_to) > 2 * keep))
			c->want = 1;
	}
	p1_try_drop(c);
}

/* Keeps a late ioctl with its place. 0, or -1 when out of memory. */
static int late_add(struct kx_wread *w, const struct kx_ioctl *e, const uint8_t *arg, uint64_t seq)
{
	if (kx_grow((void **)&w->late_seq, &w->late_cap, w->nlate, sizeof(*w->late_seq)) ||
	    kx_store_add_ioctl(w->late, e, arg))
		return -1;
	w->late_seq[w->nlate++] = seq;
	return 0;
}

static void p1_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct p1 *c = ctx;
	struct kx_whole *wh = &c->w->whole;
	uint64_t key = (uint64_t)e->pid << 32 | e->tid;
	int kept = !c->drop; /* the store takes this call too */

	if (!p1_active(c))
		return;
	p1_count(c);
	if (!p1_active(c)) /* the timelines found a reason */
		return;
	kx_rangewalk_ioctl(&c->ranges, e);
	if (kx_engine_feed_ioctl(&c->eng, e, arg))
		return p1_oom(c);
	if (!p1_active(c)) /* the nesting found a reason */
		return;
	if (!p1_noted(c, 0))
		p1_feed_call(c, e);
	if (!p1_active(c))
		return;
	/* The memory series is cumulative: its ioctls (few) are kept apart. */
	if (c->eng.last_mem && kx_store_add_ioctl(c->w->mem, e, arg))
		return p1_whole_file(c, "the ioctls of memory accounting do not fit the store");
	if (c->ranges.why)
		return p1_whole_file(c, c->ranges.why);
	if (kept)
		c->kept_ioctls++;
	else
		kx_whist_see(c->starts, e->ts);
	wh->ioctls++;
	if (e->ts < wh->first_ts)
		wh->first_ts = e->ts;
	if (key != c->last_key && !kx_hmap_get(&c->threads, key) &&
	    kx_hmap_add(&c->threads, key, 0))
		return p1_oom(c);
	c->last_key = key;
	if (is_late(c->any, c->maxstart, e->ts) && late_add(c->w, e, arg, c->seq))
		return p1_oom(c);
	see_lag(c->w, c->any, c->maxstart, e->ts);
	if (!c->any || e->ts > c->maxstart)
		c->maxstart = e->ts;
	c->any = 1;
	c->seq++;
}

static void p1_task(void *ctx, const struct kx_task *t)
{
	struct p1 *c = ctx;

	/* A refused task is counted by the store, as when reading into one. */
	if (p1_active(c))
		kx_store_add_task(c->w->side, t);
}

static void p1_sample(void *ctx, const struct kx_sample *s)
{
	struct p1 *c = ctx;
	int kept = !c->drop;

	if (!p1_active(c))
		return;
	p1_count(c);
	if (!p1_active(c))
		return;
	kx_store_add_sample(c->w->side, s);
	if (kept)
		c->kept_samples++;
	else
		kx_whist_see(c->starts, s->ts_ns);
}

static void p1_reason(struct p1 *c)
{
	if (p1_active(c) && c->ranges.why)
		p1_whole_file(c, c->ranges.why);
}

static void p1_job(void *ctx, const struct kx_job *j)
{
	struct p1 *c = ctx;

	if (!p1_active(c))
		return;
	/* The ranges' walk remembers each call inside ranges from the first
	 * job record on (before it, each thread's last few: rangewalk.h). */
	if (!c->w->jobrec.records && kx_rangewalk_dev_start(&c->ranges))
		return p1_oom(c);
	c->w->jobrec.records++;
	p1_try_drop(c);
	if (!p1_active(c))
		return;
	if (!p1_noted(c, 1))
		p1_feed_job(c, j);
}

/* A reason found while the engine lets records out (it is busy: not flushed). */
static void p1_nest_why(struct p1 *c, const char *why)
{
	if (!p1_active(c))
		return;
	c->flushed = 1;
	p1_whole_file(c, why);
}

/* A call the ranges walk with the end the rule gave it (cut: shortened,
 * as in memory); one the rule shortened, or the walk cuts at the end of a
 * range of its thread (or of a call a range cut), is kept for its window
 * (kx_wread_nest) with the shorter length, as memory's timeline adds the
 * walk's cuts to the rule's (kx_ranges_build: add_cuts), a window's events
 * of them at most. */
static int p1_walk(void *ctx, const struct kx_ioctl *e, uint64_t end, int cut)
{
	struct p1 *c = ctx;
	struct kx_wread *w = c->w;

	if (kx_rangewalk_call(&c->ranges, e, end, KX_ENGINE_NOREF))
		return -1;
	if (c->ranges.cut_last && c->ranges.cut_end < end)
		end = c->ranges.cut_end;
	if (!(cut || c->ranges.cut_last) || !p1_active(c))
		return 0;
	if (w->nfix >= w->limit) {
		p1_nest_why(c,
		            "more calls shortened to nest (by the nesting rule among calls, or "
		            "at the end of an annotation range of their thread) than a window "
		            "holds (each window's calls take their lengths in the whole capture)");
		return 0;
	}
	if (kx_grow((void **)&w->fixes, &w->fix_cap, w->nfix, sizeof(*w->fixes)))
		return -1;
	w->fixes[w->nfix++] = (struct kx_wread_fix){e->ts, e->dur, end - e->ts, e->tid};
	return 0;
}

/* A call out of the reorder stage, its thread's in start order: the ranges
 * walk it with the end the rule gives it (p1_walk), in memory's order: one
 * the rule shortens waits (held) for the ranges of its start memory orders
 * before it by its shortened length, which leave after it (nesttrack.h). */
static int p1_nest(void *ctx, const struct kx_ioctl *e)
{
	struct p1 *c = ctx;
	uint64_t end;
	int cut;

	if (kx_nesttrack_ioctl(&c->nest, e, &end, &cut))
		return -1;
	return kx_nesttrack_place(&c->nest, e, end, cut, p1_walk, c);
}

/* A call later than the reorder window: it cannot be nested. */
static int p1_late_call(void *ctx, const struct kx_ioctl *e)
{
	(void)e;
	p1_nest_why(ctx, KX_NESTTRACK_LATE);
	return 0;
}

/* An annotation record as it comes: paired (the ranges' handles). */
static int p1_ann_in(void *ctx, const struct kx_ann *a, const char *name, const char *cat,
                     uint32_t *ref)
{
	struct p1 *c = ctx;

	return kx_rangewalk_ann(&c->ranges, a, name, cat, ref);
}

/* A thread range out of the reorder stage, among its thread's calls. */
static int p1_range(void *ctx, uint32_t tid, uint32_t ref)
{
	struct p1 *c = ctx;

	if (kx_nesttrack_range(&c->nest, tid, c->eng.out_ts, c->eng.out_dur, p1_walk, c))
		return -1;
	return kx_rangewalk_range(&c->ranges, tid, ref);
}

/* A range later than the reorder window: a reason (p1_reason). */
static int p1_late_range(void *ctx, uint32_t tid, uint32_t ref)
{
	struct p1 *c = ctx;

	(void)tid;
	(void)ref;
	kx_rangewalk_late(&c->ranges);
	return 0;
}

/* Paired as they pass, through the reorder stage: the whole capture's
 * ranges (their names in the side store), finished once the file is read
 * (whole_ranges). */
static void p1_ann(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	struct p1 *c = ctx;

	if (!p1_active(c))
		return;
	c->anns++;
	if (c->w->jobrec.records && !c->eager)
		p1_try_drop(c);
	if (!p1_active(c))
		return;
	if (kx_ann_named(a->what)) /* a range or mark begins */
		p1_count(c);
	if (!p1_active(c))
		return;
	if (kx_engine_feed_ann(&c->eng, a, name, cat))
		return p1_oom(c);
	p1_reason(c);
}

/* A call's counter record comes just before its ioctl's, and starts when it
 * does: it is late when its call is, and goes to the same window. */
static void p1_ctr(void *ctx, const struct kx_ctr_ev *e)
{
	struct p1 *c = ctx;
	struct kx_wread *w = c->w;

	if (!p1_active(c))
		return;
	see_lag(w, c->any, c->maxstart, e->ts);
	if (!is_late(c->any, c->maxstart, e->ts))
		return;
	if (kx_grow((void **)&w->late_ctr, &w->late_ctr_cap, w->nlate_ctr, sizeof(*w->late_ctr)))
		return p1_oom(c);
	w->late_ctr[w->nlate_ctr++] = (struct kx_wread_ctr){*e, 0};
}

/* The threads' keys, sorted. 0, or -1 when out of memory. */
static int whole_threads(struct kx_whole *wh, const struct kx_hmap *m)
{
	size_t n = 0;

	wh->threads = malloc((m->n + 1) * sizeof(*wh->threads));
	if (!wh->threads)
		return -1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].used)
			wh->threads[n++] = m->slot[i].key;
	kx_sort_u64(wh->threads, n);
	wh->nthreads = n;
	return 0;
}

/* ---- the whole capture's annotation ranges ---- */

/* Adds pid << 32 | tid of a thread to the capture's. 0, or -1 when out of memory. */
static int thread_add(struct kx_hmap *threads, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;

	return kx_hmap_get(threads, key) ? 0 : kx_hmap_add(threads, key, 0);
}

/* The threads that annotated (ranges, marks, cross-thread starts and ends)
 * are the capture's, calls or not, as in memory. 0, or -1 when out of memory. */
static int range_threads(const struct kx_ranges *rg, struct kx_hmap *threads)
{
	for (size_t i = 0; i < rg->nthreads; i++)
		if (thread_add(threads, rg->threads[i].pid, rg->threads[i].tid))
			return -1;
	for (size_t i = rg->cross_first; i < rg->n; i++)
		if (thread_add(threads, rg->r[i].pid, rg->r[i].tid) ||
		    (rg->r[i].end_tid && thread_add(threads, rg->r[i].pid, rg->r[i].end_tid)))
			return -1;
	return 0;
}

/*
 * Once the file is read, the ranges the stream built, nested with the
 * ioctls as they passed (analysis/rangewalk.h): what the whole capture's
 * analysis makes of the file, unless a budget was exceeded. Their threads
 * join the capture's. 0 (w->in_memory may be set now), or -1 when out of
 * memory.
 */
static int whole_ranges(struct kx_wread *w, struct kx_rangewalk *sr, struct kx_hmap *threads)
{
	if (kx_rangewalk_finish(sr, w->side, NULL))
		return -1;
	if (sr->why) {
		w->in_memory = sr->why;
		return 0;
	}
	if (!sr->events)
		return 0;
	w->ranges = sr->out;
	sr->out = NULL;
	w->ranges->kernel = w->ci.ann; /* the trailer's counts, known now */
	if (kx_ranges_finish(w->ranges))
		return -1;
	return range_threads(w->ranges, threads);
}

/* The whole capture's memory accounting, made from its memory ioctls (a
 * capture without job records: they are the device analysis' only input
 * besides those). 0, or -1 when out of memory. */
static int whole_memory(struct kx_wread *w)
{
	if (!kx_store_ioctl_count(w->mem))
		return 0;
	w->jobs = kx_jobs_build(w->mem, &w->ci);
	return w->jobs ? 0 : -1;
}

/* w zeroed with its side stores, and c's state. 0, or -1 when out of memory
 * (c freed). */
static int p1_init(struct p1 *c, struct kx_wread *w, const char *path, size_t limit, size_t budget,
                   size_t keep)
{
	memset(w, 0, sizeof(*w));
	const struct kx_engine_sinks out = {.ctx = c,
	                                    .ioctl = p1_nest,
	                                    .late_ioctl = p1_late_call,
	                                    .range = p1_range,
	                                    .late_range = p1_late_range,
	                                    .ann = p1_ann_in};

	*c = (struct p1){.w = w, .nest = KX_NESTTRACK_INIT, .threads = KX_HMAP_INIT};
	kx_engine_init(&c->eng, KX_WREAD_LATE_NS, KX_ENGINE_BUDGET, &out);
	c->eng.measured = 1;
	c->sink = (struct kx_jobflow_sink){p1_job_counted, p1_job_lane, c};
	kx_wjobfeed_init(&c->jf, &w->ci, &c->sink, p1_flow_call, c);
	c->jf.f.on_linked = p1_linked;
	c->jf.f.on_link = p1_linking;
	c->jf.f.linked_ctx = c;
	w->jobrec.first_ns = UINT64_MAX;
	w->path = path;
	w->limit = limit;
	w->budget = budget;
	w->keep = keep;
	w->whole.first_ts = UINT64_MAX;
	kx_wcallmap_init(&c->names);
	kx_rangewalk_init(&c->ranges);
	c->ranges.dev_stream = 1; /* the jobs of the calls inside ranges: p1_linked */
	c->ranges.no_rows = 1;    /* the ranges themselves (out), not their summary rows */
	c->starts = kx_whist_new();
	w->side = kx_store_new(budget);
	w->late = kx_store_new(budget);
	w->mem = kx_store_new(budget);
	w->store = kx_store_new(budget);
	c->ranges.strings = w->side;
	c->ranges.out = kx_ranges_new(w->side, NULL);
	if (c->starts && w->side && w->late && w->mem && w->store && kx_store_samples(w->side) &&
	    c->ranges.out)
		return 0;
	kx_whist_free(c->starts);
	kx_ranges_free(c->ranges.out);
	kx_rangewalk_free(&c->ranges);
	kx_engine_free(&c->eng);
	kx_wjobfeed_free(&c->jf);
	return -1;
}

/* Once the file is read: the whole capture's ranges, memory accounting
 * (their events join the plan's starts) and threads. 0, or -1 when out of
 * memory. */
static int p1_whole(struct p1 *c)
{
	struct kx_wread *w = c->w;

	/* A file with job records kept whole has no timelines (kx_wread_plan_kept). */
	if (c->oom || (!w->in_memory && whole_ranges(w, &c->ranges, &c->threads)) ||
	    (!w->in_memory && (w->jobrec.records ? c->fed && p1_device(c) : whole_memory(w))))
		return -1;
	kx_whist_see_analysed(c->starts, w->jobs, w->ranges);
	return whole_threads(&w->whole, &c->threads);
}

int kx_wread_open(struct kx_wread *w, const char *path, size_t limit, size_t budget, char *err,
                  size_t errlen)
{
	return kx_wread_open_sliced(w, path, limit, limit, budget, KX_WREAD_KEEP_RECORDS, err,
	                            errlen);
}

/* Once the file is read without a reason to read it whole: a store kept
 * past a window's records is let go (the file is read in windows), the
 * starts of its records joining the plan's. 0, or -1 when out of memory. */
static int p1_let_go(struct p1 *c)
{
	struct kx_wread *w = c->w;

	if (w->in_memory || !w->store || (!c->drop && c->records <= w->limit))
		return 0;
	c->drop = 1;
	return wr_starts_catch_up(c->starts, w->store, c->kept_ioctls, c->kept_samples);
}

/* Once every record is read (rc: the read's), unless it failed or a
 * reason came: the timelines take what they have not, and finish; the
 * ranges left open are closed and the reorder stage emptied into the
 * nesting rule. The engine and the rule are freed either way, the calls
 * they shortened sorted for the windows (kx_wread_nest). */
static void p1_read_end(struct p1 *c, int rc)
{
	struct kx_wread *w = c->w;

	/* A store to be let go: the timelines first take what they have not. */
	if (!rc && p1_active(c) && !c->fed && (c->want || c->eager || c->records > w->limit))
		p1_catch_up(c, 1);
	if (!rc && p1_active(c) && c->want)
		c->drop = 1;
	if (!rc && p1_active(c) && w->jobrec.records && c->fed)
		p1_device_end(c);
	if (!rc && p1_active(c) &&
	    (kx_rangewalk_close(&c->ranges, w->side, &c->eng) || kx_engine_finish(&c->eng) ||
	     kx_nesttrack_flush(&c->nest, p1_walk, c)))
		c->oom = 1;
	if (!rc && p1_active(c) && c->eng.forced)
		w->in_memory =
		        "calls of one thread overlap past the reorder window's memory budget";
	kx_engine_free(&c->eng);
	w->fix_threads = c->nest.fixed_threads + kx_rangewalk_cut_threads(&c->ranges, &c->nest);
	kx_nesttrack_free(&c->nest);
	if (w->nfix)
		qsort(w->fixes, w->nfix, sizeof(*w->fixes), wr_fix_cmp);
}

/* Pass 1's read of path, as a stream, teed into the store. 0, or the
 * read's failure (w->damage says it). */
static int p1_read(struct p1 *c, const char *path)
{
	struct kx_wread *w = c->w;
	struct kx_kxp_visitor v = {
	        .ctx = c,
	        .ioctl = p1_ioctl,
	        .task = p1_task,
	        .job = p1_job,
	        .ann = p1_ann,
	        .sample = p1_sample,
	        .ctr = p1_ctr,
	        .stop = &c->stop,
	        .drop_store = &c->drop,
	};
	int rc;

	v.syms = kx_samples_syms(kx_store_samples(w->side));
	rc = kx_kxp_read_stream_tee(path, &v, w->store, &w->ci, &w->res, w->damage,
	                            sizeof(w->damage));
	p1_read_end(c, rc);
	return rc;
}

/* What pass 1 made of the file read (rc: the read's): the whole capture's
 * facts, or a reason to read it whole; the store kept only for a file read
 * from it. 0, or -1 (err says why). */
static int p1_result(struct p1 *c, int rc, const char *path, char *err, size_t errlen)
{
	struct kx_wread *w = c->w;

	if (rc) {
		snprintf(err, errlen, "%s", w->damage);
		w->damage[0] = 0;
	} else if (p1_whole(c)) {
		snprintf(err, errlen, "out of memory reading %s", path);
		rc = -1;
	}
	/* Records far from the order of time: windows would hold no less. */
	if (!rc && !w->in_memory && w->nlate > w->limit)
		w->in_memory = "records far from the order of time (more calls came late than a "
		               "window holds)";
	if (!rc && p1_let_go(c)) {
		snprintf(err, errlen, "out of memory reading %s", path);
		rc = -1;
	}
	if (rc || c->drop) {
		kx_store_free(w->store);
		w->store = NULL;
	}
	return rc;
}

int kx_wread_open_sliced(struct kx_wread *w, const char *path, size_t limit, size_t slice,
                         size_t budget, size_t keep, char *err, size_t errlen)
{
	struct p1 c;
	int rc;

	if (p1_init(&c, w, path, limit, budget, keep)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->slice = slice;
	rc = p1_result(&c, p1_read(&c, path), path, err, errlen);
	kx_hmap_free(&c.threads);
	kx_ranges_free(c.ranges.out);
	kx_rangewalk_free(&c.ranges);
	/* A Chrome part's job tracks are drawn from its window's table whole:
	 * a file with job records is read a window, not a slice, at a time. */
	if (w->jobrec.records)
		w->slice = w->limit;
	if (!rc && !w->in_memory && !w->store)
		rc = wr_plan(w, c.starts, err, errlen);
	if (!rc && !w->in_memory && !w->store && w->jobrec.records)
		rc = wr_jobs_filing(w, &c.jf.f, err, errlen);
	kx_wjobfeed_free(&c.jf);
	kx_wcallmap_free(&c.names);
	free(c.calls);
	free(c.und);
	if (!rc && !w->in_memory && w->store) {
		w->starts = c.starts;
		w->kept_ioctls = c.kept_ioctls;
		w->kept_samples = c.kept_samples;
		c.starts = NULL;
	}
	kx_whist_free(c.starts);
	return rc;
}

/* A kept file with job records: the device timelines, run now from the
 * store as pass 1 runs them (its starts the plan's first level, w->starts).
 * 0 (w->in_memory set when they cannot be exact), or -1 when out of memory. */
int wr_kept_timelines(struct kx_wread *w)
{
	struct p1 c = {.w = w, .starts = w->starts, .flushed = 1};
	int rc = 0;

	if (!w->jobrec.records || w->jobs)
		return 0;
	kx_wcallmap_init(&c.names);
	c.sink = (struct kx_jobflow_sink){p1_job_counted, p1_job_lane, &c};
	kx_wjobfeed_init(&c.jf, &w->ci, &c.sink, p1_flow_call, &c);
	p1_catch_up(&c, 1);
	if (p1_active(&c))
		p1_device_end(&c);
	if (c.oom || (!w->in_memory && p1_device(&c)))
		rc = -1;
	else if (!w->in_memory)
		kx_whist_see_analysed(w->starts, w->jobs, NULL);
	kx_wjobfeed_free(&c.jf);
	kx_wcallmap_free(&c.names);
	free(c.calls);
	free(c.und);
	return rc;
}
