/* The device timelines fed from a record file in file order (contract: wjobfeed.h). */
#include <string.h>

#include "analysis/wjobfeed.h"

/* A call out of the stage, its thread's in start order, to the flow. */
static int out_call(void *ctx, const struct kx_ioctl *e)
{
	struct kx_wjobfeed *j = ctx;
	uint64_t idx = j->q.out_seq; /* only calls are fed: their file order */

	if (kx_jobflow_ioctl_at(&j->f, e, (size_t)idx))
		return -1;
	return j->on_call ? j->on_call(j->ctx, e, idx) : 0;
}

/* Before a job record of time ts is paired: every call begun at or before it. */
static int upto(void *ctx, uint64_t ts)
{
	struct kx_wjobfeed *j = ctx;

	return kx_engine_release(&j->q, ts);
}

void kx_wjobfeed_init(struct kx_wjobfeed *j, const struct kx_capinfo *ci,
                      const struct kx_jobflow_sink *sink, kx_wjobfeed_call_fn on_call, void *ctx)
{
	const struct kx_engine_sinks out = {.ctx = j, .ioctl = out_call};

	memset(j, 0, sizeof(*j));
	kx_engine_init(&j->q, KX_ENGINE_LATE_NS, KX_ENGINE_BUDGET, &out);
	j->q.measured = 1;
	kx_jobflow_init(&j->f, ci);
	j->f.whole = 1;    /* links as the calls' places in the file */
	j->f.gpu_seen = 1; /* wait calls kept from the first (its bounds still hold) */
	j->f.sink = sink;
	j->f.calls_upto = upto;
	j->f.calls_ctx = j;
	j->on_call = on_call;
	j->ctx = ctx;
}

int kx_wjobfeed_ioctl(struct kx_wjobfeed *j, const struct kx_ioctl *e)
{
	return kx_engine_feed_ioctl(&j->q, e, NULL);
}

int kx_wjobfeed_job(struct kx_wjobfeed *j, const struct kx_job *r)
{
	j->records++;
	return kx_jobflow_job(&j->f, r);
}

const char *kx_wjobfeed_why(const struct kx_wjobfeed *j)
{
	if (!j->records)
		return NULL;
	if (j->q.forced)
		return "calls of one thread overlap past the reorder window's memory budget";
	if (j->q.late_ioctls)
		return "a call came after the device timelines took a later call of its thread "
		       "(they take every call begun before a job record they pair, 1 s or "
		       "16384 job records behind the latest)";
	return j->f.why;
}

struct kx_jobs *kx_wjobfeed_finish(struct kx_wjobfeed *j, const struct kx_store *mem)
{
	if (kx_engine_finish(&j->q) || kx_wjobfeed_why(j))
		return NULL;
	return kx_jobflow_finish(&j->f, mem, NULL);
}

void kx_wjobfeed_free(struct kx_wjobfeed *j)
{
	kx_engine_free(&j->q);
	kx_jobflow_free(&j->f);
}
