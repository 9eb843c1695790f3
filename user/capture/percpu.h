/*
 * Per-CPU counter arrays of the BPF programs (BPF_MAP_TYPE_PERCPU_ARRAY of
 * u64, one slot per counter): each slot summed over the possible CPUs. The
 * one reader of every loader's loss and error counters.
 */
#ifndef KX_CAPTURE_PERCPU_H
#define KX_CAPTURE_PERCPU_H

#include <stdint.h>

/* sum[k] = slot k of the array at map_fd summed over CPUs, for k < nkeys
 * (0 for slots that cannot be read). 0, or -1 out of memory (sum zeroed). */
int kx_percpu_sum(int map_fd, uint32_t nkeys, uint64_t *sum);

#endif /* KX_CAPTURE_PERCPU_H */
