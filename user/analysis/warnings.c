/* Capture and job-analysis warnings, worded once for every output. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/jobs.h"
#include "analysis/timeline.h"
#include "analysis/warnings.h"
#include "io/kxp.h"
#include "registry/drivers.h"

#define MSG_MAX 1024

void kx_warnf(kx_warn_fn fn, void *ctx, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(ctx, msg);
}

void kx_warn_count(kx_warn_fn fn, void *ctx, uint64_t n, const char *what)
{
	if (n)
		kx_warnf(fn, ctx, "%" PRIu64 " %s", n, what);
}

/* Length of a fixed-size, possibly unterminated field. */
static int flen(const char *s, size_t cap)
{
	return (int)strnlen(s, cap);
}

#define DRV_BIT(d) (1ULL << (d))
_Static_assert(KX_DRV_MAX <= 64, "a driver set is a 64-bit mask");
/* Every DRM and accel driver: they share drm_ioctl, dma_fence and gpu_scheduler. */
#define DRV_DRM_ANY                                                                                \
	(DRV_BIT(KX_DRV_DRM) | DRV_BIT(KX_DRV_AMDGPU) | DRV_BIT(KX_DRV_I915) |                     \
	 DRV_BIT(KX_DRV_XE) | DRV_BIT(KX_DRV_NOUVEAU) | DRV_BIT(KX_DRV_MSM) |                      \
	 DRV_BIT(KX_DRV_PANFROST) | DRV_BIT(KX_DRV_PANTHOR) | DRV_BIT(KX_DRV_V3D) |                \
	 DRV_BIT(KX_DRV_ETNAVIV) | DRV_BIT(KX_DRV_LIMA) | DRV_BIT(KX_DRV_HABANALABS) |             \
	 DRV_BIT(KX_DRV_IVPU) | DRV_BIT(KX_DRV_QAIC) | DRV_BIT(KX_DRV_AMDXDNA) |                   \
	 DRV_BIT(KX_DRV_ROCKET) | DRV_BIT(KX_DRV_ETHOSU))
#define DRV_NVIDIA (DRV_BIT(KX_DRV_NVIDIA) | DRV_BIT(KX_DRV_NVIDIA_MODESET))

/*
 * The drivers each device-specific hook serves (the job sources of
 * capture/jobsrc.c, the driver entry functions of capture/drvcall.c). A hook
 * not listed here matters to every capture.
 */
static const struct {
	const char *name;
	uint64_t drivers; /* DRV_BIT()s */
} hook_drivers[] = {
        {"jobs:block", DRV_BIT(KX_DRV_LOOP) | DRV_BIT(KX_DRV_BLOCK)},
        {"jobs:kvm", DRV_BIT(KX_DRV_KVM)},
        {"jobs:dma_fence", DRV_DRM_ANY},
        {"jobs:gpu_scheduler", DRV_DRM_ANY},
        {"jobs:i915", DRV_BIT(KX_DRV_I915)},
        {"jobs:xe", DRV_BIT(KX_DRV_XE)},
        {"jobs:amdgpu", DRV_BIT(KX_DRV_AMDGPU)},
        {"jobs:msm", DRV_BIT(KX_DRV_MSM)},
        {"jobs:v3d", DRV_BIT(KX_DRV_V3D)},
        {"jobs:vpu", DRV_BIT(KX_DRV_IVPU)},
        {"jobs:amdxdna", DRV_BIT(KX_DRV_AMDXDNA)},
        {"driver:drm_ioctl", DRV_DRM_ANY},
        {"driver:nvidia_unlocked_ioctl", DRV_NVIDIA},
        {"driver:nvidia_frontend_unlocked_ioctl", DRV_NVIDIA},
        {"driver:uvm_unlocked_ioctl_entry", DRV_BIT(KX_DRV_NVIDIA_UVM)},
        {"driver:i915_gem_do_execbuffer", DRV_BIT(KX_DRV_I915)},
        {"driver:xe_exec_ioctl", DRV_BIT(KX_DRV_XE)},
        {"driver:amdgpu_cs_ioctl", DRV_BIT(KX_DRV_AMDGPU)},
        {"driver:kfd_ioctl", DRV_BIT(KX_DRV_KFD)},
};

/* The drivers of the devices ci traced; every driver when the list is
 * empty or holds a device of a driver kxprof does not know. */
static uint64_t traced_drivers(const struct kx_capinfo *ci)
{
	uint32_t nd = ci->ndevices < KX_MAX_DEVICES ? ci->ndevices : KX_MAX_DEVICES;
	uint64_t traced = 0;

	for (uint32_t i = 0; i < nd; i++) {
		if (ci->devices[i].drv == KX_DRV_UNKNOWN || ci->devices[i].drv >= KX_DRV_MAX)
			return UINT64_MAX;
		traced |= DRV_BIT(ci->devices[i].drv);
	}
	return nd ? traced : UINT64_MAX;
}

/* True when hook h serves one of the traced drivers (or every device). */
static int hook_matters(const struct kx_hook *h, uint64_t traced)
{
	for (size_t i = 0; i < sizeof(hook_drivers) / sizeof(hook_drivers[0]); i++)
		if (!strncmp(h->name, hook_drivers[i].name, sizeof(h->name)))
			return (hook_drivers[i].drivers & traced) != 0;
	return 1;
}

/* True when hook i did not attach but another mechanism of the same hook did
 * (the ioctl hooks refused fentry, then attached tp_btf): nothing is missing,
 * and every output says which mechanism ran. */
static int fell_back(const struct kx_capinfo *ci, uint32_t n, uint32_t i)
{
	for (uint32_t j = 0; j < n; j++)
		if (j != i && ci->hooks[j].state == KX_HOOK_ATTACHED &&
		    !strncmp(ci->hooks[j].name, ci->hooks[i].name, sizeof(ci->hooks[i].name)))
			return 1;
	return 0;
}

/*
 * Hooks named "family:member" (jobs:i915, driver:drm_ioctl) that did not
 * attach are grouped into one line per family and reason; others get a line
 * each. Hooks of drivers the capture did not trace are left out (no i915
 * hook on a kvm-only capture): kxprof list shows every hook.
 */
static void hook_warnings(const struct kx_capinfo *ci, kx_warn_fn fn, void *ctx)
{
	uint32_t n = ci->nhooks < KX_MAX_HOOKS ? ci->nhooks : KX_MAX_HOOKS;
	uint64_t traced = traced_drivers(ci);
	char done[KX_MAX_HOOKS] = {0};
	char msg[MSG_MAX];

	for (uint32_t i = 0; i < n; i++)
		done[i] = !hook_matters(&ci->hooks[i], traced) || fell_back(ci, n, i);

	for (uint32_t i = 0; i < n; i++) {
		const struct kx_hook *h = &ci->hooks[i];
		const char *colon = memchr(h->name, ':', sizeof(h->name));
		const char *state = h->state == KX_HOOK_SKIPPED ? "skipped" : "failed";
		int fam = colon ? (int)(colon - h->name) : 0, members = 0, len;

		if (h->state == KX_HOOK_ATTACHED || done[i])
			continue;
		if (!colon) {
			kx_warnf(fn, ctx, "hook %.*s %s%s%.*s", flen(h->name, sizeof(h->name)),
			         h->name, state, h->why[0] ? ": " : "",
			         flen(h->why, sizeof(h->why)), h->why);
			continue;
		}
		/* Same family and state: one line listing the members, with the reason
		 * once when they share it. */
		int same_why = 1, all_absent = 1;

		len = snprintf(msg, sizeof(msg), "%.*s hooks %s:", fam, h->name, state);
		for (uint32_t j = i; j < n; j++) {
			const struct kx_hook *o = &ci->hooks[j];

			if (done[j] || o->state != h->state ||
			    strncmp(o->name, h->name, (size_t)fam + 1))
				continue;
			done[j] = 1;
			members++;
			same_why &= !strncmp(o->why, h->why, sizeof(h->why));
			all_absent &= strstr(o->why, "not in this kernel") != NULL;
			if (len < (int)sizeof(msg))
				len += snprintf(msg + len, sizeof(msg) - (size_t)len, "%s %.*s",
				                members > 1 ? "," : "",
				                flen(o->name, sizeof(o->name)) - fam - 1,
				                o->name + fam + 1);
		}
		if (len < (int)sizeof(msg) && same_why && h->why[0])
			snprintf(msg + len, sizeof(msg) - (size_t)len, " (%.*s)",
			         flen(h->why, sizeof(h->why)), h->why);
		else if (len < (int)sizeof(msg) && all_absent)
			snprintf(msg + len, sizeof(msg) - (size_t)len,
			         " (not in this kernel; kxprof list shows each reason)");
		else if (len < (int)sizeof(msg))
			snprintf(msg + len, sizeof(msg) - (size_t)len,
			         " (reasons differ; kxprof list shows each)");
		fn(ctx, msg);
	}
}

/* Seconds of a CLOCK_MONOTONIC time into the capture (ci's start). */
static double into(const struct kx_capinfo *ci, uint64_t ns)
{
	return ns > ci->start_mono_ns ? (double)(ns - ci->start_mono_ns) / 1e9 : 0.0;
}

void kx_ann_late_warnings(const struct kx_capinfo *ci, kx_warn_fn fn, void *ctx)
{
	char why[160];

	for (uint32_t i = 0; i < ci->ann.nlate && i < KX_ANN_MAX_LATE; i++) {
		const struct kx_ann_late *l = &ci->ann.late[i];
		uint64_t late_ms = l->to_ns > l->map_ns ? (l->to_ns - l->map_ns) / 1000000u : 0;

		if (l->hold_ms)
			snprintf(why, sizeof(why),
			         "it waited %u ms for its probes and went on untraced; they "
			         "attached %" PRIu64 " ms after it was mapped",
			         l->hold_ms, late_ms);
		else
			snprintf(why, sizeof(why),
			         "the process was not asked to wait for its probes, which attached "
			         "%" PRIu64 " ms after it was mapped",
			         late_ms);
		kx_warnf(fn, ctx,
		         "annotations of pid %u (%.*s) may be missing from %.3f s to %.3f s into "
		         "the capture: its copy of the annotation library %.*s was attached late "
		         "(%s; the machine was busy or the capture slow to attach); counts of "
		         "its ranges and marks may be short",
		         l->pid, flen(l->comm, sizeof(l->comm)), l->comm, into(ci, l->from_ns),
		         into(ci, l->to_ns), flen(l->path, sizeof(l->path)), l->path, why);
	}
	kx_warn_count(fn, ctx, ci->ann.more_late,
	              "more copies of the annotation library were attached late than listed: their "
	              "processes' annotations may be missing for a while");
}

void kx_capture_warnings(const struct kx_capinfo *ci, uint64_t not_stored, kx_warn_fn fn, void *ctx)
{
	if (not_stored < ci->not_stored)
		not_stored = ci->not_stored;
	kx_warn_count(fn, ctx, ci->dropped,
	              "ioctl events dropped (ring buffer full): raise --ringbuf-mb");
	kx_warn_count(
	        fn, ctx, not_stored,
	        "events not stored (memory limit reached): raise the limit (KXPROF_MAX_MEM_MB for "
	        "the TensorFlow plugin)");
	kx_warn_count(fn, ctx, ci->inflight_full,
	              "ioctls not traced (in-flight map full: too many concurrent calls)");
	kx_warn_count(fn, ctx, ci->pidset_full,
	              "new processes or threads not followed (pid set full)");
	kx_warn_count(
	        fn, ctx, ci->protected_exec,
	        "processes left the capture: exec of a protected program (setuid, setgid, file "
	        "capabilities or not readable: the kernel would not let you read them either)");
	kx_warn_count(fn, ctx, ci->arg_faults,
	              "ioctl argument copies failed (user memory fault): those events lack decoded "
	              "arguments");
	kx_warn_count(
	        fn, ctx, ci->bpf_missed,
	        "runs of kxprof's BPF programs skipped by the kernel (one tracing program at a "
	        "time per CPU: another was running there, e.g. another tool's, or one a "
	        "completion interrupted): their events are missing");
	kx_warn_count(fn, ctx, ci->job_dropped,
	              "job events dropped (ring buffer full): device timelines have gaps; raise "
	              "--ringbuf-mb");
	kx_warn_count(fn, ctx, ci->job_done_lost,
	              "block request completions never reached kxprof's program (the sector's "
	              "next request came first): each shows as that request's duplicate "
	              "events in the device timeline");
	hook_warnings(ci, fn, ctx);
	kx_ann_late_warnings(ci, fn, ctx);
}

void kx_jobs_warnings(const struct kx_jobs *jb, kx_warn_fn fn, void *ctx)
{
	uint64_t unknown_frees = 0;

	if (!jb)
		return;
	kx_warn_count(fn, ctx, jb->anom.incomplete,
	              "jobs never completed by the end of the capture");
	kx_warn_count(
	        fn, ctx, jb->anom.no_queue,
	        "job completions without a queue phase (queued before the capture or the queue "
	        "event was lost)");
	kx_warn_count(fn, ctx, jb->anom.duplicate, "duplicate job events (ignored)");
	kx_warn_count(fn, ctx, jb->anom.out_of_order,
	              "job events out of order, earlier in the lifecycle than a phase already seen "
	              "(ignored)");
	kx_warn_count(fn, ctx, jb->anom.unlinked,
	              "jobs queued by a thread with no submitting ioctl found");
	kx_warn_count(fn, ctx, jb->anom.runs_without_exit, "KVM_RUN calls without an exit event");
	kx_warn_count(fn, ctx, jb->anom.unknown,
	              "job events of an unknown source or phase (skipped)");
	for (size_t i = 0; i < jb->ndevs; i++)
		unknown_frees += jb->devs[i].mem_unknown_frees;
	kx_warn_count(fn, ctx, unknown_frees,
	              "frees of device memory allocated before the capture (not counted in usage)");
}

void kx_timeline_warnings(const struct kx_timeline *tl, kx_warn_fn fn, void *ctx)
{
	uint64_t nfix, threads;

	if (!tl)
		return;
	nfix = tl->counted ? tl->counted_fix : tl->nfix;
	threads = tl->counted ? tl->counted_threads : tl->fixed_threads;
	if (!nfix)
		return;
	kx_warnf(fn, ctx,
	         "%" PRIu64 " events on %" PRIu64 " threads partially overlapped an earlier "
	         "event of the same thread: shortened to nest in it",
	         nfix, threads);
}

void kx_read_loss_of(const struct kx_kxp_read_result *res, struct kx_read_loss *loss)
{
	memset(loss, 0, sizeof(*loss));
	loss->no_trailer = res->truncated;
	loss->corrupt_chunks = res->ncorrupt;
	loss->corrupt_bytes = res->corrupt_bytes;
	loss->first_corrupt = res->ncorrupt ? res->corrupt[0].chunk : 0;
	if (res->truncated)
		loss->cut_bytes = res->bad_tail_bytes;
}

void kx_read_loss_warnings(const struct kx_read_loss *loss, kx_warn_fn fn, void *ctx)
{
	if (!loss)
		return;
	if (loss->corrupt_chunks)
		kx_warnf(fn, ctx,
		         "record file is corrupt: %" PRIu64 " damaged stretch%s skipped (first at "
		         "chunk %" PRIu64 "), %" PRIu64 " bytes lost with their events; the rest "
		         "was read",
		         loss->corrupt_chunks, loss->corrupt_chunks == 1 ? "" : "es",
		         loss->first_corrupt, loss->corrupt_bytes);
	if (loss->cut_bytes)
		kx_warnf(fn, ctx,
		         "record file was cut short: %" PRIu64
		         " bytes after the last whole chunk ignored",
		         loss->cut_bytes);
	if (loss->no_trailer)
		fn(ctx, "record file has no trailer (the capture did not finish, or its end was "
		        "lost): the capture's duration and loss counters are unknown");
}
