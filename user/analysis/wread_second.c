/*
 * Pass 2 of a record file read in time windows (contract: wread.h; the
 * parts: wread_int.h): the file read again, each window's (or slice's)
 * store filled in file order with every task, the side store's samples,
 * its late calls at their places and its counter records; a file with job
 * records runs the device timelines again and files their jobs by window
 * (wjobs.h), with copies of their submitting calls as drawn; each window
 * is handed over, in order, once no record of it can come any more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/wread.h"
#include "analysis/wread_int.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/slots.h"

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
		size_t k = c->hint = wr_window_of(pl, e->ts, c->hint);
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
	d->dur = wr_fix_of(c->w, e);
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
	k = c->hint = wr_window_of(&c->w->plan, e->ts, c->hint);
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
