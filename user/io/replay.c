/*
 * Replay fixtures (format: replay.h). Owns the fixture parser: a small JSON
 * reader for flat one-line objects, the names a fixture may use (drivers,
 * file kinds, ioctl commands from the generated tables, job sources and
 * phases) and the argument-copy notation. Strict: an unknown key, a bad
 * value or a missing "type" stops the load with the line number.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/ioctl_decode.h"
#include "io/replay.h"
#include "util/grow.h"

#define MAX_KEYS 32
#define STR_MAX  512

struct kv {
	char key[32];
	int is_str;
	char str[STR_MAX]; /* strings, and numbers as written */
};

struct obj {
	struct kv kv[MAX_KEYS];
	int n;
	uint32_t used; /* bit i: kv[i] was read */
};

struct ctx {
	const char *name;
	int line;
	char *err;
	size_t errlen;
};

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!c->errlen)
		return -1;
	n = snprintf(c->err, c->errlen, "%s:%d: ", c->name, c->line);
	if (n < 0 || (size_t)n >= c->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the JSON subset: one flat object of strings, integers, booleans ---- */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A JSON string at p (after the quote) into out; returns the end or NULL. */
static const char *parse_str(struct ctx *c, const char *p, const char *end, char *out, size_t cap)
{
	size_t n = 0;

	while (p < end && *p != '"') {
		char ch = *p++;

		if (ch == '\\') {
			if (p >= end)
				break;
			ch = *p++;
			switch (ch) {
			case 'n':
				ch = '\n';
				break;
			case 't':
				ch = '\t';
				break;
			case 'u': {
				int v = 0;

				for (int i = 0; i < 4; i++) {
					int h = p < end ? hexval(*p++) : -1;

					if (h < 0) {
						bad(c, "bad \\u escape");
						return NULL;
					}
					v = v << 4 | h;
				}
				/* Fixtures are ASCII; anything else is not worth a UTF-8 encoder.
				 */
				if (v >= 0x80) {
					bad(c, "only ASCII \\u escapes are supported");
					return NULL;
				}
				ch = (char)v;
				break;
			}
			case '"':
			case '\\':
			case '/':
				break;
			default:
				bad(c, "bad escape \\%c", ch);
				return NULL;
			}
		}
		if (n + 1 >= cap) {
			bad(c, "string longer than %zu bytes", cap - 1);
			return NULL;
		}
		out[n++] = ch;
	}
	if (p >= end) {
		bad(c, "unterminated string");
		return NULL;
	}
	out[n] = '\0';
	return p + 1;
}

static int parse_obj(struct ctx *c, const char *p, const char *end, struct obj *o)
{
	o->n = 0;
	o->used = 0;
	p = skip_ws(p, end);
	if (p >= end || *p++ != '{')
		return bad(c, "expected a JSON object");
	p = skip_ws(p, end);
	if (p < end && *p == '}')
		goto close;
	for (;;) {
		struct kv *kv;

		if (o->n == MAX_KEYS)
			return bad(c, "more than %d keys", MAX_KEYS);
		kv = &o->kv[o->n];
		p = skip_ws(p, end);
		if (p >= end || *p++ != '"')
			return bad(c, "expected a key");
		p = parse_str(c, p, end, kv->key, sizeof(kv->key));
		if (!p)
			return -1;
		for (int i = 0; i < o->n; i++)
			if (!strcmp(o->kv[i].key, kv->key))
				return bad(c, "key \"%s\" twice", kv->key);
		p = skip_ws(p, end);
		if (p >= end || *p++ != ':')
			return bad(c, "expected ':' after \"%s\"", kv->key);
		p = skip_ws(p, end);
		if (p < end && *p == '"') {
			kv->is_str = 1;
			p = parse_str(c, p + 1, end, kv->str, sizeof(kv->str));
			if (!p)
				return -1;
		} else {
			size_t n = 0;

			kv->is_str = 0;
			while (p < end &&
			       (*p == '-' || (*p >= '0' && *p <= '9') || *p == 't' || *p == 'r' ||
			        *p == 'u' || *p == 'e' || *p == 'f' || *p == 'a' || *p == 'l' ||
			        *p == 's') &&
			       n + 1 < sizeof(kv->str))
				kv->str[n++] = *p++;
			kv->str[n] = '\0';
			if (!strcmp(kv->str, "true"))
				strcpy(kv->str, "1");
			else if (!strcmp(kv->str, "false"))
				strcpy(kv->str, "0");
			else if (!n || strspn(kv->str, "-0123456789") != n)
				return bad(c, "value of \"%s\" is not a string, integer or boolean",
				           kv->key);
		}
		o->n++;
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			break;
		return bad(c, "expected ',' or '}' after \"%s\"", kv->key);
	}
close:
	p = skip_ws(p + 1, end);
	if (p < end)
		return bad(c, "text after the object");
	return 0;
}

static struct kv *get(struct obj *o, const char *key)
{
	for (int i = 0; i < o->n; i++) {
		if (!strcmp(o->kv[i].key, key)) {
			o->used |= 1u << i;
			return &o->kv[i];
		}
	}
	return NULL;
}

/* An unsigned or signed number from a number or a string ("0x..", "-3"). */
static int num(struct ctx *c, struct kv *kv, int64_t min, uint64_t max, uint64_t *v)
{
	const char *s = kv->str;
	char *end;
	int neg = *s == '-';

	errno = 0;
	if (neg) {
		long long x = strtoll(s, &end, 0);

		if (errno || *end || !*s || x < min)
			return bad(c, "\"%s\": bad or out-of-range number '%s'", kv->key, s);
		*v = (uint64_t)x;
		return 0;
	}
	*v = strtoull(s, &end, 0);
	if (errno || *end || !*s || *v > max)
		return bad(c, "\"%s\": bad or out-of-range number '%s'", kv->key, s);
	return 0;
}

/* Optional unsigned field of width bits; stays as is when absent. */
static int opt_u(struct ctx *c, struct obj *o, const char *key, int bits, void *dst)
{
	struct kv *kv = get(o, key);
	uint64_t max = bits == 64 ? UINT64_MAX : (1ULL << bits) - 1, v;

	if (!kv)
		return 0;
	if (num(c, kv, 0, max, &v))
		return -1;
	switch (bits) {
	case 8:
		*(uint8_t *)dst = (uint8_t)v;
		break;
	case 16:
		*(uint16_t *)dst = (uint16_t)v;
		break;
	case 32:
		*(uint32_t *)dst = (uint32_t)v;
		break;
	default:
		*(uint64_t *)dst = v;
		break;
	}
	return 0;
}

static int opt_i(struct ctx *c, struct obj *o, const char *key, int64_t min, int64_t max,
                 int64_t *dst)
{
	struct kv *kv = get(o, key);
	uint64_t v;

	if (!kv)
		return 0;
	if (num(c, kv, min, (uint64_t)max, &v))
		return -1;
	*dst = (int64_t)v;
	return 0;
}

static int opt_str(struct ctx *c, struct obj *o, const char *key, char *dst, size_t cap)
{
	struct kv *kv = get(o, key);
	size_t n;

	if (!kv)
		return 0;
	n = strlen(kv->str);
	if (n >= cap)
		return bad(c, "\"%s\" is longer than %zu bytes", key, cap - 1);
	memcpy(dst, kv->str, n + 1);
	return 0;
}

/* "MAJOR:MINOR" or a plain dev_t number. */
static int opt_dev(struct ctx *c, struct obj *o, const char *key, uint32_t *dev)
{
	struct kv *kv = get(o, key);
	unsigned int ma, mi;
	char tail;

	if (!kv)
		return 0;
	if (sscanf(kv->str, "%u:%u%c", &ma, &mi, &tail) == 2) {
		if (ma > 4095 || mi > KX_MINORMASK)
			return bad(c, "\"%s\": %s is out of range", key, kv->str);
		*dev = KX_MKDEV(ma, mi);
		return 0;
	}
	return opt_u(c, o, key, 32, dev);
}

static int opt_driver(struct ctx *c, struct obj *o, uint8_t *drv)
{
	struct kv *kv = get(o, "driver");

	if (!kv)
		return 0;
	*drv = (uint8_t)kx_driver_from_name(kv->str);
	if (!*drv && strcmp(kv->str, "unknown"))
		return bad(c, "unknown driver \"%s\"", kv->str);
	return 0;
}

static int opt_fkind(struct ctx *c, struct obj *o, uint8_t *fkind)
{
	static const char *const kinds[KX_FK_MAX] = {
	        [KX_FK_NONE] = "none",         [KX_FK_CHR] = "chr",
	        [KX_FK_BLK] = "blk",           [KX_FK_KVM_VM] = "kvm-vm",
	        [KX_FK_KVM_VCPU] = "kvm-vcpu", [KX_FK_VFIO_DEV] = "vfio",
	        [KX_FK_KVM_DEV] = "kvm-dev",
	};
	struct kv *kv = get(o, "kind");

	if (!kv)
		return 0;
	for (int i = 0; i < KX_FK_MAX; i++) {
		if (!strcmp(kv->str, kinds[i])) {
			*fkind = (uint8_t)i;
			return 0;
		}
	}
	return bad(c, "unknown file kind \"%s\"", kv->str);
}

static int opt_cmd(struct ctx *c, struct obj *o, const char *key, enum kx_driver drv, uint32_t *cmd,
                   int nr_only)
{
	struct kv *kv = get(o, key);

	if (!kv)
		return 0;
	if (kv->is_str && (kv->str[0] < '0' || kv->str[0] > '9')) {
		if (kx_ioctl_cmd_by_name(drv, kv->str, cmd))
			return bad(c, "\"%s\": no ioctl named %s for driver %s", key, kv->str,
			           kx_driver_name(drv));
		if (nr_only)
			*cmd &= 0xff;
		return 0;
	}
	return opt_u(c, o, key, 32, cmd);
}

/* Argument copy tokens into buf; returns the length or -1. */
static int args(struct ctx *c, struct obj *o, const char *key, uint8_t *buf)
{
	struct kv *kv = get(o, key);
	char *save = NULL, *tok, copy[STR_MAX];
	int n = 0;

	if (!kv)
		return 0;
	snprintf(copy, sizeof(copy), "%s", kv->str);
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		int width = 0, sgn = tok[0] == 'i';

		if ((tok[0] == 'u' || tok[0] == 'i') && strchr(tok, ':'))
			width = atoi(tok + 1) / 8;
		if (width) {
			const char *v = strchr(tok, ':') + 1;
			char *end;
			uint64_t x;

			if (width != 1 && width != 2 && width != 4 && width != 8)
				return bad(c, "\"%s\": bad width in '%s'", key, tok);
			errno = 0;
			x = sgn ? (uint64_t)strtoll(v, &end, 0) : strtoull(v, &end, 0);
			if (errno || *end || !*v || (!sgn && *v == '-'))
				return bad(c, "\"%s\": bad value in '%s'", key, tok);
			if (n + width > KX_ARG_MAX)
				return bad(c, "\"%s\": more than %d bytes", key, KX_ARG_MAX);
			for (int i = 0; i < width; i++)
				buf[n++] = (uint8_t)(x >> (8 * i));
			continue;
		}
		if (strlen(tok) % 2)
			return bad(c, "\"%s\": odd number of hex digits in '%s'", key, tok);
		for (size_t i = 0; tok[i]; i += 2) {
			int hi = hexval(tok[i]), lo = hexval(tok[i + 1]);

			if (hi < 0 || lo < 0)
				return bad(c, "\"%s\": '%s' is neither uN:V nor hex bytes", key,
				           tok);
			if (n >= KX_ARG_MAX)
				return bad(c, "\"%s\": more than %d bytes", key, KX_ARG_MAX);
			buf[n++] = (uint8_t)(hi << 4 | lo);
		}
	}
	return n;
}

/* ---- records ---- */

static int rec_capture(struct ctx *c, struct obj *o, struct kx_capinfo *ci)
{
	static const struct {
		const char *key;
		size_t off;
		int bits;
	} nums[] = {
#define N(k, m) {k, offsetof(struct kx_capinfo, m), (int)sizeof(((struct kx_capinfo *)0)->m) * 8}
	        N("start_ns", start_mono_ns),
	        N("stop_ns", stop_mono_ns),
	        N("emitted", emitted),
	        N("received", received),
	        N("dropped", dropped),
	        N("not_stored", not_stored),
	        N("inflight_full", inflight_full),
	        N("pidset_full", pidset_full),
	        N("protected_exec", protected_exec),
	        N("arg_faults", arg_faults),
	        N("bpf_missed", bpf_missed),
	        N("ringbuf_bytes", ringbuf_bytes),
	        N("all_pids", all_pids),
	        N("job_emitted", job_emitted),
	        N("job_received", job_received),
	        N("job_dropped", job_dropped),
	        N("job_done_lost", job_done_lost),
#undef N
	};
	int64_t off = 0;

	if (opt_str(c, o, "host", ci->hostname, sizeof(ci->hostname)))
		return -1;
	if (opt_str(c, o, "kernel", ci->kernel, sizeof(ci->kernel)))
		return -1;
	if (opt_str(c, o, "cmdline", ci->cmdline, sizeof(ci->cmdline)))
		return -1;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (opt_u(c, o, nums[i].key, nums[i].bits, (uint8_t *)ci + nums[i].off))
			return -1;
	if (opt_i(c, o, "realtime_offset_ns", INT64_MIN, INT64_MAX, &off))
		return -1;
	/* A replay's clocks are exact: the same offset at start and stop. */
	ci->clock_start.offset_ns = off;
	ci->clock_start.mono_ns = ci->start_mono_ns;
	ci->clock_stop.offset_ns = off;
	ci->clock_stop.mono_ns = ci->stop_mono_ns;
	return 0;
}

static int rec_device(struct ctx *c, struct obj *o, struct kx_capinfo *ci)
{
	struct kx_device *d;

	if (ci->ndevices >= KX_MAX_DEVICES)
		return bad(c, "more than %d devices", KX_MAX_DEVICES);
	d = &ci->devices[ci->ndevices];
	memset(d, 0, sizeof(*d));
	d->fkind = KX_FK_CHR;
	if (opt_str(c, o, "node", d->node, sizeof(d->node)))
		return -1;
	if (opt_str(c, o, "driver", d->driver, sizeof(d->driver)))
		return -1;
	d->drv = (uint8_t)kx_driver_from_name(d->driver);
	if (opt_fkind(c, o, &d->fkind) || opt_dev(c, o, "dev", &d->dev) ||
	    opt_u(c, o, "any_minor", 8, &d->any_minor))
		return -1;
	/* Block drivers go by their /proc/devices name ("virtblk"): loop or block. */
	if (!d->drv && d->fkind == KX_FK_BLK)
		d->drv = KX_MAJOR(d->dev) == 7 ? KX_DRV_LOOP : KX_DRV_BLOCK;
	if (d->any_minor)
		d->dev = KX_DEV_ANY_MINOR(KX_MAJOR(d->dev));
	ci->ndevices++;
	return 0;
}

static int rec_hook(struct ctx *c, struct obj *o, struct kx_capinfo *ci)
{
	struct kx_hook *h;
	char state[16] = "attached";

	if (ci->nhooks >= KX_MAX_HOOKS)
		return bad(c, "more than %d hooks", KX_MAX_HOOKS);
	h = &ci->hooks[ci->nhooks];
	memset(h, 0, sizeof(*h));
	if (opt_str(c, o, "name", h->name, sizeof(h->name)))
		return -1;
	if (opt_str(c, o, "mech", h->mech, sizeof(h->mech)))
		return -1;
	if (opt_str(c, o, "why", h->why, sizeof(h->why)))
		return -1;
	if (opt_str(c, o, "state", state, sizeof(state)))
		return -1;
	if (!strcmp(state, "attached"))
		h->state = KX_HOOK_ATTACHED;
	else if (!strcmp(state, "skipped"))
		h->state = KX_HOOK_SKIPPED;
	else if (!strcmp(state, "failed"))
		h->state = KX_HOOK_FAILED;
	else
		return bad(c, "hook state \"%s\" (attached, skipped or failed)", state);
	ci->nhooks++;
	return 0;
}

static int rec_task(struct ctx *c, struct obj *o, struct kx_store *s)
{
	static const char *const whats[] = {"", "fork", "exec", "rename", "exit", "seen"};
	struct kx_task t;
	char what[16] = "seen";
	size_t i;

	memset(&t, 0, sizeof(t));
	if (opt_u(c, o, "ts", 64, &t.ts) || opt_u(c, o, "pid", 32, &t.pid) ||
	    opt_u(c, o, "tid", 32, &t.tid) || opt_u(c, o, "ppid", 32, &t.ppid))
		return -1;
	if (opt_str(c, o, "comm", t.comm, sizeof(t.comm)) ||
	    opt_str(c, o, "cmd", t.cmd, sizeof(t.cmd)))
		return -1;
	if (opt_str(c, o, "what", what, sizeof(what)))
		return -1;
	for (i = 1; i < sizeof(whats) / sizeof(whats[0]) && strcmp(what, whats[i]); i++)
		;
	if (i == sizeof(whats) / sizeof(whats[0]))
		return bad(c, "task \"what\": \"%s\" (fork, exec, rename, exit or seen)", what);
	t.what = (uint32_t)i;
	if (kx_store_add_task(s, &t))
		return bad(c, "store limit reached");
	return 0;
}

static int rec_ioctl(struct ctx *c, struct obj *o, struct kx_store *s)
{
	uint8_t arg[2 * KX_ARG_MAX];
	struct kx_ioctl e;
	int64_t ret = 0, fd = -1;
	uint32_t xfer = 0;
	uint16_t cpu = 0;
	int in, out;

	memset(&e, 0, sizeof(e));
	e.fkind = KX_FK_CHR;
	if (opt_u(c, o, "ts", 64, &e.ts) || opt_u(c, o, "dur", 64, &e.dur) ||
	    opt_u(c, o, "pid", 32, &e.pid) || opt_u(c, o, "tid", 32, &e.tid) ||
	    opt_driver(c, o, &e.drv) || opt_fkind(c, o, &e.fkind) || opt_dev(c, o, "dev", &e.dev) ||
	    opt_i(c, o, "fd", INT32_MIN, INT32_MAX, &fd) ||
	    opt_cmd(c, o, "cmd", (enum kx_driver)e.drv, &e.cmd, 0) ||
	    opt_cmd(c, o, "xfer_cmd", (enum kx_driver)e.drv, &xfer, 1) ||
	    opt_i(c, o, "ret", INT32_MIN, INT32_MAX, &ret) || opt_u(c, o, "cpu", 16, &cpu) ||
	    opt_u(c, o, "offcpu_us", 32, &e.offcpu_us))
		return -1;
	if (!get(o, "cmd"))
		return bad(c, "ioctl without \"cmd\"");
	if (xfer > 0xff)
		return bad(c, "\"xfer_cmd\" is an 8-bit NVIDIA escape number");
	e.xfer_cmd = (uint8_t)xfer;
	e.fd = (int32_t)fd;
	e.ret = (int32_t)ret;
	e.cpu_hi = (uint8_t)(cpu >> 8);
	e.cpu_lo = (uint8_t)cpu;
	in = args(c, o, "in", arg);
	if (in < 0)
		return -1;
	out = args(c, o, "out", arg + in);
	if (out < 0)
		return -1;
	e.arg_in_len = (uint8_t)in;
	e.arg_out_len = (uint8_t)out;
	if (kx_store_add_ioctl(s, &e, in + out ? arg : NULL))
		return bad(c, "store limit reached");
	return 0;
}

static int rec_job(struct ctx *c, struct obj *o, struct kx_store *s)
{
	struct kv *src = get(o, "src"), *phase = get(o, "phase");
	struct kx_job j;

	memset(&j, 0, sizeof(j));
	if (!src || !phase)
		return bad(c, "job needs \"src\" and \"phase\"");
	j.src = (uint16_t)kx_job_src_from_name(src->str);
	j.phase = (uint8_t)kx_job_phase_from_name(phase->str);
	/* Numbers are allowed too, so unknown sources and phases can be replayed. */
	if (!j.src && opt_u(c, o, "src", 16, &j.src))
		return -1;
	if (!j.phase && opt_u(c, o, "phase", 8, &j.phase))
		return -1;
	if (opt_u(c, o, "ts", 64, &j.ts) || opt_u(c, o, "ctx", 64, &j.ctx) ||
	    opt_u(c, o, "seqno", 64, &j.seqno) || opt_u(c, o, "aux", 64, &j.aux) ||
	    opt_u(c, o, "aux2", 64, &j.aux2) || opt_dev(c, o, "dev", &j.dev) ||
	    opt_u(c, o, "pid", 32, &j.pid) || opt_u(c, o, "tid", 32, &j.tid) ||
	    opt_u(c, o, "flags", 8, &j.flags))
		return -1;
	if (opt_str(c, o, "ring", j.ring, sizeof(j.ring)))
		return -1;
	if (kx_store_add_job(s, &j))
		return bad(c, "store limit reached");
	return 0;
}

static int load_line(struct ctx *c, const char *p, const char *end, struct obj *o,
                     struct kx_store *s, struct kx_capinfo *ci)
{
	struct kv *type;
	int rc;

	if (parse_obj(c, p, end, o))
		return -1;
	type = get(o, "type");
	if (!type)
		return bad(c, "object without \"type\"");
	if (!strcmp(type->str, "capture"))
		rc = rec_capture(c, o, ci);
	else if (!strcmp(type->str, "device"))
		rc = rec_device(c, o, ci);
	else if (!strcmp(type->str, "hook"))
		rc = rec_hook(c, o, ci);
	else if (!strcmp(type->str, "task"))
		rc = rec_task(c, o, s);
	else if (!strcmp(type->str, "ioctl"))
		rc = rec_ioctl(c, o, s);
	else if (!strcmp(type->str, "job"))
		rc = rec_job(c, o, s);
	else
		return bad(c, "unknown type \"%s\"", type->str);
	if (rc)
		return -1;
	for (int i = 0; i < o->n; i++)
		if (!(o->used >> i & 1))
			return bad(c, "unknown key \"%s\" for type %s", o->kv[i].key, type->str);
	return 0;
}

int kx_replay_is_fixture(const char *path)
{
	size_t n = strlen(path);

	return n > 6 && !strcmp(path + n - 6, ".jsonl");
}

int kx_replay_load_mem(const char *text, size_t len, const char *name, struct kx_store *s,
                       struct kx_capinfo *ci, char *err, size_t errlen)
{
	struct ctx c = {name, 0, err, errlen};
	const char *p = text, *end = text + len;
	struct obj *o = malloc(sizeof(*o));

	if (!o)
		return bad(&c, "out of memory");
	memset(ci, 0, sizeof(*ci));
	if (errlen)
		err[0] = '\0';
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		const char *q = skip_ws(p, le);

		c.line++;
		if (q < le && *q != '#' && load_line(&c, q, le, o, s, ci)) {
			free(o);
			return -1;
		}
		p = nl ? nl + 1 : end;
	}
	free(o);
	return 0;
}

int kx_replay_load(const char *path, struct kx_store *s, struct kx_capinfo *ci, char *err,
                   size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t k;

		if (kx_grow_by((void **)&buf, &cap, len, 65536, 1, 131072)) {
			free(buf);
			fclose(f);
			snprintf(err, errlen, "%s: out of memory", path);
			return -1;
		}
		k = fread(buf + len, 1, cap - len, f);
		len += k;
		if (k == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	rc = kx_replay_load_mem(buf, len, path, s, ci, err, errlen);
	free(buf);
	return rc;
}
