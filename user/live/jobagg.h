/*
 * Live job aggregates (kxprof top, serve): job records (and the KVM_RUN
 * ioctl records that start KVM jobs) paired online by the same rules as the
 * offline analysis (analysis/jobpair.h: keys, phases, duplicates, KVM jobs,
 * busy intervals), folded into log2 histograms of queue delay (RUN - QUEUE;
 * direct block requests 0; none for KVM) and exec time (DONE - RUN, or
 * QUEUE when the job has no RUN) per (device, ring), and per device the
 * jobs seen, completed and in flight and the busy time.
 * Memory is bounded: a fixed job table, a fixed number of series, KVM exits
 * waiting for their KVM_RUN record, and busy intervals per device.
 *
 * Device label: the disk name for BLOCK, the source name otherwise ("kvm",
 * "gpu_scheduler"); ring: the record's, "default" when none, "vcpu" for
 * every KVM job (not a series per vCPU thread that ever ran).
 * A job is counted under the (device, ring) of its first event.
 *
 * Records arrive in completion order: a KVM exit (DONE) before the record of
 * the KVM_RUN around it, which the ring gets at the call's return. Exits
 * wait for their thread's next KVM_RUN record: the first exit inside it ends
 * the job that started at the call's enter, later ones inside it are
 * duplicates, one before it is a job of its own with no start (as offline).
 * A KVM job is known when it ends: it is never counted in flight.
 *
 * Busy time: the union of the jobs' busy intervals (kx_jobrec_busy: from RUN,
 * or QUEUE for a job that has no RUN, to DONE) per device, plus the time
 * since the earliest RUN of jobs still running; exact while a device's
 * intervals fit KX_JOBAGG_MAX_IVALS (past it the oldest is folded in, and
 * a later interval reaching back before it is cut there; so is one reaching
 * back before a reset). What a fold's cut may lose is counted: the true
 * busy time lies between busy_ns and busy_ns + busy_cut_ns. A KVM job's
 * interval comes at its KVM_RUN's return: a long KVM_RUN on one vCPU while
 * another ran more than KX_JOBAGG_MAX_IVALS short ones is cut so.
 *
 * Overflow (counted, never silent): an open job evicted because the table
 * is full (oldest first), a job of a new (device, ring) past the series
 * limit. The oldest KVM exit of a full wait list becomes a job without a
 * start, as offline where no KVM_RUN holds it. Finished jobs stay in the
 * table (a second source's phases of them are not new jobs) until their
 * slot is needed; that eviction is not a loss.
 * Thread-safe: add from the consumer, snapshot from anywhere.
 */
#ifndef KX_JOBAGG_H
#define KX_JOBAGG_H

#include <stddef.h>
#include <stdint.h>

#include "model/agg.h"
#include "model/event.h"

#define KX_JOBAGG_MAX_PENDING 65536
#define KX_JOBAGG_MAX_SERIES  256
#define KX_JOBAGG_MAX_EXITS   1024 /* KVM exits waiting for their KVM_RUN record */
#define KX_JOBAGG_MAX_IVALS   64   /* busy intervals kept apart per device (default) */

struct kx_jobagg;

/* 0 for either limit: the default. NULL when out of memory. */
struct kx_jobagg *kx_jobagg_new(uint32_t max_pending, uint32_t max_series);
/* Busy intervals kept apart per device (default KX_JOBAGG_MAX_IVALS), set
 * before the first record. 0, or -1 when too late or out of memory. */
int kx_jobagg_set_max_ivals(struct kx_jobagg *a, uint32_t max_ivals);
void kx_jobagg_free(struct kx_jobagg *a);
/* One job record (records arrive in time order per source). */
void kx_jobagg_add(struct kx_jobagg *a, const struct kx_job *j);
/* One ioctl record: a KVM_RUN ends the KVM exits inside it; others are ignored. */
void kx_jobagg_ioctl(struct kx_jobagg *a, const struct kx_ioctl *io);
/* No more records: KVM exits still waiting are jobs without a start. */
void kx_jobagg_flush(struct kx_jobagg *a);
/* Copy at time now_ns (CLOCK_MONOTONIC; for busy time of devices still
 * busy); with reset, histograms, job counts and busy time start over
 * (pending jobs and series stay). Returns 0, -1 when out of memory. */
int kx_jobagg_snapshot(struct kx_jobagg *a, struct kx_jobagg_snapshot *out, uint64_t now_ns,
                       int reset);
void kx_jobagg_snapshot_free(struct kx_jobagg_snapshot *s);

#endif /* KX_JOBAGG_H */
