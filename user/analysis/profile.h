/*
 * The CPU profile of a capture (or its off-CPU profile): its samples folded
 * into distinct stacks of named frames, root first: the user frames, then
 * a frame for the traced ioctl the sample was taken in ("[kvm] KVM_RUN",
 * "[loop] BLKFLSBUF"), then the kernel frames beneath it. Frames are named
 * from the capture's resolved symbols (model/symres.h); an address without
 * a name is "[unknown]" with its module, and counted. Frames are
 * de-duplicated (kind, name, module), and so are stacks (frames, process,
 * thread, call, the thread's name at the sample: an exec or a rename
 * splits a thread's stacks by name), each with its sample count and weight. pprof, folded
 * stacks, the report and Chrome JSON all read this one result.
 *
 * Off-CPU stacks start at the scheduler (__schedule): the frames above it
 * are the tracing machinery that took them.
 */
#ifndef KX_ANALYSIS_PROFILE_H
#define KX_ANALYSIS_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "model/sample.h"
#include "model/store.h"
#include "util/intern.h"

enum kx_pframe_kind { KX_PF_USER = 1, KX_PF_KERNEL, KX_PF_CALL };

struct kx_pframe {
	const char *name;   /* function; "[unknown] (libc.so.6)"; "[kvm] KVM_RUN" */
	const char *module; /* file path, "[vdso]", "[kernel.kallsyms]", "[kvm]", "[driver call]" */
	const char *build_id; /* hex, "" when none */
	uint64_t addr;        /* an address of it (the first seen), for locations */
	uint8_t kind;         /* enum kx_pframe_kind */
	uint8_t known;        /* 0: [unknown] */
};

struct kx_pstack {
	uint32_t first, depth; /* frame ids fids[first .. first + depth), root first */
	uint32_t pid, tid;
	uint32_t call;      /* the call frame's id + 1, 0: not inside a traced call */
	uint32_t name;      /* the thread's name at its samples (kx_samples_comm_id_at), 0: none */
	const char *comm;   /* that name, NULL when none was recorded */
	uint64_t count;     /* samples (off-CPU: intervals) */
	uint64_t weight_ns; /* CPU: count x period; off-CPU: ns away */
};

struct kx_profile {
	unsigned int kind;  /* KX_SAMPLE_CPU or KX_SAMPLE_OFFCPU */
	uint64_t period_ns; /* CPU: 1e9 / frequency; off-CPU: 0 */
	uint32_t hz;        /* CPU: the frequency, 0 when unknown */
	struct kx_pframe *frames;
	size_t nframes;
	uint32_t *fids;
	size_t nfids;
	struct kx_pstack *stacks;
	size_t nstacks;
	uint64_t samples;          /* of this kind */
	uint64_t weight_ns;        /* their total weight */
	uint64_t in_calls;         /* of them, taken inside traced ioctls */
	uint64_t unknown[2];       /* frames shown as [unknown]: user, kernel (per sample frame) */
	uint64_t start_ns, end_ns; /* first and last sample (CLOCK_MONOTONIC), 0 with none */
	uint32_t *by_sample; /* per sample of the store: its stack, UINT32_MAX for other kinds */
	size_t nby_sample;
	struct kx_intern names; /* names made for the profile (freed with it) */
};

/* The profile of the samples of one kind in s (ci: frequency; may be
 * NULL). NULL with err set when out of memory. */
struct kx_profile *kx_profile_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                    unsigned int kind, char *err, size_t len);
void kx_profile_free(struct kx_profile *p);

/* The thread's name (from its samples, the latest), or "" when unknown. */
const char *kx_profile_comm(const struct kx_store *s, uint32_t tid);
/* The name of st's thread when its samples were taken (else the thread's). */
const char *kx_profile_stack_comm(const struct kx_store *s, const struct kx_pstack *st);

#endif /* KX_ANALYSIS_PROFILE_H */
