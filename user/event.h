/*
 * In-memory event model of the core library: what a capture holds once the
 * ring-buffer records have been received. Records keep raw facts only; names
 * are added by the device registry and the ioctl decoders.
 */
#ifndef KX_EVENT_H
#define KX_EVENT_H

#include <stdint.h>

#include "../bpf/kxprof.h"

/* One completed ioctl. 56 bytes; argument bytes live in the store's arena. */
struct kx_ioctl {
	uint64_t ts;		/* enter, CLOCK_MONOTONIC ns */
	uint64_t dur;		/* ns */
	uint32_t pid;
	uint32_t tid;
	uint32_t dev;		/* kernel dev_t (major << 20 | minor) */
	uint32_t cmd;
	int32_t ret;		/* >= 0 result, < 0 -errno (ioctl handlers return int) */
	uint32_t offcpu_us;	/* time blocked (off-CPU) inside the call, µs; 0 if not measured */
	int32_t fd;
	uint32_t xfer_cmd;	/* NVIDIA XFER inner escape, else 0 */
	uint32_t arg_off;	/* offset in the store's arg arena, KX_NO_ARG if none */
	uint8_t fkind;		/* enum kx_fkind */
	uint8_t cpu_hi;		/* cpu = cpu_hi << 8 | cpu_lo */
	uint8_t cpu_lo;
	uint8_t arg_in_len;	/* <= KX_ARG_MAX */
	uint8_t arg_out_len;
	uint8_t drv;		/* enum kx_driver */
	uint8_t pad[2];
};
#define KX_NO_ARG UINT32_MAX

static inline unsigned int kx_ioctl_cpu(const struct kx_ioctl *e)
{
	return (unsigned int)e->cpu_hi << 8 | e->cpu_lo;
}

/*
 * One job lifecycle event from a device-side source (block I/O, KVM vCPU
 * run/exit, gpu_scheduler, dma_fence, per-driver tracepoints), normalised
 * to a phase. Analysis (user/jobs.h) pairs phases into jobs by
 * (src, dev, ctx, seqno) and links them to the ioctls that submitted them.
 */
struct kx_job {
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	uint64_t ctx;		/* fence context / entity; block: 0; kvm: vcpu fd's vcpu id */
	uint64_t seqno;		/* fence seqno; block: sector; kvm: run count */
	uint64_t aux;		/* source-specific: block bytes, msm start ticks, client id, ... */
	uint64_t aux2;		/* source-specific: msm end ticks, block op, ... */
	uint32_t dev;		/* kernel dev_t of the device (block), or 0 */
	uint32_t pid;		/* task current at the event (0 in IRQ context) */
	uint32_t tid;
	uint16_t src;		/* enum kx_job_src */
	uint8_t phase;		/* enum kx_job_phase */
	uint8_t flags;
	char ring[16];		/* ring / queue / timeline name, "" if the source has none */
};

/* A thread's identity change (fork, exec, rename, exit). */
struct kx_task {
	uint64_t ts;
	uint32_t pid;
	uint32_t tid;
	uint32_t ppid;
	uint32_t what;		/* enum kx_task_what */
	char comm[KX_COMM_LEN];
};

#endif /* KX_EVENT_H */
