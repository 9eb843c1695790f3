/*
 * Slots: a growable array whose freed elements are reused, for the tables a
 * stream keeps open (util/hashmap.h maps a key to the slot's index). The
 * caller reads and writes the elements; the pool owns them, their count,
 * and the free list. Putting a slot back never fails.
 */
#ifndef KX_SLOTS_H
#define KX_SLOTS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

struct kx_slots {
	void *v;        /* the elements */
	size_t size;    /* bytes per element */
	size_t n, cap;  /* slots made; room (elements) */
	uint32_t *free; /* slots put back, reused last first */
	size_t nfree, freecap;
};

#define KX_SLOTS_INIT(type)                                                                        \
	{                                                                                          \
		NULL, sizeof(type), 0, 0, NULL, 0, 0                                               \
	}

/* A slot whose element the caller writes whole (not zeroed): its index,
 * or -1 when out of memory. */
static inline long kx_slots_take(struct kx_slots *p)
{
	if (p->nfree)
		return (long)p->free[--p->nfree];
	/* The free list has room for every slot, so kx_slots_put cannot fail. */
	if (p->n >= UINT32_MAX || kx_grow((void **)&p->v, &p->cap, p->n, p->size) ||
	    kx_grow((void **)&p->free, &p->freecap, p->n, sizeof(*p->free)))
		return -1;
	return (long)p->n++;
}

/* A slot, its element zeroed: its index, or -1 when out of memory. */
static inline long kx_slots_get(struct kx_slots *p)
{
	long i = kx_slots_take(p);

	if (i >= 0)
		memset((char *)p->v + (size_t)i * p->size, 0, p->size);
	return i;
}

static inline void *kx_slots_at(const struct kx_slots *p, size_t i)
{
	return (char *)p->v + i * p->size;
}

/* Slot i is free again. */
static inline void kx_slots_put(struct kx_slots *p, size_t i)
{
	p->free[p->nfree++] = (uint32_t)i;
}

/* Slots in use. */
static inline size_t kx_slots_live(const struct kx_slots *p)
{
	return p->n - p->nfree;
}

static inline void kx_slots_free(struct kx_slots *p)
{
	free(p->v);
	free(p->free);
	p->v = NULL;
	p->free = NULL;
	p->n = p->cap = p->nfree = p->freecap = 0;
}

#endif /* KX_SLOTS_H */
