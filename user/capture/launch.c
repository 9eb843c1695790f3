/* Workload launch: fork, hold at a pipe, release to exec, reap. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/launch.h"

/* In the child: what kxprof set for itself (handlers, ignored or blocked
 * signals) is not the command's; it dies with kxprof. 0, or -1 when kxprof
 * is already gone. */
static int child_signals(pid_t parent)
{
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
	                           SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD};
	sigset_t none;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		return 0; /* not fatal: kxprof still ends it on every stop it sees */
	return getppid() == parent ? 0 : -1;
}

/* In the child: wait for the go byte, then exec; a failed exec sends its errno. */
static void child_run(char **argv, char *env, int go_fd, int err_fd, pid_t parent)
{
	char b;
	int e;

	if (child_signals(parent) || read(go_fd, &b, 1) != 1)
		_exit(127);
	if (env[0] && putenv(env))
		_exit(127);
	execvp(argv[0], argv);
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static void close_pair(int p[2])
{
	close(p[0]);
	close(p[1]);
}

int kx_launch_hold(struct kx_launch *l, char **argv, char *err, size_t len)
{
	int go[2], fail[2];
	pid_t parent = getpid();

	l->pid = -1;
	l->status = 0;
	l->killed = 0;
	l->go_fd = l->err_fd = -1;
	if (pipe2(go, O_CLOEXEC)) {
		snprintf(err, len, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(fail, O_CLOEXEC)) {
		snprintf(err, len, "cannot create a pipe: %s", strerror(errno));
		close_pair(go);
		return -1;
	}
	l->pid = fork();
	if (l->pid < 0) {
		snprintf(err, len, "cannot fork: %s", strerror(errno));
		close_pair(go);
		close_pair(fail);
		return -1;
	}
	if (l->pid == 0) {
		close(go[1]);
		close(fail[0]);
		child_run(argv, l->env, go[0], fail[1], parent);
	}
	close(go[0]);
	close(fail[1]);
	l->go_fd = go[1];
	l->err_fd = fail[0];
	return 0;
}

int kx_launch_release(struct kx_launch *l, char **argv, char *err, size_t len)
{
	int e = 0;
	ssize_t n;

	if (write(l->go_fd, "g", 1) != 1) {
		e = EPIPE;
	} else {
		close(l->go_fd);
		l->go_fd = -1;
		n = read(l->err_fd, &e, sizeof(e));
		if (n != (ssize_t)sizeof(e))
			e = 0;
	}
	if (l->go_fd >= 0)
		close(l->go_fd);
	close(l->err_fd);
	l->go_fd = l->err_fd = -1;
	if (!e)
		return 0;
	snprintf(err, len, "cannot run '%s': %s", argv[0], strerror(e));
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
	return e == ENOENT ? 127 : 126;
}

int kx_launch_exited(struct kx_launch *l)
{
	if (l->pid > 0 && waitpid(l->pid, &l->status, WNOHANG) == l->pid)
		l->pid = -1;
	return l->pid <= 0;
}

/* Waits up to ms for the command to exit. 1 once reaped. */
static int wait_for(struct kx_launch *l, int ms)
{
	struct timespec nap = {0, 20 * 1000000};

	for (int waited = 0; waited < ms; waited += 20) {
		if (kx_launch_exited(l))
			return 1;
		nanosleep(&nap, NULL);
	}
	return kx_launch_exited(l);
}

int kx_launch_finish(struct kx_launch *l)
{
	if (l->pid > 0) {
		/* Stopped by a signal or a time limit while the command still runs. */
		kill(l->pid, SIGTERM);
		if (!wait_for(l, KX_LAUNCH_GRACE_MS)) {
			kill(l->pid, SIGKILL);
			l->killed = 1;
			waitpid(l->pid, &l->status, 0);
			l->pid = -1;
		}
	}
	if (WIFEXITED(l->status))
		return WEXITSTATUS(l->status);
	if (WIFSIGNALED(l->status))
		return 128 + WTERMSIG(l->status);
	return 0;
}

void kx_launch_abort(struct kx_launch *l)
{
	if (l->go_fd >= 0) {
		close(l->go_fd);
		close(l->err_fd);
		l->go_fd = l->err_fd = -1;
	}
	if (l->pid <= 0)
		return;
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
}
