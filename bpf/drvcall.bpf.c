// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Driver entry hooks: calls and latency of driver submit-path functions
 * (drm_ioctl, nvidia_unlocked_ioctl, i915_gem_do_execbuffer, ...), counted
 * in the kernel per function into a log2 histogram; no ring-buffer traffic.
 * Two flavours, user space loads one: fentry/fexit pairs (one pair per
 * function slot, the target set at load time) or one kprobe/kretprobe pair
 * attached to every function with the function's slot as attach cookie.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kxprof.h"
#include "log2.bpf.h"

/* Per function slot (user space's table index). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_DRV_FN_MAX);
	__type(key, __u32);
	__type(value, struct kx_drvcall_val);
} drvstats SEC(".maps");

/* Entry time by (tid, slot): these functions do not recurse per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} drvstart SEC(".maps");

static __always_inline __u64 start_key(__u32 slot)
{
	return (__u64)(__u32)bpf_get_current_pid_tgid() << 8 | (slot & 0xff);
}

static __always_inline void call_enter(__u32 slot)
{
	__u64 k = start_key(slot), now = bpf_ktime_get_ns();

	bpf_map_update_elem(&drvstart, &k, &now, BPF_ANY);
}

static __always_inline void call_exit(__u32 slot)
{
	__u64 k = start_key(slot), *t0, d;
	struct kx_drvcall_val *s;

	t0 = bpf_map_lookup_elem(&drvstart, &k);
	if (!t0)
		return; /* entered before the hook was attached */
	d = bpf_ktime_get_ns() - *t0;
	bpf_map_delete_elem(&drvstart, &k);
	s = bpf_map_lookup_elem(&drvstats, &slot);
	if (!s)
		return;
	s->calls++;
	s->sum_ns += d;
	if (d > s->max_ns)
		s->max_ns = d;
	s->slots[log2_slot(d)]++;
}

/* fentry/fexit: one pair per slot, attach target set by user space before load. */
#define FENTRY_PAIR(i)                                                                             \
	SEC("fentry")                                                                              \
	int fentry_##i(void *ctx)                                                                  \
	{                                                                                          \
		call_enter(i);                                                                     \
		return 0;                                                                          \
	}                                                                                          \
	SEC("fexit")                                                                               \
	int fexit_##i(void *ctx)                                                                   \
	{                                                                                          \
		call_exit(i);                                                                      \
		return 0;                                                                          \
	}

FENTRY_PAIR(0)
FENTRY_PAIR(1)
FENTRY_PAIR(2)
FENTRY_PAIR(3)
FENTRY_PAIR(4)
FENTRY_PAIR(5)
FENTRY_PAIR(6)
FENTRY_PAIR(7)

/* kprobe/kretprobe: one program each, attached per function with its slot as cookie. */
SEC("kprobe")
int kprobe_call(struct pt_regs *ctx)
{
	call_enter((__u32)bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("kretprobe")
int kretprobe_call(struct pt_regs *ctx)
{
	__u32 slot = (__u32)bpf_get_attach_cookie(ctx);

	if (slot < KX_DRV_FN_MAX)
		call_exit(slot);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
