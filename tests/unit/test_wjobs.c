/*
 * analysis/wjobs.h: the device jobs filed by time window give, window by
 * window, exactly the whole table's (kx_jobs_build) jobs that start in it,
 * with their places in it, and its devices' depth points that fall in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/jobflow.h"
#include "analysis/jobs.h"
#include "analysis/windows.h"
#include "analysis/wjobs.h"
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

/* s's jobs filed in windows of at most limit events, against the whole
 * table: 1 when every window gives its part of it (and there were nwin_min
 * windows at least), else 0 (said). */
static int windows_match(const struct kx_store *s, const struct kx_capinfo *ci, size_t limit,
                         size_t nwin_min)
{
	char err[256];
	struct kx_analysis *an = kx_analysis_build(s, ci, err, sizeof(err));
	struct kx_windows pl = {0};
	struct kx_jobflow f1, f2;
	struct kx_wjobs w;
	struct kx_jobs *o1 = NULL, *o2 = NULL;
	size_t seen = 0, *pts = NULL;
	uint8_t *got = NULL; /* per job of the table: given by a window */
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
	if (feed(&f2, s) || f2.why || !(o2 = kx_jobflow_finish(&f2, s, NULL)))
		goto out;
	pts = calloc(an->jobs->ndevs + 1, sizeof(*pts));
	got = calloc(an->jobs->njobs + 1, 1);
	ok = pts && got && w.ndevs == an->jobs->ndevs;
	for (size_t k = 0; ok && k < pl.n; k++) {
		struct kx_wjobs_part p;
		const struct kx_window *x = &pl.w[k];

		if (kx_wjobs_take(&w, &p)) {
			ok = 0;
			break;
		}
		for (size_t i = 0; ok && i < p.njobs; i++) {
			const struct kx_wjobs_job *j = &p.jobs[i];
			uint64_t st = kx_jobrec_start(&j->r);

			ok = j->index < an->jobs->njobs && !got[j->index] &&
			     (!i || j[-1].index < j->index) &&
			     same_job(&j->r, &an->jobs->jobs[j->index]) && st >= x->from_ns &&
			     (!x->to_ns || st < x->to_ns);
			if (ok)
				got[j->index] = 1, seen++;
			else
				printf("# window %zu: job %zu (index %llu): ring %u/%u lane %u/%u "
				       "dev %u/%u start %llu/%llu submit %lld/%lld wait "
				       "%lld/%lld\n",
				       k, i, (unsigned long long)j->index, j->r.ring,
				       an->jobs->jobs[j->index].ring, j->r.lane,
				       an->jobs->jobs[j->index].lane, j->r.dev,
				       an->jobs->jobs[j->index].dev, (unsigned long long)st,
				       (unsigned long long)kx_jobrec_start(
				               &an->jobs->jobs[j->index]),
				       (long long)j->r.submit,
				       (long long)an->jobs->jobs[j->index].submit,
				       (long long)j->r.wait,
				       (long long)an->jobs->jobs[j->index].wait);
		}
		for (size_t d = 0; ok && d < p.ndevs; d++) {
			const struct kx_jobdev *jd = &an->jobs->devs[d];

			for (size_t i = 0; ok && i < p.ndepth[d]; i++) {
				const struct kx_depth_pt *a = &p.depth[d][i],
				                         *b = &jd->depth[pts[d]++];

				ok = pts[d] <= jd->ndepth && a->ts == b->ts &&
				     a->depth == b->depth && a->ts >= x->from_ns &&
				     (!x->to_ns || a->ts < x->to_ns);
				if (!ok)
					printf("# window %zu: device %zu depth point %zu\n", k, d,
					       i);
			}
		}
		kx_wjobs_part_free(&p);
	}
	/* Every job and point went to one window. */
	ok &= seen == an->jobs->njobs && !w.lost;
	for (size_t d = 0; ok && d < an->jobs->ndevs; d++)
		ok = pts[d] == an->jobs->devs[d].ndepth;
out:
	free(got);
	free(pts);
	kx_jobs_free(o1);
	kx_jobs_free(o2);
	kx_jobflow_free(&f1);
	kx_jobflow_free(&f2);
	kx_wjobs_free(&w);
	kx_windows_free(&pl);
	kx_analysis_free(an);
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
	RUN(test_taken);
	KXT_EXIT();
}
