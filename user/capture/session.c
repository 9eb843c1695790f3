/*
 * Capture session: load/attach with fallback, filters, clock sync, start/stop,
 * teardown. Owns the loaders' lifetimes (capture/ioctl.c, jobs.c, drvcall.c,
 * annotate.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/annotate.h"
#include "capture/clock.h"
#include "capture/consumer.h"
#include "capture/drvcall.h"
#include "capture/ioctl.h"
#include "capture/jobsrc.h"
#include "capture/probe.h"
#include "capture/sampler.h"
#include "capture/session.h"
#include "capture/ustack.h"
#include "util/bgrelease.h"

struct kx_session {
	struct kx_ioctl_bpf *ioctl; /* the loaded bpf/ioctl.bpf.c */
	struct kx_consumer *consumer;
	struct kx_jobsrc *jobs;        /* job lifecycle sources, NULL when none */
	struct kx_drvhook *drv;        /* driver entry hooks, NULL when none */
	struct kx_sampler *sampler;    /* CPU samples and off-CPU intervals, NULL when none */
	struct kx_ustack_pair *ustack; /* --call-graph dwarf, NULL when not */
	struct kx_annot *ann;          /* annotation probes, NULL when not asked or not loaded */
	const char *mech;
	int started, stopped;
	int quick_exit; /* kx_session_opts */
	struct kx_sink sink;
	struct kx_capinfo ci;
};

static int verbose_libbpf;

/* libbpf's own diagnostics only with -v: failures are reported by the session itself. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!verbose_libbpf)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/*
 * The ioctl attach mechanisms, best first, per mode (tests/bench/RESULTS.md
 * has the measurements). fentry on the ioctl syscall's entry function is the
 * cheapest in every respect where the kernel allows it. Without it, host-wide
 * modes (aggregation, -a), which stay attached while the whole host runs,
 * take the classic syscalls:sys_{enter,exit}_ioctl tracepoints, whose kernel
 * side filters out every other syscall before a program runs; a targeted
 * capture takes the raw syscall tracepoints, cheapest per traced call.
 */
static const char *const mechs_targeted[] = {"fentry", "tp_btf", "raw_tp", "tp"};
static const char *const mechs_host[] = {"fentry", "tp", "tp_btf", "raw_tp"};
#define NMECHS (sizeof(mechs_targeted) / sizeof(mechs_targeted[0]))

void kx_capinfo_fill_host(struct kx_capinfo *ci)
{
	struct utsname u;

	if (gethostname(ci->hostname, sizeof(ci->hostname)) != 0)
		snprintf(ci->hostname, sizeof(ci->hostname), "localhost");
	ci->hostname[sizeof(ci->hostname) - 1] = 0;
	if (uname(&u) == 0)
		snprintf(ci->kernel, sizeof(ci->kernel), "%s", u.release);
}

static void ioctl_opts(const struct kx_session_opts *o, struct kx_ioctl_bpf_opts *io)
{
	*io = (struct kx_ioctl_bpf_opts){
	        .all = o->all,
	        .devices = o->devices,
	        .ndevices = o->ndevices,
	        .ringbuf_bytes = o->ringbuf_bytes,
	        .aggregate = o->aggregate,
	        .agg_by_pid = o->agg_by_pid,
	        .agg_by_cgroup = o->agg_by_cgroup,
	        .agg_max_keys = o->agg_max_keys,
	        .uid_only = o->uid_only,
	        .uid = o->uid,
	        .gid = o->gid,
	        .no_offcpu = o->no_offcpu,
	        .entry_fn = o->entry_fn,
	        .counters = o->counters,
	        .no_hw_counters = o->no_kernel_why,
	};
}

const char *const *kx_session_mechs(int host_wide, size_t *n)
{
	*n = NMECHS;
	return host_wide ? mechs_host : mechs_targeted;
}

/* Loads the ioctl capture with the first mechanism that works (or the one
 * asked for); each refusal is a skipped hook with its reason. The attached
 * hook notes the function fentry hooked. */
static int open_ioctl(struct kx_session *s, const struct kx_session_opts *o, char *err, size_t len)
{
	char why[sizeof(((struct kx_hook *)0)->why)] = "";
	struct kx_ioctl_bpf_opts io;
	struct kx_hook *h;
	size_t n;
	const char *const *mechs = kx_session_mechs(o->aggregate || o->all, &n);

	ioctl_opts(o, &io);
	for (size_t m = 0; m < n; m++) {
		if (o->mech && strcmp(o->mech, mechs[m]) != 0)
			continue;
		s->ioctl = kx_ioctl_bpf_open(&io, mechs[m], &s->ci, why, sizeof(why));
		if (s->ioctl) {
			s->mech = mechs[m];
			h = kx_capinfo_hook(&s->ci, "ioctl", s->mech, KX_HOOK_ATTACHED);
			if (h)
				snprintf(h->why, sizeof(h->why), "%s",
				         kx_ioctl_bpf_entry_fn(s->ioctl));
			return kx_ioctl_bpf_fill(s->ioctl, &io, err, len);
		}
		h = kx_capinfo_hook(&s->ci, "ioctl", mechs[m], KX_HOOK_SKIPPED);
		if (h)
			snprintf(h->why, sizeof(h->why), "%s", why);
	}
	if (o->mech && s->ci.nhooks == 0)
		snprintf(err, len,
		         "unknown attach mechanism '%s' (use fentry, tp_btf, raw_tp or tp)",
		         o->mech);
	else if (o->mech)
		snprintf(err, len, "--attach %s: %s%s", o->mech, why,
		         o->verbose ? "" : " (run with -v for libbpf's diagnostics)");
	else
		snprintf(err, len, "no attach mechanism worked for the ioctl hooks: last: %s%s",
		         why, o->verbose ? "" : " (run with -v for libbpf's diagnostics)");
	return -1;
}

/* Job lifecycle sources on the ioctl capture's ring and filters. */
static void open_jobs(struct kx_session *s, const struct kx_session_opts *o)
{
	struct kx_ioctl_bpf_fds fds;
	struct kx_jobsrc_opts jo;

	kx_ioctl_bpf_fds(s->ioctl, &fds);
	jo = (struct kx_jobsrc_opts){
	        .events_fd = fds.events,
	        .stats_fd = fds.stats,
	        .pids_fd = fds.pids,
	        .devs_fd = fds.devs,
	        .all = o->all,
	        .wakeup_bytes = fds.wakeup_bytes,
	        /* Typed job sources run as the task hooks do (tp_btf unless raw_tp). */
	        .mech = kx_ioctl_hooks_mech(s->mech),
	        .devices = o->devices,
	        .ndevices = o->ndevices,
	        .uid_only = o->uid_only,
	        .uid = o->uid,
	};
	s->jobs = kx_jobsrc_open(&jo, &s->ci);
}

/* Driver entry hooks count every process's calls: said, not loaded. */
static void skip_drvhooks(struct kx_capinfo *ci)
{
	struct kx_hook *h = kx_capinfo_hook(ci, "driver:*", "-", KX_HOOK_SKIPPED);

	if (h)
		snprintf(h->why, sizeof(h->why),
		         "count every process's calls: not in a session restricted to one user");
}

/* The sampler on the ioctl capture's ring, pid set and calls in flight;
 * asked for explicitly, so a failure fails the session. */
static int open_sampler(struct kx_session *s, const struct kx_session_opts *o, char *err,
                        size_t len)
{
	struct kx_ioctl_bpf_fds fds;
	struct kx_sampler_maps maps;
	struct kx_sampler_opts so;
	char why[256];
	struct kx_hook *h;

	kx_ioctl_bpf_fds(s->ioctl, &fds);
	kx_session_sampler_maps(s, &maps);
	maps.events = fds.events;
	maps.wakeup_bytes = fds.wakeup_bytes;
	so = (struct kx_sampler_opts){.freq_hz = o->sample_hz,
	                              .off_cpu = o->off_cpu,
	                              .all = o->all,
	                              .uid_only = o->uid_only,
	                              .uid = o->uid,
	                              .no_kstacks = o->no_kernel_why != NULL,
	                              .ustack_bytes =
	                                      o->sample_hz || o->off_cpu ? o->ustack_bytes : 0,
	                              .maps = &maps};
	s->sampler = kx_sampler_open(&so, why, sizeof(why));
	if (!s->sampler || kx_sampler_start(s->sampler, why, sizeof(why))) {
		snprintf(err, len, "%s", why);
		return -1;
	}
	s->ci.samples.hz = o->sample_hz;
	s->ci.samples.ustack_bytes = so.ustack_bytes;
	if (so.ustack_bytes && !(s->ustack = kx_ustack_pair_new(o->ustack_auto, err, len)))
		return -1;
	s->ci.samples.off_cpu = o->off_cpu != 0;
	if (o->sample_hz)
		kx_capinfo_hook(&s->ci, "cpu-clock sampling", "perf_event", KX_HOOK_ATTACHED);
	if (o->off_cpu &&
	    (h = kx_capinfo_hook(&s->ci, "off-CPU stacks", kx_sampler_offcpu_mech(s->sampler),
	                         KX_HOOK_ATTACHED)))
		snprintf(h->why, sizeof(h->why), "sched_switch, inside traced ioctls");
	if (o->no_kernel_why &&
	    (h = kx_capinfo_hook(&s->ci, "kernel stacks", "-", KX_HOOK_SKIPPED)))
		snprintf(h->why, sizeof(h->why), "%s", o->no_kernel_why);
	return 0;
}

/* How often the annotation watcher rescans the pid set for copies whose
 * loads it did not see (a loader other than kxprof's), ms. */
#define ANN_RESCAN_MS 1000

/*
 * Annotation probes on the ioctl capture's ring and pid set: the copies of
 * the library mapped now (every process with -a; pids as they are added)
 * and, through the watcher, later. Optional: a failure is a hook result.
 */
static void open_annot(struct kx_session *s, const struct kx_session_opts *o)
{
	struct kx_ioctl_bpf_fds fds;
	struct kx_annot_opts ao;
	char why[sizeof(((struct kx_hook *)0)->why)];
	struct kx_hook *h;

	kx_ioctl_bpf_fds(s->ioctl, &fds);
	ao = (struct kx_annot_opts){
	        .all = o->all,
	        .events_fd = fds.events,
	        .pids_fd = fds.pids,
	        .stats_fd = fds.stats,
	        .wakeup_bytes = fds.wakeup_bytes,
	        .uid_only = o->uid_only,
	        .uid = o->uid,
	};
	s->ann = kx_annot_open(&ao, why, sizeof(why));
	h = kx_capinfo_hook(&s->ci, "annotations", s->ann ? "usdt" : "-",
	                    s->ann ? KX_HOOK_ATTACHED : KX_HOOK_FAILED);
	if (!s->ann) {
		if (h)
			snprintf(h->why, sizeof(h->why), "%s", why);
		return;
	}
	s->ci.ann.enabled = 1;
	why[0] = 0;
	if (kx_annot_watch(s->ann, o->all ? 0 : ANN_RESCAN_MS, why, sizeof(why)) == 0) {
		kx_capinfo_hook(&s->ci, "annotations:loads", "uprobe", KX_HOOK_ATTACHED);
	} else {
		h = kx_capinfo_hook(&s->ci, "annotations:loads", "-", KX_HOOK_FAILED);
		if (h)
			snprintf(h->why, sizeof(h->why), "%s (copies loaded later: found by %s)",
			         why, o->all ? "no rescan" : "a rescan every second");
	}
	if (o->all)
		kx_annot_rescan(s->ann);
}

struct kx_session *kx_session_open(const struct kx_session_opts *o, char *err, size_t len)
{
	struct kx_ioctl_bpf_fds fds;
	struct kx_session *s;

	if (!kx_probe_privileges(err, len) || !kx_probe_btf(err, len))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	verbose_libbpf = o->verbose;
	libbpf_set_print(libbpf_print);
	kx_capinfo_fill_host(&s->ci);
	s->sink = o->sink;
	s->ci.all_pids = o->all != 0;
	for (int i = 0; i < o->ndevices && s->ci.ndevices < KX_MAX_DEVICES; i++)
		s->ci.devices[s->ci.ndevices++] = o->devices[i];
	if (open_ioctl(s, o, err, len) != 0)
		goto fail;
	/* Optional extras: each reports what it attached, none fails the session. */
	if (o->sink.job && !o->no_jobs)
		open_jobs(s, o);
	if (o->uid_only)
		skip_drvhooks(&s->ci);
	else if (!o->no_drvhooks)
		s->drv = kx_drvhook_open(&s->ci);
	if ((o->sample_hz || o->off_cpu) && open_sampler(s, o, err, len) != 0)
		goto fail;
	if (o->annotate)
		open_annot(s, o);
	s->quick_exit = o->quick_exit;
	kx_ioctl_bpf_fds(s->ioctl, &fds);
	s->consumer = kx_consumer_new(fds.events, &o->sink, err, len);
	if (!s->consumer)
		goto fail;
	kx_consumer_set_ustack(s->consumer, s->ustack);
	return s;
fail:
	kx_session_close(s);
	return NULL;
}

int kx_session_add_pid(struct kx_session *s, uint32_t pid, char *err, size_t len)
{
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		snprintf(err, len, "no such process: %u", pid);
		return -1;
	}
	if (kx_ioctl_bpf_add_pid(s->ioctl, pid, err, len))
		return -1;
	/* Its copies of the library mapped so far (a process held before
	 * exec has none yet: the watcher sees the program's). */
	if (s->ann)
		kx_annot_scan_pid(s->ann, (pid_t)pid);
	return 0;
}

int kx_session_annotating(const struct kx_session *s)
{
	return s->ann != NULL;
}

int kx_session_start(struct kx_session *s, char *err, size_t len)
{
	kx_clock_sync_measure(&s->ci.clock_start);
	s->ci.start_mono_ns = kx_mono_ns();
	/* A record header then carries this session's own start clock. */
	if (s->sink.begin && s->sink.begin(s->sink.ctx, kx_session_capinfo(s), err, len) != 0)
		return -1;
	if (kx_consumer_start(s->consumer, err, len) != 0)
		return -1;
	s->started = 1;
	return 0;
}

static void read_sample_stats(struct kx_session *s)
{
	struct kx_sample_info *si = &s->ci.samples;
	struct kx_sample_counts c;

	kx_sampler_counts(s->sampler, &c);
	si->cpus = c.cpus;
	si->emitted = c.emitted;
	si->dropped = c.dropped;
	si->received = kx_consumer_samples(s->consumer);
	si->off_emitted = c.off_emitted;
	si->off_dropped = c.off_dropped;
	si->off_received = kx_consumer_offcpu(s->consumer);
	si->off_noslot = c.off_noslot;
	si->off_stale = c.off_stale;
	si->stacks[KX_NO_USTACK] = c.no_ustack;
	si->stacks[KX_NO_KSTACK] = c.no_kstack;
	si->stacks[KX_USTACK_CUT] = c.ustack_full;
	si->stacks[KX_KSTACK_CUT] = c.kstack_full;
	if (s->ustack)
		kx_ustack_facts(s->ustack, &c, si);
}

static void read_counter_stats(struct kx_session *s)
{
	uint64_t sum[KX_CSTAT_MAX], *st = s->ci.counters.stats;

	kx_ioctl_bpf_ctr_stats(s->ioctl, sum);
	st[KX_CTR_EMITTED] = sum[KX_CSTAT_EMITTED];
	st[KX_CTR_DROPPED] = sum[KX_CSTAT_DROPPED];
	st[KX_CTR_READ_FAIL] = sum[KX_CSTAT_READ_FAIL];
	st[KX_CTR_NOSLOT] = sum[KX_CSTAT_NOSLOT];
	st[KX_CTR_RECEIVED] = kx_consumer_counters(s->consumer);
}

static void read_stats(struct kx_session *s)
{
	uint64_t sum[KX_STAT_MAX];

	kx_ioctl_bpf_stats(s->ioctl, sum);
	s->ci.emitted = sum[KX_STAT_EMITTED];
	s->ci.dropped = sum[KX_STAT_DROPPED];
	s->ci.inflight_full = sum[KX_STAT_INFLIGHT_FULL];
	s->ci.pidset_full = sum[KX_STAT_PIDSET_FULL];
	s->ci.protected_exec = sum[KX_STAT_PROTECTED_EXEC];
	s->ci.arg_faults = sum[KX_STAT_ARG_FAULT];
	s->ci.bpf_missed = kx_ioctl_bpf_missed(s->ioctl) + kx_jobsrc_missed(s->jobs) +
	                   kx_drvhook_missed(s->drv) + kx_sampler_missed(s->sampler) +
	                   kx_annot_missed(s->ann);
	s->ci.received = kx_consumer_ioctls(s->consumer);
	s->ci.job_emitted = sum[KX_STAT_JOB_EMITTED];
	s->ci.job_dropped = sum[KX_STAT_JOB_DROPPED];
	s->ci.job_done_lost = sum[KX_STAT_JOB_DONE_LOST];
	s->ci.job_received = kx_consumer_jobs(s->consumer);
	if (s->sampler)
		read_sample_stats(s);
	if (s->ci.counters.names[0])
		read_counter_stats(s);
	if (s->ann) {
		kx_annot_info(s->ann, &s->ci.ann);
		s->ci.ann.received = kx_consumer_anns(s->consumer);
	}
}

int kx_session_stop(struct kx_session *s)
{
	if (s->stopped)
		return 0;
	/* Releasing probes on perf events (uprobes, kprobes, tracepoints) waits
	 * for grace periods, one after the other under a kernel-wide mutex
	 * (util/bgrelease.h): a caller about to exit leaves that to a child. */
	if (s->quick_exit)
		kx_bgrelease();
	/* Detach first so nothing new arrives, then drain what is queued. */
	kx_ioctl_bpf_detach(s->ioctl);
	kx_jobsrc_detach(s->jobs);
	kx_drvhook_detach(s->drv);
	kx_sampler_stop(s->sampler);
	if (s->ann)
		kx_annot_detach(s->ann);
	kx_consumer_stop(s->consumer);
	kx_clock_sync_measure(&s->ci.clock_stop);
	s->ci.stop_mono_ns = kx_mono_ns();
	read_stats(s);
	kx_drvhook_read(s->drv, &s->ci);
	s->stopped = 1;
	return 0;
}

const struct kx_capinfo *kx_session_capinfo(struct kx_session *s)
{
	if (!s->stopped && s->ioctl)
		read_stats(s);
	return &s->ci;
}

const char *kx_session_mech(const struct kx_session *s)
{
	return s->mech;
}

void kx_session_set_cmdline(struct kx_session *s, const char *cmdline)
{
	snprintf(s->ci.cmdline, sizeof(s->ci.cmdline), "%s", cmdline);
}

uint32_t kx_session_agg_max_keys(const struct kx_session *s)
{
	return s->ioctl ? kx_ioctl_agg_max_keys(s->ioctl) : 0;
}

int kx_session_agg_read(struct kx_session *s, int take, struct kx_agg_entry **out, size_t *n,
                        char *err, size_t len)
{
	if (!s->ioctl) {
		snprintf(err, len, "session is closed");
		return -1;
	}
	return kx_ioctl_agg_read(s->ioctl, take, out, n, err, len);
}

int kx_session_agg_drop(struct kx_session *s, int (*drop)(const struct kx_agg_key *, void *),
                        void *ctx)
{
	return s->ioctl ? kx_ioctl_agg_drop(s->ioctl, drop, ctx) : 0;
}

int kx_session_blkopen_fd(const struct kx_session *s)
{
	return kx_jobsrc_blkopen_fd(s->jobs);
}

int kx_session_sampler_maps(const struct kx_session *s, struct kx_sampler_maps *m)
{
	struct kx_ioctl_bpf_fds fds;

	if (!s->ioctl)
		return -1;
	kx_ioctl_bpf_fds(s->ioctl, &fds);
	*m = (struct kx_sampler_maps){.events = -1,
	                              .pids = fds.pids,
	                              .inflight = fds.inflight,
	                              .task_call = fds.task_call,
	                              .call_btf = fds.call_btf};
	return 0;
}

uint64_t kx_session_stat(struct kx_session *s, unsigned int which)
{
	return s->ioctl ? kx_ioctl_bpf_stat(s->ioctl, which) : 0;
}

int kx_session_set_devices(struct kx_session *s, const struct kx_device *d, int n, char *err,
                           size_t len)
{
	if (!s->ioctl) {
		snprintf(err, len, "session is closed");
		return -1;
	}
	if (kx_ioctl_bpf_set_devices(s->ioctl, d, n, err, len))
		return -1;
	if (s->jobs && kx_jobsrc_set_devices(s->jobs, d, n)) {
		snprintf(err, len, "cannot update the traced block disks: %s", strerror(errno));
		return -1;
	}
	s->ci.ndevices = 0;
	for (int i = 0; i < n && s->ci.ndevices < KX_MAX_DEVICES; i++)
		s->ci.devices[s->ci.ndevices++] = d[i];
	return 0;
}

void kx_session_close(struct kx_session *s)
{
	if (!s)
		return;
	if (s->started && !s->stopped)
		kx_session_stop(s);
	kx_consumer_free(s->consumer);
	kx_sampler_close(s->sampler);
	kx_ustack_pair_free(s->ustack);
	kx_ioctl_bpf_detach(s->ioctl);
	kx_jobsrc_close(s->jobs);
	kx_drvhook_close(s->drv);
	kx_annot_close(s->ann);
	kx_ioctl_bpf_close(s->ioctl);
	free(s);
}
