/* String arena and address-floor search (see arena.h). */
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"

size_t kx_arena_addn(struct kx_arena *a, const char *s, size_t n)
{
	size_t at = a->len;

	while (a->len + n + 1 > a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 4096;
		char *p = realloc(a->buf, ncap);

		if (!p)
			return KX_ARENA_NONE;
		a->buf = p;
		a->cap = ncap;
	}
	memcpy(a->buf + at, s, n);
	a->buf[at + n] = 0;
	a->len += n + 1;
	return at;
}

size_t kx_arena_add(struct kx_arena *a, const char *s)
{
	return kx_arena_addn(a, s, strlen(s));
}

void kx_arena_free(struct kx_arena *a)
{
	free(a->buf);
	a->buf = NULL;
	a->len = a->cap = 0;
}

long kx_addr_floor(const void *base, size_t n, size_t size, uint64_t addr)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at;

		memcpy(&at, b + mid * size, sizeof(at));
		if (at <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}
