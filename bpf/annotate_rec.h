/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Annotation records (bpf/annotate.bpf.c -> user space): the wire format of
 * the probes of libkxprof_annotate.so (plugin/kxprof_annotate.h). Every
 * record starts with struct kx_hdr (bpf/kxprof.h) of type KX_REC_ANNOTATION.
 * Thread ranges are paired in the kernel: a POP carries the begin time of
 * the range it ends (== its PUSH's ts), and so does an END for its START.
 */
#ifndef KXPROF_ANNOTATE_H_BPF
#define KXPROF_ANNOTATE_H_BPF

#include "kxprof.h"

/* Record type, kept clear of enum kx_rec_type's values. */
#define KX_REC_ANNOTATION 16

#define KX_ANN_NAME_MAX 96 /* bytes of a name kept, NUL included */
#define KX_ANN_CAT_MAX  32 /* bytes of a category kept, NUL included */
#define KX_ANN_DEPTH    32 /* thread range levels tracked; deeper ones are counted, not recorded */

/* The library's probes: provider and names, in probe order. */
#define KX_ANN_PROVIDER "kxprof"

/*
 * Set by a tracer in the environment of a program it launches:
 * "TRACER_PID:MAX_MS". Each copy of the library the program (or a child)
 * loads then holds its constructor until its probes are attached, for at
 * most MAX_MS, and not once TRACER_PID is gone.
 */
#define KX_ANN_WAIT_ENV "KXPROF_ANNOTATE_WAIT"

enum kx_ann_what {
	KX_ANN_PUSH = 1, /* a thread range began: name, category, depth */
	KX_ANN_POP,      /* the thread's innermost range ended: begin, depth */
	KX_ANN_MARK,     /* a point: name, category; depth = ranges open on the thread */
	KX_ANN_START,    /* a cross-thread range began: id, name, category */
	KX_ANN_END,      /* the cross-thread range id ended (any thread): begin */
};

/* Record flags. */
#define KX_ANN_F_NAME_CUT   1 /* the name had KX_ANN_NAME_MAX - 1 bytes or more: maybe cut */
#define KX_ANN_F_CAT_CUT    2 /* same for the category */
#define KX_ANN_F_NAME_FAULT 4 /* the name could not be read: left empty */
#define KX_ANN_F_CAT_FAULT  8 /* the category could not be read: left empty */

struct kx_ann_rec {
	struct kx_hdr hdr;
	unsigned long long ts;    /* the call, CLOCK_MONOTONIC ns */
	unsigned long long begin; /* POP/END: when the range began (ns); else ts */
	unsigned long long id;    /* START/END: the range id; else 0 */
	unsigned int pid;         /* tgid */
	unsigned int tid;
	unsigned short what;  /* enum kx_ann_what */
	unsigned short depth; /* PUSH/POP: level of the range, 1 = outermost; MARK: open ranges */
	unsigned short flags; /* KX_ANN_F_* */
	unsigned short pad;
	/* PUSH, MARK, START only (POP and END records end here, hdr.size says) */
	char name[KX_ANN_NAME_MAX];    /* NUL-terminated */
	char category[KX_ANN_CAT_MAX]; /* NUL-terminated, "" when none */
};
#define KX_ANN_REC_BASE_SIZE ((unsigned long)&((struct kx_ann_rec *)0)->name)

/*
 * Counters in the per-CPU ann_stats array. received + dropped == emitted;
 * the others say which annotations could not be recorded, and why.
 */
enum kx_ann_stat {
	KX_ANN_STAT_EMITTED = 0,    /* records the BPF side tried to submit */
	KX_ANN_STAT_DROPPED,        /* records lost: ring buffer reservation failed */
	KX_ANN_STAT_POP_NO_PUSH,    /* pops on a thread with no open range (pushed before the
	                               capture, or unbalanced) */
	KX_ANN_STAT_DEPTH_OVERFLOW, /* ranges nested deeper than KX_ANN_DEPTH: not recorded */
	KX_ANN_STAT_END_NO_START,   /* ends of an id with no open start (started before the
	                               capture, ended twice, or never started) */
	KX_ANN_STAT_THREADS_FULL,   /* pushes lost: the per-thread state map was full */
	KX_ANN_STAT_RANGES_FULL,    /* starts lost: the open cross-thread range map was full */
	KX_ANN_STAT_NAME_FAULT,     /* names or categories that could not be read */
	KX_ANN_STAT_NOTES_LOST,     /* library loads of traced processes not reported: the
	                               notes ring was full (a rescan finds their copies) */
	KX_ANN_STAT_MAX,
};

/*
 * A traced process finished mapping libraries (the dynamic loader's
 * debugger hook, _dl_debug_state, after a start-up load or a dlopen, before
 * the new objects' constructors run): user space scans it for copies of
 * the library. Sent on the ann_notes ring, not the events ring.
 */
struct kx_ann_note {
	unsigned int pid; /* tgid */
	unsigned int tid;
	unsigned long long ts; /* the hook ran, CLOCK_MONOTONIC ns (at or before the map) */
};

#endif /* KXPROF_ANNOTATE_H_BPF */
