/*
 * Growable arrays: the one doubling rule of every module that appends to a
 * realloc'd array. The caller keeps the pointer, the capacity and the count
 * (all in elements).
 */
#ifndef KX_GROW_H
#define KX_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Room for n more elements of size `size` after the first `used` of *p
 * (capacity *cap): the capacity doubles, starting from `first`, until they
 * fit. 0, or -1 when out of memory or the size would overflow (*p and *cap
 * unchanged).
 */
static inline int kx_grow_by(void **p, size_t *cap, size_t used, size_t n, size_t size,
                             size_t first)
{
	size_t ncap = *cap ? *cap : first;
	void *np;

	if (used <= *cap && *cap - used >= n)
		return 0;
	if (n > SIZE_MAX - used || !ncap)
		return -1;
	while (ncap < used + n) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return -1;
	np = realloc(*p, ncap * size);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

/* Room for element `used` (capacity doubled from 16). 0, or -1 as kx_grow_by. */
static inline int kx_grow(void **p, size_t *cap, size_t used, size_t size)
{
	return kx_grow_by(p, cap, used, 1, size, 16);
}

/* A growing byte buffer whose failure is sticky (oom): writers check once, at the end. */
struct kx_bytes {
	uint8_t *p;
	size_t len, cap; /* bytes */
	int oom;
};

/* Room for n more bytes (capacity doubled from 4 KiB): the write cursor, or
 * NULL (oom set). */
static inline uint8_t *kx_bytes_room(struct kx_bytes *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (kx_grow_by((void **)&b->p, &b->cap, b->len, n, 1, 4096)) {
		b->oom = 1;
		return NULL;
	}
	return b->p + b->len;
}

/* Appends the n bytes at p (nothing when out of memory: oom set). */
static inline void kx_bytes_put(struct kx_bytes *b, const void *p, size_t n)
{
	uint8_t *d = n ? kx_bytes_room(b, n) : NULL;

	if (d) {
		memcpy(d, p, n);
		b->len += n;
	}
}

/* Exact fit: room for n elements of size `size` in *p (capacity *cap), for
 * callers that know the whole count before they fill the array. 0, or -1
 * when out of memory or the size would overflow (*p and *cap unchanged). */
static inline int kx_reserve(void **p, size_t *cap, size_t n, size_t size)
{
	void *np;

	if (n <= *cap)
		return 0;
	if (n > SIZE_MAX / size)
		return -1;
	np = realloc(*p, n * size);
	if (!np)
		return -1;
	*p = np;
	*cap = n;
	return 0;
}

#endif /* KX_GROW_H */
