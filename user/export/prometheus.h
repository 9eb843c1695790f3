/*
 * Prometheus text exposition (format 0.0.4) of a live-aggregate snapshot:
 * metric names, units, HELP/TYPE lines, label escaping, and the mapping of
 * the kernel's log2 buckets onto cumulative `le` buckets (bucket i covers
 * [2^i, 2^(i+1)) ns, so its le is 2^(i+1) ns in seconds; the open last
 * bucket only feeds +Inf, which equals _count).
 */
#ifndef KX_PROMETHEUS_H
#define KX_PROMETHEUS_H

#include <stdio.h>

#include "model/agg.h"

#define KX_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct kx_prom_info {
	const char *version;                   /* kxprof version, for kxprof_build_info */
	const char *kernel;                    /* uname -r */
	const char *mech;                      /* attach mechanism in use */
	int jobs_attached;                     /* a job source feeds the job histograms */
	const struct kx_jobagg_snapshot *jobs; /* job aggregates, NULL when none */
	const struct kx_annagg_snapshot *anns; /* annotation aggregates, NULL when none */
};

/* Writes every metric family (empty ones too, with HELP saying why).
 * Returns 0, or -1 when writing to f failed. */
int kx_prom_write(FILE *f, const struct kx_agg_snapshot *snap, const struct kx_prom_info *info);

/* A label value escaped per the exposition format (\\, \", \n); bytes that
 * are not UTF-8 become '?'. Writes at most len - 1 bytes plus NUL; returns buf. */
const char *kx_prom_label_escape(const char *s, char *buf, size_t len);

#endif /* KX_PROMETHEUS_H */
