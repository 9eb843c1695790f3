/*
 * Growable arrays: the one doubling rule of every module that appends to a
 * realloc'd array. The caller keeps the pointer, the capacity and the count.
 */
#ifndef KX_GROW_H
#define KX_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Room for element `used` of size `size` in *p (capacity *cap, doubled from
 * 16). 0, or -1 when out of memory or the size would overflow (*p and *cap
 * unchanged). */
static inline int kx_grow(void **p, size_t *cap, size_t used, size_t size)
{
	size_t ncap;
	void *np;

	if (used < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap < *cap || ncap > SIZE_MAX / size)
		return -1;
	np = realloc(*p, ncap * size);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

#endif /* KX_GROW_H */
