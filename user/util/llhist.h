/*
 * Log-linear histograms (HdrHistogram's bucketing) for percentiles of a
 * stream whose values are not kept: count, min and max exact, quantiles
 * within a stated relative error, memory independent of the count.
 *
 * Buckets: group 0 holds the values 0..127, one bucket each; group g >= 1
 * holds [2^(g+6), 2^(g+7)), split into KX_LLH_SUB = 128 buckets of width
 * 2^(g-1), up to group KX_LLH_GROUPS - 1, which ends at 2^64. Values below
 * 256 (groups 0 and 1) have buckets of width 1.
 *
 * Error bound: a quantile is the nearest-rank value's bucket midpoint
 * (lower bound + width / 2), clamped to the exact min and max. The true
 * value v lies in that bucket, at least 2^(g+6) while the bucket is w =
 * 2^(g-1) wide, so |reported - v| <= w / 2 <= v / 256: at most 0.39% of
 * the true value, and exact below 256. The unit tests check the bound at
 * every bucket edge and against exact nearest-rank percentiles.
 *
 * Memory: a group's 128 counters (1 KiB) are allocated when a value first
 * falls in it, so a histogram whose values span ten powers of two takes
 * about 10 KiB, whatever its count. Not thread-safe.
 */
#ifndef KX_LLHIST_H
#define KX_LLHIST_H

#include <stddef.h>
#include <stdint.h>

#define KX_LLH_SUB_BITS 7
#define KX_LLH_SUB      (1u << KX_LLH_SUB_BITS) /* buckets per group */
#define KX_LLH_GROUPS   58                      /* group 57 holds [2^63, 2^64) */

struct kx_llhist {
	uint64_t count;               /* values added */
	uint64_t min, max;            /* exact; min UINT64_MAX while empty */
	uint64_t *grp[KX_LLH_GROUPS]; /* KX_LLH_SUB counters each, NULL until used */
	uint8_t ngrp;                 /* groups allocated */
};

#define KX_LLHIST_INIT                                                                             \
	{                                                                                          \
		0, UINT64_MAX, 0, {0}, 0                                                           \
	}

void kx_llhist_init(struct kx_llhist *h);
void kx_llhist_free(struct kx_llhist *h); /* leaves it empty and reusable */

/* n more values v. 0, or -1 when a group could not be allocated (h unchanged). */
int kx_llhist_add(struct kx_llhist *h, uint64_t v, uint64_t n);
/* Adds every value of src to dst. 0, or -1 when out of memory (dst then
 * holds part of src: free it). */
int kx_llhist_merge(struct kx_llhist *dst, const struct kx_llhist *src);

/* The bucket of v: its group, index in the group, lowest value and width. */
void kx_llhist_bucket(uint64_t v, unsigned int *grp, unsigned int *sub, uint64_t *lo,
                      uint64_t *width);
/* What a quantile in v's bucket reports (before clamping): its midpoint. */
uint64_t kx_llhist_mid(uint64_t v);

/* Nearest-rank ppm-quantile (util/hist.h's rank rule): the bucket's
 * midpoint clamped to [min, max]; the exact min or max at rank 1 or count;
 * 0 when empty. */
uint64_t kx_llhist_quantile(const struct kx_llhist *h, uint32_t ppm);

/* Bytes the histogram holds on the heap (its groups). */
size_t kx_llhist_bytes(const struct kx_llhist *h);

#endif /* KX_LLHIST_H */
