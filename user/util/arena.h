/*
 * String arena: NUL-terminated strings appended to one growing buffer and
 * named by their offset (offsets stay valid when the buffer moves), as the
 * symbol tables keep their names. Also the one "last entry at or below an
 * address" search of address-sorted tables.
 */
#ifndef KX_UTIL_ARENA_H
#define KX_UTIL_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct kx_arena {
	char *buf;
	size_t len, cap; /* bytes */
};

#define KX_ARENA_NONE ((size_t)-1) /* kx_arena_add: out of memory */

/* Appends s; its offset, or KX_ARENA_NONE. */
size_t kx_arena_add(struct kx_arena *a, const char *s);
/* Appends the n bytes at s and a NUL; its offset, or KX_ARENA_NONE. */
size_t kx_arena_addn(struct kx_arena *a, const char *s, size_t n);
static inline const char *kx_arena_str(const struct kx_arena *a, size_t off)
{
	return a->buf + off;
}
void kx_arena_free(struct kx_arena *a);

/* In an array of n entries of `size` bytes, each starting with a uint64_t
 * address and sorted by it: the index of the last entry whose address is
 * <= addr, or -1 when none is. */
long kx_addr_floor(const void *base, size_t n, size_t size, uint64_t addr);

#endif /* KX_UTIL_ARENA_H */
