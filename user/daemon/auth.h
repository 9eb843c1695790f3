/*
 * Who is asking and what they may trace, decided on the kernel's word
 * alone, never on anything the client says about itself: the peer's uid,
 * gid and pid from SO_PEERCRED at connect, and a pidfd of the peer
 * (SO_PEERPIDFD, Linux 6.5+, else pidfd_open of its pid) to notice its death
 * even when a child inherited the socket. Each target process is pinned with
 * a pidfd before its credentials are read from /proc and confirmed alive
 * after the pid set holds it, so a recycled pid cannot redirect a session.
 *
 * Rules: a root client may ask what `kxprof record` may. Any other client
 * may trace only processes the kernel lets it read (ptrace's
 * PTRACE_MODE_READ_REALCREDS for a client without capabilities): real,
 * effective, saved and fs uid its own, all four gids its gid, no permitted
 * capability, dumpable. Their descendants follow while they keep that uid,
 * and leave for good at an exec that breaks the rule (a setuid, setgid or
 * file-capability program): the kernel-side filter checks both,
 * capture/session.h. Never -a, pid 1 or a kernel thread. A pid named twice
 * is pinned once.
 */
#ifndef KX_DAEMON_AUTH_H
#define KX_DAEMON_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/daemon_wire.h"

/* The process at the other end of a connection. */
struct kx_peer {
	pid_t pid; /* in the daemon's pid namespace */
	uid_t uid;
	gid_t gid;
	int pidfd; /* -1 when the kernel gave none */
};

/* Credentials of the peer of connected socket fd. 0, or -1 with err. */
int kx_peer_get(int fd, struct kx_peer *p, char *err, size_t len);
/* 1 while the peer process lives (or cannot be watched). */
int kx_peer_alive(const struct kx_peer *p);
void kx_peer_release(struct kx_peer *p);

/* The processes a session traces, each pinned. */
struct kx_target {
	uint32_t pid;
	int pidfd;
};
struct kx_targets {
	struct kx_target t[KX_DW_PIDS_MAX];
	int n;
};

/* Checks the request against the rules and pins each pid into t. 0, or -1
 * with the one-line reason for the client (nothing left pinned). */
int kx_auth_check(const struct kx_peer *p, const struct kx_dw_request *req, struct kx_targets *t,
                  char *err, size_t len);
/* After the capture holds the pids (and its exec rule runs): each pinned
 * process still lives, so the process checked is the process traced, and
 * still passes the rules (an exec in between is caught). 0, or -1 naming
 * one that exited or broke the rules. */
int kx_auth_confirm(const struct kx_peer *p, const struct kx_targets *t, char *err, size_t len);
void kx_auth_release(struct kx_targets *t);

#endif /* KX_DAEMON_AUTH_H */
