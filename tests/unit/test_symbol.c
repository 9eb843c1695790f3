/*
 * Symbolisation against this very process (built with frame pointers and
 * known functions): its own functions resolve by name and offset through
 * its map snapshot (PIE: run-time address -> file offset -> link address),
 * a libc function resolves in libc, the vdso resolves from a copy of the
 * process's image, a child's addresses still resolve after it exited,
 * kernel functions resolve through /proc/kallsyms (module names, hidden
 * addresses said), the build id matches the one in memory, unresolvable
 * addresses are [unknown] with their module and counted, an exited
 * child's empty maps read as no mappings, a symbolizer acting for a user
 * reads no file that user may only execute, and the storable
 * table survives a store and reload (and refuses a broken one).
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kxtest.h"
#include "symbol/elfsyms.h"
#include "symbol/kallsyms.h"
#include "symbol/procmaps.h"
#include "model/symres.h"
#include "symbol/collect.h"
#include "symbol/symbolizer.h"

/* Known functions of this binary; volatile keeps their bodies. */
static volatile int sink;

__attribute__((noinline)) void kxt_sym_alpha(int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) static void kxt_sym_beta(int n)
{
	for (int i = 0; i < n; i++)
		sink -= i;
}

static char self_exe[PATH_MAX];

static struct kx_symbolizer *new_sz(const char *kallsyms)
{
	char err[200];
	struct kx_symbolizer *s = kx_symbolizer_new(kallsyms, err, sizeof(err));

	if (!s)
		printf("# symbolizer: %s\n", err);
	return s;
}

static void test_own_functions(void)
{
	struct kx_symbolizer *s = new_sz(NULL);
	struct kx_frame f;

	CHECK(s);
	kx_symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)kxt_sym_alpha, &f);
	CHECK(f.known);
	CHECK_STR(f.func, "kxt_sym_alpha");
	CHECK_EQ_U(f.offset, 0);
	CHECK_STR(f.module, self_exe);
	kx_symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)kxt_sym_beta + 7, &f);
	CHECK_STR(f.func, "kxt_sym_beta"); /* static: only in .symtab */
	CHECK_EQ_U(f.offset, 7);
	kx_symbolizer_free(s);
}

static void test_libc_function(void)
{
	struct kx_symbolizer *s = new_sz(NULL);
	/* A libc function no sanitizer runtime wraps (so its address is libc's). */
	int (*volatile fn)(int) = abs;
	struct kx_frame f;

	CHECK(s);
	kx_symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)fn + 2, &f);
	CHECK(f.known);
	CHECK_STR(f.func, "abs");
	CHECK_EQ_U(f.offset, 2);
	CHECK(strstr(f.module, "libc.so") != NULL);
	CHECK(strlen(f.build_id) == 40);
	kx_symbolizer_free(s);
}

/* The executable mapping of this binary holding addr. */
static int own_mapping(uint64_t addr, struct kx_procmap *out)
{
	struct kx_procmap *m;
	size_t n;
	char err[200];
	const struct kx_procmap *hit;

	if (kx_procmaps_read(getpid(), &m, &n, err, sizeof(err)) != 0)
		return -1;
	hit = kx_procmaps_find(m, n, addr);
	if (hit) {
		*out = *hit;
		out->path = strdup(hit->path);
	}
	kx_procmaps_free(m, n);
	return hit ? 0 : -1;
}

/* An indirect function (STT_GNU_IFUNC, as glibc's string functions are):
 * its symbol is a function of the file too. */
static int kxt_ifunc_impl(int n)
{
	return n + 1;
}

__attribute__((used)) static int (*kxt_ifunc_resolver(void))(int)
{
	return kxt_ifunc_impl;
}

int kxt_sym_ifunc(int n) __attribute__((ifunc("kxt_ifunc_resolver")));

static void test_pie_offsets(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)kxt_sym_alpha, link;
	struct kx_procmap m;
	struct kx_elfsyms *e;
	char err[200];
	int fd = open(self_exe, O_RDONLY);

	CHECK(fd >= 0);
	e = kx_elfsyms_read_fd(fd, err, sizeof(err));
	close(fd);
	CHECK(e);
	CHECK(own_mapping(addr, &m) == 0);
	link = kx_elfsyms_addr_of(e, "kxt_sym_alpha");
	CHECK(link != 0);
	CHECK(kxt_sym_ifunc(1) == 2 && kx_elfsyms_addr_of(e, "kxt_sym_ifunc") != 0);
	/* A PIE runs away from its link addresses: the mapping rule must undo that. */
	CHECK(link != addr);
	CHECK_EQ_U(kx_elfsyms_link_addr(e, addr, m.start, m.offset), link);
	CHECK_EQ_U(kx_elfsyms_link_addr(e, addr + 9, m.start, m.offset), link + 9);
	CHECK_STR(m.path, self_exe);
	free(m.path);
	kx_elfsyms_free(e);
}

/* The GNU build id of the main program, from its notes in memory. */
static int mem_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	char *hex = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr),
		           *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const char *name = p + sizeof(*nh);
			const uint8_t *desc = (const uint8_t *)name + ((nh->n_namesz + 3) & ~3u);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				kx_build_id_hex(desc, (int)nh->n_descsz, hex);
				return 1;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1; /* the first object is the main program: stop either way */
}

static void test_build_id(void)
{
	char want[2 * KX_BUILD_ID_MAX + 1] = "", got[2 * KX_BUILD_ID_MAX + 1];
	const uint8_t *id;
	struct kx_elfsyms *e;
	char err[200];
	int fd = open(self_exe, O_RDONLY), n;

	CHECK(fd >= 0);
	e = kx_elfsyms_read_fd(fd, err, sizeof(err));
	close(fd);
	CHECK(e);
	dl_iterate_phdr(mem_build_id, want);
	if (!want[0]) {
		kx_elfsyms_free(e);
		SKIP("this binary was linked without a build id");
	}
	n = kx_elfsyms_build_id(e, &id);
	kx_build_id_hex(id, n, got);
	kx_elfsyms_free(e);
	CHECK_EQ_U(n, 20);
	CHECK_STR(got, want);
}

static void test_vdso(void)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), link;
	struct kx_symbolizer *s;
	struct kx_procmap m;
	struct kx_elfsyms *e;
	struct kx_frame f;
	char err[200];

	if (!base)
		SKIP("no vdso in this process");
	CHECK(own_mapping(base, &m) == 0);
	CHECK_STR(m.path, "[vdso]");
	e = kx_elfsyms_read_mem((const void *)(uintptr_t)m.start, m.end - m.start, err,
	                        sizeof(err));
	free(m.path);
	CHECK(e);
	link = kx_elfsyms_addr_of(e, "__vdso_clock_gettime");
	kx_elfsyms_free(e);
	CHECK(link != 0);
	s = new_sz(NULL);
	CHECK(s);
	/* Some address of the mapping must resolve to it through the snapshot
	 * (a copy of the vdso taken out of this process's memory). */
	kx_symbolizer_user(s, getpid(), 0, &f); /* takes the snapshot */
	for (uint64_t a = m.start; a < m.end && !f.known; a++) {
		kx_symbolizer_user(s, getpid(), a, &f);
		if (f.known && strcmp(f.func, "__vdso_clock_gettime") != 0)
			f.known = 0;
	}
	CHECK(f.known);
	CHECK_STR(f.module, "[vdso]");
	CHECK(strlen(f.build_id) == 40);
	kx_symbolizer_free(s);
}

/* A child's addresses resolve after it exited, from the snapshot taken while it lived. */
static void test_short_lived(void)
{
	struct kx_symbolizer_stats st;
	struct kx_symbolizer *s = new_sz(NULL);
	struct kx_frame f;
	char err[200];
	int p[2], status;
	pid_t child;
	char c;

	CHECK(s);
	CHECK(pipe(p) == 0);
	child = fork();
	if (child == 0) {
		close(p[1]);
		(void)!read(p[0], &c, 1); /* until the parent closes its end */
		_exit(0);
	}
	close(p[0]);
	CHECK(kx_symbolizer_snapshot(s, getpid(), err, sizeof(err)) == 0);
	kx_symbolizer_stats(s, &st);
	CHECK(st.files_read >= 2); /* this binary and libc at least */
	CHECK(kx_symbolizer_snapshot(s, child, err, sizeof(err)) == 0);
	close(p[1]);
	CHECK(waitpid(child, &status, 0) == child);
	{
		struct kx_symbolizer_stats st2;

		kx_symbolizer_stats(s, &st2);
		CHECK_EQ_U(st2.files_read, st.files_read); /* same files: read once */
		CHECK_EQ_U(st2.procs, 2);
	}
	kx_symbolizer_user(s, child, (uint64_t)(uintptr_t)kxt_sym_alpha + 3, &f);
	CHECK_STR(f.func, "kxt_sym_alpha");
	CHECK_EQ_U(f.offset, 3);
	/* The same child again: gone now, and the snapshot is kept. */
	CHECK(kx_symbolizer_refresh(s, child, err, sizeof(err)) != 0);
	kx_symbolizer_user(s, child, (uint64_t)(uintptr_t)kxt_sym_beta, &f);
	CHECK_STR(f.func, "kxt_sym_beta");
	kx_symbolizer_free(s);
}

/* kxt_sym_alpha's file offset in this binary (from its own mapping). */
static uint64_t alpha_file_offset(void)
{
	struct kx_procmap *m;
	const struct kx_procmap *hit;
	uint64_t a = (uint64_t)(uintptr_t)kxt_sym_alpha, off = 0;
	size_t n;
	char err[200];

	if (kx_procmaps_read(getpid(), &m, &n, err, sizeof(err)) != 0)
		return 0;
	hit = kx_procmaps_find(m, n, a);
	if (hit)
		off = a - hit->start + hit->offset;
	kx_procmaps_free(m, n);
	return off;
}

/* A child that maps file (opened while root) executable at offset 0, becomes
 * uid/gid 65534, writes the mapping's address to q[1] and waits until p[1]
 * is closed. */
static pid_t mapper_child(const char *file, int p[2], int q[2])
{
	pid_t child = fork();

	if (child == 0) {
		int fd = open(file, O_RDONLY);
		struct stat st;
		void *base = MAP_FAILED;
		char c;

		close(p[1]);
		close(q[0]);
		if (fd >= 0 && fstat(fd, &st) == 0)
			base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE,
			            fd, 0);
		if (base == MAP_FAILED || setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(1);
		(void)!write(q[1], &base, sizeof(base));
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	return child;
}

/* What a symbolizer acting for the process (as_process) makes of its
 * mapping of file: the function at kxt_sym_alpha's offset. */
static int resolve_as_process(const char *file, int as_process, struct kx_frame *f, char *why,
                              size_t len)
{
	struct kx_symbolizer *s = new_sz(NULL);
	int p[2], q[2], status, rc = -1;
	void *base = NULL;
	pid_t child;

	if (!s || pipe(p) || pipe(q))
		return -1;
	if (as_process)
		kx_symbolizer_as_process(s);
	child = mapper_child(file, p, q);
	close(q[1]); /* a child that failed before writing reads as EOF */
	if (child > 0 && read(q[0], &base, sizeof(base)) == sizeof(base) &&
	    kx_symbolizer_snapshot(s, child, why, len) == 0) {
		kx_symbolizer_user(s, child, (uint64_t)(uintptr_t)base + alpha_file_offset(), f);
		snprintf(why, len, "%s", f->func);
		rc = 0;
	}
	close(p[1]);
	if (child > 0)
		waitpid(child, &status, 0);
	close(p[0]);
	close(q[0]);
	if (rc == 0) /* f's strings live in the symbolizer: keep what is checked */
		f->func = strcmp(why, "kxt_sym_alpha") ? "other" : "kxt_sym_alpha";
	kx_symbolizer_free(s);
	return rc;
}

/* Acting for a user (as_process), symbols come only from files that user's
 * process could read: a copy of this binary it may only execute is not
 * read; readable, or without as_process, it resolves. */
static void test_as_process(void)
{
	char copy[64], why[200];
	struct kx_frame f;
	int in, out;
	ssize_t k;
	char buf[65536];

	if (geteuid() != 0)
		SKIP("needs root (changes uids)");
	snprintf(copy, sizeof(copy), "/tmp/kxt_symcopy.%d", (int)getpid());
	in = open(self_exe, O_RDONLY);
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	CHECK(in >= 0 && out >= 0);
	while ((k = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)k) == k);
	close(in);
	close(out);
	CHECK(alpha_file_offset() > 0);
	CHECK(resolve_as_process(copy, 0, &f, why, sizeof(why)) == 0);
	CHECK_STR(f.func, "kxt_sym_alpha");
	CHECK(resolve_as_process(copy, 1, &f, why, sizeof(why)) == 0);
	printf("# mode 0700, as the process: %s\n", why);
	CHECK_STR(f.func, "other");
	CHECK(chmod(copy, 0755) == 0);
	CHECK(resolve_as_process(copy, 1, &f, why, sizeof(why)) == 0);
	CHECK_STR(f.func, "kxt_sym_alpha");
	unlink(copy);
}

static void test_unknown_counted(void)
{
	struct kx_symbolizer *s = new_sz(NULL);
	struct kx_symbolizer_stats st;
	struct kx_frame f;
	void *jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char err[200];
	pid_t gone;

	CHECK(s);
	CHECK(jit != MAP_FAILED);
	kx_symbolizer_user(s, getpid(), 0x10, &f); /* outside every mapping */
	CHECK(!f.known);
	CHECK_STR(f.func, KX_UNKNOWN_FN);
	CHECK_STR(f.module, KX_UNKNOWN_MOD);
	kx_symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)jit + 16, &f); /* anonymous code */
	CHECK(!f.known);
	CHECK_STR(f.func, KX_UNKNOWN_FN);
	/* A process gone before its snapshot: counted, its frames unknown. */
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	CHECK(kx_symbolizer_snapshot(s, gone, err, sizeof(err)) != 0);
	CHECK(strstr(err, "gone") != NULL);
	kx_symbolizer_user(s, gone, (uint64_t)(uintptr_t)kxt_sym_alpha, &f);
	CHECK(!f.known);
	kx_symbolizer_user(s, gone, (uint64_t)(uintptr_t)kxt_sym_beta, &f);
	CHECK(!f.known);
	CHECK(kx_symbolizer_snapshot(s, gone, err, sizeof(err)) != 0); /* still said */
	kx_symbolizer_stats(s, &st);
	CHECK_EQ_U(st.user_unknown, 4);
	CHECK_EQ_U(st.user_resolved, 0);
	CHECK_EQ_U(st.procs_missed, 1); /* once per process, not per frame */
	munmap(jit, 4096);
	kx_symbolizer_free(s);
}

static void test_kallsyms_live(void)
{
	struct kx_kallsyms *k;
	const struct kx_ksym *sym, *hit;
	struct kx_symbolizer *s;
	struct kx_frame f;
	char err[200];
	uint64_t off = 0;

	k = kx_kallsyms_load(NULL, err, sizeof(err));
	CHECK(k);
	if (kx_kallsyms_hidden(k)) {
		kx_kallsyms_free(k);
		SKIP("kernel addresses hidden here (not root, or kptr_restrict)");
	}
	CHECK(kx_kallsyms_count(k) > 1000);
	sym = kx_kallsyms_by_name(k, "__x64_sys_getpid");
	CHECK(sym);
	hit = kx_kallsyms_find(k, sym->addr + 3, &off);
	CHECK(hit);
	CHECK_STR(hit->name, "__x64_sys_getpid");
	CHECK_EQ_U(off, 3);
	s = new_sz(NULL);
	CHECK(s);
	CHECK_STR(kx_symbolizer_warning(s), "");
	kx_symbolizer_kernel(s, sym->addr + 1, &f);
	kx_kallsyms_free(k);
	CHECK(f.known);
	CHECK_STR(f.func, "__x64_sys_getpid");
	CHECK_STR(f.module, KX_KERNEL_MOD);
	CHECK_EQ_U(f.offset, 1);
	kx_symbolizer_kernel(s, 0x1000, &f); /* user-space address: no kernel symbol */
	CHECK(!f.known);
	kx_symbolizer_free(s);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Modules, unsorted input, data symbols skipped (a file in kallsyms' format). */
static void test_kallsyms_modules(void)
{
	char path[] = "/tmp/kxt_kallsymsXXXXXX";
	struct kx_symbolizer *s;
	struct kx_frame f;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(write_file(path, "ffffffffc0002000 t drv_submit\t[fakedrv]\n"
	                       "ffffffff81000000 T _stext\n"
	                       "ffffffff81000100 T core_fn\n"
	                       "ffffffff81000180 D some_data\n"
	                       "ffffffffc0001000 t drv_ioctl\t[fakedrv]\n") == 0);
	s = new_sz(path);
	unlink(path);
	CHECK(s);
	kx_symbolizer_kernel(s, 0xffffffffc0001010, &f);
	CHECK_STR(f.func, "drv_ioctl");
	CHECK_STR(f.module, "[fakedrv]");
	CHECK_EQ_U(f.offset, 0x10);
	kx_symbolizer_kernel(s, 0xffffffff810001a0, &f); /* past the data symbol */
	CHECK_STR(f.func, "core_fn");
	CHECK_EQ_U(f.offset, 0xa0);
	kx_symbolizer_kernel(s, 0xffffffffc0002004, &f);
	CHECK_STR(f.func, "drv_submit");
	kx_symbolizer_free(s);
}

/* Without privilege every address reads 0: said, and kernel frames unknown and counted. */
static void test_kallsyms_hidden(void)
{
	char path[] = "/tmp/kxt_kallsymsXXXXXX";
	struct kx_symbolizer_stats st;
	struct kx_symbolizer *s;
	struct kx_frame f;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(write_file(path, "0000000000000000 T _stext\n0000000000000000 t kvm_vcpu_ioctl\n") ==
	      0);
	s = new_sz(path);
	unlink(path);
	CHECK(s);
	CHECK(strstr(kx_symbolizer_warning(s), "every address as 0") != NULL);
	kx_symbolizer_kernel(s, 0xffffffff81000010, &f);
	CHECK(!f.known);
	CHECK_STR(f.func, KX_UNKNOWN_FN);
	CHECK_STR(f.module, KX_KERNEL_MOD);
	kx_symbolizer_stats(s, &st);
	CHECK_EQ_U(st.kernel_unknown, 1);
	kx_symbolizer_free(s);
}

/* A user-mode sample of this process at the given leaf address. */
static void one_sample(struct kx_sample *smp, const uint64_t *ip, uint32_t exec_id)
{
	memset(smp, 0, sizeof(*smp));
	smp->kind = KX_SAMPLE_CPU;
	smp->pid = smp->tid = (uint32_t)getpid();
	smp->exec_id = exec_id;
	smp->uips = ip;
	smp->nu = 1;
}

/* Collected from samples: each address once, names interned, each entry
 * handed over once, the table stored and reloaded. */
static int handed;
static void count_handed(void *ctx, const struct kx_symres *r, const struct kx_symres_entry *e)
{
	(void)ctx;
	(void)r;
	(void)e;
	handed++;
}

static void test_resolved_table(void)
{
	struct kx_symres r = {0}, back = {0};
	const struct kx_symres_entry *e;
	uint64_t a = (uint64_t)(uintptr_t)kxt_sym_alpha + 1, b = (uint64_t)(uintptr_t)kxt_sym_beta,
	         junk = 0x10;
	uint32_t me = (uint32_t)getpid();
	struct kx_symres_entry bad;
	struct kx_symcollect *c;
	struct kx_sample smp;
	char err[200];

	c = kx_symcollect_new(&r, NULL, count_handed, NULL, err, sizeof(err));
	CHECK(c);
	one_sample(&smp, &a, 7);
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	one_sample(&smp, &b, 7);
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	one_sample(&smp, &a, 7);
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	one_sample(&smp, &junk, 7);
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	CHECK(kx_symcollect_resolve(c) == 0);
	CHECK_EQ_U(handed, 3);
	CHECK_EQ_U(r.n, 3);
	CHECK_EQ_U(r.unknown, 1);
	one_sample(&smp, &b, 7); /* again, after a resolve: nothing new */
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	CHECK(kx_symcollect_resolve(c) == 0);
	CHECK_EQ_U(handed, 3);
	CHECK_EQ_U(r.n, 3);
	e = kx_symres_find(&r, me, 7, a);
	CHECK(e);
	CHECK_STR(kx_symres_str(&r, e->func), "kxt_sym_alpha");
	CHECK_EQ_U(e->offset, 1);
	CHECK_EQ_U(e->module, kx_symres_find(&r, me, 7, b)->module); /* one copy of the path */
	CHECK(kx_symres_find(&r, me, 7, a - 1) == NULL);
	CHECK(kx_symres_find(&r, me, 8, a) == NULL); /* another image of the pid */
	/* A new exec_id: the same address is noted again, for the new image. */
	one_sample(&smp, &a, 8);
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	CHECK(kx_symcollect_resolve(c) == 0);
	CHECK_EQ_U(handed, 4);
	CHECK(kx_symres_find(&r, me, 8, a) != NULL);
	CHECK(kx_symres_load(&back, r.e, r.n, r.strs.buf, r.strs.len, err, sizeof(err)) == 0);
	e = kx_symres_find(&back, me, 7, b);
	CHECK(e);
	CHECK_STR(kx_symres_str(&back, e->func), "kxt_sym_beta");
	CHECK_STR(kx_symres_str(&back, e->module), self_exe);
	CHECK_EQ_U(back.unknown, 1);
	kx_symres_free(&back);
	bad = r.e[0];
	bad.func = (uint32_t)r.strs.len; /* past the strings */
	CHECK(kx_symres_load(&back, &bad, 1, r.strs.buf, r.strs.len, err, sizeof(err)) != 0);
	CHECK(strstr(err, "entry 0") != NULL);
	CHECK(kx_symres_load(&back, r.e, r.n, r.strs.buf, r.strs.len - 1, err, sizeof(err)) != 0);
	kx_symcollect_free(c);
	kx_symres_free(&r);
}

/* This program's file mapped again, executable, at a new address (*len
 * bytes; MAP_FAILED when it cannot be): its kxt_sym_alpha at *alpha. */
static void *map_self(size_t *len, uint64_t *alpha)
{
	int fd = open(self_exe, O_RDONLY);
	void *base = MAP_FAILED;
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) == 0) {
		*len = (size_t)st.st_size;
		base = mmap(NULL, *len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	}
	if (fd >= 0)
		close(fd);
	*alpha = base == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)base + alpha_file_offset();
	return base;
}

/* One sample at addr of this process's image exec_id, collected. */
static void collect_at(struct kx_symcollect *c, uint64_t addr, uint32_t exec_id)
{
	struct kx_sample smp;

	one_sample(&smp, &addr, exec_id);
	CHECK(kx_symcollect_sample(c, &smp) == 0);
}

/* addr of image exec_id resolved to kxt_sym_alpha. */
static int names_alpha(const struct kx_symres *r, uint32_t exec_id, uint64_t addr)
{
	const struct kx_symres_entry *e = kx_symres_find(r, (uint32_t)getpid(), exec_id, addr);

	/* func is a string offset: 0 is the first string interned. */
	return e && !e->pending && !strcmp(kx_symres_str(r, e->func), "kxt_sym_alpha");
}

/* Code mapped after the last reading of the maps, sampled inside the reread
 * rate limit (as a program is while exec and its loader map it): the address
 * resolves once the batch resolves, not [unknown] for good. */
static void test_mapped_late(void)
{
	struct kx_symres r = {0};
	char err[200];
	struct kx_symcollect *c = kx_symcollect_new(&r, NULL, NULL, NULL, err, sizeof(err));
	uint64_t late;
	size_t len = 0;
	void *base;

	CHECK(c);
	if (!c)
		return;
	collect_at(c, (uint64_t)(uintptr_t)kxt_sym_alpha, 9); /* the snapshot */
	collect_at(c, 0x10, 9); /* outside every mapping: read again, now */
	base = map_self(&len, &late);
	CHECK(base != MAP_FAILED);
	collect_at(c, late, 9); /* same time stamp: inside the rate limit */
	CHECK(kx_symcollect_resolve(c) == 0);
	CHECK(names_alpha(&r, 9, late));
	CHECK_EQ_U(r.unknown, 1); /* the junk address only */
	if (base != MAP_FAILED)
		munmap(base, len);
	kx_symcollect_free(c);
	kx_symres_free(&r);
}

/* An exec: what the old image noted, junk outside its maps too, resolves
 * against the maps read while it ran, not against the new image's (a
 * mapping the old image had, gone now, still names its addresses). */
static void test_old_image_kept(void)
{
	struct kx_symres r = {0};
	char err[200];
	struct kx_symcollect *c = kx_symcollect_new(&r, NULL, NULL, NULL, err, sizeof(err));
	size_t len = 0;
	uint64_t old;
	void *base = map_self(&len, &old);

	CHECK(c && base != MAP_FAILED);
	if (c && base != MAP_FAILED) {
		collect_at(c, old, 11); /* the old image's snapshot holds the mapping */
		collect_at(c, 0x10, 11);
		munmap(base, len); /* gone with the old image */
		/* The new image: the old one's entries resolve first. */
		collect_at(c, (uint64_t)(uintptr_t)kxt_sym_alpha, 12);
		CHECK(kx_symcollect_resolve(c) == 0);
		CHECK(names_alpha(&r, 11, old));
	} else if (base != MAP_FAILED) {
		munmap(base, len);
	}
	kx_symcollect_free(c);
	kx_symres_free(&r);
}

/* A snapshot that could not be taken (here: no descriptor left to open the
 * maps; as for a process sampled inside its exec, whose maps list no code
 * yet) is taken again at a later sample of the process, even of an address
 * already resolved, not only at a batch's resolve (the process may be gone
 * by then); it is then no longer counted as missed. */
static void test_missed_retried(void)
{
	struct kx_symres r = {0};
	struct kx_symbolizer_stats st;
	struct rlimit old, lim;
	char err[200];
	struct kx_symcollect *c = kx_symcollect_new(&r, NULL, NULL, NULL, err, sizeof(err));
	uint64_t alpha = (uint64_t)(uintptr_t)kxt_sym_alpha, next = alpha + 1;
	struct kx_sample smp;
	int fd = open("/dev/null", O_RDONLY);

	CHECK(c && fd >= 0 && getrlimit(RLIMIT_NOFILE, &old) == 0);
	if (!c || fd < 0) {
		kx_symcollect_free(c);
		return;
	}
	close(fd);
	lim = (struct rlimit){.rlim_cur = (rlim_t)fd, .rlim_max = old.rlim_max};
	CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
	collect_at(c, alpha, 13); /* the maps cannot be opened */
	kx_symcollect_resolve(c); /* nor at the resolve: alpha is [unknown] */
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	kx_symcollect_stats(c, &st);
	CHECK_EQ_U(st.procs_missed, 1);
	one_sample(&smp, &alpha, 13);
	smp.ts_ns = 1000000000ull; /* past the reread limit */
	CHECK(kx_symcollect_sample(c, &smp) == 0);
	kx_symcollect_stats(c, &st);
	CHECK_EQ_U(st.procs_missed, 0);
	collect_at(c, next, 13);
	CHECK(kx_symcollect_resolve(c) == 0);
	CHECK(names_alpha(&r, 13, next));
	kx_symcollect_free(c);
	kx_symres_free(&r);
}

/* A zombie maps no code: its maps are not a snapshot (-1, said why). */
static void test_zombie_maps(void)
{
	struct kx_procmap *m = NULL;
	siginfo_t si;
	char err[200] = "";
	size_t n = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	/* Exited, not reaped: its /proc entry stays, its memory is gone. */
	CHECK(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0);
	CHECK(kx_procmaps_read(pid, &m, &n, err, sizeof(err)) == -1);
	CHECK(strstr(err, "lists no code") != NULL);
	kx_procmaps_free(m, n);
	waitpid(pid, NULL, 0);
}

/* Entries put in whole (a record file's): found once settled, strings interned. */
static void test_symres_put(void)
{
	struct kx_symres_names n = {"f", "/lib/x.so", "abcd", 4, 0x1004, 1};
	struct kx_symres r = {0};
	const struct kx_symres_entry *e;

	CHECK(kx_symres_put(&r, 5, 1, 0x1000, &n) == 0);
	n.func = "g";
	CHECK(kx_symres_put(&r, 5, 1, 0x2000, &n) == 0);
	CHECK(kx_symres_put(&r, 5, 1, 0x2000, &n) == 0); /* a repeat */
	CHECK(kx_symres_find(&r, 5, 1, 0x1000) == NULL); /* not settled yet */
	kx_symres_settle(&r);
	CHECK_EQ_U(r.n, 2);
	e = kx_symres_find(&r, 5, 1, 0x2000);
	CHECK(e);
	CHECK_STR(kx_symres_str(&r, e->func), "g");
	CHECK_EQ_U(e->module, kx_symres_find(&r, 5, 1, 0x1000)->module);
	CHECK(kx_symres_find(&r, 5, 0, 0x2000) == NULL);
	kx_symres_free(&r);
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);

	self_exe[n > 0 ? n : 0] = 0;
	kxt_sym_alpha(1);
	kxt_sym_beta(1);
	RUN(test_own_functions);
	RUN(test_libc_function);
	RUN(test_zombie_maps);
	RUN(test_pie_offsets);
	RUN(test_build_id);
	RUN(test_vdso);
	RUN(test_short_lived);
	RUN(test_as_process);
	RUN(test_unknown_counted);
	RUN(test_kallsyms_live);
	RUN(test_kallsyms_modules);
	RUN(test_kallsyms_hidden);
	RUN(test_resolved_table);
	RUN(test_mapped_late);
	RUN(test_old_image_kept);
	RUN(test_missed_retried);
	RUN(test_symres_put);
	KXT_EXIT();
}
