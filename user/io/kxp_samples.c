/* The record file's sample and symbol records (layout: kxp_samples.h). */
#include <string.h>

#include "io/kxp_bytes.h"
#include "io/kxp_samples.h"

size_t kx_kxp_enc_sample(uint8_t *out, const struct kx_sample *s, uint64_t *prev_ts)
{
	size_t clen = strnlen(s->comm, KX_COMM_LEN - 1);
	uint8_t *p = out;
	uint64_t prev = 0;
	uint32_t nk = s->nk > KX_SAMPLE_MAX_DEPTH ? KX_SAMPLE_MAX_DEPTH : s->nk;
	uint32_t nu = s->nu > KX_SAMPLE_MAX_DEPTH ? KX_SAMPLE_MAX_DEPTH : s->nu;

	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(s->ts_ns - *prev_ts)));
	*prev_ts = s->ts_ns;
	p = kx_pb_varint(p, s->weight_ns);
	p = kx_pb_varint(p, s->pid);
	p = kx_pb_varint(p, s->tid);
	p = kx_pb_varint(p, s->exec_id);
	p = kx_pb_varint(p, s->cpu);
	p = kx_pb_varint(p, s->flags);
	*p++ = (uint8_t)clen;
	memcpy(p, s->comm, clen);
	p += clen;
	/* A call starts at or before the sample: the distance plus one, 0 for none. */
	p = kx_pb_varint(p, s->call.ts && s->call.ts <= s->ts_ns ? s->ts_ns - s->call.ts + 1 : 0);
	if (s->call.ts && s->call.ts <= s->ts_ns) {
		put_le32(p, s->call.cmd);
		p += 4;
		p = kx_pb_varint(p, s->call.dev);
		p = kx_pb_varint(p, s->call.xfer_cmd);
		*p++ = (uint8_t)s->call.fkind;
		*p++ = (uint8_t)s->call.drv;
	}
	p = kx_pb_varint(p, nk);
	p = kx_pb_varint(p, nu);
	for (uint32_t i = 0; i < nk + nu; i++) {
		uint64_t ip = i < nk ? s->kips[i] : s->uips[i - nk];

		p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(ip - prev)));
		prev = ip;
	}
	return (size_t)(p - out);
}

/* The call fields after a present call's distance. */
static void dec_call(struct rd *c, struct kx_sample *s, uint64_t dist)
{
	memset(&s->call, 0, sizeof(s->call));
	if (!dist)
		return;
	if (dist - 1 > s->ts_ns) {
		c->bad = 1;
		return;
	}
	s->call.ts = s->ts_ns - (dist - 1);
	s->call.cmd = rd_le32(c);
	s->call.dev = rd_varint32(c);
	s->call.xfer_cmd = rd_varint32(c);
	s->call.fkind = rd_u8(c);
	s->call.drv = rd_u8(c);
}

int kx_kxp_dec_sample(const uint8_t *p, size_t n, unsigned int type, uint64_t *prev_ts,
                      struct kx_sample *s, uint64_t *ips)
{
	struct rd c = {p, p + n, 0};
	const uint8_t *comm;
	uint64_t prev = 0, v;
	uint8_t clen;

	memset(s, 0, sizeof(*s));
	s->kind = type == KX_KXP_REC_OFFCPU ? KX_SAMPLE_OFFCPU : KX_SAMPLE_CPU;
	s->ts_ns = *prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(&c));
	s->weight_ns = rd_varint(&c);
	s->pid = rd_varint32(&c);
	s->tid = rd_varint32(&c);
	s->exec_id = rd_varint32(&c);
	s->cpu = rd_varint32(&c);
	v = rd_varint(&c);
	clen = rd_u8(&c);
	comm = rd_bytes(&c, clen);
	if (c.bad || v > 0xffff || clen >= KX_COMM_LEN || s->cpu > 0xffff)
		return -1;
	s->flags = (uint16_t)v;
	memcpy(s->comm, comm, clen);
	dec_call(&c, s, rd_varint(&c));
	s->nk = rd_varint32(&c);
	s->nu = rd_varint32(&c);
	if (c.bad || s->nk > KX_SAMPLE_MAX_DEPTH || s->nu > KX_SAMPLE_MAX_DEPTH)
		return -1;
	for (uint32_t i = 0; i < s->nk + s->nu; i++) {
		prev += (uint64_t)kx_pb_unzigzag(rd_varint(&c));
		ips[i] = prev;
	}
	if (c.bad)
		return -1;
	s->kips = ips;
	s->uips = ips + s->nk;
	*prev_ts = s->ts_ns;
	return 0;
}

/* Length of s kept in a record: at most KX_KXP_SYM_STR bytes, never
 * ending inside a UTF-8 sequence. */
static size_t sym_len(const char *s)
{
	size_t n = strlen(s);

	if (n <= KX_KXP_SYM_STR)
		return n;
	n = KX_KXP_SYM_STR;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
	size_t n = sym_len(s);

	p = kx_pb_varint(p, n);
	memcpy(p, s, n);
	return p + n;
}

size_t kx_kxp_enc_sym(uint8_t *out, const struct kx_symres *r, const struct kx_symres_entry *e)
{
	uint8_t *p = out;

	p = kx_pb_varint(p, e->pid);
	p = kx_pb_varint(p, e->gen);
	p = kx_pb_varint(p, e->addr);
	p = kx_pb_varint(p, e->offset);
	p = kx_pb_varint(p, e->mod_offset);
	p = kx_pb_varint(p, e->known);
	p = put_str(p, kx_symres_str(r, e->func));
	p = put_str(p, kx_symres_str(r, e->module));
	p = put_str(p, kx_symres_str(r, e->build_id));
	return (size_t)(p - out);
}

/* A stored string: copied out NUL-terminated into buf (room KX_KXP_SYM_STR + 1). */
static void get_str(struct rd *c, char *buf)
{
	uint64_t n = rd_varint(c);
	const uint8_t *s;

	buf[0] = 0;
	if (n > KX_KXP_SYM_STR) {
		c->bad = 1;
		return;
	}
	s = rd_bytes(c, (size_t)n);
	if (!s)
		return;
	memcpy(buf, s, (size_t)n);
	buf[n] = 0;
	if (memchr(buf, 0, (size_t)n))
		c->bad = 1; /* a NUL inside would cut the name short: not ours */
}

int kx_kxp_dec_sym(const uint8_t *p, size_t n, struct kx_symres *r)
{
	static __thread char fn[KX_KXP_SYM_STR + 1], mod[KX_KXP_SYM_STR + 1],
	        bid[KX_KXP_SYM_STR + 1];
	struct rd c = {p, p + n, 0};
	struct kx_symres_names nm;
	uint32_t pid, gen;
	uint64_t addr, known;

	pid = rd_varint32(&c);
	gen = rd_varint32(&c);
	addr = rd_varint(&c);
	nm.offset = rd_varint(&c);
	nm.mod_offset = rd_varint(&c);
	known = rd_varint(&c);
	get_str(&c, fn);
	get_str(&c, mod);
	get_str(&c, bid);
	if (c.bad || known > 1)
		return -1;
	nm.func = fn;
	nm.module = mod;
	nm.build_id = bid;
	nm.known = (int)known;
	return r && kx_symres_put(r, pid, gen, addr, &nm) ? -2 : 0;
}

size_t kx_kxp_enc_ctr(uint8_t *out, const struct kx_ctr_ev *e, uint64_t *prev_ts)
{
	uint8_t *p = out;
	uint32_t n = e->n < KX_MAX_COUNTERS ? e->n : KX_MAX_COUNTERS;

	p = kx_pb_varint(p, kx_pb_zigzag((int64_t)(e->ts - *prev_ts)));
	*prev_ts = e->ts;
	p = kx_pb_varint(p, e->pid);
	p = kx_pb_varint(p, e->tid);
	p = kx_pb_varint(p, n);
	p = kx_pb_varint(p, e->flags);
	p = kx_pb_varint(p, e->not_counted);
	p = kx_pb_varint(p, e->multiplexed);
	for (uint32_t i = 0; i < n; i++)
		p = kx_pb_varint(p, e->v[i]);
	return (size_t)(p - out);
}

int kx_kxp_dec_ctr(const uint8_t *p, size_t n, uint64_t *prev_ts, struct kx_ctr_ev *e)
{
	struct rd c = {p, p + n, 0};
	uint64_t cnt, flags, nc, mx;

	memset(e, 0, sizeof(*e));
	e->ts = *prev_ts + (uint64_t)kx_pb_unzigzag(rd_varint(&c));
	e->pid = rd_varint32(&c);
	e->tid = rd_varint32(&c);
	cnt = rd_varint(&c);
	flags = rd_varint(&c);
	nc = rd_varint(&c);
	mx = rd_varint(&c);
	if (c.bad || cnt > KX_MAX_COUNTERS || flags > 0xff || nc > 0xff || mx > 0xff)
		return -1;
	e->n = (uint8_t)cnt;
	e->flags = (uint8_t)flags;
	e->not_counted = (uint8_t)nc;
	e->multiplexed = (uint8_t)mx;
	for (uint32_t i = 0; i < cnt; i++)
		e->v[i] = rd_varint(&c);
	if (c.bad)
		return -1;
	*prev_ts = e->ts;
	return 0;
}
