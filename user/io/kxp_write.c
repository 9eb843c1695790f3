/*
 * The .kxp writer (io/kxp.h): buffers records, encodes them in the layout of
 * io/kxp_layout.h, compresses each chunk with zstd and writes it with its
 * CRCs, into a temporary file renamed into place at the end or into a
 * stream (a daemon's socket); the header and trailer carry the capture info
 * (io/tlv.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "io/kxp.h"
#include "io/kxp_bytes.h"
#include "io/kxp_drm.h"
#include "io/kxp_layout.h"
#include "io/kxp_samples.h"
#include "io/tlv.h"
#include "util/fdio.h"
#include "util/outfile.h"
#include "util/pbwire.h"

#define CHUNK_RAW (256u * 1024) /* a chunk is written once this much is pending */
#define REC_MAX   1024          /* worst-case encoded record, arguments included */
/* Room past CHUNK_RAW for the largest record of any kind, framing included. */
#define REC_ROOM (KX_KXP_SAMPLE_MAX > REC_MAX ? KX_KXP_SAMPLE_MAX + 16 : REC_MAX + 16)
/* zstd level 1: the writer runs beside the capture. On flood chunks it
 * compresses ~1.8x faster than zlib level 1, and the files come out ~14%
 * smaller (tests/bench/history.md). */
#define ZLEVEL 1

struct kx_kxp_writer {
	int fd;                      /* of.fd: the temporary file; -1 when streaming */
	struct kx_kxp_stream stream; /* where the bytes go instead, when write is set */
	char *path;                  /* as given, for messages */
	struct kx_outfile of;
	uint8_t *raw; /* records of the pending chunk */
	size_t raw_len;
	uint32_t nrec;
	uint32_t nchunks;     /* chunks written: the last one's number */
	struct chunk_ctx ctx; /* reset per chunk */
	uint8_t *out;         /* chunk header + compressed bytes */
	size_t out_cap;
	ZSTD_CCtx *zc;
	uint64_t written;
	int failed; /* sticky: later calls fail, close reports err */
	char err[512];
};

static void werr(struct kx_kxp_writer *w, int e)
{
	if (!w->failed)
		snprintf(w->err, sizeof(w->err), "cannot write %s: %s", w->path, strerror(e));
	w->failed = 1;
}

static int write_all(struct kx_kxp_writer *w, const uint8_t *p, size_t n)
{
	int e = w->stream.write ? w->stream.write(w->stream.ctx, p, n) : kx_write_all(w->fd, p, n);

	if (e) {
		werr(w, e);
		return -1;
	}
	w->written += n;
	return 0;
}

static int write_chunk(struct kx_kxp_writer *w, uint32_t type, const uint8_t *raw, size_t len,
                       uint32_t nrec)
{
	size_t need = CHDR_LEN + ZSTD_compressBound(len), clen;
	uint8_t *h;

	if (w->failed)
		return -1;
	/* Exact fit: the compression bound of the largest chunk so far. */
	if (kx_reserve((void **)&w->out, &w->out_cap, need, 1)) {
		werr(w, ENOMEM);
		return -1;
	}
	clen = ZSTD_compressCCtx(w->zc, w->out + CHDR_LEN, need - CHDR_LEN, raw, len, ZLEVEL);
	if (ZSTD_isError(clen)) {
		snprintf(w->err, sizeof(w->err), "cannot write %s: compression failed (%s)",
		         w->path, ZSTD_getErrorName(clen));
		w->failed = 1;
		return -1;
	}
	h = w->out;
	memcpy(h, CHUNK_MAGIC, 4);
	put_le32(h + 4, type);
	put_le32(h + 8, (uint32_t)len);
	put_le32(h + 12, (uint32_t)clen);
	put_le32(h + 16, nrec);
	put_le32(h + 20, (uint32_t)crc32(0, w->out + CHDR_LEN, (uInt)clen));
	put_le32(h + 24, ++w->nchunks);
	put_le32(h + 28, (uint32_t)crc32(0, h, 28));
	return write_all(w, w->out, CHDR_LEN + clen);
}

static void writer_free(struct kx_kxp_writer *w)
{
	/* Unfinished: only the temporary file goes, the target is untouched. */
	if (w->fd >= 0)
		kx_outfile_abort(&w->of);
	free(w->path);
	free(w->raw);
	free(w->out);
	ZSTD_freeCCtx(w->zc);
	free(w);
}

/* A writer with its buffers, writing nowhere yet (fd -1); NULL when out of memory. */
static struct kx_kxp_writer *writer_new(const char *path, char *err, size_t errlen)
{
	struct kx_kxp_writer *w = calloc(1, sizeof(*w));

	if (w)
		w->fd = -1;
	if (!w || !(w->path = strdup(path)) || !(w->raw = malloc(CHUNK_RAW + REC_ROOM)) ||
	    !(w->zc = ZSTD_createCCtx())) {
		snprintf(err, errlen, "cannot create %s: out of memory", path);
		if (w)
			writer_free(w);
		return NULL;
	}
	return w;
}

/* Writes the file header with ci. w, or NULL (freed) with err. */
static struct kx_kxp_writer *write_header(struct kx_kxp_writer *w, const struct kx_capinfo *ci,
                                          char *err, size_t errlen)
{
	struct kx_bytes hdr = {0};
	uint8_t fixed[HDR_FIXED], crc[4];

	memcpy(fixed, FILE_MAGIC, 8);
	put_le32(fixed + 8, KX_KXP_VERSION);
	kx_bytes_put(&hdr, fixed, sizeof(fixed));
	if (ci)
		kx_tlv_capinfo_encode(&hdr, ci);
	if (!hdr.oom && hdr.len + 4 > HDR_MAX)
		hdr.oom = 1;
	if (!hdr.oom) {
		put_le32(hdr.p + 12, (uint32_t)(hdr.len + 4));
		put_le32(crc, (uint32_t)crc32(0, hdr.p, (uInt)hdr.len));
		kx_bytes_put(&hdr, crc, 4);
	}
	if (hdr.oom)
		werr(w, ENOMEM);
	else
		write_all(w, hdr.p, hdr.len);
	free(hdr.p);
	if (w->failed) {
		snprintf(err, errlen, "%s", w->err);
		writer_free(w);
		return NULL;
	}
	return w;
}

struct kx_kxp_writer *kx_kxp_create(const char *path, const struct kx_capinfo *ci, char *err,
                                    size_t errlen)
{
	struct kx_kxp_writer *w = writer_new(path, err, errlen);

	if (!w)
		return NULL;
	/* A temporary file renamed into place by kx_kxp_close; the file it
	 * replaces is kept as NAME.old. */
	if (kx_outfile_open(&w->of, path, KX_OUT_KEEP_OLD, err, errlen)) {
		writer_free(w);
		return NULL;
	}
	w->fd = w->of.fd;
	return write_header(w, ci, err, errlen);
}

struct kx_kxp_writer *kx_kxp_create_stream(const struct kx_kxp_stream *out,
                                           const struct kx_capinfo *ci, char *err, size_t errlen)
{
	struct kx_kxp_writer *w = writer_new("the record stream", err, errlen);

	if (!w)
		return NULL;
	w->stream = *out;
	return write_header(w, ci, err, errlen);
}

int kx_kxp_flush(struct kx_kxp_writer *w)
{
	if (w->failed)
		return -1;
	if (!w->nrec)
		return 0;
	if (write_chunk(w, CHUNK_EVENTS, w->raw, w->raw_len, w->nrec))
		return -1;
	w->raw_len = 0;
	w->nrec = 0;
	memset(&w->ctx, 0, sizeof(w->ctx));
	return 0;
}

/* Frames a payload as a record and cuts a chunk when enough is pending. */
static int add_record(struct kx_kxp_writer *w, uint8_t type, const uint8_t *pl, size_t len)
{
	uint8_t *p = w->raw + w->raw_len;

	*p++ = type;
	p = kx_pb_varint(p, len);
	memcpy(p, pl, len);
	w->raw_len = (size_t)(p + len - w->raw);
	w->nrec++;
	if (w->raw_len >= CHUNK_RAW)
		return kx_kxp_flush(w);
	return 0;
}

int kx_kxp_add_ioctl(struct kx_kxp_writer *w, const struct kx_ioctl *e, const uint8_t *arg)
{
	uint8_t pl[REC_MAX], *p = pl, flags = 0;
	size_t alen = arg ? (size_t)e->arg_in_len + e->arg_out_len : 0;
	struct thr_ctx *t = thr_slot(&w->ctx, e->tid);
	unsigned int cpu = kx_ioctl_cpu(e);

	if (w->failed)
		return -1;
	if (t->used && t->tid == e->tid) {
		if (t->pid == e->pid)
			flags |= IF_SAME_PID;
		if (t->fkind == e->fkind && t->drv == e->drv && t->dev == e->dev && t->fd == e->fd)
			flags |= IF_SAME_FILE;
		if (t->cmd == e->cmd && t->xfer_cmd == e->xfer_cmd)
			flags |= IF_SAME_CMD;
		if (t->cpu == cpu)
			flags |= IF_SAME_CPU;
	}
	if (!e->ret)
		flags |= IF_RET_ZERO;
	if (alen)
		flags |= IF_ARG;
	if (e->offcpu_us)
		flags |= IF_OFFCPU;

	*p++ = flags;
	p = kx_pb_varint(p, e->tid);
	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(e->ts - w->ctx.prev_ts)));
	p = kx_pb_varint(p, e->dur);
	if (!(flags & IF_SAME_PID))
		p = kx_pb_varint(p, e->pid);
	if (!(flags & IF_SAME_FILE)) {
		*p++ = e->fkind;
		*p++ = e->drv;
		p = kx_pb_varint(p, e->dev);
		p = kx_pb_varint(p, kx_pb_zigzag(e->fd));
	}
	if (!(flags & IF_SAME_CMD)) {
		put_le32(p, e->cmd);
		p += 4;
		p = kx_pb_varint(p, e->xfer_cmd);
	}
	if (!(flags & IF_RET_ZERO))
		p = kx_pb_varint(p, kx_pb_zigzag(e->ret));
	if (!(flags & IF_SAME_CPU))
		p = kx_pb_varint(p, cpu);
	if (flags & IF_OFFCPU)
		p = kx_pb_varint(p, e->offcpu_us);
	if (alen) {
		*p++ = e->arg_in_len;
		*p++ = e->arg_out_len;
		memcpy(p, arg, alen);
		p += alen;
	}
	w->ctx.prev_ts = e->ts;
	thr_remember(t, e);
	return add_record(w, REC_IOCTL, pl, (size_t)(p - pl));
}

int kx_kxp_add_task(struct kx_kxp_writer *w, const struct kx_task *t)
{
	uint8_t pl[REC_MAX], *p = pl;
	size_t n = strnlen(t->comm, KX_COMM_LEN - 1);
	size_t cn = strnlen(t->cmd, KX_CMD_LEN - 1);

	if (w->failed)
		return -1;
	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(t->ts - w->ctx.prev_ts)));
	p = kx_pb_varint(p, t->pid);
	p = kx_pb_varint(p, t->tid);
	p = kx_pb_varint(p, t->ppid);
	p = kx_pb_varint(p, t->what);
	*p++ = (uint8_t)n;
	memcpy(p, t->comm, n);
	p += n;
	*p++ = (uint8_t)cn; /* always: fields added later go after it */
	memcpy(p, t->cmd, cn);
	p += cn;
	p = kx_pb_varint(p, t->tp); /* 0 when unknown; older readers stop before it */
	w->ctx.prev_ts = t->ts;
	return add_record(w, REC_TASK, pl, (size_t)(p - pl));
}

int kx_kxp_add_job(struct kx_kxp_writer *w, const struct kx_job *j)
{
	uint8_t pl[REC_MAX], *p = pl;
	size_t n = strnlen(j->ring, sizeof(j->ring) - 1);

	if (w->failed)
		return -1;
	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(j->ts - w->ctx.prev_ts)));
	p = kx_pb_varint(p, j->src);
	p = kx_pb_varint(p, j->phase);
	p = kx_pb_varint(p, j->flags);
	p = kx_pb_varint(p, j->dev);
	p = kx_pb_varint(p, j->pid);
	p = kx_pb_varint(p, j->tid);
	p = kx_pb_varint(p, j->ctx);
	p = kx_pb_varint(p, j->seqno);
	p = kx_pb_varint(p, j->aux);
	p = kx_pb_varint(p, j->aux2);
	*p++ = (uint8_t)n;
	memcpy(p, j->ring, n);
	p += n;
	w->ctx.prev_ts = j->ts;
	return add_record(w, REC_JOB, pl, (size_t)(p - pl));
}

int kx_kxp_add_sample(struct kx_kxp_writer *w, const struct kx_sample *s)
{
	uint8_t pl[KX_KXP_SAMPLE_MAX];
	size_t n;

	if (w->failed)
		return -1;
	n = kx_kxp_enc_sample(pl, s, &w->ctx.prev_ts);
	return add_record(w, s->kind == KX_SAMPLE_OFFCPU ? KX_KXP_REC_OFFCPU : KX_KXP_REC_SAMPLE,
	                  pl, n);
}

int kx_kxp_add_ctr(struct kx_kxp_writer *w, const struct kx_ctr_ev *e)
{
	uint8_t pl[KX_KXP_SAMPLE_MAX];

	if (w->failed)
		return -1;
	return add_record(w, KX_KXP_REC_CTR, pl, kx_kxp_enc_ctr(pl, e, &w->ctx.prev_ts));
}

int kx_kxp_add_drm(struct kx_kxp_writer *w, const struct kx_drm_ev *e)
{
	uint8_t pl[KX_KXP_DRM_MAX];

	if (w->failed)
		return -1;
	return add_record(w, KX_KXP_REC_DRM, pl, kx_kxp_enc_drm(pl, e, &w->ctx.prev_ts));
}

int kx_kxp_add_sym(struct kx_kxp_writer *w, const struct kx_symres *r,
                   const struct kx_symres_entry *e)
{
	uint8_t pl[KX_KXP_SAMPLE_MAX];

	if (w->failed)
		return -1;
	return add_record(w, KX_KXP_REC_SYM, pl, kx_kxp_enc_sym(pl, r, e));
}

/* A string as u8 length and bytes, at most max - 1 of them. */
static uint8_t *put_short_str(uint8_t *p, const char *s, size_t max)
{
	size_t n = s ? strnlen(s, max - 1) : 0;

	*p++ = (uint8_t)n;
	if (n)
		memcpy(p, s, n);
	return p + n;
}

int kx_kxp_add_ann(struct kx_kxp_writer *w, const struct kx_ann *a, const char *name,
                   const char *cat)
{
	uint8_t pl[REC_MAX], *p = pl;

	if (w->failed)
		return -1;
	*p++ = (uint8_t)a->what;
	*p++ = (uint8_t)a->flags;
	p = kx_pb_varint(p, a->tid);
	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(a->ts - w->ctx.prev_ts)));
	p = kx_pb_varint(p, a->pid);
	p = kx_pb_varint(p, a->depth);
	if (a->what == KX_ANN_POP || a->what == KX_ANN_END)
		p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(a->ts - a->begin)));
	if (a->what == KX_ANN_START || a->what == KX_ANN_END)
		p = kx_pb_varint(p, a->id);
	if (kx_ann_named(a->what)) {
		p = put_short_str(p, name, KX_ANN_NAME_MAX);
		p = put_short_str(p, cat, KX_ANN_CAT_MAX);
	}
	w->ctx.prev_ts = a->ts;
	return add_record(w, REC_ANN, pl, (size_t)(p - pl));
}

int kx_kxp_close(struct kx_kxp_writer *w, const struct kx_capinfo *ci, char *err, size_t errlen)
{
	int ret;

	kx_kxp_flush(w);
	/* Without ci no trailer is written: the file reads as unfinished. */
	if (ci && !w->failed) {
		struct kx_bytes b = {0};

		kx_tlv_capinfo_encode(&b, ci);
		if (b.oom)
			werr(w, ENOMEM);
		else
			write_chunk(w, CHUNK_TRAILER, b.p, b.len, 0);
		free(b.p);
	}
	/* Complete: renamed into place. Failed: nothing partial is left. */
	if (!w->failed && !w->stream.write) {
		w->fd = -1;
		if (kx_outfile_commit(&w->of, w->err, sizeof(w->err)))
			w->failed = 1;
	}
	ret = w->failed ? -1 : 0;
	if (ret)
		snprintf(err, errlen, "%s", w->err);
	else if (errlen)
		err[0] = '\0';
	writer_free(w);
	return ret;
}

void kx_kxp_discard(struct kx_kxp_writer *w)
{
	writer_free(w);
}

const char *kx_kxp_writing_path(const struct kx_kxp_writer *w)
{
	return w->of.tmp;
}

uint64_t kx_kxp_bytes_written(const struct kx_kxp_writer *w)
{
	return w->written;
}
