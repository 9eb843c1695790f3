/*
 * dwarf_workload: a CPU profile that only DWARF unwinding reads. Built with
 * -O2 -fomit-frame-pointer and linked with libkxdw.so (built the same way,
 * tests/workloads/dwarf_lib/kxdw.c): main -> kxdw_run -> kxdw_outer ->
 * kxdw_middle -> kxdw_inner, where nearly all the time is spent. A
 * frame-pointer walk loses the callers; the CFI finds each of them.
 *
 * Usage: dwarf_workload SECONDS. Prints JSON: workload, pid, result.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

uint64_t kxdw_run(volatile int *stop);

static volatile int stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 2;
	uint64_t r;

	if (!secs) {
		fprintf(stderr, "usage: dwarf_workload SECONDS (at least 1)\n");
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(secs);
	r = kxdw_run(&stop);
	printf("{\"workload\": \"dwarf_workload\", \"pid\": %d, \"result\": %llu}\n", (int)getpid(),
	       (unsigned long long)r);
	return 0;
}
