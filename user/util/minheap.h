/*
 * Binary min-heaps of fixed-size records: the one heap of the modules that
 * take records out smallest first (the streamed device timelines: jobs by
 * start, lane and in-flight ends). The caller gives the order (less); the
 * heap owns the records' array.
 */
#ifndef KX_MINHEAP_H
#define KX_MINHEAP_H

#include <stddef.h>
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

static inline void kx_minheap_swap(struct kx_minheap *h, size_t i, size_t j)
{
	char tmp[64];

	memcpy(tmp, kx_minheap_at(h, i), h->size);
	memcpy(kx_minheap_at(h, i), kx_minheap_at(h, j), h->size);
	memcpy(kx_minheap_at(h, j), tmp, h->size);
}

/* The smallest record, or NULL when empty. */
static inline const void *kx_minheap_top(const struct kx_minheap *h)
{
	return h->n ? h->v : NULL;
}

/* A copy of rec in. 0, or -1 when out of memory (h unchanged). */
static inline int kx_minheap_push(struct kx_minheap *h, const void *rec)
{
	size_t i = h->n;

	if (h->size > 64 || kx_grow(&h->v, &h->cap, h->n, h->size))
		return -1;
	memcpy(kx_minheap_at(h, h->n++), rec, h->size);
	while (i && h->less(kx_minheap_at(h, i), kx_minheap_at(h, (i - 1) / 2))) {
		kx_minheap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return 0;
}

/* The smallest record out into out (may be NULL); the heap must not be empty. */
static inline void kx_minheap_pop(struct kx_minheap *h, void *out)
{
	size_t i = 0;

	if (out)
		memcpy(out, h->v, h->size);
	if (--h->n)
		memcpy(h->v, kx_minheap_at(h, h->n), h->size);
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < h->n && h->less(kx_minheap_at(h, l), kx_minheap_at(h, m)))
			m = l;
		if (l + 1 < h->n && h->less(kx_minheap_at(h, l + 1), kx_minheap_at(h, m)))
			m = l + 1;
		if (m == i)
			return;
		kx_minheap_swap(h, i, m);
		i = m;
	}
}

static inline void kx_minheap_free(struct kx_minheap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

#endif /* KX_MINHEAP_H */
