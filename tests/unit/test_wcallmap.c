/*
 * Unit tests of the calls a windowed read's device timelines took, by place
 * (user/analysis/wcallmap.c): a call kept is found by its place with its
 * thread and number among its thread's calls; a call not kept only among
 * its thread's last KX_JOBFLOW_RECENT; the timelines' sweeps let go the
 * calls that ended more than the link window before them, in place order,
 * no further than a place not taken yet; places taken out of order.
 */
#include <stdint.h>

#include "analysis/jobrec.h"
#include "analysis/wcallmap.h"
#include "kxtest.h"

/* A call of tid from ts (ns), 1 us long. */
static struct kx_ioctl call(uint32_t tid, uint64_t ts)
{
	return (struct kx_ioctl){.ts = ts, .dur = 1000, .tid = tid, .pid = 1};
}

/* Place idx found: its thread and number. */
static int found(const struct kx_wcallmap *m, uint64_t idx, uint32_t tid, uint32_t want_tid,
                 uint64_t want_n)
{
	uint64_t n = 0;
	int lost = 1;

	return kx_wcallmap_find(m, idx, &tid, &n, &lost) && tid == want_tid && n == want_n && !lost;
}

static void kept_by_place(void)
{
	struct kx_wcallmap m;

	kx_wcallmap_init(&m);
	/* Threads 7 and 9 alternating: place p is call p / 2 + 1 of its thread. */
	for (uint64_t p = 0; p < 5000; p++)
		CHECK(kx_wcallmap_add(&m,
		                      &(struct kx_ioctl){.ts = 1000 + p * 2000,
		                                         .dur = 1000,
		                                         .tid = p % 2 ? 9 : 7},
		                      p, 1) == 0);
	CHECK(found(&m, 0, 0, 7, 1));
	CHECK(found(&m, 1, 0, 9, 1));
	CHECK(found(&m, 4001, 0, 9, 2001));
	CHECK(found(&m, 4999, 0, 9, 2500));
	CHECK(!found(&m, 5000, 9, 9, 2501)); /* not taken */
	kx_wcallmap_free(&m);
}

static void recent_when_not_kept(void)
{
	struct kx_wcallmap m;
	uint64_t n;
	uint32_t tid = 7;
	int lost;

	kx_wcallmap_init(&m);
	for (uint64_t p = 0; p < 20; p++) {
		struct kx_ioctl e = call(7, 1000 + p * 2000);

		CHECK(kx_wcallmap_add(&m, &e, p, 0) == 0);
	}
	/* Its last KX_JOBFLOW_RECENT calls, named by their thread. */
	CHECK(found(&m, 19, 7, 7, 20));
	CHECK(found(&m, 20 - KX_JOBFLOW_RECENT, 7, 7, 21 - KX_JOBFLOW_RECENT));
	CHECK(!kx_wcallmap_find(&m, 19 - KX_JOBFLOW_RECENT, &tid, &n, &lost) && !lost);
	tid = 8;
	CHECK(!kx_wcallmap_find(&m, 19, &tid, &n, &lost)); /* another thread's */
	CHECK(m.cap == 0);                                 /* none kept */
	kx_wcallmap_free(&m);
}

static void swept_in_place_order(void)
{
	struct kx_wcallmap m;
	uint64_t end4;

	kx_wcallmap_init(&m);
	/* Places 0..9 of thread 7, 10 us apart, but place 5 taken last. */
	for (uint64_t p = 0; p < 10; p++) {
		struct kx_ioctl e = call(7, 1000000 + p * 10000);

		if (p != 5)
			CHECK(kx_wcallmap_add(&m, &e, p, 1) == 0);
	}
	end4 = 1000000 + 4 * 10000 + 1000;
	/* Sweeps past every end by more than the link window: let go up to the
	 * place not taken. */
	kx_wcallmap_forget(&m, 2000000 + KX_JOBS_LINK_WINDOW_NS);
	CHECK_EQ_U(m.lo, 5);
	CHECK(found(&m, 6, 7, 7, 6));
	kx_wcallmap_free(&m);
	kx_wcallmap_init(&m);
	for (uint64_t p = 0; p < 10; p++) {
		struct kx_ioctl e = call(7, 1000000 + p * 10000);

		CHECK(kx_wcallmap_add(&m, &e, p, 1) == 0);
	}
	/* Within the link window of place 4's end: kept from there. */
	kx_wcallmap_forget(&m, end4 + KX_JOBS_LINK_WINDOW_NS);
	CHECK_EQ_U(m.lo, 4);
	CHECK(found(&m, 4, 7, 7, 5));
	kx_wcallmap_free(&m);
}

int main(void)
{
	RUN(kept_by_place);
	RUN(recent_when_not_kept);
	RUN(swept_in_place_order);
	KXT_EXIT();
}
