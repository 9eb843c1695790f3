/*
 * Resolved symbols in storable form: the table of (process, address) ->
 * (function, module, build id, offsets) for exactly the addresses a capture
 * uses, with its strings in one arena and referred to by offset, so a
 * record file can carry it and another machine show the names. Addresses
 * are added as samples arrive and resolved in batches; the table can also
 * be rebuilt from stored bytes (checked: stored input is not trusted).
 * This module owns the entries and the string arena.
 */
#ifndef KX_SYMBOL_RESOLVED_H
#define KX_SYMBOL_RESOLVED_H

#include <stddef.h>
#include <stdint.h>

#include "symbol/arena.h"

struct kx_symbolizer;

#define KX_SYMRES_KERNEL 0 /* pid of kernel addresses (shared by every process) */

struct kx_symres_entry {
	uint64_t addr;       /* run-time address */
	uint64_t offset;     /* bytes past the function's start (0 when unknown) */
	uint64_t mod_offset; /* user: file offset in the module; kernel: 0 */
	uint32_t pid;        /* tgid of a user address, KX_SYMRES_KERNEL for kernel ones */
	uint32_t func;       /* string offsets: function name ("[unknown]") */
	uint32_t module;     /*   module (file path, "[vdso]", "[kvm]", "[kernel.kallsyms]") */
	uint32_t build_id;   /*   hex build id, "" when none */
	uint32_t known;      /* 1 when func names a function */
	uint32_t pending;    /* 1 until resolved (never stored) */
};

struct kx_symres {
	struct kx_symres_entry *e; /* the first nsorted sorted by (pid, addr), then new ones */
	size_t n, cap, nsorted;
	struct kx_arena strs;
	uint32_t *index; /* string offsets sorted by content (interning) */
	size_t nindex, index_cap;
	size_t unknown; /* resolved entries that stayed [unknown] */
};

/* Notes an address to resolve (repeats are fine). 0, or -1 out of memory. */
int kx_symres_add(struct kx_symres *r, uint32_t pid, uint64_t addr);
/* Resolves the addresses added since the last call. 0, or -1 out of memory. */
int kx_symres_resolve(struct kx_symres *r, struct kx_symbolizer *s);
/* The entry of (pid, addr), NULL when it was never added and resolved. */
const struct kx_symres_entry *kx_symres_find(const struct kx_symres *r, uint32_t pid,
                                             uint64_t addr);
static inline const char *kx_symres_str(const struct kx_symres *r, uint32_t off)
{
	return kx_arena_str(&r->strs, off);
}
/* Rebuilds r (empty) from n stored entries and strs_len bytes of strings;
 * 0, or -1 with err set when they do not hold together. */
int kx_symres_load(struct kx_symres *r, const struct kx_symres_entry *e, size_t n, const char *strs,
                   size_t strs_len, char *err, size_t len);
void kx_symres_free(struct kx_symres *r);

#endif /* KX_SYMBOL_RESOLVED_H */
