/*
 * In-memory event model of the core library: what a capture holds once the
 * ring-buffer records have been received. Records keep raw facts only; names
 * are added by the device registry and the ioctl decoders.
 */
#ifndef KX_EVENT_H
#define KX_EVENT_H

#include <stdint.h>

#include "kxprof.h"

/* One completed ioctl. 56 bytes; argument bytes live in the store's arena. */

struct kx_ioctl {
	uint64_t ts;  /* enter, CLOCK_MONOTONIC ns */
	uint64_t dur; /* ns */
	uint32_t pid;
	uint32_t tid;
	uint32_t dev; /* kernel dev_t (major << 20 | minor) */
	uint32_t cmd;
	int32_t ret;        /* >= 0 result, < 0 -errno (ioctl handlers return int) */
	uint32_t offcpu_us; /* time blocked (off-CPU) inside the call, µs; 0 if not measured */
	int32_t fd;
	uint32_t arg_off; /* offset in the store's arg arena, KX_NO_ARG if none */
	uint8_t fkind;    /* enum kx_fkind */
	uint8_t cpu_hi;   /* cpu = cpu_hi << 8 | cpu_lo */
	uint8_t cpu_lo;
	uint8_t arg_in_len; /* <= KX_ARG_MAX */
	uint8_t arg_out_len;
	uint8_t drv;      /* enum kx_driver */
	uint8_t xfer_cmd; /* NVIDIA XFER inner escape (an 8-bit nr), else 0 */
	uint8_t pad;
};
#define KX_NO_ARG UINT32_MAX
/* Memory per stored event is a benchmark target: keep it at 56 bytes. */
_Static_assert(sizeof(struct kx_ioctl) == 56, "struct kx_ioctl grew");

static inline unsigned int kx_ioctl_cpu(const struct kx_ioctl *e)
{
	return (unsigned int)e->cpu_hi << 8 | e->cpu_lo;
}

/*
 * One job lifecycle event from a device-side source (block I/O, KVM vCPU
 * run/exit, gpu_scheduler, dma_fence, per-driver tracepoints), normalised
 * to a phase. Analysis (user/analysis/jobs.h) pairs phases into jobs by
 * (src, dev, ctx, seqno) and links them to the ioctls that submitted them.
 *
 * Field meaning per source (producer: bpf/jobs.bpf.c; consumer: user/analysis/jobs.c):
 *   BLOCK      dev = disk dev_t, ctx = 0, seqno = sector, aux = bytes,
 *              aux2 = op (1 read, 2 write, 3 flush/other), ring = disk name;
 *              insert -> QUEUE, issue -> RUN, complete -> DONE (IRQ: pid 0).
 *              Requests issued directly (no scheduler) have no QUEUE.
 *   KVM        ctx = vCPU thread tid, seqno = 0, ring = "vcpu <tid>";
 *              a job is one KVM_RUN: it starts at that ioctl's enter (the
 *              ioctl record) and ends at DONE = kvm_userspace_exit
 *              (aux = exit reason); intermediate kvm_pio/kvm_mmio exits
 *              are RUN phases (aux = port/addr) if recorded.
 *   GPU_SCHED  ctx = fence_context, seqno = fence_seqno (new names) or the
 *              fence pointer in ctx and seqno = 0 (old names), aux = client_id
 *              (new) or job id (old), ring = sched name ("gfx_0.0.0");
 *              queue -> QUEUE, run -> RUN, done/process_job -> DONE,
 *              add_dep/wait_dep -> DEP, unschedulable -> UNSCHEDULABLE.
 *   DMA_FENCE  ctx = context, seqno = seqno; emit -> QUEUE, signaled -> DONE,
 *              wait_start/end -> WAIT_BEGIN/WAIT_END.
 *   I915       ctx = ctx, seqno = seqno, aux = class << 16 | instance,
 *              ring = "<class>:<instance>"; add -> QUEUE, (execute/in ->
 *              RUN when the low-level tracepoints exist), retire -> DONE,
 *              wait_begin/end -> WAIT_BEGIN/WAIT_END.
 *   XE         ctx = guc_id (or fence context), seqno = seqno; create ->
 *              QUEUE, run/exec -> RUN, xe_hw_fence_signal or free -> DONE.
 *   AMDGPU     amdgpu_sched_run_job: ctx = context, seqno = seqno, ring =
 *              ring name, phase RUN (amdgpu_cs_ioctl -> QUEUE).
 *   MSM        ctx = ringid, seqno = seqno, aux = start_ticks, aux2 =
 *              end_ticks (device clock); submit -> QUEUE, submit_flush ->
 *              RUN, submit_retired -> DONE.
 *   V3D        ctx = queue (bin/render/tfu/csd), seqno = seqno;
 *              submit -> QUEUE, *_irq -> DONE.
 *   VPU        ctx = ctx_id, seqno = job_id, aux = engine_id.
 *   AMDXDNA    ctx = fence_context, seqno = fence_seqno.
 */
struct kx_job {
	uint64_t ts;    /* CLOCK_MONOTONIC ns */
	uint64_t ctx;   /* fence context / entity; block: 0; kvm: vcpu fd's vcpu id */
	uint64_t seqno; /* fence seqno; block: sector; kvm: run count */
	uint64_t aux;   /* source-specific: block bytes, msm start ticks, client id, ... */
	uint64_t aux2;  /* source-specific: msm end ticks, block op, ... */
	uint32_t dev;   /* kernel dev_t of the device (block), or 0 */
	uint32_t pid;   /* task current at the event (0 in IRQ context) */
	uint32_t tid;
	uint16_t src;  /* enum kx_job_src */
	uint8_t phase; /* enum kx_job_phase */
	uint8_t flags;
	char ring[16]; /* ring / queue / timeline name, "" if the source has none */
};

/* A thread's identity change (fork, exec, rename, exit). */
struct kx_task {
	uint64_t ts;
	uint32_t pid;
	uint32_t tid;
	uint32_t ppid;
	uint32_t what; /* enum kx_task_what */
	char comm[KX_COMM_LEN];
};

#endif /* KX_EVENT_H */
