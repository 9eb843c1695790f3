/* The trace outputs of a conversion, whole or in parts (export/traceparts.h). */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "export/chrome.h"
#include "export/tblogdir.h"
#include "export/traceparts.h"
#include "util/outfile.h"

void kx_traceparts_say(const struct kx_traceparts *t, const char *fmt, ...)
{
	char line[PATH_MAX + 1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	t->say(t->ctx, line);
}

/* Both outputs of one part written, then committed together: an error or a
 * signal leaves neither. 0, or 1 (said). */
static int pair_write(const struct kx_traceparts *t, const struct kx_analysis *an,
                      const struct kx_split_part *pt)
{
	struct kx_tblogdir xs;
	struct kx_outfile co = {.fd = -1, .slot = -1};
	const char *chrome = pt->chrome, *logdir = t->logdir;
	int have_xs = 0;
	char err[512];
	sigset_t old;

	if (logdir) {
		if (kx_tblogdir_open(an->ci, logdir, pt->suffix, &xs, err, sizeof(err)))
			goto fail;
		have_xs = 1;
	}
	if (chrome && kx_outfile_open(&co, chrome, KX_OUT_STDOUT, err, sizeof(err)))
		goto fail;
	if ((logdir && kx_tblogdir_write(an, &pt->xo, &xs, err, sizeof(err))) ||
	    (chrome && kx_chrome_write_part(an, pt->is_part ? &pt->cp : NULL, t->chrome_flags, &co,
	                                    err, sizeof(err))))
		goto fail;
	kx_outfile_hold_signals(&old);
	if (logdir && kx_tblogdir_commit(&xs, err, sizeof(err))) {
		kx_outfile_release_signals(&old);
		goto fail;
	}
	have_xs = 0;
	if (chrome && kx_outfile_commit(&co, err, sizeof(err))) {
		kx_outfile_release_signals(&old);
		goto fail;
	}
	kx_outfile_release_signals(&old);
	if (logdir)
		t->wrote(t->ctx, xs.path, co.to_stdout);
	if (chrome && !co.to_stdout)
		t->wrote(t->ctx, chrome, 0);
	return 0;
fail:
	kx_traceparts_say(t, "%s", err);
	if (have_xs)
		kx_tblogdir_abort(&xs);
	kx_outfile_abort(&co);
	return 1;
}

int kx_traceparts_check(const struct kx_traceparts *t, const struct kx_capinfo *ci,
                        const struct kx_windows *wn)
{
	char err[512];

	if (kx_split_check(ci, wn, t->xo, t->chrome, t->split, t->input, err, sizeof(err))) {
		kx_traceparts_say(t, "%s", err);
		return 2;
	}
	kx_traceparts_say(t,
	                  "%zu events are more than %zu per trace (--split-events; XProf's trace "
	                  "viewer keeps 1,000,000): writing %zu parts split by time, each a "
	                  "complete trace; an event spanning a cut is in the part where it starts",
	                  wn->total, t->split, wn->n);
	return 0;
}

int kx_traceparts_left(const struct kx_traceparts *t, size_t k, size_t n)
{
	if (k)
		kx_traceparts_say(t,
		                  "parts 1 to %zu of %zu were written and stay; part %zu and later "
		                  "were not",
		                  k, n, k + 1);
	return 1;
}

int kx_traceparts_part(const struct kx_traceparts *t, const struct kx_analysis *an,
                       const struct kx_windows *wn, size_t k)
{
	struct kx_split_part pt;
	char err[512];

	if (kx_split_part_of(an->ci, wn, k, t->xo, t->chrome, t->input, &pt, err, sizeof(err)))
		kx_traceparts_say(t, "%s", err);
	else if (!pair_write(t, an, &pt))
		return 0;
	return kx_traceparts_left(t, k, wn->n);
}

int kx_traceparts_write(const struct kx_traceparts *t, const struct kx_analysis *an)
{
	struct kx_windows wn;
	struct kx_split_part pt;
	char err[512];
	int rc;

	if (kx_windows_plan(an, t->split, &wn, err, sizeof(err))) {
		kx_traceparts_say(t, "%s", err);
		return 1;
	}
	if (wn.n == 1) {
		kx_split_whole(&pt, t->xo, t->chrome);
		kx_windows_free(&wn);
		return pair_write(t, an, &pt);
	}
	rc = kx_traceparts_check(t, an->ci, &wn);
	for (size_t k = 0; k < wn.n && !rc; k++)
		rc = kx_traceparts_part(t, an, &wn, k);
	kx_windows_free(&wn);
	return rc;
}
