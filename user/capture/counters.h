/*
 * Perf counters inside traced ioctls (record --counters): parses the list
 * (names of model/counter.h), opens each counter's perf event on every
 * online CPU (pid -1, inherit 0: what bpf_perf_event_read_value reads)
 * before the ioctl object loads, so that the object knows how many slots it
 * reads, and puts the fds into the object's perf event arrays once it is
 * loaded (bpf/counters.bpf.h). A counter this machine refuses (hardware
 * counters in a VM without a PMU) is skipped with its reason, noted as the
 * capture's hook "counter:NAME", never fatal. Owns the perf event fds.
 */
#ifndef KX_CAPTURE_COUNTERS_H
#define KX_CAPTURE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "model/counter.h"

struct kx_counter_list {
	int n;
	const struct kx_counter_def *c[KX_MAX_COUNTERS];
};

/* Parses "cycles,page-faults" (at most KX_MAX_COUNTERS, no repeats). 0, or
 * -1 with err (a usage error: an unknown name, too many). */
int kx_counters_parse(const char *list, struct kx_counter_list *out, char *err, size_t len);
/* The list as kx_counters_parse takes it ("cycles,page-faults"; "" when
 * empty), cut to fit len. */
void kx_counters_format(const struct kx_counter_list *l, char *buf, size_t len);
/* 1 when d counts with the CPU's performance monitoring unit (hardware and
 * cache events), which counts whatever the CPU runs, kernel code included;
 * 0 for the kernel's software counters (what getrusage also tells). */
int kx_counter_is_hw(const struct kx_counter_def *d);

struct kx_counters;

/* Opens want's counters on every online CPU; those refused are skipped and
 * noted in ci's hooks; ci's counter names get the kept ones. no_hw_why: when
 * not NULL, hardware counters are not opened but skipped with this reason
 * (a daemon session not allowed kernel-mode profiling). NULL only when out
 * of memory. */
struct kx_counters *kx_counters_open(const struct kx_counter_list *want, const char *no_hw_why,
                                     struct kx_capinfo *ci);
/* Slots the BPF side reads (kept counters). */
uint32_t kx_counters_nslots(const struct kx_counters *c);
/* The slot counted at sched_switch (cpu-migrations), KX_MAX_COUNTERS when none. */
uint32_t kx_counters_switch_slot(const struct kx_counters *c);
/* After the object's load: slot i's per-CPU fds into the perf event array
 * arrays[i]. 0, or -1 with err. */
int kx_counters_attach(struct kx_counters *c, const int arrays[KX_MAX_COUNTERS], char *err,
                       size_t len);
void kx_counters_close(struct kx_counters *c); /* NULL is fine */

#endif /* KX_CAPTURE_COUNTERS_H */
