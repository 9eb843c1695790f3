/* Clock sync between CLOCK_MONOTONIC (BPF timestamps) and CLOCK_REALTIME. */
#include <time.h>

#include "capture/clock.h"

static inline uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

uint64_t kx_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ts_ns(&t);
}

int64_t kx_realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)ts_ns(&t);
}

void kx_clock_sync_measure(struct kx_clock_sync *cs)
{
	/* mono, real, mono: the realtime read lies between the two monotonic
	 * reads; the narrowest bracket gives the best offset. */
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		uint64_t m1 = kx_mono_ns();
		int64_t r = kx_realtime_ns();
		uint64_t m2 = kx_mono_ns();

		if (m2 - m1 < best) {
			best = m2 - m1;
			cs->mono_ns = m1 + (m2 - m1) / 2;
			cs->offset_ns = r - (int64_t)cs->mono_ns;
			cs->uncertainty_ns = best;
		}
	}
}
