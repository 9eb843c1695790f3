// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reference programs for the benchmarks (tests/bench/floor.c loads them;
 * kxprof never does). All sit on exactly the hooks of the ioctl capture's
 * tp_btf flavour (bpf/ioctl.bpf.c): raw syscall enter/exit and the four
 * task hooks. Three levels, one attached at a time:
 *   empty    the hook floor: programs that return at once. What they add to
 *            a syscall is the price of the attach mechanism itself (syscall
 *            tracepoint slow path plus one BPF call per hook), the physical
 *            limit of any tracer built on these hooks;
 *   clock    the floor plus one clock read at ioctl enter and one at exit:
 *            what any latency measurement must pay on top;
 *   latency  the smallest real latency tracer: ioctls of one process,
 *            per-thread start time in a hash at enter, log2 histogram at
 *            exit (what the bpftrace script does, on these hooks).
 * The task hooks stay empty at every level.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define NR_IOCTL 16 /* x86-64 */
#define SLOTS    64

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
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

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
	__u32 tid, slot = 0;
	__u64 *ts, d, *n;

	if (regs->orig_ax != NR_IOCTL)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	ts = bpf_map_lookup_elem(&start, &tid);
	if (!ts)
		return 0;
	d = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&start, &tid);
	while (d > 1 && slot < SLOTS - 1) {
		d >>= 1;
		slot++;
	}
	n = bpf_map_lookup_elem(&hist, &slot);
	if (n)
		*n += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
