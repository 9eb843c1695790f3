/*
 * Streaming job aggregates for always-on profiling (kxprof serve): pairs job
 * lifecycle phases (user/model/event.h) online and keeps log2 histograms of queue
 * delay (QUEUE -> RUN) and exec time (RUN, or QUEUE when the job has no RUN,
 * -> DONE) per (device, ring), plus jobs in flight and busy time per device.
 * Memory is bounded: a fixed pending table and a fixed number of series.
 *
 * Pairing keys: BLOCK (dev, sector); fence-keyed sources (gpu_scheduler,
 * dma_fence, i915, xe, amdgpu, msm, v3d, vpu, amdxdna) (src, ctx, seqno),
 * so a fence seen by two sources counts under each. KVM is skipped: its job
 * starts at the KVM_RUN ioctl, and aggregate mode has no ioctl records.
 * Device label: the disk name for BLOCK, the source name otherwise.
 *
 * Overflow (counted, never silent): a pending job evicted because the
 * table is full (oldest first), or a job of a new (device, ring) past the
 * series limit. A DONE without a pending start is ignored.
 *
 * Busy time: time with at least one job in flight (queued or running) on
 * the device. Thread-safe: add from the consumer, snapshot from anywhere.
 */
#ifndef KX_JOBAGG_H
#define KX_JOBAGG_H

#include <stddef.h>
#include <stdint.h>

#include "capture/sink.h"
#include "model/agg.h"
#include "model/event.h"

#define KX_JOBAGG_MAX_PENDING 65536
#define KX_JOBAGG_MAX_SERIES  256

struct kx_jobagg;

/* 0 for either limit: the default. NULL when out of memory. */
struct kx_jobagg *kx_jobagg_new(uint32_t max_pending, uint32_t max_series);
void kx_jobagg_free(struct kx_jobagg *a);
/* One job record (records arrive in time order per source). */
void kx_jobagg_add(struct kx_jobagg *a, const struct kx_job *j);
/* Copy at time now_ns (CLOCK_MONOTONIC; for busy time of devices still
 * busy); with reset, histograms and busy time start over (pending jobs and
 * series stay). Returns 0, -1 when out of memory. */
int kx_jobagg_snapshot(struct kx_jobagg *a, struct kx_jobagg_snapshot *out, uint64_t now_ns,
                       int reset);
void kx_jobagg_snapshot_free(struct kx_jobagg_snapshot *s);

/* A sink of job records only, paired online into a (top, serve). */
struct kx_sink kx_jobagg_sink(struct kx_jobagg *a);

#endif /* KX_JOBAGG_H */
