/*
 * Kernel addresses a user may not see. The kernel hides its addresses from
 * unprivileged users (kptr_restrict; they would reveal where KASLR put the
 * kernel and its modules), so a daemon session for a user gets, for each
 * kernel frame, a stand-in that identifies the frame and tells nothing
 * else; the daemon resolves the real address and stores the name under the
 * stand-in. Stand-ins are handed out in the order frames are first seen, one
 * per distinct frame address of the session, in a range of the upper half
 * no real address uses (non-canonical on x86-64 and arm64), and spaced so
 * that a stand-in adjusted as a caller's frame (kx_frame_addr: the return
 * address minus one) is the stand-in of the adjusted real address: stored
 * frames keep matching their stored symbols. Kernel pointers used as keys
 * (job records of pointer-keyed sources) get stand-ins the same way, from
 * a table of their own. Owns the table of the session's kernel frame
 * addresses (or keys).
 */
#ifndef KX_SYMBOL_KMASK_H
#define KX_SYMBOL_KMASK_H

#include <stdint.h>

#include "model/sample.h"
#include "util/hashmap.h"

#define KX_KMASK_BASE 0xfffe000000000000ull /* the first stand-in is BASE + STEP */
/* The lowest kernel address on every 64-bit target (x86-64 with 4- or
 * 5-level pages, arm64 up to 52-bit VAs, riscv sv57): above it a value
 * may be a kernel pointer. Stand-ins lie below it. */
#define KX_KMASK_KERNEL_MIN 0xff00000000000000ull
#define KX_KMASK_STEP       16 /* bytes between stand-ins */

struct kx_kmask {
	struct kx_hmap ids; /* frame address (kx_frame_addr form) -> index of its stand-in */
	uint32_t n;         /* stand-ins handed out */
};

/* The stand-ins of nk kernel frames ips (leaf first, as recorded) into out.
 * 0, or -1 when out of memory: the frames that got no stand-in are 0 (an
 * unknown frame), never their real address. */
int kx_kmask_frames(struct kx_kmask *m, const uint64_t *ips, uint32_t nk, uint64_t *out);
/* Sample s as stored for a user: s itself when it has no kernel frame,
 * else a copy in *tmp whose kernel frames (at most KX_SAMPLE_MAX_DEPTH) are
 * their stand-ins, written to kips; *oom set when one got none. */
const struct kx_sample *kx_kmask_sample(struct kx_kmask *m, const struct kx_sample *s,
                                        struct kx_sample *tmp, uint64_t *kips, int *oom);
/* The stand-in of frame address addr (kx_frame_addr form) kx_kmask_frames
 * saw; 0 when it saw none. */
uint64_t kx_kmask_addr(const struct kx_kmask *m, uint64_t addr);
/* A value that may be a kernel pointer used as an opaque key (an old
 * gpu_scheduler job's fence address): below KX_KMASK_KERNEL_MIN, itself;
 * else its stand-in, the same for the same value, distinct for distinct
 * values (0 when out of memory, never the value). */
uint64_t kx_kmask_key(struct kx_kmask *m, uint64_t v);
void kx_kmask_free(struct kx_kmask *m);

#endif /* KX_SYMBOL_KMASK_H */
