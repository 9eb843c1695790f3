/*
 * CPU sampler (see sample.h): the perf events, the program's links, the ring
 * buffer and the loss counters of bpf/sample.bpf.c.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/progmiss.h"
#include "capture/ioctl.h"
#include "capture/percpu.h"
#include "capture/probe.h"
#include "capture/sampler.h"
#include "sample.skel.h"
#include "sample_rec.h" /* bpf/: the record layout */
#include "util/parse.h"

struct kx_sampler {
	struct sample_bpf *skel;
	struct ring_buffer *rb;  /* standalone only */
	int ncpu;                /* possible CPUs */
	int *pfd;                /* per possible CPU: perf event fd, -1 when none */
	struct bpf_link **links; /* per possible CPU */
	struct bpf_link *offcpu; /* the sched_switch program's link */
	const char *offcpu_mech;
	kx_sample_fn fn;
	void *ctx;
	void (*copy_fn)(void *ctx, const void *rec, size_t len); /* stack copies */
	uint32_t freq_hz;
	int off_cpu, call_btf;
	int started, stopped;
	struct kx_sample_counts c;
};

int kx_sample_parse(const void *rec, size_t len, struct kx_sample *out)
{
	const struct kx_sample_rec *r = rec;
	size_t need;

	if (len < KX_SAMPLE_REC_BASE_SIZE ||
	    (r->hdr.type != KX_REC_SAMPLE && r->hdr.type != KX_REC_OFFCPU) ||
	    r->kdepth > KX_SAMPLE_MAX_DEPTH || r->udepth > KX_SAMPLE_MAX_DEPTH)
		return -1;
	need = KX_SAMPLE_REC_BASE_SIZE + ((size_t)r->kdepth + r->udepth) * sizeof(r->ips[0]);
	if (r->hdr.size != need || len < need)
		return -1;
	out->kind = r->hdr.type == KX_REC_OFFCPU ? KX_SAMPLE_OFFCPU : KX_SAMPLE_CPU;
	out->ts_ns = r->ts;
	out->weight_ns = r->weight;
	out->pid = r->pid;
	out->tid = r->tid;
	out->cpu = r->hdr.cpu;
	out->exec_id = r->exec_id;
	out->flags = r->flags;
	out->call = r->call;
	memcpy(out->comm, r->comm, sizeof(out->comm));
	out->comm[sizeof(out->comm) - 1] = 0;
	out->kips = (const uint64_t *)r->ips;
	out->nk = r->kdepth;
	out->uips = (const uint64_t *)r->ips + r->kdepth;
	out->nu = r->udepth;
	return 0;
}

int kx_call_graph_parse(const char *s, uint32_t *bytes, int *autom, char *err, size_t len)
{
	long long n = KX_USTACK_DEFAULT;
	size_t k;

	*bytes = 0;
	*autom = 0;
	if (!strcmp(s, "fp"))
		return 0;
	if (!strncmp(s, "dwarf", 5))
		k = 5;
	else if (!strncmp(s, "auto", 4))
		k = 4;
	else
		k = 0;
	if (!k || (s[k] && s[k] != ',')) {
		snprintf(err, len, "--call-graph: '%s' is not fp, dwarf[,SIZE] or auto[,SIZE]", s);
		return -1;
	}
	if (s[k] &&
	    kx_parse_long("--call-graph MODE,SIZE", s + k + 1, 8, KX_USTACK_MAX, &n, err, len))
		return -1;
	*autom = k == 4;
	*bytes = (uint32_t)(n & ~7ll); /* whole words */
	return 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct kx_sampler *s = ctx;
	struct kx_sample smp;

	if (len >= sizeof(struct kx_hdr) && ((const struct kx_hdr *)data)->type == KX_REC_USTACK) {
		if (s->copy_fn)
			s->copy_fn(s->ctx, data, len);
		else
			s->c.malformed++;
		return 0;
	}
	if (kx_sample_parse(data, len, &smp) != 0) {
		s->c.malformed++;
		return 0;
	}
	if (smp.kind == KX_SAMPLE_OFFCPU)
		s->c.off_received++;
	else
		s->c.received++;
	if (s->fn)
		s->fn(s->ctx, &smp);
	return 0;
}

/* The ring buffer's size for a wish: a power of two, from a page to 1 GiB. */
static uint32_t ringbuf_size(uint32_t want)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);

	if (want <= page)
		return page;
	if (want > 1u << 30)
		return 1u << 30;
	return 1u << (32 - __builtin_clz(want - 1));
}

/* Points the object's shared maps at the session's (before load). */
static int share_maps(struct sample_bpf *sk, const struct kx_sampler_maps *m)
{
	int e;

	/* events < 0: the sampler keeps its own ring (a profile on demand). */
	if ((m->events >= 0 && (e = bpf_map__reuse_fd(sk->maps.events, m->events))) ||
	    (e = bpf_map__reuse_fd(sk->maps.pids, m->pids)) ||
	    (e = bpf_map__reuse_fd(sk->maps.inflight, m->inflight)))
		return e;
	/* Without the session's task storage, ours is made (and never used). */
	return m->task_call >= 0 ? bpf_map__reuse_fd(sk->maps.task_call, m->task_call) : 0;
}

static int own_ring(const struct kx_sampler_opts *o)
{
	return !o->maps || o->maps->events < 0;
}

/* Sizes the maps, sets the configuration and picks the programs (before load). */
static int configure(struct kx_sampler *s, const struct kx_sampler_opts *o)
{
	struct sample_bpf *sk = s->skel;
	uint32_t rb = ringbuf_size(o->ringbuf_bytes ? o->ringbuf_bytes : KX_RINGBUF_DEFAULT);

	sk->rodata->targ_all = o->all != 0;
	sk->rodata->targ_uid_only = o->uid_only != 0;
	sk->rodata->targ_uid = o->uid;
	sk->rodata->kernel_stacks = !o->no_kstacks;
	sk->rodata->wakeup_bytes = own_ring(o) ? rb / 4 : o->maps->wakeup_bytes;
	sk->rodata->call_btf = s->call_btf;
	sk->rodata->ustack_bytes = o->ustack_bytes;
	bpf_map__set_max_entries(sk->maps.ustack_buf, o->ustack_bytes ? (uint32_t)s->ncpu : 1);
	/* Declared by shared.bpf.h for the ioctl capture, unused here. */
	bpf_map__set_autocreate(sk->maps.devs, false);
	bpf_map__set_autocreate(sk->maps.stats, false);
	bpf_map__set_max_entries(sk->maps.offcpu_stash,
	                         o->off_cpu ? (o->offcpu_slots ? o->offcpu_slots : 4096) : 1);
	bpf_program__set_autoload(sk->progs.kx_sample, o->freq_hz > 0);
	bpf_program__set_autoload(sk->progs.kx_offcpu_btf, o->off_cpu && s->call_btf);
	bpf_program__set_autoload(sk->progs.kx_offcpu_raw, o->off_cpu && !s->call_btf);
	if (own_ring(o))
		bpf_map__set_max_entries(sk->maps.events, rb);
	if (o->maps)
		return share_maps(sk, o->maps);
	bpf_map__set_max_entries(sk->maps.inflight, 1); /* no ioctl capture: never a call */
	return 0;
}

static int load(struct kx_sampler *s, const struct kx_sampler_opts *o, char *err, size_t len)
{
	int e;

	s->skel = sample_bpf__open();
	if (!s->skel) {
		snprintf(err, len, "cannot open the sampling program: %s", strerror(errno));
		return -1;
	}
	e = configure(s, o);
	if (e) {
		snprintf(err, len, "cannot share the capture's maps with the sampler: %s",
		         strerror(-e));
		return -1;
	}
	e = sample_bpf__load(s->skel);
	if (e) {
		snprintf(err, len,
		         "cannot load the sampling program: %s (the kernel's verifier "
		         "log: run with libbpf diagnostics on)",
		         strerror(-e));
		return -1;
	}
	if (!own_ring(o))
		return 0;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->rb) {
		snprintf(err, len, "cannot map the sampling ring buffer: %s", strerror(errno));
		return -1;
	}
	return 0;
}

struct kx_sampler *kx_sampler_open(const struct kx_sampler_opts *o, char *err, size_t len)
{
	struct kx_sampler *s;

	if (o->freq_hz == 0 && !o->off_cpu) {
		snprintf(err, len, "sampling frequency must be at least 1 Hz");
		return NULL;
	}
	if (o->ustack_bytes > KX_USTACK_MAX) {
		snprintf(err, len, "--call-graph dwarf copies at most %u bytes of stack",
		         KX_USTACK_MAX);
		return NULL;
	}
#if !defined(__x86_64__)
	if (o->ustack_bytes) {
		snprintf(err, len, "--call-graph dwarf is only implemented for x86-64");
		return NULL;
	}
#endif
	if (o->off_cpu && !o->maps) {
		snprintf(err, len,
		         "off-CPU intervals are those of traced ioctls: they need a capture "
		         "session");
		return NULL;
	}
	if (!kx_probe_privileges(err, len))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	s->fn = o->fn;
	s->copy_fn = o->copy_fn;
	s->ctx = o->ctx;
	s->freq_hz = o->freq_hz;
	s->off_cpu = o->off_cpu;
	s->call_btf = o->maps && o->maps->call_btf;
	s->ncpu = libbpf_num_possible_cpus();
	if (s->ncpu <= 0) {
		snprintf(err, len, "cannot count the possible CPUs: %s", strerror(-s->ncpu));
		goto fail;
	}
	s->pfd = malloc(sizeof(*s->pfd) * s->ncpu);
	s->links = calloc(s->ncpu, sizeof(*s->links));
	if (!s->pfd || !s->links) {
		snprintf(err, len, "out of memory");
		goto fail;
	}
	for (int i = 0; i < s->ncpu; i++)
		s->pfd[i] = -1;
	if (load(s, o, err, len) == 0)
		return s;
fail:
	kx_sampler_close(s);
	return NULL;
}

int kx_sampler_add_pid(struct kx_sampler *s, uint32_t pid, char *err, size_t len)
{
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.pids), &pid, &one, BPF_ANY)) {
		snprintf(err, len, "cannot add pid %u to the sampling filter: %s", pid,
		         strerror(errno));
		return -1;
	}
	return 0;
}

static long perf_open(struct perf_event_attr *a, int cpu)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The kernel's ceiling for sample_freq, 0 when unreadable. */
static unsigned long max_sample_rate(void)
{
	unsigned long v = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static int open_cpu(struct kx_sampler *s, int cpu, char *err, size_t len)
{
	struct perf_event_attr a = {
	        .type = PERF_TYPE_SOFTWARE,
	        .size = sizeof(a),
	        .config = PERF_COUNT_SW_CPU_CLOCK,
	        .freq = 1,
	        .sample_freq = s->freq_hz,
	};
	long fd = perf_open(&a, cpu);

	if (fd < 0 && errno == ENODEV) { /* offline CPU */
		s->c.cpus_offline++;
		return 0;
	}
	if (fd < 0) {
		snprintf(err, len, "cannot open a cpu-clock perf event on CPU %d: %s%s", cpu,
		         strerror(errno),
		         errno == EACCES || errno == EPERM ? " (needs root or CAP_PERFMON, or a "
		                                             "lower kernel.perf_event_paranoid)"
		                                           : "");
		return -1;
	}
	s->pfd[cpu] = (int)fd;
	s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.kx_sample, (int)fd);
	if (!s->links[cpu]) {
		snprintf(err, len, "cannot attach the sampling program to CPU %d: %s", cpu,
		         strerror(errno));
		return -1;
	}
	s->c.cpus++;
	return 0;
}

/* The cpu-clock event of every online CPU, each with the program attached. */
static int start_sampling(struct kx_sampler *s, char *err, size_t len)
{
	unsigned long max = max_sample_rate();

	if (max && s->freq_hz > max) {
		snprintf(err, len,
		         "sampling frequency %u Hz is above the kernel's limit of %lu Hz "
		         "(kernel.perf_event_max_sample_rate): use a lower one",
		         s->freq_hz, max);
		return -1;
	}
	for (int cpu = 0; cpu < s->ncpu; cpu++)
		if (open_cpu(s, cpu, err, len) != 0)
			return -1;
	if (s->c.cpus == 0) {
		snprintf(err, len, "no online CPU to sample (%u offline)", s->c.cpus_offline);
		return -1;
	}
	return 0;
}

static int start_offcpu(struct kx_sampler *s, char *err, size_t len)
{
	struct bpf_program *p =
	        s->call_btf ? s->skel->progs.kx_offcpu_btf : s->skel->progs.kx_offcpu_raw;

	s->offcpu = bpf_program__attach(p);
	if (!s->offcpu) {
		snprintf(err, len, "cannot attach the off-CPU program to sched_switch: %s",
		         strerror(errno));
		return -1;
	}
	s->offcpu_mech = s->call_btf ? "tp_btf" : "raw_tp";
	return 0;
}

int kx_sampler_start(struct kx_sampler *s, char *err, size_t len)
{
	if (s->started) {
		snprintf(err, len, "the sampler is already started");
		return -1;
	}
	s->started = 1;
	if ((s->freq_hz && start_sampling(s, err, len)) ||
	    (s->off_cpu && start_offcpu(s, err, len))) {
		kx_sampler_stop(s);
		return -1;
	}
	return 0;
}

const char *kx_sampler_offcpu_mech(const struct kx_sampler *s)
{
	return s->offcpu_mech;
}

int kx_sampler_poll(struct kx_sampler *s, int timeout_ms, char *err, size_t len)
{
	int n, more;

	if (!s->rb) {
		snprintf(err, len,
		         "the sampler shares a capture's ring buffer: its consumer reads it");
		return -1;
	}
	n = ring_buffer__poll(s->rb, timeout_ms);

	if (n < 0 && n != -EINTR) {
		snprintf(err, len, "reading the sampling ring buffer failed: %s", strerror(-n));
		return -1;
	}
	/* Wakeups are sampled: pick up whatever arrived below the threshold. */
	more = ring_buffer__consume(s->rb);
	return (n < 0 ? 0 : n) + (more < 0 ? 0 : more);
}

static void detach(struct kx_sampler *s)
{
	bpf_link__destroy(s->offcpu);
	s->offcpu = NULL;
	for (int i = 0; i < s->ncpu; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
		if (s->pfd[i] >= 0)
			close(s->pfd[i]);
		s->pfd[i] = -1;
	}
}

static void read_counts(struct kx_sampler *s)
{
	uint64_t sum[KX_SSTAT_MAX];

	if (kx_percpu_sum(bpf_map__fd(s->skel->maps.sample_stats), KX_SSTAT_MAX, sum))
		fprintf(stderr, "kxprof: out of memory reading the sampling counters\n");
	s->c.emitted = sum[KX_SSTAT_EMITTED];
	s->c.dropped = sum[KX_SSTAT_DROPPED];
	s->c.no_ustack = sum[KX_SSTAT_NO_USTACK];
	s->c.no_kstack = sum[KX_SSTAT_NO_KSTACK];
	s->c.ustack_full = sum[KX_SSTAT_USTACK_FULL];
	s->c.kstack_full = sum[KX_SSTAT_KSTACK_FULL];
	s->c.off_emitted = sum[KX_SSTAT_OFF_EMITTED];
	s->c.off_dropped = sum[KX_SSTAT_OFF_DROPPED];
	s->c.off_noslot = sum[KX_SSTAT_OFF_NOSLOT];
	s->c.off_stale = sum[KX_SSTAT_OFF_STALE];
	s->c.ustack_emitted = sum[KX_SSTAT_USTACK_EMITTED];
	s->c.ustack_dropped = sum[KX_SSTAT_USTACK_DROPPED];
	s->c.ustack_fault = sum[KX_SSTAT_USTACK_FAULT];
}

void kx_sampler_stop(struct kx_sampler *s)
{
	if (!s || s->stopped || !s->skel)
		return;
	s->stopped = 1;
	detach(s);
	if (s->rb)
		ring_buffer__consume(s->rb);
	read_counts(s);
}

void kx_sampler_counts(struct kx_sampler *s, struct kx_sample_counts *c)
{
	if (!s->stopped) /* live: the kernel's counters as of now */
		read_counts(s);
	*c = s->c;
}

uint64_t kx_sampler_missed(const struct kx_sampler *s)
{
	return s && s->skel ? kx_bpf_missed(s->skel->obj) : 0;
}

void kx_sampler_close(struct kx_sampler *s)
{
	if (!s)
		return;
	if (s->pfd && s->links)
		kx_sampler_stop(s);
	ring_buffer__free(s->rb);
	sample_bpf__destroy(s->skel);
	free(s->pfd);
	free(s->links);
	free(s);
}
