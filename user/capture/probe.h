/*
 * Feature probes: what this kernel and this process allow (privileges, BTF,
 * tracefs, fentry, kprobes, uprobes, perf events). Each probe answers yes or
 * no with the reason, for `kxprof list`, the session's attach fallback and
 * the output warnings.
 */
#ifndef KX_PROBE_H
#define KX_PROBE_H

#include <stddef.h>

/* 1 when the process may load BPF tracing programs (root or CAP_BPF+CAP_PERFMON). */
int kx_probe_privileges(char *why, size_t len);
/* 1 when kernel BTF is readable (CO-RE needs it). */
int kx_probe_btf(char *why, size_t len);
/* Path of a mounted tracefs, mounting it at /sys/kernel/tracing when absent
 * and allowed. NULL with why set when unavailable. */
const char *kx_probe_tracefs(char *why, size_t len);
/* Loads (and frees) a minimal program of each kind against kernel function fn. */
int kx_probe_fentry(const char *fn, char *why, size_t len);
int kx_probe_kprobe(const char *fn, char *why, size_t len);
int kx_probe_uprobe(char *why, size_t len);
int kx_probe_perf_cpu_clock(char *why, size_t len);
int kx_probe_hw_counters(char *why, size_t len);
/* 1 when kernel function fn exists in the kernel's BTF (so can be hooked). */
int kx_probe_kfunc_exists(const char *fn);
/* The ioctl syscall's entry function of this architecture (__x64_sys_ioctl on
 * x86-64) into fn, when the kernel's BTF has it taking the syscall's
 * registers: 1, else 0 with why. */
int kx_probe_ioctl_entry(char *fn, size_t fnlen, char *why, size_t len);

#endif /* KX_PROBE_H */
