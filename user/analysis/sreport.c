/*
 * The streamed report of a record file (contract: sreport.h): the rows as
 * the records pass; the calls nested through the engine's reorder stage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/engine.h"
#include "analysis/jobflow.h"
#include "analysis/jobs.h"
#include "analysis/nesttrack.h"
#include "analysis/ctrstats.h"
#include "analysis/rangewalk.h"
#include "analysis/sreport.h"
#include "model/perfdata.h"

/* What the visitor keeps between records. */
struct sr_ctx {
	struct kx_sreport *r;
	struct kx_stats_acc acc;
	struct kx_engine eng;        /* each thread's calls in start order, to nest */
	struct kx_engine flowq;      /* the same, to the device timelines */
	struct kx_nesttrack nest;    /* the nesting rule on them */
	struct kx_rangewalk *ranges; /* the annotation ranges (r->ranges) */
	struct kx_ctrjoin *ctr;      /* the counters joined to their calls, NULL: none named */
	struct kx_jobflow flow;      /* the device timelines as the records pass */
	int have_jobs;               /* a job record came (the calls go through flowq from then) */
	uint64_t range_cut;          /* calls the ranges' walk cut that the nesting rule did not */
	int flushed;                 /* the reorder stage was emptied for a reason found */
	int oom;
	int stop; /* set when the stream cannot give the report: the reader ends early */
};

/* Why nesting the calls on the stream does not give the report exactly:
 * calls later than the reorder window (a call after a later one of its
 * thread had left it), its memory exceeded, a call that came after the
 * device timelines took a later call of its thread (to pair a job record
 * their window behind); NULL: it does. The calls the rule shortens go on
 * with their shortened ends, as in memory, after the ranges of their start
 * memory orders before them (nesttrack.h). */
static const char *nest_why(const struct sr_ctx *c)
{
	if (c->eng.late_ioctls)
		return KX_NESTTRACK_LATE;
	if (c->eng.forced || c->flowq.forced)
		return "calls of one thread overlap past the reorder window's memory budget";
	if (c->flowq.late_ioctls && c->have_jobs)
		return "a call came after the device timelines took a later call of its thread "
		       "(they take every call begun before a job record they pair, 1 s or "
		       "16384 job records behind the latest)";
	return NULL;
}

/* The first reason found; the read then stops at the next chunk. A reason
 * of another kind first lets the records waiting in the reorder stage out:
 * a range among them that memory orders otherwise (nest_why) came before
 * it, and is the reason. */
static void sr_checked(struct sr_ctx *c)
{
	const char *why = c->ranges->why, *nest;

	if (!why && c->ctr)
		why = c->ctr->why; /* the counter join's budget */
	if (!why)
		why = c->flow.why;
	if (why && !c->flushed) {
		c->flushed = 1;
		if (kx_engine_finish(&c->eng))
			c->oom = 1;
	}
	nest = nest_why(c);
	if (nest)
		why = nest;
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

/* The calls whose jobs jobflow can no longer link or count are forgotten. */
static void sr_forget(struct sr_ctx *c)
{
	if (kx_rangewalk_dev_forget(c->ranges, c->flow.swept ? c->flow.swept_start : 0,
	                            kx_jobflow_linked_to(&c->flow)))
		sr_oom(c);
}

/* A job counted with its submit link (jobflow's on_linked): its device
 * time goes to the ranges around its call. */
static int sr_linked(void *ctx, uint32_t tid, uint64_t call_n, uint64_t dev_ns, unsigned int how)
{
	struct sr_ctx *c = ctx;

	return kx_rangewalk_dev(c->ranges, tid, call_n, dev_ns, how);
}

/* A job linked to its call (jobflow's on_link): the call waits for it. */
static int sr_link(void *ctx, uint32_t tid, uint64_t call_n)
{
	struct sr_ctx *c = ctx;

	return kx_rangewalk_link(c->ranges, tid, call_n);
}

static void sr_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct sr_ctx *c = ctx;

	if (!sr_active(c))
		return;
	kx_rangewalk_ioctl(c->ranges, e);
	if (kx_engine_feed_ioctl(&c->eng, e, arg) || kx_stats_acc_add(&c->r->st, &c->acc, e)) {
		sr_oom(c);
		return;
	}
	/* The calls memory accounting counts are kept for the memory rows (a
	 * refusal by the store's budget is counted by the store). */
	if (c->eng.last_mem)
		kx_store_add_ioctl(c->r->side, e, arg);
	/* Until the first job record the device timelines take the calls out
	 * of eng (sr_nest): a capture without jobs pays for no second stage. */
	if (c->have_jobs && kx_engine_feed_ioctl(&c->flowq, e, NULL)) {
		sr_oom(c);
		return;
	}
	sr_checked(c);
}

/* A call out of the device timelines' reorder stage, its thread's in start
 * order. */
static int sr_flow_call(void *ctx, const struct kx_ioctl *e)
{
	struct sr_ctx *c = ctx;

	if (kx_jobflow_ioctl(&c->flow, e))
		return -1;
	sr_forget(c);
	return 0;
}

/* Before a job record of time ts is paired: every call begun at or before
 * it out of the reorder stage to the device timelines (jobflow.h). */
static int sr_flow_upto(void *ctx, uint64_t ts)
{
	struct sr_ctx *c = ctx;

	return kx_engine_release(&c->flowq, ts);
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
	/* The calls waiting in eng go to flowq, and from now on every call. */
	if (!c->have_jobs && kx_engine_hand_calls(&c->eng, &c->flowq)) {
		sr_oom(c);
		return;
	}
	c->have_jobs = 1;
	if (kx_rangewalk_dev_start(c->ranges) || kx_jobflow_job(&c->flow, j)) {
		sr_oom(c);
		return;
	}
	sr_forget(c);
	sr_checked(c);
}

static void sr_ann(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	struct sr_ctx *c = ctx;

	if (!sr_active(c))
		return;
	if (kx_engine_feed_ann(&c->eng, a, name, cat)) {
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

	/* Records of counters the header does not name are not analysed, as
	 * in memory (analysis/ctrstats.h: no counter table). */
	if (!sr_active(c) || !c->ctr)
		return;
	if (kx_engine_feed_ctr(&c->eng, e)) {
		sr_oom(c);
		return;
	}
	sr_checked(c);
}

/* A call the ranges walk with the end the rule gave it (cut: shortened). */
static int sr_walk(void *ctx, const struct kx_ioctl *e, uint64_t end, int cut)
{
	struct sr_ctx *c = ctx;

	if (kx_rangewalk_call(c->ranges, e, end, KX_ENGINE_NOREF))
		return -1;
	/* A call spanning a range's end is cut there: memory's timeline adds
	 * it to its fixes (one fix a call), counted in the warning. */
	c->range_cut += c->ranges->cut_last && !cut;
	return 0;
}

/* A call out of the reorder stage, its thread's in start order. */
static int sr_nest(void *ctx, const struct kx_ioctl *e)
{
	struct sr_ctx *c = ctx;
	uint64_t end;
	int cut;

	if (c->ctr && kx_ctrjoin_ioctl(c->ctr, e, c->eng.out_seq))
		return -1;
	/* Before the first job record, the device timelines take it now. */
	if (!c->have_jobs && sr_flow_call(c, e))
		return -1;
	/* The ranges walk it with the end the rule gives it, as in memory. */
	if (kx_nesttrack_ioctl(&c->nest, e, &end, &cut))
		return -1;
	/* One the rule shortened waits for the ranges of its start memory
	 * orders before it (by its shortened length): they leave after it. */
	return kx_nesttrack_place(&c->nest, e, end, cut, sr_walk, c);
}

/* An annotation record as it comes: paired (the ranges' handles). */
static int sr_ann_in(void *ctx, const struct kx_ann *a, const char *name, const char *cat,
                     uint32_t *ref)
{
	struct sr_ctx *c = ctx;

	return kx_rangewalk_ann(c->ranges, a, name, cat, ref);
}

/* A thread range out of the reorder stage, among its thread's calls. */
static int sr_range(void *ctx, uint32_t tid, uint32_t ref)
{
	struct sr_ctx *c = ctx;

	if (kx_nesttrack_range(&c->nest, tid, c->eng.out_ts, c->eng.out_dur, sr_walk, c))
		return -1;
	return kx_rangewalk_range(c->ranges, tid, ref);
}

/* A range later than the reorder window: a reason. */
static int sr_late_range(void *ctx, uint32_t tid, uint32_t ref)
{
	struct sr_ctx *c = ctx;

	(void)tid;
	(void)ref;
	kx_rangewalk_late(c->ranges);
	return 0;
}

/* A counter record out of the reorder stage, just before its call. */
static int sr_ctr_out(void *ctx, const struct kx_ctr_ev *e)
{
	struct sr_ctx *c = ctx;

	return kx_ctrjoin_ctr(c->ctr, e);
}

/* A counter record after its call left the reorder stage: joined to it
 * as in memory, by its key (the join's budget is a reason). */
static int sr_ctr_late(void *ctx, const struct kx_ctr_ev *e)
{
	struct sr_ctx *c = ctx;

	return kx_ctrjoin_late(c->ctr, e);
}

/* A capture that names counters: they are joined to their calls as they come. */
static void sr_header(void *ctx, const struct kx_capinfo *ci)
{
	struct sr_ctx *c = ctx;

	if (!ci->counters.names[0] || c->ctr)
		return;
	c->ctr = malloc(sizeof(*c->ctr));
	if (!c->ctr || kx_ctrjoin_init(c->ctr, ci)) {
		free(c->ctr);
		c->ctr = NULL;
		sr_oom(c);
	}
}

/* The streamed device timelines once every record is in (or the reason
 * they are not exact). 0, or -1 when out of memory (err says so). */
static int sr_flow_finish(struct kx_sreport *r, struct sr_ctx *c, char *err, size_t errlen)
{
	if (kx_engine_finish(&c->flowq)) {
		snprintf(err, errlen, "out of memory summarising the device timelines");
		return -1;
	}
	r->timelines = kx_jobflow_finish(&c->flow, r->side, &r->timeline_rows);
	r->flow_jobs = c->flow.jobs;
	r->flow_held = c->flow.peak_held;
	r->flow_unblocked = c->flow.presumed + c->flow.early;
	if (r->timelines)
		return 0;
	if (c->flow.why) {
		r->in_memory = c->flow.why;
		return 0;
	}
	snprintf(err, errlen, "out of memory summarising the device timelines");
	return -1;
}

int kx_sreport_read(struct kx_sreport *r, const char *path, size_t budget, char *err, size_t errlen)
{
	struct sr_ctx c = {.r = r, .acc = KX_STATS_ACC_INIT, .nest = KX_NESTTRACK_INIT};
	const struct kx_engine_sinks out = {.ctx = &c,
	                                    .ioctl = sr_nest,
	                                    .ctr = sr_ctr_out,
	                                    .late_ctr = sr_ctr_late,
	                                    .range = sr_range,
	                                    .late_range = sr_late_range,
	                                    .ann = sr_ann_in};
	const struct kx_engine_sinks flow_out = {.ctx = &c, .ioctl = sr_flow_call};
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
	kx_engine_init(&c.eng, KX_ENGINE_LATE_NS, KX_ENGINE_BUDGET, &out);
	c.eng.measured = 1;
	kx_engine_init(&c.flowq, KX_ENGINE_LATE_NS, KX_ENGINE_BUDGET, &flow_out);
	c.flowq.measured = 1;
	r->side = kx_store_new(budget);
	kx_jobflow_init(&c.flow, &r->ci);
	c.flow.on_linked = sr_linked;
	c.flow.on_link = sr_link;
	c.flow.linked_ctx = &c;
	c.flow.calls_upto = sr_flow_upto;
	c.flow.calls_ctx = &c;
	r->ranges = malloc(sizeof(*r->ranges));
	if (r->ranges) {
		kx_rangewalk_init(r->ranges);
		r->ranges->dev_stream = 1;
	}
	c.ranges = r->ranges;
	if (!r->side || !kx_store_samples(r->side) || !r->ranges) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v.syms = kx_samples_syms(kx_store_samples(r->side));
	err[0] = 0;
	rc = kx_kxp_read_stream(path, &v, &r->ci, &r->res, err, errlen);
	/* The jobs counted at the end give their calls' ranges their device
	 * time before the ranges left open are closed (those have no row). */
	if (rc == 0 && sr_active(&c) && c.have_jobs)
		rc = sr_flow_finish(r, &c, err, errlen);
	if (rc == 0 && sr_active(&c) &&
	    (kx_rangewalk_close(r->ranges, r->side, &c.eng) || kx_engine_finish(&c.eng) ||
	     kx_nesttrack_flush(&c.nest, sr_walk, &c)))
		sr_oom(&c);
	r->threads = c.eng.ioctl_threads;
	r->nest_fixed = c.nest.fixed + c.range_cut;
	r->nest_threads = c.nest.fixed_threads + kx_rangewalk_cut_threads(r->ranges, &c.nest);
	r->kept = kx_store_ioctl_count(r->side);
	kx_engine_free(&c.eng);
	kx_engine_free(&c.flowq);
	kx_nesttrack_free(&c.nest);
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
	    !(r->counters = kx_ctrjoin_finish(c.ctr, &r->ci))) {
		snprintf(err, errlen, "out of memory summarising the counters");
		rc = -1;
	}
	if (c.ctr)
		kx_ctrjoin_free(c.ctr);
	free(c.ctr);
	kx_jobflow_free(&c.flow);
	if (rc == 0 && r->in_memory)
		kx_stats_free(&r->st);
	return rc;
}

int kx_sreport_apply(struct kx_sreport *r, struct kx_analysis *an)
{
	if (r->timelines) {
		if (kx_stats_append(&r->st, &r->timeline_rows))
			return -1;
		kx_analysis_lend_jobs(an, r->timelines);
	} else if (kx_stats_add_jobs(&r->st, an->jobs)) {
		return -1;
	}
	kx_timeline_counted(an->timeline, r->nest_fixed, r->nest_threads);
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
	kx_stats_free(&r->timeline_rows);
	kx_jobs_free(r->timelines);
	r->timelines = NULL;
	kx_store_free(r->side);
	r->side = NULL;
}
