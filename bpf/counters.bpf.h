/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Counters inside driver calls (record --counters), included by
 * bpf/ioctl.bpf.c, which calls kx_ctr_enter at a traced call's enter,
 * kx_ctr_exit at its exit and kx_ctr_switch at every context switch.
 *
 * Each counter is a perf event per CPU in a perf event array (opened by
 * user/capture/counters.c), read with bpf_perf_event_read_value on the
 * current CPU. A per-CPU counter sees every task on its CPU, so a call is
 * charged only while its thread is on the CPU: the readings at enter, at
 * each switch-out and switch-in, and at exit bound the windows whose deltas
 * add up (count, enabled and running time alike, so user space can scale a
 * multiplexed counter). cpu-migrations cannot be read that way (the kernel
 * counts a migration on the CPU that does the wakeup): its slot counts the
 * times the thread came back on another CPU. One record per call, at exit.
 * Everything is skipped (the verifier drops it) while nr_counters is 0.
 */
#ifndef KXPROF_COUNTERS_BPF_H
#define KXPROF_COUNTERS_BPF_H

#include "counters_rec.h"

/* Counter slots in use, in order; the slot counted here at sched_switch
 * (cpu-migrations), KX_MAX_COUNTERS when none. Set by user space. */
const volatile __u32 nr_counters = 0;
const volatile __u32 ctr_migrations = KX_MAX_COUNTERS;

/* One perf event array per slot, indexed by CPU (sized by user space). */
#define KX_CTR_ARRAY(name)                                                                         \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);                                       \
		__uint(key_size, sizeof(__u32));                                                   \
		__uint(value_size, sizeof(__u32));                                                 \
		__uint(max_entries, 1);                                                            \
	} name SEC(".maps")
KX_CTR_ARRAY(ctr0);
KX_CTR_ARRAY(ctr1);
KX_CTR_ARRAY(ctr2);
KX_CTR_ARRAY(ctr3);

struct kx_ctr_state {
	__u64 call_ts; /* the call's enter */
	__u32 in_call; /* a traced call is in progress */
	__u32 on_cpu;  /* its thread is on a CPU: start[] holds that window's readings */
	__u32 cpu;     /* where it last ran */
	__u32 flags;   /* KX_CTR_F_* */
	struct kx_ctr_value start[KX_MAX_COUNTERS];
	struct kx_ctr_value acc[KX_MAX_COUNTERS];
};

/* Threads' counter state, by tid (sized by user space: 1 while unused). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kx_ctr_state);
} ctr_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_CSTAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ctr_stats SEC(".maps");

static __always_inline void ctr_stat(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&ctr_stats, &which);

	if (v)
		*v += 1;
}

/* Reads slot i on the current CPU. */
static __always_inline long ctr_read(__u32 i, struct bpf_perf_event_value *v)
{
	switch (i) {
	case 0:
		return bpf_perf_event_read_value(&ctr0, BPF_F_CURRENT_CPU, v, sizeof(*v));
	case 1:
		return bpf_perf_event_read_value(&ctr1, BPF_F_CURRENT_CPU, v, sizeof(*v));
	case 2:
		return bpf_perf_event_read_value(&ctr2, BPF_F_CURRENT_CPU, v, sizeof(*v));
	case 3:
		return bpf_perf_event_read_value(&ctr3, BPF_F_CURRENT_CPU, v, sizeof(*v));
	}
	return -1;
}

/* A window starts: every slot's reading now. */
static __always_inline void ctr_window_start(struct kx_ctr_state *s)
{
	struct bpf_perf_event_value v;

	for (__u32 i = 0; i < KX_MAX_COUNTERS && i < nr_counters; i++) {
		if (i == ctr_migrations)
			continue;
		if (ctr_read(i, &v)) {
			s->flags |= KX_CTR_F_PARTIAL;
			ctr_stat(KX_CSTAT_READ_FAIL);
			continue;
		}
		s->start[i].count = v.counter;
		s->start[i].enabled = v.enabled;
		s->start[i].running = v.running;
	}
}

/* A window ends: what each slot counted since its start is added. */
static __always_inline void ctr_window_end(struct kx_ctr_state *s)
{
	struct bpf_perf_event_value v;

	for (__u32 i = 0; i < KX_MAX_COUNTERS && i < nr_counters; i++) {
		if (i == ctr_migrations)
			continue;
		if (ctr_read(i, &v)) {
			s->flags |= KX_CTR_F_PARTIAL;
			ctr_stat(KX_CSTAT_READ_FAIL);
			continue;
		}
		s->acc[i].count += v.counter - s->start[i].count;
		s->acc[i].enabled += v.enabled - s->start[i].enabled;
		s->acc[i].running += v.running - s->start[i].running;
	}
}

static __always_inline void kx_ctr_enter(__u32 tid, __u64 ts)
{
	struct kx_ctr_state *s;

	if (!nr_counters)
		return;
	s = bpf_map_lookup_elem(&ctr_state, &tid);
	if (!s) {
		struct kx_ctr_state zero = {};

		bpf_map_update_elem(&ctr_state, &tid, &zero, BPF_ANY);
		s = bpf_map_lookup_elem(&ctr_state, &tid);
		if (!s) {
			ctr_stat(KX_CSTAT_NOSLOT);
			return;
		}
	}
	__builtin_memset(s->acc, 0, sizeof(s->acc));
	s->call_ts = ts;
	s->flags = 0;
	s->cpu = bpf_get_smp_processor_id();
	s->in_call = 1;
	s->on_cpu = 1;
	ctr_window_start(s);
}

static __always_inline void kx_ctr_exit(__u32 tgid, __u32 tid)
{
	struct kx_counter_rec *r;
	struct kx_ctr_state *s;

	if (!nr_counters)
		return;
	s = bpf_map_lookup_elem(&ctr_state, &tid);
	if (!s || !s->in_call)
		return;
	if (s->on_cpu)
		ctr_window_end(s);
	s->in_call = 0;
	ctr_stat(KX_CSTAT_EMITTED);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		ctr_stat(KX_CSTAT_DROPPED);
		return;
	}
	r->hdr.type = KX_REC_COUNTERS;
	r->hdr.size = sizeof(*r);
	r->hdr.cpu = bpf_get_smp_processor_id();
	r->ts = s->call_ts;
	r->pid = tgid;
	r->tid = tid;
	r->n = nr_counters;
	r->flags = s->flags;
	__builtin_memcpy(r->v, s->acc, sizeof(r->v));
	bpf_ringbuf_submit(r, submit_flags());
}

/* prev leaves its CPU, next comes on: their windows end and start. */
static __always_inline void kx_ctr_switch(__u32 prev, __u32 next)
{
	struct kx_ctr_state *s;
	__u32 cpu;

	if (!nr_counters)
		return;
	s = bpf_map_lookup_elem(&ctr_state, &prev);
	if (s && s->in_call && s->on_cpu) {
		ctr_window_end(s);
		s->on_cpu = 0;
	}
	s = bpf_map_lookup_elem(&ctr_state, &next);
	if (!s || !s->in_call || s->on_cpu)
		return;
	cpu = bpf_get_smp_processor_id();
	if (ctr_migrations < KX_MAX_COUNTERS && cpu != s->cpu)
		s->acc[ctr_migrations & (KX_MAX_COUNTERS - 1)].count += 1;
	s->cpu = cpu;
	s->on_cpu = 1;
	ctr_window_start(s);
}

#endif /* KXPROF_COUNTERS_BPF_H */
