/*
 * The live interval protocol of `kxprof top` and `kxprof serve`, which only
 * render and serve what it computes: the always-on capture, its aggregates
 * (live/aggregate.h, jobagg.h, annagg.h, drmseries.h) read together, and an
 * interval's rows. An interval is what was counted between two reads: since
 * the start or the last reset for serve (kx_live_read), since the previous
 * refresh for top (kx_live_step: a diff of the ioctl totals, whose exited
 * processes keep their names; jobs and ranges start over). Percentiles are
 * fine slot midpoints clamped to the exact min/max where known.
 */
#ifndef KX_LIVE_INTERVAL_H
#define KX_LIVE_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/drmstats.h"
#include "capture/setup.h"
#include "live/aggregate.h"
#include "model/agg.h"

struct kx_live {
	struct kx_capture c;
	struct kx_agg *agg;
	struct kx_jobagg *jobs;
	struct kx_annagg *anns;
	struct kx_drmlive *drm;          /* DRM usage, NULL when not sampled */
	int jobs_attached;               /* a job source feeds jobs */
	const struct kx_devset *devices; /* the traced devices (the caller's) */
	int all;                         /* every process, not a pid list */
	enum kx_agg_by by;               /* how ioctl keys are split */
};

/* Opens and starts the capture: ioctls counted in the kernel split by by, no
 * driver entry hooks, at most o->agg_max_keys range names; pid_list
 * "PID[,PID...]" or NULL for every process; the rest of o (devices, mech,
 * verbose, cmdline) is the caller's. 0, or -1 with err. */
int kx_live_open(struct kx_live *l, struct kx_capture_opts *o, const char *pid_list,
                 enum kx_agg_by by, char *err, size_t len);
/* DRM usage of the capture's processes, when want > 0 or (want 0) a traced
 * device is a DRM or accel node: with thread, sampled every interval_ms on a
 * thread of its own, at most max_keys series (serve); else now, the baseline,
 * and at each kx_live_step (top). 0, or -1 with err. */
int kx_live_drm(struct kx_live *l, int want, unsigned int interval_ms, uint32_t max_keys,
                int thread, char *err, size_t len);
/* Frees all (after a failed open too; a zeroed l is fine). */
void kx_live_close(struct kx_live *l);

struct kx_live_snap {
	struct kx_agg_snapshot agg;
	struct kx_jobagg_snapshot jobs; /* busy time up to the read */
	struct kx_annagg_snapshot anns;
};

/* All aggregates now; with reset each starts over. 0; -1 when they could
 * not be read (err says why); -2 when out of memory. */
int kx_live_read(struct kx_live *l, struct kx_live_snap *out, int reset, char *err, size_t len);
void kx_live_snap_free(struct kx_live_snap *s);

struct kx_live_busy {
	uint64_t inflight; /* jobs queued or running now, all devices */
	double busy_pct;   /* the busiest device's busy share of the interval */
	double cut_pct;    /* at most this share more of it is that device's busy time cut
	                    * at the busy interval limit (live/jobagg.h); 0: busy_pct is exact */
	char device[48];   /* that device, "" when none was seen */
};

/* What top keeps between refreshes. */
struct kx_live_interval {
	struct kx_agg_snapshot prev;    /* ioctl totals at the last read */
	struct kx_agg_snapshot last;    /* the interval it ended (interval_s) */
	struct kx_annagg_snapshot anns; /* ranges of that interval */
	struct kx_live_busy busy;
	struct kx_drmstats *drm; /* DRM usage at the last read, NULL when not sampled */
	int have_last;
};

/* The baseline (totals now), and each next interval (exited processes'
 * keys then deleted). 0, or -1 with err. */
int kx_live_begin(struct kx_live *l, struct kx_live_interval *iv, char *err, size_t len);
int kx_live_step(struct kx_live *l, struct kx_live_interval *iv, char *err, size_t len);
void kx_live_interval_free(struct kx_live_interval *iv);

/* A step's parts. cur (taken; freed on failure) becomes prev, last the diff
 * with the old prev, names kept: 0, or -1 when out of memory. */
int kx_live_push(struct kx_live_interval *iv, struct kx_agg_snapshot *cur);
void kx_live_busiest(const struct kx_jobagg_snapshot *js, double interval_s,
                     struct kx_live_busy *out);
/* "jobs in flight: 3  device busy: 42% (loop0)", ">=42% (loop0; up to 3% more
 * cut)" when busy intervals were cut, or why they are unknown (attached: a job
 * source feeds jobs). */
void kx_live_busy_line(const struct kx_live_busy *b, int attached, char *buf, size_t len);

struct kx_live_row {
	const struct kx_agg_row *r;
	double rate, err_rate;  /* calls, failed calls per second */
	double offcpu_pct;      /* of the calls' time */
	uint64_t p50, p99, max; /* ns */
};

/* Rows of d with calls or errors, in d's order (out: d->nrows). Their count. */
size_t kx_live_rows(const struct kx_agg_snapshot *d, struct kx_live_row *out);

struct kx_live_range {
	const struct kx_annagg_series *s;
	double rate;            /* per second */
	uint64_t p50, p99, max; /* ns, 0 for marks */
};

/* Names seen, most often first, then by name (out: s->nseries). Their count. */
size_t kx_live_ranges(const struct kx_annagg_snapshot *s, double interval_s,
                      struct kx_live_range *out);

#endif /* KX_LIVE_INTERVAL_H */
