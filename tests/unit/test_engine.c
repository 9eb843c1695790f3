/*
 * The engine's reorder stage (analysis/engine.h): each thread's calls and
 * counter records leave in start order within the window; a record later
 * than the window is late, counted and handed to the late sink; the memory
 * budget, when exceeded, is counted and said; unbounded, everything leaves
 * at the end, sorted.
 */
#include "analysis/engine.h"
#include "kxtest.h"

#define MAXOUT 4096

struct out {
	struct kx_ioctl e[MAXOUT];
	size_t n;
	struct kx_ioctl late[64];
	size_t nlate;
	uint64_t ctr_ts[64];
	int ctr_before[64]; /* the calls out before each counter record */
	size_t nctr;
};

static int o_ioctl(void *ctx, const struct kx_ioctl *e)
{
	struct out *o = ctx;

	if (o->n < MAXOUT)
		o->e[o->n++] = *e;
	return 0;
}

static int o_late(void *ctx, const struct kx_ioctl *e)
{
	struct out *o = ctx;

	if (o->nlate < 64)
		o->late[o->nlate++] = *e;
	return 0;
}

static int o_ctr(void *ctx, const struct kx_ctr_ev *c)
{
	struct out *o = ctx;

	if (o->nctr < 64) {
		o->ctr_before[o->nctr] = (int)o->n;
		o->ctr_ts[o->nctr++] = c->ts;
	}
	return 0;
}

static struct out out;

static void start(struct kx_engine *e, uint64_t window, size_t budget)
{
	struct kx_engine_sinks s = {
	        .ctx = &out, .ioctl = o_ioctl, .ctr = o_ctr, .late_ioctl = o_late};

	memset(&out, 0, sizeof(out));
	kx_engine_init(e, window, budget, &s);
}

static struct kx_ioctl call(uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct kx_ioctl e = {.ts = ts, .dur = dur, .tid = tid, .pid = 1, .arg_off = KX_NO_ARG};

	return e;
}

/* Each thread's calls out in start order (the longer first at equal starts). */
static int thread_sorted(uint32_t tid)
{
	const struct kx_ioctl *prev = NULL;

	for (size_t i = 0; i < out.n; i++) {
		const struct kx_ioctl *e = &out.e[i];

		if (e->tid != tid)
			continue;
		if (prev && (e->ts < prev->ts || (e->ts == prev->ts && e->dur > prev->dur)))
			return 0;
		prev = e;
	}
	return 1;
}

/* Calls in the order they returned (a nested call before its holder), two
 * threads interleaved: they leave in start order, and while the stream goes
 * on (before finish), as soon as the window has passed. */
static void test_window_orders(void)
{
	struct kx_engine e;
	/* thread 1: outer [100, 1000) holds [200, 300) and [400, 500); its
	 * record comes after theirs. thread 2: in order. */
	struct kx_ioctl in[] = {call(1, 200, 100), call(2, 150, 10), call(1, 400, 100),
	                        call(1, 100, 900), call(2, 600, 10), call(1, 5000, 10),
	                        call(2, 5000, 10), call(1, 6000, 10)};

	start(&e, 1000, 0);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		CHECK(kx_engine_feed_ioctl(&e, &in[i], NULL) == 0);
	/* 6000 - 1000 > window: thread 1's first three are out already. */
	CHECK(out.n >= 3);
	CHECK_EQ_U(out.e[0].ts, 100);
	CHECK_EQ_U(out.e[1].ts, 200);
	CHECK_EQ_U(out.e[2].ts, 400);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(out.n, 8);
	CHECK(thread_sorted(1) && thread_sorted(2));
	CHECK_EQ_U(e.late_ioctls, 0);
	CHECK_EQ_U(out.nlate, 0);
	kx_engine_free(&e);
}

/* A call that comes after a later call of its thread has left (later than
 * the window) is late: counted, to the late sink at once, not reordered. */
static void test_late_kept(void)
{
	struct kx_engine e;
	struct kx_ioctl a = call(7, 1000, 10), b = call(7, 10000, 10), late = call(7, 2000, 10);

	start(&e, 500, 0);
	CHECK(kx_engine_feed_ioctl(&e, &a, NULL) == 0);
	CHECK(kx_engine_feed_ioctl(&e, &b, NULL) == 0); /* a leaves: 10000 - 1000 > 500 */
	CHECK_EQ_U(out.n, 1);
	CHECK(kx_engine_feed_ioctl(&e, &late, NULL) == 0);
	CHECK_EQ_U(e.late_ioctls, 0); /* 2000 is after a, the last to leave: in order */
	late.ts = 900;
	CHECK(kx_engine_feed_ioctl(&e, &late, NULL) == 0);
	CHECK_EQ_U(e.late_ioctls, 1);
	CHECK_EQ_U(out.nlate, 1);
	CHECK_EQ_U(out.late[0].ts, 900);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(out.n, 3);
	CHECK(thread_sorted(7));
	kx_engine_free(&e);
}

/* A counter record leaves just before the call it belongs to (same start),
 * even when it was written after it. */
static void test_counter_before_call(void)
{
	struct kx_engine e;
	struct kx_ioctl a = call(3, 100, 50), b = call(3, 300, 50);
	struct kx_ctr_ev c = {.ts = 300, .tid = 3, .n = 1};

	start(&e, 1000, 0);
	CHECK(kx_engine_feed_ioctl(&e, &a, NULL) == 0);
	CHECK(kx_engine_feed_ioctl(&e, &b, NULL) == 0);
	CHECK(kx_engine_feed_ctr(&e, &c) == 0);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(out.nctr, 1);
	CHECK_EQ_U(out.ctr_before[0], 1); /* after a, before b */
	kx_engine_free(&e);
}

/* Past the budget the waiting records leave early: counted and said. */
static void test_budget_reported(void)
{
	struct kx_engine e;
	char note[256];

	start(&e, KX_ENGINE_UNBOUNDED, 1024);
	for (uint64_t i = 0; i < 100; i++) {
		struct kx_ioctl c = call(1, 1000 - i, 1);

		CHECK(kx_engine_feed_ioctl(&e, &c, NULL) == 0);
	}
	CHECK(e.forced > 0);
	CHECK(e.peak <= 1024 + 256);
	CHECK(strstr(kx_engine_budget_note(&e, note, sizeof(note)), "budget") != NULL);
	CHECK(kx_engine_finish(&e) == 0);
	kx_engine_free(&e);
	start(&e, KX_ENGINE_UNBOUNDED, 0);
	CHECK(kx_engine_feed_ioctl(&e, &(struct kx_ioctl){.tid = 1, .ts = 5}, NULL) == 0);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(e.forced, 0);
	CHECK_STR(kx_engine_budget_note(&e, note, sizeof(note)), "");
	kx_engine_free(&e);
}

/* Measured: a thread whose calls come in start order holds none back (its
 * window is its lateness so far, 0); a call that holds the previous one
 * whole, right after it, is put first; one later than that is late. */
static void test_measured_window(void)
{
	struct kx_engine e;
	struct kx_ioctl hold = call(2, 50, 5000), late = call(2, 10, 9000);

	start(&e, 1000000, 0);
	e.measured = 1;
	for (uint64_t i = 0; i < 1000; i++) {
		struct kx_ioctl c = call(1, 1000 + i * 100, 50);

		CHECK(kx_engine_feed_ioctl(&e, &c, NULL) == 0);
	}
	CHECK_EQ_U(out.n, 999); /* all but the latest, as they came */
	CHECK(e.peak <= 2 * e.held);
	CHECK(kx_engine_feed_ioctl(&e, &(struct kx_ioctl){.tid = 2, .ts = 100, .dur = 10}, NULL) ==
	      0);
	CHECK(kx_engine_feed_ioctl(&e, &hold, NULL) == 0); /* its inner came just before */
	CHECK(kx_engine_feed_ioctl(&e, &(struct kx_ioctl){.tid = 2, .ts = 9000, .dur = 1}, NULL) ==
	      0);
	CHECK_EQ_U(e.late_ioctls, 0);
	CHECK(kx_engine_feed_ioctl(&e, &late, NULL) == 0);
	CHECK_EQ_U(e.late_ioctls, 1);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK(thread_sorted(1) && thread_sorted(2));
	kx_engine_free(&e);
}

/* Unbounded: nothing leaves before finish, then every thread sorted. */
static void test_unbounded_sorts(void)
{
	struct kx_engine e;
	uint64_t s = 12345;

	start(&e, KX_ENGINE_UNBOUNDED, 0);
	for (int i = 0; i < 2000; i++) {
		struct kx_ioctl c;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		c = call((uint32_t)(s >> 60), s >> 20 & 0xffffff, s >> 8 & 0xff);
		CHECK(kx_engine_feed_ioctl(&e, &c, NULL) == 0);
	}
	CHECK_EQ_U(out.n, 0);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(out.n, 2000);
	CHECK_EQ_U(e.late_ioctls, 0);
	for (uint32_t t = 0; t < 16; t++)
		CHECK(thread_sorted(t));
	kx_engine_free(&e);
}

int main(void)
{
	RUN(test_window_orders);
	RUN(test_late_kept);
	RUN(test_counter_before_call);
	RUN(test_budget_reported);
	RUN(test_measured_window);
	RUN(test_unbounded_sorts);
	KXT_EXIT();
}
