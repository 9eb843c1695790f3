/*
 * Device timelines of a record file read as a stream (analysis/sreport.h):
 * KVM jobs paired, counted and folded into their rows as the records pass,
 * then forgotten, so memory does not grow with the jobs. By the rules of
 * analysis/jobs.h (analysis/jobpair.h's KVM, anomaly and device rules),
 * exactly the figures the in-memory analysis (kx_jobs_build) gives of the
 * report's device timelines: per ring jobs, completed, linked, lanes, busy
 * time and the exec distribution (a stat row "<ring> exec" under
 * jobs/<device>: exact percentiles while a row holds at most
 * KX_JOBFLOW_EXACT values, else the streamed rows' log-linear histogram,
 * within 1/256); per device jobs, completed, incomplete, no_queue, linked,
 * busy time and fraction, and the most jobs in flight; the anomalies; and
 * the memory rows (kx_jobs_memory over the calls memory accounting counts,
 * which the caller keeps).
 *
 * How. A KVM exit (DONE) waits on its vCPU thread until a call of that
 * thread that started after it comes (or the end): the thread's last call
 * entered at or before the exit is then known, and the job is made when it
 * is a KVM_RUN that holds the exit (a second exit inside one KVM_RUN is a
 * duplicate), else the exit is a job of no KVM_RUN. The thread's calls must
 * come in start order (a recorder writes them at their return, so a thread
 * that does not nest them gives them so). Made jobs wait in a heap by start
 * (KX_JOBFLOW_WINDOW_NS behind the latest time seen, at most
 * KX_JOBFLOW_HELD of them), then pass in start order through the sweeps
 * that need it: lanes (a heap of the ring's job ends), busy time (the union
 * of intervals in start order) and the most in flight (a heap of the
 * device's ends). Memory: the jobs held (56 bytes each), the open exits, a
 * thread's last call (88 bytes), and per ring its rows.
 *
 * why says when that cannot be exact, and the report reads the file into
 * memory instead: job records of another source than KVM (their pairing,
 * links and waiters need the whole file), a KVM exit after a later call of
 * its thread or before an earlier-timed exit of it, a job that starts
 * before jobs already swept (later than the heap's window), too many open
 * exits.
 */
#ifndef KX_JOBFLOW_H
#define KX_JOBFLOW_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobpair.h"
#include "analysis/jobs.h"
#include "analysis/stats.h"
#include "model/capinfo.h"
#include "model/event.h"
#include "model/store.h"
#include "util/minheap.h"
#include "util/tidtab.h"

#define KX_JOBFLOW_WINDOW_NS 1000000000ull /* ns a made job waits for earlier starts */
#define KX_JOBFLOW_HELD      16384u        /* jobs held at most (then the earliest goes) */
#define KX_JOBFLOW_EXACT     16384u        /* values a row keeps for exact percentiles */
#define KX_JOBFLOW_EXITS     65536u        /* open KVM exits at most */

struct kx_jobflow_ring;
struct kx_jobflow_dev;

struct kx_jobflow {
	const char *why;             /* NULL: the figures are exact so far */
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
	size_t peak_held;         /* the most jobs held at once */
	int has_kvm;              /* a KVM job record came */
	int oom;
};

/* f streaming the records of a capture whose header is ci (kept: device
 * names are made from it as jobs come). */
void kx_jobflow_init(struct kx_jobflow *f, const struct kx_capinfo *ci);
/* Every call, each thread's in start order. 0, or -1 when out of memory. */
int kx_jobflow_ioctl(struct kx_jobflow *f, const struct kx_ioctl *e);
/* Every job record, in file order. 0, or -1 when out of memory. */
int kx_jobflow_job(struct kx_jobflow *f, const struct kx_job *j);
/*
 * Once every record is in: the device timelines as kx_jobs_build gives them
 * for the report (no job records: jobs is empty, rings count theirs), mem
 * (the calls memory accounting counts, in a store) giving the memory rows,
 * and the job rows appended to rows. NULL when out of memory or f->why is
 * set.
 */
struct kx_jobs *kx_jobflow_finish(struct kx_jobflow *f, const struct kx_store *mem,
                                  struct kx_stats *rows);
void kx_jobflow_free(struct kx_jobflow *f);

#endif /* KX_JOBFLOW_H */
