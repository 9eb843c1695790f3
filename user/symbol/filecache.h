/*
 * Symbol files, read once: the ELF symbols of each code file a process maps
 * (keyed by device and inode, and shared by build id, so a library mapped
 * by many processes, or the same library under two names, is read once),
 * and the vdso image copied out of a live process (keyed by build id). A
 * file that cannot be read is remembered with its reason, so it is tried
 * once too. This module owns the entries and their symbol tables.
 */
#ifndef KX_SYMBOL_FILECACHE_H
#define KX_SYMBOL_FILECACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbol/elfsyms.h"
#include "symbol/procmaps.h"

struct kx_symfile {
	uint64_t dev, inode;                    /* the file's identity; 0, 0 for the vdso */
	char *path;                             /* as first mapped ("[vdso]" for the vdso) */
	char build_id[2 * KX_BUILD_ID_MAX + 1]; /* lower-case hex, "" when none */
	const struct kx_elfsyms *syms;          /* NULL when unreadable (why says so) */
	char why[160];
};

struct kx_filecache_stats {
	uint64_t files_read;      /* ELF files and vdso images whose symbols were read */
	uint64_t shared_build_id; /* files not read again: same build id as one read */
	uint64_t failed;          /* files that could not be read */
};

struct kx_filecache;

struct kx_filecache *kx_filecache_new(void);
/*
 * From now on a file's symbols are read only when the process that maps it
 * could read the file itself: its file-system uid, gid and groups (from
 * /proc/PID/status) against the file's mode bits. A privileged reader acting
 * for an unprivileged user (the daemon) so learns nothing from a file that
 * user may only execute. ACLs and capabilities are not consulted: a file
 * readable through an ACL alone stays unread (its frames [unknown]).
 */
void kx_filecache_as_process(struct kx_filecache *fc);
/* The symbols of mapping m of live process pid (a file, or the vdso).
 * NULL only when out of memory. */
const struct kx_symfile *kx_filecache_get(struct kx_filecache *fc, pid_t pid,
                                          const struct kx_procmap *m);
void kx_filecache_stats(const struct kx_filecache *fc, struct kx_filecache_stats *st);
void kx_filecache_free(struct kx_filecache *fc);

#endif /* KX_SYMBOL_FILECACHE_H */
