/*
 * Perf counters inside driver calls (record --counters): the counters
 * kxprof knows by name (the perf event behind each) and the per-call
 * readings a capture keeps, already scaled for multiplexing. The names'
 * strings are static: outputs use them as keys.
 */
#ifndef KX_MODEL_COUNTER_H
#define KX_MODEL_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#include "counters_rec.h" /* bpf/: KX_MAX_COUNTERS, the record */

struct kx_counter_def {
	const char *name;  /* as perf names it: "cycles", "context-switches" */
	uint32_t type;     /* PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE */
	uint64_t config;   /* PERF_COUNT_HW_* or PERF_COUNT_SW_* */
	int at_switch;     /* counted by kxprof at sched_switch, not read from the event */
	const char *alias; /* a shorter name perf also takes, or NULL */
};

/* The definition of name (or its alias), NULL when kxprof does not know it. */
const struct kx_counter_def *kx_counter_find(const char *name);
/* Every name, comma-separated, for messages. */
const char *kx_counter_names(void);

/* One traced call's counters, scaled: count * enabled / running. */
struct kx_ctr_ev {
	uint64_t ts;  /* the call's enter, CLOCK_MONOTONIC ns (its ioctl's ts) */
	uint32_t pid; /* tgid */
	uint32_t tid;
	uint8_t n;           /* values in v */
	uint8_t flags;       /* KX_CTR_F_* of the record */
	uint8_t not_counted; /* bit i: counter i never ran during the call (no value) */
	uint8_t multiplexed; /* bit i: counter i was scaled (it ran part of the time) */
	uint32_t pad;
	uint64_t v[KX_MAX_COUNTERS];
};

/* The call's readings of a record, scaled (pointers nowhere: a copy). */
void kx_ctr_ev_from_rec(const struct kx_counter_rec *r, struct kx_ctr_ev *e);

#endif /* KX_MODEL_COUNTER_H */
