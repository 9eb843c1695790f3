/* Maps keyed by three words (contract: keymap.h). */
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/keymap.h"

static uint64_t key_hash(const uint64_t k[3])
{
	return kx_hash_combine(kx_hash_combine(kx_hash_combine(0, k[0]), k[1]), k[2]);
}

/* The index of entry i (of key k) in m->idx, *pos its place; it must exist. */
static uint32_t *ref_of(const struct kx_keymap *m, const uint64_t k[3], size_t i, size_t *pos)
{
	uint32_t *at;

	*pos = KX_HMAP_START;
	while ((at = kx_hmap_next(&m->idx, key_hash(k), pos)) && *at != i)
		;
	return at;
}

struct kx_keyslot *kx_keymap_find(const struct kx_keymap *m, uint64_t a, uint64_t b, uint64_t c)
{
	const uint64_t k[3] = {a, b, c};
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	while ((i = kx_hmap_next(&m->idx, key_hash(k), &pos)))
		if (!memcmp(m->v[*i].k, k, sizeof(k)))
			return &m->v[*i];
	return NULL;
}

struct kx_keyslot *kx_keymap_get(struct kx_keymap *m, uint64_t a, uint64_t b, uint64_t c)
{
	struct kx_keyslot *s = kx_keymap_find(m, a, b, c);

	if (s)
		return s;
	if (m->n >= UINT32_MAX || kx_grow((void **)&m->v, &m->cap, m->n, sizeof(*m->v)))
		return NULL;
	s = &m->v[m->n];
	*s = (struct kx_keyslot){{a, b, c}, 0};
	if (kx_hmap_add(&m->idx, key_hash(s->k), (uint32_t)m->n))
		return NULL;
	m->n++;
	return s;
}

void kx_keymap_del(struct kx_keymap *m, struct kx_keyslot *s)
{
	size_t i = (size_t)(s - m->v), last = m->n - 1, pos;

	ref_of(m, s->k, i, &pos);
	kx_hmap_del_at(&m->idx, pos);
	if (i != last) {
		*ref_of(m, m->v[last].k, last, &pos) = (uint32_t)i;
		m->v[i] = m->v[last];
	}
	m->n--;
}

void kx_keymap_free(struct kx_keymap *m)
{
	kx_hmap_free(&m->idx);
	free(m->v);
	memset(m, 0, sizeof(*m));
}
