/*
 * The live interval protocol of top and serve (user/live/interval.h) on
 * synthetic snapshots (no kernel): an interval is the diff of two reads
 * with its length, rows carry rates per second of it, p50/p99 within a
 * fine slot of the true values, the exact max where known (the top slot's
 * in a diff) and the off-CPU share; a process that exited keeps its name;
 * ranges come busiest first with their rates and percentiles (marks count
 * only); the busiest device's busy share is capped at 100%; and the
 * column time format top prints.
 */
#include <inttypes.h>
#include <stdint.h>

#include "kxtest.h"

#include "live/interval.h"
#include "util/hist.h"
#include "util/units.h"

#define SEC 1000000000ull

/* A row of key (who, cmd) with n calls of ns each added. */
static void row_add(struct kx_agg_row *r, uint64_t who, unsigned int cmd, uint64_t ns, uint64_t n)
{
	if (!r->ioctl[0]) {
		r->key.who = who;
		r->key.cmd = cmd;
		r->key.drv = 1;
		snprintf(r->driver, sizeof(r->driver), "kvm");
		snprintf(r->device, sizeof(r->device), "/dev/kvm");
		snprintf(r->ioctl, sizeof(r->ioctl), "CMD_%x", cmd);
	}
	r->fine[kx_hist_fine_slot(ns)] += n;
	r->count += n;
	r->sum_ns += ns * n;
	if (!r->min_ns || ns < r->min_ns)
		r->min_ns = ns;
	if (ns > r->max_ns)
		r->max_ns = ns;
}

static struct kx_agg_snapshot snap_new(size_t nrows, uint64_t mono_ns)
{
	struct kx_agg_snapshot s = {.mono_ns = mono_ns, .by = KX_AGG_BY_PID};

	s.rows = calloc(nrows, sizeof(*s.rows));
	s.nrows = nrows;
	return s;
}

/* Within a fine slot's error (1/16) of want. */
static int near(uint64_t got, uint64_t want)
{
	return got * 16 >= want * 15 && got * 16 <= want * 17;
}

static void rows_rates_quantiles(void)
{
	struct kx_agg_snapshot d = snap_new(3, 0);
	struct kx_live_row t[3];
	size_t n;

	d.interval_s = 2.0;
	row_add(&d.rows[0], 0, 1, 10000, 1000); /* 1000 calls of 10 us */
	row_add(&d.rows[0], 0, 1, 1000000, 20); /* and 20 of 1 ms */
	d.rows[0].errors = 4;
	d.rows[0].offcpu_ns = d.rows[0].sum_ns / 4;
	d.rows[1].key.cmd = 2; /* no calls, no errors: not a row */
	d.rows[2].key.cmd = 3;
	d.rows[2].errors = 6; /* errors only: a row */
	n = kx_live_rows(&d, t);
	CHECK_EQ_U(n, 2);
	CHECK(t[0].r == &d.rows[0] && t[1].r == &d.rows[2]);
	CHECK(t[0].rate == 510.0);
	CHECK(t[0].err_rate == 2.0);
	CHECK(t[1].rate == 0 && t[1].err_rate == 3.0);
	CHECK(near(t[0].p50, 10000));
	CHECK(near(t[0].p99, 1000000)); /* rank 1010 of 1020 */
	CHECK_EQ_U(t[0].max, 1000000);  /* the key's exact max */
	CHECK(t[0].offcpu_pct > 24.99 && t[0].offcpu_pct < 25.01);
	/* In a diff the max is unknown: the top slot's, still near 1 ms. */
	d.rows[0].min_ns = d.rows[0].max_ns = 0;
	kx_live_rows(&d, t);
	CHECK(near(t[0].max, 1000000));
	/* No interval: no rates (not a division by zero). */
	d.interval_s = 0;
	kx_live_rows(&d, t);
	CHECK(t[0].rate == 0 && t[0].err_rate == 0);
	kx_agg_snapshot_free(&d);
}

/* Two pushes: the interval is the diff with its length, names kept. */
static void interval_diff_keeps_names(void)
{
	struct kx_live_interval iv = {0};
	struct kx_agg_snapshot a = snap_new(2, 5 * SEC), b = snap_new(2, 7 * SEC);
	struct kx_live_row t[2];

	row_add(&a.rows[0], 42, 1, 5000, 10);
	snprintf(a.rows[0].comm, sizeof(a.rows[0].comm), "worker");
	row_add(&a.rows[1], 43, 1, 5000, 1);
	snprintf(a.rows[1].comm, sizeof(a.rows[1].comm), "other");
	row_add(&b.rows[0], 42, 1, 5000, 40); /* 30 more; the process exited: no name */
	row_add(&b.rows[1], 44, 1, 5000, 8);  /* a new process, no name yet */
	kx_agg_snapshot_sort(&a);
	kx_agg_snapshot_sort(&b);
	iv.prev = a;
	CHECK(kx_live_push(&iv, &b) == 0);
	CHECK(iv.have_last);
	CHECK(iv.last.interval_s == 2.0);
	CHECK_EQ_U(iv.last.nrows, 2);
	CHECK_EQ_U(iv.last.rows[0].key.who, 42);
	CHECK_EQ_U(iv.last.rows[0].count, 30);
	CHECK_STR(iv.last.rows[0].comm, "worker");
	CHECK_STR(iv.prev.rows[0].comm, "worker"); /* kept for the next interval too */
	CHECK_EQ_U(iv.last.rows[1].count, 8);
	CHECK_STR(iv.last.rows[1].comm, ""); /* another process's name is not taken */
	CHECK_EQ_U(kx_live_rows(&iv.last, t), 2);
	CHECK(t[0].rate == 15.0 && t[1].rate == 4.0);
	kx_live_interval_free(&iv);
}

static void busiest_device(void)
{
	struct kx_jobagg_dev devs[3] = {
	        {.device = "loop0", .busy_ns = SEC / 2, .inflight = 2},
	        {.device = "kvm", .busy_ns = 3 * SEC / 2, .inflight = 1},
	        {.device = "loop1", .busy_ns = SEC, .inflight = 0},
	};
	struct kx_jobagg_snapshot js = {.devs = devs, .ndevs = 3};
	struct kx_live_busy b;

	kx_live_busiest(&js, 2.0, &b);
	CHECK_EQ_U(b.inflight, 3);
	CHECK_STR(b.device, "kvm");
	CHECK(b.busy_pct == 75.0);
	devs[1].busy_ns = 3 * SEC; /* busy time past the interval's end: capped */
	kx_live_busiest(&js, 2.0, &b);
	CHECK(b.busy_pct == 100.0);
	js.ndevs = 0;
	kx_live_busiest(&js, 2.0, &b);
	CHECK(b.device[0] == 0 && b.inflight == 0 && b.busy_pct == 0);
}

static void series_add(struct kx_annagg_series *s, const char *name, int mark, uint64_t ns,
                       uint64_t n)
{
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->mark = mark;
	s->count += n;
	if (mark)
		return;
	s->fine[kx_hist_fine_slot(ns)] += n;
	s->sum_ns += ns * n;
	if (!s->min_ns || ns < s->min_ns)
		s->min_ns = ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
}

static void ranges_busiest_first(void)
{
	struct kx_annagg_series s[4] = {0};
	struct kx_annagg_snapshot as = {.series = s, .nseries = 4};
	struct kx_live_range r[4];
	size_t n;

	series_add(&s[0], "step", 0, 2000000, 10);
	series_add(&s[1], "idle", 0, 1, 0); /* not seen in the interval */
	s[1].count = 0;
	series_add(&s[2], "tick", 1, 0, 30);
	series_add(&s[3], "load", 0, 50000, 29);
	series_add(&s[3], "load", 0, 400000, 1);
	n = kx_live_ranges(&as, 0.5, r);
	CHECK_EQ_U(n, 3);
	CHECK_STR(r[0].s->name, "load"); /* 30 each: by name */
	CHECK_STR(r[1].s->name, "tick");
	CHECK_STR(r[2].s->name, "step");
	CHECK(r[0].rate == 60.0 && r[1].rate == 60.0 && r[2].rate == 20.0);
	CHECK(near(r[0].p50, 50000));
	CHECK(near(r[0].p99, 400000));
	CHECK_EQ_U(r[0].max, 400000);
	CHECK(r[1].p50 == 0 && r[1].p99 == 0 && r[1].max == 0); /* a mark: count only */
	CHECK_EQ_U(r[2].p50, 2000000); /* clamped to the exact min and max */
}

static void time_formats(void)
{
	static const struct {
		uint64_t ns;
		const char *table, *column;
	} c[] = {
	        {0, "0ns", "-"},
	        {412, "412ns", "412ns"},
	        {9512, "9.512µs", "9.5us"},
	        {999999, "1.000ms", "1000.0us"},
	        {1379000, "1.379ms", "1.38ms"},
	        {12410000000ull, "12.41s", "12.41s"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		kx_fmt_time(buf, sizeof(buf), c[i].ns);
		CHECK_STR(buf, c[i].table);
		kx_fmt_time_as(buf, sizeof(buf), c[i].ns, KX_TIME_COLUMN);
		CHECK_STR(buf, c[i].column);
	}
}

int main(void)
{
	RUN(rows_rates_quantiles);
	RUN(interval_diff_keeps_names);
	RUN(busiest_device);
	RUN(ranges_busiest_first);
	RUN(time_formats);
	KXT_EXIT();
}
