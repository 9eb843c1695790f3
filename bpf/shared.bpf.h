/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the capture objects share: the ring buffer, the loss counters, the pid
 * set and the device filter. ioctl.bpf.c owns them; jobs.bpf.c declares the
 * same maps and user space points them at the ioctl object's before load
 * (bpf_map__reuse_fd), so ordering and loss accounting stay in one place.
 * Also the one pid-set test every program uses (kx_tgid_traced), with the
 * uid rule of a daemon session for an unprivileged client, and the rule an
 * exec of a traced process must pass in such a session (kx_exec_readable).
 */
#ifndef KXPROF_SHARED_BPF_H
#define KXPROF_SHARED_BPF_H

#include <bpf/bpf_core_read.h>

#include "core_fixes.bpf.h"

const volatile bool targ_all = false; /* trace every process */
/* A daemon session for an unprivileged client (user/daemon/): a process is
 * traced only while its real and effective uid are targ_uid. */
const volatile bool targ_uid_only = false;
const volatile __u32 targ_uid = 0;
/* The client's gid, for the exec rule (kx_exec_readable); set by the
 * object that runs it (user/capture/ioctl.c). */
const volatile __u32 targ_gid = 0;
const volatile __u64 wakeup_bytes = 256 * 1024; /* wake the consumer past this much data */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Target processes by tgid (children are added at fork). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* Traced devices: (fkind, dev) -> driver id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct kx_dev_key);
	__type(value, __u32);
} devs SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
}

static __always_inline __u64 submit_flags(void)
{
	/* Sampled notification: wake the consumer only once enough data waits. */
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
	                                                                     : BPF_RB_NO_WAKEUP;
}

/* The current task's real and effective uid are targ_uid (always true
 * unless targ_uid_only). Read from real_cred, the credentials
 * /proc/PID/status shows and other processes act on. */
static __always_inline bool kx_cur_uid_ok(void)
{
	struct task_struct *t;

	if (!targ_uid_only)
		return true;
	t = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(t, real_cred, uid.val) == targ_uid &&
	       BPF_CORE_READ(t, real_cred, euid.val) == targ_uid;
}

/* Under the uid rule, the current task's memory is the client's to read:
 * 1 when dumpable (SUID_DUMP_USER) or of a layout this code does not know,
 * 0 when not (the exec of a program the client may not read makes it so
 * before the comm changes and anything of the new program runs, well before
 * sched_process_exec: a sample in between would show it), -1 when the task
 * has no memory (a thread past exit_mm). */
static __always_inline int kx_cur_mm_readable(void)
{
	struct task_struct *t;
	struct mm_struct *mm;
	int d;

	if (!targ_uid_only)
		return 1;
	t = (struct task_struct *)bpf_get_current_task();
	mm = BPF_CORE_READ(t, mm);
	if (!mm)
		return -1;
	d = kx_mm_dumpable(mm);
	return d == 1 || d < 0;
}

/*
 * The current task's process tgid is traced: -a, or in the pid set. Under
 * the uid rule a member whose uid changed (it exec'd a setuid program or
 * called setresuid) leaves the set at that moment, for good: changing back
 * does not bring it back, and its later children are not added. One whose
 * memory is not dumpable (it is exec'ing a program the client may not read,
 * or made itself so) is not traced while it is so.
 */
static __always_inline bool kx_tgid_traced(__u32 tgid)
{
	int mm_ok;

	if (targ_all)
		return true;
	if (!bpf_map_lookup_elem(&pids, &tgid))
		return false;
	if (!kx_cur_uid_ok()) {
		bpf_map_delete_elem(&pids, &tgid);
		return false;
	}
	/* Not dumpable: not now (its exec's sched_process_exec drops and
	 * counts it, shared.bpf.h's users' on_exec; a process that made itself
	 * not dumpable is back once it is dumpable again). */
	mm_ok = kx_cur_mm_readable();
	return mm_ok != 0;
}

/*
 * After an exec by a traced process of a session under the uid rule: the
 * client (targ_uid, targ_gid, no capability) may still read the process as
 * the kernel's ptrace rule has it (PTRACE_MODE_READ_REALCREDS,
 * kernel/ptrace.c __ptrace_may_access and commoncap's
 * cap_ptrace_access_check): its real, effective, saved and fs uids are
 * targ_uid and its gids targ_gid, it has no permitted capability and it is
 * dumpable (SUID_DUMP_USER). A setuid, setgid or file-capability program
 * (bprm->secureexec) or an unreadable one fails it. t: the task that
 * exec'd (current); bprm: the exec's, NULL when unknown.
 */
static __always_inline bool kx_exec_readable(struct task_struct *t, struct linux_binprm *bprm)
{
	const struct cred *c = BPF_CORE_READ(t, real_cred);
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	__u64 caps = 0;
	int dumpable;

	if (bprm && bpf_core_field_exists(bprm->secureexec) &&
	    BPF_CORE_READ_BITFIELD_PROBED(bprm, secureexec))
		return false;
	if (BPF_CORE_READ(c, uid.val) != targ_uid || BPF_CORE_READ(c, euid.val) != targ_uid ||
	    BPF_CORE_READ(c, suid.val) != targ_uid || BPF_CORE_READ(c, fsuid.val) != targ_uid)
		return false;
	if (BPF_CORE_READ(c, gid.val) != targ_gid || BPF_CORE_READ(c, egid.val) != targ_gid ||
	    BPF_CORE_READ(c, sgid.val) != targ_gid || BPF_CORE_READ(c, fsgid.val) != targ_gid)
		return false;
	/* kernel_cap_t: 64 bits as one u64 (6.3+) or two u32 before. */
	bpf_core_read(&caps, sizeof(caps), &c->cap_permitted);
	if (caps)
		return false;
	dumpable = kx_mm_dumpable(mm);
	/* A layout this code does not know (-1): the credentials above decide. */
	return dumpable == 1 || dumpable < 0;
}

/* For paths that found the thread traced without asking the pid set (its
 * entry exists): under the uid rule, ask it now. */
static __always_inline bool kx_still_traced(__u32 tgid)
{
	return !targ_uid_only || kx_tgid_traced(tgid);
}

#endif /* KXPROF_SHARED_BPF_H */
