/* util/grow.h: the doubling rule, its first size, and failure leaving the
 * array alone; byte appends; exact-fit reserves; util/slots.h: slots put back are reused, zeroed,
 * and counted. */
#include <stdint.h>

#include "kxtest.h"
#include "util/grow.h"
#include "util/slots.h"

static void doubles_from_16(void)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	CHECK(!kx_grow((void **)&a, &cap, 0, sizeof(*a)));
	CHECK(a && cap == 16);
	for (size_t i = 0; i < 1000; i++) {
		size_t before = cap;

		CHECK(!kx_grow((void **)&a, &cap, i, sizeof(*a)));
		CHECK(i < cap);
		CHECK(cap == before || cap == 2 * before);
		a[i] = (uint32_t)i;
	}
	CHECK_EQ_U(cap, 1024);
	for (size_t i = 0; i < 1000; i++)
		CHECK_EQ_U(a[i], i);
	free(a);
}

struct slot_el {
	uint64_t a, b;
};

static void slots_reused(void)
{
	struct kx_slots p = KX_SLOTS_INIT(struct slot_el);
	long first[100];

	for (int i = 0; i < 100; i++) {
		first[i] = kx_slots_get(&p);
		CHECK(first[i] == i);
		((struct slot_el *)kx_slots_at(&p, (size_t)i))->a = (uint64_t)i + 1;
	}
	CHECK_EQ_U(kx_slots_live(&p), 100);
	/* Every other one back: they come again, last first, zeroed; no new slot. */
	for (int i = 0; i < 100; i += 2)
		kx_slots_put(&p, (size_t)i);
	CHECK_EQ_U(kx_slots_live(&p), 50);
	for (int i = 98; i >= 0; i -= 2) {
		long k = kx_slots_get(&p);

		CHECK(k == i);
		CHECK(((struct slot_el *)kx_slots_at(&p, (size_t)k))->a == 0);
	}
	CHECK_EQ_U(p.n, 100);
	CHECK(((struct slot_el *)kx_slots_at(&p, 1))->a == 2);
	/* A new one past the end when none is free. */
	CHECK(kx_slots_get(&p) == 100);
	CHECK_EQ_U(kx_slots_live(&p), 101);
	kx_slots_free(&p);
	CHECK(!p.v && !p.n);
}

static void room_left_no_realloc(void)
{
	uint64_t *a = NULL, *was;
	size_t cap = 0;

	CHECK(!kx_grow((void **)&a, &cap, 0, sizeof(*a)));
	was = a;
	CHECK(!kx_grow((void **)&a, &cap, 15, sizeof(*a)));
	CHECK(a == was && cap == 16);
	free(a);
}

static void failure_keeps_array(void)
{
	char *a = NULL;
	size_t cap = 0;

	CHECK(!kx_grow((void **)&a, &cap, 0, 1));
	a[0] = 'x';
	/* Doubling the count overflows; then the count fits but not its bytes. */
	cap = SIZE_MAX / 2 + 1;
	CHECK(kx_grow((void **)&a, &cap, cap, 1) == -1);
	CHECK(a && a[0] == 'x' && cap == SIZE_MAX / 2 + 1);
	cap = SIZE_MAX / 4;
	CHECK(kx_grow((void **)&a, &cap, cap, 4) == -1);
	CHECK(a && a[0] == 'x' && cap == SIZE_MAX / 4);
	cap = 16;
	free(a);
}

/* Room for many at once: doubling from the given first size until they fit. */
static void room_for_many(void)
{
	char *b = NULL;
	size_t cap = 0;

	CHECK(!kx_grow_by((void **)&b, &cap, 0, 10, 1, 4096));
	CHECK_EQ_U(cap, 4096);
	CHECK(!kx_grow_by((void **)&b, &cap, 4000, 96, 1, 4096)); /* fits exactly */
	CHECK_EQ_U(cap, 4096);
	CHECK(!kx_grow_by((void **)&b, &cap, 4000, 97, 1, 4096));
	CHECK_EQ_U(cap, 8192);
	CHECK(!kx_grow_by((void **)&b, &cap, 8000, 20000, 1, 4096));
	CHECK_EQ_U(cap, 32768);
	memset(b, 'y', cap);
	CHECK(kx_grow_by((void **)&b, &cap, 10, SIZE_MAX - 5, 1, 4096) == -1);
	CHECK_EQ_U(cap, 32768);
	free(b);
}

/* A byte buffer's failure sticks: later writers get NULL too. */
static void bytes_oom_sticks(void)
{
	struct kx_bytes b = {0};
	uint8_t *w = kx_bytes_room(&b, 10);
	size_t len;

	CHECK(w && b.cap == 4096 && !b.oom);
	memcpy(w, "0123456789", 10);
	b.len = 10;
	len = b.len;
	b.len = SIZE_MAX - 1; /* room for 10 more cannot be had */
	CHECK(!kx_bytes_room(&b, 10));
	CHECK(b.oom);
	b.len = len;
	CHECK(!kx_bytes_room(&b, 1));
	CHECK(!memcmp(b.p, "0123456789", 10));
	free(b.p);
}

/* Appends land after each other; once oom is set nothing more is appended. */
static void bytes_put_appends(void)
{
	struct kx_bytes b = {0};

	kx_bytes_put(&b, "ab", 2);
	kx_bytes_put(&b, "cde", 3);
	CHECK_EQ_U(b.len, 5);
	CHECK(!memcmp(b.p, "abcde", 5));
	b.oom = 1;
	kx_bytes_put(&b, "f", 1);
	CHECK_EQ_U(b.len, 5);
	free(b.p);
}

/* Exact fit: the capacity is the count asked for, never less than before. */
static void reserve_exact(void)
{
	uint64_t *a = NULL;
	size_t cap = 0;

	CHECK(!kx_reserve((void **)&a, &cap, 0, sizeof(*a)));
	CHECK(!a && !cap);
	CHECK(!kx_reserve((void **)&a, &cap, 3, sizeof(*a)));
	CHECK(a && cap == 3);
	a[2] = 42;
	CHECK(!kx_reserve((void **)&a, &cap, 2, sizeof(*a)));
	CHECK_EQ_U(cap, 3);
	CHECK(!kx_reserve((void **)&a, &cap, 1000, sizeof(*a)));
	CHECK_EQ_U(cap, 1000);
	CHECK_EQ_U(a[2], 42);
	CHECK(kx_reserve((void **)&a, &cap, SIZE_MAX / 4, sizeof(*a)) == -1);
	CHECK_EQ_U(cap, 1000);
	free(a);
}

int main(void)
{
	RUN(doubles_from_16);
	RUN(slots_reused);
	RUN(room_left_no_realloc);
	RUN(failure_keeps_array);
	RUN(room_for_many);
	RUN(bytes_oom_sticks);
	RUN(bytes_put_appends);
	RUN(reserve_exact);
	KXT_EXIT();
}
