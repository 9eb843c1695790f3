/*
 * Job sources: loads and attaches bpf/jobs.bpf.c, the device-side job
 * lifecycle tracepoints (block requests, KVM vCPU exits, dma_fence,
 * gpu_scheduler, i915, xe, amdgpu, msm, v3d, vpu, amdxdna), on the maps of
 * the session's ioctl object. Probes which tracepoints this kernel has,
 * enables only those, falls back tp_btf > raw_tp > classic, and reports
 * every source in the capture's hook list (attached, or skipped and why).
 * Never fails a session: a source that cannot attach is reported.
 */
#ifndef KX_JOBSRC_H
#define KX_JOBSRC_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"

struct kx_jobsrc_opts {
	int events_fd, stats_fd, pids_fd, devs_fd; /* the ioctl object's maps */
	int all;                                   /* every process: no pid filter */
	uint64_t wakeup_bytes;
	const char *mech;                /* the ioctl hooks' mechanism: tried first */
	const struct kx_device *devices; /* block devices among them are traced */
	int ndevices;
	/* A daemon session for an unprivileged client: only processes of this
	 * uid; sources filtered by device alone (block, v3d) stay off. */
	int uid_only;
	uint32_t uid;
};

struct kx_jobsrc;

/* Reports into ci->hooks ("jobs:<source>"). NULL when nothing attached. */
struct kx_jobsrc *kx_jobsrc_open(const struct kx_jobsrc_opts *o, struct kx_capinfo *ci);
/* Replaces the traced block disks (a partition traces its whole disk). */
int kx_jobsrc_set_devices(struct kx_jobsrc *j, const struct kx_device *d, int n);
/* Detaches every program (the session drains the ring after this). */
void kx_jobsrc_detach(struct kx_jobsrc *j);
/* Runs of its programs the kernel skipped (capture/progmiss.h); 0 for NULL. */
uint64_t kx_jobsrc_missed(const struct kx_jobsrc *j);
/* The block programs' open requests (struct kx_blk_key -> phase), -1 for
 * NULL: tests plant a request whose completion never came. */
int kx_jobsrc_blkopen_fd(const struct kx_jobsrc *j);
void kx_jobsrc_close(struct kx_jobsrc *j);

/* For kxprof list: which sources this kernel has, without loading anything. */
struct kx_jobsrc_avail {
	char name[24]; /* "block", "gpu_scheduler", ... */
	int present;
	char note[96]; /* tracepoints found, or the first one missing */
};
int kx_jobsrc_probe(struct kx_jobsrc_avail *out, int max);

/* Loads every program of the object, absent tracepoints included (attaches
 * nothing), with maps of its own: proves the GPU programs pass this kernel's
 * verifier in the shape they take when their types are absent. Tests only. */
int kx_jobsrc_verify_all(char *err, size_t len);

#endif /* KX_JOBSRC_H */
