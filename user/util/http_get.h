/*
 * A minimal HTTP/1.0 GET client for talking to a running `kxprof serve`
 * (kxprof report --from): one request, Connection: close, whole body read
 * into memory with a size cap and a timeout. Plain http only; not a general
 * client (no redirects, no chunked encoding: the server answers HTTP/1.0
 * requests with a plain body).
 */
#ifndef KX_HTTP_GET_H
#define KX_HTTP_GET_H

#include <stddef.h>

/*
 * GETs base (http://HOST:PORT, optional trailing path ignored) + path
 * ("/summary.json?reset=1"). On 200: returns 0 and *body (malloc'd,
 * NUL-terminated) / *len. Else -1 with err set ("cannot connect to
 * 127.0.0.1:9464: Connection refused", "HTTP 404 from ...").
 */
int kx_http_get(const char *base, const char *path, int timeout_s, char **body, size_t *len,
                char *err, size_t errlen);

#endif /* KX_HTTP_GET_H */
