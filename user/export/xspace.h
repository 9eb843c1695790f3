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

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

struct kx_xspace_opts {
	int device_planes_as_gpu; /* name device planes /device:GPU:<n> instead of CUSTOM */
	uint64_t from_mono_ns;    /* only events starting at/after this (0: all) */
	uint64_t to_mono_ns;      /* and before this (0: no limit) */
};

/*
 * Serializes the analysed capture (analysis/analysis.h: its store, header,
 * jobs and timeline) into a malloc'ed buffer (*out, *len). Returns 0, or -1
 * with err set. Memory stays proportional to the output.
 */
int kx_xspace_serialize(const struct kx_analysis *an, const struct kx_xspace_opts *o, uint8_t **out,
                        size_t *len, char *err, size_t errlen);

/*
 * Writes LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb and the
 * empty LOGDIR/events.out.tfevents.<ts>.<host>.profile-empty file that
 * TensorBoard/XProf look for. path_out gets the .xplane.pb path.
 */
int kx_xspace_write_logdir(const struct kx_analysis *an, const struct kx_xspace_opts *o,
                           const char *logdir, char *path_out, size_t path_len, char *err,
                           size_t errlen);

#endif /* KX_XSPACE_H */
