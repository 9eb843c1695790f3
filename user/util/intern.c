/*
 * String interner (see intern.h): the copies in text chunks, a pointer to
 * each by id, ids by hash (several strings may share a hash: each is
 * compared). Every allocation is charged to the budget first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/intern.h"

long kx_intern_find(const struct kx_intern *t, const char *s, size_t len)
{
	uint64_t h = kx_hash_bytes(s, len);
	size_t pos = KX_HMAP_START;
	uint32_t *id;

	while ((id = kx_hmap_next(&t->ids, h, &pos))) {
		const struct kx_istr *o = &t->str[*id];

		if (o->len == len && !memcmp(o->s, s, len))
			return *id;
	}
	return -1;
}

/* n more bytes for t, from the budget. 0, or -1 refused. */
static int charge(struct kx_intern *t, size_t n)
{
	if (t->charge && n && t->charge(t->charge_ctx, (long long)n))
		return -1;
	t->bytes += n;
	return 0;
}

static void uncharge(struct kx_intern *t, size_t n)
{
	if (t->charge && n)
		t->charge(t->charge_ctx, -(long long)n);
	t->bytes -= n;
}

/* *p resized from old to new bytes, the difference charged first. 0 or -1. */
static int resize(struct kx_intern *t, void **p, size_t old, size_t new)
{
	void *q;

	if (charge(t, new - old))
		return -1;
	q = realloc(*p, new);
	if (!q) {
		uncharge(t, new - old);
		return -1;
	}
	*p = q;
	return 0;
}

/* *p (cap elements of size bytes) doubled from 16 when used == cap. 0 or -1. */
static int grow(struct kx_intern *t, void **p, size_t *cap, size_t used, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 16;

	if (used < *cap)
		return 0;
	if (resize(t, p, *cap * size, ncap * size))
		return -1;
	*cap = ncap;
	return 0;
}

/* Room for len + 1 bytes of text: where they go, or NULL. */
static char *text_room(struct kx_intern *t, size_t len)
{
	size_t size = len + 1 > KX_INTERN_CHUNK ? len + 1 : KX_INTERN_CHUNK;
	void *c = NULL;

	if (t->nchunks && t->room >= len + 1)
		return t->chunk[t->nchunks - 1] + (KX_INTERN_CHUNK - t->room);
	if (grow(t, (void **)&t->chunk, &t->chunk_cap, t->nchunks, sizeof(*t->chunk)) ||
	    resize(t, &c, 0, size))
		return NULL;
	t->chunk[t->nchunks++] = c;
	t->room = size == KX_INTERN_CHUNK ? KX_INTERN_CHUNK : 0;
	return c;
}

/* The hash table's room for one more id, charged. 0 or -1. */
static int ids_reserve(struct kx_intern *t)
{
	size_t more = kx_hmap_grow_bytes(&t->ids), old = t->ids.cap * sizeof(struct kx_hslot);

	if (!more)
		return 0;
	if (charge(t, more))
		return -1;
	if (kx_hmap_reserve(&t->ids)) {
		uncharge(t, more);
		return -1;
	}
	uncharge(t, old); /* the old table went */
	return 0;
}

long kx_intern_add(struct kx_intern *t, const char *s, size_t len)
{
	long id = kx_intern_find(t, s, len);
	char *d;

	if (id >= 0)
		return id;
	if (t->n >= UINT32_MAX || grow(t, (void **)&t->str, &t->cap, t->n, sizeof(*t->str)) ||
	    ids_reserve(t) || !(d = text_room(t, len)) ||
	    kx_hmap_add(&t->ids, kx_hash_bytes(s, len), (uint32_t)t->n))
		return -1;
	memcpy(d, s, len);
	d[len] = '\0';
	if (t->room)
		t->room -= len + 1;
	t->str[t->n] = (struct kx_istr){d, len};
	return (long)t->n++;
}

void kx_intern_free(struct kx_intern *t)
{
	for (size_t i = 0; i < t->nchunks; i++)
		free(t->chunk[i]);
	free(t->chunk);
	free(t->str);
	kx_hmap_free(&t->ids);
	uncharge(t, t->bytes);
	memset(t, 0, sizeof(*t));
}
