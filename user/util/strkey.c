/*
 * Strings made once per key (see strkey.h): a hash of key -> interned id,
 * with the last key found remembered.
 */
#include "util/strkey.h"

long kx_strkey_find(struct kx_strkey *t, uint64_t key)
{
	long id;

	if (t->last && t->last_key == key)
		return (long)t->last - 1;
	id = kx_strkey_get(t, key);
	if (id < 0)
		return -1;
	t->last_key = key;
	t->last = (uint32_t)id + 1;
	return id;
}

long kx_strkey_add(struct kx_strkey *t, struct kx_intern *in, uint64_t key, const char *s, size_t n)
{
	long id = kx_intern_add(in, s, n);

	return id < 0 || kx_hmap_add(&t->ids, key, (uint32_t)id) ? -1 : id;
}

void kx_strkey_free(struct kx_strkey *t)
{
	kx_hmap_free(&t->ids);
	t->last = 0;
}
