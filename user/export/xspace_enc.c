/*
 * XSpace wire encoding shared by the planes (see xspace_int.h): nested
 * lengths in the growing buffer, a plane's metadata maps, plane stats, and
 * a device plane's own names and event stats.
 */
#include "export/xspace_int.h"

size_t xs_ob_open(struct kx_bytes *b, unsigned int field)
{
	uint8_t *p = kx_bytes_room(b, 8 + LEN_RESERVE);

	if (!p)
		return 0;
	p = kx_pb_tag(p, field, KX_PB_LEN);
	ob_done(b, p + LEN_RESERVE);
	return b->len;
}

void xs_ob_close(struct kx_bytes *b, size_t body)
{
	size_t len, k;
	uint8_t *lp;

	if (b->oom)
		return;
	len = b->len - body;
	k = kx_pb_varint_size(len);
	lp = b->p + body - LEN_RESERVE;
	kx_pb_varint(lp, len);
	if (k < LEN_RESERVE) {
		memmove(lp + k, b->p + body, len);
		b->len -= LEN_RESERVE - k;
	}
}

/* Entries {key, XEventMetadata {id, name}} (the same shape for stats). */
void xs_put_metadata(struct kx_bytes *b, const struct kx_intern *ev, const struct kx_intern *st)
{
	for (int pass = 0; pass < 2; pass++) {
		const struct kx_intern *t = pass ? st : ev;
		unsigned int field = pass ? XPLANE_STAT_METADATA : XPLANE_EVENT_METADATA;

		for (size_t i = 0; t && i < t->n; i++) {
			size_t nl = kx_intern_len(t, i), id = i + 1;
			size_t val = 2 + kx_pb_varint_size(id) + kx_pb_varint_size(nl) + nl;
			size_t ent = 2 + kx_pb_varint_size(id) + kx_pb_varint_size(val) + val;
			uint8_t *p = kx_bytes_room(b, ent + 16);

			if (!p)
				return;
			p = kx_pb_len_head(p, field, ent);
			p = kx_pb_vfield(p, MAP_KEY, id);
			p = kx_pb_len_head(p, MAP_VALUE, val);
			p = kx_pb_vfield(p, XMETA_ID, id);
			ob_done(b, kx_pb_bytes(p, XMETA_NAME, kx_intern_str(t, i), nl));
		}
	}
}

void xs_put_plane_str_stat(struct kx_bytes *b, struct kx_intern *st, const char *name,
                           const char *val)
{
	uint32_t mid = meta_cstr(st, name);
	size_t len = strlen(val);
	uint8_t *p = kx_bytes_room(b, len + 32);

	if (!mid)
		b->oom = 1;
	else if (p)
		ob_done(b, put_stat_str(p, XPLANE_STATS, mid, val, len));
}

uint32_t xs_pname(struct ptabs *t, struct kx_intern *tab, const char *name)
{
	uint32_t id = meta_cstr(tab, name);

	if (!id)
		t->oom = 1;
	return id;
}

uint8_t *xs_pstat_u(struct ptabs *t, uint8_t *p, const char *name, uint64_t v)
{
	uint32_t mid = xs_pname(t, &t->st, name);

	return mid ? put_stat_varint(p, XEVENT_STATS, mid, XSTAT_UINT64, v) : p;
}

uint8_t *xs_pstat_i(struct ptabs *t, uint8_t *p, const char *name, int64_t v)
{
	uint32_t mid = xs_pname(t, &t->st, name);

	return mid ? put_stat_varint(p, XEVENT_STATS, mid, XSTAT_INT64, (uint64_t)v) : p;
}

uint8_t *xs_pstat_ref(struct ptabs *t, uint8_t *p, const char *name, const char *val)
{
	uint32_t mid = xs_pname(t, &t->st, name), ref = xs_pname(t, &t->st, val);

	return mid && ref ? put_stat_varint(p, XEVENT_STATS, mid, XSTAT_REF, ref) : p;
}

uint8_t *xs_pstat_d(struct ptabs *t, uint8_t *p, const char *name, double v)
{
	uint32_t mid = xs_pname(t, &t->st, name);

	return mid ? put_stat_double(p, XEVENT_STATS, mid, v) : p;
}

void xs_ptabs_done(struct ptabs *t, struct kx_bytes *b)
{
	if (t->oom)
		b->oom = 1;
	kx_intern_free(&t->ev);
	kx_intern_free(&t->st);
}
