/*
 * Device timelines in a Chrome trace (see chrome_int.h; analysis/jobs.h):
 * an "X" slice per job on its ring lane's thread of the device's
 * pseudo-process (named after its submitting ioctl, category job/<source>),
 * a flow arrow ("s" at the submit point inside the submitting ioctl, "f"
 * with "bp":"e" at the job's start, never earlier: analysis/flows.h; id =
 * job index + 1), and "C" counter tracks "in flight" (jobs queued or
 * running), "memory" (bytes allocated through the device's ioctls) and
 * NVIDIA memory per process (bytes).
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/flows.h"
#include "export/chrome_int.h"
#include "export/evnames.h"

/* Moves the time base to the jobs' first event if earlier (one window's:
 * the whole capture's, analysis.h's kx_jobview). */
int cr_jobs_prepare(struct ctx *c)
{
	const struct kx_jobs *jb = c->jobs;
	const struct kx_jobview *v = c->an->jview;

	c->jobpid = calloc(jb->ndevs + 1, sizeof(*c->jobpid));
	if (!c->jobpid)
		return -1;
	if (v && v->first_ns < c->first_ts)
		c->first_ts = v->first_ns;
	for (size_t k = 0; !v && k < jb->njobs; k++) {
		uint64_t t = kx_jobrec_start(&jb->jobs[k]);

		if (t < c->first_ts)
			c->first_ts = t;
	}
	for (size_t d = 0; d < jb->ndevs; d++) {
		if (!v && jb->devs[d].ndepth && jb->devs[d].depth[0].ts < c->first_ts)
			c->first_ts = jb->devs[d].depth[0].ts;
		if (jb->devs[d].nmem && jb->devs[d].mem[0].ts < c->first_ts)
			c->first_ts = jb->devs[d].mem[0].ts;
	}
	return 0;
}

static void arg_u64(struct wbuf *w, const char *key, uint64_t v)
{
	wb_need(w, 64);
	PUT_LIT(w, ",\"");
	put_mem(w, key, strlen(key));
	PUT_LIT(w, "\":");
	put_u64(w, v);
}

/* A job's args after its ring: its ids, submitter, waiter and what its source adds. */
static void job_args(struct wbuf *w, const struct kx_jobrec *j)
{
	uint64_t qd; /* ns */

	arg_u64(w, j->src == KX_JOB_SRC_BLOCK ? "sector" : "ctx",
	        j->src == KX_JOB_SRC_BLOCK ? j->seqno : j->ctx);
	if (j->src != KX_JOB_SRC_BLOCK)
		arg_u64(w, "seqno", j->seqno);
	if (j->pid)
		arg_u64(w, "submitter_pid", j->pid);
	if (j->tid)
		arg_u64(w, "submitter_tid", j->tid);
	if (j->client)
		arg_u64(w, "client_id", j->client);
	if (j->waiter_tid)
		arg_u64(w, "waiter_tid", j->waiter_tid);
	if (j->src == KX_JOB_SRC_BLOCK)
		arg_u64(w, "bytes", j->aux);
	if (j->src == KX_JOB_SRC_KVM && j->done_ts)
		arg_u64(w, "exit_reason", j->aux);
	if (j->src == KX_JOB_SRC_MSM && j->aux && j->aux2 >= j->aux)
		arg_u64(w, "device_ticks", j->aux2 - j->aux);
	if (j->submit >= 0)
		arg_u64(w, "correlation_id", (uint64_t)j->submit + 1);
	wb_need(w, 96);
	if (kx_jobrec_queue_delay(j, 0, &qd)) {
		PUT_LIT(w, ",\"queue_delay_us\":");
		put_us(w, qd);
	}
	if (j->flags & KX_JOBF_INCOMPLETE)
		PUT_LIT(w, ",\"incomplete\":true");
	if (j->flags & KX_JOBF_NO_QUEUE)
		PUT_LIT(w, ",\"no_queue\":true");
}

/* The arrow of job k from the submit point to its start (analysis/flows.h),
 * when it has one; pid, tid: the job's track. */
static void job_flow(struct wbuf *w, const struct ctx *c, uint64_t rem, size_t k, uint32_t pid,
                     uint32_t tid)
{
	const struct kx_ioctl *e;
	struct kx_flow fl;
	uint64_t id = kx_analysis_job_id(c->an, k) + 1, dur;

	if (!kx_job_flow(c->an, k, &fl))
		return;
	e = kx_analysis_submitter(c->an, k, &dur);
	/* The start lies inside the ioctl's slice on its thread: it binds there. */
	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\n{\"ph\":\"s\",\"id\":");
	put_u64(w, id);
	PUT_LIT(w, ",\"name\":\"submit\",\"cat\":\"job\",\"pid\":");
	put_u64(w, e->pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, e->tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, fl.from_ns - c->first_ts + rem);
	PUT_LIT(w, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":");
	put_u64(w, id);
	PUT_LIT(w, ",\"name\":\"submit\",\"cat\":\"job\",\"pid\":");
	put_u64(w, pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, fl.to_ns - c->first_ts + rem);
	PUT_LIT(w, "}");
}

/* One job slice and, when it has a submitting ioctl, its flow arrow. */
static void write_job(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem, size_t k,
                      uint32_t pid)
{
	const struct kx_jobs *jb = c->jobs;
	const struct kx_jobrec *j = &jb->jobs[k];
	const struct kx_jobring *rg = &jb->rings[j->ring];
	uint64_t start = kx_jobrec_start(j), end = kx_jobrec_end(j, jb->end_ns);
	uint32_t tid = rg->id + 1 + j->lane * LANE_TID_STEP;
	char buf[96];

	wb_need(w, 2);
	wb_sep(w, first);
	wb_lit(w, "{\"ph\":\"X\",\"name\":");
	wb_str(w, kx_job_name(c->an, k, buf, sizeof(buf)));
	snprintf(buf, sizeof(buf), "job/%s", kx_job_src_name(j->src));
	wb_lit(w, ",\"cat\":");
	wb_str(w, buf);
	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\"pid\":");
	put_u64(w, pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, start - c->first_ts + rem);
	PUT_LIT(w, ",\"dur\":");
	put_us(w, end - start);
	PUT_LIT(w, ",\"args\":{\"ring\":");
	wb_str(w, rg->name);
	job_args(w, j);
	PUT_LIT(w, "}}");
	job_flow(w, c, rem, k, pid, tid);
}

static void write_counter(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem,
                          uint32_t pid, const char *name, const char *key, uint64_t ts, uint64_t v)
{
	wb_need(w, EV_ROOM);
	wb_sep(w, first);
	PUT_LIT(w, "{\"ph\":\"C\",\"name\":\"");
	put_mem(w, name, strlen(name));
	PUT_LIT(w, "\",\"pid\":");
	put_u64(w, pid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, ts - c->first_ts + rem);
	PUT_LIT(w, ",\"args\":{\"");
	put_mem(w, key, strlen(key));
	PUT_LIT(w, "\":");
	put_u64(w, v);
	PUT_LIT(w, "}}");
}

/* Job slices, flows, and the in-flight and memory counters of every device. */
void cr_write_jobs(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	const struct kx_jobs *jb = c->jobs;

	for (size_t d = 0; d < jb->ndevs && !w->err; d++) {
		const struct kx_jobdev *jd = &jb->devs[d];
		uint32_t pid = c->jobpid[d];

		for (uint32_t r = 0; r < jd->nrings; r++) {
			const struct kx_jobring *rg = &jb->rings[jd->first_ring + r];
			size_t lo, hi;

			kx_jobring_starting(jb, rg, c->part ? c->part->from_ns : 0,
			                    c->part ? c->part->to_ns : 0, &lo, &hi);
			for (size_t k = lo; k < hi; k++)
				write_job(w, c, first, rem, rg->first + k, pid);
		}
		for (size_t k = 0; k < jd->ndepth; k++)
			if (in_part(c, jd->depth[k].ts))
				write_counter(w, c, first, rem, pid, "in flight", "jobs",
				              jd->depth[k].ts, jd->depth[k].depth);
		for (size_t k = 0; k < jd->nmem; k++)
			if (in_part(c, jd->mem[k].ts))
				write_counter(w, c, first, rem, pid, "memory", "bytes",
				              jd->mem[k].ts, jd->mem[k].usage);
	}
	/* NVIDIA memory per process: counters on the process's own track. */
	for (size_t i = 0; i < jb->nvmem.nprocs && !w->err; i++) {
		const struct kx_nvmem_proc *p = &jb->nvmem.procs[i];

		for (int r = 0; r < KX_NVMEM_NREG; r++)
			for (size_t k = 0; k < p->reg[r].npts; k++)
				if (in_part(c, p->reg[r].pts[k].ts))
					write_counter(w, c, first, rem, p->pid,
					              r == KX_NVMEM_VID ? "nvidia vidmem"
					                                : "nvidia sysmem",
					              "bytes", p->reg[r].pts[k].ts,
					              p->reg[r].pts[k].usage);
	}
}
