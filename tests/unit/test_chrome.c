/*
 * Unit tests of the Chrome trace JSON exporter (user/export/chrome.c): synthetic
 * stores of known events (2 processes, 3 threads, awkward comm names,
 * errors, decoded arguments, overlapping slices) are written as .json and
 * .json.gz and validated by tests/unit/check_chrome.py against an
 * expectation file written here; plus the empty store, the out-of-order
 * path of the nesting guard, write errors (ENOSPC, EFBIG: no partial file
 * left) and the warning past a million events.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export/chrome.h"
#include "registry/ioctl_decode.h"
#include "analysis/threadnames.h"
#include "kxtest.h"
#include "kxtest_analysis.h"
#include "kxtest_capture.h"
#include "io/replay.h"
#include "model/annot.h"
#include "model/store.h"

#define KVM_GET_API_VERSION 0xae00U
#define KVM_CREATE_VM       0xae01U
#define KVM_RUN             0xae80U
#define KVM_SET_USER_MEM    0x4020ae46U /* _IOW(KVMIO, 0x46, 32) */
#define LOOP_SET_FD         0x4c00U
#define LOOP_CLR_FD         0x4c01U
#define OFFSET_NS           1700000000000000123LL /* mono -> realtime, not a whole us */

static char tmpdir[64];

/* What the checker should find: one row per X event. */
struct exp_ev {
	uint32_t pid, tid;
	uint64_t ts, dur; /* mono ns; dur after the nesting guard */
	uint8_t drv;
	uint32_t cmd;
};

static struct exp_ev exp_evs[256];
static int nexp;

static void add(struct kx_store *s, uint32_t pid, uint32_t tid, uint8_t fkind, uint32_t dev,
                uint8_t drv, uint32_t cmd, uint64_t ts, uint64_t dur, int64_t ret,
                const uint8_t *arg, uint8_t in_len)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.dur = dur;
	e.pid = pid;
	e.tid = tid;
	e.fkind = fkind;
	e.dev = dev;
	e.drv = drv;
	e.cmd = cmd;
	e.ret = ret;
	e.fd = (int32_t)(tid % 7 + 3);
	e.cpu_lo = (uint8_t)(tid & 3);
	e.arg_in_len = in_len;
	kx_store_add_ioctl(s, &e, arg);
	if (nexp < (int)(sizeof(exp_evs) / sizeof(exp_evs[0])))
		exp_evs[nexp++] = (struct exp_ev){pid, tid, ts, dur, drv, cmd};
}

static void base_capinfo(struct kx_capinfo *ci)
{
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	snprintf(ci->kernel, sizeof(ci->kernel), "6.18.0-test");
	ci->clock_start.offset_ns = OFFSET_NS;
	ci->start_mono_ns = 4000000000ULL;
}

static void known_capinfo(struct kx_capinfo *ci)
{
	base_capinfo(ci);
	add_dev(ci, KX_FK_CHR, KX_MKDEV(10, 232), KX_DRV_KVM, "/dev/kvm", "kvm");
	add_dev(ci, KX_FK_KVM_VM, 0, KX_DRV_KVM, "anon_inode:kvm-vm", "kvm");
	add_dev(ci, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, "anon_inode:kvm-vcpu", "kvm");
	add_dev(ci, KX_FK_CHR, KX_MKDEV(10, 232), KX_DRV_KVM, "/dev/kvm", "kvm"); /* duplicate */
	add_dev(ci, KX_FK_BLK, KX_MKDEV(7, 0), KX_DRV_LOOP, "/dev/loop0", "loop");
	ci->dropped = 5;
	ci->emitted = 105;
	ci->received = 100;
	ci->nhooks = 2;
	snprintf(ci->hooks[0].name, sizeof(ci->hooks[0].name), "sys_enter_ioctl");
	snprintf(ci->hooks[0].mech, sizeof(ci->hooks[0].mech), "raw_tp");
	ci->hooks[0].state = KX_HOOK_ATTACHED;
	snprintf(ci->hooks[1].name, sizeof(ci->hooks[1].name), "drm_sched_job");
	snprintf(ci->hooks[1].mech, sizeof(ci->hooks[1].mech), "-");
	ci->hooks[1].state = KX_HOOK_SKIPPED;
	snprintf(ci->hooks[1].why, sizeof(ci->hooks[1].why), "tracepoint \"absent\"\t here");
}

static uint64_t mem_ts, eintr_ts;

/*
 * pid 100: main thread 100 on /dev/kvm and the VM fd (one decoded
 * KVM_SET_USER_MEMORY_REGION), vCPU threads 101 (50 KVM_RUN, one EINTR, one
 * EINVAL, one overlapping the next) and 102 (30 KVM_RUN), stored
 * interleaved. pid 200 (no comm known): two loop ioctls, one EBUSY.
 */
static struct kx_store *known_store(void)
{
	struct kx_store *s = kx_store_new(0);
	uint8_t mem[32] = {0};
	uint64_t t0 = 5000000456ULL;

	nexp = 0;
	add_comm(s, 100, 100, "kvm\"main");
	add_comm(s, 100, 101, "vcpu\3770"); /* 0xff, then '0' */
	add_comm(s, 100, 102, "b\\s\x01-\xc3\xa9");
	add(s, 100, 100, KX_FK_CHR, KX_MKDEV(10, 232), KX_DRV_KVM, KVM_GET_API_VERSION, t0, 1234,
	    12, NULL, 0);
	add(s, 100, 100, KX_FK_CHR, KX_MKDEV(10, 232), KX_DRV_KVM, KVM_CREATE_VM, t0 + 5000, 40001,
	    4, NULL, 0);
	mem[9] = 0x10;  /* guest_phys_addr 0x1000 */
	mem[18] = 0x01; /* memory_size 65536 */
	mem[29] = 0x7f; /* userspace_addr 0x7f0000000000 */
	mem_ts = t0 + 60000;
	add(s, 100, 100, KX_FK_KVM_VM, 0, KX_DRV_KVM, KVM_SET_USER_MEM, mem_ts, 777, 0, mem, 32);
	for (int i = 0; i < 50; i++) {
		uint64_t ts = t0 + 100000 + (uint64_t)i * 20000;
		uint64_t dur = 10000 + (uint64_t)i * 7;
		int64_t ret = 0;

		if (i == 10)
			dur = 25000; /* the next one starts inside it and ends 5.077 us after it */
		if (i == 20) {
			ret = -4;
			eintr_ts = ts;
		}
		if (i == 30)
			ret = -22;
		add(s, 100, 101, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, ts, dur, ret, NULL, 0);
		if (i == 11)
			exp_evs[nexp - 1].dur = 5000; /* cut to end where event 10 ends */
		if (i < 30)
			add(s, 100, 102, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, ts + 3001, 15999,
			    0, NULL, 0);
	}
	add(s, 200, 200, KX_FK_BLK, KX_MKDEV(7, 0), KX_DRV_LOOP, LOOP_SET_FD, t0 + 2000000, 999,
	    -16, NULL, 0);
	add(s, 200, 200, KX_FK_BLK, KX_MKDEV(7, 0), KX_DRV_LOOP, LOOP_CLR_FD, t0 + 2001000, 1, 0,
	    NULL, 0);
	return s;
}

/* Expectation file for the checker: counts, events, names, warnings. */
static int write_expect(const char *path, const char *extra)
{
	FILE *f = fopen(path, "w");
	char names[64][64];
	uint64_t counts[64];
	int nn = 0;

	if (!f)
		return -1;
	fprintf(f, "{\"events\": [");
	for (int i = 0; i < nexp; i++) {
		char buf[64];
		const char *nm = kx_ioctl_name((enum kx_driver)exp_evs[i].drv, exp_evs[i].cmd, 0,
		                               buf, sizeof(buf));
		int k;

		fprintf(f, "%s[%u, %u, %lld, %llu, \"%s\"]", i ? ", " : "", exp_evs[i].pid,
		        exp_evs[i].tid, (long long)exp_evs[i].ts + OFFSET_NS,
		        (unsigned long long)exp_evs[i].dur, nm);
		for (k = 0; k < nn && strcmp(names[k], nm); k++)
			;
		if (k == nn) {
			snprintf(names[nn], sizeof(names[nn]), "%s", nm);
			counts[nn++] = 0;
		}
		counts[k]++;
	}
	fprintf(f, "], \"counts\": {");
	for (int k = 0; k < nn; k++)
		fprintf(f, "%s\"%s\": %llu", k ? ", " : "", names[k],
		        (unsigned long long)counts[k]);
	fprintf(f, "}, %s}\n", extra);
	return fclose(f);
}

static const char *checker(void)
{
	static char path[512];
	const char *env = getenv("KX_SRCDIR");
	const char *file = __FILE__;
	const char *slash = strrchr(file, '/');

	if (env) {
		snprintf(path, sizeof(path), "%s/tests/unit/check_chrome.py", env);
		if (!access(path, R_OK))
			return path;
	}
	if (!access("tests/unit/check_chrome.py", R_OK))
		return "tests/unit/check_chrome.py";
	snprintf(path, sizeof(path), "%.*s/check_chrome.py", slash ? (int)(slash - file) : 1,
	         slash ? file : ".");
	return access(path, R_OK) ? NULL : path;
}

/* Runs the checker; 0 when it says ok, else prints its complaints. */
static int run_checker(const char *exp, const char *json, const char *gz)
{
	char cmd[2048], line[1024];
	const char *py = checker();
	FILE *p;
	int rc;

	if (!py) {
		printf("  check_chrome.py not found (set KX_SRCDIR)\n");
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s' %s%s%s 2>&1", py, exp, json,
	         gz ? "'" : "", gz ? gz : "", gz ? "'" : "");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (strcmp(line, "ok\n"))
			printf("  checker: %s", line);
	rc = pclose(p);
	return WIFEXITED(rc) && WEXITSTATUS(rc) == 0 ? 0 : -1;
}

static int have_python(void)
{
	return system("python3 -c 'import json,gzip,decimal' >/dev/null 2>&1") == 0;
}

static void test_known_store(void)
{
	struct kx_store *s;
	struct kx_capinfo ci;
	char json[128], gz[128], exp[128], err[512], extra[2048], buf[64];

	if (!have_python())
		SKIP("python3 not available");
	CHECK_STR(kx_ioctl_name(KX_DRV_KVM, KVM_RUN, 0, buf, sizeof(buf)), "KVM_RUN");
	s = known_store();
	known_capinfo(&ci);
	snprintf(json, sizeof(json), "%s/known.json", tmpdir);
	snprintf(gz, sizeof(gz), "%s/known.json.gz", tmpdir);
	snprintf(exp, sizeof(exp), "%s/known.expect", tmpdir);
	CHECK(kxt_chrome_write(s, &ci, json, err, sizeof(err)) == 0);
	CHECK(kxt_chrome_write(s, &ci, gz, err, sizeof(err)) == 0);
	snprintf(extra, sizeof(extra),
	         "\"process_names\": {\"100\": \"kvm\\\"main\", \"200\": \"pid 200\"}, "
	         "\"thread_names\": {\"100\": \"kvm\\\"main\", \"101\": \"vcpu\\ufffd0\", "
	         "\"102\": \"b\\\\s\\u0001-\\u00e9\"}, "
	         /* A track only for the device its jobs ran on: the VM, vCPU and
	          * loop nodes had ioctls but no job. */
	         "\"devices\": [\"kvm /dev/kvm\"], "
	         "\"counters\": {\"memory\": 1}, "
	         "\"warnings\": [\"5 ioctl events dropped\", "
	         "\"hook drm_sched_job skipped: tracepoint \\\"absent\\\"\\t here\", "
	         "\"1 events on 1 threads partially overlapped\"], "
	         "\"args\": [[100, %lld, \"memory_size\", 65536], "
	         "[100, %lld, \"guest_phys_addr\", \"0x1000\"], "
	         "[100, %lld, \"userspace_addr\", \"0x7f0000000000\"], "
	         "[100, %lld, \"device\", \"anon_inode:kvm-vm\"], "
	         "[101, %lld, \"errno\", \"EINTR\"], [101, %lld, \"ret\", -4], "
	         "[101, %lld, \"cmd\", \"0xae80\"]]",
	         (long long)mem_ts + OFFSET_NS, (long long)mem_ts + OFFSET_NS,
	         (long long)mem_ts + OFFSET_NS, (long long)mem_ts + OFFSET_NS,
	         (long long)eintr_ts + OFFSET_NS, (long long)eintr_ts + OFFSET_NS,
	         (long long)eintr_ts + OFFSET_NS);
	CHECK(write_expect(exp, extra) == 0);
	kx_store_free(s);
	CHECK(run_checker(exp, json, gz) == 0);
}

static void test_empty_store(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_capinfo ci;
	char json[128], gz[128], exp[128], err[512];

	if (!have_python()) {
		kx_store_free(s);
		SKIP("python3 not available");
	}
	base_capinfo(&ci);
	add_dev(&ci, KX_FK_CHR, KX_MKDEV(10, 232), KX_DRV_KVM, "/dev/kvm", "kvm");
	nexp = 0;
	snprintf(json, sizeof(json), "%s/empty.json", tmpdir);
	snprintf(gz, sizeof(gz), "%s/empty.json.gz", tmpdir);
	snprintf(exp, sizeof(exp), "%s/empty.expect", tmpdir);
	CHECK(kxt_chrome_write(s, &ci, json, err, sizeof(err)) == 0);
	CHECK(kxt_chrome_write(s, &ci, gz, err, sizeof(err)) == 0);
	kx_store_free(s);
	/* No job ran: no device track. */
	CHECK(write_expect(exp, "\"process_names\": {}, \"thread_names\": {}, "
	                        "\"devices\": [], \"warnings\": []") == 0);
	CHECK(run_checker(exp, json, gz) == 0);
}

/*
 * Threads whose events are not stored in time order (a replayed or merged
 * capture) are sorted before the nesting rule: the slice at 100 us lies
 * inside the one at 50 us stored after it, and both keep their durations;
 * on tid 303 the slice at 400 us, stored first, starts inside the one at
 * 395 us and ends after it, so it is cut to end at 405 us.
 */
static void test_out_of_order(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_capinfo ci;
	char json[128], exp[128], err[512];

	if (!have_python()) {
		kx_store_free(s);
		SKIP("python3 not available");
	}
	base_capinfo(&ci);
	nexp = 0;
	add(s, 300, 301, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000100000ULL, 10000, 0, NULL, 0);
	add(s, 300, 301, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000050000ULL, 70000, 0, NULL, 0);
	add(s, 300, 301, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000200000ULL, 5000, 0, NULL, 0);
	/* Same start: the shorter nests in the longer, whatever the stored order. */
	add(s, 300, 302, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000300000ULL, 3000, 0, NULL, 0);
	add(s, 300, 302, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000300000ULL, 9000, 0, NULL, 0);
	add(s, 300, 303, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000400000ULL, 10000, 0, NULL, 0);
	exp_evs[nexp - 1].dur = 5000;
	add(s, 300, 303, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000395000ULL, 10000, 0, NULL, 0);
	snprintf(json, sizeof(json), "%s/ooo.json", tmpdir);
	snprintf(exp, sizeof(exp), "%s/ooo.expect", tmpdir);
	CHECK(kxt_chrome_write(s, &ci, json, err, sizeof(err)) == 0);
	kx_store_free(s);
	CHECK(write_expect(exp,
	                   "\"process_names\": {\"300\": \"pid 300\"}, \"thread_names\": {}, "
	                   "\"devices\": [], "
	                   "\"warnings\": [\"1 events on 1 threads partially overlapped\"]") == 0);
	CHECK(run_checker(exp, json, NULL) == 0);
}

/*
 * Device timelines from the replayed msm fixture: job slices on the device
 * pseudo-process (one thread per ring: "ctx 0" tid 1, "ctx 1" tid 2), a flow
 * from each GEM_SUBMIT's queue event (inside the call) to its job's run,
 * the in-flight and memory counters.
 * Realtime = monotonic + 1699999990000000000; times in the fixture's µs.
 * With skew, the ring 1 job runs at 3040 instead of 3080, before its queue
 * event at 3050 (as a device clock that disagrees with the host's would
 * say; the analysis itself never pairs a run before its queue): that job
 * gets no flow, and a warning counts it.
 */
static void device_timelines(int skew)
{
	const char *dir = getenv("KX_FIXTURES");
	struct kx_store *s = kx_store_new(0);
	static struct kx_capinfo ci;
	struct kx_analysis *an = NULL;
	char path[512], json[128], exp[128], err[512], flows[160];
	FILE *f;
	int n;

	if (!have_python()) {
		kx_store_free(s);
		SKIP("python3 not available");
	}
	snprintf(path, sizeof(path), "%s/msm.jsonl", dir && *dir ? dir : "tests/fixtures");
	CHECK(s && kx_replay_load(path, s, &ci, err, sizeof(err)) == 0);
	snprintf(json, sizeof(json), "%s/jobs%d.json", tmpdir, skew);
	snprintf(exp, sizeof(exp), "%s/jobs%d.expect", tmpdir, skew);
	an = kxt_analyse(s, &ci);
	CHECK(an);
	for (size_t k = 0; skew && k < an->jobs->njobs; k++)
		if (an->jobs->jobs[k].run_ts == 10003080000ULL)
			an->jobs->jobs[k].run_ts = 10003040000ULL;
	CHECK(kx_chrome_write(an, json, err, sizeof(err)) == 0);
	kx_analysis_free(an);
	kx_store_free(s);
	f = fopen(exp, "w");
	CHECK(f);
#define RT(us) (1700000000000000000LL + (long long)(us)*1000)
	n = snprintf(flows, sizeof(flows),
	             "\"flows\": %d, \"flow_points\": [[%lld, %lld], [%lld, %lld]", skew ? 2 : 3,
	             RT(1050), RT(1120), RT(2050), RT(2100));
	if (!skew)
		n += snprintf(flows + n, sizeof(flows) - (size_t)n, ", [%lld, %lld]", RT(3050),
		              RT(3080));
	snprintf(flows + n, sizeof(flows) - (size_t)n, "]");
	fprintf(f,
	        "{\"events\": [[6000, 6001, %lld, 20000, \"DRM_IOCTL_MSM_GEM_NEW\"], "
	        "[6000, 6001, %lld, 100000, \"DRM_IOCTL_MSM_GEM_SUBMIT\"], "
	        "[6000, 6002, %lld, 650000, \"DRM_IOCTL_MSM_WAIT_FENCE\"], "
	        "[6000, 6001, %lld, 60000, \"DRM_IOCTL_MSM_GEM_SUBMIT\"], "
	        "[6000, 6001, %lld, 100000, \"DRM_IOCTL_MSM_GEM_SUBMIT\"]], "
	        "\"counts\": {\"DRM_IOCTL_MSM_GEM_NEW\": 1, \"DRM_IOCTL_MSM_GEM_SUBMIT\": 3, "
	        "\"DRM_IOCTL_MSM_WAIT_FENCE\": 1}, "
	        "\"jobs\": [[1000000000, 1, %lld, 680000, \"DRM_IOCTL_MSM_GEM_SUBMIT\"], "
	        "[1000000000, 1, %lld, 500000, \"DRM_IOCTL_MSM_GEM_SUBMIT\"], "
	        "[1000000000, 2, %lld, %d, \"DRM_IOCTL_MSM_GEM_SUBMIT\"]], "
	        "%s, "
	        "\"counters\": {\"in flight\": 6, \"memory\": 1}, "
	        "\"process_names\": {\"6000\": \"pid 6000\", "
	        "\"1000000000\": \"msm /dev/dri/renderD128\"}, "
	        "\"thread_names\": {\"6001\": \"glmark2-es2-drm\", \"6002\": \"glmark2:wait\", "
	        "\"1\": \"ctx 0\", \"2\": \"ctx 1\"}, "
	        "\"devices\": [\"msm /dev/dri/renderD128\"], \"warnings\": [%s]}\n",
	        RT(500), RT(1000), RT(2000), RT(2010), RT(3000), RT(1120), RT(2100),
	        RT(skew ? 3040 : 3080), skew ? 360000 : 320000, flows,
	        skew ? "\"1 jobs start on their device before their submitting ioctl\"" : "");
#undef RT
	CHECK(fclose(f) == 0);
	CHECK(run_checker(exp, json, NULL) == 0);
}

static void test_device_timelines(void)
{
	device_timelines(0);
}

/* A job that starts on its device before its submit point: no flow, a warning. */
static void test_flow_never_backwards(void)
{
	device_timelines(1);
}

/* A thread that exec'd: its calls and ranges before the exec say the name it
 * had then (args.thread); those after it, under its track's name, say
 * nothing. The process is named by its command line, not its comm. */
static void test_renamed_thread(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_task seen = {.ts = 5000000000ULL, .pid = 300, .tid = 300, .what = KX_TASK_SEEN};
	struct kx_task exec = {.ts = 5000500000ULL, .pid = 300, .tid = 300, .what = KX_TASK_EXEC};
	struct kx_thread_names tn;
	struct kx_capinfo ci;
	char json[128], err[512], *js;
	FILE *f;
	long n;

	base_capinfo(&ci);
	snprintf(seen.comm, sizeof(seen.comm), "launcher");
	snprintf(exec.comm, sizeof(exec.comm), "app");
	snprintf(exec.cmd, sizeof(exec.cmd), "app --config run.toml");
	CHECK(s && !kx_store_add_task(s, &seen) && !kx_store_add_task(s, &exec));
	CHECK(kx_store_add_ann(s,
	                       &(struct kx_ann){.ts = 5000050000ULL,
	                                        .begin = 5000050000ULL,
	                                        .pid = 300,
	                                        .tid = 300,
	                                        .what = KX_ANN_PUSH,
	                                        .depth = 1},
	                       "load", NULL) == 0);
	CHECK(kx_store_add_ann(s,
	                       &(struct kx_ann){.ts = 5000300000ULL,
	                                        .begin = 5000050000ULL,
	                                        .pid = 300,
	                                        .tid = 300,
	                                        .what = KX_ANN_POP,
	                                        .depth = 1},
	                       NULL, NULL) == 0);
	add(s, 300, 300, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000100000ULL, 1000, 0, NULL, 0);
	add(s, 300, 300, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, 5000600000ULL, 1000, 0, NULL, 0);
	CHECK(kx_thread_names_build(&tn, s) == 0);
	CHECK_STR(kx_thread_name_at(&tn, 300, 5000100000ULL), "launcher");
	CHECK_STR(kx_thread_name_at(&tn, 300, 5000600000ULL), "app");
	CHECK_STR(kx_thread_name_at(&tn, 300, 1), "launcher");
	CHECK(kx_thread_name_at(&tn, 301, 5000600000ULL) == NULL);
	kx_thread_names_free(&tn);
	snprintf(json, sizeof(json), "%s/renamed.json", tmpdir);
	CHECK(kxt_chrome_write(s, &ci, json, err, sizeof(err)) == 0);
	kx_store_free(s);
	f = fopen(json, "r");
	CHECK(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	js = calloc(1, (size_t)n + 1);
	CHECK(js && fread(js, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	CHECK(strstr(
	        js,
	        "\"name\":\"thread_name\",\"pid\":300,\"tid\":300,\"args\":{\"name\":\"app\"}"));
	CHECK(strstr(js, "\"thread\":\"launcher\"}}") && !strstr(js, "\"thread\":\"app\""));
	CHECK(strstr(js, "\"name\":\"process_name\",\"pid\":300,\"tid\":0,"
	                 "\"args\":{\"name\":\"app --config run.toml\"}"));
	CHECK(strstr(js, "\"name\":\"load\",\"cat\":\"annotation\"") &&
	      strstr(js, "\"ioctls\":1,\"thread\":\"launcher\"}}"));
	free(js);
}

static void test_cannot_create(void)
{
	struct kx_store *s = known_store();
	struct kx_capinfo ci;
	char err[512] = "";
	int rc;

	known_capinfo(&ci);
	rc = kxt_chrome_write(s, &ci, "/nonexistent-dir/x.json", err, sizeof(err));
	kx_store_free(s);
	CHECK(rc == -1);
	CHECK(strstr(err, "/nonexistent-dir/x.json") != NULL);
	CHECK(strstr(err, "No such file") != NULL);
}

/* /dev/full behind a symlink: refused as a device (util/outfile), with the
 * path, before anything is written; the device is not removed. A real full
 * disk is test_outputs.sh's (a small tmpfs). */
static void test_device_refused(void)
{
	struct kx_store *s = known_store();
	struct kx_capinfo ci;
	char err[512], link[2][128];
	struct stat st;

	known_capinfo(&ci);
	if (stat("/dev/full", &st) || !S_ISCHR(st.st_mode)) {
		kx_store_free(s);
		SKIP("no /dev/full");
	}
	snprintf(link[0], sizeof(link[0]), "%s/full.json", tmpdir);
	snprintf(link[1], sizeof(link[1]), "%s/full.json.gz", tmpdir);
	for (int i = 0; i < 2; i++) {
		int rc;

		unlink(link[i]);
		if (symlink("/dev/full", link[i])) {
			kx_store_free(s);
			SKIP("cannot symlink");
		}
		err[0] = '\0';
		rc = kxt_chrome_write(s, &ci, link[i], err, sizeof(err));
		if (rc != -1 || !strstr(err, link[i]) || !strstr(err, "is a device")) {
			printf("  %s: rc %d, err \"%s\"\n", link[i], rc, err);
			kx_store_free(s);
			CHECK(0);
		}
		CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
		unlink(link[i]);
	}
	kx_store_free(s);
}

/* A regular file cut short by RLIMIT_FSIZE (EFBIG) is removed, plain and gzip. */
static void test_partial_removed(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_capinfo ci;
	char path[2][128];
	pid_t pid;
	int st;

	known_capinfo(&ci);
	for (uint32_t i = 0; i < 20000; i++)
		add(s, 100, 101, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN,
		    5000000000ULL + i * 10000ULL, (i * 2654435761U) % 9000, 0, NULL, 0);
	snprintf(path[0], sizeof(path[0]), "%s/big.json", tmpdir);
	snprintf(path[1], sizeof(path[1]), "%s/big.json.gz", tmpdir);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = {16384, 16384};
		char err[512];

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(3);
		for (int i = 0; i < 2; i++) {
			err[0] = '\0';
			if (kxt_chrome_write(s, &ci, path[i], err, sizeof(err)) != -1) {
				printf("  %s: written despite the size limit\n", path[i]);
				_exit(1);
			}
			if (!strstr(err, path[i]) || !strstr(err, "too large")) {
				printf("  %s: err \"%s\"\n", path[i], err);
				_exit(1);
			}
			if (!access(path[i], F_OK)) {
				printf("  %s: partial file left\n", path[i]);
				_exit(1);
			}
		}
		fflush(stdout);
		_exit(0);
	}
	kx_store_free(s);
	CHECK(pid > 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Past a million events everything is still written, with a warning. */
static void test_many_events_warning(void)
{
	struct kx_store *s = kx_store_new((size_t)256 << 20);
	struct kx_capinfo ci;
	char path[128], err[512], tail[4097];
	size_t n = 1000001;
	FILE *f;
	long sz;
	size_t got;

	base_capinfo(&ci);
	for (size_t i = 0; i < n; i++)
		add(s, 400, 400 + (uint32_t)(i & 3), KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN,
		    5000000000ULL + i * 1000ULL, 500, 0, NULL, 0);
	nexp = 0;
	CHECK_EQ_U(kx_store_ioctl_count(s), n);
	snprintf(path, sizeof(path), "%s/many.json", tmpdir);
	CHECK(kxt_chrome_write(s, &ci, path, err, sizeof(err)) == 0);
	kx_store_free(s);
	f = fopen(path, "r");
	CHECK(f != NULL);
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, sz > 4096 ? sz - 4096 : 0, SEEK_SET);
	got = fread(tail, 1, 4096, f);
	fclose(f);
	unlink(path);
	tail[got] = '\0';
	CHECK(strstr(tail, "1000001 events: Perfetto and chrome://tracing struggle") != NULL);
	CHECK(strcmp(tail + got - 2, "}\n") == 0);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kx-chrome-test.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_known_store);
	RUN(test_empty_store);
	RUN(test_out_of_order);
	RUN(test_device_timelines);
	RUN(test_flow_never_backwards);
	RUN(test_renamed_thread);
	RUN(test_cannot_create);
	RUN(test_device_refused);
	RUN(test_partial_removed);
	RUN(test_many_events_warning);
	/* KX_KEEP_TMP=1 keeps the outputs for a look. */
	if (!kxt_failed_total && !getenv("KX_KEEP_TMP")) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			printf("  could not remove %s\n", tmpdir);
	} else {
		printf("  outputs kept in %s\n", tmpdir);
	}
	KXT_EXIT();
}
