/*
 * Warnings of a capture, worded once for every output (report, XSpace,
 * Chrome JSON, live summaries): loss counters, hooks that did not attach
 * (grouped per family, and only those that serve a traced device's driver,
 * so a machine without GPUs does not print a page of them), job-analysis
 * anomalies, the partial overlaps the timeline's nesting rule resolved, and
 * what reading the record file lost (corrupt chunks, a cut, no trailer).
 * Exporters add only their own.
 */
#ifndef KX_WARNINGS_H
#define KX_WARNINGS_H

#include <stdint.h>

#include "model/capinfo.h"

struct kx_jobs;
struct kx_timeline;

typedef void (*kx_warn_fn)(void *ctx, const char *msg);

/* One warning, formatted as printf (up to 1 KiB), to fn. */
void kx_warnf(kx_warn_fn fn, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "N what" to fn, nothing when n is 0: the wording of every count warned. */
void kx_warn_count(kx_warn_fn fn, void *ctx, uint64_t n, const char *what);

/*
 * Loss and hook warnings of ci. not_stored: events refused by a memory limit,
 * the larger of the capture's and the reader's (0 to use ci's alone).
 */
void kx_capture_warnings(const struct kx_capinfo *ci, uint64_t not_stored, kx_warn_fn fn,
                         void *ctx);

/* Copies of the annotation library whose probes attached too late for
 * their wait: which process, and from when to when its annotations may be
 * missing (seconds into the capture). Part of kx_capture_warnings; the
 * recorder's own summary calls it alone. */
void kx_ann_late_warnings(const struct kx_capinfo *ci, kx_warn_fn fn, void *ctx);

/* What reading a record file lost; all zero when it read whole. */
struct kx_read_loss {
	int no_trailer;          /* closing figures (stop time, loss counters) are unknown */
	uint64_t cut_bytes;      /* bytes at the end that are not a whole chunk */
	uint64_t corrupt_chunks; /* corrupt stretches skipped */
	uint64_t corrupt_bytes;  /* bytes they held */
	uint64_t first_corrupt;  /* number of the first corrupt chunk, from 1 (0: none) */
};

struct kx_kxp_read_result;
/* What the reader's result res (io/kxp.h) says reading lost, into loss. */
void kx_read_loss_of(const struct kx_kxp_read_result *res, struct kx_read_loss *loss);

/* Corrupt chunks, a cut, a missing trailer: one warning each (loss may be NULL). */
void kx_read_loss_warnings(const struct kx_read_loss *loss, kx_warn_fn fn, void *ctx);

/* Anomalies found while pairing and linking jobs (jobs may be NULL). */
void kx_jobs_warnings(const struct kx_jobs *jobs, kx_warn_fn fn, void *ctx);

/* Events the nesting rule shortened (timeline may be NULL). */
void kx_timeline_warnings(const struct kx_timeline *tl, kx_warn_fn fn, void *ctx);

#endif /* KX_WARNINGS_H */
