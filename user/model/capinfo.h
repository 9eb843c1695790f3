/*
 * Facts about a capture that are not events: host, kernel, clocks, devices,
 * attach results and loss counters. Written into the record file header and
 * trailer, shown by report and every exporter's warnings. The record format
 * version is the file's, not the capture's: io/kxp_write.c writes it and
 * io/kxp_read.c checks it. Its encoding is io/tlv.h's.
 */
#ifndef KX_CAPINFO_H
#define KX_CAPINFO_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kxprof.h"
#include "model/annot.h"

#define KX_MAX_DEVICES 128
#define KX_MAX_HOOKS   64

struct kx_device {
	uint32_t dev;      /* kernel dev_t; 0 for anon kinds */
	uint8_t fkind;     /* enum kx_fkind */
	uint8_t drv;       /* enum kx_driver */
	uint8_t any_minor; /* matches every minor of the major */
	char node[64];     /* "/dev/kvm", "anon_inode:kvm-vcpu", "/dev/dri/renderD128" */
	char driver[32];   /* kernel driver name as found ("kvm", "amdgpu", "loop") */
};

enum kx_hook_state { KX_HOOK_ATTACHED = 1, KX_HOOK_SKIPPED = 2, KX_HOOK_FAILED = 3 };
struct kx_hook {
	char name[48]; /* "ioctl", "sched_process_fork", ... */
	char mech[16]; /* "tp_btf", "raw_tp", "tp", "fentry", "kprobe", "-" */
	uint8_t state; /* enum kx_hook_state */
	char why[96];  /* reason when skipped/failed; attached: a note (the function
	                * fentry hooked) or "" */
};

/* Calls of one hooked driver function (driver entry hooks that attached). */
struct kx_drvcall_stat {
	char fn[40];  /* "drm_ioctl" */
	char mech[8]; /* "fentry" or "kprobe" */
	uint64_t calls;
	uint64_t sum_ns;
	uint64_t max_ns;
	uint64_t slots[KX_HIST_SLOTS]; /* log2 latency histogram, see struct kx_agg_val */
};

/* CPU samples and off-CPU intervals of a capture (record -F, --off-cpu):
 * received + dropped == emitted for each kind. */
enum kx_stack_loss {
	KX_NO_USTACK,
	KX_NO_KSTACK,
	KX_USTACK_CUT,
	KX_KSTACK_CUT,
	/* --call-graph dwarf (ustack_bytes > 0): what became of the user stacks */
	KX_DW_UNWOUND,    /* unwound to their outermost frame */
	KX_DW_PARTIAL,    /* unwound, stopped before it (past the copy, no CFI) */
	KX_DW_FAILED,     /* no frame from the copy: the frame-pointer walk kept */
	KX_DW_NO_COPY,    /* no copy (lost: ring buffer full): the frame-pointer walk kept */
	KX_DW_COPY_FAULT, /* copies with nothing readable at the stack pointer */
	KX_DW_COPIES,     /* stack copies received */
	KX_DW_FP_KEPT,    /* --call-graph auto: frame-pointer walks kept (every frame's module
	                     keeps frame pointers) */
	KX_DW_JIT_STOPS,  /* of KX_DW_PARTIAL, stopped at JIT code (no CFI, no usable frame
	                     pointer) */
	KX_DW_JIT_STEPS,  /* JIT frames (no CFI) unwound past by their frame pointer */
	KX_DW_PY_STEPS,   /* CPython -X perf trampolines (JIT code, no CFI, perhaps no frame
	                     pointer) unwound past by their known layout */
	KX_STACK_LOSS_MAX
};
enum kx_sym_stat {
	KX_SYM_KERNEL_RESOLVED, /* distinct kernel addresses resolved */
	KX_SYM_KERNEL_UNKNOWN,  /*   left [unknown] */
	KX_SYM_USER_RESOLVED,   /* distinct user addresses resolved */
	KX_SYM_USER_UNKNOWN,    /*   left [unknown] */
	KX_SYM_PROCS,           /* process images whose maps were read */
	KX_SYM_PROCS_MISSED,    /* processes gone before their maps could be read */
	KX_SYM_STAT_MAX
};
struct kx_sample_info {
	uint32_t hz;           /* cpu-clock samples per second per CPU; 0: not sampled */
	uint32_t off_cpu;      /* off-CPU intervals inside traced ioctls were recorded */
	uint32_t cpus;         /* CPUs sampled */
	uint32_t ustack_bytes; /* --call-graph dwarf: user stack bytes copied per sample; 0: fp */
	uint64_t emitted, received, dropped;             /* CPU samples */
	uint64_t off_emitted, off_received, off_dropped; /* off-CPU intervals */
	uint64_t off_noslot;                             /* blocked threads not kept (stash full) */
	uint64_t off_stale; /* blocked threads whose switch-in was not seen before their call
	                       ended: not recorded */
	uint64_t stacks[KX_STACK_LOSS_MAX]; /* stacks missing or cut */
	uint64_t syms[KX_SYM_STAT_MAX];     /* symbolisation (the recorder's) */
	uint64_t sym_ns;                    /* time the recorder spent reading maps and resolving */
	char sym_warning[160]; /* why kernel frames did not resolve, "" when they did */
};

/* Counters inside traced calls (record --counters): received + dropped == emitted. */
enum kx_ctr_info_stat {
	KX_CTR_EMITTED,   /* counter records tried (one per traced call) */
	KX_CTR_RECEIVED,  /* received */
	KX_CTR_DROPPED,   /* lost: the ring buffer was full */
	KX_CTR_READ_FAIL, /* readings that failed (those calls' values are short) */
	KX_CTR_NOSLOT,    /* calls not measured: no room for their thread's state */
	KX_CTR_INFO_MAX
};
struct kx_counter_info {
	char names[128]; /* the counters in each record, comma-separated, in order; "" when none */
	uint64_t stats[KX_CTR_INFO_MAX];
};

/* DRM usage sampling (record --drm-usage): the sampler's passes and what
 * they read (capture/drmfdinfo.h), summed over the capture. */
enum kx_drm_info_stat {
	KX_DRMI_PASSES,       /* passes over the traced processes */
	KX_DRMI_PROCS,        /* processes walked, summed over passes */
	KX_DRMI_FDS,          /* fd links looked at */
	KX_DRMI_FDINFO_READS, /* fdinfo files read (DRM and accel fds only) */
	KX_DRMI_NOT_DRM,      /* of them, without a drm-driver line (a driver without stats) */
	KX_DRMI_UNREADABLE,   /* fd directories or fdinfo files not readable */
	KX_DRMI_DUP_CLIENTS,  /* fds of a client already counted in the pass */
	KX_DRMI_WENT_BACK,    /* counters found lower than before (the larger value held) */
	KX_DRMI_BAD_LINES,    /* drm- lines with a value the document does not allow */
	KX_DRMI_ROWS,         /* DRM usage records written */
	KX_DRMI_ROWS_LOST,    /* records not written (a write error) */
	KX_DRMI_PASS_NS,      /* time spent in passes, ns */
	KX_DRMI_MAX
};
struct kx_drm_info {
	uint64_t interval_ms; /* between passes; 0: not sampled */
	uint64_t stats[KX_DRMI_MAX];
};

/* Monotonic -> realtime: realtime_ns = mono_ns + offset_ns (best of several paired reads). */
struct kx_clock_sync {
	int64_t offset_ns;
	uint64_t uncertainty_ns; /* width of the tightest read pair */
	uint64_t mono_ns;        /* when measured */
};

struct kx_capinfo {
	char hostname[64];
	char kernel[96];   /* uname -r */
	char cmdline[256]; /* what was recorded, e.g. "kvm_workload -j 100" */
	struct kx_clock_sync clock_start;
	struct kx_clock_sync clock_stop; /* zero when the capture did not stop cleanly */
	uint64_t start_mono_ns;
	uint64_t stop_mono_ns;
	uint32_t ndevices;
	struct kx_device devices[KX_MAX_DEVICES];
	uint32_t nhooks;
	struct kx_hook hooks[KX_MAX_HOOKS];
	/* Loss accounting: received + dropped == emitted. */
	uint64_t emitted;
	uint64_t received;
	uint64_t dropped;    /* ring buffer full */
	uint64_t not_stored; /* store limit reached */
	uint64_t inflight_full;
	uint64_t pidset_full;
	uint64_t protected_exec; /* processes that left a user's session at a protected exec */
	uint64_t arg_faults;
	uint64_t bpf_missed; /* runs of the capture's BPF programs the kernel skipped (one
	                      * tracing program at a time per CPU): events never emitted */
	uint32_t ringbuf_bytes;
	uint32_t all_pids; /* -a */
	/* Job lifecycle records (device timelines): received + dropped == emitted. */
	uint64_t job_emitted;
	uint64_t job_received;
	uint64_t job_dropped;   /* ring buffer full */
	uint64_t job_done_lost; /* block completions that never reached the program (seen
	                         * as the sector's next request before it): events never
	                         * emitted, not in job_emitted */
	uint32_t ndrvcalls;
	struct kx_drvcall_stat drvcalls[KX_DRV_FN_MAX];
	struct kx_sample_info samples;   /* all 0 when not sampled */
	struct kx_counter_info counters; /* all 0 without --counters */
	struct kx_drm_info drm;          /* all 0 without DRM usage sampling */
	struct kx_ann_info ann; /* annotations: copies of the library, loss and anomalies */
};

/* Appends a hook result (NULL when the table is full); why is the caller's to fill. */
static inline struct kx_hook *kx_capinfo_hook(struct kx_capinfo *ci, const char *name,
                                              const char *mech, int state)
{
	struct kx_hook *h;

	if (ci->nhooks >= KX_MAX_HOOKS)
		return NULL;
	h = &ci->hooks[ci->nhooks++];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(h->mech, sizeof(h->mech), "%s", mech);
	h->state = (uint8_t)state;
	return h;
}

/* The length of a fixed-size field that may fill it with no NUL (a plain
 * loop: gcc 14's strnlen check takes the hooks for the hostname). */
static inline int kx_capinfo_field_len(const char *s, size_t size)
{
	size_t n = 0;

	while (n < size && s[n])
		n++;
	return (int)n;
}

/* The attach mechanism the ioctl hooks ran with, into buf: "tp_btf", or
 * "fentry on __x64_sys_ioctl"; NULL when the facts do not say (replayed
 * fixtures without hook lines). */
static inline const char *kx_capinfo_ioctl_mech(const struct kx_capinfo *ci, char *buf, size_t len)
{
	uint32_t n = ci->nhooks < KX_MAX_HOOKS ? ci->nhooks : KX_MAX_HOOKS;

	for (uint32_t i = 0; i < n; i++) {
		const struct kx_hook *h = &ci->hooks[i];

		if (h->state != KX_HOOK_ATTACHED || strncmp(h->name, "ioctl", sizeof(h->name)))
			continue;
		if (h->why[0])
			snprintf(buf, len, "%.*s on %.*s",
			         kx_capinfo_field_len(h->mech, sizeof(h->mech)), h->mech,
			         kx_capinfo_field_len(h->why, sizeof(h->why)), h->why);
		else
			snprintf(buf, len, "%.*s", kx_capinfo_field_len(h->mech, sizeof(h->mech)),
			         h->mech);
		return buf;
	}
	return NULL;
}

/* Realtime ns for a monotonic timestamp, using the start sync. */
static inline int64_t kx_capinfo_realtime(const struct kx_capinfo *ci, uint64_t mono_ns)
{
	return (int64_t)mono_ns + ci->clock_start.offset_ns;
}

/* Realtime ns for a monotonic timestamp, the offset interpolated between the
 * start and stop syncs (the drift between the clocks over the capture), the
 * start's alone when the capture did not stop cleanly. For merging with
 * another profiler's realtime stamps. */
static inline int64_t kx_capinfo_realtime_synced(const struct kx_capinfo *ci, uint64_t mono_ns)
{
	const struct kx_clock_sync *a = &ci->clock_start, *b = &ci->clock_stop;
	__int128 drift;

	if (!b->mono_ns || b->mono_ns <= a->mono_ns)
		return kx_capinfo_realtime(ci, mono_ns);
	/* Exact integers: (stop - start offset) * elapsed / span, truncated. */
	drift = (__int128)(b->offset_ns - a->offset_ns) *
	        ((__int128)mono_ns - (__int128)a->mono_ns) / (__int128)(b->mono_ns - a->mono_ns);
	return (int64_t)mono_ns + a->offset_ns + (int64_t)drift;
}

#endif /* KX_CAPINFO_H */
