/*
 * kxprof annotations: named ranges and marks that kxprof captures and nests
 * with the driver calls (ioctls) the same thread issues inside them.
 * Link with -lkxprof_annotate (build/libkxprof_annotate.so).
 *
 * Each call is a USDT probe (provider "kxprof") guarded by its semaphore:
 * while no tracer is attached a call costs one predictable branch, and the
 * name is not even read. Names are copied when the call is made (the string
 * may be freed right after); kxprof keeps their first 95 bytes.
 *
 * Thread ranges (push/pop) nest per thread: a pop ends the innermost range
 * the same thread pushed. Cross-thread ranges (start/end) may end on any
 * thread of the process: kxprof_range_start returns an id, unique in the
 * process and never 0, that kxprof_range_end takes.
 * The *_cat forms add a category (e.g. the NVTX domain); NULL means none.
 * Every function is thread-safe and never fails.
 */
#ifndef KXPROF_ANNOTATE_H
#define KXPROF_ANNOTATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a range named `name` on the calling thread (NULL: an empty name). */
void kxprof_range_push(const char *name);
/* Ends the calling thread's innermost open range. */
void kxprof_range_pop(void);
/* A point in time named `name` on the calling thread. */
void kxprof_mark(const char *name);
/* Opens a range that any thread may end; returns its id (never 0). */
uint64_t kxprof_range_start(const char *name);
/* Ends the range `id` returned by kxprof_range_start (on any thread). */
void kxprof_range_end(uint64_t id);

void kxprof_range_push_cat(const char *name, const char *category);
void kxprof_mark_cat(const char *name, const char *category);
uint64_t kxprof_range_start_cat(const char *name, const char *category);

#ifdef __cplusplus
}
#endif

#endif /* KXPROF_ANNOTATE_H */
