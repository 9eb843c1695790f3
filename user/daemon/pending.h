/*
 * Connections waiting for their request, all sessions of the daemon
 * process together: at most KX_PENDING_MAX are listed. A new one evicts one
 * whose client is gone, else the one waiting longest among those with
 * nothing unread (a request that arrived but was not read yet is never
 * lost), so idle connections, of any number of uids, cannot hold out a
 * client that sends its request at once. When every listed one has
 * something unread, the new one waits unlisted. Eviction shuts the reading
 * side of the socket: the waiting thread's read ends, and it says why.
 */
#ifndef KX_DAEMON_PENDING_H
#define KX_DAEMON_PENDING_H

#include <stdint.h>

#include "daemon/auth.h"

#define KX_PENDING_MAX 8

/* One waiting connection; its fd stays open while it is listed. */
struct kx_pending {
	int fd;
	const struct kx_peer *peer;
	uint64_t since; /* kx_mono_ns when it began waiting */
	int evicted;    /* set under the registry's lock */
};

/* Lists p (fd and peer set), evicting another if the list is full. */
void kx_pending_enter(struct kx_pending *p);
/* Unlists p. 1 when it was evicted (its reading side is shut). */
int kx_pending_leave(struct kx_pending *p);

#endif /* KX_DAEMON_PENDING_H */
