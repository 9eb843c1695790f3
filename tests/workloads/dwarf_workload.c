/*
 * dwarf_workload: a CPU profile that only DWARF unwinding reads. Built with
 * -O2 -fomit-frame-pointer and linked with libkxdw.so (built the same way,
 * tests/workloads/dwarf_lib/kxdw.c): main -> kxdw_run -> kxdw_outer ->
 * kxdw_middle -> kxdw_inner, where nearly all the time is spent. A
 * frame-pointer walk loses the callers; the CFI finds each of them.
 *
 * With a block device (Usage: dwarf_workload SECONDS [DEV]) it blocks
 * instead: main -> kxdw_io_run -> kxdw_io_outer -> kxdw_io_middle ->
 * kxdw_io_inner, which issues BLKZEROOUTs on DEV (off-CPU stacks).
 *
 * Usage: dwarf_workload SECONDS [DEV]. Prints JSON: workload, pid, result,
 * rounds (kxdw_outer or kxdw_io_outer calls), zeroouts, errors (failed
 * BLKZEROOUTs), cpu_ns (its own user + system time).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t kxdw_run(volatile int *stop);
uint64_t kxdw_rounds(void);
uint64_t kxdw_io_run(int fd, volatile int *stop);
uint64_t kxdw_zeroouts(uint64_t *errors);

static volatile int stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 2;
	struct rusage ru;
	uint64_t r, zo, errs;
	int fd = -1;

	if (!secs) {
		fprintf(stderr, "usage: dwarf_workload SECONDS (at least 1) [DEV]\n");
		return 2;
	}
	if (argc > 2 && (fd = open(argv[2], O_RDWR)) < 0) {
		perror(argv[2]);
		return 1;
	}
	signal(SIGALRM, on_alarm);
	alarm(secs);
	r = fd >= 0 ? kxdw_io_run(fd, &stop) : kxdw_run(&stop);
	zo = kxdw_zeroouts(&errs);
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"workload\": \"dwarf_workload\", \"pid\": %d, \"result\": %llu, \"rounds\": "
	       "%llu, \"zeroouts\": %llu, \"errors\": %llu, \"cpu_ns\": %llu}\n",
	       (int)getpid(), (unsigned long long)r, (unsigned long long)kxdw_rounds(),
	       (unsigned long long)zo, (unsigned long long)errs,
	       (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	               (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull);
	return 0;
}
