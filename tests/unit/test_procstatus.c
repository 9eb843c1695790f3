/*
 * util/procstatus.h against the process's own view of itself: name,
 * credentials, groups, thread group and parent; a pid that does not exist;
 * permitted capabilities and the status file's owner (the process's own
 * while dumpable, root's once not); a zombie has no memory; and (root) a Groups line longer than
 * the reader's buffer, of which only real groups are kept and the cut is
 * said.
 */
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kxtest.h"
#include "util/procstatus.h"

static void reads_self(void)
{
	struct kx_procstatus st;
	gid_t groups[KX_PROCSTATUS_GROUPS];
	char comm[17] = "";
	int n = getgroups(KX_PROCSTATUS_GROUPS, groups);

	CHECK(prctl(PR_GET_NAME, comm) == 0);
	CHECK(kx_procstatus_read((uint32_t)getpid(), &st) == 0);
	CHECK_STR(st.name, comm);
	CHECK(st.uid[0] == (long)getuid() && st.uid[1] == (long)geteuid());
	CHECK(st.gid[0] == (long)getgid() && st.gid[1] == (long)getegid());
	CHECK(st.tgid == (long)getpid() && st.ppid == (long)getppid());
	CHECK(st.kthread == -1 || st.kthread == 0);
	CHECK(n >= 0);
	CHECK_EQ_U(st.ngroups, n);
	CHECK(!st.groups_cut);
	for (int i = 0; i < n && i < st.ngroups; i++)
		CHECK_EQ_U(st.groups[i], groups[i]);
}

/* A child (uid 65534 when we are root) with dumpability d; its status in st. 0, or -1. */
static int child_status(int d, struct kx_procstatus *st)
{
	int p[2], rc = -1;
	pid_t pid;
	char c;

	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if ((geteuid() == 0 &&
		     (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))) ||
		    prctl(PR_SET_DUMPABLE, d, 0, 0, 0) || write(p[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	if (pid > 0 && read(p[0], &c, 1) == 1)
		rc = kx_procstatus_read((uint32_t)pid, st);
	close(p[0]);
	close(p[1]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return rc;
}

/* Real, effective and saved uid read each in its place: a child with three
 * different ones (root only: setresuid), the fs uid follows the effective. */
static void uids_in_order(void)
{
	struct kx_procstatus st;
	int p[2];
	pid_t pid;
	char c;

	if (geteuid() != 0)
		SKIP("needs root (setresuid)");
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		if (setresgid(65534, 65533, 65532) || setresuid(65534, 65533, 65532) ||
		    write(p[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	CHECK(pid > 0 && read(p[0], &c, 1) == 1);
	CHECK(kx_procstatus_read((uint32_t)pid, &st) == 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
	CHECK(st.uid[0] == 65534 && st.uid[1] == 65533 && st.uid[2] == 65532 && st.uid[3] == 65533);
	CHECK(st.gid[0] == 65534 && st.gid[1] == 65533 && st.gid[2] == 65532 && st.gid[3] == 65533);
}

static void caps_and_owner(void)
{
	struct kx_procstatus st;
	long uid = geteuid() == 0 ? 65534 : (long)geteuid();

	CHECK(kx_procstatus_read((uint32_t)getpid(), &st) == 0);
	CHECK(st.has_mm);
	CHECK(st.cap_prm_known);
	CHECK(geteuid() != 0 || st.cap_prm != 0);
	CHECK(child_status(1, &st) == 0);
	CHECK(st.file_uid == uid);
	CHECK(st.cap_prm == 0);
	/* Not dumpable: the file turns root's, how user space sees it. */
	CHECK(child_status(0, &st) == 0);
	CHECK(st.file_uid == 0);
}

/* A zombie has no memory (and its status file is root's). */
static void zombie_has_no_mm(void)
{
	struct kx_procstatus st = {0};
	pid_t pid = fork();
	int got = -1;

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	for (int tries = 0; tries < 500 && got != 0; tries++) {
		got = kx_procstatus_read((uint32_t)pid, &st) == 0 && !st.has_mm ? 0 : -1;
		if (got)
			usleep(10000);
	}
	CHECK(got == 0);
	CHECK(st.file_uid == 0);
	waitpid(pid, NULL, 0);
}

static void no_such_process(void)
{
	struct kx_procstatus st;

	/* Above the largest pid_max (4194304). */
	CHECK(kx_procstatus_read(4194305u + 7, &st) == -1);
}

/* The child's status once its groups show (up to 5 s): 0, or -1. */
static int status_with_groups(pid_t child, struct kx_procstatus *st)
{
	for (int tries = 0; tries < 500; tries++) {
		if (kx_procstatus_read((uint32_t)child, st) == 0 && st->ngroups > 100)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* A child in 600 groups of ten digits each (over 6 KiB of Groups line). */
static void long_groups_line(void)
{
	static gid_t many[600];
	struct kx_procstatus st;
	int p[2], status, got, real = 0;
	pid_t child;
	char c;

	if (geteuid() != 0)
		SKIP("needs root (setgroups)");
	for (int i = 0; i < 600; i++)
		many[i] = 1000000000u + (gid_t)i * 7;
	CHECK(pipe(p) == 0);
	child = fork();
	if (child == 0) {
		close(p[1]);
		if (setgroups(600, many))
			_exit(1);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	got = child > 0 ? status_with_groups(child, &st) : -1;
	close(p[1]); /* the child ends */
	CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK(got == 0);
	for (int i = 0; i < st.ngroups; i++)
		for (int j = 0; j < 600; j++)
			real += st.groups[i] == many[j];
	printf("# %d groups kept of 600, %d of them real, cut said: %d\n", st.ngroups, real,
	       st.groups_cut);
	CHECK(st.ngroups < 600 && st.groups_cut);
	CHECK_EQ_U(real, st.ngroups);
}

int main(void)
{
	RUN(reads_self);
	RUN(uids_in_order);
	RUN(caps_and_owner);
	RUN(zombie_has_no_mm);
	RUN(no_such_process);
	RUN(long_groups_line);
	KXT_EXIT();
}
