/*
 * Binary search for a lower bound: the first index i of [lo, hi) whose
 * value at(ctx, i) is at least key, in a range whose values do not
 * decrease (hi when none). Inline, so that a caller's accessor is too.
 */
#ifndef KX_LBOUND_H
#define KX_LBOUND_H

#include <stddef.h>
#include <stdint.h>

static inline size_t kx_lbound(size_t lo, size_t hi, uint64_t key,
                               uint64_t (*at)(const void *ctx, size_t i), const void *ctx)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (at(ctx, mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* KX_LBOUND_H */
