/*
 * Capture set-up shared by the front ends: the record file's header carries
 * the session's own start clock (root only, else skipped; the calls go to the
 * stand-in accelerator of kxtest_accel.h: kvm, else a loop device); workload
 * launch exit codes; device-set and pid-list parsing.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/setup.h"
#include "io/kxp.h"
#include "kxtest.h"
#include "kxtest_accel.h"
#include "model/store.h"

static struct kxt_accel acc;
static char no_acc[128]; /* why there is no stand-in device, when there is none */

/* Reads path's capinfo: the header while the capture runs, the trailer after. */
static int read_info(const char *path, struct kx_capinfo *ci, struct kx_kxp_read_result *res,
                     size_t *ioctls)
{
	struct kx_store *st = kx_store_new(0);
	char err[256];
	int rc;

	if (!st)
		return -1;
	rc = kx_kxp_read(path, st, ci, res, err, sizeof(err));
	*ioctls = kx_store_ioctl_count(st);
	kx_store_free(st);
	return rc;
}

static int same_sync(const struct kx_clock_sync *a, const struct kx_clock_sync *b)
{
	return a->offset_ns == b->offset_ns && a->mono_ns == b->mono_ns &&
	       a->uncertainty_ns == b->uncertainty_ns;
}

static void open_self(struct kx_capture *c, struct kx_devset *ds, uint32_t *self, const char *path,
                      char *err, size_t len, int *rc)
{
	struct kx_capture_opts o = {0};

	/* The default devices, and the loop driver when it stands in. */
	if (acc.loop && kx_devset_add(ds, "loop", err, len))
		printf("# --device loop: %s\n", err);
	kx_devset_resolve(ds, NULL, NULL);
	*self = (uint32_t)getpid();
	o.devices = ds;
	o.pids = self;
	o.npids = 1;
	o.record_path = path;
	*rc = kx_capture_open(c, &o, err, len);
}

static void header_has_session_start_clock(void)
{
	static struct kx_devset ds;
	static struct kx_capinfo ci;
	struct kx_capture c = {0};
	struct kx_kxp_read_result res;
	char path[] = "/tmp/kxtest-capture-XXXXXX", err[512], old[64];
	const struct kx_capinfo *sci;
	uint32_t self;
	size_t n;
	int fd, rc;

	if (geteuid() != 0)
		SKIP("needs root");
	if (no_acc[0])
		SKIP(no_acc);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	open_self(&c, &ds, &self, path, err, sizeof(err), &rc);
	if (rc == 0)
		rc = kx_capture_start(&c, err, sizeof(err));
	if (rc != 0) {
		printf("FAIL header_has_session_start_clock: %s\n", err);
		kxt_cur_failed = 1;
		kx_capture_close(&c);
		unlink(path);
		return;
	}
	sci = kx_session_capinfo(c.s);
	/* Running: the temporary file being written holds the header only. */
	CHECK(c.rec.w != NULL);
	rc = read_info(kx_kxp_writing_path(c.rec.w), &ci, &res, &n);
	CHECK(rc == 0 && res.truncated);
	CHECK(sci->clock_start.mono_ns != 0);
	CHECK(same_sync(&ci.clock_start, &sci->clock_start));
	CHECK_EQ_U(ci.start_mono_ns, sci->start_mono_ns);
	CHECK(kxt_accel_calls(&acc, 50) == 50);
	CHECK(kx_capture_stop(&c, err, sizeof(err)) == 0);
	/* Stopped: the trailer's clocks come from the same session. */
	rc = read_info(path, &ci, &res, &n);
	CHECK(rc == 0 && !res.truncated);
	CHECK(same_sync(&ci.clock_start, &sci->clock_start));
	CHECK(same_sync(&ci.clock_stop, &sci->clock_stop));
	CHECK(ci.clock_stop.mono_ns > ci.clock_start.mono_ns);
	CHECK(n >= 50);
	kx_capture_close(&c);
	unlink(path);
	/* mkstemp's empty file was kept as the previous capture. */
	snprintf(old, sizeof(old), "%s.old", path);
	unlink(old);
}

static int launch(char **argv, char *err, size_t len)
{
	struct kx_launch l = KX_LAUNCH_INIT;
	int rc;

	if (kx_launch_hold(&l, argv, err, len))
		return -1;
	rc = kx_launch_release(&l, argv, err, len);
	if (rc)
		return rc;
	/* As the record loop does: wait for the exit (at most 10 s), then collect it. */
	for (int i = 0; i < 1000 && !kx_launch_exited(&l); i++)
		usleep(10000);
	return kx_launch_finish(&l);
}

static void launch_exit_codes(void)
{
	char *ok[] = {"true", NULL}, *three[] = {"sh", "-c", "exit 3", NULL};
	char *killed[] = {"sh", "-c", "kill -KILL $$", NULL};
	char *missing[] = {"kxtest-no-such-command", NULL}, *notexec[] = {"/etc/passwd", NULL};
	char err[256] = "";

	CHECK(launch(ok, err, sizeof(err)) == 0);
	CHECK(launch(three, err, sizeof(err)) == 3);
	CHECK(launch(killed, err, sizeof(err)) == 128 + 9);
	CHECK(launch(missing, err, sizeof(err)) == 127);
	CHECK_STR(err, "cannot run 'kxtest-no-such-command': No such file or directory");
	CHECK(launch(notexec, err, sizeof(err)) == 126);
	CHECK(strstr(err, "cannot run '/etc/passwd'") != NULL);
}

/* A command still running when the capture ends gets SIGTERM. */
static void launch_finish_ends_command(void)
{
	char *sleeper[] = {"sleep", "30", NULL};
	struct kx_launch l = KX_LAUNCH_INIT;
	char err[256];

	CHECK(kx_launch_hold(&l, sleeper, err, sizeof(err)) == 0);
	CHECK(kx_launch_release(&l, sleeper, err, sizeof(err)) == 0);
	CHECK(!kx_launch_exited(&l));
	CHECK(kx_launch_finish(&l) == 128 + 15);
	CHECK(kx_launch_exited(&l));
}

static int warnings;
static char last_warning[256];

static void count_warning(void *ctx, const char *msg)
{
	(void)ctx;
	warnings++;
	snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

static void devset_specs(void)
{
	static struct kx_devset ds, defaults;
	char list[] = " /dev/null , /dev/kxtest-no-such-device,,/dev/null";
	char err[256];
	int skipped;

	CHECK(kx_devset_add(&ds, "/dev/kxtest-no-such-device", err, sizeof(err)) == -1);
	CHECK(strstr(err, "/dev/kxtest-no-such-device") != NULL);
	CHECK_EQ_U(ds.nspecs, 0);
	skipped = kx_devset_add_list(&ds, list, count_warning, NULL);
	CHECK_EQ_U(skipped, 1);
	CHECK_EQ_U(warnings, 1);
	CHECK(strstr(last_warning, "/dev/kxtest-no-such-device") != NULL);
	CHECK_EQ_U(ds.nspecs, 2);
	CHECK_STR(ds.specs[0], "/dev/null");
	CHECK_STR(ds.specs[1], "/dev/null");
	/* Defaults first, then each spec's devices in order. */
	kx_devset_resolve(&defaults, NULL, NULL);
	CHECK_EQ_U(kx_devset_resolve(&ds, NULL, NULL), defaults.n + 2);
	CHECK_STR(ds.dev[defaults.n].node, "/dev/null");
	CHECK(!kx_devset_same(&ds, &defaults));
	ds.n = defaults.n;
	CHECK(kx_devset_same(&ds, &defaults));
}

static void pid_lists(void)
{
	uint32_t pids[4];
	char err[256];
	int n = 0;

	CHECK(kx_pidset_parse("12,34", pids, 4, &n, err, sizeof(err)) == 0);
	CHECK(n == 2 && pids[0] == 12 && pids[1] == 34);
	CHECK(kx_pidset_parse("56", pids, 4, &n, err, sizeof(err)) == 0);
	CHECK(n == 3 && pids[2] == 56);
	CHECK(kx_pidset_parse("7,x", pids, 4, &n, err, sizeof(err)) == -1);
	CHECK_STR(err, "bad pid 'x' (expected a comma-separated list of process ids above 0)");
	n = 0;
	CHECK(kx_pidset_parse("0", pids, 4, &n, err, sizeof(err)) == -1);
	CHECK_STR(err, "bad pid '0' (expected a comma-separated list of process ids above 0)");
	CHECK(kx_pidset_parse("1,2,3,4,5", pids, 4, &n, err, sizeof(err)) == -1);
	CHECK_STR(err, "too many pids (at most 4)");
	/* Empty entries are refused, not skipped. */
	for (int i = 0; i < 5; i++) {
		static const char *const bad[] = {"1,,2", ",1", "1,", "", ","};

		n = 0;
		CHECK(kx_pidset_parse(bad[i], pids, 4, &n, err, sizeof(err)) == -1);
		CHECK(strstr(err, "an empty entry") != NULL);
	}
}

/* A command that ignores SIGTERM is killed after the grace period. */
static void launch_finish_kills_after_grace(void)
{
	char *stubborn[] = {"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done", NULL};
	struct kx_launch l = KX_LAUNCH_INIT;
	char err[256];
	uint64_t t0;
	struct timespec nap = {0, 200 * 1000000};

	CHECK(kx_launch_hold(&l, stubborn, err, sizeof(err)) == 0);
	CHECK(kx_launch_release(&l, stubborn, err, sizeof(err)) == 0);
	nanosleep(&nap, NULL); /* let the shell set its trap */
	t0 = kx_mono_ns();
	CHECK(kx_launch_finish(&l) == 128 + 9);
	CHECK(l.killed == 1);
	CHECK(kx_mono_ns() - t0 >= (uint64_t)KX_LAUNCH_GRACE_MS * 1000000 * 9 / 10);
	CHECK(kx_launch_exited(&l));
}

/* kx_capture_pids_running: 1 while a watched pid runs, 0 once all have exited. */
static void pids_running_follows_exit(void)
{
	static struct kx_capture c;
	pid_t p = fork();
	int st;

	if (p == 0) {
		pause();
		_exit(0);
	}
	CHECK(p > 0);
	CHECK(kx_capture_pids_running(&c) == 1); /* nothing watched */
	c.watch[0].pid = (uint32_t)p;
	c.watch[0].fd = -1; /* the kill(pid, 0) path */
	c.nwatch = 1;
	CHECK(kx_capture_pids_running(&c) == 1);
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	CHECK(kx_capture_pids_running(&c) == 0);
	c.nwatch = 0;
}

int main(void)
{
	if (kxt_accel_open(&acc, no_acc, sizeof(no_acc)) == 0)
		printf("# stand-in accelerator: %s (%s)\n", acc.name, acc.path);
	RUN(header_has_session_start_clock);
	RUN(launch_exit_codes);
	RUN(launch_finish_ends_command);
	RUN(launch_finish_kills_after_grace);
	RUN(pids_running_follows_exit);
	RUN(devset_specs);
	RUN(pid_lists);
	kxt_accel_close(&acc);
	KXT_EXIT();
}
