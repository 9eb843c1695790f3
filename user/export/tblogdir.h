/*
 * TensorBoard log directory (tensorboard --logdir, XProf): each capture a
 * run folder LOGDIR/plugins/profile/<run>/ holding <host>.xplane.pb (the
 * XSpace of export/xspace.h) and, when LOGDIR has none yet, the empty
 * LOGDIR/events.out.tfevents.<ts>.<host>.profile-empty marker that
 * TensorBoard looks for. <run> is the capture start (YYYY_MM_DD_HH_MM_SS,
 * local time), or <that>-2, -3, ... when a run folder of that name exists:
 * an existing run is never written into.
 */
#ifndef KX_TBLOGDIR_H
#define KX_TBLOGDIR_H

#include <limits.h>
#include <stddef.h>
#include <time.h>

#include "export/xspace.h"
#include "util/outfile.h"

/* The outputs of one run (util/outfile: temporary files renamed into place
 * at commit; an abort or a fatal signal leaves nothing). */
struct kx_tblogdir {
	struct kx_outdir dir;     /* the new run folder */
	struct kx_outfile pb;     /* its <host>.xplane.pb */
	struct kx_outfile marker; /* the .profile-empty file, with with_marker */
	int with_marker;
	time_t when;         /* capture start, s since the epoch */
	char host[64];       /* host name as used in file names */
	char path[PATH_MAX]; /* final path of the .xplane.pb */
};

/* Makes the run folder <run><suffix> (suffix NULL or "": <run>; e.g. one part
 * of a capture split by time) and the temporary files of a capture with
 * header ci. 0, or -1 with err (nothing left behind). */
int kx_tblogdir_open(const struct kx_capinfo *ci, const char *logdir, const char *suffix,
                     struct kx_tblogdir *xo, char *err, size_t errlen);
/* Writes the XSpace and the marker into them. 0, or -1 with err: abort then. */
int kx_tblogdir_write(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                      struct kx_tblogdir *xo, char *err, size_t errlen);
/* Renames them into place (profile first). 0, or -1 with err. */
int kx_tblogdir_commit(struct kx_tblogdir *xo, char *err, size_t errlen);
/* Removes the temporary files and the run folder. */
void kx_tblogdir_abort(struct kx_tblogdir *xo);
/* Open, write and commit in one call; path_out gets the .xplane.pb path. */
int kx_tblogdir_write_run(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                          const char *logdir, char *path_out, size_t path_len, char *err,
                          size_t errlen);

#endif /* KX_TBLOGDIR_H */
