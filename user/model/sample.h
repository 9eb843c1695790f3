/*
 * CPU samples and off-CPU intervals in the event model: the view of one
 * record as received (struct kx_sample, frames pointing into the record)
 * and the form a capture keeps (struct kx_sample_ev, its stack interned in
 * model/perfdata.h). Like the other events they keep raw facts: addresses,
 * not names (symbol/ resolves them), and the traced ioctl the thread was
 * inside as numbers (registry/ names it).
 */
#ifndef KX_MODEL_SAMPLE_H
#define KX_MODEL_SAMPLE_H

#include <stdint.h>

#include "kxprof.h"
#include "sample_rec.h" /* bpf/: struct kx_sample_call, KX_SAMPLE_F_* */

enum kx_sample_kind {
	KX_SAMPLE_CPU = 1,    /* a cpu-clock sample: on the CPU */
	KX_SAMPLE_OFFCPU = 2, /* blocked inside a traced ioctl: weight = ns off the CPU */
};

/* One sample as received or read back (frames borrowed from the record). */
struct kx_sample {
	uint64_t ts_ns;     /* CLOCK_MONOTONIC ns: taken; off-CPU: switched out */
	uint64_t weight_ns; /* off-CPU: ns until switched in again; CPU samples: 0 */
	uint32_t pid;       /* tgid */
	uint32_t tid;
	uint32_t cpu;
	uint32_t exec_id;           /* changes at each exec of pid: (pid, exec_id) names an image */
	uint16_t flags;             /* KX_SAMPLE_F_* */
	uint8_t kind;               /* enum kx_sample_kind */
	struct kx_sample_call call; /* the traced ioctl the thread was inside (ts 0: none) */
	char comm[KX_COMM_LEN];
	const uint64_t *kips; /* kernel frames, leaf first */
	uint32_t nk;
	const uint64_t *uips; /* user frames, leaf first */
	uint32_t nu;
};

/* A sample as a capture keeps it: 56 bytes, the frames in an interned stack. */
struct kx_sample_ev {
	uint64_t ts;      /* CLOCK_MONOTONIC ns (see kx_sample.ts_ns) */
	uint64_t weight;  /* off-CPU ns; 0 for CPU samples */
	uint64_t call_ts; /* enter of the traced ioctl it was in (its record's ts), 0: none */
	uint32_t pid;     /* tgid */
	uint32_t tid;
	uint32_t stack;     /* index of its stack (model/perfdata.h) */
	uint32_t exec_id;   /* see kx_sample.exec_id */
	uint32_t call_cmd;  /* the call's ioctl cmd */
	uint32_t call_dev;  /* the call's kernel dev_t (0 for anon kinds) */
	uint16_t cpu;       /* CPU it was taken on (off-CPU: where it blocked) */
	uint8_t call_fkind; /* enum kx_fkind */
	uint8_t call_drv;   /* enum kx_driver */
	uint8_t call_xfer;  /* NVIDIA XFER inner escape (an 8-bit nr), else 0 */
	uint8_t kind;       /* enum kx_sample_kind */
	uint8_t flags;      /* KX_SAMPLE_F_* */
	uint8_t pad;
};
_Static_assert(sizeof(struct kx_sample_ev) == 56, "struct kx_sample_ev grew");

#endif /* KX_MODEL_SAMPLE_H */
