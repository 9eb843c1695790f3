/* util/minheap.h: records come out smallest first by the caller's order,
 * interleaved pushes and pops, ties kept apart by a second key, and an
 * emptied heap reused. */
#include <stdint.h>

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

int main(void)
{
	RUN(pops_in_order);
	RUN(sorts);
	KXT_EXIT();
}
