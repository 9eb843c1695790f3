/*
 * Strings made once per 64-bit key: a caller's key (e.g. an ioctl's driver
 * and command, a file's device) names one string it makes the first time,
 * interned in a util/intern.h table the caller owns; later lookups of the
 * key give the interned id without making the string again. Several keys
 * may give one string (one id). The exporters' event names and device
 * labels (XSpace metadata, Chrome name and label fragments).
 */
#ifndef KX_STRKEY_H
#define KX_STRKEY_H

#include <stddef.h>
#include <stdint.h>

#include "util/hashmap.h"
#include "util/intern.h"

struct kx_strkey {
	struct kx_hmap ids; /* key -> id in the caller's interner */
	uint64_t last_key;  /* the key found last (events repeat keys in runs) */
	uint32_t last;      /* 1 + its id; 0: none yet */
};

/* The id of key, -1 when not added yet; never changes t (any thread). */
static inline long kx_strkey_get(const struct kx_strkey *t, uint64_t key)
{
	const uint32_t *id = kx_hmap_get(&t->ids, key);

	return id ? (long)*id : -1;
}

/* The same, remembering the key found (one thread: t changes). */
long kx_strkey_find(struct kx_strkey *t, uint64_t key);
/* Interns s[0..n) in in as key's string: its id, -1 out of memory. */
long kx_strkey_add(struct kx_strkey *t, struct kx_intern *in, uint64_t key, const char *s,
                   size_t n);
/* Frees the keys (the interner is the caller's). */
void kx_strkey_free(struct kx_strkey *t);

#endif /* KX_STRKEY_H */
