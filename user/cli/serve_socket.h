/*
 * kxprof serve --socket: the options of the capture daemon for unprivileged
 * users (the daemon itself is user/daemon/), parsed for cmd_serve.c, and
 * starting and stopping it. systemd socket activation (LISTEN_FDS) implies
 * --socket.
 */
#ifndef KX_CLI_SERVE_SOCKET_H
#define KX_CLI_SERVE_SOCKET_H

#include <getopt.h>

struct kx_daemon;

struct serve_socket {
	const char *path;  /* --socket */
	int inherited;     /* fd passed by systemd, -1: none */
	unsigned int mode; /* --socket-mode */
	long gid;          /* --socket-group, -1: unchanged */
	long long max_sessions, max_user;
	double limit, idle, ringbuf_mb;
	long long max_hz; /* --max-sample-hz */
	int user_kernel;  /* --user-kernel (daemon/profiles.h) */
	struct kx_daemon *d;
};

/* The getopt_long entries of these options (their vals are 'S','M','G','N','U','L','I','B',
 * 'H','K'). */
#define SERVE_SOCKET_OPTIONS                                                                       \
	{"socket", required_argument, NULL, 'S'}, {"socket-mode", required_argument, NULL, 'M'},   \
	        {"socket-group", required_argument, NULL, 'G'},                                    \
	        {"max-sessions", required_argument, NULL, 'N'},                                    \
	        {"max-user-sessions", required_argument, NULL, 'U'},                               \
	        {"session-limit", required_argument, NULL, 'L'},                                   \
	        {"idle-timeout", required_argument, NULL, 'I'},                                    \
	        {"session-ringbuf-mb", required_argument, NULL, 'B'},                              \
	        {"max-sample-hz", required_argument, NULL, 'H'},                                   \
	{                                                                                          \
		"user-kernel", required_argument, NULL, 'K'                                        \
	}

/* Their lines of serve --help. */
extern const char serve_socket_usage[];

void serve_socket_defaults(struct serve_socket *s);
/* One option: 1 when it was one of these, 0 when not, -1 after a message. */
int serve_socket_opt(struct serve_socket *s, int opt, const char *arg);
/* Takes a socket systemd passed (then the daemon runs even without --socket).
 * 0, or -1 after a message. */
int serve_socket_inherit(struct serve_socket *s);
/* 1 when the daemon is asked for (--socket or an inherited socket). */
int serve_socket_wanted(const struct serve_socket *s);
/* Starts it (saying where it listens). 0, or -1 after a message. */
int serve_socket_start(struct serve_socket *s, int verbose);
/* Ends every session and stops listening. */
void serve_socket_stop(struct serve_socket *s);

#endif /* KX_CLI_SERVE_SOCKET_H */
