/*
 * Kernel addresses kept from unprivileged users (symbol/kmask.h): stand-ins
 * are distinct per frame address, outside every real address, and keep the
 * caller-frame adjustment (kx_frame_addr) consistent, a frame that got none
 * is unknown, never its real address. End to end through the record sink
 * of a daemon session (capture/sinks.h for_user): the same samples
 * written with and without hiding read back with the same names for every
 * frame, and the hidden record holds no real kernel address in its stacks
 * or its symbols; job records keyed by a kernel pointer (old
 * gpu_scheduler tracepoints) carry stand-ins that still pair the phases
 * of one job. Real kernel addresses come from /proc/kallsyms when it
 * shows them (root), else stand-in numbers (then both read [unknown]).
 */
#include <unistd.h>

#include "kxtest.h"
#include "capture/sinks.h"
#include "model/event.h"
#include "model/perfdata.h"
#include "model/store.h"
#include "symbol/kmask.h"
#include "symbol/symbolizer.h"

static int is_stand_in(uint64_t a)
{
	return a > KX_KMASK_BASE && a < 0xffff800000000000ull;
}

static void stand_ins(void)
{
	static const uint64_t ips[] = {0xffffffff81234567ull, 0xffffffff81234568ull,
	                               0xffffffff81234567ull, 0, 0xffffffffc0001000ull};
	uint64_t out[5], again[5];
	struct kx_kmask m = {0};

	CHECK(kx_kmask_frames(&m, ips, 5, out) == 0);
	/* Leaf 0x..567 and caller 0x..568 (looked up as 0x..567) are one frame. */
	CHECK(kx_frame_addr(out[0], 0) == kx_frame_addr(out[1], 1));
	/* The same ip as a caller is another frame address (0x..566). */
	CHECK(kx_frame_addr(out[2], 2) != kx_frame_addr(out[0], 0));
	CHECK(out[3] == 0);
	for (int i = 0; i < 5; i++) {
		if (i == 3)
			continue;
		CHECK(is_stand_in(out[i]));
		CHECK(kx_kmask_addr(&m, kx_frame_addr(ips[i], (unsigned)i)) ==
		      kx_frame_addr(out[i], (unsigned)i));
	}
	CHECK_EQ_U(m.n, 3);
	/* The same frames again: the same stand-ins, none new. */
	CHECK(kx_kmask_frames(&m, ips, 5, again) == 0);
	CHECK(memcmp(out, again, sizeof(out)) == 0);
	CHECK_EQ_U(m.n, 3);
	CHECK(kx_kmask_addr(&m, 0xffffffff81000000ull) == 0);
	kx_kmask_free(&m);
	CHECK(kx_kmask_addr(&m, kx_frame_addr(ips[0], 0)) == 0);
}

/* A few kernel text addresses, one byte into functions; 0 when hidden. */
static int kernel_addrs(uint64_t *out, int max)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];
	int n = 0;

	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 &&
		    (type == 'T' || type == 't') && a && !strchr(line, '[') &&
		    (!strcmp(name, "schedule") || !strcmp(name, "do_syscall_64") ||
		     !strcmp(name, "vfs_read") || !strcmp(name, "__x64_sys_ioctl")))
			out[n++] = a + 5;
	}
	if (f)
		fclose(f);
	for (int i = n; i < max; i++)
		out[i] = 0xffffffff81000100ull + 0x40 * (uint64_t)i;
	return n;
}

struct mem {
	uint8_t *p;
	size_t n, cap;
};

static int mem_write(void *ctx, const void *p, size_t n)
{
	struct mem *m = ctx;

	if (m->n + n > m->cap) {
		size_t cap = (m->n + n) * 2;
		uint8_t *q = realloc(m->p, cap);

		if (!q)
			return -1;
		m->p = q;
		m->cap = cap;
	}
	memcpy(m->p + m->n, p, n);
	m->n += n;
	return 0;
}

/* Writes nsamples samples of kips (each a different rotation) through a
 * record sink into m, hiding kernel addresses or not. 0, or -1. */
static int record(int hide, const uint64_t *kips, uint32_t nk, struct mem *m)
{
	struct kx_kxp_stream out = {.write = mem_write, .ctx = m};
	struct kx_kxp_sink ks = {.stream = &out, .for_user = hide};
	struct kx_sink sk = kx_sink_kxp(&ks);
	static struct kx_capinfo ci;
	uint64_t uips[1] = {(uint64_t)(uintptr_t)&record + 4}, rot[8];
	char err[256];

	memset(&ci, 0, sizeof(ci));
	ci.samples.hz = 99;
	if (sk.begin(sk.ctx, &ci, err, sizeof(err))) {
		printf("  %s\n", err);
		return -1;
	}
	for (uint32_t r = 0; r < nk; r++) {
		struct kx_sample s = {.ts_ns = 1000 + r,
		                      .pid = (uint32_t)getpid(),
		                      .tid = (uint32_t)getpid(),
		                      .flags = KX_SAMPLE_F_KERNEL,
		                      .kind = KX_SAMPLE_CPU,
		                      .kips = rot,
		                      .nk = nk,
		                      .uips = uips,
		                      .nu = 1};

		for (uint32_t i = 0; i < nk; i++)
			rot[i] = kips[(i + r) % nk];
		snprintf(s.comm, sizeof(s.comm), "kmask");
		sk.sample(sk.ctx, &s);
	}
	return kx_kxp_sink_close(&ks, &ci, err, sizeof(err));
}

/* Each stored sample's kernel frame names, joined, into out; and whether
 * every stored kernel address (stacks and symbols) is a stand-in. */
static int names_of(const struct mem *m, char *out, size_t len, int *all_stand_ins)
{
	struct kx_store *st = kx_store_new(1 << 24);
	static struct kx_capinfo ci;
	struct kx_samples *t;
	const struct kx_symres *sy;
	char err[256];
	size_t at = 0;

	*all_stand_ins = 1;
	if (!st || kx_kxp_read_mem(m->p, m->n, st, &ci, NULL, err, sizeof(err))) {
		printf("  %s\n", err);
		kx_store_free(st);
		return -1;
	}
	t = kx_store_samples(st);
	sy = kx_samples_syms_const(t);
	for (size_t i = 0; i < kx_samples_count(t); i++) {
		uint32_t nk, nu;
		const uint64_t *ips = kx_samples_stack(t, kx_samples_get(t, i)->stack, &nk, &nu);

		for (uint32_t k = 0; k < nk; k++) {
			const struct kx_symres_entry *e =
			        kx_symres_find(sy, KX_SYMRES_KERNEL, 0, kx_frame_addr(ips[k], k));

			*all_stand_ins &= is_stand_in(ips[k]);
			at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%s;",
			                       e ? kx_symres_str(sy, e->func) : "(none)");
		}
	}
	for (size_t i = 0; i < sy->n; i++)
		if (sy->e[i].pid == KX_SYMRES_KERNEL)
			*all_stand_ins &= is_stand_in(sy->e[i].addr);
	kx_store_free(st);
	return at < len ? 0 : -1;
}

static void sink_hides(void)
{
	uint64_t kips[5];
	int real = kernel_addrs(kips, 5), plain_masked, hidden_masked;
	struct mem plain = {0}, hidden = {0};
	static char a[16384], b[16384];

	printf("# %d real kernel addresses from /proc/kallsyms\n", real);
	CHECK(record(0, kips, 5, &plain) == 0);
	CHECK(record(1, kips, 5, &hidden) == 0);
	CHECK(names_of(&plain, a, sizeof(a), &plain_masked) == 0);
	CHECK(names_of(&hidden, b, sizeof(b), &hidden_masked) == 0);
	printf("# names: %.160s\n", b);
	CHECK(a[0] != 0);
	CHECK_STR(a, b);
	CHECK(!plain_masked); /* the test tells a real address from a stand-in */
	CHECK(hidden_masked);
	if (real == 4)
		CHECK(strstr(b, "schedule;") && strstr(b, "vfs_read;"));
	free(plain.p);
	free(hidden.p);
}

/* Old-shape gpu_scheduler jobs (ctx = the finished fence's address, seqno
 * 0, aux = job id) through a record sink, hiding or not, read back. */
static int jobs_roundtrip(int hide, struct kx_job *out, size_t n)
{
	static const uint64_t fence[2] = {0xffff888012345600ull, 0xffff888012345700ull};
	struct mem m = {0};
	struct kx_kxp_stream st = {.write = mem_write, .ctx = &m};
	struct kx_kxp_sink ks = {.stream = &st, .for_user = hide};
	struct kx_sink sk = kx_sink_kxp(&ks);
	static struct kx_capinfo ci;
	struct kx_store *store = NULL;
	char err[256];
	int rc = -1;

	memset(&ci, 0, sizeof(ci));
	if (sk.begin(sk.ctx, &ci, err, sizeof(err)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct kx_job j = {.ts = 1000 + i,
		                   .ctx = fence[i % 2],
		                   .aux = 7 + i % 2,
		                   .pid = (uint32_t)getpid(),
		                   .tid = (uint32_t)getpid(),
		                   .src = KX_JOB_SRC_GPU_SCHED,
		                   .phase = (uint8_t)(KX_JOB_QUEUE + i / 2)};

		snprintf(j.ring, sizeof(j.ring), "gfx");
		sk.job(sk.ctx, &j);
	}
	if (kx_kxp_sink_close(&ks, &ci, err, sizeof(err)))
		goto out;
	store = kx_store_new(1 << 20);
	if (!store || kx_kxp_read_mem(m.p, m.n, store, &ci, NULL, err, sizeof(err)) ||
	    kx_store_job_count(store) != n)
		goto out;
	for (size_t i = 0; i < n; i++)
		out[i] = *kx_store_job(store, i);
	rc = 0;
out:
	if (rc)
		printf("  %s\n", err);
	kx_store_free(store);
	free(m.p);
	return rc;
}

static void sink_hides_job_pointers(void)
{
	struct kx_job plain[6], hidden[6];

	CHECK(jobs_roundtrip(0, plain, 6) == 0);
	CHECK(jobs_roundtrip(1, hidden, 6) == 0);
	/* Not hidden: the test sees a fence address. */
	CHECK(plain[0].ctx == 0xffff888012345600ull);
	for (int i = 0; i < 6; i++) {
		CHECK(is_stand_in(hidden[i].ctx));
		CHECK(hidden[i].seqno == 0 && hidden[i].aux == plain[i].aux);
		CHECK(hidden[i].phase == plain[i].phase && hidden[i].ts == plain[i].ts);
		/* The phases of one job still pair: one stand-in per fence. */
		CHECK(hidden[i].ctx == hidden[i % 2].ctx);
	}
	CHECK(hidden[0].ctx != hidden[1].ctx);
}

int main(void)
{
	RUN(stand_ins);
	RUN(sink_hides);
	RUN(sink_hides_job_pointers);
	KXT_EXIT();
}
