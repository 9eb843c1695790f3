/*
 * Annotation events of the event model: the named ranges and marks a traced
 * program emits through libkxprof_annotate.so (plugin/kxprof_annotate.h),
 * as bpf/annotate.bpf.c records them (bpf/annotate_rec.h), and the capture
 * facts about them (which copies of the library were found, what could not
 * be recorded). Records keep raw facts: a POP or END says when its range
 * began (the kernel paired it), names are strings the store interns;
 * analysis/ranges.h turns them into ranges.
 */
#ifndef KX_MODEL_ANNOT_H
#define KX_MODEL_ANNOT_H

#include <stdint.h>

#include "annotate_rec.h" /* bpf/: what, flags, name limits */

/* One annotation event. 48 bytes in the store. */
struct kx_ann {
	uint64_t ts;    /* the call, CLOCK_MONOTONIC ns */
	uint64_t begin; /* POP/END: when the range began (ns), its PUSH/START's ts; else ts */
	uint64_t id;    /* START/END: the range id (unique in the process); else 0 */
	uint32_t pid;   /* tgid */
	uint32_t tid;
	uint32_t name;  /* PUSH/MARK/START: string id in the store (kx_store_ann_str), else 0 */
	uint32_t cat;   /* same, the category (an NVTX domain); 0: none */
	uint16_t what;  /* enum kx_ann_what */
	uint16_t depth; /* PUSH/POP: level, 1 = outermost; MARK: ranges open on the thread */
	uint16_t flags; /* KX_ANN_F_* */
	uint16_t pad;
};
_Static_assert(sizeof(struct kx_ann) == 48, "struct kx_ann grew");

/* "push", "pop", "mark", "start", "end"; "unknown" past the table. */
const char *kx_ann_what_name(unsigned int what);
/* The inverse; 0 when unknown. */
unsigned int kx_ann_what_from_name(const char *name);
/* 1 when the event carries a name and category (PUSH, MARK, START). */
static inline int kx_ann_named(unsigned int what)
{
	return what == KX_ANN_PUSH || what == KX_ANN_MARK || what == KX_ANN_START;
}

#define KX_ANN_MAX_COPIES 16 /* copies of the library listed one by one; more are counted */

/* One file carrying (or meant to carry) the probes, as the capture found it. */
struct kx_ann_copy {
	char path[192];   /* as seen in the process that mapped it */
	uint8_t found;    /* bit i: probe i (kx_annot_probe_name) is in the file's notes */
	uint8_t attached; /* bit i: probe i attached */
	char why[160];    /* what is missing or failed; "" when every probe attached */
};

#define KX_ANN_MAX_LATE 16 /* late attachments listed one by one; more are counted */

/*
 * A copy whose probes attached in a process too late for its wait: the
 * process mapped it at map_ns; a copy asked to hold (KX_ANN_WAIT_ENV) waits
 * hold_ms from its constructor, then goes on untraced; its probes attached
 * at to_ns. Annotations it made between from_ns (map_ns + hold_ms: nothing
 * before can be missing) and to_ns may be missing. Times CLOCK_MONOTONIC ns.
 */
struct kx_ann_late {
	uint32_t pid;     /* tgid */
	uint32_t hold_ms; /* the wait it was asked for, ms; 0: it did not wait */
	char comm[16];    /* the process's command name when it was found late */
	char path[192];   /* the copy, as the process sees it */
	uint64_t map_ns;  /* the loader reported the new mapping (at or before the map) */
	uint64_t from_ns; /* annotations may be missing from here (map_ns + hold_ms) */
	uint64_t to_ns;   /* to here: its probes were attached */
};

/* What the capture did about annotations. Counts, no units. */
struct kx_ann_info {
	uint32_t enabled; /* the probes were loaded (a capture that traces annotations) */
	/* Records: received + dropped == emitted. */
	uint64_t emitted;
	uint64_t received;
	uint64_t dropped;        /* ring buffer full */
	uint64_t pop_no_push;    /* pops with no open range on their thread */
	uint64_t depth_overflow; /* ranges nested deeper than KX_ANN_DEPTH: not recorded */
	uint64_t end_no_start;   /* ends of a cross-thread range id with no open start */
	uint64_t threads_full;   /* pushes lost: the kernel's per-thread table was full */
	uint64_t ranges_full;    /* starts lost: the kernel's cross-thread table was full */
	uint64_t name_faults;    /* names that could not be read (left empty) */
	uint32_t ncopies;        /* entries of copies[] */
	uint32_t more_copies;    /* copies found past KX_ANN_MAX_COPIES (not listed) */
	uint64_t capped;         /* copies (per process) not attached: the capture's caps */
	struct kx_ann_copy copies[KX_ANN_MAX_COPIES];
	uint32_t nlate;     /* entries of late[] */
	uint32_t more_late; /* late attachments past KX_ANN_MAX_LATE (not listed) */
	struct kx_ann_late late[KX_ANN_MAX_LATE];
};

#endif /* KX_MODEL_ANNOT_H */
