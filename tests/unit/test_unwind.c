/*
 * symbol/unwind.h on this very process: a function four calls deep takes
 * its registers and a copy of the top of its stack, as the sample program
 * does; the unwinder (libdw, the CFI of this test built without frame
 * pointers) must find each caller's return address in order, from the
 * copy alone. Also: a copy cut short stops early (counted as partial), a
 * pid with no process gives no frame, and a pc in anonymous memory (JIT
 * code: no CFI) is stepped by its frame pointer (counted) or, with none,
 * ends the walk there (KX_UNWIND_JIT, counted), unless this process's perf
 * map names it as a CPython -X perf trampoline (py::...): then it is
 * stepped by that layout and the walk goes on (counted).
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kxtest.h"
#include "sample_rec.h" /* bpf/: KX_USTACK_* */
#include "symbol/unwind.h"

#ifdef __clang__
#define NOINL __attribute__((noinline)) /* clang makes no clones */
#else
#define NOINL __attribute__((noinline, noclone))
#endif

struct snap {
	uint64_t regs[KX_USTACK_NREGS];
	uint8_t stack[8192];
	size_t len;
	uint64_t ra[4]; /* return addresses: of capture, level1, level2, level3 */
};

/* Bytes from sp to the end of the mapping that holds it (the stack's top). */
static size_t room_above(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long a, b;
	char line[512];
	size_t room = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= sp && sp < b)
			room = b - sp;
	if (f)
		fclose(f);
	return room;
}

/* The raw copy the sample program makes: redzones and all, so not checked
 * by AddressSanitizer, and word by word (no memcpy it would intercept). */
__attribute__((no_sanitize_address)) NOINL static void copy_words(uint8_t *dst, uint64_t src,
                                                                  size_t len)
{
	const volatile uint64_t *p = (const volatile uint64_t *)src;

	for (size_t i = 0; i < len / 8; i++) {
		uint64_t w = p[i];

		__builtin_memcpy(dst + 8 * i, &w, 8);
	}
}

NOINL static void capture(struct snap *s)
{
	uint64_t *r = s->regs;

	s->ra[0] = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("movq %%rax, 0(%0)\n\t"
	                 "movq %%rdx, 8(%0)\n\t"
	                 "movq %%rcx, 16(%0)\n\t"
	                 "movq %%rbx, 24(%0)\n\t"
	                 "movq %%rsi, 32(%0)\n\t"
	                 "movq %%rdi, 40(%0)\n\t"
	                 "movq %%rbp, 48(%0)\n\t"
	                 "movq %%rsp, 56(%0)\n\t"
	                 "movq %%r8, 64(%0)\n\t"
	                 "movq %%r9, 72(%0)\n\t"
	                 "movq %%r10, 80(%0)\n\t"
	                 "movq %%r11, 88(%0)\n\t"
	                 "movq %%r12, 96(%0)\n\t"
	                 "movq %%r13, 104(%0)\n\t"
	                 "movq %%r14, 112(%0)\n\t"
	                 "movq %%r15, 120(%0)\n\t"
	                 "leaq 0(%%rip), %%rax\n\t"
	                 "movq %%rax, 128(%0)\n\t"
	                 :
	                 : "r"(r)
	                 : "rax", "memory");
	s->len = room_above(r[KX_USTACK_REG_SP]);
	if (s->len > sizeof(s->stack))
		s->len = sizeof(s->stack);
	copy_words(s->stack, r[KX_USTACK_REG_SP], s->len);
}

NOINL static void level1(struct snap *s)
{
	s->ra[1] = (uint64_t)__builtin_return_address(0);
	capture(s);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

NOINL static void level2(struct snap *s)
{
	s->ra[2] = (uint64_t)__builtin_return_address(0);
	level1(s);
	__asm__ volatile("" ::: "memory");
}

NOINL static void level3(struct snap *s)
{
	s->ra[3] = (uint64_t)__builtin_return_address(0);
	level2(s);
	__asm__ volatile("" ::: "memory");
}

static struct snap snap;

static struct kx_ustack ustack_of(const struct snap *s, size_t len)
{
	return (struct kx_ustack){.pid = (uint32_t)getpid(),
	                          .exec_id = 1,
	                          .ts_ns = 1,
	                          .regs = s->regs,
	                          .stack = s->stack,
	                          .len = len};
}

static void unwinds_callers(void)
{
	char err[200] = "";
	struct kx_unwinder *u = kx_unwinder_new(err, sizeof(err));
	struct kx_unwind_stats st;
	struct kx_ustack us;
	uint64_t ips[64];
	unsigned int n;
	int complete;

	CHECK(u != NULL);
	if (!u)
		return;
	level3(&snap);
	CHECK(snap.len > 256);
	us = ustack_of(&snap, snap.len);
	n = kx_unwind(u, &us, ips, 64, &complete);
	printf("# %u frames, complete %d, copy %zu bytes\n", n, complete, snap.len);
	CHECK(n >= 5);
	CHECK(n >= 1 && ips[0] == snap.regs[KX_USTACK_REG_IP]);
	for (int i = 0; i < 4 && (unsigned int)i + 1 < n; i++)
		CHECK_EQ_U(ips[i + 1], snap.ra[i]);
	/* Cut to the leaf's own frame: the walk stops inside the copy's end. */
	us = ustack_of(&snap, 16);
	n = kx_unwind(u, &us, ips, 64, &complete);
	printf("# cut copy: %u frames, complete %d\n", n, complete);
	CHECK(!complete && n >= 1 && n < 5);
	kx_unwinder_stats(u, &st);
	CHECK_EQ_U(st.partial, 1);
	CHECK(st.unwound + st.partial == 2);
	kx_unwinder_free(u);
}

static void no_process(void)
{
	char err[200] = "";
	struct kx_unwinder *u = kx_unwinder_new(err, sizeof(err));
	struct kx_unwind_stats st;
	struct kx_ustack us = ustack_of(&snap, snap.len);
	uint64_t ips[8];
	int complete = 1;

	CHECK(u != NULL);
	if (!u)
		return;
	us.pid = 987654321; /* above any pid_max */
	CHECK(kx_unwind(u, &us, ips, 8, &complete) == 0 && !complete);
	kx_unwinder_stats(u, &st);
	CHECK_EQ_U(st.failed, 1);
	kx_unwinder_free(u);
}

#define JIT_ROOM (1u << 20) /* bytes of address space around the JIT page */

/* A frame at a pc in jit (anonymous memory), sp at stk, rbp as given;
 * the copy: stk's n words. */
static unsigned int unwind_jit(struct kx_unwinder *u, const void *jit, uint64_t *stk, size_t n,
                               uint64_t rbp, uint64_t *ips, int *end)
{
	uint64_t regs[KX_USTACK_NREGS] = {0};
	struct kx_ustack us = {.pid = (uint32_t)getpid(),
	                       .exec_id = 1,
	                       .ts_ns = 1,
	                       .regs = regs,
	                       .stack = (const uint8_t *)stk,
	                       .len = n * sizeof(*stk)};

	regs[6] = rbp; /* DWARF 6: %rbp */
	regs[KX_USTACK_REG_SP] = (uint64_t)stk;
	regs[KX_USTACK_REG_IP] = (uint64_t)jit + 4;
	return kx_unwind(u, &us, ips, 8, end);
}

static void jit_frames(void)
{
	char err[200] = "";
	struct kx_unwinder *u = kx_unwinder_new(err, sizeof(err));
	/* Far (0.5 MiB) from any module's range: one that ends in a page past
	 * its last mapping (its .bss rounded up) must not cover it. */
	uint8_t *room = mmap(NULL, JIT_ROOM, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *jit = room + JIT_ROOM / 2;
	struct kx_unwind_stats st;
	uint64_t stk[8] = {0}, ips[8];
	unsigned int n;
	int end;

	CHECK(u != NULL && room != MAP_FAILED);
	if (!u || room == MAP_FAILED)
		return;
	/* A frame record at stk[2]: the caller's %rbp (none), its return
	 * address (one in this program, with CFI). */
	stk[3] = snap.ra[3];
	n = unwind_jit(u, jit, stk, 8, (uint64_t)&stk[2], ips, &end);
	printf("# JIT frame with a frame pointer: %u frames, end %d\n", n, end);
	CHECK(n >= 2 && ips[1] == snap.ra[3]);
	/* No frame pointer: the walk ends at the JIT frame. */
	n = unwind_jit(u, jit, stk, 8, 0, ips, &end);
	printf("# JIT frame without one: %u frames, end %d\n", n, end);
	CHECK(n == 1 && end == KX_UNWIND_JIT);
	kx_unwinder_stats(u, &st);
	CHECK_EQ_U(st.jit_steps, 1);
	CHECK_EQ_U(st.jit_stops, 1);
	munmap(room, JIT_ROOM);
	kx_unwinder_free(u);
}

/* Frame 0 at the entry of a function of this program (CFA %rsp+8) whose
 * return address lies 6 bytes into jit, where a trampoline of CPython's
 * no-frame-pointer shape (sub $8,%rsp; call *%rcx) left its caller's
 * return address at [%rsp+8]; the perf map names jit fn. */
static unsigned int unwind_py(struct kx_unwinder *u, const uint8_t *jit, const char *fn,
                              uint64_t *ips, int *end)
{
	static uint64_t stk[8];
	uint64_t regs[KX_USTACK_NREGS] = {0};
	struct kx_ustack us = {.pid = (uint32_t)getpid(),
	                       .exec_id = 1,
	                       .ts_ns = 1,
	                       .regs = regs,
	                       .stack = (const uint8_t *)stk,
	                       .len = sizeof(stk)};
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) /* no frame: the caller's checks fail */
		return 0;
	fprintf(f, "%lx 10 %s\n", (unsigned long)jit, fn);
	fclose(f);
	stk[0] = (uint64_t)jit + 6; /* the trampoline's return address */
	stk[2] = snap.ra[3];        /* its caller's */
	regs[KX_USTACK_REG_SP] = (uint64_t)stk;
	regs[KX_USTACK_REG_IP] = (uint64_t)(uintptr_t)unwind_jit; /* an entry */
	return kx_unwind(u, &us, ips, 8, end);
}

static void py_trampolines(void)
{
	char err[200] = "", path[64];
	struct kx_unwinder *u = kx_unwinder_new(err, sizeof(err));
	uint8_t *room = mmap(NULL, JIT_ROOM, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *jit = room + JIT_ROOM / 2;
	struct kx_unwind_stats st;
	uint64_t ips[8];
	unsigned int n;
	int end;

	CHECK(u != NULL && room != MAP_FAILED);
	if (!u || room == MAP_FAILED)
		return;
	n = unwind_py(u, jit, "kx_not_python", ips, &end);
	printf("# no-frame-pointer JIT frame not named py::: %u frames, end %d\n", n, end);
	CHECK(n == 2 && ips[1] == (uint64_t)jit + 6 && end == KX_UNWIND_JIT);
	n = unwind_py(u, jit, "py::kx_py:/t.py", ips, &end);
	printf("# CPython trampoline: %u frames, end %d\n", n, end);
	CHECK(n >= 3 && ips[1] == (uint64_t)jit + 6 && ips[2] == snap.ra[3]);
	kx_unwinder_stats(u, &st);
	CHECK_EQ_U(st.py_steps, 1);
	CHECK_EQ_U(st.jit_stops, 1);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	munmap(room, JIT_ROOM);
	kx_unwinder_free(u);
}

int main(void)
{
	RUN(unwinds_callers);
	RUN(no_process);
	RUN(jit_frames);
	RUN(py_trampolines);
	KXT_EXIT();
}
