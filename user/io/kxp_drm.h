/*
 * The record file's DRM usage record (type 8, record --drm-usage; io/kxp_write.c
 * frames it, puts it in chunks and reads it back in file order): zz ts
 * delta (the chunk's running ts), interval ns, pid, kind, basis, has,
 * capacity, client id + 1 (0: none), then comm, driver, pdev and name as a
 * u8 length and the bytes, then the KX_DRM_MEM_MAX values (model/drmusage.h).
 * Varints are LEB128 (util/pbwire.h); the decoder checks every length and
 * value.
 */
#ifndef KX_KXP_DRM_H
#define KX_KXP_DRM_H

#include <stddef.h>
#include <stdint.h>

#include "model/drmusage.h"

#define KX_KXP_REC_DRM 8
#define KX_KXP_DRM_MAX 256 /* most bytes a DRM usage payload takes */

/* Encodes e at out (room: KX_KXP_DRM_MAX); *prev_ts is the chunk's running
 * ts, updated. Returns the payload's length. */
size_t kx_kxp_enc_drm(uint8_t *out, const struct kx_drm_ev *e, uint64_t *prev_ts);
/* Decodes a DRM usage payload into e. 0, or -1 when bad. */
int kx_kxp_dec_drm(const uint8_t *p, size_t n, uint64_t *prev_ts, struct kx_drm_ev *e);

#endif /* KX_KXP_DRM_H */
