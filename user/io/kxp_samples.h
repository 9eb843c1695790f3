/*
 * The record file's sample records (record types 4 to 6; io/kxp_write.c frames
 * them, puts them in chunks and reads them back in file order):
 *
 *   sample (4), off-CPU (5): zz ts delta (the chunk's running ts, as every
 *       record), weight, pid, tid, exec_id, cpu, flags, u8 comm len, comm
 *       bytes, call delta (0: no call, else ts - call.ts + 1), and when a
 *       call is there: u32 cmd, dev, xfer_cmd, u8 fkind, u8 drv; then nk,
 *       nu and the nk + nu frames (kernel leaf first, then user leaf first),
 *       each a zz delta from the frame before it (the first from 0)
 *   symbol (6): pid, gen, addr, offset, mod_offset, known, then function,
 *       module and build id as a length and the bytes (each at most
 *       KX_KXP_SYM_STR bytes, cut at a UTF-8 boundary)
 *   counters (7): zz ts delta (the call's enter), pid, tid, n, flags,
 *       not_counted, multiplexed, then n scaled values (model/counter.h;
 *       their names are the capture info's counter names, in order)
 *
 * Varints are LEB128 (util/pbwire.h). Decoders check every length and
 * value: stored input is not trusted.
 */
#ifndef KX_KXP_SAMPLES_H
#define KX_KXP_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "model/counter.h"
#include "model/sample.h"
#include "model/symres.h"

#define KX_KXP_REC_SAMPLE 4
#define KX_KXP_REC_OFFCPU 5
#define KX_KXP_REC_SYM    6
#define KX_KXP_REC_CTR    7

#define KX_KXP_SYM_STR    1024 /* bytes kept of a symbol's string */
#define KX_KXP_SAMPLE_MAX 4096 /* most bytes a sample or symbol payload takes */

/* Encodes s at out (room: KX_KXP_SAMPLE_MAX); *prev_ts is the chunk's
 * running ts, updated. Returns the payload's length. */
size_t kx_kxp_enc_sample(uint8_t *out, const struct kx_sample *s, uint64_t *prev_ts);
/* Decodes a sample payload of type (KX_KXP_REC_SAMPLE or _OFFCPU) into s,
 * its frames into ips (room: 2 * KX_SAMPLE_MAX_DEPTH). 0, or -1 when bad. */
int kx_kxp_dec_sample(const uint8_t *p, size_t n, unsigned int type, uint64_t *prev_ts,
                      struct kx_sample *s, uint64_t *ips);

/* Encodes entry e of table r at out (room: KX_KXP_SAMPLE_MAX). */
size_t kx_kxp_enc_sym(uint8_t *out, const struct kx_symres *r, const struct kx_symres_entry *e);
/* Decodes a symbol payload and puts it in r. 0; -1 when bad; -2 out of memory. */
int kx_kxp_dec_sym(const uint8_t *p, size_t n, struct kx_symres *r);

/* Encodes one call's counters at out (room: KX_KXP_SAMPLE_MAX). */
size_t kx_kxp_enc_ctr(uint8_t *out, const struct kx_ctr_ev *e, uint64_t *prev_ts);
/* Decodes a counters payload into e. 0, or -1 when bad. */
int kx_kxp_dec_ctr(const uint8_t *p, size_t n, uint64_t *prev_ts, struct kx_ctr_ev *e);

#endif /* KX_KXP_SAMPLES_H */
