/*
 * Per-thread records: a growable array of fixed-size records found by
 * thread id through util/hashmap.h, for the streams that keep a little
 * state per thread (the end of its last call, open annotation ranges, the
 * last ioctl a job record may link to, the last call a counter record may
 * join). The table owns the
 * records; pointers stay valid until the next record is made.
 */
#ifndef KX_TIDTAB_H
#define KX_TIDTAB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/hashmap.h"

struct kx_tidtab {
	struct kx_hmap map; /* tid -> index in v */
	void *v;            /* the records */
	size_t size;        /* bytes per record */
	size_t n, cap;      /* records; room (records) */
};

#define KX_TIDTAB_INIT(type)                                                                       \
	{                                                                                          \
		KX_HMAP_INIT, NULL, sizeof(type), 0, 0                                             \
	}

static inline void *kx_tidtab_at(const struct kx_tidtab *t, size_t i)
{
	return (char *)t->v + i * t->size;
}

/* The record of tid, or NULL when it has none. */
static inline void *kx_tidtab_find(const struct kx_tidtab *t, uint32_t tid)
{
	const uint32_t *i = t->n ? kx_hmap_get(&t->map, tid) : NULL;

	return i ? kx_tidtab_at(t, *i) : NULL;
}

/* The record of tid; when it has none: a zeroed new one if make, else
 * NULL. NULL when out of memory. */
static inline void *kx_tidtab_get(struct kx_tidtab *t, uint32_t tid, int make)
{
	void *r = kx_tidtab_find(t, tid);

	if (r || !make)
		return r;
	if (t->n >= UINT32_MAX || kx_grow(&t->v, &t->cap, t->n, t->size) ||
	    kx_hmap_add(&t->map, tid, (uint32_t)t->n))
		return NULL;
	r = kx_tidtab_at(t, t->n++);
	memset(r, 0, t->size);
	return r;
}

static inline void kx_tidtab_free(struct kx_tidtab *t)
{
	kx_hmap_free(&t->map);
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

#endif /* KX_TIDTAB_H */
