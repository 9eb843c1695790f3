/*
 * The .kxp record file. Owns the on-disk format: a versioned header carrying
 * struct kx_capinfo, then zstd-compressed chunks each with a CRC32, then a
 * trailer chunk with the final capinfo (stop clock, loss counters). Each
 * chunk header starts with a magic, carries the chunk's number and its own
 * CRC, so a reader finds the next chunk again after damage: a corrupt chunk
 * is skipped and reported, every intact chunk after it and the trailer are
 * kept. Files cut
 * short are readable up to their last whole chunk; bad input is rejected
 * with a message, never a crash. docs/kxp-format.md describes the format for
 * users; io/kxp_layout.h the bytes, io/tlv.h the capture info's, and
 * io/kxp_samples.h and io/kxp_drm.h the layout of their records. The
 * writer is io/kxp_write.c; the reader io/kxp_read.c, with its chunk
 * unpacking (io/kxp_unpack.c) and damage recovery (io/kxp_recover.c).
 */
#ifndef KX_KXP_H
#define KX_KXP_H

#include <stddef.h>
#include <stdio.h>

#include "model/capinfo.h"
#include "model/counter.h"
#include "model/drmusage.h"
#include "model/event.h"
#include "model/sample.h"
#include "model/store.h"
#include "model/symres.h"
#include "util/grow.h"

/* 5: DRM usage records (io/kxp_drm.h), which a reader of version 4 would
 * skip without a word, so it refuses the file instead; 4 (annotation,
 * sample, counter and symbol records), 3 (numbered chunks), 2 (zstd
 * chunks) and 1 (zlib) are still read. */
#define KX_KXP_VERSION 5

struct kx_kxp_writer;

/* Writes the header into a temporary file next to path (util/outfile.h).
 * NULL on error with a message in err; path itself is untouched. */
struct kx_kxp_writer *kx_kxp_create(const char *path, const struct kx_capinfo *ci, char *err,
                                    size_t errlen);

/* Where a streamed record goes (a daemon's socket): write gets each piece
 * whole, the header first, then one chunk at a time, the trailer last, and
 * returns 0 or an errno (the writer then fails as on a write error). The
 * pieces concatenated are the bytes kx_kxp_create would have written. */
struct kx_kxp_stream {
	int (*write)(void *ctx, const void *p, size_t n);
	void *ctx;
};
/* Same as kx_kxp_create, into out (copied) instead of a file; kx_kxp_close
 * then writes the trailer and renames nothing. */
struct kx_kxp_writer *kx_kxp_create_stream(const struct kx_kxp_stream *out,
                                           const struct kx_capinfo *ci, char *err, size_t errlen);
/* Buffer events; a chunk is compressed and written when the buffer fills. */
int kx_kxp_add_ioctl(struct kx_kxp_writer *w, const struct kx_ioctl *e, const uint8_t *arg);
int kx_kxp_add_task(struct kx_kxp_writer *w, const struct kx_task *t);
int kx_kxp_add_job(struct kx_kxp_writer *w, const struct kx_job *j);
/* A CPU sample or off-CPU interval, its frames as addresses. */
int kx_kxp_add_sample(struct kx_kxp_writer *w, const struct kx_sample *s);
/* The counters of one traced call (record --counters). */
int kx_kxp_add_ctr(struct kx_kxp_writer *w, const struct kx_ctr_ev *e);
/* One DRM usage row (record --drm-usage). */
int kx_kxp_add_drm(struct kx_kxp_writer *w, const struct kx_drm_ev *e);
/* A resolved symbol of the table r: the reader puts it in the store's samples. */
int kx_kxp_add_sym(struct kx_kxp_writer *w, const struct kx_symres *r,
                   const struct kx_symres_entry *e);
/* name and cat: PUSH, MARK, START (NULL: ""); at most KX_ANN_NAME_MAX - 1 and
 * KX_ANN_CAT_MAX - 1 bytes kept. */
int kx_kxp_add_ann(struct kx_kxp_writer *w, const struct kx_ann *a, const char *name,
                   const char *cat);
/* Writes the pending chunk now (e.g. once a second so a crash loses little). */
int kx_kxp_flush(struct kx_kxp_writer *w);
/* Flushes, writes the trailer with ci, renames the file into place (an
 * existing path is kept as path.old). Returns 0, or -1 (err filled) with the
 * temporary file removed and path untouched. Frees w. */
int kx_kxp_close(struct kx_kxp_writer *w, const struct kx_capinfo *ci, char *err, size_t errlen);
/* Removes the temporary file without touching path. Frees w. */
void kx_kxp_discard(struct kx_kxp_writer *w);
uint64_t kx_kxp_bytes_written(const struct kx_kxp_writer *w);
/* Where the bytes go until kx_kxp_close: the temporary file (a recorder that
 * is killed leaves its flushed chunks there). */
const char *kx_kxp_writing_path(const struct kx_kxp_writer *w);

/* A corrupt stretch of the file that was skipped, or chunks found missing. */
struct kx_kxp_damage {
	uint64_t chunk;   /* number of its first chunk, from 1 in file order */
	uint64_t nchunks; /* chunks lost there: 1 for one bad chunk, more when the chunk
	                   * numbers (version 3) say so, 0 when unknown (a stretch at the end) */
	uint64_t offset;  /* of its first byte (of the next chunk when missing), from the file start
	                   */
	uint64_t bytes;   /* bytes skipped: the chunk, or up to the next valid chunk header;
	                   * 0 for chunks missing without damage (their numbers skip) */
};

#define KX_KXP_DAMAGE_MAX 16 /* corrupt stretches listed one by one; more are only counted */

/* Result of reading a file: cut short and corrupt are told apart. */
struct kx_kxp_read_result {
	int truncated;           /* no trailer: capture did not finish, file cut, trailer corrupt */
	uint64_t chunks;         /* intact chunks read (trailer included) */
	uint64_t bad_tail_bytes; /* cut short: bytes at the end that are not a whole chunk */
	uint64_t ncorrupt;       /* corrupt stretches skipped (the first ones in corrupt[]) */
	uint64_t corrupt_bytes;  /* bytes they held, all of them */
	struct kx_kxp_damage corrupt[KX_KXP_DAMAGE_MAX];
	uint64_t size;    /* the file's bytes */
	uint64_t read_to; /* bytes read so far: a streaming read's callbacks get the records
	                   * of the chunk that ends there */
};

/*
 * Reads path into store (events) and ci (header, overwritten by the trailer
 * when present). Returns 0 on success (possibly cut short, corrupt in places
 * or without trailer: see res, and err says what was lost), -1 when
 * the file is not a readable kxprof record (err says why: not found, not a
 * kxprof file, unsupported version N, header corrupt, ...).
 */
int kx_kxp_read(const char *path, struct kx_store *store, struct kx_capinfo *ci,
                struct kx_kxp_read_result *res, char *err, size_t errlen);
/* Same, from memory (for tests and fuzzing). */
int kx_kxp_read_mem(const void *buf, size_t len, struct kx_store *store, struct kx_capinfo *ci,
                    struct kx_kxp_read_result *res, char *err, size_t errlen);

/*
 * Streaming reads: the records handed over one by one, in file order, and
 * nothing kept (memory does not grow with the file). File order is the
 * order the recorder received them: per thread, the order they happened
 * (a thread's records share one ring buffer), across threads about the
 * time order (ioctls at their return). Checks, damage handling, messages
 * and results are those of kx_kxp_read: a corrupt chunk is skipped whole,
 * none of its records handed over.
 */
struct kx_kxp_visitor {
	void *ctx;
	/* Once the header is read, before any record; ci holds its facts (the
	 * trailer's replace them at the end). */
	void (*header)(void *ctx, const struct kx_capinfo *ci);
	/* arg: the argument bytes (in, then out), NULL when none. */
	void (*ioctl)(void *ctx, const struct kx_ioctl *e, const uint8_t *arg);
	void (*task)(void *ctx, const struct kx_task *t);
	void (*job)(void *ctx, const struct kx_job *j);
	/* a's name and cat ids are unused: the strings are given (PUSH, MARK,
	 * START; "" otherwise). */
	void (*ann)(void *ctx, const struct kx_ann *a, const char *name, const char *cat);
	/* Frames borrowed from the record for the call. */
	void (*sample)(void *ctx, const struct kx_sample *s);
	void (*ctr)(void *ctx, const struct kx_ctr_ev *e);
	void (*drm)(void *ctx, const struct kx_drm_ev *e);
	struct kx_symres
	        *syms; /* symbol records are added here (NULL: skipped), settled at the end */
	/* NULL, or a flag the callbacks set (__atomic_store_n) to end the read
	 * early, at the next chunk: ci, res and err then describe only what was
	 * read (a caller that stops has no use for the rest). */
	int *stop;
	/* kx_kxp_read_stream_tee: NULL, or a flag the callbacks set to stop
	 * filling the store, from the next chunk on (the store, left with the
	 * start of the file, is the caller's to free after the read). */
	int *drop_store;
};
/* NULL callbacks skip their records. Returns as kx_kxp_read. */
int kx_kxp_read_stream(const char *path, const struct kx_kxp_visitor *sink, struct kx_capinfo *ci,
                       struct kx_kxp_read_result *res, char *err, size_t errlen);
/*
 * A streaming read that also reads the file into store, as kx_kxp_read
 * would (a tee: every record to both), for a caller that may want the file
 * whole once it has seen it, without reading it twice; sink->drop_store
 * gives the store up on the way.
 */
int kx_kxp_read_stream_tee(const char *path, const struct kx_kxp_visitor *sink,
                           struct kx_store *store, struct kx_capinfo *ci,
                           struct kx_kxp_read_result *res, char *err, size_t errlen);
int kx_kxp_read_stream_mem(const void *buf, size_t len, const struct kx_kxp_visitor *sink,
                           struct kx_capinfo *ci, struct kx_kxp_read_result *res, char *err,
                           size_t errlen);

#endif /* KX_KXP_H */
