/*
 * Counters inside driver calls, joined as a record file streams by (the
 * streamed report, analysis/sreport.h): analysis/ctrstats.h's rows,
 * unmatched records and flags, with memory per thread and per counter
 * record still waiting for its call, not per call.
 *
 * A call's counter record is written just before its ioctl record, on the
 * same thread (bpf/counters.bpf.h, at the call's exit): it waits, keyed by
 * (thread, enter time), until its ioctl comes. One that comes right after
 * its ioctl (the thread's last) is joined too. One that comes after a later
 * ioctl of its thread could belong to an older call that a stream no longer
 * knows: that is the reason (why) to read the file into memory instead.
 * Records still waiting at the end are unmatched, as in memory.
 */
#ifndef KX_SCTRSTATS_H
#define KX_SCTRSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/ctrstats.h"
#include "model/capinfo.h"
#include "model/counter.h"
#include "model/event.h"
#include "util/hashmap.h"
#include "util/slots.h"
#include "util/tidtab.h"

struct kx_sctr_thread; /* sctrstats.c */

struct kx_sctrstats {
	const char *why;        /* NULL: the stream joins as memory does */
	struct kx_ctrstats *cs; /* the rows so far (names and counts set at the end) */
	struct kx_hmap ix;      /* row key -> row index */
	size_t rcap;
	struct kx_hmap waiting;   /* hash(tid, ts) -> slot in wait */
	struct kx_slots wait;     /* counter records waiting for their call (struct kx_ctr_ev) */
	struct kx_tidtab threads; /* each thread's last ioctl (struct kx_sctr_thread) */
	uint64_t records, matched;
};

/* For a capture whose header (ci) names counters. 0, or -1 when out of memory. */
int kx_sctrstats_init(struct kx_sctrstats *s, const struct kx_capinfo *ci);
/* A counter record; 0, or -1 when out of memory. */
int kx_sctrstats_ctr(struct kx_sctrstats *s, const struct kx_ctr_ev *c);
/* An ioctl: joined with its waiting record. 0, or -1 when out of memory. */
int kx_sctrstats_ioctl(struct kx_sctrstats *s, const struct kx_ioctl *e);
/* Once every record is in: the statistics (the record counts from ci, the
 * capture's trailer facts), handed over (the caller frees them), NULL
 * when out of memory. */
struct kx_ctrstats *kx_sctrstats_finish(struct kx_sctrstats *s, const struct kx_capinfo *ci);
void kx_sctrstats_free(struct kx_sctrstats *s);

#endif /* KX_SCTRSTATS_H */
