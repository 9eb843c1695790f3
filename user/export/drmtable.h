/*
 * The report's DRM usage section (record --drm-usage): per process and
 * engine the busy share over the time observed and the busiest interval,
 * and per process and memory region the bytes at the last pass, as a table
 * within 120 columns or as a JSON object, with the sampler's figures from
 * the capture info (passes, fdinfo reads). Reads analysis/drmstats.h.
 */
#ifndef KX_EXPORT_DRMTABLE_H
#define KX_EXPORT_DRMTABLE_H

#include <stdio.h>

#include "analysis/drmstats.h"
#include "model/capinfo.h"

/* The table: nothing when the capture did not sample DRM usage (ci->drm). */
void kx_drmtable_print(const struct kx_drmstats *s, const struct kx_capinfo *ci, FILE *f);
/* {"IntervalMs", "Passes", "FdinfoReads", "Engines": [{"Pid", "Comm",
 * "Driver", "Pdev", "Engine", "Capacity", "Basis", "BusyPct", "PeakPct",
 * "BusyNs", "ObservedNs"}], "Memory": [{"Pid", "Comm", "Driver", "Pdev",
 * "Region", "PeakResident", and each of total, shared, resident, purgeable,
 * active the driver gave, in bytes}]}. BusyPct null: no interval seen. */
void kx_drmtable_json(const struct kx_drmstats *s, const struct kx_capinfo *ci, FILE *f);

/* top's section: one pass folded (s: a single interval), per process and
 * engine the busy %% and the process's resident memory on that driver; at
 * most rows rows, lines cut to cols. Nothing when s is NULL. */
void kx_drmtable_print_live(const struct kx_drmstats *s, FILE *f, int rows, int cols);

#endif /* KX_EXPORT_DRMTABLE_H */
