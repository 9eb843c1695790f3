/*
 * pprof exporter: a profile (analysis/profile.h) as a gzip-compressed
 * perftools.profiles.Profile (proto/profile.proto), the input of go tool
 * pprof, Parca and Pyroscope. CPU profiles follow the Go runtime's
 * convention (sample types samples/count and cpu/nanoseconds, period
 * 1e9/Hz); off-CPU profiles have samples/count and off_cpu/nanoseconds.
 * Functions, locations (one per distinct frame) and mappings (one per
 * module, marked symbolised so pprof does not try again) are
 * de-duplicated; every sample is labelled with its pid, tid, thread name
 * (the name in force when it was taken) and, inside a traced ioctl, the
 * call ("[kvm] KVM_RUN").
 */
#ifndef KX_EXPORT_PPROF_H
#define KX_EXPORT_PPROF_H

#include <stddef.h>

#include "analysis/profile.h"
#include "model/capinfo.h"
#include "model/store.h"
#include "util/grow.h"

/* Appends the gzip-compressed profile of p to out (s: thread names; ci:
 * times and host, may be NULL). 0, or -1 out of memory. */
int kx_pprof_encode(const struct kx_profile *p, const struct kx_store *s,
                    const struct kx_capinfo *ci, struct kx_bytes *out);
/* Writes it to path (a temporary file renamed into place). 0, or -1 with err. */
int kx_pprof_write(const struct kx_profile *p, const struct kx_store *s,
                   const struct kx_capinfo *ci, const char *path, char *err, size_t len);

#endif /* KX_EXPORT_PPROF_H */
