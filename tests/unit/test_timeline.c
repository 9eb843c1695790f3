/*
 * Unit tests of the per-thread timeline and its nesting rule
 * (user/analysis/timeline.c), and of the one analysis handed to every
 * exporter (user/analysis/analysis.c): full nesting keeps both durations,
 * a partial overlap shortens the later event to its enclosing event's end,
 * the whole capture's lengths given to a window's timeline, identical
 * starts, zero-length events, threads stored out of order, many
 * threads, a reused tid; then one analysis passed to XSpace (parsed back
 * with protobuf-c), Chrome (the JSON read back) and the summary JSON, which
 * must show the same durations and the same warning.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "export/chrome.h"
#include "export/summary.h"
#include "export/xspace.h"
#include "kxtest.h"
#include "kxtest_analysis.h"
#include "kxtest_capture.h"
#include "model/store.h"
#include "registry/ioctl_decode.h"
#include "proto/xplane.pb-c.h"

#define KVM_RUN   0xae80U
#define OFFSET_NS 1700000000000000000LL

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;

static void add(struct kx_store *s, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.dur = dur;
	e.pid = pid;
	e.tid = tid;
	e.fkind = KX_FK_KVM_VCPU;
	e.drv = KX_DRV_KVM;
	e.cmd = KVM_RUN;
	e.fd = 5;
	kx_store_add_ioctl(s, &e, NULL);
}

static struct kx_timeline *timeline(const struct kx_store *s)
{
	char err[256];
	struct kx_timeline *tl = kx_timeline_build(s, err, sizeof(err));

	if (!tl)
		printf("# timeline: %s\n", err);
	return tl;
}

/* Resolved duration of store event idx. */
static uint64_t dur_of(const struct kx_timeline *tl, const struct kx_store *s, size_t idx)
{
	return kx_timeline_dur(tl, idx, kx_store_ioctl(s, idx)->dur);
}

/* An event inside another, and one inside that: every duration kept. */
static void test_full_nesting(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 1, 1, 1000, 9000); /* 1000-10000 */
	add(s, 1, 1, 2000, 3000); /* 2000-5000, inside */
	add(s, 1, 1, 2500, 300);  /* 2500-2800, inside that */
	add(s, 1, 1, 6000, 4000); /* 6000-10000, ends with the outer one */
	add(s, 1, 1, 10000, 10);  /* starts where the outer one ends: after it */
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->nthreads, 1);
	CHECK_EQ_U(tl->nfix, 0);
	CHECK_EQ_U(tl->fixed_threads, 0);
	for (size_t i = 0; i < 5; i++)
		CHECK_EQ_U(dur_of(tl, s, i), kx_store_ioctl(s, i)->dur);
	CHECK_EQ_U(tl->first_ts, 1000);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* The later event of a partial overlap ends where its innermost enclosing event ends. */
static void test_partial_overlap(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 1, 1, 1000, 3000);  /* 0: 1000-4000 */
	add(s, 1, 1, 3000, 2500);  /* 1: 3000-5500 -> 3000-4000 */
	add(s, 1, 1, 10000, 9000); /* 2: 10000-19000 */
	add(s, 1, 1, 12000, 2000); /* 3: 12000-14000, inside 2 */
	add(s, 1, 1, 13000, 9000); /* 4: 13000-22000 -> ends with 3 at 14000 */
	add(s, 1, 1, 15000, 1000); /* 5: inside 2 again (3 and 4 have ended) */
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->nfix, 2);
	CHECK_EQ_U(tl->fixed_threads, 1);
	CHECK_EQ_U(dur_of(tl, s, 0), 3000);
	CHECK_EQ_U(dur_of(tl, s, 1), 1000);
	CHECK_EQ_U(dur_of(tl, s, 2), 9000);
	CHECK_EQ_U(dur_of(tl, s, 3), 2000);
	CHECK_EQ_U(dur_of(tl, s, 4), 1000);
	CHECK_EQ_U(dur_of(tl, s, 5), 1000);
	/* The fixes by position and by store index say the same. */
	CHECK_EQ_U(tl->fix[0].idx, 1);
	CHECK_EQ_U(tl->fix[1].idx, 4);
	CHECK_EQ_U(tl->order[tl->fix[1].pos], 4);
	CHECK_EQ_U(kx_timeline_fix_from(tl, 0), 0);
	CHECK_EQ_U(kx_timeline_fix_from(tl, tl->fix[0].pos + 1), 1);
	CHECK_EQ_U(kx_timeline_fix_from(tl, tl->fix[1].pos + 1), 2);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* The whole capture's lengths of a window's calls (test_partial_overlap's
 * calls 1, 3, 4 and 5: 0 and 2 in an earlier window), by (start, length). */
static uint64_t whole_dur(void *ctx, const struct kx_ioctl *e)
{
	(void)ctx;
	return e->ts == 3000 || e->ts == 13000 ? 1000 : e->dur;
}

/*
 * A timeline built from part of a capture (a window of a windowed read)
 * nests what it holds; kx_timeline_set_fixes gives it the whole capture's
 * lengths instead, and only those.
 */
static void test_set_fixes(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 1, 1, 3000, 2500);  /* 0: cut to 1000 by a call of another window */
	add(s, 1, 1, 12000, 2000); /* 1 */
	add(s, 1, 1, 13000, 9000); /* 2: cut to 1000 (by 1, here too) */
	add(s, 1, 1, 15000, 1000); /* 3: after them */
	add(s, 1, 2, 40000, 100);  /* 4: another thread, kept */
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->nfix, 1); /* alone, the window cuts call 2 only */
	CHECK(kx_timeline_set_fixes(tl, s, whole_dur, NULL) == 0);
	CHECK_EQ_U(tl->nfix, 2);
	CHECK_EQ_U(tl->fixed_threads, 1);
	CHECK_EQ_U(dur_of(tl, s, 0), 1000);
	CHECK_EQ_U(dur_of(tl, s, 1), 2000);
	CHECK_EQ_U(dur_of(tl, s, 2), 1000);
	CHECK_EQ_U(dur_of(tl, s, 3), 1000);
	CHECK_EQ_U(dur_of(tl, s, 4), 100);
	CHECK_EQ_U(tl->fix[0].idx, 0);
	CHECK_EQ_U(tl->fix[1].idx, 2);
	CHECK_EQ_U(kx_timeline_fix_from(tl, tl->fix[0].pos + 1), 1);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/*
 * Stored out of start order (replayed or merged captures): sorted first,
 * so the event stored first but starting later is the one shortened.
 */
static void test_out_of_order(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 1, 1, 5000, 4000); /* 0: 5000-9000 -> ends with 1 at 7000 */
	add(s, 1, 1, 2000, 5000); /* 1: 2000-7000 */
	add(s, 1, 1, 3000, 1000); /* 2: inside 1 */
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->order[0], 1);
	CHECK_EQ_U(tl->order[1], 2);
	CHECK_EQ_U(tl->order[2], 0);
	CHECK_EQ_U(tl->nfix, 1);
	CHECK_EQ_U(dur_of(tl, s, 0), 2000);
	CHECK_EQ_U(dur_of(tl, s, 1), 5000);
	/* The lookup by store index. */
	CHECK_EQ_U(kx_timeline_dur(tl, 0, 4000), 2000);
	CHECK_EQ_U(kx_timeline_dur(tl, 1, 5000), 5000);
	CHECK_EQ_U(kx_timeline_dur(tl, 2, 1000), 1000);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* Equal starts: the longer encloses the shorter whatever the stored order; equal twins nest. */
static void test_identical_starts(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 1, 1, 1000, 300);  /* 0 */
	add(s, 1, 1, 1000, 900);  /* 1: sorted first */
	add(s, 1, 1, 1000, 900);  /* 2: its twin, nests */
	add(s, 1, 1, 1200, 1000); /* 3: 1200-2200, overlaps 0..2 -> ends with 0 at 1300 */
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->order[0], 1);
	CHECK_EQ_U(tl->order[1], 2);
	CHECK_EQ_U(tl->order[2], 0);
	CHECK_EQ_U(tl->nfix, 1);
	CHECK_EQ_U(dur_of(tl, s, 0), 300);
	CHECK_EQ_U(dur_of(tl, s, 1), 900);
	CHECK_EQ_U(dur_of(tl, s, 2), 900);
	CHECK_EQ_U(dur_of(tl, s, 3), 100);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* Zero-length events are instants: inside when strictly before an end, never shortened. */
static void test_zero_length(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 1, 1, 1000, 2000); /* 0: 1000-3000 */
	add(s, 1, 1, 1000, 0);    /* 1: at its start: inside */
	add(s, 1, 1, 2000, 0);    /* 2: inside */
	add(s, 1, 1, 3000, 0);    /* 3: at its end: after it */
	add(s, 1, 1, 3000, 500);  /* 4: after it too, not shortened */
	add(s, 1, 1, 2000, 2000); /* 5: 2000-4000, partial -> ends at 3000 */
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->nfix, 1);
	for (size_t i = 0; i < 5; i++)
		CHECK_EQ_U(dur_of(tl, s, i), kx_store_ioctl(s, i)->dur);
	CHECK_EQ_U(dur_of(tl, s, 5), 1000);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* Threads are apart: events of other threads never shorten each other; threads by tid. */
static void test_many_threads(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;
	const size_t nth = 3000;

	/* Interleaved across threads, tids in a scrambled order. */
	for (uint64_t k = 0; k < 3; k++)
		for (size_t i = 0; i < nth; i++) {
			uint32_t tid = (uint32_t)((i * 7919) % nth) + 10;

			if (k == 0)
				add(s, tid / 4, tid, 1000, 1000); /* 1000-2000 */
			else if (k == 1)
				add(s, tid / 4, tid, 1500, tid % 2 ? 1000 : 100);
			else
				add(s, tid / 4, tid, 1800, 50);
		}
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->nthreads, nth);
	CHECK_EQ_U(tl->nevents, 3 * nth);
	/* Odd tids: 1500-2500 is cut to 500; then 1800-1850 nests in it. */
	CHECK_EQ_U(tl->nfix, nth / 2);
	CHECK_EQ_U(tl->fixed_threads, nth / 2);
	for (size_t i = 0; i < nth; i++) {
		const struct kx_tl_thread *t = &tl->threads[i];

		CHECK_EQ_U(t->tid, i + 10);
		CHECK_EQ_U(t->count, 3);
		CHECK_EQ_U(t->pid, t->tid / 4);
		CHECK(!t->mixed_pids);
		if (i)
			CHECK_EQ_U(t->first, tl->threads[i - 1].first + 3);
	}
	for (size_t i = 0; i < 3 * nth; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		uint64_t want = e->ts == 1500 && e->tid % 2 ? 500 : e->dur;

		CHECK_EQ_U(kx_timeline_dur(tl, i, e->dur), want);
		CHECK_EQ_U(dur_of(tl, s, i), want);
	}
	kx_timeline_free(tl);
	kx_store_free(s);
}

/*
 * Random starts and durations over wide ranges, stored in no order: each
 * thread comes out by (start, longer first, store index), its resolved
 * spans nest, no event grows, and the fixes are exactly the changed ones.
 */
static void test_random_order(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;
	uint64_t x = 0x9e3779b97f4a7c15ULL, *stack;
	size_t n = 30000, changed = 0;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Starts repeat (low 41 bits, coarse), durations from 0 to ~2^40 ns. */
		add(s, 1, 1 + (uint32_t)(x % 3), (x >> 20) % (1ULL << 41) & ~0xfffULL,
		    x % 5 ? (x >> 3) % 100000 : (x >> 24));
	}
	tl = timeline(s);
	CHECK(tl);
	stack = malloc(n * sizeof(*stack));
	CHECK(stack);
	for (size_t t = 0; t < tl->nthreads; t++) {
		const struct kx_tl_thread *th = &tl->threads[t];
		size_t depth = 0;

		for (size_t k = 0; k < th->count; k++) {
			size_t idx = tl->order[th->first + k];
			const struct kx_ioctl *e = kx_store_ioctl(s, idx);
			uint64_t dur = dur_of(tl, s, idx);

			if (k) {
				size_t pidx = tl->order[th->first + k - 1];
				const struct kx_ioctl *p = kx_store_ioctl(s, pidx);

				CHECK(p->ts < e->ts ||
				      (p->ts == e->ts &&
				       (p->dur > e->dur || (p->dur == e->dur && pidx < idx))));
			}
			CHECK(dur <= e->dur);
			changed += dur != e->dur;
			while (depth && stack[depth - 1] <= e->ts)
				depth--;
			CHECK(!depth || e->ts + dur <= stack[depth - 1]);
			stack[depth++] = e->ts + dur;
		}
	}
	CHECK(tl->nfix > 0);
	CHECK_EQ_U(tl->nfix, changed);
	free(stack);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* A tid seen with two pids (reused) is one thread, marked so. */
static void test_reused_tid(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl;

	add(s, 7, 70, 1000, 10);
	add(s, 8, 70, 5000, 10);
	add(s, 9, 90, 2000, 10);
	tl = timeline(s);
	CHECK(tl);
	CHECK_EQ_U(tl->nthreads, 2);
	CHECK_EQ_U(tl->threads[0].tid, 70);
	CHECK_EQ_U(tl->threads[0].pid, 7);
	CHECK(tl->threads[0].mixed_pids);
	CHECK(!tl->threads[1].mixed_pids);
	kx_timeline_free(tl);
	kx_store_free(s);
}

static void test_empty(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_timeline *tl = timeline(s);

	CHECK(tl);
	CHECK_EQ_U(tl->nthreads, 0);
	CHECK_EQ_U(tl->nfix, 0);
	CHECK(tl->first_ts == UINT64_MAX);
	CHECK_EQ_U(kx_timeline_fix_from(tl, 0), 0);
	kx_timeline_free(tl);
	kx_store_free(s);
}

/* ---- one analysis, three exporters ---- */

/* A resolved event: thread, start and duration in ns. */
struct span {
	uint32_t tid;
	uint64_t ts, dur;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->dur < y->dur ? 1 : x->dur > y->dur ? -1 : 0;
}

/* The host events of an XSpace, at realtime ns; how many (at most max). */
static size_t xspace_spans(const XSpace *xs, struct span *out, size_t max)
{
	size_t n = 0;

	for (size_t p = 0; p < xs->n_planes; p++) {
		const XPlane *pl = xs->planes[p];

		if (strcmp(pl->name, "/host:CPU"))
			continue;
		for (size_t l = 0; l < pl->n_lines; l++) {
			const XLine *ln = pl->lines[l];

			for (size_t k = 0; k < ln->n_events && n < max; k++)
				out[n++] = (struct span){
				        (uint32_t)ln->id,
				        (uint64_t)ln->timestamp_ns +
				                (uint64_t)ln->events[k]->offset_ps / 1000,
				        (uint64_t)ln->events[k]->duration_ps / 1000};
		}
	}
	return n;
}

/* "123.456" microseconds as ns. */
static uint64_t us_ns(const char *p)
{
	uint64_t whole = strtoull(p, (char **)&p, 10), frac = 0;

	if (*p == '.')
		for (int i = 0; i < 3; i++)
			frac = frac * 10 + (uint64_t)(p[1 + i] - '0');
	return whole * 1000 + frac;
}

/* The number after key in the event at ev (NULL when absent). */
static const char *field(const char *ev, const char *key)
{
	const char *p = strstr(ev, key), *end = strstr(ev, "\"args\"");

	return p && (!end || p < end) ? p + strlen(key) : NULL;
}

/* The host "X" slices of a Chrome trace, at realtime ns; how many (at most max). */
static size_t chrome_spans(const char *json, struct span *out, size_t max)
{
	const char *base = strstr(json, "\"baseTimeNanoseconds\":");
	uint64_t b0 = base ? strtoull(base + 22, NULL, 10) : 0;
	size_t n = 0;

	for (const char *p = strstr(json, "{\"ph\":\"X\""); p && n < max;
	     p = strstr(p + 1, "{\"ph\":\"X\"")) {
		const char *pid = field(p, "\"pid\":"), *tid = field(p, "\"tid\":");
		const char *ts = field(p, "\"ts\":"), *dur = field(p, "\"dur\":");

		if (!pid || !tid || !ts || !dur || strtoull(pid, NULL, 10) >= 1000000000ull)
			continue; /* device pseudo-processes hold jobs, not ioctls */
		out[n++] =
		        (struct span){(uint32_t)strtoul(tid, NULL, 10), b0 + us_ns(ts), us_ns(dur)};
	}
	return n;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		buf = calloc(1, (size_t)len + 1);
		if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/*
 * Two threads with a full nesting and partial overlaps: XSpace, Chrome and
 * the summary get the same analysis and show the same durations (the
 * timeline's) and the same one warning.
 */
static void test_same_in_every_output(void)
{
	struct kx_store *s = kx_store_new(0);
	static struct kx_capinfo ci;
	struct span xsp[16], chs[16];
	char dir[] = "/tmp/kx-timeline.XXXXXX", path[64], err[256], *json = NULL, *sj = NULL;
	const char *warning = NULL;
	struct kx_analysis *an;
	struct kx_summary *sum;
	uint8_t *buf = NULL;
	size_t len = 0, nx, nc, sjlen = 0;
	XSpace *xs;
	FILE *f;

	memset(&ci, 0, sizeof(ci));
	ci.clock_start.offset_ns = OFFSET_NS;
	ci.start_mono_ns = 1000;
	ci.stop_mono_ns = 100000;
	add(s, 1, 11, 1000, 9000);  /* 1000-10000 */
	add(s, 1, 11, 2000, 3000);  /* inside: kept */
	add(s, 1, 11, 8000, 5000);  /* 8000-13000 -> 8000-10000 */
	add(s, 2, 22, 30000, 1000); /* 30000-31000 */
	add(s, 2, 22, 30500, 2000); /* 30500-32500 -> 30500-31000 */
	an = kxt_analyse(s, &ci);
	CHECK(an);
	CHECK_EQ_U(an->timeline->nfix, 2);
	CHECK_EQ_U(an->timeline->fixed_threads, 2);

	CHECK(!kx_xspace_serialize(an, NULL, &buf, &len, err, sizeof(err)));
	xs = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	CHECK(xs);
	nx = xspace_spans(xs, xsp, 16);
	for (size_t i = 0; i < xs->n_warnings; i++)
		if (strstr(xs->warnings[i], "partially overlapped"))
			warning = warning ? "twice" : xs->warnings[i];
	CHECK_STR(warning, "2 events on 2 threads partially overlapped an earlier event of the "
	                   "same thread: shortened to nest in it");

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.json", dir);
	CHECK(!kx_chrome_write(an, path, err, sizeof(err)));
	json = slurp(path);
	unlink(path);
	rmdir(dir);
	CHECK(json);
	nc = chrome_spans(json, chs, 16);
	CHECK_EQ_U(count_str(json, warning), 2); /* a global instant and otherData.warnings */

	f = open_memstream(&sj, &sjlen);
	CHECK(f);
	sum = kx_summary_build(an);
	CHECK(sum);
	kx_summary_print_json(sum, f, 0);
	kx_summary_free(sum);
	fclose(f);
	CHECK_EQ_U(count_str(sj, "partially overlapped"), 1);
	CHECK(strstr(sj, warning));

	CHECK_EQ_U(nx, 5);
	CHECK_EQ_U(nc, 5);
	qsort(xsp, nx, sizeof(*xsp), span_cmp);
	qsort(chs, nc, sizeof(*chs), span_cmp);
	for (size_t i = 0; i < nx; i++) {
		CHECK_EQ_U(xsp[i].tid, chs[i].tid);
		CHECK_EQ_U(xsp[i].ts, chs[i].ts);
		CHECK_EQ_U(xsp[i].dur, chs[i].dur);
	}
	/* Sorted by thread and start: the timeline's durations. */
	CHECK_EQ_U(xsp[0].dur, 9000);
	CHECK_EQ_U(xsp[1].dur, 3000);
	CHECK_EQ_U(xsp[2].dur, 2000);
	CHECK_EQ_U(xsp[3].dur, 1000);
	CHECK_EQ_U(xsp[4].dur, 500);
	CHECK_EQ_U(xsp[0].ts, (uint64_t)OFFSET_NS + 1000);

	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	free(json);
	free(sj);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* An XSpace time window shows the whole capture's resolved durations. */
static void test_window_keeps_resolution(void)
{
	struct kx_store *s = kx_store_new(0);
	static struct kx_capinfo ci;
	struct kx_xspace_opts o = {.from_mono_ns = 3000};
	struct span sp[4];
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256];
	XSpace *xs;

	memset(&ci, 0, sizeof(ci));
	add(s, 1, 1, 1000, 3000); /* 1000-4000, before the window */
	add(s, 1, 1, 3000, 2000); /* 3000-5000 -> 3000-4000 */
	CHECK(!kxt_xspace_serialize(s, &ci, &o, &buf, &len, err, sizeof(err)));
	xs = tensorflow__profiler__xspace__unpack(NULL, len, buf);
	free(buf);
	CHECK(xs);
	CHECK_EQ_U(xspace_spans(xs, sp, 4), 1);
	CHECK_EQ_U(sp[0].dur, 1000);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	kx_store_free(s);
}

int main(void)
{
	RUN(test_full_nesting);
	RUN(test_partial_overlap);
	RUN(test_set_fixes);
	RUN(test_out_of_order);
	RUN(test_identical_starts);
	RUN(test_zero_length);
	RUN(test_many_threads);
	RUN(test_random_order);
	RUN(test_reused_tid);
	RUN(test_empty);
	RUN(test_same_in_every_output);
	RUN(test_window_keeps_resolution);
	KXT_EXIT();
}
