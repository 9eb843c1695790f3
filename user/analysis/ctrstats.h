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
#include "util/tidtab.h"

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
 * The join on a stream (the streamed report, analysis/sreport.h): each
 * thread's calls and counter records in start order, a record before the
 * calls that start when it does (analysis/engine.h's reorder stage). A
 * call takes its thread's last record when they join (the same thread and
 * enter time, as in memory). A call that leaves without its record waits
 * for it: a record that comes after its call left the reorder stage (the
 * engine's late records) finds its call by that key, as in memory. Past
 * KX_CTRJOIN_WAIT_CALLS waiting calls (the join's memory budget), the
 * oldest is given up: a late record that may be one of those given up
 * (its thread gave up a call starting at or after it) sets why (the
 * caller reads the file whole). A record no call took is unmatched, as in
 * memory. Memory: a record a thread (and a start for the threads that gave
 * calls up), the rows, and the calls waiting (24 bytes each, and 32 to 64
 * of their index): those without a record, few where the records come
 * before their calls, as a recorder writes them.
 */
#define KX_CTRJOIN_WAIT_CALLS 65536

/* A call that left the reorder stage without its counter record (24 bytes). */
struct kx_ctrwait {
	uint64_t ts;           /* ns, the call's start */
	uint64_t seq : 47;     /* its place in the file (as kx_ctrjoin_ioctl's) */
	uint64_t taken : 1;    /* its record came */
	uint64_t drv : 8;      /* its row's key (kx_ioctl's) */
	uint64_t xfer_cmd : 8; /* ... */
	uint32_t cmd;          /* ... */
	uint32_t tid;
};

struct kx_ctrjoin {
	struct kx_ctrstats *cs; /* the rows so far (names and counts set at the end) */
	struct kx_hmap ix;      /* row key -> row index */
	size_t rcap;            /* the rows' room */
	struct kx_tidtab last;  /* each thread's last record (struct kx_ctr_ev) */
	uint64_t *first;        /* by row: the place in the file of its first call */
	size_t fcap;
	uint64_t records, matched;
	/* The calls waiting for their record, oldest first: call number a (from
	 * 0, as they began waiting) at wait[a & (wcap - 1)], for a in
	 * [wfirst, wfirst + wn); wcap a power of 2. */
	struct kx_ctrwait *wait;
	size_t wn, wcap;
	uint64_t wfirst;
	struct kx_hmap wix;    /* call key -> its number (mod 2^32) */
	struct kx_tidtab gone; /* each thread's latest start given up (uint64_t, ns) */
	uint64_t late;         /* records that came after their call left (joined or not) */
	uint64_t given_up;     /* calls given up waiting (past KX_CTRJOIN_WAIT_CALLS) */
	const char *why;       /* NULL, or why the join is not exact (the budget) */
};

/* For a capture whose header (ci) names counters. 0, or -1 when out of memory. */
int kx_ctrjoin_init(struct kx_ctrjoin *j, const struct kx_capinfo *ci);
/* A counter record, then a call (seq: its place among the file's
 * records), in their thread's order. 0, or -1 when out of memory. */
int kx_ctrjoin_ctr(struct kx_ctrjoin *j, const struct kx_ctr_ev *c);
int kx_ctrjoin_ioctl(struct kx_ctrjoin *j, const struct kx_ioctl *e, uint64_t seq);
/* A counter record that came after its call left the reorder stage: joined
 * to it when it waits (else unmatched, or why set). 0, or -1 when out of
 * memory. */
int kx_ctrjoin_late(struct kx_ctrjoin *j, const struct kx_ctr_ev *c);
/* Once every record is in: the statistics (the record counts from ci, the
 * capture's trailer facts), handed over (the caller frees them), NULL
 * when out of memory. */
struct kx_ctrstats *kx_ctrjoin_finish(struct kx_ctrjoin *j, const struct kx_capinfo *ci);
void kx_ctrjoin_free(struct kx_ctrjoin *j);

/* NULL when the capture has no counters (err empty) or out of memory (err set). */
struct kx_ctrstats *kx_ctrstats_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                      char *err, size_t len);
void kx_ctrstats_free(struct kx_ctrstats *cs);
/* The counters of ioctl e as fields named by counter (KX_FIELD_U64), at
 * most max; how many (0 when it has none). cs may be NULL. */
int kx_ctrstats_fields(const struct kx_ctrstats *cs, const struct kx_ioctl *e, struct kx_field *f,
                       int max);

#endif /* KX_ANALYSIS_CTRSTATS_H */
