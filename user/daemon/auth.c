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

/* Says, with the reason, that the kernel keeps process pid from its own user. */
static int protected(uint32_t pid, const struct kx_procstatus *st, const char *why, char *err,
                     size_t len)
{
	snprintf(err, len,
	         "process %u (%s) %s: the kernel lets no one but root read it (ptrace, perf -p, "
	         "/proc/PID/maps), and kxprof traces it for no one else either",
	         pid, st->name, why);
	return -1;
}

/*
 * The kernel's ptrace read rule (PTRACE_MODE_READ_REALCREDS) for a client
 * that is not root and holds no capability: the target's real, effective,
 * saved and fs uids are the client's, so are its gids, it holds no
 * permitted capability and it is dumpable (its status file is its own, not
 * root's). The kernel-side exec rule is the same (bpf/shared.bpf.h).
 */
static int check_other(const struct kx_peer *p, uint32_t pid, const struct kx_procstatus *st,
                       char *err, size_t len)
{
	long u = (long)p->uid, g = (long)p->gid;

	if (st->kthread == 1 || pid == 2 || st->ppid == 2) {
		snprintf(err, len,
		         "process %u (%s) is a kernel thread: only root may trace kernel threads",
		         pid, st->name);
		return -1;
	}
	if (st->uid[0] != u || st->uid[1] != u) {
		snprintf(err, len,
		         "process %u (%s) runs as uid %ld (effective %ld): you (uid %u) may trace "
		         "only your own processes",
		         pid, st->name, st->uid[0], st->uid[1], (unsigned int)p->uid);
		return -1;
	}
	if (st->uid[2] != u || st->uid[3] != u)
		return protected(pid, st, "keeps another saved or fs uid (it ran a setuid program)",
		                 err, len);
	if (st->gid[0] != g || st->gid[1] != g || st->gid[2] != g || st->gid[3] != g)
		return protected(pid, st,
		                 "runs with a group other than your gid (a setgid program, or "
		                 "another group of yours: run it with your gid to trace it)",
		                 err, len);
	if (!st->cap_prm_known || st->cap_prm != 0)
		return protected(pid, st, "holds capabilities (a file-capability program)", err,
		                 len);
	/* Without memory (exiting) it is owned by root and has nothing to
	 * read: the kernel's rule skips dumpability then, and so does this. */
	if (st->has_mm && st->file_uid != u)
		return protected(pid, st,
		                 "is not dumpable (it asked so with prctl, or changed credentials)",
		                 err, len);
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

/* pid is in t already. */
static int pinned(const struct kx_targets *t, uint32_t pid)
{
	for (int i = 0; i < t->n; i++)
		if (t->t[i].pid == pid)
			return 1;
	return 0;
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
		if (pinned(t, req->pids[i]))
			continue; /* one pidfd per process, however often it is named */
		if (pin_one(p, req->pids[i], &t->t[t->n], err, len)) {
			kx_auth_release(t);
			return -1;
		}
		t->n++;
	}
	return 0;
}

int kx_auth_confirm(const struct kx_peer *p, const struct kx_targets *t, char *err, size_t len)
{
	struct kx_procstatus st;

	for (int i = 0; i < t->n; i++) {
		uint32_t pid = t->t[i].pid;
		/* Read, then alive: the status read is the pinned process's. */
		int read = kx_procstatus_read(pid, &st) == 0;

		if (!pidfd_alive(t->t[i].pidfd) || !read) {
			snprintf(err, len, "process %u exited before the capture began", pid);
			return -1;
		}
		/* An exec between the check and the kernel-side rule's start. */
		if (p->uid != 0 && check_other(p, pid, &st, err, len))
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
