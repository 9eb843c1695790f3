/* Log2 histograms and nearest-rank percentiles (contract: hist.h). */
#include <stdlib.h>

#include "util/hist.h"

uint64_t kx_hist_lower_ns(unsigned int i)
{
	if (i >= KX_HIST_SLOTS)
		i = KX_HIST_SLOTS - 1;
	return i ? 1ULL << i : 0;
}

uint64_t kx_hist_upper_ns(unsigned int i)
{
	return i >= KX_HIST_SLOTS - 1 ? UINT64_MAX : 2ULL << i;
}

uint64_t kx_hist_rank(uint64_t n, uint32_t ppm)
{
	uint64_t r;

	if (ppm > 1000000)
		ppm = 1000000;
	r = (uint64_t)(((unsigned __int128)n * ppm + 999999) / 1000000);
	return r ? r : 1;
}

/* What a quantile in slot i reports, clamped to the known extremes. */
static uint64_t slot_value(unsigned int i, uint64_t min_ns, uint64_t max_ns)
{
	uint64_t v = i >= KX_HIST_SLOTS - 1 ? kx_hist_lower_ns(i) : kx_hist_upper_ns(i);

	if (max_ns && v > max_ns)
		v = max_ns;
	if (min_ns && v < min_ns)
		v = min_ns;
	return v;
}

uint64_t kx_hist_quantile(const uint64_t *slots, uint64_t n, uint32_t ppm, uint64_t min_ns,
                          uint64_t max_ns)
{
	uint64_t rank, seen = 0;

	if (!n)
		return 0;
	rank = kx_hist_rank(n, ppm);
	for (unsigned int i = 0; i < KX_HIST_SLOTS; i++) {
		seen += slots[i];
		if (seen >= rank)
			return slot_value(i, min_ns, max_ns);
	}
	return slot_value(KX_HIST_SLOTS - 1, min_ns, max_ns);
}

uint64_t kx_hist_max(const uint64_t *slots, uint64_t min_ns, uint64_t max_ns)
{
	if (max_ns)
		return max_ns;
	for (int i = KX_HIST_SLOTS - 1; i >= 0; i--)
		if (slots[i])
			return slot_value((unsigned int)i, min_ns, 0);
	return 0;
}

static void swap_u64(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

/*
 * k-th smallest of a[lo..hi), leaving everything after k >= it so a later
 * call with lo = k can go on from there. Three-way partition: durations
 * repeat a lot, and equal keys must not degrade it to quadratic.
 */
static uint64_t select_kth(uint64_t *a, size_t lo, size_t hi, size_t k)
{
	while (hi - lo > 1) {
		uint64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1], p;
		size_t lt = lo, i = lo, gt = hi;

		p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		while (i < gt) {
			if (a[i] < p)
				swap_u64(&a[lt++], &a[i++]);
			else if (a[i] > p)
				swap_u64(&a[i], &a[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return p;
	}
	return a[k];
}

void kx_quantiles_exact(uint64_t *v, size_t n, const uint32_t *ppm, uint64_t *out, size_t k)
{
	size_t lo = 0;

	for (size_t i = 0; i < k; i++) {
		size_t idx = (size_t)kx_hist_rank(n, ppm[i]) - 1;

		out[i] = select_kth(v, lo, n, idx);
		lo = idx;
	}
}

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

void kx_sort_u64(uint64_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), u64_cmp);
}
