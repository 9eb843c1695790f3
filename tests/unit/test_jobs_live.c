/*
 * Live and offline job pairing agree (one rule, analysis/jobpair.h): every
 * fixture with jobs (tests/fixtures/<name>.jsonl, loaded with user/io/replay)
 * goes through the offline analysis (kx_jobs_build) and through the live
 * aggregates (live/jobagg.h) in the order a ring buffer delivers the records
 * (a job record at its time, an ioctl record at its return), and the jobs,
 * completed jobs, exec and queue samples and busy time must be the same.
 * Devices are told apart differently (offline by driver, a loop device's
 * disks together; live by source, each disk apart): busy time is compared
 * per device where both split the jobs into as many devices. Fixtures are
 * found under $KX_FIXTURES, else tests/fixtures.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobs.h"
#include "io/replay.h"
#include "kxtest.h"
#include "live/jobagg.h"

struct feed {
	uint64_t at;  /* when the ring gets the record */
	int ioctl;    /* 0: a job record */
	size_t index; /* in the store */
};

static int feed_cmp(const void *pa, const void *pb)
{
	const struct feed *a = pa, *b = pb;

	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	if (a->ioctl != b->ioctl)
		return a->ioctl - b->ioctl;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* The records of st into a in ring order; 0, or -1 when out of memory. */
static int feed_live(const struct kx_store *st, struct kx_jobagg *a)
{
	size_t nj = kx_store_job_count(st), ni = kx_store_ioctl_count(st), n = 0;
	struct feed *f = malloc((nj + ni + 1) * sizeof(*f));

	if (!f)
		return -1;
	for (size_t i = 0; i < nj; i++)
		f[n++] = (struct feed){kx_store_job(st, i)->ts, 0, i};
	for (size_t i = 0; i < ni; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(st, i);

		f[n++] = (struct feed){e->ts + e->dur, 1, i};
	}
	qsort(f, n, sizeof(*f), feed_cmp);
	for (size_t i = 0; i < n; i++)
		if (f[i].ioctl)
			kx_jobagg_ioctl(a, kx_store_ioctl(st, f[i].index));
		else
			kx_jobagg_add(a, kx_store_job(st, f[i].index));
	kx_jobagg_flush(a);
	free(f);
	return 0;
}

static const struct kx_jobagg_dev *live_dev(const struct kx_jobagg_snapshot *s, const char *name)
{
	for (size_t d = 0; d < s->ndevs; d++)
		if (!strcmp(s->devs[d].device, name))
			return &s->devs[d];
	return NULL;
}

static int busy_checked; /* devices whose busy time compare() compared */

/* Compares one fixture (CHECK returns early on failure). */
static void compare(const char *name)
{
	const char *dir = getenv("KX_FIXTURES");
	char path[512], err[512];
	struct kx_capinfo ci;
	struct kx_store *st = kx_store_new(0);
	struct kx_jobs *jb = NULL;
	struct kx_jobagg *a = kx_jobagg_new(0, 0);
	struct kx_jobagg_snapshot s;
	uint64_t jobs = 0, done = 0, nexec = 0, texec = 0, nq = 0, tq = 0;
	size_t ndevs = 0;

	busy_checked = 0;
	printf("# %s\n", name);
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "tests/fixtures", name);
	CHECK(st && a);
	CHECK(kx_replay_load(path, st, &ci, err, sizeof(err)) == 0);
	CHECK((jb = kx_jobs_build(st, &ci)) != NULL);
	CHECK(jb->njobs > 0);
	CHECK(feed_live(st, a) == 0);
	CHECK(kx_jobagg_snapshot(a, &s, jb->end_ns, 0) == 0);
	for (size_t d = 0; d < s.ndevs; d++) {
		jobs += s.devs[d].jobs;
		done += s.devs[d].completed;
	}
	for (size_t i = 0; i < s.nseries; i++)
		for (int k = 0; k < KX_HIST_SLOTS; k++) {
			nexec += s.series[i].exec_slots[k];
			nq += s.series[i].queue_slots[k];
		}
	for (size_t i = 0; i < s.nseries; i++) {
		texec += s.series[i].exec_sum_ns;
		tq += s.series[i].queue_sum_ns;
	}
	CHECK_EQ_U(jobs, jb->njobs);
	{
		uint64_t c = 0, ne = 0, te = 0, nqo = 0, tqo = 0;

		for (size_t d = 0; d < jb->ndevs; d++)
			c += jb->devs[d].completed;
		for (size_t r = 0; r < jb->nrings; r++) {
			ne += jb->rings[r].exec.count;
			te += jb->rings[r].exec.total;
			nqo += jb->rings[r].queue.count;
			tqo += jb->rings[r].queue.total;
		}
		CHECK_EQ_U(done, c);
		CHECK_EQ_U(nexec, ne);
		CHECK_EQ_U(texec, te);
		CHECK_EQ_U(nq, nqo);
		CHECK_EQ_U(tq, tqo);
	}
	for (size_t d = 0; d < jb->ndevs; d++)
		ndevs += jb->devs[d].njobs > 0;
	/* Per device where both split the jobs alike: the same number of
	 * devices, matched by name or, one each, to each other. */
	for (size_t d = 0; ndevs == s.ndevs && d < jb->ndevs; d++) {
		const struct kx_jobdev *o = &jb->devs[d];
		const struct kx_jobagg_dev *l = live_dev(&s, o->name);

		if (!o->njobs)
			continue;
		if (!l && ndevs == 1)
			l = &s.devs[0];
		if (!l)
			continue;
		printf("#   %s: %" PRIu64 " jobs, busy %" PRIu64 " ns\n", o->name, o->njobs,
		       o->busy_ns);
		CHECK_EQ_U(l->jobs, o->njobs);
		CHECK_EQ_U(l->completed, o->completed);
		CHECK_EQ_U(l->busy_ns, o->busy_ns);
		busy_checked++;
	}
	kx_jobagg_snapshot_free(&s);
	kx_jobagg_free(a);
	kx_jobs_free(jb);
	kx_store_free(st);
}

/* KVM: a job is one KVM_RUN, from its enter to the exit inside it; a second
 * exit in one run is a duplicate, one outside any run a job without a
 * start (offline pairs kvm.jsonl's 4 jobs so; live, fed in ring order, the
 * same). */
static void test_kvm(void)
{
	compare("kvm.jsonl");
	CHECK_EQ_U(busy_checked, 1);
}

/* Block: queue (insert -> issue), direct issues, reused sectors. */
static void test_block(void)
{
	compare("block.jsonl");
	CHECK_EQ_U(busy_checked, 1);
	compare("loop.jsonl"); /* one device offline, a device per disk live */
}

/* GPU sources: fence keys shared by several sources, old and new
 * gpu_scheduler shapes, per-driver sources. */
static void test_gpu(void)
{
	static const char *const fx[] = {"amdgpu_new.jsonl", "amdgpu_old.jsonl", "i915.jsonl",
	                                 "msm.jsonl", "xe.jsonl"};

	int n = 0;

	for (size_t i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
		compare(fx[i]);
		n += busy_checked;
	}
	/* all but i915.jsonl, whose dma_fence-only job is a device of its own live */
	CHECK_EQ_U(n, 4);
}

int main(void)
{
	RUN(test_kvm);
	RUN(test_block);
	RUN(test_gpu);
	KXT_EXIT();
}
