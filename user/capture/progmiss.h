/*
 * Runs of a loaded BPF object's programs that the kernel skipped: its
 * recursion guard lets one tracing program run at a time per CPU, so a
 * tracepoint that fires while another BPF program runs there (a block
 * completion in an interrupt that came during a syscall's program, another
 * tool's program) does not run ours, and its event is never emitted. The
 * kernel counts each such run (bpf_prog_info.recursion_misses, since 5.12);
 * the capture reports their sum, so that loss is not silent. Owns nothing.
 */
#ifndef KX_CAPTURE_PROGMISS_H
#define KX_CAPTURE_PROGMISS_H

#include <stdint.h>

struct bpf_object;

/* Skipped runs summed over obj's loaded programs (0 for NULL, for programs
 * not loaded, and on kernels that do not count them). */
uint64_t kx_bpf_missed(const struct bpf_object *obj);

#endif /* KX_CAPTURE_PROGMISS_H */
