/*
 * The .kxp reader (io/kxp.h): opens the input (a file read on demand, or
 * memory), checks the header, then walks the chunks: whole chunks of a
 * large file go to a work queue whose workers unpack them (kxp_unpack.c)
 * and are committed in file order; anything else (damage, a cut, the
 * trailer) is met one chunk at a time, with kxp_recover.c noting what was
 * skipped and saying what was lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/kxp_bytes.h"
#include "io/kxp_reader.h"
#include "io/tlv.h"
#include "model/perfdata.h"
#include "util/grow.h"
#include "util/workq.h"

const uint8_t *kx_kxp_src_get(struct src *s, uint64_t off, size_t n)
{
	size_t got = 0;

	if (s->mem)
		return s->mem + off;
	/* Exact fit: the largest piece read so far. */
	if (kx_reserve((void **)&s->buf, &s->cap, n, 1)) {
		s->ioerr = ENOMEM;
		return NULL;
	}
	while (got < n) {
		ssize_t k = pread(s->fd, s->buf + got, n - got, (off_t)(off + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			s->ioerr = errno;
			return NULL;
		}
		if (k == 0) {
			/* Shrunk under us: what is left is all there is. */
			s->size = off + got;
			return NULL;
		}
		got += (size_t)k;
	}
	return s->buf;
}

void kx_kxp_msg(struct reader *r, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (!r->errlen)
		return;
	if (r->src->name)
		n = snprintf(r->err, r->errlen, "%s: ", r->src->name);
	if (n < 0 || (size_t)n >= r->errlen)
		n = 0;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Reads and checks the header into r->ci; returns its length or 0 with a message. */
static uint32_t read_header(struct reader *r)
{
	uint64_t size = r->src->size;
	size_t n = size < HDR_FIXED ? (size_t)size : HDR_FIXED;
	const uint8_t *h;
	uint32_t version, hlen;

	if (!size) {
		kx_kxp_msg(r, "empty file: not a kxprof record file");
		return 0;
	}
	h = kx_kxp_src_get(r->src, 0, n);
	if (!h)
		goto cut;
	if (memcmp(h, FILE_MAGIC, n < 8 ? n : 8) != 0) {
		kx_kxp_msg(r, "not a kxprof record file");
		return 0;
	}
	if (n < HDR_FIXED) {
		kx_kxp_msg(r,
		           "record file header is incomplete (%zu bytes): the file was cut "
		           "short",
		           n);
		return 0;
	}
	version = get_le32(h + 8);
	hlen = get_le32(h + 12);
	if (version > KX_KXP_VERSION) {
		kx_kxp_msg(r,
		           "record format version %u is newer than this kxprof reads "
		           "(versions 1 to %d): "
		           "read it with the kxprof that wrote it, or a newer one",
		           version, KX_KXP_VERSION);
		return 0;
	}
	if (version < 1) {
		kx_kxp_msg(r,
		           "unsupported record format version %u (this kxprof reads "
		           "versions 1 to %d)",
		           version, KX_KXP_VERSION);
		return 0;
	}
	r->version = version;
	r->chl = version >= 3 ? CHDR_LEN : CHDR_LEN_V2;
	if (hlen < HDR_FIXED + 4 || hlen > HDR_MAX) {
		kx_kxp_msg(r, "record file header is corrupt (length %u)", hlen);
		return 0;
	}
	if (size < hlen) {
		kx_kxp_msg(r,
		           "record file header is incomplete (%llu of %u bytes): the file "
		           "was cut short",
		           (unsigned long long)size, hlen);
		return 0;
	}
	h = kx_kxp_src_get(r->src, 0, hlen);
	if (!h)
		goto cut;
	if (crc32(0, h, hlen - 4) != get_le32(h + hlen - 4)) {
		kx_kxp_msg(r, "record file header is corrupt (checksum mismatch)");
		return 0;
	}
	if (kx_tlv_capinfo_decode(h + HDR_FIXED, hlen - HDR_FIXED - 4, r->ci)) {
		kx_kxp_msg(r, "record file header is corrupt (bad capture info)");
		return 0;
	}
	return hlen;
cut:
	if (r->src->ioerr)
		kx_kxp_msg(r, "cannot read: %s", strerror(r->src->ioerr));
	else
		kx_kxp_msg(r, "record file header is incomplete: the file was cut short");
	return 0;
}

int kx_kxp_chdr_parse(const uint8_t *h, uint32_t chl, struct chdr *c)
{
	if (memcmp(h, CHUNK_MAGIC, 4) != 0 || crc32(0, h, chl - 4) != get_le32(h + chl - 4))
		return -1;
	c->num = chl > CHDR_LEN_V2 ? get_le32(h + 24) : 0;
	c->type = get_le32(h + 4);
	c->raw_len = get_le32(h + 8);
	c->comp_len = get_le32(h + 12);
	c->nrec = get_le32(h + 16);
	c->dcrc = get_le32(h + 20);
	return c->raw_len > RAW_MAX || c->comp_len > compressBound(RAW_MAX) ? -1 : 0;
}

static void tee_check(struct reader *r)
{
	const struct kx_kxp_visitor *v = r->dest.sink;

	if (r->dest.store && v && v->drop_store && __atomic_load_n(v->drop_store, __ATOMIC_RELAXED))
		r->dest.store = r->store = NULL;
}

/* A decoded chunk, in file order (on the reading thread). */
static void chunk_done(void *slot, void *arg)
{
	struct cslot *c = slot;
	struct reader *r = arg;

	tee_check(r);
	r->res->read_to = c->off + r->chl + c->comp_len;
	r->queued -= c->ahead;
	c->ahead = 0;
	if (c->status != CS_OK) {
		kx_kxp_damage_slot(r, c);
		return;
	}
	if (c->kind == CS_EVENTS)
		kx_kxp_slot_commit(&r->dest, c);
	r->res->chunks++;
}

static const struct kx_workq_ops chunk_ops = {
        .run = kx_kxp_slot_run,
        .done = chunk_done,
        .wctx_new = kx_kxp_unpacker_new,
        .wctx_free = kx_kxp_unpacker_free,
};

/* n bytes at off into the slot (or pointed at, from memory); -1 on a read error. */
static int src_fill(struct src *s, struct cslot *c, uint64_t off, size_t n)
{
	const uint8_t *p;

	if (s->mem) {
		c->comp = s->mem + off;
		return 0;
	}
	if (kx_reserve((void **)&c->cbuf, &c->ccap, n ? n : 1, 1)) {
		s->ioerr = ENOMEM;
		return -1;
	}
	/* src_get's buffer is the reading thread's; the slot needs its own copy. */
	p = kx_kxp_src_get(s, off, n);
	if (!p)
		return -1;
	memcpy(c->cbuf, p, n);
	c->comp = c->cbuf;
	return 0;
}

static const char *read_trailer(struct reader *r, struct cslot *c, void *zs)
{
	struct kx_capinfo *tmp;

	if (crc32(0, c->comp, c->comp_len) != c->dcrc)
		return "trailer: data checksum mismatch";
	if (!zs || kx_reserve((void **)&c->raw, &c->raw_cap, c->raw_len ? c->raw_len : 1, 1))
		return "trailer too large to decompress here: out of memory";
	if (kx_kxp_unpack(c, zs))
		return "trailer: decompression failed";
	tmp = malloc(sizeof(*tmp));
	if (!tmp || kx_tlv_capinfo_decode(c->raw, c->raw_len, tmp)) {
		free(tmp);
		return tmp ? "trailer: bad capture info" : "trailer: out of memory";
	}
	memcpy(r->ci, tmp, sizeof(*tmp));
	free(tmp);
	return NULL;
}

/* Fills slot c with the chunk of header ch at off, numbered num. */
static void slot_set(struct cslot *c, const struct chdr *ch, uint64_t off, uint64_t num)
{
	c->kind = ch->type == CHUNK_EVENTS ? CS_EVENTS : CS_SKIP;
	c->num = num;
	c->off = off;
	c->raw_len = ch->raw_len;
	c->comp_len = ch->comp_len;
	c->nrec = ch->nrec;
	c->dcrc = ch->dcrc;
}

/*
 * Reads one whole chunk of header ch at off, one at a time. Returns 0 or -1
 * on a read error (s->ioerr set, or the file shrank).
 */
static int read_one(struct reader *r, struct cslot *c, void *zs, const struct chdr *ch,
                    uint64_t off)
{
	const char *why;

	slot_set(c, ch, off, kx_kxp_chunk_number(r, ch, off));
	if (ch->type != CHUNK_EVENTS && ch->type != CHUNK_TRAILER) {
		/* A later writer's chunk kind: its header checked out, so skip it whole. */
		r->res->chunks++;
		return 0;
	}
	if (src_fill(r->src, c, off + r->chl, ch->comp_len))
		return -1;
	if (ch->type == CHUNK_EVENTS) {
		kx_kxp_slot_run(c, zs, r);
		chunk_done(c, r);
		return 0;
	}
	why = read_trailer(r, c, zs);
	if (why) {
		kx_kxp_note_damage(r, c->num, 1, off, r->chl + (uint64_t)ch->comp_len, why);
		return 0;
	}
	r->res->chunks++;
	r->trailer = 1;
	return 0;
}

/* Has the sink asked to stop reading? */
static int sink_stopped(const struct reader *r)
{
	const struct kx_kxp_visitor *v = r->dest.sink;

	return v && v->stop && __atomic_load_n(v->stop, __ATOMIC_RELAXED);
}

/*
 * Reads chunks from off, one at a time: every case but a whole events (or
 * unknown) chunk ends here. Damage is skipped over; the trailer or the end
 * of the file ends it. Returns 0, or -1 on an I/O error (message set).
 */

static int read_chunks_seq(struct reader *r, struct cslot *c, void *zs, uint64_t off)
{
	struct src *s = r->src;

	while (off < s->size && !r->trailer && !sink_stopped(r)) {
		size_t n = s->size - off < r->chl ? (size_t)(s->size - off) : r->chl;
		const uint8_t *h = kx_kxp_src_get(s, off, n);
		struct chdr ch;

		if (!h)
			goto ioerr;
		if (n < r->chl || kx_kxp_chdr_parse(h, r->chl, &ch)) {
			off = kx_kxp_skip_bad(r, off, h, "bad chunk header");
			if (off == UINT64_MAX)
				goto ioerr;
			continue;
		}
		if (s->size - off - r->chl < ch.comp_len) {
			r->res->bad_tail_bytes = s->size - off;
			r->cut_chunk = kx_kxp_chunk_number(r, &ch, off);
			r->cut_off = off;
			break;
		}
		if (read_one(r, c, zs, &ch, off))
			goto ioerr;
		off += r->chl + ch.comp_len;
	}
	kx_kxp_end_stretch(r);
	if (r->trailer)
		r->res->bad_tail_bytes = s->size - off;
	else
		r->res->truncated = 1;
	return 0;
ioerr:
	if (s->ioerr) {
		kx_kxp_msg(r, "cannot read: %s", strerror(s->ioerr));
		return -1;
	}
	/* The file shrank while we read it. */
	r->res->truncated = 1;
	r->res->bad_tail_bytes = 0;
	r->cut_chunk = r->nseen + 1;
	r->cut_off = off;
	return 0;
}

/*
 * Hands whole chunks of the known kinds to the work queue, in file order,
 * from off; returns where it stopped: the trailer, the end, or anything
 * the one-at-a-time reader has to judge and report.
 */
static uint64_t queue_chunks(struct reader *r, struct kx_workq *q, uint64_t off)
{
	struct src *s = r->src;

	while (s->size - off >= r->chl && !sink_stopped(r)) {
		const uint8_t *h = kx_kxp_src_get(s, off, r->chl);
		struct chdr ch;
		struct cslot *c;

		tee_check(r);
		/* Numbers that skip are for the one-at-a-time reader to note. */
		if (!h || kx_kxp_chdr_parse(h, r->chl, &ch) ||
		    s->size - off - r->chl < ch.comp_len || ch.type == CHUNK_TRAILER ||
		    (r->version >= 3 && ch.num != r->nseen + 1))
			break;
		c = kx_workq_get(q);
		slot_set(c, &ch, off, r->nseen + 1);
		c->npf = 0;
		if (c->kind == CS_EVENTS && r->store && c->nrec <= PEND_MAX) {
			/* Where its ioctls start at most (every record queued an
			 * ioctl): memory reserved only for the chunks in flight, so
			 * a file of other records too reserves no more than it uses. */
			size_t ahead = kx_store_ioctl_count(r->store) + r->queued;
			size_t to = kx_store_ioctl_reserve(r->store, ahead + c->nrec);

			c->npf = kx_store_ioctl_ranges(r->store, ahead, to, c->pf, PF_MAX);
			c->ahead = c->nrec;
			r->queued += c->nrec;
		}
		if (c->kind == CS_EVENTS && src_fill(s, c, off + r->chl, ch.comp_len)) {
			/* Not queued: the one-at-a-time reader meets the error again. */
			r->queued -= c->ahead;
			c->ahead = 0;
			s->ioerr = 0;
			c->kind = CS_SKIP;
			c->status = CS_OK;
			break;
		}
		r->nseen++;
		kx_workq_put(q, c);
		off += r->chl + ch.comp_len;
	}
	return off;
}

static int read_chunks(struct reader *r, uint64_t off)
{
	/* About 40 KiB per chunk: a small file is not worth the threads. */
	int workers = kx_workq_workers((size_t)((r->src->size - off) / (256u * 1024)));
	struct kx_workq *q = NULL;
	struct cslot last;
	void *zs;
	int rc;

	if (workers) {
		q = kx_workq_new(workers, (size_t)workers + 2, sizeof(struct cslot), &chunk_ops, r);
		if (q) {
			off = queue_chunks(r, q, off);
			kx_workq_finish(q);
			kx_workq_each(q, kx_kxp_slot_free);
			kx_workq_free(q);
		}
	}
	memset(&last, 0, sizeof(last));
	zs = kx_kxp_unpacker_new(r);
	rc = read_chunks_seq(r, &last, zs, off);
	kx_kxp_unpacker_free(zs, NULL);
	kx_kxp_slot_free(&last, NULL);
	if (!rc)
		kx_kxp_say_losses(r);
	return rc;
}

static int read_src(struct src *s, const struct dest *d, struct kx_capinfo *ci,
                    struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct kx_kxp_read_result lres;
	struct kx_capinfo *lci = NULL;
	struct reader r = {0};
	uint32_t hlen;
	int ret = -1;

	if (!res)
		res = &lres;
	memset(res, 0, sizeof(*res));
	if (!ci) {
		lci = malloc(sizeof(*lci));
		if (!lci) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		ci = lci;
	}
	if (errlen)
		err[0] = '\0';
	r.src = s;
	res->size = s->size;
	r.dest = *d;
	r.store = d->store;
	r.ci = ci;
	r.res = res;
	r.err = err;
	r.errlen = errlen;
	hlen = read_header(&r);
	if (hlen && d->sink && d->sink->header)
		d->sink->header(d->sink->ctx, ci);
	if (hlen)
		ret = read_chunks(&r, hlen);
	/* Symbols arrive in batches through the file: lookups start now (a
	 * store a tee read gave up is the caller's to free). */
	if (r.dest.store && kx_store_samples(r.dest.store))
		kx_symres_settle(kx_samples_syms(kx_store_samples(r.dest.store)));
	if (d->sink && d->sink->syms)
		kx_symres_settle(d->sink->syms);
	free(lci);
	return ret;
}

static int read_mem(const void *buf, size_t len, const struct dest *d, struct kx_capinfo *ci,
                    struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct src s = {0};

	/* A non-NULL pointer even for an empty input, so mem mode is chosen. */
	s.mem = buf ? buf : (const uint8_t *)"";
	s.size = buf ? len : 0;
	s.fd = -1;
	return read_src(&s, d, ci, res, err, errlen);
}

static int read_path(const char *path, const struct dest *d, struct kx_capinfo *ci,
                     struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct src s = {0};
	struct stat st;
	int ret;

	s.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s.fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(s.fd, &st)) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		close(s.fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(s.fd);
		return -1;
	}
	s.size = (uint64_t)st.st_size;
	s.name = path;
	ret = read_src(&s, d, ci, res, err, errlen);
	free(s.buf);
	close(s.fd);
	return ret;
}

int kx_kxp_read_mem(const void *buf, size_t len, struct kx_store *store, struct kx_capinfo *ci,
                    struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct dest d = {store, NULL};

	return read_mem(buf, len, &d, ci, res, err, errlen);
}

int kx_kxp_read(const char *path, struct kx_store *store, struct kx_capinfo *ci,
                struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct dest d = {store, NULL};

	return read_path(path, &d, ci, res, err, errlen);
}

int kx_kxp_read_stream_tee(const char *path, const struct kx_kxp_visitor *sink,
                           struct kx_store *store, struct kx_capinfo *ci,
                           struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	struct dest d = {store, sink};

	return read_path(path, &d, ci, res, err, errlen);
}

int kx_kxp_read_stream(const char *path, const struct kx_kxp_visitor *sink, struct kx_capinfo *ci,
                       struct kx_kxp_read_result *res, char *err, size_t errlen)
{
	return kx_kxp_read_stream_tee(path, sink, NULL, ci, res, err, errlen);
}

int kx_kxp_read_stream_mem(const void *buf, size_t len, const struct kx_kxp_visitor *sink,
                           struct kx_capinfo *ci, struct kx_kxp_read_result *res, char *err,
                           size_t errlen)
{
	struct dest d = {NULL, sink};

	return read_mem(buf, len, &d, ci, res, err, errlen);
}
