/*
 * Strings made once per key (user/util/strkey.h) and the lower-bound
 * search (user/util/lbound.h) the exporters share: a key's string interned
 * once, keys sharing a string sharing its id, the remembered last key
 * never answering for another, lookups that change nothing; the first
 * index at or above a key, with repeats and at the ends.
 */
#include <stdint.h>
#include <string.h>

#include "kxtest.h"
#include "util/lbound.h"
#include "util/strkey.h"

static void test_keys(void)
{
	struct kx_intern in = {0};
	struct kx_strkey t = {0};

	CHECK(kx_strkey_find(&t, 7) == -1);
	CHECK(kx_strkey_get(&t, 7) == -1);
	CHECK_EQ_U(kx_strkey_add(&t, &in, 7, "seven", 5), 0);
	CHECK_EQ_U(kx_strkey_add(&t, &in, 8, "eight", 5), 1);
	/* Another key with the same string: the same id, one copy. */
	CHECK_EQ_U(kx_strkey_add(&t, &in, 9, "seven!", 5), 0);
	CHECK_EQ_U(in.n, 2);
	CHECK_EQ_U(kx_strkey_find(&t, 8), 1);
	CHECK_EQ_U(kx_strkey_find(&t, 8), 1);
	/* The last key found never answers for another. */
	CHECK_EQ_U(kx_strkey_find(&t, 7), 0);
	CHECK(kx_strkey_find(&t, 10) == -1);
	CHECK_EQ_U(kx_strkey_find(&t, 9), 0);
	CHECK_EQ_U(kx_strkey_get(&t, 8), 1);
	CHECK_STR(kx_intern_str(&in, (size_t)kx_strkey_get(&t, 9)), "seven");
	kx_strkey_free(&t);
	CHECK(kx_strkey_find(&t, 8) == -1);
	kx_intern_free(&in);
}

/* Key 0 and keys past 32 bits are keys like any other. */
static void test_wide_keys(void)
{
	struct kx_intern in = {0};
	struct kx_strkey t = {0};

	CHECK_EQ_U(kx_strkey_add(&t, &in, 0, "zero", 4), 0);
	CHECK_EQ_U(kx_strkey_add(&t, &in, 1ULL << 40, "wide", 4), 1);
	CHECK_EQ_U(kx_strkey_find(&t, 0), 0);
	CHECK_EQ_U(kx_strkey_find(&t, 1ULL << 40), 1);
	CHECK(kx_strkey_find(&t, 1) == -1);
	kx_strkey_free(&t);
	kx_intern_free(&in);
}

static uint64_t at_u64(const void *ctx, size_t i)
{
	return ((const uint64_t *)ctx)[i];
}

static void test_lbound(void)
{
	static const uint64_t v[] = {1, 3, 3, 3, 8, 9};

	CHECK_EQ_U(kx_lbound(0, 6, 0, at_u64, v), 0);
	CHECK_EQ_U(kx_lbound(0, 6, 1, at_u64, v), 0);
	CHECK_EQ_U(kx_lbound(0, 6, 2, at_u64, v), 1);
	CHECK_EQ_U(kx_lbound(0, 6, 3, at_u64, v), 1);
	CHECK_EQ_U(kx_lbound(0, 6, 4, at_u64, v), 4);
	CHECK_EQ_U(kx_lbound(0, 6, 9, at_u64, v), 5);
	CHECK_EQ_U(kx_lbound(0, 6, 10, at_u64, v), 6);
	/* Within a part of the range only. */
	CHECK_EQ_U(kx_lbound(2, 4, 0, at_u64, v), 2);
	CHECK_EQ_U(kx_lbound(2, 4, 8, at_u64, v), 4);
	CHECK_EQ_U(kx_lbound(3, 3, 0, at_u64, v), 3);
}

int main(void)
{
	RUN(test_keys);
	RUN(test_wide_keys);
	RUN(test_lbound);
	KXT_EXIT();
}
