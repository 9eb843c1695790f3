/* The record file's DRM usage record (layout: kxp_drm.h). */
#include <string.h>

#include "io/kxp_bytes.h"
#include "io/kxp_drm.h"

static uint8_t *put_str(uint8_t *p, const char *s, size_t room)
{
	size_t n = strnlen(s, room - 1);

	*p++ = (uint8_t)n;
	memcpy(p, s, n);
	return p + n;
}

/* A string of at most room - 1 bytes into out, terminated. */
static void get_str(struct rd *r, char *out, size_t room)
{
	size_t n = rd_u8(r);
	const uint8_t *b;

	if (n >= room || !(b = rd_bytes(r, n))) {
		r->bad = 1;
		out[0] = 0;
		return;
	}
	memcpy(out, b, n);
	out[n] = 0;
}

size_t kx_kxp_enc_drm(uint8_t *out, const struct kx_drm_ev *e, uint64_t *prev_ts)
{
	uint8_t *p = out;

	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(e->ts - *prev_ts)));
	*prev_ts = e->ts;
	p = kx_pb_varint(p, e->interval_ns);
	p = kx_pb_varint(p, e->pid);
	p = kx_pb_varint(p, e->kind);
	p = kx_pb_varint(p, e->basis);
	p = kx_pb_varint(p, e->has);
	p = kx_pb_varint(p, e->capacity);
	p = kx_pb_varint(p, e->client_id + 1);
	p = put_str(p, e->comm, sizeof(e->comm));
	p = put_str(p, e->driver, sizeof(e->driver));
	p = put_str(p, e->pdev, sizeof(e->pdev));
	p = put_str(p, e->name, sizeof(e->name));
	for (int i = 0; i < KX_DRM_MEM_MAX; i++)
		p = kx_pb_varint(p, e->v[i]);
	return (size_t)(p - out);
}

int kx_kxp_dec_drm(const uint8_t *p, size_t n, uint64_t *prev_ts, struct kx_drm_ev *e)
{
	struct rd c = {p, p + n, 0};
	uint64_t kind, basis, has;

	memset(e, 0, sizeof(*e));
	e->ts = *prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(&c));
	e->interval_ns = rd_varint(&c);
	e->pid = rd_varint32(&c);
	kind = rd_varint(&c);
	basis = rd_varint(&c);
	has = rd_varint(&c);
	e->capacity = rd_varint32(&c);
	e->client_id = rd_varint(&c) - 1;
	get_str(&c, e->comm, sizeof(e->comm));
	get_str(&c, e->driver, sizeof(e->driver));
	get_str(&c, e->pdev, sizeof(e->pdev));
	get_str(&c, e->name, sizeof(e->name));
	for (int i = 0; i < KX_DRM_MEM_MAX; i++)
		e->v[i] = rd_varint(&c);
	if (c.bad || (kind != KX_DRM_ENGINE && kind != KX_DRM_MEMORY) ||
	    basis > KX_DRM_BASIS_FREQ || has > 0xffff || c.p != c.end)
		return -1;
	e->kind = (uint8_t)kind;
	e->basis = (uint8_t)basis;
	e->has = (uint16_t)has;
	*prev_ts = e->ts;
	return 0;
}
