// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPU sampling and off-CPU intervals of traced threads.
 *
 * kx_sample runs on each cpu-clock perf event (one per online CPU, opened
 * by user/capture/sampler.c). A sample of a traced process (the pid set, or
 * every process) becomes one record with its kernel and user stacks, read
 * by frame pointers through bpf_get_stack, and the traced ioctl its thread
 * was inside, if any (the entry bpf/ioctl.bpf.c keeps, inflight.bpf.h); the
 * idle task is never recorded.
 *
 * kx_offcpu_btf / kx_offcpu_raw (sched_switch; user space loads at most
 * one): a thread that blocks inside a traced ioctl has its stacks stashed
 * at switch-out; when it is switched in again, the stash becomes an
 * off-CPU record weighted by the time it was away.
 *
 * In a daemon session for an unprivileged client (targ_uid_only), the uid
 * rule of shared.bpf.h decides for both: a sample is kept only when the
 * sampled thread's real and effective uid are the client's (the perf event
 * program runs in the interrupted task's context), a blocked thread's
 * stacks only when its own are (sched_switch runs while prev is current);
 * and without kernel_stacks no kernel frame is ever read.
 *
 * With ustack_bytes (--call-graph dwarf), a sample of a user thread is
 * preceded by a copy of the top of its user stack and its user registers
 * (struct kx_ustack_rec), those saved at the top of its kernel stack
 * (bpf_task_pt_regs): the interrupted ones for a sample in user mode, those
 * of its entry into the kernel otherwise. A thread blocking inside a traced
 * call gets the same copy at its switch-out (those of its syscall entry).
 * The copy is made after the pid and uid filters, so it is only ever made
 * of a thread whose sample is kept.
 *
 * Every record kept is counted as emitted, and as dropped when the ring
 * buffer is full; stacks that could not be read or were cut are counted,
 * and so are blocked threads the stash had no room for. The first record
 * of a process image (a pid after each exec) wakes the consumer at once,
 * so user space reads its maps while it lives.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "kxprof.h"
#include "inflight.bpf.h"
#include "sample_rec.h"
#include "shared.bpf.h"

#define PF_KTHREAD 0x00200000 /* task_struct.flags: a kernel thread */
#define EEXIST     17

/* The ioctl capture keeps its entries in task storage (fentry, tp_btf or tp). */
const volatile bool call_btf = false;
/* Kernel stacks are read (false: a daemon session not allowed kernel-mode
 * profiling; records then hold user frames only). */
const volatile bool kernel_stacks = true;

/* --call-graph dwarf: bytes of user stack copied per sample (0: none). */
const volatile __u32 ustack_bytes = 0;

/* The stack copy under construction, one per possible CPU (too large for a
 * per-CPU array value); sized by user space (1 entry without copies). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kx_ustack_rec);
} ustack_buf SEC(".maps");

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

/* The exec_id each process was last recorded with: a new one wakes user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} images SEC(".maps");

/* Threads blocked inside a traced call: their record, waiting for the weight.
 * Sized by user space (1 when off-CPU intervals are not recorded). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct kx_sample_rec);
} offcpu_stash SEC(".maps");

/* Entries in offcpu_stash: switch-ins skip the lookup while it is 0. */
__u64 nr_stashed = 0;

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
static __always_inline __u32 read_stack(void *ctx, __u64 *ips, __u64 flags, bool expected,
                                        __u32 missing, __u32 full)
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

/* Both stacks of the current task into r; the record's size. */
static __always_inline __u32 read_stacks(void *ctx, struct kx_sample_rec *r, bool kmode,
                                         bool kthread)
{
	__u32 kn, un;

	kn = kernel_stacks
	             ? read_stack(ctx, r->ips, 0, kmode, KX_SSTAT_NO_KSTACK, KX_SSTAT_KSTACK_FULL)
	             : 0;
	if (kn > KX_SAMPLE_MAX_DEPTH) /* for the verifier: the user frames fit after */
		kn = KX_SAMPLE_MAX_DEPTH;
	un = read_stack(ctx, &r->ips[kn], BPF_F_USER_STACK, !kthread, KX_SSTAT_NO_USTACK,
	                KX_SSTAT_USTACK_FULL);
	if (un > KX_SAMPLE_MAX_DEPTH)
		un = KX_SAMPLE_MAX_DEPTH;
	r->kdepth = kn;
	r->udepth = un;
	return KX_SAMPLE_REC_BASE_SIZE + (kn + un) * sizeof(__u64);
}

static __always_inline void fill_call(struct kx_sample_call *c, const struct inflight *v)
{
	if (!v) {
		__builtin_memset(c, 0, sizeof(*c));
		return;
	}
	c->ts = v->ts;
	c->cmd = v->cmd;
	c->dev = v->dev;
	c->xfer_cmd = v->xfer_cmd;
	c->fkind = v->fkind;
	c->drv = v->drv;
}

/* The call the current thread is inside, NULL when none. */
static __always_inline struct inflight *current_call(__u32 tid)
{
	if (call_btf)
		return kx_call_in_progress(bpf_get_current_task_btf(), tid, true);
	return kx_call_in_progress(NULL, tid, false);
}

/* Submit flags for a record of (tgid, exec_id): a wakeup now for a new image. */
static __always_inline __u64 image_flags(__u32 tgid, __u32 exec_id)
{
	__u32 *known = bpf_map_lookup_elem(&images, &tgid);

	if (known && *known == exec_id)
		return submit_flags();
	bpf_map_update_elem(&images, &tgid, &exec_id, BPF_ANY);
	return BPF_RB_FORCE_WAKEUP;
}

/* Emits the record of size bytes, counting it under emitted/dropped. */
static __always_inline void emit(struct kx_sample_rec *r, __u32 size, __u32 emitted, __u32 dropped)
{
	sstat_inc(emitted);
	if (size > sizeof(*r)) /* for the verifier: never past the record */
		size = sizeof(*r);
	if (bpf_ringbuf_output(&events, r, size, image_flags(r->pid, r->exec_id)))
		sstat_inc(dropped);
}

#define KX_PAGE 4096

/* The user registers in DWARF order from a pt_regs. */
#define KX_FILL_REGS(u, p)                                                                         \
	do {                                                                                       \
		(u)->regs[16] = (p)->ip;                                                           \
		(u)->regs[0] = (p)->ax;                                                            \
		(u)->regs[1] = (p)->dx;                                                            \
		(u)->regs[2] = (p)->cx;                                                            \
		(u)->regs[3] = (p)->bx;                                                            \
		(u)->regs[4] = (p)->si;                                                            \
		(u)->regs[5] = (p)->di;                                                            \
		(u)->regs[6] = (p)->bp;                                                            \
		(u)->regs[7] = (p)->sp;                                                            \
		(u)->regs[8] = (p)->r8;                                                            \
		(u)->regs[9] = (p)->r9;                                                            \
		(u)->regs[10] = (p)->r10;                                                          \
		(u)->regs[11] = (p)->r11;                                                          \
		(u)->regs[12] = (p)->r12;                                                          \
		(u)->regs[13] = (p)->r13;                                                          \
		(u)->regs[14] = (p)->r14;                                                          \
		(u)->regs[15] = (p)->r15;                                                          \
	} while (0)

/* Copies the user stack from sp: ustack_bytes, or, where the stack ends
 * sooner (its top, near main), up to the last readable page. Bytes copied. */
static __always_inline __u32 copy_stack(struct kx_ustack_rec *u, __u64 sp)
{
	__u32 want = ustack_bytes > KX_USTACK_MAX ? KX_USTACK_MAX : ustack_bytes;
	__u32 first = KX_PAGE - (__u32)(sp & (KX_PAGE - 1)), sz;

	if (!bpf_probe_read_user(u->data, want, (void *)sp))
		return want;
	for (int k = KX_USTACK_MAX / KX_PAGE; k >= 0; k--) {
		sz = first + (__u32)k * KX_PAGE;
		if (sz >= want)
			continue;
		sz &= KX_USTACK_ROOM - 1; /* for the verifier: sz < want already */
		if (!bpf_probe_read_user(u->data, sz, (void *)sp))
			return sz;
	}
	return 0;
}

/* --call-graph dwarf: emits the user stack copy of the current thread
 * (flags: KX_USTACK_F_*). */
static __always_inline void emit_ustack(__u32 tgid, __u32 tid, __u32 exec_id, __u64 ts, __u32 flags)
{
#ifdef __TARGET_ARCH_x86
	__u32 cpu = bpf_get_smp_processor_id(), n;
	struct kx_ustack_rec *u = bpf_map_lookup_elem(&ustack_buf, &cpu);
	struct pt_regs *tr;

	if (!u)
		return;
	/* The user registers saved at the top of the task's kernel stack: at
	 * its entry into the kernel (a syscall, a fault), or, for a sample in
	 * user mode, by the timer interrupt's entry itself (x86-64 saves the
	 * user registers there; they are the ones the sample interrupted). */
	tr = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!tr)
		return;
	KX_FILL_REGS(u, tr);
	n = copy_stack(u, u->regs[KX_USTACK_REG_SP]);
	if (!n)
		sstat_inc(KX_SSTAT_USTACK_FAULT);
	if (n > KX_USTACK_MAX) /* for the verifier */
		n = KX_USTACK_MAX;
	u->hdr.type = KX_REC_USTACK;
	u->hdr.size = 0;
	u->hdr.cpu = cpu;
	u->version = KX_USTACK_VERSION;
	u->nregs = KX_USTACK_NREGS;
	u->tid = tid;
	u->pid = tgid;
	u->exec_id = exec_id;
	u->ts = ts;
	u->len = n;
	u->flags = flags;
	sstat_inc(KX_SSTAT_USTACK_EMITTED);
	if (bpf_ringbuf_output(&events, u, KX_USTACK_REC_BASE_SIZE + n, submit_flags()))
		sstat_inc(KX_SSTAT_USTACK_DROPPED);
#endif
}

SEC("perf_event")
int kx_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0, size;
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
	size = read_stacks(ctx, r, kmode, kthread);
	r->hdr.type = KX_REC_SAMPLE;
	r->hdr.size = size;
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = bpf_ktime_get_ns();
	r->weight = 0;
	fill_call(&r->call, current_call((__u32)id));
	r->pid = tgid;
	r->tid = (__u32)id;
	r->exec_id = (__u32)BPF_CORE_READ(task, self_exec_id);
	if (ustack_bytes && !kthread)
		emit_ustack(tgid, (__u32)id, r->exec_id, r->ts, 0);
	r->flags = (kmode ? KX_SAMPLE_F_KERNEL : 0) | (kthread ? KX_SAMPLE_F_KTHREAD : 0);
	r->pad = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	emit(r, size, KX_SSTAT_EMITTED, KX_SSTAT_DROPPED);
	return 0;
}

/* prev (the current task) blocks inside traced call v: stash its record. */
static __always_inline void offcpu_out(void *ctx, const struct inflight *v, __u32 tgid, __u32 tid,
                                       __u32 exec_id)
{
	struct kx_sample_rec *r;
	__u32 zero = 0;
	long err;

	r = bpf_map_lookup_elem(&sample_buf, &zero);
	if (!r)
		return;
	/* First: the time away starts now, not after the stacks are read. */
	r->ts = bpf_ktime_get_ns();
	r->hdr.size = read_stacks(ctx, r, true, false);
	r->hdr.type = KX_REC_OFFCPU;
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->weight = 0;
	fill_call(&r->call, v);
	r->pid = tgid;
	r->tid = tid;
	r->exec_id = exec_id;
	r->flags = KX_SAMPLE_F_KERNEL;
	r->pad = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	/* prev is still the current task: its registers and user memory. The
	 * copy waits in user space for the record of the switch-in (a copy whose
	 * record is never emitted is replaced by the thread's next one). */
	if (ustack_bytes)
		emit_ustack(tgid, tid, exec_id, r->ts, KX_USTACK_F_OFFCPU);
	err = bpf_map_update_elem(&offcpu_stash, &tid, r, BPF_NOEXIST);
	if (err == -EEXIST) /* left by a switch-in this program missed: replaced */
		err = bpf_map_update_elem(&offcpu_stash, &tid, r, BPF_EXIST);
	else if (!err)
		__sync_fetch_and_add(&nr_stashed, 1);
	if (err)
		sstat_inc(KX_SSTAT_OFF_NOSLOT);
}

/*
 * Thread tid is switched in, inside call v (NULL: none): its stash, if any,
 * becomes an off-CPU record. A stash of another call (or of a call that has
 * ended) was left by a switch-in this program did not see: its time would
 * run past the call it blocked in, so it is counted, not recorded.
 */
static __always_inline void offcpu_in(__u32 tid, const struct inflight *v)
{
	struct kx_sample_rec *r;

	r = bpf_map_lookup_elem(&offcpu_stash, &tid);
	if (!r)
		return;
	if (v && v->ts == r->call.ts) {
		r->weight = bpf_ktime_get_ns() - r->ts;
		emit(r, r->hdr.size, KX_SSTAT_OFF_EMITTED, KX_SSTAT_OFF_DROPPED);
	} else {
		sstat_inc(KX_SSTAT_OFF_STALE);
	}
	if (!bpf_map_delete_elem(&offcpu_stash, &tid))
		__sync_fetch_and_add(&nr_stashed, -1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(kx_offcpu_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct inflight *v;

	if (!preempt && kx_task_blocked(prev)) {
		v = call_btf ? kx_call_in_progress(prev, 0, true)
		             : kx_call_in_progress(NULL, prev->pid, false);
		if (v && kx_still_traced(prev->tgid))
			offcpu_out(ctx, v, prev->tgid, prev->pid, (__u32)prev->self_exec_id);
	}
	if (*(volatile __u64 *)&nr_stashed)
		offcpu_in(next->pid, call_btf ? kx_call_in_progress(next, 0, true)
		                              : kx_call_in_progress(NULL, next->pid, false));
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(kx_offcpu_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(prev, pid);
	struct inflight *v;

	if (!preempt && kx_task_blocked(prev)) {
		v = kx_call_in_progress(NULL, tid, false);
		if (v && kx_still_traced(BPF_CORE_READ(prev, tgid)))
			offcpu_out(ctx, v, BPF_CORE_READ(prev, tgid), tid,
			           (__u32)BPF_CORE_READ(prev, self_exec_id));
	}
	tid = BPF_CORE_READ(next, pid);
	if (*(volatile __u64 *)&nr_stashed)
		offcpu_in(tid, kx_call_in_progress(NULL, tid, false));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
