/*
 * The daemon's listener (kxprof serve --socket): a Unix stream socket, bound
 * at a path with the given mode and group or inherited from systemd (socket
 * activation: LISTEN_FDS/LISTEN_PID, fd 3). It accepts clients, enforces the
 * session limits in total and per uid (counted from the accept, before any
 * request is read, so idle connections count too) and serves each client on
 * a thread of its own (daemon/conn.h). Stopping closes the listener, asks
 * every session to end (each gets its trailer and END) and waits for them.
 */
#ifndef KX_DAEMON_SERVER_H
#define KX_DAEMON_SERVER_H

#include <stddef.h>

#include "daemon/conn.h"

struct kx_daemon_opts {
	const char *path;        /* socket path (bound here unless listen_fd >= 0) */
	int listen_fd;           /* an inherited listening socket, -1: bind path */
	unsigned int mode;       /* file mode of a bound socket (0666: any local user) */
	long gid;                /* its group, -1: the daemon's own */
	int max_sessions;        /* connections at once, in total */
	int max_per_uid;         /* connections at once, per client uid */
	struct kx_conn_cfg conn; /* every session's settings (shutdown is the daemon's) */
};

struct kx_daemon;

/* Listens and serves on a thread of its own. NULL with err. */
struct kx_daemon *kx_daemon_start(const struct kx_daemon_opts *o, char *err, size_t len);
/* Sessions (connections) being served now. */
int kx_daemon_sessions(struct kx_daemon *d);
/* Ends every session cleanly, stops listening (removes a socket file it
 * bound), waits for the sessions' threads. NULL: nothing to do. */
void kx_daemon_stop(struct kx_daemon *d);

/*
 * systemd socket activation: 1 with *fd (3) when LISTEN_PID is this process
 * and LISTEN_FDS passes one listening Unix stream socket; 0 when nothing was
 * passed; -1 with err when what was passed is unusable. The variables are
 * removed (children must not take them for theirs).
 */
int kx_daemon_inherited(int *fd, char *err, size_t len);

#endif /* KX_DAEMON_SERVER_H */
