/*
 * Where a job starts and ends as drawn (contract: jobrec.h).
 */
#include "analysis/jobrec.h"

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
