/* The trace outputs of a capture read in windows (export/tracewindows.h). */
#include "export/chrome.h"
#include "export/tracewindows.h"
#include "util/outfile.h"

/* A capture written one window (or slice) at a time. */
struct windowed {
	const struct kx_traceparts *t;
	struct kx_wread *w;
	struct kx_split_part pt;     /* sliced: the part being written... */
	struct kx_outfile co;        /* ...its Chrome file... */
	struct kx_chrome_writer *cw; /* ...and writer, open from its first slice to its last */
};

/* The part being written in slices, given up: its file goes. */
static void slices_abort(struct windowed *wd)
{
	kx_chrome_writer_free(wd->cw);
	wd->cw = NULL;
	kx_outfile_abort(&wd->co);
}

/* Sliced (a Chrome file alone): slice k of the part it is in, written into
 * that part's file, opened at its first slice and committed after its last.
 * 0, or 1 (said; the part's file aborted). */
static int slice_write(struct windowed *wd, const struct kx_analysis *an, size_t k)
{
	const struct kx_traceparts *t = wd->t;
	const struct kx_windows *wn = &wd->w->plan;
	size_t part = wn->slice[k].part;
	int first = !k || wn->slice[k - 1].part != part;
	int last = k + 1 == wn->nslices || wn->slice[k + 1].part != part;
	char err[512];

	if (first) {
		if (kx_split_part_of(an->ci, wn, part, t->xo, t->chrome, t->input, &wd->pt, err,
		                     sizeof(err))) {
			kx_traceparts_say(t, "%s", err);
			return kx_traceparts_left(t, part, wn->n);
		}
		if (kx_outfile_open(&wd->co, wd->pt.chrome, 0, err, sizeof(err)))
			goto fail;
		wd->cw = kx_chrome_open(an, &wd->pt.cp, t->chrome_flags, &wd->co, err, sizeof(err));
		if (!wd->cw)
			goto fail;
	}
	if (kx_chrome_add(wd->cw, an, err, sizeof(err)) ||
	    (last && kx_chrome_close(wd->cw, an, err, sizeof(err))))
		goto fail;
	if (!last)
		return 0;
	kx_chrome_writer_free(wd->cw);
	wd->cw = NULL;
	if (kx_outfile_commit(&wd->co, err, sizeof(err)))
		goto fail;
	t->wrote(t->ctx, wd->pt.chrome, 0);
	return 0;
fail:
	kx_traceparts_say(t, "%s", err);
	slices_abort(wd);
	return kx_traceparts_left(t, part, wn->n);
}

/* Slice k's part (unsliced: window k's), its store analysed with the whole
 * capture's facts. A kx_wread_fn. */
static int window_part(void *ctx, struct kx_store *s, size_t k)
{
	struct windowed *wd = ctx;
	const struct kx_traceparts *t = wd->t;
	const struct kx_windows *wn = &wd->w->plan;
	struct kx_analysis *an;
	char err[512];
	int rc;

	an = kx_analysis_build(s, &wd->w->ci, err, sizeof(err));
	if (an && kx_wread_nest(wd->w, s, an)) {
		kx_analysis_free(an);
		an = NULL;
		snprintf(err, sizeof(err), "out of memory nesting the calls");
	}
	if (!an) {
		kx_traceparts_say(t, "%s: part %zu: %s", t->input, wn->slice[k].part + 1, err);
		slices_abort(wd);
		return kx_traceparts_left(t, wn->slice[k].part, wn->n);
	}
	kx_read_loss_of(&wd->w->res, &an->loss);
	an->whole = &wd->w->whole;
	if (wd->w->ranges)
		kx_analysis_lend_ranges(an, wd->w->ranges);
	kx_wread_lend_jobs(wd->w, an);
	if (wn->nslices == wn->n)
		rc = kx_traceparts_part(t, an, wn, k);
	else
		rc = slice_write(wd, an, k);
	kx_analysis_free(an);
	return rc;
}

int kx_tracewindows_write(const struct kx_traceparts *t, struct kx_wread *w)
{
	struct windowed wd = {.t = t, .w = w, .co = {.fd = -1, .slot = -1}};
	char err[512];
	int rc = kx_traceparts_check(t, &w->ci, &w->plan);

	if (rc)
		return rc;
	rc = kx_wread_run(w, window_part, &wd, err, sizeof(err));
	/* A read that stopped inside a part leaves nothing of that part. */
	slices_abort(&wd);
	if (rc < 0) {
		kx_traceparts_say(t, "%s: %s", t->input, err);
		return 1;
	}
	return rc;
}
