/*
 * The live aggregates of top and serve (live/jobagg.h, live/annagg.h) fed
 * the records of a store as a running capture would feed them, against the
 * offline analysis of the same store (analysis/jobs.h, analysis/ranges.h):
 * the comparisons of test_jobs_live, test_rangetrack and test_live_paths.
 * Failures are CHECK failures of the calling case (kxtest.h), naming
 * live_path when set.
 */
#ifndef KXTEST_LIVE_H
#define KXTEST_LIVE_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobs.h"
#include "analysis/ranges.h"
#include "kxtest.h"
#include "live/annagg.h"
#include "live/jobagg.h"
#include "model/store.h"

static const char *live_path = ""; /* what is compared, for failure lines */

struct live_feed {
	uint64_t at;  /* ns: when the ring gets the record */
	int ioctl;    /* 0: a job record */
	size_t index; /* in the store */
};

static inline int live_feed_cmp(const void *pa, const void *pb)
{
	const struct live_feed *a = pa, *b = pb;

	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	if (a->ioctl != b->ioctl)
		return a->ioctl - b->ioctl;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* The job and ioctl records of st into a in ring order; 0, or -1 when out of memory. */
static inline int live_feed_jobs(const struct kx_store *st, struct kx_jobagg *a)
{
	size_t nj = kx_store_job_count(st), ni = kx_store_ioctl_count(st), n = 0;
	struct live_feed *f = malloc((nj + ni + 1) * sizeof(*f));

	if (!f)
		return -1;
	for (size_t i = 0; i < nj; i++)
		f[n++] = (struct live_feed){kx_store_job(st, i)->ts, 0, i};
	for (size_t i = 0; i < ni; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(st, i);

		f[n++] = (struct live_feed){e->ts + e->dur, 1, i};
	}
	qsort(f, n, sizeof(*f), live_feed_cmp);
	for (size_t i = 0; i < n; i++)
		if (f[i].ioctl)
			kx_jobagg_ioctl(a, kx_store_ioctl(st, f[i].index));
		else
			kx_jobagg_add(a, kx_store_job(st, f[i].index));
	kx_jobagg_flush(a);
	free(f);
	return 0;
}

static inline const struct kx_jobagg_dev *live_dev(const struct kx_jobagg_snapshot *s,
                                                   const char *name)
{
	for (size_t d = 0; d < s->ndevs; d++)
		if (!strcmp(s->devs[d].device, name))
			return &s->devs[d];
	return NULL;
}

/* Live job totals of a snapshot, offline ones of jb. */
struct live_job_totals {
	uint64_t jobs, done, nexec, texec, nq, tq; /* counts; texec, tq in ns */
};

static inline struct live_job_totals live_totals(const struct kx_jobagg_snapshot *s)
{
	struct live_job_totals t = {0};

	for (size_t d = 0; d < s->ndevs; d++) {
		t.jobs += s->devs[d].jobs;
		t.done += s->devs[d].completed;
	}
	for (size_t i = 0; i < s->nseries; i++) {
		for (int k = 0; k < KX_HIST_SLOTS; k++) {
			t.nexec += s->series[i].exec_slots[k];
			t.nq += s->series[i].queue_slots[k];
		}
		t.texec += s->series[i].exec_sum_ns;
		t.tq += s->series[i].queue_sum_ns;
	}
	return t;
}

static inline struct live_job_totals offline_totals(const struct kx_jobs *jb)
{
	struct live_job_totals t = {.jobs = jb->njobs};

	for (size_t d = 0; d < jb->ndevs; d++)
		t.done += jb->devs[d].completed;
	for (size_t r = 0; r < jb->nrings; r++) {
		t.nexec += jb->rings[r].exec.count;
		t.texec += jb->rings[r].exec.total;
		t.nq += jb->rings[r].queue.count;
		t.tq += jb->rings[r].queue.total;
	}
	return t;
}

/* The live job aggregates of st (a series limit of max_series, busy
 * intervals kept per device max_ivals; 0: the default) into *s; 0, or -1
 * when out of memory. */
static inline int live_jobs(const struct kx_store *st, const struct kx_jobs *jb,
                            uint32_t max_series, uint32_t max_ivals, struct kx_jobagg_snapshot *s)
{
	struct kx_jobagg *a = kx_jobagg_new(0, max_series);
	int rc = a && (!max_ivals || kx_jobagg_set_max_ivals(a, max_ivals) == 0) &&
	                         live_feed_jobs(st, a) == 0
	                 ? kx_jobagg_snapshot(a, s, jb->end_ns, 0)
	                 : -1;

	kx_jobagg_free(a);
	return rc;
}

/* Where live's busy intervals cut some (counted: busy_cut_ns), the
 * in-memory busy time of each device lies within the cut above live's;
 * returns whether any device's were cut. */
static inline int live_busy_cut(const struct kx_jobagg_snapshot *s, const struct kx_jobs *jb)
{
	int cut = 0;

	for (size_t d = 0; d < jb->ndevs; d++) {
		const struct kx_jobdev *od = &jb->devs[d];
		const struct kx_jobagg_dev *ld = live_dev(s, od->name);

		if (!ld && s->ndevs == 1 && od->njobs)
			ld = &s->devs[0];
		if (!ld || !ld->busy_cut_ns)
			continue;
		cut = 1;
		printf("#   device %s: live's busy intervals (%d kept) cut %" PRIu64
		       " ns: busy %" PRIu64 " ns live, %" PRIu64 " ns in memory\n",
		       od->name, KX_JOBAGG_MAX_IVALS, ld->busy_cut_ns, ld->busy_ns, od->busy_ns);
		if (ld->busy_ns > od->busy_ns || od->busy_ns - ld->busy_ns > ld->busy_cut_ns) {
			printf("FAIL %s: %s: device %s: in memory busy %" PRIu64
			       " ns, not within live's %" PRIu64 " ns and the %" PRIu64
			       " ns it cut\n",
			       kxt_cur, live_path, od->name, od->busy_ns, ld->busy_ns,
			       ld->busy_cut_ns);
			kxt_cur_failed = 1;
		}
	}
	return cut;
}

/* Live jobs of st against the in-memory analysis's jb; *devs: devices
 * compared one by one. Live within its bounds: where the default limits
 * lose jobs (counted), with room for every series instead; where its busy
 * intervals cut some (counted), within the cut, and exactly with room for
 * every interval. */
static inline void live_same_jobs(const struct kx_store *st, const struct kx_jobs *jb, size_t *devs)
{
	struct kx_jobagg_snapshot s;
	struct live_job_totals l, o;
	uint32_t max_series = 0;
	size_t ndevs = 0;

	CHECK(live_jobs(st, jb, 0, 0, &s) == 0);
	if (s.overflow) {
		printf("#   live's default limits (%d series, %d open jobs) lose %" PRIu64
		       " jobs: compared with room for every series\n",
		       KX_JOBAGG_MAX_SERIES, KX_JOBAGG_MAX_PENDING, s.overflow);
		kx_jobagg_snapshot_free(&s);
		max_series = 1u << 20;
		CHECK(live_jobs(st, jb, max_series, 0, &s) == 0);
	}
	if (live_busy_cut(&s, jb)) {
		printf("#   compared with room for every busy interval\n");
		kx_jobagg_snapshot_free(&s);
		CHECK(live_jobs(st, jb, max_series, (uint32_t)jb->njobs + 1, &s) == 0);
	}
	if (s.overflow) {
		printf("FAIL %s: %s: %" PRIu64 " jobs lost to live's bounds\n", kxt_cur, live_path,
		       s.overflow);
		kxt_cur_failed = 1;
	}
	l = live_totals(&s);
	o = offline_totals(jb);
	printf("#   jobs: live %" PRIu64 " (%" PRIu64 " completed), in memory %" PRIu64 " (%" PRIu64
	       ")\n",
	       l.jobs, l.done, o.jobs, o.done);
	for (size_t d = 0; d < jb->ndevs; d++)
		ndevs += jb->devs[d].njobs > 0;
	for (size_t d = 0; ndevs == s.ndevs && d < jb->ndevs; d++) {
		const struct kx_jobdev *od = &jb->devs[d];
		const struct kx_jobagg_dev *ld = live_dev(&s, od->name);

		if (!od->njobs)
			continue;
		if (!ld && ndevs == 1)
			ld = &s.devs[0];
		if (!ld)
			continue;
		if (ld->jobs != od->njobs || ld->completed != od->completed ||
		    ld->busy_ns != od->busy_ns || ld->busy_cut_ns) {
			printf("FAIL %s: %s: device %s: live %" PRIu64 " jobs, %" PRIu64
			       " completed, busy %" PRIu64 " ns; in memory %" PRIu64 ", %" PRIu64
			       ", %" PRIu64 " ns\n",
			       kxt_cur, live_path, od->name, ld->jobs, ld->completed, ld->busy_ns,
			       od->njobs, od->completed, od->busy_ns);
			kxt_cur_failed = 1;
		}
		(*devs)++;
	}
	kx_jobagg_snapshot_free(&s);
	CHECK_EQ_U(l.jobs, o.jobs);
	CHECK_EQ_U(l.done, o.done);
	CHECK_EQ_U(l.nexec, o.nexec);
	CHECK_EQ_U(l.texec, o.texec);
	CHECK_EQ_U(l.nq, o.nq);
	CHECK_EQ_U(l.tq, o.tq);
}

static inline const char *live_str(const struct kx_store *s, uint32_t id)
{
	return id ? kx_store_ann_str(s, id) : "";
}

/* Live annotation series of st against the in-memory ranges rg: per name
 * and category, closed ranges (count, total, min, max) and marks; ends
 * whose begin is lost. */
static inline void live_same_ranges(const struct kx_store *st, const struct kx_ranges *rg)
{
	struct kx_annagg *a = kx_annagg_new(0);
	struct kx_annagg_snapshot snap;
	uint64_t ranges = 0, marks = 0, mem_ranges = 0, mem_marks = 0;

	CHECK(a);
	for (size_t i = 0; i < kx_store_ann_count(st); i++) {
		const struct kx_ann *e = kx_store_ann(st, i);

		kx_annagg_add(a, e, live_str(st, e->name), live_str(st, e->cat));
	}
	CHECK(kx_annagg_snapshot(a, &snap, 0) == 0);
	kx_annagg_free(a);
	for (size_t i = 0; i < snap.nseries; i++) {
		const struct kx_annagg_series *se = &snap.series[i];
		uint64_t n = 0, ns = 0, lo = 0, hi = 0;

		for (size_t k = 0; k < rg->n; k++) {
			const struct kx_range *r = &rg->r[k];

			if (r->open || strcmp(live_str(st, r->name), se->name) ||
			    strcmp(live_str(st, r->cat), se->cat) ||
			    (r->kind == KX_RANGE_MARK) != se->mark)
				continue;
			lo = !n || r->dur_meas < lo ? r->dur_meas : lo;
			hi = r->dur_meas > hi ? r->dur_meas : hi;
			n++;
			ns += r->dur_meas;
		}
		if (se->count != n ||
		    (!se->mark && (se->sum_ns != ns || se->min_ns != lo || se->max_ns != hi))) {
			printf("FAIL %s: %s: %s/%s%s: live %" PRIu64 " (%" PRIu64 " ns, %" PRIu64
			       "-%" PRIu64 "), in memory %" PRIu64 " (%" PRIu64 " ns, %" PRIu64
			       "-%" PRIu64 ")\n",
			       kxt_cur, live_path, se->cat, se->name, se->mark ? " (mark)" : "",
			       se->count, se->sum_ns, se->min_ns, se->max_ns, n, ns, lo, hi);
			kxt_cur_failed = 1;
		}
		ranges += se->mark ? 0 : se->count;
		marks += se->mark ? se->count : 0;
	}
	printf("#   annotations: live %" PRIu64 " ranges, %" PRIu64 " marks in %zu series\n",
	       ranges, marks, snap.nseries);
	for (size_t k = 0; k < rg->n; k++) {
		mem_ranges += !rg->r[k].open && rg->r[k].kind != KX_RANGE_MARK;
		mem_marks += rg->r[k].kind == KX_RANGE_MARK;
	}
	CHECK_EQ_U(snap.lost, rg->anom.lost_begin);
	kx_annagg_snapshot_free(&snap);
	CHECK_EQ_U(ranges, mem_ranges); /* no closed range or mark is in memory alone */
	CHECK_EQ_U(marks, mem_marks);
}

#endif /* KXTEST_LIVE_H */
