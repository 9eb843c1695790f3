/*
 * Prometheus exposition and live-aggregate arithmetic from synthetic
 * snapshots (no kernel): cumulative buckets, +Inf == _count, exact le and
 * _sum strings, label escaping, unique label sets, bucket percentiles,
 * snapshot diffs and folds, the live summary JSON, and `promtool check
 * metrics` on the output when promtool is installed.
 */
#include <inttypes.h>
#include <stdint.h>
#include <unistd.h>

#include "kxtest.h"

#include "live/aggregate.h"
#include "registry/ioctl_decode.h"
#include "export/prometheus.h"
#include "export/summary.h"
#include "util/hist.h"

#define KVM_RUN_CMD             0xae80u
#define KVM_GET_API_VERSION_CMD 0xae00u

static void row_init(struct kx_agg_row *r, unsigned int drv, unsigned int cmd, const char *driver,
                     const char *device, const char *ioctl)
{
	memset(r, 0, sizeof(*r));
	r->key.drv = (unsigned short)drv;
	r->key.cmd = cmd;
	r->key.fkind = KX_FK_CHR;
	r->key.dev = (10u << 20) | 232u;
	snprintf(r->driver, sizeof(r->driver), "%s", driver);
	snprintf(r->device, sizeof(r->device), "%s", device);
	snprintf(r->ioctl, sizeof(r->ioctl), "%s", ioctl);
}

static void row_add(struct kx_agg_row *r, uint64_t ns, uint64_t n)
{
	r->fine[kx_hist_fine_slot(ns)] += n;
	r->count += n;
	r->sum_ns += ns * n;
	if (!r->min_ns || ns < r->min_ns)
		r->min_ns = ns;
	if (ns > r->max_ns)
		r->max_ns = ns;
}

static uint64_t row_quantile(const struct kx_agg_row *r, unsigned int pct)
{
	return kx_hist_fine_quantile(r->fine, r->count, KX_PPM(pct), r->min_ns, r->max_ns);
}

/* Exposition text of snap, NUL-terminated (caller frees). */
static char *expose(const struct kx_agg_snapshot *snap)
{
	struct kx_prom_info info = {"0.1", "6.18.0-test", "tp_btf", 0, NULL, NULL};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (kx_prom_write(f, snap, &info)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* Value of the sample line that starts with prefix (name{labels}), or -1. */
static double sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static int count_lines(const char *text, const char *prefix)
{
	int c = 0;
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, n))
			c++;
	return c;
}

static struct kx_agg_row rows[4];

static void make_snap(struct kx_agg_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	row_init(&rows[0], KX_DRV_KVM, KVM_GET_API_VERSION_CMD, "kvm", "/dev/kvm",
	         "KVM_GET_API_VERSION");
	row_add(&rows[0], 150, 7);  /* bucket 7: [128, 256) */
	row_add(&rows[0], 3000, 3); /* bucket 11 */
	rows[0].errors = 2;
	row_init(&rows[1], KX_DRV_KVM, KVM_RUN_CMD, "kvm", "anon_inode:kvm-vcpu", "KVM_RUN");
	row_add(&rows[1], 900000, 100);
	row_add(&rows[1], 1500000000, 1); /* 1.5 s */
	row_add(&rows[1], 1ULL << 40, 1); /* beyond the last finite bucket */
	s->rows = rows;
	s->nrows = 2;
	s->max_keys = 4096;
	s->overflow = 5;
	s->dropped = 1;
	s->bpf_missed = 3;
	s->since_mono_ns = 1000;
	s->realtime_offset_ns = 1700000000LL * 1000000000LL;
}

static void test_buckets_cumulative(void)
{
	struct kx_agg_snapshot s;
	char *t, pre[256];
	double prev = 0;
	const char *lbl = "driver=\"kvm\",device=\"anon_inode:kvm-vcpu\",ioctl=\"KVM_RUN\"";

	make_snap(&s);
	t = expose(&s);
	CHECK(t);
	/* Every finite bucket (all slots but the open last one) plus +Inf. */
	snprintf(pre, sizeof(pre), "kxprof_ioctl_duration_seconds_bucket{%s,", lbl);
	CHECK_EQ_U(count_lines(t, pre), KX_HIST_SLOTS);
	for (int i = 0; i < KX_HIST_SLOTS - 1; i++) {
		char le[40];
		double v;

		snprintf(le, sizeof(le), "%.9f", (double)(2ULL << i) / 1e9);
		/* The text carries the exact decimal: trailing zeros trimmed. */
		for (size_t k = strlen(le); k > 0 && le[k - 1] == '0'; k--)
			le[k - 1] = 0;
		if (le[strlen(le) - 1] == '.')
			le[strlen(le) - 1] = 0;
		snprintf(pre, sizeof(pre), "kxprof_ioctl_duration_seconds_bucket{%s,le=\"%s\"}",
		         lbl, le);
		v = sample(t, pre);
		CHECK(v >= prev);
		prev = v;
	}
	snprintf(pre, sizeof(pre), "kxprof_ioctl_duration_seconds_bucket{%s,le=\"+Inf\"}", lbl);
	CHECK(sample(t, pre) == 102);
	CHECK(prev == 101); /* the 2^40 ns call is only in +Inf */
	snprintf(pre, sizeof(pre), "kxprof_ioctl_duration_seconds_count{%s}", lbl);
	CHECK(sample(t, pre) == 102);
	free(t);
}

static void test_exact_strings(void)
{
	struct kx_agg_snapshot s;
	char *t;

	make_snap(&s);
	t = expose(&s);
	CHECK(t);
	CHECK(strstr(t, "le=\"0.000000002\"} "));
	CHECK(strstr(t, "le=\"0.000001024\"} "));
	CHECK(strstr(t, "le=\"34.359738368\"} "));
	/* 100 x 0.9 ms + 1.5 s + 2^40 ns */
	CHECK(strstr(
	        t,
	        "kxprof_ioctl_duration_seconds_sum{driver=\"kvm\",device=\"anon_inode:kvm-vcpu\","
	        "ioctl=\"KVM_RUN\"} 1101.101627776\n"));
	CHECK(strstr(t, "kxprof_ioctl_errors_total{driver=\"kvm\",device=\"/dev/kvm\","
	                "ioctl=\"KVM_GET_API_VERSION\"} 2\n"));
	CHECK(strstr(t, "kxprof_map_overflow_total{map=\"ioctl\"} 5\n"));
	CHECK(strstr(t, "kxprof_events_dropped_total{reason=\"ringbuf_full\"} 1\n"));
	CHECK(strstr(t, "kxprof_events_dropped_total{reason=\"kernel_skipped\"} 3\n"));
	CHECK(strstr(t, "kxprof_aggregation_keys_limit{map=\"ioctl\"} 4096\n"));
	CHECK(strstr(
	        t,
	        "kxprof_build_info{version=\"0.1\",kernel=\"6.18.0-test\",mech=\"tp_btf\"} 1\n"));
	CHECK(strstr(t, "kxprof_aggregation_start_time_seconds 1700000000.000001\n"));
	free(t);
}

static void test_families(void)
{
	static const char *const fam[][2] = {
	        {"kxprof_build_info", "gauge"},
	        {"kxprof_ioctl_duration_seconds", "histogram"},
	        {"kxprof_ioctl_errors_total", "counter"},
	        {"kxprof_ioctl_offcpu_seconds_total", "counter"},
	        {"kxprof_job_queue_seconds", "histogram"},
	        {"kxprof_job_exec_seconds", "histogram"},
	        {"kxprof_events_dropped_total", "counter"},
	        {"kxprof_map_overflow_total", "counter"},
	        {"kxprof_aggregation_keys", "gauge"},
	};
	struct kx_agg_snapshot s;
	char *t, line[128];

	make_snap(&s);
	t = expose(&s);
	CHECK(t);
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		snprintf(line, sizeof(line), "# TYPE %s %s\n", fam[i][0], fam[i][1]);
		CHECK(strstr(t, line));
		snprintf(line, sizeof(line), "# HELP %s ", fam[i][0]);
		CHECK(strstr(t, line));
	}
	/* Not measured: no off-CPU samples; no job source: HELP says so. */
	CHECK(!strstr(t, "kxprof_ioctl_offcpu_seconds_total{"));
	CHECK(strstr(t, "no job source attached"));
	free(t);
}

static void test_label_escaping(void)
{
	char buf[128];
	struct kx_agg_snapshot s;
	char *t;

	CHECK_STR(kx_prom_label_escape("a\"b\\c\nd", buf, sizeof(buf)), "a\\\"b\\\\c\\nd");
	CHECK_STR(kx_prom_label_escape("bad\xff\x01utf\xc3\xa9", buf, sizeof(buf)),
	          "bad??utf\xc3\xa9");
	/* Truncation never splits an escape. */
	CHECK_STR(kx_prom_label_escape("ab\"", buf, 4), "ab");
	make_snap(&s);
	snprintf(rows[0].device, sizeof(rows[0].device), "/dev/we\"ird\\dev\n");
	t = expose(&s);
	CHECK(t);
	CHECK(strstr(t, "device=\"/dev/we\\\"ird\\\\dev\\n\""));
	free(t);
}

static void test_unique_label_sets(void)
{
	struct kx_agg_snapshot s;
	char *t;

	/* Two cmds (e.g. two sizes of one DRM command) with one name: one series. */
	make_snap(&s);
	row_init(&rows[2], KX_DRV_KVM, KVM_GET_API_VERSION_CMD | 0x10000u, "kvm", "/dev/kvm",
	         "KVM_GET_API_VERSION");
	row_add(&rows[2], 150, 5);
	s.nrows = 3;
	t = expose(&s);
	CHECK(t);
	CHECK_EQ_U(count_lines(
	                   t,
	                   "kxprof_ioctl_duration_seconds_count{driver=\"kvm\",device=\"/dev/kvm\","
	                   "ioctl=\"KVM_GET_API_VERSION\"}"),
	           1);
	CHECK(sample(t, "kxprof_ioctl_duration_seconds_count{driver=\"kvm\",device=\"/dev/kvm\","
	                "ioctl=\"KVM_GET_API_VERSION\"}") == 15);
	free(t);
}

static void test_by_pid_labels(void)
{
	struct kx_agg_snapshot s;
	char *t;

	make_snap(&s);
	s.by = KX_AGG_BY_PID;
	rows[0].key.who = 4242;
	snprintf(rows[0].comm, sizeof(rows[0].comm), "my app");
	t = expose(&s);
	CHECK(t);
	CHECK(strstr(t, "ioctl=\"KVM_GET_API_VERSION\",pid=\"4242\",comm=\"my app\"} 10\n"));
	free(t);
}

static void test_quantiles(void)
{
	struct kx_agg_row r;

	row_init(&r, KX_DRV_KVM, KVM_RUN_CMD, "kvm", "/dev/kvm", "KVM_RUN");
	CHECK_EQ_U(row_quantile(&r, 50), 0);
	row_add(&r, 1000, 90);                  /* fine slot [960, 1024): midpoint 992 */
	row_add(&r, 5000, 10);                  /* fine slot [4608, 5120): midpoint 4864 */
	CHECK_EQ_U(row_quantile(&r, 50), 1000); /* clamped to the exact min */
	r.min_ns = r.max_ns = 0;                /* as in a diff: slots only */
	CHECK_EQ_U(row_quantile(&r, 50), 992);
	CHECK_EQ_U(row_quantile(&r, 90), 992);
	CHECK_EQ_U(row_quantile(&r, 91), 4864);
	CHECK_EQ_U(row_quantile(&r, 99), 4864);
	r.max_ns = 4800;
	r.min_ns = 1000;
	CHECK_EQ_U(row_quantile(&r, 99), 4800); /* clamped to the exact max */
}

static void test_diff_and_fold(void)
{
	struct kx_agg_row a[3], b[2];
	struct kx_agg_snapshot prev = {0}, cur = {0}, d;

	row_init(&a[0], KX_DRV_KVM, KVM_GET_API_VERSION_CMD, "kvm", "/dev/kvm",
	         "KVM_GET_API_VERSION");
	row_add(&a[0], 200, 10);
	a[0].key.who = 1;
	row_init(&b[0], KX_DRV_KVM, KVM_GET_API_VERSION_CMD, "kvm", "/dev/kvm",
	         "KVM_GET_API_VERSION");
	row_add(&b[0], 200, 4);
	b[0].key.who = 1;
	row_init(&b[1], KX_DRV_KVM, KVM_RUN_CMD, "kvm", "/dev/kvm", "KVM_RUN");
	row_add(&b[1], 1000, 3);
	b[1].key.who = 9; /* gone from cur: skipped */
	a[1] = a[0];
	a[1].key.who = 2; /* new in cur: counts from zero */
	row_init(&a[2], KX_DRV_KVM, KVM_RUN_CMD, "kvm", "/dev/kvm", "KVM_RUN");
	row_add(&a[2], 1000, 1);
	a[2].key.who = 9; /* fewer than before: recreated, all new */
	prev.rows = b;
	prev.nrows = 2;
	prev.mono_ns = 1000000000;
	cur.rows = a;
	cur.nrows = 3;
	cur.mono_ns = 3000000000ULL;
	CHECK(kx_agg_diff(&cur, &prev, &d) == 0);
	CHECK(d.interval_s == 2.0);
	CHECK_EQ_U(d.nrows, 3);
	CHECK_EQ_U(d.rows[0].count, 6);
	CHECK_EQ_U(d.rows[0].sum_ns, 1200);
	CHECK_EQ_U(d.rows[0].max_ns, 0);
	CHECK_EQ_U(d.rows[1].count, 10);
	CHECK_EQ_U(d.rows[2].count, 1);
	CHECK(kx_agg_fold_who(&d) == 0);
	CHECK_EQ_U(d.nrows, 2);
	CHECK_EQ_U(d.rows[0].count + d.rows[1].count, 17);
	CHECK(d.by == KX_AGG_BY_NONE);
	kx_agg_snapshot_free(&d);
}

static void test_summary_json(void)
{
	struct kx_agg_snapshot s;
	struct kx_summary *sum;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	make_snap(&s);
	s.mono_ns = s.since_mono_ns + 2000000000ULL;
	sum = kx_summary_from_agg(&s, NULL);
	CHECK(sum);
	f = open_memstream(&buf, &len);
	CHECK(f);
	kx_summary_print_json(sum, f, 1);
	fclose(f);
	kx_summary_free(sum);
	CHECK(strstr(buf, "\"ioctl/kvm\": {"));
	CHECK(strstr(buf, "\"KVM_RUN\": {\"Total Count\": 102, "));
	/* Exact min/max from the key: 0.15 us .. 3 us. */
	CHECK(strstr(buf,
	             "\"KVM_GET_API_VERSION\": {\"Total Count\": 10, \"Total Time\": 0.010050, "
	             "\"Min Time\": 0.000150, \"Max Time\": 0.003000"));
	CHECK(strstr(buf, "\"Errors\": 2"));
	CHECK(strstr(buf, "\"duration_ms\": 2000.000000"));
	CHECK(strstr(buf, "p50/p90/p99 are within 6.25%"));
	CHECK(strstr(buf, "5 ioctls not aggregated (key limit 4096 reached)"));
	free(buf);
}

static void test_promtool(void)
{
	struct kx_agg_snapshot s;
	char *t, cmd[256], out[4096];
	char path[] = "/tmp/kxprof-prom-XXXXXX";
	size_t n;
	FILE *p;
	int fd, st;

	if (access("/usr/bin/promtool", X_OK) != 0)
		SKIP("promtool not installed (Debian package prometheus)");
	make_snap(&s);
	snprintf(rows[0].device, sizeof(rows[0].device), "/dev/we\"ird\\dev");
	s.by = KX_AGG_BY_PID;
	rows[0].key.who = 7;
	rows[1].key.who = 8;
	s.offcpu_measured = 1;
	rows[1].offcpu_ns = 123456789;
	t = expose(&s);
	CHECK(t);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, t, strlen(t)) == (ssize_t)strlen(t));
	close(fd);
	free(t);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	CHECK(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	st = pclose(p);
	unlink(path);
	if (st != 0)
		printf("promtool said: %s\n", out);
	CHECK(st == 0);
}

int main(void)
{
	RUN(test_buckets_cumulative);
	RUN(test_exact_strings);
	RUN(test_families);
	RUN(test_label_escaping);
	RUN(test_unique_label_sets);
	RUN(test_by_pid_labels);
	RUN(test_quantiles);
	RUN(test_diff_and_fold);
	RUN(test_summary_json);
	RUN(test_promtool);
	KXT_EXIT();
}
