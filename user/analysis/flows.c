/* Flow arrows from a submitting ioctl to its job (contract: flows.h). */
#include <stdlib.h>

#include "analysis/flows.h"

/* Where the host thread submitted job j through store ioctl e (index idx). */
static uint64_t submit_point(const struct kx_analysis *an, const struct kx_jobrec *j,
                             const struct kx_ioctl *e, size_t idx)
{
	/* The slice as the exporters draw it: the nesting rule may shorten it. */
	uint64_t end = e->ts + kx_timeline_dur(an->timeline, idx, e->dur);

	if (j->queue_ts && j->tid == e->tid && j->queue_ts >= e->ts && j->queue_ts <= end)
		return j->queue_ts;
	return e->ts;
}

int kx_job_flow(const struct kx_analysis *an, size_t k, struct kx_flow *fl)
{
	const struct kx_jobrec *j = &an->jobs->jobs[k];
	const struct kx_ioctl *e;
	uint64_t from, to;

	if (j->submit < 0 || (size_t)j->submit >= kx_store_ioctl_count(an->store))
		return 0;
	e = kx_store_ioctl(an->store, (size_t)j->submit);
	from = submit_point(an, j, e, (size_t)j->submit);
	to = kx_jobrec_start(j);
	if (to < from)
		return 0;
	fl->from_ns = from;
	fl->to_ns = to;
	return 1;
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
