// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reference programs for the benchmarks (tests/bench/floor.c loads them;
 * kxprof never does). All sit on exactly the hooks of the ioctl capture's
 * tp_btf flavour (bpf/ioctl.bpf.c): raw syscall enter/exit and the four
 * task hooks. Five levels, one attached at a time:
 *   empty    the hook floor: programs that return at once. What they add to
 *            a syscall is the price of the attach mechanism itself (syscall
 *            tracepoint slow path plus one BPF call per hook), the physical
 *            limit of any tracer built on these hooks;
 *   clock    the floor plus one clock read at ioctl enter and one at exit:
 *            what any latency measurement must pay on top;
 *   latency  the classic latency tracer: ioctls of one process, per-thread
 *            start time in a hash at enter, log2 histogram at exit (what
 *            the bpftrace script and libbpf-tools do, on these hooks);
 *   tslat    the smallest latency tracer this kernel allows: the same with
 *            the start time in task-local storage (no hash) and a per-CPU
 *            histogram: the lower bound of in-kernel aggregation;
 *   tsrec    the smallest event recorder: tslat's start time plus a 40-byte
 *            ring-buffer record per call (times, ids, cmd, return value),
 *            read by the loader: the lower bound of full-event recording.
 * The task hooks stay empty at every level. Three more floors, for the
 * host-cost rows (what other syscalls and context switches pay):
 *   tpempty   empty programs on the classic syscalls:sys_{enter,exit}_ioctl
 *             tracepoints (kxprof's tp flavour, bpftrace), with the empty
 *             task hooks;
 *   fenempty  empty fentry/fexit on the ioctl syscall's entry function
 *             (the loader sets the target), with the empty task hooks;
 *   swempty   one empty tp_btf program on sched_switch, nothing else: the
 *             floor of any off-CPU measurement.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kxprof.h"
#include "log2.bpf.h"

#define NR_IOCTL 16 /* x86-64 */

__u32 target_tgid; /* latency: the traced process, set by the loader */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sink SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_HIST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

/* tslat, tsrec: the thread's call in progress. */
struct call {
	__u64 ts;
	__u32 cmd;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call);
} calls SEC(".maps");

/* tsrec: one record per call. */
struct rec {
	__u64 ts, dur;
	__u32 pid, tid, cmd, cpu;
	__s64 ret;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} ring SEC(".maps");

/* latency, tslat: one more duration in the per-CPU log2 histogram (kxprof's slot rule). */
static __always_inline void hist_add(__u64 d)
{
	__u32 slot = log2_slot(d);
	__u64 *n = bpf_map_lookup_elem(&hist, &slot);

	if (n)
		*n += 1;
}

/* ---- empty ---- */

SEC("tp_btf/sys_enter")
int BPF_PROG(empty_sys_enter, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(empty_sys_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(empty_fork, struct task_struct *parent, struct task_struct *child)
{
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(empty_exit, struct task_struct *p, bool group_dead)
{
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(empty_exec, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(empty_rename, struct task_struct *task, const char *comm)
{
	return 0;
}

/* ---- tpempty, fenempty, swempty ---- */

SEC("tracepoint/syscalls/sys_enter_ioctl")
int tpempty_sys_enter(void *ctx)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int tpempty_sys_exit(void *ctx)
{
	return 0;
}

SEC("fentry")
int BPF_PROG(fenempty_sys_enter, struct pt_regs *regs)
{
	return 0;
}

SEC("fexit")
int BPF_PROG(fenempty_sys_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(swempty_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

/* ---- clock: a timestamp per ioctl enter and exit, kept so it is not optimised out ---- */

static __always_inline void keep(__u64 v)
{
	__u32 zero = 0;
	__u64 *p = bpf_map_lookup_elem(&sink, &zero);

	if (p)
		*p = v;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(clock_sys_enter, struct pt_regs *regs, long id)
{
	if (id == NR_IOCTL)
		keep(bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(clock_sys_exit, struct pt_regs *regs, long ret)
{
	if (regs->orig_ax == NR_IOCTL)
		keep(bpf_ktime_get_ns());
	return 0;
}

/* ---- latency: start time by tid, log2 histogram of durations ---- */

SEC("tp_btf/sys_enter")
int BPF_PROG(latency_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid, ts;
	__u32 tid;

	if (id != NR_IOCTL)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (pid_tgid >> 32 != target_tgid)
		return 0;
	tid = (__u32)pid_tgid;
	ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&start, &tid, &ts, BPF_ANY);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(latency_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 *ts, d;
	__u32 tid;

	if (regs->orig_ax != NR_IOCTL)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	ts = bpf_map_lookup_elem(&start, &tid);
	if (!ts)
		return 0;
	d = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&start, &tid);
	hist_add(d);
	return 0;
}

/* ---- tslat and tsrec: start time in task storage ---- */

static __always_inline int ts_enter(long id, __u32 cmd)
{
	struct task_struct *task;
	struct call *c;

	if (id != NR_IOCTL)
		return 0;
	task = bpf_get_current_task_btf();
	if (task->tgid != target_tgid)
		return 0;
	c = bpf_task_storage_get(&calls, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return 0;
	c->cmd = cmd;
	c->ts = bpf_ktime_get_ns();
	return 0;
}

/* The finished call of the current thread, and its duration; NULL if none. */
static __always_inline struct call *ts_done(struct pt_regs *regs, __u64 *dur)
{
	struct call *c;

	if (regs->orig_ax != NR_IOCTL)
		return NULL;
	c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), NULL, 0);
	if (!c || !c->ts)
		return NULL;
	*dur = bpf_ktime_get_ns() - c->ts;
	return c;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(tslat_sys_enter, struct pt_regs *regs, long id)
{
	return ts_enter(id, (__u32)regs->si);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(tslat_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 d;
	struct call *c = ts_done(regs, &d);

	if (!c)
		return 0;
	c->ts = 0;
	hist_add(d);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(tsrec_sys_enter, struct pt_regs *regs, long id)
{
	return ts_enter(id, (__u32)regs->si);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(tsrec_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct rec *r;
	__u64 d;
	struct call *c = ts_done(regs, &d);

	if (!c)
		return 0;
	r = bpf_ringbuf_reserve(&ring, sizeof(*r), 0);
	if (r) {
		r->ts = c->ts;
		r->dur = d;
		r->pid = task->tgid;
		r->tid = task->pid;
		r->cmd = c->cmd;
		r->cpu = bpf_get_smp_processor_id();
		r->ret = ret;
		/* The loader polls: no wakeup per record (kxprof samples them too). */
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	}
	c->ts = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
