/* Merges kxprof's ioctls into a Kineto Chrome trace (export/chrome_merge.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "export/chrome.h"
#include "export/chrome_json.h"
#include "export/chrome_merge.h"
#include "model/capinfo.h"
#include "model/store.h"
#include "registry/ioctl_decode.h"
#include "util/json.h"
#include "util/outfile.h"
#include "util/pgz.h"

/* Bytes one slice takes at most besides its escaped name and category. */
#define SLICE_ROOM 256
/* Bytes read at a time. */
#define READ_CHUNK (1 << 16)
/* Largest Chrome trace read, bytes. */
#define MERGE_MAX_INPUT (4ull << 30)

/* What the scan of the input found. */
struct trace_scan {
	const char *open;      /* the top-level '{' */
	const char *arr_open;  /* the '[' of traceEvents */
	const char *arr_close; /* the ']' of traceEvents */
	int nonempty;          /* traceEvents holds an element */
	int64_t base_ns;       /* baseTimeNanoseconds (0 when absent) */
	double from_us, to_us; /* the events' span, µs from base_ns */
	uint64_t timed;        /* events with a ts (metadata "M" events aside) */
};

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* p at '"': past the closing quote, or NULL. */
static const char *skip_str(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Past the value at p (a string, object, array or scalar), or NULL. */
static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_str(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && !strchr(",}] \n\r\t", *p))
			p++;
		return p;
	}
	while (p < end) {
		if (*p == '"') {
			p = skip_str(p, end);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

static int key_is(const char *k, size_t n, const char *name)
{
	return n == strlen(name) && !memcmp(k, name, n);
}

/*
 * Iterates the members of the object at p ('{'): cb gets each key and its
 * value's start. Returns the position past the object, or NULL.
 */
typedef void (*member_cb)(void *ctx, const char *k, size_t kn, const char *v, const char *end);
static const char *each_member(const char *p, const char *end, member_cb cb, void *ctx)
{
	p = ws(p + 1, end);
	while (p < end && *p != '}') {
		const char *k, *q;

		if (*p != '"' || !(q = skip_str(p, end)))
			return NULL;
		k = p + 1;
		p = ws(q, end);
		if (p >= end || *p != ':')
			return NULL;
		p = ws(p + 1, end);
		cb(ctx, k, (size_t)(q - 1 - k), p, end);
		if (!(p = skip_value(p, end)))
			return NULL;
		p = ws(p, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
	}
	return p < end ? p + 1 : NULL;
}

struct event_fields {
	double ts, dur;
	int meta;
};

static void event_member(void *ctx, const char *k, size_t kn, const char *v, const char *end)
{
	struct event_fields *f = ctx;

	(void)end;
	if (key_is(k, kn, "ts") && *v != '"')
		f->ts = strtod(v, NULL);
	else if (key_is(k, kn, "dur") && *v != '"')
		f->dur = strtod(v, NULL);
	else if (key_is(k, kn, "ph"))
		f->meta = v[0] == '"' && v[1] == 'M';
}

/* The span of the traceEvents array at p ('['); its ']' into sc. -1: malformed. */
static int scan_events(const char *p, const char *end, struct trace_scan *sc)
{
	sc->arr_open = p;
	p = ws(p + 1, end);
	while (p < end && *p != ']') {
		struct event_fields f = {NAN, 0, 0};

		sc->nonempty = 1;
		p = *p == '{' ? each_member(p, end, event_member, &f) : skip_value(p, end);
		if (!p)
			return -1;
		if (!f.meta && !isnan(f.ts)) {
			if (!sc->timed || f.ts < sc->from_us)
				sc->from_us = f.ts;
			if (!sc->timed || f.ts + f.dur > sc->to_us)
				sc->to_us = f.ts + f.dur;
			sc->timed++;
		}
		p = ws(p, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
	}
	if (p >= end)
		return -1;
	sc->arr_close = p;
	return 0;
}

struct top_ctx {
	struct trace_scan *sc;
	int bad;
};

static void top_member(void *ctx, const char *k, size_t kn, const char *v, const char *end)
{
	struct top_ctx *t = ctx;

	if (key_is(k, kn, "baseTimeNanoseconds"))
		t->sc->base_ns = strtoll(v, NULL, 10);
	else if (key_is(k, kn, "traceEvents") && (*v != '[' || scan_events(v, end, t->sc)))
		t->bad = 1;
}

static int scan_trace(const char *buf, size_t n, struct trace_scan *sc, char *err, size_t errlen)
{
	const char *end = buf + n, *p = ws(buf, end);
	struct top_ctx t = {sc, 0};

	memset(sc, 0, sizeof(*sc));
	if (p >= end || *p != '{' || !each_member(p, end, top_member, &t) || t.bad) {
		snprintf(err, errlen, "not a Chrome trace JSON object (or damaged)");
		return -1;
	}
	sc->open = p;
	if (!sc->arr_close) {
		snprintf(err, errlen, "no traceEvents array: not a Chrome trace in object form");
		return -1;
	}
	if (!sc->timed) {
		snprintf(err, errlen, "no timed events: nothing to align kxprof's calls with");
		return -1;
	}
	return 0;
}

/* The whole file at path, gunzipped when it is gzip (zlib reads a plain
 * file as it is). */
static char *read_file(const char *path, size_t *n, char *err, size_t errlen)
{
	gzFile f;
	size_t len = 0, cap = 1 << 20;
	char *buf = NULL, *nb;
	int got;

	errno = 0;
	f = gzopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot open it");
		return NULL;
	}
	for (;;) {
		if (!buf || cap - len < READ_CHUNK + 1) {
			size_t ncap = buf ? cap * 2 : cap;

			if (ncap > MERGE_MAX_INPUT) {
				snprintf(err, errlen, "%s: over %llu bytes", path, MERGE_MAX_INPUT);
				break;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				snprintf(err, errlen, "%s: out of memory for %zu bytes", path,
				         ncap);
				break;
			}
			buf = nb;
			cap = ncap;
		}
		got = gzread(f, buf + len, READ_CHUNK);
		if (got < 0) {
			snprintf(err, errlen, "%s: read failed (damaged gzip?)", path);
			break;
		}
		len += (size_t)got;
		if (got == 0) {
			buf[len] = '\0';
			*n = len;
			gzclose(f);
			return buf;
		}
	}
	gzclose(f);
	free(buf);
	return NULL;
}

/* The n bytes at p to path, gzipped when it ends in .gz. */
static int write_out(const char *path, const char *p, size_t n, char *err, size_t errlen)
{
	struct kx_bytes z = {0};
	int rc;

	if (!wb_gz_path(path))
		return kx_outfile_write(path, 0, p, n, err, errlen);
	if (kx_gzip_buf(p, n, 1, &z)) {
		snprintf(err, errlen, "%s: out of memory compressing %zu bytes", path, n);
		free(z.p);
		return -1;
	}
	rc = kx_outfile_write(path, 0, z.p, z.len, err, errlen);
	free(z.p);
	return rc;
}

/* Signed ns as µs with three decimals. */
static char *put_signed_us(char *o, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	return o + sprintf(o, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000,
	                   (unsigned int)(a % 1000));
}

static char *put_slice(char *o, const struct kx_ioctl *e, int64_t rel_ns, int first)
{
	char nbuf[64], cat[64];
	const char *name =
	        kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, nbuf, sizeof(nbuf));

	snprintf(cat, sizeof(cat), "ioctl/%s", kx_driver_name((enum kx_driver)e->drv));
	o += sprintf(o, "%s{\"ph\":\"X\",\"name\":", first ? "" : ",");
	o = kx_json_put_str(o, name, strnlen(name, 100));
	o += sprintf(o, ",\"cat\":");
	o = kx_json_put_str(o, cat, strnlen(cat, sizeof(cat)));
	o += sprintf(o, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", e->pid, e->tid);
	o = put_signed_us(o, rel_ns);
	o += sprintf(o, ",\"dur\":");
	o = put_signed_us(o, (int64_t)e->dur);
	o += sprintf(o,
	             ",\"args\":{\"fd\":%" PRId32 ",\"cmd\":\"0x%" PRIx32 "\",\"ret\":%" PRId32
	             ",\"source\":\"kxprof\"}}",
	             e->fd, e->cmd, e->ret);
	return o;
}

/* The calls inside the span as slices into o (room checked by the caller). */
static char *put_slices(char *o, const struct kx_analysis *an, const struct trace_scan *sc,
                        struct kx_merge_stats *st)
{
	size_t n = kx_store_ioctl_count(an->store);
	int first = !sc->nonempty;

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(an->store, i);
		int64_t t0 = kx_capinfo_realtime_synced(an->ci, e->ts);

		if (t0 < st->span_from_ns) {
			st->before++;
		} else if (t0 + (int64_t)e->dur > st->span_to_ns) {
			st->after++;
		} else {
			o = put_slice(o, e, t0 - sc->base_ns, first);
			first = 0;
			st->merged++;
		}
	}
	return o;
}

/* µs as whole ns, rounded down (up: 1). Without libm. */
static int64_t us_to_ns(double us, int up)
{
	double x = us * 1000.0;
	int64_t v = (int64_t)x;

	if (!up && (double)v > x)
		v--;
	else if (up && (double)v < x)
		v++;
	return v;
}

static void stats_init(struct kx_merge_stats *st, const struct kx_capinfo *ci,
                       const struct trace_scan *sc)
{
	memset(st, 0, sizeof(*st));
	st->span_from_ns = sc->base_ns + us_to_ns(sc->from_us, 0);
	st->span_to_ns = sc->base_ns + us_to_ns(sc->to_us, 1);
	st->offset_ns = ci->clock_start.offset_ns;
	st->uncertainty_ns = ci->clock_start.uncertainty_ns > ci->clock_stop.uncertainty_ns
	                             ? ci->clock_start.uncertainty_ns
	                             : ci->clock_stop.uncertainty_ns;
}

static char *put_meta(char *o, const struct kx_merge_stats *st)
{
	return o + sprintf(o,
	                   "\"kxprofMerge\":{\"merged\":%" PRIu64 ",\"left_out_before\":%" PRIu64
	                   ",\"left_out_after\":%" PRIu64 ",\"span_from_ns\":%" PRId64
	                   ",\"span_to_ns\":%" PRId64 ",\"clock_offset_ns\":%" PRId64
	                   ",\"clock_uncertainty_ns\":%" PRIu64 ",\"ranges\":{\"merged\":%" PRIu64
	                   ",\"left_out_before\":%" PRIu64 ",\"left_out_after\":%" PRIu64
	                   "},\"device_events\":{\"merged\":%" PRIu64
	                   ",\"left_out_before\":%" PRIu64 ",\"left_out_after\":%" PRIu64 "}},",
	                   st->merged, st->before, st->after, st->span_from_ns, st->span_to_ns,
	                   st->offset_ns, st->uncertainty_ns, st->ranges_merged, st->ranges_before,
	                   st->ranges_after, st->dev_merged, st->dev_before, st->dev_after);
}

/* ---- kxprof's annotation ranges and device tracks, from its own trace ---- */

/* A string literal and its length, as two arguments. */
#define LIT_ARGS(s) s, sizeof(s) - 1

/* What the merge takes of one event of kxprof's own trace. */
struct own_event {
	const char *obj, *obj_end; /* the object, braces included */
	char ph;
	int annotation; /* cat "annotation" */
	int dev_label;  /* a process_labels "device" metadata event */
	int has_pid;
	uint32_t pid;
	const char *ts; /* the ts number's text, NULL when none */
	double dur_us;
};

static void own_member(void *ctx, const char *k, size_t kn, const char *v, const char *end)
{
	struct own_event *e = ctx;
	const char *ve;

	if (key_is(k, kn, "ph") && *v == '"') {
		e->ph = v[1];
	} else if (key_is(k, kn, "cat")) {
		e->annotation = !strncmp(v, LIT_ARGS("\"annotation\""));
	} else if (key_is(k, kn, "name")) {
		e->dev_label |= !strncmp(v, LIT_ARGS("\"process_labels\"")) ? 1 : 0;
	} else if (key_is(k, kn, "args")) {
		ve = skip_value(v, end);
		e->dev_label |= ve && memmem(v, (size_t)(ve - v), LIT_ARGS("\"labels\":\"device\""))
		                        ? 2
		                        : 0;
	} else if (key_is(k, kn, "pid") && *v != '"') {
		e->pid = (uint32_t)strtoul(v, NULL, 10);
		e->has_pid = 1;
	} else if (key_is(k, kn, "ts") && *v != '"') {
		e->ts = v;
	} else if (key_is(k, kn, "dur") && *v != '"') {
		e->dur_us = strtod(v, NULL);
	}
}

/* "123.456" µs as ns (three decimals at most, as the writers print). */
static int64_t us_text_ns(const char *p)
{
	int64_t v = strtoll(p, (char **)&p, 10) * 1000;
	int64_t f = 0, scale = 100;

	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			f += scale ? (*p - '0') * scale : 0;
	return v + f;
}

/* Calls cb on each object of kxprof's traceEvents; -1 when malformed. */
typedef void (*own_cb)(void *ctx, struct own_event *e);
static int each_own_event(const struct trace_scan *sc, const char *end, own_cb cb, void *ctx)
{
	const char *p = ws(sc->arr_open + 1, end);

	while (p < end && *p != ']') {
		struct own_event e = {.obj = p};

		if (*p != '{' || !(p = each_member(p, end, own_member, &e)))
			return -1;
		e.obj_end = p;
		cb(ctx, &e);
		p = ws(p, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
	}
	return 0;
}

struct extras {
	const struct kx_analysis *an;
	const struct trace_scan *own, *in;
	struct kx_merge_stats *st;
	uint32_t devpids[64]; /* kxprof's device pseudo-processes */
	size_t ndev;
	char *o; /* output cursor */
	int first;
};

static void find_devpid(void *ctx, struct own_event *e)
{
	struct extras *x = ctx;

	if (e->ph == 'M' && e->dev_label == 3 && e->has_pid && x->ndev < 64)
		x->devpids[x->ndev++] = e->pid;
}

static int is_devpid(const struct extras *x, uint32_t pid)
{
	for (size_t i = 0; i < x->ndev; i++)
		if (x->devpids[i] == pid)
			return 1;
	return 0;
}

/* The event with its ts moved onto the input's base (copied member by member). */
static void put_moved(struct extras *x, const struct own_event *e, int64_t rel_ns)
{
	const char *p = ws(e->obj + 1, e->obj_end), *end = e->obj_end;
	int firstm = 1;

	x->o += sprintf(x->o, "%s{", x->first ? "" : ",");
	x->first = 0;
	while (p < end && *p == '"') {
		const char *k = p, *q = skip_str(p, end), *v, *ve;

		v = ws(ws(q, end) + 1, end);
		ve = skip_value(v, end);
		if (!firstm)
			*x->o++ = ',';
		firstm = 0;
		if (v == e->ts) {
			x->o += sprintf(x->o, "\"ts\":");
			x->o = put_signed_us(x->o, rel_ns);
		} else {
			memcpy(x->o, k, (size_t)(ve - k));
			x->o += ve - k;
		}
		p = ws(ve, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
	}
	*x->o++ = '}';
}

static void take_own(void *ctx, struct own_event *e)
{
	struct extras *x = ctx;
	int dev = e->has_pid && is_devpid(x, e->pid);
	uint64_t *in, *before, *after;
	int64_t t, mono;

	/* Flow arrows start on kxprof's own ioctl slices, which the merge writes itself. */
	if ((!dev && !e->annotation) || e->ph == 's' || e->ph == 'f' || e->ph == 't')
		return;
	if (!e->ts) { /* metadata of the device processes */
		put_moved(x, e, 0);
		return;
	}
	in = dev ? &x->st->dev_merged : &x->st->ranges_merged;
	before = dev ? &x->st->dev_before : &x->st->ranges_before;
	after = dev ? &x->st->dev_after : &x->st->ranges_after;
	/* kxprof's own trace stamps through the start sync; the calls through both. */
	mono = x->own->base_ns + us_text_ns(e->ts) - x->an->ci->clock_start.offset_ns;
	t = kx_capinfo_realtime_synced(x->an->ci, (uint64_t)mono);
	if (t < x->st->span_from_ns) {
		(*before)++;
	} else if (t + us_to_ns(e->dur_us, 1) > x->st->span_to_ns) {
		(*after)++;
	} else {
		put_moved(x, e, t - x->in->base_ns);
		(*in)++;
	}
}

/* kxprof's own Chrome trace of the capture, through a temporary file. */
static char *own_trace(const struct kx_analysis *an, size_t *n, char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	char path[4096], *buf = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/kxprof-merge.XXXXXX.json", dir && *dir ? dir : "/tmp");
	fd = mkstemps(path, 5);
	if (fd < 0) {
		snprintf(err, errlen, "cannot make a temporary file %s: %s", path, strerror(errno));
		return NULL;
	}
	close(fd);
	if (!kx_chrome_write(an, path, err, errlen))
		buf = read_file(path, n, err, errlen);
	unlink(path);
	return buf;
}

/* The ranges and device tracks into o (room checked by the caller). */
static char *put_extras(char *o, const struct kx_analysis *an, const char *own, size_t n,
                        const struct trace_scan *osc, const struct trace_scan *isc, int first,
                        struct kx_merge_stats *st)
{
	struct extras x = {.an = an, .own = osc, .in = isc, .st = st, .o = o, .first = first};

	each_own_event(osc, own + n, find_devpid, &x);
	each_own_event(osc, own + n, take_own, &x);
	return x.o;
}

int kx_chrome_merge(const struct kx_analysis *an, const char *in, const char *out,
                    struct kx_merge_stats *st, char *err, size_t errlen)
{
	size_t n = 0, nio = kx_store_ioctl_count(an->store), room, head, mid, nsl, nown = 0;
	struct trace_scan sc, osc;
	char *buf, *sl = NULL, *ob = NULL, *o, *own = NULL, serr[160];
	int rc = -1;

	buf = read_file(in, &n, err, errlen);
	if (!buf)
		return -1;
	if (scan_trace(buf, n, &sc, serr, sizeof(serr))) {
		snprintf(err, errlen, "%s: %s", in, serr);
		goto out;
	}
	own = own_trace(an, &nown, err, errlen);
	if (!own)
		goto out;
	if (scan_trace(own, nown, &osc, serr, sizeof(serr)) && osc.arr_open == NULL) {
		snprintf(err, errlen, "kxprof's own trace did not read back (a bug): %s", serr);
		goto out;
	}
	stats_init(st, an->ci, &sc);
	/* Each moved event grows by its ts at most. */
	room = 1 + nio * (SLICE_ROOM + KX_JSON_STR_ROOM(100) + KX_JSON_STR_ROOM(64)) + 2 * nown;
	sl = malloc(room);
	if (!sl)
		goto oom;
	o = put_slices(sl, an, &sc, st);
	nsl = (size_t)(put_extras(o, an, own, nown, &osc, &sc, o == sl && !sc.nonempty, st) - sl);
	/* The input's head, kxprof's member, the input up to the end of
	 * traceEvents, the slices, the rest of the input. */
	head = (size_t)(sc.open + 1 - buf);
	mid = (size_t)(sc.arr_close - sc.open - 1);
	ob = malloc(n + 512 + nsl);
	if (!ob)
		goto oom;
	memcpy(ob, buf, head);
	o = put_meta(ob + head, st);
	memcpy(o, sc.open + 1, mid);
	memcpy(o + mid, sl, nsl);
	o += mid + nsl;
	memcpy(o, sc.arr_close, (size_t)(buf + n - sc.arr_close));
	o += buf + n - sc.arr_close;
	rc = write_out(out, ob, (size_t)(o - ob), err, errlen);
	goto out;
oom:
	snprintf(err, errlen, "out of memory merging %zu calls into %s", nio, in);
out:
	free(ob);
	free(sl);
	free(own);
	free(buf);
	return rc;
}
