/* Merges a capture into another profiler's XSpace (export/xspace_merge.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/xplane_fields.h"
#include "export/xspace.h"
#include "export/xspace_merge.h"
#include "model/store.h"
#include "util/grow.h"
#include "util/outfile.h"
#include "util/pbwire.h"
#include "util/stdhash.h"

#define HOST_PLANE    "/host:CPU"
#define TASK_ENV      "Task Environment"
#define HOST_PLANE_ID 49 /* TSL's kHostPlaneId, for a host plane the input lacks */
/* Largest XSpace read: protobuf's own message limit. */
#define XMERGE_MAX_INPUT ((size_t)INT32_MAX)

/* One field of a message as read from the wire. */
struct field {
	unsigned int num;
	unsigned int wt;
	uint64_t v;          /* varint and fixed values */
	const uint8_t *body; /* length-delimited: the body */
	size_t blen;
	const uint8_t *raw; /* the whole field, tag included, for copying it */
	size_t rawlen;
};

/* The next field at *p: 1, 0 at the end, -1 when malformed. */
static int next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	const uint8_t *q = *p;
	uint64_t tag, len;
	int bad = 0;

	if (q >= end)
		return 0;
	memset(f, 0, sizeof(*f));
	f->raw = q;
	tag = kx_pb_read_varint(&q, end, &bad);
	f->num = (unsigned int)(tag >> 3);
	f->wt = (unsigned int)(tag & 7);
	if (bad || !f->num)
		return -1;
	switch (f->wt) {
	case KX_PB_VARINT:
		f->v = kx_pb_read_varint(&q, end, &bad);
		break;
	case KX_PB_FIXED64:
	case KX_PB_FIXED32: {
		int n = f->wt == KX_PB_FIXED64 ? 8 : 4;

		if (end - q < n)
			return -1;
		for (int i = n - 1; i >= 0; i--)
			f->v = f->v << 8 | q[i];
		q += n;
		break;
	}
	case KX_PB_LEN:
		len = kx_pb_read_varint(&q, end, &bad);
		if (bad || len > (uint64_t)(end - q))
			return -1;
		f->body = q;
		f->blen = (size_t)len;
		q += len;
		break;
	default:
		return -1;
	}
	if (bad)
		return -1;
	f->rawlen = (size_t)(q - f->raw);
	*p = q;
	return 1;
}

/* Iterates the fields of the message at [p, p + n): for (...; (r = NEXT) > 0;). */
#define EACH_FIELD(f, cur, end, r) for (; ((r) = next_field(&(cur), (end), &(f))) > 0;)

/* ---- output helpers (the XSpace writer's encoding: util/pbwire.h) ---- */

/* A length-delimited field num with the body in sub. */
static void put_sub(struct kx_bytes *b, unsigned int num, const struct kx_bytes *sub)
{
	if (sub->oom)
		b->oom = 1;
	kx_pb_put_bytes(b, num, sub->p, sub->len);
}

/* ---- what the input and kxprof's own XSpace hold ---- */

struct in_line {
	uint64_t id;
	uint64_t ts_ns;
};

/* An XLine's id and timestamp_ns, from its encoded body [q, qe). */
static void line_key(const uint8_t *q, const uint8_t *qe, uint64_t *id, uint64_t *ts_ns)
{
	struct field g;
	int s;

	EACH_FIELD(g, q, qe, s)
	{
		if (g.num == XLINE_ID)
			*id = g.v;
		else if (g.num == XLINE_TIMESTAMP_NS)
			*ts_ns = g.v;
	}
}

/* A line of kxprof's host plane. */
struct kx_line {
	uint64_t id;
	uint64_t ts_ns; /* Unix-epoch ns */
	const uint8_t *body;
	size_t blen;
	int matched; /* written into a line of the input */
};

struct merge {
	const struct kx_analysis *an;
	struct kx_xmerge_stats *st;
	/* the input */
	const uint8_t *host; /* its /host:CPU plane's body, NULL when none */
	size_t host_len;
	struct in_line *lines; /* of that plane, sorted by id */
	size_t nlines, lines_cap;
	/* No line stamped in Unix-epoch ns (TSL saves them from profile_start_time). */
	int normalized;
	uint64_t ev_base, st_base; /* kxprof's metadata ids go above the input's */
	/* the threads' pthread_t, from the record (tid, tp), sorted by tid */
	struct kx_threadptr_pair {
		uint32_t tid;
		uint64_t tp;
	} * tps;
	size_t ntps, tps_cap;
	/* kxprof's XSpace */
	const uint8_t *kx_host;
	size_t kx_host_len;
	struct kx_line *kl;
	size_t nkl, kl_cap;
};

static int cmp_in_line(const void *a, const void *b)
{
	const struct in_line *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static const struct in_line *in_line_of(const struct merge *m, uint64_t id)
{
	struct in_line key = {.id = id};

	return m->nlines ? bsearch(&key, m->lines, m->nlines, sizeof(key), cmp_in_line) : NULL;
}

static int cmp_tp(const void *a, const void *b)
{
	const struct kx_threadptr_pair *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The name at a field of an XPlane body, compared with s. */
static int name_is(const struct field *f, const char *s)
{
	return f->wt == KX_PB_LEN && f->blen == strlen(s) && !memcmp(f->body, s, f->blen);
}

static int plane_named(const uint8_t *p, size_t n, const char *name)
{
	const uint8_t *end = p + n;
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XPLANE_NAME)
			return name_is(&f, name);
	}
	return 0;
}

/* The largest key of the map field num of a plane. */
static uint64_t max_map_key(const uint8_t *p, size_t n, unsigned int num)
{
	const uint8_t *end = p + n;
	uint64_t max = 0;
	struct field f, g;
	int r, s;

	EACH_FIELD(f, p, end, r)
	{
		const uint8_t *q = f.body, *qe = f.body + f.blen;

		if (f.num != num || f.wt != KX_PB_LEN)
			continue;
		EACH_FIELD(g, q, qe, s)
		{
			if (g.num == MAP_KEY && g.wt == KX_PB_VARINT && g.v > max &&
			    g.v < INT64_MAX)
				max = g.v;
		}
	}
	return max;
}

/* The value of the plane stat named name (uint64 or int64), 0 when none. */
static int64_t plane_stat(const uint8_t *p, size_t n, const char *name)
{
	const uint8_t *q = p, *end = p + n;
	uint64_t id = 0;
	struct field f, g;
	int r, s;

	EACH_FIELD(f, q, end, r)
	{
		const uint8_t *e = f.body, *ee = f.body + f.blen;
		uint64_t key = 0;

		if (f.num != XPLANE_STAT_METADATA || f.wt != KX_PB_LEN)
			continue;
		EACH_FIELD(g, e, ee, s)
		{
			if (g.num == MAP_KEY)
				key = g.v;
			else if (g.num == MAP_VALUE && plane_named(g.body, g.blen, name))
				id = key; /* XStatMetadata's name is field 2 too */
		}
	}
	if (!id)
		return 0;
	q = p;
	EACH_FIELD(f, q, end, r)
	{
		const uint8_t *e = f.body, *ee = f.body + f.blen;
		uint64_t mid = 0, v = 0;

		if (f.num != XPLANE_STATS || f.wt != KX_PB_LEN)
			continue;
		EACH_FIELD(g, e, ee, s)
		{
			if (g.num == XSTAT_METADATA_ID)
				mid = g.v;
			else if (g.num == XSTAT_UINT64 || g.num == XSTAT_INT64)
				v = g.v;
		}
		if (mid == id)
			return (int64_t)v;
	}
	return 0;
}

/* The id and timestamp of each line of the input's host plane. */
static int read_host_lines(struct merge *m)
{
	const uint8_t *p = m->host, *end = m->host + m->host_len;
	struct field f;
	int r;

	m->normalized = 1;
	EACH_FIELD(f, p, end, r)
	{
		const uint8_t *q = f.body, *qe = f.body + f.blen;
		struct in_line l = {0};

		if (f.num != XPLANE_LINES || f.wt != KX_PB_LEN)
			continue;
		line_key(q, qe, &l.id, &l.ts_ns);
		if (kx_grow((void **)&m->lines, &m->lines_cap, m->nlines, sizeof(l)))
			return -1;
		m->lines[m->nlines++] = l;
		if (l.ts_ns >= (uint64_t)m->st->span_from_ns)
			m->normalized = 0;
	}
	qsort(m->lines, m->nlines, sizeof(*m->lines), cmp_in_line);
	m->ev_base = max_map_key(m->host, m->host_len, XPLANE_EVENT_METADATA);
	m->st_base = max_map_key(m->host, m->host_len, XPLANE_STAT_METADATA);
	return 0;
}

/* Finds the host and Task Environment planes of the input. */
static int scan_input(struct merge *m, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
	const uint8_t *p = buf, *end = buf + n;
	int64_t from = 0, to = 0;
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num != XSPACE_PLANES || f.wt != KX_PB_LEN)
			continue;
		if (!m->host && plane_named(f.body, f.blen, HOST_PLANE)) {
			m->host = f.body;
			m->host_len = f.blen;
		} else if (plane_named(f.body, f.blen, TASK_ENV)) {
			from = plane_stat(f.body, f.blen, "profile_start_time");
			to = plane_stat(f.body, f.blen, "profile_stop_time");
		}
	}
	if (r < 0) {
		snprintf(err, errlen, "not an XSpace (malformed protobuf at byte %zu)",
		         (size_t)(p - buf));
		return -1;
	}
	if (from <= 0 || to < from) {
		snprintf(err, errlen,
		         "no \"" TASK_ENV "\" plane with profile_start_time and profile_stop_time: "
		         "merge a profile TensorFlow or JAX saved "
		         "(plugins/profile/RUN/HOST.xplane.pb)");
		return -1;
	}
	m->st->span_from_ns = from;
	m->st->span_to_ns = to;
	return 0;
}

/* ---- thread lines ---- */

static int read_threadptrs(struct merge *m)
{
	const struct kx_store *s = m->an->store;
	size_t n = kx_store_task_count(s);

	for (size_t i = 0; i < n; i++) {
		const struct kx_task *t = kx_store_task(s, i);

		if (t->what != KX_TASK_SEEN || !t->tp)
			continue;
		if (kx_grow((void **)&m->tps, &m->tps_cap, m->ntps, sizeof(*m->tps)))
			return -1;
		m->tps[m->ntps++] = (struct kx_threadptr_pair){.tid = t->tid, .tp = t->tp};
	}
	qsort(m->tps, m->ntps, sizeof(*m->tps), cmp_tp);
	return 0;
}

/* The input's line of thread tid (xspace.h's line_id): 0 for a line by tid. */
static uint64_t line_of_thread(void *ctx, uint32_t tid)
{
	const struct merge *m = ctx;
	struct kx_threadptr_pair key = {.tid = tid}, *tp;

	tp = m->ntps ? bsearch(&key, m->tps, m->ntps, sizeof(key), cmp_tp) : NULL;
	if (tp && in_line_of(m, kx_stdhash_u64(tp->tp)))
		return kx_stdhash_u64(tp->tp);
	return 0;
}

/* The lines of kxprof's host plane. */
static int read_kx_lines(struct merge *m)
{
	const uint8_t *p = m->kx_host, *end = m->kx_host + m->kx_host_len;
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		const uint8_t *q = f.body, *qe = f.body + f.blen;
		struct kx_line l = {.body = f.body, .blen = f.blen};

		if (f.num != XPLANE_LINES || f.wt != KX_PB_LEN)
			continue;
		line_key(q, qe, &l.id, &l.ts_ns);
		if (kx_grow((void **)&m->kl, &m->kl_cap, m->nkl, sizeof(l)))
			return -1;
		m->kl[m->nkl++] = l;
	}
	return 0;
}

/* ---- rewriting kxprof's events onto the input's time base ---- */

/* A stat with its metadata ids (own and ref) raised by base. */
static void put_stat(struct kx_bytes *b, const struct field *sf, uint64_t base)
{
	const uint8_t *p = sf->body, *end = sf->body + sf->blen;
	struct kx_bytes s = {0};
	struct field f;
	int r;

	if (!base) {
		kx_bytes_put(b, sf->raw, sf->rawlen);
		return;
	}
	EACH_FIELD(f, p, end, r)
	{
		if ((f.num == XSTAT_METADATA_ID || f.num == XSTAT_REF) && f.wt == KX_PB_VARINT)
			kx_pb_put_vfield(&s, f.num, f.v + base);
		else
			kx_bytes_put(&s, f.raw, f.rawlen);
	}
	put_sub(b, sf->num, &s);
	free(s.p);
}

/* Where an event lands: its start and the span, ps from profile_start_time. */
enum { IN_SPAN, BEFORE, AFTER };

/*
 * One of kxprof's events (on a line stamped src_ts_ns, Unix-epoch) onto a
 * line whose origin is dst_rel_ns after profile_start_time, its metadata
 * ids raised by ev_base and st_base. Returns where it fell (written only
 * when IN_SPAN).
 */
static int put_event(struct merge *m, struct kx_bytes *b, const struct field *ef,
                     uint64_t src_ts_ns, int64_t dst_rel_ns, uint64_t ev_base, uint64_t st_base)
{
	const uint8_t *p = ef->body, *end = ef->body + ef->blen;
	/* In ps from profile_start_time; 128 bits: a capture far from the input's
	 * span (another day) would overflow 64. */
	__int128 span_ps = (__int128)(m->st->span_to_ns - m->st->span_from_ns) * 1000;
	__int128 start_ps, dst_ps = (__int128)dst_rel_ns * 1000;
	int64_t off_ps = 0, dur_ps = 0;
	struct kx_bytes e = {0};
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XEVENT_OFFSET_PS)
			off_ps = (int64_t)f.v;
		else if (f.num == XEVENT_DURATION_PS)
			dur_ps = (int64_t)f.v;
	}
	start_ps = ((__int128)src_ts_ns - m->st->span_from_ns) * 1000 + off_ps;
	if (start_ps < 0 || start_ps < dst_ps)
		return BEFORE;
	if (start_ps + dur_ps > span_ps)
		return AFTER;
	p = ef->body;
	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XEVENT_METADATA_ID)
			kx_pb_put_vfield(&e, f.num, f.v + ev_base);
		else if (f.num == XEVENT_OFFSET_PS)
			continue;
		else if (f.num == XEVENT_STATS && f.wt == KX_PB_LEN)
			put_stat(&e, &f, st_base);
		else
			kx_bytes_put(&e, f.raw, f.rawlen);
	}
	/* offset_ps shares a oneof with num_occurrences: written even when 0 */
	kx_pb_put_vfield(&e, XEVENT_OFFSET_PS, (uint64_t)(start_ps - dst_ps));
	put_sub(b, XLINE_EVENTS, &e);
	free(e.p);
	return IN_SPAN;
}

/* The events of kxprof's line body onto b, counted into the host or device counts. */
static void put_events(struct merge *m, struct kx_bytes *b, const uint8_t *body, size_t blen,
                       uint64_t src_ts_ns, int64_t dst_rel_ns, int host)
{
	const uint8_t *p = body, *end = body + blen;
	uint64_t *cnt[3];
	struct field f;
	int r;

	cnt[IN_SPAN] = host ? &m->st->host_merged : &m->st->dev_merged;
	cnt[BEFORE] = host ? &m->st->host_before : &m->st->dev_before;
	cnt[AFTER] = host ? &m->st->host_after : &m->st->dev_after;
	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XLINE_EVENTS && f.wt == KX_PB_LEN)
			(*cnt[put_event(m, b, &f, src_ts_ns, dst_rel_ns, host ? m->ev_base : 0,
			                host ? m->st_base : 0)])++;
	}
}

/* A line of kxprof's own (new to the input), from the span's start. */
static void put_new_line(struct merge *m, struct kx_bytes *b, const uint8_t *body, size_t blen,
                         uint64_t ts_ns, int host)
{
	const uint8_t *p = body, *end = body + blen;
	struct kx_bytes l = {0};
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XLINE_EVENTS || f.num == XLINE_TIMESTAMP_NS ||
		    f.num == XLINE_DURATION_PS)
			continue;
		kx_bytes_put(&l, f.raw, f.rawlen);
	}
	if (!m->normalized)
		kx_pb_put_vfield(&l, XLINE_TIMESTAMP_NS, (uint64_t)m->st->span_from_ns);
	put_events(m, &l, body, blen, ts_ns, 0, host);
	put_sub(b, XPLANE_LINES, &l);
	free(l.p);
}

/* A metadata map entry with its key and id raised by base (stats inside by st_base). */
static void put_meta_entry(struct kx_bytes *b, const struct field *mf, uint64_t base,
                           uint64_t st_base)
{
	const uint8_t *p = mf->body, *end = mf->body + mf->blen;
	struct kx_bytes e = {0};
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num == MAP_KEY && f.wt == KX_PB_VARINT) {
			kx_pb_put_vfield(&e, MAP_KEY, f.v + base);
		} else if (f.num == MAP_VALUE && f.wt == KX_PB_LEN) {
			const uint8_t *q = f.body, *qe = f.body + f.blen;
			struct kx_bytes v = {0};
			struct field g;
			int s;

			EACH_FIELD(g, q, qe, s)
			{
				if (g.num == XMETA_ID && g.wt == KX_PB_VARINT)
					kx_pb_put_vfield(&v, XMETA_ID, g.v + base);
				else if (g.num == 5 && g.wt == KX_PB_LEN) /* XEventMetadata.stats */
					put_stat(&v, &g, st_base);
				else
					kx_bytes_put(&v, g.raw, g.rawlen);
			}
			put_sub(&e, MAP_VALUE, &v);
			free(v.p);
		} else {
			kx_bytes_put(&e, f.raw, f.rawlen);
		}
	}
	put_sub(b, mf->num, &e);
	free(e.p);
}

/* The input's host plane with kxprof's lines and metadata merged in. */
static void put_host_plane(struct merge *m, struct kx_bytes *b)
{
	const uint8_t *p = m->host, *end = m->host ? m->host + m->host_len : NULL;
	struct kx_bytes pl = {0};
	struct field f, g;
	int r, s;

	if (!m->host) {
		m->normalized = 1;
		kx_pb_put_vfield(&pl, XPLANE_ID, HOST_PLANE_ID);
		kx_bytes_put(&pl, (uint8_t[]){XPLANE_NAME << 3 | KX_PB_LEN, 9}, 2);
		kx_bytes_put(&pl, HOST_PLANE, 9);
	}
	EACH_FIELD(f, p, end, r)
	{
		const uint8_t *q = f.body, *qe = f.body + f.blen;
		uint64_t id = 0, ts = 0;
		struct kx_bytes l = {0};
		size_t k;

		if (f.num != XPLANE_LINES || f.wt != KX_PB_LEN) {
			kx_bytes_put(&pl, f.raw, f.rawlen);
			continue;
		}
		EACH_FIELD(g, q, qe, s)
		{
			if (g.num == XLINE_ID)
				id = g.v;
			else if (g.num == XLINE_TIMESTAMP_NS)
				ts = g.v;
		}
		for (k = 0; k < m->nkl && m->kl[k].id != id; k++)
			;
		if (k == m->nkl) {
			kx_bytes_put(&pl, f.raw, f.rawlen);
			continue;
		}
		m->kl[k].matched = 1;
		m->st->lines_matched++;
		kx_bytes_put(&l, f.body, f.blen);
		/* A saved line starts ts after profile_start_time, an unsaved one at ts. */
		put_events(m, &l, m->kl[k].body, m->kl[k].blen, m->kl[k].ts_ns,
		           ts < (uint64_t)m->st->span_from_ns ? (int64_t)ts
		                                              : (int64_t)ts - m->st->span_from_ns,
		           1);
		put_sub(&pl, XPLANE_LINES, &l);
		free(l.p);
	}
	for (size_t k = 0; k < m->nkl; k++) {
		if (m->kl[k].matched)
			continue;
		m->st->lines_new++;
		put_new_line(m, &pl, m->kl[k].body, m->kl[k].blen, m->kl[k].ts_ns, 1);
	}
	p = m->kx_host;
	end = m->kx_host + m->kx_host_len;
	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XPLANE_EVENT_METADATA && f.wt == KX_PB_LEN)
			put_meta_entry(&pl, &f, m->ev_base, m->st_base);
		else if (f.num == XPLANE_STAT_METADATA && f.wt == KX_PB_LEN)
			put_meta_entry(&pl, &f, m->st_base, 0);
	}
	put_sub(b, XSPACE_PLANES, &pl);
	free(pl.p);
}

/* One of kxprof's device planes, its lines moved onto the input's time base. */
static void put_device_plane(struct merge *m, struct kx_bytes *b, const struct field *pf)
{
	const uint8_t *p = pf->body, *end = pf->body + pf->blen;
	struct kx_bytes pl = {0};
	struct field f, g;
	int r, s;

	EACH_FIELD(f, p, end, r)
	{
		const uint8_t *q = f.body, *qe = f.body + f.blen;
		uint64_t ts = 0;

		if (f.num != XPLANE_LINES || f.wt != KX_PB_LEN) {
			kx_bytes_put(&pl, f.raw, f.rawlen);
			continue;
		}
		EACH_FIELD(g, q, qe, s)
		{
			if (g.num == XLINE_TIMESTAMP_NS)
				ts = g.v;
		}
		put_new_line(m, &pl, f.body, f.blen, ts, 0);
	}
	put_sub(b, XSPACE_PLANES, &pl);
	free(pl.p);
	m->st->planes_added++;
}

/* ---- files ---- */

static uint8_t *read_all(const char *path, size_t *n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, got;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	do {
		if (len == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = cap <= XMERGE_MAX_INPUT ? realloc(buf, cap) : NULL;
			if (!nb) {
				snprintf(err, errlen, "%s: too big or out of memory (%zu bytes)",
				         path, cap);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read failed", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*n = len;
	return buf;
}

static void merge_free(struct merge *m)
{
	free(m->lines);
	free(m->tps);
	free(m->kl);
}

/* The output: the input's fields in order, the host plane merged, kxprof's planes after. */
static void put_space(struct merge *m, struct kx_bytes *b, const uint8_t *in, size_t n,
                      const uint8_t *kx, size_t kxn)
{
	const uint8_t *p = in, *end = in + n;
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XSPACE_PLANES && f.body == m->host)
			put_host_plane(m, b);
		else
			kx_bytes_put(b, f.raw, f.rawlen);
	}
	if (!m->host)
		put_host_plane(m, b);
	p = kx;
	end = kx + kxn;
	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XSPACE_PLANES && f.wt == KX_PB_LEN && f.body != m->kx_host)
			put_device_plane(m, b, &f);
	}
}

static int find_kx_host(struct merge *m, const uint8_t *kx, size_t n)
{
	const uint8_t *p = kx, *end = kx + n;
	struct field f;
	int r;

	EACH_FIELD(f, p, end, r)
	{
		if (f.num == XSPACE_PLANES && plane_named(f.body, f.blen, HOST_PLANE)) {
			m->kx_host = f.body;
			m->kx_host_len = f.blen;
		}
	}
	return r;
}

int kx_xspace_merge(const struct kx_analysis *an, const char *in, const char *out,
                    struct kx_xmerge_stats *st, char *err, size_t errlen)
{
	struct merge m = {.an = an, .st = st};
	struct kx_xspace_opts o = {.line_id = line_of_thread, .line_id_ctx = &m};
	struct kx_bytes b = {0};
	uint8_t *buf, *kx = NULL;
	size_t n = 0, kxn = 0;
	char serr[256];
	int rc = -1;

	memset(st, 0, sizeof(*st));
	buf = read_all(in, &n, err, errlen);
	if (!buf)
		return -1;
	if (scan_input(&m, buf, n, serr, sizeof(serr))) {
		snprintf(err, errlen, "%s: %s", in, serr);
		goto out;
	}
	if ((m.host && read_host_lines(&m)) || read_threadptrs(&m))
		goto oom;
	if (kx_xspace_serialize(an, &o, &kx, &kxn, err, errlen))
		goto out;
	if (find_kx_host(&m, kx, kxn) < 0 || read_kx_lines(&m)) {
		snprintf(err, errlen, "kxprof's own XSpace did not read back (a bug)");
		goto out;
	}
	put_space(&m, &b, buf, n, kx, kxn);
	if (b.oom)
		goto oom;
	rc = kx_outfile_write(out, 0, b.p, b.len, err, errlen);
	goto out;
oom:
	snprintf(err, errlen, "out of memory merging into %s", in);
out:
	free(b.p);
	free(kx);
	free(buf);
	merge_free(&m);
	return rc;
}
