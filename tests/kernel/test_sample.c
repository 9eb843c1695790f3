/*
 * The sampler against the real kernel (root only, else skipped). A child
 * (this binary, built with frame pointers) spends its CPU in two named
 * functions in a 3:1 ratio, then in read(2) of /dev/zero; it is sampled at
 * 999 Hz and its addresses resolved after it exited, from the snapshot
 * taken at its first sample. Checked: only the child is sampled, the ratio
 * of the two functions, stacks unwound through the callers to main, kernel
 * stacks (resolved) for samples taken in the syscall, the sample count
 * against the child's CPU time, received + dropped == emitted (also with a
 * ring buffer too small to hold them), refused frequencies, and nothing
 * left open after close. Restricted as in a daemon session: the uid rule
 * in the perf event program (a child of another uid is never sampled) and
 * samples without kernel stacks.
 */
/* kxtest: alone (the samples of a child's CPU time, counted) */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/sampler.h"
#include "kxtest.h"
#include "sample_rec.h" /* bpf/: the record layout */
#include "model/symres.h"
#include "symbol/collect.h"
#include "util/grow.h"

#define HZ 999

static volatile unsigned long sink;

/* The work unit of both named functions: the same cost per unit, tens of
 * microseconds, so that one sampling period spans many heavy+light rounds
 * (rounds as long as the period would alias with it). Their accumulator
 * lives on the stack: GCC gives a leaf function a frame only when it uses
 * the stack, and a leaf without one hides its caller from a frame-pointer
 * walk. Both start on a cache line (SAME_LAYOUT): the same instructions at
 * other offsets ran at other speeds, and the split was 2.2:1, not 3:1. */
#define UNIT_ITERS  10000
#define SAME_LAYOUT __attribute__((noinline, aligned(64)))

SAME_LAYOUT void kxt_heavy(int units)
{
	volatile unsigned long acc = 0;

	for (long i = 0; i < (long)units * UNIT_ITERS; i++)
		acc += i ^ (acc >> 3);
	sink += acc;
}

SAME_LAYOUT void kxt_light(int units)
{
	volatile unsigned long acc = 0;

	for (long i = 0; i < (long)units * UNIT_ITERS; i++)
		acc += i ^ (acc >> 3);
	sink += acc;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void kxt_spin_phase(double secs)
{
	double end = now_s() + secs;

	while (now_s() < end) {
		kxt_heavy(3);
		kxt_light(1);
	}
}

__attribute__((noinline)) void kxt_syscall_phase(double secs)
{
	static char buf[1 << 20];
	double end = now_s() + secs;
	int fd = open("/dev/zero", O_RDONLY);

	while (fd >= 0 && now_s() < end)
		if (read(fd, buf, sizeof(buf)) < 0)
			break;
	if (fd >= 0)
		close(fd);
}

/* The child: waits for the go byte, works, exits. */
__attribute__((noinline)) static void child_work(int go, double spin, double sys)
{
	char c;

	if (read(go, &c, 1) != 1)
		_exit(1);
	kxt_spin_phase(spin);
	kxt_syscall_phase(sys);
	_exit(0);
}

/* A sample as kept by the test. */
struct kept {
	uint32_t pid, exec_id;
	uint16_t flags, nk, nu;
	uint64_t ips[2 * KX_SAMPLE_MAX_DEPTH];
};

struct run {
	struct kx_symcollect *sc; /* maps read at the first sample, addresses noted */
	struct kx_symres res;
	struct kept *s;
	size_t n, cap;
	int oom;
};

static void on_sample(void *ctx, const struct kx_sample *smp)
{
	struct run *r = ctx;
	struct kept *k;

	r->oom |= kx_symcollect_sample(r->sc, smp) != 0;
	if (kx_grow((void **)&r->s, &r->cap, r->n, sizeof(*r->s))) {
		r->oom = 1;
		return;
	}
	k = &r->s[r->n++];
	k->pid = smp->pid;
	k->exec_id = smp->exec_id;
	k->flags = smp->flags;
	k->nk = smp->nk;
	k->nu = smp->nu;
	/* Kept as they will be looked up: callers one byte into their call. */
	for (uint32_t i = 0; i < smp->nk; i++)
		k->ips[i] = kx_frame_addr(smp->kips[i], i);
	for (uint32_t i = 0; i < smp->nu; i++)
		k->ips[smp->nk + i] =
		        kx_user_frame_addr(smp->uips[i], i, (smp->flags & KX_SAMPLE_F_KERNEL) != 0);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1; /* the directory's own fd */
}

/* Samples the child for spin + sys seconds; polls unless nopoll. Returns the
 * child's CPU time in seconds, or -1 with the reason printed. */
static double sample_child(struct kx_sampler *s, double spin, double sys, int nopoll,
                           pid_t *pid_out)
{
	struct rusage ru;
	char err[256];
	int go[2], status = 0;
	pid_t child, w = 0;

	if (pipe(go) != 0)
		return -1;
	child = fork();
	if (child == 0) {
		close(go[1]);
		child_work(go[0], spin, sys);
	}
	close(go[0]);
	*pid_out = child;
	if (kx_sampler_add_pid(s, (uint32_t)child, err, sizeof(err)) != 0 ||
	    kx_sampler_start(s, err, sizeof(err)) != 0) {
		printf("# %s\n", err);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return -1;
	}
	(void)!write(go[1], "g", 1);
	close(go[1]);
	while (w == 0) {
		if (nopoll)
			usleep(50 * 1000);
		else if (kx_sampler_poll(s, 50, err, sizeof(err)) < 0)
			printf("# %s\n", err);
		w = wait4(child, &status, WNOHANG, &ru);
	}
	kx_sampler_stop(s);
	if (w != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static const char *fn_of(const struct run *r, uint32_t pid, uint32_t gen, uint64_t addr)
{
	const struct kx_symres_entry *e = kx_symres_find(&r->res, pid, gen, addr);

	return e ? kx_symres_str(&r->res, e->func) : "(not resolved)";
}

/* Whether the user stack of k holds function fn (leaf or a caller). */
static int has_user_fn(const struct run *r, const struct kept *k, const char *fn)
{
	for (int i = 0; i < k->nu; i++)
		if (strcmp(fn_of(r, k->pid, k->exec_id, k->ips[k->nk + i]), fn) == 0)
			return 1;
	return 0;
}

static int has_kernel_fn_part(const struct run *r, const struct kept *k, const char *part)
{
	for (int i = 0; i < k->nk; i++)
		if (strstr(fn_of(r, KX_SYMRES_KERNEL, 0, k->ips[i]), part))
			return 1;
	return 0;
}

static void print_stack(const struct run *r, const struct kept *k)
{
	printf("# stack:");
	for (int i = 0; i < k->nk; i++)
		printf(" k:%s", fn_of(r, KX_SYMRES_KERNEL, 0, k->ips[i]));
	for (int i = 0; i < k->nu; i++)
		printf(" %s", fn_of(r, k->pid, k->exec_id, k->ips[k->nk + i]));
	printf("\n");
}

static struct run run;
static struct kx_sample_counts cnt;
static pid_t child_pid;
static double child_cpu;

/* One capture for the checks below. */
static void test_capture(void)
{
	struct kx_sampler_opts o = {.freq_hz = HZ, .fn = on_sample, .ctx = &run};
	struct kx_sampler *s;
	char err[256];
	int fds = count_fds();

	if (geteuid() != 0)
		SKIP("needs root (loads BPF and opens perf events)");
	run.sc = kx_symcollect_new(&run.res, NULL, NULL, NULL, err, sizeof(err));
	CHECK(run.sc);
	s = kx_sampler_open(&o, err, sizeof(err));
	if (!s)
		printf("# %s\n", err);
	CHECK(s);
	child_cpu = sample_child(s, 1.5, 0.4, 0, &child_pid);
	kx_sampler_counts(s, &cnt);
	kx_sampler_close(s);
	CHECK_EQ_U(count_fds(), fds); /* perf events, links, maps, ring buffer: all closed */
	CHECK(child_cpu > 0);
	CHECK(!run.oom);
	CHECK(kx_symcollect_resolve(run.sc) == 0); /* the child is gone by now */
	printf("# %zu samples, %.2f s of child CPU; emitted %llu dropped %llu received %llu, "
	       "%u CPUs (%u offline); no user stack %llu, no kernel stack %llu, cut %llu/%llu\n",
	       run.n, child_cpu, (unsigned long long)cnt.emitted, (unsigned long long)cnt.dropped,
	       (unsigned long long)cnt.received, cnt.cpus, cnt.cpus_offline,
	       (unsigned long long)cnt.no_ustack, (unsigned long long)cnt.no_kstack,
	       (unsigned long long)cnt.ustack_full, (unsigned long long)cnt.kstack_full);
	CHECK(run.n > 300);
}

static void test_loss_accounting(void)
{
	if (!run.n)
		SKIP("no capture");
	CHECK_EQ_U(cnt.received, run.n);
	CHECK_EQ_U(cnt.malformed, 0);
	CHECK_EQ_U(cnt.received + cnt.dropped, cnt.emitted);
}

static void test_only_the_child(void)
{
	if (!run.n)
		SKIP("no capture");
	for (size_t i = 0; i < run.n; i++)
		CHECK_EQ_U(run.s[i].pid, (uint64_t)child_pid);
}

/* About HZ samples per second of the child's CPU time. */
static void test_frequency(void)
{
	double want = child_cpu * HZ;

	if (!run.n)
		SKIP("no capture");
	printf("# %llu samples for %.0f expected\n", (unsigned long long)cnt.emitted, want);
	CHECK(cnt.emitted > 0.7 * want && cnt.emitted < 1.3 * want);
}

static void test_ratio(void)
{
	size_t heavy = 0, light = 0, n;

	if (!run.n)
		SKIP("no capture");
	for (size_t i = 0; i < run.n; i++) {
		heavy += has_user_fn(&run, &run.s[i], "kxt_heavy");
		light += has_user_fn(&run, &run.s[i], "kxt_light");
	}
	n = heavy + light;
	printf("# kxt_heavy %zu, kxt_light %zu samples (want 3:1)\n", heavy, light);
	CHECK(n >= 400);
	/* The share of kxt_heavy within 4 standard deviations of a binomial 3/4,
	 * or within 0.06 of it: in a virtual machine cpu-clock samples land a
	 * few per cent off the time split (tests/integration/test_sample.sh). */
	{
		double d = (double)heavy / n - 0.75;

		CHECK(d * d <= 16 * 0.75 * 0.25 / n || (d < 0.06 && d > -0.06));
	}
}

/* Samples in the named functions unwind through their callers to main. */
static void test_unwind_to_main(void)
{
	size_t in_fn = 0, full = 0;

	if (!run.n)
		SKIP("no capture");
	for (size_t i = 0; i < run.n; i++) {
		const struct kept *k = &run.s[i];

		if (!has_user_fn(&run, k, "kxt_heavy") && !has_user_fn(&run, k, "kxt_light"))
			continue;
		in_fn++;
		if (has_user_fn(&run, k, "kxt_spin_phase") && has_user_fn(&run, k, "child_work") &&
		    has_user_fn(&run, k, "main"))
			full++;
		else if (in_fn - full <= 3)
			print_stack(&run, k);
	}
	printf("# %zu of %zu samples unwound to main\n", full, in_fn);
	CHECK(in_fn > 0 && full >= 0.95 * in_fn);
}

/* Samples taken inside read(2) carry the kernel's stack, resolved by kallsyms. */
static void test_kernel_stacks(void)
{
	size_t kmode = 0, with_stack = 0, in_read = 0, kframes = 0, kknown = 0;

	if (!run.n)
		SKIP("no capture");
	for (size_t i = 0; i < run.n; i++) {
		const struct kept *k = &run.s[i];

		if (!(k->flags & KX_SAMPLE_F_KERNEL))
			continue;
		kmode++;
		with_stack += k->nk > 0;
		if (has_kernel_fn_part(&run, k, "read") && in_read++ == 0)
			print_stack(&run, k);
		for (int j = 0; j < k->nk; j++) {
			const struct kx_symres_entry *e =
			        kx_symres_find(&run.res, KX_SYMRES_KERNEL, 0, k->ips[j]);

			kframes++;
			kknown += e && e->known;
		}
	}
	printf("# %zu kernel-mode samples, %zu with a kernel stack, %zu in a read path; "
	       "%zu of %zu kernel frames resolved\n",
	       kmode, with_stack, in_read, kknown, kframes);
	CHECK(kmode >= 20);
	CHECK(with_stack == kmode);
	CHECK(in_read >= 10);
	CHECK(kknown >= 0.95 * kframes);
}

/* A ring buffer far too small, never read while sampling: the losses are counted exactly. */
static void test_overflow_counted(void)
{
	struct kx_sampler_opts o = {.freq_hz = HZ, .ringbuf_bytes = 4096};
	struct kx_sample_counts c;
	struct kx_sampler *s;
	char err[256];
	pid_t pid;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF and opens perf events)");
	s = kx_sampler_open(&o, err, sizeof(err));
	CHECK(s);
	CHECK(sample_child(s, 0.5, 0, 1, &pid) > 0);
	kx_sampler_counts(s, &c);
	kx_sampler_close(s);
	printf("# emitted %llu dropped %llu received %llu\n", (unsigned long long)c.emitted,
	       (unsigned long long)c.dropped, (unsigned long long)c.received);
	CHECK(c.dropped > 0);
	CHECK(c.received > 0);
	CHECK_EQ_U(c.received + c.dropped, c.emitted);
}

static void test_bad_frequency(void)
{
	struct kx_sampler_opts o = {.freq_hz = 0};
	struct kx_sampler *s;
	char err[256] = "";

	CHECK(kx_sampler_open(&o, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "at least 1 Hz") != NULL);
	if (geteuid() != 0)
		SKIP("needs root for the kernel's limit");
	o.freq_hz = 100 * 1000 * 1000;
	s = kx_sampler_open(&o, err, sizeof(err));
	CHECK(s);
	CHECK(kx_sampler_start(s, err, sizeof(err)) != 0);
	kx_sampler_close(s);
	CHECK(strstr(err, "perf_event_max_sample_rate") != NULL);
}

/* What a restricted sampler kept of one child. */
struct tally {
	size_t n, kmode, with_kstack, with_ustack;
};

static void on_tally(void *ctx, const struct kx_sample *smp)
{
	struct tally *t = ctx;

	t->n++;
	t->kmode += (smp->flags & KX_SAMPLE_F_KERNEL) != 0;
	t->with_kstack += smp->nk > 0;
	t->with_ustack += smp->nu > 0;
}

/* Samples a child (root, like this test) for spin + sys seconds under o. */
static int tally_child(struct kx_sampler_opts *o, double spin, double sys, struct tally *t,
                       struct kx_sample_counts *c)
{
	struct kx_sampler *s;
	char err[256];
	pid_t pid;
	int rc;

	memset(t, 0, sizeof(*t));
	o->freq_hz = HZ;
	o->fn = on_tally;
	o->ctx = t;
	s = kx_sampler_open(o, err, sizeof(err));
	if (!s) {
		printf("# %s\n", err);
		return -1;
	}
	rc = sample_child(s, spin, sys, 0, &pid) > 0 ? 0 : -1;
	kx_sampler_counts(s, c);
	kx_sampler_close(s);
	return rc;
}

/* The uid rule of a daemon session, in the perf event program: a child of
 * another uid than the session's is never sampled; of the same uid, it is. */
static void test_uid_rule(void)
{
	struct kx_sampler_opts o = {.uid_only = 1, .uid = 65534};
	struct kx_sample_counts c;
	struct tally t;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF and opens perf events)");
	CHECK(tally_child(&o, 0.4, 0, &t, &c) == 0);
	printf("# uid 65534 only: %zu samples of a root child (emitted %llu)\n", t.n,
	       (unsigned long long)c.emitted);
	CHECK_EQ_U(t.n, 0);
	CHECK_EQ_U(c.emitted, 0);
	o = (struct kx_sampler_opts){.uid_only = 1, .uid = 0};
	CHECK(tally_child(&o, 0.4, 0, &t, &c) == 0);
	printf("# uid 0 only: %zu samples of a root child\n", t.n);
	CHECK(t.n > 50);
	CHECK_EQ_U(t.n + c.dropped, c.emitted);
}

/* Without kernel stacks (a session not given kernel-mode profiling), samples
 * in the kernel keep their user stack and kernel-mode flag, and no kernel
 * frame is read (nor counted missing); a sample without user frames is
 * counted as such. */
static void test_no_kernel_stacks(void)
{
	struct kx_sampler_opts o = {.no_kstacks = 1};
	struct kx_sample_counts c;
	struct tally t;

	if (geteuid() != 0)
		SKIP("needs root (loads BPF and opens perf events)");
	CHECK(tally_child(&o, 0, 0.4, &t, &c) == 0);
	printf("# %zu samples, %zu in kernel mode, %zu with kernel frames, %zu with user "
	       "frames; no kernel stack counted %llu, no user stack %llu\n",
	       t.n, t.kmode, t.with_kstack, t.with_ustack, (unsigned long long)c.no_kstack,
	       (unsigned long long)c.no_ustack);
	CHECK(t.kmode >= 20);
	CHECK_EQ_U(t.with_kstack, 0);
	CHECK_EQ_U(c.no_kstack, 0);
	/* Nearly all keep their user frames; those that read none are counted
	 * (dropped records count there too, never in the tally). */
	CHECK(t.with_ustack >= 0.9 * t.n);
	CHECK(t.n - t.with_ustack <= c.no_ustack);
}

int main(void)
{
	RUN(test_capture);
	RUN(test_loss_accounting);
	RUN(test_only_the_child);
	RUN(test_frequency);
	RUN(test_ratio);
	RUN(test_unwind_to_main);
	RUN(test_kernel_stacks);
	RUN(test_overflow_counted);
	RUN(test_bad_frequency);
	RUN(test_uid_rule);
	RUN(test_no_kernel_stacks);
	kx_symres_free(&run.res);
	kx_symcollect_free(run.sc);
	free(run.s);
	KXT_EXIT();
}
