/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Counters inside driver calls: the record bpf/counters.bpf.h writes at the
 * exit of each traced ioctl when counters are on (record --counters), with
 * the per-call deltas of up to KX_MAX_COUNTERS perf counters, and the
 * per-CPU counters that account for those records (received + dropped ==
 * emitted). Shared by the BPF side and user space.
 */
#ifndef KXPROF_COUNTERS_REC_H
#define KXPROF_COUNTERS_REC_H

#include "kxprof.h"

/* kx_hdr.type of a counter record (after the sample records' 4 and 5). */
#define KX_REC_COUNTERS 7

#define KX_MAX_COUNTERS 4

/* Counters in the per-CPU ctr_stats array. */
enum kx_ctr_stat {
	KX_CSTAT_EMITTED = 0, /* counter records tried (one per traced call) */
	KX_CSTAT_DROPPED,     /* of those, lost: the ring buffer was full */
	KX_CSTAT_READ_FAIL,   /* a counter read failed (that call's value is partial) */
	KX_CSTAT_NOSLOT,      /* a call not measured: no room for its thread's state */
	KX_CSTAT_MAX,
};

/* One counter over a call: its count, and the time it was enabled and running
 * (equal unless the kernel multiplexed it: then count * enabled / running). */
struct kx_ctr_value {
	unsigned long long count;
	unsigned long long enabled; /* ns */
	unsigned long long running; /* ns */
};

struct kx_counter_rec {
	struct kx_hdr hdr;
	unsigned long long ts; /* the call's enter, CLOCK_MONOTONIC ns (its ioctl record's ts) */
	unsigned int pid;      /* tgid */
	unsigned int tid;
	unsigned int n;     /* counters in v */
	unsigned int flags; /* KX_CTR_F_* */
	struct kx_ctr_value v[KX_MAX_COUNTERS];
};

#define KX_CTR_F_PARTIAL 1 /* a read failed during the call: the values are short */

#endif /* KXPROF_COUNTERS_REC_H */
