/*
 * Loader of bpf/ioctl.bpf.c: opens, sizes, loads and attaches the ioctl
 * capture with one attach mechanism (fentry, tp_btf, raw_tp or tp; the
 * session tries them in order), fills its pid, device and argument-copy maps, reads its
 * per-CPU counters, and runs the kernel side of the aggregate maps: the index
 * (key -> slot), the slot values, the free-slot queue, the generation that
 * makes threads drop a cached slot, and the recycling of retired slots a
 * second after their key left the index. Nothing outside this file sees the
 * skeleton, its map fds or its .bss.
 */
#ifndef KX_CAPTURE_IOCTL_H
#define KX_CAPTURE_IOCTL_H

#include <stddef.h>
#include <stdint.h>

#include "counters_rec.h" /* bpf/: KX_CSTAT_MAX */
#include "kxprof.h"
#include "model/capinfo.h"

struct kx_ioctl_bpf;
struct kx_counter_list;

#define KX_RINGBUF_DEFAULT (8u << 20) /* bytes */

struct kx_ioctl_bpf_opts {
	int all;                         /* trace every process, not a pid set */
	const struct kx_device *devices; /* device filter */
	int ndevices;
	uint32_t ringbuf_bytes; /* 0: KX_RINGBUF_DEFAULT; rounded up to a power of two */
	int aggregate; /* count into the aggregate maps, no ioctl records but KVM_RUN's (with
	                  a KVM device: live KVM jobs start at its enter) */
	int agg_by_pid, agg_by_cgroup;
	uint32_t agg_max_keys; /* 0: KX_AGG_MAX_KEYS */
	int uid_only;          /* only processes whose real and effective uid are uid */
	uint32_t uid;
	uint32_t gid; /* with uid_only: the exec rule's (session.h); the exec hook is then needed */
	int no_offcpu; /* no sched_switch program: no off-CPU time */
	/* fentry: the function to hook; NULL: the ioctl syscall's entry function
	 * found through BTF (tests name a missing one to see the refusal). */
	const char *entry_fn;
	/* Perf counters read inside each call (record --counters; not with
	 * aggregate): opened before load, refused ones noted in the hooks. */
	const struct kx_counter_list *counters;
	const char *no_hw_counters; /* not NULL: hardware counters are skipped, for this reason */
};
#define KX_CTR_THREADS 16384 /* threads inside traced calls at once whose counters are kept */

/* Map fds other loaders share (job sources write into the same ring; the
 * sampler reads the calls in flight). */
struct kx_ioctl_bpf_fds {
	int events, stats, pids, devs;
	uint32_t wakeup_bytes; /* the ring's wakeup threshold */
	int inflight;          /* calls in flight by tid (bpf/inflight.bpf.h) */
	int task_call;         /* the same in task storage; -1 when not made (not tp_btf) */
	int call_btf;          /* calls are kept in task_call (tp_btf), else in inflight */
	int argspec;           /* the argument-copy plan (filled by kx_ioctl_bpf_fill) */
};

/* Loads with mechanism mech and attaches its programs; the optional ones
 * that fail are reported into ci's hooks. NULL with why. Mechanisms:
 * "fentry" (fentry/fexit on the ioctl syscall's entry function: no other
 * syscall pays), "tp_btf" and "raw_tp" (the raw syscall tracepoints: every
 * syscall runs a program), "tp" (syscalls:sys_{enter,exit}_ioctl: the kernel
 * filters other syscalls first; needs tracefs). */
struct kx_ioctl_bpf *kx_ioctl_bpf_open(const struct kx_ioctl_bpf_opts *o, const char *mech,
                                       struct kx_capinfo *ci, char *why, size_t len);
/* Fills the device filter and the argument-copy plan. 0, or -1 with err. */
int kx_ioctl_bpf_fill(struct kx_ioctl_bpf *b, const struct kx_ioctl_bpf_opts *o, char *err,
                      size_t len);
void kx_ioctl_bpf_fds(const struct kx_ioctl_bpf *b, struct kx_ioctl_bpf_fds *out);
/* fentry: the function hooked ("__x64_sys_ioctl"); "" with other mechanisms. */
const char *kx_ioctl_bpf_entry_fn(const struct kx_ioctl_bpf *b);
/* The mechanism of the task hooks (fork, exit, exec, rename, sched_switch)
 * that run with ioctl mechanism mech ("tp_btf" or "raw_tp"); NULL if unknown. */
const char *kx_ioctl_hooks_mech(const char *mech);
int kx_ioctl_bpf_add_pid(struct kx_ioctl_bpf *b, uint32_t pid, char *err, size_t len);
/* Replaces the device filter: new entries first, stale ones after, then the
 * generation bump that makes threads drop their cached device answer. */
int kx_ioctl_bpf_set_devices(struct kx_ioctl_bpf *b, const struct kx_device *d, int n, char *err,
                             size_t len);
/* Sum over CPUs of every counter (enum kx_stat) into sum[KX_STAT_MAX]. */
void kx_ioctl_bpf_stats(struct kx_ioctl_bpf *b, uint64_t *sum);
/* Sum over CPUs of the counter records' counters (enum kx_ctr_stat) into sum[KX_CSTAT_MAX]. */
void kx_ioctl_bpf_ctr_stats(struct kx_ioctl_bpf *b, uint64_t *sum);
/* One counter summed over CPUs; 0 when unknown. */
uint64_t kx_ioctl_bpf_stat(struct kx_ioctl_bpf *b, unsigned int which);
/* Detaches every program (maps stay readable). NULL: nothing to do. */
void kx_ioctl_bpf_detach(struct kx_ioctl_bpf *b);
/* Runs of its programs the kernel skipped (capture/progmiss.h); 0 for NULL. */
uint64_t kx_ioctl_bpf_missed(const struct kx_ioctl_bpf *b);
void kx_ioctl_bpf_close(struct kx_ioctl_bpf *b); /* NULL: nothing to do */

/* ---- aggregate maps ---- */

/* The key limit (0 when not aggregating). */
uint32_t kx_ioctl_agg_max_keys(const struct kx_ioctl_bpf *b);

struct kx_agg_entry {
	struct kx_agg_key key;
	struct kx_agg_val val;
};

/*
 * Every key with its value, read now (*out malloc'd, *n entries). With take,
 * each key is taken out of the index in one kernel call before its slot is
 * read, threads are told to drop the slots they keep, and the slots are
 * recycled a second later: every ioctl is then counted in exactly one read,
 * except one whose exit updates a slot between its program's generation check
 * and the read (lost, never counted twice). Not thread-safe: callers serialize.
 */
int kx_ioctl_agg_read(struct kx_ioctl_bpf *b, int take, struct kx_agg_entry **out, size_t *n,
                      char *err, size_t len);
/* Takes every key for which drop(key, ctx) is true out of the index (slots
 * recycled as above). Returns how many. Not thread-safe: callers serialize. */
int kx_ioctl_agg_drop(struct kx_ioctl_bpf *b, int (*drop)(const struct kx_agg_key *, void *),
                      void *ctx);

#endif /* KX_CAPTURE_IOCTL_H */
