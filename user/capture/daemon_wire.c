/* The daemon protocol's wire format (contract: daemon_wire.h). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/daemon_wire.h"
#include "io/tlv.h"
#include "sample_rec.h" /* bpf/: KX_USTACK_MAX */
#include "util/pbwire.h"

/* Request fields. Numbers are part of the protocol: never reuse one. */
enum {
	RQ_PID = 1,      /* varint, repeated */
	RQ_ALL = 2,      /* varint 0/1 */
	RQ_DEVICE = 3,   /* string, repeated */
	RQ_MECH = 4,     /* string */
	RQ_RINGBUF = 5,  /* varint, bytes */
	RQ_NO_JOBS = 6,  /* varint 0/1 */
	RQ_CMDLINE = 7,  /* string */
	RQ_ANNOTATE = 8, /* varint 0/1 */
	/* After the first release (see daemon_wire.h). */
	RQ_SAMPLE_HZ = 9,    /* varint, Hz, 1..KX_DW_HZ_MAX */
	RQ_OFF_CPU = 10,     /* varint 0/1 */
	RQ_COUNTERS = 11,    /* string: "NAME[,NAME...]" */
	RQ_USTACK = 12,      /* varint, bytes of user stack per sample, 1..KX_USTACK_MAX */
	RQ_USTACK_AUTO = 13, /* varint 0/1: --call-graph auto */
};
enum { OP_MECH = 1 };
enum { ST_EMITTED = 1, ST_RECEIVED = 2, ST_DROPPED = 3 };
enum { EN_REASON = 1, EN_CAPINFO = 2 };

const char *kx_dw_type_name(int type)
{
	switch (type) {
	case KX_DW_OPEN:
		return "OPEN";
	case KX_DW_START:
		return "START";
	case KX_DW_STOP:
		return "STOP";
	case KX_DW_OPENED:
		return "OPENED";
	case KX_DW_STARTED:
		return "STARTED";
	case KX_DW_DATA:
		return "DATA";
	case KX_DW_STATUS:
		return "STATUS";
	case KX_DW_END:
		return "END";
	case KX_DW_ERROR:
		return "ERROR";
	default:
		return "unknown";
	}
}

/* ---- encoding ---- */

static void put_varint(struct kx_bytes *b, unsigned int field, uint64_t v)
{
	uint8_t *p = kx_bytes_room(b, 2 * KX_PB_VARINT_MAX);

	if (p)
		b->len = (size_t)(kx_pb_vfield(p, field, v) - b->p);
}

static void put_bytes(struct kx_bytes *b, unsigned int field, const void *s, size_t n)
{
	uint8_t *p = kx_bytes_room(b, 2 * KX_PB_VARINT_MAX + n);

	if (p)
		b->len = (size_t)(kx_pb_bytes(p, field, s, n) - b->p);
}

static void put_str(struct kx_bytes *b, unsigned int field, const char *s)
{
	put_bytes(b, field, s, strlen(s));
}

void kx_dw_request_encode(struct kx_bytes *b, const struct kx_dw_request *r)
{
	for (int i = 0; i < r->npids; i++)
		put_varint(b, RQ_PID, r->pids[i]);
	if (r->all)
		put_varint(b, RQ_ALL, 1);
	for (int i = 0; i < r->ndevices; i++)
		put_str(b, RQ_DEVICE, r->devices[i]);
	if (r->mech[0])
		put_str(b, RQ_MECH, r->mech);
	if (r->ringbuf_bytes)
		put_varint(b, RQ_RINGBUF, r->ringbuf_bytes);
	if (r->no_jobs)
		put_varint(b, RQ_NO_JOBS, 1);
	if (r->cmdline[0])
		put_str(b, RQ_CMDLINE, r->cmdline);
	if (r->annotate)
		put_varint(b, RQ_ANNOTATE, 1);
	if (r->sample_hz)
		put_varint(b, RQ_SAMPLE_HZ, r->sample_hz);
	if (r->off_cpu)
		put_varint(b, RQ_OFF_CPU, 1);
	if (r->counters[0])
		put_str(b, RQ_COUNTERS, r->counters);
	if (r->ustack_bytes)
		put_varint(b, RQ_USTACK, r->ustack_bytes);
	if (r->ustack_auto)
		put_varint(b, RQ_USTACK_AUTO, 1);
}

void kx_dw_opened_encode(struct kx_bytes *b, const char *mech)
{
	put_str(b, OP_MECH, mech ? mech : "");
}

void kx_dw_status_encode(struct kx_bytes *b, const struct kx_dw_status *s)
{
	put_varint(b, ST_EMITTED, s->emitted);
	put_varint(b, ST_RECEIVED, s->received);
	put_varint(b, ST_DROPPED, s->dropped);
}

void kx_dw_end_encode(struct kx_bytes *b, const struct kx_dw_end *e)
{
	struct kx_bytes ci = {0};

	put_str(b, EN_REASON, e->reason);
	kx_tlv_capinfo_encode(&ci, &e->ci);
	if (ci.oom)
		b->oom = 1;
	else
		put_bytes(b, EN_CAPINFO, ci.p, ci.len);
	free(ci.p);
}

/* ---- decoding ---- */

/* One field of a protocol-buffer message: its number and value. */
struct field {
	unsigned int num;
	int wt;
	uint64_t v;       /* varint value */
	const uint8_t *s; /* length-delimited bytes */
	size_t n;
};

/* The next field at *p (before end): 1 with f filled, 0 at the end, -1 when
 * malformed (a bad tag, a truncated value, a wire type not used here). */
static int next_field(const uint8_t **p, const uint8_t *end, struct field *f)
{
	uint64_t tag, n;
	int bad = 0;

	if (*p >= end)
		return 0;
	tag = kx_pb_read_varint(p, end, &bad);
	if (bad || tag >> 3 == 0 || tag >> 3 > 0xffff)
		return -1;
	f->num = (unsigned int)(tag >> 3);
	f->wt = (int)(tag & 7);
	if (f->wt == KX_PB_VARINT) {
		f->v = kx_pb_read_varint(p, end, &bad);
		return bad ? -1 : 1;
	}
	if (f->wt != KX_PB_LEN)
		return -1;
	n = kx_pb_read_varint(p, end, &bad);
	if (bad || n > (uint64_t)(end - *p))
		return -1;
	f->s = *p;
	f->n = (size_t)n;
	*p += n;
	return 1;
}

/* A string field into out (size cap): no NUL inside, not too long. 0 or -1. */
static int get_str(const struct field *f, char *out, size_t cap)
{
	if (f->wt != KX_PB_LEN || f->n >= cap || memchr(f->s, 0, f->n))
		return -1;
	memcpy(out, f->s, f->n);
	out[f->n] = 0;
	return 0;
}

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* A varint field that must be a flag (0 or 1) or fit in 32 bits. */
static int get_u32(const struct field *f, uint32_t max, uint32_t *out)
{
	if (f->wt != KX_PB_VARINT || f->v > max)
		return -1;
	*out = (uint32_t)f->v;
	return 0;
}

/* A field of the profiles (CPU samples, off-CPU stacks, counters) into r. */
static int profile_field(const struct field *f, struct kx_dw_request *r, char *err, size_t len)
{
	uint32_t v;

	switch (f->num) {
	case RQ_SAMPLE_HZ:
		if (get_u32(f, KX_DW_HZ_MAX, &r->sample_hz) || r->sample_hz == 0)
			return fail(err, len, "bad sampling frequency (1 to %u Hz)", KX_DW_HZ_MAX);
		return 0;
	case RQ_OFF_CPU:
		if (get_u32(f, 1, &v))
			return fail(err, len, "field %u is not a flag", f->num);
		r->off_cpu = (int)v;
		return 0;
	case RQ_USTACK:
		if (get_u32(f, KX_USTACK_MAX, &r->ustack_bytes) || r->ustack_bytes == 0)
			return fail(err, len, "bad stack copy size (1 to %u bytes)", KX_USTACK_MAX);
		return 0;
	case RQ_USTACK_AUTO:
		if (get_u32(f, 1, &v))
			return fail(err, len, "field %u is not a flag", f->num);
		r->ustack_auto = (int)v;
		return 0;
	case RQ_COUNTERS:
		if (get_str(f, r->counters, sizeof(r->counters)) || !r->counters[0])
			return fail(err, len, "bad counter list (empty, too long or not text)");
		return 0;
	default:
		return fail(err, len, "unknown field %u (a client newer than this daemon?)",
		            f->num);
	}
}

/* One request field into r; seen: singular fields already met (bit per number). */
static int request_field(const struct field *f, struct kx_dw_request *r, unsigned int *seen,
                         char *err, size_t len)
{
	uint32_t v;

	if (f->num != RQ_PID && f->num != RQ_DEVICE) {
		if (f->num < 32 && (*seen & (1u << f->num)))
			return fail(err, len, "field %u given twice", f->num);
		if (f->num < 32)
			*seen |= 1u << f->num;
	}
	switch (f->num) {
	case RQ_PID:
		if (get_u32(f, 0x7fffffff, &v) || v == 0)
			return fail(err, len, "bad pid");
		if (r->npids == KX_DW_PIDS_MAX)
			return fail(err, len, "more than %d pids", KX_DW_PIDS_MAX);
		r->pids[r->npids++] = v;
		return 0;
	case RQ_ALL:
	case RQ_NO_JOBS:
	case RQ_ANNOTATE:
		if (get_u32(f, 1, &v))
			return fail(err, len, "field %u is not a flag", f->num);
		*(f->num == RQ_ALL       ? &r->all
		  : f->num == RQ_NO_JOBS ? &r->no_jobs
		                         : &r->annotate) = (int)v;
		return 0;
	case RQ_DEVICE:
		if (r->ndevices == KX_DW_DEVICES_MAX)
			return fail(err, len, "more than %d devices", KX_DW_DEVICES_MAX);
		if (get_str(f, r->devices[r->ndevices], KX_DW_SPEC_MAX) ||
		    !r->devices[r->ndevices][0])
			return fail(err, len, "bad device spec (empty, too long or not text)");
		r->ndevices++;
		return 0;
	case RQ_MECH:
		if (get_str(f, r->mech, sizeof(r->mech)))
			return fail(err, len, "bad attach mechanism");
		return 0;
	case RQ_RINGBUF:
		if (get_u32(f, UINT32_MAX, &r->ringbuf_bytes))
			return fail(err, len, "bad ring buffer size");
		return 0;
	case RQ_CMDLINE:
		if (get_str(f, r->cmdline, sizeof(r->cmdline)))
			return fail(err, len, "bad command line (too long or not text)");
		return 0;
	default:
		return profile_field(f, r, err, len);
	}
}

int kx_dw_request_decode(const uint8_t *p, size_t len, struct kx_dw_request *r, char *err,
                         size_t errlen)
{
	const uint8_t *end = p + len;
	unsigned int seen = 0;
	struct field f;
	int rc;
	char why[160];

	memset(r, 0, sizeof(*r));
	while ((rc = next_field(&p, end, &f)) == 1)
		if (request_field(&f, r, &seen, why, sizeof(why)))
			return fail(err, errlen, "malformed request: %s", why);
	if (rc < 0)
		return fail(err, errlen, "malformed request: bad field encoding");
	return 0;
}

int kx_dw_opened_decode(const uint8_t *p, size_t len, char *mech, size_t mechlen, char *err,
                        size_t errlen)
{
	const uint8_t *end = p + len;
	struct field f;
	int rc;

	mech[0] = 0;
	while ((rc = next_field(&p, end, &f)) == 1)
		if (f.num == OP_MECH && get_str(&f, mech, mechlen))
			return fail(err, errlen, "malformed OPENED message");
	return rc < 0 ? fail(err, errlen, "malformed OPENED message") : 0;
}

int kx_dw_status_decode(const uint8_t *p, size_t len, struct kx_dw_status *s, char *err,
                        size_t errlen)
{
	const uint8_t *end = p + len;
	struct field f;
	int rc;

	memset(s, 0, sizeof(*s));
	while ((rc = next_field(&p, end, &f)) == 1) {
		uint64_t *to = f.num == ST_EMITTED    ? &s->emitted
		               : f.num == ST_RECEIVED ? &s->received
		               : f.num == ST_DROPPED  ? &s->dropped
		                                      : NULL;

		if (to && f.wt != KX_PB_VARINT)
			return fail(err, errlen, "malformed STATUS message");
		if (to)
			*to = f.v;
	}
	return rc < 0 ? fail(err, errlen, "malformed STATUS message") : 0;
}

int kx_dw_end_decode(const uint8_t *p, size_t len, struct kx_dw_end *e, char *err, size_t errlen)
{
	const uint8_t *end = p + len;
	struct field f;
	int rc, got_ci = 0;

	memset(e, 0, sizeof(*e));
	while ((rc = next_field(&p, end, &f)) == 1) {
		if (f.num == EN_REASON && get_str(&f, e->reason, sizeof(e->reason)))
			return fail(err, errlen, "malformed END message: bad reason");
		if (f.num == EN_CAPINFO) {
			if (f.wt != KX_PB_LEN || kx_tlv_capinfo_decode(f.s, f.n, &e->ci))
				return fail(err, errlen,
				            "malformed END message: bad capture facts");
			got_ci = 1;
		}
	}
	if (rc < 0)
		return fail(err, errlen, "malformed END message");
	return got_ci ? 0 : fail(err, errlen, "END message without the capture facts");
}

/* ---- framing ---- */

void kx_dw_header(uint8_t h[KX_DW_HDR], int type, uint32_t len)
{
	h[0] = 'K';
	h[1] = 'D';
	h[2] = KX_DW_VERSION;
	h[3] = (uint8_t)type;
	for (int i = 0; i < 4; i++)
		h[4 + i] = (uint8_t)(len >> (8 * i));
}

/* Whether the side sends type, and whether its payload must be empty. */
static int type_ok(int from_client, int type, int *empty)
{
	*empty = type == KX_DW_START || type == KX_DW_STOP || type == KX_DW_STARTED;
	if (from_client)
		return type == KX_DW_OPEN || type == KX_DW_START || type == KX_DW_STOP;
	return type >= KX_DW_OPENED && type <= KX_DW_ERROR;
}

int kx_dw_header_parse(const uint8_t h[KX_DW_HDR], int from_client, int *type, uint32_t *len,
                       char *err, size_t errlen)
{
	uint32_t max = from_client ? KX_DW_CLIENT_MAX : KX_DW_DAEMON_MAX;
	int empty;

	if (h[0] != 'K' || h[1] != 'D')
		return fail(err, errlen, "not a kxprof daemon protocol message (bad magic)");
	if (h[2] != KX_DW_VERSION)
		return fail(err, errlen, "protocol version %u, this side speaks %u (upgrade both)",
		            h[2], KX_DW_VERSION);
	*type = h[3];
	*len = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
	if (!type_ok(from_client, *type, &empty))
		return fail(err, errlen, "unexpected message type %d", *type);
	if (*len > max)
		return fail(err, errlen, "%s message of %u bytes is over the limit of %u",
		            kx_dw_type_name(*type), *len, max);
	if (empty && *len)
		return fail(err, errlen, "%s message with a payload", kx_dw_type_name(*type));
	return 0;
}

int kx_dw_send(int fd, int type, const void *payload, size_t len)
{
	uint8_t h[KX_DW_HDR];
	struct iovec iov[2] = {{h, sizeof(h)}, {(void *)payload, len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};

	kx_dw_header(h, type, (uint32_t)len);
	while (m.msg_iovlen) {
		ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EWOULDBLOCK ? EAGAIN : errno;
		/* Skip what was sent: whole vectors, then into the next one. */
		while (m.msg_iovlen && (size_t)k >= m.msg_iov->iov_len) {
			k -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov->iov_base = (uint8_t *)m.msg_iov->iov_base + k;
			m.msg_iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

int kx_dw_send_error(int fd, const char *fmt, ...)
{
	char text[KX_DW_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return kx_dw_send(fd, KX_DW_ERROR, text, strlen(text));
}

/* Reads exactly n bytes before the deadline: 1, 0 on EOF before any byte,
 * -1 on error (errno; EPIPE for EOF inside), -2 on timeout. */
static int read_full(int fd, uint8_t *p, size_t n, uint64_t deadline_ns)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int ms = -1;
		ssize_t k;

		if (deadline_ns) {
			uint64_t now = kx_mono_ns();

			if (now >= deadline_ns)
				return -2;
			ms = (int)((deadline_ns - now + 999999) / 1000000);
		}
		k = poll(&pfd, 1, ms);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			continue; /* the deadline is checked above */
		k = read(fd, p + got, n - got);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return -1;
		if (k == 0) {
			errno = EPIPE;
			return got ? -1 : 0;
		}
		got += (size_t)k;
	}
	return 1;
}

int kx_dw_read(int fd, uint64_t deadline_ns, int from_client, int *type, struct kx_bytes *payload,
               char *err, size_t errlen)
{
	uint8_t h[KX_DW_HDR];
	uint32_t len;
	int rc = read_full(fd, h, sizeof(h), deadline_ns);

	payload->len = 0;
	if (rc == 0)
		return KX_DW_EOF;
	if (rc == -2)
		return KX_DW_TIMEOUT;
	if (rc < 0)
		return fail(err, errlen, "%s",
		            errno == EPIPE ? "message cut short" : strerror(errno));
	if (kx_dw_header_parse(h, from_client, type, &len, err, errlen))
		return KX_DW_BAD;
	if (!kx_bytes_room(payload, len ? len : 1))
		return fail(err, errlen, "out of memory for a %u-byte message", len);
	rc = read_full(fd, payload->p, len, deadline_ns);
	if (rc == -2)
		return KX_DW_TIMEOUT;
	if (rc < 0 || (rc == 0 && len))
		return fail(err, errlen, "%s message cut short (%u bytes announced)",
		            kx_dw_type_name(*type), len);
	payload->len = len;
	return KX_DW_MSG;
}
