/*
 * One client of the daemon, from its connection to the end of its session:
 * reads the request within the idle limit, authorises it (daemon/auth.h),
 * opens the capture with the same core set-up as `kxprof record`
 * (capture/setup.h) but with the record file's bytes streamed to the client
 * and, for a client that is not root, the kernel-side uid rule; starts it
 * when asked; then watches for STOP, the client's disconnect or death, the
 * session's time limit and the daemon's shutdown. A stop writes the trailer
 * and an END with the final facts; anything else aborts. Either way every fd
 * and BPF object of the session is released before it returns.
 *
 * Runs on a thread of its own, so a slow or stuck client holds up only
 * itself. Back-pressure: the session's consumer thread writes the stream
 * into the socket and waits while the client does not read; its ring buffer
 * then fills and the BPF side counts the drops of that session alone
 * (received + dropped == emitted holds). A client that reads nothing for
 * the idle limit is cut off. A malformed, truncated or oversized message
 * closes that client with an ERROR saying why.
 */
#ifndef KX_DAEMON_CONN_H
#define KX_DAEMON_CONN_H

#include <stdatomic.h>
#include <stdint.h>

#include "daemon/auth.h"
#include "daemon/profiles.h"

/* What every session of a daemon shares. */
struct kx_conn_cfg {
	double max_seconds;               /* session time limit, 0: none */
	double idle_seconds;              /* request wait; longest stall of a client's reads */
	uint32_t max_ringbuf_bytes;       /* a request may ask up to this */
	uint32_t default_ringbuf_bytes;   /* when it asks nothing */
	struct kx_profile_rules profiles; /* CPU samples, off-CPU stacks, counters */
	int verbose;                      /* libbpf diagnostics */
	atomic_int *shutdown;             /* set: end every session (stop, END, close) */
	void (*log)(void *ctx, const char *line); /* one line per session start and end */
	void *log_ctx;
};

/* Raises the process's soft limit on open files to its hard limit (once;
 * the first session does it if the daemon did not). Every session checks
 * that its fds leave a reserve, and refuses cleanly when they would not. */
void kx_conn_limits(void);

/* Serves the client on connected socket fd until its session is over, then
 * closes fd. peer: its credentials (released here); id: for the log.
 * Limits: a request within 5 s (or the idle limit), at most
 * KX_PENDING_MAX connections of all users listed as waiting for theirs
 * (daemon/pending.h); a request string with a control character is
 * refused, and the log escapes any; devices are resolved with the client's
 * file-system identity. */
void kx_conn_serve(int fd, struct kx_peer *peer, uint64_t id, const struct kx_conn_cfg *cfg);

#endif /* KX_DAEMON_CONN_H */
