/*
 * Unit tests of a capture read for a conversion (user/analysis/capread.c):
 * a capture past a window's records with no reason to read it whole is read
 * in windows; one whose reason (a job record) comes after a window's
 * records is read once, the first read's store handed over, equal to the
 * store a read whole makes; keeping no more than a window's records, its
 * first read gives the store up and it is read a second time, counted and
 * said; an unbounded
 * window reads whole at once, saying nothing; a replay fixture is read
 * whole; a file that is not a record file is refused. A report's read: a
 * capture the stream gives exactly is streamed, one it cannot is read again
 * whole, counted and said.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/capread.h"
#include "analysis/jobflow.h"
#include "kxp_gen_wread.h"
#include "kxtest.h"
#include "model/store.h"

#define BUDGET ((size_t)1 << 30)
#define CALLS  2000

static char dir[64];

/* The store s holds what a read whole of path does: its calls, their
 * starts in order, its tasks and its job. */
static void check_as_read_whole(const struct kx_store *s, const char *path)
{
	struct kx_kxp_read_result res;
	struct kx_capinfo ci;
	char err[512], damage[512];
	struct kx_store *w =
	        kx_capread_whole(path, BUDGET, &ci, &res, damage, sizeof(damage), err, sizeof(err));
	size_t same = 0;

	CHECK(w != NULL);
	CHECK_EQ_U(damage[0], 0);
	if (!w || !s)
		goto out;
	CHECK_EQ_U(kx_store_ioctl_count(s), kx_store_ioctl_count(w));
	CHECK_EQ_U(kx_store_task_count(s), kx_store_task_count(w));
	CHECK_EQ_U(kx_store_job_count(s), kx_store_job_count(w));
	for (size_t i = 0; i < kx_store_ioctl_count(s) && i < kx_store_ioctl_count(w); i++)
		same += kx_store_ioctl(s, i)->ts == kx_store_ioctl(w, i)->ts &&
		        kx_store_ioctl(s, i)->tid == kx_store_ioctl(w, i)->tid;
	CHECK_EQ_U(same, kx_store_ioctl_count(w));
out:
	kx_store_free(w);
}

static struct kx_capread_opts opts(size_t window, size_t keep)
{
	return (struct kx_capread_opts){
	        .window = window, .slice = window, .budget = BUDGET, .keep = keep, .say = 1};
}

/* No job: past a window's calls, read in windows; nothing read whole. */
static void test_windows(void)
{
	static struct kx_capread r;
	struct kx_capread_opts o = opts(100, KX_WREAD_KEEP_RECORDS);
	char path[96], err[512];

	snprintf(path, sizeof(path), "%s/plain.kxp", dir);
	CHECK(write_capture(path, CALLS, 0, 0) == 0);
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == 0);
	CHECK(r.store == NULL);
	CHECK(r.w.plan.n > 1 && r.w.store == NULL && r.w.in_memory == NULL);
	CHECK_EQ_U(r.rereads, 0);
	CHECK_EQ_U(r.why[0], 0);
	CHECK_EQ_U(r.w.whole.ioctls, CALLS);
	kx_capread_free(&r);
	unlink(path);
}

/* The job comes after half the calls, past a window's: the first read's
 * store holds the file (fewer records than the keep records), handed over. */
static void test_reason_late_read_once(void)
{
	static struct kx_capread r;
	struct kx_capread_opts o = opts(100, KX_WREAD_KEEP_RECORDS);
	char path[96], err[512];

	snprintf(path, sizeof(path), "%s/job.kxp", dir);
	CHECK(write_capture(path, CALLS, 2, 0) == 0);
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == 0);
	CHECK(r.store != NULL);
	CHECK_EQ_U(r.rereads, 0);
	CHECK_EQ_U(r.again[0], 0);
	CHECK(strstr(r.why, "is read into memory whole: a KVM exit came after") != NULL);
	CHECK(r.store && kx_store_ioctl_count(r.store) == CALLS);
	check_as_read_whole(r.store, path);
	kx_capread_free(&r);
	unlink(path);
}

/* No keep records: the first read gives its store up past a window's calls,
 * before the job: the file is read again, counted and said. */
static void test_reason_late_reread(void)
{
	static struct kx_capread r;
	struct kx_capread_opts o = opts(100, 0);
	char path[96], err[512];

	snprintf(path, sizeof(path), "%s/job0.kxp", dir);
	CHECK(write_capture(path, CALLS, 2, 0) == 0);
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == 0);
	CHECK(r.store != NULL);
	CHECK_EQ_U(r.rereads, 1);
	CHECK(strstr(r.why, "a KVM exit came after") != NULL);
	CHECK(strstr(r.again, "is read a second time") != NULL);
	check_as_read_whole(r.store, path);
	/* Not asked to say: the reread is counted all the same. */
	kx_capread_free(&r);
	o.say = 0;
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == 0);
	CHECK_EQ_U(r.rereads, 1);
	CHECK(r.why[0] == 0 && r.again[0] == 0);
	kx_capread_free(&r);
	unlink(path);
}

/* A window of the whole capture: read whole at once, nothing said. */
static void test_unbounded(void)
{
	static struct kx_capread r;
	struct kx_capread_opts o = opts(KX_CAPREAD_WHOLE, 0);
	char path[96], err[512];

	snprintf(path, sizeof(path), "%s/whole.kxp", dir);
	CHECK(write_capture(path, CALLS, 0, 0) == 0);
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == 0);
	CHECK(r.store && kx_store_ioctl_count(r.store) == CALLS);
	CHECK(r.why[0] == 0 && r.again[0] == 0 && r.rereads == 0);
	kx_capread_free(&r);
	unlink(path);
}

/* A replay fixture is read whole, whatever the window. */
static void test_fixture(void)
{
	static struct kx_capread r;
	struct kx_capread_opts o = opts(1, KX_WREAD_KEEP_RECORDS);
	const char *fx = getenv("KX_FIXTURES");
	char path[512], err[512];

	snprintf(path, sizeof(path), "%s/kvm.jsonl", fx && *fx ? fx : "tests/fixtures");
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == 0);
	CHECK(r.store && kx_store_ioctl_count(r.store) > 0);
	CHECK(r.why[0] == 0 && r.rereads == 0);
	kx_capread_free(&r);
}

static void test_not_a_record_file(void)
{
	static struct kx_capread r;
	struct kx_capread_opts o = opts(100, KX_WREAD_KEEP_RECORDS);
	char path[96], err[512] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/junk.kxp", dir);
	f = fopen(path, "w");
	CHECK(f && fputs("not a record file\n", f) >= 0 && fclose(f) == 0);
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == -1);
	CHECK(err[0] != 0 && r.store == NULL);
	kx_capread_free(&r);
	o.window = KX_CAPREAD_WHOLE;
	err[0] = 0;
	CHECK(kx_capread_open(&r, path, &o, err, sizeof(err)) == -1);
	CHECK(err[0] != 0 && r.store == NULL);
	kx_capread_free(&r);
	unlink(path);
}

/* A report's read: a capture the stream gives exactly is streamed (its
 * rows aggregated as it passed), or read whole when asked. */
static void test_report_streamed(void)
{
	static struct kx_capread_report r;
	char path[96], err[512];

	snprintf(path, sizeof(path), "%s/rep.kxp", dir);
	CHECK(write_capture(path, CALLS, 0, 0) == 0);
	CHECK(kx_capread_report(&r, path, 0, BUDGET, 1, err, sizeof(err)) == 0);
	CHECK(r.an && r.sr && r.rows && r.res);
	CHECK(r.why[0] == 0 && r.rereads == 0);
	kx_capread_report_free(&r);
	CHECK(kx_capread_report(&r, path, 1, BUDGET, 1, err, sizeof(err)) == 0);
	CHECK(r.an && !r.sr && !r.rows && r.res);
	CHECK(r.an && kx_store_ioctl_count(r.an->store) == CALLS);
	CHECK(r.why[0] == 0 && r.rereads == 0);
	kx_capread_report_free(&r);
	unlink(path);
}

/* A capture the stream cannot report exactly: a KVM exit written after a
 * later exit of its thread was paired (the builder pairs a thread's exits
 * in time order). */
static int write_exit_late(const char *path)
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
	char err[256];
	struct kx_kxp_writer *w = kx_kxp_create(path, &ci, err, sizeof(err));

	if (!w)
		return -1;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 7000;
	e.dur = 1000;
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts = 9000;
	kx_kxp_add_ioctl(w, &e, NULL);
	j.ts = 8500;
	kx_kxp_add_job(w, &j);
	e.ts = 8500 + KX_JOBFLOW_EXIT_WAIT_NS + 1; /* pairs the exit before it */
	kx_kxp_add_ioctl(w, &e, NULL);
	e.ts += 2000; /* the call before it leaves the reorder stage */
	kx_kxp_add_ioctl(w, &e, NULL);
	j.ts = 4000;
	kx_kxp_add_job(w, &j);
	return kx_kxp_close(w, &ci, err, sizeof(err));
}

/* A reason the stream cannot report exactly: read again whole, counted,
 * said. */
static void test_report_reread(void)
{
	static struct kx_capread_report r;
	char path[96], err[512];

	snprintf(path, sizeof(path), "%s/repexit.kxp", dir);
	CHECK(write_exit_late(path) == 0);
	CHECK(kx_capread_report(&r, path, 0, BUDGET, 1, err, sizeof(err)) == 0);
	printf("# read whole: %s\n", r.why);
	CHECK(r.an && !r.sr && !r.rows);
	CHECK_EQ_U(r.rereads, 1);
	CHECK(strstr(r.why, "KVM exit came after a later exit") != NULL);
	kx_capread_report_free(&r);
	CHECK(kx_capread_report(&r, path, 0, BUDGET, 0, err, sizeof(err)) == 0);
	CHECK(r.why[0] == 0 && r.rereads == 1);
	kx_capread_report_free(&r);
	unlink(path);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kx-capread.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_windows);
	RUN(test_reason_late_read_once);
	RUN(test_reason_late_reread);
	RUN(test_unbounded);
	RUN(test_fixture);
	RUN(test_not_a_record_file);
	RUN(test_report_streamed);
	RUN(test_report_reread);
	rmdir(dir);
	KXT_EXIT();
}
