/*
 * The profile section of kxprof report: for a CPU (or off-CPU) profile
 * (analysis/profile.h), a line of totals and losses, the top functions of
 * each process (self: where the samples were taken; total: anywhere on the
 * stack), the traced driver calls the samples were taken in with the
 * kernel functions beneath each, and the top stacks, root first. Tables fit
 * in 120 columns (long names are cut with "..."). Also as a JSON object.
 */
#ifndef KX_EXPORT_PROFTABLE_H
#define KX_EXPORT_PROFTABLE_H

#include <stdio.h>

#include "analysis/profile.h"
#include "model/capinfo.h"
#include "model/store.h"

#define KX_PROFTABLE_TOP 10 /* rows per table */

/* Prints the section (nothing when p has no samples). 0, or -1 out of memory. */
int kx_proftable_print(const struct kx_profile *p, const struct kx_store *s,
                       const struct kx_capinfo *ci, FILE *f);
/* The same as a JSON object: {"Kind", "Samples", ..., "Processes": [...],
 * "Calls": [...], "Stacks": [...]}. 0, or -1 out of memory. */
int kx_proftable_json(const struct kx_profile *p, const struct kx_store *s,
                      const struct kx_capinfo *ci, FILE *f);

#endif /* KX_EXPORT_PROFTABLE_H */
