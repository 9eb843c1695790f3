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
#include "export/xspace_opts.h"

/*
 * Serializes the analysed capture (analysis/analysis.h: its store, header,
 * jobs and timeline) into a malloc'ed buffer (*out, *len). Returns 0, or -1
 * with err set. Memory stays proportional to the output.
 */
int kx_xspace_serialize(const struct kx_analysis *an, const struct kx_xspace_opts *o, uint8_t **out,
                        size_t *len, char *err, size_t errlen);

/* The same XSpace written to fd as it is encoded (the host plane never whole
 * in memory). 0, or -1 with err set. */
int kx_xspace_write_fd(const struct kx_analysis *an, const struct kx_xspace_opts *o, int fd,
                       char *err, size_t errlen);

#endif /* KX_XSPACE_H */
