/* Device jobs filed by time window (contract: wjobs.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/wjobs.h"
#include "util/grow.h"

/* The window of time ts, or -1 when that window is taken already (counted). */
static long win_of(struct kx_wjobs *w, uint64_t ts)
{
	size_t k = w->hint = kx_windows_find(w->win, w->nwin, ts, w->hint);

	if (k < w->taken) {
		w->lost++;
		return -1;
	}
	return (long)k;
}

static int tick_add(struct kx_wjobs *w, uint64_t ts, uint32_t dev, int32_t delta)
{
	long k = win_of(w, ts);
	struct kx_wjobs_win *x;

	if (k < 0)
		return 0;
	x = &w->w[k];
	if (kx_grow((void **)&x->ticks, &x->tcap, x->nticks, sizeof(*x->ticks)))
		return -1;
	x->ticks[x->nticks++] = (struct kx_wjobs_tick){ts, dev, delta};
	return 0;
}

/* A job counted (kx_jobflow_sink.job): it waits for its lane. */
static int sink_job(void *ctx, const struct kx_jobrec *r, uint32_t *id)
{
	struct kx_wjobs *w = ctx;
	long i = kx_slots_get(&w->wait);
	struct kx_wjobs_job *j;

	if (i < 0)
		return -1;
	j = kx_slots_at(&w->wait, (size_t)i);
	memset(j, 0, sizeof(*j));
	j->r = *r;
	*id = (uint32_t)i;
	if (w->call && r->submit >= 0)
		return w->call(w->call_ctx, (uint64_t)r->submit, &j->call);
	return 0;
}

/* A job swept (kx_jobflow_sink.lane): complete, into its window, with its
 * place in the table and its in-flight changes. */
static int sink_lane(void *ctx, uint32_t id, uint32_t lane)
{
	struct kx_wjobs *w = ctx;
	struct kx_wjobs_job j = *(const struct kx_wjobs_job *)kx_slots_at(&w->wait, id);
	uint64_t in;
	long k;

	kx_slots_put(&w->wait, id);
	if (j.r.ring >= w->nrings)
		return -1; /* not the feed kx_wjobs_rings saw */
	j.r.lane = lane;
	j.r.ring = w->ring_final[j.r.ring];
	if (j.r.ring >= w->ntrings)
		return -1;
	j.index = w->ring_next[j.r.ring]++;
	j.r.dev = w->ring_dev[j.r.ring];
	k = win_of(w, kx_jobrec_start(&j.r));
	if (k >= 0) {
		struct kx_wjobs_win *x = &w->w[k];

		if (kx_grow((void **)&x->jobs, &x->cap, x->n, sizeof(*x->jobs)))
			return -1;
		x->jobs[x->n++] = j;
	}
	in = j.r.queue_ts ? j.r.queue_ts : j.r.run_ts;
	if (!in)
		return 0;
	if (tick_add(w, in, j.r.dev, 1))
		return -1;
	return j.r.done_ts ? tick_add(w, j.r.done_ts, j.r.dev, -1) : 0;
}

int kx_wjobs_init(struct kx_wjobs *w, const struct kx_window *win, size_t nwin)
{
	memset(w, 0, sizeof(*w));
	w->sink = (struct kx_jobflow_sink){sink_job, sink_lane, w};
	w->wait = (struct kx_slots)KX_SLOTS_INIT(struct kx_wjobs_job);
	w->win = win;
	w->nwin = nwin;
	w->w = calloc(nwin ? nwin : 1, sizeof(*w->w));
	return w->w ? 0 : -1;
}

int kx_wjobs_rings(struct kx_wjobs *w, const struct kx_jobflow *f, const struct kx_jobs *o)
{
	uint64_t first = 0;

	w->nrings = f->nrings;
	w->ntrings = o->nrings;
	w->ndevs = o->ndevs;
	w->ring_final = calloc(w->nrings + 1, sizeof(*w->ring_final));
	w->ring_next = calloc(w->ntrings + 1, sizeof(*w->ring_next));
	w->ring_dev = calloc(w->ntrings + 1, sizeof(*w->ring_dev));
	w->depth = calloc(w->ndevs + 1, sizeof(*w->depth));
	if (!w->ring_final || !w->ring_next || !w->ring_dev || !w->depth)
		return -1;
	for (size_t r = 0; r < w->ntrings; r++)
		w->ring_dev[r] = o->rings[r].dev;
	for (size_t r = 0; r < w->nrings; r++)
		w->ring_final[r] = kx_jobflow_ring_final(f, (uint32_t)r);
	/* A table ring's first job: the jobs of the rings before it (kx_jobs_build's order). */
	for (size_t t = 0; t < w->ntrings; t++) {
		w->ring_next[t] = first;
		first += o->rings[t].njobs;
	}
	return 0;
}

static int job_cmp(const void *pa, const void *pb)
{
	const struct kx_wjobs_job *a = pa, *b = pb;

	return a->index < b->index ? -1 : a->index > b->index;
}

static int tick_cmp(const void *pa, const void *pb)
{
	const struct kx_wjobs_tick *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Each device's depth points of the window's changes x (sorted by device,
 * then time): the jobs in flight once every change at a time is applied,
 * from those before the window. 0, or -1 when out of memory. */
static int part_depth(struct kx_wjobs *w, const struct kx_wjobs_win *x, struct kx_wjobs_part *p)
{
	p->ndevs = w->ndevs;
	p->depth = calloc(w->ndevs + 1, sizeof(*p->depth));
	p->ndepth = calloc(w->ndevs + 1, sizeof(*p->ndepth));
	if (!p->depth || !p->ndepth)
		return -1;
	for (size_t i = 0; i < x->nticks;) {
		uint32_t d = x->ticks[i].dev;
		size_t n = 0;

		while (i + n < x->nticks && x->ticks[i + n].dev == d)
			n++;
		if (d >= w->ndevs)
			return -1;
		p->depth[d] = malloc(n * sizeof(**p->depth));
		if (!p->depth[d])
			return -1;
		for (size_t e = i + n; i < e; i++) {
			w->depth[d] += (uint32_t)x->ticks[i].delta;
			if (i + 1 < e && x->ticks[i + 1].ts == x->ticks[i].ts)
				continue;
			p->depth[d][p->ndepth[d]++] =
			        (struct kx_depth_pt){x->ticks[i].ts, w->depth[d]};
		}
	}
	return 0;
}

int kx_wjobs_take(struct kx_wjobs *w, struct kx_wjobs_part *out)
{
	struct kx_wjobs_win *x;
	int rc;

	memset(out, 0, sizeof(*out));
	if (w->taken >= w->nwin)
		return -1;
	x = &w->w[w->taken++];
	if (x->n)
		qsort(x->jobs, x->n, sizeof(*x->jobs), job_cmp);
	if (x->nticks)
		qsort(x->ticks, x->nticks, sizeof(*x->ticks), tick_cmp);
	out->jobs = x->jobs;
	out->njobs = x->n;
	rc = part_depth(w, x, out);
	free(x->ticks);
	memset(x, 0, sizeof(*x));
	if (rc)
		kx_wjobs_part_free(out);
	return rc;
}

void kx_wjobs_part_free(struct kx_wjobs_part *p)
{
	for (size_t d = 0; p->depth && d < p->ndevs; d++)
		free(p->depth[d]);
	free(p->depth);
	free(p->ndepth);
	free(p->jobs);
	memset(p, 0, sizeof(*p));
}

void kx_wjobs_free(struct kx_wjobs *w)
{
	for (size_t k = 0; w->w && k < w->nwin; k++) {
		free(w->w[k].jobs);
		free(w->w[k].ticks);
	}
	free(w->w);
	free(w->ring_final);
	free(w->ring_next);
	free(w->ring_dev);
	free(w->depth);
	kx_slots_free(&w->wait);
	memset(w, 0, sizeof(*w));
}
