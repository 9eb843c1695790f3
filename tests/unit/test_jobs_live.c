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
#include "kxtest_live.h"

static size_t busy_checked; /* devices whose busy time compare() compared */

/* Compares one fixture (CHECK returns early on failure). */
static void compare(const char *name)
{
	const char *dir = getenv("KX_FIXTURES");
	char path[512], err[512];
	struct kx_capinfo ci;
	struct kx_store *st = kx_store_new(0);
	struct kx_jobs *jb = NULL;

	busy_checked = 0;
	printf("# %s\n", name);
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "tests/fixtures", name);
	live_path = path;
	CHECK(st);
	CHECK(kx_replay_load(path, st, &ci, err, sizeof(err)) == 0);
	CHECK((jb = kx_jobs_build(st, &ci)) != NULL);
	CHECK(jb->njobs > 0);
	live_same_jobs(st, jb, &busy_checked);
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

	size_t n = 0;

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
