/*
 * Parallel gzip writer (see pgz.h). Owns the gzip framing, the per-thread
 * deflate streams and the history window handed from block to block.
 * The calling thread fills blocks and writes the compressed ones in order
 * (kx_workq consumes them there), so write errors keep their errno.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util/fdio.h"
#include "util/pgz.h"
#include "util/workq.h"

#define DICT 32768u /* deflate's window */

struct blk {
	char *in;       /* DICT bytes of history, then the block */
	size_t dict;    /* history bytes in front of the block */
	size_t len;     /* block bytes */
	int last;       /* Z_FINISH instead of a sync flush */
	uint8_t *out;   /* compressed */
	size_t out_len; /* 0 with bad set: failed */
	size_t out_cap;
	uint32_t crc;
	int bad; /* zlib or memory failure */
};

struct kx_pgz {
	int fd;
	int level;
	struct kx_workq *q;
	struct blk *cur;
	char hist[DICT]; /* the last DICT input bytes so far */
	size_t nhist;
	uint32_t crc;
	uint32_t isize; /* input length mod 2^32, as gzip wants it */
	int err;        /* errno of the first failure */
	int zbad;       /* zlib failed */
	int ended;
};

static void *zctx_new(void *arg)
{
	struct kx_pgz *z = arg;
	z_stream *s = calloc(1, sizeof(*s));

	/* Raw deflate: the gzip framing is ours. */
	if (s && deflateInit2(s, z->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(s);
		s = NULL;
	}
	return s;
}

static void zctx_free(void *wctx, void *arg)
{
	(void)arg;
	if (wctx)
		deflateEnd(wctx);
	free(wctx);
}

static void blk_run(void *slot, void *wctx, void *arg)
{
	struct blk *b = slot;
	z_stream *s = wctx;
	int flush = b->last ? Z_FINISH : Z_SYNC_FLUSH;
	size_t need;

	(void)arg;
	b->out_len = 0;
	b->bad = 1;
	if (!b->in || !s || deflateReset(s) != Z_OK)
		return;
	b->crc = (uint32_t)crc32(0, (const Bytef *)b->in + DICT, (uInt)b->len);
	if (b->dict &&
	    deflateSetDictionary(s, (const Bytef *)b->in + DICT - b->dict, (uInt)b->dict) != Z_OK)
		return;
	/* Bound plus the sync flush's empty stored block and the final block. */
	need = deflateBound(s, (uLong)b->len) + 64;
	s->next_in = (Bytef *)b->in + DICT;
	s->avail_in = (uInt)b->len;
	for (;;) {
		int zr;

		/* Exact fit: deflateBound says how much the rest of the block needs. */
		if (b->out_cap - b->out_len < need) {
			uint8_t *p = realloc(b->out, b->out_len + need);

			if (!p)
				return;
			b->out = p;
			b->out_cap = b->out_len + need;
		}
		s->next_out = b->out + b->out_len;
		s->avail_out = (uInt)(b->out_cap - b->out_len);
		zr = deflate(s, flush);
		b->out_len = b->out_cap - s->avail_out;
		if (zr == Z_STREAM_ERROR)
			return;
		/* Done once a call returns with output space left (zlib's rule). */
		if (b->last ? zr == Z_STREAM_END : !s->avail_in && s->avail_out)
			break;
		need = 65536;
	}
	b->bad = 0;
}

static void write_all(struct kx_pgz *z, const void *p, size_t n)
{
	if (!z->err)
		z->err = kx_write_all(z->fd, p, n);
}

static void blk_done(void *slot, void *arg)
{
	struct blk *b = slot;
	struct kx_pgz *z = arg;

	if (z->err || z->zbad)
		return;
	if (b->bad) {
		z->zbad = 1;
		return;
	}
	z->crc = (uint32_t)crc32_combine(z->crc, b->crc, (z_off_t)b->len);
	z->isize += (uint32_t)b->len;
	write_all(z, b->out, b->out_len);
}

static void blk_free(void *slot, void *arg)
{
	struct blk *b = slot;

	(void)arg;
	free(b->in);
	free(b->out);
}

static const struct kx_workq_ops pgz_ops = {
        .run = blk_run,
        .done = blk_done,
        .wctx_new = zctx_new,
        .wctx_free = zctx_free,
};

struct kx_pgz *kx_pgz_new(int fd, int level)
{
	/* gzip header: deflate, no name, no mtime, "fastest" when level 1, Unix. */
	uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, level == 1 ? 4 : 0, 3};
	struct kx_pgz *z = calloc(1, sizeof(*z));
	int workers = kx_workq_workers(SIZE_MAX);

	if (!z)
		return NULL;
	z->fd = fd;
	z->level = level;
	/* Two blocks per worker keep them busy while the caller writes. */
	z->q = kx_workq_new(workers, (size_t)2 * workers + 2, sizeof(struct blk), &pgz_ops, z);
	if (!z->q) {
		free(z);
		return NULL;
	}
	write_all(z, hdr, sizeof(hdr));
	return z;
}

char *kx_pgz_next(struct kx_pgz *z)
{
	struct blk *b = kx_workq_get(z->q);

	if (!b->in) {
		b->in = malloc(DICT + KX_PGZ_BLOCK);
		if (!b->in)
			z->zbad = 1; /* nothing to fill: kx_pgz_put passes it on failed */
	}
	z->cur = b;
	if (!b->in)
		return NULL;
	memcpy(b->in + DICT - z->nhist, z->hist + DICT - z->nhist, z->nhist);
	b->dict = z->nhist;
	return b->in + DICT;
}

void kx_pgz_put(struct kx_pgz *z, size_t len, int last)
{
	struct blk *b = z->cur;
	const char *data;

	z->cur = NULL;
	if (!b)
		return;
	if (!b->in) {
		/* Keep the ring in step; blk_run fails it. */
		b->len = 0;
		b->dict = 0;
		b->bad = 1;
		kx_workq_put(z->q, b);
		return;
	}
	b->len = len;
	b->last = last;
	data = b->in + DICT;
	/* The history the next block is primed with. */
	if (len >= DICT) {
		memcpy(z->hist, data + len - DICT, DICT);
		z->nhist = DICT;
	} else if (len) {
		size_t keep = z->nhist + len > DICT ? DICT - len : z->nhist;

		memmove(z->hist + DICT - keep - len, z->hist + DICT - keep, keep);
		memcpy(z->hist + DICT - len, data, len);
		z->nhist = keep + len;
	}
	if (last)
		z->ended = 1;
	kx_workq_put(z->q, b);
}

int kx_pgz_finish(struct kx_pgz *z, int *err_no, char *msg, size_t msglen)
{
	uint8_t tail[8];

	if (!z->ended) {
		/* The block handed out last (if any) ends the stream. */
		if (!z->cur)
			kx_pgz_next(z);
		kx_pgz_put(z, 0, 1);
	}
	kx_workq_finish(z->q);
	for (int i = 0; i < 4; i++) {
		tail[i] = (uint8_t)(z->crc >> (8 * i));
		tail[4 + i] = (uint8_t)(z->isize >> (8 * i));
	}
	if (!z->zbad)
		write_all(z, tail, sizeof(tail));
	*err_no = z->err;
	if (z->err)
		return -1;
	if (z->zbad) {
		snprintf(msg, msglen, "zlib: compression failed (out of memory?)");
		return -1;
	}
	return 0;
}

int kx_pgz_error(const struct kx_pgz *z)
{
	return z->err ? z->err : z->zbad ? EIO : 0;
}

void kx_pgz_free(struct kx_pgz *z)
{
	if (!z)
		return;
	/* Nothing runs once finished: the buffers can go. */
	kx_workq_finish(z->q);
	kx_workq_each(z->q, blk_free);
	kx_workq_free(z->q);
	free(z);
}

int kx_gzip_buf(const void *in, size_t n, int level, struct kx_bytes *out)
{
	z_stream zs;
	size_t bound;
	uint8_t *p;
	int zr;

	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip header and trailer around the deflate stream. */
	if (n > UINT32_MAX || deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
		return -1;
	bound = deflateBound(&zs, (uLong)n);
	p = kx_bytes_room(out, bound);
	if (!p) {
		deflateEnd(&zs);
		return -1;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = p;
	zs.avail_out = (uInt)bound;
	zr = deflate(&zs, Z_FINISH);
	if (zr == Z_STREAM_END)
		out->len += zs.total_out;
	deflateEnd(&zs);
	return zr == Z_STREAM_END ? 0 : -1;
}
