// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ioctl capture: one record per completed ioctl on a traced device, issued by
 * a traced process, plus task records that name the threads. Filtering (pid
 * set, device set) happens before any record is made. Four attach flavours
 * of the same logic for the ioctl enter/exit pair, user space autoloads
 * exactly one (capture/ioctl.c):
 *   fen_  fentry/fexit on the ioctl syscall's entry function (user space sets
 *         the architecture's name, found through BTF): no other syscall runs
 *         any of this;
 *   btf_  tp_btf on the raw syscall tracepoints (every syscall of the host
 *         runs the program, which returns unless it is an ioctl);
 *   raw_  the same as raw_tp, for kernels without BTF task pointers;
 *   tp_   the classic syscalls:sys_{enter,exit}_ioctl tracepoints (the kernel
 *         filters other syscalls out before any program runs).
 * The task hooks (fork, exit, exec, rename, sched_switch) are tp_btf with
 * every flavour but raw_tp, which has its own. All flavours but raw_tp keep
 * a thread's call in task-local storage and read the task through BTF.
 * Aggregate mode (rodata `aggregate`, always-on profiling): the same capture
 * counts each ioctl into the `agg` histogram map at exit instead of making
 * a record (no argument copies, no task records); only the calls of one
 * (driver, cmd) that user space names (`agg_rec_drv`, `agg_rec_cmd`: KVM_RUN,
 * where live KVM jobs start) also make a short record.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "kxprof.h"
#include "inflight.bpf.h"
#include "log2.bpf.h"
#include "shared.bpf.h"
#include "counters.bpf.h"

#define S_IFMT              00170000
#define S_IFCHR             0020000
#define S_IFBLK             0060000
#define ANON_INODE_FS_MAGIC 0x09041934
#define E2BIG               7
#define EEXIST              17

/* Aggregate mode: count into the agg map at exit, no ring-buffer record. */
const volatile bool aggregate = false;
const volatile bool agg_by_pid = false;    /* split aggregates by tgid */
const volatile bool agg_by_cgroup = false; /* split aggregates by cgroup id */
/* Set by user space while an NVIDIA device is traced: aggregates then still
 * unwrap XFER escapes (their names); writable at run time (hot-plug). */
bool agg_xfer = false;
/* Aggregate mode: calls of this driver (enum kx_driver, 0: none) and cmd
 * still make a short record besides their count. */
const volatile __u32 agg_rec_drv = 0;
const volatile __u32 agg_rec_cmd = 0;

/* Which (driver, cmd) get an argument copy. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct kx_arg_key);
	__type(value, struct kx_arg_spec);
} argspec SEC(".maps");

/* f_op of anon-inode files -> fkind (0: not a traced kind), learned on first sight. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 512);
	__type(key, __u64);
	__type(value, __u32);
} fopkind SEC(".maps");

/* Threads already named by a task record. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} seen SEC(".maps");

/*
 * Aggregate mode: (device, driver, cmd[, pid or cgroup]) -> a slot of the agg
 * array (counters and fine latency histogram). Values sit in an array, whose lookup
 * the verifier inlines, and threads keep their last key's slot. Free slots
 * wait in agg_free (filled by user space at load); user space deletes keys
 * (reset, exited processes), bumps agg_gen so threads drop the slots they
 * keep, and recycles the slots a while later. All three are sized by user
 * space (KX_AGG_MAX_KEYS default, 1 when unused).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KX_AGG_MAX_KEYS);
	__type(key, struct kx_agg_key);
	__type(value, __u32);
} agg_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KX_AGG_MAX_KEYS);
	__type(key, __u32);
	__type(value, struct kx_agg_val);
} agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, KX_AGG_MAX_KEYS);
	__type(value, __u32);
} agg_free SEC(".maps");

__u32 agg_gen = 0;

/* tid hash only: calls in flight (entries with ts != 0); sched_switch and
 * sys_exit skip every read while it is 0. */
__u64 nr_inflight = 0;

/* Task storage only: traced calls whose thread is switched out, blocked
 * inside the call (set at switch-out, cleared at switch-in: only calls that
 * block touch it). While it is 0 no thread coming back to a CPU can have
 * off-CPU time to add, and sched_switch skips the lookup for next. */
__u64 nr_blocked = 0;

/* Bumped by user space after each change of the devs map: it voids the
 * device answers the threads' entries keep. */
__u32 devs_gen = 0;

/* The thread's entry, or NULL when it made no traced call yet. */
static __always_inline struct inflight *entry_get(struct task_struct *task, __u32 tid,
                                                  const bool btf)
{
	if (btf) /* most tasks have no local storage at all: a load, not a helper call */
		return task->bpf_storage ? bpf_task_storage_get(&task_call, task, NULL, 0) : NULL;
	return bpf_map_lookup_elem(&inflight, &tid);
}

/* Makes the thread's entry (zeroed: idle, nothing cached). */
static __always_inline struct inflight *entry_new(struct task_struct *task, __u32 tid,
                                                  const bool btf)
{
	struct inflight zero = {};

	if (btf)
		return bpf_task_storage_get(&task_call, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	bpf_map_update_elem(&inflight, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&inflight, &tid);
}

/* A call ended: the thread's entry stays, idle until its next call. */
static __always_inline void call_done(struct inflight *v, const bool btf)
{
	v->ts = 0;
	if (!btf)
		__sync_fetch_and_add(&nr_inflight, -1);
}

/* The thread exited: its entry goes. */
static __always_inline void inflight_del(__u32 tid)
{
	struct inflight *v = bpf_map_lookup_elem(&inflight, &tid);

	if (!v)
		return;
	if (v->ts)
		__sync_fetch_and_add(&nr_inflight, -1);
	bpf_map_delete_elem(&inflight, &tid);
}

static __always_inline void emit_task(__u32 what, __u32 pid, __u32 tid, __u32 ppid,
                                      const char *comm_kernel)
{
	struct kx_task_rec *r;

	stat_inc(KX_STAT_TASK_EMITTED);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_inc(KX_STAT_TASK_DROPPED);
		return;
	}
	r->hdr.type = KX_REC_TASK;
	r->hdr.size = sizeof(*r);
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = bpf_ktime_get_ns();
	r->pid = pid;
	r->tid = tid;
	r->ppid = ppid;
	r->what = what;
	if (comm_kernel)
		bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm_kernel);
	else
		bpf_get_current_comm(r->comm, sizeof(r->comm));
	r->tp = 0;
#if defined(__TARGET_ARCH_x86)
	/* The first traced ioctl runs on the thread itself: its own fs base. */
	if (what == KX_TASK_SEEN) {
		struct task_struct *cur = (struct task_struct *)bpf_get_current_task();

		r->tp = BPF_CORE_READ(cur, thread.fsbase);
	}
#endif
	bpf_ringbuf_submit(r, submit_flags());
}

static __always_inline bool pid_traced(__u32 tgid)
{
	return kx_tgid_traced(tgid);
}

static __always_inline struct file *fd_to_file(struct task_struct *task, int fd)
{
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *f = NULL;

	if (!fdt || fd < 0 || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* bpf_rdonly_cast (core_fixes.bpf.h, 6.2+): a kernel pointer held as a number, as
 * a read-only typed pointer: tp_btf programs then read struct file and inode
 * with plain loads instead of a probe-read helper call each (-~200 ns per ioctl
 * here). */

/* tp_btf: the file behind fd with plain loads only. The fd array holds bare
 * struct file pointers, which BTF cannot type; the slot is read as the
 * ki_filp member of a struct kiocb laid over it (any struct with a file
 * pointer would do): a load the JIT guards with an exception-table entry,
 * instead of a probe-read helper call (~30 ns here). NULL when fd is not open. */
static __always_inline struct file *fd_to_file_btf(struct task_struct *task, int fd)
{
	struct fdtable *fdt = task->files->fdt;
	unsigned long slot;

	if (fd < 0 || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	slot = (unsigned long)&fdt->fd[fd] - bpf_core_field_offset(struct kiocb, ki_filp);
	return ((struct kiocb *)bpf_rdonly_cast((void *)slot,
	                                        bpf_core_type_id_kernel(struct kiocb)))
	        ->ki_filp;
}

static __always_inline bool prefix_is(const char *s, const char *p, int n)
{
	for (int i = 0; i < n; i++)
		if (s[i] != p[i])
			return false;
	return true;
}

/* Classifies an anon-inode file once per f_op: kvm-vm, kvm-vcpu:N, kvm-<dev>, [vfio-device]. */
static __always_inline __u32 anon_kind(__u64 fop, struct file *f, struct inode *inode)
{
	__u32 *cached = bpf_map_lookup_elem(&fopkind, &fop);
	char name[16] = {};
	__u32 kind = KX_FK_NONE;

	if (cached)
		return *cached;
	if (BPF_CORE_READ(inode, i_sb, s_magic) == ANON_INODE_FS_MAGIC) {
		bpf_probe_read_kernel_str(name, sizeof(name),
		                          BPF_CORE_READ(f, f_path.dentry, d_name.name));
		if (prefix_is(name, "kvm-vcpu", 8))
			kind = KX_FK_KVM_VCPU;
		else if (prefix_is(name, "kvm-vm", 7))
			kind = KX_FK_KVM_VM;
		else if (prefix_is(name, "kvm-", 4))
			kind = KX_FK_KVM_DEV;
		else if (prefix_is(name, "[vfio-device]", 13))
			kind = KX_FK_VFIO_DEV;
	}
	bpf_map_update_elem(&fopkind, &fop, &kind, BPF_ANY);
	return kind;
}

static __always_inline void name_thread(__u32 pid, __u32 tid)
{
	__u8 one = 1;

	if (bpf_map_lookup_elem(&seen, &tid))
		return;
	bpf_map_update_elem(&seen, &tid, &one, BPF_ANY);
	emit_task(KX_TASK_SEEN, pid, tid, 0, NULL);
}

/* The argspec entry for (drv, cmd), or NULL; the map is filled once at open,
 * so the thread's entry keeps the last answer (threads repeat commands). */
static __always_inline struct kx_arg_spec *arg_spec(struct inflight *e, __u32 drv, __u32 cmd)
{
	struct kx_arg_key akey = {.drv = drv, .cmd = cmd};
	struct kx_arg_spec *spec;

	if (!e->spec_valid || e->spec_drv != drv || e->spec_cmd != cmd) {
		spec = bpf_map_lookup_elem(&argspec, &akey);
		if (!spec) {
			akey.cmd = KX_ARG_BY_NR_KEY(cmd);
			spec = bpf_map_lookup_elem(&argspec, &akey);
		}
		e->spec_valid = 1;
		e->spec_drv = drv;
		e->spec_cmd = cmd;
		e->spec_found = spec != NULL;
		if (spec)
			e->spec = *spec;
	}
	return e->spec_found ? &e->spec : NULL;
}

/* The follow rule (bpf/kxprof.h) at enter: a window of the block the copied
 * argument points at, when its selector is one of the rule's. */
static __always_inline void follow_enter(struct inflight *e, const struct kx_arg_follow *fw)
{
	__u32 sel = *(__u32 *)(e->in + (fw->sel_off & (KX_ARG_MAX - 4)));
	__u64 ptr = *(__u64 *)(e->in + (fw->ptr_off & (KX_ARG_MAX - 8)));
	__u16 off = 0;
	bool hit = false;

#pragma unroll
	for (int i = 0; i < KX_FOLLOW_SEL; i++) {
		if (i < fw->n && fw->sel[i] == sel && !hit) {
			off = fw->off[i];
			hit = true;
		}
	}
	if (!hit || !ptr)
		return;
	if (bpf_probe_read_user(e->in + KX_FOLLOW_AT, KX_FOLLOW_LEN, (void *)(ptr + off))) {
		stat_inc(KX_STAT_ARG_FAULT);
		return;
	}
	e->in_len = KX_ARG_MAX;
	e->follow_src = ptr + off;
}

static __always_inline void resolve_dev(struct dev_answer *a, umode_t mode, __u32 rdev, __u64 fop,
                                        struct file *f, struct inode *inode)
{
	struct kx_dev_key key = {};
	__u32 *drv;

	if (mode == S_IFCHR || mode == S_IFBLK) {
		key.fkind = mode == S_IFCHR ? KX_FK_CHR : KX_FK_BLK;
		key.dev = rdev;
		a->dev = rdev;
		drv = bpf_map_lookup_elem(&devs, &key);
		if (!drv) {
			key.dev = KX_DEV_ANY_MINOR(KX_MAJOR(key.dev));
			drv = bpf_map_lookup_elem(&devs, &key);
		}
	} else {
		key.fkind = anon_kind(fop, f, inode);
		if (key.fkind == KX_FK_NONE)
			return;
		drv = bpf_map_lookup_elem(&devs, &key);
	}
	if (!drv)
		return;
	a->found = 1;
	a->fkind = key.fkind;
	a->drv = *drv;
}

static __always_inline void dev_cache_put(struct inflight *e, __u64 ck, __u32 gen,
                                          const struct dev_answer *a)
{
	e->dev_ck = ck;
	e->dev_gen = gen;
	e->dev_known = *a;
}

/* btf: the current task read through BTF and the call kept in task storage
 * (every flavour but raw_tp). */
static __always_inline int on_enter(int fd, __u32 cmd, __u64 arg, const bool btf)
{
	/* BTF: ids from the task, which the fd lookup needs anyway (a helper call less). */
	struct task_struct *task = btf ? bpf_get_current_task_btf() : NULL;
	__u64 id = btf ? (__u64)task->tgid << 32 | (__u32)task->pid : bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct dev_answer a = {};
	struct kx_arg_spec *spec;
	struct inflight *e;
	struct inode *inode;
	struct file *f;
	__u32 rdev, gen;
	__u64 ck, fop = 0;
	umode_t mode;

	/* A thread with an entry made a traced call: its process is traced. With
	 * task storage a missing entry costs a load; the tid hash costs a lookup,
	 * so raw_tp asks the pid set first (most callers are not traced). */
	if (btf) {
		e = entry_get(task, tid, true);
		if (!e && !pid_traced(tgid))
			return 0;
	} else {
		if (!pid_traced(tgid))
			return 0;
		e = entry_get(NULL, tid, false);
	}
	/* A daemon session's uid rule: a thread with an entry may have left. */
	if (e && !kx_still_traced(tgid))
		return 0;
	if (btf && bpf_rdonly_cast) {
		struct file *fc;

		f = fd_to_file_btf(task, fd);
		if (!f)
			return 0;
		fc = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
		inode = fc->f_inode;
		mode = inode->i_mode & S_IFMT;
		rdev = inode->i_rdev;
		if (mode != S_IFCHR && mode != S_IFBLK)
			fop = (__u64)fc->f_op;
	} else {
		/* Untyped: `task` stays the BTF pointer task storage needs (before 6.2). */
		f = fd_to_file((struct task_struct *)bpf_get_current_task(), fd);
		if (!f)
			return 0;
		inode = BPF_CORE_READ(f, f_inode);
		mode = BPF_CORE_READ(inode, i_mode) & S_IFMT;
		rdev = BPF_CORE_READ(inode, i_rdev);
		if (mode != S_IFCHR && mode != S_IFBLK)
			fop = (__u64)BPF_CORE_READ(f, f_op);
	}
	/* Device nodes by (mode, rdev), anon inodes by f_op: never 0, never equal. */
	ck = fop ? fop : (__u64)mode << 32 | rdev;
	gen = *(volatile __u32 *)&devs_gen;
	if (e && e->dev_ck == ck && e->dev_gen == gen) {
		a = e->dev_known;
	} else {
		resolve_dev(&a, mode, rdev, fop, f, inode);
		if (e)
			dev_cache_put(e, ck, gen, &a);
	}
	if (!a.found)
		return 0;
	if (!e) {
		/* First traced call of the thread: make its entry. */
		e = entry_new(task, tid, btf);
		if (!e) {
			stat_inc(KX_STAT_INFLIGHT_FULL);
			return 0;
		}
		dev_cache_put(e, ck, gen, &a);
	}
	/* Count new calls only: a stale one (exit never seen) is overwritten. */
	if (!btf && !e->ts)
		__sync_fetch_and_add(&nr_inflight, 1);
	e->cmd = cmd;
	e->fd = fd;
	e->dev = a.dev;
	e->fkind = a.fkind;
	e->drv = a.drv;
	e->arg = arg;
	e->xfer_cmd = 0;
	e->in_len = 0;
	e->out_len = 0;
	e->follow_src = 0;
	e->offcpu_ns = 0;
	e->off_since = 0;
	/* Aggregates copy no arguments: skip the lookups unless XFER names are needed. */
	spec = aggregate && !agg_xfer ? NULL : arg_spec(e, a.drv, cmd);
	if (spec && arg) {
		__u32 len = spec->len;

		if (len > KX_ARG_MAX)
			len = KX_ARG_MAX;
		if (spec->flags & KX_ARGF_XFER) {
			/* NVIDIA XFER: {u32 cmd; u32 size; u64 ptr}, params live at ptr. */
			struct {
				__u32 cmd, size;
				__u64 ptr;
			} x;

			if (bpf_probe_read_user(&x, sizeof(x), (void *)arg) == 0) {
				e->xfer_cmd = x.cmd;
				e->arg = x.ptr;
				if (len > x.size)
					len = x.size;
			} else {
				stat_inc(KX_STAT_ARG_FAULT);
				len = 0;
			}
		}
		if ((spec->flags & KX_ARGF_IN) && len && !aggregate) {
			if (spec->flags & KX_ARGF_FOLLOW) /* the gap before a window reads 0 */
				__builtin_memset(e->in, 0, KX_ARG_MAX);
			if (bpf_probe_read_user(e->in, len & (KX_ARG_MAX * 2 - 1),
			                        (void *)e->arg) == 0)
				e->in_len = len;
			else
				stat_inc(KX_STAT_ARG_FAULT);
		}
		if (spec->flags & KX_ARGF_OUT)
			e->out_len = len;
		if ((spec->flags & KX_ARGF_FOLLOW) && e->in_len && len <= KX_FOLLOW_AT)
			follow_enter(e, &spec->follow);
	}
	/* Last: the call's time excludes this program's own work. */
	e->ts = bpf_ktime_get_ns();
	kx_ctr_enter(tid, e->ts);
	return 0;
}

static __always_inline void fill_ioctl(struct kx_ioctl_rec *r, const struct inflight *v, __u32 tgid,
                                       __u32 tid, __u64 now, long ret)
{
	r->hdr.type = KX_REC_IOCTL;
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = v->ts;
	r->dur = now - v->ts;
	r->pid = tgid;
	r->tid = tid;
	r->dev = v->dev;
	r->fkind = v->fkind;
	r->drv = v->drv;
	r->fd = v->fd;
	r->cmd = v->cmd;
	r->ret = ret;
	r->xfer_cmd = v->xfer_cmd;
	r->pad = 0;
	r->offcpu_ns = v->offcpu_ns;
	r->arg_in_len = 0;
	r->arg_out_len = 0;
}

/* A short record (no arguments) of the call v: 0, or -1 when the ring is full. */
static __always_inline int emit_short(const struct inflight *v, __u32 tgid, __u32 tid, __u64 now,
                                      long ret)
{
	struct kx_ioctl_rec *r = bpf_ringbuf_reserve(&events, KX_IOCTL_REC_BASE_SIZE, 0);

	if (!r)
		return -1;
	fill_ioctl(r, v, tgid, tid, now, ret);
	r->hdr.size = KX_IOCTL_REC_BASE_SIZE;
	bpf_ringbuf_submit(r, submit_flags());
	return 0;
}

static __always_inline bool agg_key_eq(const struct kx_agg_key *a, const struct kx_agg_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2];
}

/* The value of key k: the thread's kept slot, else the index (making the
 * key from a free slot). NULL when no slot is left: counted, not silent. */
static __always_inline struct kx_agg_val *agg_value(struct inflight *e, const struct kx_agg_key *k)
{
	__u32 gen = *(volatile __u32 *)&agg_gen, slot, *found;

	if (e->agg_valid && e->agg_gen == gen && agg_key_eq(&e->agg_key, k))
		return bpf_map_lookup_elem(&agg, &e->agg_slot);
	found = bpf_map_lookup_elem(&agg_index, k);
	if (found) {
		slot = *found;
	} else {
		if (bpf_map_pop_elem(&agg_free, &slot)) {
			stat_inc(KX_STAT_AGG_OVERFLOW);
			return NULL;
		}
		if (bpf_map_update_elem(&agg_index, k, &slot, BPF_NOEXIST)) {
			/* Another CPU made the key first (or the index is full). */
			bpf_map_push_elem(&agg_free, &slot, 0);
			found = bpf_map_lookup_elem(&agg_index, k);
			if (!found) {
				stat_inc(KX_STAT_AGG_OVERFLOW);
				return NULL;
			}
			slot = *found;
		}
	}
	e->agg_key = *k;
	e->agg_slot = slot;
	e->agg_gen = gen;
	e->agg_valid = 1;
	return bpf_map_lookup_elem(&agg, &slot);
}

/*
 * Aggregate mode: fold one finished ioctl into its key. Atomic adds because
 * the array is shared by all CPUs (a per-CPU map would cost value size times
 * CPUs per key); min/max are plain stores, racy only for one key updated on
 * two CPUs at once.
 */
static __always_inline void agg_add(struct inflight *v, __u32 tgid, __u64 dur, long ret)
{
	struct kx_agg_key k = {};
	struct kx_agg_val *a;
	__u32 slot;

	if (agg_by_pid)
		k.who = tgid;
	else if (agg_by_cgroup)
		k.who = bpf_get_current_cgroup_id();
	k.dev = v->dev;
	k.cmd = v->cmd;
	k.xfer_cmd = v->xfer_cmd;
	k.fkind = v->fkind;
	k.drv = v->drv;
	a = agg_value(v, &k);
	if (!a)
		return;
	slot = fine_slot(dur);
	if (slot < KX_FINE_SLOTS) /* always: for the verifier */
		__sync_fetch_and_add(&a->fine[slot], 1);
	__sync_fetch_and_add(&a->sum_ns, dur);
	if (ret < 0)
		__sync_fetch_and_add(&a->errors, 1);
	if (v->offcpu_ns)
		__sync_fetch_and_add(&a->offcpu_ns, v->offcpu_ns);
	if (dur > a->max_ns)
		a->max_ns = dur;
	if (dur < a->min_ns)
		a->min_ns = dur;
}

/* The follow rule at exit: the argument, then the window again (what the
 * driver wrote back); without the window, the argument alone. */
static __always_inline void out_follow(struct kx_ioctl_rec *r, const struct inflight *v,
                                       __u32 out_len)
{
	__u8 *out = r->arg + KX_ARG_MAX;

	__builtin_memset(out, 0, KX_ARG_MAX);
	if (out_len > KX_FOLLOW_AT)
		out_len = KX_FOLLOW_AT;
	if (bpf_probe_read_user(out, out_len, (void *)v->arg)) {
		stat_inc(KX_STAT_ARG_FAULT);
		return;
	}
	r->arg_out_len = out_len;
	if (bpf_probe_read_user(out + KX_FOLLOW_AT, KX_FOLLOW_LEN, (void *)v->follow_src) == 0)
		r->arg_out_len = KX_ARG_MAX;
	else
		stat_inc(KX_STAT_ARG_FAULT);
}

static __always_inline int on_exit(long ret, const bool btf)
{
	struct task_struct *task = btf ? bpf_get_current_task_btf() : NULL;
	__u64 id = btf ? (__u64)task->tgid << 32 | (__u32)task->pid : bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct kx_ioctl_rec *r;
	struct inflight *v;
	__u32 in_len, out_len;
	__u64 now;

	v = entry_get(task, tid, btf);
	if (!v || !v->ts)
		return 0;
	if (!kx_still_traced(tgid)) {
		call_done(v, btf);
		return 0;
	}
	/* After the lookup: untraced calls, the most, read no clock. */
	now = bpf_ktime_get_ns();
	if (aggregate) {
		/* No record and no thread naming: the point of the mode is its cost. */
		agg_add(v, tgid, now - v->ts, ret);
		if (agg_rec_drv && v->drv == agg_rec_drv && v->cmd == agg_rec_cmd) {
			stat_inc(KX_STAT_EMITTED);
			if (emit_short(v, tgid, tid, now, ret))
				stat_inc(KX_STAT_DROPPED);
		}
		call_done(v, btf);
		return 0;
	}
	kx_ctr_exit(tgid, tid);
	if (!v->named) {
		v->named = 1;
		name_thread(tgid, tid);
	}
	stat_inc(KX_STAT_EMITTED);
	in_len = v->in_len;
	out_len = ret >= 0 ? v->out_len : 0; /* output only means something on success */
	if (!in_len && !out_len) {
		/* Common case: no argument copy, the short record. */
		r = bpf_ringbuf_reserve(&events, KX_IOCTL_REC_BASE_SIZE, 0);
		if (!r)
			goto drop;
		fill_ioctl(r, v, tgid, tid, now, ret);
		r->hdr.size = KX_IOCTL_REC_BASE_SIZE;
	} else {
		r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (!r)
			goto drop;
		fill_ioctl(r, v, tgid, tid, now, ret);
		r->hdr.size = sizeof(*r);
		if (in_len > KX_ARG_MAX)
			in_len = KX_ARG_MAX;
		if (out_len > KX_ARG_MAX)
			out_len = KX_ARG_MAX;
		if (in_len) {
			__builtin_memcpy(r->arg, v->in, KX_ARG_MAX);
			r->arg_in_len = in_len;
		}
		if (out_len && v->follow_src)
			out_follow(r, v, out_len);
		else if (out_len) {
			if (bpf_probe_read_user(r->arg + KX_ARG_MAX, out_len, (void *)v->arg) == 0)
				r->arg_out_len = out_len;
			else
				stat_inc(KX_STAT_ARG_FAULT);
		}
	}
	call_done(v, btf);
	bpf_ringbuf_submit(r, submit_flags());
	return 0;
drop:
	stat_inc(KX_STAT_DROPPED);
	call_done(v, btf);
	return 0;
}

static __always_inline void on_fork(__u32 parent_tgid, __u32 child_pid, __u32 child_tid)
{
	__u8 one = 1;

	if (targ_all || !kx_tgid_traced(parent_tgid))
		return;
	if (bpf_map_update_elem(&pids, &child_pid, &one, BPF_NOEXIST) == -E2BIG)
		stat_inc(KX_STAT_PIDSET_FULL);
	(void)child_tid;
}

static __always_inline void on_exit_task(__u32 tgid, __u32 tid, bool group_dead, const bool btf)
{
	if (!btf) /* task storage goes with the task */
		inflight_del(tid);
	if (bpf_map_lookup_elem(&seen, &tid)) {
		bpf_map_delete_elem(&seen, &tid);
		emit_task(KX_TASK_EXIT, tgid, tid, 0, NULL);
	}
	if (!targ_all && (group_dead || tid != tgid))
		bpf_map_delete_elem(&pids, &tid);
}

static __always_inline void on_rename(__u32 tgid, __u32 tid, const char *newcomm)
{
	if (bpf_map_lookup_elem(&seen, &tid) && kx_still_traced(tgid))
		emit_task(KX_TASK_RENAME, tgid, tid, 0, newcomm);
}

/*
 * Off-CPU time inside a traced ioctl: prev blocks (stamp it), next comes back
 * (add the time away, wakeup latency included). One lookup each; the caller
 * returns before any read while no ioctl is in flight anywhere. A preempted
 * thread was still runnable, not waiting for its call, so preemption is not
 * counted.
 */
static __always_inline void on_switch(__u32 prev, __u32 next, bool prev_blocked)
{
	struct inflight *v;
	__u64 now = 0;

	kx_ctr_switch(prev, next);
	/* The clock only when a traced thread is involved: most switches are not. */
	if (prev && prev_blocked) {
		v = bpf_map_lookup_elem(&inflight, &prev);
		if (v && v->ts) {
			now = bpf_ktime_get_ns();
			v->off_since = now;
		}
	}
	if (next) {
		v = bpf_map_lookup_elem(&inflight, &next);
		if (v && v->off_since) {
			if (!now)
				now = bpf_ktime_get_ns();
			v->offcpu_ns += now - v->off_since;
			v->off_since = 0;
		}
	}
}

/*
 * Task storage: the same. A task that never made a traced call has no
 * storage at all: two loads and out, the case of almost every switch. prev
 * is looked up only when it blocks, next only while some traced call is
 * blocked (nr_blocked); the clock is read only for a traced call.
 */
static __always_inline void on_switch_btf(bool preempt, struct task_struct *prev,
                                          struct task_struct *next)
{
	struct inflight *v;
	__u64 now = 0;

	kx_ctr_switch(prev->pid, next->pid);
	if (!preempt && prev->bpf_storage && kx_task_blocked_btf(prev)) {
		v = bpf_task_storage_get(&task_call, prev, NULL, 0);
		if (v && v->ts && !v->off_since) {
			now = bpf_ktime_get_ns();
			v->off_since = now;
			__sync_fetch_and_add(&nr_blocked, 1);
		}
	}
	if (!*(volatile __u64 *)&nr_blocked || !next->bpf_storage)
		return;
	v = bpf_task_storage_get(&task_call, next, NULL, 0);
	if (v && v->off_since) {
		if (!now)
			now = bpf_ktime_get_ns();
		v->offcpu_ns += now - v->off_since;
		v->off_since = 0;
		__sync_fetch_and_add(&nr_blocked, -1);
	}
}

/*
 * Under the uid rule, a traced process whose exec gives it what its user
 * may not read (shared.bpf.h kx_exec_readable) leaves the pid set for good,
 * before any record of its new image, and is counted.
 */
static __always_inline void on_exec(__u32 tgid, __u32 tid, struct linux_binprm *bprm)
{
	if (targ_uid_only && bpf_map_lookup_elem(&pids, &tgid) &&
	    !kx_exec_readable((struct task_struct *)bpf_get_current_task(), bprm)) {
		if (bpf_map_delete_elem(&pids, &tgid) == 0)
			stat_inc(KX_STAT_PROTECTED_EXEC);
		return;
	}
	if (pid_traced(tgid) && bpf_map_lookup_elem(&seen, &tid))
		emit_task(KX_TASK_EXEC, tgid, tid, 0, NULL);
}

/* ---- fentry flavour: the ioctl syscall's entry function itself ---- */

/* The target (__x64_sys_ioctl on x86-64) is set by user space; its one
 * argument is the syscall's registers. */
SEC("fentry")
int BPF_PROG(fen_sys_enter, struct pt_regs *regs)
{
	return on_enter((int)PT_REGS_PARM1_SYSCALL(regs), (__u32)PT_REGS_PARM2_SYSCALL(regs),
	                PT_REGS_PARM3_SYSCALL(regs), true);
}

SEC("fexit")
int BPF_PROG(fen_sys_exit, struct pt_regs *regs, long ret)
{
	return on_exit(ret, true);
}

/* ---- tp_btf flavour (its task hooks also serve fentry and tp) ---- */

SEC("tp_btf/sys_enter")
int BPF_PROG(btf_sys_enter, struct pt_regs *regs, long id)
{
	if (id != KX_IOCTL_NR_X86_64)
		return 0;
	return on_enter((int)regs->di, (__u32)regs->si, regs->dx, true);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(btf_sys_exit, struct pt_regs *regs, long ret)
{
	if (regs->orig_ax != KX_IOCTL_NR_X86_64)
		return 0;
	return on_exit(ret, true);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent->tgid, child->tgid, child->pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_exit, struct task_struct *p, bool group_dead)
{
	on_exit_task(p->tgid, p->pid, group_dead, true);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(btf_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	on_exec(p->tgid, p->pid, bprm);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(btf_rename, struct task_struct *task, const char *comm)
{
	on_rename(task->tgid, task->pid, comm);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch_btf(preempt, prev, next);
	return 0;
}

/* ---- raw_tp flavour: same arguments, read through probe reads ---- */

SEC("raw_tp/sys_enter")
int BPF_PROG(raw_sys_enter, struct pt_regs *regs, long id)
{
	if (id != KX_IOCTL_NR_X86_64)
		return 0;
	return on_enter((int)BPF_CORE_READ(regs, di), (__u32)BPF_CORE_READ(regs, si),
	                BPF_CORE_READ(regs, dx), false);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret)
{
	/* No traced call in flight anywhere: out before the register read. */
	if (!*(volatile __u64 *)&nr_inflight)
		return 0;
	if (BPF_CORE_READ(regs, orig_ax) != KX_IOCTL_NR_X86_64)
		return 0;
	return on_exit(ret, false);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child)
{
	on_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, tgid), BPF_CORE_READ(child, pid));
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_exit, struct task_struct *p, bool group_dead)
{
	on_exit_task(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid), group_dead, false);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(raw_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	on_exec(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid), bprm);
	return 0;
}

SEC("raw_tp/task_rename")
int BPF_PROG(raw_rename, struct task_struct *task, const char *comm)
{
	on_rename(BPF_CORE_READ(task, tgid), BPF_CORE_READ(task, pid), comm);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* No traced call in flight anywhere: out before the probe reads. */
	if (!*(volatile __u64 *)&nr_inflight)
		return 0;
	on_switch(BPF_CORE_READ(prev, pid), BPF_CORE_READ(next, pid),
	          !preempt && kx_task_blocked(prev));
	return 0;
}

/* ---- classic tracepoint flavour: only ioctls run it (needs tracefs) ---- */

/* The record holds the arguments: plain loads from the context. */
SEC("tracepoint/syscalls/sys_enter_ioctl")
int tp_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	return on_enter((int)ctx->args[0], (__u32)ctx->args[1], ctx->args[2], true);
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int tp_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	return on_exit(ctx->ret, true);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
