/*
 * Capture session: probes the kernel, loads the BPF programs with the best
 * attach mechanism available for the mode (fentry, then the tracepoint
 * flavour cheapest for a host-wide or a targeted capture), fills
 * the pid and device filters, syncs clocks, runs the consumer, and tears
 * everything down again (no fds, maps or links left after close). The CLI,
 * the TensorFlow plugin and any daemon all capture through this.
 */
#ifndef KX_SESSION_H
#define KX_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "capture/ioctl.h"
#include "capture/sink.h"
#include "model/capinfo.h"
#include "model/event.h"

struct kx_session_opts {
	int all;                         /* trace every process, not a pid set */
	const struct kx_device *devices; /* device filter */
	int ndevices;
	uint32_t ringbuf_bytes; /* 0: 8 MiB; rounded up to a power of two */
	const char *mech;       /* NULL: best available; or "fentry", "tp_btf", "raw_tp", "tp" */
	struct kx_sink sink;
	int verbose;     /* let libbpf print its diagnostics */
	int no_jobs;     /* no job lifecycle sources (loaded only with sink.job) */
	int no_drvhooks; /* no driver entry hooks (fentry/kprobe) */
	/* Aggregate mode (always-on): ioctls are counted into in-kernel
	 * histograms (user/live/aggregate.h reads them), no ioctl records. */
	int aggregate;
	int agg_by_pid;        /* split aggregates by process */
	int agg_by_cgroup;     /* split aggregates by cgroup id */
	uint32_t agg_max_keys; /* 0: KX_AGG_MAX_KEYS */
	/* A daemon session for an unprivileged client: only processes whose
	 * real and effective uid are uid, checked in the kernel at every event
	 * (one that changes uid leaves for good), and at each exec only those
	 * the client may still read as ptrace has it (uids uid, gids gid, no
	 * capability, dumpable; one that fails leaves for good, counted in
	 * protected_exec); sources that would record other processes (driver
	 * entry hooks, block and v3d jobs) stay off. */
	int uid_only;
	uint32_t uid;
	uint32_t gid;
	int no_offcpu;        /* no sched_switch program (no off-CPU time) */
	const char *entry_fn; /* fentry target; NULL: found through BTF (tests only) */
	/* CPU samples of the traced processes (sink.sample gets them). */
	uint32_t sample_hz; /* cpu-clock samples per second per CPU; 0: none */
	int off_cpu;        /* off-CPU intervals of threads blocked inside traced ioctls */
	/* --call-graph dwarf: user stack bytes copied per CPU sample, unwound
	 * with the modules' CFI (capture/ustack.h); 0: frame pointers only. */
	uint32_t ustack_bytes;
	/* --call-graph auto: a CPU sample keeps its frame-pointer walk when every
	 * frame's module keeps frame pointers (capture/ustack.h), else its copy
	 * is unwound. */
	int ustack_auto;
	/* Perf counters read inside each traced call (sink.counters gets them). */
	const struct kx_counter_list *counters;
	/* A daemon session not allowed kernel-mode profiling: why (samples and
	 * off-CPU stacks then have no kernel frames, and hardware counters,
	 * which count the kernel's code too, are skipped). NULL: allowed. */
	const char *no_kernel_why;
	/* Annotations (capture/annotate.h): the probes of every copy of
	 * libkxprof_annotate.so the traced processes map, now or later. */
	int annotate;
	/* Stop hands the release of its probes on perf events (uprobes,
	 * kprobes, tracepoints) to a child process (util/bgrelease.h): for a
	 * caller that exits right after. */
	int quick_exit;
};

/* The ioctl attach mechanisms the session tries, best first: for host-wide
 * modes (aggregation or every process) or for a targeted capture. */
const char *const *kx_session_mechs(int host_wide, size_t *n);

struct kx_session;

/* Loads and attaches (events queue in the ring buffer until start). NULL
 * with err set ("need root or CAP_BPF+CAP_PERFMON...", "no kernel BTF...",
 * "no attach mechanism worked: ..."). */
struct kx_session *kx_session_open(const struct kx_session_opts *o, char *err, size_t len);
int kx_session_add_pid(struct kx_session *s, uint32_t pid, char *err, size_t len);
/* Syncs clocks and starts the consumer thread. */
int kx_session_start(struct kx_session *s, char *err, size_t len);
/* Detaches, drains what is left, syncs clocks, reads the loss counters. */
int kx_session_stop(struct kx_session *s);
/* Capture facts; counters are live while running, final after stop. */
const struct kx_capinfo *kx_session_capinfo(struct kx_session *s);
const char *kx_session_mech(const struct kx_session *s);
/* What was traced, for the record header ("kvm_workload -j 100", "-a"). */
void kx_session_set_cmdline(struct kx_session *s, const char *cmdline);
/* This machine's host name ("localhost" when it has none) and kernel release into ci. */
void kx_capinfo_fill_host(struct kx_capinfo *ci);
/* The key limit (0 when the session does not aggregate). */
uint32_t kx_session_agg_max_keys(const struct kx_session *s);
/* Aggregate mode: every key with its value, read now; with take, the keys
 * are reset (see kx_ioctl_agg_read for what a reset promises). Callers
 * serialize (live/aggregate.c holds a lock). */
int kx_session_agg_read(struct kx_session *s, int take, struct kx_agg_entry **out, size_t *n,
                        char *err, size_t len);
/* Aggregate mode: resets every key drop(key, ctx) picks; returns how many. */
int kx_session_agg_drop(struct kx_session *s, int (*drop)(const struct kx_agg_key *, void *),
                        void *ctx);
struct kx_sampler_maps;
/* The session's pid set and calls in flight, for a sampler of its own
 * (its own ring: events -1), e.g. a profile taken on demand. 0, or -1 when
 * the session is closed. */
int kx_session_sampler_maps(const struct kx_session *s, struct kx_sampler_maps *m);
/* 1 when the annotation probes are loaded (opts.annotate and they could be). */
int kx_session_annotating(const struct kx_session *s);
/* One BPF counter (enum kx_stat) summed over CPUs, read now. */
uint64_t kx_session_stat(struct kx_session *s, unsigned int which);
/* The job sources' open block requests map (capture/jobsrc.h), -1 when
 * none: tests plant a request whose completion never came. */
int kx_session_blkopen_fd(const struct kx_session *s);
/*
 * Replaces the device filter (hot-plug rescans, SIGHUP): new entries are
 * added before stale ones are removed, so a device in both sets is never
 * untraced; the capinfo device list follows. Not thread-safe against
 * readers of kx_session_capinfo: callers serialize.
 */
int kx_session_set_devices(struct kx_session *s, const struct kx_device *d, int n, char *err,
                           size_t len);
void kx_session_close(struct kx_session *s);

#endif /* KX_SESSION_H */
