/*
 * analysis/wjobs.h: the device jobs filed by time window give, window by
 * window, exactly the whole table's (kx_jobs_build) jobs that start in it,
 * with their places in it, and its devices' depth points that fall in it;
 * and a window's part drawn from its own store and table (wjobtab.h, with
 * the job view) is byte for byte the part drawn from the whole capture.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/capread.h"
#include "analysis/jobflow.h"
#include "analysis/jobs.h"
#include "analysis/windows.h"
#include "analysis/wjobs.h"
#include "analysis/wjobtab.h"
#include "analysis/flows.h"
#include "export/chrome.h"
#include "export/splitplan.h"
#include "export/xspace.h"
#include "util/outfile.h"
#include "io/replay.h"
#include "kxp_gen.h"
#include "kxtest.h"

/* What jobsink.c's feed does: the store's calls and job records, merged
 * by time (a call before a record of its time), the calls by index. */
static int by_ts(const void *pa, const void *pb)
{
	const uint64_t *a = pa, *b = pb;

	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

static int feed(struct kx_jobflow *f, const struct kx_store *s)
{
	size_t n = kx_store_ioctl_count(s), m = kx_store_job_count(s);
	uint64_t(*ord)[2] = malloc((n + m + 1) * sizeof(*ord));
	int rc = 0;

	if (!ord)
		return -1;
	/* Calls sort before records of their time: [1] is 0..n-1, then n + job. */
	for (size_t i = 0; i < n; i++) {
		ord[i][0] = kx_store_ioctl(s, i)->ts;
		ord[i][1] = i;
	}
	for (size_t k = 0; k < m; k++) {
		ord[n + k][0] = kx_store_job(s, k)->ts;
		ord[n + k][1] = n + k;
		f->gpu_seen |= kx_job_src_gpu(kx_store_job(s, k)->src);
	}
	qsort(ord, n + m, sizeof(*ord), by_ts);
	for (size_t i = 0; i < n + m && !rc; i++)
		rc = ord[i][1] < n ? kx_jobflow_ioctl_at(f, kx_store_ioctl(s, ord[i][1]), ord[i][1])
		                   : kx_jobflow_job(f, kx_store_job(s, ord[i][1] - n));
	free(ord);
	return rc;
}

static int same_job(const struct kx_jobrec *a, const struct kx_jobrec *b)
{
	return a->queue_ts == b->queue_ts && a->run_ts == b->run_ts && a->done_ts == b->done_ts &&
	       a->ctx == b->ctx && a->seqno == b->seqno && a->client == b->client &&
	       a->aux == b->aux && a->aux2 == b->aux2 && a->pid == b->pid && a->tid == b->tid &&
	       a->waiter_tid == b->waiter_tid && a->submit == b->submit && a->wait == b->wait &&
	       a->src == b->src && a->flags == b->flags && a->dev == b->dev && a->ring == b->ring &&
	       a->lane == b->lane;
}

/* One window's jobs against the whole table an->jobs (got: the jobs given
 * so far, seen: their count): 1 when they are its jobs that start in x, in
 * table order, else 0 (said). */
static int jobs_same(const struct kx_wjobs_part *p, const struct kx_analysis *an,
                     const struct kx_window *x, uint8_t *got, size_t *seen)
{
	for (size_t i = 0; i < p->njobs; i++) {
		const struct kx_wjobs_job *j = &p->jobs[i];
		uint64_t st = kx_jobrec_start(&j->r);

		if (j->index >= an->jobs->njobs || got[j->index] ||
		    (i && j[-1].index >= j->index) || !same_job(&j->r, &an->jobs->jobs[j->index]) ||
		    st < x->from_ns || (x->to_ns && st >= x->to_ns)) {
			printf("# window from %llu: job %zu (index %llu)\n",
			       (unsigned long long)x->from_ns, i, (unsigned long long)j->index);
			return 0;
		}
		got[j->index] = 1;
		(*seen)++;
	}
	return 1;
}

/* One window's depth points against the whole table's (pts: per device,
 * the points given so far). 1 when they are those in x, else 0 (said). */
static int depth_same(const struct kx_wjobs_part *p, const struct kx_analysis *an,
                      const struct kx_window *x, size_t *pts)
{
	for (size_t d = 0; d < p->ndevs; d++) {
		const struct kx_jobdev *jd = &an->jobs->devs[d];

		for (size_t i = 0; i < p->ndepth[d]; i++) {
			const struct kx_depth_pt *a = &p->depth[d][i], *b = &jd->depth[pts[d]];

			if (pts[d] >= jd->ndepth || a->ts != b->ts || a->depth != b->depth ||
			    a->ts < x->from_ns || (x->to_ns && a->ts >= x->to_ns)) {
				printf("# window from %llu: device %zu depth point %zu\n",
				       (unsigned long long)x->from_ns, d, i);
				return 0;
			}
			pts[d]++;
		}
	}
	return 1;
}

/* ---- a window's parts drawn from its table, against the whole capture's ---- */

/* A window's store as a split read fills it (every task, the calls that
 * start in window k of pl, the samples borrowed), its calls' places among the whole store's in
 * *ids. NULL when out of memory. */
static struct kx_store *window_store(const struct kx_store *s, const struct kx_windows *pl,
                                     size_t k, uint64_t **ids)
{
	struct kx_store *w = kx_store_new(0);
	size_t n = 0, hint = 0;

	*ids = malloc((kx_store_ioctl_count(s) + 1) * sizeof(**ids));
	if (!w || !*ids) {
		kx_store_free(w);
		return NULL;
	}
	for (size_t i = 0; i < kx_store_task_count(s); i++)
		kx_store_add_task(w, kx_store_task(s, i));
	if (kx_store_samples(s))
		kx_store_borrow_samples(w, kx_store_samples(s));
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		hint = kx_windows_find(pl->w, pl->n, e->ts, hint);
		if (hint != k)
			continue;
		kx_store_add_ioctl(w, e, kx_store_arg(s, e));
		(*ids)[n++] = i;
	}
	return w;
}

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* The whole capture's facts every part shows (analysis.h's kx_whole). */
static int whole_of(const struct kx_store *s, struct kx_whole *wh)
{
	size_t n = kx_store_ioctl_count(s), m = 0;

	wh->first_ts = UINT64_MAX;
	wh->ioctls = n;
	wh->threads = malloc((n + 1) * sizeof(*wh->threads));
	if (!wh->threads)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		if (e->ts < wh->first_ts)
			wh->first_ts = e->ts;
		wh->threads[i] = (uint64_t)e->pid << 32 | e->tid;
	}
	qsort(wh->threads, n, sizeof(*wh->threads), u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (!m || wh->threads[m - 1] != wh->threads[i])
			wh->threads[m++] = wh->threads[i];
	wh->nthreads = m;
	return 0;
}

/* The view's facts of the whole capture an (its flows fl) for a window
 * whose n calls are the whole store's ids: which submitted, which source
 * a flow, and the whole counts. */
static int view_of(struct kx_jobview *v, const struct kx_analysis *an, const struct kx_flows *fl,
                   const uint64_t *ids, size_t n, uint8_t **sub, uint8_t **from)
{
	const struct kx_jobs *b = an->jobs;

	*sub = calloc(n / 8 + 1, 1);
	*from = calloc(n / 8 + 1, 1);
	if (!*sub || !*from)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (kx_jobs_ioctl_submitted(b, ids[i]))
			(*sub)[i / 8] |= (uint8_t)(1u << (i % 8));
		if (kx_flows_from(fl, ids[i]))
			(*from)[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	v->call_id = ids;
	v->submitted = *sub;
	v->flow_from = *from;
	v->njobs = b->njobs;
	v->job_events = kx_store_job_count(an->store);
	v->flows_dropped = fl->dropped;
	v->first_ns = UINT64_MAX;
	for (size_t k = 0; k < b->njobs; k++)
		if (kx_jobrec_start(&b->jobs[k]) < v->first_ns)
			v->first_ns = kx_jobrec_start(&b->jobs[k]);
	for (size_t d = 0; d < b->ndevs; d++)
		if (b->devs[d].ndepth && b->devs[d].depth[0].ts < v->first_ns)
			v->first_ns = b->devs[d].depth[0].ts;
	return 0;
}

/* Part k's Chrome trace and XSpace of analysis an into *js and *xs. */
static int part_write(const struct kx_analysis *an, const struct kx_windows *pl, size_t k,
                      char **js, size_t *jlen, uint8_t **xs, size_t *xlen)
{
	char path[] = "/tmp/kx-wjobs-part-XXXXXX", err[512];
	struct kx_split_part pt;
	struct kx_outfile o = {.fd = -1, .slot = -1};
	int fd = mkstemp(path), rc = -1;
	FILE *in;

	*js = NULL;
	*xs = NULL;
	if (fd < 0)
		return -1;
	close(fd);
	if (kx_split_part_of(an->ci, pl, k, &(struct kx_xspace_opts){0}, path, "in", &pt, err,
	                     sizeof(err)) ||
	    kx_outfile_open(&o, path, 0, err, sizeof(err)))
		goto out;
	if (kx_chrome_write_part(an, &pt.cp, 0, &o, err, sizeof(err)) ||
	    kx_outfile_commit(&o, err, sizeof(err))) {
		kx_outfile_abort(&o);
		goto out;
	}
	in = fopen(path, "r");
	*jlen = 0;
	if (!in || getdelim(js, jlen, 0, in) < 0) {
		if (in)
			fclose(in);
		goto out;
	}
	fclose(in);
	*jlen = strlen(*js);
	rc = kx_xspace_serialize(an, &pt.xo, xs, xlen, err, sizeof(err));
out:
	if (rc)
		printf("# part %zu: %s\n", k + 1, err);
	unlink(path);
	return rc;
}

/* A window's call e as the whole capture's nesting rule drew it (the
 * cut kx_wread_nest gives a window's calls), found by (thread, start,
 * length) among the whole store's. */
struct whole_cut {
	const struct kx_analysis *an;
};

static uint64_t cut_of(void *ctx, const struct kx_ioctl *e)
{
	const struct whole_cut *c = ctx;
	const struct kx_store *s = c->an->store;

	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *x = kx_store_ioctl(s, i);

		if (x->tid == e->tid && x->ts == e->ts && x->dur == e->dur)
			return kx_timeline_dur(c->an->timeline, i, x->dur);
	}
	return e->dur;
}

/* Part k drawn from the window's own store and table (t, its view's call
 * facts and whole counts set here) against part k of the whole capture's
 * analysis an: 1 when the Chrome trace and the XSpace are byte-identical. */
static int part_same(struct kx_wjobtab *t, const struct kx_analysis *an,
                     const struct kx_windows *pl, size_t k)
{
	char err[256], *ja = NULL, *jb = NULL;
	uint8_t *xa = NULL, *xb = NULL, *sub = NULL, *from = NULL;
	size_t jal = 0, jbl = 0, xal = 0, xbl = 0;
	uint64_t *ids = NULL;
	struct kx_whole wh = {0};
	struct kx_flows fl = {0};
	struct kx_store *ws = window_store(an->store, pl, k, &ids);
	struct kx_analysis *wa = ws ? kx_analysis_build(ws, an->ci, err, sizeof(err)) : NULL;
	int ok = 0;

	if (!wa || whole_of(an->store, &wh) || kx_flows_build(&fl, an) ||
	    view_of(&t->view, an, &fl, ids, kx_store_ioctl_count(ws), &sub, &from))
		goto out;
	if (an->timeline->nfix) {
		struct whole_cut cut = {an};

		if (kx_timeline_set_fixes(wa->timeline, ws, cut_of, &cut))
			goto out;
		kx_timeline_counted(wa->timeline, an->timeline->nfix, an->timeline->fixed_threads);
	}
	wa->whole = &wh;
	kx_analysis_lend_jobs(wa, &t->jobs);
	wa->jview = &t->view;
	if (part_write(an, pl, k, &ja, &jal, &xa, &xal) ||
	    part_write(wa, pl, k, &jb, &jbl, &xb, &xbl))
		goto out;
	ok = jal == jbl && !memcmp(ja, jb, jal) && xal == xbl && !memcmp(xa, xb, xal);
	if (!ok)
		printf("# part %zu of %zu: Chrome %s, XSpace %s\n", k + 1, pl->n,
		       jal == jbl && !memcmp(ja, jb, jal) ? "same" : "differs",
		       xal == xbl && !memcmp(xa, xb, xal) ? "same" : "differs");
out:
	free(ja);
	free(jb);
	free(xa);
	free(xb);
	free(sub);
	free(from);
	free(ids);
	free(wh.threads);
	kx_flows_free(&fl);
	kx_analysis_free(wa);
	kx_store_free(ws);
	return ok;
}

/* The whole capture's submitting call idx, as drawn (a kx_wjobtab_call_fn). */
static const struct kx_ioctl *whole_call(void *ctx, uint64_t idx, uint64_t *dur)
{
	const struct kx_analysis *an = ctx;
	const struct kx_ioctl *e;

	if (idx >= kx_store_ioctl_count(an->store))
		return NULL;
	e = kx_store_ioctl(an->store, (size_t)idx);
	*dur = kx_timeline_dur(an->timeline, (size_t)idx, e->dur);
	return e;
}

/* Window part p as its analysis' table (wjobtab.h, the whole facts o)
 * against the whole table: each ring holds the ring's jobs that start in
 * x, with their whole indexes and submitting calls as drawn; each device
 * is the whole one's but for its depth points, the window's. 1 when so. */
static int table_same(const struct kx_wjobs_part *p, const struct kx_jobs *o,
                      const struct kx_analysis *an, const struct kx_window *x,
                      const struct kx_windows *pl, size_t k)
{
	const struct kx_jobs *b = an->jobs;
	struct kx_wjobtab t;
	int ok;

	if (kx_wjobtab_make(&t, o, p, whole_call, (void *)an))
		return 0;
	ok = t.jobs.nrings == b->nrings && t.jobs.ndevs == b->ndevs && t.jobs.njobs == p->njobs &&
	     t.view.job_id == t.job_id && t.jobs.store == o->store;
	for (size_t r = 0; ok && r < b->nrings; r++) {
		const struct kx_jobring *wr = &t.jobs.rings[r], *br = &b->rings[r];
		size_t n = 0;

		ok = !strcmp(wr->name, br->name) && wr->nlanes == br->nlanes && wr->id == br->id &&
		     wr->dev == br->dev && wr->busy_ns == br->busy_ns;
		for (size_t k = 0; ok && k < br->njobs; k++) {
			const struct kx_jobrec *j = &b->jobs[br->first + k];
			uint64_t st = kx_jobrec_start(j), dur;
			size_t at = wr->first + n;

			if (st < x->from_ns || (x->to_ns && st >= x->to_ns))
				continue;
			ok = n < wr->njobs && same_job(&t.jobs.jobs[at], j) &&
			     t.job_id[at] == br->first + k;
			if (ok && j->submit >= 0) {
				const struct kx_ioctl *e =
				        whole_call((void *)an, (uint64_t)j->submit, &dur);
				const struct kx_ioctl *c = &t.submit[at];

				ok = e && c->ts == e->ts && c->dur == dur && c->tid == e->tid &&
				     c->pid == e->pid && c->cmd == e->cmd && c->drv == e->drv;
			}
			n++;
		}
		ok = ok && n == wr->njobs;
	}
	for (size_t d = 0; ok && d < b->ndevs; d++) {
		const struct kx_jobdev *wd = &t.jobs.devs[d], *bd = &b->devs[d];

		ok = !strcmp(wd->label, bd->label) && wd->njobs == bd->njobs &&
		     wd->max_depth == bd->max_depth && wd->nmem == bd->nmem &&
		     wd->first_ring == bd->first_ring && wd->ndepth == p->ndepth[d] &&
		     wd->depth == p->depth[d];
	}
	if (!ok)
		printf("# window from %llu: its table\n", (unsigned long long)x->from_ns);
	if (ok && pl)
		ok = part_same(&t, an, pl, k);
	kx_wjobtab_free(&t);
	return ok;
}

/* Every window of w (the plan pl's) taken in turn against the whole
 * table (o: its facts, as the stream finishes them): 1 when each gives its
 * part of it and together all of it, and each part makes its table. */
static int windows_same(struct kx_wjobs *w, const struct kx_jobs *o, const struct kx_analysis *an,
                        const struct kx_windows *pl, int parts)
{
	size_t seen = 0, *pts = calloc(an->jobs->ndevs + 1, sizeof(*pts));
	uint8_t *got = calloc(an->jobs->njobs + 1, 1); /* per job of the table: given */
	int ok = pts && got && w->ndevs == an->jobs->ndevs;

	for (size_t k = 0; ok && k < pl->n; k++) {
		struct kx_wjobs_part p;

		if (kx_wjobs_take(w, &p))
			break;
		ok = jobs_same(&p, an, &pl->w[k], got, &seen) &&
		     depth_same(&p, an, &pl->w[k], pts) &&
		     table_same(&p, o, an, &pl->w[k], parts ? pl : NULL, k);
		kx_wjobs_part_free(&p);
	}
	ok &= seen == an->jobs->njobs && !w->lost;
	for (size_t d = 0; ok && d < an->jobs->ndevs; d++)
		ok = pts[d] == an->jobs->devs[d].ndepth;
	free(got);
	free(pts);
	return ok;
}

/* s's jobs fed in time order (as kx_jobs_build feeds them) and filed in
 * windows of at most limit events, against the whole table: 1 when every
 * window gives its part of it (and there were nwin_min windows at least),
 * else 0 (said). */
static int windows_match(const struct kx_store *s, const struct kx_capinfo *ci, size_t limit,
                         size_t nwin_min)
{
	char err[256];
	struct kx_analysis *an = kx_analysis_build(s, ci, err, sizeof(err));
	struct kx_windows pl = {0};
	struct kx_jobflow f1, f2;
	struct kx_wjobs w;
	struct kx_jobs *o1 = NULL, *o2 = NULL;
	int ok = 0, unbound;

	if (!an || kx_windows_plan(an, limit, &pl, err, sizeof(err)) || pl.n < nwin_min) {
		printf("# plan: %s (%zu windows)\n", an ? err : "no analysis", pl.n);
		kx_analysis_free(an);
		return 0;
	}
	/* As kx_jobs_build: within the flow's bounds, else with none. */
	kx_jobflow_init_whole(&f1, ci, NULL);
	if (!feed(&f1, s) && !f1.why)
		o1 = kx_jobflow_finish(&f1, s, NULL);
	unbound = f1.why != NULL;
	if (unbound) {
		kx_jobflow_free(&f1);
		kx_jobflow_init_whole(&f1, ci, NULL);
		kx_jobflow_unbound(&f1);
		if (!feed(&f1, s))
			o1 = kx_jobflow_finish(&f1, s, NULL);
	}
	kx_jobflow_init_whole(&f2, ci, NULL);
	if (kx_wjobs_init(&w, pl.w, pl.n) || !o1 || kx_wjobs_rings(&w, &f1, o1))
		goto out;
	f2.sink = &w.sink;
	if (unbound)
		kx_jobflow_unbound(&f2);
	if (!feed(&f2, s) && !f2.why && (o2 = kx_jobflow_finish(&f2, s, NULL)))
		ok = windows_same(&w, o1, an, &pl, 1);
out:
	kx_jobs_free(o1);
	kx_jobs_free(o2);
	kx_jobflow_free(&f1);
	kx_jobflow_free(&f2);
	kx_wjobs_free(&w);
	kx_windows_free(&pl);
	kx_analysis_free(an);
	return ok;
}

/* The whole capture's facts besides its jobs, as a stream finishes them
 * (o) and as kx_jobs_build gives them (b): rings, devices, anomalies, span.
 * What every window's part shows of the whole capture. 1 when equal. */
static int facts_same(const struct kx_jobs *o, const struct kx_jobs *b)
{
	int ok = o->nrings == b->nrings && o->ndevs == b->ndevs &&
	         !memcmp(&o->anom, &b->anom, sizeof(o->anom)) && o->start_ns == b->start_ns &&
	         o->end_ns == b->end_ns;

	for (size_t r = 0; ok && r < o->nrings; r++) {
		const struct kx_jobring *x = &o->rings[r], *y = &b->rings[r];

		ok = !strcmp(x->name, y->name) && x->dev == y->dev && x->id == y->id &&
		     x->nlanes == y->nlanes && x->njobs == y->njobs &&
		     x->completed == y->completed && x->linked == y->linked &&
		     x->waited == y->waited && x->busy_ns == y->busy_ns;
	}
	for (size_t d = 0; ok && d < o->ndevs; d++) {
		const struct kx_jobdev *x = &o->devs[d], *y = &b->devs[d];

		ok = !strcmp(x->name, y->name) && !strcmp(x->label, y->label) &&
		     x->first_ring == y->first_ring && x->nrings == y->nrings &&
		     x->njobs == y->njobs && x->completed == y->completed &&
		     x->incomplete == y->incomplete && x->busy_ns == y->busy_ns &&
		     x->busy_fraction == y->busy_fraction && x->max_depth == y->max_depth &&
		     x->nmem == y->nmem;
	}
	return ok;
}

/* A record file as a stream reads it: calls and job records in file
 * order, the calls by their places among the file's (kx_jobflow_ioctl_at),
 * through the streamed bounds (kx_jobflow_init), into f. */
struct filefeed {
	struct kx_jobflow *f;
	uint64_t seq; /* calls so far */
	int failed;
};

static void ff_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct filefeed *c = ctx;

	(void)arg;
	c->failed |= kx_jobflow_ioctl_at(c->f, e, c->seq++);
}

static void ff_job(void *ctx, const struct kx_job *j)
{
	struct filefeed *c = ctx;

	c->failed |= kx_jobflow_job(c->f, j);
}

/* f over path's records, its jobs to sink (NULL: none), then finished
 * (mem: the calls for the memory rows): the timelines, NULL when the
 * stream cannot give them exactly (f->why) or on failure. */
static struct kx_jobs *file_flow(struct kx_jobflow *f, const char *path,
                                 const struct kx_capinfo *ci, const struct kx_jobflow_sink *sink,
                                 const struct kx_store *mem)
{
	struct filefeed c = {.f = f};
	struct kx_kxp_visitor v = {.ctx = &c, .ioctl = ff_ioctl, .job = ff_job};
	struct kx_kxp_read_result res;
	struct kx_capinfo rci;
	char err[512];

	kx_jobflow_init(f, ci);
	f->whole = 1; /* links as the calls' places */
	f->sink = sink;
	if (kx_kxp_read_stream(path, &v, &rci, &res, err, sizeof(err)) || c.failed || f->why)
		return NULL;
	return kx_jobflow_finish(f, mem, NULL);
}

/* The record file path's jobs, streamed twice in file order (the ring
 * order, then the jobs filed) in windows of at most limit events, against
 * the whole table of the file read into memory. 1 when they match, -1
 * when the stream cannot give the table exactly (said), else 0. */
static int file_matches(const char *path, size_t limit, size_t nwin_min)
{
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res;
	char err[512], damage[512];
	struct kx_store *s =
	        kx_capread_whole(path, 0, &ci, &res, damage, sizeof(damage), err, sizeof(err));
	struct kx_analysis *an = s ? kx_analysis_build(s, &ci, err, sizeof(err)) : NULL;
	struct kx_windows pl = {0};
	struct kx_jobflow f1, f2;
	struct kx_wjobs w = {0};
	struct kx_jobs *o1 = NULL, *o2 = NULL;
	int ok = 0;

	if (!an || kx_windows_plan(an, limit, &pl, err, sizeof(err)) || pl.n < nwin_min) {
		printf("# %s: %s (%zu windows)\n", path, err, pl.n);
		kx_analysis_free(an);
		kx_store_free(s);
		return 0;
	}
	o1 = file_flow(&f1, path, &ci, NULL, s);
	if (!kx_wjobs_init(&w, pl.w, pl.n) && o1 && !kx_wjobs_rings(&w, &f1, o1))
		o2 = file_flow(&f2, path, &ci, &w.sink, s);
	else
		kx_jobflow_init(&f2, &ci);
	if (o1 && o2)
		ok = facts_same(o1, an->jobs) && windows_same(&w, o1, an, &pl, 1);
	else if (f1.why)
		printf("# %s: streamed: %s\n", path, f1.why);
	if (f1.why)
		ok = -1;
	kx_jobs_free(o1);
	kx_jobs_free(o2);
	kx_jobflow_free(&f1);
	kx_jobflow_free(&f2);
	kx_wjobs_free(&w);
	kx_windows_free(&pl);
	kx_analysis_free(an);
	kx_store_free(s);
	return ok;
}

/* Each replay fixture with device jobs, in windows of 3 events. */
static void test_fixtures(void)
{
	static const char *const names[] = {"amdgpu_new.jsonl", "amdgpu_old.jsonl", "block.jsonl",
	                                    "i915.jsonl",       "kvm.jsonl",        "loop.jsonl",
	                                    "msm.jsonl",        "xe.jsonl"};
	const char *dir = getenv("KX_FIXTURES");

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		static struct kx_capinfo ci;
		struct kx_store *s = kx_store_new(0);
		char path[512], err[512];

		snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "tests/fixtures",
		         names[i]);
		CHECK(s && !kx_replay_load(path, s, &ci, err, sizeof(err)));
		CHECK(kx_store_job_count(s) > 0);
		if (!windows_match(s, &ci, 3, 2))
			printf("# %s\n", names[i]);
		CHECK(windows_match(s, &ci, 3, 2));
		kx_store_free(s);
	}
}

/* kxp_gen.h's event stream (jobs of every source and phase), in windows
 * of 500 events and of 64. */
static void test_generated(void)
{
	static struct kx_capinfo ci;
	struct gen g = {0};
	struct kx_store *s = kx_store_new(0);
	uint8_t arg[256];
	int ok = 1;

	CHECK(s);
	gen_events(&g, 6000, 7);
	gen_capinfo(&ci, 1);
	for (size_t i = 0; i < g.nitems; i++) {
		const struct gen_item *it = &g.items[i];

		if (it->kind == GEN_TASK) {
			ok &= !kx_store_add_task(s, &g.task[it->idx]);
		} else if (it->kind == GEN_JOB) {
			ok &= !kx_store_add_job(s, &g.job[it->idx]);
		} else {
			const struct kx_ioctl *e = &g.ioc[it->idx];

			gen_arg(arg, (size_t)e->arg_in_len + e->arg_out_len, it->idx);
			ok &= !kx_store_add_ioctl(s, e, arg);
		}
	}
	CHECK(ok && kx_store_job_count(s) > 100);
	CHECK(windows_match(s, &ci, 500, 4));
	CHECK(windows_match(s, &ci, 64, 20));
	gen_free(&g);
	kx_store_free(s);
}

/* Record files streamed in file order, as a split convert reads them: a
 * recorded KVM capture and kxp_gen's event stream (which the stream
 * cannot give exactly: said, and left out). */
static void test_file_order(void)
{
	const char *dir = getenv("KX_FIXTURES");
	struct gen g = {0};
	char path[512];

	snprintf(path, sizeof(path), "%s/kvm_busy_cut.kxp", dir && *dir ? dir : "tests/fixtures");
	CHECK(file_matches(path, 100, 4) == 1);
	gen_events(&g, 6000, 7);
	gen_tmp_path(path, sizeof(path), "wjobs");
	CHECK(!gen_write(path, &g, 0, 1));
	gen_free(&g);
	CHECK(file_matches(path, 500, 4) != 0);
	unlink(path);
}

/* A window taken stays taken: a job or change for it is counted as lost. */
static void test_taken(void)
{
	static const struct kx_window win[2] = {{.from_ns = 0, .to_ns = 100},
	                                        {.from_ns = 100, .part = 1}};
	struct kx_wjobs w;
	struct kx_wjobs_part p;
	struct kx_jobrec r = {.run_ts = 50, .done_ts = 150, .submit = -1, .wait = -1};
	uint32_t id;

	CHECK(!kx_wjobs_init(&w, win, 2));
	w.nrings = w.ntrings = w.ndevs = 1;
	w.ring_final = calloc(1, sizeof(*w.ring_final));
	w.ring_next = calloc(1, sizeof(*w.ring_next));
	w.ring_dev = calloc(1, sizeof(*w.ring_dev));
	w.depth = calloc(1, sizeof(*w.depth));
	CHECK(w.ring_final && w.ring_next && w.ring_dev && w.depth);
	CHECK(!kx_wjobs_take(&w, &p) && p.njobs == 0);
	kx_wjobs_part_free(&p);
	CHECK(!w.sink.job(w.sink.ctx, &r, &id) && !w.sink.lane(w.sink.ctx, id, 0));
	CHECK_EQ_U(w.lost, 2); /* the job and its coming in */
	CHECK(!kx_wjobs_take(&w, &p) && p.njobs == 0 && p.ndepth[0] == 1);
	CHECK(p.depth[0][0].ts == 150 && p.depth[0][0].depth == UINT32_MAX);
	kx_wjobs_part_free(&p);
	CHECK(kx_wjobs_take(&w, &p));
	kx_wjobs_free(&w);
}

int main(void)
{
	RUN(test_fixtures);
	RUN(test_generated);
	RUN(test_file_order);
	RUN(test_taken);
	KXT_EXIT();
}
