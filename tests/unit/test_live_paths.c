/*
 * The live path against the in-memory one, record file by record file (the
 * differential test's live part; tests/integration/test_paths_equal.sh runs
 * the command-line paths over the same corpus): the records of a .kxp, read
 * back with the record-file reader, go through the live aggregates of top
 * and serve in the order a ring buffer delivers them (live/jobagg.h: a job
 * record at its time, an ioctl at its return; live/annagg.h: annotation
 * records as the file holds them), and through the in-memory analysis
 * (kx_analysis_build, what report --in-memory and convert read). Within the
 * live bounds they must agree (where a bound is reached, counted: with room
 * for every series; busy time within what the interval bound cut, and
 * exact with room for every interval):
 *   jobs: seen and completed, exec and queue samples and their total time,
 *     and per device, where both split the jobs into as many devices, jobs,
 *     completed and busy time (the live side names a device by its source,
 *     the offline one by its driver);
 *   annotations: per name and category, closed ranges (count, total,
 *     shortest and longest time) and marks, and the ends whose begin was
 *     lost.
 * The live ioctl rows come from the in-kernel aggregation map (live/
 * aggregate.h), which no record file can feed: not compared here.
 * Corpus: the unit tests' generated captures (tests/unit/kxp_gen*.h),
 * every replay fixture written as a recorder writes it, and a KVM capture
 * whose busy intervals live's bound cuts (counted); with arguments, the
 * record files given instead (files_given; the other cases then compare
 * nothing: test_paths_equal.sh passes its whole corpus so).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/jobs.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "kxp_gen.h"
#include "kxp_gen_stream.h"
#include "kxp_gen_wread.h"
#include "kxtest.h"
#include "kxtest_live.h"

static char tmpdir[64];
static char **args; /* record files given on the command line */
static int nargs;

/* The record file at path, live and in memory (CHECK returns early on failure). */
static void compare_file(const char *path, size_t *devs)
{
	static struct kx_capinfo ci;
	struct kx_store *st = kx_store_new(0);
	struct kx_kxp_read_result res;
	struct kx_analysis *an = NULL;
	char err[512];

	live_path = path;
	printf("# %s: %s\n", kxt_cur, path);
	CHECK(st);
	if (kx_kxp_read(path, st, &ci, &res, err, sizeof(err)) ||
	    !(an = kx_analysis_build(st, &ci, err, sizeof(err)))) {
		printf("FAIL %s: %s: %s\n", kxt_cur, path, err);
		kxt_cur_failed = 1;
		kx_store_free(st);
		return;
	}
	if (an->jobs && an->jobs->njobs)
		live_same_jobs(st, an->jobs, devs);
	if (!kxt_cur_failed && an->ranges && kx_store_ann_count(st))
		live_same_ranges(st, an->ranges);
	kx_analysis_free(an);
	kx_store_free(st);
}

static char *tmp_kxp(const char *name)
{
	static char path[128];

	snprintf(path, sizeof(path), "%s/%s.kxp", tmpdir, name);
	return path;
}

/* test_wread's annotated capture: nested ranges across late calls,
 * cross-thread and open ranges, marks, a thread that only annotates. */
static void wread_annotated(void)
{
	const char *p = tmp_kxp("wread_ann");
	size_t devs = 0;

	if (nargs)
		return; /* the files given instead */

	CHECK(write_capture_as(p, 6000, 0, 0, 0, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY) == 0);
	compare_file(p, &devs);
	unlink(p);
}

/* test_report_stream's annotated captures: six threads nesting ranges six
 * deep around their calls, marks, cross-thread ranges, lost pushes. */
static void stream_annotated(void)
{
	size_t devs = 0;

	if (nargs)
		return; /* the files given instead */

	for (uint64_t seed = 1; seed <= 3 && !kxt_cur_failed; seed++) {
		const char *p = tmp_kxp("stream_ann");

		CHECK(write_annotated(p, seed * 7919) == 0);
		compare_file(p, &devs);
		unlink(p);
	}
}

/* A job record amid test_wread's calls. */
static void wread_job(void)
{
	const char *p = tmp_kxp("wread_job");
	size_t devs = 0;

	if (nargs)
		return; /* the files given instead */

	CHECK(write_capture(p, 2000, 1, 0) == 0);
	compare_file(p, &devs);
	unlink(p);
}

/* kxp_gen.h's event stream: jobs of every source and phase, unknown ones,
 * extreme keys, ring names of every length (more series than live's
 * default limit). */
static void events(void)
{
	const char *p = tmp_kxp("events");
	struct gen g;
	size_t devs = 0;
	int rc;

	if (nargs)
		return; /* the files given instead */

	gen_events(&g, 8000, 42);
	rc = gen_write(p, &g, 4096, 1);
	gen_free(&g);
	CHECK(rc == 0);
	compare_file(p, &devs);
	unlink(p);
}

/* Every replay fixture with jobs, written as a recorder writes it and read
 * back from the record file: test_jobs_live's comparison through the file. */
static void fixtures_recorded(void)
{
	static const char *const names[] = {"amdgpu_new", "amdgpu_old", "block", "i915",
	                                    "kvm",        "loop",       "msm",   "xe"};
	const char *dir = getenv("KX_FIXTURES");
	size_t devs = 0;

	if (nargs)
		return; /* the files given instead */

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !kxt_cur_failed; i++) {
		static struct kx_capinfo ci;
		struct kx_store *s = kx_store_new(0);
		char fx[512], err[512];
		const char *p = tmp_kxp(names[i]);

		snprintf(fx, sizeof(fx), "%s/%s.jsonl", dir && *dir ? dir : "tests/fixtures",
		         names[i]);
		CHECK(s && kx_replay_load(fx, s, &ci, err, sizeof(err)) == 0);
		if (write_kxp(p, s, &ci, L_RECORDED)) {
			kx_store_free(s);
			CHECK(!"writing the fixture as a record file");
		}
		kx_store_free(s);
		compare_file(p, &devs);
		unlink(p);
	}
	/* all but loop's (a device a disk live) and i915's (its dma_fence-only
	 * job a device of its own live) compared device by device */
	CHECK(devs >= 6);
}

/* A KVM capture recorded under load (kvm_workload -t 2 -j 300 beside other
 * captures): a vCPU's KVM_RUN of 52.7 ms while the other vCPU ran more than
 * KX_JOBAGG_MAX_IVALS jobs with gaps between them. Live gets that job's
 * interval at the call's return and cuts it at the intervals folded in by
 * then: 53,808 ns short of the in-memory busy time, within the 20,849,269
 * ns it counts as cut; exact with room for every interval. */
static void kvm_busy_cut(void)
{
	static struct kx_capinfo ci;
	const char *dir = getenv("KX_FIXTURES");
	struct kx_jobagg_snapshot s;
	struct kx_kxp_read_result res;
	struct kx_store *st;
	struct kx_jobs *jb = NULL;
	char path[512], err[512];
	size_t devs = 0;

	if (nargs)
		return; /* the files given instead */

	st = kx_store_new(0);
	snprintf(path, sizeof(path), "%s/kvm_busy_cut.kxp", dir && *dir ? dir : "tests/fixtures");
	CHECK(st && kx_kxp_read(path, st, &ci, &res, err, sizeof(err)) == 0);
	CHECK((jb = kx_jobs_build(st, &ci)) != NULL);
	CHECK(live_jobs(st, jb, 0, 0, &s) == 0);
	CHECK_EQ_U(s.ndevs, 1);
	CHECK_EQ_U(jb->devs[0].busy_ns, 653519546);
	CHECK_EQ_U(s.devs[0].busy_ns, 653465738);
	CHECK_EQ_U(s.devs[0].busy_cut_ns, 20849269);
	kx_jobagg_snapshot_free(&s);
	kx_jobs_free(jb);
	kx_store_free(st);
	compare_file(path, &devs);
	CHECK_EQ_U(devs, 1);
}

static void files_given(void)
{
	size_t devs = 0;

	for (int i = 0; i < nargs; i++) /* every file, past a failure */
		compare_file(args[i], &devs);
}

int main(int argc, char **argv)
{
	const char *t = getenv("TMPDIR");

	args = argv + 1;
	nargs = argc - 1;
	snprintf(tmpdir, sizeof(tmpdir), "%s/kxlive.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(wread_annotated);
	RUN(stream_annotated);
	RUN(wread_job);
	RUN(events);
	RUN(fixtures_recorded);
	RUN(kvm_busy_cut);
	RUN(files_given);
	rmdir(tmpdir);
	KXT_EXIT();
}
