/*
 * A record file read in time windows (contract: wread.h; the parts:
 * wread_int.h): what ties its passes. The fixes pass 1 keeps (the lengths
 * the nesting rule gave calls in the whole capture) and every window's
 * timeline takes, the windows' plan made from pass 1's starts (the file
 * walked again only for a crowded bucket), the plan of a file pass 1 kept
 * whole, the device jobs lent to a window's analysis, and the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/wread.h"
#include "analysis/wread_int.h"
#include "model/perfdata.h"

/* The fixes in (thread, start, recorded length) order. */
int wr_fix_cmp(const void *pa, const void *pb)
{
	const struct kx_wread_fix *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->dur < b->dur ? -1 : a->dur > b->dur;
}

/* The length the rule gave call e in the whole capture (a kx_timeline_set_fixes cut). */
uint64_t wr_fix_of(void *ctx, const struct kx_ioctl *e)
{
	const struct kx_wread *w = ctx;
	struct kx_wread_fix key = {.ts = e->ts, .dur = e->dur, .tid = e->tid};
	const struct kx_wread_fix *f =
	        w->nfix ? bsearch(&key, w->fixes, w->nfix, sizeof(*w->fixes), wr_fix_cmp) : NULL;

	return f ? f->cut : e->dur;
}

int kx_wread_nest(const struct kx_wread *w, const struct kx_store *s, struct kx_analysis *an)
{
	if (!w->nfix)
		return 0;
	if (kx_timeline_set_fixes(an->timeline, s, wr_fix_of, (void *)w))
		return -1;
	kx_timeline_counted(an->timeline, w->nfix, w->fix_threads);
	return 0;
}

/* ---- the plan: the file as a source of event starts ---- */

/* A walk over the file: the starts of its calls and samples, and of its
 * jobs as the device timelines count them again (a file with job records). */
struct walk {
	struct kx_wpass *p;
	struct kx_wjobfeed jf;
	struct kx_jobflow_sink sink;
	int jobs, failed;
};

static void starts_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct walk *k = ctx;

	(void)arg;
	kx_wpass_see(k->p, e->ts);
	if (k->jobs && kx_wjobfeed_ioctl(&k->jf, e))
		k->failed = 1;
}

static void starts_sample(void *ctx, const struct kx_sample *s)
{
	struct walk *k = ctx;

	kx_wpass_see(k->p, s->ts_ns);
}

static void starts_job(void *ctx, const struct kx_job *j)
{
	struct walk *k = ctx;

	if (k->jobs && kx_wjobfeed_job(&k->jf, j))
		k->failed = 1;
}

static int starts_job_counted(void *ctx, const struct kx_jobrec *r, uint32_t *id)
{
	struct walk *k = ctx;

	*id = 0;
	kx_wpass_see(k->p, kx_jobrec_start(r));
	return 0;
}

static int walk_file(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	const struct kx_wread *w = ctx;
	struct walk k = {.p = p, .jobs = w->jobrec.records > 0};
	struct kx_kxp_visitor v = {
	        .ctx = &k, .ioctl = starts_ioctl, .sample = starts_sample, .job = starts_job};
	struct kx_kxp_read_result res;
	struct kx_capinfo ci;
	struct kx_jobs *o = NULL;
	int rc;

	k.sink = (struct kx_jobflow_sink){starts_job_counted, p1_job_lane, &k};
	kx_wjobfeed_init(&k.jf, &w->ci, &k.sink, NULL, NULL);
	kx_wpass_see_analysed(p, w->jobs, w->ranges);
	rc = kx_kxp_read_stream(w->path, &v, &ci, &res, err, errlen) ? -1 : 0;
	if (!rc && k.jobs && (k.failed || !(o = kx_wjobfeed_finish(&k.jf, w->mem)))) {
		snprintf(err, errlen, "out of memory planning the output's time windows");
		rc = -1;
	}
	kx_jobs_free(o);
	kx_wjobfeed_free(&k.jf);
	return rc;
}

/* The same walk over the file as the first read stored it (kept: every
 * record of the file), so that planning a kept file reads it no more. */
static int walk_store(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	const struct kx_wread *w = ctx;
	const struct kx_samples *sm = kx_store_samples(w->store);

	(void)err;
	(void)errlen;
	kx_wpass_see_analysed(p, w->jobs, w->ranges);
	for (size_t i = 0; i < kx_store_ioctl_count(w->store); i++)
		kx_wpass_see(p, kx_store_ioctl(w->store, i)->ts);
	for (size_t i = 0; sm && i < kx_samples_count(sm); i++)
		kx_wpass_see(p, kx_samples_get(sm, i)->ts);
	return 0;
}

/* The late counter records by window (a counting sort, file order kept in
 * each): window k's are late_ctr[late_ctr_off[k] .. late_ctr_off[k + 1]).
 * 0, or -1 when out of memory. */
static int late_ctr_index(struct kx_wread *w)
{
	size_t n = w->plan.nslices;
	struct kx_wread_ctr *by = malloc((w->nlate_ctr + 1) * sizeof(*by));
	size_t *cur = calloc(n + 1, sizeof(*cur));

	w->late_ctr_off = calloc(n + 1, sizeof(*w->late_ctr_off));
	if (!by || !cur || !w->late_ctr_off) {
		free(by);
		free(cur);
		return -1;
	}
	for (size_t i = 0; i < w->nlate_ctr; i++) {
		w->late_ctr[i].win = (uint32_t)wr_window_of(&w->plan, w->late_ctr[i].e.ts, 0);
		w->late_ctr_off[w->late_ctr[i].win + 1]++;
	}
	for (size_t k = 0; k < n; k++)
		w->late_ctr_off[k + 1] += w->late_ctr_off[k];
	memcpy(cur, w->late_ctr_off, n * sizeof(*cur));
	for (size_t i = 0; i < w->nlate_ctr; i++)
		by[cur[w->late_ctr[i].win]++] = w->late_ctr[i];
	free(w->late_ctr);
	free(cur);
	w->late_ctr = by;
	return 0;
}

int wr_plan(struct kx_wread *w, const struct kx_whist *starts, char *err, size_t errlen)
{
	/* A kept store's job records are not the stream's: the file is walked. */
	const struct kx_wsource src = {w->store && !w->jobrec.records ? walk_store : walk_file, w};

	if (kx_windows_plan_src(&src, starts, w->limit, w->slice, &w->plan, err, errlen))
		return -1;
	w->late_win = malloc((w->nlate + 1) * sizeof(*w->late_win));
	if (!w->late_win) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < w->nlate; i++)
		w->late_win[i] =
		        (uint32_t)wr_window_of(&w->plan, kx_store_ioctl(w->late, i)->ts, 0);
	if (late_ctr_index(w)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* Pass 2's filing of the jobs by slice, in the whole table's ring order
 * (f: pass 1's timelines, finished). 0, or -1 when out of memory. */
int wr_jobs_filing(struct kx_wread *w, const struct kx_jobflow *f, char *err, size_t errlen)
{
	struct kx_wread_jobs *jb = &w->jobrec;

	jb->wj = calloc(1, sizeof(*jb->wj));
	if (!jb->wj || kx_wjobs_init(jb->wj, w->plan.slice, w->plan.nslices) ||
	    kx_wjobs_rings(jb->wj, f, w->jobs)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* The starts of the first nio calls and nsmp samples of store s, which took
 * them in the order the first read saw them. 0, or -1 when it could not
 * take them all (out of memory). */
int wr_starts_catch_up(struct kx_whist *h, const struct kx_store *s, size_t nio, size_t nsmp)
{
	const struct kx_samples *sm = kx_store_samples(s);

	if (kx_store_not_stored(s) || kx_store_ioctl_count(s) < nio ||
	    (nsmp && (!sm || kx_samples_not_stored(sm) || kx_samples_count(sm) < nsmp)))
		return -1;
	for (size_t i = 0; i < nio; i++)
		kx_whist_see(h, kx_store_ioctl(s, i)->ts);
	for (size_t i = 0; i < nsmp; i++)
		kx_whist_see(h, kx_samples_get(sm, i)->ts);
	return 0;
}

int kx_wread_plan_kept(struct kx_wread *w, char *err, size_t errlen)
{
	int rc;

	if (!w->starts || !w->store)
		return 0;
	if (wr_kept_timelines(w)) {
		snprintf(err, errlen, "out of memory reading %s", w->path);
		return -1;
	}
	if (w->in_memory)
		return 0;
	if (wr_starts_catch_up(w->starts, w->store, w->kept_ioctls, w->kept_samples)) {
		snprintf(err, errlen, "out of memory reading %s", w->path);
		rc = -1;
	} else {
		rc = wr_plan(w, w->starts, err, errlen);
	}
	kx_whist_free(w->starts);
	w->starts = NULL;
	return rc;
}

void kx_wread_lend_jobs(const struct kx_wread *w, struct kx_analysis *an)
{
	if (w->jobrec.tab) {
		kx_analysis_lend_jobs(an, &w->jobrec.tab->jobs);
		an->jview = &w->jobrec.tab->view;
	} else if (w->jobs) {
		kx_analysis_lend_jobs(an, w->jobs);
	}
}

void kx_wread_free(struct kx_wread *w)
{
	if (w->jobrec.wj)
		kx_wjobs_free(w->jobrec.wj);
	free(w->jobrec.wj);
	free(w->jobrec.submitted);
	free(w->jobrec.flow_from);
	free(w->jobrec.order);
	kx_store_free(w->store);
	kx_jobs_free(w->jobs);
	kx_store_free(w->mem);
	kx_ranges_free(w->ranges);
	kx_store_free(w->side);
	kx_store_free(w->late);
	free(w->late_ctr);
	free(w->late_ctr_off);
	free(w->late_seq);
	free(w->late_win);
	free(w->fixes);
	free(w->whole.threads);
	kx_windows_free(&w->plan);
	kx_whist_free(w->starts);
	memset(w, 0, sizeof(*w));
}
