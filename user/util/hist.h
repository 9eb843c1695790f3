/*
 * Log2 and fine latency histograms and nearest-rank percentiles: the
 * bucketings of user space, the same as the kernel's (bpf/log2.bpf.h
 * log2_slot and fine_slot, which this header includes): log2 slot i holds
 * durations in [2^i, 2^(i+1)) ns, slot 0 also 0 ns, and the last slot
 * (KX_HIST_SLOTS - 1, bpf/kxprof.h) is open: it holds everything from
 * 2^(KX_HIST_SLOTS - 1) ns (about 34 s) up. Fine slots split each log2 slot
 * (bpf/kxprof.h); util/llhist.h is the finer, unbounded variant.
 *
 * Percentiles are nearest-rank: the q-quantile of n values is the value of
 * rank ceil(n * q) (at least 1). q is given in parts per million
 * (KX_PPM(99) is p99) so the rank is exact integer arithmetic. Also the one
 * ascending sort of u64 values (times, keys) the other modules share.
 */
#ifndef KX_HIST_H
#define KX_HIST_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "kxprof.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#include "log2.bpf.h"

#define KX_PPM(pct) ((uint32_t)((pct)*10000)) /* a percentile in parts per million */

/* Slot of a duration in ns (the kernel's rule). */
static inline unsigned int kx_hist_slot(uint64_t ns)
{
	return log2_slot(ns);
}

/* Smallest duration in ns of slot i: 0 for slot 0, else 2^i. */
uint64_t kx_hist_lower_ns(unsigned int i);
/* Bound in ns above slot i (2^(i+1)); UINT64_MAX for the open last slot. */
uint64_t kx_hist_upper_ns(unsigned int i);

/* Nearest rank (1-based, at least 1) of the ppm-quantile of n values. */
uint64_t kx_hist_rank(uint64_t n, uint32_t ppm);

/*
 * Nearest-rank ppm-quantile of a histogram of KX_HIST_SLOTS slots holding n
 * values: the upper bound of the slot that holds it (the lower bound for the
 * open last slot), clamped to [min_ns, max_ns] (0: not known). 0 when n is 0.
 */
uint64_t kx_hist_quantile(const uint64_t *slots, uint64_t n, uint32_t ppm, uint64_t min_ns,
                          uint64_t max_ns);

/*
 * Fine (log-linear) histograms of KX_FINE_SLOTS slots, the kernel's
 * aggregate rule (bpf/kxprof.h): a quantile is the midpoint of the slot
 * holding it, within 1/16 of the true value, exact below KX_FINE_SUB ns.
 */
static inline unsigned int kx_hist_fine_slot(uint64_t ns)
{
	return fine_slot(ns);
}
/* Lowest duration in ns of fine slot i, and its width (1 below KX_FINE_SUB). */
void kx_hist_fine_bounds(unsigned int i, uint64_t *lo, uint64_t *width);
/* Adds the fine slots' counts to the log2 slots that hold them. */
void kx_hist_fine_log2(const uint64_t *fine, uint64_t *slots);
/* Sum of the fine slots. */
uint64_t kx_hist_fine_count(const uint64_t *fine);
/*
 * Nearest-rank ppm-quantile of a fine histogram holding n values: the
 * midpoint of the slot that holds it (the lower bound for the open last
 * slot), clamped to [min_ns, max_ns] (0: not known). 0 when n is 0.
 */
uint64_t kx_hist_fine_quantile(const uint64_t *fine, uint64_t n, uint32_t ppm, uint64_t min_ns,
                               uint64_t max_ns);

/*
 * Exact nearest-rank quantiles of v[0..n) (n > 0), by selection: out[i] is
 * the ppm[i]-quantile. ppm must be ascending; v is reordered.
 */
void kx_quantiles_exact(uint64_t *v, size_t n, const uint32_t *ppm, uint64_t *out, size_t k);

/* v[0..n) in ascending order. */
void kx_sort_u64(uint64_t *v, size_t n);

#endif /* KX_HIST_H */
