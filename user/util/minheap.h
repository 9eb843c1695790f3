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
	void *v;                                   /* the records, heap-ordered */
	size_t size;                               /* bytes per record (at most 64) */
	size_t n, cap;                             /* records; room (records) */
	int (*less)(const void *a, const void *b); /* the order: is a before b? */
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

/* The heap's order: is a before b? */
typedef int (*kx_minheap_less_fn)(const void *a, const void *b);

/*
 * A copy of rec (size bytes) in by less, h's own. The parents larger than rec
 * move down one level each into the hole, and rec is copied once where the
 * hole stops: the same comparisons, in the same order, and the same array as
 * a swap at each level. Inlined always, so that a typed heap's constant size
 * and order function (KX_MINHEAP_TYPED) give straight-line copies and a
 * direct, inlined comparison.
 */
static inline __attribute__((always_inline)) int
kx_minheap_push_by(struct kx_minheap *h, const void *rec, size_t size, kx_minheap_less_fn less)
{
	char *v;
	size_t i = h->n;

	if (size > 64 || kx_grow(&h->v, &h->cap, h->n, size))
		return -1;
	v = h->v;
	h->n++;
	while (i && less(rec, v + (i - 1) / 2 * size)) {
		kx_minheap_copy(v + i * size, v + (i - 1) / 2 * size, size);
		i = (i - 1) / 2;
	}
	kx_minheap_copy(v + i * size, rec, size);
	return 0;
}

/*
 * The smallest record (size bytes) out into out (may be NULL) by less, h's
 * own; the heap must not be empty. The last record sifts down from the root
 * through a hole: it stays where it was (past the new end, never written)
 * until its place is found, and the comparisons are those of a swap at each
 * level, so ties come out alike.
 */
static inline __attribute__((always_inline)) void
kx_minheap_pop_by(struct kx_minheap *h, void *out, size_t size, kx_minheap_less_fn less)
{
	char *v = h->v;
	const char *last;
	size_t i = 0, n;

	if (out)
		kx_minheap_copy(out, v, size);
	if (!(n = --h->n))
		return;
	last = v + n * size;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const char *mp = last;

		if (l < n && less(v + l * size, mp))
			mp = v + (m = l) * size;
		if (l + 1 < n && less(v + (l + 1) * size, mp))
			mp = v + (m = l + 1) * size;
		if (m == i)
			break;
		kx_minheap_copy(v + i * size, mp, size);
		i = m;
	}
	kx_minheap_copy(v + i * size, last, size);
}

/* A copy of rec in (rec must not point into the heap). 0, or -1 when out of
 * memory (h unchanged). */
static inline int kx_minheap_push(struct kx_minheap *h, const void *rec)
{
	return kx_minheap_push_by(h, rec, h->size, h->less);
}

/* The smallest record out into out (may be NULL); the heap must not be empty. */
static inline void kx_minheap_pop(struct kx_minheap *h, void *out)
{
	kx_minheap_pop_by(h, out, h->size, h->less);
}

/*
 * NAME_push and NAME_pop: kx_minheap_push and kx_minheap_pop for a heap made
 * with KX_MINHEAP_INIT(type, lessfn), with the record's size and the order
 * known where they are called (the same order, the same array). For the
 * heaps a hot loop pushes and pops.
 */
#define KX_MINHEAP_TYPED(name, type, lessfn)                                                       \
	static inline int name##_push(struct kx_minheap *h, const type *rec)                       \
	{                                                                                          \
		return kx_minheap_push_by(h, rec, sizeof(type), lessfn);                           \
	}                                                                                          \
	static inline void name##_pop(struct kx_minheap *h, type *out)                             \
	{                                                                                          \
		kx_minheap_pop_by(h, out, sizeof(type), lessfn);                                   \
	}

static inline void kx_minheap_free(struct kx_minheap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

#endif /* KX_MINHEAP_H */
