/* Log-linear histograms (contract and error bound: llhist.h). */
#include <stdlib.h>
#include <string.h>

#include "util/hist.h"
#include "util/llhist.h"

void kx_llhist_init(struct kx_llhist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void kx_llhist_free(struct kx_llhist *h)
{
	for (unsigned int g = 0; g < KX_LLH_GROUPS; g++)
		free(h->grp[g]);
	kx_llhist_init(h);
}

void kx_llhist_bucket(uint64_t v, unsigned int *grp, unsigned int *sub, uint64_t *lo,
                      uint64_t *width)
{
	unsigned int k, g;

	if (v < KX_LLH_SUB) {
		*grp = 0;
		*sub = (unsigned int)v;
		*lo = v;
		*width = 1;
		return;
	}
	k = 63u - (unsigned int)__builtin_clzll(v); /* >= KX_LLH_SUB_BITS */
	g = k - KX_LLH_SUB_BITS + 1;
	*grp = g;
	*sub = (unsigned int)(v >> (k - KX_LLH_SUB_BITS)) - KX_LLH_SUB;
	*width = 1ull << (g - 1);
	*lo = (uint64_t)(KX_LLH_SUB + *sub) << (g - 1);
}

uint64_t kx_llhist_mid(uint64_t v)
{
	unsigned int g, s;
	uint64_t lo, w;

	kx_llhist_bucket(v, &g, &s, &lo, &w);
	return lo + w / 2;
}

static uint64_t *group(struct kx_llhist *h, unsigned int g)
{
	if (!h->grp[g]) {
		h->grp[g] = calloc(KX_LLH_SUB, sizeof(uint64_t));
		if (h->grp[g])
			h->ngrp++;
	}
	return h->grp[g];
}

int kx_llhist_add(struct kx_llhist *h, uint64_t v, uint64_t n)
{
	unsigned int g, s;
	uint64_t lo, w, *c;

	if (!n)
		return 0;
	kx_llhist_bucket(v, &g, &s, &lo, &w);
	c = group(h, g);
	if (!c)
		return -1;
	c[s] += n;
	h->count += n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	return 0;
}

int kx_llhist_merge(struct kx_llhist *dst, const struct kx_llhist *src)
{
	for (unsigned int g = 0; g < KX_LLH_GROUPS; g++) {
		uint64_t *c;

		if (!src->grp[g])
			continue;
		c = group(dst, g);
		if (!c)
			return -1;
		for (unsigned int s = 0; s < KX_LLH_SUB; s++)
			c[s] += src->grp[g][s];
	}
	dst->count += src->count;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	return 0;
}

/* The lowest value of bucket s of group g. */
static uint64_t bucket_lo(unsigned int g, unsigned int s)
{
	return g ? (uint64_t)(KX_LLH_SUB + s) << (g - 1) : s;
}

uint64_t kx_llhist_quantile(const struct kx_llhist *h, uint32_t ppm)
{
	uint64_t rank, seen = 0, v = 0;

	if (!h->count)
		return 0;
	rank = kx_hist_rank(h->count, ppm);
	if (rank == 1)
		return h->min; /* the extremes are known exactly */
	if (rank == h->count)
		return h->max;
	for (unsigned int g = 0; g < KX_LLH_GROUPS && seen < rank; g++) {
		if (!h->grp[g])
			continue;
		for (unsigned int s = 0; s < KX_LLH_SUB; s++) {
			seen += h->grp[g][s];
			if (seen >= rank) {
				v = kx_llhist_mid(bucket_lo(g, s));
				break;
			}
		}
	}
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

size_t kx_llhist_bytes(const struct kx_llhist *h)
{
	return (size_t)h->ngrp * KX_LLH_SUB * sizeof(uint64_t);
}
