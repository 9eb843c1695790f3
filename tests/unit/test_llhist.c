/*
 * util/llhist: the bucketing covers every value once, the stated error
 * bound (|reported - true| <= true / 256, exact below 256) holds at every
 * bucket edge and for quantiles against exact nearest-rank percentiles of
 * many distributions, count/min/max are exact, merging equals adding, and
 * memory does not grow with the count.
 */
#include <stdint.h>
#include <stdlib.h>

#include "kxtest.h"
#include "util/hist.h"
#include "util/llhist.h"

/* The bound: reported within true / 256 of true (so exact below 256). */
static int within(uint64_t reported, uint64_t truth)
{
	uint64_t d = reported > truth ? reported - truth : truth - reported;

	return (unsigned __int128)d * 256 <= truth;
}

/* Every bucket: its edges map to it, its neighbours do not, widths double
 * per group, and both edges are within the bound of its midpoint. */
static void bucket_edges(void)
{
	uint64_t next = 0;

	for (unsigned int g = 0; g < KX_LLH_GROUPS; g++) {
		for (unsigned int s = 0; s < KX_LLH_SUB; s++) {
			unsigned int gg, ss;
			uint64_t lo, w, hi;

			kx_llhist_bucket(next, &gg, &ss, &lo, &w);
			CHECK_EQ_U(gg, g);
			CHECK_EQ_U(ss, s);
			CHECK_EQ_U(lo, next); /* buckets tile the values with no gap */
			CHECK_EQ_U(w, g ? 1ull << (g - 1) : 1);
			hi = lo + (w - 1);
			kx_llhist_bucket(hi, &gg, &ss, &lo, &w);
			CHECK_EQ_U(gg, g);
			CHECK_EQ_U(ss, s);
			CHECK(within(kx_llhist_mid(lo), lo));
			CHECK(within(kx_llhist_mid(hi), hi));
			if (hi < 256)
				CHECK_EQ_U(kx_llhist_mid(hi), hi);
			next = hi + 1; /* wraps to 0 after the last bucket */
		}
	}
	CHECK_EQ_U(next, 0);
}

/* Values spread over every power of two: the midpoint is within the bound. */
static void random_values_within_bound(void)
{
	for (int i = 0; i < 2000000; i++) {
		unsigned int bits = (unsigned int)(kxt_rand() % 64);
		uint64_t v = kxt_rand() >> (63 - bits);

		CHECK(within(kx_llhist_mid(v), v));
	}
	CHECK(within(kx_llhist_mid(UINT64_MAX), UINT64_MAX));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A latency-like value of distribution kind d. */
static uint64_t draw(int d)
{
	switch (d) {
	case 0: /* uniform over a small range: exact territory */
		return kxt_rand() % 300;
	case 1: /* about log-uniform, 100 ns to 10 s */
		return (100 + kxt_rand() % 900) << (kxt_rand() % 24);
	case 2: /* bimodal: fast path and slow path */
		return kxt_rand() % 10 ? 800 + kxt_rand() % 200 : 5000000 + kxt_rand() % 3000000;
	case 3: /* few distinct values, many repeats */
		return 1000ull << (kxt_rand() % 4);
	default: /* heavy tail */
		return 1000 + (kxt_rand() % 1000) * (kxt_rand() % 1000) * (kxt_rand() % 1000);
	}
}

/* Quantiles of many data sets against exact nearest-rank ones (sorted). */
static void quantiles_vs_exact(void)
{
	static const uint32_t ppm[] = {0,          KX_PPM(1),    KX_PPM(50), KX_PPM(90),
	                               KX_PPM(99), KX_PPM(99.9), 1000000};
	static const size_t sizes[] = {1, 2, 3, 10, 101, 1000, 65537, 200000};
	uint64_t *v = malloc(200000 * sizeof(*v));

	CHECK(v);
	for (int d = 0; d < 5; d++) {
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			struct kx_llhist h;
			size_t n = sizes[z];

			kx_llhist_init(&h);
			for (size_t i = 0; i < n; i++) {
				v[i] = draw(d);
				if (kx_llhist_add(&h, v[i], 1)) {
					free(v);
					CHECK(!"out of memory");
				}
			}
			qsort(v, n, sizeof(*v), cmp_u64);
			if (h.count != n || h.min != v[0] || h.max != v[n - 1]) {
				kx_llhist_free(&h);
				free(v);
				CHECK(!"count, min or max not exact");
			}
			for (size_t q = 0; q < sizeof(ppm) / sizeof(ppm[0]); q++) {
				uint64_t exact = v[kx_hist_rank(n, ppm[q]) - 1];
				uint64_t got = kx_llhist_quantile(&h, ppm[q]);

				if (!within(got, exact)) {
					printf("# dist %d n %zu ppm %u: %llu vs exact %llu\n", d, n,
					       ppm[q], (unsigned long long)got,
					       (unsigned long long)exact);
					kx_llhist_free(&h);
					free(v);
					CHECK(!"quantile outside the bound");
				}
			}
			/* The extremes are exact. */
			CHECK_EQ_U(kx_llhist_quantile(&h, 0), v[0]);
			CHECK_EQ_U(kx_llhist_quantile(&h, 1000000), v[n - 1]);
			kx_llhist_free(&h);
		}
	}
	free(v);
}

/* Weighted adds and merges equal adding the values one by one. */
static void merge_equals_add(void)
{
	struct kx_llhist a, b, all;

	kx_llhist_init(&a);
	kx_llhist_init(&b);
	kx_llhist_init(&all);
	for (int i = 0; i < 50000; i++) {
		uint64_t x = draw(i % 5), k = 1 + kxt_rand() % 3;

		CHECK(!kx_llhist_add(i % 2 ? &a : &b, x, k));
		for (uint64_t j = 0; j < k; j++)
			CHECK(!kx_llhist_add(&all, x, 1));
	}
	CHECK(!kx_llhist_merge(&a, &b));
	CHECK_EQ_U(a.count, all.count);
	CHECK_EQ_U(a.min, all.min);
	CHECK_EQ_U(a.max, all.max);
	for (unsigned int g = 0; g < KX_LLH_GROUPS; g++)
		for (unsigned int s = 0; all.grp[g] && s < KX_LLH_SUB; s++)
			CHECK_EQ_U(a.grp[g] ? a.grp[g][s] : 0, all.grp[g][s]);
	for (uint32_t p = 0; p <= 1000000; p += 12345)
		CHECK_EQ_U(kx_llhist_quantile(&a, p), kx_llhist_quantile(&all, p));
	kx_llhist_free(&a);
	kx_llhist_free(&b);
	kx_llhist_free(&all);
}

/* Ten million values from 1000 to 9999: the five groups of 2^9 .. 2^14, whatever the count. */
static void memory_does_not_grow(void)
{
	struct kx_llhist h;
	size_t before;

	kx_llhist_init(&h);
	CHECK_EQ_U(kx_llhist_quantile(&h, KX_PPM(50)), 0); /* empty */
	for (int i = 0; i < 1000; i++)
		CHECK(!kx_llhist_add(&h, 1000 + kxt_rand() % 9000, 1));
	before = kx_llhist_bytes(&h);
	for (int i = 0; i < 10000000; i++)
		CHECK(!kx_llhist_add(&h, 1000 + kxt_rand() % 9000, 1));
	CHECK_EQ_U(kx_llhist_bytes(&h), before);
	CHECK_EQ_U(kx_llhist_bytes(&h), 5 * KX_LLH_SUB * sizeof(uint64_t));
	CHECK_EQ_U(h.count, 10001000);
	kx_llhist_free(&h);
	CHECK_EQ_U(h.count, 0);
	CHECK_EQ_U(kx_llhist_bytes(&h), 0);
}

int main(void)
{
	RUN(bucket_edges);
	RUN(random_values_within_bound);
	RUN(quantiles_vs_exact);
	RUN(merge_equals_add);
	RUN(memory_does_not_grow);
	KXT_EXIT();
}
