/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The ioctl call a thread is inside: its entry, made by bpf/ioctl.bpf.c at
 * the thread's first traced call and updated in place at each enter and exit
 * (ts != 0 while a call is in progress), in task-local storage under fentry,
 * tp_btf and tp, or in a tid hash under raw_tp. ioctl.bpf.c owns the entries; bpf/sample.bpf.c
 * declares the same maps and user space points them at the ioctl object's
 * (bpf_map__reuse_fd), so a CPU sample or an off-CPU interval knows which
 * traced call its thread was in.
 */
#ifndef KXPROF_INFLIGHT_BPF_H
#define KXPROF_INFLIGHT_BPF_H

/* The traced-device answer for a file: found, and its fkind, driver and dev. */
struct dev_answer {
	__u32 found;
	__u32 dev;
	__u16 fkind;
	__u16 drv;
};

struct inflight {
	__u64 ts;
	__u64 arg;       /* user pointer to the argument (or inner XFER params) */
	__u64 offcpu_ns; /* time switched out so far (sched_switch) */
	__u64 off_since; /* when it was switched out, 0 while on a CPU */
	__u32 cmd;
	__s32 fd;
	__u32 dev;
	__u16 fkind;
	__u16 drv;
	__u32 xfer_cmd;
	__u16 in_len;
	__u16 out_len;    /* planned copy at exit */
	__u64 follow_src; /* user address of the followed window (KX_ARGF_FOLLOW), 0: none */
	__u8 in[KX_ARG_MAX];
	/* Above: the call in progress (ts 0: none). Below: kept from call to call,
	 * since a thread's entry lives until the thread exits and is updated in
	 * place (a map update and delete per call cost more than the rest of
	 * the call's recording; tests/bench/RESULTS.md). */
	__u8 named;      /* a task record named the thread */
	__u8 spec_valid; /* spec_* hold the argspec answer for (spec_drv, spec_cmd) */
	__u8 spec_found;
	__u16 spec_drv;
	__u32 spec_cmd;
	struct kx_arg_spec spec;
	/* The device answer for the thread's last file (threads repeat their fd):
	 * valid while dev_gen == devs_gen. dev_ck: (mode, rdev) of a device
	 * node, or the f_op of an anon-inode file. */
	__u64 dev_ck;
	__u32 dev_gen;
	struct dev_answer dev_known;
	/* Aggregate mode: the slot of the thread's last key, valid while agg_gen
	 * is unchanged (a thread repeating an ioctl costs no hash lookup). */
	__u8 agg_valid;
	__u32 agg_gen;
	__u32 agg_slot;
	struct kx_agg_key agg_key;
};

/* Ioctls in progress, by tid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight SEC(".maps");

/*
 * fentry, tp_btf and tp: the same entries in task-local storage, found from
 * the task by a pointer walk instead of a hash of the tid (two hash lookups
 * and two atomics fewer per ioctl), and freed with the task. The tid hash
 * above serves raw_tp, whose task pointers are untyped.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct inflight);
} task_call SEC(".maps");

/* The call thread `task` (tid `tid`) is inside, NULL when none: read-only
 * for other objects. btf: the entries are in task storage (the ioctl capture
 * attached with fentry, tp_btf or tp), and task is a BTF pointer. */
static __always_inline struct inflight *kx_call_in_progress(struct task_struct *task, __u32 tid,
                                                            const bool btf)
{
	struct inflight *v;

	if (btf)
		v = task->bpf_storage ? bpf_task_storage_get(&task_call, task, NULL, 0) : NULL;
	else
		v = bpf_map_lookup_elem(&inflight, &tid);
	return v && v->ts ? v : NULL;
}

#endif /* KXPROF_INFLIGHT_BPF_H */
