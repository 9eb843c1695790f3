/*
 * Samples after the capture, without the kernel: the record file keeps
 * samples and their resolved symbols (round trip, a bad sample record costs
 * its chunk), the profile names frames root first with the driver-call frame
 * between the user and kernel frames, names unresolved frames "[unknown]"
 * with their module and counts them, merges equal stacks, trims off-CPU
 * stacks at the scheduler; folded stacks come out exactly; the pprof bytes
 * gunzip and decode (protobuf-c, proto/profile.proto) into a profile that
 * pprof's validity rules accept: string 0 empty, non-zero unique ids, one
 * value per sample type, leaf-first locations, labels, symbolised mappings.
 */
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "analysis/profile.h"
#include "export/folded.h"
#include "export/pprof.h"
#include "io/kxp.h"
#include "io/kxp_samples.h"
#include "kxp_gen.h"
#include "kxtest.h"
#include "model/perfdata.h"
#include "model/symres.h"
#include "proto/profile.pb-c.h"
#include "registry/drivers.h"
#include "symbol/symbolizer.h"
#include "util/pbwire.h"

#define PID 4242
#define GEN 3

/* Addresses of a made-up process: main -> run -> work (user), then the kernel. */
enum {
	U_MAIN = 0x401000,
	U_RUN = 0x402000,
	U_WORK = 0x403000,
	U_LIBC = 0x7f0000001000, /* in libc.so.6, no symbol */
	K_ENTRY = 0xffffffff81000100ull,
	K_IOCTL = 0xffffffff81100000ull,
	K_VCPU = 0xffffffffc0001000ull,  /* in [kvm] */
	K_SCHED = 0xffffffff81200000ull, /* __schedule */
	K_TRACE = 0xffffffff81300000ull, /* the tracing machinery above it */
};

static void put_sym(struct kx_symres *r, uint32_t pid, uint32_t gen, uint64_t addr, const char *fn,
                    const char *mod, int known)
{
	struct kx_symres_names n = {fn, mod, known ? "00ff" : "", 0, addr & 0xfff, known};

	CHECK(kx_symres_put(r, pid, gen, addr, &n) == 0);
}

/* Symbols as the recorder resolves them: callers one byte into their call. */
static void put_symbols(struct kx_symres *r)
{
	put_sym(r, PID, GEN, U_MAIN - 1, "main", "/bin/app", 1);
	put_sym(r, PID, GEN, U_RUN - 1, "run", "/bin/app", 1);
	put_sym(r, PID, GEN, U_WORK, "work", "/bin/app", 1);
	put_sym(r, PID, GEN, U_WORK - 1, "work", "/bin/app", 1);
	put_sym(r, PID, GEN, U_LIBC, "[unknown]", "/usr/lib/libc.so.6", 0);
	put_sym(r, PID, GEN, U_LIBC - 1, "[unknown]", "/usr/lib/libc.so.6", 0);
	put_sym(r, 0, 0, K_VCPU, "vcpu_run", "[kvm]", 1);
	put_sym(r, 0, 0, K_IOCTL - 1, "kvm_vcpu_ioctl", "[kvm]", 1);
	put_sym(r, 0, 0, K_ENTRY - 1, "entry_SYSCALL_64", KX_KERNEL_MOD, 1);
	put_sym(r, 0, 0, K_TRACE, "bpf_trace_run", KX_KERNEL_MOD, 1);
	put_sym(r, 0, 0, K_SCHED - 1, "__schedule", KX_KERNEL_MOD, 1);
	kx_symres_settle(r);
}

/* A sample of thread tid: kernel frames (leaf first) then user frames. */
static void sample(struct kx_sample *s, uint64_t *ips, const uint64_t *k, uint32_t nk,
                   const uint64_t *u, uint32_t nu, int in_call, uint32_t tid)
{
	memset(s, 0, sizeof(*s));
	s->kind = KX_SAMPLE_CPU;
	s->ts_ns = 1000000 + tid;
	s->pid = PID;
	s->tid = tid;
	s->exec_id = GEN;
	s->cpu = 1;
	s->flags = nk ? KX_SAMPLE_F_KERNEL : 0;
	snprintf(s->comm, sizeof(s->comm), "app");
	if (nk)
		memcpy(ips, k, nk * sizeof(*ips));
	if (nu)
		memcpy(ips + nk, u, nu * sizeof(*ips));
	s->kips = ips;
	s->nk = nk;
	s->uips = ips + nk;
	s->nu = nu;
	if (in_call) {
		s->call.ts = s->ts_ns - 500;
		s->call.cmd = 0xae80; /* KVM_RUN */
		s->call.drv = KX_DRV_KVM;
		s->call.fkind = KX_FK_KVM_VCPU;
	}
}

static const uint64_t user_in_work[] = {U_WORK, U_RUN, U_MAIN};
static const uint64_t user_in_ioctl[] = {U_LIBC, U_RUN, U_MAIN};
static const uint64_t kern_in_call[] = {K_VCPU, K_IOCTL, K_ENTRY};

/* 3 samples in work (two threads), 2 inside KVM_RUN, 1 unresolved. */
static void fill_store(struct kx_store *st)
{
	uint64_t ips[16];
	struct kx_sample s;
	static const uint64_t junk[] = {0x10};

	for (int i = 0; i < 3; i++) {
		sample(&s, ips, NULL, 0, user_in_work, 3, 0, i < 2 ? 100 : 101);
		CHECK(kx_store_add_sample(st, &s) == 0);
	}
	for (int i = 0; i < 2; i++) {
		sample(&s, ips, kern_in_call, 3, user_in_ioctl, 3, 1, 100);
		CHECK(kx_store_add_sample(st, &s) == 0);
	}
	sample(&s, ips, NULL, 0, junk, 1, 0, 100);
	CHECK(kx_store_add_sample(st, &s) == 0);
	put_symbols(kx_samples_syms(kx_store_samples(st)));
}

static struct kx_store *make_store(void)
{
	struct kx_store *st = kx_store_new(0);

	if (st)
		fill_store(st);
	return st;
}

static const struct kx_capinfo *capinfo(void)
{
	static struct kx_capinfo ci;

	memset(&ci, 0, sizeof(ci));
	snprintf(ci.hostname, sizeof(ci.hostname), "box");
	ci.samples.hz = 100;
	ci.start_mono_ns = 1000;
	ci.stop_mono_ns = 2000001000;
	ci.clock_start.mono_ns = 1000;
	ci.clock_start.offset_ns = 1700000000000000000ll;
	return &ci;
}

/* The frame names of stack i, root first, joined by ';'. */
static const char *stack_names(const struct kx_profile *p, size_t i, char *buf, size_t len)
{
	const struct kx_pstack *st = &p->stacks[i];
	size_t n = 0;

	buf[0] = 0;
	for (uint32_t k = 0; k < st->depth && n < len; k++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? ";" : "",
		                      p->frames[p->fids[st->first + k]].name);
	return buf;
}

static void test_profile_frames(void)
{
	struct kx_store *st = make_store();
	struct kx_profile *p;
	char err[200], buf[512];
	int seen_call = 0, seen_work = 0;

	p = kx_profile_build(st, capinfo(), KX_SAMPLE_CPU, err, sizeof(err));
	CHECK(p);
	CHECK_EQ_U(p->samples, 6);
	CHECK_EQ_U(p->in_calls, 2);
	CHECK_EQ_U(p->period_ns, 10000000);
	/* Stacks per (frames, pid, tid, call): work on tid 100 and 101, the call, the junk. */
	CHECK_EQ_U(p->nstacks, 4);
	for (size_t i = 0; i < p->nstacks; i++) {
		stack_names(p, i, buf, sizeof(buf));
		if (!strcmp(buf, "main;run;work")) {
			seen_work++;
			CHECK_EQ_U(p->stacks[i].count, p->stacks[i].tid == 100 ? 2 : 1);
			CHECK_EQ_U(p->stacks[i].weight_ns, p->stacks[i].count * 10000000);
		} else if (strstr(buf, "KVM_RUN")) {
			seen_call++;
			CHECK_STR(buf,
			          "main;run;[unknown] (libc.so.6);[kvm] KVM_RUN;entry_SYSCALL_64;"
			          "kvm_vcpu_ioctl;vcpu_run");
			CHECK_EQ_U(p->stacks[i].count, 2);
			CHECK(p->stacks[i].call != 0);
			CHECK_STR(p->frames[p->stacks[i].call - 1].name, "[kvm] KVM_RUN");
		} else {
			CHECK_STR(buf, "[unknown]");
		}
	}
	CHECK_EQ_U(seen_work, 2);
	CHECK_EQ_U(seen_call, 1);
	/* Unresolved: libc twice (the call's samples), the junk once. */
	CHECK_EQ_U(p->unknown[0], 3);
	CHECK_EQ_U(p->unknown[1], 0);
	kx_profile_free(p);
	kx_store_free(st);
}

/* Off-CPU: weights are the time away; the frames above __schedule go. */
static void test_offcpu_trim(void)
{
	static const uint64_t k[] = {K_TRACE, K_SCHED, K_IOCTL, K_ENTRY};
	struct kx_store *st = kx_store_new(0);
	struct kx_profile *p;
	uint64_t ips[16];
	struct kx_sample s;
	char err[200], buf[512];

	CHECK(st);
	for (int i = 0; i < 3; i++) {
		sample(&s, ips, k, 4, user_in_ioctl, 3, 1, 100);
		s.kind = KX_SAMPLE_OFFCPU;
		s.weight_ns = 1000 * (i + 1);
		CHECK(kx_store_add_sample(st, &s) == 0);
	}
	put_symbols(kx_samples_syms(kx_store_samples(st)));
	p = kx_profile_build(st, capinfo(), KX_SAMPLE_OFFCPU, err, sizeof(err));
	CHECK(p);
	CHECK_EQ_U(p->nstacks, 1);
	CHECK_EQ_U(p->stacks[0].count, 3);
	CHECK_EQ_U(p->stacks[0].weight_ns, 6000);
	CHECK_STR(stack_names(p, 0, buf, sizeof(buf)),
	          "main;run;[unknown] (libc.so.6);[kvm] KVM_RUN;entry_SYSCALL_64;kvm_vcpu_ioctl;"
	          "__schedule");
	kx_profile_free(p);
	/* The CPU profile of the same store is empty. */
	p = kx_profile_build(st, capinfo(), KX_SAMPLE_CPU, err, sizeof(err));
	CHECK(p && p->samples == 0 && p->nstacks == 0);
	kx_profile_free(p);
	kx_store_free(st);
}

static void test_folded_exact(void)
{
	struct kx_store *st = make_store();
	struct kx_profile *p;
	char err[200], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(f);
	p = kx_profile_build(st, capinfo(), KX_SAMPLE_CPU, err, sizeof(err));
	CHECK(p);
	CHECK(kx_folded_print(p, st, f) == 0);
	fclose(f);
	/* The two threads of "app" merged; lines sorted; ';' is the separator only. */
	CHECK_STR(out, "app;[unknown] 1\n"
	               "app;main;run;[unknown] (libc.so.6);[kvm] KVM_RUN;entry_SYSCALL_64;"
	               "kvm_vcpu_ioctl;vcpu_run 2\n"
	               "app;main;run;work 3\n");
	free(out);
	kx_profile_free(p);
	kx_store_free(st);
}

/* A thread that changed its name (an exec, a rename) between samples: each
 * sample keeps the name in force when it was taken, in the stacks, folded
 * lines and pprof's thread label; the thread's own name is the latest. */
static void test_names_follow_samples(void)
{
	struct kx_store *st = kx_store_new(0);
	struct kx_profile *p;
	char err[200], *out = NULL;
	size_t len = 0;
	uint64_t ips[16];
	struct kx_sample s;
	FILE *f = open_memstream(&out, &len);
	const struct kx_samples *t;

	CHECK(st && f);
	for (int i = 0; i < 5; i++) {
		sample(&s, ips, NULL, 0, user_in_work, 3, 0, 100);
		s.ts_ns = 1000000 + (uint64_t)i * 1000;
		snprintf(s.comm, sizeof(s.comm), "%s", i < 2 ? "launcher" : "app");
		CHECK(kx_store_add_sample(st, &s) == 0);
	}
	put_symbols(kx_samples_syms(kx_store_samples(st)));
	t = kx_store_samples(st);
	CHECK_STR(kx_samples_comm_name(t, kx_samples_comm_id_at(t, 100, 1001000)), "launcher");
	CHECK_STR(kx_samples_comm_name(t, kx_samples_comm_id_at(t, 100, 1002000)), "app");
	CHECK_STR(kx_samples_comm_name(t, kx_samples_comm_id_at(t, 100, 5)), "launcher");
	CHECK_STR(kx_samples_comm(t, 100), "app");
	p = kx_profile_build(st, capinfo(), KX_SAMPLE_CPU, err, sizeof(err));
	CHECK(p && p->nstacks == 2);
	CHECK(kx_folded_print(p, st, f) == 0);
	fclose(f);
	CHECK_STR(out, "app;main;run;work 3\n"
	               "launcher;main;run;work 2\n");
	free(out);
	kx_profile_free(p);
	kx_store_free(st);
}

/* A name with ';' and a line break: sanitised so the line parses back. */
static void test_folded_sanitised(void)
{
	struct kx_store *st = kx_store_new(0);
	struct kx_profile *p;
	static const uint64_t u[] = {U_WORK};
	char err[200], *out = NULL;
	uint64_t ips[4];
	struct kx_sample s;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(st && f);
	sample(&s, ips, NULL, 0, u, 1, 0, 7);
	snprintf(s.comm, sizeof(s.comm), "a;b");
	CHECK(kx_store_add_sample(st, &s) == 0);
	put_sym(kx_samples_syms(kx_store_samples(st)), PID, GEN, U_WORK, "op;er\nator", "/x", 1);
	kx_symres_settle(kx_samples_syms(kx_store_samples(st)));
	p = kx_profile_build(st, capinfo(), KX_SAMPLE_CPU, err, sizeof(err));
	CHECK(p);
	CHECK(kx_folded_print(p, st, f) == 0);
	fclose(f);
	CHECK_STR(out, "a:b;op:er ator 1\n");
	free(out);
	kx_profile_free(p);
	kx_store_free(st);
}

/* The gzip member's bytes, inflated. */
static uint8_t *gunzip(const uint8_t *in, size_t n, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z;

	memset(&z, 0, sizeof(z));
	if (!out || inflateInit2(&z, 16 + 15) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
		inflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

static const char *pstr(const Perftools__Profiles__Profile *pr, int64_t i)
{
	return i >= 0 && (size_t)i < pr->n_string_table ? pr->string_table[i] : "(bad index)";
}

/* pprof's own validity rules, and what the profile must say. */
static void check_profile(const Perftools__Profiles__Profile *pr)
{
	CHECK(pr->n_string_table > 0 && !strcmp(pr->string_table[0], ""));
	CHECK_EQ_U(pr->n_sample_type, 2);
	CHECK_STR(pstr(pr, pr->sample_type[0]->type), "samples");
	CHECK_STR(pstr(pr, pr->sample_type[0]->unit), "count");
	CHECK_STR(pstr(pr, pr->sample_type[1]->type), "cpu");
	CHECK_STR(pstr(pr, pr->sample_type[1]->unit), "nanoseconds");
	CHECK_STR(pstr(pr, pr->period_type->type), "cpu");
	CHECK_EQ_U(pr->period, 10000000);
	CHECK_STR(pstr(pr, pr->default_sample_type), "cpu");
	CHECK_EQ_U(pr->time_nanos, 1700000000000000000ull + 1000100);
	CHECK_EQ_U(pr->duration_nanos, 2000000000);
	for (size_t i = 0; i < pr->n_mapping; i++) {
		CHECK_EQ_U(pr->mapping[i]->id, i + 1);
		CHECK(pr->mapping[i]->has_functions);
	}
	CHECK_STR(pstr(pr, pr->mapping[0]->filename), "/bin/app"); /* the main binary first */
	for (size_t i = 0; i < pr->n_function; i++) {
		CHECK_EQ_U(pr->function[i]->id, i + 1);
		CHECK_EQ_U(pr->location[i]->id, i + 1);
		CHECK(pr->location[i]->mapping_id >= 1 &&
		      pr->location[i]->mapping_id <= pr->n_mapping);
		CHECK_EQ_U(pr->location[i]->n_line, 1);
		CHECK_EQ_U(pr->location[i]->line[0]->function_id, i + 1);
	}
	CHECK_EQ_U(pr->n_location, pr->n_function);
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];

		CHECK_EQ_U(s->n_value, 2);
		CHECK_EQ_U((uint64_t)s->value[1], (uint64_t)s->value[0] * 10000000);
		for (size_t k = 0; k < s->n_location_id; k++)
			CHECK(s->location_id[k] >= 1 && s->location_id[k] <= pr->n_location);
	}
}

/* The call's sample: leaf first, the labels. */
static void check_call_sample(const Perftools__Profiles__Profile *pr)
{
	int found = 0;

	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];
		const char *leaf, *call = NULL, *process = NULL;

		leaf = pstr(pr, pr->function[s->location_id[0] - 1]->name);
		if (strcmp(leaf, "vcpu_run"))
			continue;
		found++;
		CHECK_EQ_U(s->n_location_id, 7);
		CHECK_STR(pstr(pr, pr->function[s->location_id[3] - 1]->name), "[kvm] KVM_RUN");
		CHECK_STR(pstr(pr, pr->function[s->location_id[6] - 1]->name), "main");
		CHECK_EQ_U((uint64_t)s->value[0], 2);
		for (size_t k = 0; k < s->n_label; k++) {
			const char *key = pstr(pr, s->label[k]->key);

			if (!strcmp(key, "driver_call"))
				call = pstr(pr, s->label[k]->str);
			if (!strcmp(key, "pid"))
				CHECK_EQ_U((uint64_t)s->label[k]->num, PID);
			if (!strcmp(key, "thread"))
				CHECK_STR(pstr(pr, s->label[k]->str), "app");
			if (!strcmp(key, "process"))
				process = pstr(pr, s->label[k]->str);
		}
		CHECK(call && !strcmp(call, "[kvm] KVM_RUN"));
		CHECK(process && !strcmp(process, "app --flag 1"));
	}
	CHECK_EQ_U(found, 1);
}

static void test_pprof_decodes(void)
{
	struct kx_store *st = make_store();
	Perftools__Profiles__Profile *pr;
	struct kx_bytes gz = {0};
	struct kx_profile *p;
	char err[200];
	uint8_t *raw;
	size_t len = 0;
	struct kx_task exec = {.ts = 1, .pid = PID, .tid = PID, .what = KX_TASK_EXEC};

	/* The process's command line, as the recorder read it: its samples' label. */
	snprintf(exec.comm, sizeof(exec.comm), "app");
	snprintf(exec.cmd, sizeof(exec.cmd), "app --flag 1");
	CHECK(kx_store_add_task(st, &exec) == 0);
	p = kx_profile_build(st, capinfo(), KX_SAMPLE_CPU, err, sizeof(err));
	CHECK(p);
	CHECK(kx_pprof_encode(p, st, capinfo(), &gz) == 0);
	CHECK(gz.len > 18 && gz.p[0] == 0x1f && gz.p[1] == 0x8b);
	raw = gunzip(gz.p, gz.len, &len);
	CHECK(raw);
	pr = perftools__profiles__profile__unpack(NULL, len, raw);
	CHECK(pr);
	check_profile(pr);
	check_call_sample(pr);
	CHECK_EQ_U(pr->n_sample, 4);
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(raw);
	free(gz.p);
	kx_profile_free(p);
	kx_store_free(st);
}

static void count_sample(void *ctx, const struct kx_sample *s)
{
	(void)s;
	++*(size_t *)ctx;
}

/* A tee read: the store gets the samples and symbols a read into it gets,
 * and so does the sink: every sample, and the symbols in its own table. */
static void check_tee(const char *path, size_t nsyms, size_t nsamples)
{
	static struct kx_capinfo ci;
	struct kx_symres syms = {0};
	size_t seen = 0;
	struct kx_kxp_visitor v = {.ctx = &seen, .sample = count_sample, .syms = &syms};
	struct kx_store *st = kx_store_new(0);
	char err[512];

	CHECK(st && kx_kxp_read_stream_tee(path, &v, st, &ci, NULL, err, sizeof(err)) == 0);
	CHECK_EQ_U(seen, nsamples);
	CHECK_EQ_U(st ? kx_samples_count(kx_store_samples(st)) : 0, nsamples);
	CHECK_EQ_U(st ? kx_samples_syms(kx_store_samples(st))->n : 0, nsyms);
	CHECK_EQ_U(syms.n, nsyms);
	CHECK(kx_symres_find(&syms, 0, 0, K_VCPU) != NULL);
	kx_symres_free(&syms);
	kx_store_free(st);
}

/* A capture with samples and symbols written and read back. */
static void test_kxp_roundtrip(void)
{
	static struct kx_capinfo ci, got;
	struct kx_store *src = make_store(), *st = kx_store_new(0);
	const struct kx_symres *r = kx_samples_syms(kx_store_samples(src));
	struct kx_samples *t = kx_store_samples(src), *u;
	struct kx_kxp_writer *w;
	char path[] = "/tmp/kxprof-test-profile-XXXXXX", err[512];
	int fd = mkstemp(path);

	CHECK(fd >= 0 && st);
	close(fd);
	ci = *capinfo();
	ci.samples.emitted = ci.samples.received = 6;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	for (size_t i = 0; i < kx_samples_count(t); i++) {
		const struct kx_sample_ev *e = kx_samples_get(t, i);
		struct kx_sample s;
		uint32_t nk, nu;
		const uint64_t *ips = kx_samples_stack(t, e->stack, &nk, &nu);

		memset(&s, 0, sizeof(s));
		s.kind = e->kind;
		s.ts_ns = e->ts;
		s.pid = e->pid;
		s.tid = e->tid;
		s.exec_id = e->exec_id;
		s.cpu = e->cpu;
		s.flags = e->flags;
		s.call.ts = e->call_ts;
		s.call.cmd = e->call_cmd;
		s.call.drv = e->call_drv;
		s.call.fkind = e->call_fkind;
		snprintf(s.comm, sizeof(s.comm), "%s", kx_samples_comm(t, e->tid));
		s.kips = ips;
		s.nk = nk;
		s.uips = ips + nk;
		s.nu = nu;
		CHECK(kx_kxp_add_sample(w, &s) == 0);
	}
	for (size_t i = 0; i < r->n; i++)
		CHECK(kx_kxp_add_sym(w, r, &r->e[i]) == 0);
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(kx_kxp_read(path, st, &got, NULL, err, sizeof(err)) == 0);
	check_tee(path, r->n, kx_samples_count(t));
	unlink(path);
	u = kx_store_samples(st);
	CHECK_EQ_U(kx_samples_count(u), kx_samples_count(t));
	CHECK_EQ_U(kx_samples_nstacks(u), kx_samples_nstacks(t));
	CHECK_EQ_U(got.samples.hz, 100);
	CHECK_EQ_U(got.samples.emitted, 6);
	for (size_t i = 0; i < kx_samples_count(t); i++) {
		const struct kx_sample_ev *a = kx_samples_get(t, i), *b = kx_samples_get(u, i);
		uint32_t ak, au, bk, bu;
		const uint64_t *x = kx_samples_stack(t, a->stack, &ak, &au);
		const uint64_t *y = kx_samples_stack(u, b->stack, &bk, &bu);

		CHECK(!memcmp(a, b, sizeof(*a)));
		CHECK(ak == bk && au == bu && !memcmp(x, y, (ak + au) * sizeof(*x)));
	}
	CHECK_STR(kx_samples_comm(u, 101), "app");
	CHECK_EQ_U(kx_samples_syms(u)->n, r->n);
	CHECK_STR(kx_symres_str(kx_samples_syms(u),
	                        kx_symres_find(kx_samples_syms(u), 0, 0, K_VCPU)->func),
	          "vcpu_run");
	kx_store_free(src);
	kx_store_free(st);
}

/* The record decoders take stored bytes as untrusted: every cut is refused,
 * out-of-range counts are refused, random bytes never crash (ASan build). */
static void test_decoders_reject(void)
{
	uint64_t ips[2 * KX_SAMPLE_MAX_DEPTH], back[2 * KX_SAMPLE_MAX_DEPTH], ts = 0, prev;
	uint8_t buf[KX_KXP_SAMPLE_MAX], junk[64];
	struct kx_symres r = {0};
	struct kx_sample s, d;
	uint64_t seed = 12345;
	size_t n;

	sample(&s, ips, kern_in_call, 3, user_in_ioctl, 3, 1, 100);
	n = kx_kxp_enc_sample(buf, &s, &ts);
	prev = 0;
	CHECK(kx_kxp_dec_sample(buf, n, KX_KXP_REC_SAMPLE, &prev, &d, back) == 0);
	CHECK(d.ts_ns == s.ts_ns && d.call.ts == s.call.ts && d.call.cmd == s.call.cmd);
	CHECK(d.nk == 3 && d.nu == 3 && !memcmp(back, ips, 6 * sizeof(*ips)));
	for (size_t cut = 0; cut < n; cut++) {
		prev = 0;
		CHECK(kx_kxp_dec_sample(buf, cut, KX_KXP_REC_SAMPLE, &prev, &d, back) == -1);
	}
	/* A call that would start after its sample is not one: written without it. */
	prev = 0;
	s.call.ts = s.ts_ns + 1;
	n = kx_kxp_enc_sample(buf, &s, &prev);
	prev = 0;
	CHECK(kx_kxp_dec_sample(buf, n, KX_KXP_REC_SAMPLE, &prev, &d, back) == 0);
	CHECK_EQ_U(d.call.ts, 0);
	/* Frame counts past a stack's depth. */
	{
		uint8_t *p = buf;

		p = kx_pb_varint(p, 0); /* ts delta */
		for (int i = 0; i < 6; i++)
			p = kx_pb_varint(p, 1); /* weight pid tid exec_id cpu flags */
		*p++ = 0;                       /* comm */
		p = kx_pb_varint(p, 0);         /* no call */
		p = kx_pb_varint(p, KX_SAMPLE_MAX_DEPTH + 1);
		p = kx_pb_varint(p, 0);
		prev = 0;
		CHECK(kx_kxp_dec_sample(buf, (size_t)(p - buf), KX_KXP_REC_SAMPLE, &prev, &d,
		                        back) == -1);
	}
	/* Symbols: a string with a NUL inside, a length past the limit. */
	{
		struct kx_symres_names nm = {"f", "m", "", 0, 0, 1};
		uint8_t *p;

		CHECK(kx_symres_put(&r, 1, 1, 0x10, &nm) == 0);
		kx_symres_settle(&r);
		n = kx_kxp_enc_sym(buf, &r, &r.e[0]);
		CHECK(kx_kxp_dec_sym(buf, n, NULL) == 0);
		for (size_t cut = 0; cut < n; cut++)
			CHECK(kx_kxp_dec_sym(buf, cut, NULL) == -1);
		/* The record ends 1 'f' 1 'm' 0: the function's one byte made a NUL. */
		CHECK(buf[n - 4] == 'f');
		buf[n - 4] = 0;
		CHECK(kx_kxp_dec_sym(buf, n, NULL) == -1);
		p = buf;
		for (int i = 0; i < 6; i++)
			p = kx_pb_varint(p, i == 5);
		p = kx_pb_varint(p, KX_KXP_SYM_STR + 1);
		CHECK(kx_kxp_dec_sym(buf, (size_t)(p - buf), NULL) == -1);
		kx_symres_free(&r);
	}
	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)(gen_rng(&seed) % sizeof(junk));

		for (size_t i = 0; i < len; i++)
			junk[i] = (uint8_t)gen_rng(&seed);
		prev = gen_rng(&seed);
		(void)kx_kxp_dec_sample(junk, len, KX_KXP_REC_OFFCPU, &prev, &d, back);
		(void)kx_kxp_dec_sym(junk, len, NULL);
	}
}

int main(void)
{
	RUN(test_profile_frames);
	RUN(test_offcpu_trim);
	RUN(test_folded_exact);
	RUN(test_names_follow_samples);
	RUN(test_folded_sanitised);
	RUN(test_pprof_decodes);
	RUN(test_kxp_roundtrip);
	RUN(test_decoders_reject);
	KXT_EXIT();
}
