/*
 * What an unprivileged client of the daemon may trace (daemon/auth.h) and
 * the kernel-side uid rule that keeps it so (capture/session.h uid_only),
 * against the real kernel (root only, else skipped):
 *  - peer credentials of a socket; the rules for a client that is not root
 *    (own processes only; never -a, pid 1, kernel threads, other uids,
 *    threads given as processes) and for root; a pinned target that exits
 *    before the capture begins is caught;
 *  - the kernel's own read rule at attach: a process of the client's uid
 *    that is not dumpable, keeps saved uid 0, runs with another group or
 *    holds capabilities is refused with its reason; a pid named 256 times
 *    is pinned once;
 *  - the same rule at exec, in the kernel, under each attach mechanism: a
 *    traced process that execs a program its user may not read (execute
 *    only: not dumpable; setgid root) leaves the capture for good and is
 *    counted, one that execs a readable copy stays;
 *  - in a session restricted to uid 65534, under each attach mechanism: a
 *    process is traced while its real and effective uid are 65534, leaves at
 *    the moment it changes euid, stays out after changing back, and its later
 *    children are not added; a process that keeps the uid has its children
 *    traced; the same run unrestricted traces everything (the test can fail);
 *  - restricted sessions leave out driver hooks and block job timelines
 *    (they would show other users' work) and say why; not given kernel-mode
 *    profiling, they read no kernel stacks and open no hardware counter,
 *    and say why.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "kxtest.h"
#include "capture/counters.h"
#include "capture/session.h"
#include "capture/sinks.h"
#include "daemon/auth.h"
#include "model/store.h"
#include "registry/devices.h"

#define NOBODY 65534

static struct kx_peer peer_of(uid_t uid)
{
	return (struct kx_peer){.pid = getpid(), .uid = uid, .gid = uid, .pidfd = -1};
}

/* A child that becomes uid (all four ids), then waits to be killed. */
static pid_t child_as(uid_t uid)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		/* Dumpable again after the uid change, as a process of uid would be. */
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ||
		    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* How a child of NOBODY sets itself up beyond its ids (child_setup). */
enum setup { PLAIN, NODUMP, SAVED_ROOT, OTHER_GROUP, CAPS };

/* A child of NOBODY set up as how, then waiting to be killed. */
static pid_t child_setup(enum setup how)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		uid_t saved = how == SAVED_ROOT ? 0 : NOBODY;
		gid_t sgid = how == OTHER_GROUP ? 0 : NOBODY;

		close(p[0]);
		if (how == CAPS && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
			_exit(2);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, sgid) ||
		    setresuid(NOBODY, NOBODY, saved) ||
		    prctl(PR_SET_DUMPABLE, how == NODUMP ? 0 : 1, 0, 0, 0))
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

/* Checks one request of peer; 1 when refused with want in the reason. */
static int auth_refuses(const struct kx_peer *p, int all, uint32_t pid, const char *want)
{
	struct kx_dw_request r = {0};
	struct kx_targets t;
	char err[512] = "";

	r.all = all;
	if (pid)
		r.pids[r.npids++] = pid;
	if (kx_auth_check(p, &r, &t, err, sizeof(err)) == 0) {
		kx_auth_release(&t);
		printf("  pid %u all %d: allowed, expected '%s'\n", pid, all, want);
		return 0;
	}
	if (!strstr(err, want)) {
		printf("  pid %u: refused with '%s', expected '%s'\n", pid, err, want);
		return 0;
	}
	return t.n == 0;
}

static int auth_allows(const struct kx_peer *p, int all, uint32_t pid)
{
	struct kx_dw_request r = {0};
	struct kx_targets t;
	char err[512] = "";
	int ok;

	r.all = all;
	if (pid)
		r.pids[r.npids++] = pid;
	ok = kx_auth_check(p, &r, &t, err, sizeof(err)) == 0;
	if (!ok)
		printf("  pid %u: refused: %s\n", pid, err);
	else
		kx_auth_release(&t);
	return ok;
}

static void peer_credentials(void)
{
	struct kx_peer p;
	char err[256];
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(kx_peer_get(sv[0], &p, err, sizeof(err)) == 0);
	CHECK(p.pid == getpid() && p.uid == getuid() && p.gid == getgid());
	CHECK(p.pidfd >= 0);
	CHECK(kx_peer_alive(&p));
	kx_peer_release(&p);
	CHECK(p.pidfd == -1);
	close(sv[0]);
	close(sv[1]);
}

static void *idle_thread(void *arg)
{
	pid_t *tid = arg;

	*tid = (pid_t)syscall(SYS_gettid);
	pause();
	return NULL;
}

static void rules_for_users(void)
{
	struct kx_peer nobody = peer_of(NOBODY), root = peer_of(0);
	pthread_t th;
	volatile pid_t tid = 0;
	pid_t mine;

	if (geteuid() != 0)
		SKIP("needs root (a child of another uid)");
	mine = child_as(NOBODY);
	CHECK(mine > 0);
	CHECK(auth_allows(&nobody, 0, (uint32_t)mine));
	CHECK(auth_refuses(&nobody, 0, (uint32_t)getpid(), "runs as uid 0"));
	CHECK(auth_refuses(&nobody, 0, 1, "pid 1 (init) is never traced"));
	CHECK(auth_refuses(&nobody, 0, 2, "kernel thread"));
	CHECK(auth_refuses(&nobody, 1, 0, "-a (every process) needs root"));
	CHECK(auth_refuses(&nobody, 0, 0, "nothing to trace"));
	CHECK(auth_refuses(&nobody, 0, 0x7ffffff0, "no such process: 2147483632"));
	CHECK(auth_refuses(&root, 0, 0x7ffffff0, "no such process"));
	CHECK(pthread_create(&th, NULL, idle_thread, (void *)&tid) == 0);
	while (!tid)
		usleep(1000);
	CHECK(auth_refuses(&root, 0, (uint32_t)tid, "is a thread of process"));
	pthread_cancel(th);
	pthread_join(th, NULL);
	/* Root may ask what record may. */
	CHECK(auth_allows(&root, 0, 1));
	CHECK(auth_allows(&root, 0, (uint32_t)mine));
	CHECK(auth_allows(&root, 1, 0));
	end_child(mine);
}

static void protected_refused(void)
{
	static const struct {
		enum setup how;
		const char *want;
	} cases[] = {
	        {NODUMP, "is not dumpable"},
	        {SAVED_ROOT, "keeps another saved or fs uid"},
	        {OTHER_GROUP, "runs with a group other than your gid"},
	        {CAPS, "holds capabilities"},
	};
	struct kx_peer nobody = peer_of(NOBODY);
	pid_t plain;

	if (geteuid() != 0)
		SKIP("needs root (children of another uid)");
	plain = child_setup(PLAIN);
	CHECK(plain > 0);
	CHECK(auth_allows(&nobody, 0, (uint32_t)plain));
	end_child(plain);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = child_setup(cases[i].how);

		CHECK(pid > 0);
		CHECK(auth_refuses(&nobody, 0, (uint32_t)pid, cases[i].want));
		end_child(pid);
	}
}

static void duplicate_pids_pinned_once(void)
{
	struct kx_peer nobody = peer_of(NOBODY);
	struct kx_dw_request r = {0};
	struct kx_targets t;
	char err[512];
	pid_t pid;

	if (geteuid() != 0)
		SKIP("needs root (a child of another uid)");
	pid = child_as(NOBODY);
	CHECK(pid > 0);
	for (r.npids = 0; r.npids < KX_DW_PIDS_MAX; r.npids++)
		r.pids[r.npids] = (uint32_t)pid;
	CHECK(kx_auth_check(&nobody, &r, &t, err, sizeof(err)) == 0);
	CHECK_EQ_U(t.n, 1);
	kx_auth_release(&t);
	end_child(pid);
}

static void exited_target_caught(void)
{
	struct kx_peer nobody = peer_of(NOBODY);
	struct kx_dw_request r = {0};
	struct kx_targets t;
	char err[512];
	pid_t pid;

	if (geteuid() != 0)
		SKIP("needs root (a child of another uid)");
	pid = child_as(NOBODY);
	CHECK(pid > 0);
	r.pids[r.npids++] = (uint32_t)pid;
	CHECK(kx_auth_check(&nobody, &r, &t, err, sizeof(err)) == 0);
	CHECK(kx_auth_confirm(&nobody, &t, err, sizeof(err)) == 0);
	end_child(pid); /* exits and is reaped: the pid may now be reused */
	CHECK(kx_auth_confirm(&nobody, &t, err, sizeof(err)) != 0);
	CHECK(strstr(err, "exited before the capture began") != NULL);
	kx_auth_release(&t);
}

/* ---- the kernel-side uid rule ---- */

static struct kx_device devs[KX_MAX_DEVICES];
static int ndevs;

/* n ioctls on /dev/null (ENOTTY each: recorded all the same). */
static void nulls(int fd, int n)
{
	struct termios t;

	for (int i = 0; i < n; i++)
		(void)ioctl(fd, TCGETS, &t);
}

/* The processes of one run: the pipes and who is who. */
struct run {
	int go[2];     /* a byte each starts the two workers */
	int report[2]; /* each child of a worker writes its pid, tagged */
	pid_t pid[4];  /* hopper, its child, keeper, its child */
	int reaped;    /* the workers were waited for */
};

static void report_kid(struct run *r, char tag)
{
	char msg[16];
	int n = snprintf(msg, sizeof(msg), "%c%d\n", tag, (int)getpid());

	if (write(r->report[1], msg, (size_t)n) != n)
		_exit(7);
}

/* After go: 5 ioctls as uid NOBODY (saved uid 0 kept), 7 with euid 0, 11
 * with euid NOBODY again, then a child with 13. */
static void hopper(struct run *r)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c;
	pid_t kid;

	if (fd < 0 || read(r->go[0], &c, 1) != 1)
		_exit(2);
	/* Dumpable again, as an exec would make it: the uid change made it not
	 * (the kernel's rule; not traced while so, shared.bpf.h). */
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, 0) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		_exit(3);
	nulls(fd, 5);
	if (setresuid((uid_t)-1, 0, (uid_t)-1))
		_exit(4);
	nulls(fd, 7);
	if (setresuid((uid_t)-1, NOBODY, (uid_t)-1))
		_exit(5);
	nulls(fd, 11);
	kid = fork();
	if (kid == 0) {
		report_kid(r, 'h');
		nulls(fd, 13);
		_exit(0);
	}
	_exit(kid > 0 && waitpid(kid, NULL, 0) == kid ? 0 : 6);
}

/* After go: as NOBODY for good, 3 ioctls, then a child with 4. */
static void keeper(struct run *r)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c;
	pid_t kid;

	if (fd < 0 || read(r->go[0], &c, 1) != 1)
		_exit(2);
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		_exit(3);
	nulls(fd, 3);
	kid = fork();
	if (kid == 0) {
		report_kid(r, 'k');
		nulls(fd, 4);
		_exit(0);
	}
	_exit(kid > 0 && waitpid(kid, NULL, 0) == kid ? 0 : 6);
}

static pid_t spawn(void (*body)(struct run *), struct run *r)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		body(r);
	return pid;
}

/* Waits for both workers; reads their children's pids. 0, or -1 with err. */
static int reap(struct run *r, char *err, size_t len)
{
	char buf[64] = "";
	int status, rc = 0;
	ssize_t got;

	for (int k = 0; k < 4; k += 2)
		if (waitpid(r->pid[k], &status, 0) != r->pid[k] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			snprintf(err, len, "worker %d failed (status %#x)", (int)r->pid[k], status);
			rc = -1;
		}
	r->reaped = 1;
	close(r->report[1]);
	r->report[1] = -1;
	got = read(r->report[0], buf, sizeof(buf) - 1);
	for (char *line = strtok(got > 0 ? buf : NULL, "\n"); line; line = strtok(NULL, "\n"))
		r->pid[line[0] == 'h' ? 1 : 3] = (pid_t)atoi(line + 1);
	return rc;
}

/* One session (restricted to NOBODY or not) around a hopper and a keeper.
 * n: ioctls of the hopper, its child, the keeper, its child. */
static int run_uid_session(const char *mech, int restricted, size_t n[4], char *err, size_t len)
{
	struct kx_store *st = kx_store_new(0);
	struct kx_session_opts o = {.devices = devs,
	                            .ndevices = ndevs,
	                            .mech = mech,
	                            .sink = kx_sink_store(st),
	                            .no_jobs = 1,
	                            .uid_only = restricted,
	                            .uid = NOBODY};
	struct kx_session *s = kx_session_open(&o, err, len);
	struct run r = {.go = {-1, -1}, .report = {-1, -1}, .pid = {-1, -1, -1, -1}};
	int rc = -1;

	memset(n, 0, 4 * sizeof(n[0]));
	if (!s || pipe(r.go) != 0 || pipe(r.report) != 0)
		goto out;
	r.pid[0] = spawn(hopper, &r);
	r.pid[2] = spawn(keeper, &r);
	if (r.pid[0] < 0 || r.pid[2] < 0 || kx_session_add_pid(s, (uint32_t)r.pid[0], err, len) ||
	    kx_session_add_pid(s, (uint32_t)r.pid[2], err, len) || kx_session_start(s, err, len) ||
	    write(r.go[1], "gg", 2) != 2)
		goto out;
	rc = reap(&r, err, len);
	kx_session_stop(s);
	for (size_t i = 0; i < kx_store_ioctl_count(st); i++)
		for (int k = 0; k < 4; k++)
			n[k] += kx_store_ioctl(st, i)->pid == (uint32_t)r.pid[k];
	printf("  %s%s: hopper %zu, its child %zu, keeper %zu, its child %zu ioctls\n", mech,
	       restricted ? " (uid rule)" : "", n[0], n[1], n[2], n[3]);
out:
	for (int k = 0; k < 2; k++) {
		if (r.go[k] >= 0)
			close(r.go[k]);
		if (r.report[k] >= 0)
			close(r.report[k]);
	}
	for (int k = 0; k < 4 && !r.reaped; k += 2)
		if (r.pid[k] > 0)
			end_child(r.pid[k]);
	kx_session_close(s);
	kx_store_free(st);
	return rc;
}

static void uid_rule_in_kernel(void)
{
	static const char *const mechs[] = {"tp_btf", "raw_tp", "tp"};
	int ran = 0;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF, changes uids)");
	ndevs = kx_device_resolve("/dev/null", devs, KX_MAX_DEVICES, NULL, 0);
	CHECK(ndevs == 1);
	for (size_t m = 0; m < 3; m++) {
		size_t n[4];
		char err[512] = "";

		if (run_uid_session(mechs[m], 1, n, err, sizeof(err))) {
			printf("  %s: %s\n", mechs[m], err);
			CHECK(strstr(err, "no attach mechanism") != NULL);
			continue;
		}
		ran++;
		/* Traced while NOBODY; out from the euid change on, for good. */
		CHECK_EQ_U(n[0], 5);
		CHECK_EQ_U(n[1], 0);
		CHECK_EQ_U(n[2], 3);
		CHECK_EQ_U(n[3], 4);
		/* Unrestricted, the same processes are traced throughout. */
		CHECK(run_uid_session(mechs[m], 0, n, err, sizeof(err)) == 0);
		CHECK_EQ_U(n[0], 5 + 7 + 11);
		CHECK_EQ_U(n[1], 13);
		CHECK_EQ_U(n[2], 3);
		CHECK_EQ_U(n[3], 4);
	}
	CHECK(ran > 0);
}

/* ---- the exec rule in the kernel ---- */

#define EXEC_IOCTLS 7 /* the workers' ioctls (exec_child passes "7") */
static char self_exe[4096];

/* Copies this program to dir/name with owner root and mode. 0, or -1. */
static int copy_self(const char *dir, const char *name, mode_t mode, char *path, size_t len)
{
	char buf[65536];
	int in = open(self_exe, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	snprintf(path, len, "%s/%s", dir, name);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (in < 0 || out < 0)
		goto fail;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto fail;
	close(in);
	if (fchown(out, 0, 0) || fchmod(out, mode))
		n = -1;
	close(out);
	return n == 0 ? 0 : -1;
fail:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return -1;
}

/* A child that becomes NOBODY, waits for a byte on go, then execs path
 * (this program as an ioctl worker). */
static pid_t exec_child(const char *path, int go)
{
	pid_t pid;
	char c;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) ||
		    read(go, &c, 1) != 1)
			_exit(3);
		execl(path, path, "--ioctls", "7", (char *)NULL);
		_exit(4);
	}
	return pid;
}

/* One session of NOBODY around three children that exec copies[k]; n: the
 * ioctls recorded of each; *left: the processes it counted as leaving. */
static int run_exec_session(const char *mech, char copies[3][4096], size_t n[3], uint64_t *left,
                            char *err, size_t len)
{
	struct kx_store *st = kx_store_new(0);
	struct kx_session_opts o = {.devices = devs,
	                            .ndevices = ndevs,
	                            .mech = mech,
	                            .sink = kx_sink_store(st),
	                            .no_jobs = 1,
	                            .uid_only = 1,
	                            .uid = NOBODY,
	                            .gid = NOBODY};
	struct kx_session *s = kx_session_open(&o, err, len);
	pid_t pid[3] = {-1, -1, -1}, ran[3];
	int go[2] = {-1, -1}, rc = -1, status;

	memset(n, 0, 3 * sizeof(n[0]));
	if (!s || pipe2(go, O_CLOEXEC) != 0)
		goto out;
	for (int k = 0; k < 3; k++)
		if ((pid[k] = exec_child(copies[k], go[0])) < 0 ||
		    kx_session_add_pid(s, (uint32_t)pid[k], err, len))
			goto out;
	if (kx_session_start(s, err, len) || write(go[1], "ggg", 3) != 3)
		goto out;
	rc = 0;
	memcpy(ran, pid, sizeof(ran));
	for (int k = 0; k < 3; k++) {
		if (waitpid(pid[k], &status, 0) != pid[k] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			snprintf(err, len, "worker %s failed (status %#x)", copies[k], status);
			rc = -1;
		}
		pid[k] = -1;
	}
	kx_session_stop(s);
	*left = kx_session_capinfo(s)->protected_exec;
	for (size_t i = 0; i < kx_store_ioctl_count(st); i++)
		for (int k = 0; k < 3; k++)
			n[k] += kx_store_ioctl(st, i)->pid == (uint32_t)ran[k];
out:
	for (int k = 0; k < 2; k++)
		if (go[k] >= 0)
			close(go[k]);
	for (int k = 0; k < 3; k++)
		if (pid[k] > 0)
			end_child(pid[k]);
	kx_session_close(s);
	kx_store_free(st);
	return rc;
}

static void exec_rule_in_kernel(void)
{
	static const char *const mechs[] = {"tp_btf", "raw_tp", "tp"};
	char dir[] = "/tmp/kxtest-exec.XXXXXX", copies[3][4096];
	struct statvfs fs;
	int ran = 0;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF, makes a setgid program)");
	CHECK(mkdtemp(dir) != NULL && chmod(dir, 0755) == 0);
	if (statvfs(dir, &fs) == 0 && (fs.f_flag & ST_NOSUID)) {
		rmdir(dir);
		SKIP("/tmp is mounted nosuid");
	}
	ndevs = kx_device_resolve("/dev/null", devs, KX_MAX_DEVICES, NULL, 0);
	CHECK(ndevs == 1);
	/* Readable; execute only (its user may not read it: not dumpable); setgid root. */
	CHECK(copy_self(dir, "plain", 0755, copies[0], sizeof(copies[0])) == 0);
	CHECK(copy_self(dir, "xonly", 0711, copies[1], sizeof(copies[1])) == 0);
	CHECK(copy_self(dir, "sgid", 02755, copies[2], sizeof(copies[2])) == 0);
	for (size_t m = 0; m < 3; m++) {
		uint64_t left = 0;
		size_t n[3];
		char err[512] = "";

		if (run_exec_session(mechs[m], copies, n, &left, err, sizeof(err))) {
			printf("  %s: %s\n", mechs[m], err);
			CHECK(strstr(err, "no attach mechanism") != NULL);
			continue;
		}
		ran++;
		printf("  %s: plain %zu, execute-only %zu, setgid %zu ioctls; %llu left\n",
		       mechs[m], n[0], n[1], n[2], (unsigned long long)left);
		CHECK_EQ_U(n[0], EXEC_IOCTLS);
		CHECK_EQ_U(n[1], 0);
		CHECK_EQ_U(n[2], 0);
		CHECK_EQ_U(left, 2);
	}
	for (int k = 0; k < 3; k++)
		unlink(copies[k]);
	rmdir(dir);
	CHECK(ran > 0);
}

static void restricted_hooks_said(void)
{
	struct kx_store *st;
	struct kx_session *s;
	const struct kx_capinfo *ci;
	char err[512];
	int drv = 0, block = 0;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF)");
	ndevs = kx_device_resolve("loop", devs, KX_MAX_DEVICES, err, sizeof(err));
	CHECK(ndevs > 0);
	st = kx_store_new(1 << 20);
	{
		struct kx_session_opts o = {.devices = devs,
		                            .ndevices = ndevs,
		                            .sink = kx_sink_store(st),
		                            .uid_only = 1,
		                            .uid = NOBODY};

		s = kx_session_open(&o, err, sizeof(err));
	}
	CHECK(s != NULL);
	ci = kx_session_capinfo(s);
	for (uint32_t i = 0; i < ci->nhooks; i++) {
		const struct kx_hook *h = &ci->hooks[i];

		if (!strcmp(h->name, "driver:*"))
			drv = h->state == KX_HOOK_SKIPPED && strstr(h->why, "every process");
		if (!strcmp(h->name, "jobs:block"))
			block = h->state == KX_HOOK_SKIPPED &&
			        strstr(h->why, "every process's jobs");
		CHECK(strncmp(h->name, "driver:", 7) || !strcmp(h->name, "driver:*"));
	}
	kx_session_close(s);
	kx_store_free(st);
	CHECK(drv);
	CHECK(block);
}

/* A restricted session not given kernel-mode profiling says so: no kernel
 * stacks and no hardware counter, each with the daemon's reason; software
 * counters and sampling stay on. */
static void restricted_profiles_said(void)
{
	static const char why[] = "test: not for users";
	struct kx_counter_list ctrs;
	struct kx_store *st;
	struct kx_session *s;
	const struct kx_capinfo *ci;
	char err[512];
	int kstacks = 0, cycles = 0, cs = 0, sampling = 0;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF)");
	CHECK(kx_counters_parse("cycles,context-switches", &ctrs, err, sizeof(err)) == 0);
	ndevs = kx_device_resolve("/dev/null", devs, KX_MAX_DEVICES, err, sizeof(err));
	CHECK(ndevs == 1);
	st = kx_store_new(1 << 20);
	{
		struct kx_session_opts o = {.devices = devs,
		                            .ndevices = ndevs,
		                            .sink = kx_sink_store(st),
		                            .uid_only = 1,
		                            .uid = NOBODY,
		                            .sample_hz = 99,
		                            .counters = &ctrs,
		                            .no_kernel_why = why};

		s = kx_session_open(&o, err, sizeof(err));
	}
	if (!s)
		printf("  %s\n", err);
	CHECK(s != NULL);
	ci = kx_session_capinfo(s);
	for (uint32_t i = 0; i < ci->nhooks; i++) {
		const struct kx_hook *h = &ci->hooks[i];
		int said = h->state == KX_HOOK_SKIPPED && !strcmp(h->why, why);

		kstacks |= !strcmp(h->name, "kernel stacks") && said;
		cycles |= !strcmp(h->name, "counter:cycles") && said;
		cs |= !strcmp(h->name, "counter:context-switches") && h->state == KX_HOOK_ATTACHED;
		sampling |= !strcmp(h->name, "cpu-clock sampling") && h->state == KX_HOOK_ATTACHED;
	}
	CHECK_STR(ci->counters.names, "context-switches");
	kx_session_close(s);
	kx_store_free(st);
	CHECK(kstacks && cycles && cs && sampling);
}

/* The worker exec_rule_in_kernel execs: --ioctls N on /dev/null. */
static int ioctl_worker(int n)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return 2;
	nulls(fd, n);
	return 0;
}

int main(int argc, char **argv)
{
	/* _exit: no exit-time leak check, which cannot run in a process that is
	 * not dumpable (LeakSanitizer stops the world through ptrace). */
	if (argc == 3 && !strcmp(argv[1], "--ioctls"))
		_exit(ioctl_worker(atoi(argv[2])));
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) < 0)
		return 1;
	RUN(peer_credentials);
	RUN(rules_for_users);
	RUN(protected_refused);
	RUN(duplicate_pids_pinned_once);
	RUN(exited_target_caught);
	RUN(uid_rule_in_kernel);
	RUN(exec_rule_in_kernel);
	RUN(restricted_hooks_said);
	RUN(restricted_profiles_said);
	KXT_EXIT();
}
