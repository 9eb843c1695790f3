/*
 * Streaming annotation aggregates (contract: annot.h). Series, threads and
 * open cross-thread ranges live in fixed arrays indexed by fixed-size
 * util/hashmap.h maps; a full thread or open-range table gives up its least
 * recently used entry (a linear scan, only when full).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/annot.h"
#include "util/hashmap.h"
#include "util/hist.h"

#define NO_SERIES UINT32_MAX

struct thr {
	uint32_t tid;
	uint64_t used;                 /* last use, by the add counter */
	uint32_t series[KX_ANN_DEPTH]; /* per level, NO_SERIES when none */
};

struct open_range {
	uint32_t pid;
	uint64_t id;
	uint64_t used;
	uint32_t series;
};

struct kx_annagg {
	pthread_mutex_t mu;
	struct kx_annagg_series *series;
	size_t nseries;
	uint32_t max_series;
	struct kx_hmap series_map; /* hash of (mark, name, cat) -> series index */
	struct thr *thr;
	size_t nthr;
	struct kx_hmap thr_map; /* tid -> thr index */
	struct open_range *open;
	size_t nopen;
	struct kx_hmap open_map; /* hash of (pid, id) -> open index */
	uint64_t clock;          /* adds so far: the age of table entries */
	uint64_t overflow, lost;
	struct kx_sink next;
};

struct kx_annagg *kx_annagg_new(uint32_t max_series)
{
	struct kx_annagg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max_series = max_series ? max_series : KX_AGG_MAX_KEYS;
	a->series = calloc(a->max_series, sizeof(*a->series));
	a->thr = calloc(KX_ANNAGG_MAX_THREADS, sizeof(*a->thr));
	a->open = calloc(KX_ANNAGG_MAX_OPEN, sizeof(*a->open));
	pthread_mutex_init(&a->mu, NULL);
	if (!a->series || !a->thr || !a->open ||
	    kx_hmap_init_fixed(&a->series_map, a->max_series) ||
	    kx_hmap_init_fixed(&a->thr_map, KX_ANNAGG_MAX_THREADS) ||
	    kx_hmap_init_fixed(&a->open_map, KX_ANNAGG_MAX_OPEN)) {
		kx_annagg_free(a);
		return NULL;
	}
	return a;
}

void kx_annagg_free(struct kx_annagg *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	free(a->series);
	free(a->thr);
	free(a->open);
	kx_hmap_free(&a->series_map);
	kx_hmap_free(&a->thr_map);
	kx_hmap_free(&a->open_map);
	free(a);
}

static uint64_t series_key(int mark, const char *name, const char *cat)
{
	return kx_hash_combine(
	        kx_hash_combine(kx_hash_bytes(name, strlen(name)), kx_hash_bytes(cat, strlen(cat))),
	        (uint64_t)mark);
}

/* The series of (mark, name, cat), made when new; NO_SERIES past the limit. */
static uint32_t series_of(struct kx_annagg *a, int mark, const char *name, const char *cat)
{
	uint64_t key = series_key(mark, name, cat);
	size_t pos = KX_HMAP_START;
	struct kx_annagg_series *s;
	uint32_t *i;

	while ((i = kx_hmap_next(&a->series_map, key, &pos)))
		if (a->series[*i].mark == mark && !strcmp(a->series[*i].name, name) &&
		    !strcmp(a->series[*i].cat, cat))
			return *i;
	if (a->nseries == a->max_series || kx_hmap_add(&a->series_map, key, (uint32_t)a->nseries)) {
		a->overflow++;
		return NO_SERIES;
	}
	s = &a->series[a->nseries];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->cat, sizeof(s->cat), "%s", cat);
	s->mark = mark;
	return (uint32_t)a->nseries++;
}

static void series_add(struct kx_annagg *a, uint32_t si, uint64_t ns)
{
	struct kx_annagg_series *s = &a->series[si];

	if (!s->count || ns < s->min_ns)
		s->min_ns = ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	s->count++;
	s->sum_ns += ns;
	s->fine[kx_hist_fine_slot(ns)]++;
}

/* The least recently used of n entries whose ages are at stride bytes from used. */
static size_t oldest(const void *base, size_t n, size_t stride, size_t used_off)
{
	size_t best = 0;

	for (size_t i = 1; i < n; i++) {
		uint64_t u, b;

		memcpy(&u, (const char *)base + i * stride + used_off, sizeof(u));
		memcpy(&b, (const char *)base + best * stride + used_off, sizeof(b));
		if (u < b)
			best = i;
	}
	return best;
}

/* The state of thread tid; made (or taken from the least recent thread) when create. */
static struct thr *thread_of(struct kx_annagg *a, uint32_t tid, int create)
{
	uint32_t *i = kx_hmap_get(&a->thr_map, tid);
	struct thr *t;
	size_t k;

	if (i || !create) {
		if (i)
			a->thr[*i].used = a->clock;
		return i ? &a->thr[*i] : NULL;
	}
	if (a->nthr < KX_ANNAGG_MAX_THREADS) {
		k = a->nthr++;
	} else {
		k = oldest(a->thr, a->nthr, sizeof(*a->thr), offsetof(struct thr, used));
		kx_hmap_del(&a->thr_map, a->thr[k].tid);
	}
	if (kx_hmap_add(&a->thr_map, tid, (uint32_t)k))
		return NULL;
	t = &a->thr[k];
	t->tid = tid;
	t->used = a->clock;
	for (int d = 0; d < KX_ANN_DEPTH; d++)
		t->series[d] = NO_SERIES;
	return t;
}

static uint64_t open_key(uint32_t pid, uint64_t id)
{
	return kx_hash_combine(kx_hash_combine(0, pid), id);
}

static void open_add(struct kx_annagg *a, uint32_t pid, uint64_t id, uint32_t si)
{
	size_t k;

	if (a->nopen < KX_ANNAGG_MAX_OPEN) {
		k = a->nopen++;
	} else {
		k = oldest(a->open, a->nopen, sizeof(*a->open), offsetof(struct open_range, used));
		kx_hmap_del(&a->open_map, open_key(a->open[k].pid, a->open[k].id));
	}
	if (kx_hmap_add(&a->open_map, open_key(pid, id), (uint32_t)k))
		return;
	a->open[k] = (struct open_range){pid, id, a->clock, si};
}

/* The series of the open cross-thread range (pid, id), forgotten; NO_SERIES. */
static uint32_t open_take(struct kx_annagg *a, uint32_t pid, uint64_t id)
{
	size_t pos = KX_HMAP_START;
	uint32_t *i, si;

	while ((i = kx_hmap_next(&a->open_map, open_key(pid, id), &pos))) {
		if (a->open[*i].pid != pid || a->open[*i].id != id)
			continue;
		si = a->open[*i].series;
		/* The slot stays used: an END never comes twice for one START. */
		a->open[*i].used = 0;
		a->open[*i].pid = 0;
		kx_hmap_del_at(&a->open_map, pos);
		return si;
	}
	a->lost++;
	return NO_SERIES;
}

static void add_locked(struct kx_annagg *a, const struct kx_ann *e, const char *name,
                       const char *cat)
{
	struct thr *t;
	uint32_t si;

	a->clock++;
	switch (e->what) {
	case KX_ANN_PUSH:
		t = e->depth >= 1 && e->depth <= KX_ANN_DEPTH ? thread_of(a, e->tid, 1) : NULL;
		if (t)
			t->series[e->depth - 1] = series_of(a, 0, name, cat);
		break;
	case KX_ANN_POP:
		t = e->depth >= 1 && e->depth <= KX_ANN_DEPTH ? thread_of(a, e->tid, 0) : NULL;
		si = t ? t->series[e->depth - 1] : NO_SERIES;
		if (!t || si == NO_SERIES) {
			a->lost += !t;
			break;
		}
		t->series[e->depth - 1] = NO_SERIES;
		series_add(a, si, e->ts > e->begin ? e->ts - e->begin : 0);
		break;
	case KX_ANN_MARK:
		si = series_of(a, 1, name, cat);
		if (si != NO_SERIES)
			a->series[si].count++;
		break;
	case KX_ANN_START:
		si = series_of(a, 0, name, cat);
		if (si != NO_SERIES)
			open_add(a, e->pid, e->id, si);
		break;
	case KX_ANN_END:
		si = open_take(a, e->pid, e->id);
		if (si != NO_SERIES)
			series_add(a, si, e->ts > e->begin ? e->ts - e->begin : 0);
		break;
	}
}

void kx_annagg_add(struct kx_annagg *a, const struct kx_ann *e, const char *name, const char *cat)
{
	pthread_mutex_lock(&a->mu);
	add_locked(a, e, name ? name : "", cat ? cat : "");
	pthread_mutex_unlock(&a->mu);
}

int kx_annagg_snapshot(struct kx_annagg *a, struct kx_annagg_snapshot *out, int reset)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->mu);
	out->series = malloc((a->nseries ? a->nseries : 1) * sizeof(*out->series));
	if (!out->series) {
		pthread_mutex_unlock(&a->mu);
		return -1;
	}
	memcpy(out->series, a->series, a->nseries * sizeof(*out->series));
	out->nseries = a->nseries;
	out->max_series = a->max_series;
	out->overflow = a->overflow;
	out->lost = a->lost;
	for (size_t i = 0; reset && i < a->nseries; i++) {
		struct kx_annagg_series *s = &a->series[i];

		s->count = s->sum_ns = s->min_ns = s->max_ns = 0;
		memset(s->fine, 0, sizeof(s->fine));
	}
	pthread_mutex_unlock(&a->mu);
	return 0;
}

void kx_annagg_snapshot_free(struct kx_annagg_snapshot *s)
{
	free(s->series);
	memset(s, 0, sizeof(*s));
}

/* ---- the sink: annotations here, the rest passed on ---- */

static void sink_annot(void *ctx, const struct kx_ann *e, const char *name, const char *cat)
{
	kx_annagg_add(ctx, e, name, cat);
}

static void fwd_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct kx_annagg *a = ctx;

	a->next.ioctl(a->next.ctx, e, arg);
}

static void fwd_task(void *ctx, const struct kx_task *t)
{
	struct kx_annagg *a = ctx;

	a->next.task(a->next.ctx, t);
}

static void fwd_job(void *ctx, const struct kx_job *j)
{
	struct kx_annagg *a = ctx;

	a->next.job(a->next.ctx, j);
}

static void fwd_tick(void *ctx)
{
	struct kx_annagg *a = ctx;

	a->next.tick(a->next.ctx);
}

static int fwd_begin(void *ctx, const struct kx_capinfo *ci, char *err, size_t len)
{
	struct kx_annagg *a = ctx;

	return a->next.begin(a->next.ctx, ci, err, len);
}

struct kx_sink kx_annagg_sink(struct kx_annagg *a, const struct kx_sink *next)
{
	a->next = *next;
	return (struct kx_sink){
	        .ctx = a,
	        .ioctl = next->ioctl ? fwd_ioctl : NULL,
	        .task = next->task ? fwd_task : NULL,
	        .job = next->job ? fwd_job : NULL,
	        .annot = sink_annot,
	        .tick = next->tick ? fwd_tick : NULL,
	        .begin = next->begin ? fwd_begin : NULL,
	};
}
