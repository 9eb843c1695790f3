/*
 * Ordered fragment pipeline, over util/workq.h: the one way the exporters
 * encode a long output in parallel and write it in order. The calling
 * thread lays the output out as a sequence of literal bytes and pieces (its
 * own description of what to encode, e.g. a range of events); worker
 * threads encode the pieces into buffers, in any order; the calling thread
 * hands every byte to the sink strictly in layout order. The output is the
 * same for any thread count (util/workq.h: KXPROF_THREADS).
 */
#ifndef KX_FRAGQ_H
#define KX_FRAGQ_H

#include <stddef.h>
#include <stdint.h>

#include "util/grow.h"

struct kx_fragq_ops {
	/* Encodes the piece desc describes, appending its bytes to out; on a
	 * worker thread, wctx its context. 0, or an errno. */
	int (*encode)(const void *desc, struct kx_bytes *out, void *wctx, void *arg);
	/* The output's next n bytes, in order, on the calling thread. 0, or an
	 * errno: nothing more is emitted then. */
	int (*emit)(const uint8_t *p, size_t n, void *arg);
	/* Optional: a worker's context (NULL: out of memory) and its release. */
	void *(*wctx_new)(void *arg);
	void (*wctx_free)(void *wctx, void *arg);
};

struct kx_fragq;

/* A pipeline for about npieces pieces of desc_size bytes of description
 * each. NULL on OOM. */
struct kx_fragq *kx_fragq_new(size_t npieces, size_t desc_size, const struct kx_fragq_ops *ops,
                              void *arg);
/* Appends n literal bytes to the output. */
void kx_fragq_lit(struct kx_fragq *q, const void *p, size_t n);
/* Appends the piece desc describes (desc is copied). 0, or the first error
 * so far (an errno: stop adding). */
int kx_fragq_piece(struct kx_fragq *q, const void *desc);
/* Emits what is left, frees q. 0, or the first error (an errno; ENOMEM when
 * a buffer could not grow). */
int kx_fragq_end(struct kx_fragq *q);

#endif /* KX_FRAGQ_H */
