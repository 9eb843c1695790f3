/*
 * The always-on capture `kxprof top` and `kxprof serve` share: a capture set
 * up in aggregate mode, with live job and annotation aggregates as its sink.
 */
#ifndef KX_LIVE_OPEN_H
#define KX_LIVE_OPEN_H

#include <stddef.h>

#include "capture/setup.h"

/*
 * Opens and starts the always-on capture of top and serve: ioctls counted in
 * the kernel (o's agg_* options), no driver entry hooks (always-on cost), job
 * records paired online into a new *jobs and annotation records into a new
 * *anns, at most o->agg_max_keys range names (the caller frees both after
 * kx_capture_close). pid_list: "PID[,PID...]", or NULL for every process.
 * The rest of o (devices, mech, verbose, cmdline) is the caller's.
 * 0, or -1 with err.
 */
struct kx_jobagg;
struct kx_annagg;
int kx_capture_live(struct kx_capture *c, struct kx_capture_opts *o, const char *pid_list,
                    struct kx_jobagg **jobs, struct kx_annagg **anns, char *err, size_t len);

#endif /* KX_LIVE_OPEN_H */
