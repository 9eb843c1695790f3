/*
 * Unit tests of a record file read in time windows (user/analysis/wread.c):
 * every part written from a window's store (Chrome JSON and XSpace) is byte
 * for byte the part written from the whole capture in memory, with long
 * calls whose records come late (after calls that started up to 300 ms
 * later), calls across every cut, tasks, CPU samples and argument copies;
 * at most two windows are open at once; a capture that fits one window is
 * one; a capture a stream cannot give exactly (jobs, overlapping calls of
 * one thread), or whose records are far from the order of time, is to be
 * read whole, with the reason.
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

/*
 * n calls over THREADS threads, each thread's calls back to back with gaps,
 * a few of them long (up to 300 ms, so their records come late), written in
 * the order they returned (with by_thread, thread by thread); a task naming
 * each thread first; a CPU sample every 40 calls; with job != 0 a job record
 * too, with overlap != 0 one thread's call overlaps its previous one.
 * Returns 0 when written.
 */
static int write_capture_as(const char *path, size_t n, int job, int overlap, int by_thread)
{
	struct call *c = calloc(n, sizeof(*c));
	uint64_t clock[THREADS], rng = 0x9e3779b97f4a7c15ULL, stop = T0;
	struct kx_kxp_writer *w;
	struct kx_capinfo ci;
	char err[256];
	int rc = -1;

	if (!c)
		return -1;
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
	qsort(c, n, sizeof(*c), by_thread ? tid_cmp : end_cmp);
	capinfo(&ci, stop + 1);
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
	for (size_t i = 0; i < n; i++) {
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
	rc = kx_kxp_close(w, &ci, err, sizeof(err));
	w = NULL;
out:
	if (rc)
		printf("# writing the capture: %s\n", err);
	if (w)
		kx_kxp_discard(w);
	free(c);
	return rc;
}

static int write_capture(const char *path, size_t n, int job, int overlap)
{
	return write_capture_as(path, n, job, overlap, 0);
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
	long clen;
	FILE *f;

	snprintf(path, sizeof(path), "%s/part.json", dir);
	if (kx_outfile_open(&o, path, 0, err, sizeof(err)) ||
	    kx_chrome_write_part(an, n > 1 ? &cp : NULL, &o, err, sizeof(err)) ||
	    kx_outfile_commit(&o, err, sizeof(err)) ||
	    kx_xspace_serialize(an, n > 1 ? &xo : &(struct kx_xspace_opts){0}, &xs, &xlen, err,
	                        sizeof(err))) {
		printf("# part %zu: %s\n", k + 1, err);
		return NULL;
	}
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (clen = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	out = malloc((size_t)clen + xlen + 1);
	if (out && fread(out, 1, (size_t)clen, f) == (size_t)clen) {
		memcpy(out + clen, xs, xlen);
		*len = (size_t)clen + xlen;
	} else {
		free(out);
		out = NULL;
	}
out:
	if (f)
		fclose(f);
	unlink(path);
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

static int compare_part(void *ctx, struct kx_store *s, size_t k)
{
	struct cmp_ctx *c = ctx;
	char err[256];
	struct kx_analysis *an = kx_analysis_build(s, &c->w->ci, err, sizeof(err));
	uint8_t *b;
	size_t len = 0;

	if (!an)
		return 1;
	an->whole = &c->w->whole;
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
static void check_parts(size_t nioc, size_t limit, size_t *parts, size_t *late, size_t *peak)
{
	static struct kx_wread w;
	struct whole_parts wp = {0};
	char path[96], err[256];
	struct cmp_ctx c = {&w, &wp, 0, 0, 0};

	snprintf(path, sizeof(path), "%s/cap.kxp", dir);
	*parts = 0;
	CHECK(write_capture(path, nioc, 0, 0) == 0);
	CHECK(whole_read(path, limit, &wp) == 0);
	CHECK(kx_wread_open(&w, path, limit, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	CHECK_EQ_U(w.plan.n, wp.n);
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

	check_parts(30000, 2500, &parts, &late, &peak);
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
	check_parts(6000, 150, &parts, &late, &peak);
	if (kxt_cur_failed)
		return;
	printf("# %zu parts, %zu late calls, at most %zu windows open\n", parts, late, peak);
	CHECK(parts >= 40);
}

static void test_fits_one(void)
{
	static struct kx_wread w;
	char path[96], err[256];

	snprintf(path, sizeof(path), "%s/one.kxp", dir);
	CHECK(write_capture(path, 500, 0, 0) == 0);
	CHECK(kx_wread_open(&w, path, 100000, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory == NULL);
	CHECK_EQ_U(w.plan.n, 1);
	CHECK_EQ_U(w.whole.ioctls, 500);
	CHECK_EQ_U(w.whole.nthreads, THREADS);
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
	kx_wread_free(&w);
	CHECK(write_capture(path, 2000, 0, 1) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "overlap"));
	kx_wread_free(&w);
	CHECK(write_capture_as(path, 2000, 0, 0, 1) == 0);
	CHECK(kx_wread_open(&w, path, 100, BUDGET, err, sizeof(err)) == 0);
	CHECK(w.in_memory && strstr(w.in_memory, "order of time"));
	kx_wread_free(&w);
	unlink(path);
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
	RUN(test_fits_one);
	RUN(test_read_whole_when_needed);
	RUN(test_not_a_record_file);
	rmdir(dir);
	KXT_EXIT();
}
