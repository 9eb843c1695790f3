/*
 * TensorFlow plugin harness: loads libkxprof_tf.so exactly the way
 * TensorFlow core does (dlopen RTLD_NOW|RTLD_LOCAL, TF_InitProfiler with
 * zeroed, size-preset structs, core's validation, by-value copies, destroy
 * callbacks run twice at once) and drives sessions through the copies around
 * an in-process multi-threaded workload on the stand-in accelerator
 * (kxtest_accel.h: KVM_RUN jobs on kvm; without /dev/kvm, BLKZEROOUT jobs on
 * a loop device attached here, traced through KXPROF_DEVICES=loop), then
 * checks the collected XSpace against every ioctl the workload issued. Also checks the collect
 * protocol (uninitialised size, too-small buffer, one-shot data), leaks over many cycles and the
 * unprivileged (inactive) path.
 *
 * The harness provides TF_Status itself; it is linked with -rdynamic so the
 * plugin's dlsym(RTLD_DEFAULT, "TF_SetStatus") finds it as it would find
 * TensorFlow's. Plugin path: $KXPROF_TF_PLUGIN, else <build>/libkxprof_tf.so
 * next to this binary's tests/ directory. KXPROF_TF_DUMP=FILE keeps the
 * workload session's XSpace.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/loop.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <bpf/bpf.h>

#include "../../plugin/tf_profiler_api.h"
#include "../workloads/workload.h"
#include "kxtest.h"
#include "kxtest_accel.h"
#include "kxtest_leaks.h"
#include "proto/xplane.pb-c.h"

#define FAILF(...)                                                                                 \
	do {                                                                                       \
		printf("FAIL %s: ", kxt_cur);                                                      \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		kxt_cur_failed = 1;                                                                \
		return;                                                                            \
	} while (0)

/* ---- TF_Status, as TensorFlow's libraries would provide it ---------------- */

struct TF_Status {
	TF_Code code;
	char msg[512];
};

static int set_status_calls;

TF_Status *TF_NewStatus(void)
{
	return calloc(1, sizeof(TF_Status));
}

void TF_DeleteStatus(TF_Status *s)
{
	free(s);
}

void TF_SetStatus(TF_Status *s, TF_Code code, const char *msg)
{
	set_status_calls++;
	s->code = code;
	snprintf(s->msg, sizeof(s->msg), "%s", msg ? msg : "");
}

TF_Code TF_GetCode(const TF_Status *s)
{
	return s->code;
}

const char *TF_Message(const TF_Status *s)
{
	return s->msg;
}

/* ---- loading and registration, like core's InitPluginProfiler ---------------- */

typedef void (*init_fn)(TF_ProfilerRegistrationParams *, TF_Status *);

static char plugin_path[PATH_MAX];
static char root_dir[PATH_MAX];   /* source tree (for proto/xplane.proto) */
static char annot_path[PATH_MAX]; /* libkxprof_annotate.so beside the plugin */
static void *handle;
static init_fn init_profiler;
static TP_Profiler prof; /* core's by-value copies */
static TP_ProfilerFns fns;
static int registered;

static void find_paths(void)
{
	char exe[PATH_MAX], tmp[PATH_MAX];
	const char *env = getenv("KXPROF_TF_PLUGIN");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *build;

	if (n < 0)
		n = 0;
	exe[n] = 0;
	/* exe = <root>/<build>/tests/test_tf_plugin */
	snprintf(tmp, sizeof(tmp), "%s", exe);
	build = dirname(dirname(tmp));
	if (env && *env)
		snprintf(plugin_path, sizeof(plugin_path), "%s", env);
	else
		snprintf(plugin_path, sizeof(plugin_path), "%s/libkxprof_tf.so", build);
	snprintf(annot_path, sizeof(annot_path), "%s/libkxprof_annotate.so", build);
	snprintf(root_dir, sizeof(root_dir), "%s", dirname(build));
}

/* Core's device_type rule: [A-Z][A-Z_]* matching entirely. */
static int device_type_ok(const char *t)
{
	regex_t re;
	int ok;

	if (!t || regcomp(&re, "^[A-Z][A-Z_]*$", REG_EXTENDED | REG_NOSUB) != 0)
		return 0;
	ok = regexec(&re, t, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

/*
 * One registration exactly as core does it. Returns NULL on success, else
 * what failed. Copies the filled structs into *p and *f.
 */
static const char *core_register(TP_Profiler *p_out, TP_ProfilerFns *f_out)
{
	TF_ProfilerRegistrationParams params;
	TP_Profiler p;
	TP_ProfilerFns f;
	TF_Status *st = TF_NewStatus();
	TF_Code code;

	memset(&params, 0, sizeof(params));
	memset(&p, 0, sizeof(p));
	memset(&f, 0, sizeof(f));
	params.struct_size = TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE;
	params.major_version = TP_MAJOR;
	params.minor_version = TP_MINOR;
	params.patch_version = TP_PATCH;
	p.struct_size = TP_PROFILER_STRUCT_SIZE;
	f.struct_size = TP_PROFILER_FNS_STRUCT_SIZE;
	params.profiler = &p;
	params.profiler_fns = &f;
	init_profiler(&params, st);
	code = TF_GetCode(st);
	TF_DeleteStatus(st);
	if (code != TF_OK)
		return "TF_InitProfiler set an error status";
	if (!params.struct_size || !params.destroy_profiler || !params.destroy_profiler_fns)
		return "params: struct_size 0 or destroy callbacks missing";
	if (!p.struct_size || !device_type_ok(p.device_type))
		return "profiler: struct_size 0 or device_type not [A-Z][A-Z_]*";
	if (!f.struct_size || !f.start || !f.stop || !f.collect_data_xspace)
		return "profiler_fns: struct_size 0 or a function missing";
	/* By value, then the destroy callbacks (twice) while the copies stay in use. */
	*p_out = p;
	*f_out = f;
	for (int i = 0; i < 2; i++) {
		params.destroy_profiler(&p);
		params.destroy_profiler_fns(&f);
	}
	/* Core's originals are gone: make any later use of them visible. */
	memset(&p, 0xdb, sizeof(p));
	memset(&f, 0xdb, sizeof(f));
	return NULL;
}

static void registration(void)
{
	const char *why;

	handle = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
	if (!handle)
		FAILF("dlopen %s: %s", plugin_path, dlerror());
	init_profiler = (init_fn)dlsym(handle, "TF_InitProfiler");
	if (!init_profiler)
		FAILF("no TF_InitProfiler in %s", plugin_path);
	why = core_register(&prof, &fns);
	if (why)
		FAILF("%s", why);
	CHECK_STR(prof.device_type, "KXPROF");
	CHECK(prof.ext == NULL && fns.ext == NULL);
	CHECK_EQ_U(prof.struct_size, TP_PROFILER_STRUCT_SIZE);
	CHECK_EQ_U(fns.struct_size, TP_PROFILER_FNS_STRUCT_SIZE);
	/* The plugin reports nothing else: no other symbol is reachable. */
	CHECK(dlsym(handle, "kx_session_open") == NULL);
	registered = 1;
}

/* ---- driving sessions on core's copies --------------------------------------- */

static TF_Code call_fn(void (*fn)(const TP_Profiler *, TF_Status *))
{
	TF_Status *st = TF_NewStatus();
	TF_Code c;

	fn(&prof, st);
	c = TF_GetCode(st);
	TF_DeleteStatus(st);
	return c;
}

#define GUARD 64

/*
 * Core's collect: an UNINITIALISED size asked with buffer NULL, then a buffer
 * of exactly that size. *out is malloc'ed (NULL when the size was 0).
 */
static const char *core_collect(uint8_t **out, size_t *len)
{
	static char why[256];
	TF_Status *st = TF_NewStatus();
	size_t size, cap;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	memset(&size, 0xaa, sizeof(size));
	fns.collect_data_xspace(&prof, NULL, &size, st);
	if (TF_GetCode(st) != TF_OK) {
		snprintf(why, sizeof(why), "size query failed: %s", TF_Message(st));
		TF_DeleteStatus(st);
		return why;
	}
	TF_DeleteStatus(st);
	if (size == 0)
		return NULL;
	if (size > (1u << 30)) {
		snprintf(why, sizeof(why), "implausible size %zu (size not written?)", size);
		return why;
	}
	buf = malloc(size + GUARD);
	if (!buf)
		return "out of memory";
	memset(buf + size, 0x5a, GUARD);
	cap = size;
	st = TF_NewStatus();
	fns.collect_data_xspace(&prof, buf, &cap, st);
	if (TF_GetCode(st) != TF_OK || cap != size) {
		snprintf(why, sizeof(why), "data call: status %d (%s), size %zu of %zu",
		         TF_GetCode(st), TF_Message(st), cap, size);
		TF_DeleteStatus(st);
		free(buf);
		return why;
	}
	TF_DeleteStatus(st);
	for (size_t i = 0; i < GUARD; i++)
		if (buf[size + i] != 0x5a) {
			free(buf);
			return "wrote past the reported size";
		}
	*out = buf;
	*len = size;
	return NULL;
}

/* Size reported with buffer NULL (uninitialised input). */
static size_t query_size(TF_Code *code)
{
	TF_Status *st = TF_NewStatus();
	size_t size;

	memset(&size, 0xaa, sizeof(size));
	fns.collect_data_xspace(&prof, NULL, &size, st);
	*code = TF_GetCode(st);
	TF_DeleteStatus(st);
	return size;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct kxt_accel acc;
static char no_acc[128]; /* why there is no stand-in device, when there is none */

/* The sessions' KXPROF_DEVICES, which a case that changes it puts back:
 * without /dev/kvm every session also traces the loop driver. */
static void devices_env(void)
{
	if (acc.loop)
		setenv("KXPROF_DEVICES", "loop", 1);
	else
		unsetenv("KXPROF_DEVICES");
}

#define NEED_BPF()                                                                                 \
	do {                                                                                       \
		if (!registered)                                                                   \
			SKIP("plugin not registered");                                             \
		if (geteuid() != 0)                                                                \
			SKIP("needs root (loads BPF programs)");                                   \
		if (no_acc[0])                                                                     \
			SKIP(no_acc);                                                              \
	} while (0)

/* ---- the in-process KVM workload ----------------------------------------------- */

#define WL_THREADS 3
#define WL_JOBS    50
#define GUEST_ADDR 0x8000u
#define GUEST_SIZE 0x1000u
#define GUEST_PORT 0x42u

struct wl_thread {
	pthread_t th;
	int vm_fd; /* the VM, or the loop device */
	size_t run_size;
	unsigned int id;
	pid_t tid;
	struct wl_counts wc;
	char err[160];
};

struct wl_result {
	pid_t main_tid;
	struct wl_counts main_wc;
	struct wl_thread t[WL_THREADS];
	char err[160];
};

/* Real mode, everything based at 0: `out GUEST_PORT, al ; jmp back to the out`. */
static void *vcpu_main(void *arg)
{
	struct wl_thread *t = arg;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	int fd;

	t->tid = gettid();
	fd = (int)wl_ioctl(&t->wc, "KVM_CREATE_VCPU", t->vm_fd, KVM_CREATE_VCPU, t->id);
	if (fd < 0) {
		snprintf(t->err, sizeof(t->err), "KVM_CREATE_VCPU: %s", strerror(errno));
		return NULL;
	}
	run = mmap(NULL, t->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (run == MAP_FAILED) {
		snprintf(t->err, sizeof(t->err), "mmap kvm_run: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (wl_ioctl(&t->wc, "KVM_GET_SREGS", fd, KVM_GET_SREGS, (unsigned long)&sregs) < 0)
		goto fail;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (wl_ioctl(&t->wc, "KVM_SET_SREGS", fd, KVM_SET_SREGS, (unsigned long)&sregs) < 0)
		goto fail;
	memset(&regs, 0, sizeof(regs));
	regs.rip = GUEST_ADDR;
	regs.rflags = 2;
	if (wl_ioctl(&t->wc, "KVM_SET_REGS", fd, KVM_SET_REGS, (unsigned long)&regs) < 0)
		goto fail;
	for (int j = 0; j < WL_JOBS; j++) {
		if (wl_ioctl(&t->wc, "KVM_RUN", fd, KVM_RUN, 0) < 0)
			goto fail;
		if (run->exit_reason != KVM_EXIT_IO || run->io.port != GUEST_PORT) {
			snprintf(t->err, sizeof(t->err), "job %d: exit %u port 0x%x", j,
			         run->exit_reason, run->io.port);
			break;
		}
	}
	munmap(run, t->run_size);
	close(fd);
	return NULL;
fail:
	snprintf(t->err, sizeof(t->err), "vcpu ioctl failed: %s", strerror(errno));
	munmap(run, t->run_size);
	close(fd);
	return NULL;
}

/* WL_THREADS threads running fn on fd (the VM, or the loop device), joined;
 * the first thread that failed says why in r->err. */
static void run_threads(struct wl_result *r, void *(*fn)(void *), int fd, size_t run_size)
{
	for (unsigned int i = 0; i < WL_THREADS; i++) {
		r->t[i].vm_fd = fd;
		r->t[i].run_size = run_size;
		r->t[i].id = i;
		if (pthread_create(&r->t[i].th, NULL, fn, &r->t[i]) != 0) {
			snprintf(r->t[i].err, sizeof(r->t[i].err), "pthread_create failed");
			r->t[i].th = 0;
		}
	}
	for (unsigned int i = 0; i < WL_THREADS; i++)
		if (r->t[i].th)
			pthread_join(r->t[i].th, NULL);
	for (unsigned int i = WL_THREADS; i-- > 0;)
		if (r->t[i].err[0])
			snprintf(r->err, sizeof(r->err), "thread %u: %s", i, r->t[i].err);
}

/* Runs the KVM workload; returns NULL or what failed. */
static const char *run_kvm_workload(struct wl_result *r)
{
	struct kvm_userspace_memory_region region;
	static const uint8_t code[] = {0xe6, GUEST_PORT, 0xeb, 0xfc};
	uint8_t *mem;
	long run_size;
	int kvm, vm;

	memset(r, 0, sizeof(*r));
	r->main_tid = gettid();
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return "cannot open /dev/kvm";
	if (wl_ioctl(&r->main_wc, "KVM_GET_API_VERSION", kvm, KVM_GET_API_VERSION, 0) !=
	    KVM_API_VERSION) {
		close(kvm);
		return "KVM_GET_API_VERSION";
	}
	vm = (int)wl_ioctl(&r->main_wc, "KVM_CREATE_VM", kvm, KVM_CREATE_VM, 0);
	run_size = wl_ioctl(&r->main_wc, "KVM_GET_VCPU_MMAP_SIZE", kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	mem = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || run_size <= 0 || mem == MAP_FAILED) {
		snprintf(r->err, sizeof(r->err), "VM setup failed: %s", strerror(errno));
		goto out;
	}
	memcpy(mem, code, sizeof(code));
	region = (struct kvm_userspace_memory_region){
	        .slot = 0,
	        .guest_phys_addr = GUEST_ADDR,
	        .memory_size = GUEST_SIZE,
	        .userspace_addr = (uint64_t)(uintptr_t)mem,
	};
	if (wl_ioctl(&r->main_wc, "KVM_SET_USER_MEMORY_REGION", vm, KVM_SET_USER_MEMORY_REGION,
	             (unsigned long)&region) < 0) {
		snprintf(r->err, sizeof(r->err), "KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
		goto out;
	}
	run_threads(r, vcpu_main, vm, (size_t)run_size);
out:
	if (mem != MAP_FAILED)
		munmap(mem, GUEST_SIZE);
	if (vm >= 0)
		close(vm);
	close(kvm);
	return r->err[0] ? r->err : NULL;
}

/* ---- the in-process loop workload (no /dev/kvm) ---------------------------------- */

#define LOOP_SIZE (4u << 20)  /* backing file bytes */
#define ZERO_SIZE (64u << 10) /* bytes per BLKZEROOUT job */

/* Each thread zeroes its own stretch of the device, one BLKZEROOUT per job. */
static void *zero_main(void *arg)
{
	struct wl_thread *t = arg;
	uint32_t slots = LOOP_SIZE / ZERO_SIZE / WL_THREADS;

	t->tid = gettid();
	for (int j = 0; j < WL_JOBS; j++) {
		uint64_t range[2] = {((uint64_t)t->id * slots + (uint64_t)j % slots) * ZERO_SIZE,
		                     ZERO_SIZE};

		if (wl_ioctl(&t->wc, "BLKZEROOUT", t->vm_fd, BLKZEROOUT, (unsigned long)range) <
		    0) {
			snprintf(t->err, sizeof(t->err), "BLKZEROOUT: %s", strerror(errno));
			break;
		}
	}
	return NULL;
}

/* A free loop device attached to a new (already unlinked) backing file, set
 * to detach itself when its last fd closes; the device's fd, or -1. Every
 * attempt is counted: a concurrent user may take the device first (EBUSY). */
static int loop_attach(struct wl_result *r)
{
	char back[] = "/tmp/kxtest-tf-loop-XXXXXX", dev[32];
	int bfd = mkstemp(back), ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), fd = -1;

	if (bfd >= 0)
		unlink(back);
	if (bfd < 0 || ctl < 0 || ftruncate(bfd, LOOP_SIZE)) {
		snprintf(r->err, sizeof(r->err), "loop set-up: %s", strerror(errno));
		goto out;
	}
	for (int tries = 0; tries < 20 && fd < 0; tries++) {
		struct loop_config cfg = {.fd = (uint32_t)bfd};
		long n = wl_ioctl(&r->main_wc, "LOOP_CTL_GET_FREE", ctl, LOOP_CTL_GET_FREE, 0);

		if (n < 0)
			break;
		snprintf(dev, sizeof(dev), "/dev/loop%ld", n);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (wl_ioctl(&r->main_wc, "LOOP_CONFIGURE", fd, LOOP_CONFIGURE,
		             (unsigned long)&cfg) < 0) {
			close(fd);
			fd = -1;
			usleep(1000);
		}
	}
	if (fd < 0)
		snprintf(r->err, sizeof(r->err), "no loop device could be attached: %s",
		         strerror(errno));
out:
	if (bfd >= 0)
		close(bfd);
	if (ctl >= 0)
		close(ctl);
	return fd;
}

/* Runs the loop workload; returns NULL or what failed. */
static const char *run_loop_workload(struct wl_result *r)
{
	uint64_t size = 0;
	int fd;

	memset(r, 0, sizeof(*r));
	r->main_tid = gettid();
	fd = loop_attach(r);
	if (fd < 0)
		return r->err;
	if (wl_ioctl(&r->main_wc, "BLKGETSIZE64", fd, BLKGETSIZE64, (unsigned long)&size) < 0 ||
	    size != LOOP_SIZE) {
		snprintf(r->err, sizeof(r->err), "BLKGETSIZE64 says %llu",
		         (unsigned long long)size);
		close(fd);
		return r->err;
	}
	run_threads(r, zero_main, fd, 0);
	wl_ioctl(&r->main_wc, "LOOP_CLR_FD", fd, LOOP_CLR_FD, 0);
	close(fd);
	return r->err[0] ? r->err : NULL;
}

static const char *run_workload(struct wl_result *r)
{
	return acc.loop ? run_loop_workload(r) : run_kvm_workload(r);
}

/* A few ioctls from this thread only: n of the stand-in's cheap call. */
static int accel_calls(int n)
{
	return kxt_accel_calls(&acc, n);
}

/* ---- XSpace checks -------------------------------------------------------------------- */

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;
typedef Tensorflow__Profiler__XStat XStat;

static const Tensorflow__Profiler__XEventMetadata *event_md(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_event_metadata; i++)
		if (p->event_metadata[i]->key == id)
			return p->event_metadata[i]->value;
	return NULL;
}

static const Tensorflow__Profiler__XStatMetadata *stat_md(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_stat_metadata; i++)
		if (p->stat_metadata[i]->key == id)
			return p->stat_metadata[i]->value;
	return NULL;
}

static const char *check_stats(const XPlane *p, XStat *const *stats, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!stat_md(p, stats[i]->metadata_id))
			return "a stat's metadata_id does not resolve";
		if (stats[i]->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE &&
		    !stat_md(p, (int64_t)stats[i]->ref_value))
			return "a stat's ref_value does not resolve";
	}
	return NULL;
}

/* Every metadata reference of a plane resolves; map keys equal ids; names unique. */
static const char *check_refs(const XPlane *p)
{
	const char *why;

	for (size_t i = 0; i < p->n_event_metadata; i++) {
		const Tensorflow__Profiler__XEventMetadata *m = p->event_metadata[i]->value;

		if (!m || m->id != p->event_metadata[i]->key || m->id == 0)
			return "event metadata key != id";
		if ((why = check_stats(p, m->stats, m->n_stats)))
			return why;
	}
	for (size_t i = 0; i < p->n_stat_metadata; i++) {
		const Tensorflow__Profiler__XStatMetadata *m = p->stat_metadata[i]->value;

		if (!m || m->id != p->stat_metadata[i]->key || m->id == 0)
			return "stat metadata key != id";
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->stat_metadata[j]->value->name, m->name) == 0)
				return "stat metadata names not unique";
	}
	if ((why = check_stats(p, p->stats, p->n_stats)))
		return why;
	for (size_t l = 0; l < p->n_lines; l++)
		for (size_t e = 0; e < p->lines[l]->n_events; e++) {
			const XEvent *ev = p->lines[l]->events[e];

			if (!event_md(p, ev->metadata_id))
				return "an event's metadata_id does not resolve";
			if ((why = check_stats(p, ev->stats, ev->n_stats)))
				return why;
		}
	return NULL;
}

struct span {
	int64_t start, end; /* ps since the line's timestamp_ns */
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* outer first */
}

/* Events of a line may nest but never partially overlap. */
static const char *check_nesting(const XLine *l)
{
	struct span *s = calloc(l->n_events + 1, sizeof(*s)), *stack;
	size_t n = 0, depth = 0;
	const char *why = NULL;

	stack = calloc(l->n_events + 1, sizeof(*stack));
	if (!s || !stack) {
		free(s);
		free(stack);
		return "out of memory";
	}
	for (size_t i = 0; i < l->n_events; i++) {
		const XEvent *e = l->events[i];

		if (e->data_case != TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS)
			continue;
		/* Relative to the line: ps since the epoch overflow int64. */
		s[n].start = e->offset_ps;
		s[n].end = s[n].start + e->duration_ps;
		n++;
	}
	qsort(s, n, sizeof(*s), span_cmp);
	for (size_t i = 0; i < n && !why; i++) {
		while (depth && stack[depth - 1].end <= s[i].start)
			depth--;
		if (depth && stack[depth - 1].end < s[i].end)
			why = "two events on a line partially overlap";
		stack[depth++] = s[i];
	}
	free(s);
	free(stack);
	return why;
}

static const XPlane *find_plane(const XSpace *x, const char *name)
{
	for (size_t i = 0; i < x->n_planes; i++)
		if (strcmp(x->planes[i]->name, name) == 0)
			return x->planes[i];
	return NULL;
}

static const XLine *find_line(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_lines; i++)
		if (p->lines[i]->id == id)
			return p->lines[i];
	return NULL;
}

static unsigned long line_count(const XPlane *p, const XLine *l, const char *name)
{
	unsigned long n = 0;

	for (size_t i = 0; i < l->n_events; i++) {
		const Tensorflow__Profiler__XEventMetadata *m =
		        event_md(p, l->events[i]->metadata_id);

		if (m && strcmp(m->name, name) == 0)
			n++;
	}
	return n;
}

/* protoc must decode the bytes as tensorflow.profiler.XSpace (exit 0). */
static const char *protoc_decodes(const uint8_t *buf, size_t len)
{
	static char why[256];
	char path[] = "/tmp/kxprof-tf-XXXXXX", cmd[PATH_MAX * 3 + 128], line[512];
	int fd = mkstemp(path), rc;
	FILE *p;

	if (fd < 0)
		return "mkstemp failed";
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		unlink(path);
		return "cannot write the temp file";
	}
	close(fd);
	snprintf(cmd, sizeof(cmd),
	         "protoc --decode=tensorflow.profiler.XSpace -I '%s/proto' '%s/proto/xplane.proto' "
	         "< '%s' 2>&1",
	         root_dir, root_dir, path);
	p = popen(cmd, "r");
	if (!p) {
		unlink(path);
		return "popen failed";
	}
	line[0] = 0;
	while (fgets(line, sizeof(line), p))
		;
	rc = pclose(p);
	unlink(path);
	if (rc != 0) {
		snprintf(why, sizeof(why), "protoc --decode exited %d (last line: %s)", rc, line);
		return why;
	}
	return NULL;
}

/* KXPROF_TF_DUMP=FILE keeps the workload session's XSpace for a look. */
static void dump(const uint8_t *buf, size_t len)
{
	const char *path = getenv("KXPROF_TF_DUMP");
	FILE *f;

	if (!path || !*path || !(f = fopen(path, "wb")))
		return;
	if (fwrite(buf, 1, len, f) != len)
		printf("  cannot write %s\n", path);
	fclose(f);
}

/* ---- cases ------------------------------------------------------------------------------- */

/*
 * Runs body in a forked child whose stderr is captured into out. Returns the
 * child's wait status, or -1. Children register afresh (a plugin state as
 * fresh as this process's: these cases run before any session here).
 */
static int run_child(void (*body)(void), char *out, size_t len)
{
	int pfd[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	out[0] = 0;
	if (pipe(pfd) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		body();
		exit(0);
	}
	close(pfd[1]);
	while (got < len - 1 && (n = read(pfd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(pfd[0]);
	out[got] = 0;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#define CHECK_CHILD(status, out)                                                                   \
	do {                                                                                       \
		if ((status) < 0)                                                                  \
			FAILF("cannot run the child: %s", strerror(errno));                        \
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)                                \
			FAILF("child %s %d; stderr: %s",                                           \
			      WIFEXITED(status) ? "exited" : "killed by signal",                   \
			      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out);    \
	} while (0)

/* In a child: fresh registration, then n sessions that must all give 0 bytes. */
static void child_sessions_give_nothing(int n)
{
	TP_Profiler p;
	TP_ProfilerFns f;

	if (core_register(&p, &f))
		_exit(12);
	prof = p;
	fns = f;
	for (int i = 0; i < n; i++) {
		TF_Code c1, c2, c3;
		size_t size;

		c1 = call_fn(fns.start);
		(void)accel_calls(5);
		c2 = call_fn(fns.stop);
		size = query_size(&c3);
		if (c1 != TF_OK || c2 != TF_OK || c3 != TF_OK)
			_exit(14);
		if (size != 0)
			_exit(15);
	}
}

static void unprivileged_child(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2] = {{0}};

	if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	                       setresuid(65534, 65534, 65534) != 0))
		_exit(10);
	if (syscall(SYS_capset, &hdr, caps) != 0)
		_exit(11);
	/* Credential changes clear dumpable; LeakSanitizer needs it at exit. */
	prctl(PR_SET_DUMPABLE, 1);
	/* No daemon either (a kxprof daemon on this host would be used). */
	setenv("KXPROF_SOCKET", "/nonexistent/kxprof.sock", 1);
	child_sessions_give_nothing(3);
}

/*
 * As uid/gid 65534 without capabilities: registration works, sessions do
 * nothing, collect reports 0, and stderr gets exactly one line saying why.
 */
static void unprivileged_is_inactive(void)
{
	char out[4096];
	int status;

	if (!registered)
		SKIP("plugin not registered");
	status = run_child(unprivileged_child, out, sizeof(out));
	CHECK_CHILD(status, out);
	if (count_lines(out) != 1)
		FAILF("expected exactly one stderr line, got %d: %s", count_lines(out), out);
	CHECK(strstr(out, "kxprof: TensorFlow profiler plugin inactive: ") == out);
	CHECK(strstr(out, "CAP_BPF+CAP_PERFMON") != NULL);
}

static void disabled_child(void)
{
	setenv("KXPROF_DISABLE", "1", 1);
	child_sessions_give_nothing(2);
}

static void disabled_is_inactive(void)
{
	char out[4096];
	int status;

	if (!registered)
		SKIP("plugin not registered");
	status = run_child(disabled_child, out, sizeof(out));
	CHECK_CHILD(status, out);
	if (count_lines(out) != 1)
		FAILF("expected exactly one stderr line, got %d: %s", count_lines(out), out);
	CHECK(strstr(out, "inactive: disabled by KXPROF_DISABLE") != NULL);
}

/* Bad settings are reported once and ignored; good ones apply. */
static void env_child(void)
{
	TP_Profiler p;
	TP_ProfilerFns f;

	setenv("KXPROF_DEVICES",
	       acc.loop ? "/dev/kxprof-no-such-device, loop"
	                : "/dev/kxprof-no-such-device, /dev/kvm",
	       1);
	setenv("KXPROF_RINGBUF_MB", "0.25", 1);
	setenv("KXPROF_MAX_MEM_MB", "lots", 1);
	if (core_register(&p, &f))
		_exit(12);
	prof = p;
	fns = f;
	for (int i = 0; i < 2; i++) {
		uint8_t *buf;
		size_t len;
		XSpace *x;

		if (call_fn(fns.start) != TF_OK || accel_calls(10) != 10 ||
		    call_fn(fns.stop) != TF_OK)
			_exit(13);
		if (core_collect(&buf, &len) || !buf)
			_exit(14);
		x = tensorflow__profiler__xspace__unpack(NULL, len, buf);
		free(buf);
		if (!x)
			_exit(15);
		tensorflow__profiler__xspace__free_unpacked(x, NULL);
	}
}

static void env_config_warns_once(void)
{
	char out[4096];
	int status;

	NEED_BPF();
	status = run_child(env_child, out, sizeof(out));
	CHECK_CHILD(status, out);
	if (count_lines(out) != 2)
		FAILF("expected two stderr lines, got %d: %s", count_lines(out), out);
	CHECK(strstr(out, "KXPROF_DEVICES: ") != NULL);
	CHECK(strstr(out, "KXPROF_MAX_MEM_MB=lots") != NULL);
}

/* A tiny store limit: fewer events kept, the loss said in the XSpace's warnings. */
static void store_limit_child(void)
{
	TP_Profiler p;
	TP_ProfilerFns f;
	uint8_t *buf;
	size_t len, events = 0;
	XSpace *x;
	const XPlane *host;

	setenv("KXPROF_MAX_MEM_MB", "0.004", 1);
	if (core_register(&p, &f))
		_exit(12);
	prof = p;
	fns = f;
	if (call_fn(fns.start) != TF_OK || accel_calls(2000) != 2000 || call_fn(fns.stop) != TF_OK)
		_exit(13);
	if (core_collect(&buf, &len) || !buf)
		_exit(14);
	x = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	if (!x)
		_exit(15);
	host = find_plane(x, "/host:CPU");
	for (size_t i = 0; host && i < host->n_lines; i++)
		events += host->lines[i]->n_events;
	if (events >= 2000)
		_exit(16);
	if (x->n_warnings == 0)
		_exit(17);
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
}

static void store_limit_honoured(void)
{
	char out[4096];
	int status;

	NEED_BPF();
	status = run_child(store_limit_child, out, sizeof(out));
	CHECK_CHILD(status, out);
}

static void session_traces_workload(void)
{
	struct wl_result *r;
	const XPlane *host;
	uint8_t *buf;
	size_t len;
	XSpace *x;
	int64_t t0, t1, tstop;
	const char *why;
	unsigned long total = 0, events = 0;
	TF_Code c;

	NEED_BPF();
	r = calloc(1, sizeof(*r));
	CHECK(r != NULL);
	t0 = realtime_ns();
	c = call_fn(fns.start);
	if (c != TF_OK) {
		free(r);
		FAILF("start: status %d", c);
	}
	why = run_workload(r);
	tstop = realtime_ns();
	c = call_fn(fns.stop);
	t1 = realtime_ns();
	if (why) {
		free(r);
		FAILF("workload: %s", why);
	}
	if (c != TF_OK) {
		free(r);
		FAILF("stop: status %d", c);
	}
	/* Stop drains and serializes without holding the host up for long. */
	if (t1 - tstop > 2000000000) {
		free(r);
		FAILF("stop took %.3f s", (double)(t1 - tstop) / 1e9);
	}
	why = core_collect(&buf, &len);
	if (why || !buf) {
		free(r);
		FAILF("collect: %s", why ? why : "no data");
	}
	dump(buf, len);
	if ((why = protoc_decodes(buf, len))) {
		free(buf);
		free(r);
		FAILF("%s", why);
	}
	x = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	if (!x) {
		free(r);
		FAILF("the collected %zu bytes do not parse as XSpace", len);
	}
	host = find_plane(x, "/host:CPU");
	why = !host ? "no /host:CPU plane" : NULL;
	for (size_t i = 0; !why && i < x->n_planes; i++)
		why = check_refs(x->planes[i]);
	/* Every line is a workload thread; per thread and name, one event per ioctl. */
	for (size_t i = 0; !why && i < host->n_lines; i++) {
		const XLine *l = host->lines[i];
		int known = l->id == r->main_tid;

		for (int t = 0; t < WL_THREADS; t++)
			known |= l->id == r->t[t].tid;
		if (!known)
			why = "a /host:CPU line id is not a workload thread's tid";
		else
			why = check_nesting(l);
		events += l->n_events;
		for (size_t e = 0; !why && e < l->n_events; e++) {
			const XEvent *ev = l->events[e];
			int64_t start = l->timestamp_ns + ev->offset_ps / 1000;
			int64_t end = start + ev->duration_ps / 1000;

			if (ev->data_case != TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS)
				why = "a host event has no offset_ps";
			else if (start < t0 || end > t1)
				why = "an event lies outside the session's wall-clock window";
		}
	}
	for (int t = -1; !why && t < WL_THREADS; t++) {
		const struct wl_counts *wc = t < 0 ? &r->main_wc : &r->t[t].wc;
		pid_t tid = t < 0 ? r->main_tid : r->t[t].tid;
		const XLine *l = find_line(host, tid);

		if (!l) {
			why = "a workload thread has no line";
			break;
		}
		for (int k = 0; k < wc->n; k++) {
			unsigned long got = line_count(host, l, wc->c[k].name);

			total += wc->c[k].calls;
			if (got != wc->c[k].calls) {
				printf("  tid %d %s: issued %lu, XSpace has %lu\n", (int)tid,
				       wc->c[k].name, wc->c[k].calls, got);
				why = "per-thread ioctl counts differ";
			}
		}
	}
	if (!why && events != total) {
		printf("  %lu events on /host:CPU, %lu ioctls issued\n", events, total);
		why = "the /host:CPU plane has events the workload did not issue";
	}
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
	free(r);
	if (why)
		FAILF("%s", why);
	/* Only the first data call after start/stop gets data. */
	CHECK_EQ_U(query_size(&c), 0);
	CHECK(c == TF_OK);
}

static void too_small_buffer_is_an_error(void)
{
	uint8_t *buf, *ok;
	size_t size, cap, len;
	TF_Status *st;
	TF_Code c;
	const char *why;
	int calls0 = set_status_calls;

	NEED_BPF();
	CHECK(call_fn(fns.start) == TF_OK);
	CHECK(accel_calls(20) == 20);
	CHECK(call_fn(fns.stop) == TF_OK);
	size = query_size(&c);
	CHECK(c == TF_OK);
	CHECK(size > 1 && size < (1u << 30));
	buf = malloc(size + GUARD);
	CHECK(buf != NULL);
	memset(buf, 0x5a, size + GUARD);
	cap = size - 1;
	st = TF_NewStatus();
	fns.collect_data_xspace(&prof, buf, &cap, st);
	c = TF_GetCode(st);
	TF_DeleteStatus(st);
	for (size_t i = 0; i < size + GUARD; i++)
		if (buf[i] != 0x5a) {
			free(buf);
			FAILF("byte %zu written with a buffer too small", i);
		}
	free(buf);
	CHECK(c == TF_INVALID_ARGUMENT || c == TF_RESOURCE_EXHAUSTED);
	CHECK(set_status_calls > calls0);
	/* The data stays available for a proper retry, once. */
	why = core_collect(&ok, &len);
	if (why)
		FAILF("retry: %s", why);
	CHECK_EQ_U(len, size);
	free(ok);
	CHECK_EQ_U(query_size(&c), 0);
}

static void empty_session(void)
{
	uint8_t *buf;
	size_t len;
	const char *why;

	NEED_BPF();
	CHECK(call_fn(fns.start) == TF_OK);
	CHECK(call_fn(fns.stop) == TF_OK);
	why = core_collect(&buf, &len);
	if (why)
		FAILF("%s", why);
	if (buf) {
		XSpace *x = tensorflow__profiler__xspace__unpack(NULL, len, buf);

		free(buf);
		CHECK(x != NULL);
		tensorflow__profiler__xspace__free_unpacked(x, NULL);
	}
	/* Collect without a session in between: nothing. */
	why = core_collect(&buf, &len);
	CHECK(why == NULL && buf == NULL && len == 0);
	/* Stop without start, collect: nothing, no error. */
	CHECK(call_fn(fns.stop) == TF_OK);
	why = core_collect(&buf, &len);
	CHECK(why == NULL && buf == NULL);
}

/* The annotation API of a dlopen'ed library. */
struct ann_api {
	void (*push)(const char *);
	void (*pop)(void);
	void (*mark)(const char *);
	uint64_t (*start)(const char *);
	void (*end)(uint64_t);
};

#define ANN_ITERS 25

struct ann_thread {
	const struct ann_api *api;
	int64_t tid;
};

static void *ann_thread_main(void *arg)
{
	struct ann_thread *t = arg;

	t->tid = (int64_t)syscall(SYS_gettid);
	for (int i = 0; i < ANN_ITERS; i++) {
		t->api->push("tf/step");
		t->api->mark("tf/tick");
		t->api->push("tf/layer");
		usleep(200);
		t->api->pop();
		t->api->pop();
	}
	return NULL;
}

struct ann_end {
	const struct ann_api *api;
	uint64_t id;
};

static void *ann_end_main(void *arg)
{
	const struct ann_end *e = arg;

	e->api->end(e->id);
	return NULL;
}

/*
 * A session of a process that annotates (the library loaded before the
 * session starts, as a framework would): its ranges land on the /host:CPU
 * line of each thread, nested, marks as zero-length events; a range started
 * on one thread and ended on another on a line of its own.
 */
static void session_annotations(void)
{
	struct ann_api api;
	struct ann_thread th[2];
	struct ann_end xfer;
	pthread_t pt[2];
	const XPlane *host;
	uint8_t *buf = NULL;
	size_t len = 0;
	XSpace *x;
	void *h;
	int cross = 0;

	if (!registered)
		SKIP("plugin not registered");
	if (geteuid() != 0)
		SKIP("needs root (loads BPF programs)");
	h = dlopen(annot_path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		FAILF("dlopen %s: %s", annot_path, dlerror());
	api.push = (void (*)(const char *))dlsym(h, "kxprof_range_push");
	api.pop = (void (*)(void))dlsym(h, "kxprof_range_pop");
	api.mark = (void (*)(const char *))dlsym(h, "kxprof_mark");
	api.start = (uint64_t(*)(const char *))dlsym(h, "kxprof_range_start");
	api.end = (void (*)(uint64_t))dlsym(h, "kxprof_range_end");
	CHECK(api.push && api.pop && api.mark && api.start && api.end);
	/* No accelerator needed for annotations: the loop driver keeps the session up. */
	setenv("KXPROF_DEVICES", "loop", 1);
	CHECK(call_fn(fns.start) == TF_OK);
	for (int i = 0; i < 2; i++) {
		th[i].api = &api;
		CHECK(pthread_create(&pt[i], NULL, ann_thread_main, &th[i]) == 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(pt[i], NULL);
	xfer.api = &api;
	xfer.id = api.start("tf/xfer");
	CHECK(pthread_create(&pt[0], NULL, ann_end_main, &xfer) == 0);
	pthread_join(pt[0], NULL);
	CHECK(call_fn(fns.stop) == TF_OK);
	devices_env();
	if (core_collect(&buf, &len) || !buf)
		FAILF("no XSpace collected (%zu bytes)", len);
	x = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	CHECK(x != NULL);
	host = find_plane(x, "/host:CPU");
	CHECK(host != NULL);
	for (int i = 0; i < 2; i++) {
		const XLine *l = find_line(host, th[i].tid);
		const char *why;

		CHECK(l != NULL);
		CHECK_EQ_U(line_count(host, l, "tf/step"), ANN_ITERS);
		CHECK_EQ_U(line_count(host, l, "tf/layer"), ANN_ITERS);
		CHECK_EQ_U(line_count(host, l, "tf/tick"), ANN_ITERS);
		why = check_nesting(l);
		if (why)
			FAILF("thread %lld: %s", (long long)th[i].tid, why);
	}
	for (size_t i = 0; i < host->n_lines; i++)
		cross += host->lines[i]->id >= 0x40000000 &&
		         line_count(host, host->lines[i], "tf/xfer") == 1;
	CHECK_EQ_U(cross, 1);
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
	dlclose(h);
}

static _Atomic int poll_stop;

/* Asks for the size over and over, as a confused host thread might. */
static void *size_poller(void *arg)
{
	unsigned long *polls = arg;
	TF_Code c;

	while (!poll_stop) {
		(void)query_size(&c);
		(*polls)++;
	}
	return NULL;
}

/* start/stop/collect racing with collect calls from another thread: no crash, data intact. */
static void concurrent_calls_are_safe(void)
{
	unsigned long polls = 0;
	pthread_t th;
	const char *why = NULL;
	int got = 0;

	NEED_BPF();
	poll_stop = 0;
	CHECK(pthread_create(&th, NULL, size_poller, &polls) == 0);
	for (int i = 0; i < 5 && !why; i++) {
		uint8_t *buf;
		size_t len;

		if (call_fn(fns.start) != TF_OK || accel_calls(10) != 10 ||
		    call_fn(fns.stop) != TF_OK) {
			why = "a session failed";
			break;
		}
		why = core_collect(&buf, &len);
		if (buf) {
			XSpace *x = tensorflow__profiler__xspace__unpack(NULL, len, buf);

			got += x != NULL;
			if (x)
				tensorflow__profiler__xspace__free_unpacked(x, NULL);
			free(buf);
		}
	}
	poll_stop = 1;
	pthread_join(th, NULL);
	if (why)
		FAILF("%s", why);
	CHECK(polls > 0);
	CHECK_EQ_U(got, 5);
}

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

#if defined(__SANITIZE_ADDRESS__)
/*
 * ASan keeps freed memory in a quarantine (256 MiB by default) and every
 * session's BPF load parses the kernel's BTF (several MiB): a small
 * quarantine keeps RSS meaningful. ASAN_OPTIONS still overrides it.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}
#define RSS_SLACK_KIB (24 * 1024)
#else
#define RSS_SLACK_KIB (4 * 1024)
#endif

static const char *cycle(int calls)
{
	uint8_t *buf;
	size_t len;
	const char *why;

	if (call_fn(fns.start) != TF_OK)
		return "start failed";
	if (accel_calls(calls) != calls)
		return "the stand-in's ioctls failed";
	if (call_fn(fns.stop) != TF_OK)
		return "stop failed";
	why = core_collect(&buf, &len);
	if (why)
		return why;
	if (!buf)
		return "no data for a session with ioctls";
	free(buf);
	return NULL;
}

static void restartable_without_leaks(void)
{
	int fds0, progs0, maps0, fds1;
	long rss0, rss1;
	const char *why;

	NEED_BPF();
	/* One warm-up cycle: libbpf and libc allocate their caches once. */
	if ((why = cycle(10)))
		FAILF("warm-up: %s", why);
	progs0 = count_bpf(bpf_prog_get_next_id);
	maps0 = count_bpf(bpf_map_get_next_id);
	fds0 = count_fds();
	rss0 = rss_kib();
	for (int i = 0; i < 30; i++)
		if ((why = cycle(10)))
			FAILF("cycle %d: %s", i, why);
	fds1 = count_fds();
	rss1 = rss_kib();
	CHECK_EQ_U(fds1, fds0);
	printf("  30 sessions: fds %d -> %d, RSS %ld -> %ld KiB\n", fds0, fds1, rss0, rss1);
	if (rss1 - rss0 > RSS_SLACK_KIB)
		FAILF("RSS grew by %ld KiB over 30 sessions", rss1 - rss0);
	if (!bpf_back_to(progs0, maps0))
		FAILF("BPF programs/maps not back to baseline (%d/%d, now %d/%d)", progs0, maps0,
		      count_bpf(bpf_prog_get_next_id), count_bpf(bpf_map_get_next_id));
}

int main(void)
{
	/* The cases set what they need; inherited settings would change them. */
	unsetenv("KXPROF_DISABLE");
	unsetenv("KXPROF_MAX_MEM_MB");
	unsetenv("KXPROF_RINGBUF_MB");
	if (kxt_accel_open(&acc, no_acc, sizeof(no_acc)) == 0)
		printf("# stand-in accelerator: %s (%s)\n", acc.name, acc.path);
	devices_env();
	find_paths();
	RUN(registration);
	RUN(unprivileged_is_inactive);
	RUN(disabled_is_inactive);
	RUN(env_config_warns_once);
	RUN(store_limit_honoured);
	RUN(session_traces_workload);
	RUN(too_small_buffer_is_an_error);
	RUN(empty_session);
	RUN(session_annotations);
	RUN(concurrent_calls_are_safe);
	RUN(restartable_without_leaks);
	kxt_accel_close(&acc);
	KXT_EXIT();
}
