/*
 * Device jobs of a capture written in time windows (analysis/windows.h),
 * filed by window as the streamed timelines (analysis/jobflow.h) count
 * them, so that a window's part can be drawn without the whole capture's
 * jobs table (analysis/jobs.h). A struct kx_jobflow_sink (sink, handed to
 * the flow) puts each job, once swept (its lane known), under the window
 * its start falls in, with its place in the whole capture's table
 * (kx_jobs.jobs: its ring's first there plus its rank in the ring's sweep
 * order, which is the order kx_jobs_build gives a ring's jobs; flow rings
 * may share a table ring), its
 * table ring and device; and each device's in-flight changes (a job comes
 * in at its QUEUE, else its RUN, and leaves at its DONE; a job with
 * neither QUEUE nor RUN counts in none) under the window of their times.
 * A window taken (kx_wjobs_take) gives, in table order, exactly the jobs
 * of the whole table that start in it, and each device's depth points
 * (kx_jobdev.depth) that fall in it.
 *
 * The table's ring order comes from a first run of the same feed
 * (kx_wjobs_rings, after its kx_jobflow_finish): the flow numbers its
 * rings as they come, the same in every run of the same feed, and that
 * run gives each ring's jobs and the devices.
 *
 * Windows are taken in order, each once every job starting in it has been
 * swept and every change falling in it is in (the caller's rule; a job or
 * change that comes for a window taken is counted in lost). The flow
 * sweeps in start order, so once it has swept a job starting at or after
 * a window's end (kx_jobflow.swept_start) every job of the window is in;
 * a DONE falls at or after its job's start, but a QUEUE before it: for
 * jobs without one (KVM) that is the rule, for the others a QUEUE earlier
 * than the window's end must be swept too.
 * Memory: the jobs and changes of the windows not taken yet (192 bytes a
 * job, its submitting call's copy included; 16 a change), the jobs counted but not swept yet
 * (kx_jobflow keeps those few), and 24 bytes a ring.
 */
#ifndef KX_WJOBS_H
#define KX_WJOBS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobflow.h"
#include "analysis/jobs.h"
#include "analysis/windows.h"
#include "util/slots.h"

/* A job of a window: as in the whole table, and its place there. */
struct kx_wjobs_job {
	struct kx_jobrec r;   /* ring, dev: the table's; submit, wait: as the flow links them */
	uint64_t index;       /* in kx_jobs.jobs of the whole capture */
	struct kx_ioctl call; /* its submitting call, as kx_wjobs.call copied it (r.submit >= 0
	                         and call set; else zero) */
};

/* A copy of the submitting call idx (a job's r.submit) as drawn, in *out,
 * when the job is counted (its call may be gone by the time its window is
 * taken). 0, or -1 when it is not found. */
typedef int (*kx_wjobs_call_fn)(void *ctx, uint64_t idx, struct kx_ioctl *out);

/* A device's in-flight change. */
struct kx_wjobs_tick {
	uint64_t ts;   /* ns, the QUEUE (else RUN) or DONE */
	uint32_t dev;  /* the table's device */
	int32_t delta; /* +1 in, -1 out */
};

struct kx_wjobs_win {
	struct kx_wjobs_job *jobs; /* as swept */
	size_t n, cap;
	struct kx_wjobs_tick *ticks;
	size_t nticks, tcap;
};

struct kx_wjobs {
	struct kx_jobflow_sink sink;   /* give it to the flow (kx_jobflow_init_whole) */
	const struct kx_window *win;   /* the windows, in time order (borrowed) */
	size_t nwin, taken;            /* windows; taken so far */
	struct kx_wjobs_win *w;        /* per window, its jobs and changes until taken */
	uint32_t *ring_final;          /* per flow ring: its table ring */
	uint64_t *ring_next;           /* per table ring: the table index of its next job swept */
	uint32_t *ring_dev;            /* per table ring: its device */
	size_t nrings, ntrings, ndevs; /* flow rings, table rings, devices */
	uint32_t *depth;               /* per device: jobs in flight before the next window */
	struct kx_slots wait;          /* jobs counted, waiting for their lane (kx_wjobs_job) */
	kx_wjobs_call_fn call;         /* set by the caller (NULL: no copies) */
	void *call_ctx;
	size_t hint;   /* the window of the latest job or change */
	uint64_t lost; /* jobs or changes of a window already taken (none expected) */
};

/* w for the nwin windows win (borrowed). 0, or -1 when out of memory. */
int kx_wjobs_init(struct kx_wjobs *w, const struct kx_window *win, size_t nwin);

/* The ring order of the whole table, from a first run f of the same feed,
 * finished (o: its kx_jobflow_finish). 0, or -1 when out of memory. */
int kx_wjobs_rings(struct kx_wjobs *w, const struct kx_jobflow *f, const struct kx_jobs *o);

/* What a window gives: its jobs in table order, and each device's depth
 * points in it (depth[d][0 .. ndepth[d])). Owned by the caller. */
struct kx_wjobs_part {
	struct kx_wjobs_job *jobs;
	size_t njobs;
	struct kx_depth_pt **depth;
	size_t *ndepth;
	size_t ndevs;
};

/* The next window's (w->taken, then counted). 0, or -1 when out of memory
 * or every window is taken. */
int kx_wjobs_take(struct kx_wjobs *w, struct kx_wjobs_part *out);
void kx_wjobs_part_free(struct kx_wjobs_part *p);
void kx_wjobs_free(struct kx_wjobs *w);

#endif /* KX_WJOBS_H */
