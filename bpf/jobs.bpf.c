// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Job lifecycle capture: device-side events normalised to the phases of
 * struct kx_job_rec (queue, run, done, wait begin/end, dependency) and
 * emitted into the ioctl object's ring buffer (user space hands this object
 * the same `events`, `stats`, `pids` and `devs` maps, so ordering and loss
 * accounting stay in one place). Field meanings per source are the contract
 * in user/model/event.h (struct kx_job).
 *
 * Sources: block requests and KVM vCPU exits (tp_btf, raw_tp and classic
 * flavours, user space loads one), dma_fence (same three), and the GPU and
 * NPU driver tracepoints (classic only: their record layouts are declared
 * as CO-RE flavours of the kernel's trace_event_raw_* types, so fields
 * that moved, changed size or vanished between kernels are read through
 * relocations and existence checks; the records and structs that differ
 * between kernels, with their accessors, are in core_fixes.bpf.h). User
 * space enables only the programs whose tracepoint exists in this kernel.
 *
 * Filtering, before any record: block by disk in `jobdevs`; KVM, and the
 * phases that fire in the submitting thread, by the traced pid set; later
 * phases (run in a worker, done in an IRQ) by the job key seen at queue time
 * (`jobkeys`). Tracing every process (targ_all) records everything.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "kxprof.h"
#include "shared.bpf.h"

#define DRM_MAJOR 226

/* Traced block disks: disk dev_t (or KX_DEV_ANY_MINOR(major)) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u8);
} jobdevs SEC(".maps");

/* Jobs queued by a traced thread, so phases seen elsewhere can be kept. */
struct job_key {
	__u32 src;
	__u32 pad;
	__u64 ctx;
	__u64 seqno;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct job_key);
	__type(value, __u8);
} jobkeys SEC(".maps");

/* Block requests open (inserted or issued, completion not seen yet) per
 * (disk, sector) -> the last phase seen (KX_JOB_QUEUE or KX_JOB_RUN): a
 * completion that never reached the program is counted when the sector's
 * next request comes (KX_STAT_JOB_DONE_LOST). LRU: an entry evicted only
 * leaves a loss uncounted. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct kx_blk_key);
	__type(value, __u8);
} blkopen SEC(".maps");

/* xe: hardware fence -> (guc_id, seqno) of its job, for the DONE phase. */
struct xe_job_id {
	__u64 guc_id;
	__u64 seqno;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct xe_job_id);
} xefences SEC(".maps");

/* ---- common ---- */

static __always_inline bool cur_traced(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return kx_tgid_traced(tgid);
}

static __always_inline void key_add(__u32 src, __u64 ctx, __u64 seqno)
{
	struct job_key k = {.src = src, .ctx = ctx, .seqno = seqno};
	__u8 one = 1;

	if (!targ_all)
		bpf_map_update_elem(&jobkeys, &k, &one, BPF_ANY);
}

/* A later phase of a job queued by a traced thread; done removes the key. */
static __always_inline bool key_seen(__u32 src, __u64 ctx, __u64 seqno, bool done)
{
	struct job_key k = {.src = src, .ctx = ctx, .seqno = seqno};

	if (targ_all)
		return true;
	if (!bpf_map_lookup_elem(&jobkeys, &k))
		return false;
	if (done)
		bpf_map_delete_elem(&jobkeys, &k);
	return true;
}

/* Reserves a record with every field set; the caller fills in the rest. */
static __always_inline struct kx_job_rec *job_new(__u16 src, __u8 phase)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct kx_job_rec *r;

	stat_inc(KX_STAT_JOB_EMITTED);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_inc(KX_STAT_JOB_DROPPED);
		return NULL;
	}
	r->hdr.type = KX_REC_JOB;
	r->hdr.size = sizeof(*r);
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = bpf_ktime_get_ns();
	r->ctx = 0;
	r->seqno = 0;
	r->aux = 0;
	r->aux2 = 0;
	r->dev = 0;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->src = src;
	r->phase = phase;
	r->flags = 0;
	__builtin_memset(r->ring, 0, sizeof(r->ring));
	return r;
}

static __always_inline void job_put(struct kx_job_rec *r)
{
	bpf_ringbuf_submit(r, submit_flags());
}

/* A job with no further fields; phases that carry more build their own. */
static __always_inline void emit(__u16 src, __u8 phase, __u64 ctx, __u64 seqno, __u64 aux,
                                 __u64 aux2)
{
	struct kx_job_rec *r = job_new(src, phase);

	if (!r)
		return;
	r->ctx = ctx;
	r->seqno = seqno;
	r->aux = aux;
	r->aux2 = aux2;
	job_put(r);
}

/* ---- block: insert -> QUEUE, issue -> RUN, complete -> DONE ---- */

static __always_inline bool disk_traced(__u32 dev)
{
	__u32 any = KX_DEV_ANY_MINOR(KX_MAJOR(dev));

	return dev && (bpf_map_lookup_elem(&jobdevs, &dev) || bpf_map_lookup_elem(&jobdevs, &any));
}

static __always_inline __u64 blk_op(__u32 cmd_flags)
{
	switch (cmd_flags & 0xff) { /* REQ_OP_MASK */
	case 0:                     /* REQ_OP_READ */
		return 1;
	case 1: /* REQ_OP_WRITE */
		return 2;
	default:
		return 3;
	}
}

/* Phase of a traced disk's request at sector, before its record: a QUEUE
 * while the sector's previous request is open, or a RUN while it was
 * already issued, means that request's completion was never seen (the
 * pairing then shows its duplicates); DONE closes the sector, and so does a
 * requeue (BLK_REQUEUE: the request is inserted or issued again,
 * not lost). Counted whether or not the record then fits the ring buffer. */
#define BLK_REQUEUE 0xff
static __always_inline void blk_track(__u32 dev, __u64 sector, __u8 phase)
{
	struct kx_blk_key k = {.dev = dev, .sector = sector};
	__u8 *open;

	if (phase == KX_JOB_DONE || phase == BLK_REQUEUE) {
		bpf_map_delete_elem(&blkopen, &k);
		return;
	}
	open = bpf_map_lookup_elem(&blkopen, &k);
	if (open && (phase == KX_JOB_QUEUE || *open == KX_JOB_RUN))
		stat_inc(KX_STAT_JOB_DONE_LOST);
	if (open)
		*open = phase;
	else
		bpf_map_update_elem(&blkopen, &k, &phase, BPF_ANY);
}

static __always_inline int on_rq(struct request *rq, __u8 phase, __s64 nr_bytes, int error)
{
	struct gendisk *disk = kx_rq_disk(rq);
	struct kx_job_rec *r;
	__u32 dev;

	if (!disk)
		return 0;
	dev = KX_MKDEV((__u32)BPF_CORE_READ(disk, major), (__u32)BPF_CORE_READ(disk, first_minor));
	if (!disk_traced(dev))
		return 0;
	blk_track(dev, BPF_CORE_READ(rq, __sector), phase);
	r = job_new(KX_JOB_SRC_BLOCK, phase);
	if (!r)
		return 0;
	r->dev = dev;
	r->seqno = BPF_CORE_READ(rq, __sector);
	r->aux = nr_bytes >= 0 ? (__u64)nr_bytes : BPF_CORE_READ(rq, __data_len);
	r->aux2 = blk_op(BPF_CORE_READ(rq, cmd_flags));
	if (phase == KX_JOB_DONE) {
		/* Completion runs in IRQ/softirq context: current is unrelated. */
		r->pid = 0;
		r->tid = 0;
		r->flags = error ? KX_JOB_F_ERROR : 0;
	}
	bpf_core_read_str(r->ring, sizeof(r->ring), &disk->disk_name);
	job_put(r);
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(btf_blk_insert, struct request *rq)
{
	return on_rq(rq, KX_JOB_QUEUE, -1, 0);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_blk_issue, struct request *rq)
{
	return on_rq(rq, KX_JOB_RUN, -1, 0);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_blk_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return on_rq(rq, KX_JOB_DONE, nr_bytes, error);
}

/* A requeue: the request comes again (no record; the tracking only). */
static __always_inline int on_requeue(struct request *rq)
{
	struct gendisk *disk = kx_rq_disk(rq);
	__u32 dev;

	if (!disk)
		return 0;
	dev = KX_MKDEV((__u32)BPF_CORE_READ(disk, major), (__u32)BPF_CORE_READ(disk, first_minor));
	if (disk_traced(dev))
		blk_track(dev, BPF_CORE_READ(rq, __sector), BLK_REQUEUE);
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(btf_blk_requeue, struct request *rq)
{
	return on_requeue(rq);
}

SEC("raw_tp/block_rq_requeue")
int BPF_PROG(raw_blk_requeue, struct request *rq)
{
	return on_requeue(rq);
}

SEC("raw_tp/block_rq_insert")
int BPF_PROG(raw_blk_insert, struct request *rq)
{
	return on_rq(rq, KX_JOB_QUEUE, -1, 0);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_blk_issue, struct request *rq)
{
	return on_rq(rq, KX_JOB_RUN, -1, 0);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_blk_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return on_rq(rq, KX_JOB_DONE, nr_bytes, error);
}

/* Classic records: dev is already the disk's, op from the rwbs letters:
 * "R", "W", "FW" (preflush + write), "D", "F", "N" ... */
static __always_inline __u64 rwbs_op(const char *rwbs)
{
	return rwbs[0] == 'R' ? 1 : (rwbs[0] == 'W' || (rwbs[0] == 'F' && rwbs[1] == 'W')) ? 2 : 3;
}

static __always_inline int on_tp_rq(struct trace_event_raw_block_rq___kx *ctx, __u8 phase)
{
	struct kx_job_rec *r;
	char rwbs[4] = {};
	__u32 dev = TPV(ctx, dev);

	if (!disk_traced(dev))
		return 0;
	blk_track(dev, TPV(ctx, sector), phase);
	r = job_new(KX_JOB_SRC_BLOCK, phase);
	if (!r)
		return 0;
	r->dev = dev;
	r->seqno = TPV(ctx, sector);
	r->aux = TPV(ctx, bytes);
	bpf_probe_read_kernel(rwbs, sizeof(rwbs), (void *)ctx + bpf_core_field_offset(ctx->rwbs));
	r->aux2 = rwbs_op(rwbs);
	job_put(r);
	return 0;
}

SEC("tracepoint/block/block_rq_insert")
int tp_blk_insert(struct trace_event_raw_block_rq___kx *ctx)
{
	return on_tp_rq(ctx, KX_JOB_QUEUE);
}

SEC("tracepoint/block/block_rq_issue")
int tp_blk_issue(struct trace_event_raw_block_rq___kx *ctx)
{
	return on_tp_rq(ctx, KX_JOB_RUN);
}

/* block_rq_complete's record: no bytes, an error instead (core_fixes.bpf.h). */
SEC("tracepoint/block/block_rq_complete")
int tp_blk_complete(void *ctx)
{
	struct kx_blk_done d = {};
	struct kx_job_rec *r;

	kx_blk_done_read(ctx, &d);
	if (!disk_traced(d.dev))
		return 0;
	blk_track(d.dev, d.sector, KX_JOB_DONE);
	r = job_new(KX_JOB_SRC_BLOCK, KX_JOB_DONE);
	if (!r)
		return 0;
	r->dev = d.dev;
	r->seqno = d.sector;
	r->aux = d.nr_sector * 512;
	r->aux2 = rwbs_op(d.rwbs);
	r->pid = 0;
	r->tid = 0;
	r->flags = d.error ? KX_JOB_F_ERROR : 0;
	job_put(r);
	return 0;
}

SEC("tracepoint/block/block_rq_requeue")
int tp_blk_requeue(struct trace_event_raw_block_rq_requeue___kx *ctx)
{
	__u32 dev = TPV(ctx, dev);

	if (disk_traced(dev))
		blk_track(dev, TPV(ctx, sector), BLK_REQUEUE);
	return 0;
}

/* ---- KVM: kvm_userspace_exit -> DONE of the KVM_RUN, kvm_pio -> RUN ---- */

static __always_inline int on_kvm(__u8 phase, __u64 aux, __u64 aux2)
{
	if (!cur_traced())
		return 0;
	/* ctx = the vCPU thread: one KVM_RUN at a time per thread. */
	emit(KX_JOB_SRC_KVM, phase, (__u32)bpf_get_current_pid_tgid(), 0, aux, aux2);
	return 0;
}

SEC("tp_btf/kvm_userspace_exit")
int BPF_PROG(btf_kvm_exit, __u32 reason, int err)
{
	return on_kvm(KX_JOB_DONE, reason, (__u64)(__s64)err);
}

SEC("tp_btf/kvm_pio")
int BPF_PROG(btf_kvm_pio, unsigned int rw, unsigned int port)
{
	return on_kvm(KX_JOB_RUN, port, rw);
}

SEC("raw_tp/kvm_userspace_exit")
int BPF_PROG(raw_kvm_exit, __u32 reason, int err)
{
	return on_kvm(KX_JOB_DONE, reason, (__u64)(__s64)err);
}

SEC("raw_tp/kvm_pio")
int BPF_PROG(raw_kvm_pio, unsigned int rw, unsigned int port)
{
	return on_kvm(KX_JOB_RUN, port, rw);
}

struct trace_event_raw_kvm_userspace_exit___kx {
	__u32 reason;
	int errno;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_pio___kx {
	unsigned int rw;
	unsigned int port;
} __attribute__((preserve_access_index));

SEC("tracepoint/kvm/kvm_userspace_exit")
int tp_kvm_exit(struct trace_event_raw_kvm_userspace_exit___kx *ctx)
{
	return on_kvm(KX_JOB_DONE, TPV(ctx, reason), (__u64)(__s64)(int)TPV(ctx, errno));
}

SEC("tracepoint/kvm/kvm_pio")
int tp_kvm_pio(struct trace_event_raw_kvm_pio___kx *ctx)
{
	return on_kvm(KX_JOB_RUN, TPV(ctx, port), TPV(ctx, rw));
}

/* ---- dma_fence: emit -> QUEUE, signaled -> DONE, wait_start/end ---- */

static __always_inline int on_fence(__u8 phase, __u64 ctx, __u64 seqno)
{
	switch (phase) {
	case KX_JOB_QUEUE:
		if (!cur_traced())
			return 0;
		key_add(KX_JOB_SRC_DMA_FENCE, ctx, seqno);
		break;
	case KX_JOB_DONE:
		/* Signalled from IRQs and workers: keep fences a traced thread emitted. */
		if (!key_seen(KX_JOB_SRC_DMA_FENCE, ctx, seqno, true))
			return 0;
		break;
	default:
		if (!cur_traced())
			return 0;
	}
	emit(KX_JOB_SRC_DMA_FENCE, phase, ctx, seqno, 0, 0);
	return 0;
}

static __always_inline int on_fence_ptr(__u8 phase, struct dma_fence *f)
{
	return on_fence(phase, BPF_CORE_READ(f, context), BPF_CORE_READ(f, seqno));
}

SEC("tp_btf/dma_fence_emit")
int BPF_PROG(btf_fence_emit, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_QUEUE, f);
}

SEC("tp_btf/dma_fence_signaled")
int BPF_PROG(btf_fence_signaled, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_DONE, f);
}

SEC("tp_btf/dma_fence_wait_start")
int BPF_PROG(btf_fence_wait_start, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_WAIT_BEGIN, f);
}

SEC("tp_btf/dma_fence_wait_end")
int BPF_PROG(btf_fence_wait_end, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_WAIT_END, f);
}

SEC("raw_tp/dma_fence_emit")
int BPF_PROG(raw_fence_emit, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_QUEUE, f);
}

SEC("raw_tp/dma_fence_signaled")
int BPF_PROG(raw_fence_signaled, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_DONE, f);
}

SEC("raw_tp/dma_fence_wait_start")
int BPF_PROG(raw_fence_wait_start, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_WAIT_BEGIN, f);
}

SEC("raw_tp/dma_fence_wait_end")
int BPF_PROG(raw_fence_wait_end, struct dma_fence *f)
{
	return on_fence_ptr(KX_JOB_WAIT_END, f);
}

/* The classic record keeps context and seqno at 32 bits (core_fixes.bpf.h). */
SEC("tracepoint/dma_fence/dma_fence_emit")
int tp_fence_emit(struct trace_event_raw_dma_fence___kx *ctx)
{
	return on_fence(KX_JOB_QUEUE, TPV(ctx, context), TPV(ctx, seqno));
}

SEC("tracepoint/dma_fence/dma_fence_signaled")
int tp_fence_signaled(struct trace_event_raw_dma_fence___kx *ctx)
{
	return on_fence(KX_JOB_DONE, TPV(ctx, context), TPV(ctx, seqno));
}

SEC("tracepoint/dma_fence/dma_fence_wait_start")
int tp_fence_wait_start(struct trace_event_raw_dma_fence___kx *ctx)
{
	return on_fence(KX_JOB_WAIT_BEGIN, TPV(ctx, context), TPV(ctx, seqno));
}

SEC("tracepoint/dma_fence/dma_fence_wait_end")
int tp_fence_wait_end(struct trace_event_raw_dma_fence___kx *ctx)
{
	return on_fence(KX_JOB_WAIT_END, TPV(ctx, context), TPV(ctx, seqno));
}

/* ---- gpu_scheduler (classic only) ---- */

/*
 * Two name sets and two record shapes (core_fixes.bpf.h). Jobs are keyed by
 * (fence_context, fence_seqno), or by the finished-fence pointer in the old
 * shape.
 */
static __always_inline int on_sched_job(struct trace_event_raw_drm_sched_job___kx *ctx, __u8 phase)
{
	struct kx_job_rec *r;
	__u64 c, s, aux;

	kx_sched_job_key(ctx, &c, &s, &aux);
	if (phase == KX_JOB_QUEUE) {
		/* Queue fires in the submitting task. */
		if (!cur_traced())
			return 0;
		key_add(KX_JOB_SRC_GPU_SCHED, c, s);
		if (!kx_sched_job_new_shape(ctx))
			key_add(KX_JOB_SRC_GPU_SCHED | 0x100, aux,
			        0); /* old wait_dep knows only the id */
	} else if (!key_seen(KX_JOB_SRC_GPU_SCHED, c, s, false)) {
		return 0;
	}
	r = job_new(KX_JOB_SRC_GPU_SCHED, phase);
	if (!r)
		return 0;
	r->ctx = c;
	r->seqno = s;
	r->aux = aux;
	if (bpf_core_field_exists(ctx->__data_loc_name))
		tp_str(r->ring, ctx, TPV(ctx, __data_loc_name));
	job_put(r);
	return 0;
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_queue")
int tp_sched_queue(struct trace_event_raw_drm_sched_job___kx *ctx)
{
	return on_sched_job(ctx, KX_JOB_QUEUE);
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_run")
int tp_sched_run(struct trace_event_raw_drm_sched_job___kx *ctx)
{
	return on_sched_job(ctx, KX_JOB_RUN);
}

SEC("tracepoint/gpu_scheduler/drm_sched_job")
int tp_sched_queue_old(struct trace_event_raw_drm_sched_job___kx *ctx)
{
	return on_sched_job(ctx, KX_JOB_QUEUE);
}

SEC("tracepoint/gpu_scheduler/drm_run_job")
int tp_sched_run_old(struct trace_event_raw_drm_sched_job___kx *ctx)
{
	return on_sched_job(ctx, KX_JOB_RUN);
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_done")
int tp_sched_done(struct trace_event_raw_drm_sched_job_done___kx *ctx)
{
	__u64 c = TPV(ctx, fence_context), s = TPV(ctx, fence_seqno);

	if (key_seen(KX_JOB_SRC_GPU_SCHED, c, s, true))
		emit(KX_JOB_SRC_GPU_SCHED, KX_JOB_DONE, c, s, 0, 0);
	return 0;
}

SEC("tracepoint/gpu_scheduler/drm_sched_process_job")
int tp_sched_done_old(struct trace_event_raw_drm_sched_process_job___kx *ctx)
{
	__u64 c = TPP(ctx, fence);

	if (key_seen(KX_JOB_SRC_GPU_SCHED, c, 0, true))
		emit(KX_JOB_SRC_GPU_SCHED, KX_JOB_DONE, c, 0, 0, 0);
	return 0;
}

/* add_dep / unschedulable: the job (fence_context, fence_seqno) waits on (ctx, seqno). */
SEC("tracepoint/gpu_scheduler/drm_sched_job_add_dep")
int tp_sched_add_dep(struct trace_event_raw_drm_sched_job_add_dep___kx *ctx)
{
	__u64 c = TPV(ctx, fence_context), s = TPV(ctx, fence_seqno);

	/* Fires in the submitter right after queue, so the key is there already. */
	if (key_seen(KX_JOB_SRC_GPU_SCHED, c, s, false))
		emit(KX_JOB_SRC_GPU_SCHED, KX_JOB_DEP, c, s, TPV(ctx, ctx), TPV(ctx, seqno));
	return 0;
}

SEC("tracepoint/gpu_scheduler/drm_sched_job_unschedulable")
int tp_sched_unsched(struct trace_event_raw_drm_sched_job_unschedulable___kx *ctx)
{
	__u64 c = TPV(ctx, fence_context), s = TPV(ctx, fence_seqno);

	if (key_seen(KX_JOB_SRC_GPU_SCHED, c, s, false))
		emit(KX_JOB_SRC_GPU_SCHED, KX_JOB_UNSCHEDULABLE, c, s, TPV(ctx, ctx),
		     TPV(ctx, seqno));
	return 0;
}

/* Old: the job is known by id only; the event's fence is the dependency. */
SEC("tracepoint/gpu_scheduler/drm_sched_job_wait_dep")
int tp_sched_wait_dep(struct trace_event_raw_drm_sched_job_wait_dep___kx *ctx)
{
	__u64 id = TPV(ctx, id);

	if (key_seen(KX_JOB_SRC_GPU_SCHED | 0x100, id, 0, false))
		emit(KX_JOB_SRC_GPU_SCHED, KX_JOB_DEP, 0, 0, id, TPV(ctx, ctx));
	return 0;
}

/* ---- i915: add -> QUEUE, execute -> RUN, retire -> DONE, wait_begin/end ---- */

struct trace_event_raw_i915_request___kx {
	__u32 dev;
	__u64 ctx;
	__u16 class;
	__u16 instance;
	__u32 seqno;
} __attribute__((preserve_access_index));

struct trace_event_raw_i915_request_wait_begin___kx {
	__u32 dev;
	__u64 ctx;
	__u16 class;
	__u16 instance;
	__u32 seqno;
} __attribute__((preserve_access_index));

static __always_inline int on_i915(__u8 phase, __u32 minor, __u64 c, __u64 s, __u64 engine)
{
	struct kx_job_rec *r;

	switch (phase) {
	case KX_JOB_QUEUE:
		if (!cur_traced())
			return 0;
		key_add(KX_JOB_SRC_I915, c, s);
		break;
	case KX_JOB_RUN:
	case KX_JOB_DONE:
		if (!key_seen(KX_JOB_SRC_I915, c, s, phase == KX_JOB_DONE))
			return 0;
		break;
	default:
		if (!cur_traced())
			return 0;
	}
	r = job_new(KX_JOB_SRC_I915, phase);
	if (!r)
		return 0;
	r->dev = KX_MKDEV(DRM_MAJOR, minor); /* dev is the primary node's index */
	r->ctx = c;
	r->seqno = s;
	r->aux = engine;
	job_put(r);
	return 0;
}

#define I915_EVENT(prog, event, type, phase)                                                       \
	SEC("tracepoint/i915/" #event)                                                             \
	int prog(struct type *ctx)                                                                 \
	{                                                                                          \
		return on_i915(phase, TPV(ctx, dev), TPV(ctx, ctx), TPV(ctx, seqno),               \
		               TPV(ctx, class) << 16 | TPV(ctx, instance));                        \
	}

I915_EVENT(tp_i915_add, i915_request_add, trace_event_raw_i915_request___kx, KX_JOB_QUEUE)
I915_EVENT(tp_i915_execute, i915_request_execute, trace_event_raw_i915_request___kx, KX_JOB_RUN)
I915_EVENT(tp_i915_retire, i915_request_retire, trace_event_raw_i915_request___kx, KX_JOB_DONE)
I915_EVENT(tp_i915_wait_begin, i915_request_wait_begin,
           trace_event_raw_i915_request_wait_begin___kx, KX_JOB_WAIT_BEGIN)
I915_EVENT(tp_i915_wait_end, i915_request_wait_end, trace_event_raw_i915_request___kx,
           KX_JOB_WAIT_END)

/* ---- xe: sched_job exec (push) -> QUEUE, run -> RUN, hw fence signal -> DONE ---- */

struct trace_event_raw_xe_sched_job___kx {
	__u32 seqno;
	__u16 guc_id;
	void *fence;
} __attribute__((preserve_access_index));

struct trace_event_raw_xe_hw_fence___kx {
	__u64 ctx;
	__u32 seqno;
	void *fence;
} __attribute__((preserve_access_index));

SEC("tracepoint/xe/xe_sched_job_exec")
int tp_xe_exec(struct trace_event_raw_xe_sched_job___kx *ctx)
{
	struct xe_job_id id = {.guc_id = TPV(ctx, guc_id), .seqno = TPV(ctx, seqno)};
	__u64 fence = TPP(ctx, fence);

	/* Pushed from the exec ioctl, after the job's fence was armed. */
	if (!cur_traced())
		return 0;
	key_add(KX_JOB_SRC_XE, id.guc_id, id.seqno);
	if (fence)
		bpf_map_update_elem(&xefences, &fence, &id, BPF_ANY);
	emit(KX_JOB_SRC_XE, KX_JOB_QUEUE, id.guc_id, id.seqno, 0, 0);
	return 0;
}

SEC("tracepoint/xe/xe_sched_job_run")
int tp_xe_run(struct trace_event_raw_xe_sched_job___kx *ctx)
{
	__u64 g = TPV(ctx, guc_id), s = TPV(ctx, seqno);

	if (key_seen(KX_JOB_SRC_XE, g, s, false))
		emit(KX_JOB_SRC_XE, KX_JOB_RUN, g, s, 0, 0);
	return 0;
}

SEC("tracepoint/xe/xe_hw_fence_signal")
int tp_xe_signal(struct trace_event_raw_xe_hw_fence___kx *ctx)
{
	/* The job's fence is the hardware fence (struct xe_hw_fence starts with it). */
	__u64 fence = TPP(ctx, fence);
	struct xe_job_id *id = bpf_map_lookup_elem(&xefences, &fence);
	struct xe_job_id v;

	if (!id)
		return 0;
	v = *id;
	bpf_map_delete_elem(&xefences, &fence);
	if (key_seen(KX_JOB_SRC_XE, v.guc_id, v.seqno, true))
		emit(KX_JOB_SRC_XE, KX_JOB_DONE, v.guc_id, v.seqno, TPV(ctx, ctx), 0);
	return 0;
}

/* ---- amdgpu: cs_ioctl -> QUEUE, sched_run_job -> RUN (done: gpu_scheduler) ---- */

#define AMDGPU_EVENT(prog, event, type, phase)                                                     \
	SEC("tracepoint/amdgpu/" #event)                                                           \
	int prog(struct type *ctx)                                                                 \
	{                                                                                          \
		__u64 c = TPV(ctx, context), s = TPV(ctx, seqno);                                  \
		struct kx_job_rec *r;                                                              \
                                                                                                   \
		if (phase == KX_JOB_QUEUE) {                                                       \
			if (!cur_traced())                                                         \
				return 0;                                                          \
			key_add(KX_JOB_SRC_AMDGPU, c, s);                                          \
		} else if (!key_seen(KX_JOB_SRC_AMDGPU, c, s, true)) {                             \
			return 0;                                                                  \
		}                                                                                  \
		r = job_new(KX_JOB_SRC_AMDGPU, phase);                                             \
		if (!r)                                                                            \
			return 0;                                                                  \
		r->ctx = c;                                                                        \
		r->seqno = s;                                                                      \
		if (bpf_core_field_exists(ctx->__data_loc_ring))                                   \
			tp_str(r->ring, ctx, TPV(ctx, __data_loc_ring));                           \
		job_put(r);                                                                        \
		return 0;                                                                          \
	}

AMDGPU_EVENT(tp_amdgpu_cs, amdgpu_cs_ioctl, trace_event_raw_amdgpu_cs_ioctl___kx, KX_JOB_QUEUE)
AMDGPU_EVENT(tp_amdgpu_run, amdgpu_sched_run_job, trace_event_raw_amdgpu_sched_run_job___kx,
             KX_JOB_RUN)

/* ---- msm: submit -> QUEUE, submit_flush -> RUN, submit_retired -> DONE ---- */

/*
 * The submit event has no hardware seqno yet (assigned at flush): the submit
 * id is what all three carry, so it is the job's seqno (and the filter key).
 * DONE's aux/aux2 are the device's counter at start and end (ticks).
 */
struct trace_event_raw_msm_gpu_submit___kx {
	__u32 id;
	__u32 ringid;
} __attribute__((preserve_access_index));

struct trace_event_raw_msm_gpu_submit_flush___kx {
	__u32 id;
	__u32 ringid;
} __attribute__((preserve_access_index));

struct trace_event_raw_msm_gpu_submit_retired___kx {
	__u32 id;
	__u32 ringid;
	__u64 start_ticks;
	__u64 end_ticks;
} __attribute__((preserve_access_index));

SEC("tracepoint/drm_msm_gpu/msm_gpu_submit")
int tp_msm_submit(struct trace_event_raw_msm_gpu_submit___kx *ctx)
{
	__u64 ring = TPV(ctx, ringid), id = TPV(ctx, id);

	if (!cur_traced())
		return 0;
	key_add(KX_JOB_SRC_MSM, ring, id);
	emit(KX_JOB_SRC_MSM, KX_JOB_QUEUE, ring, id, 0, 0);
	return 0;
}

SEC("tracepoint/drm_msm_gpu/msm_gpu_submit_flush")
int tp_msm_flush(struct trace_event_raw_msm_gpu_submit_flush___kx *ctx)
{
	__u64 ring = TPV(ctx, ringid), id = TPV(ctx, id);

	if (key_seen(KX_JOB_SRC_MSM, ring, id, false))
		emit(KX_JOB_SRC_MSM, KX_JOB_RUN, ring, id, 0, 0);
	return 0;
}

SEC("tracepoint/drm_msm_gpu/msm_gpu_submit_retired")
int tp_msm_retired(struct trace_event_raw_msm_gpu_submit_retired___kx *ctx)
{
	__u64 ring = TPV(ctx, ringid), id = TPV(ctx, id);

	if (key_seen(KX_JOB_SRC_MSM, ring, id, true))
		emit(KX_JOB_SRC_MSM, KX_JOB_DONE, ring, id, TPV(ctx, start_ticks),
		     TPV(ctx, end_ticks));
	return 0;
}

/* ---- v3d: submit to hardware -> RUN, *_irq -> DONE; ctx = queue ---- */

/*
 * These fire in the scheduler worker and the IRQ handler, so they are kept
 * by device (DRM primary index -> char 226:index, in the device filter).
 */
enum { V3D_BIN, V3D_RENDER, V3D_TFU, V3D_CSD };

struct trace_event_raw_v3d_submit_cl___kx {
	__u32 dev;
	bool is_render;
	__u64 seqno;
} __attribute__((preserve_access_index));

#define V3D_LAYOUT(name)                                                                           \
	struct trace_event_raw_##name##___kx {                                                     \
		__u32 dev;                                                                         \
		__u64 seqno;                                                                       \
	} __attribute__((preserve_access_index))

V3D_LAYOUT(v3d_bcl_irq);
V3D_LAYOUT(v3d_rcl_irq);
V3D_LAYOUT(v3d_tfu_irq);
V3D_LAYOUT(v3d_csd_irq);
V3D_LAYOUT(v3d_submit_tfu);
V3D_LAYOUT(v3d_submit_csd);

static __always_inline int on_v3d(__u8 phase, __u32 minor, __u64 queue, __u64 seqno)
{
	struct kx_dev_key k = {.fkind = KX_FK_CHR, .dev = KX_MKDEV(DRM_MAJOR, minor)};
	struct kx_job_rec *r;

	if (!bpf_map_lookup_elem(&devs, &k)) {
		k.dev = KX_DEV_ANY_MINOR(DRM_MAJOR);
		if (!targ_all && !bpf_map_lookup_elem(&devs, &k))
			return 0;
	}
	r = job_new(KX_JOB_SRC_V3D, phase);
	if (!r)
		return 0;
	r->dev = KX_MKDEV(DRM_MAJOR, minor);
	r->ctx = queue;
	r->seqno = seqno;
	if (phase == KX_JOB_DONE) {
		r->pid = 0;
		r->tid = 0;
	}
	job_put(r);
	return 0;
}

SEC("tracepoint/v3d/v3d_submit_cl")
int tp_v3d_submit_cl(struct trace_event_raw_v3d_submit_cl___kx *ctx)
{
	return on_v3d(KX_JOB_RUN, TPV(ctx, dev), TPV(ctx, is_render) ? V3D_RENDER : V3D_BIN,
	              TPV(ctx, seqno));
}

#define V3D_EVENT(prog, event, phase, queue)                                                       \
	SEC("tracepoint/v3d/" #event)                                                              \
	int prog(struct trace_event_raw_##event##___kx *ctx)                                       \
	{                                                                                          \
		return on_v3d(phase, TPV(ctx, dev), queue, TPV(ctx, seqno));                       \
	}

V3D_EVENT(tp_v3d_bcl_irq, v3d_bcl_irq, KX_JOB_DONE, V3D_BIN)
V3D_EVENT(tp_v3d_rcl_irq, v3d_rcl_irq, KX_JOB_DONE, V3D_RENDER)
V3D_EVENT(tp_v3d_submit_tfu, v3d_submit_tfu, KX_JOB_RUN, V3D_TFU)
V3D_EVENT(tp_v3d_tfu_irq, v3d_tfu_irq, KX_JOB_DONE, V3D_TFU)
V3D_EVENT(tp_v3d_submit_csd, v3d_submit_csd, KX_JOB_RUN, V3D_CSD)
V3D_EVENT(tp_v3d_csd_irq, v3d_csd_irq, KX_JOB_DONE, V3D_CSD)

/* ---- Intel NPU (ivpu, system "vpu"): job "submit" -> QUEUE, "done" -> DONE ---- */

struct trace_event_raw_job___kx {
	const char *event;
	__u32 ctx_id;
	__u32 engine_id;
	__u32 job_id;
} __attribute__((preserve_access_index));

SEC("tracepoint/vpu/job")
int tp_vpu_job(struct trace_event_raw_job___kx *ctx)
{
	__u64 c = TPV(ctx, ctx_id), s = TPV(ctx, job_id);
	const char *evp = (const char *)TPP(ctx, event);
	char ev[8] = {};
	__u8 phase;

	bpf_probe_read_kernel_str(ev, sizeof(ev), evp);
	if (ev[0] == 's' && ev[1] == 'u') { /* "submit", in the ioctl */
		if (!cur_traced())
			return 0;
		key_add(KX_JOB_SRC_VPU, c, s);
		phase = KX_JOB_QUEUE;
	} else if (ev[0] == 'd' && ev[1] == 'o') { /* "done" */
		if (!key_seen(KX_JOB_SRC_VPU, c, s, true))
			return 0;
		phase = KX_JOB_DONE;
	} else {
		return 0;
	}
	emit(KX_JOB_SRC_VPU, phase, c, s, TPV(ctx, engine_id), 0);
	return 0;
}

/* ---- AMD NPU (amdxdna): xdna_job "sent to device" -> RUN, "signal..." -> DONE ---- */

SEC("tracepoint/amdxdna/xdna_job")
int tp_xdna_job(struct trace_event_raw_xdna_job___kx *ctx)
{
	__u64 c = TPV(ctx, fence_context), s = TPV(ctx, fence_seqno);
	struct kx_job_rec *r;
	char what[8] = {};
	__u8 phase;

	if (!kx_xdna_has_fence(ctx))
		return 0; /* the oldest shape has no fence to key on */
	tp_str(what, ctx, TPV(ctx, __data_loc_str));
	if (what[0] == 's' && what[1] == 'e')
		phase = KX_JOB_RUN;
	else if (what[0] == 's' && what[1] == 'i')
		phase = KX_JOB_DONE;
	else
		return 0;
	/* A drm_sched job: queued by a traced thread if gpu_scheduler saw it. */
	if (!key_seen(KX_JOB_SRC_GPU_SCHED, c, s, false))
		return 0;
	r = job_new(KX_JOB_SRC_AMDXDNA, phase);
	if (!r)
		return 0;
	r->ctx = c;
	r->seqno = s;
	r->aux = TPV(ctx, seq);
	tp_str(r->ring, ctx, TPV(ctx, __data_loc_name));
	job_put(r);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
