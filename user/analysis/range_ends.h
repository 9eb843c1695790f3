/*
 * Where annotation ranges left open end: a range still open when its
 * thread or process ended is closed there, not drawn to the end of the
 * recording (it stays flagged open). The same rule for the in-memory
 * ranges (analysis/ranges.h) and the streamed ones (analysis/rangewalk.h),
 * fed the same facts:
 *   - a thread ends at the latest of its annotation events, the ends of
 *     the ioctls it made once it annotated, and its exit (a task EXIT
 *     record: the capture has one for each thread that made a traced
 *     call);
 *   - a process ends at the latest end of its annotating threads and the
 *     exits of any of its threads.
 * Memory: one record per annotating thread and process.
 */
#ifndef KX_RANGE_ENDS_H
#define KX_RANGE_ENDS_H

#include <stdint.h>

#include "model/store.h"
#include "util/tidtab.h"

struct kx_range_ends {
	struct kx_tidtab threads; /* uint64_t by tid: ns, its end so far */
	struct kx_tidtab procs;   /* uint64_t by pid: ns, its end so far */
};

#define KX_RANGE_ENDS_INIT                                                                         \
	{                                                                                          \
		KX_TIDTAB_INIT(uint64_t), KX_TIDTAB_INIT(uint64_t)                                 \
	}

/* An annotation event of thread tid of process pid at ns. 0, or -1 when out of memory. */
int kx_range_ends_ann(struct kx_range_ends *e, uint32_t pid, uint32_t tid, uint64_t ns);
/* An ioctl of thread tid ending at end_ns: counted when the thread annotated before. */
void kx_range_ends_ioctl(struct kx_range_ends *e, uint32_t pid, uint32_t tid, uint64_t end_ns);
/* The EXIT records among the tasks of s (every task of the capture). */
void kx_range_ends_exits(struct kx_range_ends *e, const struct kx_store *s);
/* The end of thread tid's ranges left open (or of process pid's, for a
 * cross-thread range), never before begin (ns). */
uint64_t kx_range_end_thread(const struct kx_range_ends *e, uint32_t tid, uint64_t begin);
uint64_t kx_range_end_process(const struct kx_range_ends *e, uint32_t pid, uint64_t begin);
void kx_range_ends_free(struct kx_range_ends *e);

#endif /* KX_RANGE_ENDS_H */
