/*
 * Device timelines of a record file read as a stream (analysis/sreport.h):
 * KVM jobs, block requests and GPU jobs (of every source, the shared
 * fence sources too) paired, counted and folded into
 * their rows as the records pass, then forgotten, so memory does not grow
 * with the jobs. By the rules of analysis/jobs.h (analysis/jobpair.h's
 * KVM, pairing, submit link, waiter, anomaly and device rules), exactly
 * the figures the in-memory analysis (kx_jobs_build) gives of the
 * report's device timelines: per ring jobs, completed, linked, waited,
 * lanes, busy time and the exec and queue distributions (stat rows
 * "<ring> exec", "<ring> queue delay" under jobs/<device>: exact
 * percentiles while a row holds at most KX_JOBFLOW_EXACT values, else the
 * streamed rows' log-linear histogram, within 1/256); per device jobs,
 * completed, incomplete, no_queue, linked, busy time and fraction, and the
 * most jobs in flight; the anomalies; and the memory rows (kx_jobs_memory
 * over the calls memory accounting counts, which the caller keeps).
 *
 * How. A KVM exit (DONE) waits on its vCPU thread until a call of that
 * thread that started after it comes (or the end): the thread's last call
 * entered at or before the exit is then known, and the job is made when it
 * is a KVM_RUN that holds the exit (a second exit inside one KVM_RUN is a
 * duplicate), else the exit is a job of no KVM_RUN. A thread's exits wait
 * in time order (the builder's: the first inside a KVM_RUN makes its job),
 * streamed until a call of their thread begins KX_JOBFLOW_EXIT_WAIT_NS
 * after them; one that comes after a later call of its thread waits with
 * them (a whole store's: resolved at once), its candidate the last of the
 * thread's 8 recent calls (FL_RECENT) begun at or before it (at one start
 * the longest), unless a later exit of the thread was resolved (then a
 * reason). They are kept in that order as they come (from the back, a
 * short walk back for a late one), so a call looks only at the front while
 * it is old enough: O(1) amortized per call and per exit. Past
 * KX_JOBFLOW_EXITS waiting, those waiting for the 50 ms are resolved at
 * once; still past it, a reason.
 * The thread's calls must come in start order: streamed, a reorder stage
 * in front (analysis/sreport.c: the engine's, analysis/engine.h; the
 * nesting stage's until the first job record, then one of their own that
 * takes the calls waiting there, kx_engine_hand_calls) gives them so, a
 * call that holds others (written at its return, after them) put back
 * before them, and lets every call begun at or before a keyed record out
 * before the record is paired (calls_upto). Made jobs wait in a heap by start
 * (KX_JOBFLOW_WINDOW_NS behind the latest time seen, at most
 * KX_JOBFLOW_HELD of them), then pass in start order through the sweeps
 * that need it: lanes (heaps of the ring's lanes by their last job's end
 * and of those free: a job takes the first free), busy time (the union of
 * intervals in start order) and the most in flight (a heap of the device's
 * ends). Memory: the jobs held (56 bytes each), the open exits, a
 * thread's last call (88 bytes), and per ring its rows. Behind a job not
 * counted yet (open, or a GPU job closed until its key is forgotten: up to
 * KX_JOBFLOW_CLOSED closes after its DONE) up to KX_JOBFLOW_BEHIND wait:
 * one done late (100 ms and more after its submit, as GPU jobs are) holds
 * the sweeps over those closes and the jobs done meanwhile. Past that, the
 * job holding them (jf_keyed_unblock) is counted then (a shared fence
 * source's job whose ring has learnt no driver yet then waits for it, as
 * any counted one does): a GPU job closed, before its key is forgotten
 * (the key stays remembered as counted); a block request or GPU job never
 * done so far, as never done (incomplete, its lane and busy time to the
 * capture's end), a unique key forgotten, a reused one (a block sector, an
 * old gpu_scheduler fence pointer) kept as taken (at most KX_JOBFLOW_OPEN).
 * An event of it on a unique key, or any on a key kept as taken, that
 * comes later is then a reason, and so is a wait call that may have been
 * its waiter, or a capture whose stated end comes before its last records
 * (a job taken as never done ends there).
 *
 * Keyed jobs (block requests, GPU jobs) are paired by jobpair's rules as
 * they pass too. Their records wait in a heap (KX_JOBFLOW_WINDOW_NS behind
 * the latest time, at most KX_JOBFLOW_RECS of them), then are paired in
 * time order, as the builder takes them, through a table of the held
 * jobs' keys. The sweeps pass no job at or after the earliest record
 * waiting: before a job goes (past the window, or past KX_JOBFLOW_HELD
 * held, as KVM jobs beside a disk's few requests are), the records at or
 * before its start are paired, by that budget before their own window. A record that names its
 * submitter looks at its task's calls as it comes: the task's last call entered at or before it is
 * the candidate until a later call of the task comes, or until the record is paired (the task's
 * calls entered at or before it must have come by then); one that comes after a later call of its
 * task takes the last of the task's 8 recent calls (FL_RECENT) begun at or before it. A block
 * request is counted at its DONE; a GPU job is held until its key is forgotten (a later event of
 * another source may still rename it; the wait calls that hold its DONE return meanwhile: its
 * waiter is the best of the GPU wait calls kept, those that may hold a DONE to come); a job never
 * done is counted at the end (incomplete). Counted jobs are held for the sweeps in start order; a
 * sweep waits for the earliest job not counted. A closed key is remembered while it is among the
 * last KX_JOBFLOW_CLOSED closed and closed within KX_JOBFLOW_WINDOW_NS of the latest record paired,
 * then forgotten: a reused key (block sector) into a table of KX_JOBFLOW_GONE keys (a DONE on it is
 * a duplicate), a unique key as the top seqno forgotten of its context. A GPU job of a shared fence
 * source that names no driver (gpu_scheduler, dma_fence) and has no submitting call is on the
 * device of its ring's first linked job: once counted it waits in its open slot (holding the sweeps
 * back) until that job is counted and no linked job made before it is still held, then is counted
 * on its device; at the end a ring that never linked has the fallback device (the only GPU driver
 * traced, else one named after the source), as in kx_jobs_build. Past the budget (more than
 * KX_JOBFLOW_PENDING waiting, KX_JOBFLOW_HELD counted behind one, or KX_JOBFLOW_WAITS wait calls
 * kept for them) the jobs waiting are counted on their ring's fallback device, and that ring's
 * later unlinked jobs at once: exact when the ring never links (a kernel-only ring, such as
 * amdgpu's sdma page-table updates) or its first linked job gives that device (the only GPU
 * traced); checked once the ring's driver is final. Memory: the records waiting (184 bytes each),
 * the jobs held or waiting (160 bytes), the keys remembered, the wait calls kept and the rings, not
 * the jobs.
 *
 * why says when that cannot be exact, and the report reads the file into
 * memory instead (each a bound: the window, KX_JOBFLOW_WINDOW_NS or a count, or the calls'
 * reorder stage): a wait phase on a job already counted, a KVM exit after a later exit of its
 * thread was resolved, a KVM exit or a keyed record after its thread's last FL_RECENT calls, all
 * begun after it, had come (left the calls' reorder stage), a job that starts before jobs
 * already swept (later than the heap's window: a long KVM_RUN), an event of a job counted early
 * (past KX_JOBFLOW_BEHIND, above) or on its reused key, more than KX_JOBFLOW_OPEN reused keys kept
 * so, a keyed record earlier than one already paired (out of time order beyond the window or
 * KX_JOBFLOW_RECS records, or paired before it past KX_JOBFLOW_HELD jobs), a call that comes after
 * a later record of its task was paired (the window after it), a wait call that began before the
 * DONE of a GPU job already counted, a DONE inside a wait call dropped before the first GPU record
 * (out of the window, or past KX_JOBFLOW_WAITS kept), a DONE on a reused key that may be a
 * forgotten one, an event on a unique key at or below one forgotten, too many open exits, held jobs
 * or wait calls, or a ring whose jobs were counted on its fallback device past the budget of those
 * waiting for it (a memory budget) whose first linked job gives another.
 */
#ifndef KX_JOBFLOW_H
#define KX_JOBFLOW_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobpair.h"
#include "analysis/stats.h"
#include "model/capinfo.h"
#include "model/event.h"
#include "model/store.h"
#include "util/keymap.h"
#include "util/minheap.h"
#include "util/slots.h"
#include "util/tidtab.h"

#define KX_JOBFLOW_WINDOW_NS 1000000000ull /* ns a made job waits for earlier starts */
#define KX_JOBFLOW_HELD      16384u        /* jobs held at most (then the earliest goes) */
#define KX_JOBFLOW_BEHIND    32768u        /* jobs held behind one not counted at most */
#define KX_JOBFLOW_EXACT     16384u        /* values a row keeps for exact percentiles */
#define KX_JOBFLOW_EXITS     65536u        /* open KVM exits at most */
#define KX_JOBFLOW_RECS      16384u        /* block records waiting for earlier ones at most */
#define KX_JOBFLOW_OPEN      65536u        /* keyed jobs held (open, or GPU jobs closed) at most */
#define KX_JOBFLOW_CLOSED    16384u        /* closed keys remembered (then in the table) */
#define KX_JOBFLOW_GONE      32768u        /* slots of the table of forgotten keys */
#define KX_JOBFLOW_WAITS     65536u        /* GPU wait calls kept at most */
#define KX_JOBFLOW_PENDING                                                                         \
	16384u /* GPU jobs waiting for their ring's driver at most                                 \
	          (then counted on its fallback device) */
/* calls of a thread a record that comes after later ones looks among */
#define KX_JOBFLOW_RECENT 8
/* ns: streamed, a KVM exit is paired once a call of its thread begins this
 * long after it (an exit written later than that after a later exit: a reason) */
#define KX_JOBFLOW_EXIT_WAIT_NS 50000000ull

/* What on_linked says of a job (bits). */
#define KX_JOBFLOW_DEV    1u /* it has device time */
#define KX_JOBFLOW_LINKED 2u /* on_link announced it */

/* The bounds of a struct kx_jobflow (kx_jobflow_init: the constants above;
 * kx_jobflow_init_whole: the same but exact rows and no record waiting;
 * kx_jobflow_unbound: none). */
struct kx_jobflow_lim {
	uint64_t window_ns; /* ns a made job or a record waits for earlier ones */
	size_t held, exact, exits, recs, open, closed, waits, behind; /* as KX_JOBFLOW_* */
};

/* Where a whole store's jobs go (kx_jobflow_init_whole): each job counted,
 * complete but its lane (ring: its ring in the flow, kx_jobflow_ring_final
 * gives its place in the result; dev: its device in f->devs before the
 * final order; submit, wait: store indexes), gets the sink's id in *id;
 * then, in the order they are swept (by start, then as made), each job's
 * lane. 0, or -1 when out of memory. */
struct kx_jobflow_sink {
	int (*job)(void *ctx, const struct kx_jobrec *r, uint32_t *id);
	int (*lane)(void *ctx, uint32_t id, uint32_t lane);
	void *ctx;
};

struct kx_jobs;
struct kx_jobflow_ring;
struct kx_jobflow_dev;
struct kx_jobflow_key;
struct kx_jobflow_wait;
struct kx_jobflow_ringdrv;

struct kx_jobflow {
	const char *why; /* NULL: the figures are exact so far */
	struct kx_jobflow_lim lim;
	/* A whole store's feed (kx_jobflow_init_whole): calls by store index,
	 * everything in time order, jobs handed to sink. */
	int whole;
	int unbounded; /* kx_jobflow_unbound: no bound */
	const struct kx_jobflow_sink *sink;
	struct kx_jobdevtab devs;    /* job devices, as jobs come (memory ones at the end) */
	struct kx_jobflow_dev *fdev; /* per device of devs: its sweeps */
	size_t nfdev;
	struct kx_jobflow_ring *rings; /* per (device, ring name) */
	size_t nrings, rcap;
	struct kx_tidtab threads;                  /* per thread: its last call, its open exits */
	struct kx_minheap held;                    /* made jobs by start, waiting for the sweeps */
	uint64_t swept_start, swept_ts, swept_seq; /* the last job swept (its order) */
	int swept;
	struct kx_jobs_anomalies anom;
	uint64_t now;             /* ns, the latest time seen */
	uint64_t lo, hi;          /* ns, the span of the calls and job records */
	uint64_t calls;           /* calls fed (their ids) */
	uint64_t jobrecs;         /* job records fed (their file order) */
	uint64_t runs, runs_used; /* KVM_RUN calls; those a job was made of */
	uint64_t jobs;            /* jobs made */
	uint64_t exits;           /* KVM exits open now */
	uint64_t exits_frozen;    /* those of them begun before a later call of their thread */
	uint64_t exits_seen;      /* steps over waiting KVM exits (O(calls + exits)) */
	size_t peak_held;         /* the most jobs held at once */
	uint64_t presumed;        /* jobs taken as never done while open (jf_keyed_unblock) */
	uint64_t early;           /* GPU jobs counted before their key was forgotten (the same) */
	size_t presumed_keys;     /* reused keys of those kept (KEY_PRESUMED; at most lim.open) */
	int has_kvm;              /* a KVM job record came */
	/* Block requests: */
	struct kx_slots recs;          /* records waiting in recq (jobflow_int.h's fl_rec) */
	struct kx_minheap recq;        /* their order: time, then file order */
	uint64_t rel_ts;               /* ns, the latest record paired */
	struct kx_keymap keys;         /* pairing key -> open request (slot + 1), or closed */
	struct kx_slots open;          /* the open requests (jobflow_int.h's fl_kjob) */
	struct kx_minheap opens;       /* their order in the sweeps (stale ones skipped) */
	struct kx_jobflow_key *closed; /* closed keys remembered, by DONE time (from chead) */
	size_t nclosed, chead, ccap;
	struct kx_jobflow_key *gone; /* forgotten reused keys (KX_JOBFLOW_GONE), NULL: none */
	struct kx_keymap passed;     /* unique keys: per context, 1 + the top seqno forgotten */
	/* Shared fence sources' rings: (source, ring) -> 1 + index in rdrv. */
	struct kx_keymap ringdrv;
	struct kx_jobflow_ringdrv
	        *rdrv; /* the driver each learnt, from which job; its jobs waiting */
	size_t nrdrv, rdcap;
	size_t npend, peak_pend; /* jobs waiting for their ring's driver: now, at most at once */
	size_t pend_max;         /* the most that may wait (KX_JOBFLOW_PENDING; a test lowers it) */
	size_t nspilt;     /* rings whose jobs are counted on their fallback (past the budget) */
	int spilling;      /* jobflow_pend.c is counting the jobs waiting (no sweep meanwhile) */
	int pairing;       /* jf_release is pairing the records before a job it sweeps */
	uint64_t pend_low; /* ns, the earliest DONE of a job waiting (npend > 0) */
	uint64_t end_ns;   /* ns, the capture's end once the records are all in, else 0 */
	struct kx_minheap linkq;     /* linked GPU jobs held, by the record that made them */
	uint32_t gen;                /* the last generation given to a slot */
	size_t peak_recs, peak_open; /* the most records waiting, requests open at once */
	/* GPU waiters: */
	struct kx_keymap names;        /* wait call names (jobpair's kx_wait_ioctl) */
	struct kx_jobflow_wait *waits; /* wait calls that may hold a DONE to come, by start */
	size_t nwaits, wcap;
	size_t wprune;       /* waits kept when the ones that cannot are dropped next */
	uint64_t wlongest;   /* ns, the longest wait kept (since the last drop) */
	uint64_t waited_max; /* ns, the latest DONE of a GPU job counted (its waiter looked for) */
	int waited_any;
	int gpu_seen;         /* a GPU job record came (before it, wait calls are kept within the
	                         window and budget; a whole store's feed sets it first when the
	                         store holds one, and keeps none when it holds none) */
	uint64_t wait_unkept; /* ns, the latest end of a wait call dropped before it */
	int oom;
	/* Set by the caller after init (NULL: none): called for each job counted
	 * with a submit link that either has device time (KX_JOBFLOW_DEV: a DONE
	 * at or after its start, the jobs whose device time the in-memory ranges
	 * give their calls: rangewalk.h) or was announced by on_link
	 * (KX_JOBFLOW_LINKED), with its submitting call (its thread, its number
	 * among the thread's calls fed, from 1, in their start order: streamed,
	 * a linked job's kx_jobrec.submit holds that number; a whole store's
	 * feed: its place) and its device time (ns, DONE - start; 0 without
	 * KX_JOBFLOW_DEV). 0, or -1 when out of memory. */
	int (*on_linked)(void *ctx, uint32_t tid, uint64_t call_n, uint64_t dev_ns,
	                 unsigned int how);
	/* Set by the caller after init (NULL: none): called when a block
	 * request or GPU job is linked to its submitting call (named as
	 * on_linked names it), at the pairing of the record that opens it,
	 * before it is counted (on_linked then says KX_JOBFLOW_LINKED). Once
	 * the records are paired up to linked_to() (ns), no job to come links to
	 * a call that ended more than KX_JOBS_LINK_WINDOW_NS before it. 0, or -1
	 * when out of memory. */
	int (*on_link)(void *ctx, uint32_t tid, uint64_t call_n);
	void *linked_ctx;
	/* Set by the caller after init (NULL: none): a reorder stage in front of
	 * the calls (each thread's in start order, held a while). Before a keyed
	 * record of time ts is paired, every call that began at or before ts
	 * must come (the stage lets them out): its task's calls give its submit
	 * link, and every thread's wait calls its waiter. 0, or -1 when out of
	 * memory. */
	int (*calls_upto)(void *ctx, uint64_t ts);
	void *calls_ctx;
	uint64_t calls_to; /* ns, the latest ts calls_upto was called with */
};

/* f streaming the records of a capture whose header is ci (kept: device
 * names are made from it as jobs come). */
void kx_jobflow_init(struct kx_jobflow *f, const struct kx_capinfo *ci);
/*
 * f taking a whole store (analysis/jobsink.c): each job counted goes to
 * sink (kept), its submit and wait links as store indexes. The calls come
 * by kx_jobflow_ioctl_at and the job records by kx_jobflow_job, merged in
 * time order (a call before a record of its time). Within the bounds above
 * when the figures can be exact so (why stays NULL), else by
 * kx_jobflow_unbound.
 */
void kx_jobflow_init_whole(struct kx_jobflow *f, const struct kx_capinfo *ci,
                           const struct kx_jobflow_sink *sink);
/* f (a whole store's, before any record) with no bound: every job waits
 * for the end (no record: the feed is in time order), no key is forgotten,
 * every GPU wait call is kept, so why stays NULL. */
void kx_jobflow_unbound(struct kx_jobflow *f);
/* Every call, each thread's in start order. 0, or -1 when out of memory. */
int kx_jobflow_ioctl(struct kx_jobflow *f, const struct kx_ioctl *e);
/* The same, of a whole store: e is its call idx. */
int kx_jobflow_ioctl_at(struct kx_jobflow *f, const struct kx_ioctl *e, size_t idx);
/* A call of a whole store that has no job records: only what a call
 * changes then (the span, the calls and KVM_RUNs counted; no job to link
 * it to, no wait to keep). */
void kx_jobflow_ioctl_alone(struct kx_jobflow *f, const struct kx_ioctl *e);
/* Every job record, in file order (a recorder's: each task's after its
 * calls entered before it). 0, or -1 when out of memory. */
int kx_jobflow_job(struct kx_jobflow *f, const struct kx_job *j);
/*
 * Once every record is in: the device timelines as kx_jobs_build gives them
 * for the report (no job records: jobs is empty, rings count theirs, their
 * first is 0), mem (the calls memory accounting counts, in a store) giving
 * the memory rows, and the job rows appended to rows (NULL: none). NULL
 * when out of memory or f->why is set.
 */
struct kx_jobs *kx_jobflow_finish(struct kx_jobflow *f, const struct kx_store *mem,
                                  struct kx_stats *rows);
/* No job record to come links to a call that ended more than
 * KX_JOBS_LINK_WINDOW_NS before this (ns; 0: not known): the latest record
 * paired, while no KVM record came (a KVM exit links to the call that holds
 * it, and is not paired in time order). */
uint64_t kx_jobflow_linked_to(const struct kx_jobflow *f);
/* After kx_jobflow_finish: the index in kx_jobs.rings of f's ring ring. */
uint32_t kx_jobflow_ring_final(const struct kx_jobflow *f, uint32_t ring);
void kx_jobflow_free(struct kx_jobflow *f);

#endif /* KX_JOBFLOW_H */
