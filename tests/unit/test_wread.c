/*
 * Unit tests of a record file read in time windows (user/analysis/wread.c):
 * every part written from a window's store (Chrome JSON and XSpace) is byte
 * for byte the part written from the whole capture in memory, with long
 * calls whose records come late (after calls that started up to 300 ms
 * later), calls across every cut, tasks, CPU samples and argument copies,
 * and, annotated, ranges across the cuts, counter records (late calls'
 * too) and memory ioctls; a Chrome part written a slice of its window at a
 * time holds the same lines; at most two windows are open at once; a capture that fits one window
 * is one; a range touching a call is read in windows too; a capture a stream cannot give
 * exactly (jobs, overlapping calls of one thread), or whose records are far from the order of
 * time, is to be read whole, with the reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/windows.h"
#include "analysis/wread.h"
#include "export/chrome.h"
#include "export/xspace.h"
#include "io/kxp.h"
#include "kxtest.h"
#include "model/store.h"
#include "util/outfile.h"

#define T0      5000000000ULL
#define THREADS 6
#define BUDGET  ((size_t)1 << 30)

static char dir[64];

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* One call of a thread, written when it returns. */
struct call {
	struct kx_ioctl e;
	uint8_t arg[32];
};

static int end_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;
	uint64_t ex = x->e.ts + x->e.dur, ey = y->e.ts + y->e.dur;

	return ex < ey ? -1 : ex > ey;
}

/* Thread by thread (a writer no recorder is): far from the order of time. */
static int tid_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->e.tid != y->e.tid)
		return x->e.tid < y->e.tid ? -1 : 1;
	return end_cmp(a, b);
}

static void capinfo(struct kx_capinfo *ci, uint64_t stop)
{
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	snprintf(ci->kernel, sizeof(ci->kernel), "6.18.0-test");
	ci->clock_start.offset_ns = -1000000000ll;
	ci->clock_start.mono_ns = T0;
	ci->start_mono_ns = T0;
	ci->ndevices = 1;
	ci->devices[0] = (struct kx_device){(10u << 20) | 232, 1, 3, 0, "/dev/kvm", "kvm"};
	ci->all_pids = 1;
	ci->clock_stop = ci->clock_start;
	ci->clock_stop.mono_ns = stop;
	ci->stop_mono_ns = stop;
}

/* A thread of the first process that makes no call, only annotations. */
#define LONE_TID 799

/* An annotation record and its strings. */
struct annrec {
	struct kx_ann a;
	const char *name, *cat;
};

static void ann_put(struct annrec *r, size_t *n, unsigned int what, uint64_t ts, uint32_t tid,
                    uint16_t depth, uint64_t begin, uint64_t id, const char *name)
{
	struct annrec *x = &r[(*n)++];

	memset(x, 0, sizeof(*x));
	x->a = (struct kx_ann){.ts = ts,
	                       .begin = begin ? begin : ts,
	                       .id = id,
	                       .tid = tid,
	                       .pid = tid == LONE_TID ? 700 : 700 + (tid - 700) / 20,
	                       .what = (uint16_t)what,
	                       .depth = depth};
	x->name = name ? name : "";
	x->cat = name && !strcmp(name, "layer") ? "nvtx" : "";
}

/* Open ranges of one thread while its calls are annotated. */
struct ann_thread {
	uint64_t outer, inner; /* ns, their pushes; 0: not open */
	uint64_t prev_end;     /* ns, the end of its last call */
	size_t k;              /* its calls so far */
};

/* The records in the gap before call e, the thread's k-th: the inner and
 * outer ranges that end, those that begin ("step" around 8 calls, "layer"
 * around 2), a mark every 5 calls. With touch, the 10th call's "layer"
 * begins at the nanosecond the call before it ended. */
static void ann_gap(struct annrec *r, size_t *n, struct ann_thread *t, const struct kx_ioctl *e,
                    int touch)
{
	uint64_t base = t->k ? t->prev_end : e->ts - 900;

	if (t->k % 2 == 0 && t->inner) {
		ann_put(r, n, KX_ANN_POP, base + 100, e->tid, 2, t->inner, 0, NULL);
		t->inner = 0;
	}
	if (t->k % 8 == 0 && t->outer) {
		ann_put(r, n, KX_ANN_POP, base + 200, e->tid, 1, t->outer, 0, NULL);
		t->outer = 0;
	}
	if (t->k % 8 == 0) {
		t->outer = base + 300;
		ann_put(r, n, KX_ANN_PUSH, t->outer, e->tid, 1, 0, 0, "step");
	}
	if (t->k % 2 == 0) {
		t->inner = touch && t->k == 10 ? base : base + 500;
		ann_put(r, n, KX_ANN_PUSH, t->inner, e->tid, 2, 0, 0, "layer");
	}
	if (t->k % 5 == 0)
		ann_put(r, n, KX_ANN_MARK, base + 700, e->tid, 2, 0, 0, "tick");
}

static int ann_cmp(const void *a, const void *b)
{
	const struct annrec *x = a, *y = b;

	return x->a.ts < y->a.ts ? -1 : x->a.ts > y->a.ts;
}

/*
 * The annotations of the calls c (in the order they were made), in time
 * order, into r (room for 4 a call and 2 a thread): every thread's calls in
 * nested ranges, those of the first thread left open at the end; every 300
 * calls of the first thread, a cross-thread range it starts and the second
 * thread (same process) ends in its next gap, the last one never ended; the
 * first ended, and a mark made, by a thread that makes no call.
 * touch: one range begins as a call of its thread ends. Returns the records
 * made; *stop moves past the last.
 */
static size_t annotate(const struct call *c, size_t n, struct annrec *r, int touch, uint64_t *stop)
{
	struct ann_thread th[THREADS] = {0};
	uint64_t starts[64], xid = 0;
	size_t m = 0, ended = 0;

	for (int t = 0; t < THREADS; t++)
		for (size_t i = 0; i < n; i++) {
			const struct kx_ioctl *e = &c[i].e;
			struct ann_thread *a = &th[t];
			uint64_t base = a->k ? a->prev_end : e->ts - 900;

			if (e->tid != 700 + (uint32_t)t * 10)
				continue;
			ann_gap(r, &m, a, e, touch && t == 2);
			if (t == 0 && a->k % 300 == 150 && xid < 64) {
				starts[xid++] = base + 800;
				ann_put(r, &m, KX_ANN_START, base + 800, e->tid, 0, 0, xid,
				        "batch");
			}
			if (t == 1 && ended + 1 < xid && starts[ended] < base + 800) {
				ann_put(r, &m, KX_ANN_END, base + 800, ended ? e->tid : LONE_TID, 0,
				        starts[ended], ended + 1, NULL);
				ended++;
			}
			if (t == 1 && a->k == 500)
				ann_put(r, &m, KX_ANN_MARK, base + 900, LONE_TID, 0, 0, 0, "lone");
			a->prev_end = e->ts + e->dur;
			a->k++;
		}
	for (int t = 1; t < THREADS; t++) {
		if (th[t].inner)
			ann_put(r, &m, KX_ANN_POP, th[t].prev_end + 100, 700 + (uint32_t)t * 10, 2,
			        th[t].inner, 0, NULL);
		if (th[t].outer)
			ann_put(r, &m, KX_ANN_POP, th[t].prev_end + 200, 700 + (uint32_t)t * 10, 1,
			        th[t].outer, 0, NULL);
		if (th[t].prev_end + 200 >= *stop)
			*stop = th[t].prev_end + 201;
	}
	qsort(r, m, sizeof(*r), ann_cmp);
	return m;
}

/*
 * n calls over THREADS threads, each thread's calls back to back with gaps,
 * a few of them long (up to 300 ms, so their records come late), written in
 * the order they returned (with by_thread, thread by thread); a task naming
 * each thread first; a CPU sample every 40 calls; with job != 0 a job record
 * too, with overlap != 0 one thread's call overlaps its previous one; with
 * ann (ANN_*), the annotations of annotate() and counter records before
 * every 7th call, each record where a recorder writes it.
 * Returns 0 when written.
 */
/* Call c (the i-th) as KVM_SET_USER_MEMORY_REGION of one of 5 slots of its
 * fd: 64 or 128 KiB, or deleted (size 0). */
static void memory_slot(struct call *c, size_t i)
{
	uint32_t slot = (uint32_t)(i / 50 % 5);
	uint64_t size = (uint64_t)(i / 50 % 3) * 65536;

	c->e.cmd = 0x4020ae46; /* KVM_SET_USER_MEMORY_REGION */
	c->e.ret = 0;
	c->e.arg_in_len = 32;
	memset(c->arg, 0, sizeof(c->arg));
	memcpy(c->arg, &slot, sizeof(slot));
	memcpy(c->arg + 16, &size, sizeof(size));
}

#define ANN_RANGES   1 /* annotate() */
#define ANN_TOUCH    2 /* annotate() with touch */
#define ANN_COUNTERS 4 /* counter records */
#define ANN_MEMORY   8 /* a KVM memory slot set, resized or deleted every 50 calls */

static int write_capture_as(const char *path, size_t n, int job, int overlap, int by_thread,
                            int ann)
{
	struct call *c = calloc(n, sizeof(*c));
	struct annrec *ar = ann ? calloc(4 * n + 2 * THREADS + 64, sizeof(*ar)) : NULL;
	size_t nar = 0, ai = 0;
	uint64_t clock[THREADS], rng = 0x9e3779b97f4a7c15ULL, stop = T0;
	struct kx_kxp_writer *w;
	struct kx_capinfo ci;
	char err[256];
	int rc = -1;

	if (!c || (ann && !ar)) {
		free(c);
		free(ar);
		return -1;
	}
	for (int t = 0; t < THREADS; t++)
		clock[t] = T0 + (uint64_t)t * 777;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&rng);
		int t = (int)(r % THREADS);
		struct kx_ioctl *e = &c[i].e;

		e->ts = clock[t] + 1000 + (r >> 8) % 20000;
		e->dur = (r >> 20) % 97 == 0 ? 50000000 + (r >> 30) % 250000000
		                             : 300 + (r >> 40) % 9000;
		e->pid = 700 + (uint32_t)t / 2;
		e->tid = 700 + (uint32_t)t * 10;
		e->dev = (10u << 20) | 232;
		e->fkind = KX_FK_CHR;
		e->drv = KX_DRV_KVM;
		e->cmd = (r >> 50) % 3 ? 0xae03 : 0xae00;
		e->fd = 3 + t;
		e->ret = (r >> 55) % 40 ? 0 : -22;
		e->arg_off = KX_NO_ARG;
		if ((r >> 45) % 10 == 0) {
			e->arg_in_len = 16;
			for (int k = 0; k < 16; k++)
				c[i].arg[k] = (uint8_t)(i + k);
		}
		if ((ann & ANN_MEMORY) && i % 50 == 7)
			memory_slot(&c[i], i);
		clock[t] = e->ts + e->dur;
		if (clock[t] > stop)
			stop = clock[t];
	}
	if (overlap && n > 10) /* the next call of c[5]'s thread starts inside it */
		for (size_t i = 6; i < n; i++)
			if (c[i].e.tid == c[5].e.tid) {
				c[i].e.ts = c[5].e.ts + c[5].e.dur / 2;
				break;
			}
	if (ann & (ANN_RANGES | ANN_TOUCH))
		nar = annotate(c, n, ar, ann & ANN_TOUCH, &stop);
	qsort(c, n, sizeof(*c), by_thread ? tid_cmp : end_cmp);
	capinfo(&ci, stop + 1);
	if (ann & ANN_COUNTERS)
		snprintf(ci.counters.names, sizeof(ci.counters.names), "cycles");
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		goto out;
	for (int t = 0; t < THREADS; t++) {
		struct kx_task k = {
		        .ts = T0, .pid = 700 + (uint32_t)t / 2, .tid = 700 + (uint32_t)t * 10};

		k.what = KX_TASK_SEEN;
		snprintf(k.comm, sizeof(k.comm), "worker%d", t);
		if (kx_kxp_add_task(w, &k))
			goto out;
	}
	if (ann) {
		struct kx_task k = {.ts = T0, .pid = 700, .tid = LONE_TID, .what = KX_TASK_SEEN};

		snprintf(k.comm, sizeof(k.comm), "lone");
		if (kx_kxp_add_task(w, &k))
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		for (; ai < nar && ar[ai].a.ts < c[i].e.ts + c[i].e.dur; ai++)
			if (kx_kxp_add_ann(w, &ar[ai].a, ar[ai].name, ar[ai].cat))
				goto out;
		if ((ann & ANN_COUNTERS) && i % 7 == 0) {
			struct kx_ctr_ev ce = {.ts = c[i].e.ts,
			                       .pid = c[i].e.pid,
			                       .tid = c[i].e.tid,
			                       .n = 1,
			                       .v = {i}};

			if (kx_kxp_add_ctr(w, &ce))
				goto out;
		}
		if (kx_kxp_add_ioctl(w, &c[i].e, c[i].e.arg_in_len ? c[i].arg : NULL))
			goto out;
		if (i % 40 == 0) {
			uint64_t ips[3] = {0x401000 + i % 7, 0x402000, 0x403000};
			struct kx_sample s = {.ts_ns = c[i].e.ts + c[i].e.dur,
			                      .pid = c[i].e.pid,
			                      .tid = c[i].e.tid,
			                      .kind = KX_SAMPLE_CPU,
			                      .uips = ips,
			                      .nu = 3};

			snprintf(s.comm, sizeof(s.comm), "worker");
			if (kx_kxp_add_sample(w, &s))
				goto out;
		}
		if (job && i == n / 2) {
			struct kx_job j = {.ts = c[i].e.ts, .src = 1, .phase = 1, .seqno = 1};

			if (kx_kxp_add_job(w, &j))
				goto out;
		}
	}
	for (; ai < nar; ai++)
		if (kx_kxp_add_ann(w, &ar[ai].a, ar[ai].name, ar[ai].cat))
			goto out;
	rc = kx_kxp_close(w, &ci, err, sizeof(err));
	w = NULL;
out:
	if (rc)
		printf("# writing the capture: %s\n", err);
	if (w)
		kx_kxp_discard(w);
	free(c);
	free(ar);
	return rc;
}

static int write_capture(const char *path, size_t n, int job, int overlap)
{
	return write_capture_as(path, n, job, overlap, 0, 0);
}

static int chrome_only; /* part_bytes leaves the XSpace out */

/* The bytes of the file at path, a 0 after them and room for extra more,
 * then the file removed. NULL on failure. */
static uint8_t *take_file(const char *path, size_t extra, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *out = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	out = malloc((size_t)n + extra + 1);
	if (out && fread(out, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
		out[n] = 0;
	} else {
		free(out);
		out = NULL;
	}
out:
	if (f)
		fclose(f);
	unlink(path);
	return out;
}

/* A part's bytes: its Chrome JSON then its XSpace. NULL on failure. */
static uint8_t *part_bytes(const struct kx_analysis *an, const struct kx_window *win, size_t k,
                           size_t n, size_t *len)
{
	struct kx_chrome_part cp = {k + 1, n, win->from_ns, win->to_ns, win->events};
	struct kx_xspace_opts xo = {.from_mono_ns = win->from_ns, .to_mono_ns = win->to_ns};
	struct kx_outfile o;
	char path[96], err[256];
	uint8_t *xs = NULL, *out = NULL;
	size_t xlen = 0;

	snprintf(path, sizeof(path), "%s/part.json", dir);
	if (kx_outfile_open(&o, path, 0, err, sizeof(err)) ||
	    kx_chrome_write_part(an, n > 1 ? &cp : NULL, 0, &o, err, sizeof(err)) ||
	    kx_outfile_commit(&o, err, sizeof(err)) ||
	    (!chrome_only && kx_xspace_serialize(an, n > 1 ? &xo : &(struct kx_xspace_opts){0}, &xs,
	                                         &xlen, err, sizeof(err)))) {
		printf("# part %zu: %s\n", k + 1, err);
		return NULL;
	}
	out = take_file(path, xlen, len);
	if (out && xlen) {
		memcpy(out + *len, xs, xlen);
		*len += xlen;
	}
	free(xs);
	return out;
}

/* The parts of the capture read whole. */
struct whole_parts {
	uint8_t **b;
	size_t *len;
	size_t n;
};

static int whole_read(const char *path, size_t limit, struct whole_parts *wp)
{
	struct kx_store *s = kx_store_new(BUDGET);
	struct kx_capinfo ci;
	struct kx_kxp_read_result res;
	struct kx_analysis *an = NULL;
	struct kx_windows wn = {0};
	char err[256];
	int rc = -1;

	if (!s || kx_kxp_read(path, s, &ci, &res, err, sizeof(err)) ||
	    !(an = kx_analysis_build(s, &ci, err, sizeof(err))) ||
	    kx_windows_plan(an, limit, &wn, err, sizeof(err)))
		goto out;
	wp->n = wn.n;
	wp->b = calloc(wn.n, sizeof(*wp->b));
	wp->len = calloc(wn.n, sizeof(*wp->len));
	if (!wp->b || !wp->len)
		goto out;
	for (size_t k = 0; k < wn.n; k++)
		if (!(wp->b[k] = part_bytes(an, &wn.w[k], k, wn.n, &wp->len[k])))
			goto out;
	rc = 0;
out:
	kx_windows_free(&wn);
	kx_analysis_free(an);
	kx_store_free(s);
	return rc;
}

struct cmp_ctx {
	struct kx_wread *w;
	const struct whole_parts *wp;
	size_t parts, same, events;
};

/* A window's (or slice's) analysis, with the whole capture's facts; NULL
 * when out of memory. */
static struct kx_analysis *window_analysis(const struct kx_wread *w, const struct kx_store *s)
{
	char err[256];
	struct kx_analysis *an = kx_analysis_build(s, &w->ci, err, sizeof(err));

	if (!an)
		return NULL;
	an->whole = &w->whole;
	if (w->ranges)
		kx_analysis_lend_ranges(an, w->ranges);
	if (w->jobs)
		kx_analysis_lend_jobs(an, w->jobs);
	return an;
}

static int compare_part(void *ctx, struct kx_store *s, size_t k)
{
	struct cmp_ctx *c = ctx;
	struct kx_analysis *an = window_analysis(c->w, s);
	uint8_t *b;
	size_t len = 0;

	if (!an)
		return 1;
	c->events += kx_store_ioctl_count(s);
	b = part_bytes(an, &c->w->plan.w[k], k, c->w->plan.n, &len);
	c->parts++;
	if (b && k < c->wp->n && len == c->wp->len[k] && !memcmp(b, c->wp->b[k], len))
		c->same++;
	else {
		printf("# part %zu differs (%zu bytes, whole %zu)\n", k + 1, len,
		       k < c->wp->n ? c->wp->len[k] : 0);
		if (getenv("KXT_DUMP") && b && k < c->wp->n) {
			FILE *f = fopen("/tmp/wr_a", "wb");
			fwrite(b, 1, len, f);
			fclose(f);
			f = fopen("/tmp/wr_b", "wb");
			fwrite(c->wp->b[k], 1, c->wp->len[k], f);
			fclose(f);
		}
	}
	free(b);
	kx_analysis_free(an);
	return 0;
}

static void whole_free(struct whole_parts *wp)
{
	for (size_t k = 0; wp->b && k < wp->n; k++)
		free(wp->b[k]);
	free(wp->b);
	free(wp->len);
}

/* The windows' parts against the whole capture's, for a limit. */
static void check_parts(size_t nioc, size_t limit, int ann, size_t *parts, size_t *late,
                        size_t *peak)
{
	static struct kx_wread w;
	struct whole_parts wp = {0};
	char path[96], err[256];
	struct cmp_ctx c = {&w, &wp, 0, 0, 0};

	snprintf(path, sizeof(path), "%s/cap.kxp", dir);
	*parts = 0;
	CHECK(write_capture_as(path, nioc, 0, 0, 0, ann) == 0);
	CHECK(whole_read(path, limit, &wp) == 0);
	CHECK(kx_wread_open(&w, path, limit, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	CHECK(w.store == NULL); /* more calls than a window: given up */
	CHECK_EQ_U(w.plan.n, wp.n);
	/* The annotated capture has every kind of range, and the parts show
	 * counters, late calls' too: the cases are exercised. */
	CHECK(!(ann & ANN_RANGES) || (w.ranges && w.ranges->cross_first < w.ranges->n &&
	                              w.ranges->anom.open == 2 && w.ranges->anom.open_cross == 1));
	CHECK(!(ann & ANN_COUNTERS) ||
	      (w.nlate_ctr > 0 && wp.n && memmem(wp.b[0], wp.len[0], "\"cycles\":", 9)));
	CHECK(!(ann & ANN_MEMORY) || (w.jobs && w.jobs->ndevs && w.jobs->devs[0].nmem > 100 &&
	                              wp.n > 1 && memmem(wp.b[1], wp.len[1], "\"memory\"", 8)));
	CHECK(kx_wread_run(&w, compare_part, &c, err, sizeof(err)) == 0);
	CHECK_EQ_U(c.parts, wp.n);
	CHECK_EQ_U(c.same, wp.n);
	CHECK_EQ_U(c.events, nioc);
	*parts = c.parts;
	*late = w.nlate;
	*peak = w.peak_open;
	kx_wread_free(&w);
	whole_free(&wp);
	unlink(path);
}

static void test_parts_identical(void)
{
	size_t parts = 0, late = 0, peak = 0;

	check_parts(30000, 2500, 0, &parts, &late, &peak);
	if (kxt_cur_failed)
		return;
	printf("# %zu parts, %zu late calls, at most %zu windows open\n", parts, late, peak);
	CHECK(parts >= 12);
	CHECK(late > 0); /* the long calls came late: the case is exercised */
	CHECK(peak <= 2);
}

static void test_small_windows(void)
{
	size_t parts = 0, late = 0, peak = 0;

	/* Windows far shorter than the long calls: many late ones per window. */
	check_parts(6000, 150, 0, &parts, &late, &peak);
	if (kxt_cur_failed)
		return;
	printf("# %zu parts, %zu late calls, at most %zu windows open\n", parts, late, peak);
	CHECK(parts >= 40);
}

/* A push at the nanosecond a call of its thread returned (the rule's tie
 * order decides): read in windows, every part the in-memory one. */
static void test_annotated_touch(void)
{
	size_t parts = 0, late = 0, peak = 0;

	check_parts(30000, 2500, ANN_TOUCH, &parts, &late, &peak);
	CHECK(parts >= 12);
}

/* Annotation ranges across the cuts, cross-thread ones, open ones, marks,
 * counter records, late calls' too, and memory ioctls (a cumulative series
 * across the cuts): every part is the in-memory one. */
static void test_annotated(void)
{
	size_t parts = 0, late = 0, peak = 0;

	check_parts(30000, 2500, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY, &parts, &late, &peak);
	if (kxt_cur_failed)
		return;
	printf("# %zu parts, %zu late calls, at most %zu windows open\n", parts, late, peak);
	CHECK(parts >= 12);
	CHECK(late > 0);
	CHECK(peak <= 2);
}

/* The lines of a Chrome JSON file (b[len] is 0), each without its
 * separating comma, cut in place. */
static size_t json_lines(uint8_t *b, size_t len, char ***out)
{
	size_t n = 0, cap = 1;
	char **v;

	for (size_t i = 0; i < len; i++)
		cap += b[i] == '\n';
	v = malloc(cap * sizeof(*v));
	for (size_t i = 0, from = 0; v && i <= len; i++) {
		if (i < len && b[i] != '\n')
			continue;
		if (i > from && b[i - 1] == ',')
			b[i - 1] = 0;
		if (i < len)
			b[i] = 0;
		v[n++] = (char *)b + from;
		from = i + 1;
	}
	*out = v;
	return v ? n : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether two Chrome JSON files hold the same lines (events, metadata and
 * tail), in any order. */
static int same_lines(uint8_t *a, size_t alen, uint8_t *b, size_t blen)
{
	char **la, **lb;
	size_t na = json_lines(a, alen, &la), nb = json_lines(b, blen, &lb);
	int same = la && lb && na == nb && na > 2;

	if (same) {
		qsort(la, na, sizeof(*la), cmp_str);
		qsort(lb, nb, sizeof(*lb), cmp_str);
		for (size_t i = 0; i < na && same; i++)
			same = !strcmp(la[i], lb[i]);
	}
	free(la);
	free(lb);
	return same;
}

/* A part written a slice at a time (export/chrome.h). */
struct slice_ctx {
	struct kx_wread *w;
	const struct whole_parts *wp;
	struct kx_chrome_writer *cw;
	struct kx_outfile o;
	char path[96];
	size_t parts, same, events, max_slice;
	size_t in_order; /* parts whose bytes are the whole read's as they are */
};

static int slice_part(void *ctx, struct kx_store *s, size_t k)
{
	struct slice_ctx *c = ctx;
	const struct kx_windows *pl = &c->w->plan;
	size_t part = pl->slice[k].part, len = 0;
	const struct kx_window *win = &pl->w[part];
	struct kx_chrome_part cp = {part + 1, pl->n, win->from_ns, win->to_ns, win->events};
	int first = !k || pl->slice[k - 1].part != part;
	int last = k + 1 == pl->nslices || pl->slice[k + 1].part != part;
	struct kx_analysis *an = window_analysis(c->w, s);
	char err[256];
	uint8_t *b;

	if (!an)
		return 1;
	c->events += kx_store_ioctl_count(s);
	if (kx_store_ioctl_count(s) > c->max_slice)
		c->max_slice = kx_store_ioctl_count(s);
	if (first && (kx_outfile_open(&c->o, c->path, 0, err, sizeof(err)) ||
	              !(c->cw = kx_chrome_open(an, &cp, 0, &c->o, err, sizeof(err)))))
		goto fail;
	if (kx_chrome_add(c->cw, an, err, sizeof(err)) ||
	    (last && kx_chrome_close(c->cw, an, err, sizeof(err))))
		goto fail;
	kx_analysis_free(an);
	if (!last)
		return 0;
	kx_chrome_writer_free(c->cw);
	c->cw = NULL;
	if (kx_outfile_commit(&c->o, err, sizeof(err)))
		return 1;
	b = take_file(c->path, 0, &len);
	c->parts++;
	if (b && part < c->wp->n && len == c->wp->len[part] && !memcmp(b, c->wp->b[part], len))
		c->in_order++;
	c->same += b && part < c->wp->n && same_lines(b, len, c->wp->b[part], c->wp->len[part]);
	free(b);
	return 0;
fail:
	printf("# slice %zu: %s\n", k, err);
	kx_analysis_free(an);
	return 1;
}

/* A Chrome file written from slices of its window, a store each: every
 * part holds the lines the whole capture's part holds (the events of a
 * slice come together, so their order may differ), and no slice holds more
 * calls than a slice may. */
static void test_sliced_parts(void)
{
	static struct kx_wread w;
	struct whole_parts wp = {0};
	char path[96], err[256];
	struct slice_ctx c = {.w = &w, .wp = &wp};

	snprintf(path, sizeof(path), "%s/cap.kxp", dir);
	snprintf(c.path, sizeof(c.path), "%s/slices.json", dir);
	chrome_only = 1;
	CHECK(write_capture_as(path, 30000, 0, 0, 0, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY) == 0);
	CHECK(whole_read(path, 2500, &wp) == 0);
	CHECK(kx_wread_open_sliced(&w, path, 2500, 700, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL && w.store == NULL);
	CHECK_EQ_U(w.plan.n, wp.n);
	CHECK(w.plan.nslices >= 4 * w.plan.n - 1);
	CHECK(kx_wread_run(&w, slice_part, &c, err, sizeof(err)) == 0);
	printf("# %zu parts from %zu slices, at most %zu calls a slice, %zu parts in the same "
	       "order, %zu late calls\n",
	       c.parts, w.plan.nslices, c.max_slice, c.in_order, w.nlate);
	CHECK_EQ_U(c.parts, wp.n);
	CHECK_EQ_U(c.same, wp.n);
	CHECK_EQ_U(c.events, 30000);
	CHECK(c.max_slice <= 700);
	CHECK(w.nlate > 0);
	kx_chrome_writer_free(c.cw);
	kx_wread_free(&w);
	whole_free(&wp);
	chrome_only = 0;
	unlink(path);
	unlink(c.path);
}

/* The file as the first read stored it (w->store): the parts of the file
 * read whole, byte for byte, and nioc calls. */
static void check_store_whole(const struct kx_wread *w, const char *path, size_t limit, size_t nioc)
{
	struct whole_parts wp = {0};
	struct kx_windows wn = {0};
	struct kx_analysis *an = NULL;
	char err[256];
	size_t same = 0;

	CHECK(w->store != NULL);
	CHECK(whole_read(path, limit, &wp) == 0);
	if (w->store) {
		CHECK_EQ_U(kx_store_ioctl_count(w->store), nioc);
		an = kx_analysis_build(w->store, &w->ci, err, sizeof(err));
	}
	CHECK(an && kx_windows_plan(an, limit, &wn, err, sizeof(err)) == 0);
	CHECK_EQ_U(wn.n, wp.n);
	/* The plan made from the first read's starts (kx_wread_plan_kept) is
	 * the whole read's. */
	if (w->plan.n) {
		CHECK_EQ_U(w->plan.n, wn.n);
		CHECK_EQ_U(w->plan.total, wn.total);
	}
	for (size_t k = 0; an && k < wn.n && k < wp.n; k++) {
		size_t len = 0;
		uint8_t *b = part_bytes(an, &wn.w[k], k, wn.n, &len);

		same += b && len == wp.len[k] && !memcmp(b, wp.b[k], len);
		free(b);
	}
	CHECK(wp.n > 0);
	CHECK_EQ_U(same, wp.n);
	kx_windows_free(&wn);
	kx_analysis_free(an);
	whole_free(&wp);
}

/* A capture that fits one window is read once: the first read stored it,
 * every kind of record (ranges, counters, memory ioctls, CPU samples). */
static void test_fits_one(void)
{
	static struct kx_wread w;
	char path[96], err[256];

	snprintf(path, sizeof(path), "%s/one.kxp", dir);
	CHECK(write_capture_as(path, 500, 0, 0, 0, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY) == 0);
	CHECK(kx_wread_open(&w, path, 100000, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	CHECK_EQ_U(w.plan.n, 0); /* read whole: no plan unless asked for */
	CHECK(kx_wread_plan_kept(&w, err, sizeof(err)) == 0);
	CHECK_EQ_U(w.plan.n, 1);
	CHECK(w.plan.total > 500); /* the calls, samples, ranges and marks */
	CHECK_EQ_U(w.whole.ioctls, 500);
	CHECK(w.whole.nthreads >= THREADS);
	CHECK(w.store && kx_store_ann_count(w.store) > 0 && kx_store_job_count(w.store) == 0);
	check_store_whole(&w, path, 100000, 500);
	kx_wread_free(&w);
	unlink(path);
}

static void test_read_whole_when_needed(void)
{
	static struct kx_wread w;
	char path[96], err[256];

	snprintf(path, sizeof(path), "%s/job.kxp", dir);
	CHECK(write_capture(path, 2000, 1, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "device jobs"));
	CHECK(w.store == NULL); /* the job came after a window's calls: read it again */
	kx_wread_free(&w);
	/* The job (after 1,000 calls) comes before a window's calls: the first
	 * read stores the rest too, past a window, and the file is read once. */
	CHECK(kx_wread_open(&w, path, 1500, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "device jobs"));
	CHECK(w.store && kx_store_job_count(w.store) == 1);
	check_store_whole(&w, path, 1500, 2000);
	kx_wread_free(&w);
	CHECK(write_capture(path, 2000, 0, 1) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "overlap"));
	kx_wread_free(&w);
	CHECK(write_capture_as(path, 2000, 0, 0, 1, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "order of time"));
	kx_wread_free(&w);

	unlink(path);
}

/* A windowed read takes each window once: records of an earlier window
 * met in the second pass mean the file is not the one the first pass
 * planned (rewritten in between), and the read stops saying so. */
static int no_part(void *ctx, struct kx_store *s, size_t k)
{
	(void)s, (void)k;
	++*(size_t *)ctx;
	return 0;
}

/* n calls of one thread 10 µs apart, in order; with moved, the record of
 * call n/2 comes after that of call n/2 + 1000 (10 ms later: not late). */
static int write_calls(const char *path, size_t n, int moved)
{
	struct kx_kxp_writer *w;
	struct kx_capinfo ci;
	char err[256];
	int rc = 0;

	capinfo(&ci, T0 + n * 10000 + 1);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		return -1;
	for (size_t k = 0; k < n; k++) {
		size_t i = !moved              ? k
		           : k < n / 2         ? k
		           : k < n / 2 + 1000  ? k + 1
		           : k == n / 2 + 1000 ? n / 2
		                               : k;
		struct kx_ioctl e = {.ts = T0 + i * 10000,
		                     .dur = 1000,
		                     .pid = 700,
		                     .tid = 700,
		                     .cmd = 0xae80,
		                     .dev = ci.devices[0].dev};

		rc |= kx_kxp_add_ioctl(w, &e, NULL);
	}
	return kx_kxp_close(w, &ci, err, sizeof(err)) || rc ? -1 : 0;
}

/* Pass 2 over a file other than the one pass 1 planned, renamed over it in
 * between: ids the records it read from a written window, or counts them. */
static void file_changed_case(size_t n2, int moved, const char *why)
{
	static struct kx_wread w;
	char path[96], other[96], err[256] = "";
	size_t parts = 0;

	snprintf(path, sizeof(path), "%s/changed.kxp", dir);
	snprintf(other, sizeof(other), "%s/changed2.kxp", dir);
	CHECK(write_calls(path, 4000, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL && w.store == NULL && w.plan.n > 2);
	CHECK(write_calls(other, n2, moved) == 0);
	CHECK(rename(other, path) == 0);
	CHECK(kx_wread_run(&w, no_part, &parts, err, sizeof(err)) == -1);
	printf("# after %zu of %zu parts: %s\n", parts, w.plan.nslices, err);
	CHECK(strstr(err, why) != NULL);
	kx_wread_free(&w);
	unlink(path);
}

static void test_file_changed(void)
{
	file_changed_case(4000, 1,
	                  "the file changed while it was read (a record of a written part)");
	file_changed_case(3000, 0, "the file changed while it was read (its ioctl records differ)");
}

static void test_not_a_record_file(void)
{
	static struct kx_wread w;
	char path[96], err[256];

	snprintf(path, sizeof(path), "%s/none.kxp", dir);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == -1);
	CHECK(strstr(err, "none.kxp") != NULL);
	kx_wread_free(&w);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kx-wread.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_parts_identical);
	RUN(test_small_windows);
	RUN(test_annotated);
	RUN(test_annotated_touch);
	RUN(test_sliced_parts);
	RUN(test_fits_one);
	RUN(test_read_whole_when_needed);
	RUN(test_file_changed);
	RUN(test_not_a_record_file);
	rmdir(dir);
	KXT_EXIT();
}
