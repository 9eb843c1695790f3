/*
 * Session lifecycle against the real kernel (root only, else skipped):
 * every attach mechanism loads and traces this process's own ioctls on the
 * stand-in accelerator (kxtest_accel.h: kvm, else a loop device) into a
 * store; many open/start/stop/close cycles leak no fds and leave no BPF
 * programs or maps behind.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "kxtest.h"
#include "kxtest_accel.h"
#include "kxtest_leaks.h"
#include "capture/session.h"
#include "capture/sinks.h"
#include "model/store.h"

static struct kx_device devs[KX_MAX_DEVICES];
static int ndevs;
static struct kxt_accel acc;
static char no_acc[128]; /* why there is no stand-in device, when there is none */

static struct kx_session *open_self(const char *mech, struct kx_store *st, char *err, size_t len)
{
	struct kx_session_opts o = {
	        .devices = devs, .ndevices = ndevs, .mech = mech, .sink = kx_sink_store(st)};
	struct kx_session *s = kx_session_open(&o, err, len);

	if (s && kx_session_add_pid(s, (uint32_t)getpid(), err, len) != 0) {
		kx_session_close(s);
		return NULL;
	}
	return s;
}

static void each_mechanism_traces_self(void)
{
	static const char *const mechs[] = {"tp_btf", "raw_tp", "tp"};

	if (geteuid() != 0)
		SKIP("needs root");
	if (no_acc[0])
		SKIP(no_acc);
	for (size_t m = 0; m < 3; m++) {
		struct kx_store *st = kx_store_new(0);
		char err[256];
		struct kx_session *s = open_self(mechs[m], st, err, sizeof(err));
		size_t hits = 0;

		if (!s)
			printf("# %s: %s\n", mechs[m], err);
		CHECK(s != NULL);
		CHECK(kx_session_start(s, err, sizeof(err)) == 0);
		CHECK(kxt_accel_calls(&acc, 37) == 37);
		CHECK(kx_session_stop(s) == 0);
		for (size_t i = 0; i < kx_store_ioctl_count(st); i++) {
			const struct kx_ioctl *e = kx_store_ioctl(st, i);

			hits += e->cmd == (uint32_t)acc.cmd && e->drv == acc.drv &&
			        e->pid == (uint32_t)getpid() && e->ret == acc.want;
		}
		CHECK_EQ_U(hits, 37);
		CHECK_EQ_U(kx_session_capinfo(s)->emitted,
		           kx_session_capinfo(s)->received + kx_session_capinfo(s)->dropped);
		CHECK(kx_store_comm(st, (uint32_t)getpid()) != NULL);
		kx_session_close(s);
		kx_store_free(st);
	}
}

static void cycles_leak_nothing(void)
{
	int fds0, progs0, maps0;

	if (geteuid() != 0)
		SKIP("needs root");
	fds0 = count_fds();
	progs0 = count_bpf(bpf_prog_get_next_id);
	maps0 = count_bpf(bpf_map_get_next_id);
	for (int i = 0; i < 20; i++) {
		struct kx_store *st = kx_store_new(1 << 20);
		char err[256];
		struct kx_session *s = open_self(NULL, st, err, sizeof(err));

		CHECK(s != NULL);
		CHECK(kx_session_start(s, err, sizeof(err)) == 0);
		if (!no_acc[0])
			kxt_accel_calls(&acc, 3);
		kx_session_stop(s);
		kx_session_close(s);
		kx_store_free(st);
	}
	CHECK_EQ_U(count_fds(), fds0);
	/* Other processes may load programs meanwhile; ours must be gone. */
	CHECK(bpf_back_to(progs0, maps0));
}

static void close_without_start(void)
{
	struct kx_store *st;
	struct kx_session *s;
	char err[256];
	int fds0;

	if (geteuid() != 0)
		SKIP("needs root");
	fds0 = count_fds();
	st = kx_store_new(1 << 20);
	s = open_self(NULL, st, err, sizeof(err));
	CHECK(s != NULL);
	kx_session_close(s);
	kx_store_free(st);
	CHECK_EQ_U(count_fds(), fds0);
}

int main(void)
{
	if (kxt_accel_open(&acc, no_acc, sizeof(no_acc)) == 0)
		printf("# stand-in accelerator: %s (%s)\n", acc.name, acc.path);
	ndevs = kxt_accel_devices(&acc, devs, KX_MAX_DEVICES);
	RUN(each_mechanism_traces_self);
	RUN(cycles_leak_nothing);
	RUN(close_without_start);
	kxt_accel_close(&acc);
	KXT_EXIT();
}
