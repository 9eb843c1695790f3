/*
 * XSpace exporter (tensorflow.profiler.XSpace, wire-compatible with TSL's
 * xplane.proto): a /host:CPU plane with one line per OS thread (line id =
 * tid, so TensorFlow merges it with its own host threads) holding one event
 * per ioctl, one /device:CUSTOM:<n> plane per traced device (with a line
 * per ring of its jobs, a memory line, and flows from the submitting
 * ioctls), hostnames and warnings. Timestamps in Unix-epoch ns, offsets and
 * durations in ps.
 */
#ifndef KX_XSPACE_H
#define KX_XSPACE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "analysis/analysis.h"
#include "util/outfile.h"

struct kx_xspace_opts {
	int device_planes_as_gpu; /* name device planes /device:GPU:<n> instead of CUSTOM */
	uint64_t from_mono_ns;    /* only events starting at/after this (0: all) */
	uint64_t to_mono_ns;      /* and before this (0: no limit) */
	const char *note;         /* one more warning, e.g. which part of a split capture */
	/* The /host:CPU line id of thread tid, 0 for the tid itself (the default when
	 * NULL): e.g. the id TensorFlow gives the thread's own line. */
	uint64_t (*line_id)(void *ctx, uint32_t tid);
	void *line_id_ctx;
};

/*
 * Serializes the analysed capture (analysis/analysis.h: its store, header,
 * jobs and timeline) into a malloc'ed buffer (*out, *len). Returns 0, or -1
 * with err set. Memory stays proportional to the output.
 */
int kx_xspace_serialize(const struct kx_analysis *an, const struct kx_xspace_opts *o, uint8_t **out,
                        size_t *len, char *err, size_t errlen);

/*
 * Writes LOGDIR/plugins/profile/<run>/<host>.xplane.pb and, when LOGDIR has
 * none yet, the empty LOGDIR/events.out.tfevents.<ts>.<host>.profile-empty
 * file that TensorBoard/XProf look for. <run> is the capture start
 * (YYYY_MM_DD_HH_MM_SS, local time), or <that>-2, -3, ... when a run folder of
 * that name exists: an existing run is never written into. path_out gets the
 * .xplane.pb path. Open, write and commit below in one call.
 */
int kx_xspace_write_logdir(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                           const char *logdir, char *path_out, size_t path_len, char *err,
                           size_t errlen);

/* The outputs of one logdir write (util/outfile: temporary files renamed
 * into place at commit; an abort or a fatal signal leaves nothing). */
struct kx_xspace_out {
	struct kx_outdir dir;     /* the new run folder */
	struct kx_outfile pb;     /* its <host>.xplane.pb */
	struct kx_outfile marker; /* the .profile-empty file, with with_marker */
	int with_marker;
	time_t when;         /* capture start, s since the epoch */
	char host[64];       /* host name as used in file names */
	char path[PATH_MAX]; /* final path of the .xplane.pb */
};

/* Makes the run folder and the temporary files of a capture with header ci.
 * 0, or -1 with err (nothing left behind). */
int kx_xspace_logdir_open(const struct kx_capinfo *ci, const char *logdir, struct kx_xspace_out *xo,
                          char *err, size_t errlen);
/* As kx_xspace_logdir_open, the run folder named <run><suffix> (suffix NULL
 * or "": <run>), e.g. one part of a capture split by time. */
int kx_xspace_logdir_open_run(const struct kx_capinfo *ci, const char *logdir, const char *suffix,
                              struct kx_xspace_out *xo, char *err, size_t errlen);
/* Writes the XSpace and the marker into them. 0, or -1 with err: abort then. */
int kx_xspace_logdir_write(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                           struct kx_xspace_out *xo, char *err, size_t errlen);
/* Renames them into place (profile first). 0, or -1 with err. */
int kx_xspace_logdir_commit(struct kx_xspace_out *xo, char *err, size_t errlen);
/* Removes the temporary files and the run folder. */
void kx_xspace_logdir_abort(struct kx_xspace_out *xo);

#endif /* KX_XSPACE_H */
