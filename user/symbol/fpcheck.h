/*
 * Whether the code of an ELF file keeps frame pointers (--call-graph
 * auto): the share of its function symbols (.symtab, else .dynsym) whose
 * code begins with the x86-64 frame setup: `push %rbp` first (after an
 * endbr64), `mov %rsp,%rbp` within the first 32 bytes. Code built with -fno-omit-frame-pointer
 * begins so in nearly every function (shrink-wrapped ones set it up later and are missed); code
 * built without begins so only where a function needs a frame for itself (alloca, variable-length
 * arrays). Owns nothing.
 */
#ifndef KX_SYMBOL_FPCHECK_H
#define KX_SYMBOL_FPCHECK_H

#include <libelf.h>

/* Functions looked at per file at most (in symbol table order). */
#define KX_FPCHECK_MAX_FUNCS 4096
/* Functions shorter than this many bytes are not counted (stubs, thunks). */
#define KX_FPCHECK_MIN_SIZE 16

struct kx_fpcheck {
	unsigned int funcs;   /* functions looked at */
	unsigned int with_fp; /* of those, beginning with the frame setup */
};

/* Counts the functions of elf into *c. 1 when the file keeps frame
 * pointers: at least 8 functions looked at and half of them set up a
 * frame; 0 otherwise (also off x86-64, and for a file without symbols). */
int kx_fpcheck_elf(Elf *elf, struct kx_fpcheck *c);

#endif /* KX_SYMBOL_FPCHECK_H */
