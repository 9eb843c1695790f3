/*
 * The analysis of one input (contract: analysis.h). The jobs analysis and
 * the per-thread timeline do not depend on each other: they are built at
 * the same time, on two threads when the machine has a spare CPU.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "analysis/rangewalk.h"
#include "util/workq.h"

static const struct kx_capinfo no_capinfo;

struct jobs_job {
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	struct kx_jobs *jobs;
};

static void *jobs_thread(void *arg)
{
	struct jobs_job *j = arg;

	j->jobs = kx_jobs_build(j->s, j->ci);
	return NULL;
}

struct kx_analysis *kx_analysis_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                      char *err, size_t errlen)
{
	struct kx_analysis *an = calloc(1, sizeof(*an));
	struct jobs_job jj = {s, ci, NULL};
	pthread_t th;
	int threaded;

	if (!an) {
		snprintf(err, errlen, "out of memory for the analysis");
		return NULL;
	}
	an->store = s;
	an->ci = ci ? ci : &no_capinfo;
	an->has_ci = ci != NULL;
	threaded = kx_workq_workers(2) > 0 && !pthread_create(&th, NULL, jobs_thread, &jj);
	if (!threaded)
		jobs_thread(&jj);
	an->timeline = kx_timeline_build(s, err, errlen);
	if (threaded)
		pthread_join(th, NULL);
	an->jobs = jj.jobs;
	if (an->timeline && !an->jobs)
		snprintf(err, errlen, "out of memory analysing the device timelines");
	if (an->timeline && an->jobs) {
		an->counters = kx_ctrstats_build(s, ci, err, errlen);
		if (!an->counters && err[0])
			an->jobs = (kx_jobs_free(an->jobs), NULL);
	}
	if (an->timeline && an->jobs) {
		an->ranges = kx_ranges_build(s, ci, an->timeline, an->jobs);
		if (!an->ranges)
			snprintf(err, errlen, "out of memory analysing the annotation ranges");
	}
	if (!an->timeline || !an->jobs || !an->ranges) {
		kx_analysis_free(an);
		return NULL;
	}
	return an;
}

void kx_analysis_free(struct kx_analysis *an)
{
	if (!an)
		return;
	if (!an->jobs_lent)
		kx_jobs_free(an->jobs);
	if (!an->ranges_lent)
		kx_ranges_free(an->ranges);
	kx_timeline_free(an->timeline);
	kx_ctrstats_free(an->counters);
	free(an->flows.from);
	free(an);
}

void kx_analysis_lend_ranges(struct kx_analysis *an, struct kx_ranges *rg)
{
	if (!an->ranges_lent)
		kx_ranges_free(an->ranges);
	an->ranges = rg;
	an->ranges_lent = 1;
}

void kx_analysis_lend_jobs(struct kx_analysis *an, struct kx_jobs *jobs)
{
	if (!an->jobs_lent)
		kx_jobs_free(an->jobs);
	an->jobs = jobs;
	an->jobs_lent = 1;
}

void kx_analysis_warnings(const struct kx_analysis *an, kx_warn_fn fn, void *ctx)
{
	kx_capture_warnings(an->ci, kx_store_not_stored(an->store), fn, ctx);
	kx_jobs_warnings(an->jobs, fn, ctx);
	kx_ranges_warnings(an->ranges, fn, ctx);
	kx_timeline_warnings(an->timeline, fn, ctx);
	kx_read_loss_warnings(&an->loss, fn, ctx);
}

const struct kx_ioctl *kx_analysis_submitter(const struct kx_analysis *an, size_t k, uint64_t *dur)
{
	const struct kx_jobrec *j = &an->jobs->jobs[k];
	const struct kx_ioctl *e;

	if (j->submit < 0)
		return NULL;
	if (an->jview) {
		*dur = an->jview->submit[k].dur;
		return &an->jview->submit[k];
	}
	if ((size_t)j->submit >= kx_store_ioctl_count(an->store))
		return NULL;
	e = kx_store_ioctl(an->store, (size_t)j->submit);
	/* The slice as the exporters draw it: the nesting rule may shorten it. */
	*dur = kx_timeline_dur(an->timeline, (size_t)j->submit, e->dur);
	return e;
}

int kx_analysis_submitted(const struct kx_analysis *an, size_t i)
{
	if (an->jview)
		return an->jview->submitted && (an->jview->submitted[i / 8] >> (i % 8) & 1);
	return an->jobs && kx_jobs_ioctl_submitted(an->jobs, i);
}
