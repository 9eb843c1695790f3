/*
 * A map from a key of three 64-bit words to a 64-bit value, over
 * util/hashmap.h: entries in an array (the last one moves into a deleted
 * one's place), indexed by the hash of their key. For the analyses' small
 * tables keyed by tuples (open jobs by source key, allocations by handle,
 * memory slots).
 */
#ifndef KX_KEYMAP_H
#define KX_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/hashmap.h"

struct kx_keyslot {
	uint64_t k[3];
	uint64_t v;
};

struct kx_keymap {
	struct kx_hmap idx; /* hash of k -> index in v */
	struct kx_keyslot *v;
	size_t n, cap;
};

#define KX_KEYMAP_INIT                                                                             \
	{                                                                                          \
		KX_HMAP_INIT, NULL, 0, 0                                                           \
	}

/* The entry of key (a, b, c), or NULL. */
struct kx_keyslot *kx_keymap_find(const struct kx_keymap *m, uint64_t a, uint64_t b, uint64_t c);
/* The entry of the key, added with v = 0 when new; NULL when out of memory.
 * The pointer is valid until the next change of m. */
struct kx_keyslot *kx_keymap_get(struct kx_keymap *m, uint64_t a, uint64_t b, uint64_t c);
/* Removes s (an entry of m); the last entry moves into its place. */
void kx_keymap_del(struct kx_keymap *m, struct kx_keyslot *s);
void kx_keymap_free(struct kx_keymap *m);

#endif /* KX_KEYMAP_H */
