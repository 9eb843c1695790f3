/*
 * The streamed device timelines (analysis/jobflow.h) fed from a record
 * file in file order, as a capture read in time windows reads it
 * (analysis/wread.h): each thread's calls through a reorder stage of their
 * own (analysis/engine.h; every call, from the first, so that the stage
 * gives each call its place among the file's calls), then into the flow
 * by that place (kx_jobflow_ioctl_at: links are the calls' file indexes,
 * as a whole store's are its indexes), the job records as they come; the
 * flow lets the calls begun before a record it pairs out of the stage
 * first (jobflow.h's calls_upto). The same file gives the same feed in
 * every pass, so the flow numbers its rings, counts and sweeps its jobs
 * the same each time.
 *
 * The flow is bounded as a streamed report's (kx_jobflow_init), its GPU
 * wait calls kept from the first call (a file's first GPU job record may
 * come after a wait call that holds its DONE). kx_wjobfeed_why says when
 * the flow cannot be exact: its reason, or a call the stage let out too
 * early (a call later than the stage's window, or past its memory budget).
 *
 * Memory: the flow's (jobflow.h) and the stage's (engine.h).
 */
#ifndef KX_WJOBFEED_H
#define KX_WJOBFEED_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/engine.h"
#include "analysis/jobflow.h"
#include "model/capinfo.h"
#include "model/store.h"

/* Each call as it goes to the flow, idx its place among the file's calls.
 * 0, or -1 when out of memory. */
typedef int (*kx_wjobfeed_call_fn)(void *ctx, const struct kx_ioctl *e, uint64_t idx);

struct kx_wjobfeed {
	struct kx_engine q;          /* each thread's calls in start order */
	struct kx_jobflow f;         /* the device timelines */
	kx_wjobfeed_call_fn on_call; /* NULL: none */
	void *ctx;
	uint64_t records; /* job records fed */
};

/* j for the capture whose header is ci (kept), its jobs to sink (kept;
 * NULL: none), each call to on_call. j must not move while in use. */
void kx_wjobfeed_init(struct kx_wjobfeed *j, const struct kx_capinfo *ci,
                      const struct kx_jobflow_sink *sink, kx_wjobfeed_call_fn on_call, void *ctx);
/* Every call and job record, in file order. 0, or -1 when out of memory. */
int kx_wjobfeed_ioctl(struct kx_wjobfeed *j, const struct kx_ioctl *e);
int kx_wjobfeed_job(struct kx_wjobfeed *j, const struct kx_job *r);
/* Why the timelines cannot be exact so far (NULL: they can). Only a file
 * with job records has any. */
const char *kx_wjobfeed_why(const struct kx_wjobfeed *j);
/* Once every record is in: the calls left in the stage to the flow, and the
 * timelines (kx_jobflow_finish, mem giving the memory rows). NULL when out
 * of memory or kx_wjobfeed_why says why not. */
struct kx_jobs *kx_wjobfeed_finish(struct kx_wjobfeed *j, const struct kx_store *mem);
void kx_wjobfeed_free(struct kx_wjobfeed *j);

#endif /* KX_WJOBFEED_H */
