/* Flow arrows from a submitting ioctl to its job (contract: flows.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"

/* Where the host thread submitted job j through ioctl e, drawn end ns long. */
static uint64_t submit_point(const struct kx_jobrec *j, const struct kx_ioctl *e, uint64_t dur)
{
	uint64_t end = e->ts + dur;

	if (j->queue_ts && j->tid == e->tid && j->queue_ts >= e->ts && j->queue_ts <= end)
		return j->queue_ts;
	return e->ts;
}

int kx_job_flow(const struct kx_analysis *an, size_t k, struct kx_flow *fl)
{
	const struct kx_jobrec *j = &an->jobs->jobs[k];
	uint64_t dur = 0, from, to;
	const struct kx_ioctl *e = kx_analysis_submitter(an, k, &dur);

	if (!e)
		return 0;
	from = submit_point(j, e, dur);
	to = kx_jobrec_start(j);
	if (to < from)
		return 0;
	fl->from_ns = from;
	fl->to_ns = to;
	return 1;
}

/* One window's (kx_jobview): the whole capture's, given. */
static int view_flows(struct kx_flows *fl, const struct kx_analysis *an)
{
	size_t nb = fl->nioctls / 8 + 1;

	if (an->jview->flow_from)
		memcpy(fl->from, an->jview->flow_from, (fl->nioctls + 7) / 8);
	else
		memset(fl->from, 0, nb);
	fl->dropped = an->jview->flows_dropped;
	return 0;
}

int kx_flows_build(struct kx_flows *fl, const struct kx_analysis *an)
{
	const struct kx_jobs *jb = an->jobs;
	struct kx_flow f;

	*fl = (struct kx_flows){0};
	fl->nioctls = kx_store_ioctl_count(an->store);
	fl->from = calloc(fl->nioctls / 8 + 1, 1);
	if (!fl->from) {
		fl->nioctls = 0;
		return -1;
	}
	if (an->jview)
		return view_flows(fl, an);
	if (an->flows.from) {
		memcpy(fl->from, an->flows.from, fl->nioctls / 8 + 1);
		fl->drawn = an->flows.drawn;
		fl->dropped = an->flows.dropped;
		return 0;
	}
	for (size_t k = 0; jb && k < jb->njobs; k++) {
		const struct kx_jobrec *j = &jb->jobs[k];

		if (j->submit < 0)
			continue;
		if (!kx_job_flow(an, k, &f)) {
			fl->dropped++;
			continue;
		}
		fl->drawn++;
		fl->from[(size_t)j->submit / 8] |= (uint8_t)(1u << ((size_t)j->submit % 8));
	}
	return 0;
}

int kx_flows_keep(struct kx_analysis *an)
{
	struct kx_flows fl;

	if (an->flows.from)
		return 0;
	if (kx_flows_build(&fl, an))
		return -1;
	an->flows.from = fl.from;
	an->flows.drawn = fl.drawn;
	an->flows.dropped = fl.dropped;
	return 0;
}

void kx_flows_free(struct kx_flows *fl)
{
	free(fl->from);
	*fl = (struct kx_flows){0};
}

void kx_flows_warnings(const struct kx_flows *fl, kx_warn_fn fn, void *ctx)
{
	kx_warn_count(fn, ctx, fl->dropped,
	              "jobs start on their device before their submitting ioctl submitted them "
	              "(device and host clocks disagree, or a wrong link): no flow arrow drawn "
	              "for them");
}
