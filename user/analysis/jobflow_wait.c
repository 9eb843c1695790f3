/*
 * The streamed device timelines' GPU waiters (jobflow_int.h): the wait
 * calls of GPU drivers kept while a DONE to come may fall inside them (by
 * start), and the best of them for a GPU job counted.
 */
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"
#include "util/grow.h"
#include "util/lbound.h"

/* The wait calls still able to hold a DONE to come: those that return at
 * or after the earliest DONE of a job not counted yet (or waiting for its
 * ring's driver). */
static uint64_t waits_low(const struct kx_jobflow *f)
{
	uint64_t low = f->rel_ts;

	if (f->chead < f->nclosed && f->closed[f->chead].done < low)
		low = f->closed[f->chead].done;
	jf_pend_low(f, &low);
	return low;
}

/* Before the first GPU job record (no job counted yet to bound them), the
 * latest time a wait must end by to be kept: the streamed read's window
 * behind the latest time seen (one held past it is dropped, f->wait_unkept). */
static uint64_t waits_early(const struct kx_jobflow *f)
{
	if (f->gpu_seen || f->now <= f->lim.window_ns)
		return 0;
	return f->now - f->lim.window_ns;
}

/* w dropped before it can be ruled out: a DONE to come inside it is told. */
static void wait_unkeep(struct kx_jobflow *f, const struct kx_jobflow_wait *w)
{
	if (w->end > f->wait_unkept)
		f->wait_unkept = w->end;
}

/* The waits that cannot hold a DONE to come dropped (their order kept), and
 * before the first GPU job record those out of its window (told). */
static void waits_prune(struct kx_jobflow *f)
{
	uint64_t low = waits_low(f), early = waits_early(f);
	size_t keep = 0;

	f->wlongest = 0;
	for (size_t i = 0; i < f->nwaits; i++) {
		const struct kx_jobflow_wait *w = &f->waits[i];

		if (w->end < low)
			continue;
		if (w->end < early) {
			wait_unkeep(f, w);
			continue;
		}
		if (w->end - w->ts > f->wlongest)
			f->wlongest = w->end - w->ts;
		f->waits[keep++] = *w;
	}
	f->nwaits = keep;
	f->wprune = keep * 2 > 1024 ? keep * 2 : 1024;
}

/* Before the first GPU job record, past the budget: the earlier half by
 * start dropped (told). */
static void waits_halve(struct kx_jobflow *f)
{
	size_t half = f->nwaits / 2;

	for (size_t i = 0; i < half; i++)
		wait_unkeep(f, &f->waits[i]);
	memmove(f->waits, f->waits + half, (f->nwaits - half) * sizeof(*f->waits));
	f->nwaits -= half;
}

/* w inserted by start (the calls come nearly so: from the back). */
static void waits_insert(struct kx_jobflow *f, const struct kx_jobflow_wait *w)
{
	size_t i = f->nwaits++;

	while (i && f->waits[i - 1].ts > w->ts) {
		f->waits[i] = f->waits[i - 1];
		i--;
	}
	f->waits[i] = *w;
	if (w->end - w->ts > f->wlongest)
		f->wlongest = w->end - w->ts;
}

/* A GPU driver's wait call e (id): kept while a job may end inside it. Those
 * that cannot any more are dropped now and then (a wait kept longer is
 * never a waiter: it returned before every DONE to come). Before the first
 * GPU job record they are kept within the window and the budget (a DONE
 * inside one dropped is told); a whole store without GPU jobs keeps none. */
int jf_wait_call(struct kx_jobflow *f, const struct kx_ioctl *e, uint64_t id)
{
	int wait = 0;

	if (!kx_drv_gpu(e->drv) || kx_wait_ioctl(&f->names, e, &wait))
		return kx_drv_gpu(e->drv) ? -1 : 0;
	if (!wait)
		return 0;
	if (!f->gpu_seen && f->whole)
		return 0;
	if (f->nwaits >= f->wprune || f->nwaits >= f->lim.waits)
		waits_prune(f);
	/* Past the budget, the jobs waiting for their ring's driver are counted
	 * on its fallback (jobflow_pend.c): the waits kept for them go. */
	if (f->nwaits >= f->lim.waits && f->npend) {
		int spilt = jf_pend_spill(f);

		if (spilt < 0 || (spilt && jf_release(f, 0)))
			return -1;
		waits_prune(f);
	}
	if (f->waited_any && e->ts <= f->waited_max)
		jf_because(
		        f,
		        "a wait call came after a GPU job it may have waited for was counted (it "
		        "came more than the streamed read's window, 1 s or 16384 records, after "
		        "that job's DONE)");
	if (f->nwaits >= f->lim.waits && !f->gpu_seen)
		waits_halve(f);
	if (f->nwaits >= f->lim.waits) {
		jf_because(f, "too many wait calls of GPU drivers around the jobs not counted yet");
		return 0;
	}
	if (kx_grow((void **)&f->waits, &f->wcap, f->nwaits, sizeof(*f->waits)))
		return -1;
	waits_insert(f,
	             &(struct kx_jobflow_wait){e->ts, kx_ioctl_end(e), id, e->pid, e->tid, e->drv});
	return 0;
}

static uint64_t wait_ts_at(const void *ctx, size_t i)
{
	return ((const struct kx_jobflow_wait *)ctx)[i].ts;
}

/* The first wait kept that began at or after at (ns). */
static size_t waits_from(const struct kx_jobflow *f, uint64_t at)
{
	return kx_lbound(0, f->nwaits, at, wait_ts_at, f->waits);
}

/* The waiter of GPU job t of device d among the wait calls (jobs.h's
 * waiter rule): those begun at or before its DONE, at most the longest
 * wait kept before it. */
void jf_find_waiter(struct kx_jobflow *f, struct kx_tjob *t, const struct kx_jobdev *d)
{
	struct kx_waitcand best = {0, 0, 0}, c;
	uint64_t done = t->r.done_ts;
	int found = 0;

	if (t->r.waiter_tid || !done || !kx_job_src_gpu(t->r.src))
		return;
	if (done <= f->wait_unkept)
		jf_because(f, "a GPU job's DONE may fall inside a GPU driver's wait call dropped "
		              "before the first GPU job record (past 65536 wait calls kept, or "
		              "returned more than the streamed read's window, 1 s, before the "
		              "latest call)");
	if (!f->waited_any || done > f->waited_max)
		f->waited_max = done;
	f->waited_any = 1;
	for (size_t i = waits_from(f, done > f->wlongest ? done - f->wlongest : 0);
	     i < f->nwaits && f->waits[i].ts <= done; i++) {
		const struct kx_jobflow_wait *w = &f->waits[i];

		if (w->end < done || !kx_waiter_fits(d, &(struct kx_ioctl){.drv = w->drv}))
			continue;
		c = (struct kx_waitcand){w->pid, w->end, w->id};
		if (!found || kx_waiter_better(&c, &best, t->r.pid)) {
			best = c;
			t->r.waiter_tid = w->tid;
			t->r.wait = f->whole ? (int64_t)(w->id - 1) : (int64_t)w->ts;
			found = 1;
		}
	}
}
