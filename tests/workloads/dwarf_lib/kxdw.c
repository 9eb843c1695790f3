/*
 * libkxdw.so: the shared library of dwarf_workload, built with -O2
 * -fomit-frame-pointer (see the Makefile): its hot function sits three
 * calls deep, kxdw_run -> kxdw_outer -> kxdw_middle -> kxdw_inner, none of
 * them keeping a frame pointer (rbp is a general register here), so only
 * the CFI in .eh_frame says where each caller's frame is.
 */
#include <stdint.h>

#define KXDW_NOINLINE __attribute__((noinline, noclone))

/* The hot loop: integer mixing that keeps rbp busy as a scratch register. */
KXDW_NOINLINE uint64_t kxdw_inner(uint64_t x, unsigned int n)
{
	uint64_t a = x, b = x ^ 0x9e3779b97f4a7c15ull, c = x * 3, d = x + 7, e = ~x;

	for (unsigned int i = 0; i < n; i++) {
		a = a * 6364136223846793005ull + b;
		b ^= a >> 29;
		c += b * 0xbf58476d1ce4e5b9ull;
		d ^= c >> 31;
		e += d ^ a;
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e));
	}
	return a ^ b ^ c ^ d ^ e;
}

KXDW_NOINLINE uint64_t kxdw_middle(uint64_t x)
{
	uint64_t s = 0;

	for (int i = 0; i < 4; i++)
		s += kxdw_inner(x + (uint64_t)i, 20000);
	return s * 31 + x; /* work after the call: no tail call */
}

KXDW_NOINLINE uint64_t kxdw_outer(uint64_t x)
{
	uint64_t s = 0;

	for (int i = 0; i < 4; i++)
		s ^= kxdw_middle(s + x + (uint64_t)i);
	return s + 17;
}

static uint64_t rounds;

/* Runs rounds until *stop; the sum of the rounds' results. */
KXDW_NOINLINE uint64_t kxdw_run(volatile int *stop)
{
	uint64_t s = 1;

	while (!*stop) {
		s += kxdw_outer(s);
		rounds++;
	}
	return s - 1;
}

/* Rounds run so far (the work done). */
uint64_t kxdw_rounds(void)
{
	return rounds;
}
