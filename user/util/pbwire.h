/*
 * Protocol buffers wire format: varints (and their zigzag form for signed
 * values), field tags, fixed64 and length-delimited fields, written at a
 * cursor the caller has made room for, and the sizes of each so that a
 * caller can write a length before its body. The record file (io/kxp_layout.h)
 * uses the same varints. Inline: the exporters write several per event.
 *
 * Writers take the cursor and return the end of what they wrote; room is
 * the caller's (a varint takes at most KX_PB_VARINT_MAX bytes); the
 * kx_pb_put_* writers append to a growing buffer instead.
 */
#ifndef KX_PBWIRE_H
#define KX_PBWIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/grow.h"

#define KX_PB_VARINT_MAX 10

enum kx_pb_wiretype {
	KX_PB_VARINT = 0,
	KX_PB_FIXED64 = 1,
	KX_PB_LEN = 2,
	KX_PB_FIXED32 = 5,
};

/* Bytes of the varint of v (1 to 10). */
static inline size_t kx_pb_varint_size(uint64_t v)
{
	/* 7 bits a byte: (floor(log2) * 9 + 73) / 64 rounds the bits used up to sevens. */
	return ((size_t)(63 - __builtin_clzll(v | 1)) * 9 + 73) / 64;
}

static inline uint8_t *kx_pb_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Signed values that are often small in magnitude: 0, -1, 1, -2 -> 0, 1, 2, 3. */
static inline uint64_t kx_pb_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t kx_pb_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/*
 * Reads a varint from *p (before end): the value, *p moved past it. On a
 * truncated varint, or one longer than 64 bits, *bad is set, *p is not
 * moved and 0 returned.
 */
static inline uint64_t kx_pb_read_varint(const uint8_t **p, const uint8_t *end, int *bad)
{
	const uint8_t *q = *p;
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && q < end; shift += 7) {
		uint8_t b = *q++;

		/* The tenth byte may only carry the top bit. */
		if (shift == 63 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			return v;
		}
	}
	*bad = 1;
	return 0;
}

/* Bytes of the tag of field (wire type aside). */
static inline size_t kx_pb_tag_size(unsigned int field)
{
	return kx_pb_varint_size((uint64_t)field << 3);
}

static inline uint8_t *kx_pb_tag(uint8_t *p, unsigned int field, enum kx_pb_wiretype wt)
{
	return kx_pb_varint(p, (uint64_t)field << 3 | wt);
}

/* A varint field: tag and value. */
static inline uint8_t *kx_pb_vfield(uint8_t *p, unsigned int field, uint64_t v)
{
	return kx_pb_varint(kx_pb_tag(p, field, KX_PB_VARINT), v);
}

static inline size_t kx_pb_vfield_size(unsigned int field, uint64_t v)
{
	return kx_pb_tag_size(field) + kx_pb_varint_size(v);
}

/* Eight bytes little-endian (fixed64, sfixed64, double), without a tag. */
static inline uint8_t *kx_pb_fixed64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 8;
}

/* A fixed64 field: tag and value. */
static inline uint8_t *kx_pb_f64field(uint8_t *p, unsigned int field, uint64_t v)
{
	return kx_pb_fixed64(kx_pb_tag(p, field, KX_PB_FIXED64), v);
}

/* The head of a length-delimited field: tag and length; the body follows. */
static inline uint8_t *kx_pb_len_head(uint8_t *p, unsigned int field, size_t len)
{
	return kx_pb_varint(kx_pb_tag(p, field, KX_PB_LEN), len);
}

/* A length-delimited field of len bytes at s (bytes, string, packed). */
static inline uint8_t *kx_pb_bytes(uint8_t *p, unsigned int field, const void *s, size_t len)
{
	p = kx_pb_len_head(p, field, len);
	memcpy(p, s, len);
	return p + len;
}

/* Bytes of a length-delimited field with a body of len bytes. */
static inline size_t kx_pb_len_size(unsigned int field, size_t len)
{
	return kx_pb_tag_size(field) + kx_pb_varint_size(len) + len;
}

/* Into a growing buffer (util/grow.h; out of memory: oom set): a varint
 * field (written even when 0), and a length-delimited field of the n bytes
 * at s (a string, a sub-message). */
static inline void kx_pb_put_vfield(struct kx_bytes *b, unsigned int field, uint64_t v)
{
	uint8_t *d = kx_bytes_room(b, 2 * KX_PB_VARINT_MAX);

	if (d)
		b->len = (size_t)(kx_pb_vfield(d, field, v) - b->p);
}

static inline void kx_pb_put_bytes(struct kx_bytes *b, unsigned int field, const void *s, size_t n)
{
	uint8_t *d = kx_bytes_room(b, 2 * KX_PB_VARINT_MAX + n);

	if (d)
		b->len = (size_t)(kx_pb_bytes(d, field, s, n) - b->p);
}

#endif /* KX_PBWIRE_H */
