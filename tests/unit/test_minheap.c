/* util/minheap.h: records come out smallest first by the caller's order,
 * interleaved pushes and pops, ties kept apart by a second key, and an
 * emptied heap reused; records the order calls equal (the lanes' ends) come
 * out in the order, and lie in the array where, they always have (the
 * outputs depend on it), typed heaps (KX_MINHEAP_TYPED) alike; records of 4
 * and 56 bytes. */
#include <stdint.h>
#include <string.h>

#include "kxtest.h"
#include "util/minheap.h"

struct rec {
	uint64_t key, seq;
};

static int rec_less(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;

	return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

static void pops_in_order(void)
{
	struct kx_minheap h = KX_MINHEAP_INIT(struct rec, rec_less);
	struct rec r, last = {0, 0};
	uint64_t x = 12345;
	size_t out = 0;

	CHECK(kx_minheap_top(&h) == NULL);
	for (uint64_t i = 0; i < 5000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		r = (struct rec){x >> 54, i}; /* 1,024 keys: many ties */
		CHECK(kx_minheap_push(&h, &r) == 0);
		/* Every third push, the smallest goes: none left is smaller. */
		if (i % 3 == 2) {
			kx_minheap_pop(&h, &r);
			CHECK(!rec_less(kx_minheap_top(&h), &r));
			out++;
		}
	}
	last = (struct rec){0, 0};
	while (h.n) {
		kx_minheap_pop(&h, &r);
		CHECK(!rec_less(&r, &last));
		last = r;
		out++;
	}
	CHECK_EQ_U(out, 5000);
	kx_minheap_free(&h);
	CHECK(h.n == 0 && h.v == NULL);
	r = (struct rec){7, 1};
	CHECK(kx_minheap_push(&h, &r) == 0);
	CHECK(((const struct rec *)kx_minheap_top(&h))->key == 7);
	kx_minheap_free(&h);
}

static int u64_less(const void *a, const void *b)
{
	return *(const uint64_t *)a < *(const uint64_t *)b;
}

/* A sorted drain of descending input. */
static void sorts(void)
{
	struct kx_minheap h = KX_MINHEAP_INIT(uint64_t, u64_less);
	uint64_t v;

	for (uint64_t i = 1000; i > 0; i--)
		CHECK(kx_minheap_push(&h, &i) == 0);
	for (uint64_t i = 1; i <= 1000; i++) {
		kx_minheap_pop(&h, &v);
		CHECK_EQ_U(v, i);
	}
	kx_minheap_free(&h);
}

/* Ordered by key alone, as the lanes' ends are: equal keys are ties. */
struct tie {
	uint64_t key;
	uint32_t id, pad;
};

static int key_less(const void *a, const void *b)
{
	return ((const struct tie *)a)->key < ((const struct tie *)b)->key;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 1099511628211ull;
	}
	return h;
}

/* 24 records of 3 keys, one out every fourth push, then the rest: the ids in
 * the order the swapping heap gave them (any other tie rule differs). */
static void ties_come_out_as_before(void)
{
	static const uint32_t want[24] = {0,  3, 6, 11, 18, 22, 5,  19, 13, 9,  15, 16,
	                                  14, 2, 7, 12, 4,  1,  17, 8,  10, 23, 20, 21};
	struct kx_minheap h = KX_MINHEAP_INIT(struct tie, key_less);
	struct tie t;
	uint32_t x = 7;
	size_t k = 0;

	for (uint32_t i = 0; i < 24; i++) {
		x = x * 1103515245u + 12345u;
		t = (struct tie){(x >> 16) % 3, i, 0};
		CHECK(kx_minheap_push(&h, &t) == 0);
		if (i % 4 == 3) {
			kx_minheap_pop(&h, &t);
			CHECK_EQ_U(t.id, want[k]);
			k++;
		}
	}
	while (h.n) {
		kx_minheap_pop(&h, &t);
		CHECK_EQ_U(t.id, want[k]);
		k++;
	}
	CHECK_EQ_U(k, 24);
	kx_minheap_free(&h);
}

/* 20,000 records of 16 keys, one out every third push: the array left and the
 * order of every pop, as hashes of the ids (those of the swapping heap). */
static void ties_at_scale(void)
{
	struct kx_minheap h = KX_MINHEAP_INIT(struct tie, key_less);
	uint64_t popped = 14695981039346656037ull, array = popped, s = 99;
	struct tie t;

	for (uint32_t i = 0; i < 20000; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		t = (struct tie){s >> 60, i, 0};
		CHECK(kx_minheap_push(&h, &t) == 0);
		if (i % 3 == 1) {
			kx_minheap_pop(&h, &t);
			popped = fnv(popped, t.id);
		}
	}
	CHECK_EQ_U(h.n, 13333);
	for (size_t i = 0; i < h.n; i++)
		array = fnv(array, ((const struct tie *)h.v)[i].id);
	CHECK_EQ_U(array, 0x3358c4b9988f06e4ull);
	while (h.n) {
		kx_minheap_pop(&h, &t);
		popped = fnv(popped, t.id);
	}
	CHECK_EQ_U(popped, 0xe904f87eb4782c19ull);
	kx_minheap_free(&h);
}

KX_MINHEAP_TYPED(tie, struct tie, key_less)

/* A typed heap (constant size, inlined order) keeps the array and gives the
 * pops of the generic one, ties included. */
static void typed_as_generic(void)
{
	struct kx_minheap g = KX_MINHEAP_INIT(struct tie, key_less);
	struct kx_minheap t = KX_MINHEAP_INIT(struct tie, key_less);
	struct tie a, b;
	uint64_t s = 5;

	for (uint32_t i = 0; i < 3000; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		a = (struct tie){s >> 61, i, 0};
		CHECK(kx_minheap_push(&g, &a) == 0);
		CHECK(tie_push(&t, &a) == 0);
		if (i % 5 == 2) {
			kx_minheap_pop(&g, &a);
			tie_pop(&t, &b);
			CHECK_EQ_U(a.id, b.id);
		}
	}
	CHECK(g.n == t.n && memcmp(g.v, t.v, g.n * sizeof(struct tie)) == 0);
	while (g.n) {
		kx_minheap_pop(&g, &a);
		tie_pop(&t, g.n % 2 ? &b : NULL); /* out NULL: dropped */
		if (g.n % 2)
			CHECK_EQ_U(a.id, b.id);
	}
	CHECK(t.n == 0);
	kx_minheap_free(&g);
	kx_minheap_free(&t);
}

static int u32_less(const void *a, const void *b)
{
	return *(const uint32_t *)a < *(const uint32_t *)b;
}

/* A job-sized record: 56 bytes, by start then seq. */
struct big {
	uint64_t start, end, in, ts, seq;
	uint32_t ring, sunk;
	uint8_t busy, done;
};

static int big_less(const void *pa, const void *pb)
{
	const struct big *a = pa, *b = pb;

	return a->start != b->start ? a->start < b->start : a->seq < b->seq;
}

/* Records of 4 bytes (copied whole) and of 56 (in words) keep every byte. */
static void sizes(void)
{
	struct kx_minheap h4 = KX_MINHEAP_INIT(uint32_t, u32_less);
	struct kx_minheap h56 = KX_MINHEAP_INIT(struct big, big_less);
	struct big b;
	uint32_t v;

	CHECK_EQ_U(h56.size, 56);
	for (uint32_t i = 0; i < 300; i++) {
		v = (i * 37) % 300;
		CHECK(kx_minheap_push(&h4, &v) == 0);
		b = (struct big){i % 10, i * 3, i * 5, i * 7, i, i * 11, i * 13, (uint8_t)i, 1};
		CHECK(kx_minheap_push(&h56, &b) == 0);
	}
	for (uint32_t i = 0; i < 300; i++) {
		kx_minheap_pop(&h4, &v);
		CHECK_EQ_U(v, i);
	}
	for (uint64_t start = 0, k = 0; k < 300; k++) {
		kx_minheap_pop(&h56, &b);
		CHECK(b.start >= start);
		start = b.start;
		CHECK(b.end == b.seq * 3 && b.in == b.seq * 5 && b.ts == b.seq * 7);
		CHECK(b.ring == b.seq * 11 && b.sunk == b.seq * 13);
		CHECK(b.busy == (uint8_t)b.seq && b.done == 1);
	}
	kx_minheap_free(&h4);
	kx_minheap_free(&h56);
}

int main(void)
{
	RUN(pops_in_order);
	RUN(sorts);
	RUN(ties_come_out_as_before);
	RUN(ties_at_scale);
	RUN(typed_as_generic);
	RUN(sizes);
	KXT_EXIT();
}
