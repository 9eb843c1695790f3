/*
 * DWARF unwinding of copied user stacks (see unwind.h): a small table of
 * per-process dwfl sessions and the libdw thread callbacks that serve the
 * sample's registers and its stack copy.
 */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sample_rec.h" /* bpf/: KX_USTACK_NREGS, KX_USTACK_REG_* */
#include "symbol/fpcheck.h"
#include "symbol/perfmap.h"
#include "symbol/unwind.h"

#define UNW_PROCS 64 /* processes with a dwfl kept at once */
/* A pc outside every module reported: the process's modules are reported
 * again, first after 1 ms, then after twice the last wait, up to 0.2 s (a
 * process loading its libraries gets them at once, JIT code that no report
 * will explain costs a report every 0.2 s at most). */
#define UNW_REREPORT_MIN_NS 1000000ull   /* 1 ms */
#define UNW_REREPORT_MAX_NS 200000000ull /* 0.2 s */
#define UNW_DWARF_CB_OK     0
#define UNW_DWARF_CB_END    1
/* CPython's -X perf trampolines (Python/asm_trampoline.S): JIT code named
 * "py::FUNC:FILE" in the perf map, "[push %rbp | sub $8,%rsp]; call *%rcx;
 * ...; ret". At its return address: CFA %rsp+16, the return address at
 * [%rsp+8], every other register the caller's. */
#define UNW_PY_PREFIX "py::"
#define UNW_PY_RA_OFF 8  /* bytes: return address above the frame's %rsp */
#define UNW_PY_CFA    16 /* bytes: the caller's %rsp above the frame's */
/* The registers a caller's frame can have (DWARF numbering): the
 * callee-saved %rbx, %rbp, %r12-%r15, and %rsp and the return address; the
 * others are undefined past frame 0, so they are not asked for each frame. */
#define UNW_CALLER_REGS                                                                            \
	((1u << 3) | (1u << 6) | (1u << 7) | (0xfu << 12) | (1u << KX_USTACK_REG_IP))

/* libdw, opened at the first unwinder (not linked: a program that never
 * unwinds, such as the TensorFlow plugin, does not need it installed). */
#define UNW_LIBDW "libdw.so.1"
static struct {
	__typeof__(dwfl_addrmodule) *addrmodule;
	__typeof__(dwfl_attach_state) *attach_state;
	__typeof__(dwfl_begin) *begin;
	__typeof__(dwfl_end) *end;
	__typeof__(dwfl_frame_pc) *frame_pc;
	__typeof__(dwfl_frame_reg) *frame_reg; /* optional (elfutils 0.188): NULL, no
	                                          trampoline is stepped */
	__typeof__(dwfl_getthread_frames) *getthread_frames;
	__typeof__(dwfl_linux_proc_find_elf) *linux_proc_find_elf;
	__typeof__(dwfl_linux_proc_report) *linux_proc_report;
	__typeof__(dwfl_module_getelf) *module_getelf;
	__typeof__(dwfl_module_info) *module_info;
	__typeof__(dwfl_report_begin) *report_begin;
	__typeof__(dwfl_report_end) *report_end;
	__typeof__(dwfl_standard_find_debuginfo) *standard_find_debuginfo;
	__typeof__(dwfl_thread_state_register_pc) *thread_state_register_pc;
	__typeof__(dwfl_thread_state_registers) *thread_state_registers;
} dw;
static pthread_once_t dw_once = PTHREAD_ONCE_INIT;
static char dw_err[200];

static void dw_open(void)
{
	void *h = dlopen(UNW_LIBDW, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(dw_err, sizeof(dw_err),
		         "--call-graph dwarf needs elfutils' libdw (%s: %s; Debian: apt install "
		         "libdw1)",
		         UNW_LIBDW, dlerror());
		return;
	}
	if (!((dw.addrmodule = dlsym(h, "dwfl_addrmodule")) &&
	      (dw.attach_state = dlsym(h, "dwfl_attach_state")) &&
	      (dw.begin = dlsym(h, "dwfl_begin")) && (dw.end = dlsym(h, "dwfl_end")) &&
	      (dw.frame_pc = dlsym(h, "dwfl_frame_pc")) &&
	      (dw.getthread_frames = dlsym(h, "dwfl_getthread_frames")) &&
	      (dw.linux_proc_find_elf = dlsym(h, "dwfl_linux_proc_find_elf")) &&
	      (dw.linux_proc_report = dlsym(h, "dwfl_linux_proc_report")) &&
	      (dw.module_getelf = dlsym(h, "dwfl_module_getelf")) &&
	      (dw.module_info = dlsym(h, "dwfl_module_info")) &&
	      (dw.report_begin = dlsym(h, "dwfl_report_begin")) &&
	      (dw.report_end = dlsym(h, "dwfl_report_end")) &&
	      (dw.standard_find_debuginfo = dlsym(h, "dwfl_standard_find_debuginfo")) &&
	      (dw.thread_state_register_pc = dlsym(h, "dwfl_thread_state_register_pc")) &&
	      (dw.thread_state_registers = dlsym(h, "dwfl_thread_state_registers")))) {
		snprintf(dw_err, sizeof(dw_err),
		         "%s lacks the dwfl frame API: elfutils 0.158 or newer is needed",
		         UNW_LIBDW);
		dlclose(h);
		return;
	}
	dw.frame_reg = dlsym(h, "dwfl_frame_reg");
}

struct unw_proc {
	Dwfl *dwfl;       /* NULL: slot free */
	uint32_t pid;     /* tgid */
	uint32_t exec_id; /* the image its modules were reported for */
	uint64_t used_ns; /* last sample unwound with it */
	uint64_t made_ns; /* when its modules were reported */
	uint64_t wait_ns; /* least time before they are reported again for a pc outside them */
	const struct kx_ustack *cur; /* the stack being unwound */
	int read_outside;            /* it asked for memory outside the copy */
	/* A walk restarted past a trampoline: its first frame's registers
	 * (DWARF numbering, those set in init_valid); NULL: the sample's. */
	const uint64_t *init_regs;
	uint32_t init_valid;   /* bit i: init_regs[i] known */
	struct kx_perfmap *pm; /* its /tmp/perf-PID.map, read on first need; kept
	                          while the pid is (across reports) */
};

struct unw_walk {
	uint64_t *ips;
	unsigned int n, max;
	int restarted;      /* the walk's first frame is ips[n]'s return address - 1 */
	unsigned int first; /* ips index of the walk's first frame */
	/* The registers of the last frame, when a caller's */
	uint64_t jit_regs[KX_USTACK_NREGS];
	uint32_t jit_valid;   /* bit i: jit_regs[i] known */
	unsigned int jit_idx; /* its index in ips; jit_valid 0: none */
};

struct kx_unwinder {
	struct unw_proc procs[UNW_PROCS];
	struct kx_unwind_stats st;
	uint64_t pm_refused;   /* perf maps not read (said once) */
	uint64_t no_frame_reg; /* trampolines not stepped: no dwfl_frame_reg (said once) */
	char *debuginfo_path;
	Dwfl_Callbacks cb;
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unw_proc *p = arg;

	(void)dwfl;
	if (*thread_argp) /* the one thread: the sample's */
		return 0;
	*thread_argp = p;
	return (pid_t)p->pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unw_proc *p = arg;

	(void)dwfl;
	*thread_argp = p;
	return tid == (pid_t)p->pid;
}

/* The word at addr in s's stack copy: 0, or -1 when outside it. */
static int copy_word(const struct kx_ustack *s, uint64_t addr, uint64_t *v)
{
	uint64_t sp = s->regs[KX_USTACK_REG_SP];

	if (addr < sp || addr - sp > s->len || s->len - (addr - sp) < sizeof(*v))
		return -1;
	memcpy(v, s->stack + (addr - sp), sizeof(*v));
	return 0;
}

/* Reads a word of the stack copy; nothing outside it is read. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unw_proc *p = arg;
	uint64_t v;

	(void)dwfl;
	if (copy_word(p->cur, addr, &v)) {
		p->read_outside = 1;
		return false;
	}
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unw_proc *p = arg;
	Dwarf_Word regs[KX_USTACK_NREGS];

	if (p->init_regs) {
		dw.thread_state_register_pc(thread, p->init_regs[KX_USTACK_REG_IP]);
		for (int i = 0; i < KX_USTACK_NREGS; i++) {
			regs[i] = p->init_regs[i];
			if (i != KX_USTACK_REG_IP && (p->init_valid >> i & 1) &&
			    !dw.thread_state_registers(thread, i, 1, &regs[i]))
				return false;
		}
		return true;
	}
	for (int i = 0; i < KX_USTACK_NREGS; i++)
		regs[i] = p->cur->regs[i];
	dw.thread_state_register_pc(thread, regs[KX_USTACK_REG_IP]);
	return dw.thread_state_registers(thread, 0, KX_USTACK_NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_cb = {
        .next_thread = next_thread,
        .get_thread = get_thread,
        .memory_read = memory_read,
        .set_initial_registers = set_initial_registers,
};

struct kx_unwinder *kx_unwinder_new(char *err, size_t len)
{
	struct kx_unwinder *u;

	pthread_once(&dw_once, dw_open);
	if (dw_err[0]) {
		snprintf(err, len, "%s", dw_err);
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	u->cb.find_elf = dw.linux_proc_find_elf;
	u->cb.find_debuginfo = dw.standard_find_debuginfo;
	u->cb.debuginfo_path = &u->debuginfo_path;
	return u;
}

static void proc_drop(struct unw_proc *p)
{
	if (p->dwfl)
		dw.end(p->dwfl);
	if (p->pm) {
		kx_perfmap_free(p->pm);
		free(p->pm);
	}
	memset(p, 0, sizeof(*p));
}

/* Reports the modules of s's process into slot p and attaches to it. */
static int proc_make(struct kx_unwinder *u, struct unw_proc *p, const struct kx_ustack *s)
{
	uint64_t wait = p->dwfl && p->pid == s->pid && p->exec_id == s->exec_id
	                        ? 2 * p->wait_ns
	                        : UNW_REREPORT_MIN_NS;
	struct kx_perfmap *pm = p->pid == s->pid ? p->pm : NULL;

	if (pm)
		p->pm = NULL; /* the same process: its perf map stays */
	proc_drop(p);
	p->pm = pm;
	p->wait_ns = wait < UNW_REREPORT_MAX_NS ? wait : UNW_REREPORT_MAX_NS;
	p->dwfl = dw.begin(&u->cb);
	if (!p->dwfl)
		return -1;
	p->pid = s->pid;
	p->exec_id = s->exec_id;
	p->made_ns = s->ts_ns;
	u->st.reports++;
	dw.report_begin(p->dwfl);
	if (dw.linux_proc_report(p->dwfl, (pid_t)s->pid) != 0 ||
	    dw.report_end(p->dwfl, NULL, NULL) != 0 ||
	    !dw.attach_state(p->dwfl, NULL, (pid_t)s->pid, &thread_cb, p)) {
		proc_drop(p);
		return -1;
	}
	return 0;
}

/* The slot of s's process: its own, else a free one, else the least used. */
static struct unw_proc *proc_slot(struct kx_unwinder *u, const struct kx_ustack *s)
{
	struct unw_proc *old = &u->procs[0];

	for (int i = 0; i < UNW_PROCS; i++) {
		struct unw_proc *p = &u->procs[i];

		if (p->dwfl && p->pid == s->pid)
			return p;
		if (!p->dwfl || (old->dwfl && p->used_ns < old->used_ns))
			old = p;
	}
	return old;
}

/* A dwfl for s's image whose modules cover pc (the sample's, or a frame's
 * found in a walk), NULL when none can be made. */
static struct unw_proc *proc_get_pc(struct kx_unwinder *u, const struct kx_ustack *s, uint64_t pc)
{
	struct unw_proc *p = proc_slot(u, s);
	int mine = p->dwfl && p->pid == s->pid;

	if (mine && p->exec_id == s->exec_id && dw.addrmodule(p->dwfl, pc))
		return p;
	/* A pc no module explains: mapped since (the loader, dlopen), or JIT
	 * code that no report will explain (see UNW_REREPORT_*). */
	if (mine && p->exec_id == s->exec_id && s->ts_ns - p->made_ns < p->wait_ns)
		return p;
	return proc_make(u, p, s) ? NULL : p;
}

static struct unw_proc *proc_get(struct kx_unwinder *u, const struct kx_ustack *s)
{
	return proc_get_pc(u, s, s->regs[KX_USTACK_REG_IP]);
}

/* A walk of w.n frames that stopped at a return address outside every
 * module known: the modules reported again (the process mapped them since
 * its first sample, e.g. libc while the loader ran) when the wait allows.
 * The process's new session, or NULL when nothing was reported again. */
static struct unw_proc *proc_refresh(struct kx_unwinder *u, struct unw_proc *p,
                                     const struct kx_ustack *s, const struct unw_walk *w)
{
	uint64_t made = p->made_ns, ra;

	if (w->n < 2)
		return NULL;
	ra = w->ips[w->n - 1] - 1;
	if (dw.addrmodule(p->dwfl, ra))
		return NULL;
	p = proc_get_pc(u, s, ra);
	return p && p->made_ns != made ? p : NULL;
}

/* Keeps the registers of frame f, frame i of w, a caller's (its pc a
 * return address): the frame of a trampoline that may be stepped when the
 * walk ends there. Whether it is one is not asked of the modules (a JIT
 * page may lie inside a module's extent), only of the perf map, once. */
static void keep_jit_regs(struct unw_walk *w, Dwfl_Frame *f, unsigned int i)
{
	Dwarf_Word v;

	w->jit_valid = 0;
	if (!i || !dw.frame_reg)
		return;
	for (int r = 0; r < KX_USTACK_NREGS; r++)
		if ((UNW_CALLER_REGS >> r & 1) && dw.frame_reg(f, (unsigned int)r, &v) == 0) {
			w->jit_regs[r] = v;
			w->jit_valid |= 1u << r;
		}
	w->jit_idx = i;
}

static int on_frame(Dwfl_Frame *f, void *arg)
{
	struct unw_walk *w = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dw.frame_pc(f, &pc, &activation))
		return UNW_DWARF_CB_END;
	/* A restarted walk begins at its return address - 1 (the call: its
	 * CFI row); the return address is what a frame holds. */
	w->ips[w->n] = w->restarted && w->n == w->first ? pc + 1 : pc;
	keep_jit_regs(w, f, w->n);
	w->n++;
	return w->n < w->max ? UNW_DWARF_CB_OK : UNW_DWARF_CB_END;
}

/* One walk of s with p's modules into w (appended to its frames, from
 * p->init_regs when set): 0 when libdw found the end. */
static int walk(struct unw_proc *p, const struct kx_ustack *s, struct unw_walk *w)
{
	int rc;

	p->used_ns = s->ts_ns;
	p->cur = s;
	p->read_outside = 0;
	w->first = w->n;
	w->jit_valid = 0;
	rc = dw.getthread_frames(p->dwfl, (pid_t)s->pid, on_frame, w);
	p->cur = NULL;
	return rc;
}

/* Whether frame i of w (a pc; a return address past i 0) lies in no
 * module of p: JIT code, which has no CFI. */
static int frame_in_jit(const struct unw_proc *p, const struct unw_walk *w, unsigned int i)
{
	return !dw.addrmodule(p->dwfl, i ? w->ips[i] - 1 : w->ips[i]);
}

/* Whether pc, in no module of p, is named as a CPython trampoline in its
 * process's perf map (read on first need, again when it changed). */
static int py_trampoline(struct kx_unwinder *u, struct unw_proc *p, uint64_t pc)
{
	char path[32], err[160];
	const char *fn;
	struct stat st;
	uint64_t off;

	if (!p->pm) {
		p->pm = malloc(sizeof(*p->pm));
		if (!p->pm)
			return 0;
		snprintf(path, sizeof(path), "/proc/%u", p->pid);
		kx_perfmap_init(p->pm, (pid_t)p->pid, stat(path, &st) ? 0 : (uint32_t)st.st_uid);
	}
	if (kx_perfmap_load(p->pm, err, sizeof(err)) < 0 && !u->pm_refused++)
		fprintf(stderr, "kxprof: unwinding: %s\n", err);
	fn = kx_perfmap_find(p->pm, pc, &off);
	return fn && !strncmp(fn, UNW_PY_PREFIX, strlen(UNW_PY_PREFIX));
}

/* A walk w of s that stopped at JIT code: when that is a CPython
 * trampoline, sets regs (and *valid) to its caller's registers, with its
 * return address - 1 as the pc. 0, or -1 when it is none, or not one this
 * step understands (its caller in no module, its frame outside the copy). */
static int py_step(struct kx_unwinder *u, struct unw_proc *p, const struct kx_ustack *s,
                   const struct unw_walk *w, uint64_t *regs, uint32_t *valid)
{
	const uint32_t need = 1u << KX_USTACK_REG_SP;
	uint64_t sp, ra;

	if (w->n < 2 || !py_trampoline(u, p, w->ips[w->n - 1]))
		return -1;
	if (!dw.frame_reg) {
		if (!u->no_frame_reg++)
			fprintf(stderr,
			        "kxprof: %s lacks dwfl_frame_reg (elfutils 0.188 or newer): "
			        "stacks stop at CPython's -X perf trampolines\n",
			        UNW_LIBDW);
		return -1;
	}
	if (!w->jit_valid || w->jit_idx != w->n - 1 || (w->jit_valid & need) != need)
		return -1;
	sp = w->jit_regs[KX_USTACK_REG_SP];
	if (copy_word(s, sp + UNW_PY_RA_OFF, &ra) || !ra || !dw.addrmodule(p->dwfl, ra - 1))
		return -1;
	memcpy(regs, w->jit_regs, sizeof(w->jit_regs));
	*valid = w->jit_valid | 1u << KX_USTACK_REG_IP;
	regs[KX_USTACK_REG_SP] = sp + UNW_PY_CFA;
	regs[KX_USTACK_REG_IP] = ra - 1;
	return 0;
}

/* Counts the JIT frames w went past (libdw stepped each by its frame
 * pointer, having no CFI there) and classifies a walk that stopped. */
static int walk_end(struct kx_unwinder *u, const struct unw_proc *p, const struct unw_walk *w,
                    int whole)
{
	for (unsigned int i = 0; i + 1 < w->n; i++)
		u->st.jit_steps += frame_in_jit(p, w, i);
	if (!w->n) {
		u->st.failed++;
		return KX_UNWIND_STOPPED;
	}
	if (whole) {
		u->st.unwound++;
		return KX_UNWIND_ROOT;
	}
	u->st.partial++;
	if (w->n == w->max || !frame_in_jit(p, w, w->n - 1))
		return KX_UNWIND_STOPPED;
	u->st.jit_stops++;
	return KX_UNWIND_JIT;
}

unsigned int kx_unwind(struct kx_unwinder *u, const struct kx_ustack *s, uint64_t *ips,
                       unsigned int max, int *end)
{
	struct unw_walk w = {.ips = ips, .max = max};
	uint64_t regs[KX_USTACK_NREGS];
	struct unw_proc *p, *q;
	int rc;

	*end = KX_UNWIND_STOPPED;
	if (!max || !(p = proc_get(u, s))) {
		u->st.failed++;
		return 0;
	}
	rc = walk(p, s, &w);
	if ((rc != 0 || p->read_outside) && (q = proc_refresh(u, p, s, &w)) != NULL) {
		p = q;
		w.n = 0;
		rc = walk(p, s, &w);
	}
	/* Past each CPython trampoline the walk stopped at: again from its
	 * caller, memory still read from the copy only. */
	while ((rc != 0 || p->read_outside) && w.n < w.max &&
	       !py_step(u, p, s, &w, regs, &p->init_valid)) {
		unsigned int had = w.n;

		p->init_regs = regs;
		w.restarted = 1;
		rc = walk(p, s, &w);
		p->init_regs = NULL;
		if (w.n == had)
			break; /* libdw took none of the registers: the walk ends there */
		u->st.py_steps++;
	}
	/* libdw ends a walk whose next frame it cannot read as if it were the
	 * outermost: only a walk that never read outside the copy is whole. */
	*end = walk_end(u, p, &w, rc == 0 && !p->read_outside);
	return w.n;
}

/* Module verdicts kept in each module's userdata (per process session). */
#define UNW_FP_KEPT ((void *)1)
#define UNW_FP_NOT  ((void *)2)

/* Whether module m keeps frame pointers (symbol/fpcheck.h), found once. */
static int module_keeps_fp(Dwfl_Module *m)
{
	struct kx_fpcheck c;
	Dwarf_Addr bias;
	void **ud = NULL;
	Elf *elf;

	if (!dw.module_info(m, &ud, NULL, NULL, NULL, NULL, NULL, NULL) || !ud)
		return 0;
	if (!*ud) {
		elf = dw.module_getelf(m, &bias);
		*ud = elf && kx_fpcheck_elf(elf, &c) ? UNW_FP_KEPT : UNW_FP_NOT;
	}
	return *ud == UNW_FP_KEPT;
}

int kx_unwind_fp_trusted(struct kx_unwinder *u, const struct kx_ustack *s, const uint64_t *ips,
                         unsigned int n)
{
	struct unw_proc *p;
	Dwfl_Module *m;
	uint64_t a, made;

	if (n < 2 || !(p = proc_get(u, s)))
		return 0;
	p->used_ns = s->ts_ns;
	made = p->made_ns;
	for (unsigned int i = 0; i < n; i++) {
		/* A return address may be just past its call's function. */
		a = i ? ips[i] - 1 : ips[i];
		m = dw.addrmodule(p->dwfl, a);
		/* Mapped since the modules were reported: once, again. */
		if (!m && (p = proc_get_pc(u, s, a)) && p->made_ns != made) {
			made = p->made_ns;
			m = dw.addrmodule(p->dwfl, a);
		}
		if (!p)
			return 0;
		/* Each caller's return address was read from its callee's frame
		 * record: right when the callee keeps frame pointers. The
		 * outermost frame needs only to be code (libc's
		 * __libc_start_call_main, start_thread: the walk ends there). */
		if (!m || (i + 1 < n && !module_keeps_fp(m)))
			return 0;
	}
	return 1;
}

void kx_unwinder_stats(const struct kx_unwinder *u, struct kx_unwind_stats *st)
{
	*st = u->st;
}

void kx_unwinder_free(struct kx_unwinder *u)
{
	if (!u)
		return;
	for (int i = 0; i < UNW_PROCS; i++)
		proc_drop(&u->procs[i]);
	free(u->debuginfo_path);
	free(u);
}
