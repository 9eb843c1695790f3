/*
 * Unit tests of the time windows a capture is split into for outputs whose
 * consumers cap the events of one run (user/analysis/windows.c): a capture
 * under the limit is one window; over it, the windows are consecutive, each
 * holds at most the limit, and together they hold every event once (each by
 * its start, counted again here by brute force); events starting in the
 * same nanosecond are never separated; bursts far denser than the first
 * histogram's buckets are refined; limit 0 never splits; the same events in any
 * order plan the same windows; slices cut the same windows finer, each
 * inside its window.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/windows.h"
#include "kxtest.h"
#include "model/store.h"

#define KVM_RUN 0xae80U

static void add(struct kx_store *s, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.dur = dur;
	e.pid = 100;
	e.tid = tid;
	e.fkind = KX_FK_KVM_VCPU;
	e.drv = KX_DRV_KVM;
	e.cmd = KVM_RUN;
	e.fd = 5;
	kx_store_add_ioctl(s, &e, NULL);
}

static struct kx_analysis *analyse(const struct kx_store *s)
{
	char err[256];
	struct kx_analysis *an = kx_analysis_build(s, NULL, err, sizeof(err));

	if (!an)
		printf("# analysis: %s\n", err);
	return an;
}

/* The n windows x tile time, hold at most limit each (unless one
 * nanosecond holds more), and each holds exactly the events starting in
 * it; their events, summed. 0 when they do not. */
static size_t tile_ok(const struct kx_store *s, const struct kx_window *x, size_t nw, size_t limit)
{
	size_t n = kx_store_ioctl_count(s), sum = 0;

	if (!nw || x[0].from_ns != 0 || x[nw - 1].to_ns != 0)
		return 0;
	for (size_t k = 0; k < nw; k++) {
		size_t in = 0;

		if (k + 1 < nw && (x[k].to_ns != x[k + 1].from_ns || x[k].to_ns <= x[k].from_ns))
			return 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t ts = kx_store_ioctl(s, i)->ts;

			in += ts >= x[k].from_ns && (!x[k].to_ns || ts < x[k].to_ns);
		}
		if (in != x[k].events || !in || x[k].first_ns > x[k].last_ns)
			return 0;
		if (in > limit && x[k].first_ns != x[k].last_ns)
			return 0;
		sum += in;
	}
	return sum;
}

static int windows_ok(const struct kx_store *s, const struct kx_windows *w, size_t limit)
{
	size_t n = kx_store_ioctl_count(s);

	return tile_ok(s, w->w, w->n, limit) == n && w->total == n;
}

static void test_under_limit_one_window(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an;
	struct kx_windows w;
	char err[256];

	for (int i = 0; i < 100; i++)
		add(s, 1 + i % 3, 1000000 + (uint64_t)i * 1000, 500);
	an = analyse(s);
	CHECK(an);
	CHECK(kx_windows_plan(an, 100, &w, err, sizeof(err)) == 0);
	CHECK_EQ_U(w.n, 1);
	CHECK_EQ_U(w.total, 100);
	CHECK_EQ_U(w.w[0].first_ns, 1000000);
	CHECK_EQ_U(w.w[0].last_ns, 1000000 + 99 * 1000);
	CHECK(windows_ok(s, &w, 100));
	kx_windows_free(&w);
	CHECK(kx_windows_plan(an, 0, &w, err, sizeof(err)) == 0);
	CHECK_EQ_U(w.n, 1);
	kx_windows_free(&w);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_even_split(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an;
	struct kx_windows w;
	char err[256];

	/* Events longer than the step: they span the cuts, and stay whole in one window. */
	for (int i = 0; i < 5000; i++)
		add(s, 1 + i % 2, 5000000 + (uint64_t)i * 1000, 1500);
	an = analyse(s);
	CHECK(an);
	CHECK(kx_windows_plan(an, 1000, &w, err, sizeof(err)) == 0);
	CHECK(w.n >= 5 && w.n <= 10);
	CHECK(windows_ok(s, &w, 1000));
	kx_windows_free(&w);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_same_nanosecond_kept(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an;
	struct kx_windows w;
	char err[256];

	for (int i = 0; i < 50; i++)
		add(s, 1, 1000 + (uint64_t)i, 1);
	for (int i = 0; i < 300; i++) /* 300 threads starting at one instant */
		add(s, 10 + (uint32_t)i, 777777, 10);
	for (int i = 0; i < 50; i++)
		add(s, 2, 900000 + (uint64_t)i, 1);
	an = analyse(s);
	CHECK(an);
	CHECK(kx_windows_plan(an, 100, &w, err, sizeof(err)) == 0);
	CHECK(windows_ok(s, &w, 100));
	CHECK_EQ_U(w.n, 3);
	CHECK_EQ_U(w.w[1].events, 300);
	CHECK_EQ_U(w.w[1].first_ns, 777777);
	kx_windows_free(&w);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_dense_burst_refined(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an;
	struct kx_windows w;
	char err[256];

	/* A long quiet span and a burst of 3000 events 1 ns apart: the burst falls
	 * in one bucket of the first pass and needs refining. */
	add(s, 1, 1000, 1);
	for (int i = 0; i < 3000; i++)
		add(s, 2 + (uint32_t)(i % 4), 50000000000ull + (uint64_t)i, 1);
	add(s, 1, 100000000000ull, 1);
	an = analyse(s);
	CHECK(an);
	CHECK(kx_windows_plan(an, 500, &w, err, sizeof(err)) == 0);
	CHECK(windows_ok(s, &w, 500));
	CHECK(w.n >= 7);
	CHECK(w.passes > 1);
	kx_windows_free(&w);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void test_empty(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_analysis *an = analyse(s);
	struct kx_windows w;
	char err[256];

	CHECK(an);
	CHECK(kx_windows_plan(an, 10, &w, err, sizeof(err)) == 0);
	CHECK_EQ_U(w.n, 1);
	CHECK_EQ_U(w.total, 0);
	kx_windows_free(&w);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* The first level's buckets depend on the starts, not on their order: the
 * same starts in file order, reversed and shuffled plan the same windows. */
static void test_any_order_same_plan(void)
{
	enum { N = 20000 };
	static uint64_t ts[N];
	struct kx_store *s[3];
	struct kx_windows w[3];
	uint64_t rng = 88172645463325252ULL;
	char err[256];

	for (int i = 0; i < N; i++)
		ts[i] = 3000000000ULL + (uint64_t)i * 997 + (uint64_t)(i % 7) * 100000;
	for (int k = 0; k < 3; k++) {
		struct kx_analysis *an;

		s[k] = kx_store_new(0);
		for (int i = 0; i < N; i++) {
			int j = k == 0 ? i : k == 1 ? N - 1 - i : i;

			if (k == 2) { /* a shuffle: swap i with a later index */
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				j = i + (int)(rng % (uint64_t)(N - i));
				uint64_t t = ts[i];
				ts[i] = ts[j], ts[j] = t;
				j = i;
			}
			add(s[k], 1 + (uint32_t)(j % 4), ts[j], 50);
		}
		an = analyse(s[k]);
		CHECK(an);
		CHECK(kx_windows_plan(an, 1500, &w[k], err, sizeof(err)) == 0);
		kx_analysis_free(an);
		CHECK(windows_ok(s[k], &w[k], 1500));
	}
	for (int k = 1; k < 3; k++) {
		CHECK_EQ_U(w[k].n, w[0].n);
		for (size_t i = 0; i < w[0].n; i++) {
			CHECK_EQ_U(w[k].w[i].from_ns, w[0].w[i].from_ns);
			CHECK_EQ_U(w[k].w[i].events, w[0].w[i].events);
		}
	}
	for (int k = 0; k < 3; k++) {
		kx_windows_free(&w[k]);
		kx_store_free(s[k]);
	}
}

static const uint64_t stale_ts[] = {1000000, 1070000, 800000};

static int walk_stale(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	(void)ctx, (void)err, (void)errlen;
	for (size_t i = 0; i < sizeof(stale_ts) / sizeof(stale_ts[0]); i++)
		kx_wpass_see(p, stale_ts[i]);
	return 0;
}

/* A bucket emptied when the histogram widens keeps no first or last start
 * of the old layout: an earlier start than any seen re-buckets what was
 * seen, and the bucket it lands in says its own start, not one of before. */
static void test_rebucketed_extremes(void)
{
	const struct kx_wsource src = {walk_stale, NULL};
	struct kx_whist *h = kx_whist_new();
	struct kx_windows w = {0};
	char err[256];

	CHECK(h != NULL);
	if (!h)
		return;
	for (size_t i = 0; i < sizeof(stale_ts) / sizeof(stale_ts[0]); i++)
		kx_whist_see(h, stale_ts[i]);
	CHECK(kx_windows_plan_src(&src, h, 1, 1, &w, err, sizeof(err)) == 0);
	CHECK_EQ_U(w.n, 3);
	for (size_t i = 0; i < w.n && i < 3; i++) {
		CHECK_EQ_U(w.w[i].events, 1);
		CHECK_EQ_U(w.w[i].first_ns, w.w[i].last_ns);
	}
	CHECK(w.n == 3 && w.w[0].last_ns == 800000 && w.w[2].last_ns == 1070000);
	kx_windows_free(&w);
	kx_whist_free(h);
}

/* The store's ioctls as a source of starts. */
static int walk_store(void *ctx, struct kx_wpass *p, char *err, size_t errlen)
{
	const struct kx_store *s = ctx;

	(void)err, (void)errlen;
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++)
		kx_wpass_see(p, kx_store_ioctl(s, i)->ts);
	return 0;
}

/* The plan of s's starts, windows of limit events, slices of slice. */
static int plan_store(const struct kx_store *s, size_t limit, size_t slice, struct kx_windows *w)
{
	const struct kx_wsource src = {walk_store, (void *)s};
	struct kx_whist *h = kx_whist_new();
	char err[256];
	int rc;

	if (!h)
		return -1;
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++)
		kx_whist_see(h, kx_store_ioctl(s, i)->ts);
	rc = kx_windows_plan_src(&src, h, limit, slice, w, err, sizeof(err));
	kx_whist_free(h);
	return rc;
}

/* Sliced, the windows are the unsliced plan's; the slices tile time, hold
 * at most the slice's events each, and lie each inside the window it names,
 * which they fill, in order. Unsliced, the slices are the windows. */
static void test_slices(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_windows w, u;
	size_t n;

	/* Even, then a burst within one first-level bucket: more than a slice
	 * holds, less than a window. */
	for (int i = 0; i < 5000; i++)
		add(s, 1 + (uint32_t)(i % 3), 5000000 + (uint64_t)i * 1000, 1500);
	for (int i = 0; i < 600; i++)
		add(s, 7, 90000000000ull + (uint64_t)i, 1);
	n = kx_store_ioctl_count(s);
	CHECK(plan_store(s, 1000, 250, &w) == 0 && plan_store(s, 1000, 0, &u) == 0);
	CHECK(windows_ok(s, &w, 1000));
	CHECK_EQ_U(w.n, u.n);
	for (size_t k = 0; k < w.n && k < u.n; k++)
		CHECK(w.w[k].from_ns == u.w[k].from_ns && w.w[k].events == u.w[k].events);
	CHECK_EQ_U(tile_ok(s, w.slice, w.nslices, 250), n);
	CHECK(w.nslices > w.n);
	CHECK(w.passes > u.passes); /* the burst refined to the slice */
	for (size_t i = 0, k = 0; i < w.nslices; i++) {
		const struct kx_window *sl = &w.slice[i], *p = &w.w[sl->part];

		k = i && sl->part != w.slice[i - 1].part ? k + 1 : k;
		CHECK_EQ_U(sl->part, k);
		CHECK(sl->from_ns >= p->from_ns &&
		      (!p->to_ns || (sl->to_ns && sl->to_ns <= p->to_ns)));
		CHECK(sl->from_ns != p->from_ns || !i || w.slice[i - 1].part + 1 == sl->part);
	}
	CHECK_EQ_U(u.nslices, u.n);
	for (size_t k = 0; k < u.n && k < u.nslices; k++)
		CHECK(memcmp(&u.slice[k], &u.w[k], sizeof(u.w[k])) == 0);
	kx_windows_free(&w);
	kx_windows_free(&u);
	kx_store_free(s);
}

int main(void)
{
	RUN(test_under_limit_one_window);
	RUN(test_even_split);
	RUN(test_same_nanosecond_kept);
	RUN(test_dense_burst_refined);
	RUN(test_empty);
	RUN(test_any_order_same_plan);
	RUN(test_rebucketed_extremes);
	RUN(test_slices);
	KXT_EXIT();
}
