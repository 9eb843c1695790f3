/*
 * Ordered work queue for the exporters and the record reader: the calling
 * thread fills slots in order and submits them, worker threads run them in
 * any order, and the calling thread consumes the results strictly in
 * submission order (e.g. writes them out). A result never depends on which
 * thread ran it, so the output is the same for any thread count. With no
 * worker threads (one CPU, KXPROF_THREADS=1, or thread creation failed)
 * each slot runs at submission, in the calling thread.
 */
#ifndef KX_WORKQ_H
#define KX_WORKQ_H

#include <stddef.h>

struct kx_workq_ops {
	/* Runs a submitted slot; wctx is the running thread's own context. */
	void (*run)(void *slot, void *wctx, void *arg);
	/* Consumes a finished slot, in submission order, on the calling thread. */
	void (*done)(void *slot, void *arg);
	/* Optional: a thread's context (NULL is a valid context) and its release. */
	void *(*wctx_new)(void *arg);
	void (*wctx_free)(void *wctx, void *arg);
};

struct kx_workq;

/*
 * Worker threads to use for a job of this many independent pieces: one
 * per online CPU (none with one CPU or fewer than 2 pieces, at most 8),
 * or the thread count asked for minus the calling thread
 * (kx_workq_set_threads, else the environment variable KXPROF_THREADS);
 * 0 means run inline.
 */
int kx_workq_workers(size_t pieces);
/* Thread count for later queues (1: inline; 0: back to automatic). For tests. */
void kx_workq_set_threads(int n);

/*
 * nslots zeroed slots of slot_size bytes (the caller's buffers live in
 * them and stay there across reuse). workers as from kx_workq_workers;
 * if a thread cannot be started, the queue runs with those it has.
 * NULL on OOM.
 */
struct kx_workq *kx_workq_new(int workers, size_t nslots, size_t slot_size,
                              const struct kx_workq_ops *ops, void *arg);
/* The next slot to fill, consuming finished ones first (waits when all are busy). */
void *kx_workq_get(struct kx_workq *q);
/* Submits the slot kx_workq_get returned last. */
void kx_workq_put(struct kx_workq *q, void *slot);
/* Waits for every submitted slot and consumes them all. */
void kx_workq_finish(struct kx_workq *q);
/* Calls visit on every slot (to free the caller's buffers in them). */
void kx_workq_each(struct kx_workq *q, void (*visit)(void *slot, void *arg));
/* Finishes, stops the workers, frees. NULL is fine. */
void kx_workq_free(struct kx_workq *q);
/* Worker threads actually running (0: inline). */
int kx_workq_nworkers(const struct kx_workq *q);

#endif /* KX_WORKQ_H */
