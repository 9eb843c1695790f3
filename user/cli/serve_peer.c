/* Who an HTTP client is: its address, or its local user (see serve_peer.h). */
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/serve_peer.h"

static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* addr as 16 bytes (IPv4 v4-mapped) and its port; -1 for another family. */
static int addr16(const struct sockaddr *sa, unsigned char out[16], uint16_t *port)
{
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;

		memcpy(out, v4mapped, sizeof(v4mapped));
		memcpy(out + 12, &a->sin_addr, 4);
		*port = a->sin_port;
		return 0;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;

		memcpy(out, &a->sin6_addr, 16);
		*port = a->sin6_port;
		return 0;
	}
	return -1;
}

/* The inet_diag request for the socket at the other end: its source is
 * the peer, its destination us. */
struct diag_req {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 r;
};

static void diag_fill(struct diag_req *q, const unsigned char peer[16], uint16_t pport,
                      const unsigned char self[16], uint16_t sport)
{
	int v4 = !memcmp(peer, v4mapped, 12) && !memcmp(self, v4mapped, 12);

	memset(q, 0, sizeof(*q));
	q->nlh.nlmsg_len = sizeof(*q);
	q->nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q->nlh.nlmsg_flags = NLM_F_REQUEST;
	q->r.sdiag_family = v4 ? AF_INET : AF_INET6;
	q->r.sdiag_protocol = IPPROTO_TCP;
	q->r.idiag_states = ~0u;
	q->r.id.idiag_sport = pport;
	q->r.id.idiag_dport = sport;
	memcpy(q->r.id.idiag_src, v4 ? peer + 12 : peer, v4 ? 4 : 16);
	memcpy(q->r.id.idiag_dst, v4 ? self + 12 : self, v4 ? 4 : 16);
	q->r.id.idiag_cookie[0] = q->r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

/* The uid owning the local socket connected to us from peer. 0, or -1. */
static int peer_uid(int fd, const unsigned char peer[16], uint16_t pport, uint32_t *uid)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned char self[16];
	uint16_t sport;
	struct diag_req q;
	union {
		struct nlmsghdr h;
		char b[1024];
	} ans;
	const struct timeval tv = {1, 0};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	const struct inet_diag_msg *m;
	int nl, rc = -1;
	ssize_t n;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    addr16((struct sockaddr *)&ss, self, &sport))
		return -1;
	diag_fill(&q, peer, pport, self, sport);
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(nl, &q, sizeof(q), 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
	    (ssize_t)sizeof(q)) {
		n = recv(nl, &ans, sizeof(ans), 0);
		m = NLMSG_DATA(&ans.h);
		if (n >= (ssize_t)NLMSG_LENGTH(sizeof(*m)) && NLMSG_OK(&ans.h, (size_t)n) &&
		    ans.h.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			*uid = m->idiag_uid;
			rc = 0;
		}
	}
	close(nl);
	return rc;
}

void serve_client_of(int fd, const struct sockaddr *peer, struct serve_client *c)
{
	unsigned char a[16];
	uint16_t port;
	uint32_t uid;

	memset(c, 0, sizeof(*c));
	if (addr16(peer, a, &port)) {
		c->id[0] = 'a';
		snprintf(c->name, sizeof(c->name), "unknown address");
		return;
	}
	/* Only a socket of this host can be found: a remote peer is its address. */
	if (peer_uid(fd, a, port, &uid) == 0) {
		c->id[0] = 'u';
		memcpy(c->id + 1, &uid, sizeof(uid));
		snprintf(c->name, sizeof(c->name), "local uid %u", uid);
		return;
	}
	c->id[0] = 'a';
	memcpy(c->id + 1, a, 16);
	if (!memcmp(a, v4mapped, 12))
		inet_ntop(AF_INET, a + 12, c->name, sizeof(c->name));
	else
		inet_ntop(AF_INET6, a, c->name, sizeof(c->name));
}
