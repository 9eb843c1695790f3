/*
 * Executable mappings of a process, from /proc/PID/maps: where each code
 * file (executable, shared library) or the vdso sits in its address space.
 * A snapshot: taken while the process lives, it resolves its addresses
 * after it exited. This module owns the parsed lines.
 */
#ifndef KX_SYMBOL_PROCMAPS_H
#define KX_SYMBOL_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct kx_procmap {
	uint64_t start, end; /* run-time addresses, [start, end) */
	uint64_t offset;     /* file offset of start, bytes */
	uint64_t dev;        /* makedev(major, minor) of the file's device, 0 for the vdso */
	uint64_t inode;      /* 0 for the vdso and anonymous code */
	char *path;          /* file path, "[vdso]", or "" for anonymous code (JIT) */
};

/* Parses one maps line; 1 when it is an executable mapping (filled, path
 * allocated), 0 when not, -1 when malformed or out of memory. */
int kx_procmap_parse(const char *line, struct kx_procmap *m);
/* The executable mappings of pid, sorted by start. 0, or -1 with err set
 * (process gone, not allowed to read its maps, a read error, or no code
 * mapped: a zombie, or a process inside exec before its image is mapped). */
int kx_procmaps_read(pid_t pid, struct kx_procmap **out, size_t *n, char *err, size_t len);
/* The mapping holding addr, NULL when none. */
const struct kx_procmap *kx_procmaps_find(const struct kx_procmap *m, size_t n, uint64_t addr);
void kx_procmaps_free(struct kx_procmap *m, size_t n);

#endif /* KX_SYMBOL_PROCMAPS_H */
