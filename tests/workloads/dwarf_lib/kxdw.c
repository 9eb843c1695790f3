/*
 * libkxdw.so: the shared library of dwarf_workload, built with -O2
 * -fomit-frame-pointer (see the Makefile): its hot function sits three
 * calls deep, kxdw_run -> kxdw_outer -> kxdw_middle -> kxdw_inner, none of
 * them keeping a frame pointer (rbp is a general register here), so only
 * the CFI in .eh_frame says where each caller's frame is. The same holds
 * for the blocking path, kxdw_io_run -> kxdw_io_outer -> kxdw_io_middle ->
 * kxdw_io_inner, whose deepest function issues a BLKZEROOUT (a
 * submit-and-wait ioctl: the thread sleeps inside it) on a block device.
 */
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>

#ifdef __clang__
#define KXDW_NOINLINE __attribute__((noinline)) /* clang makes no clones */
#else
#define KXDW_NOINLINE __attribute__((noinline, noclone))
#endif

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

static uint64_t zeroouts, io_errors;

/* One BLKZEROOUT of the device's first MiB: the thread blocks in it. */
KXDW_NOINLINE uint64_t kxdw_io_inner(int fd, uint64_t x)
{
	uint64_t range[2] = {0, 1u << 20};

	if (ioctl(fd, BLKZEROOUT, range))
		io_errors++;
	else
		zeroouts++;
	return x * 7 + zeroouts; /* work after the call: no tail call */
}

KXDW_NOINLINE uint64_t kxdw_io_middle(int fd, uint64_t x)
{
	uint64_t s = kxdw_io_inner(fd, x);

	return s * 31 + x;
}

KXDW_NOINLINE uint64_t kxdw_io_outer(int fd, uint64_t x)
{
	uint64_t s = kxdw_io_middle(fd, x + 1);

	return s ^ (x << 3);
}

/* Blocks in BLKZEROOUTs on fd three calls deep until *stop; their sum. */
KXDW_NOINLINE uint64_t kxdw_io_run(int fd, volatile int *stop)
{
	uint64_t s = 1;

	while (!*stop) {
		s += kxdw_io_outer(fd, s);
		rounds++;
	}
	return s - 1;
}

/* BLKZEROOUTs done and failed so far. */
uint64_t kxdw_zeroouts(uint64_t *errors)
{
	*errors = io_errors;
	return zeroouts;
}
