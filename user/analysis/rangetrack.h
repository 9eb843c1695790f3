/*
 * Annotation range pairing: the one rule of the in-memory ranges
 * (analysis/ranges.c), the streamed ones (analysis/rangewalk.c) and the live
 * aggregates (live/annagg.c). Events (model/annot.h) come in the order their
 * thread made them.
 *
 * Each thread's open ranges are a stack. A POP ends the open range of its
 * thread whose PUSH has the POP's begin time and depth, searched from the
 * top: ranges above it stay open (their pops were lost), and with none the
 * POP's begin is lost (its PUSH was not seen). An END ends the open START of
 * its (process, id) with the END's begin time; with none, its begin is lost.
 * Callers count lost begins; what stays open at the end is theirs to close.
 *
 * Each open range carries item bytes of the caller's (zeroed at its begin),
 * each thread titem bytes. Unbounded by default; live views bound the
 * threads, each thread's open ranges and the open cross-thread ranges: the
 * least recently used thread or cross-thread range, or a thread's oldest
 * open range, makes room (counted in evicted; a later end of it is a lost
 * begin).
 */
#ifndef KX_RANGETRACK_H
#define KX_RANGETRACK_H

#include <stddef.h>
#include <stdint.h>

#include "model/annot.h"
#include "util/hashmap.h"
#include "util/slots.h"
#include "util/tidtab.h"

/* An open range; the caller's item bytes follow (kx_rt_data). */
struct kx_rt_open {
	uint64_t ts;   /* ns: its PUSH or START */
	uint64_t id;   /* START: the range id; else 0 */
	uint64_t seq;  /* begins before it: orders what stays open */
	uint64_t used; /* START: the tracker's clock at its begin (eviction) */
	uint32_t pid, tid;
	uint16_t depth; /* PUSH: its level */
	uint8_t what;   /* KX_ANN_PUSH or KX_ANN_START */
};

/* A thread's state; the caller's titem bytes follow (kx_rt_tdata). */
struct kx_rt_thread {
	uint32_t tid;
	uint64_t used;        /* the tracker's clock at its last event (eviction) */
	unsigned char *stack; /* open ranges, outermost first, stride bytes each */
	size_t depth, cap;    /* open ranges; room */
};

struct kx_rangetrack {
	size_t stride;                              /* bytes per open range, with the caller's */
	struct kx_tidtab threads;                   /* struct kx_rt_thread and titem bytes */
	struct kx_hmap cross_map;                   /* hash of (pid, id) -> slot in cross */
	struct kx_slots cross;                      /* open cross-thread ranges */
	uint32_t max_threads, max_depth, max_cross; /* 0: unbounded */
	uint64_t clock;                             /* begins and ends so far */
	uint64_t begins;                            /* PUSHes and STARTs so far (kx_rt_open.seq) */
	uint64_t evicted; /* open ranges (with their threads) given up to the bounds */
};

/* item, titem: the caller's bytes per open range and per thread. */
void kx_rangetrack_init(struct kx_rangetrack *t, size_t item, size_t titem);
/* Live bounds (0: unbounded). */
void kx_rangetrack_bound(struct kx_rangetrack *t, uint32_t max_threads, uint32_t max_depth,
                         uint32_t max_cross);
void kx_rangetrack_free(struct kx_rangetrack *t);

static inline void *kx_rt_data(struct kx_rt_open *o)
{
	return o + 1;
}
static inline void *kx_rt_tdata(struct kx_rt_thread *th)
{
	return th + 1;
}
/* The thread tid (made, its data zeroed, when make); NULL when it has none
 * or out of memory. Pointers stay valid until the next thread is made. */
struct kx_rt_thread *kx_rangetrack_thread(struct kx_rangetrack *t, uint32_t tid, int make);
/* A PUSH or START: its open range (the caller fills kx_rt_data), on top of
 * its thread's for a PUSH. NULL when out of memory. */
struct kx_rt_open *kx_rangetrack_begin(struct kx_rangetrack *t, const struct kx_ann *a);
/*
 * A POP or END: the open range it ends, taken out and copied to out (room
 * for t->stride bytes). 1, with for a POP *above the open ranges of its
 * thread above it; 0 when its begin is not open (a lost begin).
 */
int kx_rangetrack_end(struct kx_rangetrack *t, const struct kx_ann *a, struct kx_rt_open *out,
                      size_t *above);
/* Open ranges in all: threads' and cross-thread. */
size_t kx_rangetrack_open_count(const struct kx_rangetrack *t);
/* Every open range, in the order of their begins, into v (room for
 * kx_rangetrack_open_count). Returns their count. */
size_t kx_rangetrack_left(const struct kx_rangetrack *t, struct kx_rt_open **v);

#endif /* KX_RANGETRACK_H */
