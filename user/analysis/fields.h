/*
 * The fields an ioctl event shows beside its fixed ones, the same in every
 * exporter (Chrome args, XSpace stats): its decoded argument copies
 * (registry/ioctl_decode.h) and, with record --counters, its perf counters
 * (analysis/ctrstats.h).
 */
#ifndef KX_ANALYSIS_FIELDS_H
#define KX_ANALYSIS_FIELDS_H

#include "analysis/analysis.h"
#include "registry/ioctl_decode.h"

/* 1 when event e may have fields (argument bytes, or counters in the capture). */
int kx_event_has_fields(const struct kx_analysis *an, const struct kx_ioctl *e);
/* Event e's fields into f (at most max); how many. */
int kx_event_fields(const struct kx_analysis *an, const struct kx_ioctl *e, struct kx_field *f,
                    int max);

#endif /* KX_ANALYSIS_FIELDS_H */
