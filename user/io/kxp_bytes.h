/*
 * The record file's bytes: little-endian integers and a bounded cursor over
 * a payload (any overrun or out-of-range value sets bad), with the LEB128
 * varints of util/pbwire.h. Shared by the record file's codecs in io/.
 * Inline: the reader calls them several times per record.
 */
#ifndef KX_KXP_BYTES_H
#define KX_KXP_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "util/pbwire.h"

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bounded cursor: any overrun or out-of-range value sets bad. */
struct rd {
	const uint8_t *p, *end;
	int bad;
};

static inline uint8_t rd_u8(struct rd *r)
{
	if (r->p >= r->end) {
		r->bad = 1;
		return 0;
	}
	return *r->p++;
}

static inline uint32_t rd_le32(struct rd *r)
{
	uint32_t v;

	if (r->end - r->p < 4) {
		r->bad = 1;
		return 0;
	}
	v = get_le32(r->p);
	r->p += 4;
	return v;
}

/* Hot (several per event): inline, one bounds check per byte, no rd_u8 calls. */
static inline uint64_t rd_varint(struct rd *r)
{
	return kx_pb_read_varint(&r->p, r->end, &r->bad);
}

static inline uint32_t rd_varint32(struct rd *r)
{
	uint64_t v = rd_varint(r);

	if (v > UINT32_MAX)
		r->bad = 1;
	return (uint32_t)v;
}

static inline const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return NULL;
	}
	r->p += n;
	return p;
}

#endif /* KX_KXP_BYTES_H */
