/*
 * String interner: each distinct string gets one id, dense from 0 in the
 * order first added, and one NUL-terminated copy that stays where it is
 * (text chunks of KX_INTERN_CHUNK bytes), found again through its hash. The
 * one interner of the tree's name tables: the store's annotation strings,
 * the XSpace metadata, pprof's string table, the folded lines. An optional
 * budget is charged before each allocation (the store's memory limit).
 */
#ifndef KX_INTERN_H
#define KX_INTERN_H

#include <stddef.h>
#include <string.h>

#include "util/hashmap.h"

#define KX_INTERN_CHUNK (64u * 1024) /* bytes of text per chunk (a longer string: its own) */

struct kx_istr {
	const char *s; /* NUL-terminated */
	size_t len;    /* bytes before the NUL */
};

struct kx_intern {
	struct kx_istr *str; /* str[id]: the copy of string id */
	size_t n, cap;       /* ids given; room in str */
	char **chunk;        /* the text chunks */
	size_t nchunks, chunk_cap;
	size_t room;        /* bytes left in the last chunk */
	struct kx_hmap ids; /* hash of a string -> its id */
	size_t bytes;       /* allocated: charged to the budget */
	/* Optional budget: asked for n bytes before they are allocated (nonzero:
	 * refused), told -n when they are given back. */
	int (*charge)(void *ctx, long long n);
	void *charge_ctx;
};

/* The id of s[0..len) when interned, else -1; never changes t (any thread). */
long kx_intern_find(const struct kx_intern *t, const char *s, size_t len);
/* The id of s[0..len), added when new; -1 when out of memory or refused by
 * the budget (or past 2^32 ids). */
long kx_intern_add(struct kx_intern *t, const char *s, size_t len);

static inline long kx_intern_cstr(struct kx_intern *t, const char *s)
{
	return kx_intern_add(t, s, strlen(s));
}

/* String id (id < t->n), and its length. */
static inline const char *kx_intern_str(const struct kx_intern *t, size_t id)
{
	return t->str[id].s;
}

static inline size_t kx_intern_len(const struct kx_intern *t, size_t id)
{
	return t->str[id].len;
}

/* Frees everything (and gives the bytes back to the budget). */
void kx_intern_free(struct kx_intern *t);

#endif /* KX_INTERN_H */
