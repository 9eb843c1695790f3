/*
 * Stack copies paired with their samples (--call-graph dwarf): the program
 * emits a sample's user stack copy (struct kx_ustack_rec) just before the
 * sample record, on the same CPU. Each copy is unwound on arrival
 * (symbol/unwind.h) and its frames wait in its CPU's slot; the sample of
 * the same tid and ts then takes them as its user frames, in place of the
 * frame-pointer walk it carries (kept when the unwind found no frame).
 * An off-CPU interval's copy (made at its switch-out; its record comes at
 * the switch-in, perhaps on another CPU) waits in its thread's slot.
 * Samples and off-CPU intervals are counted together.
 * Owns the unwinder and the per-CPU slots; counts every sample it could
 * not unwind.
 */
#ifndef KX_CAPTURE_USTACK_H
#define KX_CAPTURE_USTACK_H

#include <stddef.h>
#include <stdint.h>

#include "capture/sampler.h"
#include "model/capinfo.h"
#include "model/sample.h"

struct kx_ustack_pair;

struct kx_ustack_counts {
	uint64_t copies;    /* stack copies received */
	uint64_t malformed; /* copies that did not parse (never expected) */
	uint64_t unwound;   /* samples unwound to their outermost frame */
	uint64_t partial;   /* samples whose unwind stopped before it */
	uint64_t jit_stops; /* of those, stopped at JIT code (symbol/unwind.h: KX_UNWIND_JIT) */
	uint64_t failed;    /* samples whose copy gave no frame (their frame-pointer walk kept) */
	uint64_t no_copy;   /* user samples without a copy (lost or not read) */
	uint64_t fp_kept;   /* auto: samples whose frame-pointer walk was kept */
};

/* NULL with err set (out of memory, no libdw). autom: --call-graph auto,
 * where a CPU sample keeps its frame-pointer walk when every frame of it
 * lies in a module that keeps frame pointers (symbol/unwind.h), and its
 * copy is unwound otherwise (off-CPU copies are always unwound). */
struct kx_ustack_pair *kx_ustack_pair_new(int autom, char *err, size_t len);
/* A KX_REC_USTACK record of len bytes: unwound, kept for its sample. */
void kx_ustack_pair_copy(struct kx_ustack_pair *p, const void *rec, size_t len);
/* A sample: its user frames become the unwound ones when its copy waits
 * (s->uips then points into p until the next call). */
void kx_ustack_pair_sample(struct kx_ustack_pair *p, struct kx_sample *s);
void kx_ustack_pair_counts(const struct kx_ustack_pair *p, struct kx_ustack_counts *c);
/* Its counts and the sampler's copy counts into a capture's sample facts. */
void kx_ustack_facts(const struct kx_ustack_pair *p, const struct kx_sample_counts *sc,
                     struct kx_sample_info *si);
void kx_ustack_pair_free(struct kx_ustack_pair *p);

#endif /* KX_CAPTURE_USTACK_H */
