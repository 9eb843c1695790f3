/*
 * The .kxp record file (see kxp.h): owns its byte layout, the writer and the
 * reader. All integers are little-endian.
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
 * TLV: u16 tag, u32 length, value; devices, hooks, driver-call stats and
 * clocks nest TLVs; u64 arrays (histogram slots) are their LE bytes.
 * Readers skip unknown tags, so fields can be added without a new version.
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
 *
 * Damage: a chunk whose header checks out but whose data does not (data
 * CRC, decompression, records) is skipped whole. Bytes that do not start a
 * valid chunk header are skipped up to the next offset that does (magic,
 * header CRC, lengths within limits). Either way the stretch is noted
 * (chunk number, offset, bytes) and reading goes on, so every intact chunk
 * after it and the trailer are kept. A file that ends inside a chunk was
 * cut short: its last whole chunk is kept and the bytes after it counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "util/fdio.h"
#include "util/grow.h"
#include "util/outfile.h"
#include "util/pbwire.h"
#include "io/kxp.h"
#include "io/kxp_bytes.h"
#include "io/kxp_drm.h"
#include "io/kxp_samples.h"
#include "model/perfdata.h"
#include "util/workq.h"

static const uint8_t file_magic[8] = {'K', 'X', 'P', 'R', 'O', 'F', 0, 0};
static const uint8_t chunk_magic[4] = {'K', 'X', 'C', 'K'};

#define HDR_FIXED     16 /* magic, version, header length */
#define HDR_MAX       (1u << 20)
#define CHDR_LEN      32 /* chunk header; 28 in versions 1 and 2 */
#define CHDR_LEN_V2   28
#define CHUNK_EVENTS  1
#define CHUNK_TRAILER 2
#define CHUNK_RAW     (256u * 1024) /* a chunk is written once this much is pending */
#define RAW_MAX       (64u << 20)   /* a hostile length cannot make us allocate more */
#define REC_MAX       1024          /* worst-case encoded record, arguments included */
/* Room past CHUNK_RAW for the largest record of any kind, framing included. */
#define REC_ROOM (KX_KXP_SAMPLE_MAX > REC_MAX ? KX_KXP_SAMPLE_MAX + 16 : REC_MAX + 16)
/* zstd level 1: the writer runs beside the capture. On flood chunks it
 * compresses ~1.8x faster than zlib level 1, and the files come out ~14%
 * smaller (tests/bench/history.md). */
#define ZLEVEL 1

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

static struct thr_ctx *thr_slot(struct chunk_ctx *c, uint32_t tid)
{
	return &c->thr[(uint32_t)(tid * 2654435761u) >> 24];
}

static void thr_remember(struct thr_ctx *t, const struct kx_ioctl *e)
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

/* Capture info tags. Numbers are part of the format: never reuse one. */
enum {
	CI_HOSTNAME = 1,
	CI_KERNEL = 2,
	CI_CMDLINE = 3,
	CI_CLOCK_START = 4,
	CI_CLOCK_STOP = 5,
	CI_START_MONO = 6,
	CI_STOP_MONO = 7,
	CI_DEVICE = 8, /* repeated, nested */
	CI_HOOK = 9,   /* repeated, nested */
	CI_EMITTED = 10,
	CI_RECEIVED = 11,
	CI_DROPPED = 12,
	CI_NOT_STORED = 13,
	CI_INFLIGHT_FULL = 14,
	CI_PIDSET_FULL = 15,
	CI_ARG_FAULTS = 16,
	CI_RINGBUF_BYTES = 17,
	CI_ALL_PIDS = 18,
	CI_JOB_EMITTED = 19,
	CI_JOB_RECEIVED = 20,
	CI_JOB_DROPPED = 21,
	CI_DRVCALL = 22, /* repeated, nested */
	/* CPU samples (32 to 47) */
	CI_SAMPLE_HZ = 32,
	CI_SAMPLE_OFF_CPU = 33,
	CI_SAMPLE_CPUS = 34,
	CI_SAMPLE_EMITTED = 35,
	CI_SAMPLE_RECEIVED = 36,
	CI_SAMPLE_DROPPED = 37,
	CI_OFFCPU_EMITTED = 38,
	CI_OFFCPU_RECEIVED = 39,
	CI_OFFCPU_DROPPED = 40,
	CI_OFFCPU_NOSLOT = 41,
	CI_SAMPLE_STACKS = 42, /* u64 per enum kx_stack_loss */
	CI_SAMPLE_SYMS = 43,   /* u64 per enum kx_sym_stat */
	CI_SAMPLE_SYM_WARNING = 44,
	CI_SAMPLE_SYM_NS = 45,
	CI_COUNTER_NAMES = 46,
	CI_COUNTER_STATS = 47, /* u64 per enum kx_ctr_info_stat */
	/* Annotations (struct kx_ann_info): tags 48 to 63. */
	CI_ANN_ENABLED = 48,
	CI_ANN_EMITTED = 49,
	CI_ANN_RECEIVED = 50,
	CI_ANN_DROPPED = 51,
	CI_ANN_POP_NO_PUSH = 52,
	CI_ANN_DEPTH_OVERFLOW = 53,
	CI_ANN_END_NO_START = 54,
	CI_ANN_THREADS_FULL = 55,
	CI_ANN_RANGES_FULL = 56,
	CI_ANN_NAME_FAULTS = 57,
	CI_ANN_COPY = 58, /* repeated, nested */
	CI_ANN_MORE_COPIES = 59,
	CI_ANN_CAPPED = 60,
	CI_ANN_LATE = 61, /* repeated, nested: probes attached past a copy's wait */
	CI_ANN_MORE_LATE = 62,
	CI_PROTECTED_EXEC = 70, /* numbered apart: room for the annotation fields above */
	CI_DRM_INTERVAL_MS = 80,
	CI_DRM_STATS = 81, /* u64 per enum kx_drm_info_stat */
	CI_SAMPLE_USTACK_BYTES = 82,
	CI_OFFCPU_STALE = 90,
};

/* ---- little-endian and varint helpers ---- */

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* ---- capture info as TLV ---- */

static void buf_put(struct kx_bytes *b, const void *v, size_t n)
{
	uint8_t *p = kx_bytes_room(b, n);

	if (p) {
		memcpy(p, v, n);
		b->len += n;
	}
}

/* Starts a TLV whose length is patched by tlv_end; returns its position. */
static size_t tlv_begin(struct kx_bytes *b, uint16_t tag)
{
	uint8_t h[6];
	size_t at = b->len;

	put_le16(h, tag);
	put_le32(h + 2, 0);
	buf_put(b, h, sizeof(h));
	return at;
}

static void tlv_end(struct kx_bytes *b, size_t at)
{
	if (!b->oom)
		put_le32(b->p + at + 2, (uint32_t)(b->len - at - 6));
}

/* F_U64S: an array of u64, written as its little-endian bytes. */
enum { F_UINT, F_STR, F_CLOCK, F_U64S };

/* One struct member and how it is encoded. */
struct field {
	uint16_t tag;
	uint8_t kind;
	uint16_t off;
	uint16_t size;
};

#define FLD(tag, kind, type, m)                                                                    \
	{                                                                                          \
		tag, kind, offsetof(type, m), sizeof(((type *)0)->m)                               \
	}

static const struct field clock_fields[] = {
        FLD(1, F_UINT, struct kx_clock_sync, offset_ns),
        FLD(2, F_UINT, struct kx_clock_sync, uncertainty_ns),
        FLD(3, F_UINT, struct kx_clock_sync, mono_ns),
        {0, 0, 0, 0},
};

static const struct field device_fields[] = {
        FLD(1, F_UINT, struct kx_device, dev),
        FLD(2, F_UINT, struct kx_device, fkind),
        FLD(3, F_UINT, struct kx_device, drv),
        FLD(4, F_UINT, struct kx_device, any_minor),
        FLD(5, F_STR, struct kx_device, node),
        FLD(6, F_STR, struct kx_device, driver),
        {0, 0, 0, 0},
};

static const struct field drvcall_fields[] = {
        FLD(1, F_STR, struct kx_drvcall_stat, fn),
        FLD(2, F_STR, struct kx_drvcall_stat, mech),
        FLD(3, F_UINT, struct kx_drvcall_stat, calls),
        FLD(4, F_UINT, struct kx_drvcall_stat, sum_ns),
        FLD(5, F_UINT, struct kx_drvcall_stat, max_ns),
        FLD(6, F_U64S, struct kx_drvcall_stat, slots),
        {0, 0, 0, 0},
};

static const struct field ann_copy_fields[] = {
        FLD(1, F_STR, struct kx_ann_copy, path),
        FLD(2, F_UINT, struct kx_ann_copy, found),
        FLD(3, F_UINT, struct kx_ann_copy, attached),
        FLD(4, F_STR, struct kx_ann_copy, why),
        {0, 0, 0, 0},
};

static const struct field ann_late_fields[] = {
        FLD(1, F_UINT, struct kx_ann_late, pid),    FLD(2, F_UINT, struct kx_ann_late, hold_ms),
        FLD(3, F_STR, struct kx_ann_late, comm),    FLD(4, F_STR, struct kx_ann_late, path),
        FLD(5, F_UINT, struct kx_ann_late, map_ns), FLD(6, F_UINT, struct kx_ann_late, from_ns),
        FLD(7, F_UINT, struct kx_ann_late, to_ns),  {0, 0, 0, 0},
};

static const struct field hook_fields[] = {
        FLD(1, F_STR, struct kx_hook, name),
        FLD(2, F_STR, struct kx_hook, mech),
        FLD(3, F_UINT, struct kx_hook, state),
        FLD(4, F_STR, struct kx_hook, why),
        {0, 0, 0, 0},
};

/* Devices and hooks are handled beside this table (repeated, counted). */
static const struct field capinfo_fields[] = {
        FLD(CI_HOSTNAME, F_STR, struct kx_capinfo, hostname),
        FLD(CI_KERNEL, F_STR, struct kx_capinfo, kernel),
        FLD(CI_CMDLINE, F_STR, struct kx_capinfo, cmdline),
        FLD(CI_CLOCK_START, F_CLOCK, struct kx_capinfo, clock_start),
        FLD(CI_CLOCK_STOP, F_CLOCK, struct kx_capinfo, clock_stop),
        FLD(CI_START_MONO, F_UINT, struct kx_capinfo, start_mono_ns),
        FLD(CI_STOP_MONO, F_UINT, struct kx_capinfo, stop_mono_ns),
        FLD(CI_EMITTED, F_UINT, struct kx_capinfo, emitted),
        FLD(CI_RECEIVED, F_UINT, struct kx_capinfo, received),
        FLD(CI_DROPPED, F_UINT, struct kx_capinfo, dropped),
        FLD(CI_NOT_STORED, F_UINT, struct kx_capinfo, not_stored),
        FLD(CI_INFLIGHT_FULL, F_UINT, struct kx_capinfo, inflight_full),
        FLD(CI_PIDSET_FULL, F_UINT, struct kx_capinfo, pidset_full),
        FLD(CI_PROTECTED_EXEC, F_UINT, struct kx_capinfo, protected_exec),
        FLD(CI_ARG_FAULTS, F_UINT, struct kx_capinfo, arg_faults),
        FLD(CI_RINGBUF_BYTES, F_UINT, struct kx_capinfo, ringbuf_bytes),
        FLD(CI_ALL_PIDS, F_UINT, struct kx_capinfo, all_pids),
        FLD(CI_JOB_EMITTED, F_UINT, struct kx_capinfo, job_emitted),
        FLD(CI_JOB_RECEIVED, F_UINT, struct kx_capinfo, job_received),
        FLD(CI_JOB_DROPPED, F_UINT, struct kx_capinfo, job_dropped),
        FLD(CI_SAMPLE_HZ, F_UINT, struct kx_capinfo, samples.hz),
        FLD(CI_SAMPLE_OFF_CPU, F_UINT, struct kx_capinfo, samples.off_cpu),
        FLD(CI_SAMPLE_CPUS, F_UINT, struct kx_capinfo, samples.cpus),
        FLD(CI_SAMPLE_EMITTED, F_UINT, struct kx_capinfo, samples.emitted),
        FLD(CI_SAMPLE_RECEIVED, F_UINT, struct kx_capinfo, samples.received),
        FLD(CI_SAMPLE_DROPPED, F_UINT, struct kx_capinfo, samples.dropped),
        FLD(CI_OFFCPU_EMITTED, F_UINT, struct kx_capinfo, samples.off_emitted),
        FLD(CI_OFFCPU_RECEIVED, F_UINT, struct kx_capinfo, samples.off_received),
        FLD(CI_OFFCPU_DROPPED, F_UINT, struct kx_capinfo, samples.off_dropped),
        FLD(CI_OFFCPU_NOSLOT, F_UINT, struct kx_capinfo, samples.off_noslot),
        FLD(CI_OFFCPU_STALE, F_UINT, struct kx_capinfo, samples.off_stale),
        FLD(CI_SAMPLE_STACKS, F_U64S, struct kx_capinfo, samples.stacks),
        FLD(CI_SAMPLE_SYMS, F_U64S, struct kx_capinfo, samples.syms),
        FLD(CI_SAMPLE_SYM_WARNING, F_STR, struct kx_capinfo, samples.sym_warning),
        FLD(CI_SAMPLE_SYM_NS, F_UINT, struct kx_capinfo, samples.sym_ns),
        FLD(CI_COUNTER_NAMES, F_STR, struct kx_capinfo, counters.names),
        FLD(CI_COUNTER_STATS, F_U64S, struct kx_capinfo, counters.stats),
        FLD(CI_ANN_ENABLED, F_UINT, struct kx_capinfo, ann.enabled),
        FLD(CI_ANN_EMITTED, F_UINT, struct kx_capinfo, ann.emitted),
        FLD(CI_ANN_RECEIVED, F_UINT, struct kx_capinfo, ann.received),
        FLD(CI_ANN_DROPPED, F_UINT, struct kx_capinfo, ann.dropped),
        FLD(CI_ANN_POP_NO_PUSH, F_UINT, struct kx_capinfo, ann.pop_no_push),
        FLD(CI_ANN_DEPTH_OVERFLOW, F_UINT, struct kx_capinfo, ann.depth_overflow),
        FLD(CI_ANN_END_NO_START, F_UINT, struct kx_capinfo, ann.end_no_start),
        FLD(CI_ANN_THREADS_FULL, F_UINT, struct kx_capinfo, ann.threads_full),
        FLD(CI_ANN_RANGES_FULL, F_UINT, struct kx_capinfo, ann.ranges_full),
        FLD(CI_ANN_NAME_FAULTS, F_UINT, struct kx_capinfo, ann.name_faults),
        FLD(CI_ANN_MORE_COPIES, F_UINT, struct kx_capinfo, ann.more_copies),
        FLD(CI_DRM_INTERVAL_MS, F_UINT, struct kx_capinfo, drm.interval_ms),
        FLD(CI_DRM_STATS, F_U64S, struct kx_capinfo, drm.stats),
        FLD(CI_ANN_CAPPED, F_UINT, struct kx_capinfo, ann.capped),
        FLD(CI_SAMPLE_USTACK_BYTES, F_UINT, struct kx_capinfo, samples.ustack_bytes),
        FLD(CI_ANN_MORE_LATE, F_UINT, struct kx_capinfo, ann.more_late),
        {0, 0, 0, 0},
};

static uint64_t load_uint(const uint8_t *p, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

static void store_uint(uint8_t *p, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1:
		memcpy(p, &u8, 1);
		break;
	case 2:
		memcpy(p, &u16, 2);
		break;
	case 4:
		memcpy(p, &u32, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

static void encode_fields(struct kx_bytes *b, const struct field *f, const void *base)
{
	const uint8_t *obj = base;

	for (; f->tag; f++) {
		const uint8_t *m = obj + f->off;
		size_t at = tlv_begin(b, f->tag);

		if (f->kind == F_UINT) {
			uint64_t v = load_uint(m, f->size);
			uint8_t le[8];

			for (size_t i = 0; i < f->size; i++)
				le[i] = (uint8_t)(v >> (8 * i));
			buf_put(b, le, f->size);
		} else if (f->kind == F_STR) {
			/* Without the NUL: the reader terminates. */
			buf_put(b, m, strnlen((const char *)m, f->size - 1));
		} else if (f->kind == F_U64S) {
			for (size_t i = 0; i < f->size / 8; i++) {
				uint64_t v = load_uint(m + 8 * i, 8);
				uint8_t le[8];

				for (int k = 0; k < 8; k++)
					le[k] = (uint8_t)(v >> (8 * k));
				buf_put(b, le, 8);
			}
		} else {
			encode_fields(b, clock_fields, m);
		}
		tlv_end(b, at);
	}
}

static void encode_capinfo(struct kx_bytes *b, const struct kx_capinfo *ci)
{
	uint32_t nd = ci->ndevices < KX_MAX_DEVICES ? ci->ndevices : KX_MAX_DEVICES;
	uint32_t nh = ci->nhooks < KX_MAX_HOOKS ? ci->nhooks : KX_MAX_HOOKS;
	uint32_t nc = ci->ndrvcalls < KX_DRV_FN_MAX ? ci->ndrvcalls : KX_DRV_FN_MAX;

	encode_fields(b, capinfo_fields, ci);
	for (uint32_t i = 0; i < nd; i++) {
		size_t at = tlv_begin(b, CI_DEVICE);

		encode_fields(b, device_fields, &ci->devices[i]);
		tlv_end(b, at);
	}
	for (uint32_t i = 0; i < nh; i++) {
		size_t at = tlv_begin(b, CI_HOOK);

		encode_fields(b, hook_fields, &ci->hooks[i]);
		tlv_end(b, at);
	}
	for (uint32_t i = 0; i < nc; i++) {
		size_t at = tlv_begin(b, CI_DRVCALL);

		encode_fields(b, drvcall_fields, &ci->drvcalls[i]);
		tlv_end(b, at);
	}
	for (uint32_t i = 0; i < ci->ann.ncopies && i < KX_ANN_MAX_COPIES; i++) {
		size_t at = tlv_begin(b, CI_ANN_COPY);

		encode_fields(b, ann_copy_fields, &ci->ann.copies[i]);
		tlv_end(b, at);
	}
	for (uint32_t i = 0; i < ci->ann.nlate && i < KX_ANN_MAX_LATE; i++) {
		size_t at = tlv_begin(b, CI_ANN_LATE);

		encode_fields(b, ann_late_fields, &ci->ann.late[i]);
		tlv_end(b, at);
	}
}

/*
 * Decodes TLVs in [p, p + len) into base. Unknown tags are skipped; a
 * length that overruns its container is an error. ci is set at the top
 * level only, where devices and hooks are collected.
 */
static int decode_fields(const uint8_t *p, size_t len, const struct field *fields, void *base,
                         struct kx_capinfo *ci)
{
	uint8_t *obj = base;
	struct rd r = {p, p + len, 0};

	while (r.p < r.end) {
		const uint8_t *h = rd_bytes(&r, 6);
		const struct field *f;
		const uint8_t *v;
		uint16_t tag;
		uint32_t vlen;

		if (!h)
			return -1;
		tag = (uint16_t)(h[0] | h[1] << 8);
		vlen = get_le32(h + 2);
		v = rd_bytes(&r, vlen);
		if (!v)
			return -1;
		if (ci && tag == CI_DEVICE) {
			if (ci->ndevices < KX_MAX_DEVICES) {
				struct kx_device *d = &ci->devices[ci->ndevices];

				memset(d, 0, sizeof(*d));
				if (decode_fields(v, vlen, device_fields, d, NULL))
					return -1;
				ci->ndevices++;
			}
			continue;
		}
		if (ci && tag == CI_DRVCALL) {
			if (ci->ndrvcalls < KX_DRV_FN_MAX) {
				struct kx_drvcall_stat *c = &ci->drvcalls[ci->ndrvcalls];

				memset(c, 0, sizeof(*c));
				if (decode_fields(v, vlen, drvcall_fields, c, NULL))
					return -1;
				ci->ndrvcalls++;
			}
			continue;
		}
		if (ci && tag == CI_ANN_COPY) {
			if (ci->ann.ncopies < KX_ANN_MAX_COPIES) {
				struct kx_ann_copy *c = &ci->ann.copies[ci->ann.ncopies];

				memset(c, 0, sizeof(*c));
				if (decode_fields(v, vlen, ann_copy_fields, c, NULL))
					return -1;
				ci->ann.ncopies++;
			}
			continue;
		}
		if (ci && tag == CI_ANN_LATE) {
			if (ci->ann.nlate < KX_ANN_MAX_LATE) {
				struct kx_ann_late *l = &ci->ann.late[ci->ann.nlate];

				memset(l, 0, sizeof(*l));
				if (decode_fields(v, vlen, ann_late_fields, l, NULL))
					return -1;
				ci->ann.nlate++;
			}
			continue;
		}
		if (ci && tag == CI_HOOK) {
			if (ci->nhooks < KX_MAX_HOOKS) {
				struct kx_hook *k = &ci->hooks[ci->nhooks];

				memset(k, 0, sizeof(*k));
				if (decode_fields(v, vlen, hook_fields, k, NULL))
					return -1;
				ci->nhooks++;
			}
			continue;
		}
		for (f = fields; f->tag && f->tag != tag; f++)
			;
		if (!f->tag)
			continue;
		if (f->kind == F_UINT) {
			uint64_t x = 0;

			if (vlen < 1 || vlen > 8)
				return -1;
			for (uint32_t i = 0; i < vlen; i++)
				x |= (uint64_t)v[i] << (8 * i);
			store_uint(obj + f->off, f->size, x);
		} else if (f->kind == F_STR) {
			size_t n = vlen < f->size - 1u ? vlen : f->size - 1u;

			memset(obj + f->off, 0, f->size);
			memcpy(obj + f->off, v, n);
		} else if (f->kind == F_U64S) {
			/* A writer with more slots: the ones this reader has. */
			if (vlen % 8)
				return -1;
			memset(obj + f->off, 0, f->size);
			for (uint32_t i = 0; i < vlen / 8 && i < f->size / 8u; i++) {
				uint64_t x = 0;

				for (int k = 0; k < 8; k++)
					x |= (uint64_t)v[8 * i + k] << (8 * k);
				store_uint(obj + f->off + 8 * i, 8, x);
			}
		} else {
			memset(obj + f->off, 0, f->size);
			if (decode_fields(v, vlen, clock_fields, obj + f->off, NULL))
				return -1;
		}
	}
	return 0;
}

static int decode_capinfo(const uint8_t *p, size_t len, struct kx_capinfo *ci)
{
	memset(ci, 0, sizeof(*ci));
	return decode_fields(p, len, capinfo_fields, ci, ci);
}

void kx_kxp_capinfo_encode(struct kx_bytes *b, const struct kx_capinfo *ci)
{
	encode_capinfo(b, ci);
}

int kx_kxp_capinfo_decode(const void *p, size_t len, struct kx_capinfo *ci)
{
	return decode_capinfo(p, len, ci);
}

/* ---- writer ---- */

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
	if (need > w->out_cap) {
		uint8_t *p = realloc(w->out, need);

		if (!p) {
			werr(w, ENOMEM);
			return -1;
		}
		w->out = p;
		w->out_cap = need;
	}
	clen = ZSTD_compressCCtx(w->zc, w->out + CHDR_LEN, need - CHDR_LEN, raw, len, ZLEVEL);
	if (ZSTD_isError(clen)) {
		snprintf(w->err, sizeof(w->err), "cannot write %s: compression failed (%s)",
		         w->path, ZSTD_getErrorName(clen));
		w->failed = 1;
		return -1;
	}
	h = w->out;
	memcpy(h, chunk_magic, 4);
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

	memcpy(fixed, file_magic, 8);
	put_le32(fixed + 8, KX_KXP_VERSION);
	buf_put(&hdr, fixed, sizeof(fixed));
	if (ci)
		encode_capinfo(&hdr, ci);
	if (!hdr.oom && hdr.len + 4 > HDR_MAX)
		hdr.oom = 1;
	if (!hdr.oom) {
		put_le32(hdr.p + 12, (uint32_t)(hdr.len + 4));
		put_le32(crc, (uint32_t)crc32(0, hdr.p, (uInt)hdr.len));
		buf_put(&hdr, crc, 4);
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

		encode_capinfo(&b, ci);
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

/* ---- reader ---- */

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

/* n bytes at off (off + n <= size), valid until the next call; NULL on error. */
static const uint8_t *src_get(struct src *s, uint64_t off, size_t n)
{
	size_t got = 0;

	if (s->mem)
		return s->mem + off;
	/* Exact fit: the largest piece read so far. */
	if (n > s->cap) {
		uint8_t *p = realloc(s->buf, n);

		if (!p) {
			s->ioerr = ENOMEM;
			return NULL;
		}
		s->buf = p;
		s->cap = n;
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

static void msg(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg(struct reader *r, const char *fmt, ...)
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

/* Exact fit: callers know the whole count before they fill the array. */
static int reserve(void **p, size_t *cap, size_t n, size_t size)
{
	void *np;

	if (n <= *cap)
		return 0;
	np = realloc(*p, n * size);
	if (!np)
		return -1;
	*p = np;
	*cap = n;
	return 0;
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

static void *unpacker_new(void *arg)
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

static void unpacker_free(void *wctx, void *arg)
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

/* The chunk's raw bytes, exactly raw_len of them; -1 when corrupt. */
static int unpack_chunk(struct cslot *c, struct unpacker *u)
{
	size_t n;

	if (!u->zstd)
		return inflate_chunk(c, &u->zs);
	n = ZSTD_decompressDCtx(u->zd, c->raw, c->raw_len, c->comp, c->comp_len);
	return !ZSTD_isError(n) && n == c->raw_len ? 0 : -1;
}

/* Checks, inflates and decodes one chunk (on a worker thread). */
static void chunk_run(void *slot, void *wctx, void *arg)
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
	if (!wctx || reserve((void **)&c->raw, &c->raw_cap, c->raw_len ? c->raw_len : 1, 1)) {
		c->status = CS_NOMEM;
		return;
	}
	if (unpack_chunk(c, wctx)) {
		c->status = CS_INFLATE;
		return;
	}
	rc = -2;
	if (c->nrec <= PEND_MAX &&
	    !reserve((void **)&c->ioc, &c->ioc_cap, c->nrec ? c->nrec : 1, sizeof(*c->ioc)) &&
	    !reserve((void **)&c->kinds, &c->kinds_cap, c->nrec ? c->nrec : 1, 1))
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

/* The chunk checked out: its records go to the store or the sink, in file order. */
static void commit_slot(const struct dest *d, struct cslot *c)
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

static void cslot_free(void *slot, void *arg)
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

/* Reads and checks the header into r->ci; returns its length or 0 with a message. */
static uint32_t read_header(struct reader *r)
{
	uint64_t size = r->src->size;
	size_t n = size < HDR_FIXED ? (size_t)size : HDR_FIXED;
	const uint8_t *h;
	uint32_t version, hlen;

	if (!size) {
		msg(r, "empty file: not a kxprof record file");
		return 0;
	}
	h = src_get(r->src, 0, n);
	if (!h)
		goto cut;
	if (memcmp(h, file_magic, n < 8 ? n : 8) != 0) {
		msg(r, "not a kxprof record file");
		return 0;
	}
	if (n < HDR_FIXED) {
		msg(r, "record file header is incomplete (%zu bytes): the file was cut short", n);
		return 0;
	}
	version = get_le32(h + 8);
	hlen = get_le32(h + 12);
	if (version > KX_KXP_VERSION) {
		msg(r,
		    "record format version %u is newer than this kxprof reads (versions 1 to %d): "
		    "read it with the kxprof that wrote it, or a newer one",
		    version, KX_KXP_VERSION);
		return 0;
	}
	if (version < 1) {
		msg(r, "unsupported record format version %u (this kxprof reads versions 1 to %d)",
		    version, KX_KXP_VERSION);
		return 0;
	}
	r->version = version;
	r->chl = version >= 3 ? CHDR_LEN : CHDR_LEN_V2;
	if (hlen < HDR_FIXED + 4 || hlen > HDR_MAX) {
		msg(r, "record file header is corrupt (length %u)", hlen);
		return 0;
	}
	if (size < hlen) {
		msg(r,
		    "record file header is incomplete (%llu of %u bytes): the file was cut short",
		    (unsigned long long)size, hlen);
		return 0;
	}
	h = src_get(r->src, 0, hlen);
	if (!h)
		goto cut;
	if (crc32(0, h, hlen - 4) != get_le32(h + hlen - 4)) {
		msg(r, "record file header is corrupt (checksum mismatch)");
		return 0;
	}
	if (decode_capinfo(h + HDR_FIXED, hlen - HDR_FIXED - 4, r->ci)) {
		msg(r, "record file header is corrupt (bad capture info)");
		return 0;
	}
	return hlen;
cut:
	if (r->src->ioerr)
		msg(r, "cannot read: %s", strerror(r->src->ioerr));
	else
		msg(r, "record file header is incomplete: the file was cut short");
	return 0;
}

/* A chunk header that checks out: magic, header CRC, lengths within limits. */
struct chdr {
	uint32_t type, raw_len, comp_len, nrec, dcrc;
	uint32_t num; /* chunk number (version 3), else 0 */
};

/* The chl bytes at h as a chunk header; -1 when they are not a valid one. */
static int chdr_parse(const uint8_t *h, uint32_t chl, struct chdr *c)
{
	if (memcmp(h, chunk_magic, 4) != 0 || crc32(0, h, chl - 4) != get_le32(h + chl - 4))
		return -1;
	c->num = chl > CHDR_LEN_V2 ? get_le32(h + 24) : 0;
	c->type = get_le32(h + 4);
	c->raw_len = get_le32(h + 8);
	c->comp_len = get_le32(h + 12);
	c->nrec = get_le32(h + 16);
	c->dcrc = get_le32(h + 20);
	return c->raw_len > RAW_MAX || c->comp_len > compressBound(RAW_MAX) ? -1 : 0;
}

/* Notes a corrupt stretch of len bytes at off: n chunks (0: unknown) from number num. */
static void damage(struct reader *r, uint64_t num, uint64_t n, uint64_t off, uint64_t len,
                   const char *why)
{
	struct kx_kxp_read_result *res = r->res;

	if (res->ncorrupt < KX_KXP_DAMAGE_MAX) {
		res->corrupt[res->ncorrupt].chunk = num;
		res->corrupt[res->ncorrupt].nchunks = n;
		res->corrupt[res->ncorrupt].offset = off;
		res->corrupt[res->ncorrupt].bytes = len;
		r->why[res->ncorrupt] = why;
	}
	res->ncorrupt++;
	res->corrupt_bytes += len;
}

/* Why a slot's chunk was rejected. */
static const char *cs_why(int status)
{
	switch (status) {
	case CS_CRC:
		return "data checksum mismatch";
	case CS_NOMEM:
		return "too large to decompress here: out of memory";
	case CS_INFLATE:
		return "decompression failed";
	default:
		return "bad records";
	}
}

/* The sink of a tee read gave the store up: from here, records go to the sink alone. */
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
		damage(r, c->num, 1, c->off, r->chl + (uint64_t)c->comp_len, cs_why(c->status));
		return;
	}
	if (c->kind == CS_EVENTS)
		commit_slot(&r->dest, c);
	r->res->chunks++;
}

static const struct kx_workq_ops chunk_ops = {
        .run = chunk_run,
        .done = chunk_done,
        .wctx_new = unpacker_new,
        .wctx_free = unpacker_free,
};

/* n bytes at off into the slot (or pointed at, from memory); -1 on a read error. */
static int src_fill(struct src *s, struct cslot *c, uint64_t off, size_t n)
{
	const uint8_t *p;

	if (s->mem) {
		c->comp = s->mem + off;
		return 0;
	}
	if (reserve((void **)&c->cbuf, &c->ccap, n ? n : 1, 1)) {
		s->ioerr = ENOMEM;
		return -1;
	}
	/* src_get's buffer is the reading thread's; the slot needs its own copy. */
	p = src_get(s, off, n);
	if (!p)
		return -1;
	memcpy(c->cbuf, p, n);
	c->comp = c->cbuf;
	return 0;
}

#define SCAN_WIN (1u << 20) /* bytes searched per read while looking for a chunk */

/*
 * The offset of the first valid chunk header at or after from, or the file
 * size when there is none; UINT64_MAX on a read error. A header is trusted
 * only with its CRC, so bytes that merely look like the magic are passed.
 */
static uint64_t resync(struct reader *r, uint64_t from)
{
	struct src *s = r->src;
	struct chdr ch;

	while (s->size - from >= r->chl) {
		size_t n = s->size - from < SCAN_WIN ? (size_t)(s->size - from) : SCAN_WIN, i;
		const uint8_t *w = src_get(s, from, n);

		if (!w)
			return s->ioerr ? UINT64_MAX : s->size;
		for (i = 0; i + r->chl <= n; i++)
			if (w[i] == chunk_magic[0] && !chdr_parse(w + i, r->chl, &ch))
				return from + i;
		if (n == s->size - from)
			break;
		/* The next window starts where a header no longer fit in this one. */
		from += i;
	}
	return s->size;
}

/*
 * The bytes at off do not start a valid chunk: skips to the next one that
 * does and notes the stretch, or judges the rest of the file. Returns the
 * offset to go on from (the file size when nothing is left), or
 * UINT64_MAX on a read error.
 */
static uint64_t skip_bad(struct reader *r, uint64_t off, const uint8_t *h, const char *why)
{
	struct src *s = r->src;
	uint64_t left = s->size - off;
	uint64_t next = resync(r, off + 1);

	if (next == UINT64_MAX)
		return next;
	if (next == s->size && left < r->chl && !memcmp(h, chunk_magic, left < 4 ? left : 4)) {
		/* The start of a chunk header: the file ends inside it. */
		r->res->bad_tail_bytes = left;
		r->cut_chunk = ++r->nseen;
		r->cut_off = off;
		return next;
	}
	/* How many chunks it held is known at the next one (version 3). */
	r->pend = 1;
	r->pend_off = off;
	r->pend_bytes = next - off;
	r->pend_why = why;
	return next;
}

/*
 * The number of the chunk of valid header ch at off: its own (version 3),
 * else the next in file order. Notes the corrupt stretch before it, with
 * the chunks it held, or chunks missing before it (numbers that skip).
 */
static uint64_t chunk_number(struct reader *r, const struct chdr *ch, uint64_t off)
{
	uint64_t next = r->nseen + 1;
	uint64_t num = r->version >= 3 ? ch->num : next + (uint64_t)r->pend;

	if (r->pend)
		damage(r, next, num > next ? num - next : 1, r->pend_off, r->pend_bytes,
		       r->pend_why);
	else if (num > next)
		damage(r, next, num - next, off, 0, "the chunk numbers skip");
	r->pend = 0;
	r->nseen = num;
	return num;
}

/* A corrupt stretch at the end of the file: how many chunks it held is unknown. */
static void end_stretch(struct reader *r)
{
	if (r->pend)
		damage(r, r->nseen + 1, 0, r->pend_off, r->pend_bytes, r->pend_why);
	r->pend = 0;
}

/* Reads and stores the trailer of a slot filled with its bytes; why it is bad, or NULL. */
static const char *read_trailer(struct reader *r, struct cslot *c, void *zs)
{
	struct kx_capinfo *tmp;

	if (crc32(0, c->comp, c->comp_len) != c->dcrc)
		return "trailer: data checksum mismatch";
	if (!zs || reserve((void **)&c->raw, &c->raw_cap, c->raw_len ? c->raw_len : 1, 1))
		return "trailer too large to decompress here: out of memory";
	if (unpack_chunk(c, zs))
		return "trailer: decompression failed";
	tmp = malloc(sizeof(*tmp));
	if (!tmp || decode_capinfo(c->raw, c->raw_len, tmp)) {
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

	slot_set(c, ch, off, chunk_number(r, ch, off));
	if (ch->type != CHUNK_EVENTS && ch->type != CHUNK_TRAILER) {
		/* A later writer's chunk kind: its header checked out, so skip it whole. */
		r->res->chunks++;
		return 0;
	}
	if (src_fill(r->src, c, off + r->chl, ch->comp_len))
		return -1;
	if (ch->type == CHUNK_EVENTS) {
		chunk_run(c, zs, r);
		chunk_done(c, r);
		return 0;
	}
	why = read_trailer(r, c, zs);
	if (why) {
		damage(r, c->num, 1, off, r->chl + (uint64_t)ch->comp_len, why);
		return 0;
	}
	r->res->chunks++;
	r->trailer = 1;
	return 0;
}

/*
 * Reads chunks from off, one at a time: every case but a whole events (or
 * unknown) chunk ends here. Damage is skipped over; the trailer or the end
 * of the file ends it. Returns 0, or -1 on an I/O error (message set).
 */
/* Has the sink asked to stop reading? */
static int sink_stopped(const struct reader *r)
{
	const struct kx_kxp_visitor *v = r->dest.sink;

	return v && v->stop && __atomic_load_n(v->stop, __ATOMIC_RELAXED);
}

static int read_chunks_seq(struct reader *r, struct cslot *c, void *zs, uint64_t off)
{
	struct src *s = r->src;

	while (off < s->size && !r->trailer && !sink_stopped(r)) {
		size_t n = s->size - off < r->chl ? (size_t)(s->size - off) : r->chl;
		const uint8_t *h = src_get(s, off, n);
		struct chdr ch;

		if (!h)
			goto ioerr;
		if (n < r->chl || chdr_parse(h, r->chl, &ch)) {
			off = skip_bad(r, off, h, "bad chunk header");
			if (off == UINT64_MAX)
				goto ioerr;
			continue;
		}
		if (s->size - off - r->chl < ch.comp_len) {
			r->res->bad_tail_bytes = s->size - off;
			r->cut_chunk = chunk_number(r, &ch, off);
			r->cut_off = off;
			break;
		}
		if (read_one(r, c, zs, &ch, off))
			goto ioerr;
		off += r->chl + ch.comp_len;
	}
	end_stretch(r);
	if (r->trailer)
		r->res->bad_tail_bytes = s->size - off;
	else
		r->res->truncated = 1;
	return 0;
ioerr:
	if (s->ioerr) {
		msg(r, "cannot read: %s", strerror(s->ioerr));
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
		const uint8_t *h = src_get(s, off, r->chl);
		struct chdr ch;
		struct cslot *c;

		tee_check(r);
		/* Numbers that skip are for the one-at-a-time reader to note. */
		if (!h || chdr_parse(h, r->chl, &ch) || s->size - off - r->chl < ch.comp_len ||
		    ch.type == CHUNK_TRAILER || (r->version >= 3 && ch.num != r->nseen + 1))
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

/* Appends to the message in err (after the path msg() put first). */
static void msg_add(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg_add(struct reader *r, const char *fmt, ...)
{
	size_t n = strlen(r->err);
	va_list ap;

	if (n + 1 >= r->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - n, fmt, ap);
	va_end(ap);
}

#define MSG_LISTED 4 /* corrupt stretches named one by one in the message */

/* The corrupt stretches, for the message. */
/* "chunk 3", "chunks 3 to 5", or "chunk 3 onward" (a stretch at the end). */
static void say_chunks(struct reader *r, const struct kx_kxp_damage *d)
{
	if (d->nchunks > 1)
		msg_add(r, "chunks %llu to %llu", (unsigned long long)d->chunk,
		        (unsigned long long)(d->chunk + d->nchunks - 1));
	else
		msg_add(r, "chunk %llu%s", (unsigned long long)d->chunk,
		        d->nchunks ? "" : " onward");
}

static void say_corrupt(struct reader *r)
{
	const struct kx_kxp_read_result *res = r->res;
	const struct kx_kxp_damage *d = res->corrupt;
	uint64_t i;

	if (res->ncorrupt == 1) {
		say_chunks(r, d);
		if (!d->bytes)
			msg_add(r, " missing before offset %llu (%s)",
			        (unsigned long long)d->offset, r->why[0]);
		else
			msg_add(r, " at offset %llu %s corrupt (%s): skipped, %llu bytes lost",
			        (unsigned long long)d->offset, d->nchunks > 1 ? "are" : "is",
			        r->why[0], (unsigned long long)d->bytes);
		return;
	}
	msg_add(r, "%llu corrupt stretches skipped, %llu bytes lost:",
	        (unsigned long long)res->ncorrupt, (unsigned long long)res->corrupt_bytes);
	for (i = 0; i < res->ncorrupt && i < MSG_LISTED; i++) {
		msg_add(r, "%s", i ? ", " : " ");
		say_chunks(r, &d[i]);
		msg_add(r, " at offset %llu (%s, %llu bytes)", (unsigned long long)d[i].offset,
		        r->why[i], (unsigned long long)d[i].bytes);
	}
	if (res->ncorrupt > MSG_LISTED)
		msg_add(r, ", and %llu more", (unsigned long long)(res->ncorrupt - MSG_LISTED));
}

/* What was lost, in err: corrupt chunks, then a cut or missing trailer. */
static void say_losses(struct reader *r)
{
	const struct kx_kxp_read_result *res = r->res;
	const char *sep = "";

	if (!res->ncorrupt && !res->truncated && !res->bad_tail_bytes)
		return;
	msg(r, "%s", "");
	if (res->ncorrupt) {
		say_corrupt(r);
		sep = "; ";
	}
	if (r->cut_chunk)
		msg_add(r, "%sfile cut short inside chunk %llu at offset %llu (%llu bytes ignored)",
		        sep, (unsigned long long)r->cut_chunk, (unsigned long long)r->cut_off,
		        (unsigned long long)res->bad_tail_bytes);
	else if (res->truncated)
		msg_add(r, "%sno trailer after chunk %llu: the capture did not finish%s", sep,
		        (unsigned long long)r->nseen,
		        res->ncorrupt ? ", or its trailer was lost with the damage" : "");
	else if (res->bad_tail_bytes)
		msg_add(r, "%s%llu bytes after the trailer were ignored", sep,
		        (unsigned long long)res->bad_tail_bytes);
}

/* Reads chunks from off. Returns 0, or -1 on an I/O error (message set). */
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
			kx_workq_each(q, cslot_free);
			kx_workq_free(q);
		}
	}
	memset(&last, 0, sizeof(last));
	zs = unpacker_new(r);
	rc = read_chunks_seq(r, &last, zs, off);
	unpacker_free(zs, NULL);
	cslot_free(&last, NULL);
	if (!rc)
		say_losses(r);
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
