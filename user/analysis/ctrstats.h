/*
 * Counters inside driver calls, analysed (record --counters): each counter
 * record joined to its ioctl (same thread, same enter time), then totals
 * and means per ioctl name ("ioctl/<driver>" and the decoded name, as the
 * summary's rows), and each ioctl's own values for the exporters that show
 * them per event (Chrome args, XSpace stats). Borrows the store.
 */
#ifndef KX_ANALYSIS_CTRSTATS_H
#define KX_ANALYSIS_CTRSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "model/counter.h"
#include "model/event.h"
#include "model/store.h"
#include "registry/ioctl_decode.h"
#include "util/hashmap.h"

struct kx_ctrrow {
	char cat[40];                      /* "ioctl/<driver>" */
	char name[64];                     /* the decoded ioctl name */
	uint64_t calls;                    /* calls measured */
	uint64_t total[KX_MAX_COUNTERS];   /* sum over them */
	uint64_t counted[KX_MAX_COUNTERS]; /* calls with a value (the mean's divisor) */
};

struct kx_ctrstats {
	int n;                              /* counters */
	const char *names[KX_MAX_COUNTERS]; /* static strings (model/counter.h) */
	struct kx_ctrrow *rows;             /* by category, then calls, most first */
	size_t nrows;
	uint64_t unmatched;   /* counter records without their ioctl (dropped, or not stored) */
	uint64_t partial;     /* calls whose readings were short (a read failed) */
	uint64_t multiplexed; /* values scaled because the counter ran part of the time */
	uint64_t stats[KX_CTR_INFO_MAX]; /* the capture's record counts (model/capinfo.h) */
	const struct kx_samples *t;
	struct kx_hmap by_call; /* hash(tid, ts) -> counter record */
};

/*
 * The join of a counter record to its call, in memory and streamed: the same
 * thread and enter time. m maps a call to the numbers of the caller's
 * records (kx_ctr_join_add: 0, or -1 when out of memory); kx_ctr_join_find
 * walks the candidates of call (tid, ts), at(ctx, v) giving record v: the
 * first that matches, its number in *v and its place in m in *pos (for
 * kx_hmap_del_at), or NULL.
 */
int kx_ctr_join_add(struct kx_hmap *m, const struct kx_ctr_ev *c, uint32_t v);
const struct kx_ctr_ev *kx_ctr_join_find(const struct kx_hmap *m, uint32_t tid, uint64_t ts,
                                         const struct kx_ctr_ev *(*at)(const void *ctx, uint32_t v),
                                         const void *ctx, uint32_t *v, size_t *pos);

/* The pieces the streamed counters (analysis/sctrstats.h) share: */
/* Empty statistics of the capture's counters (names and record counts from ci). NULL on OOM. */
struct kx_ctrstats *kx_ctrstats_new(const struct kx_capinfo *ci);
/* A counter record's partial and multiplexed flags, counted. */
void kx_ctrstats_note(struct kx_ctrstats *cs, const struct kx_ctr_ev *c);
/* Index in cs->rows of ioctl e's row (ix: row key -> index; cap: the rows'
 * room), made when new; -1 when out of memory. */
long kx_ctrstats_row(struct kx_ctrstats *cs, struct kx_hmap *ix, size_t *cap,
                     const struct kx_ioctl *e);
/* One call's readings c into row r. */
void kx_ctrrow_add(const struct kx_ctrstats *cs, struct kx_ctrrow *r, const struct kx_ctr_ev *c);
/* The rows in their order: by category, then calls, most first. */
void kx_ctrstats_sort(struct kx_ctrstats *cs);

/* NULL when the capture has no counters (err empty) or out of memory (err set). */
struct kx_ctrstats *kx_ctrstats_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                      char *err, size_t len);
void kx_ctrstats_free(struct kx_ctrstats *cs);
/* The counters of ioctl e as fields named by counter (KX_FIELD_U64), at
 * most max; how many (0 when it has none). cs may be NULL. */
int kx_ctrstats_fields(const struct kx_ctrstats *cs, const struct kx_ioctl *e, struct kx_field *f,
                       int max);

#endif /* KX_ANALYSIS_CTRSTATS_H */
