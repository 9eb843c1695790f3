/*
 * Workload launch for a capture of a command: the command is forked and held
 * at a pipe so its pid can join the capture's filter before it execs (its
 * first ioctl is traced), then released. A failed exec comes back as the
 * shell's exit codes (127 not found, 126 cannot run) with a message.
 *
 * The command starts with default signal dispositions and an empty signal
 * mask whatever kxprof ignores or blocks, and is killed (SIGKILL) by the
 * kernel if kxprof itself dies without ending it, so it is never left
 * running under init. Ending it on a stop: SIGTERM, then SIGKILL when it has
 * not exited after KX_LAUNCH_GRACE_MS.
 */
#ifndef KX_LAUNCH_H
#define KX_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

struct kx_launch {
	pid_t pid;    /* the command, -1 once reaped (or never started) */
	int go_fd;    /* write end: releases the held child */
	int err_fd;   /* read end: errno of a failed exec */
	int status;   /* wait status once reaped */
	int killed;   /* 1 when it outlived the grace period and got SIGKILL */
	char env[96]; /* "NAME=VALUE" added to the command's environment, "" for none
	                 (set before kx_launch_hold) */
};

/* Time a command has between SIGTERM and SIGKILL when a capture stops, ms. */
#define KX_LAUNCH_GRACE_MS 2000
#define KX_LAUNCH_INIT                                                                             \
	{                                                                                          \
		.pid = -1, .go_fd = -1, .err_fd = -1                                               \
	}

/* Forks argv[0] held before exec. 0, or -1 with err set. */
int kx_launch_hold(struct kx_launch *l, char **argv, char *err, size_t len);
/* Lets the held command exec. 0 when it runs; else 127 (not found) or 126
 * with err "cannot run 'CMD': why", and the child reaped. */
int kx_launch_release(struct kx_launch *l, char **argv, char *err, size_t len);
/* 1 once the command has exited (reaped), else 0. */
int kx_launch_exited(struct kx_launch *l);
/* Ends a command that still runs (SIGTERM, then SIGKILL after
 * KX_LAUNCH_GRACE_MS), reaps it, and returns its exit code as a shell would:
 * the status, or 128 + the signal that ended it. */
int kx_launch_finish(struct kx_launch *l);
/* Kills a held or running command (set-up failed after the fork) and reaps it. */
void kx_launch_abort(struct kx_launch *l);

#endif /* KX_LAUNCH_H */
