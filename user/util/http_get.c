/*
 * Minimal HTTP/1.0 GET client (contract: http_get.h). Owns URL splitting,
 * the connect with a timeout, and the status line and header/body split of
 * the answer.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/grow.h"
#include "util/http_get.h"

#define MAX_BODY (64u << 20)

/* "http://host:port/..." -> host, port. [v6] brackets are stripped. */
static int split_url(const char *url, char *host, size_t hlen, char *port, size_t plen)
{
	const char *p = url, *end, *colon;
	size_t n;

	if (!strncmp(p, "http://", 7))
		p += 7;
	else if (strstr(p, "://"))
		return -1;
	end = p + strcspn(p, "/?");
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb)
			return -1;
		n = (size_t)(rb - p - 1);
		if (n >= hlen)
			return -1;
		memcpy(host, p + 1, n);
		host[n] = 0;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		n = (size_t)((colon ? colon : end) - p);
		if (!n || n >= hlen)
			return -1;
		memcpy(host, p, n);
		host[n] = 0;
	}
	if (colon) {
		n = (size_t)(end - colon - 1);
		if (!n || n >= plen)
			return -1;
		memcpy(port, colon + 1, n);
		port[n] = 0;
	} else {
		snprintf(port, plen, "80");
	}
	return 0;
}

/* The first line of an error answer's body, printable characters only
 * (whoever listens there may send anything). */
static void reason(const char *body, char *out, size_t len)
{
	size_t n = 0;

	for (; *body && *body != '\n' && *body != '\r' && n + 1 < len; body++)
		out[n++] = (*body >= 0x20 && *body < 0x7f) ? *body : '?';
	out[n] = 0;
}

/* Waits for fd to become ready for events; 0, or -1 on timeout/error. */
static int wait_fd(int fd, short events, int timeout_s)
{
	struct pollfd p = {.fd = fd, .events = events};
	int r;

	do
		r = poll(&p, 1, timeout_s * 1000);
	while (r < 0 && errno == EINTR);
	return r == 1 ? 0 : -1;
}

static int dial(const char *host, const char *port, int timeout_s, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	int rc = getaddrinfo(host, port, &hints, &res), fd = -1, e = 0;

	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		socklen_t sl = sizeof(e);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		e = errno;
		if (e == EINPROGRESS && wait_fd(fd, POLLOUT, timeout_s) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0 && e == 0)
			break;
		if (e == EINPROGRESS)
			e = ETIMEDOUT;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "cannot connect to %s:%s: %s (is kxprof serve running?)",
		         host, port, strerror(e ? e : ECONNREFUSED));
	return fd;
}

int kx_http_get(const char *base, const char *path, int timeout_s, char **body, size_t *len,
                char *err, size_t errlen)
{
	char host[256], port[16], why[200], *req = NULL, *buf = NULL, *hdr_end;
	size_t cap = 0, n = 0, sent = 0, reqlen;
	int fd, status = 0, rc = -1;

	*body = NULL;
	*len = 0;
	if (split_url(base, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen, "bad URL '%s' (http://HOST:PORT)", base);
		return -1;
	}
	fd = dial(host, port, timeout_s, err, errlen);
	if (fd < 0)
		return -1;
	if (asprintf(&req, "GET %s HTTP/1.0\r\nHost: %s:%s\r\nConnection: close\r\n\r\n", path,
	             host, port) < 0) {
		req = NULL;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	reqlen = strlen(req);
	while (sent < reqlen) {
		ssize_t w;

		if (wait_fd(fd, POLLOUT, timeout_s)) {
			snprintf(err, errlen, "timeout sending to %s:%s", host, port);
			goto out;
		}
		w = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(err, errlen, "send to %s:%s: %s", host, port, strerror(errno));
			goto out;
		}
		if (w > 0)
			sent += (size_t)w;
	}
	for (;;) {
		ssize_t r;

		if (n + 65536 + 1 > cap) {
			if (cap >= MAX_BODY) {
				snprintf(err, errlen, "answer from %s:%s larger than %u MiB", host,
				         port, MAX_BODY >> 20);
				goto out;
			}
			if (kx_grow_by((void **)&buf, &cap, n, 65536 + 1, 1, 131072)) {
				snprintf(err, errlen, "out of memory reading the answer from %s:%s",
				         host, port);
				goto out;
			}
		}
		if (wait_fd(fd, POLLIN, timeout_s)) {
			snprintf(err, errlen, "timeout reading from %s:%s", host, port);
			goto out;
		}
		r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0) {
			snprintf(err, errlen, "read from %s:%s: %s", host, port, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (!buf) {
		snprintf(err, errlen, "empty answer from %s:%s", host, port);
		goto out;
	}
	buf[n] = 0;
	if (sscanf(buf, "HTTP/%*d.%*d %d", &status) != 1 || !(hdr_end = strstr(buf, "\r\n\r\n"))) {
		snprintf(err, errlen, "not an HTTP answer from %s:%s", host, port);
		goto out;
	}
	if (status != 200) {
		reason(hdr_end + 4, why, sizeof(why));
		snprintf(err, errlen, "HTTP %d from %s:%s%s%s%s", status, host, port, path,
		         why[0] ? ": " : "", why);
		goto out;
	}
	hdr_end += 4;
	*len = n - (size_t)(hdr_end - buf);
	memmove(buf, hdr_end, *len + 1);
	*body = buf;
	buf = NULL;
	rc = 0;
out:
	free(req);
	free(buf);
	close(fd);
	return rc;
}
