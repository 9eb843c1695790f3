/*
 * The parts of the streamed device timelines (analysis/jobflow.h) and what
 * they share: the records, jobs, keys and wait calls held, the rings' and
 * devices' figures, and each part's entry points. Owned by the jobflow_*.c
 * files; nothing outside them includes it.
 *   jobflow.c        the feed, the end and the lifetime of a struct kx_jobflow
 *   jobflow_kvm.c    KVM exits paired with their KVM_RUN
 *   jobflow_keyed.c  block requests and GPU jobs paired by key
 *   jobflow_keys.c   the closed keys remembered, then forgotten
 *   jobflow_link.c   submit links: a record's look at its task's calls, ring drivers
 *   jobflow_pend.c   GPU jobs of shared fence sources held for their ring's driver
 *                    (past the budget: counted on its fallback device)
 *   jobflow_wait.c   GPU wait calls kept, a job's waiter
 *   jobflow_sweep.c  a job made: counted, held, swept in start order
 *   jobflow_rows.c   the result: rings, devices, job rows
 */
#ifndef KX_JOBFLOW_INT_H
#define KX_JOBFLOW_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobpair.h"
#include "analysis/jobs.h"
#include "analysis/stats.h"
#include "model/event.h"
#include "model/store.h"
#include "util/keymap.h"
#include "util/minheap.h"

struct kx_jobflow;

/* A KVM exit waiting for the call of its thread that holds it. */
struct fl_exit {
	struct kx_job e;
	uint64_t seq;         /* its place among the job records */
	struct kx_ioctl cand; /* the thread's last call entered at or before it so far */
	uint64_t cand_id;     /* that call's id (0: none) */
};

/* A block record's look at the calls of its task (a slot of recs). */
struct fl_probe {
	uint32_t slot, gen;
};

#define FL_RECENT KX_JOBFLOW_RECENT

struct fl_thread {
	uint64_t ncalls;      /* its calls fed (streamed: a call's id is its number) */
	struct kx_ioctl last; /* its last call (streamed: at one start the longest) */
	uint64_t last_id;     /* that call's id (0: none yet) */
	/* Its last FL_RECENT calls (last among them), oldest at rhead once full:
	 * a keyed record that comes after a later call finds its candidate. */
	struct kx_ioctl recent[FL_RECENT];
	uint64_t recent_id[FL_RECENT];
	uint32_t nrecent, rhead;
	uint64_t used_id;     /* the KVM_RUN its last job was made of (0: none) */
	uint64_t resolved_ts; /* ns, the latest of its KVM exits resolved */
	/* Its exits waiting, in the builder's order (time, then file order):
	 * open[ohead, nopen). Those before ofrozen began before its last call
	 * (their cand final) and wait KX_JOBFLOW_EXIT_WAIT_NS after a later
	 * call, so one written late is still paired in order; the others'
	 * candidate is its last call (read as they are frozen). */
	struct fl_exit *open;
	size_t ohead, ofrozen, nopen, cap;
	struct fl_probe *probes; /* its block records still looking at its calls */
	size_t nprobes, pcap;
	uint64_t forced_at; /* ns, the latest such record paired before a later call came */
};

/* A block record waiting for earlier ones, with its submit link's candidate. */
struct fl_rec {
	struct kx_job e;
	uint64_t seq;         /* its place among the job records */
	struct kx_ioctl cand; /* its task's last call entered at or before it so far */
	uint64_t cand_id;     /* that call's id (0: none) */
	uint32_t gen;
	uint8_t looking; /* its task's calls may still change cand */
};

/* Where a block record waits: its order, its slot. */
struct fl_recref {
	uint64_t ts, seq;
	uint32_t slot, gen;
};

/* An open block request. */
struct fl_kjob {
	struct kx_tjob t;
	uint64_t ts, seq; /* the record that opened it */
	uint32_t gen;
	uint8_t submit_drv; /* its submitting call's driver (0: none) */
	uint8_t pending;    /* counted but held for its ring's driver (jobflow_pend.c) */
};

/* An open request's place in the sweeps' order, at the earliest. */
struct fl_openref {
	uint64_t start, ts, seq;
	uint32_t slot, gen;
};

/* A closed key, remembered or forgotten. */
struct kx_jobflow_key {
	uint64_t k[3];
	uint64_t done;      /* ns, its DONE (remembered keys) */
	uint32_t slot, gen; /* its job still held in f->open (GPU), else NO_SLOT */
	uint8_t reusable;   /* its source reuses keys (kx_jobpair_reusable) */
	uint8_t used;       /* a forgotten key is in this table slot */
	uint8_t lost;       /* a forgotten key was put over another here */
};

/* A shared fence source's ring: the driver it learnt from its first linked
 * job, and its jobs held until then (slots of f->open, in the order counted). */
struct kx_jobflow_ringdrv {
	uint64_t ts, seq; /* that job's record (the builder's order) */
	uint8_t drv;
	uint8_t learnt;  /* a linked job of it was counted */
	uint8_t src;     /* its source (KX_JOB_SRC_*) */
	uint8_t counted; /* past the budget: its unlinked jobs counted on the fallback device */
	uint8_t checked; /* counted so, and its driver final: the same device */
	uint32_t *pend;  /* its jobs waiting for drv */
	size_t npend, pcap;
};

/* A GPU driver's wait call that may hold a DONE to come. */
struct kx_jobflow_wait {
	uint64_t ts, end, id; /* ns; its place among the calls */
	uint32_t pid, tid;
	uint8_t drv;
};

/* The bounds the reasons below state (their text says them). */
_Static_assert(KX_JOBFLOW_WINDOW_NS == 1000000000ull && KX_JOBFLOW_RECS == 16384 &&
                       KX_JOBFLOW_HELD == 16384 && KX_JOBFLOW_BEHIND == 32768 &&
                       KX_JOBFLOW_WAITS == 65536 && KX_JOBFLOW_EXIT_WAIT_NS == 50000000ull &&
                       KX_JOBFLOW_EXITS == 65536 && KX_JOBFLOW_RECENT == 8,
               "the reasons' text states the window (1 s), the exits' wait (50 ms) and counts "
               "(8, 16384, 32768, 65536)");
/* How long a thread's calls wait in the reorder stage in front (jobflow.h's calls_upto). */
#define CALLS_HELD                                                                                 \
	"(its thread's calls wait in their reorder stage until a later one of it comes, or until " \
	"a job record the streamed read's window behind, 1 s or 16384 records, is paired)"
#define KVM_LATE                                                                                   \
	"a KVM exit came after a later exit of its thread was paired (once a call of its thread "  \
	"begins 50 ms after an exit, or when more than 65536 exits wait), or after its thread's "  \
	"last 8 calls, all begun after it, had gone to the device timelines " CALLS_HELD
#define REC_LATE                                                                                   \
	"a job record came after its task's last 8 calls, all begun after it, had gone to the "    \
	"device timelines " CALLS_HELD
#define KEYED_LATE                                                                                 \
	"a device job started before jobs already counted in start order (it stayed open, or "     \
	"within the window after its DONE, longer than the streamed read's window of 1 s)"
#define PEND_BUDGET                                                                                \
	"GPU jobs of a shared fence source waited for the first linked job of their ring (it "     \
	"gives their device) past the streamed read's memory budget (16384 jobs held or 65536 "    \
	"wait calls kept), were counted on the fallback device, and the ring then linked to "      \
	"another device"

/* The end of a job taken as never done before the capture's end is known
 * (jf_keyed_unblock): its lane and busy interval reach the end (read as
 * f->end_ns once that is known, which is at or after every record then). */
#define FL_TO_END UINT64_MAX

#define NO_SLOT    UINT32_MAX
#define KEY_CLOSED UINT64_MAX /* f->keys: the key's job is closed and counted */
/* f->keys: the reused key's job was taken as never done (jf_keyed_unblock):
 * any event on it is a reason */
#define KEY_PRESUMED (UINT64_MAX - 1)
#define PRESUMED_EVENT                                                                             \
	"an event came on the key of a device job taken as never done (open while more than "      \
	"32768 later jobs completed: its DONE, or a block sector used again)"

/* A made job waiting for its turn in start order. */
struct fl_job {
	uint64_t start, end; /* ns, as drawn (kx_jobrec_start, kx_jobrec_end) */
	uint64_t in;         /* ns, when it came in flight (queue, else run), 0: never */
	uint64_t ts, seq; /* the record that made it: its time, its place (the builder's order) */
	uint32_t ring;    /* index in f->rings */
	uint32_t sunk;    /* the sink's id of it (f->sink) */
	uint8_t busy;     /* it has a busy interval ([start, end]) */
	uint8_t done;
};

/* The union of intervals fed in start order: the closed ones' length and the open one. */
struct fl_union {
	uint64_t total, a, e; /* ns */
	int any;
};

struct kx_jobflow_ring {
	char name[32];
	uint32_t dev; /* index in f->devs before the final order */
	uint64_t njobs, completed, linked, waited;
	uint32_t nlanes;
	uint32_t final;         /* its index in the result's rings (jobflow_rows.c) */
	struct kx_minheap ends; /* its lanes' last jobs swept that may still overlap (fl_lane) */
	struct kx_minheap free; /* lanes free again (uint32_t) */
	struct fl_union busy;
	struct kx_stat_row exec, queue; /* DONE - start; RUN - QUEUE (none for KVM) */
};

struct kx_jobflow_dev {
	uint64_t njobs, completed, incomplete, no_queue, linked;
	struct fl_union busy;
	struct kx_minheap outs; /* ns, the DONE times of its jobs in flight */
	uint64_t open;          /* jobs in flight that never complete */
	uint64_t cur;           /* ns, the in time being swept */
	int any;
	uint32_t max_depth;
};

/* A lane's last job swept: its end. */
struct fl_lane {
	uint64_t end; /* ns */
	uint32_t lane;
};

/* jobflow.c */
/* Is ts more than f's window before ref (ts + window < ref)? */
int jf_out_of_window(const struct kx_jobflow *f, uint64_t ts, uint64_t ref);
/* How a job names call e (its id): streamed, its number among its thread's
 * calls (the id); a whole store's: its index. */
int64_t jf_call_ref(const struct kx_jobflow *f, const struct kx_ioctl *e, uint64_t id);
/* The last of t's recent calls begun at or before ts (at one start the
 * longest, as the feed keeps t->last), in *e and *id: 1, or 0 when none
 * of them is (it may have been earlier: not known). */
int jf_recent_find(const struct fl_thread *t, uint64_t ts, struct kx_ioctl *e, uint64_t *id);
/* f's figures cannot be exact: why (the first reason kept). */
void jf_because(struct kx_jobflow *f, const char *why);

/* jobflow_sweep.c */
/* The sweeps' part of f made empty; freed. */
void jf_sweep_init(struct kx_jobflow *f);
void jf_sweep_free(struct kx_jobflow *f);
/* The union's length, an interval to the end (FL_TO_END) ending at end_ns. */
uint64_t jf_union_len(const struct fl_union *u, uint64_t end_ns);
void jf_depth_note(struct kx_jobflow_dev *d);
int jf_release(struct kx_jobflow *f, int all);
int jf_job_out(struct kx_jobflow *f, struct kx_tjob *t, uint64_t ts, uint64_t seq, uint64_t end_ns,
               unsigned int submit_drv, unsigned int ring_drv, const char *late);

/* jobflow_kvm.c */
int jf_kvm_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e);
int jf_kvm_exit(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq);
int jf_close_exits(struct kx_jobflow *f);

/* jobflow_keyed.c */
/* The keyed part of f (records, open jobs, keys, ring drivers) made empty; freed. */
void jf_keyed_init(struct kx_jobflow *f);
void jf_keyed_free(struct kx_jobflow *f);
int jf_keyed_out(struct kx_jobflow *f, size_t slot, uint64_t end_ns);
/* The records whose turn has come, and every one of time below upto
 * (UINT64_MAX: all, at the end; 0: none but those). */
int jf_recs_release(struct kx_jobflow *f, uint64_t upto);
int jf_keyed_rec(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq);
int jf_keyed_end(struct kx_jobflow *f, uint64_t end_ns);
int jf_keyed_unblock(struct kx_jobflow *f, size_t slot);

/* jobflow_keys.c */
int jf_forgotten(const struct kx_jobflow *f, const uint64_t k[3], int reusable);
int jf_remember(struct kx_jobflow *f, const uint64_t k[3], uint64_t done, uint32_t slot,
                uint32_t gen, int reusable);
int jf_forget_old(struct kx_jobflow *f);
int jf_pass_key(struct kx_jobflow *f, const uint64_t k[3]);

/* jobflow_link.c */
void jf_probe_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e,
                   uint64_t id);
void jf_probe_add(struct fl_thread *t, struct fl_rec *r, uint32_t slot);
int jf_probe_room(struct kx_jobflow *f, struct fl_thread *t);
int jf_ring_driver(struct kx_jobflow *f, const struct fl_kjob *j, unsigned int *drv);
int jf_ring_known(struct kx_jobflow *f, const struct kx_jobflow_ringdrv *e);
struct kx_jobflow_ringdrv *jf_ring_entry(struct kx_jobflow *f, unsigned int src, const char *ring,
                                         int add);

/* jobflow_pend.c */
int jf_pend_add(struct kx_jobflow *f, size_t slot);
int jf_pend_spill(struct kx_jobflow *f);
int jf_pend_check(struct kx_jobflow *f, int end);
int jf_pend_retry(struct kx_jobflow *f);
int jf_pend_flush(struct kx_jobflow *f);
void jf_pend_low(const struct kx_jobflow *f, uint64_t *low);
void jf_pend_free(struct kx_jobflow *f);

/* jobflow_wait.c */
int jf_wait_call(struct kx_jobflow *f, const struct kx_ioctl *e, uint64_t id);
void jf_find_waiter(struct kx_jobflow *f, struct kx_tjob *t, const struct kx_jobdev *d);

/* jobflow_rows.c */
/* The devices, rings, figures and rows of o once every job is swept. 0, or
 * -1 when out of memory. */
int jf_result(struct kx_jobflow *f, struct kx_jobs *o, const struct kx_store *mem,
              struct kx_stats *rows);

#endif /* KX_JOBFLOW_INT_H */
