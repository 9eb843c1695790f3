/*
 * Hash map from a 64-bit key to a 32-bit value: the one hash table of the
 * project. Callers keep their records in their own arrays and map a key to
 * the record's index. Open addressing with linear probing, at most half
 * full; deletion by backward shift (no tombstones).
 *
 * Keys wider than 64 bits (strings, tuples) are mapped by their hash
 * (kx_hash_bytes, kx_hash_u64): then several records may share a key, so
 * the caller adds with kx_hmap_add and walks the candidates with
 * kx_hmap_next, comparing its own records.
 *
 * A map made with kx_hmap_init_fixed never grows: its memory is bounded by
 * the number of entries it was made for, and an add past that fails.
 * Lookups never allocate; a map is safe to read from several threads while
 * nobody writes to it.
 */
#ifndef KX_HASHMAP_H
#define KX_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct kx_hslot {
	uint64_t key;
	uint32_t val;
	uint32_t used; /* 0: empty */
};

struct kx_hmap {
	struct kx_hslot *slot;
	size_t cap;   /* slots, a power of two (0 until the first add) */
	size_t n;     /* entries */
	size_t fixed; /* kx_hmap_init_fixed: the most entries, never grows; else 0 */
};

#define KX_HMAP_INIT                                                                               \
	{                                                                                          \
		NULL, 0, 0, 0                                                                      \
	}
#define KX_HMAP_START SIZE_MAX /* kx_hmap_next: start a walk */

/* Mixes a 64-bit key so that keys differing in few bits spread (splitmix64). */
static inline uint64_t kx_hash_u64(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

/* A key for a tuple, one word at a time: h = kx_hash_combine(h, word), from 0. */
static inline uint64_t kx_hash_combine(uint64_t h, uint64_t word)
{
	return kx_hash_u64(h ^ word);
}

/* Hash of n bytes (FNV-1a, 64 bits). */
uint64_t kx_hash_bytes(const void *s, size_t n);

/* A map that holds at most max entries and never grows (memory: 2 to 4
 * slots of 16 bytes per entry). 0, or -1 when out of memory. */
int kx_hmap_init_fixed(struct kx_hmap *m, size_t max);
void kx_hmap_free(struct kx_hmap *m);
/* Bytes the next add will allocate (the new table), 0 when it will not grow. */
size_t kx_hmap_grow_bytes(const struct kx_hmap *m);
/* Room for one more entry, so that the next add allocates nothing. 0, or -1
 * when out of memory or a fixed map is full. */
int kx_hmap_reserve(struct kx_hmap *m);

static inline size_t kx_hmap_home(const struct kx_hmap *m, uint64_t key)
{
	return (size_t)kx_hash_u64(key) & (m->cap - 1);
}

/* The value of key, or NULL when absent (the first, for a shared key). */
static inline uint32_t *kx_hmap_get(const struct kx_hmap *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = kx_hmap_home(m, key); m->slot[i].used; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == key)
			return &m->slot[i].val;
	return NULL;
}

/*
 * Walks the entries of key: *pos starts at KX_HMAP_START; returns the next
 * value, or NULL at the end. *pos names the entry for kx_hmap_del_at.
 */
uint32_t *kx_hmap_next(const struct kx_hmap *m, uint64_t key, size_t *pos);

/* Adds key -> val, beside any entry of the same key. 0, or -1 when out of
 * memory or a fixed map is full (nothing changed). */
int kx_hmap_add(struct kx_hmap *m, uint64_t key, uint32_t val);

/*
 * The value of key, added as val when absent (*isnew says which; isnew may
 * be NULL). NULL when out of memory or a fixed map is full. The pointer
 * stays valid until the next change of the map.
 */
uint32_t *kx_hmap_put(struct kx_hmap *m, uint64_t key, uint32_t val, int *isnew);

/* Removes the entry a walk (kx_hmap_next) is at; the walk cannot go on. */
void kx_hmap_del_at(struct kx_hmap *m, size_t pos);
/* Removes key's first entry; 1 when there was one, else 0. */
int kx_hmap_del(struct kx_hmap *m, uint64_t key);

#endif /* KX_HASHMAP_H */
