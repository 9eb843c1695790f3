/* The open HTTP connections of kxprof serve and their limits (see serve_conns.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/clock.h"
#include "cli/serve_conns.h"

#define STALLED_NS 1000000000ull /* an answer going out this long may be closed for room */

void serve_conns_init(struct serve_conns *t, unsigned int max, unsigned int per_client,
                      unsigned int header_s, unsigned int deadline_s)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->head.next = t->head.prev = &t->head;
	t->max = max;
	t->per_client = per_client;
	t->header_ns = (uint64_t)header_s * 1000000000ull;
	t->deadline_ns = (uint64_t)deadline_s * 1000000000ull;
}

void serve_conns_destroy(struct serve_conns *t)
{
	pthread_mutex_destroy(&t->lock);
}

static void cut(struct serve_conn *k)
{
	shutdown(k->fd, SHUT_RDWR);
	k->cut = 1;
}

/* How far k is from its answer, for closing: 0 waiting for its request
 * headers, 1 its answer going out for STALLED_NS or more, -1 kept. */
static int tier(const struct serve_conn *k, uint64_t now)
{
	if (k->cut || k->waiting)
		return -1;
	if (!k->req_ns)
		return 0;
	return now - k->req_ns >= STALLED_NS ? 1 : -1;
}

/* Open connections (not cut) of client id (NULL: all). */
static unsigned int count(const struct serve_conns *t, const unsigned char *id)
{
	unsigned int n = 0;

	for (const struct serve_conn *k = t->head.next; k != &t->head; k = k->next)
		n += !k->cut && (!id || !memcmp(k->client.id, id, SERVE_CLIENT_LEN));
	return n;
}

/* Whether k is a better connection to close than best (n: connections of
 * k's client, bn: of best's; only when choosing among every client). */
static int worse(const struct serve_conn *k, int tk, unsigned int n, const struct serve_conn *best,
                 int tb, unsigned int bn)
{
	if (!best || n != bn)
		return !best || n > bn;
	if (tk != tb)
		return tk < tb;
	return k->start_ns < best->start_ns;
}

/* The connection to close for room (never nk): of client id's when given,
 * else of the busiest client; NULL when none may be closed. */
static struct serve_conn *victim(struct serve_conns *t, const struct serve_conn *nk,
                                 const unsigned char *id, uint64_t now)
{
	struct serve_conn *best = NULL;
	unsigned int bn = 0;
	int tb = 0;

	for (struct serve_conn *k = t->head.next; k != &t->head; k = k->next) {
		int tk = tier(k, now);
		unsigned int n;

		if (k == nk || tk < 0 || (id && memcmp(k->client.id, id, SERVE_CLIENT_LEN)))
			continue;
		n = id ? 0 : count(t, k->client.id);
		if (worse(k, tk, n, best, tb, bn)) {
			best = k;
			bn = n;
			tb = tk;
		}
	}
	return best;
}

/* Closes connections until nk fits the limits, or nk when nothing may go. */
static void make_room(struct serve_conns *t, struct serve_conn *nk, uint64_t now)
{
	for (;;) {
		int over_client = count(t, nk->client.id) > t->per_client;
		struct serve_conn *v;

		if (!over_client && count(t, NULL) <= t->max)
			return;
		v = victim(t, nk, over_client ? nk->client.id : NULL, now);
		if (!v) {
			cut(nk);
			t->refused++;
			return;
		}
		cut(v);
		t->made_room++;
	}
}

struct serve_conn *serve_conns_add(struct serve_conns *t, int fd, const struct sockaddr *peer)
{
	struct serve_conn *k = calloc(1, sizeof(*k));

	if (!k) {
		/* Without its deadlines it could hold a slot: refuse it. */
		shutdown(fd, SHUT_RDWR);
		return NULL;
	}
	k->fd = fd;
	serve_client_of(fd, peer, &k->client);
	pthread_mutex_lock(&t->lock);
	k->start_ns = kx_mono_ns();
	k->next = t->head.next;
	k->prev = &t->head;
	k->next->prev = k;
	t->head.next = k;
	make_room(t, k, k->start_ns);
	pthread_mutex_unlock(&t->lock);
	return k;
}

void serve_conns_remove(struct serve_conns *t, struct serve_conn *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&t->lock);
	k->prev->next = k->next;
	k->next->prev = k->prev;
	pthread_mutex_unlock(&t->lock);
	free(k);
}

void serve_conns_request(struct serve_conns *t, struct serve_conn *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&t->lock);
	if (!k->req_ns)
		k->req_ns = kx_mono_ns();
	pthread_mutex_unlock(&t->lock);
}

void serve_conns_done(struct serve_conns *t, struct serve_conn *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&t->lock);
	k->start_ns = kx_mono_ns();
	k->req_ns = 0;
	k->profile = 0;
	k->waiting = 0;
	pthread_mutex_unlock(&t->lock);
}

void serve_conns_waiting(struct serve_conns *t, struct serve_conn *k, int waiting)
{
	if (!k)
		return;
	pthread_mutex_lock(&t->lock);
	k->waiting = waiting;
	if (!waiting) /* the answer starts going out now */
		k->start_ns = k->req_ns = kx_mono_ns();
	pthread_mutex_unlock(&t->lock);
}

int serve_conns_profile(struct serve_conns *t, struct serve_conn *k)
{
	int rc = 0;

	if (!k)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (const struct serve_conn *o = t->head.next; o != &t->head; o = o->next)
		if (o != k && o->profile && !memcmp(o->client.id, k->client.id, SERVE_CLIENT_LEN))
			rc = -1;
	if (!rc)
		k->profile = 1;
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static void log_closed(unsigned long long n, const char *what)
{
	if (n)
		fprintf(stderr, "kxprof serve: closed %llu connection%s %s\n", n, n > 1 ? "s" : "",
		        what);
}

void serve_conns_tick(struct serve_conns *t, uint64_t now)
{
	unsigned long long room, refused, header, late;
	char what[160];

	pthread_mutex_lock(&t->lock);
	for (struct serve_conn *k = t->head.next; k != &t->head; k = k->next) {
		if (k->cut || k->waiting)
			continue;
		if (!k->req_ns && now - k->start_ns >= t->header_ns) {
			cut(k);
			t->header_cut++;
		} else if (now - k->start_ns >= t->deadline_ns) {
			cut(k);
			t->deadline_cut++;
		}
	}
	room = t->made_room;
	refused = t->refused;
	header = t->header_cut;
	late = t->deadline_cut;
	t->made_room = t->refused = t->header_cut = t->deadline_cut = 0;
	pthread_mutex_unlock(&t->lock);
	snprintf(what, sizeof(what), "without request headers within %.0f s",
	         (double)t->header_ns / 1e9);
	log_closed(header, what);
	snprintf(what, sizeof(what), "past the request deadline (%.0f s)",
	         (double)t->deadline_ns / 1e9);
	log_closed(late, what);
	snprintf(what, sizeof(what),
	         "with the least progress to make room for new ones (%u at once, %u per client)",
	         t->max, t->per_client);
	log_closed(room, what);
	log_closed(refused, "at once: every slot was busy answering (--max-clients)");
}
