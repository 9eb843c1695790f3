/*
 * jit_workload: code with no ELF file behind it, named the way JITs name
 * theirs. It maps an anonymous buffer, copies tiny x86-64 code there, makes
 * it executable, writes /tmp/perf-PID.map naming it and runs it until
 * SECONDS pass:
 *  - by default kxjit_spin, a loop (count a register down to zero);
 *  - with --stub, kxjit_stub, a trampoline of the shape Python's -X perf
 *    writes (push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret: a frame
 *    pointer, no CFI), called by the C function kx_jit_caller, that calls
 *    the C function kx_jit_leaf, which spins. The program is built without
 *    frame pointers (Makefile): only DWARF unwinding, stepping the stub's
 *    frame by its frame pointer, finds kx_jit_caller above the stub;
 *  - with --stub-nofp, the same through kxjit_nofp, a trampoline that keeps
 *    no frame pointer (push %rbp; xor %ebp,%ebp; call *%rcx; pop %rbp; ret:
 *    %rbp is 0 in the call): nothing unwinds past it;
 *  - with --stub-py, the same through py::kxjit_py:/x.py, a trampoline of
 *    the shape CPython's -X perf writes when built without frame pointers
 *    (sub $8,%rsp; call *%rcx; add $8,%rsp; ret: %rbp is the caller's),
 *    named the way CPython names its trampolines: stepped as one.
 * The map file stays (the recorder reads it at the end too); the caller
 * removes it.
 *
 * Usage: jit_workload SECONDS [--no-map | --stub | --stub-nofp | --stub-py]
 * (--no-map: the code is not
 * named, /tmp/perf-PID.map is left as it is). Prints JSON: workload, pid,
 * calls, map.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* mov %edi,%ecx; 1: dec %ecx; jnz 1b; ret */
static const unsigned char spin_code[] = {0x89, 0xf9, 0xff, 0xc9, 0x75, 0xfc, 0xc3};
/* push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret */
static const unsigned char stub_code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3};
/* push %rbp; xor %ebp,%ebp; call *%rcx; pop %rbp; ret */
static const unsigned char nofp_code[] = {0x55, 0x31, 0xed, 0xff, 0xd1, 0x5d, 0xc3};
/* sub $8,%rsp; call *%rcx; add $8,%rsp; ret */
static const unsigned char py_code[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
                                        0x48, 0x83, 0xc4, 0x08, 0xc3};
#define STUB_OFF 64  /* bytes: kxjit_stub's offset in the buffer */
#define NOFP_OFF 128 /* bytes: kxjit_nofp's */
#define PY_OFF   192 /* bytes: py::kxjit_py's */

typedef void (*leaf_fn)(unsigned int);
typedef void (*stub_fn)(unsigned int n, void *unused1, void *unused2, leaf_fn fn);

static volatile int stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) void kx_jit_leaf(unsigned int n)
{
	for (volatile unsigned int i = n; i; i--)
		;
}

/* Spins in kx_jit_leaf through the stub until stop; the calls made. */
__attribute__((noinline)) unsigned long kx_jit_caller(stub_fn stub)
{
	unsigned long calls = 0;

	while (!stop) {
		stub(1000000, NULL, NULL, kx_jit_leaf);
		calls++;
	}
	return calls;
}

/* The buffer with the pieces of code, executable; NULL on failure. */
/* The code page sits in the middle of 1 MiB of address space reserved for
 * it: a page right after a library could fall inside that module's range as
 * an unwinder computes it (its .bss rounded up), and be taken for its code. */
#define JIT_ROOM (1u << 20)

static unsigned char *jit_map(void)
{
	unsigned char *room = mmap(NULL, JIT_ROOM, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *buf = room + JIT_ROOM / 2;

	if (room == MAP_FAILED || mprotect(buf, 4096, PROT_READ | PROT_WRITE)) {
		perror("jit_workload: mmap");
		return NULL;
	}
	memcpy(buf, spin_code, sizeof(spin_code));
	memcpy(buf + STUB_OFF, stub_code, sizeof(stub_code));
	memcpy(buf + NOFP_OFF, nofp_code, sizeof(nofp_code));
	memcpy(buf + PY_OFF, py_code, sizeof(py_code));
	if (mprotect(buf, 4096, PROT_READ | PROT_EXEC)) {
		perror("jit_workload: mprotect");
		return NULL;
	}
	return buf;
}

/* Names the pieces in path; 0, or -1 said. */
static int jit_name(const char *path, const unsigned char *buf)
{
	FILE *f = fopen(path, "w");

	if (!f ||
	    fprintf(f,
	            "%lx %zx kxjit_spin\n%lx %zx kxjit_stub\n%lx %zx kxjit_nofp\n%lx %zx "
	            "py::kxjit_py:/x.py\n",
	            (unsigned long)buf, sizeof(spin_code), (unsigned long)(buf + STUB_OFF),
	            sizeof(stub_code), (unsigned long)(buf + NOFP_OFF), sizeof(nofp_code),
	            (unsigned long)(buf + PY_OFF), sizeof(py_code)) < 0 ||
	    fclose(f)) {
		perror("jit_workload: writing the perf map");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 2;
	const char *mode = argc > 2 ? argv[2] : "";
	char path[64];
	unsigned long calls = 0;
	unsigned char *buf;

	if (!secs || (*mode && strcmp(mode, "--no-map") && strncmp(mode, "--stub", 6))) {
		fprintf(stderr, "usage: jit_workload SECONDS [--no-map | --stub | --stub-nofp | "
		                "--stub-py] (SECONDS at least 1)\n");
		return 2;
	}
	if (!(buf = jit_map()))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (!strcmp(mode, "--no-map"))
		path[0] = 0;
	else if (jit_name(path, buf))
		return 1;
	signal(SIGALRM, on_alarm);
	alarm(secs);
	if (!strcmp(mode, "--stub") || !strcmp(mode, "--stub-nofp") || !strcmp(mode, "--stub-py"))
		calls = kx_jit_caller((stub_fn)(void *)(buf + (!mode[6]         ? STUB_OFF
		                                               : mode[7] == 'n' ? NOFP_OFF
		                                                                : PY_OFF)));
	else
		while (!stop) {
			((leaf_fn)(void *)buf)(1000000);
			calls++;
		}
	printf("{\"workload\": \"jit_workload\", \"pid\": %d, \"calls\": %lu, \"map\": \"%s\"}\n",
	       (int)getpid(), calls, path);
	return 0;
}
