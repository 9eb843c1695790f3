/*
 * Annotation capture: loads bpf/annotate.bpf.c and attaches its programs to
 * the USDT probes (provider "kxprof") of every copy of libkxprof_annotate.so
 * the traced processes map: a named file, or the files found in
 * /proc/PID/maps that carry kxprof's .note.stapsdt probes (vendored copies
 * at other paths; copies dlopen'ed later are found by the next rescan).
 * Each file is attached once for every process (pid -1, the in-kernel pid
 * filter decides) in a capture of every process (opts.all), else once per
 * traced process, with that pid: the kernel then puts its breakpoints and
 * raises the semaphores in that process only, never in another process
 * (another user's) that maps the same file. A file is opened once, through
 * /proc/PID/map_files (or the process's root, no symlink at the end), must
 * be the device and inode the maps line names, and is parsed and attached
 * through that open file (/proc/self/fd/N): a path swapped after the check
 * cannot send probes or semaphore increments elsewhere. A capture attaches
 * at most KX_ANN_MAX_ATTACHED copies and KX_ANN_MAX_UPROBES uprobes; what
 * the caps refuse is counted and said in the copy list. A copy lacking some probes (an older
 * library) or all of them (stripped of its notes) is reported in the copy
 * list, never fatal. Owns the object, its links and the copy list; records
 * go to the ring buffer (its own, or a session's) in bpf/annotate_rec.h's layout.
 *
 * Copies loaded while a capture runs: kx_annot_watch puts a uprobe on the
 * dynamic loader's debugger hook (_dl_debug_state, which it calls after
 * mapping objects and before running their constructors) and scans each
 * traced process that hits it, on a thread of its own; a process launched
 * with KX_ANN_WAIT_ENV set has its copies of the library hold their
 * constructor until their probes are attached, so nothing it annotates is
 * missed. Others may run on for the few ms the scan takes. When the
 * probes come later than the copy's wait (a loaded machine), the copy goes
 * on untraced until they do: the loader's report (its time) against the
 * attach time tells, and kx_annot_info lists the process and the window in
 * which its annotations may be missing (capture/annwait.h).
 */
#ifndef KX_CAPTURE_ANNOTATE_H
#define KX_CAPTURE_ANNOTATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "annotate_rec.h" /* bpf/: the record layout */
#include "model/annot.h"

#define KX_ANN_NPROBES 5 /* range_push, range_pop, mark, range_start, range_end */
/* Caps of one capture. Copies: distinct files with a probe attached. Uprobes:
 * probe sites attached, summed over the processes (each attachment takes
 * one per site; the library has 8); far below libbpf's 256 USDT spec ids,
 * whose exhaustion error path libbpf 1.1 mishandles (a double free). Each
 * uprobe costs the kernel a grace period at detach (about 0.2 s here), so
 * the caps also bound how long a stop takes. */
#define KX_ANN_MAX_ATTACHED 8
#define KX_ANN_MAX_UPROBES  64

struct kx_annot_opts {
	int all;                /* every process: no pid filter */
	const pid_t *pids;      /* else these tgids (own pid set only; it does not follow forks,
	                           a session's pid set does) */
	int npids;              /* entries of pids */
	int events_fd, pids_fd; /* a session's ring buffer and pid set; 0: its own */
	int stats_fd;           /* a session's counters (task records the probes make) */
	uint32_t ring_bytes;    /* own ring buffer size in bytes (0: 8 MiB) */
	uint64_t wakeup_bytes;  /* wake the reader past this much data (0: 256 KiB) */
	int uid_only;           /* only processes of this uid (capture/session.h) */
	uint32_t uid;
};

/* One file that carries (or should carry) the probes. */
struct kx_annot_copy {
	char path[512];   /* as the process that maps it sees it, or as named */
	dev_t dev;        /* identity of the file */
	ino_t ino;        /* identity of the file */
	pid_t pid;        /* first found in this pid; -1: every process (opts.all) */
	uint8_t found;    /* bit i: probe i is in the file's notes (kx_annot_probe_name) */
	uint8_t attached; /* bit i: probe i attached (for some process) */
	uint32_t sites[KX_ANN_NPROBES]; /* probe sites (notes) of probe i */
	char why[160];                  /* what is missing or failed, "" when all five attached */
};

struct kx_annot;

/* NULL on failure, with what failed and what to do in err. */
struct kx_annot *kx_annot_open(const struct kx_annot_opts *o, char *err, size_t len);
/* Attaches the probes of the file at path for pid (-1: every process, only
 * with opts.all; -EINVAL otherwise). 1 when at least one probe attached, 0
 * when the file was attached for pid already, has none or the caps refused
 * it (see the copy list), -errno when it cannot be read. */
int kx_annot_attach_path(struct kx_annot *a, const char *path, pid_t pid);
/* Finds and attaches the copies process pid maps (for pid; for every
 * process with opts.all): new attachments, 0 when pid is not in the pid
 * set, or -errno when its maps cannot be read (process gone). */
int kx_annot_scan_pid(struct kx_annot *a, pid_t pid);
/* Scans every traced process (the pid set, or all with opts.all): new
 * copies attached. Call it now and then to find dlopen'ed copies. */
int kx_annot_rescan(struct kx_annot *a);
/* Adds a tgid to its own pid set (0, or -errno). */
int kx_annot_add_pid(struct kx_annot *a, pid_t pid);

/*
 * Watches traced processes for objects they map later (start-up loads of
 * a new program, dlopen) and attaches the copies among them, on a thread
 * of its own that also rescans the pid set every rescan_ms (0: never; not
 * with opts.all). 0, or -errno with why when the loader hook could not be
 * had (the thread still rescans: copies loaded later are found late).
 */
int kx_annot_watch(struct kx_annot *a, unsigned int rescan_ms, char *why, size_t len);
/* The copy list, as it is now (not while kx_annot_watch's thread runs:
 * use kx_annot_info then). */
const struct kx_annot_copy *kx_annot_copies(const struct kx_annot *a, int *n);
/* The copies and the counters (enum kx_ann_stat) into info; info's received
 * count is the reader's to fill. Thread-safe. 0, or -errno (counters unread). */
int kx_annot_info(struct kx_annot *a, struct kx_ann_info *info);
const char *kx_annot_probe_name(int i);

/* Own ring buffer only: calls cb for each record for up to timeout_ms;
 * records handled, or -errno. cb returns 0 to go on. */
typedef int (*kx_annot_cb)(void *ctx, const struct kx_ann_rec *r, size_t size);
int kx_annot_poll(struct kx_annot *a, int timeout_ms, kx_annot_cb cb, void *ctx);
/* Sums of the per-CPU counters (enum kx_ann_stat). 0, or -errno. */
int kx_annot_stats(const struct kx_annot *a, uint64_t out[KX_ANN_STAT_MAX]);
/* Stops the watcher, detaches every probe (records already made stay in the ring). */
void kx_annot_detach(struct kx_annot *a);
/* Runs of its programs the kernel skipped (capture/progmiss.h); 0 for NULL. */
uint64_t kx_annot_missed(const struct kx_annot *a);
void kx_annot_close(struct kx_annot *a);

#endif /* KX_CAPTURE_ANNOTATE_H */
