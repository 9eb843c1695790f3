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

/* The same XSpace written to fd as it is encoded (the host plane never whole
 * in memory). 0, or -1 with err set. */
int kx_xspace_write_fd(const struct kx_analysis *an, const struct kx_xspace_opts *o, int fd,
                       char *err, size_t errlen);

#endif /* KX_XSPACE_H */
