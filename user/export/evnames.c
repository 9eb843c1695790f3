/*
 * Names of the timeline exporters' events (see evnames.h).
 */
#include <string.h>

#include "export/evnames.h"
#include "registry/ioctl_decode.h"

const char *kx_job_name(const struct kx_analysis *an, size_t k, char *buf, size_t len)
{
	const struct kx_jobrec *j = &an->jobs->jobs[k];
	uint64_t dur;
	const struct kx_ioctl *e = kx_analysis_submitter(an, k, &dur);

	if (e)
		return kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, len);
	if (j->src == KX_JOB_SRC_KVM)
		return "KVM_RUN";
	if (j->src == KX_JOB_SRC_BLOCK)
		return j->aux2 == 1 ? "block read" : j->aux2 == 2 ? "block write" : "block other";
	return "job";
}

const char *kx_thread_name_then(const struct kx_thread_names *tn, const struct kx_store *s,
                                uint32_t tid, uint64_t ts)
{
	const char *then = kx_thread_name_at(tn, tid, ts);
	const char *now = then ? kx_store_comm(s, tid) : NULL;

	if (!then || (now && !strncmp(then, now, KX_COMM_LEN)))
		return NULL;
	return then;
}
