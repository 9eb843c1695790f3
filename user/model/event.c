/* Names of the event model's enumerations (contract: event.h). */
#include <string.h>

#include "model/event.h"

static const char *const src_names[KX_JOB_SRC_MAX] = {
        [KX_JOB_SRC_BLOCK] = "block",
        [KX_JOB_SRC_KVM] = "kvm",
        [KX_JOB_SRC_GPU_SCHED] = "gpu_scheduler",
        [KX_JOB_SRC_DMA_FENCE] = "dma_fence",
        [KX_JOB_SRC_I915] = "i915",
        [KX_JOB_SRC_XE] = "xe",
        [KX_JOB_SRC_AMDGPU] = "amdgpu",
        [KX_JOB_SRC_MSM] = "msm",
        [KX_JOB_SRC_V3D] = "v3d",
        [KX_JOB_SRC_VPU] = "vpu",
        [KX_JOB_SRC_AMDXDNA] = "amdxdna",
};

static const char *const phase_names[] = {
        [KX_JOB_QUEUE] = "queue",
        [KX_JOB_RUN] = "run",
        [KX_JOB_DONE] = "done",
        [KX_JOB_WAIT_BEGIN] = "wait_begin",
        [KX_JOB_WAIT_END] = "wait_end",
        [KX_JOB_DEP] = "dep",
        [KX_JOB_UNSCHEDULABLE] = "unschedulable",
};
#define NPHASES (sizeof(phase_names) / sizeof(phase_names[0]))

const char *kx_job_src_name(unsigned int src)
{
	return src < KX_JOB_SRC_MAX && src_names[src] ? src_names[src] : "unknown";
}

const char *kx_job_phase_name(unsigned int phase)
{
	return phase < NPHASES && phase_names[phase] ? phase_names[phase] : "unknown";
}

unsigned int kx_job_src_from_name(const char *name)
{
	if (!strcmp(name, "gpu_sched") || !strcmp(name, "sched"))
		return KX_JOB_SRC_GPU_SCHED;
	for (unsigned int i = 1; i < KX_JOB_SRC_MAX; i++)
		if (src_names[i] && !strcmp(name, src_names[i]))
			return i;
	return 0;
}

unsigned int kx_job_phase_from_name(const char *name)
{
	for (unsigned int i = 1; i < NPHASES; i++)
		if (phase_names[i] && !strcmp(name, phase_names[i]))
			return i;
	return 0;
}
