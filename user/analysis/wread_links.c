/*
 * The device jobs of a record file read in time windows (contract:
 * wread.h; the parts: wread_int.h), as pass 1's device timelines count
 * them: their starts and in-flight changes for the plan, their links to
 * their submitting calls (two bits a file call: submitted a job, the
 * source of a drawn flow; analysis/flows.h's rule, undecided till the
 * calls' drawn lengths are known), their device time to the annotation
 * ranges around their calls (rangewalk.h's kx_rangewalk_dev), and the
 * timelines' end.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/wread.h"
#include "analysis/wread_int.h"
#include "util/grow.h"

/* A job of a call inside annotation ranges names its call to the ranges'
 * walk by the call's thread and number (rangewalk.h), found among the
 * calls kept for it (wcallmap.h). */
#define P1_RANGE_LINK                                                                              \
	"annotation ranges with device jobs: a job was counted more than 4194304 calls after "     \
	"its submitting call (the calls a read in windows keeps to give a range its calls' jobs)"
_Static_assert(KX_WCALLMAP_MAX == 4194304u, "P1_RANGE_LINK states KX_WCALLMAP_MAX");

/* A call the device timelines took: kept a while for the links. */
int p1_flow_call(void *ctx, const struct kx_ioctl *e, uint64_t idx)
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
int p1_linked(void *ctx, uint32_t tid, uint64_t idx, uint64_t dev_ns, unsigned int how)
{
	struct p1 *c = ctx;
	uint64_t n;
	int lost;

	if (!c->anns)
		return 0;
	if (!kx_wcallmap_find(&c->names, idx, &tid, &n, &lost)) {
		if (lost && !c->link_why && (how & KX_JOBFLOW_DEV))
			c->link_why = P1_RANGE_LINK;
		return 0;
	}
	return kx_rangewalk_dev(&c->ranges, tid, n, dev_ns, how);
}

/* A job linked to its submitting call, the file's call idx (jobflow's
 * on_link): the ranges' walk keeps the call until the job is counted. */
int p1_linking(void *ctx, uint32_t tid, uint64_t idx)
{
	struct p1 *c = ctx;
	uint64_t n;
	int lost;

	if (!c->anns || !kx_wcallmap_find(&c->names, idx, &tid, &n, &lost))
		return 0;
	return kx_rangewalk_link(&c->ranges, tid, n);
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
int p1_job_counted(void *ctx, const struct kx_jobrec *r, uint32_t *id)
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

int p1_job_lane(void *ctx, uint32_t id, uint32_t lane)
{
	(void)ctx;
	(void)id;
	(void)lane;
	return 0;
}

/* The flows of the jobs counted undecided, now that the calls' drawn
 * lengths are known (wr_fix_of). 0, or -1 when out of memory. */
static int p1_decide(struct p1 *c)
{
	struct kx_wread_jobs *jb = &c->w->jobrec;

	for (size_t i = 0; i < c->nund; i++) {
		const struct p1_undecided *u = &c->und[i];
		const struct kx_ioctl e = {.ts = u->ts, .dur = u->dur, .tid = u->tid};
		/* Inside the call as drawn, the queue is the submit point, after the start. */
		int drawn = u->queue_ts - u->ts > wr_fix_of(c->w, &e);

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
void p1_device_end(struct p1 *c)
{
	struct kx_wread *w = c->w;

	w->jobs = kx_wjobfeed_finish(&c->jf, w->mem);
	if (!w->jobs && !c->link_why && !kx_wjobfeed_why(&c->jf))
		c->oom = 1;
}

/* Once the file is read, of a file with job records: the flows of the jobs
 * undecided. 0 (w->in_memory may be set now: a budget), or -1 when out of
 * memory. */
int p1_device(struct p1 *c)
{
	struct kx_wread *w = c->w;
	const char *why = c->link_why ? c->link_why : kx_wjobfeed_why(&c->jf);

	if (why) {
		w->in_memory = why;
		return 0;
	}
	return w->jobs ? p1_decide(c) : -1;
}
