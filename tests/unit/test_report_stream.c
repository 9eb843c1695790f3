/*
 * The streamed report (analysis/sreport.h) against the in-memory one: the
 * same summary JSON, except p50/p90/p99 which must lie within 1/256 of the
 * exact values, for every replay fixture written as a record file (as a
 * recorder writes it, device timelines and all; with only its tasks and
 * ioctls; and with its kinds grouped), for generated captures with many
 * rows, errors and a damaged chunk, for generated annotated captures
 * (nested ranges around calls, marks, cross-thread ranges, ranges left open
 * and begins lost), generated captures with counters (records before and
 * after their calls, after later calls of their thread, of counters the
 * header does not name, unmatched ones, partial and multiplexed readings),
 * and the cases that must be read into memory instead
 * (annotation ranges and calls that overlap
 * or touch, a lost pop, a counter record of a call given up past the
 * counter join's budget, a call that
 * holds another of its thread, job records that
 * do not come in a recorder's order); calls of a thread that partially
 * overlap stream (the reorder stage nests them in start order). KVM job
 * captures stream with their device timelines paired as the records pass
 * (analysis/jobflow.h: no job record kept), or are read into memory where
 * that cannot be exact (a KVM_RUN longer than its window, an exit written
 * after a later exit of its thread was paired 50 ms on, too many exits
 * waiting; exits of a thread out of time order stream, each call looking
 * at a few of them). Block captures stream the same way (records out of
 * time order within the window, keys closed and forgotten), or are read
 * into memory for a stated reason (a record later than the window, a
 * request open too long, a call later than its task's paired request, a
 * DONE on a key that may have been forgotten, a wait phase on a job
 * counted, too many jobs open); so do xe captures (waiters, fences on a
 * ring whose driver is learnt; a record written after later calls of its
 * task, found among its last 8), with their reasons (an event long after
 * DONE, a record after 10 later calls, a wait call later than a job it may hold, one before the
 * first GPU record); a KVM capture beside many GPU wait calls keeps none of them. Captures of the
 * shared fence sources stream, rings whose jobs no call submitted included (past the budget of
 * those waiting for the ring's device, counted on the fallback), unless such a ring links later to
 * another device (a budget reason). Captures with annotation ranges and
 * device jobs (xe jobs, KVM exits) stream with each range row's Device Jobs
 * and Device Time, calls the nesting rule shortens among them too; so do
 * calls holding others with device jobs (KVM, xe, block), ranges as long
 * as a shortened call of their start (ordered as memory orders them), jobs
 * of calls walked before the first job record and of calls of a thread
 * with one start. Calls spanning the end of a range of their thread stream, counted
 * in the warning as memory's timeline counts them.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/ctrstats.h"
#include "analysis/jobflow.h"
#include "analysis/jobs.h"
#include "analysis/rangewalk.h"
#include "analysis/engine.h"
#include "analysis/sreport.h"
#include "export/ctrtable.h"
#include "export/summary.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "kxp_gen_annjobs.h"
#include "kxp_gen_stream.h"
#include "kxtest.h"
#include "model/store.h"
#include "registry/drivers.h"

static char tmpdir[64];

/* The summary JSON of an analysis (ioctl rows st, or from the store when NULL). */
static char *summary_json(struct kx_analysis *an, struct kx_stats *st)
{
	struct kx_summary *sum = st ? kx_summary_build_stats(an, st) : kx_summary_build(an);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!sum)
		return NULL;
	f = open_memstream(&buf, &len);
	if (f) {
		kx_summary_print_json(sum, f, 1);
		if (an->counters)
			kx_ctrtable_json(an->counters, f);
		fclose(f);
	}
	kx_summary_free(sum);
	return buf;
}

static struct kx_read_loss loss_of(const struct kx_kxp_read_result *res)
{
	struct kx_read_loss l = {0};

	l.no_trailer = res->truncated;
	l.corrupt_chunks = res->ncorrupt;
	l.corrupt_bytes = res->corrupt_bytes;
	l.first_corrupt = res->ncorrupt ? res->corrupt[0].chunk : 0;
	if (res->truncated)
		l.cut_bytes = res->bad_tail_bytes;
	return l;
}

/* ---- the device timelines against their exact build ---- */

#define JSAME(x, y, what, i)                                                                       \
	do {                                                                                       \
		if ((x) != (y)) {                                                                  \
			snprintf(msg, len, "%s %zu: %llu, exactly %llu", what, (size_t)(i),        \
			         (unsigned long long)(x), (unsigned long long)(y));                \
			return 0;                                                                  \
		}                                                                                  \
	} while (0)

static int dist_same(const struct kx_dist *a, const struct kx_dist *b, const char *what, size_t i,
                     char *msg, size_t len)
{
	JSAME(a->count, b->count, what, i);
	JSAME(a->total, b->total, what, i);
	JSAME(a->min, b->min, what, i);
	JSAME(a->max, b->max, what, i);
	JSAME(a->p50, b->p50, what, i);
	JSAME(a->p90, b->p90, what, i);
	JSAME(a->p99, b->p99, what, i);
	return 1;
}

static int jobrec_same(const struct kx_jobrec *a, const struct kx_jobrec *b, size_t i, char *msg,
                       size_t len)
{
	JSAME(a->queue_ts, b->queue_ts, "job queue", i);
	JSAME(a->run_ts, b->run_ts, "job run", i);
	JSAME(a->done_ts, b->done_ts, "job done", i);
	JSAME(a->ctx, b->ctx, "job ctx", i);
	JSAME(a->seqno, b->seqno, "job seqno", i);
	JSAME(a->pid, b->pid, "job pid", i);
	JSAME(a->tid, b->tid, "job tid", i);
	JSAME(a->waiter_tid, b->waiter_tid, "job waiter", i);
	JSAME(a->submit, b->submit, "job submit", i);
	JSAME(a->wait, b->wait, "job wait", i);
	JSAME(a->src, b->src, "job src", i);
	JSAME(a->flags, b->flags, "job flags", i);
	JSAME(a->dev, b->dev, "job dev", i);
	JSAME(a->ring, b->ring, "job ring", i);
	JSAME(a->lane, b->lane, "job lane", i);
	return 1;
}

static int ring_same(const struct kx_jobring *a, const struct kx_jobring *b, size_t i, char *msg,
                     size_t len)
{
	JSAME(strcmp(a->name, b->name), 0, "ring name", i);
	JSAME(a->dev, b->dev, "ring dev", i);
	JSAME(a->nlanes, b->nlanes, "ring lanes", i);
	JSAME(a->first, b->first, "ring first", i);
	JSAME(a->njobs, b->njobs, "ring jobs", i);
	JSAME(a->completed, b->completed, "ring completed", i);
	JSAME(a->linked, b->linked, "ring linked", i);
	JSAME(a->waited, b->waited, "ring waited", i);
	JSAME(a->busy_ns, b->busy_ns, "ring busy", i);
	return dist_same(&a->exec, &b->exec, "ring exec", i, msg, len) &&
	       dist_same(&a->queue, &b->queue, "ring queue", i, msg, len);
}

static int dev_same(const struct kx_jobdev *a, const struct kx_jobdev *b, size_t i, char *msg,
                    size_t len)
{
	JSAME(strcmp(a->name, b->name), 0, "device name", i);
	JSAME(a->nrings, b->nrings, "device rings", i);
	JSAME(a->njobs, b->njobs, "device jobs", i);
	JSAME(a->completed, b->completed, "device completed", i);
	JSAME(a->incomplete, b->incomplete, "device incomplete", i);
	JSAME(a->no_queue, b->no_queue, "device no_queue", i);
	JSAME(a->linked, b->linked, "device linked", i);
	JSAME(a->busy_ns, b->busy_ns, "device busy", i);
	JSAME(a->max_depth, b->max_depth, "device depth", i);
	JSAME(a->ndepth, b->ndepth, "device depth points", i);
	JSAME(a->nmem, b->nmem, "device memory events", i);
	for (size_t k = 0; k < a->ndepth; k++) {
		JSAME(a->depth[k].ts, b->depth[k].ts, "depth point", k);
		JSAME(a->depth[k].depth, b->depth[k].depth, "depth point", k);
	}
	return 1;
}

/* Are device timelines a the exact ones b (each field the report, the
 * exporters and the windows read)? msg says where not. */
static int jobs_same(const struct kx_jobs *a, const struct kx_jobs *b, char *msg, size_t len)
{
	JSAME(a->njobs, b->njobs, "jobs", 0);
	JSAME(a->nrings, b->nrings, "rings", 0);
	JSAME(a->ndevs, b->ndevs, "devices", 0);
	JSAME(a->start_ns, b->start_ns, "start", 0);
	JSAME(a->end_ns, b->end_ns, "end", 0);
	JSAME(memcmp(&a->anom, &b->anom, sizeof(a->anom)), 0, "anomalies", 0);
	for (size_t i = 0; i < a->njobs; i++)
		if (!jobrec_same(&a->jobs[i], &b->jobs[i], i, msg, len))
			return 0;
	for (size_t i = 0; i < a->nrings; i++)
		if (!ring_same(&a->rings[i], &b->rings[i], i, msg, len))
			return 0;
	for (size_t i = 0; i < a->ndevs; i++)
		if (!dev_same(&a->devs[i], &b->devs[i], i, msg, len))
			return 0;
	JSAME(a->nioctls, b->nioctls, "calls", 0);
	JSAME(memcmp(a->submitted, b->submitted, a->nioctls / 8 + 1), 0, "submitting calls", 0);
	return 1;
}

/* The in-memory device timelines a of store s (kx_jobs_build: within the
 * streamed read's bounds where those give the same) are the exact ones
 * (no bound). 1 when so; msg says where not. */
static int jobs_exact(const struct kx_store *s, const struct kx_capinfo *ci,
                      const struct kx_jobs *a, char *msg, size_t len)
{
	struct kx_jobs *b;
	int same;

	if (!a || (!a->njobs && !a->nrings))
		return 1;
	b = kx_jobs_build_exact(s, ci);
	snprintf(msg, len, "the exact device timelines failed");
	same = b && jobs_same(a, b, msg, len);
	kx_jobs_free(b);
	return same;
}

#undef JSAME

/* Were the last in-memory report's device timelines the exact ones
 * (jobs_exact)? If not, where they differ. */
static int exact_ok;
static char exact_msg[512];

/* The in-memory report of path as JSON (NULL on failure). */
static char *json_in_memory(const char *path)
{
	struct kx_store *s = kx_store_new((size_t)1 << 30);
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res;
	struct kx_analysis *an = NULL;
	char err[512], *out = NULL;

	if (s && !kx_kxp_read(path, s, &ci, &res, err, sizeof(err)))
		an = kx_analysis_build(s, &ci, err, sizeof(err));
	exact_ok = an && jobs_exact(s, &ci, an->jobs, exact_msg, sizeof(exact_msg));
	if (an) {
		an->loss = loss_of(&res);
		out = summary_json(an, NULL);
	}
	kx_analysis_free(an);
	kx_store_free(s);
	return out;
}

/* The most calls the last streamed report's ranges remembered for their jobs at once. */
static size_t dc_peak;
/* Its device jobs counted early, and the most held at once. */
static uint64_t flow_early;
static size_t flow_held;

/* The streamed report of path as JSON; *why: the in-memory reason (then NULL). */
static char *json_streamed(const char *path, const char **why)
{
	static struct kx_sreport sr;
	struct kx_analysis *an = NULL;
	char err[512], *out = NULL;

	*why = "read failed";
	if (kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err))) {
		kx_sreport_free(&sr);
		return NULL;
	}
	*why = sr.in_memory;
	dc_peak = sr.ranges ? sr.ranges->dc_peak : 0;
	flow_early = sr.flow_unblocked;
	flow_held = sr.flow_held;
	if (!sr.in_memory)
		an = kx_analysis_build(sr.side, &sr.ci, err, sizeof(err));
	if (an && kx_sreport_apply(&sr, an) == 0) {
		an->loss = loss_of(&sr.res);
		out = summary_json(an, &sr.st);
	}
	kx_analysis_free(an);
	kx_sreport_free(&sr);
	return out;
}

/* Is q "p50", "p90" or "p99"? */
static int pctl_name(const char *q)
{
	return q[0] == 'p' &&
	       (!strncmp(q + 1, "50", 2) || !strncmp(q + 1, "90", 2) || !strncmp(q + 1, "99", 2));
}

/* A percentile value at p (after `"pNN": `, or a device ring's `"pNN_ms": `), or NULL. */
static int at_percentile(const char *start, const char *p)
{
	if (p - start < 7 || strncmp(p - 3, "\": ", 3))
		return 0;
	if (p[-7] == '"' && pctl_name(p - 6))
		return 1;
	return p - start >= 10 && !strncmp(p - 6, "_ms", 3) && p[-10] == '"' && pctl_name(p - 9);
}

/* Equal JSON but for percentiles within 1/256 (+ 1 ns of rounding). 1 when so. */
static int json_match(const char *a, const char *b, char *why, size_t len)
{
	const char *a0 = a, *b0 = b;

	while (*a || *b) {
		const char *na, *nb;
		double x, y;

		if (*a == *b) {
			a++, b++;
			continue;
		}
		/* Back to the start of the differing number. */
		while (a > a0 && (isdigit((unsigned char)a[-1]) || a[-1] == '.'))
			a--, b--;
		if (!at_percentile(a0, a) || !at_percentile(b0, b)) {
			snprintf(why, len, "differs at: %.80s | %.80s", a, b);
			return 0;
		}
		x = strtod(a, (char **)&na); /* streamed */
		y = strtod(b, (char **)&nb); /* exact */
		if ((x > y ? x - y : y - x) > y / 256 + 1.5e-6) {
			snprintf(why, len, "percentile %.6f not within 1/256 of %.6f", x, y);
			return 0;
		}
		a = na, b = nb;
	}
	return 1;
}

/* Compares both reports of path, and the in-memory device timelines with
 * the exact ones; *why gets the streamed one's in-memory reason. */
static int compare(const char *path, const char **why, char *msg, size_t len)
{
	char *m = json_in_memory(path), *s = json_streamed(path, why);
	int ok = 0;

	if (!m)
		snprintf(msg, len, "%s: in-memory report failed", path);
	else if (*why)
		ok = 1; /* cmd_report reads it into memory: the same report */
	else if (!s)
		snprintf(msg, len, "%s: streamed report failed", path);
	else
		ok = json_match(s, m, msg, len);
	if (ok && !exact_ok)
		snprintf(msg, len, "%s: %.400s", path, exact_msg);
	free(m);
	free(s);
	return ok && exact_ok;
}

/* compare, and the streamed report's reason: want in it (NULL: streamed).
 * Says what differs (test name, case c) when not so. */
static int compare_want(const char *name, int c, const char *path, const char *want)
{
	char msg[512];
	const char *why = NULL;
	int ok = compare(path, &why, msg, sizeof(msg));
	int good = ok && (want ? why && strstr(why, want) : !why);

	if (!good)
		printf("FAIL %s: %d: %s\n", name, c, !ok ? msg : why ? why : "streamed");
	return good;
}

/* Every fixture in every layout: the streamed report is the in-memory one,
 * and every fixture streams, device timelines and memory rows included
 * (grouped too: a GPU driver's wait call before the first GPU job record is
 * kept, amdgpu_new's; before, it was read into memory). */
static void fixtures(void)
{
	static const char *const names[L_COUNT] = {"", " (ioctls)", " (grouped)"};
	const char *dir = getenv("KX_FIXTURES");
	struct dirent *d;
	int nfix = 0, nstreamed[L_COUNT] = {0}, njobs = 0;
	DIR *dp;

	dir = dir && *dir ? dir : "tests/fixtures";
	dp = opendir(dir);
	CHECK(dp);
	while ((d = readdir(dp))) {
		struct kx_store *s;
		static struct kx_capinfo ci;
		char path[512], kxp[128], err[512], msg[512];
		const char *why;

		if (!kx_replay_is_fixture(d->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		s = kx_store_new(0);
		CHECK(s && kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
		nfix++;
		njobs += kx_store_job_count(s) > 0;
		for (int l = 0; l < L_COUNT; l++) {
			snprintf(kxp, sizeof(kxp), "%s/f%d.kxp", tmpdir, l);
			if (write_kxp(kxp, s, &ci, (enum layout)l)) {
				kx_store_free(s);
				CHECK(!"writing the fixture as a record file");
			}
			if (!compare(kxp, &why, msg, sizeof(msg))) {
				printf("FAIL fixtures: %s%s (%s)\n", d->d_name, names[l], msg);
				kxt_cur_failed = 1;
			}
			if (why) {
				printf("FAIL fixtures: %s%s: not streamed: %s\n", d->d_name,
				       names[l], why);
				kxt_cur_failed = 1;
			}
			nstreamed[l] += !why;
			fprintf(stderr, "%s%s: %s\n", d->d_name, names[l], why ? why : "streamed");
		}
		kx_store_free(s);
	}
	closedir(dp);
	CHECK(nfix >= 8 && njobs >= 7);
	CHECK(nstreamed[L_RECORDED] == nfix && nstreamed[L_IOCTLS] == nfix &&
	      nstreamed[L_GROUPED] == nfix);
}

static void generated(void)
{
	char path[128], msg[512];
	const char *why;

	snprintf(path, sizeof(path), "%s/gen.kxp", tmpdir);
	CHECK(write_generated(path, 300000, 7, 64) == 0);
	if (!compare(path, &why, msg, sizeof(msg)))
		printf("FAIL generated: %s\n", msg);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
}

/* A damaged chunk in the middle: both skip it, with the same warning. */
static void damaged(void)
{
	char path[128], msg[512];
	const char *why;
	FILE *f;
	long size;

	snprintf(path, sizeof(path), "%s/dmg.kxp", tmpdir);
	CHECK(write_generated(path, 300000, 11, 16) == 0);
	f = fopen(path, "r+b");
	CHECK(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size / 2, SEEK_SET);
	for (int i = 0; i < 64; i++)
		fputc(0x5a, f);
	fclose(f);
	if (!compare(path, &why, msg, sizeof(msg)))
		printf("FAIL damaged: %s\n", msg);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
	/* Cut short: no trailer, the same unknown figures. */
	CHECK(truncate(path, size * 3 / 4) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
}

/* ---- annotated captures ---- */

/* Annotated captures stream, with the in-memory report's rows, counts and anomalies. */
static void annotated(void)
{
	char path[128], msg[512];
	const char *why;

	for (uint64_t seed = 1; seed <= 3; seed++) {
		char *m;

		snprintf(path, sizeof(path), "%s/ann%llu.kxp", tmpdir, (unsigned long long)seed);
		CHECK(write_annotated(path, seed * 7919) == 0);
		if (!compare(path, &why, msg, sizeof(msg)))
			printf("FAIL annotated: %s\n", msg);
		CHECK(compare(path, &why, msg, sizeof(msg)));
		if (why)
			printf("FAIL annotated: read into memory: %s\n", why);
		CHECK(why == NULL);
		/* The capture has what the test means it to have. */
		m = json_in_memory(path);
		CHECK(m && strstr(m, "\"annotation/nvtx\"") && strstr(m, "(mark)") &&
		      strstr(m, "\"annotation/copy\"") && !strstr(m, "\"lost_begin\": 0,") &&
		      !strstr(m, "\"open\": 0,") && !strstr(m, "\"open_cross\": 0,"));
		free(m);
	}
}

/* write_kxp_list PATH: ioctl and annotation records as given, then closed. */
static int write_list(const char *path, const struct ann_rec *v, size_t n)
{
	static struct kx_capinfo ci;
	char err[256];
	struct kx_kxp_writer *w = kx_kxp_create(path, &ci, err, sizeof(err));

	if (!w)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i].is_ann)
			kx_kxp_add_ann(w, &v[i].a, "r", "");
		else
			kx_kxp_add_ioctl(w, &v[i].e, NULL);
	}
	return kx_kxp_close(w, &ci, err, sizeof(err));
}

#define IOC(t, d)                                                                                  \
	{                                                                                          \
		.e = {.ts = (t),                                                                   \
		      .dur = (d),                                                                  \
		      .pid = 5,                                                                    \
		      .tid = 5,                                                                    \
		      .drv = 1,                                                                    \
		      .cmd = 0x4001,                                                               \
		      .arg_off = KX_NO_ARG }                                                       \
	}
#define ANN(w, t, b, dep)                                                                          \
	{                                                                                          \
		.is_ann = 1,                                                                       \
		.a = {.ts = (t),                                                                   \
		      .begin = (b),                                                                \
		      .pid = 5,                                                                    \
		      .tid = 5,                                                                    \
		      .what = (w),                                                                 \
		      .depth = (dep) }                                                             \
	}

#define ANN2(w, th, t, b, dep)                                                                     \
	{                                                                                          \
		.is_ann = 1,                                                                       \
		.a = {.ts = (t),                                                                   \
		      .begin = (b),                                                                \
		      .id = (th) > 5 ? 1 : 0,                                                      \
		      .pid = 5,                                                                    \
		      .tid = (th),                                                                 \
		      .what = (w),                                                                 \
		      .depth = (dep) }                                                             \
	}

/* Annotation records whose pairing, nesting or attribution depends on what
 * comes later: the stream gives them as memory does, not read whole. */
static void ann_odd_cases(void)
{
	/* A push inside a call (the call's record comes at its return). */
	static const struct ann_rec inside[] = {ANN(KX_ANN_PUSH, 120, 120, 1), IOC(100, 50),
	                                        ANN(KX_ANN_POP, 300, 120, 1)};
	/* A push at the nanosecond a call returned. */
	static const struct ann_rec touch[] = {IOC(100, 100), ANN(KX_ANN_PUSH, 200, 200, 1),
	                                       ANN(KX_ANN_POP, 300, 200, 1)};
	/* A lost pop: the next push at the same depth. */
	static const struct ann_rec lostpop[] = {
	        ANN(KX_ANN_PUSH, 100, 100, 1), ANN(KX_ANN_PUSH, 200, 200, 2),
	        ANN(KX_ANN_PUSH, 300, 300, 2), IOC(350, 10),
	        ANN(KX_ANN_POP, 400, 300, 2),  ANN(KX_ANN_POP, 500, 100, 1)};
	/* The outer range popped over an inner one whose pop was lost: the
	 * inner stays open, cut to the outer, with the calls inside both. */
	static const struct ann_rec stale[] = {ANN(KX_ANN_PUSH, 100, 100, 1),
	                                       ANN(KX_ANN_PUSH, 200, 200, 2),
	                                       IOC(250, 10),
	                                       ANN(KX_ANN_POP, 300, 100, 1),
	                                       IOC(350, 10),
	                                       IOC(400, 5)};
	/* ...and its pop found later, under the search from the top. */
	static const struct ann_rec late_pop[] = {ANN(KX_ANN_PUSH, 100, 100, 1),
	                                          ANN(KX_ANN_PUSH, 200, 200, 2),
	                                          IOC(250, 10),
	                                          ANN(KX_ANN_POP, 300, 100, 1),
	                                          IOC(350, 10),
	                                          ANN(KX_ANN_POP, 400, 200, 2)};
	/* A pop whose push was lost; a call around a whole range. */
	static const struct ann_rec lostpush[] = {ANN(KX_ANN_POP, 100, 50, 1),
	                                          ANN(KX_ANN_PUSH, 200, 200, 1),
	                                          ANN(KX_ANN_POP, 250, 200, 1), IOC(150, 200)};
	/* Ties: a call starting with a range, longer and shorter; two pushes at one ns. */
	static const struct ann_rec ties[] = {ANN(KX_ANN_PUSH, 100, 100, 1),
	                                      IOC(100, 60),
	                                      ANN(KX_ANN_POP, 150, 100, 1),
	                                      ANN(KX_ANN_PUSH, 200, 200, 1),
	                                      IOC(200, 20),
	                                      ANN(KX_ANN_POP, 250, 200, 1),
	                                      ANN(KX_ANN_PUSH, 300, 300, 1),
	                                      ANN(KX_ANN_PUSH, 300, 300, 2),
	                                      ANN(KX_ANN_POP, 330, 300, 1),
	                                      IOC(340, 5),
	                                      ANN(KX_ANN_POP, 360, 300, 2)};
	/* Cross-thread: an id started twice, an end before its start, an end
	 * with another start time. */
	static const struct ann_rec cross[] = {
	        ANN2(KX_ANN_START, 6, 100, 100, 0), ANN2(KX_ANN_START, 6, 120, 120, 0),
	        ANN2(KX_ANN_END, 7, 150, 100, 0),   ANN2(KX_ANN_END, 7, 160, 120, 0),
	        ANN2(KX_ANN_END, 7, 170, 90, 0),    ANN2(KX_ANN_END, 7, 180, 400, 0),
	        ANN2(KX_ANN_START, 6, 400, 400, 0), ANN2(KX_ANN_END, 7, 450, 400, 0)};
	static const struct {
		const char *name;
		const struct ann_rec *v;
		size_t n;
	} cases[] = {
	        {"inside", inside, 3}, {"touch", touch, 3},       {"lostpop", lostpop, 6},
	        {"stale", stale, 6},   {"late_pop", late_pop, 6}, {"lostpush", lostpush, 4},
	        {"ties", ties, 11},    {"cross", cross, 8},
	};
	char path[128], msg[512];
	const char *why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int same;

		snprintf(path, sizeof(path), "%s/%s.kxp", tmpdir, cases[i].name);
		CHECK(write_list(path, cases[i].v, cases[i].n) == 0);
		same = compare(path, &why, msg, sizeof(msg));
		if (!same || why)
			printf("FAIL ann_odd_cases: %s: %s\n", cases[i].name, why ? why : msg);
		CHECK(same && why == NULL);
	}
}

/* One thread of odd records, more than the reorder window: pushes whose
 * pop is lost, pops whose push is lost, pushes inside calls (the call's
 * record at its return), calls starting at the nanosecond of a push. */
static void gen_odd_thread(struct ann_gen *g, uint32_t tid, uint64_t steps)
{
	uint64_t st[16], now = 1000 + tid, last_push = 0;
	int lost[16], depth = 0;

	for (uint64_t i = 0; i < steps; i++) {
		uint64_t r = gen_rng(&g->seed), c = r % 12, dur = r >> 32 & 511;

		now += (r >> 8) % 3 ? 1 + (r >> 12 & 255) : 0;
		if (c < 4 && depth < 12) {
			now += now <= last_push; /* no two pushes at one ns */
			st[depth] = last_push = now;
			lost[depth] = (r >> 20 & 31) == 0;
			gen_ann(g, tid, KX_ANN_PUSH, now, now, (uint16_t)(depth + 1), 0, "r", "");
			depth++;
		} else if (c < 7 && depth) {
			depth--;
			if (!lost[depth])
				gen_ann(g, tid, KX_ANN_POP, now, st[depth], (uint16_t)(depth + 1),
				        0, NULL, NULL);
			if ((r >> 30 & 63) == 1)
				gen_ann(g, tid, KX_ANN_POP, now, now - 3, (uint16_t)(depth + 1), 0,
				        NULL, NULL);
		} else if (c < 8 || depth >= 12) {
			gen_ann(g, tid, KX_ANN_MARK, now, now, (uint16_t)depth, 0, "m", "");
		} else {
			uint64_t s = now;
			struct ann_rec *e;

			if ((r >> 44 & 7) == 0) { /* a push inside this call */
				now += 1 + dur / 2;
				st[depth] = last_push = now;
				lost[depth] = 0;
				gen_ann(g, tid, KX_ANN_PUSH, now, now, (uint16_t)(depth + 1), 0,
				        "in", "");
				depth++;
			}
			now = s + dur + 2;
			e = rec_new(g, now);
			e->e = (struct kx_ioctl){.ts = s, .dur = dur + 2, .pid = 300, .tid = tid};
			e->e.drv = 1;
			e->e.cmd = 0x4001;
			e->e.arg_off = KX_NO_ARG;
		}
	}
}

/* Odd records past the reorder window stream as memory reads them. */
static void ann_odd_random(void)
{
	static struct kx_capinfo ci;
	char path[128], msg[512], err[256];
	struct ann_gen g = {NULL, 0, 0, 4242};
	struct kx_kxp_writer *w;
	const char *why;
	int same;

	for (uint32_t t = 0; t < 3; t++)
		gen_odd_thread(&g, 500 + t, 6000);
	snprintf(path, sizeof(path), "%s/odd_random.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	for (size_t i = 0; w && i < g.n; i++) {
		if (g.v[i].is_ann)
			kx_kxp_add_ann(w, &g.v[i].a, g.v[i].name, g.v[i].cat);
		else
			kx_kxp_add_ioctl(w, &g.v[i].e, NULL);
	}
	free(g.v);
	CHECK(w && kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	same = compare(path, &why, msg, sizeof(msg));
	if (!same || why)
		printf("FAIL ann_odd_random: %s\n", why ? why : msg);
	CHECK(same && why == NULL);
}

#define LATE_CALLS (KX_ENGINE_RANGE_HOLD + 8)

#define IOC6(t, d)                                                                                 \
	{                                                                                          \
		.e = {.ts = (t),                                                                   \
		      .dur = (d),                                                                  \
		      .pid = 5,                                                                    \
		      .tid = 6,                                                                    \
		      .drv = 1,                                                                    \
		      .cmd = 0x4001,                                                               \
		      .arg_off = KX_NO_ARG }                                                       \
	}

/* Calls spanning the end of a range of their thread: memory's timeline
 * cuts them there and counts them in its warning (a call once, cut by a
 * call too; threads once); the stream counts them alike, not read whole. */
static void ann_cut_streams(void)
{
	static const struct ann_rec cut[] = {ANN(KX_ANN_PUSH, 100, 100, 1), IOC(250, 100),
	                                     ANN(KX_ANN_POP, 300, 100, 1)};
	/* ...and a call inside it, past the range's end: cut to the cut call. */
	static const struct ann_rec cascade[] = {ANN(KX_ANN_PUSH, 100, 100, 1),
	                                         ANN(KX_ANN_POP, 300, 100, 1), IOC(280, 60),
	                                         IOC(250, 100)};
	/* A call the rule shortens among calls that a range's end cuts shorter. */
	static const struct ann_rec both[] = {ANN(KX_ANN_PUSH, 100, 100, 1), IOC(200, 50),
	                                      ANN(KX_ANN_POP, 245, 100, 1), IOC(240, 100)};
	/* Two threads: one with a range's cut, one with both kinds. */
	static const struct ann_rec threads[] = {ANN(KX_ANN_PUSH, 100, 100, 1),
	                                         IOC(250, 100),
	                                         ANN(KX_ANN_POP, 300, 100, 1),
	                                         IOC6(100, 50),
	                                         IOC6(120, 100),
	                                         ANN2(KX_ANN_PUSH, 6, 400, 400, 1),
	                                         ANN2(KX_ANN_POP, 6, 500, 400, 1),
	                                         IOC6(450, 100)};
	static const struct {
		const char *name, *warn;
		const struct ann_rec *v;
		size_t n;
	} cases[] = {
	        {"cut", "\"1 events on 1 threads partially", cut, 3},
	        {"cascade", "\"2 events on 1 threads partially", cascade, 4},
	        {"both", "\"2 events on 1 threads partially", both, 4},
	        {"threads", "\"3 events on 2 threads partially", threads, 8},
	};
	char path[128], msg[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why;
		char *m;
		int same;

		snprintf(path, sizeof(path), "%s/rcut_%s.kxp", tmpdir, cases[i].name);
		CHECK(write_list(path, cases[i].v, cases[i].n) == 0);
		same = compare(path, &why, msg, sizeof(msg));
		if (!same || why)
			printf("FAIL ann_cut_streams: %s: %s\n", cases[i].name, why ? why : msg);
		CHECK(same && why == NULL);
		/* The capture has what the case means it to have. */
		m = json_in_memory(path);
		if (!m || !strstr(m, cases[i].warn))
			printf("FAIL ann_cut_streams: %s: no warning %s\n", cases[i].name,
			       cases[i].warn);
		CHECK(m && strstr(m, cases[i].warn));
		free(m);
	}
}

/* What the stream keeps a budget for: records later than the reorder window. */
static void ann_reasons(void)
{
	static struct ann_rec late[LATE_CALLS + 2];
	char path[128], msg[512];
	const char *why;

	/* A push, more calls after it than a thread with ranges keeps
	 * waiting, then a push before them. */
	late[0] = (struct ann_rec)ANN(KX_ANN_PUSH, 1000, 1000, 1);
	for (size_t i = 1; i < LATE_CALLS + 1; i++)
		late[i] = (struct ann_rec)IOC(1000 + i * 1000, 10);
	late[LATE_CALLS + 1] = (struct ann_rec)ANN(KX_ANN_PUSH, 500, 500, 1);
	snprintf(path, sizeof(path), "%s/late.kxp", tmpdir);
	CHECK(write_list(path, late, LATE_CALLS + 2) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (!why || !strstr(why, "reorder window"))
		printf("FAIL ann_reasons: late: %s\n", why ? why : "streamed");
	CHECK(why && strstr(why, "reorder window"));
}

#define TIE_CALLS (KX_ENGINE_RANGE_HOLD + 44)

/* Two ranges of one thread pushed in the same nanosecond, many calls
 * inside both before either pops (more than a thread with ranges keeps
 * waiting; the old per-thread window of 256 records refused the tie, two
 * ranges of one start not ended when they left it): each leaves the reorder stage
 * before its end, the outer first, and their ends bear the order out, so
 * the stream gives the file as memory reads it. */
static void ann_tie_streams(void)
{
	static struct ann_rec tie[TIE_CALLS + 4];
	char path[128], msg[512];
	const char *why = NULL;
	int same;

	tie[0] = (struct ann_rec)ANN(KX_ANN_PUSH, 1000, 1000, 1);
	tie[1] = (struct ann_rec)ANN(KX_ANN_PUSH, 1000, 1000, 2);
	for (size_t i = 0; i < TIE_CALLS; i++)
		tie[2 + i] = (struct ann_rec)IOC(2000 + i * 1000, 10);
	tie[TIE_CALLS + 2] = (struct ann_rec)ANN(KX_ANN_POP, 2000 + TIE_CALLS * 1000, 1000, 2);
	tie[TIE_CALLS + 3] = (struct ann_rec)ANN(KX_ANN_POP, 2100 + TIE_CALLS * 1000, 1000, 1);
	snprintf(path, sizeof(path), "%s/tie.kxp", tmpdir);
	CHECK(write_list(path, tie, TIE_CALLS + 4) == 0);
	same = compare(path, &why, msg, sizeof(msg));
	if (!same || why)
		printf("FAIL ann_tie_streams: %s\n", why ? why : msg);
	CHECK(same && why == NULL);
	/* Popped the other way round (the inner's pop lost, then found after
	 * the outer's: a longer inner range): read into memory. */
	tie[TIE_CALLS + 2] = (struct ann_rec)ANN(KX_ANN_POP, 2000 + TIE_CALLS * 1000, 1000, 1);
	tie[TIE_CALLS + 3] = (struct ann_rec)ANN(KX_ANN_POP, 2100 + TIE_CALLS * 1000, 1000, 2);
	CHECK(write_list(path, tie, TIE_CALLS + 4) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (!why || !strstr(why, "reorder window"))
		printf("FAIL ann_tie_streams: reversed: %s\n", why ? why : "streamed");
	CHECK(why && strstr(why, "reorder window"));
}

/* A range open at the end with a call of its thread returning after the
 * stop: closed at the thread's end (that call's return) in memory and in
 * the stream alike, so the stream gives the file exactly. */
static void open_range_streams(void)
{
	static const struct ann_rec pastend[] = {IOC(50, 10), ANN(KX_ANN_PUSH, 100, 100, 1),
	                                         IOC(150, 100000)};
	char path[128], msg[512];
	const char *why = NULL;

	snprintf(path, sizeof(path), "%s/pastend.kxp", tmpdir);
	CHECK(write_list(path, pastend, 3) == 0);
	if (!compare(path, &why, msg, sizeof(msg)))
		printf("FAIL open_range_streams: %s\n", msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && why == NULL);
}

/* ---- counters inside the calls ---- */

/* Counter records joined to their calls as the file streams by: the
 * in-memory report's counter table, unmatched and flags included. */
static void counted(void)
{
	char path[128], msg[512];
	const char *why;
	char *m;

	snprintf(path, sizeof(path), "%s/ctr.kxp", tmpdir);
	CHECK(write_counted(path, 4242, 0) == 0);
	if (!compare(path, &why, msg, sizeof(msg)))
		printf("FAIL counted: %s\n", msg);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (why)
		printf("FAIL counted: read into memory: %s\n", why);
	CHECK(why == NULL);
	m = json_in_memory(path);
	CHECK(m && strstr(m, "\"Unmatched\": ") && !strstr(m, "\"Unmatched\": 0,") &&
	      strstr(m, "context-switches"));
	free(m);
}

/* Records that come after later calls of their thread (later than the
 * thread's measured window: its calls come in order) find their calls by
 * key, as in memory: streamed, the in-memory counter table. */
static void counted_late(void)
{
	char path[128], msg[512];
	const char *why = NULL;
	int same;

	snprintf(path, sizeof(path), "%s/ctr_late.kxp", tmpdir);
	CHECK(write_counted(path, 4242, CTR_LATE) == 0);
	same = compare(path, &why, msg, sizeof(msg));
	if (!same || why)
		printf("FAIL counted_late: %s\n", why ? why : msg);
	CHECK(same && why == NULL);
}

/* Records of counters the header does not name: no counter table in
 * memory, none streamed. */
static void counted_unnamed(void)
{
	char path[128], msg[512];
	const char *why = NULL;
	char *m;
	int same;

	snprintf(path, sizeof(path), "%s/ctr_unnamed.kxp", tmpdir);
	CHECK(write_counted(path, 4242, CTR_UNNAMED | CTR_LATE) == 0);
	same = compare(path, &why, msg, sizeof(msg));
	if (!same || why)
		printf("FAIL counted_unnamed: %s\n", why ? why : msg);
	CHECK(same && why == NULL);
	m = json_in_memory(path);
	CHECK(m && !strstr(m, "context-switches"));
	free(m);
}

/* More calls waiting for their record than the counter join keeps (one
 * thread's calls without records), then a late record: of a call still
 * waiting, streamed; of one given up, a budget reason. */
static void counted_budget(void)
{
	static struct kx_capinfo ci;
	struct kx_ioctl e = {.pid = 5, .tid = 5, .drv = 1, .cmd = 0x4001, .arg_off = KX_NO_ARG};
	struct kx_ctr_ev c = {.pid = 5, .tid = 5, .n = 1, .v = {7}};
	const size_t n = KX_CTRJOIN_WAIT_CALLS + 8;
	char path[128], path0[128], err[256], msg[512];
	const char *why = NULL;
	char *m;

	snprintf(ci.counters.names, sizeof(ci.counters.names), "context-switches");
	for (int given_up = 0; given_up < 2; given_up++) {
		struct kx_kxp_writer *w;
		int same;

		snprintf(path, sizeof(path), "%s/ctr_budget%d.kxp", tmpdir, given_up);
		if (!given_up)
			snprintf(path0, sizeof(path0), "%s", path);
		w = kx_kxp_create(path, &ci, err, sizeof(err));
		CHECK(w);
		for (size_t i = 0; w && i < n; i++) {
			e.ts = 1000 + i * 100, e.dur = 50;
			kx_kxp_add_ioctl(w, &e, NULL);
		}
		c.ts = given_up ? 1000
		                : 1000 + (n - 2) * 100; /* the first call's, or a recent one's */
		CHECK(w && kx_kxp_add_ctr(w, &c) == 0);
		CHECK(w && kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
		same = compare(path, &why, msg, sizeof(msg));
		if (!same || (given_up ? !why || !strstr(why, "65536 calls waited") : why != NULL))
			printf("FAIL counted_budget %d: %s\n", given_up, why ? why : msg);
		CHECK(same);
		CHECK(given_up ? why && strstr(why, "65536 calls waited") : why == NULL);
	}
	/* The recent call's record joined it: one call measured, none unmatched. */
	m = json_in_memory(path0);
	CHECK(m && strstr(m, "\"Unmatched\": 0,") && strstr(m, "{\"Calls\": 1,"));
	free(m);
}

/* Overlapping calls of one thread go to the in-memory path; a mark alone,
 * and annotation ranges with device jobs, do not. */
static void in_memory_reasons(void)
{
	static struct kx_capinfo ci;
	struct kx_ioctl e = {.pid = 5, .tid = 5, .drv = 1, .cmd = 0x4001, .arg_off = KX_NO_ARG};
	struct kx_ann a = {.tid = 5, .pid = 5, .ts = 50, .begin = 50, .what = KX_ANN_MARK};
	char path[128], err[256], msg[512];
	struct kx_kxp_writer *w;
	const char *why;

	snprintf(path, sizeof(path), "%s/ov.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 100, e.dur = 50;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 120, e.dur = 100; /* starts inside the first, ends after it */
	kx_kxp_add_ioctl(w, &e, NULL);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	/* Streamed: the reorder stage gives the nesting rule the thread's calls
	 * by start, and the summary warns of the shortened one as in memory. */
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);

	/* A call that holds another whole comes right after it (completion
	 * order): the stage puts it first, streamed. One that comes after a
	 * later call of its thread is later than the thread's measured window:
	 * read into memory. */
	snprintf(path, sizeof(path), "%s/hold.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 100, e.dur = 50;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 20, e.dur = 300;
	kx_kxp_add_ioctl(w, &e, NULL);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 100, e.dur = 50;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 200, e.dur = 10;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 20, e.dur = 300;
	kx_kxp_add_ioctl(w, &e, NULL);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why && strstr(why, "reorder window") && strstr(why, "50 ms"));

	snprintf(path, sizeof(path), "%s/ann.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 100, e.dur = 50;
	kx_kxp_add_ioctl(w, &e, NULL);
	kx_kxp_add_ann(w, &a, "step", "");
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	CHECK(why == NULL);

	/* Annotation ranges and device jobs stream: a range's device time is
	 * given by the jobs its calls submitted as jobflow counts them. */
	snprintf(path, sizeof(path), "%s/annjob.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	{
		struct kx_ann p = {.tid = 5,
		                   .pid = 5,
		                   .ts = 300,
		                   .begin = 300,
		                   .depth = 1,
		                   .what = KX_ANN_PUSH};
		struct kx_job j = {.ts = 420,
		                   .tid = 5,
		                   .pid = 5,
		                   .src = KX_JOB_SRC_BLOCK,
		                   .phase = KX_JOB_QUEUE};

		kx_kxp_add_ann(w, &p, "step", "");
		kx_kxp_add_job(w, &j);
		e.ts = 400, e.dur = 50;
		kx_kxp_add_ioctl(w, &e, NULL);
		p.what = KX_ANN_POP, p.ts = 500;
		kx_kxp_add_ann(w, &p, "", "");
	}
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (why)
		printf("FAIL in_memory_reasons: ranges with jobs: %s\n", why);
	CHECK(why == NULL);
}

/* The first reason to read into memory ends the streamed read early. */
static void stops_early(void)
{
	static struct kx_capinfo ci;
	static struct kx_sreport sr;
	struct kx_kxp_read_result full;
	/* Pushed before the calls, its record after the 1,000th (later than
	 * the reorder window). */
	struct kx_ann a = {
	        .tid = 5, .pid = 5, .ts = 50, .begin = 50, .depth = 1, .what = KX_ANN_PUSH};
	struct kx_store *s = kx_store_new((size_t)1 << 30);
	char path[128], err[512];
	struct kx_kxp_writer *w;
	int rc;

	CHECK(s);
	snprintf(path, sizeof(path), "%s/early.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	for (uint64_t i = 0; i < 400000; i++) {
		struct kx_ioctl e = {
		        .pid = 5, .tid = 5, .drv = 1, .cmd = 0x4001, .arg_off = KX_NO_ARG};

		e.ts = 100 + i * 1000 + (i * 7919 % 13);
		if (i == 1000)
			kx_kxp_add_ann(w, &a, "first", "");
		e.dur = 100 + i % 700;
		kx_kxp_add_ioctl(w, &e, NULL);
	}
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	rc = kx_kxp_read(path, s, &ci, &full, err, sizeof(err));
	kx_store_free(s);
	CHECK(rc == 0 && full.chunks > 8);
	CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
	rc = sr.in_memory && strstr(sr.in_memory, "annotation") && sr.res.chunks < full.chunks;
	if (!rc)
		printf("FAIL stops_early: %llu of %llu chunks read\n",
		       (unsigned long long)sr.res.chunks, (unsigned long long)full.chunks);
	kx_sreport_free(&sr);
	CHECK(rc);
}

/* A KVM exit of vCPU thread tid at ts (phase DONE: the exit to user space). */
static void kvm_exit(struct kx_store *s, uint32_t tid, uint64_t ts, int phase)
{
	struct kx_job j = {.ts = ts,
	                   .ctx = tid,
	                   .pid = 7,
	                   .tid = tid,
	                   .src = KX_JOB_SRC_KVM,
	                   .phase = (uint8_t)phase};

	kx_store_add_job(s, &j);
}

/*
 * nthreads vCPU threads of nruns KVM_RUNs each (overlapping across threads),
 * written as a recorder writes them: runs with intermediate exits, runs
 * without an exit, two exits inside one run (a duplicate), exits between
 * runs (in none), an exit inside another call of the thread; long_ns > 0:
 * thread 100's first run lasts that long (its exit at its end).
 */
static int write_kvm(const char *path, int nthreads, uint64_t nruns, uint64_t long_ns)
{
	static struct kx_capinfo ci;
	struct kx_store *s = kx_store_new((size_t)1 << 30);
	int rc;

	if (!s)
		return -1;
	for (int k = 0; k < nthreads; k++) {
		uint32_t tid = 100 + (uint32_t)k;
		uint64_t t = 1000000 + (uint64_t)k * 1777;

		for (uint64_t i = 0; i < nruns; i++) {
			uint64_t dur = 2000 + (i * 7919 + (uint64_t)k * 31) % 50000;
			struct kx_ioctl e = {.ts = t,
			                     .dur = dur,
			                     .pid = 7,
			                     .tid = tid,
			                     .drv = KX_DRV_KVM,
			                     .cmd = KX_KVM_RUN_CMD,
			                     .arg_off = KX_NO_ARG};

			if (i == 0 && long_ns && k == 0)
				e.dur = dur = long_ns;
			kx_store_add_ioctl(s, &e, NULL);
			if (i % 5 == 1)
				kvm_exit(s, tid, t + dur / 3, KX_JOB_RUN);
			if (i % 17 != 3)
				kvm_exit(s, tid, t + dur - 100, KX_JOB_DONE);
			if (i % 23 == 5)
				kvm_exit(s, tid, t + dur - 50, KX_JOB_DONE);
			t += dur + 500 + i % 300;
			if (i % 29 == 7)
				kvm_exit(s, tid, t - 200, KX_JOB_DONE);
			if (i % 31 == 9) {
				/* another call of the thread, an exit inside it */
				e.cmd = 0xae81u, e.ts = t, e.dur = 3000;
				kx_store_add_ioctl(s, &e, NULL);
				kvm_exit(s, tid, t + 1000, KX_JOB_DONE);
				t += 3500;
			}
		}
	}
	rc = write_kxp(path, s, &ci, L_RECORDED);
	kx_store_free(s);
	return rc;
}

/* The figures of a KVM job capture's device timelines, paired as the
 * records pass: the in-memory report's (duplicates, exits in no run, runs
 * without an exit; rings past KX_JOBFLOW_EXACT jobs with percentiles within
 * 1/256), and no job record kept. */
static void kvm_streamed(void)
{
	static struct kx_sreport sr;
	char path[128], err[512], msg[512];
	const char *why;
	int sizes[2][2] = {{3, 2000}, {2, 20000}};

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/kvm%d.kxp", tmpdir, i);
		CHECK(write_kvm(path, sizes[i][0], (uint64_t)sizes[i][1], 0) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL kvm_streamed: %s: %s\n", path, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		/* Jobs not kept (before: every job record in the side store). */
		if (!sr.timelines || kx_store_job_count(sr.side))
			printf("FAIL kvm_streamed: %llu job records kept\n",
			       (unsigned long long)kx_store_job_count(sr.side));
		CHECK(sr.timelines && !kx_store_job_count(sr.side));
		CHECK(sr.flow_jobs > (uint64_t)sizes[i][0] * (uint64_t)sizes[i][1] * 9 / 10);
		kx_sreport_free(&sr);
	}
}

/* A KVM_RUN longer than the streamed timelines' window: its job comes after
 * later jobs were counted, so the file is read into memory (the same report). */
static void kvm_late(void)
{
	char path[128], msg[512];
	const char *why;

	snprintf(path, sizeof(path), "%s/kvmlate.kxp", tmpdir);
	CHECK(write_kvm(path, 2, 100000, 3 * KX_JOBFLOW_WINDOW_NS) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (!why || !strstr(why, "KVM_RUN ran longer"))
		printf("FAIL kvm_late: %s\n", why ? why : "streamed");
	CHECK(why && strstr(why, "KVM_RUN ran longer"));
}

/* Exits of one thread out of time order inside one KVM_RUN: which makes
 * the job is the builder's time order, which the exits waiting for their
 * KVM_RUN keep: streamed, the in-memory report; so is an exit written after
 * later KVM_RUNs of its thread (found among its last calls), and one
 * written after a later exit of its thread (exits are paired once a call
 * begins KX_JOBFLOW_EXIT_WAIT_NS after them). One written after a later
 * exit of its thread was paired is a stated reason. */
static void kvm_exits_unordered(void)
{
	static struct kx_capinfo ci;
	struct kx_ioctl e = {.ts = 1000,
	                     .dur = 5000,
	                     .pid = 7,
	                     .tid = 100,
	                     .drv = KX_DRV_KVM,
	                     .cmd = KX_KVM_RUN_CMD,
	                     .arg_off = KX_NO_ARG};
	struct kx_job j = {.ts = 4000,
	                   .ctx = 100,
	                   .pid = 7,
	                   .tid = 100,
	                   .src = KX_JOB_SRC_KVM,
	                   .phase = KX_JOB_DONE};
	char path[128], err[256], msg[512];
	struct kx_kxp_writer *w;
	const char *why;

	snprintf(path, sizeof(path), "%s/kvmorder.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	kx_kxp_add_job(w, &j);
	j.ts = 3000;
	kx_kxp_add_job(w, &j);
	kx_kxp_add_ioctl(w, &e, NULL);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL kvm_exits_unordered: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);

	/* An exit written after two later KVM_RUNs of its thread: its KVM_RUN
	 * is found among the thread's last calls, streamed. */
	snprintf(path, sizeof(path), "%s/kvmlast.kxp", tmpdir);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	e.ts = 1000;
	e.dur = 5000;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 7000;
	e.dur = 1000;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 9000;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 11000;
	kx_kxp_add_ioctl(w, &e, NULL);
	j.ts = 4000;
	kx_kxp_add_job(w, &j);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL kvm_exits_unordered: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);

	/* An exit written after a later exit of its thread and a call after
	 * both: streamed (before, a reason) while that call begins within
	 * KX_JOBFLOW_EXIT_WAIT_NS of the later exit; one beginning later
	 * pairs it first: a stated reason. */
	for (int far = 0; far < 2; far++) {
		snprintf(path, sizeof(path), "%s/kvmafter%d.kxp", tmpdir, far);
		w = kx_kxp_create(path, &ci, err, sizeof(err));
		CHECK(w);
		e.ts = 1000;
		e.dur = 5000;
		kx_kxp_add_ioctl(w, &e, NULL);
		e.ts = 7000;
		e.dur = 1000;
		kx_kxp_add_ioctl(w, &e, NULL);
		e.ts = 9000;
		kx_kxp_add_ioctl(w, &e, NULL);
		j.ts = 8500;
		kx_kxp_add_job(w, &j);
		e.ts = far ? 8500 + KX_JOBFLOW_EXIT_WAIT_NS + 1 : 11000;
		kx_kxp_add_ioctl(w, &e, NULL);
		e.ts += 2000; /* the call before it leaves the reorder stage */
		kx_kxp_add_ioctl(w, &e, NULL);
		j.ts = 4000;
		kx_kxp_add_job(w, &j);
		CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
		CHECK(compare(path, &why, msg, sizeof(msg)));
		if (far ? !why || !strstr(why, "KVM exit came after a later exit") : why != NULL)
			printf("FAIL kvm_exits_unordered: %s: %s\n", path, why ? why : "streamed");
		CHECK(far ? why && strstr(why, "KVM exit came after a later exit") : !why);
	}
}

/* KVM_RUN i (10 us apart, 9 us long) of vCPU thread 100 fed to f, or its
 * exit (DONE) 200 ns before its end. */
static int kvm_run_fed(struct kx_jobflow *f, uint64_t i)
{
	struct kx_ioctl e = {.ts = 1000000 + i * 10000,
	                     .dur = 9000,
	                     .pid = 7,
	                     .tid = 100,
	                     .drv = KX_DRV_KVM,
	                     .cmd = KX_KVM_RUN_CMD,
	                     .arg_off = KX_NO_ARG};

	return kx_jobflow_ioctl(f, &e);
}

static int kvm_exit_fed(struct kx_jobflow *f, uint64_t i)
{
	struct kx_job j = {.ts = 1000000 + i * 10000 + 8800,
	                   .ctx = 100,
	                   .pid = 7,
	                   .tid = 100,
	                   .src = KX_JOB_SRC_KVM,
	                   .phase = KX_JOB_DONE};

	return kx_jobflow_job(f, &j);
}

/*
 * n KVM_RUNs of one thread, each exit fed after its call; every 100th
 * exit written late, after the next two calls and the next exit: jobs
 * made and linked, none a duplicate. Returns the jobs' figures' reason
 * (NULL: exact) in *why; 0, or -1 when out of memory.
 */
static int kvm_flow(struct kx_jobflow *f, uint64_t n, const char **why, uint64_t *jobs,
                    uint64_t *linked)
{
	struct kx_store *mem = kx_store_new(0);
	struct kx_jobs *o = NULL;
	int rc = mem ? 0 : -1;

	for (uint64_t i = 0; i < n && !rc; i++) {
		rc |= kvm_run_fed(f, i);
		if (i % 100 == 52)
			rc |= kvm_exit_fed(f, i - 2); /* after call i and exit i - 1 */
		if (i % 100 != 50)
			rc |= kvm_exit_fed(f, i);
	}
	if (!rc)
		o = kx_jobflow_finish(f, mem, NULL);
	*why = f->why;
	*jobs = o && o->nrings ? o->rings[0].njobs : 0;
	*linked = o && o->nrings ? o->rings[0].linked : 0;
	if (o && o->anom.duplicate)
		rc = -1;
	kx_jobs_free(o);
	kx_store_free(mem);
	return rc || (!o && !f->why) ? -1 : 0;
}

/*
 * KVM exits waiting on their thread: each call looks at its front only
 * while it is old enough, a late exit finds its place by a short walk back,
 * so the steps over them stay O(calls + exits) (here 20,000 runs with
 * about 5,000 exits waiting the 50 ms at once: the reverted scan took
 * about 10^8 steps), and exits written late stream. Past the budget (here
 * lowered to 1) the exits waiting for the 50 ms are paired at once, so a
 * late one is a reason that says so; exits waiting for their KVM_RUN past
 * it are a reason that states the budget. Before: an exit written after
 * a later exit of its thread was paired was a reason at once.
 */
static void kvm_exits_steps(void)
{
	const uint64_t n = 20000;
	struct kx_jobflow f;
	uint64_t jobs, linked;
	const char *why;
	int rc;

	kx_jobflow_init(&f, NULL);
	rc = kvm_flow(&f, n, &why, &jobs, &linked);
	printf("  %llu runs: %llu steps over waiting exits; %llu jobs (%llu linked)\n",
	       (unsigned long long)n, (unsigned long long)f.exits_seen, (unsigned long long)jobs,
	       (unsigned long long)linked);
	if (why)
		printf("FAIL kvm_exits_steps: %s\n", why);
	CHECK(rc == 0 && !why && jobs == n && linked == n);
	CHECK(f.exits_seen > n && f.exits_seen <= 4 * 2 * n);
	kx_jobflow_free(&f);

	kx_jobflow_init(&f, NULL);
	f.lim.exits = 1;
	rc = kvm_flow(&f, n, &why, &jobs, &linked);
	if (!why || !strstr(why, "when more than 65536 exits wait"))
		printf("FAIL kvm_exits_steps: budget: %s\n", why ? why : "exact");
	CHECK(rc == 0 && why && strstr(why, "KVM exit came after a later exit") &&
	      strstr(why, "when more than 65536 exits wait"));
	kx_jobflow_free(&f);

	kx_jobflow_init(&f, NULL);
	f.lim.exits = 1;
	rc = kvm_run_fed(&f, 0);
	for (uint64_t i = 0; i < 9; i++)
		rc |= kvm_exit_fed(&f, 0);
	if (!f.why || !strstr(f.why, "more than 65536"))
		printf("FAIL kvm_exits_steps: open: %s\n", f.why ? f.why : "exact");
	CHECK(rc == 0 && f.why && strstr(f.why, "too many KVM exits waiting") &&
	      strstr(f.why, "more than 65536"));
	kx_jobflow_free(&f);
}

/* ---- block requests ---- */

/* A record of a generated capture (block requests, GPU jobs, ranges):
 * written at .at (a call's return, an event's time plus the recorder's
 * lag). */
/* Block request phase on loop0 (7:0), sector seqno, by tid, written lag ns late. */
static void blk_ev(struct aj_list *l, uint64_t ts, uint64_t sector, uint32_t tid, int phase,
                   uint64_t lag)
{
	struct aj_rec r = {.at = ts + lag, .kind = 1};

	r.j = (struct kx_job){.ts = ts,
	                      .seqno = sector,
	                      .aux = 4096,
	                      .dev = 7u << 20,
	                      .pid = tid ? 50 : 0,
	                      .tid = tid,
	                      .src = KX_JOB_SRC_BLOCK,
	                      .phase = (uint8_t)phase};
	snprintf(r.j.ring, sizeof(r.j.ring), "loop0");
	aj_add(l, &r);
}

/* A loop driver call of tid (written at its return). */
static void blk_call(struct aj_list *l, uint64_t ts, uint64_t dur, uint32_t tid)
{
	struct aj_rec r = {.at = ts + dur};

	r.e = (struct kx_ioctl){.ts = ts,
	                        .dur = dur,
	                        .pid = 50,
	                        .tid = tid,
	                        .dev = 7u << 20,
	                        .drv = KX_DRV_LOOP,
	                        .cmd = 0x4c82,
	                        .arg_off = KX_NO_ARG};
	aj_add(l, &r);
}

/* A KVM_RUN of tid from ts for dur ns (written at its return). */
static void kvm_run(struct aj_list *l, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct aj_rec r = {.at = ts + dur};

	r.e = (struct kx_ioctl){.ts = ts,
	                        .dur = dur,
	                        .pid = 7,
	                        .tid = tid,
	                        .drv = KX_DRV_KVM,
	                        .cmd = KX_KVM_RUN_CMD,
	                        .arg_off = KX_NO_ARG};
	aj_add(l, &r);
}

/* A KVM exit (DONE) of tid at ts, written at `at`. */
static void kvm_exit_at(struct aj_list *l, uint32_t tid, uint64_t ts, uint64_t at)
{
	struct aj_rec r = {.at = at, .kind = 1};

	r.j = (struct kx_job){.ts = ts,
	                      .ctx = tid,
	                      .pid = 7,
	                      .tid = tid,
	                      .src = KX_JOB_SRC_KVM,
	                      .phase = KX_JOB_DONE};
	aj_add(l, &r);
}

/*
 * Two vCPU threads of 3,000 KVM_RUNs each (a second exit in some runs,
 * exits between runs), every 13th run's exit written late: after the
 * return of the third KVM_RUN after it (so the run after it has left the
 * reorder stage, and the exit of that run was paired before). Streamed,
 * the in-memory report, no reason. Before: read whole ("a KVM exit came
 * after a later exit of its thread was paired").
 */
static void kvm_exits_late_stream(void)
{
	enum { NRUNS = 3000 };
	static uint64_t start[NRUNS + 1];
	struct aj_list l = {0};
	char path[128], msg[512];
	const char *why;

	for (uint32_t k = 0; k < 2; k++) {
		uint32_t tid = 100 + k;

		start[0] = 1000000 + k * 1777;
		for (uint64_t i = 0; i < NRUNS; i++)
			start[i + 1] =
			        start[i] + 2000 + (i * 7919 + k * 31) % 50000 + 500 + i % 300;
		for (uint64_t i = 0; i < NRUNS; i++) {
			uint64_t dur = start[i + 1] - start[i] - 500 - i % 300;
			uint64_t at = start[i] + dur - 100;
			struct aj_rec r = {.at = start[i] + dur, .kind = 0};

			r.e = (struct kx_ioctl){.ts = start[i],
			                        .dur = dur,
			                        .pid = 7,
			                        .tid = tid,
			                        .drv = KX_DRV_KVM,
			                        .cmd = KX_KVM_RUN_CMD,
			                        .arg_off = KX_NO_ARG};
			aj_add(&l, &r);
			if (i % 13 == 4 && i + 3 < NRUNS)
				at = start[i + 4] - 500 - (i + 3) % 300 +
				     1; /* KVM_RUN i + 3 returned */
			kvm_exit_at(&l, tid, start[i] + dur - 100, at);
			if (i % 23 == 5)
				kvm_exit_at(&l, tid, start[i] + dur - 50, start[i] + dur - 50);
			if (i % 29 == 7)
				kvm_exit_at(&l, tid, start[i + 1] - 200, start[i + 1] - 200);
		}
	}
	snprintf(path, sizeof(path), "%s/kvmlatestream.kxp", tmpdir);
	CHECK(aj_write(path, &l) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL kvm_exits_late_stream: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
}

/* A call of tid (an xe exec) and a dma_fence job on the ring of no name
 * that it submits, from ts on: the ring's device is xe's. */
static void fence_linked(struct aj_list *l, uint64_t ts, uint32_t tid)
{
	struct aj_rec r = {.at = ts + 1000};

	r.e = (struct kx_ioctl){.ts = ts,
	                        .dur = 1000,
	                        .pid = 60,
	                        .tid = tid,
	                        .dev = 226u << 20 | 128,
	                        .drv = KX_DRV_XE,
	                        .cmd = 0x40386449u, /* DRM_IOCTL_XE_EXEC */
	                        .arg_off = KX_NO_ARG};
	aj_add(l, &r);
	r = (struct aj_rec){.at = ts + 100, .kind = 1};
	r.j = (struct kx_job){.ts = r.at,
	                      .ctx = 6,
	                      .seqno = 1,
	                      .pid = 60,
	                      .tid = tid,
	                      .src = KX_JOB_SRC_DMA_FENCE,
	                      .phase = KX_JOB_QUEUE};
	aj_add(l, &r);
	r.at = r.j.ts = ts + 5000;
	r.j.phase = KX_JOB_DONE;
	r.j.tid = r.j.pid = 0;
	aj_add(l, &r);
}

/* n dma_fence jobs (DONE only) no call submitted on one ring from ts on:
 * its device is learnt at the end. */
static void fence_unlinked(struct aj_list *l, uint64_t n, uint64_t ts)
{
	for (uint64_t i = 0; i < n; i++) {
		struct aj_rec r = {.at = ts + i * 10, .kind = 1};

		r.j = (struct kx_job){.ts = r.at,
		                      .ctx = 5,
		                      .seqno = i + 1,
		                      .src = KX_JOB_SRC_DMA_FENCE,
		                      .phase = KX_JOB_DONE};
		aj_add(l, &r);
	}
}

/*
 * nthreads threads of nreq requests each on loop0, as the loop driver's
 * stand-in makes them: a call of the thread that queues the request
 * (linked), its RUN from a worker, its DONE at the call's end or later;
 * job records written up to lag ns late (out of time order in the file); a
 * thread that never makes a call issues requests directly (RUN, no QUEUE);
 * sectors reused; repeated DONEs; a DONE of a request older than the
 * capture; requests left open at the end.
 */
static void blk_requests(struct aj_list *l, int nthreads, uint64_t nreq, uint64_t lag)
{
	blk_ev(l, 900, 77777777, 0, KX_JOB_DONE, 0); /* queued before the capture */
	for (int k = 0; k < nthreads; k++) {
		uint32_t tid = 200 + (uint32_t)k;
		uint64_t t = 1000 + (uint64_t)k * 3331;

		for (uint64_t i = 0; i < nreq; i++) {
			uint64_t dur = 3000 + (i * 7919 + (uint64_t)k * 131) % 40000;
			uint64_t sector = ((uint64_t)k << 32) + (i * 8) % 400000;
			uint64_t jit = lag ? (i * 2654435761u) % lag : 0;

			blk_call(l, t, dur, tid);
			/* Written in its task before the call returns, as a recorder does. */
			blk_ev(l, t + dur / 4, sector, tid, KX_JOB_QUEUE, jit % (dur / 2));
			blk_ev(l, t + dur / 2, sector, 0, KX_JOB_RUN, jit / 2);
			if (i + 3 >= nreq && k == 0) { /* open at the end: incomplete */
				t += dur + 200;
				continue;
			}
			blk_ev(l, t + dur - 10 + (i % 5 == 0) * 20000, sector, 0, KX_JOB_DONE,
			       jit / 3);
			if (i % 41 == 7)
				blk_ev(l, t + dur + 30 + (i % 5 == 0) * 20000, sector, 0,
				       KX_JOB_DONE, 0);
			t += dur + 200 + i % 700;
		}
	}
	/* The thread that makes no call: direct requests. */
	for (uint64_t i = 0, t = 5000; i < nreq / 4; i++, t += 9000) {
		uint64_t sector = ((uint64_t)99 << 32) + (i * 16) % 4000;

		blk_ev(l, t, sector, 900, KX_JOB_RUN, 0);
		blk_ev(l, t + 4000 + i % 3000, sector, 0, KX_JOB_DONE, 0);
	}
}

/* Block captures stream with their device timelines paired as the records
 * pass (records out of time order within the window, sectors reused and
 * forgotten, repeated DONEs, direct and incomplete requests): the
 * in-memory report's figures, no job record kept. */
static void block_streamed(void)
{
	static struct kx_sreport sr;
	char path[128], err[512], msg[512];
	struct aj_list l = {0};
	uint64_t sizes[2][2] = {{3, 3000}, {3, 60000}};
	const char *why;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/blk%d.kxp", tmpdir, i);
		blk_requests(&l, (int)sizes[i][0], sizes[i][1], 300000);
		CHECK(aj_write(path, &l) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL block_streamed: %s: %s\n", path, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		/* Before: every job record kept in the side store. */
		if (!sr.timelines || kx_store_job_count(sr.side))
			printf("FAIL block_streamed: %llu job records kept\n",
			       (unsigned long long)kx_store_job_count(sr.side));
		CHECK(sr.timelines && !kx_store_job_count(sr.side));
		CHECK(sr.flow_jobs > sizes[i][0] * sizes[i][1]);
		CHECK(sr.timelines->anom.duplicate > 0 && sr.timelines->anom.incomplete == 3 &&
		      sr.timelines->anom.no_queue == 1);
		CHECK(sr.timelines->ndevs == 1 && sr.timelines->devs[0].linked > 0 &&
		      sr.timelines->devs[0].linked < sr.timelines->devs[0].njobs);
		kx_sreport_free(&sr);
	}
}

/* Each case the streamed block timelines cannot give exactly: the file is
 * read into memory, for that reason (and the same report). */
static void block_reasons(void)
{
	static const char *const want[] = {
	        "out of time order",      "taken as never done", "a call came after",
	        "may have closed before", "wait phase came",     "too many device jobs open",
	};
	char path[128], msg[512];
	const char *why;

	for (int c = 0; c < (int)(sizeof(want) / sizeof(*want)); c++) {
		struct aj_list l = {0};

		blk_requests(&l, 1, 200, 0);
		switch (c) {
		case 0: /* a record written 3 windows late, after one 2 windows on */
			blk_ev(&l, 2 * KX_JOBFLOW_WINDOW_NS, 6, 0, KX_JOB_DONE, 0);
			blk_ev(&l, 500, 5, 0, KX_JOB_DONE, 3 * KX_JOBFLOW_WINDOW_NS);
			break;
		case 1: /* a request open while more than KX_JOBFLOW_BEHIND later ones
		         * complete (on 1000 sectors: the forgotten ones told apart) */
			blk_ev(&l, 950, 123, 0, KX_JOB_RUN, 0);
			for (uint64_t i = 0; i < KX_JOBFLOW_BEHIND + 4000; i++) {
				blk_ev(&l, 2000000 + i * 10, 1000000 + i % 1000, 0, KX_JOB_RUN, 0);
				blk_ev(&l, 2000005 + i * 10, 1000000 + i % 1000, 0, KX_JOB_DONE, 0);
			}
			blk_ev(&l, 2 * KX_JOBFLOW_WINDOW_NS, 123, 0, KX_JOB_DONE, 0);
			break;
		case 2: /* a call of 3 windows, its request paired before it returns */
			blk_call(&l, 900000, 3 * KX_JOBFLOW_WINDOW_NS, 700);
			blk_ev(&l, 900100, 4242, 700, KX_JOB_QUEUE, 0);
			blk_ev(&l, 900200, 4242, 0, KX_JOB_DONE, 0);
			blk_ev(&l, 2 * KX_JOBFLOW_WINDOW_NS, 6, 0, KX_JOB_DONE, 0);
			break;
		case 3: /* a DONE on a key unknown once many keys were forgotten */
			for (uint64_t i = 0; i < 3 * KX_JOBFLOW_CLOSED; i++)
				blk_ev(&l, 2000000 + i * 10, 1000000 + i, 0, KX_JOB_DONE, 0);
			blk_ev(&l, 3 * KX_JOBFLOW_WINDOW_NS, 999, 0, KX_JOB_DONE, 0);
			break;
		case 4: /* a wait phase on a request counted already */
			blk_ev(&l, 9000000, 8, 300, KX_JOB_WAIT_BEGIN, 0);
			break;
		default: /* requests queued, never run or done */
			for (uint64_t i = 0; i < KX_JOBFLOW_OPEN + 10; i++)
				blk_ev(&l, 9000000 + i, 5000000 + i, 0, KX_JOB_QUEUE, 0);
		}
		snprintf(path, sizeof(path), "%s/blkwhy%d.kxp", tmpdir, c);
		CHECK(aj_write(path, &l) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || !why || !strstr(why, want[c]))
			printf("FAIL block_reasons: %d: %s\n", c, why ? why : "streamed");
		CHECK(compare(path, &why, msg, sizeof(msg)) && why && strstr(why, want[c]));
	}
}

/* A request open while more later ones complete than the stream holds
 * when none is open (KX_JOBFLOW_HELD), fewer than it holds behind one
 * (KX_JOBFLOW_BEHIND): streamed, the in-memory report (before, a reason). */
static void block_behind_streams(void)
{
	struct aj_list l = {0};
	char path[128], msg[512];
	const char *why;

	blk_requests(&l, 1, 200, 0);
	blk_ev(&l, 950, 123, 0, KX_JOB_RUN, 0);
	for (uint64_t i = 0; i < KX_JOBFLOW_HELD + 4000; i++) {
		blk_ev(&l, 2000000 + i * 10, 1000000 + i % 1000, 0, KX_JOB_RUN, 0);
		blk_ev(&l, 2000005 + i * 10, 1000000 + i % 1000, 0, KX_JOB_DONE, 0);
	}
	blk_ev(&l, 2 * KX_JOBFLOW_WINDOW_NS, 123, 0, KX_JOB_DONE, 0);
	snprintf(path, sizeof(path), "%s/blkbehind.kxp", tmpdir);
	CHECK(aj_write(path, &l) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL block_behind_streams: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	unlink(path);
}

/* ---- GPU jobs of a per-driver source ---- */

#define XE_EXEC 0x40386449u /* DRM_IOCTL_XE_EXEC */
#define XE_WAIT 0xc048644au /* DRM_IOCTL_XE_WAIT_USER_FENCE */

/* An xe job phase on exec queue ctx, seqno, by tid, written lag ns late. */
static void xe_ev(struct aj_list *l, uint64_t ts, uint64_t ctx, uint64_t seqno, uint32_t tid,
                  int phase, uint64_t lag)
{
	struct aj_rec r = {.at = ts + lag, .kind = 1};

	r.j = (struct kx_job){.ts = ts,
	                      .ctx = ctx,
	                      .seqno = seqno,
	                      .pid = tid ? 60 : 0,
	                      .tid = tid,
	                      .src = KX_JOB_SRC_XE,
	                      .phase = (uint8_t)phase};
	aj_add(l, &r);
}

/* An xe call (cmd) of tid, written at its return. */
static void xe_call(struct aj_list *l, uint64_t ts, uint64_t dur, uint32_t tid, uint32_t cmd)
{
	struct aj_rec r = {.at = ts + dur};

	r.e = (struct kx_ioctl){.ts = ts,
	                        .dur = dur,
	                        .pid = 60,
	                        .tid = tid,
	                        .dev = 226u << 20 | 128,
	                        .drv = KX_DRV_XE,
	                        .cmd = cmd,
	                        .arg_off = KX_NO_ARG};
	aj_add(l, &r);
}

/* A dma_fence job on ring "gfx" (fence context 1000 + seqno's first
 * digit), queued by tid at ts, signalled at done. */
static void fence_job(struct aj_list *l, uint64_t ts, uint64_t seqno, uint32_t tid, uint64_t done)
{
	struct aj_rec r = {.at = ts, .kind = 1};

	r.j = (struct kx_job){.ts = ts,
	                      .ctx = 1000 + seqno / 1000000,
	                      .seqno = seqno,
	                      .pid = tid ? 60 : 0,
	                      .tid = tid,
	                      .src = KX_JOB_SRC_DMA_FENCE,
	                      .phase = KX_JOB_QUEUE};
	snprintf(r.j.ring, sizeof(r.j.ring), "gfx");
	aj_add(l, &r);
	r.at = r.j.ts = done;
	r.j.phase = KX_JOB_DONE;
	r.j.tid = r.j.pid = 0;
	aj_add(l, &r);
}

/*
 * nthreads threads of njobs xe jobs each, as the driver reports them: an
 * exec call queues the job (linked), a worker runs it, the IRQ signals it
 * after the call returned, a waiter thread waits across every third DONE
 * (the waiter); records up to lag ns late; a DONE reported twice, a RUN
 * after DONE (out of order), a kernel thread's jobs (no call: unlinked),
 * jobs left open at the end; dma_fence jobs on one ring, a tenth submitted
 * by the exec call, others by none (their device learnt from the first).
 */
static void xe_jobs(struct aj_list *l, int nthreads, uint64_t njobs, uint64_t lag)
{
	for (int k = 0; k < nthreads; k++) {
		uint32_t tid = 300 + (uint32_t)k;
		uint64_t t = 1000 + (uint64_t)k * 2221, q = 2 + (uint64_t)k;

		for (uint64_t i = 0; i < njobs; i++) {
			uint64_t dur = 3000 + (i * 7919 + (uint64_t)k * 131) % 40000,
			         done = t + dur + 5000;
			uint64_t jit = lag ? (i * 2654435761u) % lag : 0;

			xe_call(l, t, dur, tid, XE_EXEC);
			xe_ev(l, t + dur / 4, q, i + 1, tid, KX_JOB_QUEUE, jit % (dur / 2));
			/* Every 53rd run reported after its DONE: out of order. */
			xe_ev(l, i % 53 == 11 ? done + 60 : t + dur / 2, q, i + 1, 0, KX_JOB_RUN,
			      jit / 2);
			if (i + 2 >= njobs && k == 0) {
				t += dur + 200;
				continue;
			}
			xe_ev(l, done, q, i + 1, 0, KX_JOB_DONE, jit / 3);
			if (i % 41 == 7)
				xe_ev(l, done + 30, q, i + 1, 0, KX_JOB_DONE, 0);
			if (i % 3 == 0)
				xe_call(l, done - 3000, 5000, tid + 100, XE_WAIT);
			if (k == 0 && i % 10 == 0) /* a fence the exec submitted */
				fence_job(l, t + dur / 3, i, tid, t + dur + 100);
			if (k == 0 && i % 10 == 5) /* one no call submitted: the ring's driver */
				fence_job(l, t + dur / 3, 1000000 + i, 0, t + dur + 7000);
			t += dur + 200 + i % 700;
		}
	}
	for (uint64_t i = 0, t = 7000; i < njobs / 8; i++, t += 30000) {
		xe_ev(l, t, 50, i + 1, 900, KX_JOB_QUEUE, 0);
		xe_ev(l, t + 4000, 50, i + 1, 0, KX_JOB_DONE, 0);
	}
}

/* xe captures stream with their device timelines paired as the records pass
 * (waiters, duplicates, out-of-order phases, unlinked and incomplete jobs):
 * the in-memory report's figures, no job record kept. */
static void gpu_streamed(void)
{
	static struct kx_sreport sr;
	char path[128], err[512], msg[512];
	struct aj_list l = {0};
	uint64_t sizes[2][2] = {{2, 2000}, {2, 40000}};
	const char *why;

	for (int i = 0; i < 2; i++) {
		const struct kx_jobs_anomalies *an;
		uint64_t waited = 0;
		int gfx = 0;

		snprintf(path, sizeof(path), "%s/xe%d.kxp", tmpdir, i);
		xe_jobs(&l, (int)sizes[i][0], sizes[i][1], 300000);
		CHECK(aj_write(path, &l) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL gpu_streamed: %s: %s\n", path, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		/* Before: every job record kept in the side store. */
		if (!sr.timelines || kx_store_job_count(sr.side))
			printf("FAIL gpu_streamed: %llu job records kept\n",
			       (unsigned long long)kx_store_job_count(sr.side));
		CHECK(sr.timelines && !kx_store_job_count(sr.side));
		an = &sr.timelines->anom;
		CHECK(an->duplicate > 0 && an->out_of_order > 0 && an->unlinked > 0 &&
		      an->incomplete == 2);
		for (size_t r = 0; r < sr.timelines->nrings; r++) {
			const struct kx_jobring *g = &sr.timelines->rings[r];

			waited += g->waited;
			/* The fences no call submitted are on the exec's device. */
			if (!strcmp(g->name, "gfx"))
				gfx = g->njobs == sizes[i][1] / 5 &&
				      g->linked == sizes[i][1] / 10 &&
				      !strcmp(sr.timelines->devs[g->dev].name, "xe");
		}
		CHECK(waited > sizes[i][0] * sizes[i][1] / 4 && gfx);
		kx_sreport_free(&sr);
	}
}

/* A wait call that returned before the first GPU record, the last call of
 * its thread, with a DONE inside it written late: it waits in the device
 * timelines' reorder stage until that DONE is paired, so it is kept and is
 * the job's waiter, streamed. */
static void waits_held_stream(void)
{
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	xe_jobs(&l, 1, 200, 0);
	xe_call(&l, 100, 1100, 778, XE_WAIT);
	xe_ev(&l, 1100, 9, 1, 0, KX_JOB_DONE, 5000);
	snprintf(path, sizeof(path), "%s/xeheld.kxp", tmpdir);
	CHECK(aj_write(path, &l) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL waits_held_stream: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
}

/* A job record written after later calls of its task (its submitting
 * call and 2 later ones returned before it was written): its candidate is
 * found among the task's last 8 calls, streamed, the in-memory report;
 * after 10 later calls, a stated reason. */
static void record_after_calls(void)
{
	char path[128], msg[512];
	const char *why;

	for (int later = 2; later <= 10; later += 8) {
		struct aj_list l = {0};

		xe_jobs(&l, 1, 200, 0);
		xe_call(&l, 1000, 100, 990, XE_EXEC);
		for (int k = 0; k < later; k++)
			xe_call(&l, 2000 + (uint64_t)k * 300, 100, 990, XE_WAIT);
		xe_ev(&l, 1050, 77, 1, 990, KX_JOB_QUEUE, 9000);
		xe_ev(&l, 1600, 77, 1, 0, KX_JOB_DONE, 8500);
		snprintf(path, sizeof(path), "%s/xerecent%d.kxp", tmpdir, later);
		CHECK(aj_write(path, &l) == 0);
		CHECK(compare(path, &why, msg, sizeof(msg)));
		if (later < 8 ? why != NULL : !why || !strstr(why, "a job record came after"))
			printf("FAIL record_after_calls: %d later calls: %s\n", later,
			       why ? why : "streamed");
		CHECK(later < 8 ? why == NULL : why && strstr(why, "a job record came after"));
	}
}

/* Each case the streamed GPU timelines cannot give exactly: read into memory. */
static void gpu_reasons(void)
{
	static const char *const want[] = {
	        "after its DONE",
	        "a wait call came after",
	};
	char path[128], msg[512];
	const char *why;

	for (int c = 0; c < (int)(sizeof(want) / sizeof(*want)); c++) {
		struct aj_list l = {0};

		xe_jobs(&l, 1, 200, 0);
		switch (c) {
		case 0: /* a DONE again, 3 windows after the first */
			xe_ev(&l, 2 * KX_JOBFLOW_WINDOW_NS, 9, 1, 0, KX_JOB_DONE, 0);
			xe_ev(&l, 3 * KX_JOBFLOW_WINDOW_NS, 2, 1, 0, KX_JOB_DONE, 0);
			xe_ev(&l, 5 * KX_JOBFLOW_WINDOW_NS, 9, 2, 0, KX_JOB_DONE, 0);
			break;
		default: /* a wait from the start that returns 3 windows on, its jobs counted */
			xe_ev(&l, 2 * KX_JOBFLOW_WINDOW_NS, 9, 1, 0, KX_JOB_DONE, 0);
			xe_ev(&l, 3 * KX_JOBFLOW_WINDOW_NS + 1000, 9, 2, 0, KX_JOB_DONE, 0);
			xe_call(&l, 1500, 3 * KX_JOBFLOW_WINDOW_NS, 777, XE_WAIT);
		}
		snprintf(path, sizeof(path), "%s/xewhy%d.kxp", tmpdir, c);
		CHECK(aj_write(path, &l) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || !why || !strstr(why, want[c]))
			printf("FAIL gpu_reasons: %d: %s\n", c, why ? why : "streamed");
		CHECK(compare(path, &why, msg, sizeof(msg)) && why && strstr(why, want[c]));
	}
}

/*
 * An xe job that holds its ring's later jobs back past KX_JOBFLOW_BEHIND
 * (before: a reason, the file read whole) is counted early: never done, it
 * is taken as never done (to the end: its lane is not free again, busy to
 * the end, a job starting at the end takes its lane); done after 40,000
 * later ones (held after its DONE until its key is forgotten, 16,384
 * closes later, behind the records' reorder stage), it is counted then.
 * Streamed, the in-memory report. Its DONE after it was taken as never
 * done, or a capture whose stated end comes before its last records, is
 * a stated reason.
 */
static void gpu_held_behind(void)
{
	static const uint64_t after[] = {0, 40000, 62000, 0};
	static const char *const want[] = {NULL, NULL, "taken as never done", "stated end"};
	static struct kx_sreport sr;
	char path[128], err[512];

	for (int c = 0; c < 4; c++) {
		struct kx_capinfo ci = {.start_mono_ns = 100, .stop_mono_ns = 2000000};
		struct aj_list l = {0};
		uint64_t t = 1000, n = KX_JOBFLOW_BEHIND + 40000;

		xe_call(&l, 500, 1000, 990, XE_EXEC);
		xe_ev(&l, 700, 70, 1, 990, KX_JOB_QUEUE, 0);
		xe_ev(&l, 900, 70, 1, 0, KX_JOB_RUN, 0);
		for (uint64_t i = 0; i < n; i++, t += 3000) {
			xe_call(&l, t, 1000, 991, XE_EXEC);
			xe_ev(&l, t + 200, 70, i + 2, 991, KX_JOB_QUEUE, 0);
			xe_ev(&l, t + 400, 70, i + 2, 0, KX_JOB_RUN, i % 7 * 300);
			xe_ev(&l, t + 2500, 70, i + 2, 0, KX_JOB_DONE, i % 5 * 200);
			if (after[c] && i == after[c])
				xe_ev(&l, t + 2600, 70, 1, 0, KX_JOB_DONE, 0);
		}
		xe_ev(&l, t, 70, n + 2, 0, KX_JOB_RUN, 0); /* at the end, never done */
		snprintf(path, sizeof(path), "%s/xebehind%d.kxp", tmpdir, c);
		CHECK((c == 3 ? aj_write_ci(path, &l, &ci) : aj_write(path, &l)) == 0);
		CHECK(compare_want("gpu_held_behind", c, path, want[c]));
		if (want[c])
			continue;
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		if (sr.flow_unblocked != 1 || sr.flow_held > KX_JOBFLOW_BEHIND + 2)
			printf("FAIL gpu_held_behind: %d: %llu counted early, %zu held\n", c,
			       (unsigned long long)sr.flow_unblocked, sr.flow_held);
		CHECK(sr.timelines && sr.flow_unblocked == 1 &&
		      sr.flow_held <= KX_JOBFLOW_BEHIND + 2);
		CHECK(sr.timelines && sr.timelines->anom.incomplete == (c ? 1u : 2u) &&
		      sr.timelines->rings[0].nlanes == (c ? 2u : 2u));
		kx_sreport_free(&sr);
	}
}

/*
 * Block requests never done (their DONE lost) that hold later ones back
 * past KX_JOBFLOW_BEHIND (before: a reason, the file read whole) are
 * taken as never done, their sectors kept: case 0, every 97th of 45,000
 * requests never done, streams, the in-memory report. 1: the first one's
 * sector used again at the end: a reason (the sectors' budget:
 * test_jobs' test_presumed_budget).
 */
static void block_never_done(void)
{
	static const char *const want[] = {NULL, "taken as never done"};
	static struct kx_sreport sr;
	char path[128], err[512];

	for (int c = 0; c < 2; c++) {
		struct aj_list l = {0};
		uint64_t n = 45000, lost = 0;
		uint64_t t = 2000000, held_lost = 0;

		blk_requests(&l, 1, 200, 0);
		for (uint64_t i = 0; i < n; i++, t += 10) {
			int gone = i % 97 == 5;

			if (gone) {
				blk_ev(&l, t, 5000000 + i, 0, KX_JOB_RUN, 0);
				lost++;
				held_lost += i + KX_JOBFLOW_BEHIND + 1000 < n;
				continue;
			}
			blk_ev(&l, t, 1000000 + i % 1000, 0, KX_JOB_RUN, 0);
			blk_ev(&l, t + 5, 1000000 + i % 1000, 0, KX_JOB_DONE, 0);
		}
		if (c == 1)
			blk_ev(&l, t + 100, 5000005, 0, KX_JOB_QUEUE, 0);
		snprintf(path, sizeof(path), "%s/blklost%d.kxp", tmpdir, c);
		CHECK(aj_write(path, &l) == 0);
		CHECK(compare_want("block_never_done", c, path, want[c]));
		if (want[c])
			continue;
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		if (sr.flow_unblocked < held_lost || sr.flow_held > KX_JOBFLOW_BEHIND + 2)
			printf("FAIL block_never_done: %llu counted early (%llu at least), %zu "
			       "held\n",
			       (unsigned long long)sr.flow_unblocked, (unsigned long long)held_lost,
			       sr.flow_held);
		CHECK(sr.timelines && sr.flow_unblocked >= held_lost && sr.flow_unblocked <= lost &&
		      sr.flow_held <= KX_JOBFLOW_BEHIND + 2);
		CHECK(sr.timelines && sr.timelines->anom.incomplete == 3 + lost);
		kx_sreport_free(&sr);
		unlink(path);
	}
}

/* A job record of a dma_fence job on ring (context ctx), phase, by tid
 * (0: the kernel), at ts. */
static void dmaf_ev(struct aj_list *l, uint64_t ts, uint64_t ctx, uint64_t seqno, uint32_t tid,
                    int phase, const char *ring)
{
	struct aj_rec r = {.at = ts, .kind = 1};

	r.j = (struct kx_job){.ts = ts,
	                      .ctx = ctx,
	                      .seqno = seqno,
	                      .pid = tid ? 60 : 0,
	                      .tid = tid,
	                      .src = KX_JOB_SRC_DMA_FENCE,
	                      .phase = (uint8_t)phase};
	snprintf(r.j.ring, sizeof(r.j.ring), "%s", ring);
	aj_add(l, &r);
}

/* An old gpu_scheduler job's phase (seqno 0: the fence pointer ctx is the
 * key, reused) on ring "comp", no task. */
static void sched_old_ev(struct aj_list *l, uint64_t ts, uint64_t ctx, int phase, uint64_t lag)
{
	struct aj_rec r = {.at = ts + lag, .kind = 1};

	r.j = (struct kx_job){
	        .ts = ts, .ctx = ctx, .src = KX_JOB_SRC_GPU_SCHED, .phase = (uint8_t)phase};
	snprintf(r.j.ring, sizeof(r.j.ring), "comp");
	aj_add(l, &r);
}

/*
 * Shared fence sources' jobs (the device from the submitting call, else
 * from the ring's first linked job) that hold later ones back past
 * KX_JOBFLOW_BEHIND, counted then (before: a reason), streamed, the
 * in-memory report and the exact one: case 0, dma_fence jobs on ring
 * "gfx" whose later jobs are linked, one linked and never done, one the
 * kernel queued (no call) and never done, one done after 40,000 later
 * ones. 1: the kernel's job on a ring that never links ("sdma") waits for
 * its ring's driver as a counted job does, and is counted on the fallback
 * device past that budget. 2: an old gpu_scheduler job (its fence pointer
 * the key, reused) done, held until its key is forgotten while 40,000 KVM
 * jobs (no key) complete, behind a dma_fence job never done.
 */
static void fences_held_behind(void)
{
	static const uint64_t early[] = {3, 3, 2};
	static struct kx_sreport sr;
	char path[128], err[512];

	for (int c = 0; c < 3; c++) {
		struct aj_list l = {0};
		uint64_t t = 2000, n = KX_JOBFLOW_BEHIND + 40000;

		xe_call(&l, 500, 1000, 990, XE_EXEC);
		dmaf_ev(&l, 700, 1000, 1, 990, KX_JOB_QUEUE, "gfx");
		if (c == 1)
			dmaf_ev(&l, 800, 1001, 1, 0, KX_JOB_QUEUE, "sdma");
		else if (!c)
			dmaf_ev(&l, 800, 1000, 2, 0, KX_JOB_QUEUE, "gfx");
		if (c == 2) {
			sched_old_ev(&l, 900, 0xffff880000001000ull, KX_JOB_QUEUE, 0);
			sched_old_ev(&l, 1000, 0xffff880000001000ull, KX_JOB_DONE, 0);
		} else {
			dmaf_ev(&l, 900, 1000, 3, 0, KX_JOB_QUEUE, "gfx");
		}
		for (uint64_t i = 0; i < n; i++, t += 3000) {
			if (c == 2) {
				kvm_run(&l, 100, t, 2000);
				kvm_exit_at(&l, 100, t + 1500, t + 1500);
				continue;
			}
			xe_call(&l, t, 1000, 991, XE_EXEC);
			dmaf_ev(&l, t + 200, 1000, i + 10, 991, KX_JOB_QUEUE, "gfx");
			dmaf_ev(&l, t + 2500, 1000, i + 10, 0, KX_JOB_DONE, "gfx");
			if (i == 40000)
				dmaf_ev(&l, t + 2600, 1000, 3, 0, KX_JOB_DONE, "gfx");
		}
		snprintf(path, sizeof(path), "%s/fencebehind%d.kxp", tmpdir, c);
		CHECK(aj_write(path, &l) == 0);
		CHECK(compare_want("fences_held_behind", c, path, NULL));
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		if (sr.flow_unblocked != early[c] || sr.flow_held > KX_JOBFLOW_BEHIND + 2)
			printf("FAIL fences_held_behind: %d: %llu counted early, %zu held\n", c,
			       (unsigned long long)sr.flow_unblocked, sr.flow_held);
		CHECK(sr.timelines && sr.flow_unblocked == early[c] &&
		      sr.flow_held <= KX_JOBFLOW_BEHIND + 2);
		kx_sreport_free(&sr);
		unlink(path);
	}
}

/*
 * A VM's vCPU exiting every 3 us (KVM jobs, no key) beside its disk's
 * block requests, one a millisecond (case 0), or every 200 us done
 * 30 ms later (1): the requests' records wait for earlier ones within
 * the window while more KVM jobs are made than the sweeps hold, so they
 * must be paired before those are swept past them. Streamed, the
 * in-memory report and the exact one (before: read whole, "a device job
 * started before jobs already counted in start order").
 */
static void kvm_block_sparse(void)
{
	char path[128];

	for (int c = 0; c < 2; c++) {
		struct aj_list l = {0};

		aj_vm_disk(&l, 2000, 3 * KX_JOBFLOW_HELD, c ? 67 : 333, c ? 30000000 : 800);
		snprintf(path, sizeof(path), "%s/kvmblk%d.kxp", tmpdir, c);
		CHECK(aj_write(path, &l) == 0);
		CHECK(compare_want("kvm_block_sparse", c, path, NULL));
		unlink(path);
	}
}

/*
 * A VM's busy vCPU (an exit every 3 us) beside an idle one whose KVM_RUNs
 * last 99 ms (its exit's job is made only once its KVM_RUN returns, and
 * starts at its start): more jobs are made meanwhile than the sweeps hold
 * (16,384), so the idle vCPU's job starts before jobs already swept, and
 * the file is read into memory for that stated reason (the figures those
 * give: the exact ones). A bound of the device sweeps, which take jobs in
 * start order across a device's rings.
 */
static void kvm_idle_vcpu(void)
{
	char path[128];
	struct aj_list l = {0};

	aj_vm_disk(&l, 2000, 3 * KX_JOBFLOW_HELD, 1000000000, 800);
	for (uint64_t t = 2000; t < 3 * KX_JOBFLOW_HELD * 3000ull; t += 100000000) {
		kvm_run(&l, 101, t + 500, 99000000);
		kvm_exit_at(&l, 101, t + 500 + 98999000, t + 500 + 98999000);
	}
	snprintf(path, sizeof(path), "%s/kvmidle.kxp", tmpdir);
	CHECK(aj_write(path, &l) == 0);
	CHECK(compare_want("kvm_idle_vcpu", 0, path,
	                   "a KVM job started before jobs already counted"));
	unlink(path);
}

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Job j of a random capture: block request, xe job, dma_fence job (linked,
 * or the kernel's on another ring), KVM job or old gpu_scheduler job, queued at t,
 * its records up to lag late (one its task writes: before its call
 * returns, as a recorder writes it); done at done, or never (lost); its
 * DONE twice (dup); keys drawn from pool (sectors, fence pointers: reused). */
struct rnd_job {
	int kind, lost, dup;
	uint64_t t, done, lag, key, r;
};

static void rnd_job_add(struct aj_list *l, const struct rnd_job *j, uint64_t *seq)
{
	uint32_t tid = 200 + (uint32_t)(j->r >> 9) % 3;
	uint64_t ctx = 70 + (j->r >> 8) % 3, n;

	switch (j->kind) {
	case 0: /* block: queued by a loop call, or issued directly */
		if ((j->r >> 8) % 2) {
			blk_call(l, j->t, 1000, tid);
			blk_ev(l, j->t + 300, j->key, tid, KX_JOB_QUEUE, j->lag % 700);
		}
		blk_ev(l, j->t + 600, j->key, 0, KX_JOB_RUN, j->lag / 2);
		for (int k = 0; !j->lost && k <= j->dup; k++)
			blk_ev(l, j->done + (uint64_t)k * 50, j->key, 0, KX_JOB_DONE, j->lag / 3);
		return;
	case 1: /* xe, its waiter sometimes */
		n = ++seq[ctx - 70];
		xe_call(l, j->t, 1000, 991 + (uint32_t)(ctx - 70), XE_EXEC);
		xe_ev(l, j->t + 300, ctx, n, 991 + (uint32_t)(ctx - 70), KX_JOB_QUEUE,
		      j->lag % 700);
		xe_ev(l, j->t + 600, ctx, n, 0, KX_JOB_RUN, j->lag / 2);
		for (int k = 0; !j->lost && k <= j->dup; k++)
			xe_ev(l, j->done + (uint64_t)k * 50, ctx, n, 0, KX_JOB_DONE, j->lag / 3);
		if (!j->lost && (j->r >> 12) % 5 == 0)
			xe_call(l, j->done - 500, 1000, 1100 + (uint32_t)(ctx - 70), XE_WAIT);
		return;
	case 2: /* dma_fence: linked on "gfx", or the kernel's on "sdma" */
		if ((j->r >> 10) % 2) {
			n = ++seq[3];
			xe_call(l, j->t, 1000, 995, XE_EXEC);
			dmaf_ev(l, j->t + 300, 1000, n, 995, KX_JOB_QUEUE, "gfx");
			for (int k = 0; !j->lost && k <= j->dup; k++)
				dmaf_ev(l, j->done + (uint64_t)k * 50, 1000, n, 0, KX_JOB_DONE,
				        "gfx");
		} else {
			n = ++seq[4];
			dmaf_ev(l, j->t + 300, 1001, n, 0, KX_JOB_QUEUE, "sdma");
			for (int k = 0; !j->lost && k <= j->dup; k++)
				dmaf_ev(l, j->done + (uint64_t)k * 50, 1001, n, 0, KX_JOB_DONE,
				        "sdma");
		}
		return;
	case 4: /* a KVM_RUN of one of 2 vCPUs, its exit (twice: the second a
	         * duplicate) written up to 300 ns after it, or none */
		tid = 100 + (uint32_t)(j->r >> 8) % 2;
		kvm_run(l, tid, j->t, 1000);
		for (int k = 0; !j->lost && k <= j->dup; k++)
			kvm_exit_at(l, tid, j->t + 500 + (uint64_t)k * 100,
			            j->t + 500 + (uint64_t)k * 100 + j->lag % 300);
		return;
	default: /* old gpu_scheduler */
		sched_old_ev(l, j->t + 300, j->key, KX_JOB_QUEUE, j->lag);
		sched_old_ev(l, j->t + 600, j->key, KX_JOB_RUN, j->lag / 2);
		for (int k = 0; !j->lost && k <= j->dup; k++)
			sched_old_ev(l, j->done + (uint64_t)k * 50, j->key, KX_JOB_DONE,
			             j->lag / 3);
	}
}

/* A random capture of 52,000 jobs (seed; a GPU job is counted 16,384
 * closes after its DONE, so more than 32,768 are counted behind the
 * 101st): the sources of its mix (block; xe and dma_fence; block and old
 * gpu_scheduler; those four; a VM's vCPUs and its disk; vCPUs, xe and old
 * gpu_scheduler), one in 613 never done (and the 101st), one in 211 done
 * up to 60 ms late, one in 97 done twice, keys from a small pool (reused
 * often), a larger one (reused now and then: after a job was taken as
 * never done) or a large one. */
static int rnd_write(const char *path, uint64_t seed)
{
	static const int mixes[6][4] = {{0, 0, 0, 0}, {1, 2, 1, 2}, {0, 3, 0, 3},
	                                {0, 1, 2, 3}, {4, 4, 4, 0}, {4, 1, 4, 3}};
	uint64_t s = 0x9e3779b97f4a7c15ull * seed, t = 2000000, seq[5] = {0};
	uint64_t pool = seed % 3 == 0 ? 3000 : seed % 3 == 1 ? 60000 : 100000000;
	struct aj_list l = {0};

	for (uint64_t i = 0; i < 52000; i++, t += 2000 + rnd_next(&s) % 2000) {
		uint64_t r = rnd_next(&s);
		struct rnd_job j = {.kind = mixes[seed % 6][r % 4],
		                    .lost = r % 613 == 0 || i == 100,
		                    .dup = r % 97 == 0,
		                    .t = t,
		                    .lag = rnd_next(&s) % 150000,
		                    .r = r};

		j.done = t + 1500 + (r % 211 == 0 ? rnd_next(&s) % 60000000 : rnd_next(&s) % 3000);
		j.key = j.kind == 3 ? 0xffff880000000000ull + rnd_next(&s) % pool * 64
		                    : 1000000 + rnd_next(&s) % pool;
		rnd_job_add(&l, &j, seq);
	}
	return aj_write(path, &l);
}

/*
 * Random job captures (rnd_write, 6 seeds: each mix once, each pool
 * twice): the streamed report is the in-memory one, or the file is read
 * into memory for a stated reason, and the in-memory device timelines
 * (within the streamed read's bounds where those give the same) are the
 * exact ones (no bound); some stream, with jobs counted early (never
 * done, or done late, past KX_JOBFLOW_BEHIND), and some keep a reason.
 */
static void jobs_random(void)
{
	int streamed = 0, early = 0, whole = 0;
	char path[128];

	for (uint64_t seed = 1; seed <= 6; seed++) {
		char msg[512];
		const char *why = NULL;
		int ok;

		snprintf(path, sizeof(path), "%s/rnd%llu.kxp", tmpdir, (unsigned long long)seed);
		CHECK(rnd_write(path, seed) == 0);
		ok = compare(path, &why, msg, sizeof(msg));
		if (!ok)
			printf("FAIL jobs_random: seed %llu: %s\n", (unsigned long long)seed, msg);
		CHECK(ok);
		printf("# seed %llu: %s\n", (unsigned long long)seed, why ? why : "streamed");
		if (ok && why)
			whole++;
		if (ok && !why) {
			streamed++;
			early += flow_early > 0;
			printf("#   %llu jobs counted early, %zu held at most\n",
			       (unsigned long long)flow_early, flow_held);
		}
		unlink(path);
	}
	printf("# jobs_random: %d streamed (%d with jobs counted early), %d read whole\n", streamed,
	       early, whole);
	CHECK(streamed >= 3 && early >= 2 && whole >= 1);
}

/* Wait calls of GPU drivers before the first GPU job record are kept, within
 * the window and KX_JOBFLOW_WAITS: a wait that returned before any GPU
 * record, a DONE inside it written late (a later call of its thread lets it
 * out of the reorder stage), is that job's waiter, streamed (before: read
 * into memory); behind KX_JOBFLOW_WAITS later ones, a DONE inside it is
 * the wait calls' budget reason. */
static void waits_before_gpu(void)
{
	char path[128], msg[512];
	const char *why;

	for (int c = 0; c < 2; c++) {
		struct aj_list l = {0};

		if (!c)
			xe_jobs(&l, 1, 200, 0);
		xe_call(&l, 100, 1100, 778, XE_WAIT);
		xe_call(&l, 1300, 100, 778, XE_WAIT);
		for (uint64_t i = 0; c && i < KX_JOBFLOW_WAITS; i++)
			xe_call(&l, 1500 + i * 30, 20, 779, XE_WAIT);
		xe_ev(&l, 1100, 9, 1, 0, KX_JOB_DONE, c ? 3000000 : 5000);
		snprintf(path, sizeof(path), "%s/xefirst%d.kxp", tmpdir, c);
		CHECK(aj_write(path, &l) == 0);
		CHECK(compare(path, &why, msg, sizeof(msg)));
		if (c ? !why || !strstr(why, "wait calls") : why != NULL)
			printf("FAIL waits_before_gpu: %d: %s\n", c, why ? why : "streamed");
		CHECK(c ? why && strstr(why, "wait calls") : !why);
	}
}

/* A KVM capture beside a GPU application's many wait calls, no GPU job: the
 * earliest of them are dropped past KX_JOBFLOW_WAITS (none holds a DONE),
 * so it streams. */
static void waits_unkept(void)
{
	char path[128], msg[512];
	struct aj_list l = {0};
	const char *why;

	for (uint64_t i = 0; i < 200; i++) {
		struct aj_rec r = {.at = 1000 + i * 10000 + 5000};

		r.e = (struct kx_ioctl){.ts = 1000 + i * 10000,
		                        .dur = 5000,
		                        .pid = 7,
		                        .tid = 100,
		                        .drv = KX_DRV_KVM,
		                        .cmd = KX_KVM_RUN_CMD,
		                        .arg_off = KX_NO_ARG};
		aj_add(&l, &r);
		r = (struct aj_rec){.at = 1000 + i * 10000 + 4000, .kind = 1};
		r.j = (struct kx_job){.ts = r.at,
		                      .ctx = 100,
		                      .pid = 7,
		                      .tid = 100,
		                      .src = KX_JOB_SRC_KVM,
		                      .phase = KX_JOB_DONE};
		aj_add(&l, &r);
	}
	for (uint64_t i = 0; i < KX_JOBFLOW_WAITS + 100; i++)
		xe_call(&l, 500 + i * 30, 20, 555, XE_WAIT);
	snprintf(path, sizeof(path), "%s/kvmwaits.kxp", tmpdir);
	CHECK(aj_write(path, &l) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL waits_unkept: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
}

/* ---- GPU jobs of the shared fence sources ---- */

/* The ring of timelines o named name, NULL: none. */
static const struct kx_jobring *ring_named(const struct kx_jobs *o, const char *name)
{
	for (size_t r = 0; r < o->nrings; r++)
		if (!strcmp(o->rings[r].name, name))
			return &o->rings[r];
	return NULL;
}

/* Captures of each shared fence source stream with their device timelines
 * paired as the records pass, the in-memory report's figures: a ring whose
 * first jobs no call submitted (they wait for its first linked job, which
 * gives their device), a ring first linked halfway (its jobs wait a window
 * and more), a ring never linked (its device learnt at the end: one named
 * after the source, or the only GPU traced, the last case). Before: their
 * job records were kept in the side store. */
static void fences_streamed(void)
{
	static struct kx_sreport sr;
	char path[128], err[512], msg[512];
	const char *why;

	for (size_t i = 0; i <= FENCE_KINDS; i++) {
		int traced = i == FENCE_KINDS;
		const struct fence_kind *k = &fence_kinds[traced ? FENCE_KINDS - 1 : i];
		const struct kx_jobring *gfx, *comp, *sdma;

		snprintf(path, sizeof(path), "%s/fence_%s%s.kxp", tmpdir, k->name,
		         traced ? "_traced" : "");
		CHECK(write_fence(path, k, 3000, 1000000, 1500, 1, traced) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL fences_streamed: %s: %s\n", k->name, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		if (!sr.timelines || !sr.flow_jobs || kx_store_job_count(sr.side))
			printf("FAIL fences_streamed: %s: %zu job records kept\n", k->name,
			       kx_store_job_count(sr.side));
		CHECK(!sr.in_memory && sr.timelines && sr.flow_jobs == 3000 + 1000 + 1500 &&
		      !kx_store_job_count(sr.side));
		if (!sr.timelines) {
			kx_sreport_free(&sr);
			continue;
		}
		for (size_t r = 0; r < sr.timelines->nrings; r++)
			printf("  %s: ring %s on %s\n", k->name, sr.timelines->rings[r].name,
			       sr.timelines->devs[sr.timelines->rings[r].dev].name);
		gfx = ring_named(sr.timelines, "gfx");
		comp = ring_named(sr.timelines, "comp");
		sdma = ring_named(sr.timelines, "sdma");
		CHECK(gfx && comp && sdma);
		/* Three devices: gfx's submitter's, comp's, and sdma's fallback; one
		 * (the source's driver's) for a source that has a driver. */
		if (k->drv == k->drv2)
			CHECK(gfx && comp && sdma && gfx->dev == comp->dev &&
			      gfx->dev == sdma->dev);
		else if (traced) /* sdma on the traced GPU, gfx's */
			CHECK(gfx && comp && sdma && gfx->dev != comp->dev &&
			      gfx->dev == sdma->dev && comp->dev != sdma->dev);
		else
			CHECK(gfx && comp && sdma && gfx->dev != comp->dev &&
			      gfx->dev != sdma->dev && comp->dev != sdma->dev);
		CHECK(gfx && gfx->njobs == 3000 && gfx->linked > 2000 && gfx->waited > 500);
		CHECK(comp && comp->njobs == 1000 && comp->linked == 500 && comp->waited > 200);
		CHECK(sdma && sdma->njobs == 1500 && !sdma->linked && sdma->waited > 300);
		kx_sreport_free(&sr);
	}
}

/*
 * Rings whose jobs no call submitted, past the budget of the jobs waiting
 * for their ring's device (16,384 waiting, or as many counted behind the
 * first): counted on the fallback device, they stream (no job record kept)
 * with the in-memory figures when the ring never links, or links later to
 * that device; when it links later to another device the file is read into
 * memory, a budget reason. Case 0: 32,768 dma_fence jobs on one ring,
 * none traced. 1: the same, then the ring linked by an xe call. 2: an
 * amdgpu-like capture of 100,833 gpu_scheduler jobs, the only GPU traced
 * amdgpu: "gfx" linked from its 6th job, "comp" from step 300 (by i915
 * calls), "sdma" never (page-table updates of the kernel). 3: "comp"
 * linked from step 25,000 by amdgpu calls (the fallback's driver). 4: by
 * i915 calls. Before: cases 0, 2 and 3 were read into memory (a budget
 * reason).
 */
static void fences_past_budget(void)
{
	static const struct fence_kind amd = {
	        "gpu_scheduler", KX_JOB_SRC_GPU_SCHED, KX_DRV_AMDGPU,   KX_DRV_AMDGPU,
	        FENCE_AMDGPU_CS, FENCE_AMDGPU_WAIT,    FENCE_AMDGPU_CS, FENCE_AMDGPU_WAIT};
	static const uint64_t jobs[5] = {2 * KX_JOBFLOW_PENDING, 0, 100833, 55000, 0};
	static struct kx_sreport sr;
	char path[128], err[512];

	for (int c = 0; c < 5; c++) {
		const struct fence_kind *k = &fence_kinds[3]; /* gpu_scheduler */
		struct aj_list l = {0};

		CHECK(!strcmp(k->name, "gpu_scheduler"));
		snprintf(path, sizeof(path), "%s/fence_budget%d.kxp", tmpdir, c);
		if (c < 2) {
			fence_unlinked(&l, 2 * KX_JOBFLOW_PENDING, 9000000);
			if (c)
				fence_linked(&l, 9000000 + 20 * KX_JOBFLOW_PENDING, 780);
			CHECK(aj_write(path, &l) == 0);
		} else {
			CHECK(write_fence(path, c == 3 ? &amd : k, c == 2 ? 55000 : 30000, 1000000,
			                  c == 2 ? 300 : 25000, 1, 1) == 0);
		}
		CHECK(compare_want("fences_past_budget", c, path,
		                   jobs[c] ? NULL : "linked to another device"));
		if (!jobs[c])
			continue;
		CHECK(kx_sreport_read(&sr, path, (size_t)1 << 30, err, sizeof(err)) == 0);
		if (!sr.timelines || sr.flow_jobs != jobs[c] || kx_store_job_count(sr.side))
			printf("FAIL fences_past_budget: %d: %llu jobs streamed, %zu records "
			       "kept\n",
			       c, (unsigned long long)sr.flow_jobs, kx_store_job_count(sr.side));
		CHECK(!sr.in_memory && sr.timelines && sr.flow_jobs == jobs[c] &&
		      !kx_store_job_count(sr.side));
		kx_sreport_free(&sr);
	}
}

/* A dma_fence job no call submitted, DONE at ts (ns), fed to f. */
static int fence_done(struct kx_jobflow *f, uint64_t ts, uint64_t seqno)
{
	struct kx_job j = {.ts = ts, .ctx = 5, .seqno = seqno, .src = KX_JOB_SRC_DMA_FENCE};

	snprintf(j.ring, sizeof(j.ring), "gfx");
	j.phase = KX_JOB_QUEUE;
	if (kx_jobflow_job(f, &j))
		return -1;
	j.ts += 1000;
	j.phase = KX_JOB_DONE;
	return kx_jobflow_job(f, &j);
}

/* A call of drv submitting a dma_fence job on ring "gfx" (seqno), fed to f
 * at ts (ns). */
static int fence_submitted(struct kx_jobflow *f, uint64_t ts, uint64_t seqno, unsigned int drv)
{
	struct kx_ioctl e = {.ts = ts,
	                     .dur = 1000,
	                     .pid = 60,
	                     .tid = 900,
	                     .dev = 226u << 20 | 128,
	                     .drv = (uint8_t)drv,
	                     .cmd = FENCE_AMDGPU_CS,
	                     .arg_off = KX_NO_ARG};
	struct kx_job j = {.ts = ts + 100,
	                   .ctx = 5,
	                   .seqno = seqno,
	                   .pid = 60,
	                   .tid = 900,
	                   .src = KX_JOB_SRC_DMA_FENCE,
	                   .phase = KX_JOB_QUEUE};

	snprintf(j.ring, sizeof(j.ring), "gfx");
	if (kx_jobflow_ioctl(f, &e) || kx_jobflow_job(f, &j))
		return -1;
	j.ts += 1000;
	j.tid = j.pid = 0;
	j.phase = KX_JOB_DONE;
	return kx_jobflow_job(f, &j);
}

/*
 * Jobs of a ring not linked yet wait for its device up to the budget (here
 * lowered to 8): within it (case 0) they are counted at the end on the
 * fallback device; past it they are counted on the fallback at once, so
 * the ring never linked streams (1), and so does one that links later to
 * the fallback device (3: the only GPU traced, amdgpu); one that links
 * later to another device (2: xe, none traced) is read into memory, a
 * budget reason. Before: past the budget, a reason in every case.
 */
static void fence_budget(void)
{
	static struct kx_capinfo ci;
	static const char *const dev[4] = {"dma_fence", "dma_fence", NULL, "amdgpu"};

	for (int c = 0; c < 4; c++) {
		struct kx_store *mem = kx_store_new(0);
		struct kx_stats rows = {0};
		uint64_t n = c ? 11 : 8;
		struct kx_jobflow f;
		struct kx_jobs *o;
		int rc = 0;

		memset(&ci, 0, sizeof(ci));
		if (c == 3) {
			ci.ndevices = 1;
			ci.devices[0] = (struct kx_device){
			        .dev = 226u << 20 | 128, .fkind = KX_FK_CHR, .drv = KX_DRV_AMDGPU};
			snprintf(ci.devices[0].node, sizeof(ci.devices[0].node),
			         "/dev/dri/renderD128");
			snprintf(ci.devices[0].driver, sizeof(ci.devices[0].driver), "amdgpu");
		}
		kx_jobflow_init(&f, &ci);
		f.pend_max = 8;
		/* 2 s apart: each waits once the second after it comes (its
		 * records a window behind, its key a window after its DONE). */
		for (uint64_t i = 0; i < n; i++)
			rc |= fence_done(&f, 1000 + i * 2 * KX_JOBFLOW_WINDOW_NS, i + 1);
		if (c >= 2)
			rc |= fence_submitted(&f, 1000 + n * 2 * KX_JOBFLOW_WINDOW_NS, n + 1,
			                      c == 2 ? KX_DRV_XE : KX_DRV_AMDGPU);
		CHECK(rc == 0 && mem);
		if (f.peak_pend != (c ? 8 : 6) || f.nspilt != (c != 0))
			printf("FAIL fence_budget: %d: %zu waited at most, %zu rings spilt\n", c,
			       f.peak_pend, f.nspilt);
		CHECK(f.peak_pend == (c ? 8 : 6) && f.nspilt == (c != 0));
		o = kx_jobflow_finish(&f, mem, &rows);
		if (c == 2) {
			CHECK(!o && f.why && strstr(f.why, "linked to another device"));
		} else {
			if (f.why)
				printf("FAIL fence_budget: %d: %s\n", c, f.why);
			CHECK(!f.why && o && o->nrings == 1 && o->ndevs == 1);
			printf("  %d: %s: %llu jobs (%llu linked) on %s\n", c, o->rings[0].name,
			       (unsigned long long)o->rings[0].njobs,
			       (unsigned long long)o->rings[0].linked, o->devs[0].name);
			CHECK(o && o->nrings == 1 && o->rings[0].njobs == n + (c == 3) &&
			      o->rings[0].linked == (c == 3) && o->ndevs == 1 &&
			      !strcmp(o->devs[0].name, dev[c]));
		}
		kx_jobs_free(o);
		kx_stats_free(&rows);
		kx_jobflow_free(&f);
		kx_store_free(mem);
	}
}

/*
 * A ring's job waiting for its device keeps the GPU wait calls from its
 * DONE on (one may be its waiter): past KX_JOBFLOW_WAITS of them (70,000
 * here, over 3.5 s of xe jobs) it is counted on the fallback device and
 * they go, so the capture streams. Before: read into memory ("too many
 * wait calls").
 */
static void fence_waits_budget(void)
{
	static struct kx_capinfo ci;
	struct kx_store *mem = kx_store_new(0);
	struct kx_stats rows = {0};
	uint64_t t0 = 1000 + 3 * KX_JOBFLOW_WINDOW_NS;
	struct kx_jobflow f;
	struct kx_jobs *o;
	int rc = 0;

	memset(&ci, 0, sizeof(ci));
	kx_jobflow_init(&f, &ci);
	rc |= fence_done(&f, 1000, 1);
	for (uint64_t i = 0; i < 70000 && !rc; i++) {
		struct kx_ioctl e = {.ts = t0 + i * 50000,
		                     .dur = 20,
		                     .pid = 60,
		                     .tid = 555,
		                     .dev = 226u << 20 | 128,
		                     .drv = KX_DRV_XE,
		                     .cmd = XE_WAIT,
		                     .arg_off = KX_NO_ARG};
		struct kx_job j = {.ts = e.ts + 10,
		                   .ctx = 9,
		                   .seqno = i + 1,
		                   .src = KX_JOB_SRC_XE,
		                   .phase = KX_JOB_DONE};

		rc |= kx_jobflow_ioctl(&f, &e);
		if (i % 100 == 0)
			rc |= kx_jobflow_job(&f, &j);
	}
	CHECK(rc == 0 && mem);
	if (f.why || f.nspilt != 1)
		printf("FAIL fence_waits_budget: %s, %zu rings spilt, %zu waits kept\n",
		       f.why ? f.why : "streamed", f.nspilt, f.nwaits);
	CHECK(!f.why && f.nspilt == 1 && f.nwaits < KX_JOBFLOW_WAITS);
	o = kx_jobflow_finish(&f, mem, &rows);
	CHECK(o && o->nrings == 2 && ring_named(o, "gfx") && ring_named(o, "gfx")->njobs == 1 &&
	      !strcmp(o->devs[ring_named(o, "gfx")->dev].name, "dma_fence"));
	kx_jobs_free(o);
	kx_stats_free(&rows);
	kx_jobflow_free(&f);
	kx_store_free(mem);
}

/* ---- annotation ranges with device jobs (records: struct aj_rec) ---- */

/* A thread's range event (name: a push's) at ts. */
static void rd_ann(struct aj_list *l, uint32_t pid, uint32_t tid, int what, uint64_t ts,
                   uint64_t begin, uint16_t depth, const char *name)
{
	struct aj_rec r = {.at = ts, .kind = 2, .name = name};

	r.a = (struct kx_ann){.tid = tid,
	                      .pid = pid,
	                      .ts = ts,
	                      .begin = begin,
	                      .depth = depth,
	                      .what = (uint8_t)what};
	aj_add(l, &r);
}

static void rd_call(struct aj_list *l, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur,
                    unsigned int drv, uint32_t cmd)
{
	struct aj_rec r = {.at = ts + dur};

	r.e = (struct kx_ioctl){.ts = ts,
	                        .dur = dur,
	                        .pid = pid,
	                        .tid = tid,
	                        .dev = drv == KX_DRV_XE ? 226u << 20 | 128 : 10u << 20 | 232,
	                        .drv = (uint8_t)drv,
	                        .cmd = cmd,
	                        .arg_off = KX_NO_ARG};
	aj_add(l, &r);
}

static void rd_job(struct aj_list *l, const struct kx_job *j, uint64_t lag)
{
	struct aj_rec r = {.at = j->ts + lag, .kind = 1, .j = *j};

	aj_add(l, &r);
}

/*
 * nthreads threads of n steps: most steps a range "step" holding a range
 * "inner" (every other step) around a submitting call (an xe exec that
 * queues a job; kvm: a KVM_RUN with an exit), a call with no job after it;
 * every fourth step outside any range; jobs done long after their ranges
 * ended (every fifth); job records up to lag ns late; thread 0's last step
 * left open (its range has no row).
 */
static void rd_gen(struct aj_list *l, int kvm, int nthreads, uint64_t n, uint64_t lag)
{
	uint32_t pid = kvm ? 7 : 60;
	unsigned int drv = kvm ? KX_DRV_KVM : KX_DRV_XE;
	uint32_t cmd = kvm ? KX_KVM_RUN_CMD : XE_EXEC;

	for (int k = 0; k < nthreads; k++) {
		uint32_t tid = 400 + (uint32_t)k;
		uint64_t t = 5000 + (uint64_t)k * 1313;

		for (uint64_t i = 0; i < n; i++) {
			uint64_t d = 4000 + (i * 7919 + (uint64_t)k * 131) % 30000, c = t + 100;
			uint64_t jit = lag ? (i * 2654435761u) % lag : 0;
			int ranged = i % 4 != 3, inner = ranged && i % 2 == 0;
			int left = k == 0 && i + 1 == n;

			if (ranged)
				rd_ann(l, pid, tid, KX_ANN_PUSH, t, t, 1, "step");
			if (inner)
				rd_ann(l, pid, tid, KX_ANN_PUSH, t + 10, t + 10, 2, "inner");
			rd_call(l, pid, tid, c, d, drv, cmd);
			if (kvm) {
				struct kx_job j = {.ts = c + d - 100 - i % 7,
				                   .ctx = tid,
				                   .pid = pid,
				                   .tid = tid,
				                   .src = KX_JOB_SRC_KVM,
				                   .phase = KX_JOB_DONE};

				if (i % 9 != 4) /* a run without an exit */
					rd_job(l, &j, 0);
			} else {
				uint64_t done = c + d + 5000 + (i % 5 == 1 ? 40000 : 0);
				struct kx_job j = {.ts = c + d / 4,
				                   .ctx = 2 + (uint64_t)k,
				                   .seqno = i + 1,
				                   .pid = pid,
				                   .tid = tid,
				                   .src = KX_JOB_SRC_XE,
				                   .phase = KX_JOB_QUEUE};

				rd_job(l, &j, jit % (d / 2));
				j.pid = j.tid = 0;
				j.ts = c + d / 2, j.phase = KX_JOB_RUN;
				rd_job(l, &j, jit / 2);
				j.ts = done, j.phase = KX_JOB_DONE;
				if (i % 11 != 6) /* a job never done: no device time */
					rd_job(l, &j, jit / 3);
			}
			rd_call(l, pid, tid, c + d + 50, 1000, drv, kvm ? 0xae81u : XE_WAIT);
			if (inner && !left)
				rd_ann(l, pid, tid, KX_ANN_POP, c + d + 2000, t + 10, 2, "");
			if (ranged && !left)
				rd_ann(l, pid, tid, KX_ANN_POP, c + d + 3000, t, 1, "");
			t += d + 4000 + i % 300;
		}
	}
}

/* The range rows of a summary JSON have device jobs (a figure not zero). */
static int rd_has_jobs(const char *json)
{
	const char *p = json;

	while ((p = strstr(p, "\"Device Jobs\": ")))
		if (strtoull(p += 15, NULL, 10) > 0)
			return 1;
	return 0;
}

/* Captures with annotation ranges and device jobs (xe jobs, KVM exits)
 * stream: every range row's Device Jobs and Device Time are the in-memory
 * report's (jobs counted after their ranges ended, jobs never done, calls
 * in no range or in nested ones, a range left open). */
static void ranges_jobs_stream(void)
{
	static const int kinds[][3] = {{0, 2, 300}, {0, 3, 3000}, {1, 2, 300}, {1, 3, 3000}};
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char *m;

		snprintf(path, sizeof(path), "%s/rangedev%zu.kxp", tmpdir, i);
		rd_gen(&l, kinds[i][0], kinds[i][1], (uint64_t)kinds[i][2], 200000);
		CHECK(aj_write(path, &l) == 0);
		m = json_in_memory(path);
		CHECK(m && rd_has_jobs(m));
		free(m);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL ranges_jobs_stream: %s: %s\n", path, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	}
}

/* A call inside nine nested ranges submitting an xe job: read into memory
 * for a stated reason. */
static void ranges_jobs_reasons(void)
{
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};
	struct kx_job j = {.ts = 1200,
	                   .ctx = 2,
	                   .seqno = 1,
	                   .pid = 60,
	                   .tid = 400,
	                   .src = KX_JOB_SRC_XE,
	                   .phase = KX_JOB_QUEUE};

	for (uint16_t d = 1; d <= 9; d++)
		rd_ann(&l, 60, 400, KX_ANN_PUSH, 1000 + d, 1000 + d, d, "deep");
	rd_call(&l, 60, 400, 1100, 1000, KX_DRV_XE, XE_EXEC);
	rd_job(&l, &j, 0);
	j.pid = j.tid = 0;
	j.ts = 4000, j.phase = KX_JOB_DONE;
	rd_job(&l, &j, 0);
	for (uint16_t d = 9; d >= 1; d--)
		rd_ann(&l, 60, 400, KX_ANN_POP, 6000 - d, 1000 + d, d, "");
	snprintf(path, sizeof(path), "%s/rangedev_why.kxp", tmpdir);
	CHECK(aj_write(path, &l) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (!why || !strstr(why, "more than 8 ranges"))
		printf("FAIL ranges_jobs_reasons: %s\n", why ? why : "streamed");
	CHECK(why && strstr(why, "more than 8 ranges"));
}

/*
 * Calls of a thread with one start submitting xe jobs, inside ranges: a
 * call and the shorter one it holds (a range between them in length, so
 * only the shorter is inside it), the shorter submitting; then both
 * submitting. Streamed (each job names its call by its number among its
 * thread's calls), the in-memory report; before, a reason.
 */
static void ranges_jobs_same(void)
{
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (int both = 0; both < 2; both++) {
		char *m;

		rd_ann(&l, 60, 400, KX_ANN_PUSH, 1000, 1000, 1, "step");
		rd_ann(&l, 60, 400, KX_ANN_PUSH, 1100, 1100, 2, "inner");
		rd_ann(&l, 60, 400, KX_ANN_POP, 1700, 1100, 2, "");
		for (int k = 0; k < 2; k++) {
			struct kx_job j = {.ts = 1200 + (uint64_t)k,
			                   .ctx = 2,
			                   .seqno = 1 + (uint64_t)k,
			                   .pid = 60,
			                   .tid = 400,
			                   .src = KX_JOB_SRC_XE,
			                   .phase = KX_JOB_QUEUE};

			rd_call(&l, 60, 400, 1100, k ? 500 : 1000, KX_DRV_XE, XE_EXEC);
			if (!both && !k)
				continue;
			rd_job(&l, &j, 0);
			j.pid = j.tid = 0;
			j.ts = 3000 + (uint64_t)k * 1000, j.phase = KX_JOB_DONE;
			rd_job(&l, &j, 0);
		}
		rd_call(&l, 60, 400, 7000, 100, KX_DRV_XE, XE_WAIT);
		rd_ann(&l, 60, 400, KX_ANN_POP, 9000, 1000, 1, "");
		snprintf(path, sizeof(path), "%s/rangedev_same%d.kxp", tmpdir, both);
		CHECK(aj_write(path, &l) == 0);
		m = json_in_memory(path);
		CHECK(m && rd_has_jobs(m));
		free(m);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL ranges_jobs_same: %s: %s\n", path, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	}
}

/*
 * A call inside a range submits an xe job whose records all come after
 * 300 short ranges of its thread (the call left the reorder stage before
 * the first job record): streamed, the in-memory report (before, a
 * reason). later: 9 more calls of the thread come between (the job record
 * finds the call among none of its thread's last 8): read into memory for
 * a stated reason.
 */
static void ranges_jobs_early(void)
{
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (int later = 0; later < 2; later++) {
		struct kx_job j = {.ts = 1500,
		                   .ctx = 2,
		                   .seqno = 1,
		                   .pid = 60,
		                   .tid = 400,
		                   .src = KX_JOB_SRC_XE,
		                   .phase = KX_JOB_QUEUE};
		uint64_t t = 3000;
		char *m;

		rd_ann(&l, 60, 400, KX_ANN_PUSH, 1000, 1000, 1, "step");
		rd_call(&l, 60, 400, 1100, 1000, KX_DRV_XE, XE_EXEC);
		for (int k = 0; later && k < 9; k++, t += 200)
			rd_call(&l, 60, 400, t, 100, KX_DRV_XE, XE_WAIT);
		for (int k = 0; k < 300; k++, t += 100) {
			rd_ann(&l, 60, 400, KX_ANN_PUSH, t, t, 2, "tick");
			rd_ann(&l, 60, 400, KX_ANN_POP, t + 50, t, 2, "");
		}
		rd_job(&l, &j, 100000);
		j.pid = j.tid = 0;
		j.ts = 1600, j.phase = KX_JOB_RUN;
		rd_job(&l, &j, 100001 - 100);
		j.ts = 2900, j.phase = KX_JOB_DONE;
		rd_job(&l, &j, 100002 - 1400);
		rd_call(&l, 60, 400, 200000, 100, KX_DRV_XE, XE_WAIT);
		rd_ann(&l, 60, 400, KX_ANN_POP, 300000, 1000, 1, "");
		snprintf(path, sizeof(path), "%s/rangedev_early%d.kxp", tmpdir, later);
		CHECK(aj_write(path, &l) == 0);
		m = json_in_memory(path);
		CHECK(m && rd_has_jobs(m));
		free(m);
		CHECK(compare(path, &why, msg, sizeof(msg)));
		if (later ? !why : why != NULL)
			printf("FAIL ranges_jobs_early: %d later calls: %s\n", later ? 9 : 0,
			       why ? why : "streamed");
		CHECK(later ? why != NULL : why == NULL);
	}
}

/*
 * GPU jobs in ranges at a rate that puts more calls inside ranges between
 * a job and its sweep than the walk remembered before (16,384; a capture
 * shorter than the sweeps' 1 s window: every call from the first job
 * record on), 120 ms-late and never-done jobs among them: streamed, the
 * in-memory report. With 4 threads, never-done jobs hold more than
 * KX_JOBFLOW_BEHIND later ones back, their calls more than the walk's
 * budget: past it, the calls no job record to come links to go, those
 * with jobs not counted set aside (before: a reason). With 30 more calls
 * a step, more than the budget within the records' reorder stage: read
 * into memory, the bound said.
 */
static void ranges_jobs_many(void)
{
	struct aj_opts o = {.nthreads = 2, .n = 6001, .lag = 200000, .t0 = 5000000000ull};
	char path[128], msg[512];
	const char *why;
	char *m;

	snprintf(path, sizeof(path), "%s/rangedev_many.kxp", tmpdir);
	CHECK(aj_write_gen(path, &o) == 0);
	m = json_in_memory(path);
	CHECK(m && rd_has_jobs(m));
	free(m);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL ranges_jobs_many: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	printf("# ranges_jobs_many: %zu calls remembered at most\n", dc_peak);
	CHECK(dc_peak > 16384);
	/* 4 threads (make bench's form). */
	o.nthreads = 4;
	o.n = 30000;
	CHECK(aj_write_gen(path, &o) == 0);
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL ranges_jobs_many: 4 threads: %s\n", why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	o.nthreads = 2;
	o.n = 4000;
	o.more = 30;
	CHECK(aj_write_gen(path, &o) == 0);
	CHECK(compare(path, &why, msg, sizeof(msg)));
	if (!why || !strstr(why, "memory budget (16 MiB: 65536 calls)"))
		printf("FAIL ranges_jobs_many: %s\n", why ? why : "streamed");
	CHECK(why && strstr(why, "memory budget (16 MiB: 65536 calls)"));
	unlink(path);
}

/*
 * A KVM exit written at the end of a file of xe jobs in ranges (with 4
 * more calls a step inside them: past the walk's budget, the calls no xe
 * record to come links to go first), for a
 * KVM_RUN inside a range early on, its thread's last call (the walk took
 * it: later ranges of its thread came): by then no xe
 * record to come could link to that call, so the ranges' walk let it go;
 * a KVM exit is not paired in time order, so its device time would be
 * lost: a stated reason (the in-memory report). Without it the capture
 * streams.
 */
static void ranges_kvm_after_let_go(void)
{
	char path[128], msg[512];
	const char *why;

	for (int exit = 0; exit < 2; exit++) {
		struct aj_list l = {0};
		struct kx_job j = {.ts = 3000,
		                   .ctx = 500,
		                   .pid = 7,
		                   .tid = 500,
		                   .src = KX_JOB_SRC_KVM,
		                   .phase = KX_JOB_DONE};

		aj_gen(&l, &(struct aj_opts){.nthreads = 1, .n = 30000, .more = 4});
		rd_ann(&l, 7, 500, KX_ANN_PUSH, 900, 900, 1, "guest");
		rd_call(&l, 7, 500, 1000, 4000, KX_DRV_KVM, KX_KVM_RUN_CMD);
		rd_ann(&l, 7, 500, KX_ANN_POP, 6000, 900, 1, "");
		for (uint64_t k = 0; k < 300; k++) { /* later records: the walk takes it */
			rd_ann(&l, 7, 500, KX_ANN_PUSH, 10000 + k * 2000, 10000 + k * 2000, 1,
			       "tick");
			rd_ann(&l, 7, 500, KX_ANN_POP, 10500 + k * 2000, 10000 + k * 2000, 1, "");
		}
		if (exit)
			rd_job(&l, &j, 2 * KX_JOBFLOW_WINDOW_NS);
		snprintf(path, sizeof(path), "%s/rangedev_kvm%d.kxp", tmpdir, exit);
		CHECK(aj_write(path, &l) == 0);
		CHECK(compare(path, &why, msg, sizeof(msg)));
		if (exit ? !why || !strstr(why, "a KVM exit came for a call inside ranges let go")
		         : why != NULL)
			printf("FAIL ranges_kvm_after_let_go: %d: %s\n", exit,
			       why ? why : "streamed");
		CHECK(exit ? why && strstr(why, "a KVM exit came for a call inside ranges let go")
		           : why == NULL);
		unlink(path);
	}
}

/*
 * rd_gen's (or blk_requests') records with the call after one submitting
 * call of a thread's in three (an xe exec, a KVM_RUN, a loop driver call)
 * moved to overlap it partially: it starts 500 ns before that
 * call's end and lasts 3 us (the rule shortens it to that end, inside the
 * range its recorded end would leave); each thread's calls still come in
 * start order. ranges: keep the annotation records. hold: the call moved
 * is held whole (it ends 200 ns before the submitting call's end), and
 * comes first.
 */
static void rd_overlap(struct aj_list *l, int ranges, int hold)
{
	size_t out = 0;

	for (size_t i = 0, k = 0; i < l->n; i++) {
		const struct kx_ioctl *s = &l->v[i].e;

		if (l->v[i].kind != 0 ||
		    (s->cmd != XE_EXEC && s->cmd != KX_KVM_RUN_CMD && s->drv != KX_DRV_LOOP) ||
		    k++ % 3)
			continue;
		for (size_t j = i + 1; j < l->n; j++) {
			struct aj_rec *r = &l->v[j];

			if (r->kind != 0 || r->e.tid != s->tid)
				continue;
			r->e.ts = s->ts + s->dur - 500;
			r->e.dur = hold ? 300 : 3000;
			r->at = r->e.ts + r->e.dur;
			break;
		}
	}
	for (size_t i = 0; i < l->n; i++)
		if (ranges || l->v[i].kind != 2)
			l->v[out++] = l->v[i];
	l->n = out;
}

/* The in-memory report of path shortened calls to nest them. */
static int nest_shortened(const char *path)
{
	char *m = json_in_memory(path);
	int ok = m && strstr(m, "shortened to nest in it");

	free(m);
	return ok;
}

/* Calls the nesting rule shortens, with device jobs (xe jobs, KVM exits,
 * block requests) and with annotation ranges around them: streamed, the in-memory report
 * (the ranges walk the calls with their shortened ends, as in memory). */
static void nest_jobs_ranges(void)
{
	static const int kinds[][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(path, sizeof(path), "%s/nestdev%zu.kxp", tmpdir, i);
		rd_gen(&l, kinds[i][0], 3, 2000, 200000);
		rd_overlap(&l, kinds[i][1], 0);
		CHECK(aj_write(path, &l) == 0);
		CHECK(nest_shortened(path));
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL nest_jobs_ranges: %s (kvm %d, ranges %d): %s\n", path,
			       kinds[i][0], kinds[i][1], why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	}
	/* Block requests of loop driver calls (records up to 300 us late). */
	snprintf(path, sizeof(path), "%s/nestblk.kxp", tmpdir);
	blk_requests(&l, 3, 3000, 300000);
	rd_overlap(&l, 0, 0);
	CHECK(aj_write(path, &l) == 0);
	CHECK(nest_shortened(path));
	if (!compare(path, &why, msg, sizeof(msg)) || why)
		printf("FAIL nest_jobs_ranges: %s (block): %s\n", path, why ? why : msg);
	CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
}

/* The inner ranges of rd_gen popped inside the call that submits their
 * jobs (xe jobs, KVM exits): each such call spans its range's end, cut
 * there as memory's timeline cuts it; streamed, the in-memory report (the
 * warning's counts, the ranges' Device Jobs and Device Time). */
static void cut_jobs_ranges(void)
{
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (int kvm = 0; kvm < 2; kvm++) {
		char *m;

		snprintf(path, sizeof(path), "%s/cutdev%d.kxp", tmpdir, kvm);
		rd_gen(&l, kvm, 3, 2000, 200000);
		for (size_t i = 0; i < l.n; i++) {
			struct aj_rec *r = &l.v[i];

			/* pushed at t + 10, the call from t + 100, at least 4 us long */
			if (r->kind == 2 && r->a.what == KX_ANN_POP && r->a.depth == 2)
				r->at = r->a.ts = r->a.begin + 2000;
		}
		CHECK(aj_write(path, &l) == 0);
		m = json_in_memory(path);
		CHECK(m && rd_has_jobs(m) && strstr(m, "shortened to nest in it"));
		free(m);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL cut_jobs_ranges: %s: %s\n", path, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	}
}

/* A call that holds others of its thread comes after them (KVM exits, xe
 * jobs, block requests of loop driver calls): streamed, the in-memory report
 * (the device timelines take each thread's calls in start order from their
 * reorder stage, so a job links to the call memory links it to). */
static void nest_held_jobs(void)
{
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (int kind = 0; kind < 3; kind++) {
		snprintf(path, sizeof(path), "%s/nesthold%d.kxp", tmpdir, kind);
		if (kind < 2)
			rd_gen(&l, kind, 2, 300, 200000);
		else
			blk_requests(&l, 3, 3000, 300000);
		rd_overlap(&l, 0, 1);
		CHECK(aj_write(path, &l) == 0);
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL nest_held_jobs: kind %d: %s\n", kind, why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	}
}

/* A range that starts with a call the rule shortens: memory orders them by
 * the call's shortened length, the reorder stage by its recorded one. A
 * range shorter than the shortened call, as long as it or longer (memory
 * puts it first, around the call; before, a reason), longer than the
 * recorded call; and two calls of that start shortened alike with such a
 * range: streamed, the in-memory report. */
static void nest_range_same_start(void)
{
	static const uint64_t lens[] = {300, 500, 700, 1700, 700};
	char path[128], msg[512];
	const char *why;
	struct aj_list l = {0};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		rd_call(&l, 60, 400, 1000, 1000, KX_DRV_XE, XE_WAIT);
		rd_call(&l, 60, 400, 1500, 1500, KX_DRV_XE, XE_WAIT); /* shortened to 500 */
		if (i == 4)                                           /* shortened to 500 too */
			rd_call(&l, 60, 400, 1500, 1200, KX_DRV_XE, XE_WAIT);
		rd_ann(&l, 60, 400, KX_ANN_PUSH, 1500, 1500, 1, "step");
		rd_ann(&l, 60, 400, KX_ANN_POP, 1500 + lens[i], 1500, 1, "");
		rd_call(&l, 60, 400, 9000, 100, KX_DRV_XE, XE_WAIT);
		snprintf(path, sizeof(path), "%s/nestrange%zu.kxp", tmpdir, i);
		CHECK(aj_write(path, &l) == 0);
		CHECK(nest_shortened(path));
		if (!compare(path, &why, msg, sizeof(msg)) || why)
			printf("FAIL nest_range_same_start: range %llu ns: %s\n",
			       (unsigned long long)lens[i], why ? why : msg);
		CHECK(compare(path, &why, msg, sizeof(msg)) && !why);
	}
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kxt_sreport.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(fixtures);
	RUN(generated);
	RUN(damaged);
	RUN(annotated);
	RUN(ann_odd_cases);
	RUN(ann_odd_random);
	RUN(ann_cut_streams);
	RUN(ann_reasons);
	RUN(ann_tie_streams);
	RUN(open_range_streams);
	RUN(counted);
	RUN(counted_late);
	RUN(counted_unnamed);
	RUN(counted_budget);
	RUN(in_memory_reasons);
	RUN(stops_early);
	RUN(kvm_streamed);
	RUN(kvm_late);
	RUN(kvm_exits_unordered);
	RUN(kvm_exits_steps);
	RUN(kvm_exits_late_stream);
	RUN(block_streamed);
	RUN(block_reasons);
	RUN(block_behind_streams);
	RUN(gpu_streamed);
	RUN(gpu_reasons);
	RUN(gpu_held_behind);
	RUN(block_never_done);
	RUN(fences_held_behind);
	RUN(jobs_random);
	RUN(kvm_block_sparse);
	RUN(kvm_idle_vcpu);
	RUN(waits_before_gpu);
	RUN(waits_unkept);
	RUN(waits_held_stream);
	RUN(record_after_calls);
	RUN(fences_streamed);
	RUN(fences_past_budget);
	RUN(fence_budget);
	RUN(fence_waits_budget);
	RUN(ranges_jobs_stream);
	RUN(ranges_jobs_reasons);
	RUN(ranges_jobs_same);
	RUN(ranges_jobs_early);
	RUN(ranges_jobs_many);
	RUN(ranges_kvm_after_let_go);
	RUN(nest_jobs_ranges);
	RUN(cut_jobs_ranges);
	RUN(nest_held_jobs);
	RUN(nest_range_same_start);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	KXT_EXIT();
}
