/*
 * kvm_workload: a known, countable "accelerator" workload for kxprof tests.
 *
 * The real kvm driver stands in for an accelerator: each KVM_RUN is one
 * submit-and-wait "job". A VM gets one memory region holding 16-bit real-mode
 * guest code that spins LOOPS iterations (optionally then sleeps on the
 * in-kernel LAPIC timer) and does `out 0x10, al`, which ends the KVM_RUN with
 * KVM_EXIT_IO. Every ioctl issued on /dev/kvm, the VM fd and the vCPU fds is
 * counted by name and printed as one JSON object on stdout.
 *
 * Options: -t THREADS (vCPUs, one thread each), -j JOBS (KVM_RUNs per vCPU),
 * -l LOOPS (guest busy-loop iterations per job), -s (sleep mode: the guest
 * halts on a one-shot LAPIC timer of -u USEC per job), -g N (extra
 * KVM_GET_API_VERSION calls from the main thread), -f (fork a child that runs
 * the same workload with one vCPU), -T SECONDS (watchdog).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <linux/kvm.h>

#include "workload.h"

#define MAX_VCPUS 128

/* Guest physical layout (one region, real mode, all segments based at 0). */
#define MEM_BASE      0x1000u
#define MEM_SIZE      0x10000u
#define IVT_ADDR      0x1000u /* IDT base for real mode; vector v at +4*v */
#define TIMER_VECTOR  0x20u
#define SPUR_VECTOR   0xffu
#define TIMER_HANDLER 0x1800u
#define SPUR_HANDLER  0x1820u
#define CODE_ADDR     0x2000u
#define STACK_TOP     0xf000u /* vCPU i uses STACK_TOP - i * STACK_SIZE */
#define STACK_SIZE    0x80u
#define EXIT_PORT     0x10u
#define LAPIC_BASE    0xfee00000u

/* xAPIC register offsets used by sleep mode. */
#define APIC_EOI   0x0b0u
#define APIC_SVR   0x0f0u
#define APIC_LVTT  0x320u
#define APIC_TMICT 0x380u
#define APIC_TDCR  0x3e0u

struct opts {
	unsigned int threads;
	unsigned long jobs;
	uint32_t loops;
	int sleep;
	uint32_t sleep_us;
	unsigned long api_calls;
	int fork;
	unsigned int timeout;
};

struct vm {
	const struct opts *o;
	int kvm_fd;
	int vm_fd;
	size_t run_size;
	uint8_t *mem;
};

struct vcpu {
	pthread_t th;
	struct vm *vm;
	unsigned int id;
	pid_t tid;
	struct wl_stats run_ns;
	struct wl_counts counts;
};

struct result {
	pid_t pid;
	unsigned int nvcpus;
	struct vcpu *vcpus;
	struct wl_counts main_counts;
	struct wl_counts total;
	struct wl_stats run_ns;
	uint64_t elapsed_ns;
};

static const char *exit_reason_name(uint32_t r)
{
	switch (r) {
	case KVM_EXIT_UNKNOWN:
		return "KVM_EXIT_UNKNOWN";
	case KVM_EXIT_EXCEPTION:
		return "KVM_EXIT_EXCEPTION";
	case KVM_EXIT_IO:
		return "KVM_EXIT_IO";
	case KVM_EXIT_HLT:
		return "KVM_EXIT_HLT";
	case KVM_EXIT_MMIO:
		return "KVM_EXIT_MMIO";
	case KVM_EXIT_SHUTDOWN:
		return "KVM_EXIT_SHUTDOWN";
	case KVM_EXIT_FAIL_ENTRY:
		return "KVM_EXIT_FAIL_ENTRY";
	case KVM_EXIT_INTR:
		return "KVM_EXIT_INTR";
	case KVM_EXIT_INTERNAL_ERROR:
		return "KVM_EXIT_INTERNAL_ERROR";
	default:
		return "other";
	}
}

/* ---- guest code ------------------------------------------------------- */

struct code {
	uint8_t *p;
	size_t n, cap;
};

static void emit(struct code *c, const uint8_t *b, size_t len)
{
	if (c->n + len > c->cap)
		wl_die("internal: guest code too large");
	memcpy(c->p + c->n, b, len);
	c->n += len;
}

#define EMIT(c, ...)                                                                               \
	do {                                                                                       \
		const uint8_t b_[] = {__VA_ARGS__};                                                \
		emit((c), b_, sizeof(b_));                                                         \
	} while (0)

/* mov dword fs:[off], imm32 (real mode, operand-size prefix). */
static void emit_fs_store32(struct code *c, uint16_t off, uint32_t v)
{
	EMIT(c, 0x64, 0x66, 0xc7, 0x06, off & 0xff, off >> 8, v & 0xff, (v >> 8) & 0xff,
	     (v >> 16) & 0xff, v >> 24);
}

static uint8_t *gpa(struct vm *vm, uint32_t addr)
{
	return vm->mem + (addr - MEM_BASE);
}

/*
 * Writes the guest program. Register contract (set once by KVM_SET_REGS):
 * ebx = loop iterations per job, edx = LAPIC timer count (ns) in sleep mode.
 *
 *   [sleep: enable LAPIC (SVR), divide by 1 (TDCR), one-shot vector 0x20 (LVTT)]
 *   top: [sleep: cli]
 *        mov ecx, ebx ; test ecx, ecx ; jz done
 *   l:   dec ecx ; jnz l
 *   done:[sleep: mov fs:[TMICT], edx ; sti ; hlt ; cli]
 *        out 0x10, al        -> KVM_EXIT_IO, the KVM_RUN returns
 *        jmp top
 */
static void write_guest(struct vm *vm)
{
	struct code c = {.p = gpa(vm, CODE_ADDR),
	                 .cap = STACK_TOP - STACK_SIZE * MAX_VCPUS - CODE_ADDR};
	size_t top;
	int rel;

	if (vm->o->sleep) {
		struct code h = {.p = gpa(vm, TIMER_HANDLER), .cap = SPUR_HANDLER - TIMER_HANDLER};
		struct code s = {.p = gpa(vm, SPUR_HANDLER), .cap = 16};
		uint8_t *ivt = gpa(vm, IVT_ADDR);

		/* Timer handler: EOI, iret. Spurious handler: iret. */
		emit_fs_store32(&h, APIC_EOI, 0);
		EMIT(&h, 0xcf);
		EMIT(&s, 0xcf);
		/* Real-mode IVT entries: offset (16 bit), segment (16 bit, 0). */
		ivt[TIMER_VECTOR * 4] = TIMER_HANDLER & 0xff;
		ivt[TIMER_VECTOR * 4 + 1] = TIMER_HANDLER >> 8;
		ivt[SPUR_VECTOR * 4] = SPUR_HANDLER & 0xff;
		ivt[SPUR_VECTOR * 4 + 1] = SPUR_HANDLER >> 8;

		emit_fs_store32(&c, APIC_SVR, 0x100 | SPUR_VECTOR);
		emit_fs_store32(&c, APIC_TDCR, 0xb);
		emit_fs_store32(&c, APIC_LVTT, TIMER_VECTOR);
	}
	top = c.n;
	if (vm->o->sleep)
		EMIT(&c, 0xfa);
	EMIT(&c, 0x66, 0x89, 0xd9); /* mov ecx, ebx */
	EMIT(&c, 0x66, 0x85, 0xc9); /* test ecx, ecx */
	EMIT(&c, 0x74, 0x04);       /* jz done */
	EMIT(&c, 0x66, 0x49);       /* l: dec ecx */
	EMIT(&c, 0x75, 0xfc);       /* jnz l */
	if (vm->o->sleep) {
		EMIT(&c, 0x64, 0x66, 0x89, 0x16, APIC_TMICT & 0xff, APIC_TMICT >> 8);
		EMIT(&c, 0xfb, 0xf4, 0xfa); /* sti ; hlt ; cli */
	}
	EMIT(&c, 0xe6, EXIT_PORT); /* out 0x10, al */
	rel = (int)top - (int)(c.n + 2);
	EMIT(&c, 0xeb, (uint8_t)(int8_t)rel); /* jmp top */
}

/* ---- vCPU threads ----------------------------------------------------- */

static void set_seg(struct kvm_segment *s, uint64_t base)
{
	s->base = base;
	s->selector = 0;
	s->limit = 0xffff;
}

static void *vcpu_main(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	const struct opts *o = vm->o;
	struct wl_counts *wc = &v->counts;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	unsigned long j;
	int fd;

	v->tid = gettid();
	fd = wl_ioctl(wc, "KVM_CREATE_VCPU", vm->vm_fd, KVM_CREATE_VCPU, v->id);
	if (fd < 0)
		wl_die("KVM_CREATE_VCPU %u failed: %s", v->id, strerror(errno));
	run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (run == MAP_FAILED)
		wl_die("mmap of kvm_run for vcpu %u failed: %s", v->id, strerror(errno));

	wl_ioctl_ok(wc, "KVM_GET_SREGS", fd, KVM_GET_SREGS, (unsigned long)&sregs);
	set_seg(&sregs.cs, 0);
	set_seg(&sregs.ds, 0);
	set_seg(&sregs.es, 0);
	set_seg(&sregs.ss, 0);
	set_seg(&sregs.gs, 0);
	set_seg(&sregs.fs, o->sleep ? LAPIC_BASE : 0);
	sregs.idt.base = IVT_ADDR;
	sregs.idt.limit = 0x3ff;
	wl_ioctl_ok(wc, "KVM_SET_SREGS", fd, KVM_SET_SREGS, (unsigned long)&sregs);

	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_ADDR;
	regs.rflags = 0x2;
	regs.rsp = STACK_TOP - v->id * STACK_SIZE;
	regs.rbx = o->loops;
	regs.rdx = (uint64_t)o->sleep_us * 1000;
	wl_ioctl_ok(wc, "KVM_SET_REGS", fd, KVM_SET_REGS, (unsigned long)&regs);

	if (o->sleep) {
		/* With an in-kernel irqchip, APs start waiting for INIT/SIPI. */
		struct kvm_mp_state mp = {.mp_state = KVM_MP_STATE_RUNNABLE};

		wl_ioctl_ok(wc, "KVM_SET_MP_STATE", fd, KVM_SET_MP_STATE, (unsigned long)&mp);
	}

	for (j = 0; j < o->jobs; j++) {
		uint64_t t0 = wl_now_ns();
		long r = wl_ioctl(wc, "KVM_RUN", fd, KVM_RUN, 0);

		wl_stats_add(&v->run_ns, wl_now_ns() - t0);
		if (r < 0)
			wl_die("KVM_RUN on vcpu %u (job %lu) failed: %s", v->id, j,
			       strerror(errno));
		if (run->exit_reason != KVM_EXIT_IO)
			wl_die("vcpu %u job %lu: unexpected exit %s (%u), hw/suberror 0x%llx",
			       v->id, j, exit_reason_name(run->exit_reason), run->exit_reason,
			       run->exit_reason == KVM_EXIT_FAIL_ENTRY
			               ? (unsigned long long)
			                         run->fail_entry.hardware_entry_failure_reason
			               : (unsigned long long)run->internal.suberror);
		if (run->io.direction != KVM_EXIT_IO_OUT || run->io.port != EXIT_PORT ||
		    run->io.size != 1 || run->io.count != 1)
			wl_die("vcpu %u job %lu: unexpected I/O exit (dir %u port 0x%x size %u "
			       "count %u)",
			       v->id, j, run->io.direction, run->io.port, run->io.size,
			       run->io.count);
	}
	munmap(run, vm->run_size);
	close(fd);
	return NULL;
}

/* ---- the workload ----------------------------------------------------- */

static void run_workload(const struct opts *o, struct result *res)
{
	struct wl_counts *wc = &res->main_counts;
	struct vm vm = {.o = o};
	struct kvm_userspace_memory_region region;
	uint64_t t0 = wl_now_ns();
	unsigned long i;
	long r;

	res->pid = getpid();
	res->nvcpus = o->threads;

	vm.kvm_fd = wl_open_kvm();
	r = wl_ioctl_ok(wc, "KVM_GET_API_VERSION", vm.kvm_fd, KVM_GET_API_VERSION, 0);
	if (r != KVM_API_VERSION)
		wl_die("KVM_GET_API_VERSION returned %ld, expected %d", r, KVM_API_VERSION);
	vm.vm_fd = wl_ioctl_ok(wc, "KVM_CREATE_VM", vm.kvm_fd, KVM_CREATE_VM, 0);
	if (wl_ioctl_ok(wc, "KVM_CHECK_EXTENSION", vm.kvm_fd, KVM_CHECK_EXTENSION,
	                KVM_CAP_USER_MEMORY) <= 0)
		wl_die("kvm lacks KVM_CAP_USER_MEMORY");
	r = wl_ioctl_ok(wc, "KVM_CHECK_EXTENSION", vm.vm_fd, KVM_CHECK_EXTENSION,
	                KVM_CAP_MAX_VCPUS);
	if (r > 0 && o->threads > r)
		wl_die("%u vCPUs requested but kvm allows at most %ld", o->threads, r);
	r = wl_ioctl_ok(wc, "KVM_GET_VCPU_MMAP_SIZE", vm.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (r < (long)sizeof(struct kvm_run))
		wl_die("KVM_GET_VCPU_MMAP_SIZE returned %ld", r);
	vm.run_size = r;

	vm.mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm.mem == MAP_FAILED)
		wl_die("mmap of guest memory failed: %s", strerror(errno));
	write_guest(&vm);
	region = (struct kvm_userspace_memory_region){
	        .slot = 0,
	        .guest_phys_addr = MEM_BASE,
	        .memory_size = MEM_SIZE,
	        .userspace_addr = (uint64_t)(uintptr_t)vm.mem,
	};
	wl_ioctl_ok(wc, "KVM_SET_USER_MEMORY_REGION", vm.vm_fd, KVM_SET_USER_MEMORY_REGION,
	            (unsigned long)&region);

	if (o->sleep) {
		if (wl_ioctl_ok(wc, "KVM_CHECK_EXTENSION", vm.vm_fd, KVM_CHECK_EXTENSION,
		                KVM_CAP_IRQCHIP) <= 0)
			wl_die("sleep mode needs KVM_CAP_IRQCHIP");
		wl_ioctl_ok(wc, "KVM_CREATE_IRQCHIP", vm.vm_fd, KVM_CREATE_IRQCHIP, 0);
		/* Halt polling would spin on-CPU: switch it off when kvm lets us. */
		if (wl_ioctl_ok(wc, "KVM_CHECK_EXTENSION", vm.vm_fd, KVM_CHECK_EXTENSION,
		                KVM_CAP_HALT_POLL) > 0) {
			struct kvm_enable_cap cap = {.cap = KVM_CAP_HALT_POLL};

			wl_ioctl_ok(wc, "KVM_ENABLE_CAP", vm.vm_fd, KVM_ENABLE_CAP,
			            (unsigned long)&cap);
		}
	}

	res->vcpus = calloc(o->threads, sizeof(*res->vcpus));
	if (!res->vcpus)
		wl_die("out of memory");
	for (i = 0; i < o->threads; i++) {
		res->vcpus[i].vm = &vm;
		res->vcpus[i].id = i;
		errno = pthread_create(&res->vcpus[i].th, NULL, vcpu_main, &res->vcpus[i]);
		if (errno)
			wl_die("pthread_create failed: %s", strerror(errno));
	}
	for (i = 0; i < o->api_calls; i++)
		wl_ioctl_ok(wc, "KVM_GET_API_VERSION", vm.kvm_fd, KVM_GET_API_VERSION, 0);
	for (i = 0; i < o->threads; i++) {
		errno = pthread_join(res->vcpus[i].th, NULL);
		if (errno)
			wl_die("pthread_join failed: %s", strerror(errno));
	}
	res->elapsed_ns = wl_now_ns() - t0;

	wl_counts_merge(&res->total, wc);
	for (i = 0; i < o->threads; i++) {
		wl_counts_merge(&res->total, &res->vcpus[i].counts);
		wl_stats_merge(&res->run_ns, &res->vcpus[i].run_ns);
	}
	munmap(vm.mem, MEM_SIZE);
	close(vm.vm_fd);
	close(vm.kvm_fd);
}

static void print_result(FILE *f, const struct opts *o, const struct result *res,
                         const char *children)
{
	unsigned int i;

	fprintf(f, "{\"workload\":\"kvm_workload\",\"pid\":%d,\"tids\":[", (int)res->pid);
	for (i = 0; i < res->nvcpus; i++)
		fprintf(f, "%s%d", i ? "," : "", (int)res->vcpus[i].tid);
	fprintf(f, "],\"vcpus\":%u,\"jobs\":%lu,\"loops\":%u,\"sleep_us\":%u,\"api_calls\":%lu,",
	        o->threads, o->jobs, o->loops, o->sleep ? o->sleep_us : 0, o->api_calls);
	wl_print_counts(f, &res->total);
	fprintf(f, ",\"main_thread\":{\"tid\":%d,", (int)res->pid);
	wl_print_counts(f, &res->main_counts);
	fputs("},\"threads\":[", f);
	for (i = 0; i < res->nvcpus; i++) {
		fprintf(f, "%s{\"tid\":%d,\"vcpu\":%u,", i ? "," : "", (int)res->vcpus[i].tid, i);
		wl_print_counts(f, &res->vcpus[i].counts);
		fputc(',', f);
		wl_print_stats(f, "kvm_run_ns", &res->vcpus[i].run_ns);
		fputc('}', f);
	}
	fputs("],", f);
	wl_print_stats(f, "kvm_run_ns", &res->run_ns);
	fputc(',', f);
	wl_print_stats(f, "job_ns", &res->run_ns); /* the same, by its generic name */
	fprintf(f, ",\"elapsed_ns\":%llu,\"children\":[%s]}\n", (unsigned long long)res->elapsed_ns,
	        children ? children : "");
}

/* ---- fork mode -------------------------------------------------------- */

static void watchdog(int sig)
{
	static const char msg[] = "kvm_workload: timed out (watchdog -T)\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(2);
}

static void arm_watchdog(unsigned int seconds)
{
	struct sigaction sa = {.sa_handler = watchdog};

	if (!seconds)
		return;
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

/* Runs in the forked child: one vCPU, same jobs/loops/sleep, JSON to the pipe. */
static void child_main(const struct opts *parent, int wfd)
{
	struct opts o = *parent;
	struct result *res;
	FILE *f;

	wl_prog = "kvm_workload (child)";
	o.threads = 1;
	o.api_calls = 0;
	o.fork = 0;
	arm_watchdog(o.timeout);
	res = calloc(1, sizeof(*res));
	if (!res)
		wl_die("out of memory");
	run_workload(&o, res);
	f = fdopen(wfd, "w");
	if (!f)
		wl_die("fdopen: %s", strerror(errno));
	print_result(f, &o, res, NULL);
	if (fclose(f))
		wl_die("writing to the parent failed: %s", strerror(errno));
	free(res->vcpus);
	free(res);
	exit(0);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: kvm_workload [-t THREADS] [-j JOBS] [-l LOOPS] [-s] [-u USEC] [-g N] [-f] "
	        "[-T SECONDS]\n"
	        "  -t  vCPUs, one thread each (default 2)\n"
	        "  -j  KVM_RUN calls (jobs) per vCPU (default 100)\n"
	        "  -l  guest busy-loop iterations per job (default 1000, 0 = shortest)\n"
	        "  -s  sleep mode: each job also halts on the LAPIC timer for -u USEC\n"
	        "  -u  sleep per job in microseconds for -s (default 1000)\n"
	        "  -g  extra KVM_GET_API_VERSION calls from the main thread (default 0)\n"
	        "  -f  fork a child running the same workload with one vCPU\n"
	        "  -T  watchdog: fail after SECONDS (default 60, 0 = off)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.threads = 2, .jobs = 100, .loops = 1000, .sleep_us = 1000, .timeout = 60};
	struct result *res;
	char *children = NULL;
	pid_t child = -1;
	int rfd = -1, wfd = -1, c;

	wl_prog = "kvm_workload";
	while ((c = getopt(argc, argv, "t:j:l:su:g:fT:h")) != -1) {
		switch (c) {
		case 't':
			o.threads = wl_parse_num("-t", optarg, 1, MAX_VCPUS);
			break;
		case 'j':
			o.jobs = wl_parse_num("-j", optarg, 0, ULONG_MAX);
			break;
		case 'l':
			o.loops = wl_parse_num("-l", optarg, 0, UINT32_MAX);
			break;
		case 's':
			o.sleep = 1;
			break;
		case 'u':
			o.sleep_us = wl_parse_num("-u", optarg, 1, 4000000);
			break;
		case 'g':
			o.api_calls = wl_parse_num("-g", optarg, 0, ULONG_MAX);
			break;
		case 'f':
			o.fork = 1;
			break;
		case 'T':
			o.timeout = wl_parse_num("-T", optarg, 0, 86400);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	/* Fork before any fd or thread exists, so the child starts clean. */
	if (o.fork && (child = wl_fork_child(&rfd, &wfd)) == 0)
		child_main(&o, wfd);
	arm_watchdog(o.timeout);

	res = calloc(1, sizeof(*res));
	if (!res)
		wl_die("out of memory");
	run_workload(&o, res);
	if (o.fork)
		children = wl_collect_child(child, rfd);
	print_result(stdout, &o, res, children);
	if (fflush(stdout))
		wl_die("writing stdout failed: %s", strerror(errno));
	free(children);
	free(res->vcpus);
	free(res);
	return 0;
}
