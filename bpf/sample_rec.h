/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CPU samples and off-CPU intervals: the record bpf/sample.bpf.c writes for
 * each cpu-clock sample of a traced process and for each time a thread
 * blocked inside a traced ioctl came back, and the per-CPU counters that
 * account for every record the programs kept (received + dropped ==
 * emitted, per kind) and for the stacks they could not read. Shared by the
 * BPF program and user space.
 */
#ifndef KXPROF_SAMPLE_H
#define KXPROF_SAMPLE_H

#include "kxprof.h"

/* kx_hdr.type of the records: the next values after enum kx_rec_type's last. */
#define KX_REC_SAMPLE 4 /* a cpu-clock sample */
#define KX_REC_OFFCPU 5 /* a thread blocked inside a traced ioctl, back on a CPU */
#define KX_REC_USTACK 6 /* the copy of a sample's user stack (--call-graph dwarf) */

/* Frames kept per stack, kernel and user each: the kernel's default
 * kernel.perf_event_max_stack, so no stack is cut shorter than perf's. */
#define KX_SAMPLE_MAX_DEPTH 127

/* Counters in the program's per-CPU array (one slot each, summed by user space). */
enum kx_sample_stat {
	KX_SSTAT_EMITTED = 0, /* samples of traced processes the program tried to submit */
	KX_SSTAT_DROPPED,     /* of those, lost: the ring buffer was full */
	KX_SSTAT_NO_USTACK,   /* user task sampled, but no user frame could be read */
	KX_SSTAT_NO_KSTACK,   /* sample taken in kernel mode, but no kernel frame could be read */
	KX_SSTAT_USTACK_FULL, /* user stack cut at KX_SAMPLE_MAX_DEPTH frames */
	KX_SSTAT_KSTACK_FULL, /* kernel stack cut at KX_SAMPLE_MAX_DEPTH frames */
	KX_SSTAT_OFF_EMITTED, /* off-CPU records tried (a blocked thread came back) */
	KX_SSTAT_OFF_DROPPED, /* of those, lost: the ring buffer was full */
	KX_SSTAT_OFF_NOSLOT,  /* blocked inside a traced call, not kept: the stash was full */
	KX_SSTAT_OFF_STALE,   /* blocked inside a traced call, its switch-in not seen before the
	                         call ended: not recorded (the time would run past the call) */
	KX_SSTAT_USTACK_EMITTED, /* user stack copies the program tried to submit */
	KX_SSTAT_USTACK_DROPPED, /* of those, lost: the ring buffer was full */
	KX_SSTAT_USTACK_FAULT,   /* copies with no byte readable at the user stack pointer */
	KX_SSTAT_MAX,
};

#define KX_SAMPLE_F_KERNEL  1 /* flags: the sample interrupted the thread in kernel mode */
#define KX_SAMPLE_F_KTHREAD 2 /* flags: a kernel thread (it has no user stack) */

/* The traced ioctl a thread was inside when sampled (ts 0: none). */
struct kx_sample_call {
	unsigned long long ts; /* the call's enter, CLOCK_MONOTONIC ns (its ioctl record's ts) */
	unsigned int cmd;
	unsigned int dev;      /* kernel dev_t for CHR/BLK, 0 for anon kinds */
	unsigned int xfer_cmd; /* NVIDIA XFER inner escape, else 0 */
	unsigned short fkind;  /* enum kx_fkind */
	unsigned short drv;    /* enum kx_driver */
};

/*
 * One record. Only base + (kdepth + udepth) * 8 bytes are written (hdr.size):
 * ips holds the kernel frames (leaf first), then the user frames (leaf
 * first). Addresses are instruction pointers; callers' frames hold return
 * addresses.
 */
struct kx_sample_rec {
	struct kx_hdr hdr;
	unsigned long long ts;     /* CLOCK_MONOTONIC ns: when sampled; off-CPU: switched out */
	unsigned long long weight; /* off-CPU: ns until it was switched in again; sample: 0 */
	struct kx_sample_call call;
	unsigned int pid; /* tgid */
	unsigned int tid;
	unsigned int exec_id;  /* low bits of task->self_exec_id: a new value after each exec */
	unsigned short kdepth; /* kernel frames in ips */
	unsigned short udepth; /* user frames in ips, after the kernel frames */
	unsigned short flags;  /* KX_SAMPLE_F_* */
	unsigned short pad;
	char comm[KX_COMM_LEN];
	unsigned long long ips[2 * KX_SAMPLE_MAX_DEPTH];
};
#define KX_SAMPLE_REC_BASE_SIZE ((unsigned long)&((struct kx_sample_rec *)0)->ips)

/*
 * --call-graph dwarf: the top of the user stack and the user registers at
 * a sample, for user space to unwind with the modules' CFI. The program
 * emits it just before the sample record it belongs to, on the same CPU,
 * with the same ts and tid (the consumer pairs them); an off-CPU record's
 * copy (KX_USTACK_F_OFFCPU) is made at the switch-out, before the record,
 * which may come from another CPU. hdr.size is 0: a
 * copy may be longer than 16 bits say; len is the size of the whole
 * record, KX_USTACK_REC_BASE_SIZE + len.
 */
#define KX_USTACK_VERSION 1     /* version of this layout */
#define KX_USTACK_MAX     65528 /* bytes of stack copied at most (perf's limit) */
#define KX_USTACK_DEFAULT 8192  /* bytes copied by default (perf's default) */
#define KX_USTACK_ROOM    65536 /* data's size: a power of two, so a mask bounds a copy */
#define KX_USTACK_NREGS                                                                            \
	17 /* x86-64 DWARF registers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
#define KX_USTACK_REG_SP 7
#define KX_USTACK_REG_IP 16
#define KX_USTACK_F_OFFCPU                                                                         \
	1 /* flags: the copy of an off-CPU record's stack, made at its switch-out; the             \
	     record follows when the thread is switched in again (same tid and ts) */
struct kx_ustack_rec {
	struct kx_hdr hdr;
	unsigned short version; /* KX_USTACK_VERSION */
	unsigned short nregs;   /* KX_USTACK_NREGS */
	unsigned int tid;
	unsigned long long ts; /* the sample's ts */
	unsigned int pid;      /* tgid */
	unsigned int exec_id;  /* the sample's exec_id */
	unsigned int len;      /* bytes of data: the stack from regs[KX_USTACK_REG_SP] up */
	unsigned int flags;    /* KX_USTACK_F_* */
	unsigned long long regs[KX_USTACK_NREGS]; /* DWARF numbering */
	unsigned char data[KX_USTACK_ROOM];
};
#define KX_USTACK_REC_BASE_SIZE ((unsigned long)&((struct kx_ustack_rec *)0)->data)

#endif /* KXPROF_SAMPLE_H */
