/*
 * XSpace exporter (see xspace.h). Owns the protobuf wire encoding of a
 * capture as tensorflow.profiler.XSpace (proto/xplane.proto): which planes,
 * lines, events, stats and warnings it holds (the TensorBoard log directory
 * around it: export/tblogdir.c).
 *
 * Device timelines (user/analysis/jobs.h) go on the device planes: one line per ring
 * lane (id = 1 + the ring's index in its device, + 1000 per extra lane, as
 * the Chrome tids; name = the ring), one event per job from RUN (or QUEUE) to DONE, named after its
 * submitting ioctl ("DRM_IOCTL_AMDGPU_CS", "KVM_RUN"), "block read|write|
 * other" or "job"; a "memory" line (id MEM_LINE_ID) has one instant per
 * allocation or free. A job and the ioctl that submitted it carry the same
 * correlation_id and XProf flow stat (id = the ioctl's store index + 1, out
 * on the ioctl, in on the job, category generic), so XProf draws the arrow;
 * the flow only when it runs forward, from the ioctl's enter to a job that
 * starts at or after its submit point (analysis/flows.h).
 *
 * Host lines are the threads of the analysis' timeline (analysis/timeline.h):
 * its ordering and its resolved durations, so events nest as in every other
 * output; the exporter has no nesting rule of its own.
 *
 * The encoder writes the wire format directly instead of building
 * protobuf-c message trees: millions of events would cost several small
 * allocations each and a second full copy at pack time. The host plane
 * (nearly all the bytes) is sized first and then streamed (see "the
 * /host:CPU plane"): to a file it never exists whole in memory, peak memory
 * is a few MiB of segments beyond the analysis. Device planes are small: they go through a growing
 * buffer whose nested lengths reserve five bytes, the body moved back once its real varint length
 * is known.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/devices.h"
#include "util/fdio.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/intern.h"
#include "util/pbwire.h"
#include "registry/ioctl_decode.h"
#include "analysis/analysis.h"
#include "analysis/fields.h"
#include "analysis/flows.h"
#include "analysis/threadnames.h"
#include "util/outfile.h"
#include "util/fragq.h"
#include "export/xspace.h"
#include "export/xplane_fields.h"
#include "model/drmusage.h"

/* TSL's plane id for /host:CPU (kHostPlaneId); device planes use 0..n-1. */
#define HOST_PLANE_ID   49
#define HOST_PLANE_NAME "/host:CPU"
/* XProf's trace viewer keeps this many events by default. */
#define VIEWER_EVENT_LIMIT 1000000
/* protobuf refuses messages of 2 GiB and more. */
#define PB_MAX_MSG ((size_t)INT32_MAX)
/* Distinct decoded string values interned as refs; more go inline. */
#define MAX_REF_STRINGS 65536
#define MAX_FIELDS      16
/* An event never needs more: fixed fields + MAX_FIELDS stats of <= 80 bytes. */
#define EVENT_SCRATCH 2048
/* Bytes reserved for a nested message's length (covers lengths < 2^35). */
#define LEN_RESERVE 5

/* ---- raw encoding into a caller-checked cursor ---- */

/* XStat with a varint value (uint64, int64 or ref), as a repeated field. */
static inline uint8_t *put_stat_varint(uint8_t *p, unsigned int field, uint64_t mid,
                                       unsigned int vfield, uint64_t v)
{
	p = kx_pb_len_head(
	        p, field, kx_pb_vfield_size(XSTAT_METADATA_ID, mid) + kx_pb_vfield_size(vfield, v));
	p = kx_pb_vfield(p, XSTAT_METADATA_ID, mid);
	return kx_pb_vfield(p, vfield, v);
}

/* XStat with a str_value. */
static inline uint8_t *put_stat_str(uint8_t *p, unsigned int field, uint64_t mid, const char *s,
                                    size_t len)
{
	p = kx_pb_len_head(p, field,
	                   kx_pb_vfield_size(XSTAT_METADATA_ID, mid) +
	                           kx_pb_len_size(XSTAT_STR, len));
	p = kx_pb_vfield(p, XSTAT_METADATA_ID, mid);
	return kx_pb_bytes(p, XSTAT_STR, s, len);
}

/* ---- the growing output buffer ---- */

static void ob_done(struct kx_bytes *b, uint8_t *end)
{
	b->len = (size_t)(end - b->p);
}

/* A plain (non-oneof) scalar: proto3 leaves out default values. */
static void ob_vfield(struct kx_bytes *b, unsigned int field, uint64_t v)
{
	if (v)
		kx_pb_put_vfield(b, field, v);
}

static void ob_str(struct kx_bytes *b, unsigned int field, const char *s)
{
	kx_pb_put_bytes(b, field, s, strlen(s));
}

/* Opens a length-delimited field; returns the body offset for ob_close. */
static size_t ob_open(struct kx_bytes *b, unsigned int field)
{
	uint8_t *p = kx_bytes_room(b, 8 + LEN_RESERVE);

	if (!p)
		return 0;
	p = kx_pb_tag(p, field, KX_PB_LEN);
	ob_done(b, p + LEN_RESERVE);
	return b->len;
}

/* Writes the body length in front of it, then moves the body up to it. */
static void ob_close(struct kx_bytes *b, size_t body)
{
	size_t len, k;
	uint8_t *lp;

	if (b->oom)
		return;
	len = b->len - body;
	k = kx_pb_varint_size(len);
	lp = b->p + body - LEN_RESERVE;
	kx_pb_varint(lp, len);
	if (k < LEN_RESERVE) {
		memmove(lp + k, b->p + body, len);
		b->len -= LEN_RESERVE - k;
	}
}

/* ---- metadata names ---- */

/* A plane's metadata names are interned (util/intern.h): metadata id = 1 +
 * the interner's id; 0: not interned, or out of memory. */
static uint32_t meta_find(const struct kx_intern *t, const char *s, size_t len)
{
	return (uint32_t)(kx_intern_find(t, s, len) + 1);
}

static uint32_t meta_id(struct kx_intern *t, const char *s, size_t len)
{
	return (uint32_t)(kx_intern_add(t, s, len) + 1);
}

static uint32_t meta_cstr(struct kx_intern *t, const char *s)
{
	return meta_id(t, s, strlen(s));
}

/*
 * Emits a plane's metadata maps: event_metadata entries {key, XEventMetadata
 * {id, name}} from ev (may be NULL), stat_metadata entries from st.
 */
static void put_metadata(struct kx_bytes *b, const struct kx_intern *ev, const struct kx_intern *st)
{
	for (int pass = 0; pass < 2; pass++) {
		const struct kx_intern *t = pass ? st : ev;
		unsigned int field = pass ? XPLANE_STAT_METADATA : XPLANE_EVENT_METADATA;

		for (size_t i = 0; t && i < t->n; i++) {
			size_t nl = kx_intern_len(t, i), id = i + 1;
			size_t val = 2 + kx_pb_varint_size(id) + kx_pb_varint_size(nl) + nl;
			size_t ent = 2 + kx_pb_varint_size(id) + kx_pb_varint_size(val) + val;
			uint8_t *p = kx_bytes_room(b, ent + 16);

			if (!p)
				return;
			p = kx_pb_len_head(p, field, ent);
			p = kx_pb_vfield(p, MAP_KEY, id);
			p = kx_pb_len_head(p, MAP_VALUE, val);
			p = kx_pb_vfield(p, XMETA_ID, id);
			ob_done(b, kx_pb_bytes(p, XMETA_NAME, kx_intern_str(t, i), nl));
		}
	}
}

/* ---- selecting and ordering the events ---- */

/*
 * A host line: a thread's ioctls and annotations in the window, or a lane
 * of one process's cross-thread ranges. Annotations go between the ioctls
 * in start order: ins[j] is how many of the line's ioctls come before
 * annotation j (the order of the nesting walk, analysis/ranges.h).
 */
struct line {
	uint32_t tid;        /* line id: the tid, or ASYNC_LINE_ID for a lane of ranges */
	size_t start, count; /* ioctls: range in the timeline's order */
	size_t *ann;         /* annotations: indices in the analysis' ranges, by start */
	size_t *ins;         /* per annotation: ioctls of the line before it */
	size_t nann;
	uint64_t t0;   /* ns, the line's first event */
	uint32_t pid;  /* async lanes: the process */
	uint32_t lane; /* async lanes: from 0 */
};

/*
 * Lines of cross-thread ranges (they may end on another thread, so they
 * nest on no thread's line): per process, lanes of ranges that do not
 * overlap, with ids above every tid (pid_max <= 2^22) and below XProf's
 * derived lines (0xdeadbeef).
 */
#define ASYNC_LINE_BASE          0x40000000u
#define ASYNC_LINE_ID(pid, lane) (ASYNC_LINE_BASE | (uint32_t)(lane) << 22 | (pid))
#define ASYNC_MAX_LANES          64

/* ---- the exporter state ---- */

/* A host line as the sizing pass found it. */
struct hline {
	size_t body;      /* bytes of the XLine message */
	uint64_t max_end; /* ns after the line's first event */
};

/* Stat metadata interned first in the host plane, so their ids are fixed. */
enum { ST_DRIVER = 1, ST_DEVICE, ST_FD, ST_CMD, ST_RET, ST_ERRNO, ST_PID, ST_NFIXED = ST_PID };
static const char *const fixed_stats[] = {"driver", "device", "fd", "cmd", "ret", "errno", "pid"};

struct exporter {
	const struct kx_analysis *an;
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	const struct kx_timeline *tl; /* threads, ordering, resolved durations */
	struct kx_xspace_opts o;
	struct kx_bytes out;

	struct line *lines;
	size_t nlines;
	const uint32_t *order; /* the timeline's: store indices by thread, each in start order */
	size_t nevents;

	struct kx_intern ev;      /* host plane event metadata names */
	struct kx_intern st;      /* host plane stat metadata names and interned values */
	struct kx_hmap ev_by_cmd; /* cmd << 32 | xfer << 8 | drv -> event metadata id */
	struct kx_hmap dev_ref;   /* dev << 8 | fkind -> device label ref */
	struct kx_hmap field_id;  /* decoded field name pointer -> stat id */
	uint32_t drv_ref[256];

	const struct kx_jobs *jobs;           /* device timelines (the analysis') */
	struct kx_flows flows;                /* which submitting ioctls start a flow */
	size_t job_events;                    /* exported on device planes */
	uint32_t st_offcpu, st_flow, st_corr; /* host plane stat ids, 0 until used */
	const struct kx_ranges *rg;           /* annotation ranges (the analysis') */
	uint32_t *ann_mid;   /* per annotation string id: its event metadata id, 0 until used */
	uint32_t *ann_cat;   /* per annotation string id: its ref as a stat value, 0 until used */
	uint32_t st_ann[10]; /* host plane stat ids of annotation events (ann_stat_names) */
	struct kx_thread_names names; /* threads renamed during the capture */
	size_t ann_events;            /* exported on the host plane */
	struct hline *hl;             /* per line: what the sizing pass found */
	/* The sizing pass's last answers: runs of one command on one file are the rule. */
	uint64_t last_cmd_key, last_dev_key;
	uint32_t last_drv, last_fkind, last_mid, last_dev;
	char *err;
	size_t errlen;
	/* Drivers whose DRM usage line is written (record --drm-usage). */
	char drm_done[16][KX_DRM_NAME];
	int ndrm_done;
};

static int fail(struct exporter *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct exporter *x, const char *fmt, ...)
{
	va_list ap;

	if (x->errlen) {
		va_start(ap, fmt);
		vsnprintf(x->err, x->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int in_window(const struct kx_xspace_opts *o, uint64_t ts)
{
	return ts >= o->from_mono_ns && (!o->to_mono_ns || ts < o->to_mono_ns);
}

/* The first event of thread t at position k0..k1 starting at or after ts (k1: none). */
static size_t first_from(const struct exporter *x, const struct kx_tl_thread *t, size_t k0,
                         size_t k1, uint64_t ts)
{
	while (k0 < k1) {
		size_t mid = k0 + (k1 - k0) / 2;

		if (kx_store_ioctl(x->s, x->order[t->first + mid])->ts < ts)
			k0 = mid + 1;
		else
			k1 = mid;
	}
	return k0;
}

/*
 * The host lines: the timeline's threads (by tid) with events in the
 * window. A thread's events are in start order, so those in the window are
 * one range of it.
 */
static int select_ioctls(struct exporter *x)
{
	const struct kx_timeline *tl = x->tl;

	x->order = tl->order;
	for (size_t i = 0; i < tl->nthreads; i++) {
		const struct kx_tl_thread *t = &tl->threads[i];
		size_t k0 = first_from(x, t, 0, t->count, x->o.from_mono_ns), k1 = t->count;

		if (x->o.to_mono_ns)
			k1 = first_from(x, t, k0, t->count, x->o.to_mono_ns);
		if (k0 == k1)
			continue;
		x->lines[x->nlines++] =
		        (struct line){.tid = t->tid,
		                      .start = t->first + k0,
		                      .count = k1 - k0,
		                      .t0 = kx_store_ioctl(x->s, x->order[t->first + k0])->ts};
		x->nevents += k1 - k0;
	}
	return 0;
}

/* The line of tid among lines [lo, hi), sorted by tid; NULL when none. */
static struct line *find_line(struct exporter *x, size_t lo, size_t hi, uint32_t tid)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->lines[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->nlines && x->lines[lo].tid == tid ? &x->lines[lo] : NULL;
}

/*
 * The line of thread tid, added when it has none yet: lines [0, nio) are
 * the ioctl threads' and those after them threads with annotations only,
 * each run by tid.
 */
static struct line *line_of_tid(struct exporter *x, size_t nio, uint32_t tid, size_t *cap)
{
	struct line *l = find_line(x, 0, nio, tid);

	if (!l)
		l = find_line(x, nio, x->nlines, tid);
	if (l && l < x->lines + x->nlines)
		return l;
	if (kx_grow((void **)&x->lines, cap, x->nlines, sizeof(*x->lines)))
		return NULL;
	x->lines[x->nlines] = (struct line){.tid = tid, .t0 = UINT64_MAX};
	return &x->lines[x->nlines++];
}

/* Room for n more annotations on line l. */
static int line_ann_room(struct line *l, size_t n)
{
	size_t *a = realloc(l->ann, (l->nann + n) * sizeof(*a)), *b;

	if (a)
		l->ann = a;
	b = realloc(l->ins, (l->nann + n) * sizeof(*b));
	if (b)
		l->ins = b;
	return a && b ? 0 : -1;
}

/* Where each annotation of l goes among its ioctls: the nesting walk's order. */
static void line_insertions(struct exporter *x, struct line *l)
{
	size_t k = 0;

	for (size_t j = 0; j < l->nann; j++) {
		const struct kx_range *r = &x->rg->r[l->ann[j]];

		while (k < l->count) {
			size_t idx = x->order[l->start + k];
			const struct kx_ioctl *e = kx_store_ioctl(x->s, idx);

			if (e->ts > r->begin ||
			    (e->ts == r->begin && kx_timeline_dur(x->tl, idx, e->dur) <= r->dur))
				break;
			k++;
		}
		l->ins[j] = k;
	}
	if (l->nann && x->rg->r[l->ann[0]].begin < l->t0)
		l->t0 = x->rg->r[l->ann[0]].begin;
}

/* Each thread's ranges and marks in the window join its line. */
static int select_thread_ranges(struct exporter *x, size_t *cap)
{
	const struct kx_ranges *rg = x->rg;
	size_t nio = x->nlines;

	for (size_t t = 0; t < rg->nthreads; t++) {
		const struct kx_range_thread *th = &rg->threads[t];
		struct line *l = NULL;

		for (size_t i = th->first; i < th->first + th->count; i++) {
			if (!in_window(&x->o, rg->r[i].begin))
				continue;
			if (!l && !(l = line_of_tid(x, nio, th->tid, cap)))
				return -1;
			if (line_ann_room(l, 1))
				return -1;
			l->ann[l->nann++] = i;
		}
	}
	return 0;
}

/* Cross-thread ranges in the window into lanes of their process. */
static int select_cross_ranges(struct exporter *x, size_t *cap)
{
	const struct kx_ranges *rg = x->rg;
	uint64_t lane_end[ASYNC_MAX_LANES];
	size_t first_line = x->nlines;

	for (size_t i = rg->cross_first; i < rg->n; i++) {
		const struct kx_range *r = &rg->r[i];
		struct line *l = NULL;
		uint32_t lane = 0;

		/* A new process: its lanes start empty, whether its first ranges
		 * are in the window or not. */
		if (i == rg->cross_first || rg->r[i - 1].pid != r->pid) {
			first_line = x->nlines;
			memset(lane_end, 0, sizeof(lane_end));
		}
		if (!in_window(&x->o, r->begin))
			continue;
		/* The first lane free at its start; the last one takes what is left. */
		while (lane + 1 < ASYNC_MAX_LANES && lane_end[lane] > r->begin)
			lane++;
		lane_end[lane] =
		        r->begin + r->dur > lane_end[lane] ? r->begin + r->dur : lane_end[lane];
		for (size_t k = first_line; k < x->nlines && !l; k++)
			if (x->lines[k].lane == lane)
				l = &x->lines[k];
		if (!l) {
			if (kx_grow((void **)&x->lines, cap, x->nlines, sizeof(*x->lines)))
				return -1;
			l = &x->lines[x->nlines++];
			*l = (struct line){.tid = ASYNC_LINE_ID(r->pid, lane),
			                   .t0 = r->begin,
			                   .pid = r->pid,
			                   .lane = lane};
		}
		if (line_ann_room(l, 1))
			return -1;
		l->ann[l->nann] = i;
		l->ins[l->nann++] = 0;
	}
	return 0;
}

static int line_cmp(const void *pa, const void *pb)
{
	const struct line *a = pa, *b = pb;

	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/*
 * The host lines: the timeline's threads (by tid) with events in the
 * window, threads with annotations only, then the lanes of cross-thread
 * ranges. A thread's events are in start order, so those in the window are
 * one range of it.
 */
static int select_events(struct exporter *x)
{
	size_t cap = x->tl->nthreads + x->rg->nthreads + 1;

	x->lines = calloc(cap, sizeof(*x->lines));
	if (!x->lines)
		return fail(x, "out of memory selecting %zu threads", x->tl->nthreads);
	if (select_ioctls(x) || select_thread_ranges(x, &cap))
		return fail(x, "out of memory selecting the annotations of %zu threads",
		            x->rg->nthreads);
	for (size_t i = 0; i < x->nlines; i++) {
		line_insertions(x, &x->lines[i]);
		x->ann_events += x->lines[i].nann;
	}
	if (x->nlines > 1)
		qsort(x->lines, x->nlines, sizeof(*x->lines), line_cmp);
	if (select_cross_ranges(x, &cap))
		return fail(x, "out of memory selecting the cross-thread annotation ranges");
	for (size_t i = 0; i < x->nlines; i++)
		if (x->lines[i].tid >= ASYNC_LINE_BASE)
			x->ann_events += x->lines[i].nann;
	return 0;
}

/* ---- the /host:CPU plane ---- */

/*
 * The host plane is written in two passes. The sizing pass walks every
 * line in order: it takes each event's resolved duration from the
 * timeline, interns every name the events need (so ids come out as a single
 * pass would give them) and adds up each line's size, so that every
 * length is known before the first byte goes out. The writing pass then
 * encodes segments of lines on worker threads with those tables frozen
 * (lookups only) and writes them in order through a bounded buffer.
 * Lookups take frozen: 1 in the writing pass (any thread, nothing
 * changes), 0 in the sizing pass (names are added).
 */

static uint32_t event_meta_id(struct exporter *x, const struct kx_ioctl *e, int frozen)
{
	uint64_t key = (uint64_t)e->cmd << 32 | (uint32_t)e->xfer_cmd << 8 | e->drv;
	uint32_t *sl;
	char buf[64];

	if (frozen) {
		sl = kx_hmap_get(&x->ev_by_cmd, key);
		return sl ? *sl : 0;
	}
	if (x->last_mid && x->last_cmd_key == key && x->last_drv == e->drv)
		return x->last_mid;
	sl = kx_hmap_put(&x->ev_by_cmd, key, 0, NULL);
	if (!sl)
		return 0;
	if (!*sl)
		*sl = meta_cstr(&x->ev, kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd,
		                                      buf, sizeof(buf)));
	x->last_cmd_key = key;
	x->last_drv = e->drv;
	x->last_mid = *sl;
	return *sl;
}

static uint32_t device_ref(struct exporter *x, const struct kx_ioctl *e, int frozen)
{
	uint64_t key = (uint64_t)e->dev << 8 | e->fkind;
	uint32_t *sl;
	char buf[128];

	if (frozen) {
		sl = kx_hmap_get(&x->dev_ref, key);
		return sl ? *sl : 0;
	}
	if (x->last_dev && x->last_dev_key == e->dev && x->last_fkind == e->fkind)
		return x->last_dev;
	sl = kx_hmap_put(&x->dev_ref, key, 0, NULL);
	if (!sl)
		return 0;
	if (!*sl)
		*sl = meta_cstr(&x->st, kx_device_label(x->ci->devices, (int)x->ci->ndevices,
		                                        e->fkind, e->dev, buf, sizeof(buf)));
	x->last_dev_key = e->dev;
	x->last_fkind = e->fkind;
	x->last_dev = *sl;
	return *sl;
}

static uint32_t driver_ref(struct exporter *x, const struct kx_ioctl *e, int frozen)
{
	if (!x->drv_ref[e->drv] && !frozen)
		x->drv_ref[e->drv] = meta_cstr(&x->st, kx_driver_name((enum kx_driver)e->drv));
	return x->drv_ref[e->drv];
}

static uint32_t errno_ref(struct exporter *x, int32_t ret, int frozen)
{
	const char *name = kx_errno_name(ret);
	char buf[32];

	if (!name) {
		snprintf(buf, sizeof(buf), "errno %" PRId64, -(int64_t)ret);
		name = buf;
	}
	return frozen ? meta_find(&x->st, name, strlen(name)) : meta_cstr(&x->st, name);
}

static uint32_t field_stat_id(struct exporter *x, const char *name, int frozen)
{
	uint32_t *sl;

	if (frozen) {
		sl = kx_hmap_get(&x->field_id, (uintptr_t)name);
		return sl ? *sl : 0;
	}
	sl = kx_hmap_put(&x->field_id, (uintptr_t)name, 0, NULL);
	if (!sl)
		return 0;
	if (!*sl)
		*sl = meta_cstr(&x->st, name);
	return *sl;
}

/* Stats of the decoded argument fields; NULL on OOM (or a name not interned). */
static uint8_t *put_arg_stats(struct exporter *x, const struct kx_ioctl *e, uint8_t *p, int frozen)
{
	struct kx_field f[MAX_FIELDS];
	int nf = kx_event_fields(x->an, e, f, MAX_FIELDS);
	for (int i = 0; i < nf; i++) {
		uint32_t mid = field_stat_id(x, f[i].name, frozen), ref;
		char hex[24];
		size_t sl;

		if (!mid)
			return NULL;
		switch (f[i].kind) {
		case KX_FIELD_U64:
			p = put_stat_varint(p, XEVENT_STATS, mid, XSTAT_UINT64, f[i].u);
			break;
		case KX_FIELD_I64:
			p = put_stat_varint(p, XEVENT_STATS, mid, XSTAT_INT64, (uint64_t)f[i].i);
			break;
		case KX_FIELD_HEX: /* addresses and flags read best in hex */
			sl = (size_t)snprintf(hex, sizeof(hex), "0x%" PRIx64, f[i].u);
			p = put_stat_str(p, XEVENT_STATS, mid, hex, sl);
			break;
		case KX_FIELD_STR:
			sl = strnlen(f[i].s, sizeof(f[i].s));
			/* enum-like names repeat: interned, unless there are too many */
			ref = meta_find(&x->st, f[i].s, sl);
			if (!ref && !frozen && x->st.n < MAX_REF_STRINGS) {
				ref = meta_id(&x->st, f[i].s, sl);
				if (!ref)
					return NULL;
			}
			if (ref)
				p = put_stat_varint(p, XEVENT_STATS, mid, XSTAT_REF, ref);
			else
				p = put_stat_str(p, XEVENT_STATS, mid, f[i].s, sl);
			break;
		}
	}
	return p;
}

/* XProf's flow stat: 2-bit direction, 56-bit id, 6-bit category (0: generic). */
#define FLOW_IN  1
#define FLOW_OUT 2
static uint64_t flow_value(uint64_t id, unsigned int dir)
{
	return (id & ((1ULL << 56) - 1)) << 2 | dir;
}

/* A host plane stat name interned on first use; 0 on OOM. */
static uint32_t host_stat(struct exporter *x, uint32_t *id, const char *name)
{
	if (!*id)
		*id = meta_cstr(&x->st, name);
	return *id;
}

/* Bytes of an XStat with a varint value: field tag and length, two tags, two varints. */
static inline size_t stat_size(uint64_t mid, uint64_t v)
{
	return 4 + kx_pb_varint_size(mid) + kx_pb_varint_size(v);
}

/*
 * The sizing pass's view of put_event: the bytes it will write for e,
 * interning what it needs on the way. 0 on OOM.
 */
static size_t event_size(struct exporter *x, const struct kx_ioctl *e, size_t idx,
                         uint64_t offset_ns, uint64_t dur_ns)
{
	uint32_t mid = event_meta_id(x, e, 0), dev = device_ref(x, e, 0), drv = driver_ref(x, e, 0);
	size_t n;

	if (!mid || !dev || !drv)
		return 0;
	n = 1 + kx_pb_varint_size(mid) + 1 + kx_pb_varint_size(offset_ns * 1000);
	if (dur_ns)
		n += 1 + kx_pb_varint_size(dur_ns * 1000);
	n += stat_size(ST_DRIVER, drv) + stat_size(ST_DEVICE, dev) +
	     stat_size(ST_FD, (uint64_t)(int64_t)e->fd) + stat_size(ST_CMD, e->cmd) +
	     stat_size(ST_RET, (uint64_t)e->ret);
	if (e->ret < 0) {
		uint32_t ref = errno_ref(x, e->ret, 0);

		if (!ref)
			return 0;
		n += stat_size(ST_ERRNO, ref);
	}
	n += stat_size(ST_PID, e->pid);
	if (e->offcpu_us) {
		if (!host_stat(x, &x->st_offcpu, "offcpu_ns"))
			return 0;
		n += stat_size(x->st_offcpu, (uint64_t)e->offcpu_us * 1000);
	}
	if (x->jobs && kx_jobs_ioctl_submitted(x->jobs, idx)) {
		if (!host_stat(x, &x->st_flow, "flow") ||
		    !host_stat(x, &x->st_corr, "correlation_id"))
			return 0;
		if (kx_flows_from(&x->flows, idx))
			n += stat_size(x->st_flow, flow_value(idx + 1, FLOW_OUT));
		n += stat_size(x->st_corr, idx + 1);
	}
	if (kx_event_has_fields(x->an, e)) {
		uint8_t scratch[EVENT_SCRATCH], *end = put_arg_stats(x, e, scratch, 0);

		if (!end)
			return 0;
		n += (size_t)(end - scratch);
	}
	return n;
}

/*
 * One XEvent of store ioctl idx into p (EVENT_SCRATCH bytes), with the
 * tables frozen. Returns the end, or NULL when a name was not interned.
 */
static uint8_t *put_event(struct exporter *x, const struct kx_ioctl *e, size_t idx,
                          uint64_t offset_ns, uint64_t dur_ns, uint8_t *p)
{
	uint32_t mid = event_meta_id(x, e, 1), dev = device_ref(x, e, 1), drv = driver_ref(x, e, 1);

	if (!mid || !dev || !drv)
		return NULL;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, offset_ns * 1000); /* oneof: written even when 0 */
	if (dur_ns)
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, dur_ns * 1000);
	p = put_stat_varint(p, XEVENT_STATS, ST_DRIVER, XSTAT_REF, drv);
	p = put_stat_varint(p, XEVENT_STATS, ST_DEVICE, XSTAT_REF, dev);
	p = put_stat_varint(p, XEVENT_STATS, ST_FD, XSTAT_INT64, (uint64_t)(int64_t)e->fd);
	p = put_stat_varint(p, XEVENT_STATS, ST_CMD, XSTAT_UINT64, e->cmd);
	p = put_stat_varint(p, XEVENT_STATS, ST_RET, XSTAT_INT64, (uint64_t)e->ret);
	if (e->ret < 0) {
		uint32_t ref = errno_ref(x, e->ret, 1);

		if (!ref)
			return NULL;
		p = put_stat_varint(p, XEVENT_STATS, ST_ERRNO, XSTAT_REF, ref);
	}
	p = put_stat_varint(p, XEVENT_STATS, ST_PID, XSTAT_INT64, e->pid);
	if (e->offcpu_us)
		p = put_stat_varint(p, XEVENT_STATS, x->st_offcpu, XSTAT_UINT64,
		                    (uint64_t)e->offcpu_us * 1000);
	/* The arrow to the jobs it submitted (those with a flow carry the same one). */
	if (x->jobs && kx_jobs_ioctl_submitted(x->jobs, idx)) {
		if (kx_flows_from(&x->flows, idx))
			p = put_stat_varint(p, XEVENT_STATS, x->st_flow, XSTAT_UINT64,
			                    flow_value(idx + 1, FLOW_OUT));
		p = put_stat_varint(p, XEVENT_STATS, x->st_corr, XSTAT_UINT64, idx + 1);
	}
	if (!kx_event_has_fields(x->an, e))
		return p;
	return put_arg_stats(x, e, p, 1);
}

/* ns values that stay below INT64_MAX once in ps. */
#define MAX_NS ((uint64_t)INT64_MAX / 1000)

/* An event's start and duration (dur_ns: resolved by the timeline) on its line. */
static inline void event_span(const struct kx_ioctl *e, uint64_t dur_ns, uint64_t t0,
                              uint64_t *start, uint64_t *dur)
{
	*start = e->ts - t0;
	*dur = dur_ns;
	if (*start > MAX_NS)
		*start = MAX_NS;
	if (*dur > MAX_NS - *start)
		*dur = MAX_NS - *start;
}

/* ---- annotations on the host plane ---- */

/* A range's start and resolved duration on its line (marks: zero length). */
static inline void ann_span(const struct kx_range *r, uint64_t t0, uint64_t *start, uint64_t *dur)
{
	*start = r->begin - t0;
	*dur = r->dur;
	if (*start > MAX_NS)
		*start = MAX_NS;
	if (*dur > MAX_NS - *start)
		*dur = MAX_NS - *start;
}

/* An annotation string's id in a per-string table, interned when new (not frozen). */
static uint32_t ann_string(struct exporter *x, uint32_t *table, struct kx_intern *t, uint32_t sid,
                           int frozen)
{
	if (!table[sid] && !frozen)
		table[sid] = meta_cstr(t, kx_store_ann_str(x->rg->strings, sid));
	return table[sid];
}

/* The stats of a range event: (metadata id, value field, value), n of them. */
struct ann_stats {
	uint32_t mid[10];
	uint64_t v[10];
	unsigned int vfield[10];
	int n;
};

enum {
	SA_DEPTH,
	SA_IOCTLS,
	SA_DJOBS,
	SA_DTIME,
	SA_CAT,
	SA_OPEN,
	SA_RID,
	SA_TID,
	SA_ETID,
	SA_THREAD
};
static const char *const ann_stat_names[] = {"depth",    "ioctls", "device_jobs", "device_time_ps",
                                             "category", "open",   "range_id",    "tid",
                                             "end_tid",  "thread"};

static void ann_stat_add(struct ann_stats *a, uint32_t mid, unsigned int vfield, uint64_t v)
{
	a->mid[a->n] = mid;
	a->vfield[a->n] = vfield;
	a->v[a->n++] = v;
}

/* The name r's thread had when r began, as a stat value ref, when its line
 * is named otherwise (it began before an exec or a rename); 0 when not, or
 * on OOM (*oom set). */
static uint32_t ann_thread_ref(struct exporter *x, const struct kx_range *r, int frozen, int *oom)
{
	const char *then = kx_thread_name_at(&x->names, r->tid, r->begin);
	const char *now = then ? kx_store_comm(x->s, r->tid) : NULL;
	size_t n;
	uint32_t ref;

	if (!then || (now && !strncmp(then, now, KX_COMM_LEN)))
		return 0;
	n = strnlen(then, KX_COMM_LEN);
	ref = frozen ? meta_find(&x->st, then, n) : meta_id(&x->st, then, n);
	*oom = !ref;
	return ref;
}

/*
 * What a range event carries: depth; thread ranges the ioctls they hold
 * and their jobs' device time; cross-thread ones their id and threads; its
 * category; "open" when it never ended; "thread", the name its thread had
 * then, when that was before an exec or a rename. 0, or -1 when a name is
 * missing.
 */
static int ann_stats_of(struct exporter *x, const struct kx_range *r, struct ann_stats *a,
                        int frozen)
{
	const uint32_t *id = x->st_ann;

	a->n = 0;
	for (int i = 0; !frozen && i < (int)(sizeof(ann_stat_names) / sizeof(ann_stat_names[0]));
	     i++)
		if (!host_stat(x, &x->st_ann[i], ann_stat_names[i]))
			return -1;
	ann_stat_add(a, id[SA_DEPTH], XSTAT_UINT64, r->depth);
	if (r->kind == KX_RANGE_THREAD)
		ann_stat_add(a, id[SA_IOCTLS], XSTAT_UINT64, r->ioctls);
	if (r->jobs) {
		ann_stat_add(a, id[SA_DJOBS], XSTAT_UINT64, r->jobs);
		ann_stat_add(a, id[SA_DTIME], XSTAT_UINT64, r->device_ns * 1000);
	}
	if (r->kind == KX_RANGE_CROSS) {
		ann_stat_add(a, id[SA_RID], XSTAT_UINT64, r->id);
		ann_stat_add(a, id[SA_TID], XSTAT_INT64, r->tid);
		if (r->end_tid)
			ann_stat_add(a, id[SA_ETID], XSTAT_INT64, r->end_tid);
	}
	if (r->cat) {
		uint32_t ref = ann_string(x, x->ann_cat, &x->st, r->cat, frozen);

		if (!ref)
			return -1;
		ann_stat_add(a, id[SA_CAT], XSTAT_REF, ref);
	}
	if (r->open)
		ann_stat_add(a, id[SA_OPEN], XSTAT_UINT64, 1);
	if (r->kind != KX_RANGE_CROSS) {
		int oom = 0;
		uint32_t ref = ann_thread_ref(x, r, frozen, &oom);

		if (oom)
			return -1;
		if (ref)
			ann_stat_add(a, id[SA_THREAD], XSTAT_REF, ref);
	}
	return 0;
}

/* The sizing pass's view of put_ann_event, interning what it needs. 0 on OOM. */
static size_t ann_event_size(struct exporter *x, const struct kx_range *r, uint64_t start,
                             uint64_t dur)
{
	uint32_t mid = ann_string(x, x->ann_mid, &x->ev, r->name, 0);
	struct ann_stats a;
	size_t n;

	if (!mid || ann_stats_of(x, r, &a, 0))
		return 0;
	n = 1 + kx_pb_varint_size(mid) + 1 + kx_pb_varint_size(start * 1000);
	if (dur)
		n += 1 + kx_pb_varint_size(dur * 1000);
	for (int i = 0; i < a.n; i++)
		n += stat_size(a.mid[i], a.v[i]);
	return n;
}

/* One range or mark as an XEvent into p (EVENT_SCRATCH bytes), tables frozen. */
static uint8_t *put_ann_event(struct exporter *x, const struct kx_range *r, uint64_t start,
                              uint64_t dur, uint8_t *p)
{
	uint32_t mid = ann_string(x, x->ann_mid, &x->ev, r->name, 1);
	struct ann_stats a;

	if (!mid || ann_stats_of(x, r, &a, 1))
		return NULL;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, start * 1000); /* oneof: written even when 0 */
	if (dur)
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, dur * 1000);
	for (int i = 0; i < a.n; i++)
		p = put_stat_varint(p, XEVENT_STATS, a.mid[i], a.vfield[i], a.v[i]);
	return p;
}

/* The XLine fields before the events (at most LINE_HEAD bytes). */
#define LINE_HEAD 128
static size_t line_head(struct exporter *x, const struct line *l, uint8_t *buf)
{
	const char *comm = l->tid < ASYNC_LINE_BASE ? kx_store_comm(x->s, l->tid) : NULL;
	uint64_t ts = (uint64_t)kx_capinfo_realtime(x->ci, l->t0);
	uint64_t id = l->tid;
	uint8_t *p = buf;
	char name[32];

	if (x->o.line_id && l->tid < ASYNC_LINE_BASE) {
		uint64_t v = x->o.line_id(x->o.line_id_ctx, l->tid);

		if (v)
			id = v;
	}
	size_t n;

	if (l->tid >= ASYNC_LINE_BASE && l->lane)
		snprintf(name, sizeof(name), "ranges of pid %" PRIu32 " #%" PRIu32, l->pid,
		         l->lane + 1);
	else if (l->tid >= ASYNC_LINE_BASE)
		snprintf(name, sizeof(name), "ranges of pid %" PRIu32, l->pid);
	else if (comm && comm[0])
		snprintf(name, sizeof(name), "%.*s", KX_COMM_LEN, comm);
	else
		snprintf(name, sizeof(name), "tid %" PRIu32, l->tid);
	n = strlen(name);
	/* proto3 leaves out zero scalars */
	if (id)
		p = kx_pb_vfield(p, XLINE_ID, id);
	p = kx_pb_bytes(p, XLINE_NAME, name, n);
	p = kx_pb_bytes(p, XLINE_DISPLAY_NAME, name, n);
	if (ts)
		p = kx_pb_vfield(p, XLINE_TIMESTAMP_NS, ts);
	return (size_t)(p - buf);
}

/* The XLine fields after the events. */
static size_t line_tail(const struct hline *h, uint8_t *buf)
{
	return h->max_end ? (size_t)(kx_pb_vfield(buf, XLINE_DURATION_PS, h->max_end * 1000) - buf)
	                  : 0;
}

/*
 * The duration of the event at position pos of the order: the timeline's
 * fix when there is one (*fi: the next fix, walking positions upwards).
 */
static inline uint64_t resolved_dur(const struct exporter *x, size_t *fi, size_t pos,
                                    const struct kx_ioctl *e)
{
	if (*fi < x->tl->nfix && x->tl->fix[*fi].pos == pos)
		return x->tl->fix[(*fi)++].dur;
	return e->dur;
}

/* Sizing pass over one line: names, byte count, span. */
static int size_line(struct exporter *x, size_t li)
{
	const struct line *l = &x->lines[li];
	struct hline *h = &x->hl[li];
	const uint32_t *ord = x->order + l->start;
	uint64_t t0 = l->t0, max_end = 0;
	uint8_t buf[LINE_HEAD];
	size_t body = line_head(x, l, buf), fi = kx_timeline_fix_from(x->tl, l->start);

	for (size_t j = 0; j < l->nann; j++) {
		const struct kx_range *r = &x->rg->r[l->ann[j]];
		uint64_t start, dur;
		size_t elen;

		ann_span(r, t0, &start, &dur);
		if (start + dur > max_end)
			max_end = start + dur;
		elen = ann_event_size(x, r, start, dur);
		if (!elen)
			return fail(x, "out of memory");
		body += 1 + kx_pb_varint_size(elen) + elen;
	}

	for (size_t k = 0; k < l->count; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(x->s, ord[k]);
		uint64_t start, dur;
		size_t elen;

		event_span(e, resolved_dur(x, &fi, l->start + k, e), t0, &start, &dur);
		if (start + dur > max_end)
			max_end = start + dur;
		elen = event_size(x, e, ord[k], start, dur);
		if (!elen)
			return fail(x, "out of memory");
		body += 1 + kx_pb_varint_size(elen) + elen;
	}
	h->max_end = max_end;
	body += line_tail(h, buf);
	h->body = body;
	return 0;
}

/* Where the bytes go: a file descriptor, or the exporter's buffer. */
struct sink {
	int fd; /* < 0: x->out */
	struct kx_bytes *ob;
	int err; /* errno of the first write failure */
	uint64_t bytes;
};

static void sink_put(struct sink *k, const void *p, size_t n)
{
	k->bytes += n;
	if (k->fd < 0)
		kx_bytes_put(k->ob, p, n);
	else if (!k->err && n)
		k->err = kx_write_all(k->fd, p, n);
}

/* A segment of the host plane: events [k0, k1) of line li. */
#define SEG_EVENTS 16384
struct seg {
	size_t li, k0, k1;
	int last; /* the line's last segment: the annotations after its last ioctl too */
};

struct hwriter {
	struct exporter *x;
	struct sink *k;
};

/* The first annotation of line l at or after ioctl k (ins is sorted). */
static size_t ann_from(const struct line *l, size_t k)
{
	size_t lo = 0, hi = l->nann;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->ins[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One event encoded into scratch (up to q) as an XLine event of out. */
static void seg_event(struct kx_bytes *out, const uint8_t *scratch, const uint8_t *q)
{
	if (!q)
		out->oom = 1;
	else
		kx_pb_put_bytes(out, XLINE_EVENTS, scratch, (size_t)(q - scratch));
}

/* One annotation event of a segment. */
static void seg_ann(struct exporter *x, struct kx_bytes *out, const struct kx_range *r, uint64_t t0)
{
	uint8_t scratch[EVENT_SCRATCH];
	uint64_t start, dur;

	ann_span(r, t0, &start, &dur);
	seg_event(out, scratch, put_ann_event(x, r, start, dur, scratch));
}

/* Encodes a segment's events (on a worker thread; the exporter is read only). */
static int seg_encode(const void *desc, struct kx_bytes *out, void *wctx, void *arg)
{
	const struct seg *g = desc;
	struct exporter *x = ((const struct hwriter *)arg)->x;
	const struct line *l = &x->lines[g->li];
	const uint32_t *ord = x->order + l->start;
	uint64_t t0 = l->t0;
	/* The first fix at or after this segment, its first annotation. */
	size_t fi = kx_timeline_fix_from(x->tl, l->start + g->k0), aj = ann_from(l, g->k0);

	(void)wctx;
	for (size_t k = g->k0; k < g->k1 && !out->oom; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(x->s, ord[k]);
		uint8_t scratch[EVENT_SCRATCH];
		uint64_t start, dur;

		for (; aj < l->nann && l->ins[aj] == k; aj++)
			seg_ann(x, out, &x->rg->r[l->ann[aj]], t0);
		event_span(e, resolved_dur(x, &fi, l->start + k, e), t0, &start, &dur);
		seg_event(out, scratch, put_event(x, e, ord[k], start, dur, scratch));
	}
	for (; g->last && aj < l->nann; aj++)
		seg_ann(x, out, &x->rg->r[l->ann[aj]], t0);
	return out->oom ? ENOMEM : 0;
}

static int seg_emit(const uint8_t *p, size_t n, void *arg)
{
	sink_put(((const struct hwriter *)arg)->k, p, n);
	return 0;
}

static const struct kx_fragq_ops seg_ops = {
        .encode = seg_encode,
        .emit = seg_emit,
};

/*
 * The host plane: sizing pass, then the bytes to k. In memory the whole
 * plane's room is made first, so the buffer grows once.
 */
static void put_plane_str_stat(struct kx_bytes *b, struct kx_intern *st, const char *name,
                               const char *val)
{
	uint32_t mid = meta_cstr(st, name);
	size_t len = strlen(val);
	uint8_t *p = kx_bytes_room(b, len + 32);

	if (!mid)
		b->oom = 1;
	else if (p)
		ob_done(b, put_stat_str(p, XPLANE_STATS, mid, val, len));
}

/* The host plane's own stats: which attach mechanism the ioctl hooks ran with. */
static void host_plane_stats(struct exporter *x, struct kx_bytes *b)
{
	char mech[sizeof(x->ci->hooks[0].mech) + sizeof(x->ci->hooks[0].why) + 8];

	if (kx_capinfo_ioctl_mech(x->ci, mech, sizeof(mech)))
		put_plane_str_stat(b, &x->st, "ioctl_hooks", mech);
}

static int put_host_plane(struct exporter *x, struct sink *k)
{
	uint8_t head[64 + sizeof(HOST_PLANE_NAME)], buf[LINE_HEAD], *p;
	struct kx_bytes meta = {0}, pstats = {0};
	struct hwriter hw = {x, k};
	struct kx_fragq *q;
	size_t plane, head_len;
	int bad;

	for (int i = 0; i < ST_NFIXED; i++)
		if (meta_cstr(&x->st, fixed_stats[i]) != (uint32_t)i + 1)
			return fail(x, "out of memory");
	x->hl = calloc(x->nlines + 1, sizeof(*x->hl));
	if (!x->hl)
		return fail(x, "out of memory");
	for (size_t i = 0; i < x->nlines; i++)
		if (size_line(x, i))
			return -1;
	host_plane_stats(x, &pstats);
	put_metadata(&meta, &x->ev, &x->st);
	if (meta.oom || pstats.oom) {
		free(meta.p);
		free(pstats.p);
		return fail(x, "out of memory");
	}
	p = kx_pb_vfield(head, XPLANE_ID, HOST_PLANE_ID);
	p = kx_pb_bytes(p, XPLANE_NAME, HOST_PLANE_NAME, sizeof(HOST_PLANE_NAME) - 1);
	head_len = (size_t)(p - head);
	plane = head_len + meta.len + pstats.len;
	for (size_t i = 0; i < x->nlines; i++)
		plane += 1 + kx_pb_varint_size(x->hl[i].body) + x->hl[i].body;
	if (plane > PB_MAX_MSG) {
		free(meta.p);
		free(pstats.p);
		return fail(x,
		            "XSpace is over protobuf's 2 GiB limit (%zu bytes of %zu threads): "
		            "export a shorter time window (kxprof convert --split-events N "
		            "with a smaller N)",
		            plane, x->nlines);
	}
	if (k->fd < 0 && !kx_bytes_room(k->ob, plane + 16 + 65536)) {
		free(meta.p);
		free(pstats.p);
		return fail(x, "out of memory serializing the XSpace");
	}

	q = kx_fragq_new(x->nevents / SEG_EVENTS, sizeof(struct seg), &seg_ops, &hw);
	if (!q) {
		free(meta.p);
		free(pstats.p);
		return fail(x, "out of memory");
	}
	p = kx_pb_len_head(buf, XSPACE_PLANES, plane);
	kx_fragq_lit(q, buf, (size_t)(p - buf));
	kx_fragq_lit(q, head, head_len);
	for (size_t i = 0; i < x->nlines; i++) {
		const struct line *l = &x->lines[i];

		p = kx_pb_len_head(buf, XPLANE_LINES, x->hl[i].body);
		kx_fragq_lit(q, buf, (size_t)(p - buf));
		kx_fragq_lit(q, buf, line_head(x, l, buf));
		for (size_t k0 = 0; k0 < l->count || (!k0 && l->nann); k0 += SEG_EVENTS) {
			size_t k1 = l->count - k0 < SEG_EVENTS ? l->count : k0 + SEG_EVENTS;
			struct seg g = {i, k0, k1, k1 == l->count};

			kx_fragq_piece(q, &g);
		}
		kx_fragq_lit(q, buf, line_tail(&x->hl[i], buf));
	}
	kx_fragq_lit(q, meta.p, meta.len);
	kx_fragq_lit(q, pstats.p, pstats.len);
	bad = kx_fragq_end(q);
	free(meta.p);
	free(pstats.p);
	if (bad)
		return fail(x, "out of memory encoding the host plane");
	if (k->ob->oom)
		return fail(x, "out of memory serializing the XSpace (%zu bytes so far)",
		            k->ob->len);
	if (k->bytes != 1 + kx_pb_varint_size(plane) + plane)
		return fail(x, "internal error: host plane of %" PRIu64 " bytes, %zu expected",
		            k->bytes, 1 + kx_pb_varint_size(plane) + plane);
	return 0;
}

/* ---- device planes ---- */

static int anon_kind(unsigned int fkind)
{
	return fkind == KX_FK_KVM_VM || fkind == KX_FK_KVM_VCPU || fkind == KX_FK_KVM_DEV ||
	       fkind == KX_FK_VFIO_DEV;
}

static const char *device_driver(const struct kx_device *d)
{
	return d->driver[0] ? d->driver : kx_driver_name((enum kx_driver)d->drv);
}

static void device_node(const struct kx_capinfo *ci, const struct kx_device *d, char *buf,
                        size_t len)
{
	if (d->node[0])
		snprintf(buf, len, "%s", d->node);
	else if (d->any_minor)
		snprintf(buf, len, "%s %u:*", d->fkind == KX_FK_BLK ? "block" : "char",
		         KX_MAJOR(d->dev));
	else
		kx_device_label(ci->devices, (int)ci->ndevices, d->fkind, d->dev, buf, len);
}

/*
 * One plane per traced device: anon-inode kinds (kvm-vm, kvm-vcpu, ...) are
 * files of a driver's real device, so they get a plane only when their
 * driver has no device node in the set; equal (driver, node) pairs once.
 */
static int device_has_plane(const struct kx_capinfo *ci, uint32_t i)
{
	const struct kx_device *d = &ci->devices[i];
	char node[80], other[80];

	if (anon_kind(d->fkind)) {
		for (uint32_t j = 0; j < ci->ndevices; j++)
			if (!anon_kind(ci->devices[j].fkind) && ci->devices[j].drv == d->drv)
				return 0;
	}
	device_node(ci, d, node, sizeof(node));
	for (uint32_t j = 0; j < i; j++) {
		if (!device_has_plane(ci, j) ||
		    strcmp(device_driver(&ci->devices[j]), device_driver(d)))
			continue;
		device_node(ci, &ci->devices[j], other, sizeof(other));
		if (!strcmp(node, other))
			return 0;
	}
	return 1;
}

/* Who makes the hardware a driver runs, where that is known. */
static const char *device_vendor(enum kx_driver drv)
{
	switch (drv) {
	case KX_DRV_AMDGPU:
	case KX_DRV_KFD:
	case KX_DRV_AMDXDNA:
		return "amd";
	case KX_DRV_I915:
	case KX_DRV_XE:
	case KX_DRV_IVPU:
		return "intel";
	case KX_DRV_NVIDIA:
	case KX_DRV_NVIDIA_UVM:
	case KX_DRV_NVIDIA_MODESET:
	case KX_DRV_NOUVEAU:
		return "nvidia";
	case KX_DRV_HABANALABS:
		return "habana";
	case KX_DRV_NEURON:
		return "aws";
	case KX_DRV_GASKET:
		return "google";
	case KX_DRV_QAIC:
		return "qualcomm";
	case KX_DRV_TENSTORRENT:
		return "tenstorrent";
	default:
		return NULL;
	}
}

/* ---- device timelines: job lines and the memory line of a device plane ---- */

#define LANE_ID_STEP 1000 /* line id of lane l of ring r: r + 1 + l * LANE_ID_STEP */
#define MEM_LINE_ID  9999

/* A device plane's own metadata: event names and stat names. */
struct ptabs {
	struct kx_intern ev, st;
	int oom;
};

static uint32_t pid_of(struct ptabs *t, struct kx_intern *tab, const char *name)
{
	uint32_t id = meta_cstr(tab, name);

	if (!id)
		t->oom = 1;
	return id;
}

static uint8_t *pstat_u(struct ptabs *t, uint8_t *p, const char *name, uint64_t v)
{
	uint32_t mid = pid_of(t, &t->st, name);

	return mid ? put_stat_varint(p, XEVENT_STATS, mid, XSTAT_UINT64, v) : p;
}

static uint8_t *pstat_i(struct ptabs *t, uint8_t *p, const char *name, int64_t v)
{
	uint32_t mid = pid_of(t, &t->st, name);

	return mid ? put_stat_varint(p, XEVENT_STATS, mid, XSTAT_INT64, (uint64_t)v) : p;
}

static uint8_t *pstat_ref(struct ptabs *t, uint8_t *p, const char *name, const char *val)
{
	uint32_t mid = pid_of(t, &t->st, name), ref = pid_of(t, &t->st, val);

	return mid && ref ? put_stat_varint(p, XEVENT_STATS, mid, XSTAT_REF, ref) : p;
}

static const char *job_name(const struct exporter *x, const struct kx_jobrec *j, char *buf,
                            size_t len)
{
	if (j->submit >= 0) {
		const struct kx_ioctl *e = kx_store_ioctl(x->s, (size_t)j->submit);

		return kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, len);
	}
	if (j->src == KX_JOB_SRC_KVM)
		return "KVM_RUN";
	if (j->src == KX_JOB_SRC_BLOCK)
		return j->aux2 == 1 ? "block read" : j->aux2 == 2 ? "block write" : "block other";
	return "job";
}

/* One job as an XEvent into p (EVENT_SCRATCH bytes). */
static uint8_t *put_job_event(struct exporter *x, struct ptabs *t, const struct kx_jobrec *j,
                              uint64_t t0, uint8_t *p)
{
	uint64_t start = kx_jobrec_start(j), end = kx_jobrec_end(j, x->jobs->end_ns);
	char buf[96];
	uint32_t mid = pid_of(t, &t->ev, job_name(x, j, buf, sizeof(buf)));
	struct kx_flow fl;

	if (!mid)
		return p;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, (start - t0) * 1000);
	if (end > start)
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, (end - start) * 1000);
	p = pstat_ref(t, p, "source", kx_job_src_name(j->src));
	if (j->src == KX_JOB_SRC_BLOCK) {
		p = pstat_u(t, p, "sector", j->seqno);
		p = pstat_u(t, p, "bytes", j->aux);
	} else {
		/* XProf's context_id is a string "$$<n>". */
		snprintf(buf, sizeof(buf), "$$%llu", (unsigned long long)j->ctx);
		p = pstat_ref(t, p, "context_id", buf);
		p = pstat_u(t, p, "seqno", j->seqno);
	}
	if (j->pid)
		p = pstat_i(t, p, "pid", j->pid);
	if (j->tid)
		p = pstat_i(t, p, "tid", j->tid);
	if (j->client)
		p = pstat_u(t, p, "client_id", j->client);
	if (j->queue_ts && j->run_ts && j->src != KX_JOB_SRC_KVM)
		p = pstat_u(t, p, "queue_delay_ps", (j->run_ts - j->queue_ts) * 1000);
	else if (j->flags & KX_JOBF_DIRECT)
		p = pstat_u(t, p, "queue_delay_ps", 0);
	if (j->waiter_tid)
		p = pstat_i(t, p, "waiter_tid", j->waiter_tid);
	if (j->src == KX_JOB_SRC_KVM && j->done_ts)
		p = pstat_u(t, p, "exit_reason", j->aux);
	if (j->src == KX_JOB_SRC_MSM && j->aux && j->aux2 >= j->aux)
		p = pstat_u(t, p, "device_ticks", j->aux2 - j->aux);
	if (j->flags & KX_JOBF_INCOMPLETE)
		p = pstat_u(t, p, "incomplete", 1);
	if (j->flags & KX_JOBF_NO_QUEUE)
		p = pstat_u(t, p, "no_queue", 1);
	if (j->submit >= 0) {
		/* Only a flow that runs forward (analysis/flows.h). */
		if (kx_job_flow(x->an, (size_t)(j - x->jobs->jobs), &fl))
			p = pstat_u(t, p, "flow", flow_value((uint64_t)j->submit + 1, FLOW_IN));
		p = pstat_u(t, p, "correlation_id", (uint64_t)j->submit + 1);
	}
	return p;
}

/* One line per lane of each ring; lanes never overlap, jobs are by start. */
static void put_job_lines(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	const struct kx_jobs *jb = x->jobs;
	uint8_t scratch[EVENT_SCRATCH];
	char name[48];

	for (uint32_t r = 0; r < jd->nrings; r++) {
		const struct kx_jobring *rg = &jb->rings[jd->first_ring + r];

		for (uint32_t lane = 0; lane < rg->nlanes; lane++) {
			uint64_t t0 = 0, max_end = 0;
			size_t body = 0, n = 0;

			for (size_t k = 0; k < rg->njobs; k++) {
				const struct kx_jobrec *j = &jb->jobs[rg->first + k];
				uint64_t start = kx_jobrec_start(j), end;
				uint8_t *sp;

				if (j->lane != lane || !in_window(&x->o, start))
					continue;
				if (!n++) {
					t0 = start;
					if (lane)
						snprintf(name, sizeof(name), "%s #%u", rg->name,
						         lane + 1);
					else
						snprintf(name, sizeof(name), "%s", rg->name);
					body = ob_open(&x->out, XPLANE_LINES);
					ob_vfield(&x->out, XLINE_ID,
					          rg->id + 1 + (uint64_t)lane * LANE_ID_STEP);
					ob_str(&x->out, XLINE_NAME, name);
					ob_vfield(&x->out, XLINE_TIMESTAMP_NS,
					          (uint64_t)kx_capinfo_realtime(x->ci, t0));
				}
				end = kx_jobrec_end(j, jb->end_ns);
				if (end - t0 > max_end)
					max_end = end - t0;
				sp = put_job_event(x, t, j, t0, scratch);
				kx_pb_put_bytes(&x->out, XLINE_EVENTS, scratch,
				                (size_t)(sp - scratch));
			}
			if (n) {
				ob_vfield(&x->out, XLINE_DURATION_PS, max_end * 1000);
				ob_close(&x->out, body);
				x->job_events += n;
			}
		}
	}
}

/* The device's memory usage: an instant per allocation or free. */
static void put_mem_line(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	uint8_t scratch[EVENT_SCRATCH];
	uint64_t t0 = 0, last = 0;
	size_t body = 0, n = 0;

	for (size_t k = 0; k < jd->nmem; k++) {
		const struct kx_mem_pt *m = &jd->mem[k];
		const struct kx_ioctl *e = kx_store_ioctl(x->jobs->store, m->ioctl);
		uint8_t *p = scratch;
		uint32_t mid;
		char buf[96];

		if (!in_window(&x->o, m->ts))
			continue;
		if (!n++) {
			t0 = m->ts;
			body = ob_open(&x->out, XPLANE_LINES);
			ob_vfield(&x->out, XLINE_ID, MEM_LINE_ID);
			ob_str(&x->out, XLINE_NAME, "memory");
			ob_vfield(&x->out, XLINE_TIMESTAMP_NS,
			          (uint64_t)kx_capinfo_realtime(x->ci, t0));
		}
		last = m->ts - t0;
		mid = pid_of(t, &t->ev, m->delta >= 0 ? "alloc" : "free");
		if (!mid)
			continue;
		p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
		p = kx_pb_vfield(p, XEVENT_OFFSET_PS, (m->ts - t0) * 1000);
		p = pstat_u(t, p, "bytes_allocated", m->usage);
		p = pstat_u(t, p, "allocation_bytes",
		            m->delta >= 0 ? (uint64_t)m->delta : (uint64_t)-m->delta);
		p = pstat_ref(t, p, "ioctl",
		              kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf,
		                            sizeof(buf)));
		p = pstat_i(t, p, "pid", e->pid);
		kx_pb_put_bytes(&x->out, XLINE_EVENTS, scratch, (size_t)(p - scratch));
	}
	if (n) {
		ob_vfield(&x->out, XLINE_DURATION_PS, last * 1000);
		ob_close(&x->out, body);
	}
}

/* ---- DRM usage (record --drm-usage): a line on the driver's device plane ---- */

#define DRM_LINE_ID 9998

static uint8_t *pstat_d(struct ptabs *t, uint8_t *p, const char *name, double v)
{
	uint32_t mid = pid_of(t, &t->st, name);
	uint64_t bits;

	if (!mid)
		return p;
	/* XStat {metadata_id, double_value (fixed64)} */
	p = kx_pb_tag(p, XEVENT_STATS, KX_PB_LEN);
	p = kx_pb_varint(p, 1 + kx_pb_varint_size(mid) + 1 + 8);
	p = kx_pb_vfield(p, XSTAT_METADATA_ID, mid);
	p = kx_pb_tag(p, XSTAT_DOUBLE, KX_PB_FIXED64);
	memcpy(&bits, &v, sizeof(bits));
	return kx_pb_fixed64(p, bits);
}

/* 1 the first time driver is asked for (its line goes on that plane). */
static int drm_first(struct exporter *x, const char *driver)
{
	for (int i = 0; i < x->ndrm_done; i++)
		if (!strcmp(x->drm_done[i], driver))
			return 0;
	if (x->ndrm_done >= (int)(sizeof(x->drm_done) / sizeof(x->drm_done[0])))
		return 0;
	snprintf(x->drm_done[x->ndrm_done++], KX_DRM_NAME, "%s", driver);
	return 1;
}

/* One DRM row as an XEvent into p: an engine's busy share over its
 * interval, or a region's bytes at the pass (an instant). */
static uint8_t *put_drm_event(struct ptabs *t, uint8_t *p, const struct kx_drm_ev *e,
                              uint64_t start, uint64_t t0)
{
	char name[KX_DRM_NAME + 16];
	uint32_t mid;

	snprintf(name, sizeof(name), "%s %s", e->name,
	         e->kind == KX_DRM_ENGINE ? "busy" : "memory");
	if (!(mid = pid_of(t, &t->ev, name)))
		return p;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, (start > t0 ? start - t0 : 0) * 1000);
	if (e->kind == KX_DRM_ENGINE) {
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, e->interval_ns * 1000);
		p = pstat_d(t, p, "busy_pct", kx_drm_ev_busy(e) * 100);
		p = pstat_u(t, p, "capacity", e->capacity);
	} else {
		p = pstat_u(t, p, "resident_bytes", e->v[KX_DRM_MEM_RESIDENT]);
		p = pstat_u(t, p, "total_bytes", e->v[KX_DRM_MEM_TOTAL]);
	}
	p = pstat_i(t, p, "pid", e->pid);
	if (e->comm[0])
		p = pstat_ref(t, p, "comm", e->comm);
	return p;
}

/* The "DRM usage" line of driver's rows, when there are any. */
static void put_drm_line(struct exporter *x, struct ptabs *t, const char *driver)
{
	size_t n, body = 0, k = 0;
	const struct kx_drm_ev *r = kx_store_drm(x->s, &n);
	uint64_t t0 = 0, end = 0;

	for (size_t i = 0; i < n; i++) {
		const struct kx_drm_ev *e = &r[i];
		uint8_t scratch[EVENT_SCRATCH], *p;
		uint64_t start = e->kind == KX_DRM_ENGINE ? e->ts - e->interval_ns : e->ts;

		if (strcmp(e->driver, driver) ||
		    (e->kind == KX_DRM_ENGINE && kx_drm_ev_busy(e) < 0) || !in_window(&x->o, start))
			continue;
		if (!k++) {
			t0 = start;
			body = ob_open(&x->out, XPLANE_LINES);
			ob_vfield(&x->out, XLINE_ID, DRM_LINE_ID);
			ob_str(&x->out, XLINE_NAME, "DRM usage");
			ob_vfield(&x->out, XLINE_TIMESTAMP_NS,
			          (uint64_t)kx_capinfo_realtime(x->ci, t0));
		}
		if (e->ts > end)
			end = e->ts;
		p = put_drm_event(t, scratch, e, start, t0);
		if (p != scratch)
			kx_pb_put_bytes(&x->out, XLINE_EVENTS, scratch, (size_t)(p - scratch));
	}
	if (k) {
		ob_vfield(&x->out, XLINE_DURATION_PS, (end - t0) * 1000);
		ob_close(&x->out, body);
	}
}

/* A plane of its own for a driver whose DRM usage no traced device stands for. */
static void put_drm_plane(struct exporter *x, const char *driver, int n)
{
	struct ptabs t;
	char name[200];
	size_t body = ob_open(&x->out, XSPACE_PLANES);

	memset(&t, 0, sizeof(t));
	snprintf(name, sizeof(name), "/device:%s:%d (%s DRM usage)",
	         x->o.device_planes_as_gpu ? "GPU" : "CUSTOM", n, driver);
	ob_vfield(&x->out, XPLANE_ID, (uint64_t)n);
	ob_str(&x->out, XPLANE_NAME, name);
	put_plane_str_stat(&x->out, &t.st, "driver", driver);
	put_drm_line(x, &t, driver);
	put_metadata(&x->out, &t.ev, &t.st);
	ob_close(&x->out, body);
	if (t.oom)
		x->out.oom = 1;
	kx_intern_free(&t.ev);
	kx_intern_free(&t.st);
}

/* Planes for the drivers of DRM rows no device plane took; n: the next plane id. */
static void put_drm_planes(struct exporter *x, int n)
{
	size_t nr;
	const struct kx_drm_ev *r = kx_store_drm(x->s, &nr);

	for (size_t i = 0; i < nr; i++)
		if (drm_first(x, r[i].driver))
			put_drm_plane(x, r[i].driver, n++);
}

/* Plane stats of a device with jobs: counts, busy fraction, depth. */
static void put_job_plane_stats(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	uint32_t mid;
	uint8_t *p;
	uint64_t bits;

	if (!jd->nrings)
		return;
	p = kx_bytes_room(&x->out, 64);
	mid = pid_of(t, &t->st, "jobs");
	if (p && mid)
		ob_done(&x->out, put_stat_varint(p, XPLANE_STATS, mid, XSTAT_UINT64, jd->njobs));
	p = kx_bytes_room(&x->out, 64);
	mid = pid_of(t, &t->st, "max_in_flight");
	if (p && mid)
		ob_done(&x->out,
		        put_stat_varint(p, XPLANE_STATS, mid, XSTAT_UINT64, jd->max_depth));
	p = kx_bytes_room(&x->out, 64);
	mid = pid_of(t, &t->st, "busy_fraction");
	if (p && mid) {
		/* XStat {metadata_id, double_value (fixed64)} */
		p = kx_pb_tag(p, XPLANE_STATS, KX_PB_LEN);
		p = kx_pb_varint(p, 1 + kx_pb_varint_size(mid) + 1 + 8);
		p = kx_pb_vfield(p, XSTAT_METADATA_ID, mid);
		p = kx_pb_tag(p, XSTAT_DOUBLE, KX_PB_FIXED64);
		memcpy(&bits, &jd->busy_fraction, sizeof(bits));
		ob_done(&x->out, kx_pb_fixed64(p, bits));
	}
}

/* The NVIDIA device plane: per process and region, the memory the RM
 * allocation ioctls allocated, freed, left live and peaked at (bytes):
 * stats "pid <pid> <region> allocated|freed|live|peak". */
static void put_nvmem_plane_stats(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	static const char *what[] = {"allocated", "freed", "live", "peak"};
	const struct kx_nvmem *nm = &x->jobs->nvmem;
	char name[64];

	if (jd->drv != KX_DRV_NVIDIA)
		return;
	for (size_t i = 0; i < nm->nprocs; i++)
		for (int r = 0; r < KX_NVMEM_NREG; r++) {
			const struct kx_nvmem_reg *g = &nm->procs[i].reg[r];
			uint64_t v[] = {g->allocated, g->freed, g->live, g->peak};

			if (!g->npts)
				continue;
			for (int k = 0; k < 4; k++) {
				uint8_t *p = kx_bytes_room(&x->out, 64);
				uint32_t mid;

				snprintf(name, sizeof(name), "pid %u %s %s", nm->procs[i].pid,
				         kx_nvmem_region_name(r), what[k]);
				mid = pid_of(t, &t->st, name);
				if (p && mid)
					ob_done(&x->out, put_stat_varint(p, XPLANE_STATS, mid,
					                                 XSTAT_UINT64, v[k]));
			}
		}
}

/* The job device of capinfo device i, or NULL. */
static const struct kx_jobdev *jobdev_of(const struct exporter *x, uint32_t i)
{
	for (size_t k = 0; x->jobs && k < x->jobs->ndevs; k++)
		if (x->jobs->devs[k].ci_index == (int)i)
			return &x->jobs->devs[k];
	return NULL;
}

/*
 * A device plane: a traced device d, with its job device jd if any, or a
 * job device no traced device matches (d NULL).
 */
static void put_device_plane(struct exporter *x, const struct kx_device *d,
                             const struct kx_jobdev *jd, int n)
{
	struct ptabs t;
	char node[80], name[200], devt[32];
	const char *vendor = d ? device_vendor((enum kx_driver)d->drv) : NULL;
	size_t body = ob_open(&x->out, XSPACE_PLANES);

	memset(&t, 0, sizeof(t));
	if (d) {
		device_node(x->ci, d, node, sizeof(node));
		snprintf(name, sizeof(name), "/device:%s:%d (%s %s)",
		         x->o.device_planes_as_gpu ? "GPU" : "CUSTOM", n, device_driver(d), node);
	} else {
		snprintf(name, sizeof(name), "/device:%s:%d (%s)",
		         x->o.device_planes_as_gpu ? "GPU" : "CUSTOM", n, jd->label);
	}
	ob_vfield(&x->out, XPLANE_ID, (uint64_t)n);
	ob_str(&x->out, XPLANE_NAME, name);
	if (d) {
		put_plane_str_stat(&x->out, &t.st, "driver", device_driver(d));
		put_plane_str_stat(&x->out, &t.st, "node", node);
		if (d->any_minor)
			snprintf(devt, sizeof(devt), "%u:*", KX_MAJOR(d->dev));
		else
			snprintf(devt, sizeof(devt), "%u:%u", KX_MAJOR(d->dev), KX_MINOR(d->dev));
		if (!anon_kind(d->fkind))
			put_plane_str_stat(&x->out, &t.st, "dev_t", devt);
	} else {
		put_plane_str_stat(&x->out, &t.st, "driver", jd->name);
	}
	if (vendor)
		put_plane_str_stat(&x->out, &t.st, "device_vendor", vendor);
	if (jd) {
		put_job_plane_stats(x, &t, jd);
		put_nvmem_plane_stats(x, &t, jd);
		put_job_lines(x, &t, jd);
		put_mem_line(x, &t, jd);
	}
	if (d && drm_first(x, device_driver(d)))
		put_drm_line(x, &t, device_driver(d));
	put_metadata(&x->out, &t.ev, &t.st);
	ob_close(&x->out, body);
	if (t.oom)
		x->out.oom = 1;
	kx_intern_free(&t.ev);
	kx_intern_free(&t.st);
}

/* ---- warnings ---- */

static void warn(struct exporter *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct exporter *x, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ob_str(&x->out, XSPACE_WARNINGS, msg);
}

static void warn_cb(void *ctx, const char *msg)
{
	warn(ctx, "%s", msg);
}

static void put_warnings(struct exporter *x)
{
	kx_analysis_warnings(x->an, warn_cb, x);
	kx_flows_warnings(&x->flows, warn_cb, x);
	if (x->o.note && x->o.note[0])
		warn(x, "%s", x->o.note);
	if (x->nevents + x->job_events + x->ann_events > VIEWER_EVENT_LIMIT)
		warn(x,
		     "%zu events exported: XProf's trace viewer shows only the first "
		     "1,000,000 by default; export shorter time windows to see the rest "
		     "(kxprof convert splits by time unless --split-events is 0 or larger)",
		     x->nevents + x->job_events + x->ann_events);
}

/* ---- entry points ---- */

static void exporter_free(struct exporter *x)
{
	for (size_t i = 0; x->lines && i < x->nlines; i++) {
		free(x->lines[i].ann);
		free(x->lines[i].ins);
	}
	free(x->lines);
	free(x->ann_mid);
	free(x->ann_cat);
	kx_thread_names_free(&x->names);
	free(x->hl);
	kx_intern_free(&x->ev);
	kx_intern_free(&x->st);
	kx_hmap_free(&x->ev_by_cmd);
	kx_hmap_free(&x->dev_ref);
	kx_hmap_free(&x->field_id);
	kx_flows_free(&x->flows);
	free(x->out.p);
}

/*
 * The XSpace to fd (streamed: the host plane through a bounded buffer, the
 * rest, which is small, from x->out), or into x->out when fd < 0.
 */
static int export(struct exporter *x, int fd)
{
	struct sink k = {fd, &x->out, 0, 0};
	int n = 0;

	if (kx_flows_build(&x->flows, x->an))
		return fail(x, "out of memory finding the flows of %zu ioctls",
		            kx_store_ioctl_count(x->s));
	x->ann_mid = calloc(kx_store_ann_strings(x->rg->strings) + 1, sizeof(*x->ann_mid));
	x->ann_cat = calloc(kx_store_ann_strings(x->rg->strings) + 1, sizeof(*x->ann_cat));
	if (!x->ann_mid || !x->ann_cat || kx_thread_names_build(&x->names, x->s))
		return fail(x, "out of memory");
	if (select_events(x))
		return -1;
	if (put_host_plane(x, &k))
		return -1;
	if (fd >= 0)
		x->out.len = 0; /* the rest goes here first */
	for (uint32_t i = 0; i < x->ci->ndevices && i < KX_MAX_DEVICES; i++)
		if (device_has_plane(x->ci, i))
			put_device_plane(x, &x->ci->devices[i], jobdev_of(x, i), n++);
	/* Job devices that no traced device stands for get planes of their own. */
	for (size_t k = 0; x->jobs && k < x->jobs->ndevs; k++) {
		const struct kx_jobdev *jd = &x->jobs->devs[k];

		if (jd->ci_index < 0 && (jd->nrings || jd->nmem))
			put_device_plane(x, NULL, jd, n++);
	}
	put_drm_planes(x, n);
	put_warnings(x);
	if (x->ci->hostname[0])
		ob_str(&x->out, XSPACE_HOSTNAMES, x->ci->hostname);
	if (x->out.oom)
		return fail(x, "out of memory serializing the XSpace (%zu bytes so far)",
		            x->out.len);
	if (fd >= 0) {
		uint64_t host = k.bytes;

		sink_put(&k, x->out.p, x->out.len);
		if (k.err) {
			errno = k.err;
			return fail(x, "%s", strerror(k.err));
		}
		if (host + x->out.len > PB_MAX_MSG)
			return fail(x,
			            "XSpace of %" PRIu64 " bytes is over protobuf's 2 GiB limit: "
			            "export a shorter time window (kxprof convert --split-events N "
			            "with a smaller N)",
			            host + x->out.len);
	} else if (x->out.len > PB_MAX_MSG) {
		return fail(x,
		            "XSpace of %zu bytes is over protobuf's 2 GiB limit: export a shorter "
		            "time window",
		            x->out.len);
	}
	return 0;
}

static void exporter_init(struct exporter *x, const struct kx_analysis *an,
                          const struct kx_xspace_opts *o, char *err, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	x->an = an;
	x->s = an->store;
	x->ci = an->ci;
	x->tl = an->timeline;
	x->jobs = an->jobs;
	x->rg = an->ranges;
	if (o)
		x->o = *o;
	x->err = err;
	x->errlen = errlen;
}

int kx_xspace_write_fd(const struct kx_analysis *an, const struct kx_xspace_opts *o, int fd,
                       char *err, size_t errlen)
{
	struct exporter x;
	int rc;

	exporter_init(&x, an, o, err, errlen);
	rc = export(&x, fd);
	exporter_free(&x);
	return rc;
}

int kx_xspace_serialize(const struct kx_analysis *an, const struct kx_xspace_opts *o, uint8_t **out,
                        size_t *len, char *err, size_t errlen)
{
	struct exporter x;
	int rc = -1;

	exporter_init(&x, an, o, err, errlen);
	*out = NULL;
	*len = 0;
	if (!export(&x, -1)) {
		*out = realloc(x.out.p, x.out.len ? x.out.len : 1);
		if (!*out)
			*out = x.out.p;
		*len = x.out.len;
		x.out.p = NULL;
		rc = 0;
	}
	exporter_free(&x);
	return rc;
}
