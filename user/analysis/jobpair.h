/*
 * The rules of device timelines (stated in analysis/jobs.h), apart from the
 * analysis of a whole store (analysis/jobsink.c), so that any reader that feeds
 * the events in order gives the same jobs (the engine's feed,
 * analysis/engine.c, uses the memory accounting; the streamed timelines, analysis/jobflow.c, the
 * KVM, pairing, submit link, waiter, anomaly, device and busy rules; the live aggregates of top and
 * serve, live/jobagg.c, the pairing, KVM and busy rules): what one phase does to the job its key
 * holds, which event names a job's submitter, KVM jobs from their KVM_RUN,
 * the submit-link test, the anomaly flags, which device a job or a memory event
 * belongs to (with the devices' names and order), wait ioctls and the
 * waiter preference, and memory accounting from decoded ioctl arguments.
 * Owns no loop over events: the callers feed events in timestamp order.
 */
#ifndef KX_JOBPAIR_H
#define KX_JOBPAIR_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobrec.h"
#include "analysis/nvmem.h"
#include "model/capinfo.h"
#include "model/event.h"
#include "registry/drivers.h"
#include "util/keymap.h"

/* A job while pairing. */
struct kx_tjob {
	struct kx_jobrec r;
	char ring[32]; /* the event's (16 bytes) or a made-up "ctx 0x..." */
	uint32_t blkdev;
	uint8_t psrc[4]; /* source that set QUEUE, RUN, DONE (index = phase) */
	uint8_t maxrank, closed, prio, ringprio;
};

/* What a job event is for pairing. */
enum kx_jev {
	KX_JEV_KVM = 1, /* a KVM exit: DONE makes a job of the KVM_RUN around it */
	KX_JEV_UNKNOWN, /* unknown source or phase: counted, skipped */
	KX_JEV_WAIT,    /* WAIT_BEGIN/END: names the waiter of its key's job */
	KX_JEV_DEP,     /* dependencies: not a lifecycle step */
	KX_JEV_PHASE,   /* QUEUE, RUN, DONE of a keyed source */
};
enum kx_jev kx_jobpair_kind(const struct kx_job *e);

/* The pairing key of a keyed event (its namespace first). */
void kx_jobpair_key(const struct kx_job *e, uint64_t k[3]);

/* A fresh job (no phase yet). */
void kx_tjob_init(struct kx_tjob *t);
/* Phase event e of a keyed source on the job t its key holds (NULL when
 * none): applied, or counted in an as a duplicate or out of order. Returns
 * 1 when e starts a new job instead (the caller makes one and calls
 * kx_tjob_first), else 0. */
int kx_jobpair_phase(struct kx_tjob *t, const struct kx_job *e, struct kx_jobs_anomalies *an);
/* Are e's keys reused (block sectors, the old gpu_scheduler's fence
 * pointers): a QUEUE/RUN after DONE opens a new job? */
int kx_jobpair_reusable(const struct kx_job *e);
/* The first phase of a new job. */
void kx_tjob_first(struct kx_tjob *t, const struct kx_job *e);
/* A wait phase names t's waiter unless one is known. */
void kx_tjob_wait(struct kx_tjob *t, const struct kx_job *e);

/* Does job event e name its job's submitter (e->tid)? A QUEUE does, and a
 * block request's RUN (issued directly, in its task) when no QUEUE did. */
int kx_job_names_submitter(const struct kx_job *e);

/* Is io a KVM_RUN (a KVM job's call)? */
int kx_kvm_run(const struct kx_ioctl *io);
/* The vCPU thread of a KVM exit. */
uint32_t kx_kvm_tid(const struct kx_job *e);
/* Is io a KVM_RUN still running at at (the exit's time)? */
int kx_kvm_run_holds(const struct kx_ioctl *io, uint64_t at);
/* The job of KVM exit e (DONE): inside the KVM_RUN io (store index idx),
 * or NULL when it is in none. */
void kx_tjob_kvm(struct kx_tjob *t, const struct kx_job *e, const struct kx_ioctl *io, int64_t idx);

/* When and on which thread t's submitting ioctl is looked for; 0 when it is not. */
uint64_t kx_tjob_link_at(const struct kx_tjob *t);
/* Is io (the thread's last ioctl entered at or before kx_tjob_link_at) the
 * submitter of t? */
int kx_tjob_links_to(const struct kx_tjob *t, const struct kx_ioctl *io);
/* No submitter found: flags t unlinked where that is news (GPU sources). */
void kx_tjob_no_link(struct kx_tjob *t);
/* The anomaly flags of a job once its phases are all in (incomplete,
 * direct, no_queue); counts them in an (unlinked too). */
void kx_tjob_classify(struct kx_tjob *t, struct kx_jobs_anomalies *an);

int kx_job_src_gpu(unsigned int src);             /* not block, not kvm */
int kx_drv_gpu(unsigned int drv);                 /* DRM, accel and KFD drivers */
unsigned int kx_job_src_driver(unsigned int src); /* the driver of a per-driver source */

/* ---- devices ---- */

enum { KX_DK_CI, KX_DK_DRV, KX_DK_BLK, KX_DK_SRC };
struct kx_devkey {
	int kind; /* KX_DK_* */
	uint64_t val;
};

/* The job devices of a capture, found as jobs and memory events come. */
struct kx_jobdevtab {
	const struct kx_capinfo *ci; /* may be NULL */
	struct kx_jobdev *devs;
	struct kx_devkey *keys; /* parallel to devs */
	size_t n, cap;
};

/* Index of the device with this key, added when new; -1 on OOM. */
long kx_jobdevtab_get(struct kx_jobdevtab *t, int kind, uint64_t val, const char *ring);
/* The device of a driver: its traced device when there is one. */
long kx_jobdevtab_for_drv(struct kx_jobdevtab *t, unsigned int drv);
/* The device of an ioctl's memory: its own node, else its driver's device. */
long kx_jobdevtab_mem(struct kx_jobdevtab *t, const struct kx_ioctl *e);
/* The device of job t: block by disk, else by driver: the source's own, the
 * submitting ioctl's (submit_drv, 0: none), the one its ring learnt from
 * linked jobs (ring_drv, 0: none), the only GPU driver traced, else a device
 * named after the source. */
long kx_jobdevtab_assign(struct kx_jobdevtab *t, const struct kx_tjob *j, unsigned int submit_drv,
                         unsigned int ring_drv);
/* A block ring the events did not name: the disk's name from the registry
 * ("vda"; before the device is assigned: it names a disk's device). */
void kx_tjob_ring_name(struct kx_tjob *t);
/* Any ring still without a name: the disk as MAJ:MIN, else "ctx N". */
void kx_tjob_ring_fallback(struct kx_tjob *t);
/* Devices in their final order (traced devices first in capture order, then
 * by name): newidx[old] = new; devs are reordered. -1 when out of memory. */
int kx_jobdevtab_order(struct kx_jobdevtab *t, uint32_t *newidx);
/* Device names are summary categories: a name several devices share, each
 * with a device node, gets each one's node ("nvidia (nvidia0)", "nvidia
 * (nvidiactl)"); one still repeated (a device without a node among them, or
 * the same node) gets " #i". */
void kx_jobdevs_unique_names(struct kx_jobdev *devs, size_t n);
void kx_jobdevtab_free(struct kx_jobdevtab *t); /* keys only: devs go to the result */

/* A busy interval of a job (running, or queued where the source has no RUN,
 * until done or end_ns): 1 and [*a, *b], or 0 when it has none. */
int kx_jobrec_busy(const struct kx_jobrec *j, uint64_t end_ns, uint64_t *a, uint64_t *b);

/* ---- waits ---- */

/* Is e a wait ioctl (its name holds WAIT, not VBLANK)? Names are cached in
 * names. 0 with *wait set, or -1 when out of memory. */
int kx_wait_ioctl(struct kx_keymap *names, const struct kx_ioctl *e, int *wait);
/* May wait ioctl e (of a GPU driver) be the waiter of a job of device d? */
int kx_waiter_fits(const struct kx_jobdev *d, const struct kx_ioctl *e);
/* A candidate waiter: the ioctl's pid, end and store index. */
struct kx_waitcand {
	uint32_t pid;
	uint64_t end;
	uint64_t idx;
};
/* Is a a better waiter than b for a job of pid (the submitter's process
 * first, then the earliest return, then the earliest recorded)? */
int kx_waiter_better(const struct kx_waitcand *a, const struct kx_waitcand *b, uint32_t pid);

/* ---- memory ---- */

/* What memory accounting holds between events: allocations by handle,
 * KVM memory slots by (vm fd, slot). */
struct kx_memacct {
	struct kx_keymap handles, slots;
	/* NVIDIA: bytes per region (analysis/nvmem.h) of the last KX_MEM_DELTA,
	 * all 0 for other drivers. */
	int64_t nv[KX_NVMEM_NREG];
};
#define KX_MEMACCT_INIT                                                                            \
	{                                                                                          \
		KX_KEYMAP_INIT, KX_KEYMAP_INIT,                                                    \
		{                                                                                  \
			0                                                                          \
		}                                                                                  \
	}

enum { KX_MEM_NONE, KX_MEM_DELTA, KX_MEM_UNKNOWN_FREE };
/* Successful ioctl e with argument bytes arg (events in return order):
 * KX_MEM_DELTA with *delta (bytes, < 0 a free), KX_MEM_UNKNOWN_FREE (a
 * free of something allocated before the capture), KX_MEM_NONE, or -1
 * when out of memory. */
int kx_memacct_step(struct kx_memacct *m, const struct kx_ioctl *e, const uint8_t *arg,
                    int64_t *delta);
/* Applies a memory event to its device: usage after it (never below 0),
 * allocations or frees, extremes and the running sum. */
uint64_t kx_jobdev_mem_apply(struct kx_jobdev *d, int64_t delta);
/* The average usage once every event is in. */
void kx_jobdev_mem_finish(struct kx_jobdev *d);
void kx_memacct_free(struct kx_memacct *m);

#endif /* KX_JOBPAIR_H */
