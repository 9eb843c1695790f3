/*
 * The parts of the XSpace exporter (export/xspace.h) and what they share:
 * the exporter's state, the host lines it selects, the wire encoding
 * helpers and each part's entry points. Owned by the xspace_*.c files that
 * write an XSpace; nothing outside them includes it.
 *   xspace.c         the entry points: a run of the exporter, warnings, hostnames
 *   xspace_enc.c     the plane metadata maps, plane stats, a device plane's names
 *   xspace_select.c  which host lines and events a window holds, in what order
 *   xspace_host.c    the /host:CPU plane: sizing pass, segments encoded in parallel
 *   xspace_hostev.c  an ioctl as an XEvent of the host plane, and its names
 *   xspace_annot.c   an annotation range or mark as an XEvent of the host plane
 *   xspace_device.c  device planes: job lines, the memory line, plane stats
 *   xspace_drm.c     DRM usage (record --drm-usage): a line per driver
 *
 * Times: store stamps are CLOCK_MONOTONIC ns; a line's timestamp_ns is
 * CLOCK_REALTIME ns (kx_capinfo_realtime), event offsets and durations ps.
 * The growing buffer (struct kx_bytes, util/grow.h) reserves LEN_RESERVE
 * bytes for a nested message's length and moves the body back once the
 * length is known (xs_ob_open, xs_ob_close).
 */
#ifndef KX_XSPACE_INT_H
#define KX_XSPACE_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/flows.h"
#include "analysis/threadnames.h"
#include "export/xplane_fields.h"
#include "export/xspace_opts.h"
#include "model/drmusage.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/intern.h"
#include "util/pbwire.h"
#include "util/strkey.h"

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
/* ns values that stay below INT64_MAX once in ps. */
#define MAX_NS ((uint64_t)INT64_MAX / 1000)
/* XProf's flow stat: 2-bit direction, 56-bit id, 6-bit category (0: generic). */
#define FLOW_IN  1
#define FLOW_OUT 2

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
	uint64_t t0;   /* ns (CLOCK_MONOTONIC), the line's first event */
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

/* A host line as the sizing pass found it. */
struct hline {
	size_t body;      /* bytes of the XLine message */
	uint64_t max_end; /* ns after the line's first event */
};

/* Stat metadata interned first in the host plane, so their ids are fixed. */
enum { ST_DRIVER = 1, ST_DEVICE, ST_FD, ST_CMD, ST_RET, ST_ERRNO, ST_PID, ST_NFIXED = ST_PID };

/* Host plane stat names of annotation events (xspace_annot.c). */
#define XS_ANN_STATS 10

struct exporter {
	const struct kx_analysis *an;
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	const struct kx_timeline *tl; /* threads, ordering, resolved durations */
	struct kx_xspace_opts o;
	struct kx_bytes out; /* all but a streamed host plane */

	struct line *lines;
	size_t nlines;
	const uint32_t *order; /* the timeline's: store indices by thread, each in start order */
	size_t nevents;        /* ioctl events on the host plane */

	struct kx_intern ev;        /* host plane event metadata names */
	struct kx_intern st;        /* host plane stat metadata names and interned values */
	struct kx_strkey ev_by_cmd; /* cmd << 32 | xfer << 8 | drv -> name in ev */
	struct kx_strkey dev_ref;   /* dev << 8 | fkind -> device label in st */
	struct kx_hmap field_id;    /* decoded field name pointer -> stat id */
	uint32_t drv_ref[256];      /* per driver: its name's ref in st, 0 until used */

	const struct kx_jobs *jobs;           /* device timelines (the analysis') */
	struct kx_flows flows;                /* which submitting ioctls start a flow */
	size_t job_events;                    /* exported on device planes */
	uint32_t st_offcpu, st_flow, st_corr; /* host plane stat ids, 0 until used */
	const struct kx_ranges *rg;           /* annotation ranges (the analysis') */
	uint32_t *ann_mid; /* per annotation string id: its event metadata id, 0 until used */
	uint32_t *ann_cat; /* per annotation string id: its ref as a stat value, 0 until used */
	uint32_t st_ann[XS_ANN_STATS]; /* host plane stat ids of annotation events */
	struct kx_thread_names names;  /* threads renamed during the capture */
	size_t ann_events;             /* exported on the host plane */
	struct hline *hl;              /* per line: what the sizing pass found */
	char *err;
	size_t errlen;
	/* Drivers whose DRM usage line is written (record --drm-usage). */
	char drm_done[16][KX_DRM_NAME];
	int ndrm_done;
	int nvmem_done; /* the NVIDIA memory stats are written (on the first NVIDIA plane) */
};

/* A device plane's own metadata: event names and stat names. */
struct ptabs {
	struct kx_intern ev, st;
	int oom; /* a name could not be interned */
};

/* Where the host plane's bytes go: a file descriptor, or a buffer. */
struct sink {
	int fd; /* < 0: ob */
	struct kx_bytes *ob;
	int err;        /* errno of the first write failure */
	uint64_t bytes; /* handed to the sink so far */
};

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

/* XStat with a double_value (fixed64). */
static inline uint8_t *put_stat_double(uint8_t *p, unsigned int field, uint64_t mid, double v)
{
	uint64_t bits;

	p = kx_pb_tag(p, field, KX_PB_LEN);
	p = kx_pb_varint(p, 1 + kx_pb_varint_size(mid) + 1 + 8);
	p = kx_pb_vfield(p, XSTAT_METADATA_ID, mid);
	p = kx_pb_tag(p, XSTAT_DOUBLE, KX_PB_FIXED64);
	memcpy(&bits, &v, sizeof(bits));
	return kx_pb_fixed64(p, bits);
}

/* Bytes of an XStat with a varint value: field tag and length, two tags, two varints. */
static inline size_t stat_size(uint64_t mid, uint64_t v)
{
	return 4 + kx_pb_varint_size(mid) + kx_pb_varint_size(v);
}

static inline uint64_t flow_value(uint64_t id, unsigned int dir)
{
	return (id & ((1ULL << 56) - 1)) << 2 | dir;
}

/* An event's start and duration on its line (ns from t0), kept below MAX_NS. */
static inline void xs_span(uint64_t ts, uint64_t dur_ns, uint64_t t0, uint64_t *start,
                           uint64_t *dur)
{
	*start = ts - t0;
	*dur = dur_ns;
	if (*start > MAX_NS)
		*start = MAX_NS;
	if (*dur > MAX_NS - *start)
		*dur = MAX_NS - *start;
}

static inline int in_window(const struct kx_xspace_opts *o, uint64_t ts)
{
	return ts >= o->from_mono_ns && (!o->to_mono_ns || ts < o->to_mono_ns);
}

/* ---- the growing output buffer ---- */

static inline void ob_done(struct kx_bytes *b, uint8_t *end)
{
	b->len = (size_t)(end - b->p);
}

/* A plain (non-oneof) scalar: proto3 leaves out default values. */
static inline void ob_vfield(struct kx_bytes *b, unsigned int field, uint64_t v)
{
	if (v)
		kx_pb_put_vfield(b, field, v);
}

static inline void ob_str(struct kx_bytes *b, unsigned int field, const char *s)
{
	kx_pb_put_bytes(b, field, s, strlen(s));
}

/* Opens a length-delimited field; returns the body offset for xs_ob_close. */
size_t xs_ob_open(struct kx_bytes *b, unsigned int field);
/* Writes the body length in front of it, then moves the body up to it. */
void xs_ob_close(struct kx_bytes *b, size_t body);

/* ---- metadata names ---- */

/* A plane's metadata names are interned (util/intern.h): metadata id = 1 +
 * the interner's id; 0: not interned, or out of memory. */
static inline uint32_t meta_find(const struct kx_intern *t, const char *s, size_t len)
{
	return (uint32_t)(kx_intern_find(t, s, len) + 1);
}

static inline uint32_t meta_id(struct kx_intern *t, const char *s, size_t len)
{
	return (uint32_t)(kx_intern_add(t, s, len) + 1);
}

static inline uint32_t meta_cstr(struct kx_intern *t, const char *s)
{
	return meta_id(t, s, strlen(s));
}

/* xspace_enc.c: a plane's event_metadata (from ev, may be NULL) and
 * stat_metadata (from st) maps. */
void xs_put_metadata(struct kx_bytes *b, const struct kx_intern *ev, const struct kx_intern *st);
/* A plane stat name = val (a string value). */
void xs_put_plane_str_stat(struct kx_bytes *b, struct kx_intern *st, const char *name,
                           const char *val);
/* A device plane's names: name's metadata id in tab (t's ev or st), 0 and
 * t->oom set when out of memory. */
uint32_t xs_pname(struct ptabs *t, struct kx_intern *tab, const char *name);
/* XEvent stats into p named in t's stat names: uint64, int64, a string as a
 * ref, a double. p unchanged when the name is not interned. */
uint8_t *xs_pstat_u(struct ptabs *t, uint8_t *p, const char *name, uint64_t v);
uint8_t *xs_pstat_i(struct ptabs *t, uint8_t *p, const char *name, int64_t v);
uint8_t *xs_pstat_ref(struct ptabs *t, uint8_t *p, const char *name, const char *val);
uint8_t *xs_pstat_d(struct ptabs *t, uint8_t *p, const char *name, double v);
/* Frees a device plane's names, passing an out-of-memory on to b. */
void xs_ptabs_done(struct ptabs *t, struct kx_bytes *b);

/* xspace.c: err set from fmt; -1. */
int xs_fail(struct exporter *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* xspace_select.c: the host lines of the window and where their annotations go. */
int xs_select_events(struct exporter *x);

/* xspace_hostev.c: an ioctl's XEvent. frozen 0 (the sizing pass): the
 * bytes it takes, names interned on the way, 0 on OOM; frozen 1 (any
 * thread): xs_put_event writes it into p (EVENT_SCRATCH bytes), the end or
 * NULL when a name was not interned. offset_ns, dur_ns on its line. */
size_t xs_event_size(struct exporter *x, const struct kx_ioctl *e, size_t idx, uint64_t offset_ns,
                     uint64_t dur_ns);
uint8_t *xs_put_event(struct exporter *x, const struct kx_ioctl *e, size_t idx, uint64_t offset_ns,
                      uint64_t dur_ns, uint8_t *p);
/* A host plane stat name interned on first use into *id; 0 on OOM. */
uint32_t xs_host_stat(struct exporter *x, uint32_t *id, const char *name);

/* xspace_annot.c: the same for an annotation range or mark (start, dur: ns
 * on its line). */
size_t xs_ann_event_size(struct exporter *x, const struct kx_range *r, uint64_t start,
                         uint64_t dur);
uint8_t *xs_put_ann_event(struct exporter *x, const struct kx_range *r, uint64_t start,
                          uint64_t dur, uint8_t *p);

/* xspace_host.c: the /host:CPU plane to k (sized, then encoded in parallel). */
int xs_put_host_plane(struct exporter *x, struct sink *k);
void xs_sink_put(struct sink *k, const void *p, size_t n);

/* xspace_device.c: a plane per traced device and per job device no traced
 * device stands for, into x->out; the number of planes. */
int xs_put_device_planes(struct exporter *x);

/* xspace_drm.c: 1 the first time driver is asked for (its DRM usage line
 * goes on that plane); the line of driver's rows; planes from id n for the
 * drivers no device plane took. */
int xs_drm_first(struct exporter *x, const char *driver);
void xs_put_drm_line(struct exporter *x, struct ptabs *t, const char *driver);
void xs_put_drm_planes(struct exporter *x, int n);

#endif /* KX_XSPACE_INT_H */
