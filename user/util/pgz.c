/*
 * Parallel gzip writer (see pgz.h). Owns the gzip framing, the per-thread
 * deflate streams of the two engines (ISA-L's igzip, zlib) and the history
 * window handed from block to block. The calling thread fills blocks and
 * writes the compressed ones in order (kx_workq consumes them there), so
 * write errors keep their errno.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>

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
	enum kx_pgz_engine engine;
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

enum kx_pgz_engine kx_pgz_engine_env(void)
{
	const char *e = getenv("KXPROF_GZIP");

	return e && !strcmp(e, "zlib") ? KX_PGZ_ZLIB : KX_PGZ_ISAL;
}

const char *kx_pgz_engine_name(enum kx_pgz_engine e)
{
	return e == KX_PGZ_ZLIB ? "zlib" : "isa-l";
}

/* ---- ISA-L igzip: its level 1 (level 2 and 3 for higher zlib levels) ---- */

struct isal_ctx {
	struct isal_zstream s;
	uint32_t level;
	uint8_t *buf; /* the level's working memory */
	uint32_t buf_size;
};

static void *isal_ctx_new(int zlevel)
{
	struct isal_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->level = zlevel <= 1 ? 1 : zlevel <= 5 ? 2 : 3;
	c->buf_size = c->level == 1   ? ISAL_DEF_LVL1_DEFAULT
	              : c->level == 2 ? ISAL_DEF_LVL2_DEFAULT
	                              : ISAL_DEF_LVL3_DEFAULT;
	c->buf = malloc(c->buf_size);
	if (!c->buf) {
		free(c);
		return NULL;
	}
	return c;
}

static void isal_ctx_free(void *ctx)
{
	struct isal_ctx *c = ctx;

	if (c)
		free(c->buf);
	free(c);
}

/* Grows b->out to hold at least need more bytes. 0, or -1 on OOM. */
static int out_room(struct blk *b, size_t need)
{
	uint8_t *p;

	if (b->out_cap - b->out_len >= need)
		return 0;
	p = realloc(b->out, b->out_len + need);
	if (!p)
		return -1;
	b->out = p;
	b->out_cap = b->out_len + need;
	return 0;
}

/* Raw deflate of the block, primed with its history; sync flush unless last. */
static int isal_block(void *ctx, struct blk *b)
{
	struct isal_ctx *c = ctx;
	struct isal_zstream *s = &c->s;

	isal_deflate_init(s);
	s->level = c->level;
	s->level_buf = c->buf;
	s->level_buf_size = c->buf_size;
	s->gzip_flag = IGZIP_DEFLATE;
	s->flush = b->last ? NO_FLUSH : SYNC_FLUSH;
	s->end_of_stream = (uint16_t)(b->last != 0);
	if (b->dict && isal_deflate_set_dict(s, (uint8_t *)b->in + DICT - b->dict,
	                                     (uint32_t)b->dict) != COMP_OK)
		return -1;
	s->next_in = (uint8_t *)b->in + DICT;
	s->avail_in = (uint32_t)b->len;
	/* Room for text's usual ratio; incompressible input goes out as stored
	 * blocks, a little over its size: the room doubles until it fits. */
	if (out_room(b, b->len / 4 + 1024))
		return -1;
	for (;;) {
		s->next_out = b->out + b->out_len;
		s->avail_out = (uint32_t)(b->out_cap - b->out_len);
		if (isal_deflate(s) != COMP_OK)
			return -1;
		b->out_len = b->out_cap - s->avail_out;
		/* Done: the end written, or all input flushed with room to spare. */
		if (b->last ? s->internal_state.state == ZSTATE_END
		            : !s->avail_in && s->avail_out &&
		                      s->internal_state.state == ZSTATE_NEW_HDR)
			return 0;
		if (out_room(b, b->out_cap > 65536 ? b->out_cap : 65536))
			return -1;
	}
}

static uint32_t isal_crc(const void *p, size_t n)
{
	return crc32_gzip_refl(0, (const unsigned char *)p, (uint64_t)n);
}

/* ---- zlib ---- */

static void *zlib_ctx_new(int level)
{
	z_stream *s = calloc(1, sizeof(*s));

	/* Raw deflate: the gzip framing is ours. */
	if (s && deflateInit2(s, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(s);
		s = NULL;
	}
	return s;
}

static void zlib_ctx_free(void *ctx)
{
	if (ctx)
		deflateEnd(ctx);
	free(ctx);
}

static uint32_t zlib_crc(const void *p, size_t n)
{
	return (uint32_t)crc32(0, (const Bytef *)p, (uInt)n);
}

static int zlib_block(void *ctx, struct blk *b)
{
	z_stream *s = ctx;
	int flush = b->last ? Z_FINISH : Z_SYNC_FLUSH;
	size_t need;

	if (deflateReset(s) != Z_OK)
		return -1;
	if (b->dict &&
	    deflateSetDictionary(s, (const Bytef *)b->in + DICT - b->dict, (uInt)b->dict) != Z_OK)
		return -1;
	/* Bound plus the sync flush's empty stored block and the final block. */
	need = deflateBound(s, (uLong)b->len) + 64;
	s->next_in = (Bytef *)b->in + DICT;
	s->avail_in = (uInt)b->len;
	for (;;) {
		int zr;

		/* Exact fit: deflateBound says how much the rest of the block needs. */
		if (out_room(b, need))
			return -1;
		s->next_out = b->out + b->out_len;
		s->avail_out = (uInt)(b->out_cap - b->out_len);
		zr = deflate(s, flush);
		b->out_len = b->out_cap - s->avail_out;
		if (zr == Z_STREAM_ERROR)
			return -1;
		/* Done once a call returns with output space left (zlib's rule). */
		if (b->last ? zr == Z_STREAM_END : !s->avail_in && s->avail_out)
			return 0;
		need = 65536;
	}
}

/* ---- the engine of a writer ---- */

static const struct engine {
	void *(*ctx_new)(int level);
	void (*ctx_free)(void *ctx);
	int (*block)(void *ctx, struct blk *b); /* 0, or -1 on failure */
	uint32_t (*crc)(const void *p, size_t n);
} engines[] = {
        [KX_PGZ_ISAL] = {isal_ctx_new, isal_ctx_free, isal_block, isal_crc},
        [KX_PGZ_ZLIB] = {zlib_ctx_new, zlib_ctx_free, zlib_block, zlib_crc},
};

static void *wctx_new(void *arg)
{
	struct kx_pgz *z = arg;

	return engines[z->engine].ctx_new(z->level);
}

static void wctx_free(void *wctx, void *arg)
{
	struct kx_pgz *z = arg;

	engines[z->engine].ctx_free(wctx);
}

static void blk_run(void *slot, void *wctx, void *arg)
{
	struct blk *b = slot;
	struct kx_pgz *z = arg;
	const struct engine *e = &engines[z->engine];

	b->out_len = 0;
	b->bad = 1;
	if (!b->in || !wctx)
		return;
	b->crc = e->crc(b->in + DICT, b->len);
	b->bad = e->block(wctx, b) != 0;
	if (b->bad)
		b->out_len = 0;
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
        .wctx_new = wctx_new,
        .wctx_free = wctx_free,
};

struct kx_pgz *kx_pgz_new(int fd, int level)
{
	return kx_pgz_new_engine(fd, level, kx_pgz_engine_env());
}

struct kx_pgz *kx_pgz_new_engine(int fd, int level, enum kx_pgz_engine engine)
{
	/* gzip header: deflate, no name, no mtime, "fastest" when level 1, Unix. */
	uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, level == 1 ? 4 : 0, 3};
	struct kx_pgz *z = calloc(1, sizeof(*z));
	int workers = kx_workq_workers(SIZE_MAX);

	if (!z)
		return NULL;
	z->fd = fd;
	z->level = level;
	z->engine = engine == KX_PGZ_ZLIB ? KX_PGZ_ZLIB : KX_PGZ_ISAL;
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
		snprintf(msg, msglen, "%s: compression failed (out of memory?)",
		         kx_pgz_engine_name(z->engine));
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
