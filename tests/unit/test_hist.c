/* util/hist: log2 and fine slots agree with the kernel's rules, bounds, and the
 * percentile rules (fine ones within 1/16 of the exact). */
#include <stdint.h>
#include <string.h>

#include "kxtest.h"
#include "util/hist.h"

/* The kernel's rule restated from its definition: floor(log2), capped. */
static unsigned int ref_slot(uint64_t v)
{
	unsigned int r = 0;

	while (v >>= 1)
		r++;
	return r < KX_HIST_SLOTS ? r : KX_HIST_SLOTS - 1;
}

static void slots_match_kernel_rule(void)
{
	CHECK_EQ_U(kx_hist_slot(0), 0);
	CHECK_EQ_U(kx_hist_slot(UINT64_MAX), KX_HIST_SLOTS - 1);
	for (int b = 0; b < 64; b++) {
		uint64_t p = 1ULL << b;

		CHECK_EQ_U(kx_hist_slot(p), ref_slot(p));
		CHECK_EQ_U(kx_hist_slot(p - 1), ref_slot(p - 1));
		CHECK_EQ_U(kx_hist_slot(p + 1), ref_slot(p + 1));
		CHECK_EQ_U(log2_slot(p), kx_hist_slot(p));
	}
}

static void slot_bounds(void)
{
	for (unsigned int i = 0; i < KX_HIST_SLOTS; i++) {
		uint64_t lo = kx_hist_lower_ns(i), hi = kx_hist_upper_ns(i);

		CHECK_EQ_U(kx_hist_slot(lo), i);
		if (i == KX_HIST_SLOTS - 1) {
			CHECK_EQ_U(hi, UINT64_MAX);
			CHECK_EQ_U(kx_hist_slot(hi), i); /* the open slot holds everything above */
		} else {
			CHECK_EQ_U(kx_hist_slot(hi - 1), i);
			CHECK_EQ_U(kx_hist_slot(hi), i + 1);
		}
	}
	CHECK_EQ_U(kx_hist_lower_ns(0), 0);
	CHECK_EQ_U(kx_hist_upper_ns(0), 2);
}

static void rank_rule(void)
{
	CHECK_EQ_U(kx_hist_rank(0, KX_PPM(50)), 1);
	CHECK_EQ_U(kx_hist_rank(1, KX_PPM(99)), 1);
	CHECK_EQ_U(kx_hist_rank(100, KX_PPM(99)), 99);
	CHECK_EQ_U(kx_hist_rank(101, KX_PPM(99)), 100);
	CHECK_EQ_U(kx_hist_rank(10, KX_PPM(50)), 5);
	CHECK_EQ_U(kx_hist_rank(11, KX_PPM(50)), 6);
	CHECK_EQ_U(kx_hist_rank(UINT64_MAX, 1000000), UINT64_MAX);
	CHECK_EQ_U(kx_hist_rank(7, 2000000), 7); /* above 1: the largest */
}

static void bucket_quantile(void)
{
	uint64_t s[KX_HIST_SLOTS] = {0};

	CHECK_EQ_U(kx_hist_quantile(s, 0, KX_PPM(50), 0, 0), 0);
	s[9] = 90;  /* 512..1023 ns */
	s[12] = 10; /* 4096..8191 ns */
	CHECK_EQ_U(kx_hist_quantile(s, 100, KX_PPM(50), 0, 0), 1024);
	CHECK_EQ_U(kx_hist_quantile(s, 100, KX_PPM(90), 0, 0), 1024);
	CHECK_EQ_U(kx_hist_quantile(s, 100, KX_PPM(91), 0, 0), 8192);
	CHECK_EQ_U(kx_hist_quantile(s, 100, KX_PPM(99), 0, 5000), 5000);
	CHECK_EQ_U(kx_hist_quantile(s, 100, KX_PPM(50), 2000, 0), 2000);
	/* The open last slot reports its lower bound, clamped to a known max. */
	s[KX_HIST_SLOTS - 1] = 100;
	CHECK_EQ_U(kx_hist_quantile(s, 200, KX_PPM(99), 0, 0), 1ULL << (KX_HIST_SLOTS - 1));
	CHECK_EQ_U(kx_hist_quantile(s, 200, KX_PPM(99), 0, 1000), 1000);
}

/* Fine slots tile the values in order, each inside one log2 slot, and the
 * kernel's rule (fine_slot) puts every value of a slot's bounds in it. */
static void fine_slot_bounds(void)
{
	uint64_t next = 0;

	for (unsigned int i = 0; i < KX_FINE_SLOTS; i++) {
		uint64_t lo, w;

		kx_hist_fine_bounds(i, &lo, &w);
		CHECK_EQ_U(lo, next);
		CHECK_EQ_U(kx_hist_fine_slot(lo), i);
		CHECK_EQ_U(kx_hist_fine_slot(lo + w - 1), i);
		CHECK_EQ_U(kx_hist_slot(lo), kx_hist_slot(lo + w - 1));
		/* 8 a power of two: the width is at most 1/8 of the lower bound. */
		CHECK(lo < KX_FINE_SUB ? w == 1 : w * KX_FINE_SUB <= lo);
		next = lo + w;
	}
	/* The last slot is open: everything from its lower bound up. */
	CHECK_EQ_U(next, 1ULL << KX_HIST_SLOTS);
	CHECK_EQ_U(kx_hist_fine_slot(next), KX_FINE_SLOTS - 1);
	CHECK_EQ_U(kx_hist_fine_slot(UINT64_MAX), KX_FINE_SLOTS - 1);
	CHECK_EQ_U(KX_FINE_SLOTS, 272);
}

/* A duration spread over many powers of two, as ioctl latencies are. */
static uint64_t log_uniform(unsigned int max_bits)
{
	unsigned int b = (unsigned int)(kxt_rand() % max_bits);

	return (1ULL << b) + kxt_rand() % (1ULL << b);
}

/* The log2 sums of fine slots are the log2 histogram of the same values. */
static void fine_log2_sums(void)
{
	uint64_t fine[KX_FINE_SLOTS] = {0}, got[KX_HIST_SLOTS] = {0}, want[KX_HIST_SLOTS] = {0};

	for (int i = 0; i < 20000; i++) {
		uint64_t v = i < 64 ? (uint64_t)i : log_uniform(40);

		fine[kx_hist_fine_slot(v)]++;
		want[kx_hist_slot(v)]++;
	}
	kx_hist_fine_log2(fine, got);
	for (unsigned int i = 0; i < KX_HIST_SLOTS; i++)
		CHECK_EQ_U(got[i], want[i]);
	CHECK_EQ_U(kx_hist_fine_count(fine), 20000);
}

/* Quantiles of fine slots are within 1/16 of the exact nearest-rank ones. */
static void fine_quantile_bound(void)
{
	static uint64_t v[5000];
	const uint32_t q[5] = {KX_PPM(1), KX_PPM(50), KX_PPM(90), KX_PPM(99), KX_PPM(99.9)};

	for (int round = 0; round < 50; round++) {
		uint64_t fine[KX_FINE_SLOTS] = {0}, exact[5];
		size_t n = 1 + (size_t)(kxt_rand() % 5000);
		int ok = 1;

		for (size_t i = 0; i < n; i++) {
			v[i] = round % 5 ? log_uniform(round % 2 ? 20 : 34) : kxt_rand() % 16;
			fine[kx_hist_fine_slot(v[i])]++;
		}
		kx_quantiles_exact(v, n, q, exact, 5);
		for (int k = 0; k < 5; k++) {
			uint64_t got = kx_hist_fine_quantile(fine, n, q[k], 0, 0);
			uint64_t d = got > exact[k] ? got - exact[k] : exact[k] - got;

			ok &= d * 16 <= exact[k];
		}
		CHECK(ok);
	}
}

static void fine_quantile_rules(void)
{
	uint64_t f[KX_FINE_SLOTS] = {0};

	CHECK_EQ_U(kx_hist_fine_quantile(f, 0, KX_PPM(50), 0, 0), 0);
	f[kx_hist_fine_slot(1000)] = 90; /* [960, 1024): midpoint 992 */
	f[kx_hist_fine_slot(5000)] = 10; /* [4608, 5120): midpoint 4864 */
	CHECK_EQ_U(kx_hist_fine_quantile(f, 100, KX_PPM(50), 0, 0), 992);
	CHECK_EQ_U(kx_hist_fine_quantile(f, 100, KX_PPM(90), 0, 0), 992);
	CHECK_EQ_U(kx_hist_fine_quantile(f, 100, KX_PPM(91), 0, 0), 4864);
	CHECK_EQ_U(kx_hist_fine_quantile(f, 100, KX_PPM(100), 0, 0), 4864);
	/* Clamped to known extremes. */
	CHECK_EQ_U(kx_hist_fine_quantile(f, 100, KX_PPM(50), 1000, 0), 1000);
	CHECK_EQ_U(kx_hist_fine_quantile(f, 100, KX_PPM(99), 0, 4800), 4800);
	/* Exact below 8 ns. */
	memset(f, 0, sizeof(f));
	f[5] = 3;
	CHECK_EQ_U(kx_hist_fine_quantile(f, 3, KX_PPM(50), 0, 0), 5);
	/* The open last slot reports its lower bound, clamped to a known max. */
	f[KX_FINE_SLOTS - 1] = 100;
	CHECK_EQ_U(kx_hist_fine_quantile(f, 103, KX_PPM(99), 0, 0),
	           (1ULL << (KX_HIST_SLOTS - 1)) * 15 / 8);
	CHECK_EQ_U(kx_hist_fine_quantile(f, 103, KX_PPM(99), 0, 1000), 1000);
}

static void exact_quantiles(void)
{
	uint64_t v[1000], out[3];
	const uint32_t q[3] = {KX_PPM(50), KX_PPM(90), KX_PPM(99)};

	/* 1000..1 descending, with repeats: nearest rank of the sorted values. */
	for (int i = 0; i < 1000; i++)
		v[i] = (uint64_t)(1000 - i) / 2 * 2;
	kx_quantiles_exact(v, 1000, q, out, 3);
	CHECK_EQ_U(out[0], 500);
	CHECK_EQ_U(out[1], 900);
	CHECK_EQ_U(out[2], 990);
	for (int i = 0; i < 1000; i++)
		v[i] = 7;
	kx_quantiles_exact(v, 1000, q, out, 3);
	CHECK_EQ_U(out[0], 7);
	CHECK_EQ_U(out[2], 7);
	v[0] = 42;
	kx_quantiles_exact(v, 1, q, out, 3);
	CHECK_EQ_U(out[0], 42);
	CHECK_EQ_U(out[2], 42);
}

static void sort_u64(void)
{
	uint64_t v[500], sum = 0, got = 0;
	int sorted = 1;

	/* Descending with repeats and both extremes: ascending, the same values. */
	for (int i = 0; i < 500; i++) {
		v[i] = i == 0 ? UINT64_MAX : (uint64_t)(500 - i) / 3;
		sum += v[i];
	}
	kx_sort_u64(v, 500);
	for (int i = 0; i < 500; i++) {
		sorted &= i == 0 || v[i - 1] <= v[i];
		got += v[i];
	}
	CHECK(sorted);
	CHECK_EQ_U(got, sum);
	CHECK_EQ_U(v[0], 0);
	CHECK_EQ_U(v[499], UINT64_MAX);
	kx_sort_u64(v, 0); /* nothing to do, nothing touched */
}

int main(void)
{
	RUN(slots_match_kernel_rule);
	RUN(slot_bounds);
	RUN(rank_rule);
	RUN(bucket_quantile);
	RUN(fine_slot_bounds);
	RUN(fine_log2_sums);
	RUN(fine_quantile_bound);
	RUN(fine_quantile_rules);
	RUN(exact_quantiles);
	RUN(sort_u64);
	KXT_EXIT();
}
