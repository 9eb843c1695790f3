/*
 * The .kxp reader's shared state, private to io/: the input (struct src),
 * the slots chunks are unpacked in (kxp_unpack.c), the reader itself
 * (kxp_read.c: header, chunk walk, the work queue) and the damage it notes
 * (kxp_recover.c).
 */
#ifndef KX_KXP_READER_H
#define KX_KXP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "io/kxp.h"
#include "io/kxp_layout.h"
#include "model/store.h"

/* Input bytes, from memory or read on demand from a file. */
struct src {
	const uint8_t *mem;
	int fd;
	uint64_t size;
	uint8_t *buf; /* file bytes of the last get */
	size_t cap;
	const char *name; /* path for messages, NULL for memory */
	int ioerr;        /* errno of a failed read */
};

/*
 * Chunks are checked and decoded on worker threads (kx_workq), each into
 * its own slot, and stored by the reading thread in file order. A chunk is
 * stored only once all its records decoded: they wait in the slot, so each
 * is decoded once (a chunk of more than PEND_MAX records, which the writer
 * never makes, is only checked there and decoded again into the store).
 * Ioctls wait as themselves, arg_off holding the offset of their argument
 * bytes in the raw chunk; tasks and jobs wait beside them, and kinds[]
 * keeps the order of a chunk's records.
 */
#define PEND_MAX 65536

/* An annotation waiting in a slot: its strings are offsets into the raw chunk. */
struct ann_stash {
	struct kx_ann a;
	uint32_t name_off, cat_off;
	uint8_t name_len, cat_len;
};
#define PF_MAX 24 /* store chunks one kxp chunk's ioctls usually span, and more */

enum { CS_EVENTS, CS_SKIP }; /* a chunk to decode, or one of a later writer's kinds */

/* A record checked on a worker and decoded into the store at commit. */
struct late {
	uint32_t off, len; /* its payload in the raw chunk */
	uint64_t prev_ts;  /* the chunk's running ts before it */
};
enum { CS_OK, CS_CRC, CS_INFLATE, CS_NOMEM, CS_RECORDS };

struct cslot {
	int kind;
	uint64_t num; /* chunk number, from 1 in file order */
	uint64_t off; /* of the chunk header */
	uint32_t raw_len, comp_len, nrec, dcrc;
	const uint8_t *comp; /* compressed bytes: in the caller's memory, or cbuf */
	uint8_t *cbuf;
	size_t ccap;
	uint8_t *raw; /* decompressed chunk */
	size_t raw_cap;
	int status;
	int twopass; /* records only checked: decoded again into the store */
	struct kx_ioctl *ioc;
	size_t nioc, ioc_cap;
	struct kx_task *task;
	size_t ntask, task_cap;
	struct kx_job *job;
	size_t njob, job_cap;
	struct late *late; /* sample and symbol records, decoded again at commit */
	size_t nlate, late_cap;
	struct ann_stash *ann; /* annotations, their strings in raw */
	size_t nann, ann_cap;
	uint8_t *kinds; /* record types in order */
	size_t nkinds, kinds_cap;
	struct chunk_ctx ctx;
	/* Store memory this chunk's ioctls will likely take: faulted in by the worker. */
	struct kx_store_range pf[PF_MAX];
	size_t npf;
	uint32_t ahead; /* its records counted in the reader's queued (0: not queued) */
};

/*
 * Where decoded records go: into a store (kx_kxp_read), or handed to a sink
 * one by one (kx_kxp_read_stream); NULL for both: only checked.
 */
struct dest {
	struct kx_store *store;
	const struct kx_kxp_visitor *sink;
};

struct reader {
	struct src *src;
	struct dest dest;       /* where records go */
	struct kx_store *store; /* dest.store */
	struct kx_capinfo *ci;
	struct kx_kxp_read_result *res;
	char *err;
	size_t errlen;
	uint32_t version; /* of the file: 1 zlib chunks, 2 zstd, 3 numbered chunks */
	uint32_t chl;     /* its chunk header length, bytes */
	uint64_t nseen;   /* chunks met so far, corrupt ones included */
	int trailer;      /* the trailer was read */
	/* A corrupt stretch not yet noted: its chunk count is known at the next chunk. */
	int pend;
	uint64_t pend_off, pend_bytes;
	const char *pend_why;
	uint64_t cut_chunk, cut_off; /* the chunk the file ends inside (number, offset), or 0 */
	const char *why[KX_KXP_DAMAGE_MAX]; /* why each listed stretch is corrupt */
	size_t queued;                      /* records of the chunks queued and not committed yet */
};

/* A chunk header that checks out: magic, header CRC, lengths within limits. */
struct chdr {
	uint32_t type, raw_len, comp_len, nrec, dcrc;
	uint32_t num; /* chunk number (version 3), else 0 */
};

/* kxp_read.c: n bytes at off (off + n <= size), valid until the next call;
 * NULL on error. */
const uint8_t *kx_kxp_src_get(struct src *s, uint64_t off, size_t n);
/* The chl bytes at h as a chunk header; -1 when they are not a valid one. */
int kx_kxp_chdr_parse(const uint8_t *h, uint32_t chl, struct chdr *c);
/* The message in err, after the file's name. */
void kx_kxp_msg(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* kxp_unpack.c: a worker's decompression state for the reader arg's file
 * version (kx_workq_ops.wctx_new), and its end. */
void *kx_kxp_unpacker_new(void *arg);
void kx_kxp_unpacker_free(void *wctx, void *arg);
/* The slot's chunk decompressed into c->raw, exactly raw_len bytes; -1 when corrupt. */
int kx_kxp_unpack(struct cslot *c, void *unpacker);
/* Checks, decompresses and decodes the slot's chunk (kx_workq_ops.run). */
void kx_kxp_slot_run(void *slot, void *unpacker, void *arg);
/* The slot's chunk checked out: its records go where d says, in file order. */
void kx_kxp_slot_commit(const struct dest *d, struct cslot *c);
/* Frees what the slot holds (not the slot). */
void kx_kxp_slot_free(void *slot, void *arg);

/* kxp_recover.c: the chunk of slot c was rejected (c->status): noted as damage. */
void kx_kxp_damage_slot(struct reader *r, const struct cslot *c);
/* Notes a corrupt stretch of len bytes at off: n chunks (0: unknown) from number num. */
void kx_kxp_note_damage(struct reader *r, uint64_t num, uint64_t n, uint64_t off, uint64_t len,
                        const char *why);
/* The bytes at off (h, up to a chunk header's length) do not start a valid
 * chunk: skips to the next that does, noting the stretch, or judges the
 * rest of the file. The offset to go on from (the file size when nothing is
 * left), or UINT64_MAX on a read error. */
uint64_t kx_kxp_skip_bad(struct reader *r, uint64_t off, const uint8_t *h, const char *why);
/* The number of the chunk of valid header ch at off, noting the corrupt
 * stretch or the missing chunks before it. */
uint64_t kx_kxp_chunk_number(struct reader *r, const struct chdr *ch, uint64_t off);
/* A corrupt stretch at the end of the file: how many chunks it held is unknown. */
void kx_kxp_end_stretch(struct reader *r);
/* What was lost, in err: corrupt chunks, then a cut or missing trailer. */
void kx_kxp_say_losses(struct reader *r);

#endif /* KX_KXP_READER_H */
