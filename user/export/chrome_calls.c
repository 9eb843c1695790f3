/*
 * The ioctl slices of a Chrome trace (see chrome_int.h): an "X" slice per
 * call on its real pid/tid, named after its driver and command (category
 * ioctl/<driver>), args: device label, fd, cmd, ret, errno, cpu, off-CPU
 * time, decoded argument fields, and the thread's name then when it was
 * another. Name and label fragments are escaped once per (driver, cmd) or
 * (file kind, dev) per worker (util/strkey.h).
 *
 * The events are formatted on worker threads in pieces of PIECE_EVENTS,
 * put back in order by the ordered fragment pipeline (util/fragq.h): the
 * same bytes for any thread count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/fields.h"
#include "export/chrome_int.h"
#include "export/evnames.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "util/fragq.h"
#include "util/intern.h"
#include "util/strkey.h"

#define MAX_FIELDS   16
#define PIECE_EVENTS 4096 /* about 600 KB of JSON */

/* The escaped name and label fragments of a worker's events. */
struct frags {
	struct kx_intern text;   /* the fragments' text */
	struct kx_strkey names;  /* key cmd << 32 | xfer_cmd << 8 | drv */
	struct kx_strkey labels; /* key dev << 8 | fkind */
};

static void frags_free(struct frags *fr)
{
	kx_intern_free(&fr->text);
	kx_strkey_free(&fr->names);
	kx_strkey_free(&fr->labels);
}

/* `"name":"KVM_RUN","cat":"ioctl/kvm"` of an event, escaped once per command:
 * its fragment id, -1 out of memory. */
static long name_frag(struct frags *fr, const struct kx_ioctl *e)
{
	uint64_t key = (uint64_t)e->cmd << 32 | (uint32_t)e->xfer_cmd << 8 | e->drv;
	enum kx_driver drv = (enum kx_driver)e->drv;
	long id = kx_strkey_find(&fr->names, key);
	char nbuf[64], frag[1024], *o;
	const char *name, *dname;

	if (id >= 0)
		return id;
	name = kx_ioctl_name(drv, e->cmd, e->xfer_cmd, nbuf, sizeof(nbuf));
	dname = kx_driver_name(drv);
	/* Names are C identifiers or _IOWR(...) forms; bounds keep frag big enough. */
	o = frag;
	memcpy(o, "\"name\":", 7);
	o = kx_json_put_str(o + 7, name, strnlen(name, 100));
	memcpy(o, ",\"cat\":", 7);
	snprintf(nbuf, sizeof(nbuf), "ioctl/%s", dname);
	o = kx_json_put_str(o + 7, nbuf, strnlen(nbuf, sizeof(nbuf)));
	return kx_strkey_add(&fr->names, &fr->text, key, frag, (size_t)(o - frag));
}

/* The device label of an event as a JSON string, escaped once per file: its
 * fragment id, -1 out of memory. */
static long label_frag(const struct ctx *c, struct frags *fr, const struct kx_ioctl *e)
{
	uint64_t key = (uint64_t)e->dev << 8 | e->fkind;
	long id = kx_strkey_find(&fr->labels, key);
	char buf[160], esc[KX_JSON_STR_ROOM(sizeof(buf))];

	if (id >= 0)
		return id;
	buf[0] = '\0';
	kx_device_label(c->ci->devices, c->ndev, e->fkind, e->dev, buf, sizeof(buf));
	return kx_strkey_add(&fr->labels, &fr->text, key, esc,
	                     (size_t)(kx_json_put_str(esc, buf, strnlen(buf, sizeof(buf))) - esc));
}

static int reserved_key(const char *k)
{
	static const char *const keys[] = {"device", "fd", "cmd", "ret", "errno", "cpu"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(k, keys[i]))
			return 1;
	return 0;
}

/* Decoded argument fields, as more members of the event's args. */
static void write_fields(struct wbuf *w, const struct ctx *c, const struct kx_ioctl *e)
{
	struct kx_field f[MAX_FIELDS];
	int nf = kx_event_fields(c->an, e, f, MAX_FIELDS);
	for (int i = 0; i < nf; i++) {
		wb_lit(w, ",");
		if (reserved_key(f[i].name)) {
			/* Keys stay unique: a field named like a fixed key gets a prefix. */
			char k[64];

			snprintf(k, sizeof(k), "arg_%s", f[i].name);
			wb_str(w, k);
		} else {
			wb_str(w, f[i].name);
		}
		wb_need(w, 64);
		PUT_LIT(w, ":");
		switch (f[i].kind) {
		case KX_FIELD_U64:
			put_u64(w, f[i].u);
			break;
		case KX_FIELD_I64:
			put_i64(w, f[i].i);
			break;
		case KX_FIELD_HEX:
			PUT_LIT(w, "\"");
			put_hex(w, f[i].u);
			PUT_LIT(w, "\"");
			break;
		case KX_FIELD_STR:
			wb_field(w, f[i].s, sizeof(f[i].s));
			break;
		}
	}
}

/* An event of tid at ts (a call, an annotation) made under another name
 * than its thread's track has (before an exec or a rename): that name, in
 * args.thread. */
void cr_write_thread_name(struct wbuf *w, const struct ctx *c, uint32_t tid, uint64_t ts)
{
	const char *then = kx_thread_name_then(&c->names, c->s, tid, ts);

	if (!then)
		return;
	wb_lit(w, ",\"thread\":");
	wb_field(w, then, KX_COMM_LEN);
}

/* A failed call's errno: its name ("ENOENT"), else its number (room made). */
static void put_errno(struct wbuf *w, int64_t ret)
{
	const char *en = kx_errno_name(ret);

	PUT_LIT(w, ",\"errno\":");
	if (en)
		w->len = (size_t)(kx_json_put_str(w->buf + w->len, en, strnlen(en, 32)) - w->buf);
	else
		put_u64(w, (uint64_t)0 - (uint64_t)ret);
}

/* One "X" slice; rel_ns: start relative to baseTimeNanoseconds. */
static int write_event(struct wbuf *w, const struct ctx *c, struct frags *fr,
                       const struct kx_ioctl *e, uint64_t rel_ns, uint64_t dur)
{
	long nm = name_frag(fr, e), lb = label_frag(c, fr, e);
	const struct kx_istr *n, *l;

	if (nm < 0 || lb < 0)
		return -1;
	n = &fr->text.str[nm];
	l = &fr->text.str[lb];
	wb_need(w, EV_ROOM + n->len + l->len);
	PUT_LIT(w, "{\"ph\":\"X\",");
	put_mem(w, n->s, n->len);
	PUT_LIT(w, ",\"pid\":");
	put_u64(w, e->pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, e->tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, rel_ns);
	PUT_LIT(w, ",\"dur\":");
	put_us(w, dur);
	PUT_LIT(w, ",\"args\":{\"device\":");
	put_mem(w, l->s, l->len);
	PUT_LIT(w, ",\"fd\":");
	put_i64(w, e->fd);
	PUT_LIT(w, ",\"cmd\":\"");
	put_hex(w, e->cmd);
	PUT_LIT(w, "\",\"ret\":");
	put_i64(w, e->ret);
	if (e->ret < 0)
		put_errno(w, e->ret);
	PUT_LIT(w, ",\"cpu\":");
	put_u64(w, kx_ioctl_cpu(e));
	if (e->offcpu_us) {
		/* Time blocked (off-CPU) inside the call. */
		PUT_LIT(w, ",\"offcpu_us\":");
		put_u64(w, e->offcpu_us);
	}
	if (kx_event_has_fields(c->an, e))
		write_fields(w, c, e);
	cr_write_thread_name(w, c, e->tid, e->ts);
	wb_lit(w, "}}");
	return 0;
}

struct piece {
	size_t from, to; /* store indexes */
};

struct worker {
	struct frags fr;
	char *buf; /* WBUF_SIZE bytes: a piece's events on their way to its bytes */
};

struct pieces {
	const struct ctx *c;
	struct wbuf *w; /* the output */
	int *first;
	uint64_t rem;
};

static void *worker_new(void *arg)
{
	struct worker *wk = calloc(1, sizeof(*wk));

	(void)arg;
	if (wk && !(wk->buf = malloc(WBUF_SIZE))) {
		free(wk);
		return NULL;
	}
	return wk;
}

static void worker_free(void *wctx, void *arg)
{
	struct worker *wk = wctx;

	(void)arg;
	if (!wk)
		return;
	frags_free(&wk->fr);
	free(wk->buf);
	free(wk);
}

/* A piece's events, each led by ",\n", into out. */
static int piece_encode(const void *desc, struct kx_bytes *out, void *wctx, void *arg)
{
	const struct piece *p = desc;
	const struct pieces *ps = arg;
	const struct ctx *c = ps->c;
	struct worker *wk = wctx;
	struct wbuf w = {.buf = wk->buf, .own = wk->buf, .fd = -1, .mem = out};

	for (size_t i = p->from; i < p->to && !w.err;) {
		size_t run;
		const struct kx_ioctl *e = kx_store_ioctl_run(c->s, i, &run);

		if (run > p->to - i)
			run = p->to - i;
		for (size_t k = 0; k < run && !w.err; k++, e++) {
			if (!in_part(c, e->ts))
				continue;
			wb_need(&w, 2);
			PUT_LIT(&w, ",\n");
			if (write_event(&w, c, &wk->fr, e, e->ts - c->first_ts + ps->rem,
			                kx_timeline_dur(c->tl, i + k, e->dur)))
				w.err = ENOMEM;
		}
		i += run ? run : 1;
	}
	wb_flush(&w);
	return w.err;
}

/* The pieces' bytes into the output, in order, cut into blocks of WBUF_SIZE;
 * the first event's comma left out. */
static int piece_emit(const uint8_t *b, size_t n, void *arg)
{
	const struct pieces *ps = arg;
	struct wbuf *w = ps->w;

	if (n && *ps->first) {
		*ps->first = 0;
		b++;
		n--;
	}
	while (n && !w->err) {
		size_t k = WBUF_SIZE - w->len;

		if (!k) {
			wb_flush(w);
			continue;
		}
		k = n < k ? n : k;
		put_mem(w, (const char *)b, k);
		b += k;
		n -= k;
	}
	return w->err;
}

int cr_write_ioctls(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	static const struct kx_fragq_ops ops = {
	        .encode = piece_encode,
	        .emit = piece_emit,
	        .wctx_new = worker_new,
	        .wctx_free = worker_free,
	};
	size_t n = kx_store_ioctl_count(c->s);
	struct pieces ps = {c, w, first, rem};
	struct kx_fragq *q;
	int err = 0;

	if (!n)
		return 0;
	q = kx_fragq_new((n + PIECE_EVENTS - 1) / PIECE_EVENTS, sizeof(struct piece), &ops, &ps);
	if (!q)
		return -1;
	for (size_t from = 0; from < n && !err; from += PIECE_EVENTS) {
		struct piece p = {from, n - from > PIECE_EVENTS ? from + PIECE_EVENTS : n};

		err = kx_fragq_piece(q, &p);
	}
	err = kx_fragq_end(q);
	if (err && !w->err)
		w->err = err;
	return w->err == ENOMEM ? -1 : 0;
}
