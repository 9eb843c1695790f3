/*
 * The engine's reorder stage (analysis/engine.h): each thread's calls,
 * counter records and annotation ranges leave in start order within the
 * window (a range the longest until its POP gives its length); a record
 * later than the window is late, counted and handed to the late sink; the
 * memory budget, when exceeded, is counted and said; unbounded, everything
 * leaves at the end, sorted; records let out up to a time, and calls
 * handed to a second stage with their thread's lateness.
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
	/* Calls ('c', start; 's': a span, its handle) and ranges ('r', handle;
	 * 'l': late) in the order they left; annotation records as they came
	 * ('a', what). */
	struct {
		char kind;
		uint64_t v;
	} log[256];
	size_t nlog;
};

static void logged(struct out *o, char kind, uint64_t v)
{
	if (o->nlog < 256)
		o->log[o->nlog++] = (typeof(o->log[0])){kind, v};
}

static struct kx_engine *cur; /* the engine of the test, for out_ref */

static int o_ioctl(void *ctx, const struct kx_ioctl *e)
{
	struct out *o = ctx;

	if (o->n < MAXOUT)
		o->e[o->n++] = *e;
	if (cur->out_ref != KX_ENGINE_NOREF)
		logged(o, 's', cur->out_ref);
	else
		logged(o, 'c', e->ts);
	return 0;
}

/* The test's pairing: a PUSH's handle is its start and depth (start * 10 +
 * depth), a POP's its begin and depth. */
static int o_ann(void *ctx, const struct kx_ann *a, const char *name, const char *cat,
                 uint32_t *ref)
{
	(void)name;
	(void)cat;
	logged(ctx, 'a', a->what);
	if (a->what == KX_ANN_PUSH)
		*ref = (uint32_t)(a->ts * 10 + a->depth);
	else if (a->what == KX_ANN_POP)
		*ref = (uint32_t)(a->begin * 10 + a->depth);
	return 0;
}

static int o_range(void *ctx, uint32_t tid, uint32_t ref)
{
	(void)tid;
	logged(ctx, 'r', ref);
	return 0;
}

static int o_late_range(void *ctx, uint32_t tid, uint32_t ref)
{
	(void)tid;
	logged(ctx, 'l', ref);
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
	struct kx_engine_sinks s = {.ctx = &out,
	                            .ioctl = o_ioctl,
	                            .ctr = o_ctr,
	                            .late_ioctl = o_late,
	                            .ann = o_ann,
	                            .range = o_range,
	                            .late_range = o_late_range};

	memset(&out, 0, sizeof(out));
	cur = e;
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

/* ---- annotation ranges ---- */

static struct kx_ann ann(uint32_t tid, int what, uint64_t ts, uint64_t begin, uint16_t depth)
{
	struct kx_ann a = {.ts = ts, .begin = begin, .pid = 1, .tid = tid};

	a.what = (uint16_t)what;
	a.depth = depth;
	return a;
}

/* The log from index from, as "c100 r100 ..." (annotation records left out). */
static const char *order(size_t from)
{
	static char buf[1024];
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = from; i < out.nlog && n < sizeof(buf) - 32; i++)
		if (out.log[i].kind != 'a')
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%c%llu", n ? " " : "",
			                      out.log[i].kind, (unsigned long long)out.log[i].v);
	return buf;
}

static void feed_ann(struct kx_engine *e, struct kx_ann a)
{
	CHECK(kx_engine_feed_ann(e, &a, "n", "") == 0);
}

static void feed_call(struct kx_engine *e, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct kx_ioctl c = call(tid, ts, dur);

	CHECK(kx_engine_feed_ioctl(e, &c, NULL) == 0);
}

/* A range waits as the longest of its start: a call of its start that
 * came before its POP goes after it, and one longer than it, known by its
 * POP, before it; each annotation record reaches the ann sink at once. */
static void test_range_waits_for_pop(void)
{
	struct kx_engine e;

	start(&e, 1000, 0);
	feed_ann(&e, ann(1, KX_ANN_PUSH, 100, 100, 1));
	CHECK_EQ_U(out.nlog, 1);
	CHECK(out.log[0].kind == 'a' && out.log[0].v == KX_ANN_PUSH);
	feed_call(&e, 1, 100, 50);                     /* returned inside the range: it is longer */
	feed_ann(&e, ann(1, KX_ANN_POP, 120, 100, 1)); /* 20 ns: the call is longer */
	CHECK_EQ_U(out.nlog, 2);
	feed_ann(&e, ann(1, KX_ANN_PUSH, 200, 200, 1));
	feed_call(&e, 1, 200, 30);
	feed_call(&e, 1, 5000, 10);
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "c100 r1001 r2001 c200 c5000");
	CHECK_EQ_U(e.late_ranges, 0);
	kx_engine_free(&e);
}

/* Ranges of one start: the longer first; at one length the outer (lower
 * depth) first, and a range before a call as long as it. */
static void test_range_rule_order(void)
{
	struct kx_engine e;

	start(&e, 1000, 0);
	feed_ann(&e, ann(2, KX_ANN_PUSH, 100, 100, 1));
	feed_ann(&e, ann(2, KX_ANN_PUSH, 100, 100, 2));
	feed_ann(&e, ann(2, KX_ANN_PUSH, 100, 100, 3));
	feed_call(&e, 2, 100, 40);
	feed_ann(&e, ann(2, KX_ANN_POP, 140, 100, 3)); /* 40, as the call: before it */
	feed_ann(&e, ann(2, KX_ANN_POP, 160, 100, 2)); /* 60 */
	feed_ann(&e, ann(2, KX_ANN_POP, 160, 100, 1)); /* 60, outer: first */
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "r1001 r1002 r1003 c100");
	kx_engine_free(&e);
	/* Pushed in the other order (inner levels first in the file): the
	 * outer still leaves first, by depth. */
	start(&e, 1000, 0);
	feed_ann(&e, ann(2, KX_ANN_PUSH, 300, 300, 2));
	feed_ann(&e, ann(2, KX_ANN_PUSH, 100, 100, 1));
	feed_call(&e, 2, 100, 10);
	feed_ann(&e, ann(2, KX_ANN_POP, 150, 100, 1));
	feed_ann(&e, ann(2, KX_ANN_POP, 400, 300, 2));
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "r1001 c100 r3002");
	kx_engine_free(&e);
}

/* A range whose POP has not come when the window passes leaves as the
 * longest of its start (before a call of its start); a range whose end is
 * known otherwise (kx_engine_range_end: left open) moves to its place. */
static void test_range_unended(void)
{
	struct kx_engine e;

	start(&e, 1000, 0);
	feed_ann(&e, ann(3, KX_ANN_PUSH, 100, 100, 1));
	feed_call(&e, 3, 100, 500);
	for (uint64_t i = 0; i < KX_ENGINE_RANGE_HOLD + 1; i++)
		feed_call(&e, 3, 5000 + i * 10, 1);
	CHECK(!strncmp(order(0), "r1001 c100 c5000", 16));
	feed_ann(&e, ann(3, KX_ANN_POP, 9000, 100, 1)); /* 8900 ns: gone already, nothing moves */
	CHECK(kx_engine_finish(&e) == 0);
	CHECK(!strncmp(order(0), "r1001 c100 c5000", 16));
	CHECK_EQ_U(out.n, KX_ENGINE_RANGE_HOLD + 2);
	kx_engine_free(&e);
	start(&e, KX_ENGINE_UNBOUNDED, 0);
	feed_ann(&e, ann(3, KX_ANN_PUSH, 100, 100, 1));
	feed_call(&e, 3, 100, 500);
	kx_engine_range_end(&e, 3, 1001, 20); /* ends before the call does */
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "c100 r1001");
	kx_engine_free(&e);
}

/* A range that comes after a later record of its thread left is late:
 * counted, to the late sink at once. */
static void test_range_late(void)
{
	struct kx_engine e;

	start(&e, 0, 0);
	e.measured = 1;
	feed_call(&e, 4, 1000, 10);
	feed_call(&e, 4, 2000, 10); /* the first leaves */
	feed_ann(&e, ann(4, KX_ANN_PUSH, 500, 500, 1));
	CHECK_EQ_U(e.late_ranges, 1);
	CHECK_STR(order(0), "c1000 l5001");
	feed_ann(&e, ann(4, KX_ANN_POP, 600, 500, 1)); /* its range is not waiting */
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "c1000 l5001 c2000");
	kx_engine_free(&e);
}

/* A thread with ranges keeps its last KX_ENGINE_RANGE_HOLD records: a
 * range whose records come some calls after later calls of its thread (the
 * calls' ring drained first) is put in its place, not late; past the hold
 * the window lets them go. */
static void test_range_hold(void)
{
	struct kx_engine e;

	start(&e, 0, 0);
	e.measured = 1;
	feed_ann(&e, ann(6, KX_ANN_PUSH, 100, 100, 1));
	feed_ann(&e, ann(6, KX_ANN_POP, 150, 100, 1));
	for (uint64_t i = 0; i < 100; i++)
		feed_call(&e, 6, 1000 + i * 100, 10);
	CHECK_EQ_U(out.n, 0); /* in order, yet held */
	feed_ann(&e, ann(6, KX_ANN_PUSH, 500, 500, 1));
	feed_ann(&e, ann(6, KX_ANN_POP, 600, 500, 1));
	CHECK_EQ_U(e.late_ranges, 0);
	for (uint64_t i = 0; i < KX_ENGINE_RANGE_HOLD; i++)
		feed_call(&e, 6, 20000 + i * 100, 10);
	CHECK(!strncmp(order(0), "r1001 r5001 c1000", 17));
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(out.n, 100 + KX_ENGINE_RANGE_HOLD);
	CHECK(thread_sorted(6));
	kx_engine_free(&e);
}

/* Unbounded with spans (calls the caller holds): nothing leaves before
 * finish; then each thread's ranges and spans in the rule's order, a span
 * with its handle. */
static void test_unbounded_ranges(void)
{
	struct kx_engine e;

	start(&e, KX_ENGINE_UNBOUNDED, 0);
	feed_ann(&e, ann(5, KX_ANN_PUSH, 100, 100, 1));
	feed_ann(&e, ann(5, KX_ANN_PUSH, 100, 100, 2));
	feed_ann(&e, ann(5, KX_ANN_POP, 110, 100, 2));
	feed_ann(&e, ann(5, KX_ANN_POP, 300, 100, 1));
	CHECK(kx_engine_feed_span(&e, 5, 100, 50, 7) == 0);
	CHECK(kx_engine_feed_span(&e, 5, 50, 10, 8) == 0);
	CHECK_STR(order(0), "");
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "s8 r1001 s7 r1002");
	kx_engine_free(&e);
}

/* Unbounded, a thread's records appended as two runs in order (its
 * ranges, then its spans) leave merged in the rule's order; a third run,
 * or a range's end that puts it after a record of its run, leave sorted
 * all the same. */
static void test_unbounded_runs(void)
{
	struct kx_engine e;

	start(&e, KX_ENGINE_UNBOUNDED, 0);
	feed_ann(&e, ann(5, KX_ANN_PUSH, 100, 100, 1));
	feed_ann(&e, ann(5, KX_ANN_POP, 250, 100, 1));
	feed_ann(&e, ann(5, KX_ANN_PUSH, 300, 300, 1));
	feed_ann(&e, ann(5, KX_ANN_POP, 400, 300, 1));
	CHECK(kx_engine_feed_span(&e, 5, 90, 5, 1) == 0);
	CHECK(kx_engine_feed_span(&e, 5, 100, 50, 2) == 0);
	CHECK(kx_engine_feed_span(&e, 5, 200, 20, 3) == 0);
	CHECK(kx_engine_feed_span(&e, 5, 300, 100, 4) == 0);
	CHECK(kx_engine_feed_span(&e, 5, 350, 10, 5) == 0);
	CHECK(kx_engine_finish_thread(&e, 5) == 0);
	CHECK_STR(order(0), "s1 r1001 s2 s3 r3001 s4 s5");
	out.nlog = 0;
	feed_ann(&e, ann(6, KX_ANN_PUSH, 1000, 1000, 1));
	feed_ann(&e, ann(6, KX_ANN_POP, 1100, 1000, 1));
	CHECK(kx_engine_feed_span(&e, 6, 1050, 10, 6) == 0);
	CHECK(kx_engine_feed_span(&e, 6, 900, 10, 7) == 0);
	CHECK(kx_engine_feed_span(&e, 6, 1000, 200, 8) == 0);
	CHECK(kx_engine_feed_span(&e, 6, 950, 10, 9) == 0);
	CHECK(kx_engine_finish_thread(&e, 6) == 0);
	CHECK_STR(order(0), "s7 s9 s8 r10001 s6");
	out.nlog = 0;
	feed_ann(&e, ann(7, KX_ANN_PUSH, 500, 500, 1));
	feed_ann(&e, ann(7, KX_ANN_PUSH, 500, 500, 2));
	feed_ann(&e, ann(7, KX_ANN_POP, 510, 500, 1));
	feed_ann(&e, ann(7, KX_ANN_POP, 520, 500, 2));
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_STR(order(0), "r5002 r5001");
	CHECK_EQ_U(e.held, 0);
	kx_engine_free(&e);
}

/* Unbounded, a thread at a time: kx_engine_finish_thread lets one
 * thread's records out, in order, the others' wait for their turn. */
static void test_finish_thread(void)
{
	struct kx_engine e;

	start(&e, KX_ENGINE_UNBOUNDED, 0);
	feed_ann(&e, ann(8, KX_ANN_PUSH, 100, 100, 1));
	feed_ann(&e, ann(9, KX_ANN_PUSH, 50, 50, 1));
	feed_ann(&e, ann(8, KX_ANN_POP, 120, 100, 1));
	CHECK(kx_engine_feed_span(&e, 8, 100, 50, 1) == 0);
	CHECK(kx_engine_feed_span(&e, 8, 90, 5, 2) == 0);
	CHECK(kx_engine_finish_thread(&e, 8) == 0);
	CHECK_STR(order(0), "s2 s1 r1001");
	CHECK(kx_engine_feed_span(&e, 9, 60, 5, 3) == 0);
	CHECK(kx_engine_finish_thread(&e, 9) == 0);
	CHECK_STR(order(0), "s2 s1 r1001 r501 s3");
	CHECK(kx_engine_finish(&e) == 0);
	CHECK_EQ_U(e.held, 0);
	kx_engine_free(&e);
}

/* kx_engine_release lets out every record starting at or before a time,
 * each thread's in order (what comes after and should precede one let out
 * is late); kx_engine_hand_calls gives a second engine a copy of the calls
 * waiting, with each thread's measured lateness, so a call that holds
 * them and comes within it is put back before them there. */
static void test_release_and_hand(void)
{
	struct kx_engine a, b;
	struct kx_ioctl c;

	start(&a, 1000000, 0);
	a.measured = 1;
	kx_engine_init(&b, 1000000, 0, &a.out);
	b.measured = 1;
	c = call(1, 100, 50);
	CHECK(kx_engine_feed_ioctl(&a, &c, NULL) == 0);
	c = call(1, 300, 50);
	CHECK(kx_engine_feed_ioctl(&a, &c, NULL) == 0);
	c = call(2, 200, 10);
	CHECK(kx_engine_feed_ioctl(&a, &c, NULL) == 0);
	CHECK_EQ_U(out.n, 1); /* thread 1's first: a later one came */
	CHECK(kx_engine_release(&a, 250) == 0);
	CHECK_EQ_U(out.n, 2);
	CHECK_EQ_U(out.e[1].ts, 200);
	c = call(2, 150, 5);
	CHECK(kx_engine_feed_ioctl(&a, &c, NULL) == 0);
	CHECK_EQ_U(a.late_ioctls, 1);
	/* Thread 3 holds a call: its lateness 500 ns, both wait. */
	c = call(3, 1000, 100);
	CHECK(kx_engine_feed_ioctl(&a, &c, NULL) == 0);
	c = call(3, 500, 800);
	CHECK(kx_engine_feed_ioctl(&a, &c, NULL) == 0);
	out.n = 0;
	CHECK(kx_engine_hand_calls(&a, &b) == 0);
	CHECK_EQ_U(out.n, 0); /* thread 1's 300 and 3's wait in b too */
	c = call(3, 400, 900);
	CHECK(kx_engine_feed_ioctl(&b, &c, NULL) == 0);
	CHECK_EQ_U(b.late_ioctls, 0);
	CHECK(kx_engine_finish(&b) == 0);
	CHECK_EQ_U(out.n, 4);
	CHECK(thread_sorted(3));
	CHECK_EQ_U(out.e[out.n - 3].ts, 400);
	kx_engine_free(&a);
	kx_engine_free(&b);
}

int main(void)
{
	RUN(test_window_orders);
	RUN(test_late_kept);
	RUN(test_counter_before_call);
	RUN(test_budget_reported);
	RUN(test_measured_window);
	RUN(test_unbounded_sorts);
	RUN(test_range_waits_for_pop);
	RUN(test_range_rule_order);
	RUN(test_range_unended);
	RUN(test_range_late);
	RUN(test_range_hold);
	RUN(test_unbounded_ranges);
	RUN(test_unbounded_runs);
	RUN(test_finish_thread);
	RUN(test_release_and_hand);
	KXT_EXIT();
}
