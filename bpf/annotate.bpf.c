// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Annotation capture: the USDT probes of libkxprof_annotate.so (range push
 * and pop, marks, cross-thread range start and end) become records of
 * bpf/annotate_rec.h for traced processes. Thread ranges are paired here (a
 * per-thread stack of begin times), cross-thread ones by (tgid, id), so a
 * POP or END record says when its range began; what cannot be paired or
 * recorded is counted in ann_stats. Names are copied at the call, bounded.
 * The ring buffer and the pid set are declared as in the ioctl object
 * (shared.bpf.h), so user space can point them at a session's. A uprobe
 * on the dynamic loader's debugger hook tells user space, on ann_notes,
 * when a traced process has mapped new objects, so new copies of the
 * library get their probes attached.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "kxprof.h"
#include "annotate_rec.h"
#include "shared.bpf.h"

#define E2BIG 7

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_ANN_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ann_stats SEC(".maps");

/* A thread's open ranges: depth counts beyond KX_ANN_DEPTH, begin[] holds
 * the levels that fit. The entry goes when the thread's depth is 0 again;
 * a thread that exits inside a range leaves it (bounded: a full map is
 * counted in KX_ANN_STAT_THREADS_FULL). */
struct ann_thread {
	__u32 depth;
	__u32 pad;
	__u64 begin[KX_ANN_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); /* tid */
	__type(value, struct ann_thread);
} ann_threads SEC(".maps");

/* Open cross-thread ranges: (tgid, id) -> begin time (bounded: a full map
 * is counted in KX_ANN_STAT_RANGES_FULL). */
struct ann_range_key {
	__u64 id;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ann_range_key);
	__type(value, __u64);
} ann_ranges SEC(".maps");

/* Library loads of traced processes (struct kx_ann_note), for the attacher. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} ann_notes SEC(".maps");

/* Threads already named by a task record of this object. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} ann_named SEC(".maps");

static __always_inline void ann_stat(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ann_stats, &which);

	if (v)
		*v += 1;
}

static __always_inline bool ann_traced(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;

	return kx_tgid_traced(tgid);
}

/* The first annotation of a thread names it (a task record, as an ioctl's
 * first does; counted in the shared stats with the other task records). */
static __always_inline void name_thread(__u64 pid_tgid)
{
	__u32 tid = (__u32)pid_tgid;
	struct kx_task_rec *t;
	__u8 one = 1;

	if (bpf_map_lookup_elem(&ann_named, &tid))
		return;
	bpf_map_update_elem(&ann_named, &tid, &one, BPF_ANY);
	stat_inc(KX_STAT_TASK_EMITTED);
	t = bpf_ringbuf_reserve(&events, sizeof(*t), 0);
	if (!t) {
		stat_inc(KX_STAT_TASK_DROPPED);
		return;
	}
	t->hdr.type = KX_REC_TASK;
	t->hdr.size = sizeof(*t);
	t->hdr.cpu = bpf_get_smp_processor_id();
	t->ts = bpf_ktime_get_ns();
	t->pid = pid_tgid >> 32;
	t->tid = tid;
	t->ppid = 0;
	t->what = KX_TASK_SEEN;
	bpf_get_current_comm(t->comm, sizeof(t->comm));
	bpf_ringbuf_submit(t, submit_flags());
}

/* Copies a user string into dst (size bytes); returns flags to add. */
static __always_inline __u16 copy_str(char *dst, __u32 size, __u64 src, __u16 cut, __u16 fault)
{
	long n;

	if (!src)
		return 0;
	n = bpf_probe_read_user_str(dst, size, (const void *)src);
	if (n < 0) {
		dst[0] = 0;
		ann_stat(KX_ANN_STAT_NAME_FAULT);
		return fault;
	}
	return n >= size ? cut : 0;
}

/* Reserves and fills the common part; names when `named`. NULL: dropped. */
static __always_inline struct kx_ann_rec *rec_new(__u16 what, __u64 pid_tgid, __u64 ts, bool named)
{
	__u32 size = named ? sizeof(struct kx_ann_rec) : KX_ANN_REC_BASE_SIZE;
	struct kx_ann_rec *r;

	ann_stat(KX_ANN_STAT_EMITTED);
	if (named)
		r = bpf_ringbuf_reserve(&events, sizeof(struct kx_ann_rec), 0);
	else
		r = bpf_ringbuf_reserve(&events, KX_ANN_REC_BASE_SIZE, 0);
	if (!r) {
		ann_stat(KX_ANN_STAT_DROPPED);
		return NULL;
	}
	r->hdr.type = KX_REC_ANNOTATION;
	r->hdr.size = size;
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = ts;
	r->begin = ts;
	r->id = 0;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->what = what;
	r->depth = 0;
	r->flags = 0;
	r->pad = 0;
	return r;
}

static __always_inline void rec_names(struct kx_ann_rec *r, __u64 name, __u64 cat)
{
	r->name[0] = 0;
	r->category[0] = 0;
	r->flags |=
	        copy_str(r->name, sizeof(r->name), name, KX_ANN_F_NAME_CUT, KX_ANN_F_NAME_FAULT);
	r->flags |= copy_str(r->category, sizeof(r->category), cat, KX_ANN_F_CAT_CUT,
	                     KX_ANN_F_CAT_FAULT);
}

static __always_inline void rec_send(struct kx_ann_rec *r)
{
	bpf_ringbuf_submit(r, submit_flags());
}

/* A thread's stack, created empty when absent (NULL: the map is full). */
static __always_inline struct ann_thread *thread_state(__u32 tid)
{
	static const struct ann_thread empty;
	struct ann_thread *t = bpf_map_lookup_elem(&ann_threads, &tid);

	if (t)
		return t;
	if (bpf_map_update_elem(&ann_threads, &tid, &empty, BPF_NOEXIST) == -E2BIG)
		return NULL;
	return bpf_map_lookup_elem(&ann_threads, &tid);
}

SEC("usdt")
int BPF_USDT(ann_push, __u64 name, __u64 cat)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts;
	struct kx_ann_rec *r;
	struct ann_thread *t;
	__u32 d;

	if (!ann_traced(pid_tgid))
		return 0;
	name_thread(pid_tgid);
	ts = bpf_ktime_get_ns();
	t = thread_state((__u32)pid_tgid);
	if (!t) {
		ann_stat(KX_ANN_STAT_THREADS_FULL);
		return 0;
	}
	d = t->depth++;
	if (d >= KX_ANN_DEPTH) {
		ann_stat(KX_ANN_STAT_DEPTH_OVERFLOW);
		return 0;
	}
	t->begin[d] = ts;
	r = rec_new(KX_ANN_PUSH, pid_tgid, ts, true);
	if (!r)
		return 0;
	r->depth = d + 1;
	rec_names(r, name, cat);
	rec_send(r);
	return 0;
}

SEC("usdt")
int BPF_USDT(ann_pop)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts, begin;
	__u32 tid = (__u32)pid_tgid, d;
	struct kx_ann_rec *r;
	struct ann_thread *t;

	if (!ann_traced(pid_tgid))
		return 0;
	ts = bpf_ktime_get_ns();
	t = bpf_map_lookup_elem(&ann_threads, &tid);
	if (!t || !t->depth) {
		ann_stat(KX_ANN_STAT_POP_NO_PUSH);
		return 0;
	}
	d = --t->depth;
	if (d >= KX_ANN_DEPTH)
		return 0; /* its push was counted as an overflow */
	begin = t->begin[d];
	if (!d)
		bpf_map_delete_elem(&ann_threads, &tid);
	r = rec_new(KX_ANN_POP, pid_tgid, ts, false);
	if (!r)
		return 0;
	r->begin = begin;
	r->depth = d + 1;
	rec_send(r);
	return 0;
}

SEC("usdt")
int BPF_USDT(ann_mark, __u64 name, __u64 cat)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct kx_ann_rec *r;
	struct ann_thread *t;

	if (!ann_traced(pid_tgid))
		return 0;
	name_thread(pid_tgid);
	r = rec_new(KX_ANN_MARK, pid_tgid, bpf_ktime_get_ns(), true);
	if (!r)
		return 0;
	t = bpf_map_lookup_elem(&ann_threads, &tid);
	r->depth = t ? t->depth : 0;
	rec_names(r, name, cat);
	rec_send(r);
	return 0;
}

SEC("usdt")
int BPF_USDT(ann_start, __u64 id, __u64 name, __u64 cat)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts;
	struct ann_range_key k = {.id = id, .tgid = pid_tgid >> 32};
	struct kx_ann_rec *r;

	if (!ann_traced(pid_tgid))
		return 0;
	name_thread(pid_tgid);
	ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&ann_ranges, &k, &ts, BPF_ANY)) {
		ann_stat(KX_ANN_STAT_RANGES_FULL);
		return 0;
	}
	r = rec_new(KX_ANN_START, pid_tgid, ts, true);
	if (!r)
		return 0;
	r->id = id;
	rec_names(r, name, cat);
	rec_send(r);
	return 0;
}

SEC("usdt")
int BPF_USDT(ann_end, __u64 id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts, *b, begin;
	struct ann_range_key k = {.id = id, .tgid = pid_tgid >> 32};
	struct kx_ann_rec *r;

	if (!ann_traced(pid_tgid))
		return 0;
	name_thread(pid_tgid);
	ts = bpf_ktime_get_ns();
	b = bpf_map_lookup_elem(&ann_ranges, &k);
	if (!b) {
		ann_stat(KX_ANN_STAT_END_NO_START);
		return 0;
	}
	begin = *b;
	bpf_map_delete_elem(&ann_ranges, &k);
	r = rec_new(KX_ANN_END, pid_tgid, ts, false);
	if (!r)
		return 0;
	r->id = id;
	r->begin = begin;
	rec_send(r);
	return 0;
}

/* On the dynamic loader's _dl_debug_state (r_brk): a traced process mapped
 * new objects; user space attaches the probes of new copies of the library
 * before it goes on far (the library waits for that when asked to). */
SEC("uprobe")
int ann_loaded(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct kx_ann_note *n;

	(void)ctx;
	if (!ann_traced(pid_tgid))
		return 0;
	n = bpf_ringbuf_reserve(&ann_notes, sizeof(*n), 0);
	if (!n) {
		ann_stat(KX_ANN_STAT_NOTES_LOST);
		return 0;
	}
	n->pid = pid_tgid >> 32;
	n->tid = (__u32)pid_tgid;
	n->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
