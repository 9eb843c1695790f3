/*
 * Block completions that never reached the program (KX_STAT_JOB_DONE_LOST,
 * counted by bpf/jobs.bpf.c when a sector's next request comes while the
 * previous one is open): a generated loop capture where sector 8's first
 * request has no DONE and the capture facts count one lost. The count
 * survives the record file (field 92) and the replay fixture format, the
 * report says it (a warning and "job_done_lost" in the JSON "Capture"),
 * while the pairing keeps its rules (that request's QUEUE and RUN of the
 * next one are two duplicates); the live aggregates export it as
 * kxprof_events_dropped_total{reason="completion_lost"} and serve's summary
 * warns of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/jobs.h"
#include "export/prometheus.h"
#include "export/summary.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "kxp_gen_stream.h"
#include "kxtest.h"
#include "kxtest_analysis.h"

#define LOOP0 (7u << 20 | 0)
#define US(x) ((uint64_t)(x)*1000u + 1000000000u)

static const char *warning = "1 block request completions never reached kxprof's program";

static int blk(struct kx_store *s, uint64_t ts, int phase, uint64_t sector)
{
	struct kx_job j = {.ts = ts,
	                   .dev = LOOP0,
	                   .seqno = sector,
	                   .aux = 4096,
	                   .aux2 = 2,
	                   .pid = phase == KX_JOB_DONE ? 0 : 50,
	                   .tid = phase == KX_JOB_DONE ? 0 : 50,
	                   .src = KX_JOB_SRC_BLOCK,
	                   .phase = (uint8_t)phase};

	snprintf(j.ring, sizeof(j.ring), "loop0");
	return kx_store_add_job(s, &j);
}

/* Sector 8: a request whose DONE never came, then the next one; sector 16: one request. */
static struct kx_store *capture(struct kx_capinfo *ci)
{
	struct kx_store *s = kx_store_new(0);
	int rc = 0;

	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	snprintf(ci->kernel, sizeof(ci->kernel), "6.18.0-test");
	ci->start_mono_ns = US(0);
	ci->stop_mono_ns = US(100);
	ci->job_emitted = ci->job_received = 8;
	ci->job_done_lost = 1;
	if (!s)
		return NULL;
	rc |= blk(s, US(1), KX_JOB_QUEUE, 8);
	rc |= blk(s, US(2), KX_JOB_RUN, 8);
	rc |= blk(s, US(3), KX_JOB_QUEUE, 16);
	rc |= blk(s, US(4), KX_JOB_RUN, 16);
	rc |= blk(s, US(5), KX_JOB_DONE, 16);
	rc |= blk(s, US(10), KX_JOB_QUEUE, 8);
	rc |= blk(s, US(11), KX_JOB_RUN, 8);
	rc |= blk(s, US(12), KX_JOB_DONE, 8);
	if (rc) {
		kx_store_free(s);
		return NULL;
	}
	return s;
}

/* The summary JSON of the capture s (the in-memory report). */
static char *report_json(const struct kx_store *s, const struct kx_capinfo *ci,
                         uint64_t *duplicates)
{
	struct kx_analysis *an = kxt_analyse(s, ci);
	struct kx_summary *sum = an ? kx_summary_build(an) : NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (sum && (f = open_memstream(&buf, &len))) {
		kx_summary_print_json(sum, f, 0);
		fclose(f);
	}
	if (an && an->jobs)
		*duplicates = an->jobs->anom.duplicate;
	kx_summary_free(sum);
	kx_analysis_free(an);
	return buf;
}

static void record_file(void)
{
	char path[] = "/tmp/kxprof-donelost-XXXXXX", err[256];
	struct kx_capinfo ci, back;
	struct kx_kxp_read_result res;
	struct kx_store *s = capture(&ci), *r = kx_store_new(0);
	uint64_t dup = 0;
	char *t;
	int fd = mkstemp(path);

	CHECK(s && r && fd >= 0);
	close(fd);
	CHECK(write_kxp(path, s, &ci, L_RECORDED) == 0);
	CHECK(kx_kxp_read(path, r, &back, &res, err, sizeof(err)) == 0);
	unlink(path);
	CHECK_EQ_U(back.job_done_lost, 1);
	CHECK_EQ_U(kx_store_job_count(r), 8);
	t = report_json(r, &back, &dup);
	CHECK(t);
	CHECK(strstr(t, "\"job_dropped\": 0, \"job_done_lost\": 1, \"bpf_missed\": 0"));
	CHECK(strstr(t, warning));
	CHECK_EQ_U(dup, 2); /* the pairing's rules stay: the next request's QUEUE and RUN */
	free(t);
	kx_store_free(s);
	kx_store_free(r);
}

/* The replay fixture format carries it too (tests/fixtures/\*.jsonl). */
static void replay_fixture(void)
{
	char path[] = "/tmp/kxprof-donelost-XXXXXX", err[256];
	const char *text =
	        "{\"type\":\"capture\",\"host\":\"h\",\"kernel\":\"k\",\"job_done_lost\":3}\n";
	struct kx_capinfo ci;
	struct kx_store *s = kx_store_new(0);
	int fd = mkstemp(path);

	CHECK(s && fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK(kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
	unlink(path);
	CHECK_EQ_U(ci.job_done_lost, 3);
	kx_store_free(s);
}

/* serve: the live aggregates' count in /metrics and /summary.json. */
static void live_metrics(void)
{
	struct kx_agg_snapshot a = {.max_keys = 16, .job_done_lost = 5},
	                       prev = {.job_done_lost = 2}, d;
	struct kx_prom_info info = {.version = "t"};
	struct kx_summary *sum;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && kx_prom_write(f, &a, &info) == 0);
	fclose(f);
	CHECK(strstr(buf, "\nkxprof_events_dropped_total{reason=\"completion_lost\"} 5\n"));
	free(buf);
	sum = kx_summary_from_agg(&a, NULL);
	CHECK(sum && (f = open_memstream(&buf, &len)));
	kx_summary_print_json(sum, f, 0);
	fclose(f);
	kx_summary_free(sum);
	CHECK(strstr(buf, "\"job_done_lost\": 5"));
	CHECK(strstr(buf, "\"5 block request completions never reached kxprof's program"));
	free(buf);
	CHECK(kx_agg_diff(&a, &prev, &d) == 0); /* top's interval */
	CHECK_EQ_U(d.job_done_lost, 3);
	kx_agg_snapshot_free(&d);
}

int main(void)
{
	RUN(record_file);
	RUN(replay_fixture);
	RUN(live_metrics);
	KXT_EXIT();
}
