/*
 * The Chrome trace exporter's buffered JSON writer (see chrome_json.h):
 * where a full buffer goes, and the appends that make their own room.
 */
#include <errno.h>

#include "export/chrome_json.h"
#include "util/fdio.h"

static void wb_write(struct wbuf *w, const char *p, size_t n)
{
	if (!w->err)
		w->err = kx_write_all(w->fd, p, n);
}

void wb_flush_end(struct wbuf *w, int last)
{
	w->bytes += w->len;
	if (w->gz && w->err) {
		/* Failed: nothing more to compress, the error is reported at the end. */
	} else if (w->gz && w->buf != w->own) {
		kx_pgz_put(w->gz, w->len, last);
		w->buf = last ? w->own : kx_pgz_next(w->gz);
		if (!w->err)
			w->err = kx_pgz_error(w->gz);
		if (!w->buf) {
			/* Out of memory: events go nowhere until the failure is reported. */
			w->buf = w->own;
			if (!w->err)
				w->err = ENOMEM;
		}
	} else if (w->mem) {
		kx_bytes_put(w->mem, w->buf, w->len);
		if (w->mem->oom && !w->err)
			w->err = ENOMEM;
	} else if (!w->gz) {
		wb_write(w, w->buf, w->len);
	}
	w->len = 0;
}

void wb_flush(struct wbuf *w)
{
	if (w->len)
		wb_flush_end(w, 0);
}

void wb_strn(struct wbuf *w, const char *s, size_t n)
{
	if (n > STR_MAX)
		n = STR_MAX;
	wb_need(w, KX_JSON_STR_ROOM(n));
	w->len = (size_t)(kx_json_put_str(w->buf + w->len, s, n) - w->buf);
}

void wb_str(struct wbuf *w, const char *s)
{
	wb_strn(w, s, strlen(s));
}

void wb_field(struct wbuf *w, const char *s, size_t size)
{
	wb_strn(w, s, strnlen(s, size));
}

void wb_lit(struct wbuf *w, const char *s)
{
	size_t n = strlen(s);

	wb_need(w, n);
	put_mem(w, s, n);
}

void wb_sep(struct wbuf *w, int *first)
{
	if (*first) {
		*first = 0;
		PUT_LIT(w, "\n");
	} else {
		PUT_LIT(w, ",\n");
	}
}

void wb_text(void *ctx, const char *p, size_t n)
{
	struct wbuf *w = ctx;

	while (n) {
		size_t k = n < WBUF_SIZE / 2 ? n : WBUF_SIZE / 2;

		wb_need(w, k);
		put_mem(w, p, k);
		p += k;
		n -= k;
	}
}
