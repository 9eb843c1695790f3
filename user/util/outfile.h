/*
 * Safe outputs: the one rule every file kxprof writes follows. Bytes go to a
 * temporary file created (O_EXCL, unique name NAME.<pid>-<n>.tmp) in the
 * target's directory; kx_outfile_commit syncs it and renames it into place
 * only when complete; kx_outfile_abort, an error, or a fatal signal caught
 * through kx_outfile_catch_signals removes that temporary file. An existing
 * file can be kept as NAME.old (KX_OUT_KEEP_OLD, as record files are).
 * Refused with a message saying what to do: an empty path, an existing path
 * that is not a regular file (devices, fifos, directories; "-" is standard
 * output only with KX_OUT_STDOUT), and an output that is one of the inputs
 * (same device and inode once links are resolved). Nothing is unlinked or
 * truncated that this module did not create in this run.
 * A run folder (kx_outdir) is a new directory made for one run's outputs,
 * never an existing one; until kept, an abort or a fatal signal removes the
 * directories it created, deepest first, while they are empty.
 * The signal registry holds the live temporary files and new directories:
 * open, commit, abort and the outdir calls are made from one thread at a
 * time, with the caught signals held off while the registry changes.
 */
#ifndef KX_OUTFILE_H
#define KX_OUTFILE_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>

#define KX_OUT_KEEP_OLD 1u /* an existing NAME is kept as NAME.old on commit */
#define KX_OUT_STDOUT   2u /* "-" means standard output */

struct kx_outfile {
	int fd;              /* where the bytes go: the temporary file, or a dup of stdout */
	int to_stdout;       /* 1: "-" with KX_OUT_STDOUT; nothing is renamed */
	unsigned int flags;  /* KX_OUT_* */
	int slot;            /* index in the signal registry, -1 when none */
	char path[PATH_MAX]; /* final path, symbolic links resolved */
	char tmp[PATH_MAX];  /* the temporary file; "" once renamed or removed */
};

/* Refuses an output path that is empty, not a regular file (when it exists),
 * or the same file as one of the n inputs (NULL entries are skipped).
 * 0, or -1 with err saying what to do. */
int kx_outfile_check(const char *path, unsigned int flags, const char *const *inputs, int n,
                     char *err, size_t len);

/* Checks path (no inputs) and creates its temporary file. 0, or -1 with err. */
int kx_outfile_open(struct kx_outfile *o, const char *path, unsigned int flags, char *err,
                    size_t len);

/* Syncs and closes the temporary file and renames it to the final path
 * (keeping an existing file as NAME.old with KX_OUT_KEEP_OLD). On failure
 * the temporary file is removed. 0, or -1 with err. */
int kx_outfile_commit(struct kx_outfile *o, char *err, size_t len);

/* Closes and removes the temporary file; the final path is left untouched. */
void kx_outfile_abort(struct kx_outfile *o);

/* The whole of an output made in memory (n bytes at p) written to path by
 * this rule: open, write, commit. 0, or -1 with err. */
int kx_outfile_write(const char *path, unsigned int flags, const void *p, size_t n, char *err,
                     size_t len);

/* Async-signal-safe: unlinks every live temporary file, then removes the
 * live new directories (deepest first, only when empty); nothing else. Only
 * those this process made: in a child forked before its exec it removes
 * nothing. */
void kx_outfile_unlink_live(void);

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE: remove the live temporary
 * files and new directories, then die of the same signal (default action). For commands
 * that stop on a signal without finishing their outputs (convert, replay).
 * 0, or -1 with errno. */
int kx_outfile_catch_signals(void);

/* Holds off the signals kx_outfile_catch_signals handles (the previous mask
 * in old), so that a group of commits is not cut in half; a signal that came
 * meanwhile is acted on at kx_outfile_release_signals. */
void kx_outfile_hold_signals(sigset_t *old);
void kx_outfile_release_signals(const sigset_t *old);

#define KX_OUTDIR_MAX 16 /* directories one kx_outdir may create */

struct kx_outdir {
	int n;                   /* directories created, outermost first */
	int slot[KX_OUTDIR_MAX]; /* their entries in the signal registry */
	char path[PATH_MAX];     /* the new directory */
};

/* Refuses a directory path that is empty or names something that is not a
 * directory. 0, or -1 with err saying what to do. */
int kx_outdir_check(const char *path, char *err, size_t len);

/* Creates parent (and its missing ancestors), then a new directory in it
 * named base, or base-2, base-3, ... when that name is taken (never one that
 * existed): d->path. 0, or -1 with err (nothing created is left). */
int kx_outdir_make(struct kx_outdir *d, const char *parent, const char *base, char *err,
                   size_t len);

/* The outputs in it are complete: the directories stay. */
void kx_outdir_keep(struct kx_outdir *d);

/* Removes the directories d created, deepest first, where they are empty. */
void kx_outdir_abort(struct kx_outdir *d);

#endif /* KX_OUTFILE_H */
