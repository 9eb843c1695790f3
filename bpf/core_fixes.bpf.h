/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel differences the BPF programs read across: struct fields that were
 * renamed or moved, tracepoint records whose shape changed, tracepoints that
 * were renamed, and helpers that only newer kernels have. Each entry names
 * the kernel commit (and release) that made it necessary; the programs use
 * the accessors here and never test a kernel version themselves.
 *
 * Types named `x___kx` are CO-RE flavours of the kernel's `x`: libbpf
 * matches them to the running kernel's BTF by the name before the `___`, and
 * field reads are relocated to wherever the field is (bpf_core_field_exists
 * tells whether it is there at all). Tracepoint records that never changed
 * shape are declared next to their programs, not here.
 */
#ifndef KXPROF_CORE_FIXES_BPF_H
#define KXPROF_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

/* ---- classic tracepoint records: fields of any width, possibly absent ---- */

/*
 * Record fields read by name at the width the running kernel gives them,
 * 0 when the field is not in this kernel's record: integer fields widened
 * (amdgpu's context and seqno, see below), and the dma_fence record keeps
 * context and seqno as 32-bit fields although struct dma_fence's seqno is
 * 64 bits since commit b312d8ca3a7c ("dma-buf: make fence sequence numbers
 * 64 bit v2", 5.0).
 */
#define TPV(ctx, f)                                                                                \
	(bpf_core_field_exists((ctx)->f) ? (__u64)BPF_CORE_READ_BITFIELD_PROBED(ctx, f) : 0)

/* Pointer fields, kept as opaque keys and never dereferenced; 0 when absent. */
#define TPP(ctx, f)                                                                                \
	({                                                                                         \
		__u64 __v = 0;                                                                     \
		if (bpf_core_field_exists((ctx)->f))                                               \
			bpf_probe_read_kernel(&__v, sizeof(__v),                                   \
			                      (void *)(ctx) + bpf_core_field_offset((ctx)->f));    \
		__v;                                                                               \
	})

/* A __data_loc string of a record (offset in the low 16 bits), at most 15 bytes. */
static __always_inline void tp_str(char *dst, const void *ctx, __u64 loc)
{
	bpf_probe_read_kernel_str(dst, 16, ctx + (loc & 0xffff));
}

/* ---- helpers newer kernels have ---- */

/*
 * bpf_rdonly_cast: commit a35b9af4ec2c ("bpf: Add a kfunc for generic type
 * cast", 6.2). Weak: NULL on older kernels, where callers read through
 * probe reads instead.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* ---- task_struct::state -> __state ---- */

/*
 * commit 2f064a59a11f ("sched: Change task_struct::state", 5.14) renamed
 * the field to __state (and made it unsigned int).
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* The task is not runnable (TASK_RUNNING is 0). */
static __always_inline bool kx_task_blocked(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state) != 0;
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state) != 0;
}

/* The same for a BTF task pointer (tp_btf, fentry, bpf_get_current_task_btf):
 * a plain load instead of a probe-read helper call. */
static __always_inline bool kx_task_blocked_btf(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state != 0;
	return ((struct task_struct___pre514 *)t)->state != 0;
}

/* ---- mm_struct::flags: unsigned long -> mm_flags_t ---- */

/*
 * mm->flags became an mm_flags_t bitmap (a struct of unsigned longs) in
 * 6.18 (this project's 6.18 kernel has it); before, it was one unsigned
 * long. Either way its first word holds the dumpability in its low bits
 * (MMF_DUMPABLE_MASK, include/linux/sched/coredump.h).
 */
struct mm_struct___pre618 {
	unsigned long flags;
} __attribute__((preserve_access_index));

#define KX_MMF_DUMPABLE_MASK 3 /* SUID_DUMP_DISABLE 0, _USER 1, _ROOT 2 */

/* The dumpability of mm (SUID_DUMP_*), or -1 when this kernel's layout is unknown. */
static __always_inline int kx_mm_dumpable(struct mm_struct *mm)
{
	unsigned long f = 0;

	if (bpf_core_field_exists(mm->flags))
		bpf_core_read(&f, sizeof(f), &mm->flags);
	else if (bpf_core_field_exists(((struct mm_struct___pre618 *)mm)->flags))
		f = BPF_CORE_READ((struct mm_struct___pre618 *)mm, flags);
	else
		return -1;
	return (int)(f & KX_MMF_DUMPABLE_MASK);
}

/* ---- struct request: where the disk is ---- */

/*
 * commit d152c682f03c ("block: add an explicit ->disk backpointer to the
 * request_queue", 5.15) added q->disk; commit f3fa33acca9f ("block: remove
 * the ->rq_disk field in struct request", 5.17) removed rq->rq_disk.
 */
struct request___pre517 {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *kx_rq_disk(struct request *rq)
{
	struct request_queue *q = BPF_CORE_READ(rq, q);

	if (bpf_core_field_exists(q->disk))
		return BPF_CORE_READ(q, disk);
	return BPF_CORE_READ((struct request___pre517 *)rq, rq_disk);
}

/* ---- block: the block_rq_complete record ---- */

/* block_rq_insert / block_rq_issue (class block_rq): unchanged. */
struct trace_event_raw_block_rq___kx {
	__u32 dev;
	__u64 sector;
	__u32 bytes;
	char rwbs[8];
} __attribute__((preserve_access_index));

/* block_rq_requeue's record: its own event, the disk and sector first. */
struct trace_event_raw_block_rq_requeue___kx {
	__u32 dev;
	__u64 sector;
} __attribute__((preserve_access_index));

/*
 * commit d5869fdc189f ("block: introduce block_rq_error tracepoint", 5.18)
 * made block_rq_complete an event of the new class block_rq_completion: the
 * record type was trace_event_raw_block_rq_complete before, with the same
 * fields.
 */
#define KX_BLK_DONE_LAYOUT(type)                                                                   \
	struct type {                                                                              \
		__u32 dev;                                                                         \
		__u64 sector;                                                                      \
		__u32 nr_sector;                                                                   \
		int error;                                                                         \
		char rwbs[8];                                                                      \
	} __attribute__((preserve_access_index))

KX_BLK_DONE_LAYOUT(trace_event_raw_block_rq_completion___kx);
KX_BLK_DONE_LAYOUT(trace_event_raw_block_rq_complete___kx);

/* What a block_rq_complete record says, whichever its type. */
struct kx_blk_done {
	__u32 dev;
	int error;
	__u64 sector;
	__u64 nr_sector;
	char rwbs[4];
};

/* The same fields from either record type (a macro: the types differ). */
#define KX_BLK_DONE_FILL(c, d)                                                                     \
	do {                                                                                       \
		(d)->dev = TPV(c, dev);                                                            \
		(d)->sector = TPV(c, sector);                                                      \
		(d)->nr_sector = TPV(c, nr_sector);                                                \
		(d)->error = (int)TPV(c, error);                                                   \
		bpf_probe_read_kernel((d)->rwbs, sizeof((d)->rwbs),                                \
		                      (void *)(c) + bpf_core_field_offset((c)->rwbs));             \
	} while (0)

static __always_inline void kx_blk_done_read(void *ctx, struct kx_blk_done *d)
{
	if (bpf_core_type_exists(struct trace_event_raw_block_rq_completion___kx))
		KX_BLK_DONE_FILL((struct trace_event_raw_block_rq_completion___kx *)ctx, d);
	else
		KX_BLK_DONE_FILL((struct trace_event_raw_block_rq_complete___kx *)ctx, d);
}

/* ---- dma_fence: the classic record ---- */

/* context and seqno: 32-bit record fields (see TPV), read at their width. */
struct trace_event_raw_dma_fence___kx {
	__u64 context;
	__u64 seqno;
} __attribute__((preserve_access_index));

/* ---- gpu_scheduler: renamed events, two record shapes ---- */

/*
 * The gpu_scheduler rework merged through drm-misc in 2025 renamed the
 * events and reshaped their records:
 *   commit f6743e6a00fd ("drm/sched: Cleanup event names"):
 *     drm_sched_job -> drm_sched_job_queue, drm_run_job -> drm_sched_job_run,
 *     drm_sched_process_job -> drm_sched_job_done;
 *   commit 8a98df70062b ("drm/sched: Cleanup gpu_scheduler trace events"):
 *     jobs are named by u64 fence_context and fence_seqno instead of the
 *     finished fence's pointer;
 *   commit fbf11ce52626 ("drm/sched: Add the drm_client_id to the
 *     drm_sched_run/exec_job events"): client_id;
 *   commit 4f7fa5fa414c ("drm: Get rid of drm_sched_job.id"): no more id;
 *   commit 76d97c870f29 ("drm/sched: Trace dependencies for GPU jobs"):
 *     drm_sched_job_add_dep and drm_sched_job_unschedulable replace
 *     drm_sched_job_wait_dep.
 * The programs for both name sets sit in jobs.bpf.c; user space enables the
 * set this kernel has (user/capture/jobsrc.c). The queue/run record type is
 * trace_event_raw_drm_sched_job under both names; this flavour holds the
 * fields of both shapes, and kx_sched_job_key picks by what exists.
 */
struct trace_event_raw_drm_sched_job___kx {
	void *fence;           /* old shape: the job's finished fence */
	__u32 __data_loc_name; /* both: the scheduler (ring) name */
	__u64 id;              /* old shape: the job id */
	__u64 fence_context;   /* new shape */
	__u64 fence_seqno;     /* new shape */
	__u64 client_id;       /* new shape: DRM client id (fdinfo drm-client-id) */
} __attribute__((preserve_access_index));

/* The new record shape (fence_context, fence_seqno), else the old (fence pointer). */
static __always_inline bool kx_sched_job_new_shape(struct trace_event_raw_drm_sched_job___kx *ctx)
{
	return bpf_core_field_exists(ctx->fence_context);
}

/*
 * A scheduler job's key and extra: new shape (fence_context, fence_seqno),
 * aux = client_id; old shape (finished fence pointer, 0), aux = job id.
 */
static __always_inline void kx_sched_job_key(struct trace_event_raw_drm_sched_job___kx *ctx,
                                             __u64 *c, __u64 *s, __u64 *aux)
{
	if (kx_sched_job_new_shape(ctx)) {
		*c = TPV(ctx, fence_context);
		*s = TPV(ctx, fence_seqno);
		*aux = TPV(ctx, client_id);
	} else {
		*c = TPP(ctx, fence);
		*s = 0;
		*aux = TPV(ctx, id);
	}
}

/* New names only: drm_sched_job_done, add_dep, unschedulable. */
struct trace_event_raw_drm_sched_job_done___kx {
	__u64 fence_context;
	__u64 fence_seqno;
} __attribute__((preserve_access_index));

/* add_dep / unschedulable: the job (fence_context, fence_seqno) waits on (ctx, seqno). */
struct trace_event_raw_drm_sched_job_add_dep___kx {
	__u64 fence_context;
	__u64 fence_seqno;
	__u64 ctx;
	__u64 seqno;
} __attribute__((preserve_access_index));

struct trace_event_raw_drm_sched_job_unschedulable___kx {
	__u64 fence_context;
	__u64 fence_seqno;
	__u64 ctx;
	__u64 seqno;
} __attribute__((preserve_access_index));

/* Old names only: drm_sched_process_job (the finished fence), drm_sched_job_wait_dep. */
struct trace_event_raw_drm_sched_process_job___kx {
	void *fence;
} __attribute__((preserve_access_index));

/* The job is known by id only; ctx/seqno are the dependency fence's. */
struct trace_event_raw_drm_sched_job_wait_dep___kx {
	__u32 __data_loc_name;
	__u64 id;
	__u64 ctx;
	__u64 seqno;
} __attribute__((preserve_access_index));

/* ---- amdgpu: cs_ioctl and sched_run_job records ---- */

/*
 * commit 6c8e8a1c4371 ("drm/amdgpu: update trace format to match
 * gpu_scheduler_trace"), part of the same rework, reshaped these records to
 * match the scheduler's events; field widths differ between kernels (seqno
 * is u64 in newer ones). Read through TPV; the ring name when present.
 */
struct trace_event_raw_amdgpu_cs_ioctl___kx {
	__u64 context;
	__u64 seqno;
	__u32 __data_loc_ring;
} __attribute__((preserve_access_index));

struct trace_event_raw_amdgpu_sched_run_job___kx {
	__u64 context;
	__u64 seqno;
	__u32 __data_loc_ring;
} __attribute__((preserve_access_index));

/* ---- amdxdna: xdna_job ---- */

/*
 * The earliest xdna_job record (name, str, seq; the driver's first trace
 * header, commit not identified) has no fence to key a job on; later ones
 * add fence_context and fence_seqno, the job's scheduler fence.
 * kx_xdna_has_fence says which this kernel has.
 */
struct trace_event_raw_xdna_job___kx {
	__u32 __data_loc_name;
	__u32 __data_loc_str;
	__u64 fence_context;
	__u64 fence_seqno;
	__u64 seq;
} __attribute__((preserve_access_index));

static __always_inline bool kx_xdna_has_fence(struct trace_event_raw_xdna_job___kx *ctx)
{
	return bpf_core_field_exists(ctx->fence_context);
}

#endif /* KXPROF_CORE_FIXES_BPF_H */
