/*
 * Ordered work queue (see workq.h). Owns the worker threads and the slot
 * ring: sequence number seq lives in slot seq % nslots; head is the oldest
 * slot not yet consumed, tail the next one handed out, submitted the count
 * put, next_run the next one a worker takes. Slots are put in the order
 * they were handed out, workers take them in that order, and only the
 * calling thread consumes them, oldest first.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/parse.h"
#include "util/workq.h"

#define MAX_WORKERS 8

enum { S_FREE, S_FILLING, S_QUEUED, S_DONE };

struct kx_workq {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* a slot was queued, or stop */
	pthread_cond_t done_cv; /* a slot is done */
	const struct kx_workq_ops *ops;
	void *arg;
	uint8_t *slots;
	uint8_t *state;
	size_t nslots, slot_size;
	uint64_t head, tail, submitted, next_run;
	int stop;
	pthread_t thr[MAX_WORKERS];
	int nthr;
	void *ictx; /* the calling thread's context when inline */
	int ictx_made;
};

static int forced_threads;

void kx_workq_set_threads(int n)
{
	forced_threads = n < 0 ? 0 : n;
}

/* KXPROF_THREADS: threads to use, 0 for one per CPU; a bad value is said once and ignored. */
static long env_threads(const char *v)
{
	static int warned;
	char err[128];
	long long n;

	if (kx_parse_long("KXPROF_THREADS", v, 0, 1024, &n, err, sizeof(err)) == 0)
		return (long)n;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "kxprof: %s (ignored: one thread per CPU)\n", err);
	return 0;
}

int kx_workq_workers(size_t pieces)
{
	const char *env = getenv("KXPROF_THREADS");
	long n = forced_threads;

	if (!n && env && *env)
		n = env_threads(env);
	if (n > 0) {
		/* Asked for: used even on small inputs (tests run the threaded paths so). */
		n--;
	} else {
		if (pieces < 2)
			return 0;
		n = sysconf(_SC_NPROCESSORS_ONLN);
		/* The calling thread mostly waits or writes: one worker per CPU. */
		if (n <= 1)
			return 0;
		if ((size_t)n > pieces)
			n = (long)pieces;
	}
	return n > MAX_WORKERS ? MAX_WORKERS : (int)n;
}

static void *slot_at(struct kx_workq *q, uint64_t seq)
{
	return q->slots + (size_t)(seq % q->nslots) * q->slot_size;
}

static void *worker(void *p)
{
	struct kx_workq *q = p;
	void *wctx = q->ops->wctx_new ? q->ops->wctx_new(q->arg) : NULL;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		uint64_t seq;

		while (!q->stop && q->next_run == q->submitted)
			pthread_cond_wait(&q->work_cv, &q->mu);
		if (q->next_run == q->submitted)
			break; /* stop, nothing left */
		seq = q->next_run++;
		pthread_mutex_unlock(&q->mu);
		q->ops->run(slot_at(q, seq), wctx, q->arg);
		pthread_mutex_lock(&q->mu);
		q->state[seq % q->nslots] = S_DONE;
		pthread_cond_signal(&q->done_cv);
	}
	pthread_mutex_unlock(&q->mu);
	if (q->ops->wctx_free)
		q->ops->wctx_free(wctx, q->arg);
	return NULL;
}

struct kx_workq *kx_workq_new(int workers, size_t nslots, size_t slot_size,
                              const struct kx_workq_ops *ops, void *arg)
{
	struct kx_workq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->ops = ops;
	q->arg = arg;
	q->nslots = nslots ? nslots : 1;
	q->slot_size = slot_size ? slot_size : 1;
	q->slots = calloc(q->nslots, q->slot_size);
	q->state = calloc(q->nslots, 1);
	if (!q->slots || !q->state) {
		free(q->slots);
		free(q->state);
		free(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->work_cv, NULL);
	pthread_cond_init(&q->done_cv, NULL);
	if (workers > MAX_WORKERS)
		workers = MAX_WORKERS;
	for (int i = 0; i < workers; i++) {
		if (pthread_create(&q->thr[q->nthr], NULL, worker, q))
			break; /* run with the threads we have, or inline */
		q->nthr++;
	}
	return q;
}

int kx_workq_nworkers(const struct kx_workq *q)
{
	return q->nthr;
}

/* Consumes the finished slots at the head; with wait, until none is left in flight. */
static void consume(struct kx_workq *q, int wait)
{
	pthread_mutex_lock(&q->mu);
	while (q->head < q->submitted) {
		uint64_t seq = q->head;

		if (q->state[seq % q->nslots] != S_DONE) {
			if (!wait)
				break;
			pthread_cond_wait(&q->done_cv, &q->mu);
			continue;
		}
		pthread_mutex_unlock(&q->mu);
		if (q->ops->done)
			q->ops->done(slot_at(q, seq), q->arg);
		pthread_mutex_lock(&q->mu);
		q->state[seq % q->nslots] = S_FREE;
		q->head++;
	}
	pthread_mutex_unlock(&q->mu);
}

void *kx_workq_get(struct kx_workq *q)
{
	void *slot;

	consume(q, 0);
	pthread_mutex_lock(&q->mu);
	while (q->tail - q->head >= q->nslots) {
		uint64_t seq = q->head;

		if (q->state[seq % q->nslots] == S_DONE) {
			pthread_mutex_unlock(&q->mu);
			consume(q, 0);
			pthread_mutex_lock(&q->mu);
			continue;
		}
		pthread_cond_wait(&q->done_cv, &q->mu);
	}
	q->state[q->tail % q->nslots] = S_FILLING;
	slot = slot_at(q, q->tail++);
	pthread_mutex_unlock(&q->mu);
	return slot;
}

void kx_workq_put(struct kx_workq *q, void *slot)
{
	if (!q->nthr) {
		if (!q->ictx_made) {
			q->ictx = q->ops->wctx_new ? q->ops->wctx_new(q->arg) : NULL;
			q->ictx_made = 1;
		}
		q->ops->run(slot, q->ictx, q->arg);
		q->state[q->submitted % q->nslots] = S_DONE;
		q->submitted++;
		return;
	}
	pthread_mutex_lock(&q->mu);
	q->state[q->submitted % q->nslots] = S_QUEUED;
	q->submitted++;
	pthread_cond_signal(&q->work_cv);
	pthread_mutex_unlock(&q->mu);
}

void kx_workq_finish(struct kx_workq *q)
{
	consume(q, 1);
	pthread_mutex_lock(&q->mu);
	/* A slot handed out but never put is dropped. */
	if (q->tail > q->submitted) {
		for (uint64_t s = q->submitted; s < q->tail; s++)
			q->state[s % q->nslots] = S_FREE;
		q->tail = q->submitted;
	}
	pthread_mutex_unlock(&q->mu);
}

void kx_workq_each(struct kx_workq *q, void (*visit)(void *slot, void *arg))
{
	for (size_t i = 0; i < q->nslots; i++)
		visit(q->slots + i * q->slot_size, q->arg);
}

void kx_workq_free(struct kx_workq *q)
{
	if (!q)
		return;
	kx_workq_finish(q);
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_broadcast(&q->work_cv);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < q->nthr; i++)
		pthread_join(q->thr[i], NULL);
	if (q->ictx_made && q->ops->wctx_free)
		q->ops->wctx_free(q->ictx, q->arg);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->work_cv);
	pthread_cond_destroy(&q->done_cv);
	free(q->slots);
	free(q->state);
	free(q);
}
