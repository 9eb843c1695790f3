/*
 * The streamed report of a record file (contract: sreport.h): the rows as
 * the records pass, while analysis/streamcheck.h says a stream does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/jobs.h"
#include "analysis/rangewalk.h"
#include "analysis/sctrstats.h"
#include "analysis/sreport.h"
#include "analysis/streamcheck.h"
#include "model/perfdata.h"

/* What the visitor keeps between records. */
struct sr_ctx {
	struct kx_sreport *r;
	struct kx_stats_acc acc;
	struct kx_streamcheck check;
	struct kx_rangewalk *ranges; /* the annotation ranges (r->ranges) */
	struct kx_sctrstats *ctr;    /* the counters (r->ctr), NULL: none named */
	struct kx_jobs_keep jobs;    /* what the device timelines need, kept in r->side */
	int oom;
	int stop; /* set when the stream cannot give the report: the reader ends early */
};

/* The first reason found (the check's, then the ranges'); the read then
 * stops at the next chunk. */
static void sr_checked(struct sr_ctx *c)
{
	const char *why = c->check.why ? c->check.why : c->ranges->why;

	if (!why && c->ctr)
		why = c->ctr->why;
	if (!why)
		why = c->jobs.why;
	if (!why && c->jobs.have_jobs && c->ranges->events)
		why = "annotation ranges with device jobs (the device time of each range)";

	if (!why || c->r->in_memory)
		return;
	c->r->in_memory = why;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

static void sr_oom(struct sr_ctx *c)
{
	c->oom = 1;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

static int sr_active(const struct sr_ctx *c)
{
	return !c->oom && !c->r->in_memory;
}

static void sr_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct sr_ctx *c = ctx;

	if (!sr_active(c))
		return;
	if (kx_streamcheck_ioctl(&c->check, e, arg) || kx_rangewalk_ioctl(c->ranges, e) ||
	    (c->ctr && kx_sctrstats_ioctl(c->ctr, e)) || kx_stats_acc_add(&c->r->st, &c->acc, e)) {
		sr_oom(c);
		return;
	}
	/* What the memory rows and the device timelines need is kept: the side
	 * store's analysis gives them. */
	if (kx_jobs_keep_ioctl(&c->jobs, e, arg, c->check.last_mem)) {
		sr_oom(c);
		return;
	}
	sr_checked(c);
}

static void sr_task(void *ctx, const struct kx_task *t)
{
	struct sr_ctx *c = ctx;

	/* A refused task is counted by the store, as when reading into one. */
	if (sr_active(c))
		kx_store_add_task(c->r->side, t);
}

static void sr_job(void *ctx, const struct kx_job *j)
{
	struct sr_ctx *c = ctx;

	if (!sr_active(c))
		return;
	if (kx_jobs_keep_job(&c->jobs, j)) {
		sr_oom(c);
		return;
	}
	sr_checked(c);
}

static void sr_ann(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	struct sr_ctx *c = ctx;

	if (!sr_active(c))
		return;
	if (kx_rangewalk_ann(c->ranges, a, name, cat)) {
		sr_oom(c);
		return;
	}
	sr_checked(c);
}

static void sr_sample(void *ctx, const struct kx_sample *s)
{
	struct sr_ctx *c = ctx;

	if (sr_active(c))
		kx_store_add_sample(c->r->side, s);
}

static void sr_drm(void *ctx, const struct kx_drm_ev *e)
{
	struct sr_ctx *c = ctx;

	if (sr_active(c))
		kx_store_add_drm(c->r->side, e);
}

static void sr_ctr(void *ctx, const struct kx_ctr_ev *e)
{
	struct sr_ctx *c = ctx;

	if (!sr_active(c))
		return;
	if (!c->ctr)
		kx_streamcheck_ctr(&c->check); /* records of counters the header does not name */
	else if (kx_sctrstats_ctr(c->ctr, e)) {
		sr_oom(c);
		return;
	}
	sr_checked(c);
}

/* A capture that names counters: they are joined to their calls as they come. */
static void sr_header(void *ctx, const struct kx_capinfo *ci)
{
	struct sr_ctx *c = ctx;

	if (!ci->counters.names[0] || c->ctr)
		return;
	c->ctr = malloc(sizeof(*c->ctr));
	if (!c->ctr || kx_sctrstats_init(c->ctr, ci)) {
		free(c->ctr);
		c->ctr = NULL;
		sr_oom(c);
	}
}

int kx_sreport_read(struct kx_sreport *r, const char *path, size_t budget, char *err, size_t errlen)
{
	struct sr_ctx c = {.r = r, .acc = KX_STATS_ACC_INIT, .check = KX_STREAMCHECK_INIT};
	struct kx_kxp_visitor v = {
	        .ctx = &c,
	        .header = sr_header,
	        .ioctl = sr_ioctl,
	        .task = sr_task,
	        .job = sr_job,
	        .ann = sr_ann,
	        .sample = sr_sample,
	        .ctr = sr_ctr,
	        .drm = sr_drm,
	        .stop = &c.stop,
	};
	int rc;

	memset(r, 0, sizeof(*r));
	c.check.keep_mem = 1;
	r->side = kx_store_new(budget);
	kx_jobs_keep_init(&c.jobs, r->side);
	r->ranges = malloc(sizeof(*r->ranges));
	if (r->ranges)
		kx_rangewalk_init(r->ranges);
	c.ranges = r->ranges;
	if (!r->side || !kx_store_samples(r->side) || !r->ranges) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v.syms = kx_samples_syms(kx_store_samples(r->side));
	err[0] = 0;
	rc = kx_kxp_read_stream(path, &v, &r->ci, &r->res, err, errlen);
	r->threads = kx_streamcheck_threads(&c.check);
	if (rc == 0 && !c.oom)
		kx_jobs_keep_finish(&c.jobs);
	r->jobs = c.jobs.kept_jobs;
	r->kept = kx_store_ioctl_count(r->side);
	kx_jobs_keep_free(&c.jobs);
	kx_streamcheck_free(&c.check);
	if (kx_stats_acc_finish(&r->st, &c.acc, &r->ci, rc == 0 && !c.oom) && rc == 0) {
		snprintf(err, errlen, "out of memory summarising the ioctls");
		rc = -1;
	}
	if (rc == 0 && !r->in_memory && kx_rangewalk_finish(r->ranges, r->side, &r->st)) {
		snprintf(err, errlen, "out of memory summarising the annotation ranges");
		rc = -1;
	}
	if (rc == 0 && !r->in_memory)
		sr_checked(&c); /* a reason found at the end */
	if (rc == 0 && !r->in_memory && c.ctr &&
	    !(r->counters = kx_sctrstats_finish(c.ctr, &r->ci))) {
		snprintf(err, errlen, "out of memory summarising the counters");
		rc = -1;
	}
	if (c.ctr)
		kx_sctrstats_free(c.ctr);
	free(c.ctr);
	if (rc == 0 && r->in_memory)
		kx_stats_free(&r->st);
	return rc;
}

int kx_sreport_apply(struct kx_sreport *r, struct kx_analysis *an)
{
	if (kx_stats_add_jobs(&r->st, an->jobs))
		return -1;
	if (an->ranges)
		kx_rangewalk_counts(r->ranges, an->ranges);
	if (r->counters) {
		kx_ctrstats_free(an->counters);
		an->counters = r->counters;
		r->counters = NULL;
	}
	return 0;
}

void kx_sreport_free(struct kx_sreport *r)
{
	if (r->ranges)
		kx_rangewalk_free(r->ranges);
	free(r->ranges);
	r->ranges = NULL;
	kx_ctrstats_free(r->counters);
	r->counters = NULL;
	kx_stats_free(&r->st);
	kx_store_free(r->side);
	r->side = NULL;
}
