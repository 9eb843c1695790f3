/*
 * Minimal unit-test harness: each test binary runs its cases and prints one
 * line per case ("PASS name", "FAIL name: why", "SKIP name: why"); the runner
 * (tests/run.sh) counts them. A binary exits non-zero when any case failed.
 * KXT_EXIT() ends with "CASES n", the number of cases run: the runner
 * compares it with the RUN() lines of the source, so a binary that stops
 * early (an exit(0) inside a case, a crash) cannot lose cases silently.
 */
#ifndef KXTEST_H
#define KXTEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kxt_failed_total, kxt_cur_failed, kxt_cur_skipped, kxt_ran;
static const char *kxt_cur;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("FAIL %s: %s:%d: %s\n", kxt_cur, __FILE__, __LINE__, #cond);        \
			kxt_cur_failed = 1;                                                        \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_U(a, b)                                                                           \
	do {                                                                                       \
		unsigned long long _a = (a), _b = (b);                                             \
		if (_a != _b) {                                                                    \
			printf("FAIL %s: %s:%d: %s == %s (%llu != %llu)\n", kxt_cur, __FILE__,     \
			       __LINE__, #a, #b, _a, _b);                                          \
			kxt_cur_failed = 1;                                                        \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
			printf("FAIL %s: %s:%d: \"%s\" != \"%s\"\n", kxt_cur, __FILE__, __LINE__,  \
			       _a ? _a : "(null)", _b ? _b : "(null)");                            \
			kxt_cur_failed = 1;                                                        \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define SKIP(why)                                                                                  \
	do {                                                                                       \
		printf("SKIP %s: %s\n", kxt_cur, why);                                             \
		kxt_cur_skipped = 1;                                                               \
		return;                                                                            \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		kxt_cur = #fn;                                                                     \
		kxt_ran++;                                                                         \
		kxt_cur_failed = 0;                                                                \
		kxt_cur_skipped = 0;                                                               \
		fn();                                                                              \
		if (kxt_cur_failed)                                                                \
			kxt_failed_total++;                                                        \
		else if (!kxt_cur_skipped)                                                         \
			printf("PASS %s\n", #fn);                                                  \
		fflush(stdout);                                                                    \
	} while (0)

#define KXT_EXIT()                                                                                 \
	do {                                                                                       \
		printf("CASES %d\n", kxt_ran);                                                     \
		return kxt_failed_total ? 1 : 0;                                                   \
	} while (0)

/* Deterministic pseudo-random numbers (xorshift64) for randomized checks:
 * every run draws the same sequence. */
static inline uint64_t kxt_rand(void)
{
	static uint64_t x = 88172645463325252ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

#endif /* KXTEST_H */
