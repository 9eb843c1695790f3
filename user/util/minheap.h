/*
 * Binary min-heaps of fixed-size records: the one heap of the modules that
 * take records out smallest first (the streamed device timelines: jobs by
 * start, lane and in-flight ends). The caller gives the order (less); the
 * heap owns the records' array.
 */
#ifndef KX_MINHEAP_H
#define KX_MINHEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

struct kx_minheap {
	void *v;       /* the records, heap-ordered */
	size_t size;   /* bytes per record (at most 64) */
	size_t n, cap; /* records; room (records) */
	int (*less)(const void *a, const void *b);
};

#define KX_MINHEAP_INIT(type, lessfn)                                                              \
	{                                                                                          \
		NULL, sizeof(type), 0, 0, lessfn                                                   \
	}

static inline void *kx_minheap_at(const struct kx_minheap *h, size_t i)
{
	return (char *)h->v + i * h->size;
}

/*
 * One record of `size` bytes from s to d, in 8-byte words when the size is a
 * multiple of 8 (every caller's but the 4-byte ones): a few moves, no call.
 * The heap moves a record once per level it passes.
 */
static inline void kx_minheap_copy(void *d, const void *s, size_t size)
{
	if (size % 8) {
		memcpy(d, s, size);
		return;
	}
	for (size_t k = 0; k < size; k += 8) {
		uint64_t w;

		memcpy(&w, (const char *)s + k, 8);
		memcpy((char *)d + k, &w, 8);
	}
}

/* The smallest record, or NULL when empty. */
static inline const void *kx_minheap_top(const struct kx_minheap *h)
{
	return h->n ? h->v : NULL;
}

/*
 * A copy of rec in (rec must not point into the heap). 0, or -1 when out of
 * memory (h unchanged). The parents larger than rec move down one level each
 * into the hole, and rec is copied once where the hole stops: the same
 * comparisons, in the same order, and the same array as a swap at each level.
 */
static inline int kx_minheap_push(struct kx_minheap *h, const void *rec)
{
	size_t i = h->n;

	if (h->size > 64 || kx_grow(&h->v, &h->cap, h->n, h->size))
		return -1;
	h->n++;
	while (i && h->less(rec, kx_minheap_at(h, (i - 1) / 2))) {
		kx_minheap_copy(kx_minheap_at(h, i), kx_minheap_at(h, (i - 1) / 2), h->size);
		i = (i - 1) / 2;
	}
	kx_minheap_copy(kx_minheap_at(h, i), rec, h->size);
	return 0;
}

/*
 * The smallest record out into out (may be NULL); the heap must not be empty.
 * The last record sifts down from the root through a hole: it stays where it
 * was (past the new end, never written) until its place is found, and the
 * comparisons are those of a swap at each level, so ties come out alike.
 */
static inline void kx_minheap_pop(struct kx_minheap *h, void *out)
{
	const void *last;
	size_t i = 0;

	if (out)
		kx_minheap_copy(out, h->v, h->size);
	if (!--h->n)
		return;
	last = kx_minheap_at(h, h->n);
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const void *mp = last;

		if (l < h->n && h->less(kx_minheap_at(h, l), mp))
			mp = kx_minheap_at(h, m = l);
		if (l + 1 < h->n && h->less(kx_minheap_at(h, l + 1), mp))
			mp = kx_minheap_at(h, m = l + 1);
		if (m == i)
			break;
		kx_minheap_copy(kx_minheap_at(h, i), mp, h->size);
		i = m;
	}
	kx_minheap_copy(kx_minheap_at(h, i), last, h->size);
}

static inline void kx_minheap_free(struct kx_minheap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

#endif /* KX_MINHEAP_H */
