/*
 * The busy time live's bound cut, as top and serve show it: a KVM capture
 * recorded under load (tests/fixtures/kvm_busy_cut.kxp: a vCPU's 52.7 ms
 * KVM_RUN while the other vCPU ran more than KX_JOBAGG_MAX_IVALS jobs) goes
 * through the live job aggregates; the cut (20,849,269 ns) must reach
 * serve's /metrics (kxprof_job_busy_cut_seconds_total, accepted by promtool
 * when installed), /summary.json ("Live jobs": busy_cut_ms, busy_exact and a
 * warning), /summary (busy ">=" and the cut) and top's job line (busy %
 * marked ">=" with the share cut). With room for every interval nothing is
 * cut, and every output says the busy time is exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/jobs.h"
#include "export/prometheus.h"
#include "export/summary.h"
#include "io/kxp.h"
#include "kxtest.h"
#include "kxtest_live.h"
#include "live/interval.h"

#define CUT_NS 20849269u /* what the bound cuts in the fixture (test_live_paths) */

static struct kx_capinfo ci;
static struct kx_store *st;
static struct kx_jobs *jb;

static int load(void)
{
	const char *dir = getenv("KX_FIXTURES");
	struct kx_kxp_read_result res;
	char path[512], err[512];

	snprintf(path, sizeof(path), "%s/kvm_busy_cut.kxp", dir && *dir ? dir : "tests/fixtures");
	st = kx_store_new(0);
	if (!st || kx_kxp_read(path, st, &ci, &res, err, sizeof(err))) {
		printf("cannot read %s: %s\n", path, err);
		return -1;
	}
	jb = kx_jobs_build(st, &ci);
	return jb ? 0 : -1;
}

/* The /metrics text of the live job aggregates s (no ioctl rows). */
static char *metrics(const struct kx_jobagg_snapshot *s)
{
	struct kx_agg_snapshot agg = {.max_keys = 16};
	struct kx_prom_info info = {.version = "t", .jobs_attached = 1, .jobs = s};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (kx_prom_write(f, &agg, &info)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* serve's /summary.json (json) or /summary of s (no ioctl rows). */
static char *summary(const struct kx_jobagg_snapshot *s, int json)
{
	struct kx_agg_snapshot agg = {.since_mono_ns = 1, .mono_ns = 2000000001};
	struct kx_summary *sum = kx_summary_from_agg(&agg, NULL);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!sum || kx_summary_add_jobagg(sum, s) || !(f = open_memstream(&buf, &len))) {
		kx_summary_free(sum);
		return NULL;
	}
	if (json)
		kx_summary_print_json(sum, f, 0);
	else
		kx_summary_print_table(sum, f, 0);
	fclose(f);
	kx_summary_free(sum);
	return buf;
}

/* promtool check metrics on t: 0 when it accepts it (or is not installed). */
static int promtool_ok(const char *t)
{
	char path[] = "/tmp/kxprof-cut-XXXXXX", cmd[128], out[4096];
	int fd, rc;
	size_t n;
	FILE *p;

	if (access("/usr/bin/promtool", X_OK) != 0)
		return 0;
	if ((fd = mkstemp(path)) < 0)
		return -1;
	rc = write(fd, t, strlen(t)) == (ssize_t)strlen(t) ? 0 : -1;
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	if (!rc && (p = popen(cmd, "r"))) {
		n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = 0;
		if ((rc = pclose(p)))
			printf("promtool said: %s\n", out);
	}
	unlink(path);
	return rc;
}

static void metrics_cut(void)
{
	struct kx_jobagg_snapshot s;
	char *t;

	CHECK(live_jobs(st, jb, 0, 0, &s) == 0);
	CHECK_EQ_U(s.devs[0].busy_cut_ns, CUT_NS);
	t = metrics(&s);
	CHECK(t);
	CHECK(strstr(t, "# TYPE kxprof_job_busy_cut_seconds_total counter\n"));
	CHECK(strstr(t, "\nkxprof_job_busy_cut_seconds_total{device=\"kvm\"} 0.020849269\n"));
	CHECK(strstr(t, "\nkxprof_job_busy_seconds_total{device=\"kvm\"} 0.653465738\n"));
	CHECK(promtool_ok(t) == 0);
	free(t);
	kx_jobagg_snapshot_free(&s);

	CHECK(live_jobs(st, jb, 0, 1u << 20, &s) == 0); /* room for every interval */
	t = metrics(&s);
	CHECK(t && strstr(t, "\nkxprof_job_busy_cut_seconds_total{device=\"kvm\"} 0\n"));
	free(t);
	kx_jobagg_snapshot_free(&s);
}

static void summary_cut(void)
{
	struct kx_jobagg_snapshot s;
	char *t;

	CHECK(live_jobs(st, jb, 0, 0, &s) == 0);
	t = summary(&s, 1);
	CHECK(t);
	CHECK(strstr(t, "\"Live jobs\": {\"overflow\": 0, "));
	CHECK(strstr(t, "\"kvm\": {\"jobs\": "));
	CHECK(strstr(t, "\"busy_ms\": 653.465738, \"busy_cut_ms\": 20.849269, "
	                "\"busy_exact\": false}"));
	CHECK(strstr(t, "\"busy time of kvm is a lower bound: up to 20.849 ms more was cut"));
	free(t);
	t = summary(&s, 0);
	CHECK(t);
	CHECK(strstr(t, "\nDevices (live jobs)\nkvm: 600 jobs, 600 completed, 0 in flight; "));
	CHECK(strstr(t, " in flight; busy >=653.466 ms (up to 20.849 ms more cut)\n"));
	CHECK(strstr(t, "busy time of kvm is a lower bound"));
	free(t);
	kx_jobagg_snapshot_free(&s);

	CHECK(live_jobs(st, jb, 0, 1u << 20, &s) == 0);
	t = summary(&s, 1);
	CHECK(t && strstr(t, "\"busy_cut_ms\": 0.000000, \"busy_exact\": true}"));
	CHECK(t && !strstr(t, "lower bound"));
	free(t);
	t = summary(&s, 0);
	CHECK(t && strstr(t, " in flight; busy 653.520 ms\n"));
	free(t);
	kx_jobagg_snapshot_free(&s);
}

/* top's job line over a 1 s interval: 65% busy, up to 2% more cut. */
static void top_line_cut(void)
{
	struct kx_jobagg_snapshot s;
	struct kx_live_busy b;
	char line[160];

	CHECK(live_jobs(st, jb, 0, 0, &s) == 0);
	kx_live_busiest(&s, 1.0, &b);
	CHECK(b.cut_pct > 2.08 && b.cut_pct < 2.09);
	kx_live_busy_line(&b, 1, line, sizeof(line));
	CHECK_STR(line, "jobs in flight: 0  device busy: >=65% (kvm; up to 2% more cut)");
	kx_live_busiest(&s, 100.0, &b); /* a cut under 1% of the interval */
	kx_live_busy_line(&b, 1, line, sizeof(line));
	CHECK_STR(line, "jobs in flight: 0  device busy: >=1% (kvm; up to <1% more cut)");
	kx_live_busiest(&s, 0.6, &b); /* busy share capped: the cut within what is left */
	CHECK(b.busy_pct == 100.0 && b.cut_pct == 0);
	kx_jobagg_snapshot_free(&s);

	CHECK(live_jobs(st, jb, 0, 1u << 20, &s) == 0);
	kx_live_busiest(&s, 1.0, &b);
	CHECK(b.cut_pct == 0);
	kx_live_busy_line(&b, 1, line, sizeof(line));
	CHECK_STR(line, "jobs in flight: 0  device busy: 65% (kvm)");
	kx_jobagg_snapshot_free(&s);
}

int main(void)
{
	if (load()) {
		printf("FAIL: the fixture\n");
		return 1;
	}
	RUN(metrics_cut);
	RUN(summary_cut);
	RUN(top_line_cut);
	kx_jobs_free(jb);
	kx_store_free(st);
	KXT_EXIT();
}
