/*
 * In-memory event model of the core library: what a capture holds once the
 * ring-buffer records have been received. Records keep raw facts only; names
 * are added by the device registry (registry/devices.h) and the ioctl
 * decoders (registry/ioctl_decode.h) where they are shown. The one exception
 * is a job's ring name formatted from the record's own fields (below).
 */
#ifndef KX_EVENT_H
#define KX_EVENT_H

#include <stdint.h>

#include "kxprof.h"

/* One completed ioctl. 56 bytes; argument bytes live in the store's arena. */

struct kx_ioctl {
	uint64_t ts;  /* enter, CLOCK_MONOTONIC ns */
	uint64_t dur; /* ns */
	uint32_t pid; /* tgid */
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

/* ns, the call's return (ts + dur), UINT64_MAX where that overflows. */
static inline uint64_t kx_ioctl_end(const struct kx_ioctl *e)
{
	return e->dur > UINT64_MAX - e->ts ? UINT64_MAX : e->ts + e->dur;
}

/*
 * One job lifecycle event from a device-side source (block I/O, KVM vCPU
 * run/exit, gpu_scheduler, dma_fence, per-driver tracepoints), normalised
 * to a phase. Analysis (user/analysis/jobs.h) pairs QUEUE/RUN/DONE into jobs
 * by (namespace, ctx, seqno) -- block also by dev, the old gpu_scheduler
 * shape by ctx alone -- and links them to the ioctls that submitted them;
 * live/jobagg.h pairs online by the same rules. Records are what the kernel
 * said: the consumer adds nothing from outside the record.
 *
 * Producer bpf/jobs.bpf.c; per source, what each field holds (fields not
 * named are 0, ring is ""):
 *
 *   BLOCK      block_rq_insert -> QUEUE, block_rq_issue -> RUN,
 *              block_rq_complete -> DONE. Requests issued directly (no
 *              I/O scheduler) have no QUEUE.
 *              dev   = the whole disk's dev_t (a partition's I/O names its disk)
 *              seqno = first sector (512-byte units)
 *              aux   = bytes (DONE: bytes completed)
 *              aux2  = op: 1 read, 2 write (also preflush+write), 3 other
 *              ring  = disk name ("vda", tp_btf/raw_tp); "" from classic
 *                      tracepoint records, which carry only dev: the device
 *                      registry names it (kx_block_disk_name)
 *              flags = KX_JOB_F_ERROR on a DONE with an error
 *              pid/tid = the queueing/issuing task; DONE: 0 (IRQ context)
 *   KVM        kvm_userspace_exit -> DONE, kvm_pio -> RUN (an exit handled
 *              inside the run; not a job of its own). A job is one KVM_RUN
 *              ioctl: it starts at that ioctl's enter (the ioctl record)
 *              and ends at the DONE of the same thread.
 *              ctx   = tid of the vCPU thread (one KVM_RUN at a time per thread)
 *              seqno = 0
 *              DONE: aux = exit reason (KVM_EXIT_*), aux2 = the run's
 *                    return value (0 or -errno, sign-extended)
 *              RUN:  aux = I/O port, aux2 = 1 out (write), 0 in (read)
 *              ring  = "vcpu <ctx>", formatted by the consumer from ctx
 *              pid/tid = the vCPU thread
 *   GPU_SCHED  new names: drm_sched_job_queue -> QUEUE, drm_sched_job_run ->
 *              RUN, drm_sched_job_done -> DONE, drm_sched_job_add_dep ->
 *              DEP, drm_sched_job_unschedulable -> UNSCHEDULABLE:
 *                ctx = fence_context, seqno = fence_seqno (the job's
 *                finished fence), QUEUE/RUN aux = DRM client id,
 *                DEP/UNSCHEDULABLE aux/aux2 = context/seqno of the fence
 *                waited on, ring = scheduler name ("gfx_0.0.0", QUEUE/RUN).
 *              old names: drm_sched_job -> QUEUE, drm_run_job -> RUN,
 *              drm_sched_process_job -> DONE, drm_sched_job_wait_dep -> DEP:
 *                ctx = the finished fence's address (an opaque key),
 *                seqno = 0, QUEUE/RUN aux = job id, ring = scheduler name;
 *                DEP: ctx = seqno = 0, aux = job id, aux2 = the context of
 *                the fence waited on.
 *              pid/tid = current task: the submitter at QUEUE, a worker at
 *              RUN, whoever was running at DONE.
 *   DMA_FENCE  dma_fence_emit -> QUEUE, dma_fence_signaled -> DONE,
 *              dma_fence_wait_start/end -> WAIT_BEGIN/WAIT_END.
 *              ctx = fence context, seqno = fence seqno (64-bit from
 *              tp_btf/raw_tp; the classic record keeps their low 32 bits).
 *   I915       i915_request_add -> QUEUE, i915_request_execute -> RUN (only
 *              with CONFIG_DRM_I915_LOW_LEVEL_TRACEPOINTS), i915_request_retire
 *              -> DONE, i915_request_wait_begin/end -> WAIT_BEGIN/WAIT_END.
 *              dev = char 226:<DRM primary minor>, ctx = the request's fence
 *              context, seqno = its fence seqno, aux = engine class << 16 |
 *              instance, ring = "<class>:<instance>" formatted by the
 *              consumer from aux.
 *   XE         xe_sched_job_exec (push, in the exec ioctl) -> QUEUE,
 *              xe_sched_job_run -> RUN, xe_hw_fence_signal of the job's
 *              fence -> DONE.
 *              ctx = the exec queue's GuC id, seqno = the job's seqno;
 *              DONE aux = the hardware fence's context.
 *   AMDGPU     amdgpu_cs_ioctl -> QUEUE, amdgpu_sched_run_job -> RUN (DONE
 *              comes from gpu_scheduler's drm_sched_job_done, same key).
 *              ctx = fence context, seqno = fence seqno, ring = ring name.
 *   MSM        msm_gpu_submit -> QUEUE, msm_gpu_submit_flush -> RUN,
 *              msm_gpu_submit_retired -> DONE.
 *              ctx = ring id, seqno = submit id (the one key all three
 *              carry; the hardware seqno is only assigned at flush);
 *              DONE aux/aux2 = the device's always-on counter at start and
 *              end of the submit (ticks, device clock).
 *   V3D        v3d_submit_cl/_tfu/_csd (the job handed to the hardware) ->
 *              RUN, v3d_bcl/rcl/tfu/csd_irq -> DONE. No QUEUE.
 *              dev = char 226:<DRM primary minor>, ctx = queue (0 bin,
 *              1 render, 2 tfu, 3 csd), seqno = seqno; DONE pid/tid = 0.
 *              Kept by device (the device filter), not by pid.
 *   VPU        ivpu "job" event: "submit" -> QUEUE, "done" -> DONE.
 *              ctx = ctx_id, seqno = job_id, aux = engine_id.
 *   AMDXDNA    xdna_job whose text starts "se" (sent to the device) -> RUN,
 *              "si" (fence signalled) -> DONE,
 *              kept when gpu_scheduler saw the job queued by a traced task.
 *              ctx = fence_context, seqno = fence_seqno, aux = the record's
 *              seq, ring = the record's name.
 *
 * ts is taken when the tracepoint fires; pid/tid, unless said otherwise,
 * are the task current then (a worker or an interrupted task for phases
 * that fire outside the submitter).
 */
struct kx_job {
	uint64_t ts;    /* CLOCK_MONOTONIC ns */
	uint64_t ctx;   /* per source (above): timeline / queue / context, vCPU tid */
	uint64_t seqno; /* per source (above): position on ctx; block: sector (512 B) */
	uint64_t aux;   /* per source (above): block bytes, msm start ticks, client id, ... */
	uint64_t aux2;  /* per source (above): block op, msm end ticks, ... */
	uint32_t dev;   /* kernel dev_t: block disk, i915/v3d DRM node; else 0 */
	uint32_t pid;   /* tgid of the task current at the event (0: IRQ context) */
	uint32_t tid;
	uint16_t src;  /* enum kx_job_src */
	uint8_t phase; /* enum kx_job_phase */
	uint8_t flags; /* KX_JOB_F_* */
	char ring[16]; /* ring / queue / timeline name, NUL-terminated; "" if none */
};

#define KX_CMD_LEN 128 /* bytes of a process's command line kept, NUL included */

/* A thread's identity change (fork, exec, rename, exit). */
struct kx_task {
	uint64_t ts;  /* CLOCK_MONOTONIC ns */
	uint32_t pid; /* tgid */
	uint32_t tid;
	uint32_t ppid; /* FORK: the parent's tgid, else 0 */
	uint32_t what; /* enum kx_task_what */
	char comm[KX_COMM_LEN];
	/* The process's command line as the recorder read it when it first saw
	 * the process and at each exec (util/cmdline.h); "" when not read. */
	char cmd[KX_CMD_LEN];
	/* SEEN: the thread's pthread_t as the kernel saw it (x86_64 fs base;
	 * TensorFlow and JAX key their host rows by a hash of it); 0: unknown. */
	uint64_t tp;
};

/* Names of job sources and phases, as fixtures and outputs spell them. */
/* "block", "kvm", "gpu_scheduler", ...; "unknown" past the table. */
const char *kx_job_src_name(unsigned int src);
/* "queue", "run", "done", "wait_begin", ...; "unknown". */
const char *kx_job_phase_name(unsigned int phase);
/* Inverses (also accept "gpu_sched", "sched"); 0 when unknown. */
unsigned int kx_job_src_from_name(const char *name);
unsigned int kx_job_phase_from_name(const char *name);

#endif /* KX_EVENT_H */
