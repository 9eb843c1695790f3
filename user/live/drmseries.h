/*
 * Live DRM usage (top, serve): the DRM usage sampler (capture/drmfdinfo.h)
 * over a live capture's processes (its traced pid set, or every process),
 * a pass every interval, on the caller's thread (top) or on a thread of its
 * own (serve). Owns the last pass's rows, the per-process fold top shows,
 * and the series serve exposes: per client and engine the busy seconds
 * (the kernel's running total where the driver gives ns, else the sum of
 * busy share times interval since the series began), the engine capacity,
 * and the memory per region, bounded by a key limit.
 */
#ifndef KX_LIVE_DRMSERIES_H
#define KX_LIVE_DRMSERIES_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/drmstats.h"
#include "capture/session.h"
#include "model/capinfo.h"

struct kx_drmlive_opts {
	const struct kx_device *devs; /* traced devices (their DRM and accel nodes are read) */
	int ndevs;
	int all;                  /* every process; else the session's pid set */
	struct kx_session *s;     /* for its pid set (may be NULL with all) */
	unsigned int interval_ms; /* 0: KX_DRM_INTERVAL_DEFAULT_MS */
	uint32_t max_keys;        /* serve: series kept at most (0: 4096) */
};

struct kx_drmlive;

/* NULL when out of memory. */
struct kx_drmlive *kx_drmlive_new(const struct kx_drmlive_opts *o);
/* A pass now, on the caller's thread (top). */
void kx_drmlive_pass(struct kx_drmlive *l);
/* Passes every interval on a thread of its own until kx_drmlive_free (serve). 0, or -1. */
int kx_drmlive_start(struct kx_drmlive *l);
/* The last pass folded per process and engine, and per process and region
 * (caller frees with kx_drmstats_free); NULL when out of memory. */
struct kx_drmstats *kx_drmlive_fold(struct kx_drmlive *l);
/* The Prometheus families (kxprof_drm_*): with by_pid, pid and comm labels.
 * 0, or -1 when writing failed. */
int kx_drmlive_prom(struct kx_drmlive *l, FILE *f, int by_pid);
void kx_drmlive_free(struct kx_drmlive *l); /* stops its thread; NULL is fine */

#endif /* KX_LIVE_DRMSERIES_H */
