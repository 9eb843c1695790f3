/*
 * Unit tests of a record file read in time windows (user/analysis/wread.c):
 * every part written from a window's store (Chrome JSON and XSpace) is byte
 * for byte the part written from the whole capture in memory, with long
 * calls whose records come late (after calls that started up to 300 ms
 * later), calls across every cut, tasks, CPU samples and argument copies,
 * and, annotated, ranges across the cuts, counter records (late calls'
 * too) and memory ioctls; a Chrome part written a slice of its window at a
 * time holds the same lines; at most two windows are open at once; a capture that fits one window
 * is one; a range touching a call is read in windows too, and so are calls the nesting rule
 * shortens and calls spanning the end of a range of their thread (each with the length it has
 * in the whole capture, in every window); captures with job records are read in windows
 * too, their parts the whole capture's, and so are captures with annotation ranges around
 * calls that submit jobs (each range's device time and jobs the in-memory ranges'); a
 * capture a stream cannot give exactly (a KVM exit the device timelines cannot place, a
 * call with jobs inside more than 8 ranges, more shortened calls than a window holds), or
 * whose records are far from the order of time, is to be read whole, with the reason; a
 * range as long as a shortened call of its start is read in windows, ordered as memory
 * orders it.
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
#include "kxp_gen_annjobs.h"
#include "kxp_gen_wread.h"
#include "kxtest.h"
#include "model/store.h"
#include "util/outfile.h"

#define BUDGET ((size_t)1 << 30)

static char dir[64];

static int chrome_only; /* part_bytes leaves the XSpace out */
static int gen_overlap; /* check_parts' captures: write_capture_as's overlap */

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
	if (kx_wread_nest(w, s, an)) {
		kx_analysis_free(an);
		return NULL;
	}
	an->whole = &w->whole;
	if (w->ranges)
		kx_analysis_lend_ranges(an, w->ranges);
	kx_wread_lend_jobs(w, an);
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
	CHECK(write_capture_as(path, nioc, 0, gen_overlap, 0, ann) == 0);
	CHECK(whole_read(path, limit, &wp) == 0);
	/* Calls the rule shortens, or a range's end cuts: every part warns of
	 * the whole capture's. */
	CHECK(!(gen_overlap || (ann & ANN_CUTS)) ||
	      (wp.n > 1 &&
	       memmem(wp.b[wp.n - 1], wp.len[wp.n - 1], "shortened to nest in it", 23)));
	CHECK(kx_wread_open(&w, path, limit, BUDGET, err, sizeof(err)) == 0);
	if (w.in_memory)
		printf("# read whole: %s\n", w.in_memory);
	CHECK(w.in_memory == NULL);
	CHECK(w.store == NULL);                 /* more calls than a window: given up */
	CHECK(!(ann & ANN_CUTS) || w.nfix > 0); /* kept for the windows */
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

/* Calls the nesting rule shortens, each starting windows after the long
 * call it nests in, alone and among annotation ranges, counters and memory
 * ioctls: read in windows, each call with the length the rule gave it in
 * the whole capture, every part the in-memory one. */
static void test_nested_parts(void)
{
	size_t parts = 0, late = 0, peak = 0;

	gen_overlap = 3;
	check_parts(30000, 2500, 0, &parts, &late, &peak);
	if (!kxt_cur_failed)
		check_parts(30000, 2500, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY, &parts, &late,
		            &peak);
	gen_overlap = 0;
	if (kxt_cur_failed)
		return;
	printf("# %zu parts, %zu late calls, at most %zu windows open\n", parts, late, peak);
	CHECK(parts >= 12);
}

/* Calls spanning the end of an annotation range of their thread (the
 * calls' timeline cuts them there), alone and among calls the nesting rule
 * shortens (some cut by both, the shorter cut kept; some cut to the end of
 * a call a range cut): read in windows, each call with the length it has
 * in the whole capture, every part the in-memory one. */
static void test_range_cut_parts(void)
{
	size_t parts = 0, late = 0, peak = 0;
	int ann = ANN_RANGES | ANN_CUTS | ANN_COUNTERS | ANN_MEMORY;

	check_parts(30000, 2500, ann, &parts, &late, &peak);
	gen_overlap = 3;
	if (!kxt_cur_failed)
		check_parts(30000, 2500, ann, &parts, &late, &peak);
	gen_overlap = 0;
	if (kxt_cur_failed)
		return;
	printf("# %zu parts, %zu late calls, at most %zu windows open\n", parts, late, peak);
	CHECK(parts >= 12);
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
	CHECK(kx_wread_open_sliced(&w, path, 2500, 700, BUDGET, KX_WREAD_KEEP_RECORDS, err,
	                           sizeof(err)) == 0);
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

/* The record file path read in windows of limit events against the whole
 * capture read into memory: read in windows (its job records too), every
 * part the same bytes: *parts the windows' count (0: not so). The first
 * read's store keeps up to keep records (let go at its end, or in the
 * middle of the read), and the device timelines take every call and job
 * record of a file with job records once, in file order (jobrec.fed: the
 * feed the parts are drawn from). */
static void file_parts_same(const char *path, size_t limit, size_t keep, size_t *parts)
{
	static struct kx_wread w;
	struct whole_parts wp = {0};
	struct cmp_ctx c = {&w, &wp, 0, 0, 0};
	char err[256];

	*parts = 0;
	CHECK(whole_read(path, limit, &wp) == 0);
	CHECK(kx_wread_open_sliced(&w, path, limit, limit, BUDGET, keep, err, sizeof(err)) == 0);
	if (w.jobrec.records)
		CHECK_EQ_U(w.jobrec.fed, w.whole.ioctls + w.jobrec.records);
	if (w.in_memory)
		printf("# %s: read whole: %s\n", path, w.in_memory);
	CHECK(w.in_memory == NULL && w.store == NULL);
	if (!w.in_memory && !w.store) {
		CHECK_EQ_U(w.plan.n, wp.n);
		CHECK(kx_wread_run(&w, compare_part, &c, err, sizeof(err)) == 0);
		CHECK_EQ_U(c.parts, wp.n);
		CHECK_EQ_U(c.same, wp.n);
		*parts = c.same == wp.n ? c.parts : 0;
	}
	kx_wread_free(&w);
	whole_free(&wp);
}

/* Captures with job records are read in windows, each part (its device
 * jobs, their flows and the calls that submitted them, numbered as in the
 * whole capture) the one written from the whole capture: a recorded KVM
 * capture (600 KVM_RUNs, each a job, over 14 windows), and a capture with
 * one job record mid-file. */
static void test_job_windows(void)
{
	const char *fx = getenv("KX_FIXTURES");
	char path[512];
	size_t parts;

	snprintf(path, sizeof(path), "%s/kvm_busy_cut.kxp", fx && *fx ? fx : "tests/fixtures");
	file_parts_same(path, 100, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 10);
	file_parts_same(path, 100, 0, &parts);
	CHECK(parts >= 10);
	snprintf(path, sizeof(path), "%s/job1.kxp", dir);
	CHECK(write_capture(path, 2000, 1, 0) == 0);
	file_parts_same(path, 100, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 10);
	file_parts_same(path, 100, 0, &parts);
	CHECK(parts >= 10);
	unlink(path);
}

/* A capture with job records that fits one window is kept whole by the
 * first read, which then runs no device timelines (a conversion reads it
 * from its store); its plan, when asked for, runs them from the store: the
 * whole read's, its job events included. */
static void test_kept_no_timelines(void)
{
	static struct kx_wread w;
	char path[96], err[256];

	snprintf(path, sizeof(path), "%s/keptjob.kxp", dir);
	CHECK(write_capture(path, 2000, 1, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100000, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL && w.store && kx_store_job_count(w.store) == 1);
	CHECK_EQ_U(w.jobrec.records, 1);
	CHECK_EQ_U(w.jobrec.fed, 0);
	CHECK(w.jobs == NULL);
	CHECK_EQ_U(w.jobrec.norder, 2001);
	CHECK(kx_wread_plan_kept(&w, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	CHECK_EQ_U(w.jobrec.fed, 2001);
	CHECK(w.jobs && w.jobrec.njobs == 1);
	CHECK_EQ_U(w.plan.n, 1);
	check_store_whole(&w, path, 100000, 2000);
	kx_wread_free(&w);
	/* A reason the timelines find (a KVM exit after its thread's later
	 * ones) is found by the plan, the store kept: read once. */
	CHECK(write_capture(path, 2000, 2, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100000, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL && w.store);
	CHECK_EQ_U(w.jobrec.fed, 0);
	CHECK(kx_wread_plan_kept(&w, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "a KVM exit came after"));
	CHECK(w.store != NULL);
	kx_wread_free(&w);
	unlink(path);
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
	CHECK(write_capture(path, 2000, 2, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "a KVM exit came after"));
	/* The job came after a window's calls, but the store holds fewer than
	 * the keep records: kept, the file is read once. */
	CHECK(w.store && kx_store_job_count(w.store) == 1);
	check_store_whole(&w, path, 100, 2000);
	kx_wread_free(&w);
	/* No keep records: the store goes past a window's calls (to be read again). */
	CHECK(kx_wread_open_sliced(&w, path, 100, 100, BUDGET, 0, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "a KVM exit came after"));
	CHECK(w.store == NULL);
	kx_wread_free(&w);
	/* The job (after 1,000 calls) comes before a window's calls: the first
	 * read stores the rest too, past a window, and the file is read once. */
	CHECK(kx_wread_open(&w, path, 1500, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "a KVM exit came after"));
	CHECK(w.store && kx_store_job_count(w.store) == 1);
	check_store_whole(&w, path, 1500, 2000);
	kx_wread_free(&w);
	/* A call that holds the next of its thread whole comes right after it
	 * (records are written at the end): the engine's reorder stage puts it
	 * first, nested the same in every window, read in windows. One that
	 * starts inside its thread's previous call and ends after it is
	 * shortened by the rule (analysis/nesttrack.h), kept with its length:
	 * read in windows too, unless more such calls come than a window holds. */
	CHECK(write_capture(path, 2000, 0, 1) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(!w.in_memory);
	kx_wread_free(&w);
	CHECK(write_capture(path, 2000, 0, 2) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(!w.in_memory && w.nfix == 1);
	kx_wread_free(&w);
	CHECK(write_capture(path, 20000, 0, 3) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.nfix > 0);
	kx_wread_free(&w);
	CHECK(kx_wread_open(&w, path, 2, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "shortened to nest (") &&
	      strstr(w.in_memory, "than a window holds"));
	kx_wread_free(&w);
	/* Calls that ranges' ends cut are kept alike, a window's events at most. */
	CHECK(write_capture_as(path, 2000, 0, 0, 0, ANN_RANGES | ANN_CUTS) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(!w.in_memory && w.nfix > 20 && w.fix_threads == THREADS);
	kx_wread_free(&w);
	CHECK(kx_wread_open(&w, path, 20, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "end of an annotation range") &&
	      strstr(w.in_memory, "than a window holds"));
	kx_wread_free(&w);
	CHECK(write_capture_as(path, 2000, 0, 0, 1, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "order of time"));
	kx_wread_free(&w);
	unlink(path);
}

/* ---- annotation ranges around calls that submit jobs ---- */

/* The ranges pass 1 built (w->ranges) against kx_ranges_build's (the whole
 * capture in memory): each range's calls, device time and jobs; *jobs the
 * jobs they hold (the ranges' sum), *open those of the ranges left open. */
static void ranges_same(const struct kx_wread *w, const char *path, uint64_t *jobs, uint64_t *open)
{
	struct kx_store *s = kx_store_new(BUDGET);
	struct kx_capinfo ci;
	struct kx_kxp_read_result res;
	struct kx_analysis *an = NULL;
	char err[256];
	size_t same = 0;

	*jobs = *open = 0;
	CHECK(s && kx_kxp_read(path, s, &ci, &res, err, sizeof(err)) == 0);
	CHECK((an = kx_analysis_build(s, &ci, err, sizeof(err))) != NULL);
	CHECK(an && an->ranges && w->ranges);
	if (an && an->ranges && w->ranges) {
		CHECK_EQ_U(w->ranges->n, an->ranges->n);
		for (size_t i = 0; i < an->ranges->n && i < w->ranges->n; i++) {
			const struct kx_range *a = &an->ranges->r[i], *b = &w->ranges->r[i];

			same += a->begin == b->begin && a->tid == b->tid &&
			        a->ioctls == b->ioctls && a->device_ns == b->device_ns &&
			        a->jobs == b->jobs;
			*jobs += b->jobs;
			*open += b->open ? b->jobs : 0;
		}
		CHECK_EQ_U(same, an->ranges->n);
	}
	kx_analysis_free(an);
	kx_store_free(s);
}

/* aj_gen's capture o read in windows of limit events (the first read's
 * store kept up to keep records): read in windows, its ranges' device time
 * and every part the whole capture's; *parts the windows. */
static void annjobs_case(const char *name, const struct aj_opts *o, size_t limit, size_t keep,
                         size_t *parts)
{
	static struct kx_wread w;
	char path[96], err[256];
	uint64_t jobs = 0, open = 0;

	snprintf(path, sizeof(path), "%s/%s.kxp", dir, name);
	*parts = 0;
	CHECK(aj_write_gen(path, o) == 0);
	CHECK(kx_wread_open_sliced(&w, path, limit, limit, BUDGET, keep, err, sizeof(err)) == 0);
	if (w.in_memory)
		printf("# %s: read whole: %s\n", name, w.in_memory);
	CHECK(w.in_memory == NULL && w.store == NULL);
	ranges_same(&w, path, &jobs, &open);
	CHECK(jobs > 0); /* the ranges hold jobs: the case is exercised */
	CHECK(open > 0); /* and so do those left open */
	kx_wread_free(&w);
	file_parts_same(path, limit, keep, parts);
	printf("# %s: %zu parts, %llu jobs in ranges (%llu in ranges left open)\n", name, *parts,
	       (unsigned long long)jobs, (unsigned long long)open);
	unlink(path);
}

/*
 * Captures with annotation ranges around calls that submit jobs (xe jobs
 * with QUEUE, RUN and DONE records, some done long after their ranges
 * ended, some never; KVM exits), thread 0's last range left open, read in
 * windows: each range's device time and jobs are the in-memory ranges',
 * every part (Chrome, XSpace) the whole capture's. The first read's store
 * let go before the first job record (it comes after 400 records), after
 * it, or once the file is read; annotation ranges that begin only after
 * the first job records, and job records that begin only after the ranges;
 * a file that does not fit one window known so from its first chunks.
 */
static void test_annotated_jobs(void)
{
	struct aj_opts xe = {.nthreads = 3, .n = 301, .lag = 200000, .t0 = T0};
	struct aj_opts kvm = {.kvm = 1, .nthreads = 3, .n = 301, .t0 = T0};
	struct aj_opts o;
	size_t parts;

	annjobs_case("aj_xe", &xe, 300, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 5);
	annjobs_case("aj_xe_let_go", &xe, 300, 0, &parts);
	CHECK(parts >= 5);
	annjobs_case("aj_kvm", &kvm, 300, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 5);
	annjobs_case("aj_kvm_let_go", &kvm, 300, 0, &parts);
	CHECK(parts >= 5);
	o = xe;
	o.no_jobs = 80; /* about 400 records before the first job record */
	annjobs_case("aj_jobs_late", &o, 100, 0, &parts);
	CHECK(parts >= 10);
	annjobs_case("aj_jobs_late_kept", &o, 300, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 5);
	o = xe;
	o.bare = 60; /* the ranges begin after the first job records */
	annjobs_case("aj_ann_late", &o, 100, 0, &parts);
	CHECK(parts >= 10);
	annjobs_case("aj_ann_late_kept", &o, 300, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 5);
	o = kvm;
	o.bare = 60;
	annjobs_case("aj_kvm_ann_late", &o, 100, 0, &parts);
	CHECK(parts >= 10);
	/* A window of about two thirds of the capture: the timelines are fed
	 * once the first chunks show the file will not fit one (by then its
	 * calls inside ranges are fewer than the walk remembers), not once a
	 * window's records were read (more of them). */
	o = kvm;
	o.nthreads = 4;
	o.n = 6001;
	annjobs_case("aj_kvm_estimate", &o, 50000, KX_WREAD_KEEP_RECORDS, &parts);
	CHECK(parts >= 2);
}

/*
 * GPU jobs in ranges, 120 ms-late and never-done ones among them, at a rate
 * that puts more calls inside ranges between a job and its sweep than the
 * walk remembered before (16,384; the capture is shorter than the sweeps'
 * 1 s window): read in windows, every range's device time and every part
 * the whole capture's. With 30 more calls a step, more than the walk's
 * memory budget within the records' reorder stage: read whole, the bound
 * said.
 */
static void test_annotated_jobs_many(void)
{
	static struct kx_wread w;
	struct aj_opts o = {.nthreads = 2, .n = 6001, .lag = 200000, .t0 = T0};
	char path[96], err[256];
	size_t parts;

	annjobs_case("aj_xe_many", &o, 20000, 0, &parts);
	CHECK(parts >= 2);
	snprintf(path, sizeof(path), "%s/aj_many_more.kxp", dir);
	o.n = 4000;
	o.more = 30;
	CHECK(aj_write_gen(path, &o) == 0);
	CHECK(kx_wread_open_sliced(&w, path, 20000, 20000, BUDGET, 0, err, sizeof(err)) == 0);
	if (!w.in_memory || !strstr(w.in_memory, "memory budget (16 MiB: 65536 calls)"))
		printf("FAIL annotated_jobs_many: %s\n", w.in_memory ? w.in_memory : "in windows");
	CHECK(w.in_memory && strstr(w.in_memory, "memory budget (16 MiB: 65536 calls)"));
	kx_wread_free(&w);
	unlink(path);
}

/* Block requests queued by a loop call of tid 200 (one in 97 never done,
 * its DONE lost): 45,000 of them, more than KX_JOBFLOW_BEHIND after the
 * first lost. */
static int write_blk_lost(const char *path)
{
	struct aj_list l = {0};
	uint64_t t = T0;

	for (uint64_t i = 0; i < 45000; i++, t += 3000) {
		int lost = i % 97 == 5;
		struct kx_job j = {.seqno = lost ? 5000000 + i : 1000000 + i % 1000,
		                   .aux = 4096,
		                   .dev = 7u << 20,
		                   .pid = 50,
		                   .tid = 200,
		                   .src = KX_JOB_SRC_BLOCK,
		                   .phase = KX_JOB_QUEUE};

		snprintf(j.ring, sizeof(j.ring), "loop0");
		aj_call(&l, 50, 200, t, 2000, KX_DRV_LOOP, 0x4c82);
		j.ts = t + 500;
		aj_job(&l, &j, 0);
		j.ts = t + 1000;
		j.tid = j.pid = 0;
		j.phase = KX_JOB_RUN;
		aj_job(&l, &j, 0);
		j.ts = t + 1800 + i % 7 * 100;
		j.phase = KX_JOB_DONE;
		if (!lost)
			aj_job(&l, &j, 300);
	}
	return aj_write(path, &l);
}

/* Block requests whose DONE was lost, each holding more than
 * KX_JOBFLOW_BEHIND later ones back, are taken as never done (before: the
 * file read whole): read in windows, each part the whole capture's. */
static void test_block_lost_windows(void)
{
	char path[96];
	size_t parts;

	snprintf(path, sizeof(path), "%s/blk_lost.kxp", dir);
	CHECK(write_blk_lost(path) == 0);
	file_parts_same(path, 15000, 0, &parts);
	CHECK(parts >= 5);
	unlink(path);
}

/* A VM's vCPU exiting every 3 us (a KVM job each, 49,152 of them) beside
 * its disk's block requests, one a millisecond: the requests' records
 * wait for earlier ones while more KVM jobs are made than the device
 * timelines hold, and are paired before those are swept past them
 * (before: the file read whole, "a device job started before jobs already
 * counted in start order"). Read in windows, each part the whole
 * capture's. */
static void test_kvm_block_windows(void)
{
	struct aj_list l = {0};
	char path[96];
	size_t parts;

	aj_vm_disk(&l, T0, 3 * KX_JOBFLOW_HELD, 333, 800);
	snprintf(path, sizeof(path), "%s/kvm_blk.kxp", dir);
	CHECK(aj_write(path, &l) == 0);
	file_parts_same(path, 15000, 0, &parts);
	CHECK(parts >= 5);
	unlink(path);
}

/* A capture with annotation ranges and jobs that fits one window is kept
 * whole by the first read, which runs no device timelines (a conversion
 * reads it from its store; its plan, when asked for, runs them); a call
 * with jobs inside more than 8 ranges is a reason to read the file whole
 * (the ranges' walk remembers 8 a call), said. */
static void test_annotated_jobs_kept(void)
{
	static struct kx_wread w;
	struct aj_opts o = {.nthreads = 2, .n = 100, .lag = 50000, .t0 = T0};
	char path[96], err[256];
	uint64_t jobs = 0, open = 0;

	snprintf(path, sizeof(path), "%s/aj_kept.kxp", dir);
	CHECK(aj_write_gen(path, &o) == 0);
	CHECK(kx_wread_open(&w, path, 100000, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL && w.store != NULL);
	CHECK_EQ_U(w.jobrec.fed, 0);
	CHECK(kx_wread_plan_kept(&w, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	CHECK(w.jobrec.fed == w.whole.ioctls + w.jobrec.records);
	CHECK_EQ_U(w.plan.n, 1);
	check_store_whole(&w, path, 100000, 2 * 2 * 100);
	kx_wread_free(&w);
	o.deep = 9;
	CHECK(aj_write_gen(path, &o) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "more than 8 ranges"));
	kx_wread_free(&w);
	o.deep = 6; /* 8 ranges around the call: read in windows */
	CHECK(aj_write_gen(path, &o) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	ranges_same(&w, path, &jobs, &open);
	CHECK(jobs > 0);
	kx_wread_free(&w);
	unlink(path);
}

/* A range of thread 400 around an xe exec whose job is done 100 ms later,
 * after 20,000 calls of thread 401 in no range (more than the last 16384
 * calls the timelines keep for their links), then calls of both: read in
 * windows, the range holds the job (its device time the in-memory one). */
static void test_annotated_job_late_done(void)
{
	static struct kx_wread w;
	struct aj_list l = {0};
	struct kx_job j = {.ts = T0 + 1500,
	                   .ctx = 2,
	                   .seqno = 1,
	                   .pid = 60,
	                   .tid = 400,
	                   .src = KX_JOB_SRC_XE,
	                   .phase = KX_JOB_QUEUE};
	char path[96], err[256];
	uint64_t jobs = 0, open = 0, t = T0 + 5000;

	snprintf(path, sizeof(path), "%s/aj_late_done.kxp", dir);
	aj_ann(&l, 60, 400, KX_ANN_PUSH, T0 + 1000, T0 + 1000, 1, "step");
	aj_call(&l, 60, 400, T0 + 1100, 1000, KX_DRV_XE, AJ_XE_EXEC);
	aj_job(&l, &j, 0);
	j.pid = j.tid = 0;
	j.ts = T0 + 2000, j.phase = KX_JOB_RUN;
	aj_job(&l, &j, 0);
	aj_ann(&l, 60, 400, KX_ANN_POP, T0 + 3000, T0 + 1000, 1, "");
	for (int k = 0; k < 20000; k++, t += 5000)
		aj_call(&l, 60, 401, t, 1000, KX_DRV_XE, AJ_XE_WAIT);
	j.ts = t, j.phase = KX_JOB_DONE;
	aj_job(&l, &j, 0);
	for (int k = 0; k < 200; k++, t += 5000)
		aj_call(&l, 60, 400 + (uint32_t)(k % 2), t, 1000, KX_DRV_XE, AJ_XE_WAIT);
	CHECK(aj_write(path, &l) == 0);
	CHECK(kx_wread_open(&w, path, 1000, BUDGET, err, sizeof(err)) == 0);
	if (w.in_memory)
		printf("# read whole: %s\n", w.in_memory);
	CHECK(w.in_memory == NULL && w.store == NULL);
	ranges_same(&w, path, &jobs, &open);
	CHECK_EQ_U(jobs, 1);
	kx_wread_free(&w);
	unlink(path);
}

/* A call of thread 700 at 1 us, 1 us long; one starting inside it at 1.5 us
 * and ending at 3 us (the rule shortens it to 0.5 us), with two: another of
 * that start ending at 2.7 us (shortened alike); a range of the thread
 * starting with them, len ns long; and ten short calls of the thread after
 * 9 us: each record where a recorder writes it. 0 when written. */
static int write_range_at_cut(const char *path, uint64_t len, int two)
{
	struct kx_ioctl e = {.ts = T0 + 1000, .dur = 1000, .pid = 700, .tid = 700, .cmd = 0xae80};
	struct kx_ann a = {.tid = 700,
	                   .pid = 700,
	                   .ts = T0 + 1500,
	                   .begin = T0 + 1500,
	                   .depth = 1,
	                   .what = KX_ANN_PUSH};
	struct kx_kxp_writer *w;
	struct kx_capinfo ci;
	char err[256];
	int rc = 0;

	capinfo(&ci, T0 + 10000);
	e.dev = ci.devices[0].dev;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		return -1;
	rc |= kx_kxp_add_ann(w, &a, "step", "");
	rc |= kx_kxp_add_ioctl(w, &e, NULL);
	a.what = KX_ANN_POP, a.ts = T0 + 1500 + len;
	rc |= kx_kxp_add_ann(w, &a, "", "");
	e.ts = T0 + 1500, e.dur = 1500;
	rc |= kx_kxp_add_ioctl(w, &e, NULL);
	e.dur = 1200;
	if (two)
		rc |= kx_kxp_add_ioctl(w, &e, NULL);
	for (int i = 0; i < 10; i++) {
		e.ts = T0 + 9000 + 100 * (uint64_t)i, e.dur = 50;
		rc |= kx_kxp_add_ioctl(w, &e, NULL);
	}
	return kx_kxp_close(w, &ci, err, sizeof(err)) || rc;
}

/* A range that starts with a call the rule shortens: memory orders them by
 * the call's shortened length, the reorder stage by its recorded one. A
 * range shorter than the shortened call, as long as it or longer (memory
 * puts it first, around the call), longer than the recorded call, and two
 * calls of that start shortened alike with such a range: read in windows
 * (the shortened calls held until the ranges memory puts first left), each
 * part the whole capture's. */
static void test_range_at_cut(void)
{
	static const uint64_t lens[] = {300, 500, 700, 1700, 700};
	static struct kx_wread w;
	char path[96], err[256];
	size_t parts;

	snprintf(path, sizeof(path), "%s/cut.kxp", dir);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		CHECK(write_range_at_cut(path, lens[i], i == 4) == 0);
		CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
		CHECK(!w.in_memory && w.nfix == 1 + (i == 4));
		kx_wread_free(&w);
		file_parts_same(path, 4, 0, &parts);
		if (parts < 2)
			printf("FAIL test_range_at_cut: range %llu ns\n",
			       (unsigned long long)lens[i]);
		CHECK(parts >= 2);
	}
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
	RUN(test_nested_parts);
	RUN(test_range_cut_parts);
	RUN(test_sliced_parts);
	RUN(test_fits_one);
	RUN(test_job_windows);
	RUN(test_kept_no_timelines);
	RUN(test_annotated_jobs);
	RUN(test_annotated_jobs_kept);
	RUN(test_annotated_jobs_many);
	RUN(test_annotated_job_late_done);
	RUN(test_block_lost_windows);
	RUN(test_kvm_block_windows);
	RUN(test_read_whole_when_needed);
	RUN(test_range_at_cut);
	RUN(test_file_changed);
	RUN(test_not_a_record_file);
	rmdir(dir);
	KXT_EXIT();
}
