/*
 * The .kxp reader's chunk unpacking: a chunk's slot is checked (data CRC),
 * decompressed (zstd, or zlib in version 1) and its records decoded (the
 * layout of io/kxp_layout.h, samples in io/kxp_samples.c, DRM usage in
 * io/kxp_drm.c), on a worker thread of the reader's work queue; then its
 * records are committed, in file order, to the store or the sink.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "io/kxp_bytes.h"
#include "io/kxp_drm.h"
#include "io/kxp_reader.h"
#include "io/kxp_samples.h"
#include "model/perfdata.h"
#include "util/grow.h"
#include "util/pbwire.h"

/* One ioctl payload; ctx supplies the fields the flags say repeat. */
static int decode_ioctl(struct rd *q, struct chunk_ctx *ctx, struct kx_ioctl *e,
                        const uint8_t **arg)
{
	uint8_t flags = rd_u8(q);
	struct thr_ctx *t;
	uint64_t v;

	memset(e, 0, sizeof(*e));
	e->arg_off = KX_NO_ARG;
	*arg = NULL;
	e->tid = rd_varint32(q);
	e->ts = ctx->prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(q));
	e->dur = rd_varint(q);
	if (q->bad || (flags & ~IF_KNOWN))
		return -1;
	t = thr_slot(ctx, e->tid);
	if ((flags & (IF_SAME_PID | IF_SAME_FILE | IF_SAME_CMD | IF_SAME_CPU)) &&
	    (!t->used || t->tid != e->tid))
		return -1;
	e->pid = flags & IF_SAME_PID ? t->pid : rd_varint32(q);
	if (flags & IF_SAME_FILE) {
		e->fkind = t->fkind;
		e->drv = t->drv;
		e->dev = t->dev;
		e->fd = t->fd;
	} else {
		e->fkind = rd_u8(q);
		e->drv = rd_u8(q);
		e->dev = rd_varint32(q);
		v = rd_varint(q);
		e->fd = (int32_t)kx_pb_unzigzag(v);
		if (kx_pb_unzigzag(v) != e->fd)
			return -1;
	}
	if (flags & IF_SAME_CMD) {
		e->cmd = t->cmd;
		e->xfer_cmd = t->xfer_cmd;
	} else {
		e->cmd = rd_le32(q);
		e->xfer_cmd = rd_varint32(q);
	}
	if (!(flags & IF_RET_ZERO)) {
		int64_t ret = kx_pb_unzigzag(rd_varint(q));

		/* Handlers return int: anything wider is not ours. */
		if (ret < INT32_MIN || ret > INT32_MAX)
			return -1;
		e->ret = (int32_t)ret;
	}
	v = flags & IF_SAME_CPU ? t->cpu : rd_varint(q);
	if (v > 0xffff)
		return -1;
	e->cpu_hi = (uint8_t)(v >> 8);
	e->cpu_lo = (uint8_t)v;
	if (flags & IF_OFFCPU)
		e->offcpu_us = rd_varint32(q);
	if (flags & IF_ARG) {
		e->arg_in_len = rd_u8(q);
		e->arg_out_len = rd_u8(q);
		*arg = rd_bytes(q, (size_t)e->arg_in_len + e->arg_out_len);
		if (!e->arg_in_len && !e->arg_out_len)
			return -1;
	}
	if (q->bad)
		return -1;
	ctx->prev_ts = e->ts;
	thr_remember(t, e);
	return 0;
}

static int decode_task(struct rd *q, struct chunk_ctx *ctx, struct kx_task *t)
{
	const uint8_t *comm;
	uint8_t clen;

	memset(t, 0, sizeof(*t));
	t->ts = ctx->prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(q));
	t->pid = rd_varint32(q);
	t->tid = rd_varint32(q);
	t->ppid = rd_varint32(q);
	t->what = rd_varint32(q);
	clen = rd_u8(q);
	comm = rd_bytes(q, clen);
	if (q->bad || clen > KX_COMM_LEN)
		return -1;
	memcpy(t->comm, comm, clen < KX_COMM_LEN ? clen : KX_COMM_LEN - 1);
	if (q->p < q->end) { /* the command line, when the recorder read it */
		clen = rd_u8(q);
		comm = rd_bytes(q, clen);
		if (q->bad)
			return -1;
		memcpy(t->cmd, comm, clen < KX_CMD_LEN ? clen : KX_CMD_LEN - 1);
	}
	if (q->p < q->end) /* the thread pointer, when known */
		t->tp = rd_varint(q);
	if (q->bad)
		return -1;
	ctx->prev_ts = t->ts;
	return 0;
}

static int decode_job(struct rd *q, struct chunk_ctx *ctx, struct kx_job *j)
{
	const uint8_t *ring;
	uint64_t src, phase, flags;
	uint8_t rlen;

	memset(j, 0, sizeof(*j));
	j->ts = ctx->prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(q));
	src = rd_varint(q);
	phase = rd_varint(q);
	flags = rd_varint(q);
	j->dev = rd_varint32(q);
	j->pid = rd_varint32(q);
	j->tid = rd_varint32(q);
	j->ctx = rd_varint(q);
	j->seqno = rd_varint(q);
	j->aux = rd_varint(q);
	j->aux2 = rd_varint(q);
	rlen = rd_u8(q);
	ring = rd_bytes(q, rlen);
	/* Unknown sources and phases are kept: analysis counts what it skips. */
	if (q->bad || src > 0xffff || phase > 0xff || flags > 0xff || rlen >= sizeof(j->ring))
		return -1;
	j->src = (uint16_t)src;
	j->phase = (uint8_t)phase;
	j->flags = (uint8_t)flags;
	memcpy(j->ring, ring, rlen);
	ctx->prev_ts = j->ts;
	return 0;
}

/* One annotation payload; its strings as offsets into raw (not terminated). */
static int decode_ann(struct rd *q, struct chunk_ctx *ctx, const uint8_t *raw, struct ann_stash *st)
{
	struct kx_ann *a = &st->a;
	const uint8_t *name = NULL, *cat = NULL;
	uint64_t depth;

	memset(st, 0, sizeof(*st));
	a->what = rd_u8(q);
	a->flags = rd_u8(q);
	a->tid = rd_varint32(q);
	a->ts = ctx->prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(q));
	a->pid = rd_varint32(q);
	depth = rd_varint(q);
	if (q->bad || !a->what || a->what > KX_ANN_END || depth > 0xffff)
		return -1;
	a->depth = (uint16_t)depth;
	a->begin = a->ts;
	if (a->what == KX_ANN_POP || a->what == KX_ANN_END)
		a->begin = a->ts - (uint64_t)kx_pb_unzigzag(rd_varint(q));
	if (a->what == KX_ANN_START || a->what == KX_ANN_END)
		a->id = rd_varint(q);
	if (kx_ann_named(a->what)) {
		st->name_len = rd_u8(q);
		name = rd_bytes(q, st->name_len);
		st->cat_len = rd_u8(q);
		cat = rd_bytes(q, st->cat_len);
		if (q->bad || st->name_len >= KX_ANN_NAME_MAX || st->cat_len >= KX_ANN_CAT_MAX)
			return -1;
		st->name_off = (uint32_t)(name - raw);
		st->cat_off = (uint32_t)(cat - raw);
	}
	if (q->bad)
		return -1;
	ctx->prev_ts = a->ts;
	return 0;
}

static void put_ioctl(const struct dest *d, const struct kx_ioctl *e, const uint8_t *arg)
{
	if (d->store)
		kx_store_add_ioctl(d->store, e, arg);
	if (d->sink && d->sink->ioctl)
		d->sink->ioctl(d->sink->ctx, e, arg);
}

static void put_task(const struct dest *d, const struct kx_task *t)
{
	if (d->store)
		kx_store_add_task(d->store, t);
	if (d->sink && d->sink->task)
		d->sink->task(d->sink->ctx, t);
}

static void put_job(const struct dest *d, const struct kx_job *j)
{
	if (d->store)
		kx_store_add_job(d->store, j);
	if (d->sink && d->sink->job)
		d->sink->job(d->sink->ctx, j);
}

/* Stores or hands over a decoded annotation, its strings terminated. */
static void commit_ann(const struct dest *d, const struct ann_stash *an, const uint8_t *raw)
{
	char name[KX_ANN_NAME_MAX], cat[KX_ANN_CAT_MAX];

	memcpy(name, raw + an->name_off, an->name_len);
	name[an->name_len] = 0;
	memcpy(cat, raw + an->cat_off, an->cat_len);
	cat[an->cat_len] = 0;
	if (d->store)
		kx_store_add_ann(d->store, &an->a, name, cat);
	if (d->sink && d->sink->ann)
		d->sink->ann(d->sink->ctx, &an->a, name, cat);
}

/* How decode_events treats what it decodes. */
#define DEC_CHECK  0 /* nothing: only checks */
#define DEC_COMMIT 1 /* where the dest says */
#define DEC_STASH  2 /* into the slot (room for nrec ioctls and kinds made by the caller) */

/* One sample, symbol or counters payload [p, p + n) of type: checked, and
 * put where d says (NULL: only checked). 0; -1 when bad (the store counts
 * what its limit refuses). */
static int late_decode(const uint8_t *p, size_t n, unsigned int type, uint64_t *prev_ts,
                       const struct dest *d)
{
	uint64_t ips[2 * KX_SAMPLE_MAX_DEPTH];
	struct kx_store *store = d ? d->store : NULL;
	const struct kx_kxp_visitor *sink = d ? d->sink : NULL;
	struct kx_ctr_ev ce;
	struct kx_sample s;
	int rc;

	if (type == KX_KXP_REC_DRM) {
		struct kx_drm_ev de;

		if (kx_kxp_dec_drm(p, n, prev_ts, &de))
			return -1;
		if (store)
			kx_store_add_drm(store, &de);
		if (sink && sink->drm)
			sink->drm(sink->ctx, &de);
		return 0;
	}
	if (type == KX_KXP_REC_CTR) {
		if (kx_kxp_dec_ctr(p, n, prev_ts, &ce))
			return -1;
		if (store)
			kx_store_add_ctr(store, &ce);
		if (sink && sink->ctr)
			sink->ctr(sink->ctx, &ce);
		return 0;
	}
	if (type == KX_KXP_REC_SYM) {
		struct kx_symres *ss = store ? kx_samples_syms(kx_store_samples(store)) : NULL;
		struct kx_symres *ks = sink ? sink->syms : NULL;

		/* A name lost to memory (-2): that frame stays unknown. */
		rc = kx_kxp_dec_sym(p, n, ss ? ss : ks);
		if (rc != -1 && ss && ks)
			rc = kx_kxp_dec_sym(p, n, ks);
		return rc == -2 ? 0 : rc;
	}
	if (kx_kxp_dec_sample(p, n, type, prev_ts, &s, ips))
		return -1;
	if (store)
		kx_store_add_sample(store, &s);
	if (sink && sink->sample)
		sink->sample(sink->ctx, &s);
	return 0;
}

/* A sample or symbol record at q: decoded now (DEC_COMMIT), or checked and
 * noted in the slot to be stored at commit (DEC_STASH). */
static int decode_late(struct cslot *c, const struct rd *q, uint8_t type, const struct dest *d,
                       int mode)
{
	uint64_t before = c->ctx.prev_ts;

	if (late_decode(q->p, (size_t)(q->end - q->p), type, &c->ctx.prev_ts,
	                mode == DEC_COMMIT ? d : NULL))
		return -1;
	if (mode != DEC_STASH)
		return 0;
	if (kx_grow((void **)&c->late, &c->late_cap, c->nlate, sizeof(*c->late)))
		return -2;
	c->late[c->nlate++] =
	        (struct late){(uint32_t)(q->p - c->raw), (uint32_t)(q->end - q->p), before};
	return 0;
}

/* Stores the slot's late record i (checked when it was stashed). */
static void commit_late(const struct dest *d, const struct cslot *c, size_t i, uint8_t type)
{
	uint64_t ts = c->late[i].prev_ts;

	late_decode(c->raw + c->late[i].off, c->late[i].len, type, &ts, d);
}

/*
 * Decodes the records of a slot's raw chunk. Returns 0, -1 on a bad record
 * (so a bad record late in a chunk leaves nothing of it in the store), or
 * -2 when stashing ran out of memory.
 */
static int decode_events(struct cslot *c, const struct dest *d, int mode)
{
	struct rd r = {c->raw, c->raw + c->raw_len, 0};
	struct chunk_ctx *ctx = &c->ctx;
	uint32_t n = 0;

	memset(ctx, 0, sizeof(*ctx));
	c->nioc = c->ntask = c->njob = c->nann = c->nkinds = c->nlate = 0;
	while (r.p < r.end) {
		uint8_t type = rd_u8(&r);
		uint64_t plen = rd_varint(&r);
		struct rd q;

		if (r.bad || plen > (uint64_t)(r.end - r.p))
			return -1;
		q.p = r.p;
		q.end = r.p + plen;
		q.bad = 0;
		r.p = q.end;
		if (++n > c->nrec)
			return -1; /* more records than the header says */
		if (type == REC_IOCTL) {
			struct kx_ioctl tmp, *e = mode == DEC_STASH ? &c->ioc[c->nioc] : &tmp;
			const uint8_t *arg;

			if (decode_ioctl(&q, ctx, e, &arg))
				return -1;
			if (mode == DEC_STASH) {
				e->arg_off = arg ? (uint32_t)(arg - c->raw) : KX_NO_ARG;
				c->nioc++;
			} else if (mode == DEC_COMMIT) {
				put_ioctl(d, e, arg);
			}
		} else if (type == REC_TASK) {
			struct kx_task t;

			if (decode_task(&q, ctx, &t))
				return -1;
			if (mode == DEC_STASH) {
				if (kx_grow((void **)&c->task, &c->task_cap, c->ntask, sizeof(t)))
					return -2;
				c->task[c->ntask++] = t;
			} else if (mode == DEC_COMMIT) {
				put_task(d, &t);
			}
		} else if (type == REC_JOB) {
			struct kx_job j;

			if (decode_job(&q, ctx, &j))
				return -1;
			if (mode == DEC_STASH) {
				if (kx_grow((void **)&c->job, &c->job_cap, c->njob, sizeof(j)))
					return -2;
				c->job[c->njob++] = j;
			} else if (mode == DEC_COMMIT) {
				put_job(d, &j);
			}
		} else if ((type >= KX_KXP_REC_SAMPLE && type <= KX_KXP_REC_CTR) ||
		           type == KX_KXP_REC_DRM) {
			int rc = decode_late(c, &q, type, d, mode);

			if (rc)
				return rc;
		} else if (type == REC_ANN) {
			struct ann_stash an;

			if (decode_ann(&q, ctx, c->raw, &an))
				return -1;
			if (mode == DEC_STASH) {
				if (kx_grow((void **)&c->ann, &c->ann_cap, c->nann, sizeof(an)))
					return -2;
				c->ann[c->nann++] = an;
			} else if (mode == DEC_COMMIT) {
				commit_ann(d, &an, c->raw);
			}
		} else {
			continue; /* from a later writer: skipped whole */
		}
		if (mode == DEC_STASH)
			c->kinds[c->nkinds++] = type;
	}
	return n == c->nrec ? 0 : -1;
}

/* Raw inflate: the chunk's CRC already covers its bytes, so zlib's Adler-32 is skipped. */
static int inflate_chunk(struct cslot *c, z_stream *zs)
{
	const uint8_t *p = c->comp;
	int zr;

	/* zlib header: deflate, no preset dictionary, check bits. */
	if (c->comp_len < 6 || (p[0] & 0x0f) != 8 || (p[0] >> 4) > 7 || (p[1] & 0x20) ||
	    ((unsigned int)p[0] << 8 | p[1]) % 31)
		return -1;
	if (inflateReset(zs) != Z_OK)
		return -1;
	zs->next_in = (Bytef *)p + 2;
	zs->avail_in = c->comp_len - 2;
	zs->next_out = c->raw;
	zs->avail_out = c->raw_len;
	zr = inflate(zs, Z_FINISH);
	if (zr != Z_STREAM_END)
		return -1;
	return zs->total_out == c->raw_len ? 0 : -1;
}

/* A thread's decompression state, for the file's version: zstd, or raw inflate (1). */
struct unpacker {
	int zstd;
	ZSTD_DCtx *zd;
	z_stream zs;
};

void *kx_kxp_unpacker_new(void *arg)
{
	const struct reader *r = arg;
	struct unpacker *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->zstd = r->version >= 2;
	if (u->zstd ? !(u->zd = ZSTD_createDCtx()) : inflateInit2(&u->zs, -15) != Z_OK) {
		free(u);
		return NULL;
	}
	return u;
}

void kx_kxp_unpacker_free(void *wctx, void *arg)
{
	struct unpacker *u = wctx;

	(void)arg;
	if (!u)
		return;
	if (u->zstd)
		ZSTD_freeDCtx(u->zd);
	else
		inflateEnd(&u->zs);
	free(u);
}

int kx_kxp_unpack(struct cslot *c, void *unpacker)
{
	struct unpacker *u = unpacker;
	size_t n;

	if (!u->zstd)
		return inflate_chunk(c, &u->zs);
	n = ZSTD_decompressDCtx(u->zd, c->raw, c->raw_len, c->comp, c->comp_len);
	return !ZSTD_isError(n) && n == c->raw_len ? 0 : -1;
}

void kx_kxp_slot_run(void *slot, void *wctx, void *arg)
{
	struct cslot *c = slot;
	int rc;

	(void)arg;
	c->status = CS_OK;
	c->twopass = 0;
	c->nioc = c->ntask = c->njob = c->nann = c->nkinds = c->nlate = 0;
	if (c->kind != CS_EVENTS)
		return;
	/* The page faults of the store's fresh memory, off the reading thread. */
	kx_store_prefault(c->pf, c->npf);
	c->npf = 0;
	if (crc32(0, c->comp, c->comp_len) != c->dcrc) {
		c->status = CS_CRC;
		return;
	}
	if (!wctx || kx_reserve((void **)&c->raw, &c->raw_cap, c->raw_len ? c->raw_len : 1, 1)) {
		c->status = CS_NOMEM;
		return;
	}
	if (kx_kxp_unpack(c, wctx)) {
		c->status = CS_INFLATE;
		return;
	}
	rc = -2;
	if (c->nrec <= PEND_MAX &&
	    !kx_reserve((void **)&c->ioc, &c->ioc_cap, c->nrec ? c->nrec : 1, sizeof(*c->ioc)) &&
	    !kx_reserve((void **)&c->kinds, &c->kinds_cap, c->nrec ? c->nrec : 1, 1))
		rc = decode_events(c, NULL, DEC_STASH);
	if (rc == -2) {
		c->twopass = 1;
		rc = decode_events(c, NULL, DEC_CHECK);
	}
	if (rc)
		c->status = CS_RECORDS;
}

/* Stores ioctls [from, to) of a slot (runs without arguments in bulk), or
 * hands them to the sink. */
static void commit_ioctls(const struct dest *d, const struct cslot *c, size_t from, size_t to)
{
	if (d->sink && d->sink->ioctl)
		for (size_t i = from; i < to; i++)
			d->sink->ioctl(d->sink->ctx, &c->ioc[i],
			               c->ioc[i].arg_off == KX_NO_ARG ? NULL
			                                              : c->raw + c->ioc[i].arg_off);
	if (!d->store)
		return;
	while (from < to) {
		size_t i = from;

		while (i < to && c->ioc[i].arg_off == KX_NO_ARG)
			i++;
		if (i > from)
			kx_store_add_ioctls(d->store, c->ioc + from, i - from);
		if (i < to) {
			kx_store_add_ioctl(d->store, &c->ioc[i], c->raw + c->ioc[i].arg_off);
			i++;
		}
		from = i;
	}
}

void kx_kxp_slot_commit(const struct dest *d, struct cslot *c)
{
	size_t io = 0, ta = 0, jo = 0, an = 0, lt = 0, k = 0;

	if (!d->store && !d->sink)
		return;
	if (c->twopass) {
		decode_events(c, d, DEC_COMMIT);
		return;
	}
	if (!c->ntask && !c->njob && !c->nann && !c->nlate) {
		commit_ioctls(d, c, 0, c->nioc);
		return;
	}
	while (k < c->nkinds) {
		size_t run = 0;

		while (k + run < c->nkinds && c->kinds[k + run] == REC_IOCTL)
			run++;
		commit_ioctls(d, c, io, io + run);
		io += run;
		k += run;
		if (k == c->nkinds)
			break;
		if (c->kinds[k] == REC_TASK)
			put_task(d, &c->task[ta++]);
		else if (c->kinds[k] == REC_JOB)
			put_job(d, &c->job[jo++]);
		else if (c->kinds[k] == REC_ANN)
			commit_ann(d, &c->ann[an++], c->raw);
		else
			commit_late(d, c, lt++, c->kinds[k]);
		k++;
	}
}

void kx_kxp_slot_free(void *slot, void *arg)
{
	struct cslot *c = slot;

	(void)arg;
	free(c->cbuf);
	free(c->raw);
	free(c->ioc);
	free(c->task);
	free(c->job);
	free(c->late);
	free(c->ann);
	free(c->kinds);
}
