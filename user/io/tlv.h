/*
 * The capture info (struct kx_capinfo) as TLV: the codec of the record
 * file's header and trailer (io/kxp_write.c, io/kxp_read.c), which the
 * daemon's wire format (capture/daemon_wire.c) also carries in its
 * end-of-session message. Owns the tags and how each field is encoded.
 *
 * TLV: u16 tag, u32 length, value, all little-endian; devices, hooks,
 * driver-call stats, annotation copies and late probes are repeated TLVs
 * whose values nest TLVs, as do clocks; u64 arrays (histogram slots) are
 * their LE bytes. Readers skip unknown tags, so fields can be added without
 * a new version; tag numbers are never reused.
 */
#ifndef KX_TLV_H
#define KX_TLV_H

#include <stddef.h>

#include "model/capinfo.h"
#include "util/grow.h"

/* Appends ci as a TLV list to b (b->oom on failure). */
void kx_tlv_capinfo_encode(struct kx_bytes *b, const struct kx_capinfo *ci);
/* The reverse, into ci (cleared first): 0, or -1 when the bytes are not a
 * well-formed TLV list. */
int kx_tlv_capinfo_decode(const void *p, size_t len, struct kx_capinfo *ci);

#endif /* KX_TLV_H */
