/* util/hashmap: lookups, growth, shared keys, deletion, fixed maps. */
#include <stdint.h>

#include "kxtest.h"
#include "util/hashmap.h"

#define N 20000

static void put_get_grow(void)
{
	struct kx_hmap m = KX_HMAP_INIT;
	int isnew;

	CHECK(!kx_hmap_get(&m, 1));
	CHECK(kx_hmap_grow_bytes(&m) > 0);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *v = kx_hmap_put(&m, (uint64_t)i << 32 | 7, i, &isnew);

		CHECK(v && isnew && *v == i);
	}
	CHECK_EQ_U(m.n, N);
	CHECK(m.n * 2 <= m.cap);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *v = kx_hmap_put(&m, (uint64_t)i << 32 | 7, 0, &isnew);

		CHECK(v && !isnew);
		CHECK_EQ_U(*v, i);
	}
	CHECK(!kx_hmap_get(&m, 8));
	CHECK(!kx_hmap_get(&m, UINT64_MAX));
	kx_hmap_free(&m);
	CHECK(!m.cap && !m.n);
}

/* Keys made to share a home slot: long probe runs, then deletions inside them. */
static void collisions_and_delete(void)
{
	struct kx_hmap m = KX_HMAP_INIT;
	uint64_t keys[40];
	size_t nk = 0;

	CHECK(!kx_hmap_add(&m, 0, 0)); /* cap 64 now */
	CHECK(kx_hmap_del(&m, 0));
	for (uint64_t k = 1; nk < 20; k++)
		if (kx_hmap_home(&m, k) == 63 || kx_hmap_home(&m, k) == 0)
			keys[nk++] = k; /* runs that wrap around the end */
	for (size_t i = 0; i < nk; i++)
		CHECK(!kx_hmap_add(&m, keys[i], (uint32_t)i));
	for (size_t i = 0; i < nk; i += 2)
		CHECK(kx_hmap_del(&m, keys[i]));
	CHECK(!kx_hmap_del(&m, keys[0]));
	for (size_t i = 0; i < nk; i++) {
		uint32_t *v = kx_hmap_get(&m, keys[i]);

		if (i % 2) {
			CHECK(v);
			CHECK_EQ_U(*v, i);
		} else {
			CHECK(!v);
		}
	}
	CHECK_EQ_U(m.n, nk / 2);
	kx_hmap_free(&m);
}

static void shared_keys(void)
{
	struct kx_hmap m = KX_HMAP_INIT;
	size_t pos = KX_HMAP_START;
	uint32_t *v, seen = 0;

	for (uint32_t i = 0; i < 5; i++)
		CHECK(!kx_hmap_add(&m, 99, i));
	CHECK(!kx_hmap_add(&m, 100, 50));
	while ((v = kx_hmap_next(&m, 99, &pos)))
		seen |= 1u << *v;
	CHECK_EQ_U(seen, 0x1f);
	/* Delete the entry of value 2 through a walk; the others stay. */
	pos = KX_HMAP_START;
	while ((v = kx_hmap_next(&m, 99, &pos)) && *v != 2)
		;
	CHECK(v);
	kx_hmap_del_at(&m, pos);
	seen = 0;
	pos = KX_HMAP_START;
	while ((v = kx_hmap_next(&m, 99, &pos)))
		seen |= 1u << *v;
	CHECK_EQ_U(seen, 0x1b);
	CHECK_EQ_U(*kx_hmap_get(&m, 100), 50);
	kx_hmap_free(&m);
}

static void fixed_map_bound(void)
{
	struct kx_hmap m;
	size_t cap;

	CHECK(!kx_hmap_init_fixed(&m, 100));
	cap = m.cap;
	for (uint32_t i = 0; i < 100; i++)
		CHECK(!kx_hmap_add(&m, i, i));
	CHECK(kx_hmap_add(&m, 1000, 0) == -1);
	CHECK(!kx_hmap_put(&m, 1000, 0, NULL));
	CHECK(kx_hmap_put(&m, 5, 0, NULL)); /* present: no room needed */
	CHECK_EQ_U(kx_hmap_grow_bytes(&m), 0);
	/* Churn: delete and add many times, the table never grows. */
	for (uint32_t r = 0; r < 5000; r++) {
		CHECK(kx_hmap_del(&m, r));
		CHECK(!kx_hmap_add(&m, r + 100, r + 100));
	}
	CHECK_EQ_U(m.cap, cap);
	CHECK_EQ_U(m.n, 100);
	for (uint32_t i = 5000; i < 5100; i++)
		CHECK_EQ_U(*kx_hmap_get(&m, i), i);
	kx_hmap_free(&m);
}

static void byte_hash(void)
{
	CHECK_EQ_U(kx_hash_bytes("", 0), 0xcbf29ce484222325ULL);
	CHECK_EQ_U(kx_hash_bytes("a", 1), 0xaf63dc4c8601ec8cULL); /* FNV-1a 64 test vector */
	CHECK(kx_hash_bytes("ab", 2) != kx_hash_bytes("ba", 2));
}

int main(void)
{
	RUN(put_get_grow);
	RUN(collisions_and_delete);
	RUN(shared_keys);
	RUN(fixed_map_bound);
	RUN(byte_hash);
	KXT_EXIT();
}
