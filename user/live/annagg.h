/*
 * Streaming annotation aggregates for always-on views (kxprof top and
 * serve): annotation records (model/annot.h) of a running capture paired
 * online into per (name, category) counts and fine histograms of range
 * durations, and per mark name counts. Memory is bounded: at most
 * max_series names (new ones past it are counted as overflow), the range
 * names open on at most KX_ANNAGG_MAX_THREADS threads (KX_ANN_DEPTH each)
 * and KX_ANNAGG_MAX_OPEN cross-thread ranges (the least recently used entry
 * makes room; an end whose begin went that way is counted as lost).
 *
 * Pairing: analysis/rangetrack.h, the rule of report and convert: a POP
 * ends its thread's open range of its begin time and depth, an END the
 * open START of its (pid, id) and begin time; an end with none is lost.
 * Thread-safe: add from the consumer, snapshot from anywhere.
 */
#ifndef KX_LIVE_ANNAGG_H
#define KX_LIVE_ANNAGG_H

#include <stdint.h>

#include "model/agg.h"
#include "model/annot.h"

#define KX_ANNAGG_MAX_THREADS 4096
#define KX_ANNAGG_MAX_OPEN    4096

struct kx_annagg;

/* max_series 0: KX_AGG_MAX_KEYS. NULL when out of memory. */
struct kx_annagg *kx_annagg_new(uint32_t max_series);
void kx_annagg_free(struct kx_annagg *a);
/* One annotation event; name and cat as the sink gives them. */
void kx_annagg_add(struct kx_annagg *a, const struct kx_ann *e, const char *name, const char *cat);
/* Copy of every series; with reset, counts and histograms start over (the
 * series and the open ranges stay). 0, or -1 when out of memory. */
int kx_annagg_snapshot(struct kx_annagg *a, struct kx_annagg_snapshot *out, int reset);
void kx_annagg_snapshot_free(struct kx_annagg_snapshot *s);

#endif /* KX_LIVE_ANNAGG_H */
