/*
 * Perf maps: the symbols of code with no ELF file behind it, as a JIT
 * (Node, Java agents, LuaJIT, CPython >= 3.12 with -X perf) writes them to
 * /tmp/perf-PID.map, one "START SIZE NAME" line per function (START and
 * SIZE in hex, without or with 0x). The file is read again whenever its
 * size or modification time changed, so functions compiled later are
 * found; only a regular file owned by the process's user (or root) is
 * read, never through a symlink. This module owns the parsed entries.
 */
#ifndef KX_SYMBOL_PERFMAP_H
#define KX_SYMBOL_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/arena.h"

struct kx_perfmap_sym {
	uint64_t start; /* first: kx_addr_floor searches by it */
	uint64_t size;  /* bytes */
	size_t name;    /* offset in names */
};

struct kx_perfmap {
	char path[64];              /* /tmp/perf-PID.map */
	uint32_t owner;             /* the uid the file must belong to (or root's) */
	struct kx_perfmap_sym *sym; /* sorted by start; of one start, the last line's */
	size_t n, cap;
	struct kx_arena names;
	int64_t size, mtime_ns; /* of the file as last read; -1: never read */
};

/* Prepares pm for pid's map, to be owned by uid (nothing read yet). */
void kx_perfmap_init(struct kx_perfmap *pm, pid_t pid, uint32_t uid);
/* (Re)reads the file when it changed since the last read. 1 when the
 * entries changed, 0 when not (or no such file), -1 when it is not a file
 * this module may read (err set) or out of memory. */
int kx_perfmap_load(struct kx_perfmap *pm, char *err, size_t len);
/* The name of the function holding addr, NULL when none; *off: bytes past its start. */
const char *kx_perfmap_find(const struct kx_perfmap *pm, uint64_t addr, uint64_t *off);
void kx_perfmap_free(struct kx_perfmap *pm);

#endif /* KX_SYMBOL_PERFMAP_H */
