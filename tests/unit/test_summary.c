/*
 * Unit tests of the summary (user/export/summary.c): a store of known ioctl events
 * -> exact counts, times, percentiles, errno breakdown and histogram buckets,
 * checked through the JSON output (validated by a small JSON parser here and
 * by python3 -m json.tool when present); sort orders, table rows and
 * warnings; and the speed of summarizing millions of events.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry/ioctl_decode.h"
#include "kxtest.h"
#include "kxtest_analysis.h"
#include "io/replay.h"
#include "model/agg.h"
#include "model/store.h"
#include "export/summary.h"

#define KVM_RUN_CMD         0xae80U /* _IO(KVMIO, 0x80) */
#define KVM_CREATE_VCPU_CMD 0xae41U /* _IO(KVMIO, 0x41) */
#define LOOP_SET_FD_CMD     0x4c00U /* LOOP_SET_FD */

static void add(struct kx_store *s, uint8_t drv, uint32_t cmd, uint64_t dur, int64_t ret)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = 1000000 + dur;
	e.dur = dur;
	e.pid = e.tid = 42;
	e.dev = 0;
	e.fkind = KX_FK_KVM_VCPU;
	e.cmd = cmd;
	e.ret = ret;
	e.drv = drv;
	kx_store_add_ioctl(s, &e, NULL);
}

/*
 * KVM_RUN: 100 calls of 1..100 us, added in a scrambled order; calls 3, 7
 * and 11 fail with EINVAL, call 20 with EINTR. KVM_CREATE_VCPU: 5, 7, 9 us.
 * LOOP_SET_FD: one call of 2 ms failing with ENOMEM.
 */
static struct kx_store *known_store(void)
{
	struct kx_store *s = kx_store_new(0);

	for (int k = 0; k < 100; k++) {
		int i = (k * 37) % 100 + 1; /* 37 is prime to 100: a permutation */
		int64_t ret = 0;

		if (i == 3 || i == 7 || i == 11)
			ret = -22;
		else if (i == 20)
			ret = -4;
		add(s, KX_DRV_KVM, KVM_RUN_CMD, (uint64_t)i * 1000, ret);
	}
	add(s, KX_DRV_KVM, KVM_CREATE_VCPU_CMD, 9000, 3);
	add(s, KX_DRV_KVM, KVM_CREATE_VCPU_CMD, 5000, 0);
	add(s, KX_DRV_KVM, KVM_CREATE_VCPU_CMD, 7000, 1);
	add(s, KX_DRV_LOOP, LOOP_SET_FD_CMD, 2000000, -12);
	return s;
}

static void known_capinfo(struct kx_capinfo *ci)
{
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	snprintf(ci->kernel, sizeof(ci->kernel), "6.18.0-test");
	ci->start_mono_ns = 1000000000ULL;
	ci->stop_mono_ns = 3500000000ULL;
	ci->emitted = 227;
	ci->received = 104;
	ci->dropped = 123;
	ci->not_stored = 0;
	ci->nhooks = 2;
	snprintf(ci->hooks[0].name, sizeof(ci->hooks[0].name), "sys_enter_ioctl");
	snprintf(ci->hooks[0].mech, sizeof(ci->hooks[0].mech), "raw_tp");
	ci->hooks[0].state = KX_HOOK_ATTACHED;
	snprintf(ci->hooks[1].name, sizeof(ci->hooks[1].name), "drm_sched_job");
	snprintf(ci->hooks[1].mech, sizeof(ci->hooks[1].mech), "-");
	ci->hooks[1].state = KX_HOOK_SKIPPED;
	snprintf(ci->hooks[1].why, sizeof(ci->hooks[1].why), "tracepoint absent");
}

/* Output of a print function as a malloc'd string; for a table, hist may be KX_TABLE_*. */
static char *render(const struct kx_summary *sum, int json, unsigned int hist)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (json)
		kx_summary_print_json(sum, f, (int)hist);
	else
		kx_summary_print_table(sum, f, hist);
	fclose(f);
	return buf;
}

/* ---- a minimal strict JSON validator ---- */

static const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *js_value(const char *p, int depth);

static const char *js_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return p + 1;
}

static const char *js_number(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > s ? p : NULL;
}

static const char *js_value(const char *p, int depth)
{
	char open;

	p = js_ws(p);
	if (depth > 64)
		return NULL;
	if (*p == '"')
		return js_string(p);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	if (*p != '{' && *p != '[')
		return js_number(p);
	open = *p++;
	p = js_ws(p);
	if (*p == (open == '{' ? '}' : ']'))
		return p + 1;
	for (;;) {
		if (open == '{') {
			p = js_string(js_ws(p));
			if (!p)
				return NULL;
			p = js_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = js_value(p, depth + 1);
		if (!p)
			return NULL;
		p = js_ws(p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == (open == '{' ? '}' : ']'))
			return p + 1;
		return NULL;
	}
}

static int json_valid(const char *s)
{
	const char *end = js_value(s, 0);

	return end && !*js_ws(end);
}

/* Also through Python's parser when there is one (not required). */
static int python_json_ok(const char *text)
{
	char path[] = "/tmp/kxprof-summary.XXXXXX", cmd[128];
	int fd = mkstemp(path), rc;
	FILE *f;

	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	if (system("python3 -c '' >/dev/null 2>&1")) {
		unlink(path);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s >/dev/null", path);
	rc = system(cmd);
	unlink(path);
	return rc == 0;
}

/* Start of the value of "key" inside row "name" of category cat, or NULL. */
static const char *row_key(const char *json, const char *cat, const char *name, const char *key)
{
	char pat[128];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\"%s\": {", cat);
	p = strstr(json, pat);
	if (!p)
		return NULL;
	snprintf(pat, sizeof(pat), "\"%s\": {", name);
	p = strstr(p, pat);
	if (!p)
		return NULL;
	end = strchr(p, '\n'); /* one row per line */
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(p, pat);
	if (!p || (end && p > end))
		return NULL;
	return p + strlen(pat);
}

static double row_num(const char *json, const char *cat, const char *name, const char *key)
{
	const char *p = row_key(json, cat, name, key);

	return p ? strtod(p, NULL) : -1.0;
}

#define CHECK_NUM(json, name, key, want)                                                           \
	do {                                                                                       \
		double _v = row_num(json, "ioctl/kvm", name, key);                                 \
		if (!(_v - (want) < 5e-7 && (want)-_v < 5e-7)) {                                   \
			printf("FAIL %s: %s:%d: %s %s = %.9f, want %.9f\n", kxt_cur, __FILE__,     \
			       __LINE__, name, key, _v, (double)(want));                           \
			kxt_cur_failed = 1;                                                        \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

static void test_stats(void)
{
	struct kx_store *s = known_store();
	struct kx_capinfo ci;
	struct kx_summary *sum;
	char *json = NULL;

	known_capinfo(&ci);
	struct kx_analysis *an = kxt_analyse(s, &ci);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	json = render(sum, 1, 0);
	CHECK(json);
	CHECK_NUM(json, "KVM_RUN", "Total Count", 100);
	CHECK_NUM(json, "KVM_RUN", "Errors", 4);
	CHECK_NUM(json, "KVM_RUN", "Total Time", 5.05);
	CHECK_NUM(json, "KVM_RUN", "Min Time", 0.001);
	CHECK_NUM(json, "KVM_RUN", "Max Time", 0.1);
	CHECK_NUM(json, "KVM_RUN", "Avg Time", 0.0505);
	/* Nearest rank: the 50th, 90th and 99th smallest of 1..100 us. */
	CHECK_NUM(json, "KVM_RUN", "p50", 0.05);
	CHECK_NUM(json, "KVM_RUN", "p90", 0.09);
	CHECK_NUM(json, "KVM_RUN", "p99", 0.099);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "Total Count", 3);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "Errors", 0);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "Min Time", 0.005);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "Max Time", 0.009);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "Avg Time", 0.007);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "p50", 0.007);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "p90", 0.009);
	CHECK_NUM(json, "KVM_CREATE_VCPU", "p99", 0.009);
	CHECK(strstr(json, "\"KVM_RUN\": {\"Total Count\": 100,") != NULL);
	CHECK(strstr(json, "\"Errno\": {\"EINVAL\": 3, \"EINTR\": 1}") != NULL);
	CHECK(strstr(json, "\"KVM_CREATE_VCPU\": {\"Total Count\": 3,") != NULL);
	/* Positive returns are results, not errors. */
	CHECK(row_key(json, "ioctl/kvm", "KVM_CREATE_VCPU", "Errno") &&
	      !strncmp(row_key(json, "ioctl/kvm", "KVM_CREATE_VCPU", "Errno"), "{}", 2));
	CHECK(strstr(json, "\"ioctl/loop\": {") != NULL);
	CHECK(strstr(json, "\"ENOMEM\": 1") != NULL);
	CHECK(strstr(json, "Histogram") == NULL);
out:
	free(json);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_json_shape(void)
{
	struct kx_store *s = known_store();
	struct kx_capinfo ci;
	struct kx_summary *sum;
	char *json = NULL, *jh = NULL;
	int py;

	known_capinfo(&ci);
	ci.bpf_missed = 4; /* runs the kernel skipped: counted, warned */
	struct kx_analysis *an = kxt_analyse(s, &ci);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	json = render(sum, 1, 0);
	jh = render(sum, 1, 1);
	CHECK(json && jh);
	CHECK(json_valid(json));
	CHECK(json_valid(jh));
	py = python_json_ok(jh);
	CHECK(py != 0);
	CHECK(strstr(json, "\"Time\": {") != NULL);
	CHECK(strstr(json, "\"Memory\": {}") != NULL);
	CHECK(strstr(json, "\"Unit\": {\"Time\": \"ms\", \"Memory\": \"byte\"}") != NULL);
	CHECK(strstr(json, "\"Capture\": {\"host\": \"testhost\", \"kernel\": \"6.18.0-test\", "
	                   "\"duration_ms\": 2500.000000, \"emitted\": 227, \"received\": 104, "
	                   "\"dropped\": 123, \"not_stored\": 0, \"truncated\": false, "
	                   "\"job_emitted\": 0, \"job_received\": 0, \"job_dropped\": 0, "
	                   "\"job_done_lost\": 0, \"bpf_missed\": 4, \"ioctl_hooks\": null, "
	                   "\"offcpu_measured\": false}") != NULL);
	CHECK(strstr(json, "\"123 ioctl events dropped (ring buffer full): raise --ringbuf-mb\"") !=
	      NULL);
	CHECK(strstr(json, "\"hook drm_sched_job skipped: tracepoint absent\"") != NULL);
	CHECK(strstr(json, "\"4 runs of kxprof's BPF programs skipped by the kernel (") != NULL);
	CHECK(strstr(json, "sys_enter_ioctl") == NULL);
	/* 1..100 us: floor(log2(ns)) is 9 for 1000 ns up to 16 for 65536..100000 ns. */
	CHECK(strstr(jh, "\"Histogram\": {\"unit\": \"ns\", \"log2_buckets\": "
	                 "[0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 4, 8, 16, 33, 35]}") != NULL);
	/* 5, 7, 9 us: buckets 12 (4096..8191) x2 and 13 (8192..16383) x1. */
	CHECK(strstr(jh, "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1]}") != NULL);
	free(json);
	free(jh);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_json_escaping(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_capinfo ci;
	struct kx_summary *sum;
	char *json = NULL;

	known_capinfo(&ci);
	/* Quote, backslash, newline, control byte, invalid UTF-8, then valid UTF-8. */
	snprintf(ci.hostname, sizeof(ci.hostname), "we\"ird\\h\nst\x01\xff\xc3\xa9");
	/* A field filling its whole array, without NUL. */
	memset(ci.kernel, 'k', sizeof(ci.kernel));
	snprintf(ci.hooks[1].why, sizeof(ci.hooks[1].why), "\"quoted\"");
	struct kx_analysis *an = kxt_analyse(s, &ci);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	an->loss.no_trailer = 1; /* read without trailer, 17 bytes cut */
	an->loss.cut_bytes = 17;
	json = render(sum, 1, 1);
	CHECK(json);
	CHECK(json_valid(json));
	CHECK(python_json_ok(json) != 0);
	CHECK(strstr(json, "\"host\": \"we\\\"ird\\\\h\\nst\\u0001\\ufffd\xc3\xa9\"") != NULL);
	CHECK(strstr(json, "\"truncated\": true") != NULL);
	CHECK(strstr(json, "17 bytes after the last whole chunk ignored") != NULL);
	CHECK(strstr(json, "skipped: \\\"quoted\\\"\"") != NULL);
	/* No events: "Time" is empty but present. */
	CHECK(strstr(json, "\"Time\": {},") != NULL);
	free(json);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* Position of needle in hay, or SIZE_MAX. */
static size_t pos(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);

	return p ? (size_t)(p - hay) : SIZE_MAX;
}

static void test_sorting(void)
{
	struct kx_store *s = known_store();
	struct kx_analysis *an = kxt_analyse(s, NULL);
	struct kx_summary *sum = an ? kx_summary_build(an) : NULL;
	char *t = NULL;

	CHECK(sum);
	CHECK_EQ_U(kx_sort_key_parse("avg"), KX_SORT_AVG);
	CHECK_EQ_U(kx_sort_key_parse("min"), KX_SORT_MIN);
	CHECK_EQ_U(kx_sort_key_parse("max"), KX_SORT_MAX);
	CHECK_EQ_U(kx_sort_key_parse("total"), KX_SORT_TOTAL);
	CHECK_EQ_U(kx_sort_key_parse("count"), KX_SORT_COUNT);
	CHECK(kx_sort_key_parse("median") == -1);
	CHECK(kx_sort_key_parse("") == -1);

	/* Default: avg descending. KVM_RUN avg 50.5 us > KVM_CREATE_VCPU 7 us. */
	t = render(sum, 0, 0);
	CHECK(t);
	CHECK(pos(t, "\nKVM_RUN ") < pos(t, "\nKVM_CREATE_VCPU "));
	/* Categories alphabetical, whatever the key. */
	CHECK(pos(t, "\nioctl/kvm\n") < pos(t, "\nioctl/loop\n"));
	free(t);

	kx_summary_sort(sum, KX_SORT_COUNT, 1);
	t = render(sum, 0, 0);
	CHECK(pos(t, "\nKVM_CREATE_VCPU ") < pos(t, "\nKVM_RUN "));
	CHECK(pos(t, "\nioctl/kvm\n") < pos(t, "\nioctl/loop\n"));
	free(t);

	kx_summary_sort(sum, KX_SORT_MIN, 0);
	t = render(sum, 0, 0);
	CHECK(pos(t, "\nKVM_CREATE_VCPU ") < pos(t, "\nKVM_RUN "));
	free(t);

	kx_summary_sort(sum, KX_SORT_MIN, 1);
	t = render(sum, 0, 0);
	CHECK(pos(t, "\nKVM_RUN ") < pos(t, "\nKVM_CREATE_VCPU "));
	free(t);

	kx_summary_sort(sum, KX_SORT_TOTAL, 1);
	t = render(sum, 0, 0);
	CHECK(pos(t, "\nKVM_CREATE_VCPU ") < pos(t, "\nKVM_RUN "));
	free(t);

	kx_summary_sort(sum, KX_SORT_MAX, 0);
	t = render(sum, 0, 0);
	CHECK(pos(t, "\nKVM_RUN ") < pos(t, "\nKVM_CREATE_VCPU "));
	CHECK(pos(t, "\nioctl/kvm\n") < pos(t, "\nioctl/loop\n"));
	free(t);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* The line of t that starts with prefix (after a newline), or NULL. */
static const char *line_of(const char *t, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = t; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, prefix, n))
			return p;
	return NULL;
}

/* The line at p split at spaces into tok (each at most 31 bytes): the count. */
static int tokens(const char *p, char tok[][32], int max)
{
	int n = 0;

	while (*p && *p != '\n') {
		size_t len;

		while (*p == ' ')
			p++;
		len = strcspn(p, " \n");
		if (!len)
			break;
		if (n < max)
			snprintf(tok[n], 32, "%.*s", (int)len, p);
		n++;
		p += len;
	}
	return n;
}

/* The line at p is these space-separated words, exactly. */
static int line_is(const char *p, const char *const *want, int nwant)
{
	char tok[24][32];
	int n = p ? tokens(p, tok, 24) : -1;

	if (n != nwant)
		return 0;
	for (int i = 0; i < n; i++)
		if (strcmp(tok[i], want[i]))
			return 0;
	return 1;
}
#define LINE_IS(p, ...)                                                                            \
	line_is(p, (const char *const[]){__VA_ARGS__},                                             \
	        (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)))

/*
 * The widest line of table t in terminal columns (UTF-8 "µ" is one), but
 * the "Capture:" line: a header of facts, not a table line.
 */
static int table_width(const char *t)
{
	int max = 0;

	for (const char *p = t; *p;) {
		const char *e = strchr(p, '\n');
		int w = 0;

		if (!e)
			e = p + strlen(p);
		for (const char *c = p; c < e; c++)
			w += ((unsigned char)*c & 0xc0) != 0x80;
		if (strncmp(p, "Capture: ", 9) && w > max)
			max = w;
		p = *e ? e + 1 : e;
	}
	return max;
}

/* Commands of one name (NV_ESC_RM_ALLOC of two argument sizes) are one
 * row: counts, times, minimum and maximum of both. */
static void test_same_name_rows(void)
{
	static const struct {
		const char *key;
		double want;
	} want[] = {{"Total Count", 4},
	            {"Total Time", 0.027},
	            {"Min Time", 0.005},
	            {"Max Time", 0.009}};
	struct kx_store *s = kx_store_new(0);
	struct kx_summary *sum = NULL;
	struct kx_analysis *an = NULL;
	struct kx_capinfo ci;
	char *json = NULL;

	CHECK(s);
	add(s, KX_DRV_NVIDIA, 0xc020462b, 5000, 0);
	add(s, KX_DRV_NVIDIA, 0xc030462b, 9000, 0);
	add(s, KX_DRV_NVIDIA, 0xc020462b, 7000, 0);
	add(s, KX_DRV_NVIDIA, 0xc030462b, 6000, 0);
	known_capinfo(&ci);
	an = kxt_analyse(s, &ci);
	sum = an ? kx_summary_build(an) : NULL;
	json = sum ? render(sum, 1, 0) : NULL;
	CHECK(json);
	for (size_t i = 0; json && i < sizeof(want) / sizeof(want[0]); i++) {
		double v = row_num(json, "ioctl/nvidia", "NV_ESC_RM_ALLOC", want[i].key);

		if (!(v - want[i].want < 5e-7 && want[i].want - v < 5e-7)) {
			printf("FAIL %s: NV_ESC_RM_ALLOC %s = %.9f, want %.9f\n", kxt_cur,
			       want[i].key, v, want[i].want);
			kxt_cur_failed = 1;
		}
	}
	free(json);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_table(void)
{
	struct kx_store *s = known_store();
	struct kx_capinfo ci;
	struct kx_summary *sum;
	char *t = NULL, *th = NULL, *tw = NULL;

	known_capinfo(&ci);
	struct kx_analysis *an = kxt_analyse(s, &ci);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	t = render(sum, 0, 0);
	th = render(sum, 0, KX_TABLE_HIST);
	tw = render(sum, 0, KX_TABLE_WIDE);
	CHECK(t && th && tw);
	CHECK(!strncmp(t, "Capture: host testhost, kernel 6.18.0-test, 2.500 s;", 52));
	CHECK(strstr(
	        t, "\nWARNING: 123 ioctl events dropped (ring buffer full): raise --ringbuf-mb\n"));
	CHECK(strstr(t, "\nWARNING: hook drm_sched_job skipped: tracepoint absent\n"));
	CHECK(strstr(t, "\nioctl/kvm\nName ") != NULL);
	/* Default columns; no off-CPU measured here, so no Blocked%. Times in µs and ms. */
	CHECK(LINE_IS(line_of(t, "Name "), "Name", "Count", "Errors", "Total", "Avg", "p50", "p99",
	              "Max"));
	CHECK(LINE_IS(line_of(t, "KVM_RUN "), "KVM_RUN", "100", "4", "5.050ms", "50.50µs",
	              "50.00µs", "99.00µs", "100.0µs"));
	CHECK(strstr(line_of(t, "KVM_RUN "), "\n    errors: EINVAL x3, EINTR x1\n"));
	CHECK(LINE_IS(line_of(t, "KVM_CREATE_VCPU "), "KVM_CREATE_VCPU", "3", "0", "21.00µs",
	              "7.000µs", "7.000µs", "9.000µs", "9.000µs"));
	CHECK(LINE_IS(line_of(t, "LOOP_SET_FD "), "LOOP_SET_FD", "1", "1", "2.000ms", "2.000ms",
	              "2.000ms", "2.000ms", "2.000ms"));
	CHECK(strstr(t, "\nioctl/loop\nName ") != NULL);
	CHECK(strstr(t, "    errors: ENOMEM x1\n"));
	CHECK(table_width(t) <= 120);
	/* --wide: Min and p90 too. */
	CHECK(LINE_IS(line_of(tw, "Name "), "Name", "Count", "Errors", "Total", "Min", "Avg", "p50",
	              "p90", "p99", "Max"));
	CHECK(LINE_IS(line_of(tw, "KVM_RUN "), "KVM_RUN", "100", "4", "5.050ms", "1.000µs",
	              "50.50µs", "50.00µs", "90.00µs", "99.00µs", "100.0µs"));
	CHECK(strstr(t, "usecs") == NULL);
	/* Histogram: 65.536 -> 131.071 us holds the 35 largest KVM_RUN calls. */
	CHECK(strstr(th, "usecs") && strstr(th, "count    distribution"));
	CHECK(strstr(th,
	             "65.536 -> 131.071 : 35       |****************************************|"));
	CHECK(strstr(th,
	             " 1.024 -> 2.047   : 1        |*                                       |"));
	free(t);
	free(th);
	free(tw);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/*
 * Each time in a unit chosen per value: whole ns below 1 µs, else 4
 * significant digits in µs, ms or s, rounded, carried into the next unit
 * when rounding reaches 1000; whole seconds from 10000 s. One call per
 * command, so Total, Avg, p50, p99 and Max are that call's duration.
 */
static void test_time_units(void)
{
	static const struct {
		uint64_t ns;
		const char *shown;
	} want[] = {
	        {0, "0ns"},
	        {126, "126ns"},
	        {999, "999ns"},
	        {1000, "1.000µs"},
	        {9999, "9.999µs"},
	        {99995, "100.0µs"},
	        {999949, "999.9µs"},
	        {999950, "1.000ms"},
	        {1379000, "1.379ms"},
	        {333678190, "333.7ms"},
	        {999950000, "1.000s"},
	        {12345678901ULL, "12.35s"},
	        {9999500000000ULL, "10000s"},
	        {123456789012345ULL, "123457s"},
	};
	const size_t n = sizeof(want) / sizeof(want[0]);
	struct kx_store *s = kx_store_new(0);
	struct kx_summary *sum;
	char *t = NULL, name[64];

	for (size_t i = 0; i < n; i++) /* KVM command numbers 0xae00 + i, named _IO(0xae,..) */
		add(s, KX_DRV_KVM, 0xae00U + 0x90U + (uint32_t)i, want[i].ns, 0);
	struct kx_analysis *an = kxt_analyse(s, NULL);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	t = render(sum, 0, 0);
	CHECK(t);
	for (size_t i = 0; i < n; i++) {
		char buf[96];
		const char *row;

		snprintf(name, sizeof(name), "%s ",
		         kx_ioctl_name(KX_DRV_KVM, 0xae00U + 0x90U + (uint32_t)i, 0, buf,
		                       sizeof(buf)));
		row = line_of(t, name);
		if (!row)
			printf("# no row %s\n", name);
		CHECK(row);
		name[strlen(name) - 1] = '\0';
		if (!LINE_IS(row, name, "1", "0", want[i].shown, want[i].shown, want[i].shown,
		             want[i].shown, want[i].shown))
			printf("# %llu ns: %.*s\n", (unsigned long long)want[i].ns,
			       (int)strcspn(row, "\n"), row);
		CHECK(LINE_IS(row, name, "1", "0", want[i].shown, want[i].shown, want[i].shown,
		              want[i].shown, want[i].shown));
	}
	/* No time printed as 0.000 (the Capture line's span is not a table cell). */
	CHECK(strstr(strchr(t, '\n'), "0.000") == NULL);
	free(t);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* Every fixture's default table fits in 120 columns; --wide may not. */
static void test_table_widths(void)
{
	static const char *const names[] = {"amdgpu_new", "amdgpu_old", "block",  "i915",
	                                    "kvm",        "msm",        "nvidia", "xe"};
	const char *dir = getenv("KX_FIXTURES");

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		static struct kx_capinfo ci;
		struct kx_store *s = kx_store_new(0);
		struct kx_analysis *an = NULL;
		struct kx_summary *sum = NULL;
		char path[512], err[512], *t = NULL, *th = NULL;
		int w, wh;

		snprintf(path, sizeof(path), "%s/%s.jsonl", dir && *dir ? dir : "tests/fixtures",
		         names[i]);
		CHECK(s && kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
		an = kxt_analyse(s, &ci);
		sum = an ? kx_summary_build(an) : NULL;
		t = sum ? render(sum, 0, 0) : NULL;
		th = sum ? render(sum, 0, KX_TABLE_HIST) : NULL;
		w = t ? table_width(t) : 999;
		wh = th ? table_width(th) : 999;
		if (w > 120 || wh > 120)
			printf("# %s: %d and %d columns with --hist\n", names[i], w, wh);
		free(t);
		free(th);
		kx_summary_free(sum);
		kx_analysis_free(an);
		kx_store_free(s);
		CHECK(w <= 120 && wh <= 120);
	}
}

/*
 * Job rows ("jobs/<device>") get their own table: Jobs and times, no Errors
 * and no Blocked% column, no "-" cells; the ioctl table above them has the
 * Blocked% share (the kvm fixture measured off-CPU time).
 */
static void test_job_table(void)
{
	const char *dir = getenv("KX_FIXTURES");
	static struct kx_capinfo ci;
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an = NULL;
	struct kx_summary *sum = NULL;
	char path[512], err[512], *t = NULL, *tw = NULL;
	const char *jobs;

	snprintf(path, sizeof(path), "%s/kvm.jsonl", dir && *dir ? dir : "tests/fixtures");
	CHECK(s && kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
	an = kxt_analyse(s, &ci);
	sum = an ? kx_summary_build(an) : NULL;
	t = sum ? render(sum, 0, 0) : NULL;
	tw = sum ? render(sum, 0, KX_TABLE_WIDE) : NULL;
	CHECK(t && tw);
	CHECK(LINE_IS(line_of(t, "Name "), "Name", "Count", "Errors", "Total", "Avg", "p50", "p99",
	              "Max", "Blocked%"));
	/* 0.4 ms of KVM_RUN's 2.3 ms blocked */
	CHECK(LINE_IS(line_of(t, "KVM_RUN "), "KVM_RUN", "4", "0", "2.300ms", "575.0µs", "500.0µs",
	              "900.0µs", "900.0µs", "17.4%"));
	jobs = strstr(t, "\njobs/kvm\n");
	CHECK(jobs);
	CHECK(LINE_IS(jobs + 10, "Name", "Jobs", "Total", "Avg", "p50", "p99", "Max"));
	CHECK(LINE_IS(line_of(jobs, "vcpu 7002 exec "), "vcpu", "7002", "exec", "2", "1.380ms",
	              "690.0µs", "490.0µs", "890.0µs", "890.0µs"));
	CHECK(strstr(t, " - ") == NULL && strstr(t, " -\n") == NULL);
	jobs = strstr(tw, "\njobs/kvm\n");
	CHECK(jobs);
	CHECK(LINE_IS(jobs + 10, "Name", "Jobs", "Total", "Min", "Avg", "p50", "p90", "p99",
	              "Max"));
	CHECK(LINE_IS(line_of(tw, "Name "), "Name", "Count", "Errors", "Total", "Min", "Avg", "p50",
	              "p90", "p99", "Max", "Blocked", "On-CPU", "Blocked%"));
	CHECK(LINE_IS(line_of(tw, "KVM_RUN "), "KVM_RUN", "4", "0", "2.300ms", "300.0µs", "575.0µs",
	              "500.0µs", "900.0µs", "900.0µs", "900.0µs", "400.0µs", "1.900ms", "17.4%"));
	CHECK(strstr(t, "kvm (kvm /dev/kvm): 4 jobs, 4 completed, 0 incomplete, 3 linked to their "
	                "submitting ioctl\n    busy 13.8%; max in flight 2\n"));
	free(t);
	free(tw);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/*
 * The summary of live aggregates (kxprof serve's /summary) says what it is,
 * with no emitted or received figures (aggregates have none); a name too
 * long for its column next to wide figures gets a line of its own, and the
 * table still fits in 120 columns.
 */
static void test_live_table(void)
{
	struct kx_agg_row row;
	struct kx_agg_snapshot snap;
	struct kx_summary *sum;
	const char *name = "NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2";
	const char *p;
	char *t = NULL;

	memset(&row, 0, sizeof(row));
	memset(&snap, 0, sizeof(snap));
	row.key.drv = KX_DRV_NEURON;
	row.key.cmd = 0x80084e36U;
	row.count = row.errors = 1000000000000ULL;
	row.fine[kx_hist_fine_slot(1500000)] = row.count;
	row.sum_ns = 1000000000000000000ULL; /* 1e9 s: 1 ms a call */
	row.min_ns = 1000000;
	row.max_ns = 2000000;
	snap.rows = &row;
	snap.nrows = 1;
	snap.since_mono_ns = 1000000000ULL;
	snap.mono_ns = 13345000000ULL;
	sum = kx_summary_from_agg(&snap, NULL);
	CHECK(sum);
	t = render(sum, 0, 0);
	kx_summary_free(sum);
	CHECK(t);
	CHECK(!strncmp(t,
	               "Live aggregates: host ?, kernel ?, 12.345 s since the start or the last "
	               "reset; 1000000000000 ioctls aggregated\n",
	               106));
	CHECK(strstr(t, "emitted") == NULL && strstr(t, "received") == NULL);
	p = line_of(t, name);
	CHECK(p && p[strlen(name)] == '\n');
	/* p50 and p99: the midpoint of the fine slot [1.442 ms, 1.573 ms) */
	CHECK(LINE_IS(p + strlen(name) + 1, "1000000000000", "1000000000000", "1000000000s",
	              "1.000ms", "1.507ms", "1.507ms", "2.000ms"));
	CHECK(p[strlen(name) + 1] == ' ');
	/* Errors without a per-errno breakdown: no empty "errors:" line. */
	CHECK(strstr(t, "errors:") == NULL);
	CHECK(table_width(t) <= 120);
	free(t);
}

/* hook name, state (KX_HOOK_*), reason */
static void hook(struct kx_capinfo *ci, const char *name, int state, const char *why)
{
	struct kx_hook *h = &ci->hooks[ci->nhooks++];

	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(h->mech, sizeof(h->mech), "-");
	h->state = (uint8_t)state;
	snprintf(h->why, sizeof(h->why), "%s", why);
}

static void device(struct kx_capinfo *ci, uint8_t drv, const char *node)
{
	struct kx_device *d = &ci->devices[ci->ndevices++];

	d->drv = drv;
	snprintf(d->node, sizeof(d->node), "%s", node);
}

/* The table of an empty store with capture header ci. */
static char *hooks_table(const struct kx_capinfo *ci)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an = s ? kxt_analyse(s, ci) : NULL;
	struct kx_summary *sum = an ? kx_summary_build(an) : NULL;
	char *t = sum ? render(sum, 0, 0) : NULL;

	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
	return t;
}

/*
 * Hook warnings name only hooks that serve a traced device's driver: on a
 * kvm-only capture no i915, drm or NVIDIA hook; jobs:kvm and hooks of no
 * driver family (sched_switch) always; every hook when the capture has no
 * device list or traced a device of a driver kxprof does not know.
 */
static void test_hook_warnings(void)
{
	static struct kx_capinfo ci;
	char *t = NULL, *all = NULL, *unk = NULL;

	memset(&ci, 0, sizeof(ci));
	hook(&ci, "jobs:kvm", KX_HOOK_FAILED, "no usable tracepoint");
	hook(&ci, "jobs:i915", KX_HOOK_SKIPPED,
	     "tracepoint i915:i915_request_add not in this kernel");
	hook(&ci, "jobs:block", KX_HOOK_SKIPPED, "no block device traced");
	hook(&ci, "driver:drm_ioctl", KX_HOOK_SKIPPED, "not in this kernel");
	hook(&ci, "driver:nvidia_unlocked_ioctl", KX_HOOK_SKIPPED, "not in this kernel");
	hook(&ci, "sched_switch", KX_HOOK_FAILED, "EPERM");
	all = hooks_table(&ci);
	device(&ci, KX_DRV_KVM, "/dev/kvm");
	t = hooks_table(&ci);
	device(&ci, KX_DRV_UNKNOWN, "/dev/mystery");
	unk = hooks_table(&ci);
	CHECK(t && all && unk);
	CHECK(strstr(t, "WARNING: jobs hooks failed: kvm (no usable tracepoint)\n"));
	CHECK(strstr(t, "WARNING: hook sched_switch failed: EPERM\n"));
	CHECK(!strstr(t, "i915") && !strstr(t, "drm_ioctl") && !strstr(t, "nvidia") &&
	      !strstr(t, "block"));
	/* No device list, or an unknown driver: every hook. */
	for (int i = 0; i < 2; i++) {
		const char *x = i ? unk : all;

		CHECK(strstr(x, "WARNING: jobs hooks skipped: i915, block (reasons differ"));
		CHECK(strstr(
		        x,
		        "WARNING: driver hooks skipped: drm_ioctl, nvidia_unlocked_ioctl (not in "
		        "this kernel)"));
		CHECK(strstr(x, "WARNING: jobs hooks failed: kvm"));
	}
	free(t);
	free(all);
	free(unk);
}

static void test_store_limit_warning(void)
{
	struct kx_store *s = kx_store_new((size_t)1 << 20);
	struct kx_summary *sum;
	char *t = NULL, *j = NULL;
	uint64_t refused;

	for (int i = 0; i < 50000; i++)
		add(s, KX_DRV_KVM, KVM_RUN_CMD, 1000, 0);
	refused = kx_store_not_stored(s);
	CHECK(refused > 0 && kx_store_ioctl_count(s) > 0);
	struct kx_analysis *an = kxt_analyse(s, NULL);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	t = render(sum, 0, 0);
	j = render(sum, 1, 0);
	CHECK(t && j);
	CHECK(strstr(t, "events not stored (memory limit reached)") != NULL);
	CHECK(json_valid(j));
	CHECK(row_num(j, "ioctl/kvm", "KVM_RUN", "Total Count") == (double)kx_store_ioctl_count(s));
	free(t);
	free(j);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* CPU seconds of this process: other processes on a loaded machine do not
 * count, as wall time would. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define CHECK_ROW(json, cat, name, key, want)                                                      \
	do {                                                                                       \
		double _v = row_num(json, cat, name, key);                                         \
		if (!(_v - (want) < 5e-4 && (want)-_v < 5e-4)) {                                   \
			printf("FAIL %s: %s:%d: %s %s %s = %.6f, want %.6f\n", kxt_cur, __FILE__,  \
			       __LINE__, cat, name, key, _v, (double)(want));                      \
			kxt_cur_failed = 1;                                                        \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

/*
 * Device timelines, memory and off-CPU time of the replayed KVM fixture
 * (numbers derived in tests/unit/test_jobs.c): jobs/kvm rows per vCPU ring
 * (no queue delay for KVM), memory/kvm, Blocked/On-CPU time of KVM_RUN
 * (0.4 ms of 2.3 ms blocked), anomalies as warnings, the table sections.
 */
static void test_jobs_and_memory(void)
{
	const char *dir = getenv("KX_FIXTURES");
	static struct kx_capinfo ci;
	struct kx_store *s = kx_store_new(0);
	struct kx_summary *sum = NULL;
	char path[512], err[512], *json = NULL, *table = NULL;

	snprintf(path, sizeof(path), "%s/kvm.jsonl", dir && *dir ? dir : "tests/fixtures");
	CHECK(s && kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
	struct kx_analysis *an = kxt_analyse(s, &ci);

	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	json = render(sum, 1, 0);
	table = render(sum, 0, 0);
	CHECK(json && table && json_valid(json) && python_json_ok(json) != 0);
	CHECK_ROW(json, "jobs/kvm", "vcpu 7002 exec", "Total Count", 2);
	CHECK_ROW(json, "jobs/kvm", "vcpu 7002 exec", "Total Time", 1.38);
	CHECK_ROW(json, "jobs/kvm", "vcpu 7002 exec", "Min Time", 0.49);
	CHECK_ROW(json, "jobs/kvm", "vcpu 7002 exec", "Max Time", 0.89);
	CHECK_ROW(json, "jobs/kvm", "vcpu 7003 exec", "Total Count", 1);
	CHECK_ROW(json, "jobs/kvm", "vcpu 7003 exec", "Avg Time", 0.295);
	CHECK(!row_key(json, "jobs/kvm", "vcpu 7002 exec", "Errors"));
	CHECK(!strstr(json, "queue delay"));
	CHECK_ROW(json, "memory/kvm", "allocated", "Count", 3);
	CHECK_ROW(json, "memory/kvm", "allocated", "Max Usage", 1114112);
	CHECK_ROW(json, "memory/kvm", "allocated", "Min Usage", 65536);
	CHECK_ROW(json, "memory/kvm", "allocated", "Avg Usage", 415061.333);
	CHECK_ROW(json, "memory/kvm", "allocated", "Unknown Frees", 1);
	CHECK_ROW(json, "ioctl/kvm", "KVM_RUN", "Total Time", 2.3);
	CHECK_ROW(json, "ioctl/kvm", "KVM_RUN", "Blocked Time", 0.4);
	CHECK_ROW(json, "ioctl/kvm", "KVM_RUN", "On-CPU Time", 1.9);
	CHECK(strstr(json, "\"runs_without_exit\": 1") != NULL);
	CHECK(strstr(json, "\"busy_fraction\": 0.138000") != NULL);
	CHECK(strstr(json, "\"1 KVM_RUN calls without an exit event\"") != NULL);
	CHECK(strstr(json, "\"1 duplicate job events (ignored)\"") != NULL);
	CHECK(strstr(json, "\"offcpu_measured\": true") != NULL);
	CHECK(strstr(table, "\njobs/kvm\n") != NULL);
	CHECK(strstr(table, "Blocked%") != NULL);
	CHECK(strstr(table, "\nMemory (bytes)\n") != NULL);
	CHECK(strstr(table, "memory/kvm") != NULL);
	CHECK(strstr(table, "kvm (kvm /dev/kvm): 4 jobs, 4 completed, 0 incomplete") != NULL);
out:
	free(json);
	free(table);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* A store of n xorshift-spread ioctls: durations 1 ns .. 1 ms, 40 commands. */
static struct kx_store *spread_store(size_t n)
{
	struct kx_store *s = kx_store_new((size_t)1 << 30);
	uint64_t x = 88172645463325252ULL;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		add(s, KX_DRV_KVM, 0xae00 | (uint32_t)(x % 40), x % 1000000 + 1,
		    (x & 0xff) == 0 ? -22 : 0);
	}
	return s;
}

/* CPU seconds to analyse and summarise s (the best of three runs), or -1. */
static double summary_time(struct kx_store *s)
{
	double best = -1;

	for (int r = 0; r < 3; r++) {
		double t0 = now_s();
		struct kx_analysis *an = kxt_analyse(s, NULL);
		struct kx_summary *sum = an ? kx_summary_build(an) : NULL;
		double dt = now_s() - t0;

		if (!sum)
			return -1;
		if (best < 0 || dt < best)
			best = dt;
		kx_summary_free(sum);
		kx_analysis_free(an);
	}
	return best;
}

/*
 * The summary scales as n log n, not n^2: 4x the events may take at most 10x
 * the CPU time (a quadratic step would take 16x). Sorting a thread's calls
 * by time takes about 6x here alone, more when other processes share the
 * cache. Both sizes are timed in this run, so a loaded machine or a
 * sanitizer build slows both alike.
 */
static void test_speed(void)
{
	const size_t n = 2000000;
	struct kx_store *small = spread_store(n / 4), *big = spread_store(n);
	struct kx_analysis *an;
	struct kx_summary *sum;
	double ts, tb;
	char *j;

	CHECK_EQ_U(kx_store_ioctl_count(big), n);
	ts = summary_time(small);
	tb = summary_time(big);
	printf("INFO %s: %zu events in %.3f s, %zu in %.3f s (%.1fx)\n", kxt_cur, n / 4, ts, n, tb,
	       ts > 0 ? tb / ts : 0);
	CHECK(ts >= 0 && tb >= 0);
	an = kxt_analyse(big, NULL);
	sum = an ? kx_summary_build(an) : NULL;
	CHECK(sum);
	j = render(sum, 1, 1);
	CHECK(j && json_valid(j));
	free(j);
	kx_summary_free(sum);
	kx_analysis_free(an);
	kx_store_free(small);
	kx_store_free(big);
	CHECK(tb < 10 * ts + 0.05);
}

int main(void)
{
	RUN(test_stats);
	RUN(test_same_name_rows);
	RUN(test_json_shape);
	RUN(test_json_escaping);
	RUN(test_sorting);
	RUN(test_table);
	RUN(test_time_units);
	RUN(test_table_widths);
	RUN(test_job_table);
	RUN(test_live_table);
	RUN(test_hook_warnings);
	RUN(test_store_limit_warning);
	RUN(test_jobs_and_memory);
	RUN(test_speed);
	KXT_EXIT();
}
