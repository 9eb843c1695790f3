/*
 * Where a job starts and ends as drawn, and what it timed (contract: jobrec.h).
 */
#include "analysis/jobrec.h"
#include "kxprof.h"

uint64_t kx_jobrec_start(const struct kx_jobrec *j)
{
	if (j->run_ts)
		return j->run_ts;
	if (j->queue_ts)
		return j->queue_ts;
	return j->done_ts;
}

uint64_t kx_jobrec_end(const struct kx_jobrec *j, uint64_t end_ns)
{
	uint64_t s = kx_jobrec_start(j);

	if (j->done_ts)
		return j->done_ts;
	return end_ns > s ? end_ns : s;
}

int kx_jobrec_exec(const struct kx_jobrec *j, uint64_t *ns)
{
	if (!j->done_ts || (!j->run_ts && !j->queue_ts))
		return 0;
	*ns = j->done_ts - kx_jobrec_start(j);
	return 1;
}

int kx_jobrec_queue_delay(const struct kx_jobrec *j, int clamp_race, uint64_t *ns)
{
	if (!j->run_ts || j->src == KX_JOB_SRC_KVM)
		return 0;
	if (!j->queue_ts) {
		*ns = 0;
		return j->src == KX_JOB_SRC_BLOCK;
	}
	*ns = clamp_race && j->run_ts <= j->queue_ts ? 0 : j->run_ts - j->queue_ts;
	return 1;
}
