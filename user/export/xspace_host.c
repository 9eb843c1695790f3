/*
 * The /host:CPU plane of an XSpace (see xspace_int.h): a line per thread
 * (id = tid, or the id opts->line_id gives it) and per lane of cross-thread
 * ranges, its ioctls and annotations in start order.
 *
 * The plane is written in two passes. The sizing pass walks every line in
 * order: it takes each event's resolved duration from the timeline, interns
 * every name the events need (so ids come out as a single pass would give
 * them) and adds up each line's size, so that every length is known before
 * the first byte goes out. The writing pass then encodes segments of
 * SEG_EVENTS ioctls on worker threads with those tables frozen (lookups
 * only) and hands them to the sink in order through the ordered fragment
 * pipeline (util/fragq.h): to a file the plane never exists whole in memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "export/xspace_int.h"
#include "util/fdio.h"
#include "util/fragq.h"
#include "util/lbound.h"

/* A segment of the host plane: events [k0, k1) of line li. */
#define SEG_EVENTS 16384
/* The XLine fields before the events (at most LINE_HEAD bytes). */
#define LINE_HEAD 128

static const char *const fixed_stats[] = {"driver", "device", "fd", "cmd", "ret", "errno", "pid"};

static size_t line_head(struct exporter *x, const struct line *l, uint8_t *buf)
{
	const char *comm = l->tid < ASYNC_LINE_BASE ? kx_store_comm(x->s, l->tid) : NULL;
	uint64_t ts = (uint64_t)kx_capinfo_realtime(x->ci, l->t0);
	uint64_t id = l->tid;
	uint8_t *p = buf;
	char name[32];

	if (x->o.line_id && l->tid < ASYNC_LINE_BASE) {
		uint64_t v = x->o.line_id(x->o.line_id_ctx, l->tid);

		if (v)
			id = v;
	}
	size_t n;

	if (l->tid >= ASYNC_LINE_BASE && l->lane)
		snprintf(name, sizeof(name), "ranges of pid %" PRIu32 " #%" PRIu32, l->pid,
		         l->lane + 1);
	else if (l->tid >= ASYNC_LINE_BASE)
		snprintf(name, sizeof(name), "ranges of pid %" PRIu32, l->pid);
	else if (comm && comm[0])
		snprintf(name, sizeof(name), "%.*s", KX_COMM_LEN, comm);
	else
		snprintf(name, sizeof(name), "tid %" PRIu32, l->tid);
	n = strlen(name);
	/* proto3 leaves out zero scalars */
	if (id)
		p = kx_pb_vfield(p, XLINE_ID, id);
	p = kx_pb_bytes(p, XLINE_NAME, name, n);
	p = kx_pb_bytes(p, XLINE_DISPLAY_NAME, name, n);
	if (ts)
		p = kx_pb_vfield(p, XLINE_TIMESTAMP_NS, ts);
	return (size_t)(p - buf);
}

/* The XLine fields after the events. */
static size_t line_tail(const struct hline *h, uint8_t *buf)
{
	return h->max_end ? (size_t)(kx_pb_vfield(buf, XLINE_DURATION_PS, h->max_end * 1000) - buf)
	                  : 0;
}

/*
 * The duration of the event at position pos of the order: the timeline's
 * fix when there is one (*fi: the next fix, walking positions upwards).
 */
static inline uint64_t resolved_dur(const struct exporter *x, size_t *fi, size_t pos,
                                    const struct kx_ioctl *e)
{
	if (*fi < x->tl->nfix && x->tl->fix[*fi].pos == pos)
		return x->tl->fix[(*fi)++].dur;
	return e->dur;
}

/* Sizing pass over one line: names, byte count, span. */
static int size_line(struct exporter *x, size_t li)
{
	const struct line *l = &x->lines[li];
	struct hline *h = &x->hl[li];
	const uint32_t *ord = x->order + l->start;
	uint64_t t0 = l->t0, max_end = 0;
	uint8_t buf[LINE_HEAD];
	size_t body = line_head(x, l, buf), fi = kx_timeline_fix_from(x->tl, l->start);

	for (size_t j = 0; j < l->nann; j++) {
		const struct kx_range *r = &x->rg->r[l->ann[j]];
		uint64_t start, dur;
		size_t elen;

		xs_span(r->begin, r->dur, t0, &start, &dur);
		if (start + dur > max_end)
			max_end = start + dur;
		elen = xs_ann_event_size(x, r, start, dur);
		if (!elen)
			return xs_fail(x, "out of memory");
		body += 1 + kx_pb_varint_size(elen) + elen;
	}

	for (size_t k = 0; k < l->count; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(x->s, ord[k]);
		uint64_t start, dur;
		size_t elen;

		xs_span(e->ts, resolved_dur(x, &fi, l->start + k, e), t0, &start, &dur);
		if (start + dur > max_end)
			max_end = start + dur;
		elen = xs_event_size(x, e, ord[k], start, dur);
		if (!elen)
			return xs_fail(x, "out of memory");
		body += 1 + kx_pb_varint_size(elen) + elen;
	}
	h->max_end = max_end;
	body += line_tail(h, buf);
	h->body = body;
	return 0;
}

void xs_sink_put(struct sink *k, const void *p, size_t n)
{
	k->bytes += n;
	if (k->fd < 0)
		kx_bytes_put(k->ob, p, n);
	else if (!k->err && n)
		k->err = kx_write_all(k->fd, p, n);
}

/* A segment of the host plane: events [k0, k1) of line li. */
struct seg {
	size_t li, k0, k1;
	int last; /* the line's last segment: the annotations after its last ioctl too */
};

struct hwriter {
	struct exporter *x;
	struct sink *k;
};

static uint64_t ins_at(const void *ctx, size_t j)
{
	return ((const size_t *)ctx)[j];
}

/* The first annotation of line l at or after ioctl k (ins is sorted). */
static size_t ann_from(const struct line *l, size_t k)
{
	return kx_lbound(0, l->nann, k, ins_at, l->ins);
}

/* One event encoded into scratch (up to q) as an XLine event of out. */
static void seg_event(struct kx_bytes *out, const uint8_t *scratch, const uint8_t *q)
{
	if (!q)
		out->oom = 1;
	else
		kx_pb_put_bytes(out, XLINE_EVENTS, scratch, (size_t)(q - scratch));
}

/* One annotation event of a segment. */
static void seg_ann(struct exporter *x, struct kx_bytes *out, const struct kx_range *r, uint64_t t0)
{
	uint8_t scratch[EVENT_SCRATCH];
	uint64_t start, dur;

	xs_span(r->begin, r->dur, t0, &start, &dur);
	seg_event(out, scratch, xs_put_ann_event(x, r, start, dur, scratch));
}

/* Encodes a segment's events (on a worker thread; the exporter is read only). */
static int seg_encode(const void *desc, struct kx_bytes *out, void *wctx, void *arg)
{
	const struct seg *g = desc;
	struct exporter *x = ((const struct hwriter *)arg)->x;
	const struct line *l = &x->lines[g->li];
	const uint32_t *ord = x->order + l->start;
	uint64_t t0 = l->t0;
	/* The first fix at or after this segment, its first annotation. */
	size_t fi = kx_timeline_fix_from(x->tl, l->start + g->k0), aj = ann_from(l, g->k0);

	(void)wctx;
	for (size_t k = g->k0; k < g->k1 && !out->oom; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(x->s, ord[k]);
		uint8_t scratch[EVENT_SCRATCH];
		uint64_t start, dur;

		for (; aj < l->nann && l->ins[aj] == k; aj++)
			seg_ann(x, out, &x->rg->r[l->ann[aj]], t0);
		xs_span(e->ts, resolved_dur(x, &fi, l->start + k, e), t0, &start, &dur);
		seg_event(out, scratch, xs_put_event(x, e, ord[k], start, dur, scratch));
	}
	for (; g->last && aj < l->nann; aj++)
		seg_ann(x, out, &x->rg->r[l->ann[aj]], t0);
	return out->oom ? ENOMEM : 0;
}

static int seg_emit(const uint8_t *p, size_t n, void *arg)
{
	xs_sink_put(((const struct hwriter *)arg)->k, p, n);
	return 0;
}

static const struct kx_fragq_ops seg_ops = {
        .encode = seg_encode,
        .emit = seg_emit,
};

/* The host plane's own stats: which attach mechanism the ioctl hooks ran with. */
static void host_plane_stats(struct exporter *x, struct kx_bytes *b)
{
	char mech[sizeof(x->ci->hooks[0].mech) + sizeof(x->ci->hooks[0].why) + 8];

	if (kx_capinfo_ioctl_mech(x->ci, mech, sizeof(mech)))
		xs_put_plane_str_stat(b, &x->st, "ioctl_hooks", mech);
}

/* Sizing pass: the fixed stat names first, then every line. 0, or -1 (err set). */
static int size_lines(struct exporter *x)
{
	for (int i = 0; i < ST_NFIXED; i++)
		if (meta_cstr(&x->st, fixed_stats[i]) != (uint32_t)i + 1)
			return xs_fail(x, "out of memory");
	x->hl = calloc(x->nlines + 1, sizeof(*x->hl));
	if (!x->hl)
		return xs_fail(x, "out of memory");
	for (size_t i = 0; i < x->nlines; i++)
		if (size_line(x, i))
			return -1;
	return 0;
}

/* The plane's bytes, laid out in order (its length head + head), then its
 * lines, each cut into segments, then the metadata and plane stats. 0, an
 * errno, or -1 when the pipeline could not be made. */
static int write_plane(struct exporter *x, struct sink *k, size_t plane, const uint8_t *head,
                       size_t head_len, const struct kx_bytes *meta, const struct kx_bytes *pstats)
{
	struct hwriter hw = {x, k};
	uint8_t buf[LINE_HEAD], *p;
	struct kx_fragq *q =
	        kx_fragq_new(x->nevents / SEG_EVENTS, sizeof(struct seg), &seg_ops, &hw);

	if (!q)
		return -1;
	p = kx_pb_len_head(buf, XSPACE_PLANES, plane);
	kx_fragq_lit(q, buf, (size_t)(p - buf));
	kx_fragq_lit(q, head, head_len);
	for (size_t i = 0; i < x->nlines; i++) {
		const struct line *l = &x->lines[i];

		p = kx_pb_len_head(buf, XPLANE_LINES, x->hl[i].body);
		kx_fragq_lit(q, buf, (size_t)(p - buf));
		kx_fragq_lit(q, buf, line_head(x, l, buf));
		for (size_t k0 = 0; k0 < l->count || (!k0 && l->nann); k0 += SEG_EVENTS) {
			size_t k1 = l->count - k0 < SEG_EVENTS ? l->count : k0 + SEG_EVENTS;
			struct seg g = {i, k0, k1, k1 == l->count};

			kx_fragq_piece(q, &g);
		}
		kx_fragq_lit(q, buf, line_tail(&x->hl[i], buf));
	}
	kx_fragq_lit(q, meta->p, meta->len);
	kx_fragq_lit(q, pstats->p, pstats->len);
	return kx_fragq_end(q);
}

/* The plane's size, and whether it fits (and, in memory, room for it). */
static int plane_fits(struct exporter *x, struct sink *k, size_t plane)
{
	if (plane > PB_MAX_MSG)
		return xs_fail(x,
		               "XSpace is over protobuf's 2 GiB limit (%zu bytes of %zu threads): "
		               "export a shorter time window (kxprof convert --split-events N "
		               "with a smaller N)",
		               plane, x->nlines);
	/* In memory the whole plane's room is made first, so the buffer grows once. */
	if (k->fd < 0 && !kx_bytes_room(k->ob, plane + 16 + 65536))
		return xs_fail(x, "out of memory serializing the XSpace");
	return 0;
}

int xs_put_host_plane(struct exporter *x, struct sink *k)
{
	uint8_t head[64 + sizeof(HOST_PLANE_NAME)], *p;
	struct kx_bytes meta = {0}, pstats = {0};
	size_t plane, head_len;
	int rc = -1, bad;

	if (size_lines(x))
		return -1;
	host_plane_stats(x, &pstats);
	xs_put_metadata(&meta, &x->ev, &x->st);
	if (meta.oom || pstats.oom) {
		xs_fail(x, "out of memory");
		goto out;
	}
	p = kx_pb_vfield(head, XPLANE_ID, HOST_PLANE_ID);
	p = kx_pb_bytes(p, XPLANE_NAME, HOST_PLANE_NAME, sizeof(HOST_PLANE_NAME) - 1);
	head_len = (size_t)(p - head);
	plane = head_len + meta.len + pstats.len;
	for (size_t i = 0; i < x->nlines; i++)
		plane += 1 + kx_pb_varint_size(x->hl[i].body) + x->hl[i].body;
	if (plane_fits(x, k, plane))
		goto out;
	bad = write_plane(x, k, plane, head, head_len, &meta, &pstats);
	if (bad < 0)
		xs_fail(x, "out of memory");
	else if (bad)
		xs_fail(x, "out of memory encoding the host plane");
	else if (k->ob->oom)
		xs_fail(x, "out of memory serializing the XSpace (%zu bytes so far)", k->ob->len);
	else if (k->bytes != 1 + kx_pb_varint_size(plane) + plane)
		xs_fail(x, "internal error: host plane of %" PRIu64 " bytes, %zu expected",
		        k->bytes, 1 + kx_pb_varint_size(plane) + plane);
	else
		rc = 0;
out:
	free(meta.p);
	free(pstats.p);
	return rc;
}
