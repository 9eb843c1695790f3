/*
 * Clock sync: BPF stamps events with CLOCK_MONOTONIC; exporters need
 * CLOCK_REALTIME (Unix epoch). Measures the offset from the tightest of
 * several paired reads.
 */
#ifndef KX_CLOCK_H
#define KX_CLOCK_H

#include <stdint.h>

#include "model/capinfo.h"

void kx_clock_sync_measure(struct kx_clock_sync *cs);
uint64_t kx_mono_ns(void);
int64_t kx_realtime_ns(void);

#endif /* KX_CLOCK_H */
