/*
 * The string interner (user/util/intern.h): dense ids in the order first
 * added, one copy per distinct string that never moves, strings that are
 * prefixes of each other kept apart, and a budget charged before every
 * allocation (refused: nothing added) and given everything back at free.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kxtest.h"
#include "util/intern.h"

static void test_ids(void)
{
	struct kx_intern t = {0};

	CHECK_EQ_U(kx_intern_cstr(&t, "abc"), 0);
	CHECK_EQ_U(kx_intern_cstr(&t, "ab"), 1);
	CHECK_EQ_U(kx_intern_add(&t, "abcd", 3), 0);
	CHECK_EQ_U(kx_intern_cstr(&t, ""), 2);
	CHECK_EQ_U(kx_intern_cstr(&t, "ab"), 1);
	CHECK(kx_intern_find(&t, "a", 1) == -1);
	CHECK_EQ_U(kx_intern_find(&t, "abx", 2), 1);
	CHECK_EQ_U(t.n, 3);
	CHECK_STR(kx_intern_str(&t, 0), "abc");
	CHECK_STR(kx_intern_str(&t, 2), "");
	kx_intern_free(&t);
	CHECK_EQ_U(t.n, 0);
}

/* Many strings over many chunks, one longer than a chunk: each copy stays
 * where it was first put. */
static void test_stable_copies(void)
{
	static char big[KX_INTERN_CHUNK + 100];
	struct kx_intern t = {0};
	const char *first[3] = {0};
	char s[32];

	memset(big, 'x', sizeof(big) - 1);
	for (int i = 0; i < 20000; i++) {
		snprintf(s, sizeof(s), "name-%d", i);
		CHECK_EQ_U(kx_intern_cstr(&t, s), i + (i > 10000));
		if (i == 0)
			first[0] = kx_intern_str(&t, 0);
		if (i == 10000) {
			CHECK_EQ_U(kx_intern_cstr(&t, big), 10001);
			first[1] = kx_intern_str(&t, 10001);
		}
	}
	first[2] = kx_intern_str(&t, 19000);
	CHECK(t.nchunks > 3);
	CHECK(kx_intern_str(&t, 0) == first[0]);
	CHECK(kx_intern_str(&t, 10001) == first[1]);
	CHECK_EQ_U(strlen(first[1]), sizeof(big) - 1);
	CHECK_STR(first[0], "name-0");
	CHECK_STR(first[2], "name-18999");
	CHECK_EQ_U(kx_intern_find(&t, "name-18999", 10), 19000);
	kx_intern_free(&t);
}

struct budget {
	long long used, limit;
};

static int charge(void *ctx, long long n)
{
	struct budget *b = ctx;

	if (n > 0 && b->used + n > b->limit)
		return -1;
	b->used += n;
	return 0;
}

static void test_budget(void)
{
	struct budget b = {0, 200000};
	struct kx_intern t = {.charge = charge, .charge_ctx = &b};
	char s[32];
	int i;

	for (i = 0; i < 1000000; i++) {
		snprintf(s, sizeof(s), "string-%d", i);
		if (kx_intern_cstr(&t, s) < 0)
			break;
	}
	CHECK(i > 1000 && i < 1000000);
	CHECK_EQ_U(t.n, (size_t)i);
	CHECK(b.used <= b.limit);
	CHECK_EQ_U((size_t)b.used, t.bytes);
	CHECK(kx_intern_find(&t, s, strlen(s)) == -1);
	CHECK_EQ_U(kx_intern_cstr(&t, "string-0"), 0); /* known ones still found */
	kx_intern_free(&t);
	CHECK_EQ_U(b.used, 0);
}

int main(void)
{
	RUN(test_ids);
	RUN(test_stable_copies);
	RUN(test_budget);
	KXT_EXIT();
}
