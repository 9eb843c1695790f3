/* Counters inside driver calls, analysed (see ctrstats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ctrstats.h"
#include "model/perfdata.h"
#include "util/grow.h"

/* Names for counters a later writer may know and this reader does not. */
static const char *const spare[KX_MAX_COUNTERS] = {"counter0", "counter1", "counter2", "counter3"};

static void parse_names(struct kx_ctrstats *cs, const char *list)
{
	char name[64];

	for (const char *p = list; *p && cs->n < KX_MAX_COUNTERS;) {
		size_t k = strcspn(p, ",");
		const struct kx_counter_def *d;

		snprintf(name, sizeof(name), "%.*s", (int)k, p);
		d = kx_counter_find(name);
		cs->names[cs->n] = d ? d->name : spare[cs->n];
		cs->n++;
		p += k + (p[k] == ',');
	}
}

static uint64_t call_key(uint32_t tid, uint64_t ts)
{
	return kx_hash_combine(kx_hash_u64(tid), ts);
}

int kx_ctr_join_add(struct kx_hmap *m, const struct kx_ctr_ev *c, uint32_t v)
{
	return kx_hmap_add(m, call_key(c->tid, c->ts), v);
}

const struct kx_ctr_ev *kx_ctr_join_find(const struct kx_hmap *m, uint32_t tid, uint64_t ts,
                                         const struct kx_ctr_ev *(*at)(const void *ctx, uint32_t v),
                                         const void *ctx, uint32_t *v, size_t *pos)
{
	uint32_t *i;

	*pos = KX_HMAP_START;
	while ((i = kx_hmap_next(m, call_key(tid, ts), pos))) {
		const struct kx_ctr_ev *c = at(ctx, *i);

		if (c->tid == tid && c->ts == ts) {
			*v = *i;
			return c;
		}
	}
	return NULL;
}

static const struct kx_ctr_ev *stored(const void *t, uint32_t v)
{
	return kx_samples_ctr(t, v);
}

/* The counter record of the call (tid, ts), NULL when none. */
static const struct kx_ctr_ev *find(const struct kx_ctrstats *cs, uint32_t tid, uint64_t ts)
{
	size_t pos;
	uint32_t v;

	return kx_ctr_join_find(&cs->by_call, tid, ts, stored, cs->t, &v, &pos);
}

void kx_ctrstats_note(struct kx_ctrstats *cs, const struct kx_ctr_ev *c)
{
	cs->partial += (c->flags & KX_CTR_F_PARTIAL) != 0;
	cs->multiplexed += (uint64_t)__builtin_popcount(c->multiplexed);
}

static int index_records(struct kx_ctrstats *cs)
{
	for (size_t i = 0; i < kx_samples_nctr(cs->t); i++) {
		const struct kx_ctr_ev *e = kx_samples_ctr(cs->t, i);

		if (i >= UINT32_MAX || kx_ctr_join_add(&cs->by_call, e, (uint32_t)i))
			return -1;
		kx_ctrstats_note(cs, e);
	}
	return 0;
}

long kx_ctrstats_row(struct kx_ctrstats *cs, struct kx_hmap *ix, size_t *cap,
                     const struct kx_ioctl *e)
{
	uint64_t key = kx_hash_combine(kx_hash_combine(e->drv, e->cmd), e->xfer_cmd);
	struct kx_ctrrow *r;
	char buf[96];
	int isnew;
	uint32_t *v = kx_hmap_put(ix, key, (uint32_t)cs->nrows, &isnew);

	if (!v)
		return -1;
	if (!isnew)
		return (long)*v;
	if (kx_grow((void **)&cs->rows, cap, cs->nrows, sizeof(*cs->rows))) {
		kx_hmap_del(ix, key);
		return -1;
	}
	r = &cs->rows[cs->nrows];
	memset(r, 0, sizeof(*r));
	snprintf(r->cat, sizeof(r->cat), "ioctl/%s", kx_driver_name((enum kx_driver)e->drv));
	snprintf(r->name, sizeof(r->name), "%s",
	         kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, sizeof(buf)));
	return (long)cs->nrows++;
}

void kx_ctrrow_add(const struct kx_ctrstats *cs, struct kx_ctrrow *r, const struct kx_ctr_ev *c)
{
	r->calls++;
	for (int k = 0; k < cs->n && k < c->n; k++) {
		if (c->not_counted & (1u << k))
			continue;
		r->total[k] += c->v[k];
		r->counted[k]++;
	}
}

static int by_cat_calls(const void *a, const void *b)
{
	const struct kx_ctrrow *x = a, *y = b;
	int c = strcmp(x->cat, y->cat);

	if (c)
		return c;
	return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : strcmp(x->name, y->name);
}

void kx_ctrstats_sort(struct kx_ctrstats *cs)
{
	if (cs->nrows > 1)
		qsort(cs->rows, cs->nrows, sizeof(*cs->rows), by_cat_calls);
}

/* Every stored ioctl with its counters, into its row. */
static int rows(struct kx_ctrstats *cs, const struct kx_store *s)
{
	struct kx_hmap ix = KX_HMAP_INIT;
	size_t cap = 0, matched = 0;
	int rc = 0;

	for (size_t i = 0; i < kx_store_ioctl_count(s) && !rc; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		const struct kx_ctr_ev *c = find(cs, e->tid, e->ts);
		long r;

		if (!c)
			continue;
		matched++;
		r = kx_ctrstats_row(cs, &ix, &cap, e);
		if (r < 0)
			rc = -1;
		else
			kx_ctrrow_add(cs, &cs->rows[r], c);
	}
	kx_hmap_free(&ix);
	cs->unmatched = kx_samples_nctr(cs->t) - matched;
	kx_ctrstats_sort(cs);
	return rc;
}

struct kx_ctrstats *kx_ctrstats_new(const struct kx_capinfo *ci)
{
	struct kx_ctrstats *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	memcpy(cs->stats, ci->counters.stats, sizeof(cs->stats));
	parse_names(cs, ci->counters.names);
	return cs;
}

struct kx_ctrstats *kx_ctrstats_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                      char *err, size_t len)
{
	struct kx_ctrstats *cs;

	err[0] = 0;
	if (!ci || !ci->counters.names[0] || !kx_store_ctrs(s))
		return NULL;
	cs = kx_ctrstats_new(ci);
	if (!cs) {
		snprintf(err, len, "out of memory for the counters");
		return NULL;
	}
	cs->t = kx_store_ctrs(s);
	if (index_records(cs) || rows(cs, s)) {
		snprintf(err, len, "out of memory for the counters");
		kx_ctrstats_free(cs);
		return NULL;
	}
	return cs;
}

void kx_ctrstats_free(struct kx_ctrstats *cs)
{
	if (!cs)
		return;
	free(cs->rows);
	kx_hmap_free(&cs->by_call);
	free(cs);
}

int kx_ctrstats_fields(const struct kx_ctrstats *cs, const struct kx_ioctl *e, struct kx_field *f,
                       int max)
{
	const struct kx_ctr_ev *c = cs ? find(cs, e->tid, e->ts) : NULL;
	int n = 0;

	for (int k = 0; c && k < cs->n && k < c->n && n < max; k++) {
		if (c->not_counted & (1u << k))
			continue;
		f[n].name = cs->names[k];
		f[n].kind = KX_FIELD_U64;
		f[n].u = c->v[k];
		n++;
	}
	return n;
}
