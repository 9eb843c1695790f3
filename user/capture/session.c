/*
 * Capture session: load/attach with fallback, filters, clock sync, start/stop,
 * teardown. Owns the BPF skeleton's lifetime.
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

#include "live/aggregate.h"
#include "capture/clock.h"
#include "capture/consumer.h"
#include "capture/drvcall.h"
#include "ioctl.skel.h"
#include "registry/ioctl_decode.h"
#include "capture/jobs.h"
#include "capture/probe.h"
#include "capture/session.h"

struct kx_session {
	struct ioctl_bpf *skel;
	struct kx_consumer *consumer;
	struct bpf_link *links[16];
	int nlinks;
	struct kx_jobsrc *jobs; /* job lifecycle sources, NULL when none */
	struct kx_drvhook *drv; /* driver entry hooks, NULL when none */
	const char *mech;
	int started, stopped;
	int aggregate;
	uint32_t agg_max;
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

/* Program name prefix of each mechanism (see bpf/ioctl.bpf.c). */
static const struct {
	const char *mech;
	const char *prefix;
} mechs[] = {
        {"tp_btf", "btf_"},
        {"raw_tp", "raw_"},
        {"tp", "tp_"},
};

static void add_hook(struct kx_capinfo *ci, const char *name, const char *mech, int state,
                     const char *fmt, ...)
{
	struct kx_hook *h;
	va_list ap;

	if (ci->nhooks >= KX_MAX_HOOKS)
		return;
	h = &ci->hooks[ci->nhooks++];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(h->mech, sizeof(h->mech), "%s", mech);
	h->state = (uint8_t)state;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(h->why, sizeof(h->why), fmt, ap);
		va_end(ap);
	}
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = (uint32_t)sysconf(_SC_PAGESIZE);

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static struct kx_dev_key dev_key(const struct kx_device *d)
{
	struct kx_dev_key k = {.fkind = d->fkind};

	if (d->fkind == KX_FK_CHR || d->fkind == KX_FK_BLK)
		k.dev = d->any_minor ? KX_DEV_ANY_MINOR(KX_MAJOR(d->dev)) : d->dev;
	return k;
}

/* Aggregates unwrap NVIDIA XFER escapes only while such a device is traced. */
static void set_agg_xfer(struct kx_session *s, const struct kx_device *d, int n)
{
	int nv = 0;

	for (int i = 0; i < n; i++)
		nv |= d[i].drv == KX_DRV_NVIDIA;
	s->skel->bss->agg_xfer = nv;
}

static int fill_maps(struct kx_session *s, const struct kx_session_opts *o, char *err, size_t len)
{
	int devs_fd = bpf_map__fd(s->skel->maps.devs);
	int arg_fd = bpf_map__fd(s->skel->maps.argspec);
	const struct kx_arg_req *reqs;
	size_t nreq;

	set_agg_xfer(s, o->devices, o->ndevices);
	for (int i = 0; i < o->ndevices; i++) {
		const struct kx_device *d = &o->devices[i];
		struct kx_dev_key k = dev_key(d);
		uint32_t drv = d->drv;

		if (bpf_map_update_elem(devs_fd, &k, &drv, BPF_ANY)) {
			snprintf(err, len, "cannot add device %s to the filter: %s", d->node,
			         strerror(errno));
			return -1;
		}
	}
	reqs = kx_ioctl_arg_reqs(&nreq);
	for (size_t i = 0; i < nreq; i++) {
		struct kx_arg_key k = {.drv = reqs[i].drv, .cmd = reqs[i].key};
		struct kx_arg_spec v = {.len = reqs[i].len, .flags = reqs[i].flags};

		if (bpf_map_update_elem(arg_fd, &k, &v, BPF_ANY)) {
			snprintf(err, len, "cannot fill the argument-copy map: %s",
			         strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Programs of one mechanism, by name after the prefix; the syscall pair is mandatory. */
static const struct {
	const char *suffix;
	const char *hook;
	int mandatory;
} progs[] = {
        {"sys_enter", "ioctl enter", 1},
        {"sys_exit", "ioctl exit", 1},
        {"fork", "sched_process_fork", 0},
        {"exit", "sched_process_exit", 0},
        {"exec", "sched_process_exec", 0},
        {"rename", "task_rename", 0},
        {"sched_switch", "sched_switch (off-CPU)", 0},
};

static int prog_index(const char *name, const char *prefix)
{
	const char *suffix = name + strlen(prefix);

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (strcmp(suffix, progs[i].suffix) == 0)
			return (int)i;
	return -1;
}

/* Loads with one mechanism and attaches its programs. 0, or -1 with why. */
static int try_mech(struct kx_session *s, const struct kx_session_opts *o, int m, char *why,
                    size_t len)
{
	struct bpf_program *p;
	uint32_t rb = pow2_at_least(o->ringbuf_bytes ? o->ringbuf_bytes : KX_RINGBUF_DEFAULT);
	uint32_t nhooks = s->ci.nhooks;
	int err;

	s->skel = ioctl_bpf__open();
	if (!s->skel) {
		snprintf(why, len, "cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	bpf_object__for_each_program(p, s->skel->obj)
	{
		const char *n = bpf_program__name(p);

		bpf_program__set_autoload(p, strncmp(n, mechs[m].prefix, strlen(mechs[m].prefix)) ==
		                                     0);
	}
	s->skel->rodata->targ_all = o->all != 0;
	s->skel->rodata->wakeup_bytes = rb / 4;
	s->skel->rodata->aggregate = o->aggregate != 0;
	s->skel->rodata->agg_by_pid = o->aggregate && o->agg_by_pid;
	s->skel->rodata->agg_by_cgroup = o->aggregate && !o->agg_by_pid && o->agg_by_cgroup;
	/* The agg maps are preallocated: one entry only when they are not used. */
	s->agg_max = o->aggregate ? (o->agg_max_keys ? o->agg_max_keys : KX_AGG_MAX_KEYS) : 0;
	bpf_map__set_max_entries(s->skel->maps.agg_index, s->agg_max ? s->agg_max : 1);
	bpf_map__set_max_entries(s->skel->maps.agg, s->agg_max ? s->agg_max : 1);
	bpf_map__set_max_entries(s->skel->maps.agg_free, s->agg_max ? s->agg_max : 1);
	s->aggregate = o->aggregate != 0;
	bpf_map__set_max_entries(s->skel->maps.events, rb);
	s->ci.ringbuf_bytes = rb;
	/* In-flight calls: task storage under tp_btf, else the tid hash. Only
	 * the one in use is sized (task storage needs 5.11: not made for the
	 * fallbacks, which older kernels use). */
	if (strcmp(mechs[m].mech, "tp_btf") == 0)
		bpf_map__set_max_entries(s->skel->maps.inflight, 1);
	else
		bpf_map__set_autocreate(s->skel->maps.task_call, false);

	if (strcmp(mechs[m].mech, "tp") == 0 && !kx_probe_tracefs(why, len))
		goto fail;
	err = ioctl_bpf__load(s->skel);
	if (err) {
		snprintf(why, len, "load failed (%s)", strerror(-err));
		goto fail;
	}
	if (s->aggregate) {
		struct kx_agg_maps am;

		kx_session_agg_maps(s, &am);
		if (kx_agg_maps_init(&am, s->agg_max, why, len))
			goto fail;
	}
	bpf_object__for_each_program(p, s->skel->obj)
	{
		const char *n = bpf_program__name(p);
		int i = prog_index(n, mechs[m].prefix);
		struct bpf_link *l;

		if (!bpf_program__autoload(p) || i < 0)
			continue;
		l = bpf_program__attach(p);
		if (!l) {
			err = -errno;
			if (progs[i].mandatory) {
				snprintf(why, len, "attach of %s failed (%s)", progs[i].hook,
				         strerror(-err));
				goto fail;
			}
			/* Optional: threads keep their first name, children may be missed. */
			add_hook(&s->ci, progs[i].hook, mechs[m].mech, KX_HOOK_FAILED,
			         "attach failed (%s)", strerror(-err));
			continue;
		}
		if (s->nlinks < (int)(sizeof(s->links) / sizeof(s->links[0])))
			s->links[s->nlinks++] = l;
		else
			bpf_link__destroy(l);
		if (!progs[i].mandatory)
			add_hook(&s->ci, progs[i].hook, mechs[m].mech, KX_HOOK_ATTACHED, NULL);
	}
	return 0;
fail:
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	s->nlinks = 0;
	s->ci.nhooks = nhooks;
	ioctl_bpf__destroy(s->skel);
	s->skel = NULL;
	return -1;
}

static void fill_host(struct kx_capinfo *ci)
{
	struct utsname u;

	if (gethostname(ci->hostname, sizeof(ci->hostname)) != 0)
		snprintf(ci->hostname, sizeof(ci->hostname), "localhost");
	ci->hostname[sizeof(ci->hostname) - 1] = 0;
	if (uname(&u) == 0)
		snprintf(ci->kernel, sizeof(ci->kernel), "%s", u.release);
}

struct kx_session *kx_session_open(const struct kx_session_opts *o, char *err, size_t len)
{
	struct kx_session *s;
	char why[sizeof(((struct kx_hook *)0)->why)];
	int chosen = -1;

	if (!kx_probe_privileges(err, len) || !kx_probe_btf(err, len))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	verbose_libbpf = o->verbose;
	libbpf_set_print(libbpf_print);
	fill_host(&s->ci);
	s->sink = o->sink;
	s->ci.all_pids = o->all != 0;
	for (int i = 0; i < o->ndevices && s->ci.ndevices < KX_MAX_DEVICES; i++)
		s->ci.devices[s->ci.ndevices++] = o->devices[i];

	for (int m = 0; m < (int)(sizeof(mechs) / sizeof(mechs[0])); m++) {
		if (o->mech && strcmp(o->mech, mechs[m].mech) != 0)
			continue;
		if (try_mech(s, o, m, why, sizeof(why)) == 0) {
			chosen = m;
			break;
		}
		add_hook(&s->ci, "ioctl", mechs[m].mech, KX_HOOK_SKIPPED, "%s", why);
	}
	if (chosen < 0) {
		if (o->mech && s->ci.nhooks == 0)
			snprintf(err, len,
			         "unknown attach mechanism '%s' (use tp_btf, raw_tp or tp)",
			         o->mech);
		else
			snprintf(err, len,
			         "no attach mechanism worked for the ioctl hooks: last: %s%s", why,
			         o->verbose ? "" : " (run with -v for libbpf's diagnostics)");
		free(s);
		return NULL;
	}
	s->mech = mechs[chosen].mech;
	add_hook(&s->ci, "ioctl", s->mech, KX_HOOK_ATTACHED, NULL);
	if (fill_maps(s, o, err, len) != 0)
		goto fail;
	/* Optional extras: each reports what it attached, none fails the session. */
	if (o->sink.job && !o->no_jobs) {
		struct kx_jobsrc_opts jo = {
		        .events_fd = bpf_map__fd(s->skel->maps.events),
		        .stats_fd = bpf_map__fd(s->skel->maps.stats),
		        .pids_fd = bpf_map__fd(s->skel->maps.pids),
		        .devs_fd = bpf_map__fd(s->skel->maps.devs),
		        .all = o->all,
		        .wakeup_bytes = s->skel->rodata->wakeup_bytes,
		        .mech = s->mech,
		        .devices = o->devices,
		        .ndevices = o->ndevices,
		        /* Always-on pairs block and fence jobs only: every KVM exit of
		         * the machine would otherwise cost a ring record. */
		        .no_kvm = o->aggregate,
		};

		s->jobs = kx_jobsrc_open(&jo, &s->ci);
	}
	if (!o->no_drvhooks)
		s->drv = kx_drvhook_open(&s->ci);
	s->consumer = kx_consumer_new(bpf_map__fd(s->skel->maps.events), &o->sink, err, len);
	if (!s->consumer)
		goto fail;
	return s;
fail:
	kx_session_close(s);
	return NULL;
}

int kx_session_add_pid(struct kx_session *s, uint32_t pid, char *err, size_t len)
{
	uint8_t one = 1;

	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		snprintf(err, len, "no such process: %u", pid);
		return -1;
	}
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.pids), &pid, &one, BPF_ANY)) {
		snprintf(err, len, "cannot add pid %u to the filter: %s", pid, strerror(errno));
		return -1;
	}
	return 0;
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

static void read_stats(struct kx_session *s)
{
	int fd = bpf_map__fd(s->skel->maps.stats);
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum[KX_STAT_MAX] = {0};
	uint64_t *vals;

	if (ncpu <= 0)
		return;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return;
	for (uint32_t k = 0; k < KX_STAT_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals) != 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			sum[k] += vals[c];
	}
	free(vals);
	s->ci.emitted = sum[KX_STAT_EMITTED];
	s->ci.dropped = sum[KX_STAT_DROPPED];
	s->ci.inflight_full = sum[KX_STAT_INFLIGHT_FULL];
	s->ci.pidset_full = sum[KX_STAT_PIDSET_FULL];
	s->ci.arg_faults = sum[KX_STAT_ARG_FAULT];
	s->ci.received = kx_consumer_ioctls(s->consumer);
	s->ci.job_emitted = sum[KX_STAT_JOB_EMITTED];
	s->ci.job_dropped = sum[KX_STAT_JOB_DROPPED];
	s->ci.job_received = kx_consumer_jobs(s->consumer);
}

int kx_session_stop(struct kx_session *s)
{
	if (s->stopped)
		return 0;
	/* Detach first so nothing new arrives, then drain what is queued. */
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	s->nlinks = 0;
	kx_jobsrc_detach(s->jobs);
	kx_drvhook_detach(s->drv);
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
	if (!s->stopped && s->skel)
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

void kx_session_agg_maps(const struct kx_session *s, struct kx_agg_maps *out)
{
	int on = s->aggregate && s->skel;

	out->index_fd = on ? bpf_map__fd(s->skel->maps.agg_index) : -1;
	out->values_fd = on ? bpf_map__fd(s->skel->maps.agg) : -1;
	out->free_fd = on ? bpf_map__fd(s->skel->maps.agg_free) : -1;
	out->gen = on ? &s->skel->bss->agg_gen : NULL;
}

uint32_t kx_session_agg_max_keys(const struct kx_session *s)
{
	return s->aggregate ? s->agg_max : 0;
}

uint64_t kx_session_stat(struct kx_session *s, unsigned int which)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals, sum = 0;

	if (!s->skel || which >= KX_STAT_MAX || ncpu <= 0)
		return 0;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &which, vals) == 0)
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
	free(vals);
	return sum;
}

static int dev_in(const struct kx_dev_key *k, const struct kx_device *d, int n)
{
	for (int i = 0; i < n; i++) {
		struct kx_dev_key x = dev_key(&d[i]);

		if (x.fkind == k->fkind && x.dev == k->dev)
			return 1;
	}
	return 0;
}

int kx_session_set_devices(struct kx_session *s, const struct kx_device *d, int n, char *err,
                           size_t len)
{
	int fd;
	struct kx_dev_key k, next, *prev = NULL;
	struct kx_dev_key stale[1024]; /* the devs map holds at most 1024 */
	int nstale = 0;

	if (!s->skel) {
		snprintf(err, len, "session is closed");
		return -1;
	}
	fd = bpf_map__fd(s->skel->maps.devs);
	for (int i = 0; i < n; i++) {
		uint32_t drv = d[i].drv;

		k = dev_key(&d[i]);
		if (bpf_map_update_elem(fd, &k, &drv, BPF_ANY)) {
			snprintf(err, len, "cannot add device %s to the filter: %s", d[i].node,
			         strerror(errno));
			return -1;
		}
	}
	set_agg_xfer(s, d, n);
	if (s->jobs && kx_jobsrc_set_devices(s->jobs, d, n)) {
		snprintf(err, len, "cannot update the traced block disks: %s", strerror(errno));
		return -1;
	}
	/* Collect first, delete after: deleting while walking restarts the walk. */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (!dev_in(&next, d, n) && nstale < (int)(sizeof(stale) / sizeof(stale[0])))
			stale[nstale++] = next;
		k = next;
		prev = &k;
	}
	for (int i = 0; i < nstale; i++)
		bpf_map_delete_elem(fd, &stale[i]);
	/* After the map is final: threads then drop their cached device answers. */
	__atomic_add_fetch(&s->skel->bss->devs_gen, 1, __ATOMIC_SEQ_CST);
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
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	kx_jobsrc_close(s->jobs);
	kx_drvhook_close(s->drv);
	if (s->skel)
		ioctl_bpf__destroy(s->skel);
	free(s);
}
