/*
 * Annotations after the capture, without the kernel: the store interns
 * their names within its limit; the record file keeps them and the capture's
 * annotation facts (version 4); the analysis pairs pushes with pops and
 * starts with ends, reports ranges left open and ends whose begin is
 * missing, nests ranges with the thread's ioctls by the one rule (an ioctl
 * cut by a range joins the timeline's fixes, a range cut by an ioctl is
 * counted) and attributes the ioctls and their jobs' device time to the
 * ranges around them; the summary, Chrome JSON and XSpace show them; the
 * live aggregates pair them online within their bounds and Prometheus
 * exposes them.
 *
 * The capture (µs after T0 = 10 s), thread 6001 of process 6000 on an msm
 * device:
 *   push step @900 { push layer @950 { mark tick @960; GEM_SUBMIT @1000+100
 *   (a job queued at 1050, run 1120, done 1800: 680 µs on the device) }
 *   pop @1950; GEM_SUBMIT @2000+60; mark step @2050 } pop @2100;
 *   start xfer (id 7) @3000, ended by thread 6002 @3500; start leak (id 8)
 *   @3600, never ended; GEM_SUBMIT @5000+50 outside every range; push open
 *   @6000, never popped; a pop @7000 whose push (@123) is not there.
 * Thread 6002: GEM_SUBMIT @1500+10 (inside no range of its own).
 * Thread 6003: push cut @7950 .. pop @8050 around GEM_SUBMIT @8000+100
 * (ends after the range: cut to 50 µs); GEM_SUBMIT @9000+100 around push
 * late @9050 .. pop @9200 (the range is cut to end at 9100).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kxtest.h"
#include "kxtest_analysis.h"
#include "export/prometheus.h"
#include "export/speedscope.h"
#include "export/summary.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "live/annagg.h"
#include "proto/xplane.pb-c.h"

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;

#define T0_NS 10000000000ULL
#define US(x) (T0_NS + (uint64_t)(x)*1000)

#define IOCTL(ts, dur, tid)                                                                        \
	"{\"type\":\"ioctl\",\"ts\":" #ts "000,\"dur\":" #dur "000,\"pid\":6000,\"tid\":" #tid     \
	",\"driver\":\"msm\",\"kind\":\"chr\",\"dev\":\"226:128\",\"fd\":7,\"cmd\":"               \
	"\"DRM_IOCTL_MSM_GEM_SUBMIT\",\"cpu\":0}\n"

static const char fixture[] =
        "{\"type\":\"capture\",\"host\":\"h\",\"kernel\":\"k\",\"start_ns\":10000000000,"
        "\"stop_ns\":10010000000,\"realtime_offset_ns\":0,\"emitted\":6,\"received\":6,"
        "\"job_emitted\":3,\"job_received\":3}\n"
        "{\"type\":\"device\",\"node\":\"/dev/dri/renderD128\",\"driver\":\"msm\",\"kind\":"
        "\"chr\",\"dev\":\"226:128\"}\n" IOCTL(
                10001000, 100,
                6001) "{\"type\":\"job\",\"ts\":10001050000,\"src\":\"msm\",\"phase\":\"queue\","
                      "\"ctx\":0,"
                      "\"seqno\":1,\"pid\":6000,\"tid\":6001}\n"
                      "{\"type\":\"job\",\"ts\":10001120000,\"src\":\"msm\",\"phase\":\"run\","
                      "\"ctx\":0,"
                      "\"seqno\":1,\"pid\":190,\"tid\":190}\n"
                      "{\"type\":\"job\",\"ts\":10001800000,\"src\":\"msm\",\"phase\":\"done\","
                      "\"ctx\":0,"
                      "\"seqno\":1,\"pid\":191,\"tid\":191}\n" IOCTL(10001500, 10, 6002)
                              IOCTL(10002000, 60, 6001) IOCTL(10005000, 50, 6001)
                                      IOCTL(10008000, 100, 6003) IOCTL(10009000, 100, 6003);

static void ann(struct kx_store *s, int what, uint32_t tid, uint64_t ts_us, uint64_t begin_us,
                int depth, uint64_t id, const char *name, const char *cat)
{
	struct kx_ann a = {.ts = US(ts_us),
	                   .begin = begin_us ? US(begin_us) : US(ts_us),
	                   .id = id,
	                   .pid = 6000,
	                   .tid = tid,
	                   .what = (uint16_t)what,
	                   .depth = (uint16_t)depth};

	kx_store_add_ann(s, &a, name, cat);
}

static void add_annotations(struct kx_store *s)
{
	ann(s, KX_ANN_PUSH, 6001, 900, 0, 1, 0, "step", "");
	ann(s, KX_ANN_PUSH, 6001, 950, 0, 2, 0, "layer", "dom");
	ann(s, KX_ANN_MARK, 6001, 960, 0, 2, 0, "tick", "");
	ann(s, KX_ANN_POP, 6001, 1950, 950, 2, 0, NULL, NULL);
	ann(s, KX_ANN_MARK, 6001, 2050, 0, 1, 0, "step", "");
	ann(s, KX_ANN_POP, 6001, 2100, 900, 1, 0, NULL, NULL);
	ann(s, KX_ANN_START, 6001, 3000, 0, 0, 7, "xfer", "");
	ann(s, KX_ANN_END, 6002, 3500, 3000, 0, 7, NULL, NULL);
	ann(s, KX_ANN_START, 6001, 3600, 0, 0, 8, "leak", "");
	ann(s, KX_ANN_PUSH, 6001, 6000, 0, 1, 0, "open", "");
	ann(s, KX_ANN_POP, 6001, 7000, 123, 1, 0, NULL, NULL);
	ann(s, KX_ANN_PUSH, 6003, 7950, 0, 1, 0, "cut", "");
	ann(s, KX_ANN_POP, 6003, 8050, 7950, 1, 0, NULL, NULL);
	ann(s, KX_ANN_PUSH, 6003, 9050, 0, 1, 0, "late", "");
	ann(s, KX_ANN_POP, 6003, 9200, 9050, 1, 0, NULL, NULL);
}

static struct kx_store *store;
static struct kx_capinfo ci;

/* The fixture's store with the annotations, or NULL after printing why. */
static struct kx_store *load(void)
{
	char err[256];

	kx_store_free(store);
	store = kx_store_new(0);
	memset(&ci, 0, sizeof(ci));
	if (!store || kx_replay_load_mem(fixture, sizeof(fixture) - 1, "fixture", store, &ci, err,
	                                 sizeof(err))) {
		printf("# replay: %s\n", err);
		return NULL;
	}
	add_annotations(store);
	ci.ann.enabled = 1;
	ci.ann.pop_no_push = 2;
	ci.ann.depth_overflow = 3;
	return store;
}

static const struct kx_range *range_named(const struct kx_analysis *an, const char *name, int kind)
{
	for (size_t i = 0; i < an->ranges->n; i++)
		if (an->ranges->r[i].kind == kind &&
		    !strcmp(kx_store_ann_str(an->store, an->ranges->r[i].name), name))
			return &an->ranges->r[i];
	return NULL;
}

/* ---- the store and the record file ---- */

static void store_interns_names(void)
{
	struct kx_store *s = kx_store_new(0), *tiny;
	char longname[200];
	struct kx_ann a = {.what = KX_ANN_PUSH, .depth = 1};

	CHECK(s);
	CHECK(kx_store_add_ann(s, &a, "alpha", "dom") == 0);
	CHECK(kx_store_add_ann(s, &a, "alpha", "") == 0);
	CHECK(kx_store_add_ann(s, &a, "beta", NULL) == 0);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK(kx_store_add_ann(s, &a, longname, "dom") == 0);
	a.what = KX_ANN_POP;
	CHECK(kx_store_add_ann(s, &a, "ignored", "ignored") == 0);
	CHECK_EQ_U(kx_store_ann_count(s), 5);
	CHECK_EQ_U(kx_store_ann_strings(s), 4); /* alpha, dom, beta, x...x */
	CHECK(kx_store_ann(s, 0)->name == kx_store_ann(s, 1)->name);
	CHECK_STR(kx_store_ann_str(s, kx_store_ann(s, 0)->cat), "dom");
	CHECK_EQ_U(kx_store_ann(s, 1)->cat, 0);
	CHECK_EQ_U(kx_store_ann(s, 2)->cat, 0);
	CHECK_EQ_U(strlen(kx_store_ann_str(s, kx_store_ann(s, 3)->name)), KX_ANN_NAME_MAX - 1);
	CHECK_EQ_U(kx_store_ann(s, 4)->name, 0);
	CHECK_STR(kx_store_ann_str(s, 999), "");
	kx_store_free(s);
	/* A limit too small for any chunk: refused and counted. */
	tiny = kx_store_new(1024);
	CHECK(tiny);
	a.what = KX_ANN_MARK;
	CHECK(kx_store_add_ann(tiny, &a, "m", "") == -1);
	CHECK_EQ_U(kx_store_not_stored(tiny), 1);
	CHECK(kx_store_bytes(tiny) <= kx_store_limit(tiny));
	kx_store_free(tiny);
}

static void record_file_keeps_them(void)
{
	char path[] = "/tmp/kx-ann-XXXXXX", err[256];
	struct kx_kxp_read_result res;
	struct kx_kxp_writer *w;
	struct kx_capinfo got;
	struct kx_store *back;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && load());
	close(fd);
	unlink(path);
	ci.ann.emitted = ci.ann.received = 15;
	ci.ann.ncopies = 2;
	snprintf(ci.ann.copies[0].path, sizeof(ci.ann.copies[0].path),
	         "/opt/lib/libkxprof_annotate.so");
	ci.ann.copies[0].found = ci.ann.copies[0].attached = 0x1f;
	snprintf(ci.ann.copies[1].path, sizeof(ci.ann.copies[1].path), "/x/libstripped.so");
	snprintf(ci.ann.copies[1].why, sizeof(ci.ann.copies[1].why), "stripped");
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	for (size_t i = 0; i < kx_store_ioctl_count(store); i++)
		CHECK(kx_kxp_add_ioctl(w, kx_store_ioctl(store, i), NULL) == 0);
	for (size_t i = 0; i < kx_store_ann_count(store); i++) {
		const struct kx_ann *a = kx_store_ann(store, i);

		CHECK(kx_kxp_add_ann(w, a, kx_store_ann_str(store, a->name),
		                     kx_store_ann_str(store, a->cat)) == 0);
		if (i == 5)
			CHECK(kx_kxp_flush(w) == 0); /* each chunk decodes on its own */
	}
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	back = kx_store_new(0);
	CHECK(back);
	CHECK(kx_kxp_read(path, back, &got, &res, err, sizeof(err)) == 0);
	unlink(path);
	CHECK(!res.truncated && !res.ncorrupt);
	CHECK_EQ_U(kx_store_ann_count(back), kx_store_ann_count(store));
	for (size_t i = 0; i < kx_store_ann_count(store); i++) {
		const struct kx_ann *a = kx_store_ann(store, i), *b = kx_store_ann(back, i);

		CHECK(a->ts == b->ts && a->begin == b->begin && a->id == b->id &&
		      a->pid == b->pid && a->tid == b->tid && a->what == b->what &&
		      a->depth == b->depth && a->flags == b->flags);
		CHECK_STR(kx_store_ann_str(back, b->name), kx_store_ann_str(store, a->name));
		CHECK_STR(kx_store_ann_str(back, b->cat), kx_store_ann_str(store, a->cat));
	}
	CHECK_EQ_U(got.ann.enabled, 1);
	CHECK_EQ_U(got.ann.emitted, 15);
	CHECK_EQ_U(got.ann.pop_no_push, 2);
	CHECK_EQ_U(got.ann.depth_overflow, 3);
	CHECK_EQ_U(got.ann.ncopies, 2);
	CHECK_STR(got.ann.copies[0].path, "/opt/lib/libkxprof_annotate.so");
	CHECK_EQ_U(got.ann.copies[0].attached, 0x1f);
	CHECK_STR(got.ann.copies[1].why, "stripped");
	kx_store_free(back);
}

/* The annotation's fields and strings in s equal a's in store. */
static int same_ann(const struct kx_store *s, const struct kx_ann *b, const struct kx_ann *a)
{
	return a->ts == b->ts && a->begin == b->begin && a->id == b->id && a->pid == b->pid &&
	       a->tid == b->tid && a->what == b->what && a->depth == b->depth &&
	       a->flags == b->flags &&
	       !strcmp(kx_store_ann_str(s, b->name), kx_store_ann_str(store, a->name)) &&
	       !strcmp(kx_store_ann_str(s, b->cat), kx_store_ann_str(store, a->cat));
}

/* The annotations of s are some of store's, each unchanged, in order. */
static int anns_unchanged(const struct kx_store *s)
{
	size_t j = 0;

	for (size_t i = 0; i < kx_store_ann_count(s); i++) {
		while (j < kx_store_ann_count(store) &&
		       !same_ann(s, kx_store_ann(s, i), kx_store_ann(store, j)))
			j++;
		if (j++ >= kx_store_ann_count(store))
			return 0;
	}
	return 1;
}

/*
 * Damaged annotation records never crash the reader or reach the store as
 * anything but what they were: a file of ioctl and annotation records in
 * several chunks, each single-byte change of it read (or refused) cleanly,
 * and what is read is some of the written records, unchanged and in order
 * (ASan/UBSan watch). Most damaged files are read, and a chunk damaged in
 * the middle costs that chunk only: the others' annotations are kept.
 */
static void record_file_damage(void)
{
	char path[] = "/tmp/kx-ann-dmg-XXXXXX", err[256];
	size_t len = 0, nann, read_ok = 0, partial = 0, changed = 0;
	struct kx_kxp_read_result res;
	struct kx_kxp_writer *w;
	struct kx_capinfo got;
	uint8_t *buf;
	int fd = mkstemp(path);
	FILE *f;

	CHECK(fd >= 0 && load());
	close(fd);
	unlink(path);
	nann = kx_store_ann_count(store);
	CHECK(nann >= 8 && kx_store_ioctl_count(store) > 0);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	for (size_t i = 0; i < nann; i++) {
		const struct kx_ann *a = kx_store_ann(store, i);

		CHECK(kx_kxp_add_ioctl(w, kx_store_ioctl(store, i % kx_store_ioctl_count(store)),
		                       NULL) == 0);
		CHECK(kx_kxp_add_ann(w, a, kx_store_ann_str(store, a->name),
		                     kx_store_ann_str(store, a->cat)) == 0);
		if (i % 3 == 2)
			CHECK(kx_kxp_flush(w) == 0);
	}
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	f = fopen(path, "rb");
	CHECK(f);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(len);
	CHECK(buf && fread(buf, 1, len, f) == len);
	fclose(f);
	unlink(path);
	srand(12);
	for (int round = 0; round < 3000; round++) {
		struct kx_store *s = kx_store_new(0);
		size_t at = (size_t)rand() % len;
		uint8_t old = buf[at];

		buf[at] ^= (uint8_t)(1 + rand() % 255);
		if (kx_kxp_read_mem(buf, len, s, &got, &res, err, sizeof(err)) == 0) {
			read_ok++;
			for (size_t i = 0; i < kx_store_ann_count(s); i++) {
				const struct kx_ann *a = kx_store_ann(s, i);

				CHECK(a->what >= KX_ANN_PUSH && a->what <= KX_ANN_END);
				CHECK(strlen(kx_store_ann_str(s, a->name)) < KX_ANN_NAME_MAX);
			}
			changed += !anns_unchanged(s);
			partial += kx_store_ann_count(s) > 0 && kx_store_ann_count(s) < nann;
		}
		buf[at] = old;
		kx_store_free(s);
	}
	printf("# damaged files: %zu of 3000 read, %zu with some annotations lost, %zu changed\n",
	       read_ok, partial, changed);
	CHECK_EQ_U(changed, 0);
	CHECK(read_ok >= 1200);
	CHECK(partial >= 100);
	free(buf);
}

/* ---- the analysis ---- */

static void pairs_and_anomalies(void)
{
	struct kx_analysis *an;
	const struct kx_range *r;

	CHECK(load());
	an = kxt_analyse(store, &ci);
	CHECK(an);
	r = range_named(an, "step", KX_RANGE_THREAD);
	CHECK(r && r->begin == US(900) && r->dur_meas == 1200000 && r->depth == 1 && !r->open);
	r = range_named(an, "layer", KX_RANGE_THREAD);
	CHECK(r && r->dur == 1000000 && r->depth == 2 && r->cat);
	r = range_named(an, "tick", KX_RANGE_MARK);
	CHECK(r && r->dur == 0 && r->depth == 2);
	r = range_named(an, "xfer", KX_RANGE_CROSS);
	CHECK(r && r->tid == 6001 && r->end_tid == 6002 && r->dur == 500000 && r->id == 7);
	/* Left open: closed at their thread's last event (the lost pop @7000),
	 * and at their process's (thread 6003's pop @9200), not at the stop. */
	r = range_named(an, "leak", KX_RANGE_CROSS);
	CHECK(r && r->open && r->begin + r->dur == US(9200));
	r = range_named(an, "open", KX_RANGE_THREAD);
	CHECK(r && r->open && r->begin + r->dur == US(7000));
	CHECK_EQ_U(an->ranges->anom.open, 1);
	CHECK_EQ_U(an->ranges->anom.open_cross, 1);
	CHECK_EQ_U(an->ranges->anom.lost_begin, 1);
	CHECK(kx_ranges_thread(an->ranges, 6001) && !kx_ranges_thread(an->ranges, 6002));
	kx_analysis_free(an);
}

static void ioctls_and_device_time(void)
{
	struct kx_analysis *an;
	const struct kx_range *r;

	CHECK(load());
	an = kxt_analyse(store, &ci);
	CHECK(an);
	r = range_named(an, "step", KX_RANGE_THREAD);
	CHECK(r);
	CHECK_EQ_U(r->ioctls, 2);
	CHECK_EQ_U(r->jobs, 1);
	CHECK_EQ_U(r->device_ns, 680000);
	r = range_named(an, "layer", KX_RANGE_THREAD);
	CHECK(r);
	CHECK_EQ_U(r->ioctls, 1);
	CHECK_EQ_U(r->device_ns, 680000);
	/* The ioctl of thread 6002 inside "step"'s time is not its thread's. */
	r = range_named(an, "open", KX_RANGE_THREAD);
	CHECK(r && r->ioctls == 0);
	r = range_named(an, "xfer", KX_RANGE_CROSS);
	CHECK(r && r->ioctls == 0 && r->jobs == 0);
	kx_analysis_free(an);
}

/* The warnings of the fixture's anomalies, each said once. */
static void count_warnings(void *ctx, const char *msg)
{
	static const char *const want[] = {
	        "1 annotation ranges partially overlapped", "1 annotation ranges still open",
	        "1 annotation range ends whose begin", "2 annotation pops without a push",
	        "3 annotation ranges nested deeper than 32"};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		*(int *)ctx += strstr(msg, want[i]) != NULL;
}

static void one_nesting_rule(void)
{
	struct kx_analysis *an;
	const struct kx_range *r;
	int msgs = 0;

	CHECK(load());
	an = kxt_analyse(store, &ci);
	CHECK(an);
	/* The ioctl that outlives "cut" ends with it, in every output. */
	for (size_t i = 0; i < kx_store_ioctl_count(store); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(store, i);

		if (e->ts == US(8000))
			CHECK_EQ_U(kx_timeline_dur(an->timeline, i, e->dur), 50000);
		else
			CHECK_EQ_U(kx_timeline_dur(an->timeline, i, e->dur), e->dur);
	}
	CHECK_EQ_U(an->timeline->nfix, 1);
	r = range_named(an, "cut", KX_RANGE_THREAD);
	CHECK(r && r->ioctls == 1 && r->dur == 100000);
	/* "late" starts inside an ioctl and would end after it: cut, measured kept. */
	r = range_named(an, "late", KX_RANGE_THREAD);
	CHECK(r && r->dur == 50000 && r->dur_meas == 150000 && r->ioctls == 0);
	CHECK_EQ_U(an->ranges->anom.shortened, 1);
	kx_analysis_warnings(an, count_warnings, &msgs);
	CHECK_EQ_U(msgs, 5);
	kx_analysis_free(an);
}

/* ---- the outputs ---- */

static char *summary_json(struct kx_analysis *an)
{
	struct kx_summary *sum = kx_summary_build(an);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (sum && f)
		kx_summary_print_json(sum, f, 0);
	if (f)
		fclose(f);
	kx_summary_free(sum);
	return buf;
}

static void summary_rows(void)
{
	struct kx_analysis *an;
	char *js, *table = NULL;
	size_t len = 0;
	struct kx_summary *sum;
	FILE *f;

	CHECK(load());
	an = kxt_analyse(store, &ci);
	CHECK(an);
	js = summary_json(an);
	CHECK(js);
	CHECK(strstr(js, "\"annotation\": {"));
	CHECK(strstr(js, "\"annotation/dom\": {"));
	CHECK(strstr(js,
	             "\"step\": {\"Total Count\": 1, \"Total Time\": 1.200000, \"Min Time\": "
	             "1.200000, \"Max Time\": 1.200000, \"Avg Time\": 1.200000, \"Kind\": "
	             "\"range\", \"Ioctls\": 2, \"Device Jobs\": 1, \"Device Time\": 0.680000"));
	CHECK(strstr(js, "\"step (mark)\": {\"Total Count\": 1, \"Total Time\": 0.000000"));
	CHECK(strstr(js, "\"tick\": {\"Total Count\": 1, \"Total Time\": 0.000000"));
	CHECK(strstr(js, "\"xfer\": {\"Total Count\": 1, \"Total Time\": 0.500000"));
	/* Open ranges are left out of the statistics; the anomalies say so. */
	CHECK(!strstr(js, "\"open\": {") && !strstr(js, "\"leak\": {"));
	CHECK(strstr(js, "\"anomalies\": {\"open\": 1, \"open_cross\": 1, \"lost_begin\": 1, "
	                 "\"shortened\": 1, \"pop_no_push\": 2, \"depth_overflow\": 3"));
	free(js);
	sum = kx_summary_build(an);
	f = open_memstream(&table, &len);
	CHECK(sum && f);
	kx_summary_print_table(sum, f, 0);
	fclose(f);
	CHECK(strstr(table,
	             "\nannotation\nName         Count    Total      Avg      p50      p99      "
	             "Max  Ioctls   Device\n"));
	CHECK(strstr(table,
	             "\nstep             1  1.200ms  1.200ms  1.200ms  1.200ms  1.200ms       2  "
	             "680.0µs\n"));
	CHECK(strstr(table,
	             "\ntick             1      0ns      0ns      0ns      0ns      0ns       -  "
	             "      -\n"));
	free(table);
	kx_summary_free(sum);
	kx_analysis_free(an);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void chrome_slices(void)
{
	char path[] = "/tmp/kx-ann-chrome-XXXXXX", err[256], *js;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && load());
	close(fd);
	CHECK(kxt_chrome_write(store, &ci, path, err, sizeof(err)) == 0);
	js = slurp(path);
	unlink(path);
	CHECK(js);
	CHECK_EQ_U(count(js, "{\"ph\":\"X\",\"name\":\"step\",\"cat\":\"annotation\",\"pid\":6000,"
	                     "\"tid\":6001,\"ts\":0.000,\"dur\":1200.000,\"args\":{\"depth\":1,"
	                     "\"ioctls\":2,\"device_jobs\":1,\"device_us\":680.000}}"),
	           1);
	CHECK_EQ_U(count(js, "\"category\":\"dom\""), 1);
	CHECK_EQ_U(count(js, "{\"ph\":\"i\",\"name\":\"tick\",\"cat\":\"annotation\",\"pid\":6000,"
	                     "\"tid\":6001,\"ts\":60.000,\"s\":\"t\""),
	           1);
	CHECK_EQ_U(count(js, "{\"ph\":\"b\",\"name\":\"xfer\",\"cat\":\"annotation\",\"pid\":6000,"
	                     "\"tid\":6001,\"ts\":2100.000,\"id\":"),
	           1);
	CHECK_EQ_U(count(js, "{\"ph\":\"e\",\"name\":\"xfer\",\"cat\":\"annotation\",\"pid\":6000,"
	                     "\"tid\":6002,\"ts\":2600.000,\"id\":"),
	           1);
	CHECK_EQ_U(count(js, "\"open\":true"), 2);
	/* The ioctl "cut" holds ends with it. */
	CHECK_EQ_U(count(js, "\"tid\":6003,\"ts\":7100.000,\"dur\":50.000"), 1);
	CHECK_EQ_U(count(js, "\"annotation_events\":15"), 1);
	free(js);
}

static const char *meta_name(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_event_metadata; i++)
		if (p->event_metadata[i]->key == id)
			return p->event_metadata[i]->value->name;
	return "";
}

static void xspace_lines(void)
{
	const XPlane *host = NULL;
	const XLine *l6001 = NULL, *async = NULL;
	uint8_t *buf;
	size_t len;
	char err[256];
	XSpace *x;
	int64_t last = -1;

	CHECK(load());
	CHECK(kxt_xspace_serialize(store, &ci, NULL, &buf, &len, err, sizeof(err)) == 0);
	x = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	CHECK(x);
	for (size_t i = 0; i < x->n_planes; i++)
		if (!strcmp(x->planes[i]->name, "/host:CPU"))
			host = x->planes[i];
	CHECK(host);
	for (size_t i = 0; i < host->n_lines; i++) {
		if (host->lines[i]->id == 6001)
			l6001 = host->lines[i];
		if (host->lines[i]->id == (0x40000000 | 6000))
			async = host->lines[i];
	}
	CHECK(l6001 && async);
	/* step, layer, tick, SUBMIT, SUBMIT, step (mark), SUBMIT, open: in start order. */
	CHECK_EQ_U(l6001->n_events, 8);
	CHECK_STR(meta_name(host, l6001->events[0]->metadata_id), "step");
	CHECK_STR(meta_name(host, l6001->events[1]->metadata_id), "layer");
	CHECK_STR(meta_name(host, l6001->events[2]->metadata_id), "tick");
	CHECK_STR(meta_name(host, l6001->events[3]->metadata_id), "DRM_IOCTL_MSM_GEM_SUBMIT");
	CHECK_STR(meta_name(host, l6001->events[7]->metadata_id), "open");
	CHECK_EQ_U(l6001->timestamp_ns, US(900));
	CHECK_EQ_U(l6001->events[0]->duration_ps, 1200000000ULL);
	CHECK_EQ_U(l6001->events[2]->duration_ps, 0);
	for (size_t i = 0; i < l6001->n_events; i++) {
		CHECK(l6001->events[i]->offset_ps >= last);
		last = l6001->events[i]->offset_ps;
	}
	/* Both cross-thread ranges on one lane: they do not overlap. */
	CHECK_EQ_U(async->n_events, 2);
	CHECK_STR(meta_name(host, async->events[0]->metadata_id), "xfer");
	CHECK_STR(async->name, "ranges of pid 6000");
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
}

/* A thread that exited with a range open: the range ends at its exit, and
 * the process's open cross-thread range at its last thread's exit (6004,
 * which never annotated), in the analysis, the warning, Chrome and XSpace. */
static void open_ranges_end_at_exit(void)
{
	char path[] = "/tmp/kx-ann-exit-XXXXXX", err[256], *js = NULL, *sum;
	struct kx_task exit6001 = {.ts = US(8000), .pid = 6000, .tid = 6001, .what = KX_TASK_EXIT};
	struct kx_task exit6004 = {.ts = US(9500), .pid = 6000, .tid = 6004, .what = KX_TASK_EXIT};
	const XPlane *host = NULL;
	struct kx_analysis *an;
	const struct kx_range *r;
	uint8_t *buf = NULL;
	size_t len = 0;
	XSpace *x = NULL;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && load());
	close(fd);
	CHECK(!kx_store_add_task(store, &exit6001) && !kx_store_add_task(store, &exit6004));
	an = kxt_analyse(store, &ci);
	CHECK(an);
	r = range_named(an, "open", KX_RANGE_THREAD);
	CHECK(r && r->open && r->begin + r->dur == US(8000));
	r = range_named(an, "leak", KX_RANGE_CROSS);
	CHECK(r && r->open && r->begin + r->dur == US(9500));
	sum = summary_json(an);
	CHECK(sum && strstr(sum, "1 annotation ranges still open at the end of the capture "
	                         "(pushed, never popped): closed where their thread ended"));
	free(sum);
	kx_analysis_free(an);
	CHECK(kxt_chrome_write(store, &ci, path, err, sizeof(err)) == 0);
	js = slurp(path);
	unlink(path);
	CHECK(js);
	/* ts are µs after the first event (@900). */
	CHECK_EQ_U(count(js, "{\"ph\":\"X\",\"name\":\"open\",\"cat\":\"annotation\",\"pid\":6000,"
	                     "\"tid\":6001,\"ts\":5100.000,\"dur\":2000.000,"),
	           1);
	CHECK_EQ_U(count(js, "{\"ph\":\"e\",\"name\":\"leak\",\"cat\":\"annotation\",\"pid\":6000,"
	                     "\"tid\":6001,\"ts\":8600.000,"),
	           1);
	free(js);
	CHECK(kxt_xspace_serialize(store, &ci, NULL, &buf, &len, err, sizeof(err)) == 0);
	x = buf ? tensorflow__profiler__xspace__unpack(NULL, len, buf) : NULL;
	free(buf);
	CHECK(x);
	for (size_t i = 0; x && i < x->n_planes; i++)
		if (!strcmp(x->planes[i]->name, "/host:CPU"))
			host = x->planes[i];
	CHECK(host);
	for (size_t i = 0; host && i < host->n_lines; i++) {
		const XLine *l = host->lines[i];

		for (size_t j = 0; j < l->n_events; j++) {
			const char *n = meta_name(host, l->events[j]->metadata_id);

			if (!strcmp(n, "open"))
				CHECK_EQ_U(l->events[j]->duration_ps, 2000000000ULL);
			if (!strcmp(n, "leak"))
				CHECK_EQ_U(l->events[j]->duration_ps, 5900000000ULL);
		}
	}
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
}

/* The stat named name on event e (its metadata id in the plane), or NULL. */
static const Tensorflow__Profiler__XStat *event_stat(const XPlane *p, const XEvent *e,
                                                     const char *name)
{
	for (size_t i = 0; i < e->n_stats; i++)
		for (size_t k = 0; k < p->n_stat_metadata; k++)
			if (p->stat_metadata[k]->key == (int64_t)e->stats[i]->metadata_id &&
			    !strcmp(p->stat_metadata[k]->value->name, name))
				return e->stats[i];
	return NULL;
}

/* The name of stat metadata id, or "". */
static const char *stat_name(const XPlane *p, uint64_t id)
{
	for (size_t k = 0; k < p->n_stat_metadata; k++)
		if (p->stat_metadata[k]->key == (int64_t)id)
			return p->stat_metadata[k]->value->name;
	return "";
}

/* Thread 6003 exec'd between its ranges "cut" and "late": "cut" carries the
 * name it began under (Chrome args.thread, XSpace stat "thread"), "late"
 * nothing (its line is named after the exec); the line id stays the tid. */
static void ranges_carry_thread_name(void)
{
	char path[] = "/tmp/kx-ann-names-XXXXXX", err[256], *js, *cutj, *endj, *ss = NULL;
	struct kx_analysis *an;
	size_t sslen = 0;
	FILE *f;
	struct kx_task seen = {.ts = US(7000), .pid = 6000, .tid = 6003, .what = KX_TASK_SEEN};
	struct kx_task exec = {.ts = US(9000), .pid = 6000, .tid = 6003, .what = KX_TASK_EXEC};
	const XPlane *host = NULL;
	const XLine *l6003 = NULL;
	int cut = 0, late = 0;
	uint8_t *buf = NULL;
	size_t len = 0;
	XSpace *x;
	int fd = mkstemp(path);

	snprintf(seen.comm, sizeof(seen.comm), "loader");
	snprintf(exec.comm, sizeof(exec.comm), "worker");
	snprintf(exec.cmd, sizeof(exec.cmd), "worker --fast");
	CHECK(fd >= 0 && load());
	close(fd);
	CHECK(!kx_store_add_task(store, &seen) && !kx_store_add_task(store, &exec));
	CHECK(kxt_chrome_write(store, &ci, path, err, sizeof(err)) == 0);
	js = slurp(path);
	unlink(path);
	CHECK(js);
	/* "cut" and the call inside it, both before the exec. */
	CHECK_EQ_U(count(js, "\"thread\":\"loader\""), 2);
	CHECK_EQ_U(count(js, "\"thread\":"), 2);
	cutj = js ? strstr(js, "{\"ph\":\"X\",\"name\":\"cut\"") : NULL;
	endj = cutj ? strstr(cutj, "}}") : NULL;
	CHECK(endj && endj - cutj > 17 && !strncmp(endj - 17, "\"thread\":\"loader\"", 17));
	free(js);
	CHECK(kxt_xspace_serialize(store, &ci, NULL, &buf, &len, err, sizeof(err)) == 0);
	x = buf ? tensorflow__profiler__xspace__unpack(NULL, len, buf) : NULL;
	free(buf);
	CHECK(x);
	for (size_t i = 0; x && i < x->n_planes; i++)
		if (!strcmp(x->planes[i]->name, "/host:CPU"))
			host = x->planes[i];
	for (size_t i = 0; host && i < host->n_lines; i++)
		if (host->lines[i]->id == 6003)
			l6003 = host->lines[i];
	CHECK(l6003 && !strcmp(l6003->name, "worker"));
	for (size_t j = 0; l6003 && j < l6003->n_events; j++) {
		const XEvent *e = l6003->events[j];
		const char *n = meta_name(host, e->metadata_id);
		const Tensorflow__Profiler__XStat *st = event_stat(host, e, "thread");

		if (!strcmp(n, "cut")) {
			cut = 1;
			CHECK(st && !strcmp(stat_name(host, st->ref_value), "loader"));
		}
		if (!strcmp(n, "late")) {
			late = 1;
			CHECK(!st);
		}
	}
	CHECK(cut && late);
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
	/* speedscope: the profile under the latest name says the command line. */
	an = kxt_analyse(store, &ci);
	f = open_memstream(&ss, &sslen);
	CHECK(an && f);
	CHECK(kx_speedscope_print(an, f, err, sizeof(err)) == 0);
	fclose(f);
	kx_analysis_free(an);
	CHECK(ss && strstr(ss, "{\"name\":\"worker [worker --fast] (pid 6000, tid 6003): ioctls, "
	                       "annotation ranges, off-CPU\""));
	free(ss);
}

/* The speedscope file: one evented profile per thread with ioctls or
 * ranges, its open and close events in time order and properly nested
 * (thread 6003's range "cut" and call partially overlap: the call is cut to
 * end with the range; the range "late" ends with the call it started in). */
static void speedscope_evented(void)
{
	char err[256], *buf = NULL, *p;
	size_t len = 0, profiles = 0, events = 0;
	struct kx_analysis *an;
	FILE *f;
	int bad = 0;

	CHECK(load());
	an = kxt_analyse(store, &ci);
	f = open_memstream(&buf, &len);
	CHECK(an && f);
	CHECK(kx_speedscope_print(an, f, err, sizeof(err)) == 0);
	fclose(f);
	kx_analysis_free(an);
	CHECK(buf &&
	      !strncmp(buf, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"",
	               62));
	CHECK(strstr(buf,
	             "{\"name\":\"[msm] DRM_IOCTL_MSM_GEM_SUBMIT\",\"file\":\"[driver call]\"}"));
	CHECK(strstr(buf, "{\"name\":\"layer\",\"file\":\"annotation/dom\"}"));
	for (p = buf; p && (p = strstr(p, "\"type\":\"evented\"")); profiles++) {
		char *end = strstr(p, "]");
		unsigned int stack[16], depth = 0, frame;
		unsigned long long at, last = 0;
		char type;

		while ((p = strstr(p, "{\"type\":\"")) && p < end &&
		       sscanf(p, "{\"type\":\"%c\",\"frame\":%u,\"at\":%llu}", &type, &frame,
		              &at) == 3) {
			events++;
			bad |= at < last;
			last = at;
			if (type == 'O' && depth < 16)
				stack[depth++] = frame;
			else
				bad |= type != 'C' || !depth || stack[--depth] != frame;
			p++;
		}
		bad |= depth != 0;
		p = end;
	}
	/* 6001: step, layer, 3 calls, open; 6002: a call; 6003: cut, late, 2 calls. */
	CHECK_EQ_U(profiles, 3);
	CHECK_EQ_U(events, 2 * (6 + 1 + 4));
	CHECK(!bad);
	/* 6003, µs after @900: the call @8000 cut to end with "cut" @8050. */
	CHECK(strstr(buf, "\"at\":7100000},{\"type\":\"C\",\"frame\":") &&
	      strstr(buf, "\"at\":7150000},{\"type\":\"C\","));
	free(buf);
}

/* ---- live aggregates ---- */

static void live_pairing_and_bounds(void)
{
	struct kx_annagg *a = kx_annagg_new(3);
	struct kx_annagg_snapshot s;
	struct kx_ann e = {.pid = 1, .tid = 2};
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	struct kx_agg_snapshot none = {0};
	struct kx_prom_info info = {"0.1", "k", "tp_btf", 0, NULL, NULL};

	CHECK(a);
	for (int i = 0; i < 3; i++) {
		e = (struct kx_ann){.pid = 1, .tid = 2, .what = KX_ANN_PUSH, .depth = 1, .ts = 100};
		kx_annagg_add(a, &e, "step", "");
		e.what = KX_ANN_PUSH;
		e.depth = 2;
		kx_annagg_add(a, &e, "layer", "dom");
		e = (struct kx_ann){.pid = 1,
		                    .tid = 2,
		                    .what = KX_ANN_POP,
		                    .depth = 2,
		                    .ts = 1100,
		                    .begin = 100};
		kx_annagg_add(a, &e, "", "");
		e.depth = 1;
		e.ts = 3100;
		kx_annagg_add(a, &e, "", "");
	}
	e = (struct kx_ann){.pid = 1, .tid = 2, .what = KX_ANN_MARK};
	kx_annagg_add(a, &e, "tick", "");
	kx_annagg_add(a, &e, "over", ""); /* the fourth name: past the limit */
	e = (struct kx_ann){.pid = 1, .tid = 9, .what = KX_ANN_POP, .depth = 1, .ts = 5};
	kx_annagg_add(a, &e, "", ""); /* a pop on a thread never seen */
	CHECK(kx_annagg_snapshot(a, &s, 1) == 0);
	CHECK_EQ_U(s.nseries, 3);
	CHECK_STR(s.series[0].name, "step");
	CHECK_EQ_U(s.series[0].count, 3);
	CHECK_EQ_U(s.series[0].sum_ns, 9000);
	CHECK_EQ_U(s.series[0].min_ns, 3000);
	CHECK_STR(s.series[1].cat, "dom");
	CHECK_EQ_U(s.series[1].count, 3);
	CHECK(s.series[2].mark && s.series[2].count == 1);
	CHECK_EQ_U(s.overflow, 1);
	CHECK_EQ_U(s.lost, 1);
	info.anns = &s;
	f = open_memstream(&text, &len);
	CHECK(f);
	CHECK(kx_prom_write(f, &none, &info) == 0);
	fclose(f);
	CHECK(strstr(text,
	             "kxprof_annotation_duration_seconds_count{name=\"step\",category=\"\"} 3\n"));
	CHECK(strstr(text,
	             "kxprof_annotation_duration_seconds_sum{name=\"layer\",category=\"dom\"} "
	             "0.000003\n"));
	CHECK(strstr(text, "kxprof_annotation_marks_total{name=\"tick\",category=\"\"} 1\n"));
	CHECK(strstr(text, "kxprof_map_overflow_total{map=\"annotations\"} 1\n"));
	CHECK(strstr(text, "kxprof_annotation_lost_total 1\n"));
	free(text);
	kx_annagg_snapshot_free(&s);
	/* The reset cleared the counts, kept the names. */
	CHECK(kx_annagg_snapshot(a, &s, 0) == 0);
	CHECK(s.nseries == 3 && s.series[0].count == 0);
	kx_annagg_snapshot_free(&s);
	kx_annagg_free(a);
}

/* A thread table that is full gives up its least recently used thread. */
static void live_threads_bounded(void)
{
	struct kx_annagg *a = kx_annagg_new(0);
	struct kx_annagg_snapshot s;
	struct kx_ann e;

	CHECK(a);
	for (uint32_t t = 1; t <= KX_ANNAGG_MAX_THREADS + 1; t++) {
		e = (struct kx_ann){.tid = t, .what = KX_ANN_PUSH, .depth = 1, .ts = 10};
		kx_annagg_add(a, &e, "r", "");
	}
	/* Thread 1 was the oldest: evicted; the last one still pairs. */
	e = (struct kx_ann){.tid = 1, .what = KX_ANN_POP, .depth = 1, .ts = 20, .begin = 10};
	kx_annagg_add(a, &e, "", "");
	e.tid = KX_ANNAGG_MAX_THREADS + 1;
	kx_annagg_add(a, &e, "", "");
	CHECK(kx_annagg_snapshot(a, &s, 0) == 0);
	CHECK_EQ_U(s.series[0].count, 1);
	CHECK_EQ_U(s.lost, 1);
	kx_annagg_snapshot_free(&s);
	kx_annagg_free(a);
}

int main(void)
{
	RUN(store_interns_names);
	RUN(record_file_keeps_them);
	RUN(record_file_damage);
	RUN(pairs_and_anomalies);
	RUN(ioctls_and_device_time);
	RUN(one_nesting_rule);
	RUN(summary_rows);
	RUN(chrome_slices);
	RUN(xspace_lines);
	RUN(open_ranges_end_at_exit);
	RUN(ranges_carry_thread_name);
	RUN(speedscope_evented);
	RUN(live_pairing_and_bounds);
	RUN(live_threads_bounded);
	kx_store_free(store);
	KXT_EXIT();
}
