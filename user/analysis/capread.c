/* A capture read for a conversion, in windows or whole (contract: capread.h). */
#include <stdio.h>
#include <string.h>

#include "analysis/capread.h"
#include "io/replay.h"

struct kx_store *kx_capread_whole(const char *path, size_t budget, struct kx_capinfo *ci,
                                  struct kx_kxp_read_result *res, char *damage, size_t damagelen,
                                  char *err, size_t errlen)
{
	struct kx_store *store = kx_store_new(budget);
	int rc;

	damage[0] = 0;
	if (!store) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* Replay fixtures load wherever record files do (see replay.h). */
	if (kx_replay_is_fixture(path)) {
		memset(res, 0, sizeof(*res));
		rc = kx_replay_load(path, store, ci, err, errlen);
	} else {
		rc = kx_kxp_read(path, store, ci, res, damage, damagelen);
		if (rc)
			snprintf(err, errlen, "%s", damage);
	}
	if (!rc)
		return store;
	damage[0] = 0;
	kx_store_free(store);
	return NULL;
}

/* Why the file first read in windows is read whole, in r->why. */
static void say_whole(struct kx_capread *r, const char *path, size_t window)
{
	struct kx_wread *w = &r->w;
	char err[256];

	if (!w->in_memory && kx_wread_plan_kept(w, err, sizeof(err)))
		snprintf(r->why, sizeof(r->why), "%s", err);
	else if (w->in_memory)
		snprintf(r->why, sizeof(r->why), "%s is read into memory whole: %s", path,
		         w->in_memory);
	else if (w->plan.n <= 1)
		snprintf(r->why, sizeof(r->why),
		         "%s is read into memory whole: its %zu trace events fit one trace "
		         "(--split-events %zu)",
		         path, w->plan.total, window);
	else
		snprintf(r->why, sizeof(r->why),
		         "%s is read into memory whole: its %zu trace events make %zu traces, "
		         "but its records fit one window (--split-events %zu)",
		         path, w->plan.total, w->plan.n, window);
}

/* The file, first read in windows, is read whole: the first read's store,
 * else a second read (counted). 0, or -1 with err set. */
static int take_whole(struct kx_capread *r, const char *path, const struct kx_capread_opts *o,
                      char *err, size_t errlen)
{
	struct kx_wread *w = &r->w;

	if (o->say)
		say_whole(r, path, o->window);
	if (w->store) {
		r->store = w->store;
		w->store = NULL;
		r->ci = w->ci;
		r->res = w->res;
		snprintf(r->damage, sizeof(r->damage), "%s", w->damage);
	} else {
		r->rereads++;
		if (o->say)
			snprintf(r->again, sizeof(r->again),
			         "%s is read a second time: its first read let its store go (more "
			         "than %zu records, or so many at the rate of its first records) "
			         "before the file was found to be read whole",
			         path, o->window > o->keep ? o->window : o->keep);
		r->store = kx_capread_whole(path, o->budget, &r->ci, &r->res, r->damage,
		                            sizeof(r->damage), err, errlen);
	}
	kx_wread_free(w);
	return r->store ? 0 : -1;
}

int kx_capread_open(struct kx_capread *r, const char *path, const struct kx_capread_opts *o,
                    char *err, size_t errlen)
{
	struct kx_wread *w = &r->w;

	memset(r, 0, sizeof(*r));
	if (o->window == KX_CAPREAD_WHOLE || kx_replay_is_fixture(path)) {
		r->store = kx_capread_whole(path, o->budget, &r->ci, &r->res, r->damage,
		                            sizeof(r->damage), err, errlen);
		return r->store ? 0 : -1;
	}
	if (kx_wread_open_sliced(w, path, o->window, o->slice, o->budget, o->keep, err, errlen))
		return -1;
	if (w->in_memory || w->plan.n <= 1 || w->store)
		return take_whole(r, path, o, err, errlen);
	r->ci = w->ci;
	r->res = w->res;
	snprintf(r->damage, sizeof(r->damage), "%s", w->damage);
	return 0;
}

void kx_capread_windows_said(const struct kx_capread *r, char *buf, size_t len)
{
	const struct kx_wread *w = &r->w;

	snprintf(buf, len,
	         "read one window at a time: %zu windows (%zu slices), at most %zu open at once, "
	         "%zu calls kept apart (their records came over %llu ms late), each window "
	         "complete %.3f ms after its end",
	         w->plan.n, w->plan.nslices, w->peak_open, w->nlate,
	         (unsigned long long)(KX_WREAD_LATE_NS / 1000000), (double)w->lag_ns / 1e6);
}

void kx_capread_free(struct kx_capread *r)
{
	kx_wread_free(&r->w);
	kx_store_free(r->store);
	r->store = NULL;
}

/* The analysis of store s (of path) into r, or -1 with err naming path. */
static int report_analyse(struct kx_capread_report *r, const char *path, const struct kx_store *s,
                          const struct kx_capinfo *ci, char *err, size_t errlen)
{
	char why[400];

	r->an = kx_analysis_build(s, ci, why, sizeof(why));
	if (!r->an)
		snprintf(err, errlen, "%s: %s", path, why);
	return r->an ? 0 : -1;
}

/* path read whole into r: its store and analysis. */
static int report_whole(struct kx_capread_report *r, const char *path, size_t budget, char *err,
                        size_t errlen)
{
	r->res = &r->wres;
	r->store = kx_capread_whole(path, budget, &r->ci, &r->wres, r->damage, sizeof(r->damage),
	                            err, errlen);
	if (!r->store)
		return -1;
	return report_analyse(r, path, r->store, &r->ci, err, errlen);
}

int kx_capread_report(struct kx_capread_report *r, const char *path, int whole, size_t budget,
                      int say, char *err, size_t errlen)
{
	struct kx_sreport *sr = &r->stream;

	memset(r, 0, sizeof(*r));
	if (whole || kx_replay_is_fixture(path))
		return report_whole(r, path, budget, err, errlen);
	if (kx_sreport_read(sr, path, budget, r->damage, sizeof(r->damage))) {
		snprintf(err, errlen, "%s", r->damage);
		return -1;
	}
	if (sr->in_memory) {
		if (say)
			snprintf(r->why, sizeof(r->why), "%s", sr->in_memory);
		kx_sreport_free(sr);
		memset(sr, 0, sizeof(*sr));
		r->rereads = 1;
		r->damage[0] = 0;
		return report_whole(r, path, budget, err, errlen);
	}
	r->res = &sr->res;
	r->sr = sr;
	r->rows = &sr->st;
	if (report_analyse(r, path, sr->side, &sr->ci, err, errlen))
		return -1;
	if (kx_sreport_apply(sr, r->an)) {
		snprintf(err, errlen, "out of memory building the summary");
		return -1;
	}
	return 0;
}

void kx_capread_report_free(struct kx_capread_report *r)
{
	kx_analysis_free(r->an);
	kx_store_free(r->store);
	if (!r->store)
		kx_sreport_free(&r->stream);
	memset(r, 0, sizeof(*r));
}
