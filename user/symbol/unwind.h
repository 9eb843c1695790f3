/*
 * DWARF unwinding of copied user stacks (--call-graph dwarf): given a
 * sample's user registers and a copy of the top of its user stack, walks
 * the call chain with the CFI (.eh_frame, .debug_frame) of the modules
 * mapped in the process, through elfutils' libdw (the dwfl frame API: the
 * process's modules reported from /proc/PID/maps, memory reads served from
 * the copy only; libdw is opened at run time, so only a program that
 * unwinds needs it installed). Owns one dwfl per process image, kept while it is used
 * (reported again when the process exec'd or a pc, or a walk's return
 * address, falls outside every module known), so each module's CFI is parsed once per process.
 * JIT code (a pc in no module: no CFI) is stepped by libdw's own x86-64
 * fallback, by its frame pointer (CFA %rbp+16, return address [%rbp+8],
 * caller's %rbp [%rbp]), and the walk goes on with CFI from its caller. A
 * walk that ends at JIT code whose frame pointer leads nowhere goes on
 * when that code is a CPython -X perf trampoline (named "py::..." in the
 * process's perf map, symbol/perfmap.h, kept per process): at its return
 * address CFA %rsp+16, return address [%rsp+8] (read from the copy), every
 * other register the caller's (as libdw had them for that frame:
 * dwfl_frame_reg, elfutils 0.188, optional), the walk restarted from the
 * caller with them, appending frames. Else it says so (KX_UNWIND_JIT).
 * The frames stepped, the trampolines among them and the walks stopped
 * there are counted.
 */
#ifndef KX_SYMBOL_UNWIND_H
#define KX_SYMBOL_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct kx_unwinder;

/* One stack copy to unwind (see bpf/sample_rec.h: struct kx_ustack_rec). */
struct kx_ustack {
	uint32_t pid;         /* tgid */
	uint32_t exec_id;     /* the image (model/sample.h) */
	uint64_t ts_ns;       /* CLOCK_MONOTONIC ns of the sample */
	const uint64_t *regs; /* KX_USTACK_NREGS registers, DWARF x86-64 numbering */
	const uint8_t *stack; /* the copy, from regs[KX_USTACK_REG_SP] up */
	size_t len;           /* bytes in stack */
};

struct kx_unwind_stats {
	uint64_t unwound;   /* stacks unwound to their outermost frame */
	uint64_t partial;   /* stopped before it (outside the copy, no CFI, a bad frame) */
	uint64_t jit_stops; /* of those, stopped at JIT code (a pc in no module) */
	uint64_t jit_steps; /* JIT frames (a pc in no module) a walk went past */
	uint64_t py_steps;  /* of those, CPython -X perf trampolines stepped by their
	                       known layout (no frame pointer needed) */
	uint64_t failed;    /* not a frame (the process gone, no module at the pc) */
	uint64_t reports;   /* times a process's modules were read from its maps */
};

/* NULL with err set when out of memory or libdw (libdw.so.1, opened at
 * the first call) is missing. */
struct kx_unwinder *kx_unwinder_new(char *err, size_t len);
/* How a walk ended (kx_unwind's *end). */
enum kx_unwind_end {
	KX_UNWIND_STOPPED = 0, /* before the outermost frame: past the copy, no CFI, a bad frame */
	KX_UNWIND_ROOT = 1,    /* at the outermost frame */
	KX_UNWIND_JIT = 2,     /* stopped at JIT code (a pc in no module: no CFI) whose frame
	                          pointer leads nowhere: a larger copy would not go further */
};
/* Unwinds s into ips (leaf first: the pc, then return addresses), at most
 * max frames; the frame count (0: none). *end: enum kx_unwind_end. */
unsigned int kx_unwind(struct kx_unwinder *u, const struct kx_ustack *s, uint64_t *ips,
                       unsigned int max, int *end);
/* --call-graph auto: 1 when a frame-pointer walk (ips, n frames, leaf
 * first, at least 2) can be kept: every frame but the outermost lies in a
 * module of s's process that keeps frame pointers (symbol/fpcheck.h; each
 * module looked at once per session: each of them saved the frame record
 * its caller's return address was read from), and the outermost in some
 * module; 0 otherwise (a frame in no module, JIT code; the process's
 * modules cannot be read). */
int kx_unwind_fp_trusted(struct kx_unwinder *u, const struct kx_ustack *s, const uint64_t *ips,
                         unsigned int n);
void kx_unwinder_stats(const struct kx_unwinder *u, struct kx_unwind_stats *st);
void kx_unwinder_free(struct kx_unwinder *u);

#endif /* KX_SYMBOL_UNWIND_H */
