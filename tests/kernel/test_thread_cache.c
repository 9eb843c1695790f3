/*
 * What each thread's in-kernel entry keeps from call to call, against the
 * real kernel (root only, else skipped): the device answer for its last
 * file must follow changes of the device list, and the aggregate slot of
 * its last key must follow resets, also for a thread that never closes its
 * fd or changes its ioctl. Every tracepoint mechanism is checked (task
 * storage under tp_btf and tp, the tid hash under raw_tp). The calls go to
 * the stand-in accelerator (kxtest_accel.h: kvm, else a loop device).
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "live/aggregate.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "kxtest.h"
#include "kxtest_accel.h"
#include "capture/session.h"
#include "capture/sinks.h"
#include "model/store.h"

static const char *const mechs[] = {"tp_btf", "raw_tp", "tp"};
static struct kx_device devs[KX_MAX_DEVICES], no_acc[KX_MAX_DEVICES];
static int ndevs, nno_acc;
static struct kxt_accel acc;
static char no_dev[128]; /* why there is no stand-in device, when there is none */

static int calls(int fd, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += kxt_accel_call_on(&acc, fd);
	return ok;
}

static size_t cheap_call_records(struct kx_store *st)
{
	size_t n = 0;

	for (size_t i = 0; i < kx_store_ioctl_count(st); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(st, i);

		n += e->cmd == (uint32_t)acc.cmd && e->pid == (uint32_t)getpid();
	}
	return n;
}

/* Skips the calling case (SKIP returns from it) without root or a device. */
#define NEED_ROOT_AND_DEVICE()                                                                     \
	do {                                                                                       \
		if (geteuid() != 0)                                                                \
			SKIP("needs root");                                                        \
		if (no_dev[0])                                                                     \
			SKIP(no_dev);                                                              \
	} while (0)

/* Same thread, same fd throughout: the device traced, untraced, traced again. */
static void device_answer_follows_device_list(void)
{
	NEED_ROOT_AND_DEVICE();
	for (size_t m = 0; m < 3; m++) {
		struct kx_store *st = kx_store_new(0);
		struct kx_session_opts o = {.devices = devs,
		                            .ndevices = ndevs,
		                            .mech = mechs[m],
		                            .sink = kx_sink_store(st)};
		char err[256];
		struct kx_session *s = kx_session_open(&o, err, sizeof(err));
		int fd = kxt_accel_reopen(&acc);

		CHECK(s != NULL && fd >= 0);
		CHECK(kx_session_add_pid(s, (uint32_t)getpid(), err, sizeof(err)) == 0);
		CHECK(kx_session_start(s, err, sizeof(err)) == 0);
		CHECK(calls(fd, 20) == 20);
		CHECK(kx_session_set_devices(s, no_acc, nno_acc, err, sizeof(err)) == 0);
		CHECK(calls(fd, 15) == 15);
		CHECK(kx_session_set_devices(s, devs, ndevs, err, sizeof(err)) == 0);
		CHECK(calls(fd, 7) == 7);
		CHECK(kx_session_stop(s) == 0);
		printf("# %s: %zu records (want 27)\n", mechs[m], cheap_call_records(st));
		CHECK_EQ_U(cheap_call_records(st), 27);
		close(fd);
		kx_session_close(s);
		kx_store_free(st);
	}
}

static uint64_t cheap_call_count(const struct kx_agg_snapshot *snap)
{
	uint64_t n = 0;

	for (size_t i = 0; i < snap->nrows; i++)
		if (snap->rows[i].key.cmd == (uint32_t)acc.cmd)
			n += snap->rows[i].count;
	return n;
}

/* Read-and-reset count of this process's cheap calls (~0 on error). */
static uint64_t take(struct kx_agg *a)
{
	struct kx_agg_snapshot snap;
	char err[256];
	uint64_t n;

	if (kx_agg_snapshot(a, &snap, 1, err, sizeof(err)) != 0)
		return ~0ULL;
	n = cheap_call_count(&snap);
	kx_agg_snapshot_free(&snap);
	return n;
}

/* Past the recycling delay, a snapshot gives the retired slots back. */
static void recycled(struct kx_agg *a)
{
	struct kx_agg_snapshot snap;
	char err[256];

	nanosleep(&(struct timespec){.tv_sec = 1, .tv_nsec = 200000000}, NULL);
	CHECK(kx_agg_snapshot(a, &snap, 0, err, sizeof(err)) == 0);
	CHECK_EQ_U(snap.nrows, 0);
	kx_agg_snapshot_free(&snap);
}

/* Same thread, same fd, same ioctl: every reset starts the count over, and
 * the slots given back after resets serve new keys (a limit of 2 keys,
 * reset 6 times, never overflows). */
static void aggregate_slot_follows_resets(void)
{
	NEED_ROOT_AND_DEVICE();
	for (size_t m = 0; m < 3; m++) {
		struct kx_session_opts o = {.devices = devs,
		                            .ndevices = ndevs,
		                            .mech = mechs[m],
		                            .aggregate = 1,
		                            .agg_by_pid = 1,
		                            .agg_max_keys = 2};
		char err[256];
		struct kx_session *s = kx_session_open(&o, err, sizeof(err));
		struct kx_agg *a = s ? kx_agg_new(s, KX_AGG_BY_PID) : NULL;
		int fd = kxt_accel_reopen(&acc);

		CHECK(a != NULL && fd >= 0);
		CHECK(kx_session_add_pid(s, (uint32_t)getpid(), err, sizeof(err)) == 0);
		CHECK(kx_session_start(s, err, sizeof(err)) == 0);
		for (int round = 1; round <= 6; round++) {
			CHECK(calls(fd, 10 * round) == 10 * round);
			CHECK_EQ_U(take(a), 10 * round);
			if (round % 2 == 0)
				recycled(a);
		}
		CHECK_EQ_U(kx_session_stat(s, KX_STAT_AGG_OVERFLOW), 0);
		CHECK(kx_session_stop(s) == 0);
		close(fd);
		kx_agg_free(a);
		kx_session_close(s);
	}
}

int main(void)
{
	if (kxt_accel_open(&acc, no_dev, sizeof(no_dev)) == 0)
		printf("# stand-in accelerator: %s (%s)\n", acc.name, acc.path);
	ndevs = kxt_accel_devices(&acc, devs, KX_MAX_DEVICES);
	for (int i = 0; i < ndevs; i++)
		if (devs[i].drv != acc.drv)
			no_acc[nno_acc++] = devs[i];
	RUN(device_answer_follows_device_list);
	RUN(aggregate_slot_follows_resets);
	kxt_accel_close(&acc);
	KXT_EXIT();
}
