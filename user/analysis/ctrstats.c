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

/* The join of a counter record to its call, in memory and streamed: the
 * same thread and enter time. */
static int ctr_joins(const struct kx_ctr_ev *c, uint32_t tid, uint64_t ts)
{
	return c->tid == tid && c->ts == ts;
}

static uint64_t call_key(uint32_t tid, uint64_t ts)
{
	return kx_hash_combine(kx_hash_u64(tid), ts);
}

/* The counter record of the call (tid, ts), NULL when none. */
static const struct kx_ctr_ev *find(const struct kx_ctrstats *cs, uint32_t tid, uint64_t ts)
{
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	while ((i = kx_hmap_next(&cs->by_call, call_key(tid, ts), &pos))) {
		const struct kx_ctr_ev *c = kx_samples_ctr(cs->t, *i);

		if (ctr_joins(c, tid, ts))
			return c;
	}
	return NULL;
}

/* A counter record's partial and multiplexed flags, counted. */
static void ctrstats_note(struct kx_ctrstats *cs, const struct kx_ctr_ev *c)
{
	cs->partial += (c->flags & KX_CTR_F_PARTIAL) != 0;
	cs->multiplexed += (uint64_t)__builtin_popcount(c->multiplexed);
}

static int index_records(struct kx_ctrstats *cs)
{
	for (size_t i = 0; i < kx_samples_nctr(cs->t); i++) {
		const struct kx_ctr_ev *e = kx_samples_ctr(cs->t, i);

		if (i >= UINT32_MAX ||
		    kx_hmap_add(&cs->by_call, call_key(e->tid, e->ts), (uint32_t)i))
			return -1;
		ctrstats_note(cs, e);
	}
	return 0;
}

/* Row r named for ioctl e. */
static void row_label(struct kx_ctrrow *r, const struct kx_ioctl *e)
{
	char buf[96];

	snprintf(r->cat, sizeof(r->cat), "ioctl/%s", kx_driver_name((enum kx_driver)e->drv));
	snprintf(r->name, sizeof(r->name), "%s",
	         kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, sizeof(buf)));
}

/* Index in cs->rows of ioctl e's row (ix: row key -> index; cap: the rows'
 * room), made when new; -1 when out of memory. */
static long ctrstats_row(struct kx_ctrstats *cs, struct kx_hmap *ix, size_t *cap,
                         const struct kx_ioctl *e)
{
	/* The call's identity itself, not a hash of it: two calls share a row
	 * only when driver, command and inner escape are the same. */
	uint64_t key = (uint64_t)e->drv << 40 | (uint64_t)e->xfer_cmd << 32 | e->cmd;
	struct kx_ctrrow *r;
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
	row_label(r, e);
	return (long)cs->nrows++;
}

/* One call's readings c into row r. */
static void ctrrow_add(const struct kx_ctrstats *cs, struct kx_ctrrow *r, const struct kx_ctr_ev *c)
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

/* The rows in their order: by category, then calls, most first. */
static void ctrstats_sort(struct kx_ctrstats *cs)
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
		r = ctrstats_row(cs, &ix, &cap, e);
		if (r < 0)
			rc = -1;
		else
			ctrrow_add(cs, &cs->rows[r], c);
	}
	kx_hmap_free(&ix);
	cs->unmatched = kx_samples_nctr(cs->t) - matched;
	ctrstats_sort(cs);
	return rc;
}

/* Empty statistics of the capture's counters (names and record counts from ci). NULL on OOM. */
static struct kx_ctrstats *ctrstats_new(const struct kx_capinfo *ci)
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
	cs = ctrstats_new(ci);
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

/* ---- the join on a stream in start order ---- */

int kx_ctrjoin_init(struct kx_ctrjoin *j, const struct kx_capinfo *ci)
{
	memset(j, 0, sizeof(*j));
	j->last = (struct kx_tidtab)KX_TIDTAB_INIT(struct kx_ctr_ev);
	j->gone = (struct kx_tidtab)KX_TIDTAB_INIT(uint64_t);
	j->cs = ctrstats_new(ci);
	return j->cs ? 0 : -1;
}

int kx_ctrjoin_ctr(struct kx_ctrjoin *j, const struct kx_ctr_ev *c)
{
	struct kx_ctr_ev *last = kx_tidtab_get(&j->last, c->tid, 1);

	if (!last)
		return -1;
	j->records++;
	ctrstats_note(j->cs, c);
	*last = *c;
	return 0;
}

/* Call e (seq: its place in the file) with its record c, into its row. 0,
 * or -1 when out of memory. */
static int join(struct kx_ctrjoin *j, const struct kx_ioctl *e, uint64_t seq,
                const struct kx_ctr_ev *c)
{
	size_t n = j->cs->nrows;
	long r = ctrstats_row(j->cs, &j->ix, &j->rcap, e);

	if (r < 0 || kx_grow((void **)&j->first, &j->fcap, n, sizeof(*j->first)))
		return -1;
	/* A row is named for its first call in the file, as in memory (calls
	 * whose keys meet share it). */
	if ((size_t)r == n)
		j->first[r] = seq;
	else if (seq < j->first[r]) {
		j->first[r] = seq;
		row_label(&j->cs->rows[r], e);
	}
	ctrrow_add(j->cs, &j->cs->rows[r], c);
	j->matched++;
	return 0;
}

_Static_assert(sizeof(struct kx_ctrwait) == 24, "struct kx_ctrwait grew");
_Static_assert(KX_CTRJOIN_WAIT_CALLS == 65536, "kx_ctrjoin_late's message names the bound");

/* The waiting call number a. */
static struct kx_ctrwait *wait_at(const struct kx_ctrjoin *j, uint64_t a)
{
	return &j->wait[a & (j->wcap - 1)];
}

/* The taken calls at the front of the wait let go. */
static void wait_pop(struct kx_ctrjoin *j)
{
	while (j->wn && wait_at(j, j->wfirst)->taken) {
		j->wfirst++;
		j->wn--;
	}
}

/* The index entry of the waiting call number a removed. */
static void wait_unindex(struct kx_ctrjoin *j, uint64_t a)
{
	const struct kx_ctrwait *w = wait_at(j, a);
	size_t pos = KX_HMAP_START;
	uint32_t *v;

	while ((v = kx_hmap_next(&j->wix, call_key(w->tid, w->ts), &pos)))
		if (*v == (uint32_t)a) {
			kx_hmap_del_at(&j->wix, pos);
			return;
		}
}

/* The oldest waiting call given up (the budget): its thread's latest start
 * given up kept. 0, or -1 when out of memory. */
static int wait_give_up(struct kx_ctrjoin *j)
{
	const struct kx_ctrwait *w = wait_at(j, j->wfirst);
	uint64_t *gone = kx_tidtab_get(&j->gone, w->tid, 1);

	if (!gone)
		return -1;
	if (w->ts > *gone)
		*gone = w->ts;
	wait_unindex(j, j->wfirst);
	j->given_up++;
	j->wfirst++;
	j->wn--;
	wait_pop(j);
	return 0;
}

/* Room for one more waiting call: the ring doubles, each call at its
 * number's place. 0, or -1 when out of memory. */
static int wait_room(struct kx_ctrjoin *j)
{
	size_t cap = j->wcap ? 2 * j->wcap : 64;
	struct kx_ctrwait *nw;

	if (j->wn < j->wcap)
		return 0;
	nw = malloc(cap * sizeof(*nw));
	if (!nw)
		return -1;
	for (uint64_t a = j->wfirst; a < j->wfirst + j->wn; a++)
		nw[a & (cap - 1)] = *wait_at(j, a);
	free(j->wait);
	j->wait = nw;
	j->wcap = cap;
	return 0;
}

/* Call e (seq) waits for its record. 0, or -1 when out of memory. */
static int wait_add(struct kx_ctrjoin *j, const struct kx_ioctl *e, uint64_t seq)
{
	uint64_t a;

	if (j->wn == KX_CTRJOIN_WAIT_CALLS && wait_give_up(j))
		return -1;
	if (wait_room(j))
		return -1;
	a = j->wfirst + j->wn;
	*wait_at(j, a) = (struct kx_ctrwait){.ts = e->ts,
	                                     .seq = seq,
	                                     .drv = e->drv,
	                                     .xfer_cmd = e->xfer_cmd,
	                                     .cmd = e->cmd,
	                                     .tid = e->tid};
	if (kx_hmap_add(&j->wix, call_key(e->tid, e->ts), (uint32_t)a))
		return -1;
	j->wn++;
	return 0;
}

int kx_ctrjoin_ioctl(struct kx_ctrjoin *j, const struct kx_ioctl *e, uint64_t seq)
{
	const struct kx_ctr_ev *c = kx_tidtab_find(&j->last, e->tid);

	if (c && ctr_joins(c, e->tid, e->ts))
		return join(j, e, seq, c);
	return wait_add(j, e, seq);
}

/* The waiting call of record c taken from the wait, in *out: 1, or 0 when none waits. */
static int wait_take(struct kx_ctrjoin *j, const struct kx_ctr_ev *c, struct kx_ctrwait *out)
{
	size_t pos = KX_HMAP_START;
	uint32_t *v;

	while ((v = kx_hmap_next(&j->wix, call_key(c->tid, c->ts), &pos))) {
		/* Numbers mod 2^32 name one call: fewer than that wait. */
		uint64_t a = j->wfirst + (uint32_t)(*v - (uint32_t)j->wfirst);
		struct kx_ctrwait *w = wait_at(j, a);

		if (w->taken || !ctr_joins(c, w->tid, w->ts))
			continue;
		*out = *w;
		w->taken = 1;
		kx_hmap_del_at(&j->wix, pos);
		wait_pop(j);
		return 1;
	}
	return 0;
}

int kx_ctrjoin_late(struct kx_ctrjoin *j, const struct kx_ctr_ev *c)
{
	struct kx_ctrwait w;
	const uint64_t *gone;

	j->records++;
	j->late++;
	ctrstats_note(j->cs, c);
	if (wait_take(j, c, &w)) {
		struct kx_ioctl e = {.ts = w.ts,
		                     .tid = w.tid,
		                     .cmd = w.cmd,
		                     .drv = (uint8_t)w.drv,
		                     .xfer_cmd = (uint8_t)w.xfer_cmd};

		return join(j, &e, w.seq, c);
	}
	gone = kx_tidtab_find(&j->gone, c->tid);
	if (gone && c->ts <= *gone && !j->why)
		j->why = "a counter record came after its call had been given up waiting for it "
		         "(more than 65536 calls waited for their counter records: the counter "
		         "join's memory budget)";
	return 0;
}

struct kx_ctrstats *kx_ctrjoin_finish(struct kx_ctrjoin *j, const struct kx_capinfo *ci)
{
	struct kx_ctrstats *cs = j->cs;

	/* The capture's counts from the trailer; the rows and flags from the stream. */
	memcpy(cs->stats, ci->counters.stats, sizeof(cs->stats));
	cs->unmatched = j->records - j->matched;
	ctrstats_sort(cs);
	j->cs = NULL;
	return cs;
}

void kx_ctrjoin_free(struct kx_ctrjoin *j)
{
	kx_ctrstats_free(j->cs);
	kx_hmap_free(&j->ix);
	kx_tidtab_free(&j->last);
	free(j->first);
	free(j->wait);
	kx_hmap_free(&j->wix);
	kx_tidtab_free(&j->gone);
	memset(j, 0, sizeof(*j));
}
