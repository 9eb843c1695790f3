/*
 * Driver entry hooks: the driver submit-path functions (drm_ioctl, the
 * NVIDIA and UVM ioctl entries, i915_gem_do_execbuffer, xe_exec_ioctl,
 * amdgpu_cs_ioctl, kfd_ioctl) hooked with fentry/fexit where the kernel
 * allows it, else kprobe/kretprobe (the function's slot as attach cookie),
 * else skipped; calls and latency are counted in the kernel (see
 * bpf/drvcall.bpf.c). What was used, or skipped and why, goes to the
 * capture's hook list; the counts to its drvcalls at stop.
 */
#ifndef KX_DRVHOOK_H
#define KX_DRVHOOK_H

#include <stdint.h>
#include "model/capinfo.h"

int kx_drvhook_nfns(void);
const char *kx_drvhook_fn(int i);

/* Per function: what a capture would do here (kxprof list), no attach. */
struct kx_drvhook_status {
	char fn[40];
	char mech[16]; /* "fentry", "kprobe" or "-" */
	int usable;
	char why[96]; /* when not usable */
};
int kx_drvhook_probe(struct kx_drvhook_status *out, int max);

struct kx_drvhook;

/* Attaches what it can; reports every function into ci->hooks ("driver:<fn>").
 * NULL when nothing attached. */
struct kx_drvhook *kx_drvhook_open(struct kx_capinfo *ci);
void kx_drvhook_detach(struct kx_drvhook *d);
/* Fills ci->drvcalls with the counts of the attached functions. */
void kx_drvhook_read(struct kx_drvhook *d, struct kx_capinfo *ci);
/* Runs of its programs the kernel skipped (capture/progmiss.h); 0 for NULL. */
uint64_t kx_drvhook_missed(const struct kx_drvhook *d);
void kx_drvhook_close(struct kx_drvhook *d);

#endif /* KX_DRVHOOK_H */
