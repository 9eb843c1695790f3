/*
 * The .kxp record file's byte layout (see kxp.h), private to io/: what its
 * writer (kxp_write.c) and reader (kxp_read.c, kxp_unpack.c, kxp_recover.c)
 * share. All integers are little-endian.
 *
 *   header   "KXPROF\0\0", u32 version, u32 header length (whole header),
 *            capture info as TLV, u32 CRC32 of everything before it
 *   chunk    "KXCK", u32 type (1 events, 2 trailer), u32 raw length,
 *            u32 compressed length, u32 record count, u32 CRC32 of the
 *            compressed bytes, u32 chunk number (from 1, the trailer's
 *            included), u32 CRC32 of these 28 header bytes, then one zstd
 *            frame. Versions 1 and 2, still read, have no chunk number (a
 *            24-byte header before its CRC); version 1 chunks hold a zlib
 *            stream.
 *   trailer  a chunk whose raw bytes are the final capture info as TLV
 *
 * The capture info's TLV is io/tlv.h's.
 *
 * Event records: u8 type, varint payload length, payload. Readers skip
 * unknown record types and payload bytes past the fields they know.
 * Varints are LEB128 (util/pbwire.h); signed values are zigzagged; ts is a delta from the
 * previous record's ts in the same chunk (ioctls arrive in completion order,
 * so it may be negative). Each chunk decodes on its own.
 *   ioctl (1): u8 flags, tid, zz ts delta, dur, then only what the flags do
 *              not say repeats the thread's previous ioctl in the chunk:
 *              pid; u8 fkind, u8 drv, dev, zz fd; u32 cmd, xfer_cmd; zz ret
 *              (absent when 0); cpu; offcpu_us (IF_OFFCPU); u8 in len,
 *              u8 out len, bytes (IF_ARG)
 *   task (2):  zz ts delta, pid, tid, ppid, what, u8 comm len, comm bytes;
 *              u8 cmd len, cmd bytes (the process's command line, 0 bytes when
 *              not read: older readers skip it, older files end before it)
 *   job (3):   zz ts delta, src, phase, flags, dev, pid, tid, ctx, seqno,
 *              aux, aux2, u8 ring len, ring bytes
 *   sample (4), off-CPU (5), symbol (6), counters (7): see io/kxp_samples.h
 *              (version 4)
 *   annotation (10, version 4): u8 what, u8 flags, tid, zz ts delta, pid,
 *              depth; POP/END: zz (ts - begin); START/END: id;
 *              PUSH/MARK/START: u8 name len, name bytes, u8 category len,
 *              category bytes
 */
#ifndef KX_KXP_LAYOUT_H
#define KX_KXP_LAYOUT_H

#include <stdint.h>

#include "model/event.h"

#define FILE_MAGIC  "KXPROF\0\0" /* 8 bytes */
#define CHUNK_MAGIC "KXCK"       /* 4 bytes */

#define HDR_FIXED     16 /* magic, version, header length */
#define HDR_MAX       (1u << 20)
#define CHDR_LEN      32 /* chunk header; 28 in versions 1 and 2 */
#define CHDR_LEN_V2   28
#define CHUNK_EVENTS  1
#define CHUNK_TRAILER 2
#define RAW_MAX       (64u << 20) /* a hostile length cannot make us allocate more */

#define REC_IOCTL 1
#define REC_TASK  2
#define REC_JOB   3
#define REC_ANN   10

/* ioctl record flags: which fields repeat this thread's previous ioctl. */
#define IF_SAME_PID  0x01
#define IF_SAME_FILE 0x02 /* fkind, drv, dev, fd */
#define IF_SAME_CMD  0x04 /* cmd, xfer_cmd */
#define IF_SAME_CPU  0x08
#define IF_RET_ZERO  0x10
#define IF_ARG       0x20 /* argument lengths and bytes follow */
#define IF_OFFCPU    0x40 /* off-CPU time follows (absent: 0, not measured) */
#define IF_KNOWN     0x7f

/*
 * Per-chunk state shared by writer and reader: the ts delta base and, per
 * thread slot, the fields of that thread's last ioctl. A thread mostly
 * repeats itself, so most records carry only tid, ts, dur and flags. Slots
 * are direct-mapped by tid; a collision just means fields are written out.
 */
#define THR_SLOTS 256
struct thr_ctx {
	uint32_t tid, pid, dev, cmd, xfer_cmd;
	int32_t fd;
	uint16_t cpu;
	uint8_t fkind, drv, used;
};

struct chunk_ctx {
	uint64_t prev_ts;
	struct thr_ctx thr[THR_SLOTS];
};

static inline struct thr_ctx *thr_slot(struct chunk_ctx *c, uint32_t tid)
{
	return &c->thr[(uint32_t)(tid * 2654435761u) >> 24];
}

static inline void thr_remember(struct thr_ctx *t, const struct kx_ioctl *e)
{
	t->used = 1;
	t->tid = e->tid;
	t->pid = e->pid;
	t->dev = e->dev;
	t->cmd = e->cmd;
	t->xfer_cmd = e->xfer_cmd;
	t->fd = e->fd;
	t->cpu = (uint16_t)kx_ioctl_cpu(e);
	t->fkind = e->fkind;
	t->drv = e->drv;
}

#endif /* KX_KXP_LAYOUT_H */
