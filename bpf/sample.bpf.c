// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPU sampling: runs on each cpu-clock perf event (one per online CPU, opened
 * by user/capture/sample.c). A sample of a traced process (the pid set, or
 * every process) becomes one record with its kernel and user stacks, read by
 * frame pointers through bpf_get_stack; the idle task is never recorded.
 * Every sample kept is counted as emitted, and as dropped when the ring
 * buffer is full; stacks that could not be read or were cut are counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kxprof.h"
#include "sample_rec.h"
#include "shared.bpf.h"

#define PF_KTHREAD 0x00200000 /* task_struct.flags: a kernel thread */

/* The record under construction (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kx_sample_rec);
} sample_buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_SSTAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sample_stats SEC(".maps");

static __always_inline void sstat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&sample_stats, &which);

	if (v)
		*v += 1;
}

/* Whether the sample interrupted kernel code: on x86-64 and arm64 the
 * kernel runs in the upper half of the address space. */
static __always_inline bool in_kernel_mode(struct bpf_perf_event_data *ctx)
{
	return (long)PT_REGS_IP(&ctx->regs) < 0;
}

/* Reads one stack into ips; returns its frames, counting a missing or cut stack. */
static __always_inline __u32 read_stack(struct bpf_perf_event_data *ctx, __u64 *ips, __u64 flags,
                                        bool expected, __u32 missing, __u32 full)
{
	long n = bpf_get_stack(ctx, ips, KX_SAMPLE_MAX_DEPTH * sizeof(__u64), flags);

	if (n <= 0) {
		if (expected)
			sstat_inc(missing);
		return 0;
	}
	n /= sizeof(__u64);
	if (n >= KX_SAMPLE_MAX_DEPTH) {
		sstat_inc(full);
		n = KX_SAMPLE_MAX_DEPTH;
	}
	return n;
}

SEC("perf_event")
int kx_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0, kn, un, size;
	struct task_struct *task;
	struct kx_sample_rec *r;
	bool kmode, kthread;

	if (tgid == 0 || !kx_tgid_traced(tgid))
		return 0;
	r = bpf_map_lookup_elem(&sample_buf, &zero);
	if (!r)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
	kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
	kmode = in_kernel_mode(ctx);
	kn = read_stack(ctx, r->ips, 0, kmode, KX_SSTAT_NO_KSTACK, KX_SSTAT_KSTACK_FULL);
	if (kn > KX_SAMPLE_MAX_DEPTH) /* for the verifier: the user frames fit after */
		kn = KX_SAMPLE_MAX_DEPTH;
	un = read_stack(ctx, &r->ips[kn], BPF_F_USER_STACK, !kthread, KX_SSTAT_NO_USTACK,
	                KX_SSTAT_USTACK_FULL);
	if (un > KX_SAMPLE_MAX_DEPTH)
		un = KX_SAMPLE_MAX_DEPTH;
	size = KX_SAMPLE_REC_BASE_SIZE + (kn + un) * sizeof(__u64);
	r->hdr.type = KX_REC_SAMPLE;
	r->hdr.size = size;
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = bpf_ktime_get_ns();
	r->pid = tgid;
	r->tid = (__u32)id;
	r->kdepth = kn;
	r->udepth = un;
	r->flags = (kmode ? KX_SAMPLE_F_KERNEL : 0) | (kthread ? KX_SAMPLE_F_KTHREAD : 0);
	r->pad = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	sstat_inc(KX_SSTAT_EMITTED);
	if (size > sizeof(*r)) /* for the verifier: never past the record */
		size = sizeof(*r);
	if (bpf_ringbuf_output(&events, r, size, submit_flags()))
		sstat_inc(KX_SSTAT_DROPPED);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
