/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Record layouts and map keys shared by the BPF programs and user space.
 * This header owns the wire format of the ring buffer: every record starts
 * with struct kx_hdr, and its type says which layout follows.
 */
#ifndef KXPROF_BPF_H
#define KXPROF_BPF_H

#define KX_ARG_MAX         64 /* bytes copied per direction of an ioctl argument */
#define KX_COMM_LEN        16
#define KX_IOCTL_NR_X86_64 16 /* __NR_ioctl */

/* What kind of file an ioctl was issued on. */
enum kx_fkind {
	KX_FK_NONE = 0,
	KX_FK_CHR = 1,      /* character device, dev = i_rdev */
	KX_FK_BLK = 2,      /* block device, dev = i_rdev */
	KX_FK_KVM_VM = 3,   /* anon_inode:kvm-vm */
	KX_FK_KVM_VCPU = 4, /* anon_inode:kvm-vcpu:N */
	KX_FK_VFIO_DEV = 5, /* anon_inode:[vfio-device] */
	KX_FK_KVM_DEV = 6,  /* anon_inode:kvm-<device> (KVM_CREATE_DEVICE) */
	KX_FK_MAX,
};

enum kx_rec_type {
	KX_REC_IOCTL = 1,
	KX_REC_TASK = 2,
	KX_REC_JOB = 3,
};

/* Job lifecycle sources and phases (see struct kx_job in user/model/event.h). */
enum kx_job_src {
	KX_JOB_SRC_BLOCK = 1,
	KX_JOB_SRC_KVM,
	KX_JOB_SRC_GPU_SCHED, /* drm_sched_job_queue/run/done (new) or drm_sched_job/drm_run_job/...
	                         (old) */
	KX_JOB_SRC_DMA_FENCE,
	KX_JOB_SRC_I915,
	KX_JOB_SRC_XE,
	KX_JOB_SRC_AMDGPU,
	KX_JOB_SRC_MSM,
	KX_JOB_SRC_V3D,
	KX_JOB_SRC_VPU,
	KX_JOB_SRC_AMDXDNA,
	KX_JOB_SRC_MAX,
};

enum kx_job_phase {
	KX_JOB_QUEUE = 1,
	KX_JOB_RUN,
	KX_JOB_DONE,
	KX_JOB_WAIT_BEGIN,
	KX_JOB_WAIT_END,
	KX_JOB_DEP, /* dependency added */
	KX_JOB_UNSCHEDULABLE,
	KX_JOB_PHASE_MAX,
};

#define KX_JOB_F_ERROR 1 /* flags: the device reported an error (block DONE) */

enum kx_task_what {
	KX_TASK_FORK = 1, /* new process or thread of a traced process */
	KX_TASK_EXEC = 2,
	KX_TASK_RENAME = 3,
	KX_TASK_EXIT = 4,
	KX_TASK_SEEN = 5, /* first traced ioctl of a thread: names it */
};

/* Counters in the per-CPU stats array. received + dropped == emitted, per record kind. */
enum kx_stat {
	KX_STAT_EMITTED = 0,    /* ioctl records the BPF side tried to submit */
	KX_STAT_DROPPED,        /* ioctl records lost: ring buffer reservation failed */
	KX_STAT_TASK_EMITTED,   /* task records tried */
	KX_STAT_TASK_DROPPED,   /* task records lost: ring buffer full */
	KX_STAT_INFLIGHT_FULL,  /* enter seen but the in-flight map was full: ioctl not traced */
	KX_STAT_PIDSET_FULL,    /* a child could not be added to the pid set */
	KX_STAT_ARG_FAULT,      /* argument copy from user memory failed */
	KX_STAT_AGG_OVERFLOW,   /* aggregate mode: ioctl not counted, the agg map was full */
	KX_STAT_JOB_EMITTED,    /* job lifecycle records tried (bpf/jobs.bpf.c) */
	KX_STAT_JOB_DROPPED,    /* job records lost: ring buffer full */
	KX_STAT_PROTECTED_EXEC, /* processes dropped at an exec the client may not read */
	KX_STAT_JOB_DONE_LOST,  /* block completions that never reached the program: a
	                         * request inserted or issued again on a (disk, sector)
	                         * whose previous request's completion was not seen */
	KX_STAT_MAX,
};

/*
 * Device filter key: (file kind, dev). dev = KX_DEV_ANY_MINOR(major) matches all
 * minors; anon kinds use dev 0. The value is the driver id (enum kx_driver).
 */
struct kx_dev_key {
	unsigned int fkind;
	unsigned int dev;
};
#define KX_MINORBITS         20
#define KX_MINORMASK         ((1U << KX_MINORBITS) - 1)
#define KX_MKDEV(ma, mi)     (((ma) << KX_MINORBITS) | (mi))
#define KX_MAJOR(d)          ((unsigned int)((d) >> KX_MINORBITS))
#define KX_MINOR(d)          ((unsigned int)((d)&KX_MINORMASK))
#define KX_DEV_ANY_MINOR(ma) KX_MKDEV(ma, KX_MINORMASK)

/* Argument copy request: which (fkind, ioctl type+nr) pairs get a copy, and how much. */
struct kx_arg_key {
	unsigned int drv; /* enum kx_driver (user/registry/drivers.h), from the device filter */
	unsigned int cmd; /* full cmd, or KX_ARG_BY_NR_KEY(cmd) for nr-dispatched drivers */
};
#define KX_ARG_BY_NR_KEY(cmd) (0x80000000U | ((cmd)&0xffffU))
#define KX_ARGF_IN            1  /* copy at enter */
#define KX_ARGF_OUT           2  /* copy at exit */
#define KX_ARGF_XFER          8  /* NVIDIA XFER: arg is {u32 cmd, u32 size, u64 ptr}; copy *ptr */
#define KX_ARGF_FOLLOW        16 /* also copy a window of a block the argument points at */
/*
 * Follow rule (KX_ARGF_FOLLOW): when the u32 at sel_off of the copied
 * argument equals one of sel[0..n), the u64 at ptr_off is a user pointer and
 * the KX_FOLLOW_LEN bytes at ptr + off[i] are copied too: at enter into the
 * last KX_FOLLOW_LEN bytes of the in copy, and again at exit (what the
 * driver wrote back) into the last KX_FOLLOW_LEN bytes of the out copy.
 * Each copy that holds a window is KX_ARG_MAX bytes long (arg_in_len,
 * arg_out_len); the bytes between the argument (len <= KX_FOLLOW_AT) and the
 * window are 0. A copy without its window is len bytes long, as without the
 * rule. Used for NVIDIA RM_ALLOC: the size inside the memory classes'
 * allocation parameters.
 */
#define KX_FOLLOW_LEN 16
#define KX_FOLLOW_AT  (KX_ARG_MAX - KX_FOLLOW_LEN) /* window offset in a copy */
#define KX_FOLLOW_SEL 4
struct kx_arg_follow {
	unsigned char ptr_off; /* bytes: the u64 user pointer in the argument, 8-aligned */
	unsigned char sel_off; /* bytes: the u32 selector in the argument, 4-aligned */
	unsigned char n;       /* entries of sel and off used */
	unsigned char pad;
	unsigned int sel[KX_FOLLOW_SEL];   /* selector values that follow the pointer */
	unsigned short off[KX_FOLLOW_SEL]; /* bytes: window start in the pointed-at block */
};
struct kx_arg_spec {
	unsigned short len; /* bytes to copy, <= KX_ARG_MAX (<= KX_FOLLOW_AT with a follow rule) */
	unsigned short flags;
	struct kx_arg_follow follow; /* KX_ARGF_FOLLOW only */
};

/*
 * Log2 latency histograms (report --hist, driver entry hooks, the
 * Prometheus buckets): slot i counts durations in [2^i, 2^(i+1)) ns (slot 0
 * also holds 0 ns); the last slot also holds everything longer
 * (>= 2^(KX_HIST_SLOTS-1) ns, about 34 s).
 *
 * Aggregate mode (always-on): per key, counters and a log-linear latency
 * histogram updated in the kernel at ioctl exit; no ring-buffer record.
 * Fine slots (rule: bpf/log2.bpf.h fine_slot): durations below
 * KX_FINE_SUB ns one slot each; above, each power of two [2^o, 2^(o+1))
 * split into KX_FINE_SUB equal slots (8 per power of two, the resolution of
 * Prometheus' native histograms by default), up to the octave of the last
 * log2 slot, whose last fine slot is open like it. A quantile taken at a
 * slot's midpoint is within 1/16 (6.25%) of the true value; every fine slot
 * lies inside one log2 slot, so the log2 histogram is their sums. 2,216
 * bytes a key. The map is bounded (KX_AGG_MAX_KEYS unless user space sets
 * another limit); an ioctl whose new key does not fit is counted in
 * KX_STAT_AGG_OVERFLOW instead.
 */
#define KX_HIST_SLOTS   36
#define KX_FINE_BITS    3
#define KX_FINE_SUB     (1 << KX_FINE_BITS)
#define KX_FINE_SLOTS   ((KX_HIST_SLOTS - KX_FINE_BITS + 1) * KX_FINE_SUB)
#define KX_AGG_MAX_KEYS 4096
struct kx_agg_key {
	unsigned long long who; /* tgid (agg_by_pid), cgroup id (agg_by_cgroup), else 0 */
	unsigned int dev;       /* kernel dev_t for CHR/BLK, 0 for anon kinds */
	unsigned int cmd;       /* full ioctl cmd */
	unsigned int xfer_cmd;  /* NVIDIA XFER inner escape, else 0 */
	unsigned short fkind;
	unsigned short drv; /* enum kx_driver */
};
/* Compared as three 64-bit words in BPF: no padding, no tail. */
_Static_assert(sizeof(struct kx_agg_key) == 24, "kx_agg_key is three words");
struct kx_agg_val {
	/* No count field: the count is the sum of the fine slots, so a reader
	 * never sees a count that disagrees with the histogram (one atomic less
	 * too). */
	unsigned long long errors; /* calls that returned < 0 */
	unsigned long long sum_ns;
	unsigned long long offcpu_ns; /* blocked inside the calls, 0 if not measured */
	unsigned long long min_ns;    /* exact but for racing updates of one key on two CPUs */
	unsigned long long max_ns;
	unsigned long long fine[KX_FINE_SLOTS]; /* calls per fine slot */
};

/*
 * Driver entry hooks (bpf/drvcall.bpf.c): per hooked function (index into
 * user space's function table, also the attach cookie), calls and a log2
 * latency histogram (the log2 slot rule above).
 */
#define KX_DRV_FN_MAX 8
struct kx_drvcall_val {
	unsigned long long calls;
	unsigned long long sum_ns;
	unsigned long long max_ns;
	unsigned long long slots[KX_HIST_SLOTS];
};

struct kx_hdr {
	unsigned short type; /* enum kx_rec_type */
	unsigned short size; /* bytes of the whole record */
	unsigned int cpu;
};

struct kx_ioctl_rec {
	struct kx_hdr hdr;
	unsigned long long ts;  /* enter, CLOCK_MONOTONIC ns */
	unsigned long long dur; /* ns */
	unsigned int pid;       /* tgid */
	unsigned int tid;
	unsigned int dev; /* kernel dev_t for CHR/BLK, 0 for anon kinds */
	unsigned short fkind;
	unsigned short drv; /* enum kx_driver, from the device filter */
	int fd;
	unsigned int cmd;
	long long ret;
	unsigned short arg_in_len;
	unsigned short arg_out_len;
	unsigned int xfer_cmd; /* NVIDIA XFER: inner escape, else 0 */
	unsigned int pad;
	unsigned long long
	        offcpu_ns; /* blocked inside the call (sched_switch), 0 if not measured */
	unsigned char arg[2 * KX_ARG_MAX]; /* in bytes, then out bytes */
};
#define KX_IOCTL_REC_BASE_SIZE ((unsigned long)&((struct kx_ioctl_rec *)0)->arg)

/* Key of the block programs' open requests (jobs.bpf.c `blkopen`; the value
 * is the last phase seen, KX_JOB_QUEUE or KX_JOB_RUN). */
struct kx_blk_key {
	unsigned int dev; /* the disk, KX_MKDEV */
	unsigned int pad;
	unsigned long long sector; /* the request's first, 512-byte units */
};

struct kx_job_rec {
	struct kx_hdr hdr;
	unsigned long long ts;
	unsigned long long ctx;
	unsigned long long seqno;
	unsigned long long aux;
	unsigned long long aux2;
	unsigned int dev;
	unsigned int pid;
	unsigned int tid;
	unsigned short src;
	unsigned char phase;
	unsigned char flags;
	char ring[16];
};

struct kx_task_rec {
	struct kx_hdr hdr;
	unsigned long long ts;
	unsigned int pid; /* tgid */
	unsigned int tid;
	unsigned int ppid; /* for FORK: the parent tgid */
	unsigned int what; /* enum kx_task_what */
	char comm[KX_COMM_LEN];
	/* SEEN: the thread's thread pointer (x86_64: its fs base, glibc's
	 * pthread_t), for frameworks keying their rows by it; else 0 (unknown). */
	unsigned long long tp;
};

/* One live thread's thread pointer (bpf/threadptr.bpf.c's iterator output). */
struct kx_threadptr_rec {
	unsigned int tid;
	unsigned int pad;
	unsigned long long tp; /* x86_64: the fs base (glibc's pthread_t); 0: unknown */
};

#endif /* KXPROF_BPF_H */
