/*
 * Whether a record file read as a stream gives exactly what reading it into
 * memory gives (the streamed report, analysis/sreport.h; the windowed
 * conversion, analysis/wread.h). Owns that decision and the per-thread state
 * it needs (the end of each thread's last call). Fed the records in file
 * order; the first reason found sticks:
 *   - job records (device timelines pair jobs with the ioctls that
 *     submitted or waited for them; the streamed report keeps what they
 *     need, analysis/jobs.h, and does not ask),
 *   - counter records of counters the header does not name (the streamed
 *     report joins the others to their calls, analysis/sctrstats.h; the
 *     windowed conversion puts each in its call's window and does not ask),
 *   - an ioctl that memory accounting counts (memory rows by device), unless
 *     the caller keeps those ioctls itself (keep_mem: the streamed report
 *     and the windowed conversion keep them, few as they are, for the
 *     memory rows and series),
 *   - two ioctls of one thread that overlap (the timeline's nesting rule
 *     may shorten one): a thread's records arrive in the order its calls
 *     returned, so when each starts at or after the end of the one before,
 *     the thread's calls are disjoint and the rule changes nothing.
 * Memory grows with the threads, not the events.
 */
#ifndef KX_STREAMCHECK_H
#define KX_STREAMCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/jobpair.h"
#include "model/event.h"
#include "util/tidtab.h"

struct kx_streamcheck {
	const char *why; /* the first reason a stream does not do; NULL: it does */
	int keep_mem;    /* set by the caller: memory ioctls are not a reason */
	int last_mem;    /* the last ioctl is one memory accounting counts */
	struct kx_memacct mem;
	struct kx_tidtab ends; /* ns, the end of each thread's last call (uint64_t) */
};

#define KX_STREAMCHECK_INIT                                                                        \
	{                                                                                          \
		NULL, 0, 0, KX_MEMACCT_INIT, KX_TIDTAB_INIT(uint64_t)                              \
	}

/* One ioctl (arg: its argument bytes, NULL when none). 0, or -1 when out of
 * memory. c->why is set when it is a reason. */
int kx_streamcheck_ioctl(struct kx_streamcheck *c, const struct kx_ioctl *e, const uint8_t *arg);
/* Records that are reasons by their kind alone. Annotation records are
 * not: both streams pair them themselves (analysis/sranges.h). */
void kx_streamcheck_job(struct kx_streamcheck *c);
void kx_streamcheck_ctr(struct kx_streamcheck *c);
/* The end (ns) of thread tid's last call: 1 with *end set, 0 when it made none. */
int kx_streamcheck_last_end(const struct kx_streamcheck *c, uint32_t tid, uint64_t *end);
/* Distinct threads whose calls were seen. */
static inline size_t kx_streamcheck_threads(const struct kx_streamcheck *c)
{
	return c->ends.n;
}
void kx_streamcheck_free(struct kx_streamcheck *c);

#endif /* KX_STREAMCHECK_H */
