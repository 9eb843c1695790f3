/*
 * Folded stacks (the input of flamegraph.pl, inferno and speedscope): one
 * line per distinct stack, the thread's name when its samples were taken
 * first (an exec or a rename splits a thread's lines), then the frames root
 * first, joined by ';', then a space and the value: the sample count of a
 * CPU profile, the microseconds off the CPU of an off-CPU profile. A ';'
 * inside a name becomes ':', a line break a space, so every line parses
 * back. Lines are sorted, so equal profiles give equal files.
 */
#ifndef KX_EXPORT_FOLDED_H
#define KX_EXPORT_FOLDED_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/profile.h"
#include "model/store.h"

/* Writes the folded stacks of p to f. 0, or -1 out of memory. */
int kx_folded_print(const struct kx_profile *p, const struct kx_store *s, FILE *f);
/* The same into path ("-": standard output), a temporary file renamed into
 * place. 0, or -1 with err. */
int kx_folded_write(const struct kx_profile *p, const struct kx_store *s, const char *path,
                    char *err, size_t len);

#endif /* KX_EXPORT_FOLDED_H */
