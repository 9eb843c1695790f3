/* A record file read in time windows (contract: wread.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/engine.h"
#include "analysis/nesttrack.h"
#include "analysis/flows.h"
#include "analysis/rangewalk.h"
#include "analysis/wcallmap.h"
#include "analysis/wjobfeed.h"
#include "analysis/wread.h"
#include "model/annot.h"
#include "model/perfdata.h"
#include "util/grow.h"
#include "util/hashmap.h"

/* Is a record starting at ts late, the latest start read before it being
 * max (any: some start was read)? The one rule of both passes. */
static int is_late(int any, uint64_t max, uint64_t ts)
{
	return any && max > ts && max - ts > KX_WREAD_LATE_NS;
}

/* Bit i of map (nbytes long). */
static int bit_of(const uint8_t *map, size_t nbytes, uint64_t i)
{
	return i / 8 < nbytes && (map[i / 8] >> (i % 8) & 1);
}

/* Pass 1: the lag of a record kept in its place (not late) counts for lag_ns. */
static void see_lag(struct kx_wread *w, int any, uint64_t max, uint64_t ts)
{
	if (any && max > ts && max - ts <= KX_WREAD_LATE_NS && max - ts > w->lag_ns)
		w->lag_ns = max - ts;
}

/* ---- pass 1: the check, the whole capture's facts, the side store, the late ioctls ---- */

/* Calls pass 1 keeps for the links of the jobs counted (a power of 2): a
 * job whose submitting call came more than this many calls before the
 * latest the device timelines had is a reason to read the file whole. */
#define P1_CALLS 16384u

/* A call the device timelines took, by its place among the file's calls. */
struct p1_call {
	uint64_t idx, ts, dur; /* its place (UINT64_MAX: none yet); ns */
	uint32_t tid;
};

/* A job of a call inside annotation ranges names its call to the ranges'
 * walk by the call's thread and number (rangewalk.h), found among the
 * calls kept for it (wcallmap.h). */
#define P1_RANGE_LINK                                                                              \
	"annotation ranges with device jobs: a job was counted more than 4194304 calls after "     \
	"its submitting call (the calls a read in windows keeps to give a range its calls' jobs)"
_Static_assert(KX_WCALLMAP_MAX == 4194304u, "P1_RANGE_LINK states KX_WCALLMAP_MAX");

/* A job whose flow depends on the length the nesting rule gave its
 * submitting call (its start between the call's start and its queue
 * event): drawn once the file is read and the lengths known. */
struct p1_undecided {
	uint64_t idx, ts, dur, queue_ts; /* the call: place, start, length; the queue (ns) */
	uint32_t tid;
};

struct p1 {
	struct kx_wread *w;
	struct kx_engine eng;       /* each thread's calls in start order, to nest */
	struct kx_nesttrack nest;   /* the nesting rule on them */
	int flushed;                /* the reorder stage was emptied for a reason found */
	struct kx_rangewalk ranges; /* the annotation ranges, built as they pass */
	struct kx_whist *starts;    /* the plan's first level */
	struct kx_hmap threads;     /* pid << 32 | tid of the threads with ioctls or annotations */
	uint64_t last_key;          /* the latest added (calls come in runs of a thread) */
	uint64_t maxstart, seq;
	/* Records that may begin a trace event: ioctls, samples, ranges, marks. */
	uint64_t records;
	int any, oom, stop;
	int drop; /* w->store given up (kx_kxp_visitor's drop_store) */
	int want; /* w->store to be given up, once the device timelines took what it holds */
	/* The calls and samples that came while the store was kept: the store's
	 * first ones. Their starts join the plan's first level only once the
	 * file is to be read in windows (starts_catch_up). */
	size_t kept_ioctls, kept_samples;
	/* Device jobs: the timelines fed as the file is read once the store is
	 * let go, or annotation and job records both came (eager; till then the
	 * records noted: jobrec.order), the calls they
	 * took last (calls[idx % P1_CALLS]), the latest's place, the jobs whose
	 * flow waits for the calls' lengths, and a reason found linking them. */
	struct kx_wjobfeed jf;
	struct kx_jobflow_sink sink; /* the jobs it counts (p1_job_counted) */
	int fed;                     /* the timelines took every record noted (jobrec.order) */
	/* Annotation records and job records both came, and the file is to be
	 * read in windows (p1_eager): the timelines take the records noted now
	 * (the ranges' walk remembers the calls inside ranges a while only:
	 * rangewalk.h) and then each as it comes. */
	int eager;
	uint64_t seen_to;              /* res.read_to at the latest counted record */
	uint64_t at_bytes, at_records; /* the latest chunk boundary seen: bytes, records */
	struct kx_wcallmap names;      /* the calls the timelines took, by place: thread, number */
	size_t cur, cur_calls, cur_jobs; /* the next noted record to feed, its store index */
	struct p1_call *calls;
	uint64_t top_idx;
	struct p1_undecided *und;
	size_t nund, und_cap;
	const char *link_why;
	uint64_t anns; /* annotation records so far */
};

static int p1_active(const struct p1 *c)
{
	return !c->oom && !c->w->in_memory;
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
	if (!c->jf.f.swept)
		return;
	kx_rangewalk_dev_forget(&c->ranges, c->jf.f.swept_start);
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

/* A call the device timelines took: kept a while for the links. */
static int p1_flow_call(void *ctx, const struct kx_ioctl *e, uint64_t idx)
{
	struct p1 *c = ctx;

	if (!c->calls) {
		c->calls = malloc(P1_CALLS * sizeof(*c->calls));
		if (!c->calls)
			return -1;
		for (size_t i = 0; i < P1_CALLS; i++)
			c->calls[i].idx = UINT64_MAX;
	}
	/* Kept for the ranges once annotation records and job records came
	 * (p1_linked; before the first job record, each thread's last few). */
	if (kx_wcallmap_add(&c->names, e, idx, c->anns && c->w->jobrec.records))
		return -1;
	c->calls[idx % P1_CALLS] = (struct p1_call){idx, e->ts, e->dur, e->tid};
	if (idx > c->top_idx)
		c->top_idx = idx;
	return 0;
}

/*
 * A job counted with its submitting call, the file's call idx (jobflow's
 * on_linked; a whole store's feed names calls by place): its device time
 * goes to the ranges around the call, which the walk names by its thread
 * and number among the thread's calls (both the walk and the timelines
 * take each thread's calls in start order out of a reorder stage of one
 * rule: the same numbers). None of a call taken before the first
 * annotation record (not kept, unless among its thread's last few): a
 * range's push is written before the calls inside it return.
 */
static int p1_linked(void *ctx, uint32_t tid, uint64_t idx, uint64_t dev_ns)
{
	struct p1 *c = ctx;
	uint64_t n;
	int lost;

	if (!c->anns)
		return 0;
	if (!kx_wcallmap_find(&c->names, idx, &tid, &n, &lost)) {
		if (lost && !c->link_why)
			c->link_why = P1_RANGE_LINK;
		return 0;
	}
	return kx_rangewalk_dev(&c->ranges, tid, n, dev_ns);
}

/* Both bitmaps of jb cover call idx (grown, zeroed). 0, or -1 when out of memory. */
static int bits_cover(struct kx_wread_jobs *jb, uint64_t idx)
{
	size_t need = (size_t)(idx / 8) + 1, n = jb->nbytes, m;
	uint8_t *p;

	if (need <= n)
		return 0;
	m = need > 2 * n ? need : 2 * n;
	p = realloc(jb->submitted, m);
	if (!p)
		return -1;
	memset(p + n, 0, m - n);
	jb->submitted = p;
	p = realloc(jb->flow_from, m);
	if (!p)
		return -1;
	memset(p + n, 0, m - n);
	jb->flow_from = p;
	jb->nbytes = m;
	return 0;
}

/* Call idx submitted a job; drawn: the source of a drawn flow. 0, or -1. */
static int job_bits(struct kx_wread_jobs *jb, uint64_t idx, int drawn)
{
	if (bits_cover(jb, idx))
		return -1;
	jb->submitted[idx / 8] |= (uint8_t)(1u << (idx % 8));
	if (drawn)
		jb->flow_from[idx / 8] |= (uint8_t)(1u << (idx % 8));
	return 0;
}

/* Calls a job may be counted after its submitting call, at most: past
 * them, pass 2's copies of the submitting calls in between (its memory)
 * are a reason to read the file whole. */
#define P1_GAP ((uint64_t)1 << 22)

/* Job r's link to its submitting call (its start st): the call's bits, and
 * its flow (analysis/flows.h's rule) drawn or not. The call began at or
 * before the job's link time (its QUEUE, else its RUN), so the submit
 * point, that QUEUE inside the call or the call's start, is at or before
 * the start: drawn, unless the job ran before its QUEUE. Then the call's
 * start and length decide (a call kept, P1_CALLS), or only the length the
 * nesting rule gives it, known once the file is read (undecided till then).
 * 0, or -1 when out of memory. */
static int p1_link(struct p1 *c, const struct kx_jobrec *r, uint64_t st)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;
	uint64_t idx = (uint64_t)r->submit;
	const struct p1_call *e = c->calls ? &c->calls[idx % P1_CALLS] : NULL;
	int inside, drawn = 1;

	if (c->top_idx - idx > jb->gap)
		jb->gap = c->top_idx - idx;
	if (jb->gap > P1_GAP)
		c->link_why = "a job was counted more than 4194304 calls after its submitting call "
		              "(the calls a read in windows keeps for the links)";
	if (!r->queue_ts || !r->run_ts || r->run_ts >= r->queue_ts)
		return job_bits(jb, idx, drawn);
	if (!e || e->idx != idx) {
		c->link_why = "a job that ran before its queue event was counted more than 16384 "
		              "calls after its submitting call (the calls a read in windows keeps "
		              "for the links)";
		return 0;
	}
	inside = r->tid == e->tid && r->queue_ts >= e->ts && r->queue_ts - e->ts <= e->dur;
	if (inside && st >= e->ts) {
		if (kx_grow((void **)&c->und, &c->und_cap, c->nund, sizeof(*c->und)))
			return -1;
		c->und[c->nund++] = (struct p1_undecided){idx, e->ts, e->dur, r->queue_ts, e->tid};
		return job_bits(jb, idx, 0);
	}
	drawn = !inside && st >= e->ts;
	jb->flows_dropped += !drawn;
	return job_bits(jb, idx, drawn);
}

/* A job the device timelines counted (a kx_jobflow_sink's job): its start
 * joins the plan, its in-flight changes the lead, its link the bits. */
static int p1_job_counted(void *ctx, const struct kx_jobrec *r, uint32_t *id)
{
	struct p1 *c = ctx;
	struct kx_wread_jobs *jb = &c->w->jobrec;
	uint64_t st = kx_jobrec_start(r), in = r->queue_ts ? r->queue_ts : r->run_ts;
	uint64_t pts[2] = {in, in ? r->done_ts : 0};

	*id = 0;
	jb->njobs++;
	kx_whist_see(c->starts, st);
	if (st < jb->first_ns)
		jb->first_ns = st;
	for (int i = 0; i < 2; i++) {
		if (!pts[i])
			continue;
		if (pts[i] < jb->first_ns)
			jb->first_ns = pts[i];
		if (pts[i] < st && st - pts[i] > jb->lead_ns)
			jb->lead_ns = st - pts[i];
	}
	return r->submit >= 0 ? p1_link(c, r, st) : 0;
}

static int p1_job_lane(void *ctx, uint32_t id, uint32_t lane)
{
	(void)ctx;
	(void)id;
	(void)lane;
	return 0;
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

static int fix_cmp(const void *pa, const void *pb)
{
	const struct kx_wread_fix *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->dur < b->dur ? -1 : a->dur > b->dur;
}

/* The length the rule gave call e in the whole capture (a kx_timeline_set_fixes cut). */
static uint64_t fix_of(void *ctx, const struct kx_ioctl *e)
{
	const struct kx_wread *w = ctx;
	struct kx_wread_fix key = {.ts = e->ts, .dur = e->dur, .tid = e->tid};
	const struct kx_wread_fix *f =
	        w->nfix ? bsearch(&key, w->fixes, w->nfix, sizeof(*w->fixes), fix_cmp) : NULL;

	return f ? f->cut : e->dur;
}

int kx_wread_nest(const struct kx_wread *w, const struct kx_store *s, struct kx_analysis *an)
{
	if (!w->nfix)
		return 0;
	if (kx_timeline_set_fixes(an->timeline, s, fix_of, (void *)w))
		return -1;
	kx_timeline_counted(an->timeline, w->nfix, w->fix_threads);
	return 0;
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
	struct kx_stats rows = {0};
	int rc = kx_rangewalk_finish(sr, w->side, &rows);

	kx_stats_free(&rows);
	if (rc)
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

/* ---- the plan: the file as a source of event starts ---- */

/* A walk over the file: the starts of its calls and samples, and of its
 * jobs as the device timelines count them again (a file with job records). */
struct walk {
	struct kx_wpass *p;
	struct kx_wjobfeed jf;
	struct kx_jobflow_sink sink;
	int jobs, failed;
};

static void starts_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct walk *k = ctx;

	(void)arg;
	kx_wpass_see(k->p, e->ts);
	if (k->jobs && kx_wjobfeed_ioctl(&k->jf, e))
		k->failed = 1;
}

static void starts_sample(void *ctx, const struct kx_sample *s)
{
	struct walk *k = ctx;

	kx_wpass_see(k->p, s->ts_ns);
}

static void starts_job(void *ctx, const struct kx_job *j)
{
	struct walk *k = ctx;

	if (k->jobs && kx_wjobfeed_job(&k->jf, j))
		k->failed = 1;
}

static int starts_job_counted(void *ctx, const struct kx_jobrec *r, uint32_t *id)
{
	struct walk *k = ctx;

	*id = 0;
	kx_wpass_see(k->p, kx_jobrec_start(r));
	return 0;
}

static int walk_file(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	const struct kx_wread *w = ctx;
	struct walk k = {.p = p, .jobs = w->jobrec.records > 0};
	struct kx_kxp_visitor v = {
	        .ctx = &k, .ioctl = starts_ioctl, .sample = starts_sample, .job = starts_job};
	struct kx_kxp_read_result res;
	struct kx_capinfo ci;
	struct kx_jobs *o = NULL;
	int rc;

	k.sink = (struct kx_jobflow_sink){starts_job_counted, p1_job_lane, &k};
	kx_wjobfeed_init(&k.jf, &w->ci, &k.sink, NULL, NULL);
	kx_wpass_see_analysed(p, w->jobs, w->ranges);
	rc = kx_kxp_read_stream(w->path, &v, &ci, &res, err, errlen) ? -1 : 0;
	if (!rc && k.jobs && (k.failed || !(o = kx_wjobfeed_finish(&k.jf, w->mem)))) {
		snprintf(err, errlen, "out of memory planning the output's time windows");
		rc = -1;
	}
	kx_jobs_free(o);
	kx_wjobfeed_free(&k.jf);
	return rc;
}

/* The same walk over the file as the first read stored it (kept: every
 * record of the file), so that planning a kept file reads it no more. */
static int walk_store(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	const struct kx_wread *w = ctx;
	const struct kx_samples *sm = kx_store_samples(w->store);

	(void)err;
	(void)errlen;
	kx_wpass_see_analysed(p, w->jobs, w->ranges);
	for (size_t i = 0; i < kx_store_ioctl_count(w->store); i++)
		kx_wpass_see(p, kx_store_ioctl(w->store, i)->ts);
	for (size_t i = 0; sm && i < kx_samples_count(sm); i++)
		kx_wpass_see(p, kx_samples_get(sm, i)->ts);
	return 0;
}

/* The slice holding start ts (windows.h's kx_windows_find). */
static size_t window_of(const struct kx_windows *pl, uint64_t ts, size_t hint)
{
	return kx_windows_find(pl->slice, pl->nslices, ts, hint);
}

/* The late counter records by window (a counting sort, file order kept in
 * each): window k's are late_ctr[late_ctr_off[k] .. late_ctr_off[k + 1]).
 * 0, or -1 when out of memory. */
static int late_ctr_index(struct kx_wread *w)
{
	size_t n = w->plan.nslices;
	struct kx_wread_ctr *by = malloc((w->nlate_ctr + 1) * sizeof(*by));
	size_t *cur = calloc(n + 1, sizeof(*cur));

	w->late_ctr_off = calloc(n + 1, sizeof(*w->late_ctr_off));
	if (!by || !cur || !w->late_ctr_off) {
		free(by);
		free(cur);
		return -1;
	}
	for (size_t i = 0; i < w->nlate_ctr; i++) {
		w->late_ctr[i].win = (uint32_t)window_of(&w->plan, w->late_ctr[i].e.ts, 0);
		w->late_ctr_off[w->late_ctr[i].win + 1]++;
	}
	for (size_t k = 0; k < n; k++)
		w->late_ctr_off[k + 1] += w->late_ctr_off[k];
	memcpy(cur, w->late_ctr_off, n * sizeof(*cur));
	for (size_t i = 0; i < w->nlate_ctr; i++)
		by[cur[w->late_ctr[i].win]++] = w->late_ctr[i];
	free(w->late_ctr);
	free(cur);
	w->late_ctr = by;
	return 0;
}

static int plan(struct kx_wread *w, const struct kx_whist *starts, char *err, size_t errlen)
{
	/* A kept store's job records are not the stream's: the file is walked. */
	const struct kx_wsource src = {w->store && !w->jobrec.records ? walk_store : walk_file, w};

	if (kx_windows_plan_src(&src, starts, w->limit, w->slice, &w->plan, err, errlen))
		return -1;
	w->late_win = malloc((w->nlate + 1) * sizeof(*w->late_win));
	if (!w->late_win) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < w->nlate; i++)
		w->late_win[i] = (uint32_t)window_of(&w->plan, kx_store_ioctl(w->late, i)->ts, 0);
	if (late_ctr_index(w)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* Pass 2's filing of the jobs by slice, in the whole table's ring order
 * (f: pass 1's timelines, finished). 0, or -1 when out of memory. */
static int jobs_filing(struct kx_wread *w, const struct kx_jobflow *f, char *err, size_t errlen)
{
	struct kx_wread_jobs *jb = &w->jobrec;

	jb->wj = calloc(1, sizeof(*jb->wj));
	if (!jb->wj || kx_wjobs_init(jb->wj, w->plan.slice, w->plan.nslices) ||
	    kx_wjobs_rings(jb->wj, f, w->jobs)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
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

/* The starts of the first nio calls and nsmp samples of store s, which took
 * them in the order the first read saw them. 0, or -1 when it could not
 * take them all (out of memory). */
static int starts_catch_up(struct kx_whist *h, const struct kx_store *s, size_t nio, size_t nsmp)
{
	const struct kx_samples *sm = kx_store_samples(s);

	if (kx_store_not_stored(s) || kx_store_ioctl_count(s) < nio ||
	    (nsmp && (!sm || kx_samples_not_stored(sm) || kx_samples_count(sm) < nsmp)))
		return -1;
	for (size_t i = 0; i < nio; i++)
		kx_whist_see(h, kx_store_ioctl(s, i)->ts);
	for (size_t i = 0; i < nsmp; i++)
		kx_whist_see(h, kx_samples_get(sm, i)->ts);
	return 0;
}

/* Once the file is read: the whole capture's ranges, memory accounting
 * (their events join the plan's starts) and threads. 0, or -1 when out of
 * memory. */
/* The flows of the jobs counted undecided, now that the calls' drawn
 * lengths are known (fix_of). 0, or -1 when out of memory. */
static int p1_decide(struct p1 *c)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;

	for (size_t i = 0; i < c->nund; i++) {
		const struct p1_undecided *u = &c->und[i];
		const struct kx_ioctl e = {.ts = u->ts, .dur = u->dur, .tid = u->tid};
		/* Inside the call as drawn, the queue is the submit point, after the start. */
		int drawn = u->queue_ts - u->ts > fix_of(c->w, &e);

		jb->flows_dropped += !drawn;
		if (job_bits(jb, u->idx, drawn))
			return -1;
	}
	return 0;
}

/* Once every record of a file with job records is in, before the ranges
 * left open are closed (the jobs counted at the end give their calls'
 * ranges their device time first, as in memory): the whole capture's
 * device timelines and memory accounting (jobs: no jobs in it, kept apart
 * as wjobs.h files them). */
static void p1_device_end(struct p1 *c)
{
	struct kx_wread *w = c->w;

	w->jobs = kx_wjobfeed_finish(&c->jf, w->mem);
	if (!w->jobs && !c->link_why && !kx_wjobfeed_why(&c->jf))
		c->oom = 1;
}

/* Once the file is read, of a file with job records: the flows of the jobs
 * undecided. 0 (w->in_memory may be set now: a budget), or -1 when out of
 * memory. */
static int p1_device(struct p1 *c)
{
	struct kx_wread *w = c->w;
	const char *why = c->link_why ? c->link_why : kx_wjobfeed_why(&c->jf);

	if (why) {
		w->in_memory = why;
		return 0;
	}
	return w->jobs ? p1_decide(c) : -1;
}

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
	return starts_catch_up(c->starts, w->store, c->kept_ioctls, c->kept_samples);
}

int kx_wread_open_sliced(struct kx_wread *w, const char *path, size_t limit, size_t slice,
                         size_t budget, size_t keep, char *err, size_t errlen)
{
	struct p1 c;
	struct kx_kxp_visitor v = {
	        .ctx = &c,
	        .ioctl = p1_ioctl,
	        .task = p1_task,
	        .job = p1_job,
	        .ann = p1_ann,
	        .sample = p1_sample,
	        .ctr = p1_ctr,
	        .stop = &c.stop,
	        .drop_store = &c.drop,
	};
	int rc;

	if (p1_init(&c, w, path, limit, budget, keep)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->slice = slice;
	v.syms = kx_samples_syms(kx_store_samples(w->side));
	rc = kx_kxp_read_stream_tee(path, &v, w->store, &w->ci, &w->res, w->damage,
	                            sizeof(w->damage));
	/* A store to be let go: the timelines first take what they have not. */
	if (!rc && p1_active(&c) && !c.fed && (c.want || c.eager || c.records > w->limit))
		p1_catch_up(&c, 1);
	if (!rc && p1_active(&c) && c.want)
		c.drop = 1;
	if (!rc && p1_active(&c) && w->jobrec.records && c.fed)
		p1_device_end(&c);
	if (!rc && p1_active(&c) &&
	    (kx_rangewalk_close(&c.ranges, w->side, &c.eng) || kx_engine_finish(&c.eng) ||
	     kx_nesttrack_flush(&c.nest, p1_walk, &c)))
		c.oom = 1;
	if (!rc && p1_active(&c) && c.eng.forced)
		w->in_memory =
		        "calls of one thread overlap past the reorder window's memory budget";
	kx_engine_free(&c.eng);
	w->fix_threads = c.nest.fixed_threads + kx_rangewalk_cut_threads(&c.ranges, &c.nest);
	kx_nesttrack_free(&c.nest);
	if (w->nfix)
		qsort(w->fixes, w->nfix, sizeof(*w->fixes), fix_cmp);
	if (rc) {
		snprintf(err, errlen, "%s", w->damage);
		w->damage[0] = 0;
	} else if (p1_whole(&c)) {
		snprintf(err, errlen, "out of memory reading %s", path);
		rc = -1;
	}
	/* Records far from the order of time: windows would hold no less. */
	if (!rc && !w->in_memory && w->nlate > limit)
		w->in_memory = "records far from the order of time (more calls came late than a "
		               "window holds)";
	if (!rc && p1_let_go(&c)) {
		snprintf(err, errlen, "out of memory reading %s", path);
		rc = -1;
	}
	if (rc || c.drop) {
		kx_store_free(w->store);
		w->store = NULL;
	}
	kx_hmap_free(&c.threads);
	kx_ranges_free(c.ranges.out);
	kx_rangewalk_free(&c.ranges);
	/* A Chrome part's job tracks are drawn from its window's table whole:
	 * a file with job records is read a window, not a slice, at a time. */
	if (w->jobrec.records)
		w->slice = w->limit;
	if (!rc && !w->in_memory && !w->store)
		rc = plan(w, c.starts, err, errlen);
	if (!rc && !w->in_memory && !w->store && w->jobrec.records)
		rc = jobs_filing(w, &c.jf.f, err, errlen);
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
static int kept_timelines(struct kx_wread *w)
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

int kx_wread_plan_kept(struct kx_wread *w, char *err, size_t errlen)
{
	int rc;

	if (!w->starts || !w->store)
		return 0;
	if (kept_timelines(w)) {
		snprintf(err, errlen, "out of memory reading %s", w->path);
		return -1;
	}
	if (w->in_memory)
		return 0;
	if (starts_catch_up(w->starts, w->store, w->kept_ioctls, w->kept_samples)) {
		snprintf(err, errlen, "out of memory reading %s", w->path);
		rc = -1;
	} else {
		rc = plan(w, w->starts, err, errlen);
	}
	kx_whist_free(w->starts);
	w->starts = NULL;
	return rc;
}

/* ---- pass 2: the slices of the windows, in order ---- */

struct p2 {
	struct kx_wread *w;
	size_t *late_idx;        /* late ioctls by window, each window's in file order */
	size_t *late_off;        /* window k's are late_idx[late_off[k] .. late_off[k + 1]) */
	size_t *late_cur;        /* the next one of each window to put in */
	struct kx_store **store; /* each window's, while open */
	size_t open;             /* stores open now */
	size_t closed;           /* windows handed over */
	size_t hint;             /* the window of the latest record */
	uint64_t maxstart, seq;
	int any, stop, failed;
	kx_wread_fn fn;
	void *ctx;
	int rc;
	char *err;
	size_t errlen;
	/* A file with job records: the device timelines again, their jobs filed
	 * by slice (jobrec.wj); copies of the submitting calls they took (copy:
	 * place -> slot of copies) while a job may still link to them (those
	 * of the last jobrec.gap places: the links pass 1 found), in the order
	 * taken (fifo[fhead .. nfifo)), top the latest place; each open slice's
	 * calls' places in the file; the slice being handed over's part and
	 * table. */
	int jobs, flow_done;
	struct kx_wjobfeed jf;
	struct kx_hmap copy;
	struct kx_slots copies;
	uint64_t *fifo;
	size_t fhead, nfifo, fcap;
	uint64_t top;
	uint64_t **ids;
	size_t *nids, *idcap;
	struct kx_wjobs_part part;
	struct kx_wjobtab tab;
	uint8_t *sub, *from;
};

/* Window k's store, made with every task and the side store's samples. */
static struct kx_store *window_store(struct p2 *c, size_t k)
{
	const struct kx_store *side = c->w->side;
	struct kx_store *s = c->store[k];

	if (s)
		return s;
	s = kx_store_new(c->w->budget);
	if (!s)
		return NULL;
	for (size_t i = 0; i < kx_store_task_count(side); i++)
		kx_store_add_task(s, kx_store_task(side, i));
	/* Its late calls' counter records: a call finds its own by (thread, start). */
	for (size_t i = c->w->late_ctr_off[k]; i < c->w->late_ctr_off[k + 1]; i++)
		kx_store_add_ctr(s, &c->w->late_ctr[i].e);
	kx_store_borrow_samples(s, kx_store_samples(side));
	if (++c->open > c->w->peak_open)
		c->w->peak_open = c->open;
	return c->store[k] = s;
}

/* Call e (its argument bytes arg), the file's call idx, into window k's
 * store s; its place noted (a file with job records). 0, or -1 when out
 * of memory. */
static int add_call(struct p2 *c, struct kx_store *s, size_t k, const struct kx_ioctl *e,
                    const uint8_t *arg, uint64_t idx)
{
	size_t n = kx_store_ioctl_count(s);

	kx_store_add_ioctl(s, e, arg);
	if (!c->jobs || kx_store_ioctl_count(s) == n) /* refused: counted by the store */
		return 0;
	if (kx_grow((void **)&c->ids[k], &c->idcap[k], c->nids[k], sizeof(**c->ids)))
		return -1;
	c->ids[k][c->nids[k]++] = idx;
	return 0;
}

/* Puts window k's late ioctls placed before seq (all: UINT64_MAX) in s. 0,
 * or -1 when out of memory. */
static int put_late(struct p2 *c, struct kx_store *s, size_t k, uint64_t seq)
{
	const struct kx_store *late = c->w->late;

	for (; c->late_cur[k] < c->late_off[k + 1]; c->late_cur[k]++) {
		size_t i = c->late_idx[c->late_cur[k]];
		const struct kx_ioctl *e = kx_store_ioctl(late, i);

		if (c->w->late_seq[i] >= seq)
			return 0;
		if (add_call(c, s, k, e, kx_store_arg(late, e), c->w->late_seq[i]))
			return -1;
	}
	return 0;
}

static void p2_fail(struct p2 *c, const char *msg)
{
	if (!c->failed)
		snprintf(c->err, c->errlen, "%s", msg);
	c->failed = 1;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

/* Slice k's device jobs (its store s complete): its part of the jobs filed,
 * its table, and its view (the whole capture's counts, its calls' places
 * and bits), in jobrec.tab while it is handed over. 0, or -1 when out of
 * memory or its calls are not all placed. */
static int window_jobs(struct p2 *c, size_t k, const struct kx_store *s)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;
	size_t n = kx_store_ioctl_count(s);
	struct kx_jobview *v = &c->tab.view;

	if (c->nids[k] != n || kx_wjobs_take(jb->wj, &c->part))
		return -1;
	if (kx_wjobtab_make(&c->tab, c->w->jobs, &c->part, NULL, NULL))
		return -1;
	jb->tab = &c->tab;
	c->sub = calloc(n / 8 + 1, 1);
	c->from = calloc(n / 8 + 1, 1);
	if (!c->sub || !c->from)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t idx = c->ids[k][i];

		if (bit_of(jb->submitted, jb->nbytes, idx))
			c->sub[i / 8] |= (uint8_t)(1u << (i % 8));
		if (bit_of(jb->flow_from, jb->nbytes, idx))
			c->from[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	v->call_id = c->ids[k];
	v->submitted = c->sub;
	v->flow_from = c->from;
	v->njobs = jb->njobs;
	v->job_events = jb->records;
	v->flows_dropped = jb->flows_dropped;
	v->first_ns = jb->first_ns;
	return 0;
}

/* What window_jobs made for slice k, freed. */
static void window_jobs_free(struct p2 *c, size_t k)
{
	c->w->jobrec.tab = NULL;
	kx_wjobtab_free(&c->tab);
	kx_wjobs_part_free(&c->part);
	free(c->sub);
	free(c->from);
	c->sub = c->from = NULL;
	if (c->ids) {
		free(c->ids[k]);
		c->ids[k] = NULL;
	}
}

/* Hands the next window over, complete. */
static void close_next(struct p2 *c)
{
	size_t k = c->closed++;
	struct kx_store *s = window_store(c, k);

	if (!s || put_late(c, s, k, UINT64_MAX))
		return p2_fail(c, "out of memory");
	if (c->jobs && window_jobs(c, k, s)) {
		window_jobs_free(c, k);
		return p2_fail(c, "out of memory filing the device jobs by window");
	}
	c->rc = c->fn(c->ctx, s, k);
	if (c->jobs)
		window_jobs_free(c, k);
	kx_store_free(s);
	c->store[k] = NULL;
	c->open--;
	if (c->rc)
		__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

/* May slice k be handed over as far as its jobs go (wjobs.h's rule)? Every
 * job starting before its end swept, and every in-flight change falling in
 * it: the timelines swept a job starting at least jobrec.lead_ns past its
 * end (or finished). */
static int jobs_ready(const struct p2 *c, const struct kx_window *sl)
{
	const struct kx_jobflow *f = &c->jf.f;

	if (!c->jobs || c->flow_done)
		return 1;
	return f->swept && f->swept_start >= sl->to_ns &&
	       f->swept_start - sl->to_ns >= c->w->jobrec.lead_ns;
}

/* Hands over every slice complete: what comes later and is not late starts
 * at or after the latest start less the file's largest lag, which is past
 * its end, and its jobs are in. */
static void close_ready(struct p2 *c)
{
	const struct kx_windows *pl = &c->w->plan;
	const struct kx_window *sl = pl->slice;

	while (!c->stop && c->closed < pl->nslices && sl[c->closed].to_ns &&
	       c->maxstart >= sl[c->closed].to_ns &&
	       c->maxstart - sl[c->closed].to_ns >= c->w->lag_ns && jobs_ready(c, &sl[c->closed]))
		close_next(c);
}

static void p2_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct p2 *c = ctx;
	const struct kx_windows *pl = &c->w->plan;
	int late = is_late(c->any, c->maxstart, e->ts);
	uint64_t seq = c->seq++;

	if (c->stop)
		return;
	if (!c->any || e->ts > c->maxstart)
		c->maxstart = e->ts;
	c->any = 1;
	if (c->jobs && kx_wjobfeed_ioctl(&c->jf, e))
		return p2_fail(c, "out of memory");
	if (!late) {
		size_t k = c->hint = window_of(pl, e->ts, c->hint);
		struct kx_store *s;

		if (k < c->closed)
			return p2_fail(c, "the file changed while it was read (a record of a "
			                  "written part)");
		s = window_store(c, k);
		if (!s || put_late(c, s, k, seq) || add_call(c, s, k, e, arg, seq))
			return p2_fail(c, "out of memory");
	}
	close_ready(c);
}

/* A job record to the device timelines (the slices' jobs filed as they are
 * swept), as pass 1 fed it: the same reasons, none. */
static void p2_job(void *ctx, const struct kx_job *j)
{
	struct p2 *c = ctx;

	if (c->stop || !c->jobs)
		return;
	if (kx_wjobfeed_job(&c->jf, j))
		return p2_fail(c, "out of memory");
	if (kx_wjobfeed_why(&c->jf))
		return p2_fail(c, "the file changed while it was read (its device jobs differ)");
	close_ready(c);
}

/* The copies no job can link to any more go: those more than jobrec.gap
 * places before the latest (pass 1 found no link reach further back). */
static void copies_drop(struct p2 *c)
{
	while (c->fhead < c->nfifo && c->fifo[c->fhead] + c->w->jobrec.gap < c->top) {
		uint32_t *slot = kx_hmap_get(&c->copy, c->fifo[c->fhead]);

		if (slot) {
			kx_slots_put(&c->copies, *slot);
			kx_hmap_del(&c->copy, c->fifo[c->fhead]);
		}
		c->fhead++;
	}
	if (c->fhead > 1024 && 2 * c->fhead > c->nfifo) {
		memmove(c->fifo, c->fifo + c->fhead, (c->nfifo - c->fhead) * sizeof(*c->fifo));
		c->nfifo -= c->fhead;
		c->fhead = 0;
	}
}

/* A call the device timelines took: a submitting one (pass 1's bits) is
 * copied, as drawn, while a job counted may link to it. 0, or -1 when out
 * of memory. */
static int p2_flow_call(void *ctx, const struct kx_ioctl *e, uint64_t idx)
{
	struct p2 *c = ctx;
	const struct kx_wread_jobs *jb = &c->w->jobrec;
	struct kx_ioctl *d;
	long slot;

	if (idx > c->top)
		c->top = idx;
	copies_drop(c);
	if (!bit_of(jb->submitted, jb->nbytes, idx))
		return 0;
	slot = kx_slots_get(&c->copies);
	if (slot < 0 || kx_hmap_add(&c->copy, idx, (uint32_t)slot) ||
	    kx_grow((void **)&c->fifo, &c->fcap, c->nfifo, sizeof(*c->fifo)))
		return -1;
	c->fifo[c->nfifo++] = idx;
	d = kx_slots_at(&c->copies, (size_t)slot);
	*d = *e;
	d->dur = fix_of(c->w, e);
	d->arg_off = KX_NO_ARG;
	return 0;
}

/* A job's submitting call idx, as drawn (a kx_wjobs_call_fn). */
static int p2_submitter(void *ctx, uint64_t idx, struct kx_ioctl *out)
{
	struct p2 *c = ctx;
	const uint32_t *slot = kx_hmap_get(&c->copy, idx);

	if (!slot)
		return -1; /* not the feed pass 1 had */
	*out = *(const struct kx_ioctl *)kx_slots_at(&c->copies, *slot);
	return 0;
}

/* A counter record that is not late goes to the window of its call, open
 * (its record comes next, and is not late either). */
static void p2_ctr(void *ctx, const struct kx_ctr_ev *e)
{
	struct p2 *c = ctx;
	struct kx_store *s;
	size_t k;

	if (c->stop || is_late(c->any, c->maxstart, e->ts))
		return;
	k = c->hint = window_of(&c->w->plan, e->ts, c->hint);
	if (k < c->closed)
		return p2_fail(c,
		               "the file changed while it was read (a record of a written part)");
	s = window_store(c, k);
	if (!s)
		return p2_fail(c, "out of memory");
	kx_store_add_ctr(s, e);
}

/* The late ioctls by window (a counting sort, file order kept in each). */
static int late_index(struct p2 *c)
{
	const struct kx_wread *w = c->w;
	size_t n = w->plan.nslices;

	c->late_idx = malloc((w->nlate + 1) * sizeof(*c->late_idx));
	c->late_off = calloc(n + 1, sizeof(*c->late_off));
	c->late_cur = calloc(n + 1, sizeof(*c->late_cur));
	c->store = calloc(n, sizeof(*c->store));
	if (!c->late_idx || !c->late_off || !c->late_cur || !c->store)
		return -1;
	for (size_t i = 0; i < w->nlate; i++)
		c->late_off[w->late_win[i] + 1]++;
	for (size_t k = 0; k < n; k++)
		c->late_off[k + 1] += c->late_off[k];
	memcpy(c->late_cur, c->late_off, n * sizeof(*c->late_cur));
	for (size_t i = 0; i < w->nlate; i++)
		c->late_idx[c->late_cur[w->late_win[i]]++] = i;
	memcpy(c->late_cur, c->late_off, n * sizeof(*c->late_cur));
	return 0;
}

/* A file with job records: the device timelines fed again, their jobs to
 * jobrec.wj, each with a copy of its submitting call, kept for the last
 * jobrec.gap + 1 places. 0, or -1 when out of memory. */
static int p2_jobs_init(struct p2 *c)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;
	size_t n = c->w->plan.nslices;

	kx_wjobfeed_init(&c->jf, &c->w->ci, &jb->wj->sink, p2_flow_call, c);
	c->jobs = 1;
	c->copy = (struct kx_hmap)KX_HMAP_INIT;
	c->copies = (struct kx_slots)KX_SLOTS_INIT(struct kx_ioctl);
	c->ids = calloc(n, sizeof(*c->ids));
	c->nids = calloc(n, sizeof(*c->nids));
	c->idcap = calloc(n, sizeof(*c->idcap));
	if (!c->ids || !c->nids || !c->idcap)
		return -1;
	jb->wj->call = p2_submitter;
	jb->wj->call_ctx = c;
	return 0;
}

/* Once the file is read: the jobs the timelines hold swept (every slice's
 * jobs in then). 0, or -1 (said). */
static int p2_jobs_end(struct p2 *c)
{
	struct kx_jobs *o;

	if (!c->jobs || c->stop)
		return 0;
	o = kx_wjobfeed_finish(&c->jf, c->w->mem);
	c->flow_done = 1;
	if (!o) {
		p2_fail(c, kx_wjobfeed_why(&c->jf) ? "the file changed while it was read (its "
		                                     "device jobs differ)"
		                                   : "out of memory");
		return -1;
	}
	kx_jobs_free(o);
	if (c->w->jobrec.wj->lost) {
		p2_fail(c, "the file changed while it was read (a device job of a written part)");
		return -1;
	}
	return 0;
}

static void p2_free(struct p2 *c)
{
	for (size_t k = 0; c->store && k < c->w->plan.nslices; k++)
		kx_store_free(c->store[k]);
	for (size_t k = 0; c->ids && k < c->w->plan.nslices; k++)
		free(c->ids[k]);
	free(c->store);
	free(c->late_idx);
	free(c->late_off);
	free(c->late_cur);
	if (c->jobs) {
		kx_wjobfeed_free(&c->jf);
		c->w->jobrec.wj->call = NULL;
		kx_hmap_free(&c->copy);
		kx_slots_free(&c->copies);
	}
	free(c->fifo);
	free(c->ids);
	free(c->nids);
	free(c->idcap);
}

int kx_wread_run(struct kx_wread *w, kx_wread_fn fn, void *ctx, char *err, size_t errlen)
{
	struct p2 c = {.w = w, .fn = fn, .ctx = ctx, .err = err, .errlen = errlen};
	struct kx_kxp_visitor v = {
	        .ctx = &c, .ioctl = p2_ioctl, .ctr = p2_ctr, .job = p2_job, .stop = &c.stop};
	struct kx_kxp_read_result res;
	struct kx_capinfo ci;
	char rerr[512];

	err[0] = 0;
	if (late_index(&c) || (w->jobrec.wj && p2_jobs_init(&c))) {
		p2_free(&c);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (kx_kxp_read_stream(w->path, &v, &ci, &res, rerr, sizeof(rerr)))
		p2_fail(&c, rerr);
	else if (!c.stop && c.seq != w->whole.ioctls)
		p2_fail(&c, "the file changed while it was read (its ioctl records differ)");
	p2_jobs_end(&c);
	while (!c.stop && c.closed < w->plan.nslices)
		close_next(&c);
	p2_free(&c);
	return c.failed ? -1 : c.rc;
}

void kx_wread_lend_jobs(const struct kx_wread *w, struct kx_analysis *an)
{
	if (w->jobrec.tab) {
		kx_analysis_lend_jobs(an, &w->jobrec.tab->jobs);
		an->jview = &w->jobrec.tab->view;
	} else if (w->jobs) {
		kx_analysis_lend_jobs(an, w->jobs);
	}
}

void kx_wread_free(struct kx_wread *w)
{
	if (w->jobrec.wj)
		kx_wjobs_free(w->jobrec.wj);
	free(w->jobrec.wj);
	free(w->jobrec.submitted);
	free(w->jobrec.flow_from);
	free(w->jobrec.order);
	kx_store_free(w->store);
	kx_jobs_free(w->jobs);
	kx_store_free(w->mem);
	kx_ranges_free(w->ranges);
	kx_store_free(w->side);
	kx_store_free(w->late);
	free(w->late_ctr);
	free(w->late_ctr_off);
	free(w->late_seq);
	free(w->late_win);
	free(w->fixes);
	free(w->whole.threads);
	kx_windows_free(&w->plan);
	kx_whist_free(w->starts);
	memset(w, 0, sizeof(*w));
}
