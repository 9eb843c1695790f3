/*
 * Ordered fragment pipeline (see fragq.h). Owns the slots of the work queue:
 * each holds the literal bytes laid out before its piece, then the piece's
 * encoded bytes, and is emitted whole when it comes out of the queue.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/fragq.h"
#include "util/workq.h"

struct frag {
	struct kx_bytes out; /* the literal bytes before the piece, then its bytes */
	int has_piece;       /* desc holds a piece to encode */
	int err;             /* errno of the encoding */
	max_align_t desc[];  /* the caller's description of the piece */
};

struct kx_fragq {
	struct kx_workq *q;
	const struct kx_fragq_ops *ops;
	void *arg;
	size_t desc_size;
	struct frag *cur; /* the slot being laid out */
	int err;          /* the first error: nothing is emitted after it */
};

static void frag_run(void *slot, void *wctx, void *arg)
{
	struct frag *f = slot;
	struct kx_fragq *q = arg;

	if (!f->has_piece)
		return;
	if (q->ops->wctx_new && !wctx)
		f->err = ENOMEM;
	else
		f->err = q->ops->encode(f->desc, &f->out, wctx, q->arg);
}

static void frag_done(void *slot, void *arg)
{
	struct frag *f = slot;
	struct kx_fragq *q = arg;

	if (!q->err)
		q->err = f->err ? f->err : f->out.oom ? ENOMEM : 0;
	if (!q->err && f->out.len)
		q->err = q->ops->emit(f->out.p, f->out.len, q->arg);
}

static void *frag_wctx_new(void *arg)
{
	struct kx_fragq *q = arg;

	return q->ops->wctx_new ? q->ops->wctx_new(q->arg) : NULL;
}

static void frag_wctx_free(void *wctx, void *arg)
{
	struct kx_fragq *q = arg;

	if (q->ops->wctx_free)
		q->ops->wctx_free(wctx, q->arg);
}

static const struct kx_workq_ops frag_ops = {
        .run = frag_run,
        .done = frag_done,
        .wctx_new = frag_wctx_new,
        .wctx_free = frag_wctx_free,
};

/* The next slot to lay out, emptied. */
static void next_frag(struct kx_fragq *q)
{
	q->cur = kx_workq_get(q->q);
	q->cur->out.len = 0;
	q->cur->out.oom = 0;
	q->cur->has_piece = 0;
	q->cur->err = 0;
}

struct kx_fragq *kx_fragq_new(size_t npieces, size_t desc_size, const struct kx_fragq_ops *ops,
                              void *arg)
{
	struct kx_fragq *q = calloc(1, sizeof(*q));
	int workers = kx_workq_workers(npieces);
	/* Slots lie side by side: each a whole number of max_align_t. */
	size_t align = sizeof(max_align_t),
	       slot = (sizeof(struct frag) + desc_size + align - 1) / align * align;

	if (!q)
		return NULL;
	*q = (struct kx_fragq){.ops = ops, .arg = arg, .desc_size = desc_size};
	q->q = kx_workq_new(workers, (size_t)workers * 2 + 2, slot, &frag_ops, q);
	if (!q->q) {
		free(q);
		return NULL;
	}
	next_frag(q);
	return q;
}

void kx_fragq_lit(struct kx_fragq *q, const void *p, size_t n)
{
	kx_bytes_put(&q->cur->out, p, n);
}

int kx_fragq_piece(struct kx_fragq *q, const void *desc)
{
	memcpy(q->cur->desc, desc, q->desc_size);
	q->cur->has_piece = 1;
	kx_workq_put(q->q, q->cur);
	next_frag(q);
	return q->err;
}

static void frag_free(void *slot, void *arg)
{
	(void)arg;
	free(((struct frag *)slot)->out.p);
}

int kx_fragq_end(struct kx_fragq *q)
{
	int err;

	kx_workq_put(q->q, q->cur);
	kx_workq_finish(q->q);
	err = q->err;
	kx_workq_each(q->q, frag_free);
	kx_workq_free(q->q);
	free(q);
	return err;
}
