/* Log2 and fine histograms and nearest-rank percentiles (contract: hist.h). */
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

/* v within the known extremes (0: not known). */
static uint64_t clamp(uint64_t v, uint64_t min_ns, uint64_t max_ns)
{
	if (max_ns && v > max_ns)
		v = max_ns;
	if (min_ns && v < min_ns)
		v = min_ns;
	return v;
}

/* What a quantile in slot i reports, clamped to the known extremes. */
static uint64_t slot_value(unsigned int i, uint64_t min_ns, uint64_t max_ns)
{
	uint64_t v = i >= KX_HIST_SLOTS - 1 ? kx_hist_lower_ns(i) : kx_hist_upper_ns(i);

	return clamp(v, min_ns, max_ns);
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

void kx_hist_fine_bounds(unsigned int i, uint64_t *lo, uint64_t *width)
{
	unsigned int o;

	if (i >= KX_FINE_SLOTS)
		i = KX_FINE_SLOTS - 1;
	if (i < KX_FINE_SUB) {
		*lo = i;
		*width = 1;
		return;
	}
	o = i / KX_FINE_SUB + KX_FINE_BITS - 1; /* the octave */
	*width = 1ULL << (o - KX_FINE_BITS);
	*lo = (1ULL << o) + (uint64_t)(i % KX_FINE_SUB) * *width;
}

void kx_hist_fine_log2(const uint64_t *fine, uint64_t *slots)
{
	for (unsigned int i = 0; i < KX_FINE_SLOTS; i++) {
		uint64_t lo, w;

		kx_hist_fine_bounds(i, &lo, &w);
		slots[kx_hist_slot(lo)] += fine[i];
	}
}

uint64_t kx_hist_fine_count(const uint64_t *fine)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < KX_FINE_SLOTS; i++)
		n += fine[i];
	return n;
}

uint64_t kx_hist_fine_quantile(const uint64_t *fine, uint64_t n, uint32_t ppm, uint64_t min_ns,
                               uint64_t max_ns)
{
	uint64_t rank, seen = 0, lo, w;
	unsigned int i;

	if (!n)
		return 0;
	rank = kx_hist_rank(n, ppm);
	for (i = 0; i < KX_FINE_SLOTS - 1; i++) {
		seen += fine[i];
		if (seen >= rank)
			break;
	}
	kx_hist_fine_bounds(i, &lo, &w);
	return clamp(i == KX_FINE_SLOTS - 1 ? lo : lo + w / 2, min_ns, max_ns);
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
