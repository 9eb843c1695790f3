/* Connections waiting for their request (contract: pending.h). */
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "capture/clock.h"
#include "daemon/pending.h"

static struct {
	pthread_mutex_t lock;
	struct kx_pending *p[KX_PENDING_MAX];
} list = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Nothing waits unread on the connection's socket. */
static int nothing_unread(const struct kx_pending *p)
{
	int n = 0;

	return ioctl(p->fd, FIONREAD, &n) == 0 && n == 0;
}

/* The client is gone already: it closed its end or its process exited. */
static int client_gone(const struct kx_pending *p)
{
	struct pollfd pf = {.fd = p->fd, .events = POLLRDHUP};

	return (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) ||
	       !kx_peer_alive(p->peer);
}

/* The entry to evict: a gone client's first, else the one waiting longest
 * with nothing unread; -1 when none may go. Under the lock. */
static int victim(void)
{
	int oldest = -1;

	for (int i = 0; i < KX_PENDING_MAX; i++)
		if (client_gone(list.p[i]))
			return i;
	for (int i = 0; i < KX_PENDING_MAX; i++)
		if (nothing_unread(list.p[i]) &&
		    (oldest < 0 || list.p[i]->since < list.p[oldest]->since))
			oldest = i;
	return oldest;
}

void kx_pending_enter(struct kx_pending *p)
{
	int slot = -1;

	p->since = kx_mono_ns();
	p->evicted = 0;
	pthread_mutex_lock(&list.lock);
	for (int i = 0; i < KX_PENDING_MAX && slot < 0; i++)
		if (!list.p[i])
			slot = i;
	if (slot < 0 && (slot = victim()) >= 0) {
		list.p[slot]->evicted = 1;
		shutdown(list.p[slot]->fd, SHUT_RD);
	}
	if (slot >= 0)
		list.p[slot] = p;
	pthread_mutex_unlock(&list.lock);
}

int kx_pending_leave(struct kx_pending *p)
{
	int evicted;

	pthread_mutex_lock(&list.lock);
	for (int i = 0; i < KX_PENDING_MAX; i++)
		if (list.p[i] == p)
			list.p[i] = NULL;
	evicted = p->evicted;
	pthread_mutex_unlock(&list.lock);
	return evicted;
}
