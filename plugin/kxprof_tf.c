/*
 * TensorFlow pluggable profiler: TF_InitProfiler registers a profiler of
 * device type "KXPROF" whose start/stop/collect_data_xspace drive one core
 * capture session of the calling process (all its threads, and children it
 * forks) and hand out that session's XSpace. A thin front end: capture is
 * kx_capture_* (the set-up shared with the CLI), storage kx_store_*, export
 * kx_xspace_serialize.
 *
 * Environment (read at every start):
 *   KXPROF_DISABLE=1        stay inactive (start/stop do nothing, collect gives 0 bytes)
 *   KXPROF_DEVICES=SPEC,... also trace these devices, specs as for
 *                           `kxprof record --device` (PATH, MAJOR:MINOR, MAJOR:*,
 *                           block:MAJOR:MINOR, driver name); added to the defaults
 *                           (every accelerator device present, and kvm)
 *   KXPROF_RINGBUF_MB=N     BPF ring buffer size in MiB (default 8, fractions allowed)
 *   KXPROF_MAX_MEM_MB=N     event store limit in MiB (default 256); events past it
 *                           are counted, not stored
 *   KXPROF_VERBOSE=1        libbpf diagnostics, and one stderr line per session with
 *                           its event and drop counts
 *   KXPROF_NO_ANNOTATIONS=1 no annotation ranges (the probes of libkxprof_annotate.so,
 *                           which the session otherwise attaches in this process)
 *
 * Without the privilege to load BPF, the session runs in the kxprof daemon
 * when its socket exists (KXPROF_SOCKET, else /run/kxprof/kxprof.sock): the
 * same capture, streamed back and read into the same store; stderr says so
 * once per process. Without either, with no device to trace or when the
 * session cannot be opened, the plugin is inactive for that session and says
 * why on stderr once per reason. It never fails registration (TensorFlow
 * would abort the process). Where TensorFlow loads two copies of the plugin
 * (both load routes), the first registered profiles and the other stays
 * inactive (tf_claim.h), so no event is captured twice. Errors (too small a buffer, a failed
 * export) go to TF_Status through TensorFlow's TF_SetStatus, looked up at run time so the library
 * also loads into hosts without TensorFlow (they get none).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/probe.h"
#include "capture/setup.h"
#include "model/store.h"
#include "capture/threadptr.h"
#include "tf_claim.h"
#include "tf_lines.h"
#include "tf_profiler_api.h"
#include "export/xspace.h"
#include "util/parse.h"

#define KX_TF_DEVICE_TYPE    "KXPROF"
#define KX_TF_DEFAULT_MEM_MB 256

/* One-time stderr messages, one bit each. */
enum {
	WARN_DEVICES = 1 << 1,
	WARN_RINGBUF = 1 << 2,
	WARN_MEM = 1 << 3,
	WARN_DAEMON = 1 << 4,
	WARN_SECOND_COPY = 1 << 5,
};

/*
 * All plugin state. Static, never in the caller's structs: core copies
 * TP_Profiler/TP_ProfilerFns by value and destroys the originals.
 */
static struct {
	pthread_mutex_t lock;   /* start/stop/collect run under it */
	struct kx_capture cap;  /* cap.s: the session, open between start and stop only */
	struct kx_store *store; /* the session's events */
	pid_t owner;            /* process that opened the session */
	char *device_list;      /* KXPROF_DEVICES, cut into the specs of devices */
	uint8_t *xspace;        /* frozen at stop, handed out once */
	size_t xspace_len;
	unsigned int warned;       /* WARN_* already printed */
	char inactive_why[256];    /* the reason last printed by inactive() */
	int second_copy;           /* another copy of the plugin profiles this process */
	struct kx_threadptr *tptr; /* the session's threads' pthread_t, for TensorFlow's line ids */
	size_t ntptr, captptr;
	struct kx_capinfo ci; /* final facts of the last session */
	struct kx_devset devices;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- TF_Status, when TensorFlow provides it ------------------------------ */

typedef void (*set_status_fn)(TF_Status *, TF_Code, const char *);
static set_status_fn tf_set_status;
static pthread_once_t status_once = PTHREAD_ONCE_INIT;

static void find_status_fns(void)
{
	/* TensorFlow's libraries are in the global scope; a bare host has none. */
	tf_set_status = (set_status_fn)dlsym(RTLD_DEFAULT, "TF_SetStatus");
}

static void set_status(TF_Status *status, TF_Code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void set_status(TF_Status *status, TF_Code code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	pthread_once(&status_once, find_status_fns);
	if (!status || !tf_set_status)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tf_set_status(status, code, msg);
}

/* ---- configuration --------------------------------------------------------- */

static void warn_once(unsigned int bit, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_once(unsigned int bit, const char *fmt, ...)
{
	va_list ap;

	if (g.warned & bit)
		return;
	g.warned |= bit;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* The line that says why profiling does not happen, and what to do: once per reason. */
static void inactive(const char *why, const char *todo)
{
	if (strncmp(g.inactive_why, why, sizeof(g.inactive_why) - 1) == 0)
		return;
	snprintf(g.inactive_why, sizeof(g.inactive_why), "%s", why);
	fprintf(stderr, "kxprof: TensorFlow profiler plugin inactive: %s; %s\n", why, todo);
}

static int env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/* A positive size in MiB from the environment, or def when unset or bad. */
static double env_mib(const char *name, double def, double max, unsigned int warn_bit)
{
	const struct kx_num_range r = {.lo = 0, .hi = max, .lo_open = 1};
	const char *v = getenv(name);
	char err[128];
	double d;

	if (!v || !*v)
		return def;
	if (kx_parse_double(NULL, v, &r, &d, err, sizeof(err)) != 0) {
		warn_once(warn_bit, "kxprof: ignoring %s=%s (%s MiB)\n", name, v, err);
		return def;
	}
	return d;
}

static void warn_device(void *ctx, const char *msg)
{
	(void)ctx;
	warn_once(WARN_DEVICES, "kxprof: KXPROF_DEVICES: %s (ignored)\n", msg);
}

/* Default devices plus KXPROF_DEVICES; returns the count. */
static int pick_devices(void)
{
	const char *env = getenv("KXPROF_DEVICES");

	memset(&g.devices, 0, sizeof(g.devices));
	free(g.device_list);
	g.device_list = env && *env ? strdup(env) : NULL;
	if (g.device_list)
		kx_devset_add_list(&g.devices, g.device_list, warn_device, NULL);
	return kx_devset_resolve(&g.devices, warn_device, NULL);
}

/* ---- session lifecycle ------------------------------------------------------ */

static void drop_xspace(void)
{
	free(g.xspace);
	g.xspace = NULL;
	g.xspace_len = 0;
}

static void close_session(void)
{
	kx_capture_close(&g.cap);
	kx_store_free(g.store);
	g.store = NULL;
}

/*
 * Lists the pthread_t of this process's live threads (in TensorFlow, with
 * the privilege to run the BPF iterator; else the lines keep the tids).
 * Called at start and at stop: threads that ended between are missed.
 */
static void list_threads(void)
{
	char err[256];

	if (g.cap.daemon || !kx_tf_present())
		return;
	if (kx_threadptr_collect(g.owner, &g.tptr, &g.ntptr, &g.captptr, err, sizeof(err)) < 0 &&
	    env_flag("KXPROF_VERBOSE"))
		fprintf(stderr, "kxprof: thread rows keep their tids: %s\n", err);
}

/* TensorFlow's line id of thread tid, 0 (the tid) when its pthread_t is unknown. */
static uint64_t tf_line_id(void *ctx, uint32_t tid)
{
	(void)ctx;
	for (size_t i = 0; i < g.ntptr; i++)
		if (g.tptr[i].tid == tid)
			return kx_tf_line_id(g.tptr[i].tp);
	return 0;
}

/* Serializes the stopped session once; no events means no data (size 0). */
static void freeze_xspace(TF_Status *status)
{
	struct kx_xspace_opts xo = {
	        .from_mono_ns = g.ci.start_mono_ns,
	        .to_mono_ns = g.ci.stop_mono_ns,
	        .line_id = tf_line_id,
	};
	struct kx_analysis *an;
	char err[512];
	int rc = -1;

	if (kx_store_ioctl_count(g.store) == 0 && kx_store_ann_count(g.store) == 0 &&
	    g.ci.dropped == 0 && g.ci.not_stored == 0 && g.ci.ann.dropped == 0)
		return;
	an = kx_analysis_build(g.store, &g.ci, err, sizeof(err));
	if (an)
		rc = kx_xspace_serialize(an, &xo, &g.xspace, &g.xspace_len, err, sizeof(err));
	kx_analysis_free(an);
	if (rc != 0) {
		g.xspace = NULL;
		g.xspace_len = 0;
		fprintf(stderr, "kxprof: cannot build this session's XSpace: %s\n", err);
		set_status(status, TF_INTERNAL, "kxprof: cannot build the XSpace: %s", err);
		return;
	}
	if (!g.xspace_len)
		drop_xspace();
}

/* Devices and the store from the environment; 0, or -1 after saying why not. */
static int configure(void)
{
	char err[512];

	if (g.second_copy) {
		Dl_info di = {0};

		dladdr((void *)TF_InitProfiler, &di);
		warn_once(WARN_SECOND_COPY,
		          "kxprof: TensorFlow profiler plugin: another copy of it, loaded first, "
		          "profiles this process; this copy (%s) stays inactive, so no event is "
		          "captured twice (load the plugin by one route: tensorflow-plugins or "
		          "TF_PLUGGABLE_DEVICE_LIBRARY_PATH)\n",
		          di.dli_fname ? di.dli_fname : "?");
		return -1;
	}
	if (env_flag("KXPROF_DISABLE")) {
		inactive("disabled by KXPROF_DISABLE", "unset KXPROF_DISABLE to profile");
		return -1;
	}
	if (!kx_probe_privileges(err, sizeof(err)) &&
	    !kx_remote_available(kx_remote_socket_path())) {
		snprintf(err, sizeof(err),
		         "not root and no CAP_BPF+CAP_PERFMON, so no BPF programs can be loaded, "
		         "and no kxprof daemon at %s",
		         kx_remote_socket_path());
		inactive(err, "run as root, grant CAP_BPF+CAP_PERFMON, or have the daemon set up "
		              "(kxprof serve --socket; KXPROF_SOCKET names its socket)");
		return -1;
	}
	if (pick_devices() == 0) {
		inactive("no accelerator device found here",
		         "name the device to trace in KXPROF_DEVICES (e.g. /dev/dri/renderD128)");
		return -1;
	}
	g.store = kx_store_new(
	        (size_t)(env_mib("KXPROF_MAX_MEM_MB", KX_TF_DEFAULT_MEM_MB, 1 << 20, WARN_MEM) *
	                 (1 << 20)));
	if (!g.store) {
		inactive("out of memory for the event store", "lower KXPROF_MAX_MEM_MB");
		return -1;
	}
	return 0;
}

/* Captures this process (its threads and children) into the store. */
static void open_session(void)
{
	struct kx_capture_opts o = {0};
	char err[512], cmdline[128];
	uint32_t self;

	g.owner = getpid();
	self = (uint32_t)g.owner;
	snprintf(cmdline, sizeof(cmdline), "%s (TensorFlow profiler, pid %d)",
	         program_invocation_short_name, (int)g.owner);
	o.devices = &g.devices;
	o.ringbuf_bytes =
	        (uint32_t)(env_mib("KXPROF_RINGBUF_MB", 0, 1024, WARN_RINGBUF) * (1 << 20));
	o.verbose = env_flag("KXPROF_VERBOSE");
	o.store = g.store;
	o.pids = &self;
	o.npids = 1;
	o.cmdline = cmdline;
	/* Annotation ranges of this process (libkxprof_annotate.so, NVTX) nest
	 * with its ioctls on TensorFlow's thread rows. */
	o.annotate = !env_flag("KXPROF_NO_ANNOTATIONS");
	memset(&g.cap, 0, sizeof(g.cap));
	if (kx_capture_open(&g.cap, &o, err, sizeof(err)) != 0) {
		inactive(err, kx_probe_privileges(NULL, 0)
		                      ? "set KXPROF_VERBOSE=1 for libbpf's diagnostics"
		                      : "this session is not profiled");
		close_session();
		return;
	}
	if (g.cap.daemon)
		warn_once(WARN_DAEMON,
		          "kxprof: TensorFlow profiler plugin: no BPF privilege in this process: "
		          "capturing through the kxprof daemon at %s\n",
		          g.cap.daemon);
	if (kx_capture_start(&g.cap, err, sizeof(err)) != 0) {
		inactive(err, "this session is not profiled");
		close_session();
		return;
	}
	g.ntptr = 0;
	list_threads();
}

static void kx_tf_start(const TP_Profiler *profiler, TF_Status *status)
{
	(void)profiler;
	(void)status;
	pthread_mutex_lock(&g.lock);
	/* Data not collected by now is stale. */
	drop_xspace();
	/* Core never starts twice in a row; if it did, keep the running capture. */
	if (!kx_capture_opened(&g.cap) && configure() == 0)
		open_session();
	pthread_mutex_unlock(&g.lock);
}

static void kx_tf_stop(const TP_Profiler *profiler, TF_Status *status)
{
	char err[512]; /* locally no record file: stopping cannot fail */

	(void)profiler;
	pthread_mutex_lock(&g.lock);
	if (!kx_capture_opened(&g.cap))
		goto out;
	/* Detach and drain (bounded by the consumer's 100 ms poll); through the
	 * daemon, the rest of the stream and the trailer. */
	if (kx_capture_stop(&g.cap, err, sizeof(err)) != 0)
		fprintf(stderr, "kxprof: TensorFlow profiler session: %s\n", err);
	g.ci = *kx_capture_capinfo(&g.cap);
	g.ci.not_stored = kx_store_not_stored(g.store);
	list_threads();
	freeze_xspace(status);
	if (env_flag("KXPROF_VERBOSE"))
		fprintf(stderr,
		        "kxprof: TensorFlow profiler session: %zu ioctl events, %zu annotation "
		        "events, %llu dropped (ring buffer full), %llu not stored (store limit), "
		        "XSpace %zu bytes, attach %s\n",
		        kx_store_ioctl_count(g.store), kx_store_ann_count(g.store),
		        (unsigned long long)(g.ci.dropped + g.ci.ann.dropped),
		        (unsigned long long)g.ci.not_stored, g.xspace_len, kx_capture_mech(&g.cap));
	/* Nothing stays attached or allocated between sessions. */
	close_session();
out:
	pthread_mutex_unlock(&g.lock);
}

/*
 * Core's two-call protocol: buffer NULL asks for the size (always written,
 * 0 = no data); then a buffer of capacity *size_in_bytes gets exactly the
 * frozen bytes, once. Too small a buffer is an error and nothing is written.
 */
static void kx_tf_collect(const TP_Profiler *profiler, uint8_t *buffer, size_t *size_in_bytes,
                          TF_Status *status)
{
	(void)profiler;
	if (!size_in_bytes) {
		set_status(status, TF_INVALID_ARGUMENT, "kxprof: size_in_bytes is NULL");
		return;
	}
	pthread_mutex_lock(&g.lock);
	if (!buffer) {
		*size_in_bytes = g.xspace ? g.xspace_len : 0;
	} else if (!g.xspace) {
		*size_in_bytes = 0;
	} else if (*size_in_bytes < g.xspace_len) {
		/* Kept, so a caller can ask for the size again and retry. */
		set_status(status, TF_INVALID_ARGUMENT,
		           "kxprof: buffer of %zu bytes is too small for the XSpace of %zu bytes",
		           *size_in_bytes, g.xspace_len);
	} else {
		memcpy(buffer, g.xspace, g.xspace_len);
		*size_in_bytes = g.xspace_len;
		drop_xspace();
	}
	pthread_mutex_unlock(&g.lock);
}

/* Core calls these right after registration while its copies stay in use. */
static void kx_tf_destroy_profiler(TP_Profiler *profiler)
{
	(void)profiler;
}

static void kx_tf_destroy_profiler_fns(TP_ProfilerFns *fns)
{
	(void)fns;
}

/* ---- process events ------------------------------------------------------------ */

static void before_fork(void)
{
	pthread_mutex_lock(&g.lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&g.lock);
}

/* The child has no consumer thread: forget the parent's capture, never touch it. */
static void after_fork_child(void)
{
	kx_remote_forget(g.cap.remote);
	memset(&g.cap, 0, sizeof(g.cap));
	g.store = NULL;
	drop_xspace();
	pthread_mutex_unlock(&g.lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void install_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* Unload or exit with a capture running: stop it cleanly (never in a forked child). */
__attribute__((destructor)) static void kx_tf_unload(void)
{
	if (pthread_mutex_trylock(&g.lock) != 0)
		return;
	if (kx_capture_opened(&g.cap) && g.owner == getpid())
		close_session();
	drop_xspace();
	free(g.device_list);
	g.device_list = NULL;
	free(g.tptr);
	g.tptr = NULL;
	g.ntptr = g.captptr = 0;
	pthread_mutex_unlock(&g.lock);
}

/* ---- entry point ------------------------------------------------------------------- */

__attribute__((visibility("default"))) void TF_InitProfiler(TF_ProfilerRegistrationParams *params,
                                                            TF_Status *status)
{
	(void)status;
	pthread_once(&atfork_once, install_atfork);
	/* Never fail: any error here makes TensorFlow abort the process. */
	if (!params)
		return;
	/* Registered all the same: a copy that fails registration aborts TensorFlow. */
	if (!kx_tf_claim_process())
		g.second_copy = 1;
	params->struct_size = TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE;
	params->destroy_profiler = kx_tf_destroy_profiler;
	params->destroy_profiler_fns = kx_tf_destroy_profiler_fns;
	if (params->profiler) {
		params->profiler->struct_size = TP_PROFILER_STRUCT_SIZE;
		params->profiler->ext = NULL;
		params->profiler->device_type = KX_TF_DEVICE_TYPE;
	}
	if (params->profiler_fns) {
		params->profiler_fns->struct_size = TP_PROFILER_FNS_STRUCT_SIZE;
		params->profiler_fns->ext = NULL;
		params->profiler_fns->start = kx_tf_start;
		params->profiler_fns->stop = kx_tf_stop;
		params->profiler_fns->collect_data_xspace = kx_tf_collect;
	}
}
