/*
 * The live path against the in-memory one, record file by record file (the
 * differential test's live part; tests/integration/test_paths_equal.sh runs
 * the command-line paths over the same corpus): the records of a .kxp, read
 * back with the record-file reader, go through the live aggregates of top
 * and serve in the order a ring buffer delivers them (live/jobagg.h: a job
 * record at its time, an ioctl at its return; live/annagg.h: annotation
 * records as the file holds them), and through the in-memory analysis
 * (kx_analysis_build, what report --in-memory and convert read). Within the
 * live bounds (default limits, none reached here), they must agree:
 *   jobs: seen and completed, exec and queue samples and their total time,
 *     and per device, where both split the jobs into as many devices, jobs,
 *     completed and busy time (the live side names a device by its source,
 *     the offline one by its driver);
 *   annotations: per name and category, closed ranges (count, total,
 *     shortest and longest time) and marks, and the ends whose begin was
 *     lost.
 * The live ioctl rows come from the in-kernel aggregation map (live/
 * aggregate.h), which no record file can feed: not compared here.
 * Corpus: the unit tests' generated captures (tests/unit/kxp_gen*.h) and
 * every replay fixture written as a recorder writes it; with arguments, the
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
#include "io/kxp.h"
#include "io/replay.h"
#include "kxp_gen.h"
#include "kxp_gen_stream.h"
#include "kxp_gen_wread.h"
#include "kxtest.h"
#include "live/annagg.h"
#include "live/jobagg.h"

static char tmpdir[64];
static const char *cur_path; /* the record file the case compares */
static char **args;          /* record files given on the command line */
static int nargs;

struct feed {
	uint64_t at;  /* ns: when the ring gets the record */
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

/* The job and ioctl records of st into a in ring order; 0, or -1 when out of memory. */
static int feed_jobs(const struct kx_store *st, struct kx_jobagg *a)
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

/* Live job totals of a snapshot, offline ones of jb. */
struct job_totals {
	uint64_t jobs, done, nexec, texec, nq, tq; /* counts; texec, tq in ns */
};

static struct job_totals live_totals(const struct kx_jobagg_snapshot *s)
{
	struct job_totals t = {0};

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

static struct job_totals offline_totals(const struct kx_jobs *jb)
{
	struct job_totals t = {.jobs = jb->njobs};

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

/* The live job aggregates of st (a series limit of max_series, 0: the
 * default) into *s; 0, or -1 when out of memory. */
static int live_jobs(const struct kx_store *st, const struct kx_jobs *jb, uint32_t max_series,
                     struct kx_jobagg_snapshot *s)
{
	struct kx_jobagg *a = kx_jobagg_new(0, max_series);
	int rc = a && feed_jobs(st, a) == 0 ? kx_jobagg_snapshot(a, s, jb->end_ns, 0) : -1;

	kx_jobagg_free(a);
	return rc;
}

/* Live jobs of st against the in-memory analysis's jb; *devs: devices
 * compared one by one. Live within its bounds: where the default limits
 * lose jobs (counted), with room for every series instead. */
static void same_jobs(const struct kx_store *st, const struct kx_jobs *jb, size_t *devs)
{
	struct kx_jobagg_snapshot s;
	struct job_totals l, o;
	size_t ndevs = 0;

	CHECK(live_jobs(st, jb, 0, &s) == 0);
	if (s.overflow) {
		printf("#   live's default limits (%d series, %d open jobs) lose %" PRIu64
		       " jobs: compared with room for every series\n",
		       KX_JOBAGG_MAX_SERIES, KX_JOBAGG_MAX_PENDING, s.overflow);
		kx_jobagg_snapshot_free(&s);
		CHECK(live_jobs(st, jb, 1u << 20, &s) == 0);
	}
	if (s.overflow) {
		printf("FAIL %s: %s: %" PRIu64 " jobs lost to live's bounds\n", kxt_cur, cur_path,
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
		    ld->busy_ns != od->busy_ns) {
			printf("FAIL %s: %s: device %s: live %" PRIu64 " jobs, %" PRIu64
			       " completed, busy %" PRIu64 " ns; in memory %" PRIu64 ", %" PRIu64
			       ", %" PRIu64 " ns\n",
			       kxt_cur, cur_path, od->name, ld->jobs, ld->completed, ld->busy_ns,
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

static const char *str(const struct kx_store *s, uint32_t id)
{
	return id ? kx_store_ann_str(s, id) : "";
}

/* Live annotation series of st against the in-memory ranges rg: per name
 * and category, closed ranges (count, total, min, max) and marks; ends
 * whose begin is lost. */
static void same_ranges(const struct kx_store *st, const struct kx_ranges *rg)
{
	struct kx_annagg *a = kx_annagg_new(0);
	struct kx_annagg_snapshot snap;
	uint64_t ranges = 0, marks = 0, mem_ranges = 0, mem_marks = 0;

	CHECK(a);
	for (size_t i = 0; i < kx_store_ann_count(st); i++) {
		const struct kx_ann *e = kx_store_ann(st, i);

		kx_annagg_add(a, e, str(st, e->name), str(st, e->cat));
	}
	CHECK(kx_annagg_snapshot(a, &snap, 0) == 0);
	kx_annagg_free(a);
	for (size_t i = 0; i < snap.nseries; i++) {
		const struct kx_annagg_series *se = &snap.series[i];
		uint64_t n = 0, ns = 0, lo = 0, hi = 0;

		for (size_t k = 0; k < rg->n; k++) {
			const struct kx_range *r = &rg->r[k];

			if (r->open || strcmp(str(st, r->name), se->name) ||
			    strcmp(str(st, r->cat), se->cat) ||
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
			       kxt_cur, cur_path, se->cat, se->name, se->mark ? " (mark)" : "",
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

/* The record file at path, live and in memory (CHECK returns early on failure). */
static void compare_file(const char *path, size_t *devs)
{
	static struct kx_capinfo ci;
	struct kx_store *st = kx_store_new(0);
	struct kx_kxp_read_result res;
	struct kx_analysis *an = NULL;
	char err[512];

	cur_path = path;
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
		same_jobs(st, an->jobs, devs);
	if (!kxt_cur_failed && an->ranges && kx_store_ann_count(st))
		same_ranges(st, an->ranges);
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
	RUN(files_given);
	rmdir(tmpdir);
	KXT_EXIT();
}
