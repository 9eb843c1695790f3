/*
 * CPU profiles on demand over a running capture: what kxprof serve answers
 * at GET /debug/pprof/profile?seconds=N (the convention of Go's
 * net/http/pprof, which Parca and Pyroscope scrape). Each profile runs on a
 * thread of its own: a sampler with its own ring buffer that shares the
 * capture's pid set and calls in flight (so samples taken inside traced
 * ioctls get their driver frame), N seconds of samples into a bounded
 * store, the processes' maps read as they are first sampled (with
 * call_graph dwarf, each sample's user stack copy unwound as it comes), then the
 * symbolised profile as gzipped pprof handed to a callback.
 *
 * Bounds: N in [1, max_seconds]; at most max_running profiles at once (a
 * request past that is refused at once, not queued); each profile's store
 * at most max_bytes (samples past it are counted, and the profile's comment
 * says how many). Shutdown ends the running profiles early and waits for
 * them.
 *
 * Kernel addresses: unless the caller asks for real ones, each kernel frame
 * of a profile is a stand-in (symbol/kmask.h, as the capture daemon gives
 * users) carrying the frame's function name and module: the profile says
 * which kernel functions ran and never where KASLR put them.
 */
#ifndef KX_LIVE_CPUPROF_H
#define KX_LIVE_CPUPROF_H

#include <stddef.h>
#include <stdint.h>

#include "capture/session.h"
#include "util/grow.h"

struct kx_cpuprof_limits {
	uint32_t hz;           /* sampling frequency, per CPU */
	uint32_t max_seconds;  /* longest profile asked for */
	uint32_t max_running;  /* profiles at once */
	size_t max_bytes;      /* store of one profile */
	int kernel_addresses;  /* 1: real kernel addresses; 0: stand-ins (symbol/kmask.h) */
	uint32_t ustack_bytes; /* call graph when the request does not say: bytes of user
	                          stack copied per sample and unwound with the CFI
	                          (capture/ustack.h); 0: frame pointers */
	int ustack_auto;       /* with ustack_bytes: --call-graph auto (capture/ustack.h) */
};
#define KX_CPUPROF_HZ          99
#define KX_CPUPROF_MAX_SECONDS 60
#define KX_CPUPROF_MAX_RUNNING 2
#define KX_CPUPROF_MAX_BYTES   ((size_t)64 << 20)
#define KX_CPUPROF_SECONDS     30 /* when the request does not say (net/http/pprof's) */

/* A finished profile: rc 0 with the gzipped pprof in body (now the
 * callback's to free), or rc -1 with err saying what failed. */
typedef void (*kx_cpuprof_done_fn)(void *ctx, int rc, struct kx_bytes *body, const char *err);

struct kx_cpuprof;

/* Profiles over session s (its pid set, or every process when all).
 * NULL when out of memory. */
struct kx_cpuprof *kx_cpuprof_new(struct kx_session *s, int all,
                                  const struct kx_cpuprof_limits *lim);
/* The seconds of a request's "seconds" value (NULL: the default). 0, or
 * -1 with why (a 400's text). */
int kx_cpuprof_seconds(const struct kx_cpuprof *cp, const char *value, uint32_t *secs, char *why,
                       size_t len);
/* The stack copy size and auto flag of a request's "call_graph" value (fp,
 * dwarf[,SIZE] or auto[,SIZE]; NULL: the limits'). 0, or -1 with why (a
 * 400's text). */
int kx_cpuprof_call_graph(const struct kx_cpuprof *cp, const char *value, uint32_t *ustack_bytes,
                          int *autom, char *why, size_t len);
/* Starts a profile of secs seconds, user stacks unwound from ustack_bytes
 * copies (0: frame pointers; autom: --call-graph auto); done(ctx, ...) is called on its thread
 * when it ends. 0; -2 when max_running are running (a 429's case: why says
 * so); -1 with why when it cannot start. */
int kx_cpuprof_start(struct kx_cpuprof *cp, uint32_t secs, uint32_t ustack_bytes, int autom,
                     kx_cpuprof_done_fn done, void *ctx, char *why, size_t len);
/* Ends the running profiles early (their callbacks still run) and waits for
 * them; later starts are refused. */
void kx_cpuprof_shutdown(struct kx_cpuprof *cp);
/* Shuts down, then frees (NULL is fine). */
void kx_cpuprof_free(struct kx_cpuprof *cp);

#endif /* KX_LIVE_CPUPROF_H */
