/*
 * DRM usage of a capture per process (record --drm-usage): the rows of the
 * record file (model/drmusage.h) summed per process, device and engine
 * (busy share over the time observed, the busiest interval) and per
 * process, device and region (memory at the last pass, peak resident).
 * Several clients of one process in one pass add up. Feeds the report's
 * table and JSON, Chrome and XSpace.
 */
#ifndef KX_ANALYSIS_DRMSTATS_H
#define KX_ANALYSIS_DRMSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "model/drmusage.h"

struct kx_drm_proc_engine {
	uint32_t pid;
	char comm[16];
	char driver[KX_DRM_NAME];
	char pdev[KX_DRM_PDEV];
	char engine[KX_DRM_NAME];
	uint32_t capacity;
	uint8_t basis;        /* enum kx_drm_basis of its last figure */
	double busy_ns;       /* busy time, ns (share * interval * capacity, summed) */
	uint64_t observed_ns; /* time with a figure, ns */
	double peak;          /* the busiest interval's share, 0..1 per capacity */
	/* Building: the pass being summed. */
	uint64_t cur_ts;
	double cur_share;
};

struct kx_drm_proc_mem {
	uint32_t pid;
	char comm[16];
	char driver[KX_DRM_NAME];
	char pdev[KX_DRM_PDEV];
	char region[KX_DRM_NAME];
	uint16_t has;                  /* bits of enum kx_drm_mem given */
	uint64_t last[KX_DRM_MEM_MAX]; /* bytes at the last pass */
	uint64_t peak_resident;        /* bytes */
	uint64_t cur_ts;
	uint64_t cur[KX_DRM_MEM_MAX];
};

struct kx_drmstats {
	struct kx_drm_proc_engine *eng;
	size_t neng, eng_cap;
	struct kx_drm_proc_mem *mem;
	size_t nmem, mem_cap;
	uint64_t rows;
};

/* The stats of n rows, engines busiest first, memory largest resident
 * first; NULL when out of memory. */
struct kx_drmstats *kx_drmstats_build(const struct kx_drm_ev *rows, size_t n);
/* Mean busy share over the time observed, 0..1 per capacity; -1 when none. */
double kx_drm_proc_engine_busy(const struct kx_drm_proc_engine *e);
void kx_drmstats_free(struct kx_drmstats *s); /* NULL is fine */

#endif /* KX_ANALYSIS_DRMSTATS_H */
