/* The hash map (contract: hashmap.h). */
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

#define MIN_CAP 64

uint64_t kx_hash_bytes(const void *s, size_t n)
{
	const uint8_t *p = s;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* Slots for up to max entries at most half full: a power of two. */
static size_t cap_for(size_t max)
{
	size_t cap = MIN_CAP;

	while (cap / 2 < max)
		cap *= 2;
	return cap;
}

static void place(struct kx_hslot *slot, size_t cap, uint64_t key, uint32_t val)
{
	size_t i = (size_t)kx_hash_u64(key) & (cap - 1);

	while (slot[i].used)
		i = (i + 1) & (cap - 1);
	slot[i] = (struct kx_hslot){key, val, 1};
}

static int rehash(struct kx_hmap *m, size_t cap)
{
	struct kx_hslot *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].used)
			place(slot, cap, m->slot[i].key, m->slot[i].val);
	free(m->slot);
	m->slot = slot;
	m->cap = cap;
	return 0;
}

int kx_hmap_init_fixed(struct kx_hmap *m, size_t max)
{
	*m = (struct kx_hmap)KX_HMAP_INIT;
	m->fixed = max ? max : 1;
	return rehash(m, cap_for(m->fixed));
}

void kx_hmap_free(struct kx_hmap *m)
{
	free(m->slot);
	*m = (struct kx_hmap)KX_HMAP_INIT;
}

size_t kx_hmap_grow_bytes(const struct kx_hmap *m)
{
	if (m->fixed || (m->n + 1) * 2 <= m->cap)
		return 0;
	return (m->cap ? m->cap * 2 : MIN_CAP) * sizeof(struct kx_hslot);
}

int kx_hmap_reserve(struct kx_hmap *m)
{
	if (m->fixed)
		return m->n < m->fixed ? 0 : -1;
	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	return rehash(m, m->cap ? m->cap * 2 : MIN_CAP);
}

uint32_t *kx_hmap_next(const struct kx_hmap *m, uint64_t key, size_t *pos)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = *pos == KX_HMAP_START ? kx_hmap_home(m, key) : (*pos + 1) & (m->cap - 1);
	for (; m->slot[i].used; i = (i + 1) & (m->cap - 1)) {
		if (m->slot[i].key == key) {
			*pos = i;
			return &m->slot[i].val;
		}
	}
	return NULL;
}

int kx_hmap_add(struct kx_hmap *m, uint64_t key, uint32_t val)
{
	if (kx_hmap_reserve(m))
		return -1;
	place(m->slot, m->cap, key, val);
	m->n++;
	return 0;
}

uint32_t *kx_hmap_put(struct kx_hmap *m, uint64_t key, uint32_t val, int *isnew)
{
	uint32_t *v = kx_hmap_get(m, key);

	if (isnew)
		*isnew = !v;
	if (v)
		return v;
	if (kx_hmap_add(m, key, val))
		return NULL;
	return kx_hmap_get(m, key);
}

void kx_hmap_del_at(struct kx_hmap *m, size_t pos)
{
	size_t i = pos, j = pos, mask = m->cap - 1;

	m->slot[i].used = 0;
	m->n--;
	/* Backward shift: move each later entry of the run back to the hole
	 * unless its home lies cyclically in (hole, its place]. */
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->slot[j].used)
			return;
		home = kx_hmap_home(m, m->slot[j].key);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slot[i] = m->slot[j];
			m->slot[j].used = 0;
			i = j;
		}
	}
}

int kx_hmap_del(struct kx_hmap *m, uint64_t key)
{
	size_t pos = KX_HMAP_START;

	if (!kx_hmap_next(m, key, &pos))
		return 0;
	kx_hmap_del_at(m, pos);
	return 1;
}
