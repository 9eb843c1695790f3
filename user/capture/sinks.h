/*
 * Ready-made event sinks: into a bounded store (plugin, live views) or
 * streamed into a .kxp record file (kxprof record).
 */
#ifndef KX_SINKS_H
#define KX_SINKS_H

#include "io/kxp.h"
#include "capture/session.h"
#include "model/store.h"

struct kx_sink kx_sink_store(struct kx_store *store);

/* Streams into w and flushes a chunk at least every flush_ms so a crash loses little. */
struct kx_kxp_sink {
	struct kx_kxp_writer *w;
	unsigned int flush_ms;
	unsigned long long last_flush_ns;
	int write_error; /* first write error seen (the capture goes on, the file is cut) */
};
struct kx_sink kx_sink_kxp(struct kx_kxp_sink *ks);

#endif /* KX_SINKS_H */
