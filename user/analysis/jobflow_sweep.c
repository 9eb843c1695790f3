/*
 * The streamed device timelines' made jobs (jobflow_int.h): classified,
 * counted into their ring's and device's figures, held, then swept in
 * start order for lanes, busy time and the most in flight.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"
#include "util/grow.h"

static int u64_less(const void *a, const void *b)
{
	return *(const uint64_t *)a < *(const uint64_t *)b;
}

static int u32_less(const void *a, const void *b)
{
	return *(const uint32_t *)a < *(const uint32_t *)b;
}

static int lane_less(const void *a, const void *b)
{
	return ((const struct fl_lane *)a)->end < ((const struct fl_lane *)b)->end;
}

/* By start, then in the order the builder made them. */
static int job_less(const void *pa, const void *pb)
{
	const struct fl_job *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start;
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

KX_MINHEAP_TYPED(held, struct fl_job, job_less)

void jf_sweep_init(struct kx_jobflow *f)
{
	f->held = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_job, job_less);
}

void jf_sweep_free(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->nrings; i++) {
		kx_minheap_free(&f->rings[i].ends);
		kx_minheap_free(&f->rings[i].free);
		kx_stat_row_free(&f->rings[i].exec);
		kx_stat_row_free(&f->rings[i].queue);
	}
	free(f->rings);
	for (size_t i = 0; i < f->nfdev; i++)
		kx_minheap_free(&f->fdev[i].outs);
	free(f->fdev);
	kx_minheap_free(&f->held);
}

static void union_add(struct fl_union *u, uint64_t a, uint64_t b)
{
	if (u->any && a <= u->e) {
		if (b > u->e)
			u->e = b;
		return;
	}
	if (u->any)
		u->total += u->e - u->a;
	u->a = a;
	u->e = b;
	u->any = 1;
}

uint64_t jf_union_len(const struct fl_union *u, uint64_t end_ns)
{
	uint64_t e = u->e == FL_TO_END ? (end_ns > u->a ? end_ns : u->a) : u->e;

	return u->total + (u->any ? e - u->a : 0);
}

/* The jobs in flight once every change at d->cur is in. */
void jf_depth_note(struct kx_jobflow_dev *d)
{
	uint64_t n;

	while (d->outs.n && *(const uint64_t *)kx_minheap_top(&d->outs) <= d->cur)
		kx_minheap_pop(&d->outs, NULL);
	n = d->outs.n + d->open;
	if (n > d->max_depth)
		d->max_depth = (uint32_t)n;
}

/* The end of a lane's last job: one to the end (FL_TO_END) ends at the
 * capture's end once that is known. */
static uint64_t lane_end(const struct kx_jobflow *f, const struct fl_lane *l)
{
	return l->end == FL_TO_END && f->end_ns ? f->end_ns : l->end;
}

/* Job j's lane: the first of its ring free at its start (its last job
 * ended at or before it), else a new one. -1 when out of memory. */
static long lane_of(const struct kx_jobflow *f, struct kx_jobflow_ring *r, const struct fl_job *j)
{
	struct fl_lane l;
	uint32_t lane;

	while (r->ends.n && lane_end(f, kx_minheap_top(&r->ends)) <= j->start) {
		kx_minheap_pop(&r->ends, &l);
		if (kx_minheap_push(&r->free, &l.lane))
			return -1;
	}
	if (r->free.n)
		kx_minheap_pop(&r->free, &lane);
	else
		lane = r->nlanes++;
	if (kx_minheap_push(&r->ends, &(struct fl_lane){j->end, lane}))
		return -1;
	return lane;
}

static int sweep(struct kx_jobflow *f, const struct fl_job *j)
{
	struct kx_jobflow_ring *r = &f->rings[j->ring];
	struct kx_jobflow_dev *d = &f->fdev[r->dev];
	long lane = lane_of(f, r, j);

	if (lane < 0 || (f->sink && f->sink->lane(f->sink->ctx, j->sunk, (uint32_t)lane)))
		return -1;
	if (j->busy) {
		union_add(&r->busy, j->start, j->end);
		union_add(&d->busy, j->start, j->end);
	}
	if (j->in) {
		if (d->any && j->in != d->cur)
			jf_depth_note(d);
		d->cur = j->in;
		d->any = 1;
		if (!j->done)
			d->open++;
		else if (kx_minheap_push(&d->outs, &j->end))
			return -1;
	}
	f->swept_start = j->start;
	f->swept_ts = j->ts;
	f->swept_seq = j->seq;
	f->swept = 1;
	return 0;
}

/* The earliest open block request's place (stale entries dropped), NULL: none. */
static const struct fl_openref *open_first(struct kx_jobflow *f)
{
	while (f->opens.n) {
		const struct fl_openref *o = kx_minheap_top(&f->opens);
		const struct fl_kjob *k = kx_slots_at(&f->open, o->slot);

		if (k->gen == o->gen)
			return o;
		kx_minheap_pop(&f->opens, NULL);
	}
	return NULL;
}

/* Does held job j come before every job open request o may make? */
static int before_open(const struct fl_job *j, const struct fl_openref *o)
{
	if (j->start != o->start)
		return j->start < o->start;
	if (j->ts != o->ts)
		return j->ts < o->ts;
	return j->seq < o->seq;
}

/* Records waiting for earlier ones (jobflow_keyed.c) may open jobs that
 * start at their time: before held job top goes, those at or before its
 * start are paired (when the sweeps go by the budget of held jobs, before
 * the records' own window; an earlier record that comes later is then
 * out of time order, a reason). 1 when some were (top may not be first
 * any more), 0 when none wait, 2 when a pairing is under way already (a
 * job it counted called: the pairing's caller sweeps after it), -1 when
 * out of memory. */
static int recs_before(struct kx_jobflow *f, const struct fl_job *top)
{
	int rc;

	if (!f->recq.n || ((const struct fl_recref *)kx_minheap_top(&f->recq))->ts > top->start)
		return 0;
	if (f->pairing)
		return 2;
	f->pairing = 1;
	rc = jf_recs_release(f, top->start + 1);
	f->pairing = 0;
	return rc ? -1 : 1;
}

/* The held jobs whose turn has come: started the window (f->lim) before
 * the latest time seen, before every open request and every record
 * waiting, or past its held jobs (behind an open request: past those it
 * holds; all: at the end). */
int jf_release(struct kx_jobflow *f, int all)
{
	struct fl_job j;

	while (f->held.n) {
		const struct fl_job *top = kx_minheap_top(&f->held);
		const struct fl_openref *o = all ? NULL : open_first(f);
		int blocked = o && !before_open(top, o);

		if (!all && (blocked || !jf_out_of_window(f, top->start, f->now))) {
			int spilt;

			if (f->held.n <= f->lim.held)
				return 0;
			/* Past the budget, the jobs waiting for their ring's driver are
			 * counted on its fallback (jobflow_pend.c): they stop holding. */
			if (blocked &&
			    ((const struct fl_kjob *)kx_slots_at(&f->open, o->slot))->pending) {
				spilt = jf_pend_spill(f);
				if (spilt < 0)
					return -1;
				if (!spilt) /* being counted (jf_pend_spill) */
					return 0;
				continue;
			}
			if (blocked) {
				int took;

				if (f->held.n <= f->lim.behind)
					return 0;
				/* A GPU job: counted now (jf_keyed_unblock). */
				took = jf_keyed_unblock(f, o->slot);
				if (took < 0)
					return -1;
				if (took)
					continue;
				jf_because(f,
				           "a device job stayed open (no DONE, or a GPU job within "
				           "the window after it) while more than 32768 later jobs "
				           "completed");
			}
		}
		if (!all) {
			int paired = recs_before(f, top);

			if (paired < 0)
				return -1;
			if (paired == 2) /* pairing them: the outer call sweeps */
				return 0;
			if (paired)
				continue;
		}
		held_pop(&f->held, &j);
		if (sweep(f, &j))
			return -1;
	}
	return 0;
}

static struct kx_jobflow_ring *ring_get(struct kx_jobflow *f, uint32_t dev, const char *name)
{
	struct kx_jobflow_ring *r;

	for (size_t i = 0; i < f->nrings; i++)
		if (f->rings[i].dev == dev && !strcmp(f->rings[i].name, name))
			return &f->rings[i];
	if (kx_grow((void **)&f->rings, &f->rcap, f->nrings, sizeof(*f->rings)))
		return NULL;
	r = &f->rings[f->nrings++];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->dev = dev;
	r->ends = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_lane, lane_less);
	r->free = (struct kx_minheap)KX_MINHEAP_INIT(uint32_t, u32_less);
	r->exec.min = r->queue.min = UINT64_MAX;
	r->exec.job = r->queue.job = 1;
	return r;
}

/* Room for the sweeps of every device of f->devs. */
static int devs_room(struct kx_jobflow *f)
{
	struct kx_jobflow_dev *nd;

	if (f->nfdev >= f->devs.n)
		return 0;
	nd = realloc(f->fdev, f->devs.n * sizeof(*nd));
	if (!nd)
		return -1;
	f->fdev = nd;
	for (size_t i = f->nfdev; i < f->devs.n; i++) {
		memset(&nd[i], 0, sizeof(nd[i]));
		nd[i].outs = (struct kx_minheap)KX_MINHEAP_INIT(uint64_t, u64_less);
	}
	f->nfdev = f->devs.n;
	return 0;
}

/* A job's counts and rows (exact up to exact values a row). */
static int fold(struct kx_jobflow_ring *r, struct kx_jobflow_dev *d, const struct kx_jobrec *j,
                size_t exact)
{
	uint64_t x; /* ns */

	r->njobs++;
	r->completed += j->done_ts != 0;
	r->linked += j->submit >= 0;
	r->waited += j->waiter_tid != 0;
	d->njobs++;
	d->completed += j->done_ts != 0;
	d->incomplete += (j->flags & KX_JOBF_INCOMPLETE) != 0;
	d->no_queue += (j->flags & KX_JOBF_NO_QUEUE) != 0;
	d->linked += j->submit >= 0;
	if (kx_jobrec_exec(j, &x) && kx_stat_row_add_bounded(&r->exec, x, exact))
		return -1;
	if (kx_jobrec_queue_delay(j, 0, &x) && kx_stat_row_add_bounded(&r->queue, x, exact))
		return -1;
	return 0;
}

/* Job t, counted with its submit link, to on_linked: its device time, and
 * the end of its announcement (on_link: a keyed job's). 0, or -1 when out
 * of memory. */
static int linked_out(struct kx_jobflow *f, const struct kx_tjob *t)
{
	uint64_t start = kx_jobrec_start(&t->r);
	unsigned int how = 0;

	if (t->r.done_ts && t->r.done_ts >= start)
		how |= KX_JOBFLOW_DEV;
	if (f->on_link && t->r.src != KX_JOB_SRC_KVM)
		how |= KX_JOBFLOW_LINKED;
	if (!how)
		return 0;
	return f->on_linked(f->linked_ctx, t->r.tid, (uint64_t)t->r.submit,
	                    how & KX_JOBFLOW_DEV ? t->r.done_ts - start : 0, how);
}

/* The held job of t (made by the record of time ts and place seq) on ring. */
static struct fl_job held_job(const struct kx_tjob *t, uint64_t ts, uint64_t seq, uint64_t end_ns,
                              uint32_t ring)
{
	uint64_t a, b; /* ns, its busy interval (as drawn: start and end) */

	return (struct fl_job){
	        .start = kx_jobrec_start(&t->r),
	        .end = kx_jobrec_end(&t->r, end_ns),
	        .in = t->r.queue_ts ? t->r.queue_ts : t->r.run_ts,
	        .ts = ts,
	        .seq = seq,
	        .ring = ring,
	        .busy = (uint8_t)kx_jobrec_busy(&t->r, end_ns, &a, &b),
	        .done = t->r.done_ts != 0,
	};
}

/* A job whose phases are all in (t; made by the record of time ts and
 * place seq): classified, given its device and ring (jobs.h's
 * rules), counted, held. end_ns: the capture's end (an incomplete job
 * ends there; 0 before the end). late: why, when it comes after later
 * jobs were swept. */
int jf_job_out(struct kx_jobflow *f, struct kx_tjob *t, uint64_t ts, uint64_t seq, uint64_t end_ns,
               unsigned int submit_drv, unsigned int ring_drv, const char *late)
{
	struct kx_jobflow_ring *r;
	struct fl_job h;
	long dev;

	kx_tjob_classify(t, &f->anom);
	kx_tjob_ring_name(t);
	dev = kx_jobdevtab_assign(&f->devs, t, submit_drv, ring_drv);
	if (dev < 0 || devs_room(f))
		return -1;
	jf_find_waiter(f, t, &f->devs.devs[dev]);
	kx_tjob_ring_fallback(t);
	r = ring_get(f, (uint32_t)dev, t->ring);
	if (!r || fold(r, &f->fdev[dev], &t->r, f->lim.exact))
		return -1;
	if (f->on_linked && t->r.submit >= 0 && linked_out(f, t))
		return -1;
	h = held_job(t, ts, seq, end_ns, (uint32_t)(r - f->rings));
	if (f->sink) {
		struct kx_jobrec s = t->r;

		s.ring = h.ring;
		s.dev = (uint32_t)dev;
		if (f->sink->job(f->sink->ctx, &s, &h.sunk))
			return -1;
	}
	if (f->swept && !job_less(&(struct fl_job){.start = f->swept_start,
	                                           .ts = f->swept_ts,
	                                           .seq = f->swept_seq},
	                          &h))
		jf_because(f, late);
	f->jobs++;
	if (held_push(&f->held, &h) || (!f->spilling && jf_release(f, 0)))
		return -1;
	if (f->held.n > f->peak_held)
		f->peak_held = f->held.n;
	return 0;
}
