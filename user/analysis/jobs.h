/*
 * Device timelines: the analysis of a capture's job lifecycle events (struct
 * kx_job) and ioctls into jobs per device and ring, their links to the
 * ioctls that submitted and waited on them, per-ring and per-device
 * statistics, the anomalies met on the way, and device memory accounting
 * from decoded ioctl arguments. Exporters (summary, XSpace, Chrome) read the
 * result; none of them pairs phases itself.
 *
 * Pairing. Phases pair by key within a namespace: block (disk dev_t,
 * sector); fences (context, seqno), shared by gpu_scheduler (new names),
 * dma_fence, i915, amdgpu and amdxdna, whose tracepoints all report the
 * job's fence; the old gpu_scheduler names by fence pointer; xe, msm, v3d
 * and vpu by (ctx, seqno) each. Events are taken in timestamp order. A job
 * opens at its first QUEUE or RUN and closes at DONE. The same phase twice
 * from the same source is a duplicate (from another source it corroborates:
 * gpu_scheduler and amdgpu both report the run); a phase that goes back in
 * the lifecycle (QUEUE after RUN, or QUEUE/RUN after DONE where keys are
 * unique) is out of order. Both are counted and not applied. Block sectors
 * and fence pointers are reused, so there a QUEUE/RUN after DONE opens a new
 * job. KVM is paired apart: a job is one KVM_RUN ioctl, from its enter to
 * the kvm_userspace_exit (DONE) on the same thread inside it; intermediate
 * exits (RUN phases) are not jobs.
 *
 * Linking. Submit: a job whose QUEUE ran in a task (tid != 0) links to the
 * ioctl of that thread whose [enter, exit] contains the QUEUE time, else
 * (GPU sources only) to the latest ioctl of that thread that ended at most
 * KX_JOBS_LINK_WINDOW_NS before it; the ioctl must be of a driver that can
 * submit to the source (block: loop and block drivers; fence sources: DRM,
 * accel and KFD drivers; per-driver sources: that driver). Block I/O is
 * submitted by read/write, so block jobs normally have no submit ioctl and
 * are not counted unlinked. Waiter: the tid of the first WAIT_BEGIN (or
 * WAIT_END) phase on the job's key, else a wait ioctl (name contains WAIT,
 * not VBLANK) of the job's driver whose [enter, exit] contains the DONE
 * time, preferring the submitter's process, then the earliest return.
 *
 * Anomalies (counted, reported, never dropped silently):
 *   incomplete    queued or running, no DONE by the end of the capture
 *   no_queue      completed without a QUEUE phase (block requests issued
 *                 directly have no QUEUE by design: flagged DIRECT, queue
 *                 delay 0, not an anomaly); KVM exits outside any KVM_RUN
 *   duplicate     a phase repeated by the same source (ignored)
 *   out_of_order  a phase earlier in the lifecycle than one already seen
 *   unlinked      queued in a task but no submitting ioctl found
 *   runs_without_exit  KVM_RUN ioctls with no exit event, when the capture
 *                 has KVM job events at all
 *   unknown       events of an unknown source or phase (skipped)
 *
 * Devices. A job device is the traced device (capinfo entry) it belongs to
 * when one matches, so exporters put its rings on that device's plane or
 * track: block jobs by disk dev_t (a device given as any-minor major covers
 * all its disks), KVM jobs to the kvm device (one ring per vCPU thread,
 * "vcpu <tid>"), per-driver GPU sources to their driver's device, and the
 * shared fence sources to the driver of their submitting ioctl, else of the
 * other jobs of their ring, else the only GPU driver of the capture, else a
 * device named after the source. Rings are named by the events ("gfx_0.0.0",
 * "vda", "vcpu 812"; "ctx <n>" when a source names none) and numbered by
 * name within their device. Jobs on one ring that overlap go to extra lanes
 * (lane 0 first), so each lane's events nest.
 *
 * Memory. From decoded argument copies of successful ioctls, per device:
 * allocations where the argument has a size and returns a handle (GEM and
 * BO create of amdgpu, i915, xe, nouveau, msm, panfrost, panthor, v3d,
 * etnaviv, lima, ivpu, qaic, amdxdna, DRM dumb buffers, KFD alloc of GPU
 * memory, habanalabs MEMORY alloc); frees by handle (GEM close, dumb
 * destroy, KFD free, habanalabs MEMORY free) of a handle allocated in the
 * capture (others are counted as unknown frees); KVM memory slots by (vm
 * fd, slot): memory_size > 0 adds or resizes the slot, 0 deletes it.
 * NVIDIA: RM_ALLOC of a memory class (its size from the followed
 * parameters, the size the driver allocated) and RM_ALLOC_MEMORY (limit +
 * 1) by (pid, client, handle), freed by RM_FREE of the handle or of its
 * client (analysis/jobpair.c); per process and region in nvmem
 * (analysis/nvmem.h) too. Usage starts at 0 at capture start. Each event is stamped at
 * the ioctl's return. Avg Usage is the mean of the usage after each event.
 *
 * One engine applies these rules: a record file read as a stream gets the
 * timelines as its records pass (analysis/jobflow.h), keeping none of its
 * jobs; kx_jobs_build (analysis/jobsink.c) feeds a whole store through it
 * with no bound and keeps the jobs it counts (the sink).
 */
#ifndef KX_JOBS_H
#define KX_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobrec.h"
#include "analysis/nvmem.h"
#include "model/capinfo.h"
#include "model/store.h"
#include "util/keymap.h"
#include "util/tidtab.h"

struct kx_jobs {
	struct kx_jobrec *jobs; /* grouped by ring, by start within a ring */
	size_t njobs;
	struct kx_jobring *rings; /* grouped by device, by name within a device */
	size_t nrings;
	struct kx_jobdev *devs; /* devices with jobs or memory events */
	size_t ndevs;
	struct kx_jobs_anomalies anom;
	uint64_t start_ns, end_ns; /* capture span used for busy and incomplete jobs */
	uint8_t *submitted;        /* bitmap over store ioctls: submitted a job */
	size_t nioctls;
	struct kx_nvmem nvmem; /* NVIDIA device memory per process and region */
	/* The store whose ioctls submit, wait and mem[].ioctl index. */
	const struct kx_store *store;
};

/* NULL on out of memory. ci may be NULL (no device mapping, span from events).
 * Defined in analysis/jobsink.c. */
struct kx_jobs *kx_jobs_build(const struct kx_store *s, const struct kx_capinfo *ci);
/* The same with no bound at all (every job held to the end, no key
 * forgotten, no job counted early): the reference kx_jobs_build, which
 * keeps to the streamed read's bounds where they give the same, must
 * equal. NULL on out of memory. */
struct kx_jobs *kx_jobs_build_exact(const struct kx_store *s, const struct kx_capinfo *ci);
void kx_jobs_free(struct kx_jobs *j);

/* Memory accounting (the rule above) over the successful ioctls of s with
 * argument copies, in return order: memory events onto their devices in
 * devs (added when new; mem[].ioctl indexes s), NVIDIA's per process into
 * nv; every device's average once all are in. 0, or -1 when out of memory. */
struct kx_jobdevtab;
int kx_jobs_memory(const struct kx_store *s, struct kx_jobdevtab *devs, struct kx_nvmem *nv);

/* The jobs of ring rg of j that start (kx_jobrec_start) in [from, to) ns,
 * to 0 for no end: j->jobs[rg->first + *lo .. rg->first + *hi), found by
 * binary search (a ring's jobs are in start order). */
void kx_jobring_starting(const struct kx_jobs *j, const struct kx_jobring *rg, uint64_t from,
                         uint64_t to, size_t *lo, size_t *hi);

/* True when store ioctl i submitted at least one job. */
static inline int kx_jobs_ioctl_submitted(const struct kx_jobs *j, size_t i)
{
	return i < j->nioctls && (j->submitted[i / 8] >> (i % 8) & 1);
}

#endif /* KX_JOBS_H */
