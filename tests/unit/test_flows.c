/*
 * Unit tests of the flow rule (user/analysis/flows.c): a flow starts at the
 * submit point (the queue event inside the submitting ioctl, else the
 * ioctl's enter) and finishes at the job's device start, never before it; a
 * job that starts on its device before its submit point gets no flow, is
 * counted, and a warning says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kxtest.h"
#include "analysis/flows.h"
#include "export/chrome.h"
#include "export/evnames.h"
#include "io/replay.h"

#define T0_NS 10000000000ULL /* the fixture's T0 (10 s); times below in µs after it */
#define US(x) (T0_NS + (uint64_t)(x)*1000)

/*
 * One msm device, three GEM_SUBMITs on thread 6001 (µs after T0):
 *   1000+100: queued at 1050 (inside), run at 1120     -> flow 1050 -> 1120
 *   2000+60:  queued at 2100 (after the call), run 2150 -> flow 2000 -> 2150
 *   3000+100: queued at 3050, run at 3080; the analysis pairs events in time
 *             order, so a run before its queue cannot come out of a replay:
 *             load() moves the run to 3040, as a device clock that disagrees
 *             with the host's would                    -> no flow, counted
 * and a job queued by a thread with no ioctl: no link, no flow, not counted.
 */
static const char fixture[] =
        "{\"type\":\"capture\",\"host\":\"h\",\"kernel\":\"k\",\"start_ns\":10000000000,"
        "\"stop_ns\":10010000000,\"realtime_offset_ns\":0,\"emitted\":3,\"received\":3,"
        "\"job_emitted\":12,\"job_received\":12}\n"
        "{\"type\":\"device\",\"node\":\"/dev/dri/renderD128\",\"driver\":\"msm\",\"kind\":"
        "\"chr\",\"dev\":\"226:128\"}\n"
        "{\"type\":\"ioctl\",\"ts\":10001000000,\"dur\":100000,\"pid\":6000,\"tid\":6001,"
        "\"driver\":\"msm\",\"kind\":\"chr\",\"dev\":\"226:128\",\"fd\":7,\"cmd\":"
        "\"DRM_IOCTL_MSM_GEM_SUBMIT\",\"cpu\":0}\n"
        "{\"type\":\"job\",\"ts\":10001050000,\"src\":\"msm\",\"phase\":\"queue\",\"ctx\":0,"
        "\"seqno\":1,\"pid\":6000,\"tid\":6001}\n"
        "{\"type\":\"job\",\"ts\":10001120000,\"src\":\"msm\",\"phase\":\"run\",\"ctx\":0,"
        "\"seqno\":1,\"pid\":190,\"tid\":190}\n"
        "{\"type\":\"job\",\"ts\":10001800000,\"src\":\"msm\",\"phase\":\"done\",\"ctx\":0,"
        "\"seqno\":1,\"pid\":191,\"tid\":191}\n"
        "{\"type\":\"ioctl\",\"ts\":10002000000,\"dur\":60000,\"pid\":6000,\"tid\":6001,"
        "\"driver\":\"msm\",\"kind\":\"chr\",\"dev\":\"226:128\",\"fd\":7,\"cmd\":"
        "\"DRM_IOCTL_MSM_GEM_SUBMIT\",\"cpu\":0}\n"
        "{\"type\":\"job\",\"ts\":10002100000,\"src\":\"msm\",\"phase\":\"queue\",\"ctx\":0,"
        "\"seqno\":2,\"pid\":6000,\"tid\":6001}\n"
        "{\"type\":\"job\",\"ts\":10002150000,\"src\":\"msm\",\"phase\":\"run\",\"ctx\":0,"
        "\"seqno\":2,\"pid\":190,\"tid\":190}\n"
        "{\"type\":\"job\",\"ts\":10002300000,\"src\":\"msm\",\"phase\":\"done\",\"ctx\":0,"
        "\"seqno\":2,\"pid\":191,\"tid\":191}\n"
        "{\"type\":\"ioctl\",\"ts\":10003000000,\"dur\":100000,\"pid\":6000,\"tid\":6001,"
        "\"driver\":\"msm\",\"kind\":\"chr\",\"dev\":\"226:128\",\"fd\":7,\"cmd\":"
        "\"DRM_IOCTL_MSM_GEM_SUBMIT\",\"cpu\":0}\n"
        "{\"type\":\"job\",\"ts\":10003050000,\"src\":\"msm\",\"phase\":\"queue\",\"ctx\":1,"
        "\"seqno\":1,\"pid\":6000,\"tid\":6001}\n"
        "{\"type\":\"job\",\"ts\":10003080000,\"src\":\"msm\",\"phase\":\"run\",\"ctx\":1,"
        "\"seqno\":1,\"pid\":190,\"tid\":190}\n"
        "{\"type\":\"job\",\"ts\":10003400000,\"src\":\"msm\",\"phase\":\"done\",\"ctx\":1,"
        "\"seqno\":1,\"pid\":191,\"tid\":191}\n"
        "{\"type\":\"job\",\"ts\":10004000000,\"src\":\"msm\",\"phase\":\"queue\",\"ctx\":1,"
        "\"seqno\":2,\"pid\":7000,\"tid\":7001}\n"
        "{\"type\":\"job\",\"ts\":10004100000,\"src\":\"msm\",\"phase\":\"run\",\"ctx\":1,"
        "\"seqno\":2,\"pid\":190,\"tid\":190}\n"
        "{\"type\":\"job\",\"ts\":10004200000,\"src\":\"msm\",\"phase\":\"done\",\"ctx\":1,"
        "\"seqno\":2,\"pid\":191,\"tid\":191}\n";

static struct kx_store *store;
static struct kx_capinfo ci;
static struct kx_analysis *an;

/* The analysis of the fixture above, or NULL after printing why. */
static struct kx_analysis *load(void)
{
	char path[] = "/tmp/kx-flows-XXXXXX.jsonl", err[256];
	int fd = mkstemps(path, 6);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f || fputs(fixture, f) < 0 || fclose(f)) {
		printf("# cannot write %s\n", path);
		return NULL;
	}
	store = kx_store_new(0);
	if (!store || kx_replay_load(path, store, &ci, err, sizeof(err))) {
		printf("# replay: %s\n", err);
		unlink(path);
		return NULL;
	}
	unlink(path);
	an = kx_analysis_build(store, &ci, err, sizeof(err));
	if (!an) {
		printf("# analysis: %s\n", err);
		return NULL;
	}
	for (size_t k = 0; k < an->jobs->njobs; k++)
		if (an->jobs->jobs[k].run_ts == US(3080))
			an->jobs->jobs[k].run_ts = US(3040);
	return an;
}

/* The job submitted by store ioctl idx, or -1. */
static long job_of(size_t idx)
{
	for (size_t k = 0; k < an->jobs->njobs; k++)
		if (an->jobs->jobs[k].submit == (int64_t)idx)
			return (long)k;
	return -1;
}

/* Store index of the ioctl entered at ts. */
static long ioctl_at(uint64_t ts)
{
	for (size_t i = 0; i < kx_store_ioctl_count(store); i++)
		if (kx_store_ioctl(store, i)->ts == ts)
			return (long)i;
	return -1;
}

static void test_queue_inside_the_call(void)
{
	struct kx_flow fl;
	long i = ioctl_at(US(1000)), k;

	CHECK(an && i >= 0);
	k = job_of((size_t)i);
	CHECK(k >= 0);
	CHECK(kx_job_flow(an, (size_t)k, &fl) == 1);
	CHECK_EQ_U(fl.from_ns, US(1050));
	CHECK_EQ_U(fl.to_ns, US(1120));
}

static void test_queue_after_the_call(void)
{
	struct kx_flow fl;
	long i = ioctl_at(US(2000)), k;

	CHECK(an && i >= 0);
	k = job_of((size_t)i);
	CHECK(k >= 0);
	CHECK(kx_job_flow(an, (size_t)k, &fl) == 1);
	CHECK_EQ_U(fl.from_ns, US(2000));
	CHECK_EQ_U(fl.to_ns, US(2150));
}

static void test_device_start_before_submit(void)
{
	struct kx_flow fl = {1, 2};
	long i = ioctl_at(US(3000)), k;

	CHECK(an && i >= 0);
	k = job_of((size_t)i);
	CHECK(k >= 0);
	CHECK_EQ_U(an->jobs->jobs[k].run_ts, US(3040));
	CHECK(kx_job_flow(an, (size_t)k, &fl) == 0);
	CHECK_EQ_U(fl.from_ns, 1); /* untouched */
}

static void warn_cat(void *ctx, const char *msg)
{
	strncat(ctx, msg, 511 - strlen(ctx));
}

static void test_counts_and_sources(void)
{
	struct kx_flows fl;
	char msg[512] = "";

	CHECK(an);
	CHECK(kx_flows_build(&fl, an) == 0);
	CHECK_EQ_U(fl.drawn, 2);
	CHECK_EQ_U(fl.dropped, 1);
	CHECK(kx_flows_from(&fl, (size_t)ioctl_at(US(1000))));
	CHECK(kx_flows_from(&fl, (size_t)ioctl_at(US(2000))));
	CHECK(!kx_flows_from(&fl, (size_t)ioctl_at(US(3000))));
	CHECK(!kx_flows_from(&fl, kx_store_ioctl_count(store) + 5));
	kx_flows_warnings(&fl, warn_cat, msg);
	kx_flows_free(&fl);
	CHECK(strstr(msg, "1 jobs start on their device before their submitting ioctl") == msg);
}

/* Every drawn flow of every replay fixture runs forward in time. */
static void test_fixtures_forward(void)
{
	static const char *const names[] = {"amdgpu_new", "amdgpu_old", "block",  "i915",
	                                    "kvm",        "msm",        "nvidia", "xe"};
	const char *dir = getenv("KX_FIXTURES");

	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		struct kx_store *s = kx_store_new(0);
		static struct kx_capinfo fci;
		struct kx_analysis *fa;
		struct kx_flows fl;
		char path[512], err[256];
		struct kx_flow f;

		snprintf(path, sizeof(path), "%s/%s.jsonl", dir && *dir ? dir : "tests/fixtures",
		         names[n]);
		CHECK(s && kx_replay_load(path, s, &fci, err, sizeof(err)) == 0);
		fa = kx_analysis_build(s, &fci, err, sizeof(err));
		CHECK(fa);
		CHECK(kx_flows_build(&fl, fa) == 0);
		CHECK_EQ_U(fl.dropped, 0);
		for (size_t k = 0; k < fa->jobs->njobs; k++) {
			const struct kx_jobrec *j = &fa->jobs->jobs[k];
			const struct kx_ioctl *e;

			if (!kx_job_flow(fa, k, &f))
				continue;
			e = kx_store_ioctl(s, (size_t)j->submit);
			CHECK(f.from_ns <= f.to_ns);
			CHECK(f.from_ns >= e->ts && f.from_ns <= e->ts + e->dur);
			CHECK(f.from_ns == e->ts || f.from_ns == j->queue_ts);
			CHECK_EQ_U(f.to_ns, kx_jobrec_start(j));
		}
		/* Kept once (kx_flows_keep), every output gets the same flows. */
		CHECK(kx_flows_keep(fa) == 0 && fa->flows.from);
		{
			struct kx_flows again;

			CHECK(kx_flows_build(&again, fa) == 0);
			CHECK(again.drawn == fl.drawn && again.dropped == fl.dropped &&
			      again.nioctls == fl.nioctls);
			CHECK(!memcmp(again.from, fl.from, fl.nioctls / 8 + 1));
			CHECK(again.from != fa->flows.from);
			kx_flows_free(&again);
		}
		kx_flows_free(&fl);
		kx_analysis_free(fa);
		kx_store_free(s);
	}
}

/*
 * One window of a capture read in windows (analysis.h's kx_jobview): a
 * job's submitting call is the view's copy (its drawn length the whole
 * capture's), the flows and their sources the whole capture's, and the
 * Chrome trace numbers jobs, calls and totals as the whole capture does.
 */
static void test_window_view(void)
{
	static uint64_t job_id[8], call_id[8];
	static struct kx_ioctl sub[8];
	static uint8_t submitted[1] = {0x1}, from[1] = {0x2};
	struct kx_jobview v = {.job_id = job_id,
	                       .submit = sub,
	                       .call_id = call_id,
	                       .submitted = submitted,
	                       .flow_from = from,
	                       .njobs = 1234,
	                       .job_events = 5678,
	                       .flows_dropped = 9,
	                       .first_ns = US(1000)};
	long i = ioctl_at(US(1000)), k;
	char json[] = "/tmp/kx-flows-view-XXXXXX.json", err[256], buf[96], *text = NULL;
	struct kx_flows fl;
	struct kx_flow f;
	size_t len = 0;
	FILE *in;
	int fd;

	CHECK(an && i >= 0 && an->jobs->njobs <= 8 && kx_store_ioctl_count(store) <= 8);
	k = job_of((size_t)i);
	CHECK(k >= 0);
	for (size_t n = 0; n < an->jobs->njobs; n++)
		job_id[n] = 100 + n;
	for (size_t n = 0; n < kx_store_ioctl_count(store); n++)
		call_id[n] = 200 + n;
	/* Its call in an earlier window, cut to 40 µs there: the queue at 1050
	 * is past it, so the flow starts at the call's enter. */
	sub[k] = *kx_store_ioctl(store, (size_t)i);
	sub[k].dur = 40000;
	sub[k].cmd = 0;
	an->jview = &v;
	CHECK(kx_job_flow(an, (size_t)k, &f) == 1);
	CHECK_EQ_U(f.from_ns, US(1000));
	CHECK(strcmp(kx_job_name(an, (size_t)k, buf, sizeof(buf)), "DRM_IOCTL_MSM_GEM_SUBMIT"));
	CHECK(kx_flows_build(&fl, an) == 0);
	CHECK_EQ_U(fl.dropped, 9);
	CHECK(!kx_flows_from(&fl, 0) && kx_flows_from(&fl, 1));
	kx_flows_free(&fl);
	CHECK(kx_analysis_submitted(an, 0) && !kx_analysis_submitted(an, 1));
	fd = mkstemps(json, 5);
	CHECK(fd >= 0);
	close(fd);
	CHECK(kx_chrome_write(an, json, err, sizeof(err)) == 0);
	in = fopen(json, "r");
	CHECK(in && getdelim(&text, &len, 0, in) > 0);
	if (in)
		fclose(in);
	unlink(json);
	an->jview = NULL;
	snprintf(buf, sizeof(buf), "\"correlation_id\":%llu",
	         (unsigned long long)an->jobs->jobs[k].submit + 1);
	CHECK(text && strstr(text, buf));
	snprintf(buf, sizeof(buf), "{\"ph\":\"s\",\"id\":%llu,",
	         100ull + (unsigned long long)k + 1);
	CHECK(text && strstr(text, buf));
	CHECK(text && strstr(text, "\"job_events\":5678,\"jobs\":1234,"));
	CHECK(text && strstr(text, "9 jobs start on their device before"));
	free(text);
}

int main(void)
{
	load();
	RUN(test_queue_inside_the_call);
	RUN(test_queue_after_the_call);
	RUN(test_device_start_before_submit);
	RUN(test_counts_and_sources);
	RUN(test_fixtures_forward);
	RUN(test_window_view);
	kx_analysis_free(an);
	kx_store_free(store);
	KXT_EXIT();
}
