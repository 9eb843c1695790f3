/*
 * kxprof serve --listen: the open HTTP connections and the rules that keep
 * a slot for a scraper whatever other clients do with connections. Owns the
 * table of connections (libmicrohttpd's socket contexts) and its lock.
 *
 * Rules:
 * - Clients are told apart as cli/serve_peer.h says: a local user (the uid
 *   owning the other end of a loopback connection), or a remote address.
 * - A new connection is never kept waiting for a slot: libmicrohttpd
 *   accepts far more than max (the accept backlog stays empty), and when
 *   the new one makes more than max connections, or more than per_client of
 *   its client, one connection is closed to make room: of that client's
 *   when it is over, else of the client holding the most connections; a
 *   connection still waiting for its request headers before one whose
 *   answer has been going out for a second or more; the oldest first (the
 *   least progress). A profile being taken is never closed. With nothing to
 *   close, the new connection is closed. So one client's connections, however
 *   many and however slow, only ever push out its own.
 * - A connection whose request headers are not all in header seconds after
 *   its accept or its previous response is closed, and so is one whose
 *   request is not answered deadline seconds after them (the time the server
 *   works on a profile does not count).
 * Closing is shutdown(2) of the socket; libmicrohttpd then sees the end and
 * frees the connection. Every close is counted and logged.
 */
#ifndef KX_CLI_SERVE_CONNS_H
#define KX_CLI_SERVE_CONNS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cli/serve_peer.h"

/* One open connection. */
struct serve_conn {
	struct serve_conn *prev, *next;
	int fd;                     /* its socket; valid until serve_conns_remove */
	struct serve_client client; /* who it is (a local user or an address) */
	uint64_t start_ns;          /* accept or end of the previous response, monotonic ns */
	uint64_t req_ns;            /* when the request headers were all in; 0: not yet */
	int waiting;                /* the server is working on its answer (a profile): kept */
	int profile;                /* a profile request: one per client */
	int cut;                    /* shut down */
};

struct serve_conns {
	pthread_mutex_t lock;
	struct serve_conn head;  /* list of the open connections, newest first */
	unsigned int max;        /* connections at once (--max-clients) */
	unsigned int per_client; /* of one client (--max-per-client) */
	uint64_t header_ns;      /* --http-header-deadline */
	uint64_t deadline_ns;    /* --http-deadline */
	unsigned long long made_room, refused, header_cut, deadline_cut; /* not logged yet */
};

void serve_conns_init(struct serve_conns *t, unsigned int max, unsigned int per_client,
                      unsigned int header_s, unsigned int deadline_s);
void serve_conns_destroy(struct serve_conns *t);
/* A connection accepted (fd, from peer): in the table, closing another one
 * when the limits say so. NULL when out of memory (then fd is shut down). */
struct serve_conn *serve_conns_add(struct serve_conns *t, int fd, const struct sockaddr *peer);
/* libmicrohttpd closed k: out of the table, freed (NULL is fine). */
void serve_conns_remove(struct serve_conns *t, struct serve_conn *k);
/* k's request headers are all in (repeats are fine). */
void serve_conns_request(struct serve_conns *t, struct serve_conn *k);
/* k's answer went out (or the request ended): its next request's clock starts. */
void serve_conns_done(struct serve_conns *t, struct serve_conn *k);
/* The server works on k's answer (1) or has it ready (0, the clock starts again). */
void serve_conns_waiting(struct serve_conns *t, struct serve_conn *k, int waiting);
/* k asks for a profile: 0, or -1 when a profile is being taken for k's
 * client already. serve_conns_done gives it back. */
int serve_conns_profile(struct serve_conns *t, struct serve_conn *k);
/* Closes the connections past their deadlines and logs what was closed
 * since the last call (now: monotonic ns). */
void serve_conns_tick(struct serve_conns *t, uint64_t now);

#endif /* KX_CLI_SERVE_CONNS_H */
