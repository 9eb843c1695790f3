/*
 * The perf-event data of a capture: CPU samples and off-CPU intervals
 * (model/sample.h) with their stacks interned (a stack that repeats is kept
 * once), the latest name of each sampled thread, the counters read inside
 * traced calls (model/counter.h), and the resolved symbols of the addresses
 * the stacks use (symbol/resolved.h's table, filled by whoever symbolised them:
 * the recorder, or the record file's reader). Bounded: every allocation is
 * charged to the owner's budget first (the event store's limit); a sample
 * that does not fit is counted, never half stored. Single writer, readers
 * after the capture.
 */
#ifndef KX_MODEL_PERFDATA_H
#define KX_MODEL_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#include "model/counter.h"
#include "model/sample.h"

/* Charges (bytes > 0) or gives back (bytes < 0) memory: 0, or -1 when a
 * charge does not fit the budget. */
typedef int (*kx_charge_fn)(void *ctx, long long bytes);

/* One interned stack: kernel frames (leaf first) then user frames (leaf first). */
struct kx_stack {
	uint64_t hash;
	uint32_t off; /* first frame in the frame arena */
	uint16_t nk, nu;
};

struct kx_samples;

/* A table whose memory goes through charge(ctx, ...). NULL when out of memory. */
struct kx_samples *kx_samples_new(kx_charge_fn charge, void *ctx);
void kx_samples_free(struct kx_samples *t);

/* Appends s. 0, or -1 when the budget refused it (counted in not_stored). */
int kx_samples_add(struct kx_samples *t, const struct kx_sample *s);
/* Appends a sample whose stack is already interned (readers). 0 or -1 as above. */
int kx_samples_add_ev(struct kx_samples *t, const struct kx_sample_ev *e);
/* Interns a stack of nk kernel then nu user frames at ips; its index, or -1
 * when the budget refused it. */
long kx_samples_intern(struct kx_samples *t, const uint64_t *ips, uint32_t nk, uint32_t nu);

size_t kx_samples_count(const struct kx_samples *t);
const struct kx_sample_ev *kx_samples_get(const struct kx_samples *t, size_t i);
size_t kx_samples_nstacks(const struct kx_samples *t);
/* Frames of stack i: kernel frames at ips[0 .. nk), user frames at ips[nk .. nk + nu). */
const uint64_t *kx_samples_stack(const struct kx_samples *t, uint32_t i, uint32_t *nk,
                                 uint32_t *nu);
uint64_t kx_samples_not_stored(const struct kx_samples *t);
/* Samples of each kind stored. */
uint64_t kx_samples_of_kind(const struct kx_samples *t, unsigned int kind);

/* The latest name recorded for tid (from its samples), or NULL. */
const char *kx_samples_comm(const struct kx_samples *t, uint32_t tid);
/* Sets tid's latest name (readers: names come with the samples). 0, or -1 as above. */
int kx_samples_set_comm(struct kx_samples *t, uint32_t tid, const char *comm);
/* A thread's names follow its samples: a sample whose name differs from
 * the thread's latest (an exec, a prctl(PR_SET_NAME)) starts a new one.
 * The name in force for tid at ts (ns): the latest that started at or
 * before ts (the first when ts is earlier), as an id for
 * kx_samples_comm_name, 0 when tid has none. */
uint32_t kx_samples_comm_id_at(const struct kx_samples *t, uint32_t tid, uint64_t ts);
const char *kx_samples_comm_name(const struct kx_samples *t, uint32_t id);

/* Counters of one traced call. 0, or -1 when the budget refused it (counted). */
int kx_samples_add_ctr(struct kx_samples *t, const struct kx_ctr_ev *e);
size_t kx_samples_nctr(const struct kx_samples *t);
const struct kx_ctr_ev *kx_samples_ctr(const struct kx_samples *t, size_t i);

struct kx_symres;
/* The resolved symbols of the stacks' addresses (filled by the owner). */
struct kx_symres *kx_samples_syms(struct kx_samples *t);
const struct kx_symres *kx_samples_syms_const(const struct kx_samples *t);

#endif /* KX_MODEL_PERFDATA_H */
