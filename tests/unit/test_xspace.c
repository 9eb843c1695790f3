/*
 * Unit tests of the XSpace exporter (user/export/xspace.c): synthetic stores are
 * serialized, parsed back with the protobuf-c code generated from
 * proto/xplane.proto, and checked against the schema rules of
 * specs/xplane.md (ids resolve, map keys equal ids, realtime timestamps, ps
 * units, no partial overlaps) and against the events put in: per-thread
 * lines, counts per name, stats, warnings, device planes, time windows, the
 * log directory layout, a 200k-event round trip and the 1M-event warning.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry/ioctl_decode.h"
#include "kxtest.h"
#include "kxtest_analysis.h"
#include "kxtest_capture.h"
#include "proto/xplane.pb-c.h"
#include "io/replay.h"
#include "model/store.h"
#include "export/xspace.h"

#define KVM_GET_API_VERSION 0xae00U
#define KVM_CREATE_VCPU     0xae41U
#define KVM_RUN             0xae80U
#define KVM_SET_USER_MEM    0x4020ae46U /* _IOW(KVMIO, 0x46, 32) */
#define LOOP_SET_FD         0x4c00U
#define OFFSET_NS           1700000000000000123LL
#define KVM_DEV             KX_MKDEV(10, 232)
#define LOOP_DEV            KX_MKDEV(7, 0)

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;
typedef Tensorflow__Profiler__XStat XStat;

static void add(struct kx_store *s, uint32_t pid, uint32_t tid, uint8_t fkind, uint32_t dev,
                uint8_t drv, uint32_t cmd, uint64_t ts, uint64_t dur, int64_t ret)
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
	e.fd = (int32_t)(tid % 7) + 3;
	kx_store_add_ioctl(s, &e, NULL);
}

/* A KVM-like capture: /dev/kvm and its anon kinds (twice), a loop device. */
static void test_capinfo(struct kx_capinfo *ci)
{
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	ci->clock_start.offset_ns = OFFSET_NS;
	ci->start_mono_ns = 1000000;
	ci->stop_mono_ns = 90000000;
	add_dev(ci, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, "/dev/kvm", "kvm");
	add_dev(ci, KX_FK_KVM_VM, 0, KX_DRV_KVM, "anon_inode:kvm-vm", "kvm");
	add_dev(ci, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, "anon_inode:kvm-vcpu", "kvm");
	add_dev(ci, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, "/dev/kvm", "kvm");
	add_dev(ci, KX_FK_BLK, LOOP_DEV, KX_DRV_LOOP, "/dev/loop0", "loop");
	ci->emitted = 1300;
	ci->received = 1200;
	ci->dropped = 100;
	ci->nhooks = 2;
	snprintf(ci->hooks[0].name, sizeof(ci->hooks[0].name), "sys_enter_ioctl");
	ci->hooks[0].state = KX_HOOK_ATTACHED;
	snprintf(ci->hooks[1].name, sizeof(ci->hooks[1].name), "sched_process_fork");
	ci->hooks[1].state = KX_HOOK_SKIPPED;
	snprintf(ci->hooks[1].why, sizeof(ci->hooks[1].why), "tracefs not mounted");
}

/*
 * Main thread 100 (named) sets up, vCPU threads 101 (named) and 102 (no
 * name) run jobs back to back; 200 in another process uses a loop device.
 * Added in completion order, not start order, with a few failures.
 */
static struct kx_store *test_store(void)
{
	struct kx_store *s = kx_store_new(0);

	add_comm(s, 100, 100, "trainer");
	add_comm(s, 100, 101, "vcpu-0");
	add_comm(s, 200, 200, "losetup");
	add(s, 100, 100, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_GET_API_VERSION, 2000000, 1000, 12);
	add(s, 100, 100, KX_FK_KVM_VM, 0, KX_DRV_KVM, KVM_CREATE_VCPU, 2100000, 5000, 5);
	for (int j = 0; j < 50; j++) {
		uint64_t t = 3000000 + (uint64_t)j * 100000;

		add(s, 100, 102, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, t + 7, 90000, 0);
		add(s, 100, 101, KX_FK_KVM_VCPU, 0, KX_DRV_KVM, KVM_RUN, t, 80000,
		    j % 10 == 3 ? -4 : 0);
	}
	add(s, 200, 200, KX_FK_BLK, LOOP_DEV, KX_DRV_LOOP, LOOP_SET_FD, 2500000, 30000, -16);
	add(s, 100, 100, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_GET_API_VERSION, 2050000, 1000, 12);
	return s;
}

static XSpace *serialize(const struct kx_store *s, const struct kx_capinfo *ci,
                         const struct kx_xspace_opts *o, size_t *len_out)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256] = "";
	XSpace *xs;

	if (kxt_xspace_serialize(s, ci, o, &buf, &len, err, sizeof(err))) {
		printf("# serialize: %s\n", err);
		return NULL;
	}
	xs = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	/* Minimal varints everywhere: protobuf-c's own packing is just as long. */
	if (xs && tensorflow__profiler__xspace__get_packed_size(xs) != len) {
		printf("# packed size %zu != %zu\n",
		       tensorflow__profiler__xspace__get_packed_size(xs), len);
		tensorflow__profiler__xspace__free_unpacked(xs, NULL);
		xs = NULL;
	}
	if (len_out)
		*len_out = len;
	free(buf);
	return xs;
}

static const XPlane *find_plane(const XSpace *xs, const char *name)
{
	for (size_t i = 0; i < xs->n_planes; i++)
		if (!strcmp(xs->planes[i]->name, name))
			return xs->planes[i];
	return NULL;
}

static const char *event_name(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_event_metadata; i++)
		if (p->event_metadata[i]->key == id)
			return p->event_metadata[i]->value->name;
	return NULL;
}

static const char *stat_name(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_stat_metadata; i++)
		if (p->stat_metadata[i]->key == id)
			return p->stat_metadata[i]->value->name;
	return NULL;
}

static const XStat *find_stat(const XPlane *p, XStat **stats, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *sn = stat_name(p, stats[i]->metadata_id);

		if (sn && !strcmp(sn, name))
			return stats[i];
	}
	return NULL;
}

static int has_warning(const XSpace *xs, const char *needle)
{
	for (size_t i = 0; i < xs->n_warnings; i++)
		if (strstr(xs->warnings[i], needle))
			return 1;
	return 0;
}

/*
 * Schema rules every plane must follow: map keys equal ids, ids from 1,
 * unique stat names, every metadata id and ref resolves, events sorted and
 * nested. Returns NULL or what is wrong.
 */
static const char *plane_valid(const XPlane *p)
{
	static char why[160];

	for (size_t i = 0; i < p->n_event_metadata; i++)
		if (p->event_metadata[i]->key < 1 || !p->event_metadata[i]->value ||
		    p->event_metadata[i]->key != p->event_metadata[i]->value->id)
			return "event metadata key != id";
	for (size_t i = 0; i < p->n_stat_metadata; i++) {
		if (p->stat_metadata[i]->key < 1 || !p->stat_metadata[i]->value ||
		    p->stat_metadata[i]->key != p->stat_metadata[i]->value->id)
			return "stat metadata key != id";
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->stat_metadata[i]->value->name,
			            p->stat_metadata[j]->value->name))
				return "stat metadata names not unique";
	}
	for (size_t i = 0; i < p->n_stats; i++)
		if (!stat_name(p, p->stats[i]->metadata_id))
			return "plane stat without metadata";
	for (size_t l = 0; l < p->n_lines; l++) {
		const XLine *line = p->lines[l];
		int64_t open[64];
		int depth = 0;

		if (line->id <= 0 || line->id >= 0xdeadbeefLL)
			return "line id out of range";
		for (size_t e = 0; e < line->n_events; e++) {
			const XEvent *ev = line->events[e];
			int64_t start = ev->offset_ps, end = start + ev->duration_ps;

			if (!event_name(p, ev->metadata_id))
				return "event without metadata";
			if (ev->data_case != TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS)
				return "event without offset_ps";
			if (e && start < line->events[e - 1]->offset_ps)
				return "events not sorted";
			while (depth && open[depth - 1] <= start)
				depth--;
			if (depth && end > open[depth - 1]) {
				snprintf(why, sizeof(why),
				         "partial overlap on line %" PRId64 " event %zu", line->id,
				         e);
				return why;
			}
			if (depth < 64)
				open[depth++] = end;
			if (end > line->duration_ps)
				return "event past the line's duration";
			for (size_t k = 0; k < ev->n_stats; k++) {
				const XStat *st = ev->stats[k];

				if (!stat_name(p, st->metadata_id))
					return "stat without metadata";
				if (st->value_case ==
				            TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE &&
				    !stat_name(p, (int64_t)st->ref_value))
					return "ref_value does not resolve";
			}
		}
	}
	return NULL;
}

static void test_host_plane(void)
{
	struct kx_store *s = test_store();
	static struct kx_capinfo ci;
	const XPlane *host;
	const char *why;
	XSpace *xs;
	static const uint32_t tids[] = {100, 101, 102, 200};
	static const char *const names[] = {"trainer", "vcpu-0", "tid 102", "losetup"};

	test_capinfo(&ci);
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	CHECK_EQ_U(xs->n_hostnames, 1);
	CHECK_STR(xs->hostnames[0], "testhost");
	host = find_plane(xs, "/host:CPU");
	CHECK(host);
	CHECK_EQ_U(host->id, 49);
	why = plane_valid(host);
	if (why)
		printf("# %s\n", why);
	CHECK(!why);
	CHECK_EQ_U(host->n_lines, 4);
	for (int i = 0; i < 4; i++) {
		const XLine *l = host->lines[i];

		CHECK_EQ_U(l->id, tids[i]);
		CHECK_STR(l->name, names[i]);
		CHECK_STR(l->display_name, names[i]);
	}
	/* realtime timestamps: first event (by start, not by store order) + offset */
	CHECK_EQ_U(host->lines[0]->timestamp_ns, 2000000 + OFFSET_NS);
	CHECK_EQ_U(host->lines[1]->timestamp_ns, 3000000 + OFFSET_NS);
	CHECK_EQ_U(host->lines[2]->timestamp_ns, 3000007 + OFFSET_NS);
	/* main thread: store order was 2.0 ms, 2.1 ms, 2.05 ms; exported by start */
	CHECK_EQ_U(host->lines[0]->n_events, 3);
	CHECK_EQ_U(host->lines[0]->events[1]->offset_ps, 50000ULL * 1000);
	CHECK_EQ_U(host->lines[0]->events[2]->offset_ps, 100000ULL * 1000);
	CHECK_EQ_U(host->lines[0]->events[2]->duration_ps, 5000ULL * 1000);
	CHECK_STR(event_name(host, host->lines[0]->events[2]->metadata_id), "KVM_CREATE_VCPU");
	/* vCPU lines: 50 KVM_RUN each, 100 us apart, durations in ps */
	for (int i = 1; i <= 2; i++) {
		const XLine *l = host->lines[i];

		CHECK_EQ_U(l->n_events, 50);
		for (size_t e = 0; e < l->n_events; e++) {
			CHECK_STR(event_name(host, l->events[e]->metadata_id), "KVM_RUN");
			CHECK_EQ_U(l->events[e]->offset_ps, e * 100000ULL * 1000);
			CHECK_EQ_U(l->events[e]->duration_ps,
			           (i == 1 ? 80000ULL : 90000ULL) * 1000);
		}
		CHECK_EQ_U(l->duration_ps, (49 * 100000ULL + (i == 1 ? 80000 : 90000)) * 1000);
	}
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

/* Every event's name count equals the store's, and its stats say what happened. */
static void test_counts_and_stats(void)
{
	struct kx_store *s = test_store();
	static struct kx_capinfo ci;
	size_t counts[16] = {0}, want_run = 0, want_api = 0, errors = 0;
	const XPlane *host;
	XSpace *xs;

	test_capinfo(&ci);
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		want_run += kx_store_ioctl(s, i)->cmd == KVM_RUN;
		want_api += kx_store_ioctl(s, i)->cmd == KVM_GET_API_VERSION;
	}
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host);
	CHECK_EQ_U(host->n_event_metadata, 4);
	for (size_t l = 0; l < host->n_lines; l++) {
		for (size_t e = 0; e < host->lines[l]->n_events; e++) {
			const XEvent *ev = host->lines[l]->events[e];
			const XStat *ret = find_stat(host, ev->stats, ev->n_stats, "ret");
			const XStat *err = find_stat(host, ev->stats, ev->n_stats, "errno");
			const XStat *drv = find_stat(host, ev->stats, ev->n_stats, "driver");
			const XStat *dev = find_stat(host, ev->stats, ev->n_stats, "device");
			const XStat *cmd = find_stat(host, ev->stats, ev->n_stats, "cmd");
			const XStat *pid = find_stat(host, ev->stats, ev->n_stats, "pid");
			const XStat *fd = find_stat(host, ev->stats, ev->n_stats, "fd");
			const char *name = event_name(host, ev->metadata_id);

			CHECK(ev->metadata_id >= 1 && ev->metadata_id < 16);
			counts[ev->metadata_id]++;
			CHECK(ret && drv && dev && cmd && pid && fd);
			CHECK_EQ_U(ret->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE);
			CHECK_EQ_U(cmd->value_case,
			           TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE);
			CHECK_EQ_U(drv->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE);
			CHECK_EQ_U(dev->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE);
			CHECK_EQ_U(fd->int64_value, host->lines[l]->id % 7 + 3);
			CHECK_EQ_U(pid->int64_value, host->lines[l]->id == 200 ? 200 : 100);
			if (!strcmp(name, "KVM_RUN")) {
				CHECK_EQ_U(cmd->uint64_value, KVM_RUN);
				CHECK_STR(stat_name(host, (int64_t)drv->ref_value), "kvm");
				CHECK_STR(stat_name(host, (int64_t)dev->ref_value),
				          "anon_inode:kvm-vcpu");
			}
			if (!strcmp(name, "LOOP_SET_FD")) {
				CHECK_STR(stat_name(host, (int64_t)drv->ref_value), "loop");
				CHECK_STR(stat_name(host, (int64_t)dev->ref_value), "/dev/loop0");
			}
			if (ret->int64_value < 0) {
				CHECK(err);
				CHECK_STR(stat_name(host, (int64_t)err->ref_value),
				          ret->int64_value == -4 ? "EINTR" : "EBUSY");
				errors++;
			} else {
				CHECK(!err);
			}
		}
	}
	CHECK_EQ_U(errors, 5 + 1);
	for (size_t i = 0; i < host->n_event_metadata; i++) {
		const char *name = host->event_metadata[i]->value->name;
		size_t n = counts[host->event_metadata[i]->key];

		if (!strcmp(name, "KVM_RUN"))
			CHECK_EQ_U(n, want_run);
		else if (!strcmp(name, "KVM_GET_API_VERSION"))
			CHECK_EQ_U(n, want_api);
		else
			CHECK_EQ_U(n, 1);
	}
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

static void test_device_planes_and_warnings(void)
{
	struct kx_store *s = test_store();
	static struct kx_capinfo ci;
	struct kx_xspace_opts o = {.device_planes_as_gpu = 1};
	const XPlane *kvm, *loop;
	XSpace *xs;

	test_capinfo(&ci);
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	/* /dev/kvm once (its anon kinds and the duplicate give no plane), the loop device */
	CHECK_EQ_U(xs->n_planes, 3);
	kvm = find_plane(xs, "/device:CUSTOM:0 (kvm /dev/kvm)");
	loop = find_plane(xs, "/device:CUSTOM:1 (loop /dev/loop0)");
	CHECK(kvm && loop);
	CHECK_EQ_U(kvm->id, 0);
	CHECK_EQ_U(loop->id, 1);
	CHECK(!plane_valid(kvm) && !plane_valid(loop));
	CHECK_STR(find_stat(kvm, kvm->stats, kvm->n_stats, "driver")->str_value, "kvm");
	CHECK_STR(find_stat(kvm, kvm->stats, kvm->n_stats, "node")->str_value, "/dev/kvm");
	CHECK_STR(find_stat(kvm, kvm->stats, kvm->n_stats, "dev_t")->str_value, "10:232");
	CHECK(!find_stat(kvm, kvm->stats, kvm->n_stats, "device_vendor"));
	CHECK_STR(find_stat(loop, loop->stats, loop->n_stats, "dev_t")->str_value, "7:0");
	CHECK(has_warning(xs, "100 ioctl events dropped (ring buffer full)"));
	CHECK(has_warning(xs, "hook sched_process_fork skipped: tracefs not mounted"));
	CHECK(!has_warning(xs, "sys_enter_ioctl"));
	CHECK(!has_warning(xs, "overlap"));
	CHECK(!has_warning(xs, "1,000,000"));
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);

	/* --gpu naming; a vendor is named where it is known */
	ci.ndevices = 0;
	add_dev(&ci, KX_FK_CHR, KX_MKDEV(226, 128), KX_DRV_AMDGPU, "/dev/dri/renderD128", "amdgpu");
	add_dev(&ci, KX_FK_CHR, KX_MKDEV(226, 0), KX_DRV_AMDGPU, "/dev/dri/card0", "amdgpu");
	xs = serialize(s, &ci, &o, NULL);
	CHECK(xs);
	kvm = find_plane(xs, "/device:GPU:0 (amdgpu /dev/dri/renderD128)");
	CHECK(kvm);
	CHECK(find_plane(xs, "/device:GPU:1 (amdgpu /dev/dri/card0)"));
	CHECK_STR(find_stat(kvm, kvm->stats, kvm->n_stats, "device_vendor")->str_value, "amd");
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

/* Events of one thread that partially overlap are shortened to nest, and said so. */
static const XLine *find_line(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_lines; i++)
		if (p->lines[i]->id == id)
			return p->lines[i];
	return NULL;
}

static struct kx_store *load_fixture(const char *name, struct kx_capinfo *ci)
{
	const char *dir = getenv("KX_FIXTURES");
	struct kx_store *s = kx_store_new(0);
	char path[512], err[512];

	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "tests/fixtures", name);
	if (s && kx_replay_load(path, s, ci, err, sizeof(err))) {
		printf("# %s\n", err);
		kx_store_free(s);
		return NULL;
	}
	return s;
}

/*
 * Flow stats of a plane's events in direction dir (1 in, 2 out): their ids
 * into ids, the count returned; SIZE_MAX when a flow's id is not its
 * correlation_id or the category is not generic.
 */
static size_t flows(const XPlane *p, unsigned int dir, uint64_t *ids, size_t max)
{
	size_t n = 0;

	for (size_t l = 0; l < p->n_lines; l++) {
		for (size_t e = 0; e < p->lines[l]->n_events; e++) {
			const XEvent *ev = p->lines[l]->events[e];
			const XStat *f = find_stat(p, ev->stats, ev->n_stats, "flow");
			const XStat *c = find_stat(p, ev->stats, ev->n_stats, "correlation_id");

			if (!f || (f->uint64_value & 3) != dir)
				continue;
			/* 2-bit direction, 56-bit id, 6-bit category (generic = 0) */
			if (!c || f->uint64_value >> 58 ||
			    (f->uint64_value >> 2) != c->uint64_value)
				return SIZE_MAX;
			if (n < max)
				ids[n] = c->uint64_value;
			n++;
		}
	}
	return n;
}

static int u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Device timelines (replayed amdgpu_new fixture, numbers in test_jobs.c):
 * ring lines by ring index + 1, a second lane for overlapping jobs, the
 * memory line, job stats, plane stats and flows that pair host and device.
 */
static void test_device_timelines(void)
{
	static struct kx_capinfo ci;
	struct kx_store *s = load_fixture("amdgpu_new.jsonl", &ci);
	const XPlane *host, *dev;
	const XLine *gfx, *gfx2, *mem;
	const XEvent *ev;
	const XStat *st;
	uint64_t in[16], out[16];
	size_t nin, nout;
	double busy;
	XSpace *xs;

	CHECK(s);
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	dev = find_plane(xs, "/device:CUSTOM:0 (amdgpu /dev/dri/renderD128)");
	CHECK(host && dev);
	CHECK(!plane_valid(host));
	CHECK(!plane_valid(dev));
	CHECK_EQ_U(dev->n_lines, 5);
	CHECK_STR(find_line(dev, 1)->name, "comp_1.0.0");
	gfx = find_line(dev, 2);
	gfx2 = find_line(dev, 1002);
	mem = find_line(dev, 9999);
	CHECK(gfx && gfx2 && mem && find_line(dev, 3));
	CHECK_STR(gfx->name, "gfx_0.0.0");
	CHECK_STR(gfx2->name, "gfx_0.0.0 #2");
	CHECK_STR(find_line(dev, 3)->name, "sdma0");
	CHECK_STR(mem->name, "memory");
	/* realtime = monotonic + offset; the line starts at its first job's run (2200 us) */
	CHECK_EQ_U(gfx->timestamp_ns, 10002200000ull + 1699999990000000000ull);
	CHECK_EQ_U(gfx->n_events, 3);
	CHECK_EQ_U(gfx2->n_events, 2);
	ev = gfx->events[0];
	CHECK_STR(event_name(dev, ev->metadata_id), "DRM_IOCTL_AMDGPU_CS");
	CHECK_EQ_U(ev->offset_ps, 0);
	CHECK_EQ_U(ev->duration_ps, 500000000ull);
	st = find_stat(dev, ev->stats, ev->n_stats, "context_id");
	CHECK(st && st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE);
	CHECK_STR(stat_name(dev, (int64_t)st->ref_value), "$$100");
	CHECK_EQ_U(find_stat(dev, ev->stats, ev->n_stats, "seqno")->uint64_value, 1);
	CHECK_EQ_U(find_stat(dev, ev->stats, ev->n_stats, "queue_delay_ps")->uint64_value,
	           150000000ull);
	CHECK_EQ_U(find_stat(dev, ev->stats, ev->n_stats, "client_id")->uint64_value, 5);
	CHECK_EQ_U(find_stat(dev, ev->stats, ev->n_stats, "pid")->int64_value, 2000);
	CHECK_EQ_U(find_stat(dev, ev->stats, ev->n_stats, "tid")->int64_value, 2001);
	CHECK_EQ_U(find_stat(dev, ev->stats, ev->n_stats, "waiter_tid")->int64_value, 2001);
	/* the job still running at the end is drawn to it and marked */
	ev = gfx->events[2];
	CHECK_EQ_U(ev->duration_ps, (100000ull - 6200) * 1000000);
	CHECK(find_stat(dev, ev->stats, ev->n_stats, "incomplete"));
	CHECK_STR(event_name(dev, gfx2->events[1]->metadata_id), "job");
	CHECK(find_stat(dev, gfx2->events[1]->stats, gfx2->events[1]->n_stats, "no_queue"));
	/* memory: +1 MiB, +4 MiB, -1 MiB */
	CHECK_EQ_U(mem->n_events, 3);
	CHECK_STR(event_name(dev, mem->events[2]->metadata_id), "free");
	CHECK_EQ_U(find_stat(dev, mem->events[1]->stats, mem->events[1]->n_stats, "bytes_allocated")
	                   ->uint64_value,
	           5242880);
	CHECK_EQ_U(
	        find_stat(dev, mem->events[2]->stats, mem->events[2]->n_stats, "allocation_bytes")
	                ->uint64_value,
	        1048576);
	/* plane stats */
	CHECK_EQ_U(find_stat(dev, dev->stats, dev->n_stats, "jobs")->uint64_value, 7);
	CHECK_EQ_U(find_stat(dev, dev->stats, dev->n_stats, "max_in_flight")->uint64_value, 2);
	busy = find_stat(dev, dev->stats, dev->n_stats, "busy_fraction")->double_value;
	CHECK(busy > 0.95799 && busy < 0.95801);
	/* flows: the five linked jobs, each paired with its ioctl (store index + 1) */
	nin = flows(dev, 1, in, 16);
	nout = flows(host, 2, out, 16);
	CHECK_EQ_U(nin, 5);
	CHECK_EQ_U(nout, 5);
	qsort(in, nin, sizeof(*in), u64cmp);
	qsort(out, nout, sizeof(*out), u64cmp);
	CHECK(!memcmp(in, out, sizeof(*in) * nin));
	CHECK(in[0] == 3 && in[1] == 5 && in[2] == 6 && in[3] == 8 && in[4] == 9);
	/* off-CPU time on the host events that blocked */
	ev = NULL;
	for (size_t l = 0; l < host->n_lines; l++)
		if (host->lines[l]->id == 2002)
			ev = host->lines[l]->events[0];
	CHECK(ev);
	CHECK_EQ_U(find_stat(host, ev->stats, ev->n_stats, "offcpu_ns")->uint64_value, 1150000);
	CHECK(has_warning(xs, "1 jobs never completed"));
	CHECK(has_warning(xs, "1 duplicate job events"));
	CHECK(has_warning(xs, "1 job events out of order"));
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);

	/* KVM: jobs on the /dev/kvm plane, one line per vCPU thread, flows from KVM_RUN */
	s = load_fixture("kvm.jsonl", &ci);
	CHECK(s);
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	dev = find_plane(xs, "/device:CUSTOM:0 (kvm /dev/kvm)");
	CHECK(host && dev && !plane_valid(dev));
	CHECK_STR(find_line(dev, 1)->name, "vcpu 7002");
	CHECK_STR(find_line(dev, 2)->name, "vcpu 7003");
	CHECK_EQ_U(find_line(dev, 1)->n_events, 2);
	CHECK_STR(event_name(dev, find_line(dev, 1)->events[0]->metadata_id), "KVM_RUN");
	CHECK_EQ_U(flows(dev, 1, in, 16), 3);
	CHECK_EQ_U(flows(host, 2, out, 16), 3);
	CHECK_EQ_U(find_line(dev, 9999)->n_events, 3);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

/*
 * Flow events of direction dir (1 in, 2 out) on every plane of xs whose
 * name starts with prefix: their ids and absolute starts (ns); the count.
 */
static size_t flow_points(const XSpace *xs, const char *prefix, unsigned int dir, uint64_t *ids,
                          uint64_t *at, size_t max)
{
	size_t n = 0;

	for (size_t pi = 0; pi < xs->n_planes; pi++) {
		const XPlane *p = xs->planes[pi];

		if (strncmp(p->name, prefix, strlen(prefix)))
			continue;
		for (size_t l = 0; l < p->n_lines; l++) {
			const XLine *ln = p->lines[l];

			for (size_t e = 0; e < ln->n_events; e++) {
				const XStat *f = find_stat(p, ln->events[e]->stats,
				                           ln->events[e]->n_stats, "flow");

				if (!f || (f->uint64_value & 3) != dir)
					continue;
				if (n < max) {
					ids[n] = f->uint64_value >> 2;
					at[n] = (uint64_t)ln->timestamp_ns +
					        ln->events[e]->offset_ps / 1000;
				}
				n++;
			}
		}
	}
	return n;
}

/* Events of plane p (may be NULL) that carry a correlation_id. */
static size_t correlated(const XPlane *p)
{
	size_t n = 0;

	for (size_t l = 0; p && l < p->n_lines; l++)
		for (size_t e = 0; e < p->lines[l]->n_events; e++)
			n += find_stat(p, p->lines[l]->events[e]->stats,
			               p->lines[l]->events[e]->n_stats, "correlation_id") != NULL;
	return n;
}

/*
 * XSpace flows run forward: in every fixture each job's in-flow starts at or
 * after the start of the ioctl event holding the same out-flow; a job
 * skewed to start before its submit point (msm's ring 1 job run at 3040 µs,
 * queued at 3050 µs inside its GEM_SUBMIT) keeps its correlation_id but gets
 * no flow, its ioctl no out-flow, and a warning counts it.
 */
static void test_flows_forward(void)
{
	static const char *const fixtures[] = {"amdgpu_new.jsonl", "amdgpu_old.jsonl", "i915.jsonl",
	                                       "kvm.jsonl",        "msm.jsonl",        "xe.jsonl"};
	static struct kx_capinfo ci;
	uint64_t in[64], out[64], tin[64], tout[64];
	struct kx_analysis *an;
	struct kx_store *s;
	uint8_t *buf = NULL;
	size_t nin, nout, len;
	char err[256];
	XSpace *xs;

	for (size_t f = 0; f < sizeof(fixtures) / sizeof(fixtures[0]); f++) {
		s = load_fixture(fixtures[f], &ci);
		CHECK(s);
		xs = serialize(s, &ci, NULL, NULL);
		kx_store_free(s);
		CHECK(xs);
		nin = flow_points(xs, "/device:", 1, in, tin, 64);
		nout = flow_points(xs, "/host:CPU", 2, out, tout, 64);
		tensorflow__profiler__xspace__free_unpacked(xs, NULL);
		CHECK(nin > 0 && nin <= 64 && nout > 0 && nout <= 64);
		for (size_t i = 0; i < nin; i++) {
			size_t o = 0;

			while (o < nout && out[o] != in[i])
				o++;
			CHECK(o < nout);
			CHECK(tin[i] >= tout[o]);
		}
	}
	s = load_fixture("msm.jsonl", &ci);
	CHECK(s);
	an = kxt_analyse(s, &ci);
	CHECK(an);
	for (size_t k = 0; k < an->jobs->njobs; k++)
		if (an->jobs->jobs[k].run_ts == 10003080000ULL)
			an->jobs->jobs[k].run_ts = 10003040000ULL;
	CHECK(kx_xspace_serialize(an, NULL, &buf, &len, err, sizeof(err)) == 0);
	kx_analysis_free(an);
	kx_store_free(s);
	xs = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	CHECK(xs);
	nin = flow_points(xs, "/device:", 1, in, tin, 64);
	nout = flow_points(xs, "/host:CPU", 2, out, tout, 64);
	CHECK_EQ_U(nin, 2);
	CHECK_EQ_U(nout, 2);
	CHECK_EQ_U(correlated(find_plane(xs, "/device:CUSTOM:0 (msm /dev/dri/renderD128)")), 3);
	CHECK(has_warning(xs, "1 jobs start on their device before their submitting ioctl"));
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
}

static void test_overlap_guard(void)
{
	struct kx_store *s = kx_store_new(0);
	static struct kx_capinfo ci;
	const XPlane *host;
	const XLine *l;
	XSpace *xs;

	test_capinfo(&ci);
	add(s, 1, 7, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_RUN, 5000, 1000, 0); /* 5000-6000 */
	add(s, 1, 7, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_RUN, 1000, 3000, 0); /* 1000-4000 */
	add(s, 1, 7, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_RUN, 2000, 500, 0);  /* nests */
	add(s, 1, 7, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_RUN, 3000, 2500, 0); /* -> 3000-4000 */
	add(s, 1, 7, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_RUN, 4000, 0, 0);    /* adjacent, 0 long */
	add(s, 1, 7, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_RUN, 1000, 3000, 0); /* equal: nests */
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host && !plane_valid(host));
	l = host->lines[0];
	CHECK_EQ_U(l->n_events, 6);
	CHECK_EQ_U(l->timestamp_ns, 1000 + OFFSET_NS);
	CHECK_EQ_U(l->events[3]->offset_ps, 2000000);
	CHECK_EQ_U(l->events[3]->duration_ps, 1000000);
	CHECK_EQ_U(l->events[5]->offset_ps, 4000000);
	CHECK_EQ_U(l->duration_ps, 5000000);
	CHECK(has_warning(xs, "1 events on 1 threads partially overlapped"));
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

static void test_window(void)
{
	struct kx_store *s = test_store();
	static struct kx_capinfo ci;
	struct kx_xspace_opts o = {.from_mono_ns = 3000000, .to_mono_ns = 3200000};
	const XPlane *host;
	XSpace *xs;

	test_capinfo(&ci);
	xs = serialize(s, &ci, &o, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host && !plane_valid(host));
	/* jobs 0 and 1 of both vCPUs; nothing of the main thread or the loop user */
	CHECK_EQ_U(host->n_lines, 2);
	CHECK_EQ_U(host->lines[0]->id, 101);
	CHECK_EQ_U(host->lines[0]->n_events, 2);
	CHECK_EQ_U(host->lines[1]->n_events, 2);
	CHECK_EQ_U(host->lines[1]->timestamp_ns, 3000007 + OFFSET_NS);
	CHECK_EQ_U(host->n_event_metadata, 1);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

/* A line id callback names a thread's line (TensorFlow's own id of it); 0 keeps the tid. */
static uint64_t odd_line_ids(void *ctx, uint32_t tid)
{
	(void)ctx;
	return tid == 101 ? 0x8000000000001234ULL : tid == 102 ? 7 : 0;
}

static void test_line_ids(void)
{
	struct kx_store *s = test_store();
	static struct kx_capinfo ci;
	struct kx_xspace_opts o = {.line_id = odd_line_ids};
	static const int64_t ids[] = {100, (int64_t)0x8000000000001234ULL, 7, 200};
	const XPlane *host;
	XSpace *xs;

	test_capinfo(&ci);
	xs = serialize(s, &ci, &o, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host);
	CHECK_EQ_U(host->n_lines, 4);
	for (size_t i = 0; host && i < host->n_lines && i < 4; i++)
		CHECK(host->lines[i]->id == ids[i]);
	/* the events stay on their thread's line */
	CHECK(host && host->n_lines == 4 && host->lines[1]->n_events == 50);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

static void test_decoded_args(void)
{
	struct kx_store *s = kx_store_new(0);
	static struct kx_capinfo ci;
	uint8_t arg[32];
	struct kx_field f[16];
	const XPlane *host;
	const XEvent *ev;
	struct kx_ioctl e;
	XSpace *xs;
	int nf;

	test_capinfo(&ci);
	memset(arg, 0, sizeof(arg));
	arg[0] = 1;                     /* slot */
	arg[9] = 0x10;                  /* guest_phys_addr 0x1000 */
	arg[18] = 1;                    /* memory_size 64 KiB */
	arg[25] = 0x20, arg[29] = 0x7f; /* userspace_addr */
	memset(&e, 0, sizeof(e));
	e.ts = 5000;
	e.dur = 100;
	e.pid = e.tid = 9;
	e.fkind = KX_FK_KVM_VM;
	e.drv = KX_DRV_KVM;
	e.cmd = KVM_SET_USER_MEM;
	e.arg_in_len = sizeof(arg);
	kx_store_add_ioctl(s, &e, arg);
	nf = kx_ioctl_decode_args(KX_DRV_KVM, KVM_SET_USER_MEM, 0, arg, sizeof(arg), NULL, 0, f,
	                          16);
	if (nf <= 0)
		SKIP("no decoder for KVM_SET_USER_MEMORY_REGION");
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host && !plane_valid(host));
	ev = host->lines[0]->events[0];
	for (int i = 0; i < nf; i++) {
		const XStat *st = find_stat(host, ev->stats, ev->n_stats, f[i].name);
		char hex[32];

		CHECK(st);
		switch (f[i].kind) {
		case KX_FIELD_U64:
			CHECK_EQ_U(st->uint64_value, f[i].u);
			break;
		case KX_FIELD_I64:
			CHECK_EQ_U(st->int64_value, f[i].i);
			break;
		case KX_FIELD_HEX:
			snprintf(hex, sizeof(hex), "0x%" PRIx64, f[i].u);
			CHECK_STR(st->str_value, hex);
			break;
		case KX_FIELD_STR:
			CHECK_STR(stat_name(host, (int64_t)st->ref_value), f[i].s);
			break;
		}
	}
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

static void test_empty(void)
{
	struct kx_store *s = kx_store_new(0);
	static struct kx_capinfo ci;
	const XPlane *host;
	XSpace *xs;

	memset(&ci, 0, sizeof(ci));
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host);
	CHECK_EQ_U(host->n_lines, 0);
	CHECK_EQ_U(xs->n_planes, 1);
	CHECK_EQ_U(xs->n_hostnames, 0);
	CHECK_EQ_U(xs->n_warnings, 0);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	/* zero-length events only: a line of duration 0 */
	add(s, 3, 3, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_GET_API_VERSION, 7000, 0, 12);
	add(s, 3, 3, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, KVM_GET_API_VERSION, 7000, 0, 12);
	xs = serialize(s, &ci, NULL, NULL);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host && !plane_valid(host));
	CHECK_EQ_U(host->lines[0]->n_events, 2);
	CHECK_EQ_U(host->lines[0]->duration_ps, 0);
	CHECK_STR(host->lines[0]->name, "tid 3");
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

/* A big capture round-trips intact: 200k events over 8 threads, shuffled. */
static void test_large(void)
{
	struct kx_store *s = kx_store_new((size_t)256 << 20);
	static struct kx_capinfo ci;
	const size_t n = 200000;
	size_t total = 0, len = 0;
	const XPlane *host;
	XSpace *xs;

	test_capinfo(&ci);
	for (size_t i = 0; i < n; i++) {
		size_t k = (i * 7919) % n; /* prime to n: a permutation */
		uint32_t tid = 1000 + (uint32_t)(k % 8);

		add(s, 1000, tid, KX_FK_KVM_VCPU, 0, KX_DRV_KVM,
		    k % 5 ? KVM_RUN : KVM_GET_API_VERSION, 10000000 + (uint64_t)k * 1000, 800,
		    k % 97 ? 0 : -22);
	}
	xs = serialize(s, &ci, NULL, &len);
	CHECK(xs);
	host = find_plane(xs, "/host:CPU");
	CHECK(host && !plane_valid(host));
	CHECK_EQ_U(host->n_lines, 8);
	for (size_t l = 0; l < host->n_lines; l++) {
		CHECK_EQ_U(host->lines[l]->id, 1000 + l);
		CHECK_EQ_U(host->lines[l]->timestamp_ns, 10000000 + l * 1000 + OFFSET_NS);
		total += host->lines[l]->n_events;
	}
	CHECK_EQ_U(total, n);
	CHECK(len < n * 80);
	printf("# %zu events -> %zu bytes (%.1f B/event)\n", n, len, (double)len / (double)n);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

/* Top-level XSpace warnings (field 3), read from the wire without unpacking it all. */
static int wire_has_warning(const uint8_t *p, size_t len, const char *needle)
{
	size_t i = 0;

	while (i < len) {
		uint64_t tag = 0, n = 0;
		int sh = 0;

		while (i < len && p[i] & 0x80)
			tag |= (uint64_t)(p[i++] & 0x7f) << sh, sh += 7;
		if (i >= len)
			return 0;
		tag |= (uint64_t)p[i++] << sh;
		if ((tag & 7) != 2)
			return 0;
		for (sh = 0; i < len && p[i] & 0x80; sh += 7)
			n |= (uint64_t)(p[i++] & 0x7f) << sh;
		if (i >= len)
			return 0;
		n |= (uint64_t)p[i++] << sh;
		if (n > len - i)
			return 0;
		if (tag >> 3 == 3 && memmem(p + i, n, needle, strlen(needle)))
			return 1;
		i += n;
	}
	return 0;
}

static void test_million_warning(void)
{
	struct kx_store *s = kx_store_new((size_t)256 << 20);
	static struct kx_capinfo ci;
	uint8_t *buf;
	size_t len;
	char err[256];

	test_capinfo(&ci);
	for (uint64_t i = 0; i < 1000001; i++)
		add(s, 1, 1 + (uint32_t)(i & 3), KX_FK_CHR, KVM_DEV, KX_DRV_KVM,
		    KVM_GET_API_VERSION, i * 500, 300, 12);
	CHECK(!kxt_xspace_serialize(s, &ci, NULL, &buf, &len, err, sizeof(err)));
	CHECK(wire_has_warning(buf, len, "1000001 events exported"));
	CHECK(wire_has_warning(buf, len, "ring buffer full"));
	free(buf);
	kx_store_free(s);
}

static int count_suffix(const char *dir, const char *suffix, char *name, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), sl = strlen(suffix);

		if (l >= sl && !strcmp(de->d_name + l - sl, suffix)) {
			n++;
			snprintf(name, len, "%s", de->d_name);
		}
	}
	closedir(d);
	return n;
}

static void test_logdir(void)
{
	struct kx_store *s = test_store();
	static struct kx_capinfo ci;
	char tmp[] = "/tmp/kxprof-xspace.XXXXXX", path[4096], err[256], name[256], want[4096];
	char run[32], rundir[1024];
	struct stat st;
	time_t when;
	struct tm tm;
	uint8_t *buf;
	XSpace *xs;
	FILE *f;

	test_capinfo(&ci);
	snprintf(ci.hostname, sizeof(ci.hostname), "node:7");
	CHECK(mkdtemp(tmp));
	CHECK(!kxt_xspace_write_logdir(s, &ci, NULL, tmp, path, sizeof(path), err, sizeof(err)));
	when = (time_t)((ci.start_mono_ns + OFFSET_NS) / 1000000000);
	localtime_r(&when, &tm);
	strftime(run, sizeof(run), "%Y_%m_%d_%H_%M_%S", &tm);
	snprintf(rundir, sizeof(rundir), "%s/plugins/profile/%s", tmp, run);
	snprintf(want, sizeof(want), "%s/node_7.xplane.pb", rundir);
	CHECK_STR(path, want);
	CHECK(!stat(path, &st) && S_ISREG(st.st_mode) && st.st_size > 0);
	CHECK_EQ_U(count_suffix(rundir, ".tmp", name, sizeof(name)), 0);
	CHECK_EQ_U(count_suffix(tmp, ".profile-empty", name, sizeof(name)), 1);
	snprintf(want, sizeof(want), "events.out.tfevents.%lld.node_7.profile-empty",
	         (long long)when);
	CHECK_STR(name, want);
	/* the file is the XSpace, not gzip */
	buf = malloc((size_t)st.st_size);
	f = fopen(path, "rb");
	CHECK(buf && f);
	CHECK_EQ_U(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	xs = tensorflow__profiler__xspace__unpack(NULL, (size_t)st.st_size, buf);
	free(buf);
	CHECK(xs);
	CHECK(find_plane(xs, "/host:CPU"));
	CHECK_STR(xs->hostnames[0], "node:7");
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	/* a second export into the same logdir keeps the one marker */
	CHECK(!kxt_xspace_write_logdir(s, &ci, NULL, tmp, path, sizeof(path), err, sizeof(err)));
	CHECK_EQ_U(count_suffix(tmp, ".profile-empty", name, sizeof(name)), 1);
	/* unwritable logdir: an error that names the path */
	CHECK(kxt_xspace_write_logdir(s, &ci, NULL, "/proc/kxprof-no", path, sizeof(path), err,
	                              sizeof(err)));
	CHECK(strstr(err, "/proc/kxprof-no"));
	snprintf(want, sizeof(want), "rm -rf '%s'", tmp);
	CHECK(!system(want));
	kx_store_free(s);
}

int main(void)
{
	RUN(test_host_plane);
	RUN(test_counts_and_stats);
	RUN(test_device_planes_and_warnings);
	RUN(test_device_timelines);
	RUN(test_flows_forward);
	RUN(test_overlap_guard);
	RUN(test_window);
	RUN(test_line_ids);
	RUN(test_decoded_args);
	RUN(test_empty);
	RUN(test_large);
	RUN(test_million_warning);
	RUN(test_logdir);
	KXT_EXIT();
}
