/*
 * Symbols of a running capture: for each sample, the maps of its process
 * image are taken while the process lives (at its first sample, and again
 * when a sample shows that the pid exec'd: a new exec_id), its addresses
 * are noted in a resolved-symbol table (model/symres.h), and the noted
 * addresses are resolved in batches, each against the snapshot of its own
 * image (pending ones are resolved before a snapshot is replaced). Every
 * entry a batch resolves is handed to a callback, so a record file can
 * store it as it goes. Owns the symbolizer and the image table; the symbol
 * table is the caller's.
 */
#ifndef KX_SYMBOL_COLLECT_H
#define KX_SYMBOL_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "model/sample.h"
#include "model/symres.h"
#include "symbol/symbolizer.h"

struct kx_symcollect;

/* Called for each newly resolved entry (strings: kx_symres_str of the table). */
typedef void (*kx_symres_fn)(void *ctx, const struct kx_symres *r, const struct kx_symres_entry *e);

/* Collects into res (not owned); fn (may be NULL) gets each entry resolved,
 * whenever that happens. kallsyms: NULL for /proc/kallsyms. NULL with err
 * set when out of memory. */
struct kx_symcollect *kx_symcollect_new(struct kx_symres *res, const char *kallsyms,
                                        kx_symres_fn fn, void *ctx, char *err, size_t len);
/* User symbols only from files the sampled process could read itself
 * (kx_symbolizer_as_process): a daemon collecting for a user. */
void kx_symcollect_as_process(struct kx_symcollect *c);
/* Notes the addresses of s, taking its image's snapshot first when new.
 * 0, or -1 when out of memory (the sample's frames stay unresolved). */
int kx_symcollect_sample(struct kx_symcollect *c, const struct kx_sample *s);
/* Resolves every address noted and not resolved yet (a new image's first
 * sample also resolves what the old image noted). 0, or -1 out of memory. */
int kx_symcollect_resolve(struct kx_symcollect *c);
/* Why kernel frames will not resolve ("" when they will). */
const char *kx_symcollect_warning(const struct kx_symcollect *c);
void kx_symcollect_stats(const struct kx_symcollect *c, struct kx_symbolizer_stats *st);
/* The symbolisation figures and warning of a capture's sample facts
 * (oom: some addresses were lost to memory). */
void kx_symcollect_facts(const struct kx_symcollect *c, int oom, struct kx_sample_info *si);
void kx_symcollect_free(struct kx_symcollect *c);

#endif /* KX_SYMBOL_COLLECT_H */
