/*
 * The report's counters section (record --counters): per ioctl name, the
 * calls measured and each counter's total and mean per call, as a table
 * within 120 columns or as a JSON object; with what the counts lack (calls
 * whose ioctl was not kept, short readings, scaled values). Reads the
 * analysis' counters (analysis/ctrstats.h).
 */
#ifndef KX_EXPORT_CTRTABLE_H
#define KX_EXPORT_CTRTABLE_H

#include <stdio.h>

#include "analysis/ctrstats.h"

/* The table (nothing when cs is NULL). */
void kx_ctrtable_print(const struct kx_ctrstats *cs, FILE *f);
/* {"Names": [...], "Emitted", "Received", "Dropped" (Received + Dropped ==
 * Emitted), "ReadFailures", "NotMeasured", "Unmatched", "Partial",
 * "Multiplexed", "Rows": {cat: {name: {"Calls", counter: {"Total", "Mean"}}}}}. */
void kx_ctrtable_json(const struct kx_ctrstats *cs, FILE *f);

#endif /* KX_EXPORT_CTRTABLE_H */
