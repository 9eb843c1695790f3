/*
 * Capture session: probes the kernel, loads the BPF programs with the best
 * attach mechanism available (tp_btf > raw_tp > classic tracepoints), fills
 * the pid and device filters, syncs clocks, runs the consumer, and tears
 * everything down again (no fds, maps or links left after close). The CLI,
 * the TensorFlow plugin and any daemon all capture through this.
 */
#ifndef KX_SESSION_H
#define KX_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "model/event.h"

/* Where received events go. Called on the consumer thread, except begin.
 * Every callback is optional (NULL: that kind of event is counted, not kept). */
struct kx_sink {
	void *ctx;
	/* arg: arg_in_len + arg_out_len bytes (in, then out), NULL when none. */
	void (*ioctl)(void *ctx, const struct kx_ioctl *e, const uint8_t *arg);
	void (*task)(void *ctx, const struct kx_task *t);
	/* Job lifecycle events (device timelines); job sources load only with it. */
	void (*job)(void *ctx, const struct kx_job *j);
	/* Roughly every 100 ms and once after the final drain. */
	void (*tick)(void *ctx);
	/* Once in kx_session_start, on the caller's thread, with the session's
	 * facts and start clock, before any event: 0, or -1 with err (start fails). */
	int (*begin)(void *ctx, const struct kx_capinfo *ci, char *err, size_t len);
};

struct kx_session_opts {
	int all;                         /* trace every process, not a pid set */
	const struct kx_device *devices; /* device filter */
	int ndevices;
	uint32_t ringbuf_bytes; /* 0: 8 MiB; rounded up to a power of two */
	const char *mech;       /* NULL: best available; or "tp_btf", "raw_tp", "tp" */
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
};

#define KX_RINGBUF_DEFAULT (8u << 20)

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
/* Aggregate mode: the BPF maps of the aggregates (user/live/aggregate.c reads
 * them and owns their slot protocol): index (key -> slot), values (array of
 * slots), free (queue of free slots) and the generation that threads check
 * before reusing the slot they keep. */
struct kx_agg_maps {
	int index_fd, values_fd, free_fd; /* -1 when the session does not aggregate */
	uint32_t *gen;
};
void kx_session_agg_maps(const struct kx_session *s, struct kx_agg_maps *out);
/* The key limit (0 when the session does not aggregate). */
uint32_t kx_session_agg_max_keys(const struct kx_session *s);
/* One BPF counter (enum kx_stat) summed over CPUs, read now. */
uint64_t kx_session_stat(struct kx_session *s, unsigned int which);
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
