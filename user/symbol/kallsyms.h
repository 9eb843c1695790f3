/*
 * Kernel symbols: the text symbols of /proc/kallsyms (vmlinux and modules),
 * sorted by address for binary search. Without privilege (CAP_SYSLOG, or
 * kernel.kptr_restrict) the kernel shows every address as 0: the table is
 * then empty and says so (kx_kallsyms_hidden), and kernel frames stay
 * unresolved. This module owns the table and its strings.
 */
#ifndef KX_SYMBOL_KALLSYMS_H
#define KX_SYMBOL_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct kx_ksym {
	uint64_t addr;      /* kernel virtual address of the symbol's start */
	const char *name;   /* function name */
	const char *module; /* module name ("kvm"), "" for the kernel image */
};

struct kx_kallsyms;

/* Reads path (NULL: /proc/kallsyms). NULL with err set when it cannot be read. */
struct kx_kallsyms *kx_kallsyms_load(const char *path, char *err, size_t len);
/* 1 when every address read as 0 (not privileged to see them). */
int kx_kallsyms_hidden(const struct kx_kallsyms *k);
/* Text symbols kept. */
size_t kx_kallsyms_count(const struct kx_kallsyms *k);
/* The symbol addr falls in (the last one starting at or below it, if addr is
 * less than KX_KSYM_MAX_SPAN bytes past it), with *off = addr - its start;
 * NULL when none. */
#define KX_KSYM_MAX_SPAN (1u << 20)
const struct kx_ksym *kx_kallsyms_find(const struct kx_kallsyms *k, uint64_t addr, uint64_t *off);
/* The first symbol of that name, NULL when none. Linear: for tests and probes. */
const struct kx_ksym *kx_kallsyms_by_name(const struct kx_kallsyms *k, const char *name);
void kx_kallsyms_free(struct kx_kallsyms *k);

#endif /* KX_SYMBOL_KALLSYMS_H */
