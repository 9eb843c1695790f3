/*
 * Resolved symbols in storable form: the table of (process image, address)
 * -> (function, module, build id, offsets) for exactly the addresses a
 * capture uses, with its strings interned in one arena and referred to by
 * offset, so a record file can carry it and another machine show the
 * names. Addresses are noted as samples arrive and resolved in batches
 * (symbol/resolve.h); entries resolved elsewhere (read from a file) are put
 * in whole. Stored input is not trusted: kx_symres_load checks it. This
 * module owns the entries and the string arena.
 */
#ifndef KX_MODEL_SYMRES_H
#define KX_MODEL_SYMRES_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

#define KX_SYMRES_KERNEL 0 /* pid of kernel addresses (shared by every process) */

struct kx_symres_entry {
	uint64_t addr;       /* run-time address, as looked up (kx_frame_addr) */
	uint64_t offset;     /* bytes past the function's start (0 when unknown) */
	uint64_t mod_offset; /* user: file offset in the module; kernel: 0 */
	uint32_t pid;        /* tgid of a user address, KX_SYMRES_KERNEL for kernel ones */
	uint32_t gen;        /* the image's exec_id (model/sample.h); 0 for kernel ones */
	uint32_t func;       /* string offsets: function name ("[unknown]") */
	uint32_t module;     /*   module (file path, "[vdso]", "[kvm]", "[kernel.kallsyms]") */
	uint32_t build_id;   /*   hex build id, "" when none */
	uint8_t known;       /* 1 when func names a function */
	uint8_t pending;     /* 1 until resolved (never stored) */
	uint16_t pad;
};

struct kx_symres {
	struct kx_symres_entry *e; /* the first nsorted sorted by (pid, gen, addr), then new ones */
	size_t n, cap, nsorted;
	struct kx_arena strs;
	uint32_t *index; /* string offsets sorted by content (interning) */
	size_t nindex, index_cap;
	size_t unknown; /* resolved entries that stayed [unknown] */
};

/* Notes an address to resolve (repeats are fine). 0, or -1 out of memory. */
int kx_symres_add(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr);
/* The same, unless the sorted part already has it: 1 when added, 0 when
 * it was there, -1 out of memory. */
int kx_symres_note(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr);
/* What a resolved address is (strings copied and interned by kx_symres_put). */
struct kx_symres_names {
	const char *func, *module, *build_id;
	uint64_t offset, mod_offset;
	int known;
};
/* Adds (pid, gen, addr) resolved as n. 0, or -1 out of memory. */
int kx_symres_put(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr,
                  const struct kx_symres_names *n);
/* Sorts the new entries in (one per key: a resolved one if there is one);
 * kx_symres_find sees only sorted entries. */
void kx_symres_settle(struct kx_symres *r);
/* The resolved entry of (pid, gen, addr), NULL when there is none. */
const struct kx_symres_entry *kx_symres_find(const struct kx_symres *r, uint32_t pid, uint32_t gen,
                                             uint64_t addr);
static inline const char *kx_symres_str(const struct kx_symres *r, uint32_t off)
{
	return kx_arena_str(&r->strs, off);
}
/* The offset of s in the arena, added once; -1 when out of memory. */
int64_t kx_symres_intern(struct kx_symres *r, const char *s);
/* Rebuilds r (empty) from n stored entries and strs_len bytes of strings;
 * 0, or -1 with err set when they do not hold together. */
int kx_symres_load(struct kx_symres *r, const struct kx_symres_entry *e, size_t n, const char *strs,
                   size_t strs_len, char *err, size_t len);
void kx_symres_free(struct kx_symres *r);

#endif /* KX_MODEL_SYMRES_H */
