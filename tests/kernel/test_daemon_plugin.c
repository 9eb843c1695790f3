/*
 * The TensorFlow plugin without privilege, through the daemon (root only,
 * else skipped). A daemon (user/daemon/, the library behind `kxprof serve
 * --socket`) runs in a child process on a socket of its own; a host process
 * loads libkxprof_tf.so as TensorFlow core does, registers it, and around
 * start/stop runs threads that issue known ioctls (/dev/null, and /dev/kvm
 * where there is one). Checked:
 *  - as uid 65534 with the daemon: one stderr line says the daemon is used,
 *    and the XSpace has one /host:CPU line per thread with exactly the
 *    thread's ioctls, as the same host gets running as root (checked the same
 *    way, locally, no daemon line);
 *  - as uid 65534 without a daemon: collect gives 0 bytes and one stderr line
 *    says why (no privilege, no daemon) and what to do.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "../../plugin/tf_profiler_api.h"
#include "kxtest.h"
#include "daemon/server.h"
#include "proto/xplane.pb-c.h"

#define NOBODY  65534
#define THREADS 3

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;

static char plugin_path[PATH_MAX];
static char dir[] = "/tmp/kxprof-dplugin-XXXXXX";
static char sock_path[PATH_MAX];

/* ---- the host: registration as core does it, a workload, collect ---- */

struct thread_work {
	pthread_t th;
	pid_t tid;
	int kvm;             /* fd, -1 when none */
	unsigned long n[3];  /* issued: TCGETS, FIONREAD, KVM_GET_API_VERSION */
	unsigned long ok[3]; /* calls that reached the kernel (all of them) */
};

static void *work(void *arg)
{
	struct thread_work *w = arg;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC), v;
	struct termios t;

	w->tid = (pid_t)syscall(SYS_gettid);
	for (unsigned long i = 0; fd >= 0 && i < w->n[0]; i++)
		w->ok[0] += ioctl(fd, TCGETS, &t) < 0 && errno == ENOTTY;
	for (unsigned long i = 0; fd >= 0 && i < w->n[1]; i++)
		w->ok[1] += ioctl(fd, FIONREAD, &v) < 0 ? errno == ENOTTY || errno == EINVAL : 1;
	for (unsigned long i = 0; w->kvm >= 0 && i < w->n[2]; i++)
		w->ok[2] += ioctl(w->kvm, KVM_GET_API_VERSION, 0) == KVM_API_VERSION;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int count_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* The event counts of line l by name, sorted, into out (at most max). */
static int line_counts(const XPlane *p, const XLine *l, unsigned long *out, int max)
{
	int64_t ids[8];
	int n = 0;

	for (size_t i = 0; i < l->n_events; i++) {
		int64_t id = l->events[i]->metadata_id;
		int k = 0;

		while (k < n && ids[k] != id)
			k++;
		if (k == n) {
			if (n == max || n == 8)
				return -1;
			ids[n] = id;
			out[n++] = 0;
		}
		out[k]++;
	}
	(void)p;
	qsort(out, (size_t)n, sizeof(*out), count_cmp);
	return n;
}

/* The XSpace holds exactly each thread's ioctls on a line of its tid. 0, or an exit code. */
static int check_xspace(const uint8_t *buf, size_t len, struct thread_work *w)
{
	XSpace *x = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	const XPlane *host = NULL;
	int rc = 0;

	if (!x)
		return 30;
	for (size_t i = 0; i < x->n_planes; i++)
		if (!strcmp(x->planes[i]->name, "/host:CPU"))
			host = x->planes[i];
	if (!host || host->n_lines != THREADS)
		rc = 31;
	for (int t = 0; !rc && t < THREADS; t++) {
		unsigned long want[3], got[3] = {0};
		const XLine *l = NULL;
		int nw = 0, ng;

		for (size_t i = 0; i < host->n_lines; i++)
			if (host->lines[i]->id == w[t].tid)
				l = host->lines[i];
		for (int k = 0; k < 3; k++)
			if (w[t].n[k] && w[t].ok[k])
				want[nw++] = w[t].ok[k];
		qsort(want, (size_t)nw, sizeof(*want), count_cmp);
		ng = l ? line_counts(host, l, got, 3) : -1;
		printf("  thread %d: %d names, issued %lu/%lu/%lu, XSpace %lu/%lu/%lu\n", t, ng,
		       want[0], nw > 1 ? want[1] : 0, nw > 2 ? want[2] : 0, got[0], got[1], got[2]);
		if (ng != nw || memcmp(want, got, sizeof(*got) * (size_t)nw))
			rc = 32;
	}
	tensorflow__profiler__xspace__free_unpacked(x, NULL);
	return rc;
}

/* Registers like core: zeroed structs with their sizes, the plugin fills them. */
static int tf_register(TP_Profiler *p, TP_ProfilerFns *f)
{
	void *h = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
	void (*init)(TF_ProfilerRegistrationParams *, TF_Status *);
	TF_ProfilerRegistrationParams params = {
	        .struct_size = TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE,
	        .profiler = p,
	        .profiler_fns = f,
	};

	if (!h) {
		printf("  dlopen: %s\n", dlerror());
		return -1;
	}
	*(void **)&init = dlsym(h, "TF_InitProfiler");
	memset(p, 0, sizeof(*p));
	memset(f, 0, sizeof(*f));
	p->struct_size = TP_PROFILER_STRUCT_SIZE;
	f->struct_size = TP_PROFILER_FNS_STRUCT_SIZE;
	if (!init)
		return -1;
	init(&params, NULL);
	return f->start && f->stop && f->collect_data_xspace ? 0 : -1;
}

/* One profiling session around the workload; writes the XSpace size to *len
 * and checks it when there is one. 0, or an exit code. */
static int host_session(int expect_data)
{
	struct thread_work w[THREADS];
	TP_Profiler p;
	TP_ProfilerFns f;
	uint8_t *buf;
	size_t len = 12345;
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC), rc;

	if (tf_register(&p, &f))
		return 20;
	f.start(&p, NULL);
	for (int t = 0; t < THREADS; t++) {
		w[t] = (struct thread_work){.kvm = kvm,
		                            .n = {7ul * (t + 1), 3ul * (t + 2), 2ul * (t + 1)}};
		if (pthread_create(&w[t].th, NULL, work, &w[t]))
			return 21;
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(w[t].th, NULL);
	f.stop(&p, NULL);
	f.collect_data_xspace(&p, NULL, &len, NULL);
	printf("  XSpace of %zu bytes (kvm %s)\n", len, kvm >= 0 ? "too" : "absent");
	if (!expect_data)
		return len == 0 ? 0 : 22;
	if (!len || !(buf = malloc(len)))
		return 23;
	f.collect_data_xspace(&p, buf, &len, NULL);
	rc = check_xspace(buf, len, w);
	free(buf);
	return rc;
}

/* Becomes uid NOBODY without capabilities; keeps /dev/kvm's group when it has one. */
static int drop_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2] = {{0}};
	struct stat st;
	gid_t kvm_gid = stat("/dev/kvm", &st) == 0 ? st.st_gid : NOBODY;

	if (setgroups(1, &kvm_gid) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY) || syscall(SYS_capset, &hdr, caps))
		return -1;
	/* Credential changes clear dumpable; LeakSanitizer needs it at exit. */
	prctl(PR_SET_DUMPABLE, 1);
	return 0;
}

enum { AS_ROOT, AS_NOBODY_DAEMON, AS_NOBODY_ALONE };

/* Runs a host in a child with its stderr into out; its exit code, or -1. */
static int run_host(int how, char *out, size_t len)
{
	int pfd[2], status, rc;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	out[0] = 0;
	if (pipe(pfd) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		setenv("KXPROF_DEVICES", "/dev/null", 1);
		setenv("KXPROF_SOCKET",
		       how == AS_NOBODY_ALONE ? "/nonexistent/kxprof.sock" : sock_path, 1);
		if (how != AS_ROOT && drop_privileges())
			_exit(10);
		rc = host_session(how != AS_NOBODY_ALONE);
		fflush(stdout);
		_exit(rc);
	}
	close(pfd[1]);
	while (got < len - 1 && (n = read(pfd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(pfd[0]);
	out[got] = 0;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- the daemon, in a child of its own ---- */

static pid_t daemon_pid = -1;
static int daemon_stop_fd = -1;

static pid_t start_daemon(void)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct kx_daemon_opts o = {
		        .path = sock_path,
		        .listen_fd = -1,
		        .mode = 0666,
		        .gid = -1,
		        .max_sessions = 8,
		        .max_per_uid = 4,
		        .conn = {.max_seconds = 60,
		                 .idle_seconds = 20,
		                 .max_ringbuf_bytes = 8u << 20,
		                 .default_ringbuf_bytes = 1u << 20},
		};
		struct kx_daemon *d;
		char err[512], c;

		close(p[1]);
		d = kx_daemon_start(&o, err, sizeof(err));
		if (!d) {
			printf("  daemon: %s\n", err);
			_exit(1);
		}
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		kx_daemon_stop(d);
		_exit(0);
	}
	close(p[0]);
	daemon_stop_fd = p[1];
	for (int i = 0; i < 100 && access(sock_path, F_OK) != 0; i++)
		usleep(20000);
	return pid;
}

static int stop_daemon(void)
{
	int status = -1;

	if (daemon_pid <= 0)
		return -1;
	close(daemon_stop_fd);
	if (waitpid(daemon_pid, &status, 0) != daemon_pid)
		return -1;
	daemon_pid = -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---- cases ---- */

static void privileged_host_exact(void)
{
	char out[4096];
	int rc;

	if (geteuid() != 0)
		SKIP("needs root");
	rc = run_host(AS_ROOT, out, sizeof(out));
	if (rc)
		printf("  exit %d; stderr: %s\n", rc, out);
	CHECK(rc == 0);
	CHECK(strstr(out, "daemon") == NULL);
}

static void unprivileged_host_through_daemon_exact(void)
{
	char out[4096];
	int rc;

	if (geteuid() != 0)
		SKIP("needs root");
	CHECK(daemon_pid > 0 && access(sock_path, F_OK) == 0);
	rc = run_host(AS_NOBODY_DAEMON, out, sizeof(out));
	if (rc)
		printf("  exit %d; stderr: %s\n", rc, out);
	CHECK(rc == 0);
	CHECK(strstr(out, "kxprof: TensorFlow profiler plugin: no BPF privilege in this process: "
	                  "capturing through the kxprof daemon at ") == out);
	CHECK(strchr(out, '\n') == out + strlen(out) - 1);
}

static void unprivileged_host_alone_inactive(void)
{
	char out[4096];
	int rc;

	if (geteuid() != 0)
		SKIP("needs root (to become another user)");
	rc = run_host(AS_NOBODY_ALONE, out, sizeof(out));
	if (rc)
		printf("  exit %d; stderr: %s\n", rc, out);
	CHECK(rc == 0);
	CHECK(strstr(out, "kxprof: TensorFlow profiler plugin inactive: ") == out);
	CHECK(strstr(out, "no kxprof daemon at /nonexistent/kxprof.sock") != NULL);
	CHECK(strstr(out, "kxprof serve --socket") != NULL);
	CHECK(strchr(out, '\n') == out + strlen(out) - 1);
}

static void daemon_stops_cleanly(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	CHECK(stop_daemon() == 0);
	CHECK(access(sock_path, F_OK) != 0);
}

static void find_plugin(void)
{
	char exe[PATH_MAX], tmp[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *env = getenv("KXPROF_TF_PLUGIN");

	exe[n > 0 ? n : 0] = 0;
	snprintf(tmp, sizeof(tmp), "%s", exe);
	if (env && *env)
		snprintf(plugin_path, sizeof(plugin_path), "%s", env);
	else
		snprintf(plugin_path, sizeof(plugin_path), "%s/libkxprof_tf.so",
		         dirname(dirname(tmp)));
}

int main(void)
{
	unsetenv("KXPROF_DISABLE");
	unsetenv("KXPROF_MAX_MEM_MB");
	unsetenv("KXPROF_RINGBUF_MB");
	find_plugin();
	if (geteuid() == 0 && mkdtemp(dir)) {
		chmod(dir, 0755); /* the unprivileged host reaches the socket */
		snprintf(sock_path, sizeof(sock_path), "%s/kxprof.sock", dir);
		daemon_pid = start_daemon();
	}
	RUN(privileged_host_exact);
	RUN(unprivileged_host_through_daemon_exact);
	RUN(unprivileged_host_alone_inactive);
	RUN(daemon_stops_cleanly);
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	rmdir(dir);
	KXT_EXIT();
}
