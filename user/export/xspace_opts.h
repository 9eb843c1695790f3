/*
 * What an XSpace export takes (export/xspace.h): the device planes' names,
 * the time window, a warning to add and the host lines' ids. Its own
 * header so that the exporter's parts (xspace_int.h) see it without the
 * entry points.
 */
#ifndef KX_XSPACE_OPTS_H
#define KX_XSPACE_OPTS_H

#include <stdint.h>

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

#endif /* KX_XSPACE_OPTS_H */
