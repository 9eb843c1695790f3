/*
 * Driver entry hooks (see drvhook.h): which hooked functions this kernel
 * has (vmlinux or module BTF, kallsyms for kprobes), the fentry > kprobe >
 * skipped chain, the per-function report, and reading the counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "drvcall.skel.h"
#include "capture/progmiss.h"
#include "capture/drvcall.h"
#include "capture/probe.h"

/* Slot = index = attach cookie; the module whose BTF holds the function. */
static const struct {
	const char *fn;
	const char *mod;
} fns[KX_DRV_FN_MAX] = {
        {"drm_ioctl", "drm"},
        {"nvidia_unlocked_ioctl", "nvidia"},
        {"nvidia_frontend_unlocked_ioctl", "nvidia"},
        {"uvm_unlocked_ioctl_entry", "nvidia_uvm"},
        {"i915_gem_do_execbuffer", "i915"},
        {"xe_exec_ioctl", "xe"},
        {"amdgpu_cs_ioctl", "amdgpu"},
        {"kfd_ioctl", "amdgpu"},
};
#define NFNS KX_DRV_FN_MAX

/* A kernel function whose BTF we can read, for the fentry capability probe. */
#define PROBE_FN "security_file_ioctl"

int kx_drvhook_nfns(void)
{
	return NFNS;
}

const char *kx_drvhook_fn(int i)
{
	return i >= 0 && i < NFNS ? fns[i].fn : NULL;
}

/* What the kernel allows and has. */
struct plan {
	int fentry_ok, kprobe_ok;
	char fentry_why[28], kprobe_why[28];
	uint8_t in_btf[NFNS], in_syms[NFNS];
};

static int btf_has_fn(struct btf *vmlinux, const char *fn, const char *mod)
{
	char path[64];
	struct btf *m;
	int found;

	if (btf__find_by_name_kind(vmlinux, fn, BTF_KIND_FUNC) > 0)
		return 1;
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod);
	if (access(path, R_OK) != 0)
		return 0;
	m = btf__parse_split(path, vmlinux);
	if (!m)
		return 0;
	found = btf__find_by_name_kind(m, fn, BTF_KIND_FUNC) > 0;
	btf__free(m);
	return found;
}

/* Functions kprobes can reach although their module has no BTF (NVIDIA's). */
static void kallsyms_scan(struct plan *p)
{
	char line[512], name[256];
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char type;

		if (sscanf(line, "%*s %c %255s", &type, name) != 2 || (type != 't' && type != 'T'))
			continue;
		for (int i = 0; i < NFNS; i++)
			if (!p->in_syms[i] && strcmp(name, fns[i].fn) == 0)
				p->in_syms[i] = 1;
	}
	fclose(f);
}

static void plan_scan(struct plan *p)
{
	char why[160] = "";
	struct btf *vmlinux;
	int need_syms = 0;

	memset(p, 0, sizeof(*p));
	p->fentry_ok = kx_probe_fentry(PROBE_FN, why, sizeof(why));
	snprintf(p->fentry_why, sizeof(p->fentry_why), "%s",
	         p->fentry_ok                       ? "ok"
	         : strstr(why, strerror(EPERM))     ? "refused (EPERM)"
	         : strstr(why, "not in kernel BTF") ? "untested (no BTF)"
	                                            : "refused");
	p->kprobe_ok = kx_probe_kprobe(PROBE_FN, why, sizeof(why));
	snprintf(p->kprobe_why, sizeof(p->kprobe_why), "%s",
	         p->kprobe_ok                   ? "ok"
	         : strstr(why, "no kprobe PMU") ? "absent (no kprobe PMU)"
	                                        : "refused");
	vmlinux = btf__load_vmlinux_btf();
	for (int i = 0; i < NFNS; i++) {
		p->in_btf[i] = vmlinux && btf_has_fn(vmlinux, fns[i].fn, fns[i].mod);
		need_syms |= !p->in_btf[i];
	}
	btf__free(vmlinux);
	if (p->kprobe_ok && need_syms)
		kallsyms_scan(p);
}

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "?";
}

static int present(const struct plan *p, int i)
{
	return p->in_btf[i] || p->in_syms[i];
}

int kx_drvhook_probe(struct kx_drvhook_status *out, int max)
{
	struct plan p;
	int n = 0;

	plan_scan(&p);
	for (int i = 0; i < NFNS && n < max; i++) {
		struct kx_drvhook_status *s = &out[n++];

		memset(s, 0, sizeof(*s));
		snprintf(s->fn, sizeof(s->fn), "%s", fns[i].fn);
		snprintf(s->mech, sizeof(s->mech), "-");
		if (!present(&p, i)) {
			snprintf(s->why, sizeof(s->why),
			         "not in this kernel (fentry %s; kprobe %s)", p.fentry_why,
			         p.kprobe_why);
		} else if (p.fentry_ok && p.in_btf[i]) {
			s->usable = 1;
			snprintf(s->mech, sizeof(s->mech), "fentry");
		} else if (p.kprobe_ok) {
			s->usable = 1;
			snprintf(s->mech, sizeof(s->mech), "kprobe");
		} else {
			snprintf(s->why, sizeof(s->why), "fentry %s, kprobes %s -> skipped",
			         p.fentry_why, p.kprobe_why);
		}
	}
	return n;
}

enum { VIA_NONE, VIA_FENTRY, VIA_KPROBE };

struct kx_drvhook {
	struct drvcall_bpf *fskel, *kskel; /* fentry and kprobe flavours */
	struct bpf_link *links[4 * NFNS];
	int nlinks;
	uint8_t via[NFNS];
};

static int keep(struct kx_drvhook *d, struct bpf_link *l)
{
	if (!l)
		return -errno;
	d->links[d->nlinks++] = l;
	return 0;
}

static struct bpf_program *slot_prog(struct drvcall_bpf *skel, const char *kind, int i)
{
	char name[32];

	snprintf(name, sizeof(name), "%s_%d", kind, i);
	return bpf_object__find_program_by_name(skel->obj, name);
}

/* fentry/fexit for every function with BTF; 0 or -errno of the load. */
static int try_fentry(struct kx_drvhook *d, const struct plan *p, char (*why)[96])
{
	struct bpf_program *prog;
	int n = 0, err;

	d->fskel = drvcall_bpf__open();
	if (!d->fskel)
		return -errno;
	bpf_object__for_each_program(prog, d->fskel->obj) bpf_program__set_autoload(prog, false);
	for (int i = 0; i < NFNS; i++) {
		struct bpf_program *en = slot_prog(d->fskel, "fentry", i);
		struct bpf_program *ex = slot_prog(d->fskel, "fexit", i);

		if (!p->in_btf[i] || !en || !ex ||
		    bpf_program__set_attach_target(en, 0, fns[i].fn) ||
		    bpf_program__set_attach_target(ex, 0, fns[i].fn))
			continue;
		bpf_program__set_autoload(en, true);
		bpf_program__set_autoload(ex, true);
		n++;
	}
	err = n ? drvcall_bpf__load(d->fskel) : -ENOENT;
	if (err) {
		drvcall_bpf__destroy(d->fskel);
		d->fskel = NULL;
		return err;
	}
	for (int i = 0; i < NFNS; i++) {
		struct bpf_program *en = slot_prog(d->fskel, "fentry", i);
		struct bpf_program *ex = slot_prog(d->fskel, "fexit", i);
		int base = d->nlinks;

		if (!bpf_program__autoload(en))
			continue;
		err = keep(d, bpf_program__attach(en));
		if (!err)
			err = keep(d, bpf_program__attach(ex));
		if (err) {
			while (d->nlinks > base)
				bpf_link__destroy(d->links[--d->nlinks]);
			snprintf(why[i], sizeof(why[i]), "fentry attach failed (%s)",
			         strerror(-err));
			continue;
		}
		d->via[i] = VIA_FENTRY;
	}
	return 0;
}

/* kprobe/kretprobe for the functions fentry did not take. */
static void try_kprobe(struct kx_drvhook *d, const struct plan *p, char (*why)[96])
{
	int n = 0, err;

	for (int i = 0; i < NFNS; i++)
		n += present(p, i) && d->via[i] == VIA_NONE;
	if (!n)
		return;
	d->kskel = drvcall_bpf__open();
	if (!d->kskel)
		return;
	{
		struct bpf_program *prog;

		bpf_object__for_each_program(prog, d->kskel->obj) bpf_program__set_autoload(
		        prog, prog == d->kskel->progs.kprobe_call ||
		                      prog == d->kskel->progs.kretprobe_call);
	}
	err = drvcall_bpf__load(d->kskel);
	if (err) {
		for (int i = 0; i < NFNS; i++)
			if (present(p, i) && d->via[i] == VIA_NONE)
				snprintf(why[i], sizeof(why[i]), "kprobe load failed (%s)",
				         strerror(-err));
		drvcall_bpf__destroy(d->kskel);
		d->kskel = NULL;
		return;
	}
	for (int i = 0; i < NFNS; i++) {
		LIBBPF_OPTS(bpf_kprobe_opts, o, .bpf_cookie = (__u64)i);
		int base = d->nlinks;

		if (!present(p, i) || d->via[i] != VIA_NONE)
			continue;
		err = keep(d, bpf_program__attach_kprobe_opts(d->kskel->progs.kprobe_call,
		                                              fns[i].fn, &o));
		o.retprobe = true;
		if (!err)
			err = keep(d, bpf_program__attach_kprobe_opts(
			                      d->kskel->progs.kretprobe_call, fns[i].fn, &o));
		if (err) {
			while (d->nlinks > base)
				bpf_link__destroy(d->links[--d->nlinks]);
			snprintf(why[i], sizeof(why[i]), "kprobe attach failed (%s)",
			         strerror(-err));
			continue;
		}
		d->via[i] = VIA_KPROBE;
	}
}

struct kx_drvhook *kx_drvhook_open(struct kx_capinfo *ci)
{
	struct kx_drvhook *d = calloc(1, sizeof(*d));
	char why[NFNS][96];
	struct plan p;
	int err = -ENOENT;

	if (!d)
		return NULL;
	memset(why, 0, sizeof(why));
	plan_scan(&p);
	if (p.fentry_ok)
		err = try_fentry(d, &p, why);
	if (err && err != -ENOENT)
		/* The probe passed but these targets were refused: say so, fall back. */
		snprintf(p.fentry_why, sizeof(p.fentry_why), "refused (%s)", errname(-err));
	if (p.kprobe_ok)
		try_kprobe(d, &p, why);

	for (int i = 0; i < NFNS; i++) {
		char name[48];
		struct kx_hook *h;

		snprintf(name, sizeof(name), "driver:%s", fns[i].fn);
		if (d->via[i] != VIA_NONE) {
			h = kx_capinfo_hook(ci, name, d->via[i] == VIA_FENTRY ? "fentry" : "kprobe",
			                    KX_HOOK_ATTACHED);
			if (h && d->via[i] == VIA_KPROBE && p.in_btf[i])
				snprintf(h->why, sizeof(h->why), "fentry %s", p.fentry_why);
			continue;
		}
		if (!present(&p, i)) {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why),
				         "not in this kernel (fentry %s; kprobe %s)", p.fentry_why,
				         p.kprobe_why);
		} else if (why[i][0]) {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_FAILED);
			if (h)
				snprintf(h->why, sizeof(h->why), "%.95s", why[i]);
		} else {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why), "fentry %s, kprobes %s -> skipped",
				         p.fentry_why, p.kprobe_why);
		}
	}
	if (!d->nlinks) {
		kx_drvhook_close(d);
		return NULL;
	}
	return d;
}

void kx_drvhook_detach(struct kx_drvhook *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nlinks; i++)
		bpf_link__destroy(d->links[i]);
	d->nlinks = 0;
}

/* Adds one skeleton's per-CPU counts of slot i into s. */
static void add_counts(struct drvcall_bpf *skel, uint32_t i, struct kx_drvcall_stat *s)
{
	int ncpu = libbpf_num_possible_cpus();
	struct kx_drvcall_val *v;

	if (!skel || ncpu <= 0)
		return;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.drvstats), &i, v) == 0) {
		for (int c = 0; c < ncpu; c++) {
			s->calls += v[c].calls;
			s->sum_ns += v[c].sum_ns;
			if (v[c].max_ns > s->max_ns)
				s->max_ns = v[c].max_ns;
			for (int k = 0; k < KX_HIST_SLOTS; k++)
				s->slots[k] += v[c].slots[k];
		}
	}
	free(v);
}

void kx_drvhook_read(struct kx_drvhook *d, struct kx_capinfo *ci)
{
	ci->ndrvcalls = 0;
	if (!d)
		return;
	for (int i = 0; i < NFNS; i++) {
		struct kx_drvcall_stat *s;

		if (d->via[i] == VIA_NONE || ci->ndrvcalls >= KX_DRV_FN_MAX)
			continue;
		s = &ci->drvcalls[ci->ndrvcalls++];
		memset(s, 0, sizeof(*s));
		snprintf(s->fn, sizeof(s->fn), "%s", fns[i].fn);
		snprintf(s->mech, sizeof(s->mech), "%s",
		         d->via[i] == VIA_FENTRY ? "fentry" : "kprobe");
		add_counts(d->via[i] == VIA_FENTRY ? d->fskel : d->kskel, (uint32_t)i, s);
	}
}

uint64_t kx_drvhook_missed(const struct kx_drvhook *d)
{
	if (!d)
		return 0;
	return (d->fskel ? kx_bpf_missed(d->fskel->obj) : 0) +
	       (d->kskel ? kx_bpf_missed(d->kskel->obj) : 0);
}

void kx_drvhook_close(struct kx_drvhook *d)
{
	if (!d)
		return;
	kx_drvhook_detach(d);
	drvcall_bpf__destroy(d->fskel);
	drvcall_bpf__destroy(d->kskel);
	free(d);
}
