/* Peer credentials and target authorisation (contract: auth.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/auth.h"
#include "util/procstatus.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5, asm-generic/socket.h */
#endif

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* 1 while the process behind pidfd has not been reaped. */
static int pidfd_alive(int fd)
{
	return syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0 || errno == EPERM;
}

int kx_peer_get(int fd, struct kx_peer *p, char *err, size_t len)
{
	struct ucred uc;
	socklen_t sl = sizeof(uc);
	int pfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl) != 0 || sl != sizeof(uc)) {
		snprintf(err, len, "cannot read the client's credentials: %s", strerror(errno));
		return -1;
	}
	sl = sizeof(pfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &sl) != 0 || pfd < 0)
		pfd = uc.pid > 0 ? pidfd_open(uc.pid) : -1;
	p->pid = uc.pid;
	p->uid = uc.uid;
	p->gid = uc.gid;
	p->pidfd = pfd < 0 ? -1 : pfd;
	return 0;
}

int kx_peer_alive(const struct kx_peer *p)
{
	struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};

	/* A pidfd turns readable when its process exits. */
	return p->pidfd < 0 || poll(&pfd, 1, 0) == 0;
}

void kx_peer_release(struct kx_peer *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

/* The rules for one pinned process of a client that is not root. */
static int check_other(const struct kx_peer *p, uint32_t pid, const struct kx_procstatus *st,
                       char *err, size_t len)
{
	if (st->kthread == 1 || pid == 2 || st->ppid == 2) {
		snprintf(err, len,
		         "process %u (%s) is a kernel thread: only root may trace kernel threads",
		         pid, st->name);
		return -1;
	}
	if (st->uid[0] != (long)p->uid || st->uid[1] != (long)p->uid) {
		snprintf(err, len,
		         "process %u (%s) runs as uid %ld (effective %ld): you (uid %u) may trace "
		         "only your own processes",
		         pid, st->name, st->uid[0], st->uid[1], (unsigned int)p->uid);
		return -1;
	}
	return 0;
}

/* Pins pid into t and checks it. 0, or -1 with err (t unchanged). */
static int pin_one(const struct kx_peer *p, uint32_t pid, struct kx_target *t, char *err,
                   size_t len)
{
	struct kx_procstatus st;
	int fd;

	if (pid == 1 && p->uid != 0) {
		snprintf(err, len, "pid 1 (init) is never traced for a user other than root");
		return -1;
	}
	fd = pidfd_open((pid_t)pid);
	if (fd < 0 && errno == ENOENT && kx_procstatus_read(pid, &st) == 0 &&
	    st.tgid != (long)pid) {
		/* pidfd_open takes processes only (before PIDFD_THREAD). */
		snprintf(err, len, "%u is a thread of process %ld: give the process id", pid,
		         st.tgid);
		return -1;
	}
	if (fd < 0) {
		snprintf(err, len,
		         errno == ESRCH ? "no such process: %u" : "cannot pin process %u: %s", pid,
		         strerror(errno));
		return -1;
	}
	/* Pinned first, read second, alive third: the status read is the pinned process's. */
	if (kx_procstatus_read(pid, &st) != 0 || !pidfd_alive(fd)) {
		snprintf(err, len, "no such process: %u", pid);
		goto fail;
	}
	if (st.tgid != (long)pid) {
		snprintf(err, len, "%u is a thread of process %ld: give the process id", pid,
		         st.tgid);
		goto fail;
	}
	if (p->uid != 0 && check_other(p, pid, &st, err, len))
		goto fail;
	t->pid = pid;
	t->pidfd = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

int kx_auth_check(const struct kx_peer *p, const struct kx_dw_request *req, struct kx_targets *t,
                  char *err, size_t len)
{
	t->n = 0;
	if (req->all && p->uid != 0) {
		snprintf(err, len,
		         "-a (every process) needs root: trace your own processes (-p PID or a "
		         "command)");
		return -1;
	}
	if (!req->all && req->npids == 0) {
		snprintf(err, len, "nothing to trace: the request names no process");
		return -1;
	}
	for (int i = 0; i < req->npids; i++) {
		if (pin_one(p, req->pids[i], &t->t[t->n], err, len)) {
			kx_auth_release(t);
			return -1;
		}
		t->n++;
	}
	return 0;
}

int kx_auth_confirm(const struct kx_targets *t, char *err, size_t len)
{
	for (int i = 0; i < t->n; i++)
		if (!pidfd_alive(t->t[i].pidfd)) {
			snprintf(err, len, "process %u exited before the capture began",
			         t->t[i].pid);
			return -1;
		}
	return 0;
}

void kx_auth_release(struct kx_targets *t)
{
	for (int i = 0; i < t->n; i++)
		close(t->t[i].pidfd);
	t->n = 0;
}
