/*
 * The DRM usage sampler: one pass walks /proc/PID/fd of the processes it is
 * given (every process for host-wide captures), and reads
 * /proc/PID/fdinfo/FD only for fds whose file is a DRM or accel device node
 * (char major 226 or 261; when the capture traces some of those, only
 * them: other devices have no DRM usage statistics); the text goes to
 * model/drmusage.h's parser and tracker, whose rows the pass returns. A
 * process without such an fd costs one readlink per fd and no fdinfo read.
 *
 * KXPROF_PROC_ROOT (for tests only) replaces "/proc": a tree of
 * PID/comm, PID/fd/N (symbolic links to the device path) and
 * PID/fdinfo/N fixture files; a link to /dev/dri/... or /dev/accel/... that
 * does not exist there counts as a DRM node.
 */
#ifndef KX_CAPTURE_DRMFDINFO_H
#define KX_CAPTURE_DRMFDINFO_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "model/drmusage.h"

#define KX_DRM_MAJOR               226 /* DRM_MAJOR: /dev/dri/card*, renderD* */
#define KX_ACCEL_MAJOR             261 /* ACCEL_MAJOR: /dev/accel/accel* */
#define KX_DRM_INTERVAL_DEFAULT_MS 1000

struct kx_drm_sampler_stats {
	uint64_t passes;
	uint64_t procs;        /* processes walked, summed over passes */
	uint64_t fds;          /* fd links read */
	uint64_t fdinfo_reads; /* fdinfo files read (DRM fds only) */
	uint64_t not_drm;      /* of those, no drm-driver line (a driver without stats) */
	uint64_t unreadable;   /* fd directories or fdinfo files that could not be read */
	uint64_t pass_ns;      /* time spent in passes */
};

struct kx_drm_sampler;

/* 1 when one of the n devices is a DRM or accel node: record, top and
 * serve then sample DRM usage unless told not to. */
int kx_drm_devices_traced(const struct kx_device *d, int n);

/* devs: the traced devices (their DRM and accel nodes copied);
 * all: every process, else the pids given with kx_drm_sampler_add_pid.
 * NULL when out of memory. */
struct kx_drm_sampler *kx_drm_sampler_new(const struct kx_device *devs, int ndevs, int all);
void kx_drm_sampler_free(struct kx_drm_sampler *s);
/* A process to walk from now on (a traced pid; seen again is fine). Pids
 * whose /proc entry is gone are forgotten at the next pass. */
void kx_drm_sampler_add_pid(struct kx_drm_sampler *s, uint32_t pid);
/* Adds every pid of a BPF hash map keyed by u32 tgid (a session's traced
 * pid set, kx_session_sampler_maps): the processes a live capture follows. */
void kx_drm_sampler_add_pid_map(struct kx_drm_sampler *s, int map_fd);
/* One pass at now (CLOCK_MONOTONIC ns): the rows (model/drmusage.h), valid
 * until the next pass. */
const struct kx_drm_ev *kx_drm_sampler_pass(struct kx_drm_sampler *s, uint64_t now, size_t *n);
const struct kx_drm_sampler_stats *kx_drm_sampler_stats(const struct kx_drm_sampler *s);
const struct kx_drm_tracker_stats *kx_drm_sampler_tracker_stats(const struct kx_drm_sampler *s);

#endif /* KX_CAPTURE_DRMFDINFO_H */
