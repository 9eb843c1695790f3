/*
 * The trace outputs of a conversion (kxprof convert --xplane, --chrome): an
 * XSpace run (export/tblogdir.h) and a Chrome file (export/chrome.h) of an
 * analysis, one of each, or, when it holds more events than one trace may
 * (--split-events), one run and one Chrome file per time window of the
 * split plan (analysis/windows.h; names from export/splitplan.h). Owns the
 * order the parts are written in, committing a part's two outputs together
 * (an error or a signal leaves neither), checking every part's names before
 * the first is written, and saying what stays when a part failed. A capture
 * read in windows gets the same parts through export/tracewindows.h. What
 * is said goes to the caller's functions (t->say, t->wrote): the front end
 * prints it.
 */
#ifndef KX_TRACEPARTS_H
#define KX_TRACEPARTS_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "analysis/warnings.h"
#include "analysis/windows.h"
#include "export/splitplan.h"
#include "export/xspace.h"
#include "model/capinfo.h"

/* A path written and committed: the run's .xplane.pb or a Chrome file
 * (trace_on_stdout: the Chrome trace itself went to standard output). */
typedef void (*kx_traceparts_wrote_fn)(void *ctx, const char *path, int trace_on_stdout);

/* What to write and where its lines go. */
struct kx_traceparts {
	const struct kx_xspace_opts *xo; /* the XSpace options of the whole capture */
	const char *logdir;              /* the TensorBoard log directory; NULL: no XSpace */
	const char *chrome;              /* the Chrome file ("-": standard output); NULL: none */
	unsigned int chrome_flags;       /* KX_CHROME_*: what it holds besides the timeline */
	size_t split;                    /* trace events per part at most (0: never split) */
	const char *input;               /* the record file: named in messages, no part's file */
	kx_warn_fn say;                  /* one line: an error, or the notice that it is split */
	kx_traceparts_wrote_fn wrote;    /* each path committed, in turn */
	void *ctx;                       /* say's and wrote's */
};

/*
 * The trace outputs of an (the whole capture in memory): one of each, or
 * one per window of the plan of t->split events, each part committed when
 * complete. 0, 1 (failed: said, and which parts stay) or 2 (refused: a
 * part's name, said; nothing written).
 */
int kx_traceparts_write(const struct kx_traceparts *t, const struct kx_analysis *an);

/*
 * For the writers of a plan of several parts (this one and
 * export/tracewindows.h):
 */

/* Every part's names of the plan wn (of the capture ci) checked before the
 * first part is written, then the notice that the capture is split. 0, or
 * 2 (refused: said). */
int kx_traceparts_check(const struct kx_traceparts *t, const struct kx_capinfo *ci,
                        const struct kx_windows *wn);
/* Part k of the plan wn written from an (the part's events, or more),
 * else what stays of the parts before it. 0, or 1 (said). */
int kx_traceparts_part(const struct kx_traceparts *t, const struct kx_analysis *an,
                       const struct kx_windows *wn, size_t k);
/* After part k of n failed: says what stays of the parts before it. 1. */
int kx_traceparts_left(const struct kx_traceparts *t, size_t k, size_t n);
/* One line to t->say. */
void kx_traceparts_say(const struct kx_traceparts *t, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

#endif /* KX_TRACEPARTS_H */
