/*
 * Ready-made event sinks: into a bounded store (plugin, live views) or
 * streamed into a .kxp record file (kxprof record). Callbacks a sink does
 * not need stay NULL (live/jobagg.h has the sink of live job aggregates).
 */
#ifndef KX_SINKS_H
#define KX_SINKS_H

#include "io/kxp.h"
#include "capture/drmfdinfo.h"
#include "capture/session.h"
#include "model/store.h"
#include "model/symres.h"
#include "symbol/collect.h"
#include "symbol/kmask.h"

struct kx_sink kx_sink_store(struct kx_store *store);

/*
 * Streams into the record file path: a temporary file next to it is created
 * with the session's header (its facts and start clock) when the session
 * starts, a chunk is flushed at least every flush_ms so a crash loses little,
 * and the file is renamed to path when closed (an existing path is kept as
 * path.old). With stream set instead of path, the same bytes go there (a
 * daemon streaming a client's capture). With for_user (a daemon session
 * for an unprivileged client) no kernel address reaches the file (kernel
 * frames and their symbols are stored under stand-ins, symbol/kmask.h, and
 * so are kernel pointers in job records: the old gpu_scheduler tracepoints
 * key a job by its fence's address), and
 * user symbols come only from files the traced process could read itself.
 */
struct kx_kxp_sink {
	const char *path;
	const struct kx_kxp_stream *stream;
	struct kx_kxp_writer *w; /* open from the session's start to kx_kxp_sink_close */
	unsigned int flush_ms;
	unsigned long long last_flush_ns;
	int write_error; /* first write error seen (the capture goes on, the file is cut) */
	/* Samples: their images' maps are read as they arrive, their addresses
	 * resolved at each flush and stored as symbol records. */
	struct kx_symcollect *syms; /* made at begin when the capture samples */
	struct kx_symres res;
	int sym_oom;               /* symbols lost to memory (their frames read [unknown]) */
	unsigned long long sym_ns; /* time spent reading maps and resolving, ns */
	int for_user;              /* for an unprivileged client (set before the session starts) */
	struct kx_kmask kmask;
	/* DRM usage (record --drm-usage): a pass every drm_ms at the ticks, one
	 * at the start and one at the close; the traced processes are the pids
	 * given to the sampler and those seen in events. Freed at close. */
	struct kx_drm_sampler *drm;
	unsigned int drm_ms;
	unsigned long long last_drm_ns;
	unsigned long long drm_rows, drm_rows_lost;
	uint32_t drm_last_pid;       /* the last caller handed to the sampler */
	struct kx_drm_info drm_info; /* the sampler's figures, kept at close */
	struct kx_kmask jkeys;       /* for_user: stand-ins of kernel pointers in job records */
};
struct kx_sink kx_sink_kxp(struct kx_kxp_sink *ks);
/* Writes the trailer (ci: the stopped session's final facts), closes the
 * file and renames it to path. 0, or -1 with err. Nothing to do when the file
 * was never created. */
int kx_kxp_sink_close(struct kx_kxp_sink *ks, const struct kx_capinfo *ci, char *err, size_t len);
/* Nothing was recorded: removes the temporary file; path is untouched. */
void kx_kxp_sink_discard(struct kx_kxp_sink *ks);

#endif /* KX_SINKS_H */
