/*
 * kxprof serve --listen: who a client is, for the per-client limits of
 * cli/serve_conns.h. A client on this host connects from an address any
 * local user may take (127.0.0.0/8, ::1, the host's own), so it is the user
 * owning its end of the connection, as the kernel reports it (sock_diag:
 * that end is a socket of this network namespace). A client on another host
 * (or in another network namespace) is its address.
 */
#ifndef KX_CLI_SERVE_PEER_H
#define KX_CLI_SERVE_PEER_H

#include <stddef.h>
#include <sys/socket.h>

#define SERVE_CLIENT_LEN 17 /* bytes of a client's identity */

struct serve_client {
	unsigned char id[SERVE_CLIENT_LEN]; /* 'a' + address (IPv4 v4-mapped), or 'u' + uid */
	char name[80];                      /* as text: "10.0.0.2", "local uid 1000" */
};

/* The client of connection fd, whose peer address is peer (NULL: unknown). */
void serve_client_of(int fd, const struct sockaddr *peer, struct serve_client *c);

#endif /* KX_CLI_SERVE_PEER_H */
