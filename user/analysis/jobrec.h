/*
 * The records of device timelines (the rules that make them: analysis/jobs.h
 * and analysis/jobpair.h): a job with its phases, its ring and device,
 * nearest-rank distributions, depth and memory points, the anomaly
 * counters, where a job starts and ends as drawn, and what it timed (exec,
 * queue delay). Types, plus those functions, so that the pairing rules,
 * the builders, the live views and the exporters share them without
 * including each other.
 */
#ifndef KX_JOBREC_H
#define KX_JOBREC_H

#include <stddef.h>
#include <stdint.h>

/* A GPU job is linked to an ioctl of its thread that returned at most this
 * long before it was queued (ns; analysis/jobs.h states the rule). */
#define KX_JOBS_LINK_WINDOW_NS 1000000ull

/* struct kx_jobrec flags */
#define KX_JOBF_NO_QUEUE   0x01 /* anomaly no_queue */
#define KX_JOBF_INCOMPLETE 0x02 /* anomaly incomplete */
#define KX_JOBF_DIRECT     0x04 /* block request issued directly: queue delay 0 */
#define KX_JOBF_UNLINKED   0x08 /* anomaly unlinked */
#define KX_JOBF_WAIT_PHASE 0x10 /* waiter found from a wait phase, not a wait ioctl */

struct kx_jobrec {
	uint64_t queue_ts; /* CLOCK_MONOTONIC ns, 0 when the phase was not seen */
	uint64_t run_ts;
	uint64_t done_ts;
	uint64_t ctx, seqno; /* key as recorded */
	uint64_t client;     /* gpu_scheduler client id (drm-client-id), else 0 */
	uint64_t aux, aux2;  /* latest non-zero of the job's source (struct kx_job) */
	uint32_t pid, tid;   /* submitter: the QUEUE's task, the KVM_RUN caller; 0 */
	uint32_t waiter_tid; /* 0: none found */
	int64_t submit;      /* store index of the submitting ioctl (streamed, analysis/jobflow.h:
	                        its start, ns), -1: none */
	int64_t wait;        /* store index of the waiting ioctl, -1 */
	uint16_t src;        /* enum kx_job_src that names the job */
	uint16_t flags;      /* KX_JOBF_* */
	uint32_t dev;        /* index in kx_jobs.devs */
	uint32_t ring;       /* index in kx_jobs.rings */
	uint32_t lane;       /* 0..ring nlanes-1 */
};

/* Start and end of a job as drawn: exec from RUN (or QUEUE) to DONE; an
 * incomplete job ends at the capture end; a DONE-only job is an instant. */
uint64_t kx_jobrec_start(const struct kx_jobrec *j);
uint64_t kx_jobrec_end(const struct kx_jobrec *j, uint64_t end_ns);

/* Exec time of a finished job (ns): DONE - RUN, or DONE - QUEUE where the
 * source has no RUN. 1 with *ns, or 0 when it timed none (unfinished, or
 * DONE only). */
int kx_jobrec_exec(const struct kx_jobrec *j, uint64_t *ns);

/* Queue delay of a job that ran (ns): RUN - QUEUE; a block request issued
 * directly (a RUN, no QUEUE: KX_JOBF_DIRECT) waited 0; a KVM job starts
 * running at KVM_RUN entry and has none. 1 with *ns, or 0 when it has none.
 * clamp_race: a RUN stamped before its QUEUE (events of two CPUs read as
 * they come, as live/ does) waited 0; without it (offline, from a capture)
 * the difference is taken as recorded. */
int kx_jobrec_queue_delay(const struct kx_jobrec *j, int clamp_race, uint64_t *ns);

/* Nearest-rank percentiles, like the ioctl summary. */
struct kx_dist {
	uint64_t count, total, min, max, p50, p90, p99;
};

struct kx_jobring {
	char name[32];
	uint32_t dev; /* index in kx_jobs.devs */
	uint32_t id;  /* index of the ring in its device: line/track id */
	uint32_t nlanes;
	size_t first, njobs; /* kx_jobs.jobs[first .. first + njobs), by start time */
	uint64_t completed, linked, waited;
	struct kx_dist exec;  /* DONE - (RUN or QUEUE) */
	struct kx_dist queue; /* RUN - QUEUE; direct block requests count 0 */
	uint64_t busy_ns;     /* union of [start, end] in the capture */
};

struct kx_depth_pt {
	uint64_t ts;
	uint32_t depth;
};

struct kx_mem_pt {
	uint64_t ts;    /* ioctl return */
	int64_t delta;  /* bytes: > 0 allocation, < 0 free */
	uint64_t usage; /* after this event */
	size_t ioctl;   /* store index */
};

struct kx_jobdev {
	char name[48];   /* "amdgpu", "vda", "kvm": summary category jobs/<name> */
	char label[112]; /* "amdgpu /dev/dri/renderD128" */
	uint8_t drv;     /* enum kx_driver, KX_DRV_UNKNOWN when not known */
	uint16_t src;    /* enum kx_job_src of a device named after a source */
	uint32_t dev;    /* block: disk dev_t; else 0 */
	int ci_index;    /* capinfo devices[] entry, -1 */
	uint32_t first_ring, nrings;
	uint64_t njobs, completed, incomplete, no_queue, linked;
	uint64_t busy_ns;
	double busy_fraction; /* busy_ns / capture span */
	uint32_t max_depth;
	struct kx_depth_pt *depth; /* in-flight jobs after each change */
	size_t ndepth;
	struct kx_mem_pt *mem; /* memory usage after each event */
	size_t nmem;
	uint64_t mem_allocs, mem_frees, mem_unknown_frees;
	uint64_t mem_max, mem_min; /* bytes: extremes of the usage after each event */
	double mem_avg;
	uint64_t mem_usage; /* bytes in use after the last event */
	double mem_sum;     /* bytes: the usage after each event, summed (for mem_avg) */
};

struct kx_jobs_anomalies {
	uint64_t incomplete, no_queue, duplicate, out_of_order, unlinked;
	uint64_t runs_without_exit, unknown;
};

#endif /* KX_JOBREC_H */
