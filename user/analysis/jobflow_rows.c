/*
 * The streamed device timelines' result (jobflow_int.h): the rings and
 * devices in their final order with their figures, and the job rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"

/* What ring_cmp sorts by. */
struct ring_order {
	const struct kx_jobflow_ring *rings;
	const uint32_t *newidx; /* the devices' final order */
};

static int ring_cmp(const void *pa, const void *pb, void *arg)
{
	const struct ring_order *o = arg;
	const struct kx_jobflow_ring *a = &o->rings[*(const size_t *)pa],
	                             *b = &o->rings[*(const size_t *)pb];
	uint32_t da = o->newidx[a->dev], db = o->newidx[b->dev];

	if (da != db)
		return da < db ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void dist_of_row(struct kx_dist *d, struct kx_stat_row *r)
{
	memset(d, 0, sizeof(*d));
	if (!r->count)
		return;
	kx_stat_row_percentiles(r);
	*d = (struct kx_dist){r->count, r->total, r->min, r->max, r->p50, r->p90, r->p99};
}

/* A ring's row (exec or queue) moved to the end of rows. */
static int row_out(struct kx_stats *rows, struct kx_stat_row *r, const char *dev, const char *ring,
                   const char *what)
{
	struct kx_stat_row *nr = realloc(rows->rows, (rows->nrows + 1) * sizeof(*nr));
	char name[64];

	if (!nr)
		return -1;
	rows->rows = nr;
	snprintf(name, sizeof(name), "%s %s", ring, what);
	snprintf(r->cat, sizeof(r->cat), "jobs/%.42s", dev);
	r->name = strdup(name);
	if (!r->name)
		return -1;
	nr[rows->nrows++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

/* The rings in their final order (by device, then name), with ids; ord
 * gets f->rings' index of each. 0, or -1 when out of memory. */
static int make_rings(struct kx_jobflow *f, struct kx_jobs *o, const uint32_t *newidx, size_t *ord)
{
	struct ring_order ro = {f->rings, newidx};

	o->rings = calloc(f->nrings ? f->nrings : 1, sizeof(*o->rings));
	if (!o->rings)
		return -1;
	for (size_t i = 0; i < f->nrings; i++)
		ord[i] = i;
	qsort_r(ord, f->nrings, sizeof(*ord), ring_cmp, &ro);
	for (size_t k = 0; k < f->nrings; k++) {
		struct kx_jobflow_ring *r = &f->rings[ord[k]];
		struct kx_jobring *g = &o->rings[k];
		struct kx_jobdev *d = &o->devs[newidx[r->dev]];

		snprintf(g->name, sizeof(g->name), "%s", r->name);
		r->final = (uint32_t)k;
		g->dev = newidx[r->dev];
		if (!d->nrings)
			d->first_ring = (uint32_t)k;
		g->id = d->nrings++;
		g->nlanes = r->nlanes;
		g->njobs = r->njobs;
		g->completed = r->completed;
		g->linked = r->linked;
		g->waited = r->waited;
		g->busy_ns = jf_union_len(&r->busy, f->end_ns);
		dist_of_row(&g->exec, &r->exec);
		dist_of_row(&g->queue, &r->queue);
	}
	o->nrings = f->nrings;
	return 0;
}

static void dev_figures(struct kx_jobflow *f, struct kx_jobs *o, const uint32_t *newidx)
{
	for (size_t i = 0; i < f->nfdev; i++) {
		struct kx_jobflow_dev *s = &f->fdev[i];
		struct kx_jobdev *d = &o->devs[newidx[i]];

		if (s->any)
			jf_depth_note(s);
		d->njobs = s->njobs;
		d->completed = s->completed;
		d->incomplete = s->incomplete;
		d->no_queue = s->no_queue;
		d->linked = s->linked;
		d->busy_ns = jf_union_len(&s->busy, f->end_ns);
		d->max_depth = s->max_depth;
		if (o->end_ns > o->start_ns) {
			d->busy_fraction = (double)d->busy_ns / (double)(o->end_ns - o->start_ns);
			if (d->busy_fraction > 1.0)
				d->busy_fraction = 1.0;
		}
	}
}

/* The job rows, as stats.c's add_job_rows makes them: per ring in order
 * (ord: f->rings' index of each), "<ring> exec" and "<ring> queue delay"
 * when it timed any. */
static int job_rows(struct kx_jobflow *f, const struct kx_jobs *o, const size_t *ord,
                    struct kx_stats *rows)
{
	for (size_t k = 0; k < o->nrings; k++) {
		const struct kx_jobring *g = &o->rings[k];
		struct kx_jobflow_ring *r = &f->rings[ord[k]];
		const char *dev = o->devs[g->dev].name;

		if (!g->exec.count && !g->queue.count)
			continue;
		if (row_out(rows, &r->exec, dev, g->name, "exec"))
			return -1;
		if (g->queue.count && row_out(rows, &r->queue, dev, g->name, "queue delay"))
			return -1;
	}
	return 0;
}

/* The devices in their final order, then the rings, figures and rows
 * (newidx, ord: room for them). */
static int take_devs(struct kx_jobflow *f, struct kx_jobs *o, uint32_t *newidx, size_t *ord,
                     struct kx_stats *rows)
{
	if (kx_jobdevtab_order(&f->devs, newidx))
		return -1;
	o->devs = f->devs.devs;
	o->ndevs = f->devs.n;
	f->devs.devs = NULL;
	f->devs.n = 0;
	if (make_rings(f, o, newidx, ord))
		return -1;
	dev_figures(f, o, newidx);
	kx_jobdevs_unique_names(o->devs, o->ndevs);
	return rows ? job_rows(f, o, ord, rows) : 0;
}

uint32_t kx_jobflow_ring_final(const struct kx_jobflow *f, uint32_t ring)
{
	return f->rings[ring].final;
}

int jf_result(struct kx_jobflow *f, struct kx_jobs *o, const struct kx_store *mem,
              struct kx_stats *rows)
{
	uint32_t *newidx;
	size_t *ord;
	int rc = -1;

	f->anom.runs_without_exit = f->has_kvm ? f->runs - f->runs_used : 0;
	o->anom = f->anom;
	o->store = mem;
	o->jobs = calloc(1, sizeof(*o->jobs));
	o->submitted = calloc(1, 1);
	if (!o->jobs || !o->submitted || kx_jobs_memory(mem, &f->devs, &o->nvmem))
		return -1;
	newidx = malloc((f->devs.n ? f->devs.n : 1) * sizeof(*newidx));
	ord = malloc((f->nrings ? f->nrings : 1) * sizeof(*ord));
	if (newidx && ord)
		rc = take_devs(f, o, newidx, ord, rows);
	free(newidx);
	free(ord);
	return rc;
}
