/*
 * DRM client usage statistics: the fdinfo parser and the pass tracker (see
 * model/drmusage.h and the kernel's Documentation/gpu/drm-usage-stats.rst).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/drmusage.h"
#include "util/grow.h"

const char *const kx_drm_mem_names[KX_DRM_MEM_MAX] = {"total", "shared", "resident", "purgeable",
                                                      "active"};

/* ---- the parser ---- */

/* One "key: value [unit]" line, split in place of a copy. */
struct line {
	char key[96];
	char val[64];
	char unit[16];
	int extra; /* more text after the unit */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Copies the token at *p (up to whitespace or end) into out; 0, or -1 when it does not fit. */
static int token(const char **p, const char *end, char *out, size_t room)
{
	size_t n = 0;

	while (*p < end && !is_space(**p)) {
		if (n + 1 >= room)
			return -1;
		out[n++] = *(*p)++;
	}
	out[n] = 0;
	return 0;
}

static void skip_space(const char **p, const char *end)
{
	while (*p < end && is_space(**p))
		(*p)++;
}

/* Splits [p, end) into l: 0, 1 for a line that is not "drm-KEY: VALUE", -1 when malformed. */
static int split(const char *p, const char *end, struct line *l)
{
	const char *colon = memchr(p, ':', (size_t)(end - p));
	size_t klen;

	if (!colon || (size_t)(colon - p) < 4 || memcmp(p, "drm-", 4) != 0)
		return 1;
	klen = (size_t)(colon - p);
	if (klen >= sizeof(l->key))
		return -1;
	memcpy(l->key, p, klen);
	l->key[klen] = 0;
	p = colon + 1;
	skip_space(&p, end);
	if (token(&p, end, l->val, sizeof(l->val)))
		return -1;
	skip_space(&p, end);
	if (token(&p, end, l->unit, sizeof(l->unit)))
		return -1;
	skip_space(&p, end);
	l->extra = p < end;
	return 0;
}

/* A <uint>: decimal digits only. 0, or -1. */
static int parse_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* value * mult without overflow. 0, or -1. */
static int scaled(const char *val, uint64_t mult, uint64_t *out)
{
	uint64_t v;

	if (parse_uint(val, &v) || (mult && v > UINT64_MAX / mult))
		return -1;
	*out = v * mult;
	return 0;
}

/* Memory: bytes, or KiB or MiB. */
static int mem_value(const struct line *l, uint64_t *out)
{
	uint64_t mult = !l->unit[0]               ? 1
	                : !strcmp(l->unit, "KiB") ? 1024
	                : !strcmp(l->unit, "MiB") ? 1 << 20
	                                          : 0;

	return mult ? scaled(l->val, mult, out) : -1;
}

/* Frequency: Hz, KHz or MHz (no unit: Hz). */
static int freq_value(const struct line *l, uint64_t *out)
{
	uint64_t mult = !l->unit[0] || !strcmp(l->unit, "Hz") ? 1
	                : !strcmp(l->unit, "KHz")             ? 1000
	                : !strcmp(l->unit, "MHz")             ? 1000000
	                                                      : 0;

	return mult ? scaled(l->val, mult, out) : -1;
}

static int name_ok(const char *name)
{
	return name[0] && strlen(name) < KX_DRM_NAME;
}

static struct kx_drm_engine *engine_of(struct kx_drm_fdinfo *f, const char *name)
{
	struct kx_drm_engine *e;

	for (int i = 0; i < f->nengines; i++)
		if (!strcmp(f->engine[i].name, name))
			return &f->engine[i];
	if (f->nengines >= KX_DRM_MAX_ENGINES) {
		f->dropped++;
		return NULL;
	}
	e = &f->engine[f->nengines++];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->capacity = 1;
	return e;
}

static struct kx_drm_region *region_of(struct kx_drm_fdinfo *f, const char *name)
{
	struct kx_drm_region *r;

	for (int i = 0; i < f->nregions; i++)
		if (!strcmp(f->region[i].name, name))
			return &f->region[i];
	if (f->nregions >= KX_DRM_MAX_REGIONS) {
		f->dropped++;
		return NULL;
	}
	r = &f->region[f->nregions++];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	return r;
}

/* The engine keys: drm-engine-capacity-, drm-engine-, drm-cycles-,
 * drm-total-cycles-, drm-maxfreq-. 1 when the key is not one of them, 0
 * when taken, -1 when its value is bad. */
static int engine_key(struct kx_drm_fdinfo *f, const struct line *l)
{
	static const struct {
		const char *prefix;
		uint32_t bit;
	} keys[] = {
	        /* Longer prefixes first: "drm-engine-capacity-x" is not engine "capacity-x". */
	        {"drm-engine-capacity-", 0},
	        {"drm-engine-", KX_DRM_E_BUSY},
	        {"drm-total-cycles-", KX_DRM_E_TOTCYC},
	        {"drm-cycles-", KX_DRM_E_CYCLES},
	        {"drm-maxfreq-", KX_DRM_E_MAXFREQ},
	};
	struct kx_drm_engine *e;
	uint64_t v;
	size_t k;

	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (!strncmp(l->key, keys[k].prefix, strlen(keys[k].prefix)))
			break;
	if (k == sizeof(keys) / sizeof(keys[0]))
		return 1;
	const char *name = l->key + strlen(keys[k].prefix);
	if (!name_ok(name))
		return -1;
	switch (keys[k].bit) {
	case 0: /* capacity: > 0, no unit */
		if (l->unit[0] || parse_uint(l->val, &v) || !v || v > UINT32_MAX)
			return -1;
		break;
	case KX_DRM_E_BUSY: /* ns (the only time unit the document gives) */
		if ((l->unit[0] && strcmp(l->unit, "ns")) || parse_uint(l->val, &v))
			return -1;
		break;
	case KX_DRM_E_MAXFREQ:
		if (freq_value(l, &v))
			return -1;
		break;
	default: /* cycles: no unit */
		if (l->unit[0] || parse_uint(l->val, &v))
			return -1;
	}
	if (!(e = engine_of(f, name)))
		return 0;
	switch (keys[k].bit) {
	case 0:
		e->capacity = (uint32_t)v;
		return 0;
	case KX_DRM_E_BUSY:
		e->busy_ns = v;
		break;
	case KX_DRM_E_CYCLES:
		e->cycles = v;
		break;
	case KX_DRM_E_TOTCYC:
		e->total_cycles = v;
		break;
	default:
		e->maxfreq_hz = v;
	}
	e->has |= keys[k].bit;
	return 0;
}

/* The memory keys drm-{total,shared,resident,purgeable,active}-REGION and
 * the legacy drm-memory-REGION (resident, unless drm-resident- says). */
static int memory_key(struct kx_drm_fdinfo *f, const struct line *l)
{
	struct kx_drm_region *r;
	const char *name = NULL;
	int which = -1, legacy = 0;
	uint64_t v;
	char prefix[24];

	for (int m = 0; m < KX_DRM_MEM_MAX && which < 0; m++) {
		size_t n = (size_t)snprintf(prefix, sizeof(prefix), "drm-%s-", kx_drm_mem_names[m]);

		if (!strncmp(l->key, prefix, n)) {
			which = m;
			name = l->key + n;
		}
	}
	if (which < 0 && !strncmp(l->key, "drm-memory-", 11)) {
		which = KX_DRM_MEM_RESIDENT;
		name = l->key + 11;
		legacy = 1;
	}
	if (which < 0)
		return 1;
	if (!name_ok(name) || mem_value(l, &v))
		return -1;
	if (!(r = region_of(f, name)))
		return 0;
	if (legacy && (r->has & (1u << KX_DRM_MEM_RESIDENT)))
		return 0; /* drm-resident- is the key that counts */
	r->bytes[which] = v;
	r->has |= 1u << which;
	return 0;
}

/* One line: the standard keys into f. 0, or -1 when bad. */
static int take_line(struct kx_drm_fdinfo *f, const struct line *l, int *driver)
{
	int rc;

	if (!strcmp(l->key, "drm-driver")) {
		if (!l->val[0] || l->unit[0] || strlen(l->val) >= sizeof(f->driver))
			return -1;
		snprintf(f->driver, sizeof(f->driver), "%s", l->val);
		*driver = 1;
		return 0;
	}
	if (!strcmp(l->key, "drm-pdev")) {
		if (l->unit[0] || strlen(l->val) >= sizeof(f->pdev))
			return -1;
		snprintf(f->pdev, sizeof(f->pdev), "%s", l->val);
		return 0;
	}
	if (!strcmp(l->key, "drm-client-id"))
		return l->unit[0] || parse_uint(l->val, &f->client_id) ||
		                       f->client_id == KX_DRM_NO_CLIENT
		               ? -1
		               : 0;
	if ((rc = engine_key(f, l)) <= 0)
		return rc;
	if ((rc = memory_key(f, l)) <= 0)
		return rc;
	return 0; /* a key the document does not define: ignored */
}

int kx_drm_fdinfo_parse(const char *text, size_t len, struct kx_drm_fdinfo *f)
{
	const char *p = text, *end = text + len;
	int driver = 0;

	memset(f, 0, sizeof(*f));
	f->client_id = KX_DRM_NO_CLIENT;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct line l;
		int rc = split(p, le, &l);

		if (rc < 0 || (rc == 0 && (l.extra || take_line(f, &l, &driver))))
			f->bad++;
		p = nl ? nl + 1 : end;
	}
	return driver ? 0 : -1;
}

double kx_drm_ev_busy(const struct kx_drm_ev *e)
{
	double cap = e->capacity ? e->capacity : 1;

	if (e->kind != KX_DRM_ENGINE || !e->interval_ns)
		return -1;
	switch (e->basis) {
	case KX_DRM_BASIS_NS:
		return (double)e->v[KX_DRM_V_BUSY] / ((double)e->interval_ns * cap);
	case KX_DRM_BASIS_CYCLES:
		if (!e->v[KX_DRM_V_TOTCYC])
			return -1;
		return (double)e->v[KX_DRM_V_CYCLES] / ((double)e->v[KX_DRM_V_TOTCYC] * cap);
	case KX_DRM_BASIS_FREQ:
		if (!e->v[KX_DRM_V_MAXFREQ])
			return -1;
		return (double)e->v[KX_DRM_V_CYCLES] /
		       ((double)e->v[KX_DRM_V_MAXFREQ] * ((double)e->interval_ns / 1e9) * cap);
	default:
		return -1;
	}
}

/* ---- the tracker ---- */

/* What a client's engine counters last said (held: never lower than before). */
struct held {
	char name[KX_DRM_NAME];
	uint64_t busy_ns, cycles, total_cycles;
};

struct client {
	/* The key: the device (drm-pdev, else drm-driver) and drm-client-id;
	 * without a client id, the pid and fd. */
	char dev[KX_DRM_NAME];
	uint64_t id;
	uint32_t pid;
	int fd;
	uint64_t seen;  /* the pass it was last seen in */
	uint64_t first; /* the pass it was first seen in */
	int nheld;
	struct held held[KX_DRM_MAX_ENGINES];
	/* This pass's view. */
	uint32_t cur_pid;
	char comm[16];
	struct kx_drm_fdinfo cur;
};

struct kx_drm_tracker {
	struct client *c;
	size_t n, cap, max;
	uint64_t pass;    /* passes begun */
	uint64_t ts;      /* this pass's time */
	uint64_t prev_ts; /* the pass before's, 0 before the second */
	struct kx_drm_ev *rows;
	size_t nrows, rows_cap;
	struct kx_drm_tracker_stats st;
};

struct kx_drm_tracker *kx_drm_tracker_new(uint32_t max_clients)
{
	struct kx_drm_tracker *t = calloc(1, sizeof(*t));

	if (t)
		t->max = max_clients ? max_clients : 4096;
	return t;
}

void kx_drm_tracker_free(struct kx_drm_tracker *t)
{
	if (!t)
		return;
	free(t->c);
	free(t->rows);
	free(t);
}

void kx_drm_tracker_begin(struct kx_drm_tracker *t, uint64_t ts)
{
	t->prev_ts = t->pass ? t->ts : 0;
	t->ts = ts;
	t->pass++;
	t->st.passes++;
	t->nrows = 0;
}

static void client_key(const struct kx_drm_fdinfo *f, uint32_t pid, int fd, struct client *k)
{
	snprintf(k->dev, sizeof(k->dev), "%s", f->pdev[0] ? f->pdev : f->driver);
	k->id = f->client_id;
	k->pid = f->client_id == KX_DRM_NO_CLIENT ? pid : 0;
	k->fd = f->client_id == KX_DRM_NO_CLIENT ? fd : -1;
}

static struct client *find_client(struct kx_drm_tracker *t, const struct client *k)
{
	for (size_t i = 0; i < t->n; i++) {
		struct client *c = &t->c[i];

		if (c->id == k->id && c->pid == k->pid && c->fd == k->fd && !strcmp(c->dev, k->dev))
			return c;
	}
	return NULL;
}

int kx_drm_tracker_add(struct kx_drm_tracker *t, uint32_t pid, const char *comm, int fd,
                       const struct kx_drm_fdinfo *f)
{
	struct client k, *c;

	t->st.fds++;
	t->st.bad_lines += f->bad;
	t->st.dropped += f->dropped;
	client_key(f, pid, fd, &k);
	c = find_client(t, &k);
	if (c && c->seen == t->pass) {
		t->st.dup_clients++;
		return 0;
	}
	if (!c) {
		if (t->n >= t->max || kx_grow((void **)&t->c, &t->cap, t->n, sizeof(*t->c))) {
			t->st.clients_max++;
			return -1;
		}
		c = &t->c[t->n++];
		memset(c, 0, sizeof(*c));
		memcpy(c->dev, k.dev, sizeof(c->dev));
		c->id = k.id;
		c->pid = k.pid;
		c->fd = k.fd;
		c->first = t->pass;
	}
	c->seen = t->pass;
	c->cur_pid = pid;
	snprintf(c->comm, sizeof(c->comm), "%s", comm ? comm : "");
	c->cur = *f;
	return 1;
}

static struct held *held_of(struct client *c, const char *name)
{
	for (int i = 0; i < c->nheld; i++)
		if (!strcmp(c->held[i].name, name))
			return &c->held[i];
	if (c->nheld >= KX_DRM_MAX_ENGINES)
		return NULL;
	struct held *h = &c->held[c->nheld++];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	return h;
}

/* cur - *held, the held value raised to cur; a lower cur counts went_back and gives 0. */
static uint64_t advance(uint64_t cur, uint64_t *held, uint64_t *went_back)
{
	uint64_t d;

	if (cur < *held) {
		(*went_back)++;
		return 0;
	}
	d = cur - *held;
	*held = cur;
	return d;
}

static struct kx_drm_ev *new_row(struct kx_drm_tracker *t, const struct client *c, uint8_t kind,
                                 const char *name)
{
	struct kx_drm_ev *r;

	if (kx_grow((void **)&t->rows, &t->rows_cap, t->nrows, sizeof(*t->rows)))
		return NULL;
	r = &t->rows[t->nrows++];
	memset(r, 0, sizeof(*r));
	r->ts = t->ts;
	r->pid = c->cur_pid;
	r->kind = kind;
	r->client_id = c->cur.client_id;
	memcpy(r->comm, c->comm, sizeof(r->comm));
	memcpy(r->driver, c->cur.driver, sizeof(r->driver));
	memcpy(r->pdev, c->cur.pdev, sizeof(r->pdev));
	snprintf(r->name, sizeof(r->name), "%s", name);
	return r;
}

/* The engine rows of a client seen this pass. A client first seen after the
 * first pass opened its file since the pass before: its counters count from 0. */
static void engine_rows(struct kx_drm_tracker *t, struct client *c)
{
	int baseline = c->first == t->pass && !t->prev_ts;

	for (int i = 0; i < c->cur.nengines; i++) {
		const struct kx_drm_engine *e = &c->cur.engine[i];
		struct held *h = held_of(c, e->name);
		struct kx_drm_ev *r = new_row(t, c, KX_DRM_ENGINE, e->name);
		uint64_t dbusy, dcyc, dtot;

		if (!r || !h)
			continue;
		dbusy = advance(e->busy_ns, &h->busy_ns, &t->st.went_back);
		dcyc = advance(e->cycles, &h->cycles, &t->st.went_back);
		dtot = advance(e->total_cycles, &h->total_cycles, &t->st.went_back);
		r->capacity = e->capacity ? e->capacity : 1;
		r->has = (uint16_t)e->has;
		r->v[KX_DRM_V_BUSY_NS] = h->busy_ns;
		r->v[KX_DRM_V_MAXFREQ] = e->maxfreq_hz;
		if (baseline)
			continue; /* no interval: basis NONE */
		r->interval_ns = t->ts - t->prev_ts;
		r->v[KX_DRM_V_CYCLES] = dcyc;
		r->v[KX_DRM_V_TOTCYC] = dtot;
		if (e->has & KX_DRM_E_BUSY) {
			r->basis = KX_DRM_BASIS_NS;
			r->v[KX_DRM_V_BUSY] = dbusy;
		} else if ((e->has & KX_DRM_E_CYCLES) && (e->has & KX_DRM_E_TOTCYC)) {
			r->basis = KX_DRM_BASIS_CYCLES;
			r->v[KX_DRM_V_BUSY] = dcyc;
		} else if ((e->has & KX_DRM_E_CYCLES) && e->maxfreq_hz) {
			r->basis = KX_DRM_BASIS_FREQ;
			r->v[KX_DRM_V_BUSY] = dcyc;
		}
	}
}

static void memory_rows(struct kx_drm_tracker *t, const struct client *c)
{
	for (int i = 0; i < c->cur.nregions; i++) {
		const struct kx_drm_region *g = &c->cur.region[i];
		struct kx_drm_ev *r = new_row(t, c, KX_DRM_MEMORY, g->name);

		if (!r)
			continue;
		r->has = (uint16_t)g->has;
		memcpy(r->v, g->bytes, sizeof(r->v));
	}
}

const struct kx_drm_ev *kx_drm_tracker_end(struct kx_drm_tracker *t, size_t *n)
{
	size_t keep = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct client *c = &t->c[i];

		if (c->seen != t->pass)
			continue; /* closed since: forgotten */
		engine_rows(t, c);
		memory_rows(t, c);
		if (keep != i)
			t->c[keep] = *c;
		keep++;
	}
	t->n = keep;
	*n = t->nrows;
	return t->rows;
}

const struct kx_drm_tracker_stats *kx_drm_tracker_stats(const struct kx_drm_tracker *t)
{
	return &t->st;
}
