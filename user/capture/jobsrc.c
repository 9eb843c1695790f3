/*
 * Job sources (see jobsrc.h): which job lifecycle tracepoints exist here,
 * loading bpf/jobs.bpf.c with only those enabled, the mechanism fallback,
 * the block disk filter, and the per-source report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "jobs.skel.h"
#include "capture/progmiss.h"
#include "capture/jobsrc.h"
#include "capture/probe.h"

/*
 * Every tracepoint the object handles. Flavoured events have tp_btf
 * ("btf_"), raw_tp ("raw_") and classic ("tp_") programs; classic-only ones
 * just "tp_". `key` events decide whether the source exists; gpu_scheduler
 * has two name sets (alt 1 new, alt 2 old), whichever the kernel has.
 */
struct ev {
	const char *src;
	const char *sys;
	const char *name;
	const char *prog; /* program name without the flavour prefix */
	uint8_t tp_only;
	uint8_t alt;
	uint8_t key;
};

static const struct ev evs[] = {
        {"block", "block", "block_rq_insert", "blk_insert", 0, 0, 0},
        {"block", "block", "block_rq_issue", "blk_issue", 0, 0, 1},
        {"block", "block", "block_rq_complete", "blk_complete", 0, 0, 1},
        {"block", "block", "block_rq_requeue", "blk_requeue", 0, 0, 0},
        {"kvm", "kvm", "kvm_userspace_exit", "kvm_exit", 0, 0, 1},
        {"kvm", "kvm", "kvm_pio", "kvm_pio", 0, 0, 0},
        {"dma_fence", "dma_fence", "dma_fence_emit", "fence_emit", 0, 0, 1},
        {"dma_fence", "dma_fence", "dma_fence_signaled", "fence_signaled", 0, 0, 1},
        {"dma_fence", "dma_fence", "dma_fence_wait_start", "fence_wait_start", 0, 0, 0},
        {"dma_fence", "dma_fence", "dma_fence_wait_end", "fence_wait_end", 0, 0, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job_queue", "sched_queue", 1, 1, 1},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job_run", "sched_run", 1, 1, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job_done", "sched_done", 1, 1, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job_add_dep", "sched_add_dep", 1, 1, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job_unschedulable", "sched_unsched", 1, 1, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job", "sched_queue_old", 1, 2, 1},
        {"gpu_scheduler", "gpu_scheduler", "drm_run_job", "sched_run_old", 1, 2, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_process_job", "sched_done_old", 1, 2, 0},
        {"gpu_scheduler", "gpu_scheduler", "drm_sched_job_wait_dep", "sched_wait_dep", 1, 2, 0},
        {"i915", "i915", "i915_request_add", "i915_add", 1, 0, 1},
        {"i915", "i915", "i915_request_execute", "i915_execute", 1, 0, 0},
        {"i915", "i915", "i915_request_retire", "i915_retire", 1, 0, 0},
        {"i915", "i915", "i915_request_wait_begin", "i915_wait_begin", 1, 0, 0},
        {"i915", "i915", "i915_request_wait_end", "i915_wait_end", 1, 0, 0},
        {"xe", "xe", "xe_sched_job_exec", "xe_exec", 1, 0, 1},
        {"xe", "xe", "xe_sched_job_run", "xe_run", 1, 0, 0},
        {"xe", "xe", "xe_hw_fence_signal", "xe_signal", 1, 0, 0},
        {"amdgpu", "amdgpu", "amdgpu_cs_ioctl", "amdgpu_cs", 1, 0, 1},
        {"amdgpu", "amdgpu", "amdgpu_sched_run_job", "amdgpu_run", 1, 0, 0},
        {"msm", "drm_msm_gpu", "msm_gpu_submit", "msm_submit", 1, 0, 1},
        {"msm", "drm_msm_gpu", "msm_gpu_submit_flush", "msm_flush", 1, 0, 0},
        {"msm", "drm_msm_gpu", "msm_gpu_submit_retired", "msm_retired", 1, 0, 0},
        {"v3d", "v3d", "v3d_submit_cl", "v3d_submit_cl", 1, 0, 1},
        {"v3d", "v3d", "v3d_bcl_irq", "v3d_bcl_irq", 1, 0, 0},
        {"v3d", "v3d", "v3d_rcl_irq", "v3d_rcl_irq", 1, 0, 0},
        {"v3d", "v3d", "v3d_submit_tfu", "v3d_submit_tfu", 1, 0, 0},
        {"v3d", "v3d", "v3d_tfu_irq", "v3d_tfu_irq", 1, 0, 0},
        {"v3d", "v3d", "v3d_submit_csd", "v3d_submit_csd", 1, 0, 0},
        {"v3d", "v3d", "v3d_csd_irq", "v3d_csd_irq", 1, 0, 0},
        {"vpu", "vpu", "job", "vpu_job", 1, 0, 1},
        {"amdxdna", "amdxdna", "xdna_job", "xdna_job", 1, 0, 1},
};
#define NEVS (sizeof(evs) / sizeof(evs[0]))

static const char *const srcs[] = {"block",  "kvm", "dma_fence", "gpu_scheduler", "i915",   "xe",
                                   "amdgpu", "msm", "v3d",       "vpu",           "amdxdna"};
#define NSRCS (sizeof(srcs) / sizeof(srcs[0]))

static const struct {
	const char *mech;
	const char *prefix;
} mechs[] = {{"tp_btf", "btf_"}, {"raw_tp", "raw_"}, {"tp", "tp_"}};
#define NMECHS (sizeof(mechs) / sizeof(mechs[0]))

/* EV_UNUSED: present, but nothing the session traces could produce it.
 * EV_PRIVATE: present, but filtered by device alone, so it would record
 * other users' jobs: off in a session restricted to one uid. */
enum ev_state { EV_ABSENT, EV_UNUSED, EV_PRIVATE, EV_OFF, EV_WANTED, EV_ATTACHED, EV_FAILED };

/* Sources whose later phases are not tied to the processes that queued them. */
static int device_filtered(const char *src)
{
	return !strcmp(src, "block") || !strcmp(src, "v3d");
}

struct kx_jobsrc {
	struct jobs_bpf *skel;
	struct bpf_link *links[NEVS];
	int nlinks;
};

/* What this kernel has: tracefs events dirs, else typed-tracepoint BTF. */
struct avail {
	const char *tracefs; /* NULL: not usable (why in tracefs_why) */
	char tracefs_why[160];
	struct btf *vmlinux; /* loaded on first need */
	int btf_tried;
	uint8_t tracefs_has[NEVS];
	uint8_t btf_has[NEVS];
};

static int btf_has_tp(struct avail *a, const char *name)
{
	const char *kvm_btf = "/sys/kernel/btf/kvm";
	char tname[128];
	struct btf *m;
	int found;

	if (!a->btf_tried) {
		a->btf_tried = 1;
		a->vmlinux = btf__load_vmlinux_btf();
	}
	if (!a->vmlinux)
		return 0;
	snprintf(tname, sizeof(tname), "btf_trace_%s", name);
	if (btf__find_by_name_kind(a->vmlinux, tname, BTF_KIND_TYPEDEF) > 0)
		return 1;
	/* kvm built as a module: its tracepoints live in the module's BTF. */
	if (strncmp(name, "kvm", 3) != 0 || access(kvm_btf, R_OK) != 0)
		return 0;
	m = btf__parse_split(kvm_btf, a->vmlinux);
	if (!m)
		return 0;
	found = btf__find_by_name_kind(m, tname, BTF_KIND_TYPEDEF) > 0;
	btf__free(m);
	return found;
}

static void avail_scan(struct avail *a)
{
	memset(a, 0, sizeof(*a));
	a->tracefs = kx_probe_tracefs(a->tracefs_why, sizeof(a->tracefs_why));
	for (size_t i = 0; i < NEVS; i++) {
		char path[256];

		if (a->tracefs) {
			snprintf(path, sizeof(path), "%s/events/%s/%s", a->tracefs, evs[i].sys,
			         evs[i].name);
			a->tracefs_has[i] = access(path, F_OK) == 0;
		}
		/* Typed flavours need the BTF typedef; without tracefs it also tells
		 * whether a classic-only tracepoint exists at all. */
		if (!evs[i].tp_only || !a->tracefs)
			a->btf_has[i] = btf_has_tp(a, evs[i].name);
	}
}

static void avail_free(struct avail *a)
{
	btf__free(a->vmlinux);
	a->vmlinux = NULL;
}

static int exists(const struct avail *a, size_t i)
{
	return a->tracefs_has[i] || a->btf_has[i];
}

/* Attachable with mechanism m (index in mechs[]). */
static int usable(const struct avail *a, size_t i, size_t m)
{
	if (evs[i].tp_only || strcmp(mechs[m].mech, "tp") == 0)
		return a->tracefs_has[i];
	if (strcmp(mechs[m].mech, "tp_btf") == 0)
		return a->btf_has[i];
	return exists(a, i);
}

/* gpu_scheduler: the new names when the kernel has them, else the old. */
static int alt_chosen(const struct avail *a)
{
	for (size_t i = 0; i < NEVS; i++)
		if (evs[i].alt == 1 && evs[i].key && exists(a, i))
			return 1;
	return 2;
}

static struct bpf_program *prog_of(struct jobs_bpf *skel, size_t i, size_t m)
{
	char name[64];

	snprintf(name, sizeof(name), "%s%s", evs[i].tp_only ? "tp_" : mechs[m].prefix, evs[i].prog);
	return bpf_object__find_program_by_name(skel->obj, name);
}

static size_t mech_index(const char *mech)
{
	for (size_t m = 0; m < NMECHS; m++)
		if (mech && strcmp(mech, mechs[m].mech) == 0)
			return m;
	return 0;
}

int kx_jobsrc_set_devices(struct kx_jobsrc *j, const struct kx_device *d, int n)
{
	int fd = bpf_map__fd(j->skel->maps.jobdevs);
	uint32_t key, next, *prev = NULL;
	uint8_t one = 1;
	int rc = 0;

	/* Empty it first: deleting while walking would restart the walk. */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (bpf_map_delete_elem(fd, &next) != 0) {
			key = next;
			prev = &key;
		}
	}
	for (int i = 0; i < n; i++) {
		uint32_t dev;

		if (d[i].fkind != KX_FK_BLK)
			continue;
		dev = d[i].any_minor ? KX_DEV_ANY_MINOR(KX_MAJOR(d[i].dev))
		                     : kx_block_disk_of(d[i].dev);
		if (bpf_map_update_elem(fd, &dev, &one, BPF_ANY))
			rc = -1;
	}
	/* Records name disks by dev_t: their names are read now, while they exist. */
	kx_block_disks_note(d, n);
	return rc;
}

/* Opens the object with the enabled events of mechanism m; 0 or -errno. */
static int try_load(struct kx_jobsrc *j, const struct kx_jobsrc_opts *o, uint8_t *st, size_t m,
                    int with_gpu, struct avail *a)
{
	struct bpf_program *p;
	int n = 0, err;

	j->skel = jobs_bpf__open();
	if (!j->skel)
		return -errno;
	bpf_object__for_each_program(p, j->skel->obj) bpf_program__set_autoload(p, false);
	for (size_t i = 0; i < NEVS; i++) {
		if (st[i] != EV_WANTED && st[i] != EV_OFF)
			continue;
		st[i] = EV_OFF;
		if (!usable(a, i, m) || (evs[i].tp_only && !with_gpu))
			continue;
		p = prog_of(j->skel, i, m);
		if (!p)
			continue;
		bpf_program__set_autoload(p, true);
		st[i] = EV_WANTED;
		n++;
	}
	if (!n) {
		jobs_bpf__destroy(j->skel);
		j->skel = NULL;
		return -ENOENT;
	}
	j->skel->rodata->targ_all = o->all != 0;
	j->skel->rodata->targ_uid_only = o->uid_only != 0;
	j->skel->rodata->targ_uid = o->uid;
	j->skel->rodata->wakeup_bytes = o->wakeup_bytes;
	if ((err = bpf_map__reuse_fd(j->skel->maps.events, o->events_fd)) ||
	    (err = bpf_map__reuse_fd(j->skel->maps.stats, o->stats_fd)) ||
	    (err = bpf_map__reuse_fd(j->skel->maps.pids, o->pids_fd)) ||
	    (err = bpf_map__reuse_fd(j->skel->maps.devs, o->devs_fd)) ||
	    (err = jobs_bpf__load(j->skel))) {
		jobs_bpf__destroy(j->skel);
		j->skel = NULL;
		return err < 0 ? err : -EINVAL;
	}
	return 0;
}

/* One line per source in the capture's hook list. */
static void report(struct kx_capinfo *ci, const struct avail *a, const uint8_t *st,
                   const char *mech, int alt, const char *load_err)
{
	for (size_t s = 0; s < NSRCS; s++) {
		int want = 0, ok = 0, failed = 0, gpu = 0, n = 0, unused = 0, priv = 0;
		const char *missing = NULL, *first_fail = NULL, *sys = NULL;
		char buf[96] = "";
		struct kx_hook *h;
		char name[48];

		for (size_t i = 0; i < NEVS; i++) {
			if (strcmp(evs[i].src, srcs[s]) != 0 || (evs[i].alt && evs[i].alt != alt))
				continue;
			gpu = evs[i].tp_only;
			sys = evs[i].sys;
			if (!exists(a, i)) {
				if (evs[i].key && !missing)
					missing = evs[i].name;
				continue;
			}
			want++;
			unused += st[i] == EV_UNUSED;
			priv += st[i] == EV_PRIVATE;
			if (st[i] == EV_ATTACHED)
				ok++;
			else if (st[i] == EV_FAILED || st[i] == EV_WANTED) {
				failed++;
				if (!first_fail)
					first_fail = evs[i].name;
			}
		}
		snprintf(name, sizeof(name), "jobs:%s", srcs[s]);
		if (missing && !ok) {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_SKIPPED);
			if (h && strcmp(srcs[s], "gpu_scheduler") == 0)
				snprintf(h->why, sizeof(h->why),
				         "tracepoint gpu_scheduler:drm_sched_job_queue not in this "
				         "kernel (nor the old drm_sched_job)");
			else if (h)
				snprintf(h->why, sizeof(h->why),
				         "tracepoint %s:%s not in this kernel", sys, missing);
			continue;
		}
		if (want && priv == want) {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why),
				         "records every process's jobs on the device: not in a "
				         "session restricted to one user");
			continue;
		}
		if (want && unused == want) {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why), "%s",
				         strcmp(srcs[s], "block") == 0
				                 ? "no block device traced (--device /dev/vda, "
				                   "loop, ...)"
				                 : "no kvm device traced");
			continue;
		}
		if (gpu && !a->tracefs) {
			h = kx_capinfo_hook(ci, name, "-", KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why),
				         "classic tracepoints need tracefs: %.60s", a->tracefs_why);
			continue;
		}
		if (!ok) {
			h = kx_capinfo_hook(ci, name, "-", want ? KX_HOOK_FAILED : KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why), "%.60s%s%.32s",
				         load_err ? load_err : "no usable tracepoint",
				         first_fail ? ": " : "", first_fail ? first_fail : "");
			continue;
		}
		h = kx_capinfo_hook(ci, name, gpu ? "tp" : mech, KX_HOOK_ATTACHED);
		if (h && (failed || ok < want)) {
			n = snprintf(buf, sizeof(buf), "%d of %d tracepoints", ok, want);
			if (first_fail && n > 0 && n < (int)sizeof(buf))
				snprintf(buf + n, sizeof(buf) - (size_t)n, "; %s failed",
				         first_fail);
			snprintf(h->why, sizeof(h->why), "%s", buf);
		}
	}
}

struct kx_jobsrc *kx_jobsrc_open(const struct kx_jobsrc_opts *o, struct kx_capinfo *ci)
{
	struct kx_jobsrc *j = calloc(1, sizeof(*j));
	uint8_t st[NEVS];
	struct avail a;
	char load_err[96] = "";
	size_t m0 = mech_index(o->mech), m;
	int alt, err = -ENOENT, gpu_failed = 0, has_blk = 0, has_kvm = 0;

	if (!j)
		return NULL;
	avail_scan(&a);
	alt = alt_chosen(&a);
	for (int i = 0; i < o->ndevices; i++) {
		has_blk |= o->devices[i].fkind == KX_FK_BLK;
		has_kvm |= o->devices[i].drv == KX_DRV_KVM;
	}
	for (size_t i = 0; i < NEVS; i++) {
		st[i] = exists(&a, i) && (!evs[i].alt || evs[i].alt == alt) ? EV_OFF : EV_ABSENT;
		/* Their filters would drop everything: do not pay for the hooks. */
		if (st[i] == EV_OFF && ((!has_blk && !strcmp(evs[i].src, "block")) ||
		                        (!has_kvm && !strcmp(evs[i].src, "kvm"))))
			st[i] = EV_UNUSED;
		if (st[i] == EV_OFF && o->uid_only && device_filtered(evs[i].src))
			st[i] = EV_PRIVATE;
	}

	/* Same mechanism as the ioctl hooks first, then the fallbacks. A failing
	 * GPU program must not cost the live sources: retry without them. */
	for (m = m0; m < NMECHS; m++) {
		err = try_load(j, o, st, m, 1, &a);
		if (err == -ENOENT)
			continue;
		if (err) {
			gpu_failed = 1;
			snprintf(load_err, sizeof(load_err), "load failed (%s)", strerror(-err));
			err = try_load(j, o, st, m, 0, &a);
		}
		if (err == 0)
			break;
	}
	if (err == 0) {
		struct bpf_program *p;

		kx_jobsrc_set_devices(j, o->devices, o->ndevices);
		for (size_t i = 0; i < NEVS; i++) {
			struct bpf_link *l;

			if (st[i] != EV_WANTED)
				continue;
			p = prog_of(j->skel, i, m);
			l = p ? bpf_program__attach(p) : NULL;
			if (!l) {
				st[i] = EV_FAILED;
				continue;
			}
			j->links[j->nlinks++] = l;
			st[i] = EV_ATTACHED;
		}
		if (gpu_failed)
			for (size_t i = 0; i < NEVS; i++)
				if (evs[i].tp_only && usable(&a, i, m) && st[i] == EV_OFF)
					st[i] = EV_FAILED;
	} else if (err != -ENOENT && !load_err[0]) {
		snprintf(load_err, sizeof(load_err), "load failed (%s)", strerror(-err));
	}
	report(ci, &a, st, mechs[m < NMECHS ? m : NMECHS - 1].mech, alt,
	       load_err[0] ? load_err : NULL);
	avail_free(&a);
	if (!j->nlinks) {
		kx_jobsrc_close(j);
		return NULL;
	}
	return j;
}

void kx_jobsrc_detach(struct kx_jobsrc *j)
{
	if (!j)
		return;
	for (int i = 0; i < j->nlinks; i++)
		bpf_link__destroy(j->links[i]);
	j->nlinks = 0;
}

uint64_t kx_jobsrc_missed(const struct kx_jobsrc *j)
{
	return j && j->skel ? kx_bpf_missed(j->skel->obj) : 0;
}

int kx_jobsrc_blkopen_fd(const struct kx_jobsrc *j)
{
	return j && j->skel ? bpf_map__fd(j->skel->maps.blkopen) : -1;
}

void kx_jobsrc_close(struct kx_jobsrc *j)
{
	if (!j)
		return;
	kx_jobsrc_detach(j);
	jobs_bpf__destroy(j->skel);
	free(j);
}

int kx_jobsrc_probe(struct kx_jobsrc_avail *out, int max)
{
	struct avail a;
	int alt, n = 0;

	avail_scan(&a);
	alt = alt_chosen(&a);
	for (size_t s = 0; s < NSRCS && n < max; s++) {
		struct kx_jobsrc_avail *r = &out[n++];
		const char *missing = NULL, *sys = NULL;
		int found = 0;

		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", srcs[s]);
		for (size_t i = 0; i < NEVS; i++) {
			if (strcmp(evs[i].src, srcs[s]) != 0 || (evs[i].alt && evs[i].alt != alt))
				continue;
			sys = evs[i].sys;
			if (exists(&a, i))
				found++;
			else if (evs[i].key && !missing)
				missing = evs[i].name;
		}
		r->present = found && !missing;
		if (r->present)
			snprintf(r->note, sizeof(r->note), "%d tracepoints%s", found,
			         strcmp(srcs[s], "gpu_scheduler") == 0
			                 ? (alt == 1 ? " (new names)" : " (old names)")
			                 : "");
		else if (strcmp(srcs[s], "gpu_scheduler") == 0)
			snprintf(r->note, sizeof(r->note),
			         "tracepoint gpu_scheduler:drm_sched_job_queue "
			         "not in this kernel (nor the old drm_sched_job)");
		else
			snprintf(r->note, sizeof(r->note), "tracepoint %s:%s not in this kernel",
			         sys, missing ? missing : "?");
	}
	avail_free(&a);
	return n;
}

int kx_jobsrc_verify_all(char *err, size_t len)
{
	struct jobs_bpf *skel = jobs_bpf__open();
	struct bpf_program *p;
	int rc;

	if (!skel) {
		snprintf(err, len, "cannot open the jobs object: %s", strerror(errno));
		return -1;
	}
	/* Classic programs load without their tracepoint; typed ones need it. */
	bpf_object__for_each_program(p, skel->obj)
	        bpf_program__set_autoload(p, strncmp(bpf_program__name(p), "tp_", 3) == 0);
	rc = jobs_bpf__load(skel);
	if (rc)
		snprintf(err, len, "load of every classic job program failed: %s", strerror(-rc));
	jobs_bpf__destroy(skel);
	return rc ? -1 : 0;
}
