/*
 * jit_workload: code with no ELF file behind it, named the way JITs name
 * theirs. It maps an anonymous buffer, copies a tiny x86-64 loop there
 * (kxjit_spin: count a register down to zero), makes it executable, writes
 * /tmp/perf-PID.map naming it ("START SIZE kxjit_spin") and spins in it
 * until SECONDS pass. The map file stays (the recorder reads it at the end
 * too); the caller removes it.
 *
 * Usage: jit_workload SECONDS [--no-map] (--no-map: the code is not named,
 * /tmp/perf-PID.map is left as it is). Prints JSON: workload, pid, calls, map.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* mov %edi,%ecx; 1: dec %ecx; jnz 1b; ret */
static const unsigned char spin_code[] = {0x89, 0xf9, 0xff, 0xc9, 0x75, 0xfc, 0xc3};

static volatile int stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 2;
	char path[64];
	unsigned long calls = 0;
	void (*spin)(unsigned int);
	void *buf;
	FILE *f;

	if (!secs) {
		fprintf(stderr, "usage: jit_workload SECONDS (at least 1)\n");
		return 2;
	}
	buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("jit_workload: mmap");
		return 1;
	}
	memcpy(buf, spin_code, sizeof(spin_code));
	if (mprotect(buf, 4096, PROT_READ | PROT_EXEC)) {
		perror("jit_workload: mprotect");
		return 1;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = argc > 2 && !strcmp(argv[2], "--no-map") ? NULL : fopen(path, "w");
	if (f == NULL && argc > 2)
		path[0] = 0;
	else if (!f ||
	         fprintf(f, "%lx %zx kxjit_spin\n", (unsigned long)buf, sizeof(spin_code)) < 0 ||
	         fclose(f)) {
		perror("jit_workload: writing the perf map");
		return 1;
	}
	spin = (void (*)(unsigned int))buf;
	signal(SIGALRM, on_alarm);
	alarm(secs);
	while (!stop) {
		spin(1000000);
		calls++;
	}
	printf("{\"workload\": \"jit_workload\", \"pid\": %d, \"calls\": %lu, \"map\": \"%s\"}\n",
	       (int)getpid(), calls, path);
	return 0;
}
