/*
 * The Chrome trace exporter's buffered JSON writer: a buffer of WBUF_SIZE
 * bytes handed on whole to a plain file, to the gzip writer (util/pgz.h,
 * whose 1 MiB blocks it fills in place) or to a growing buffer (a worker's
 * piece of the trace); JSON strings escaped into it (util/json.h), and
 * numbers formatted by hand (snprintf would dominate the run time). The
 * appends that do not check for room (put_*) follow a wb_need.
 */
#ifndef KX_CHROME_JSON_H
#define KX_CHROME_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/grow.h"
#include "util/json.h"
#include "util/pgz.h"

#define WBUF_SIZE (1u << 20)
#define EV_ROOM   1024                        /* bytes the fixed part of one event may take */
#define STR_MAX   ((WBUF_SIZE - EV_ROOM) / 6) /* longest string escaped in one go */

struct wbuf {
	char *buf;  /* where events go: own, or the gzip writer's block */
	char *own;  /* WBUF_SIZE bytes for plain output */
	size_t len; /* bytes in buf */
	int fd;     /* plain output */
	struct kx_pgz *gz;
	int err;              /* errno of the first failure, 0 while fine */
	char zmsg[128];       /* zlib's own message when the failure is not an errno */
	uint64_t bytes;       /* uncompressed bytes written */
	struct kx_bytes *mem; /* instead of fd: a worker's piece, appended here */
};

/* Hands the buffer on; last: it ends the output. */
void wb_flush_end(struct wbuf *w, int last);
/* Hands on what the buffer holds, if anything. */
void wb_flush(struct wbuf *w);

/* Guarantees n bytes of room (n <= WBUF_SIZE). */
static inline void wb_need(struct wbuf *w, size_t n)
{
	if (WBUF_SIZE - w->len < n)
		wb_flush(w);
}

/* Unchecked appends: the caller made room with wb_need. */
static inline void put_mem(struct wbuf *w, const char *p, size_t n)
{
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}
#define PUT_LIT(w, lit) put_mem(w, lit, sizeof(lit) - 1)

static inline void put_u64(struct wbuf *w, uint64_t v)
{
	w->len = (size_t)(kx_json_put_u64(w->buf + w->len, v) - w->buf);
}

static inline void put_i64(struct wbuf *w, int64_t v)
{
	w->len = (size_t)(kx_json_put_i64(w->buf + w->len, v) - w->buf);
}

/* ns as microseconds with 3 decimals: exact, no floating point. */
static inline void put_us(struct wbuf *w, uint64_t ns)
{
	uint64_t frac = ns % 1000;

	put_u64(w, ns / 1000);
	w->buf[w->len] = '.';
	w->buf[w->len + 1] = (char)('0' + frac / 100);
	w->buf[w->len + 2] = (char)('0' + frac / 10 % 10);
	w->buf[w->len + 3] = (char)('0' + frac % 10);
	w->len += 4;
}

static inline void put_hex(struct wbuf *w, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int i = 16;

	do {
		tmp[--i] = digits[v & 15];
		v >>= 4;
	} while (v);
	PUT_LIT(w, "0x");
	put_mem(w, tmp + i, (size_t)(16 - i));
}

/* A number, ns as µs: with their own room. */
static inline void wb_u64(struct wbuf *w, uint64_t v)
{
	wb_need(w, KX_JSON_NUM_ROOM);
	put_u64(w, v);
}

static inline void wb_us(struct wbuf *w, uint64_t ns)
{
	wb_need(w, KX_JSON_NUM_ROOM + 4);
	put_us(w, ns);
}

/* Whether a trace written to path is gzipped: its name ends in .gz. */
static inline int wb_gz_path(const char *path)
{
	size_t n = strlen(path);

	return n >= 3 && !strcmp(path + n - 3, ".gz");
}

/* A JSON string of s[0..n) (at most STR_MAX bytes of it). */
void wb_strn(struct wbuf *w, const char *s, size_t n);
void wb_str(struct wbuf *w, const char *s);
/* A char array from the capture header, which may lack its terminator. */
void wb_field(struct wbuf *w, const char *s, size_t size);
/* Text as it is (room made). */
void wb_lit(struct wbuf *w, const char *s);
/* The separator before an event: none before the array's first (*first
 * then cleared), a newline each. */
void wb_sep(struct wbuf *w, int *first);
/* Text of any size as it is, in pieces (ctx: the struct wbuf). */
void wb_text(void *ctx, const char *p, size_t n);

#endif /* KX_CHROME_JSON_H */
