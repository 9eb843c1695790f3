/*
 * The capture info as TLV (io/tlv.h): its tags, the tables that map them to
 * struct kx_capinfo's members, the encoder and the decoder.
 */
#include <stddef.h>
#include <string.h>

#include "io/kxp_bytes.h"
#include "io/tlv.h"

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
	CI_BPF_MISSED = 91,
	CI_JOB_DONE_LOST = 92,
};

/* v as its n (at most 8) little-endian bytes. */
static void put_le(struct kx_bytes *b, uint64_t v, size_t n)
{
	uint8_t le[8];

	for (size_t i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	kx_bytes_put(b, le, n);
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

/* Starts a TLV whose length is patched by tlv_end; returns its position. */
static size_t tlv_begin(struct kx_bytes *b, uint16_t tag)
{
	size_t at = b->len;

	put_le(b, tag, 2);
	put_le(b, 0, 4);
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
        FLD(CI_BPF_MISSED, F_UINT, struct kx_capinfo, bpf_missed),
        FLD(CI_RINGBUF_BYTES, F_UINT, struct kx_capinfo, ringbuf_bytes),
        FLD(CI_ALL_PIDS, F_UINT, struct kx_capinfo, all_pids),
        FLD(CI_JOB_EMITTED, F_UINT, struct kx_capinfo, job_emitted),
        FLD(CI_JOB_RECEIVED, F_UINT, struct kx_capinfo, job_received),
        FLD(CI_JOB_DROPPED, F_UINT, struct kx_capinfo, job_dropped),
        FLD(CI_JOB_DONE_LOST, F_UINT, struct kx_capinfo, job_done_lost),
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
			put_le(b, load_uint(m, f->size), f->size);
		} else if (f->kind == F_STR) {
			/* Without the NUL: the reader terminates. */
			kx_bytes_put(b, m, strnlen((const char *)m, f->size - 1));
		} else if (f->kind == F_U64S) {
			for (size_t i = 0; i < f->size / 8; i++)
				put_le(b, load_uint(m + 8 * i, 8), 8);
		} else {
			encode_fields(b, clock_fields, m);
		}
		tlv_end(b, at);
	}
}

/* The top level's repeated entries, each a TLV of nested fields, in the
 * order they are written after the plain fields. */
struct repeated {
	uint16_t tag;
	const struct field *fields;
	size_t off;   /* of the array in struct kx_capinfo */
	size_t noff;  /* of its uint32_t count of entries */
	size_t size;  /* of one entry, bytes */
	uint32_t max; /* entries the array holds */
};

#define REP(tag, fields, arr, n, max)                                                              \
	{                                                                                          \
		tag, fields, offsetof(struct kx_capinfo, arr), offsetof(struct kx_capinfo, n),     \
		        sizeof(((struct kx_capinfo *)0)->arr[0]), max                              \
	}

static const struct repeated repeated[] = {
        REP(CI_DEVICE, device_fields, devices, ndevices, KX_MAX_DEVICES),
        REP(CI_HOOK, hook_fields, hooks, nhooks, KX_MAX_HOOKS),
        REP(CI_DRVCALL, drvcall_fields, drvcalls, ndrvcalls, KX_DRV_FN_MAX),
        REP(CI_ANN_COPY, ann_copy_fields, ann.copies, ann.ncopies, KX_ANN_MAX_COPIES),
        REP(CI_ANN_LATE, ann_late_fields, ann.late, ann.nlate, KX_ANN_MAX_LATE),
};
#define NREPEATED (sizeof(repeated) / sizeof(repeated[0]))

static uint32_t *rep_count(const struct repeated *rp, const struct kx_capinfo *ci)
{
	return (uint32_t *)((uint8_t *)ci + rp->noff);
}

static uint8_t *rep_entry(const struct repeated *rp, const struct kx_capinfo *ci, uint32_t i)
{
	return (uint8_t *)ci + rp->off + (size_t)i * rp->size;
}

static void encode_capinfo(struct kx_bytes *b, const struct kx_capinfo *ci)
{
	encode_fields(b, capinfo_fields, ci);
	for (const struct repeated *rp = repeated; rp < repeated + NREPEATED; rp++) {
		uint32_t n = *rep_count(rp, ci) < rp->max ? *rep_count(rp, ci) : rp->max;

		for (uint32_t i = 0; i < n; i++) {
			size_t at = tlv_begin(b, rp->tag);

			encode_fields(b, rp->fields, rep_entry(rp, ci, i));
			tlv_end(b, at);
		}
	}
}

/* The repeated entry of tag, or NULL. */
static const struct repeated *rep_of(uint16_t tag)
{
	for (const struct repeated *rp = repeated; rp < repeated + NREPEATED; rp++)
		if (rp->tag == tag)
			return rp;
	return NULL;
}

static int decode_fields(const uint8_t *p, size_t len, const struct field *fields, void *base,
                         struct kx_capinfo *ci);

/* One more entry of rp from the TLVs [v, v + len): kept while there is room. 0, or -1. */
static int decode_repeated(const struct repeated *rp, const uint8_t *v, size_t len,
                           struct kx_capinfo *ci)
{
	uint32_t *n = rep_count(rp, ci);
	uint8_t *e;

	if (*n >= rp->max)
		return 0;
	e = rep_entry(rp, ci, *n);
	memset(e, 0, rp->size);
	if (decode_fields(v, len, rp->fields, e, NULL))
		return -1;
	(*n)++;
	return 0;
}

/*
 * Decodes TLVs in [p, p + len) into base. Unknown tags are skipped; a
 * length that overruns its container is an error. ci is set at the top
 * level only, where the repeated entries are collected.
 */
static int decode_fields(const uint8_t *p, size_t len, const struct field *fields, void *base,
                         struct kx_capinfo *ci)
{
	uint8_t *obj = base;
	struct rd r = {p, p + len, 0};

	while (r.p < r.end) {
		const uint8_t *h = rd_bytes(&r, 6);
		const struct repeated *rp;
		const struct field *f;
		const uint8_t *v;
		uint16_t tag;
		uint32_t vlen;

		if (!h)
			return -1;
		tag = (uint16_t)get_le(h, 2);
		vlen = get_le32(h + 2);
		v = rd_bytes(&r, vlen);
		if (!v)
			return -1;
		rp = ci ? rep_of(tag) : NULL;
		if (rp) {
			if (decode_repeated(rp, v, vlen, ci))
				return -1;
			continue;
		}
		for (f = fields; f->tag && f->tag != tag; f++)
			;
		if (!f->tag)
			continue;
		if (f->kind == F_UINT) {
			if (vlen < 1 || vlen > 8)
				return -1;
			store_uint(obj + f->off, f->size, get_le(v, vlen));
		} else if (f->kind == F_STR) {
			size_t n = vlen < f->size - 1u ? vlen : f->size - 1u;

			memset(obj + f->off, 0, f->size);
			memcpy(obj + f->off, v, n);
		} else if (f->kind == F_U64S) {
			/* A writer with more slots: the ones this reader has. */
			if (vlen % 8)
				return -1;
			memset(obj + f->off, 0, f->size);
			for (uint32_t i = 0; i < vlen / 8 && i < f->size / 8u; i++)
				store_uint(obj + f->off + 8 * i, 8, get_le(v + 8 * i, 8));
		} else {
			memset(obj + f->off, 0, f->size);
			if (decode_fields(v, vlen, clock_fields, obj + f->off, NULL))
				return -1;
		}
	}
	return 0;
}

void kx_tlv_capinfo_encode(struct kx_bytes *b, const struct kx_capinfo *ci)
{
	encode_capinfo(b, ci);
}

int kx_tlv_capinfo_decode(const void *p, size_t len, struct kx_capinfo *ci)
{
	memset(ci, 0, sizeof(*ci));
	return decode_fields(p, len, capinfo_fields, ci, ci);
}
