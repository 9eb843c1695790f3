/*
 * dwarf_workload: a CPU profile that only DWARF unwinding reads. Built with
 * -O2 -fomit-frame-pointer and linked with libkxdw.so (built the same way,
 * tests/workloads/dwarf_lib/kxdw.c): main -> kxdw_run -> kxdw_outer ->
 * kxdw_middle -> kxdw_inner, where nearly all the time is spent. A
 * frame-pointer walk loses the callers; the CFI finds each of them.
 *
 * Usage: dwarf_workload SECONDS. Prints JSON: workload, pid, result, rounds
 * (kxdw_outer calls), cpu_ns (its own user + system time).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t kxdw_run(volatile int *stop);
uint64_t kxdw_rounds(void);

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
	uint64_t r;

	if (!secs) {
		fprintf(stderr, "usage: dwarf_workload SECONDS (at least 1)\n");
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(secs);
	r = kxdw_run(&stop);
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"workload\": \"dwarf_workload\", \"pid\": %d, \"result\": %llu, \"rounds\": "
	       "%llu, "
	       "\"cpu_ns\": %llu}\n",
	       (int)getpid(), (unsigned long long)r, (unsigned long long)kxdw_rounds(),
	       (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	               (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull);
	return 0;
}
