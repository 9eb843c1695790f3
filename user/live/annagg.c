/*
 * Streaming annotation aggregates (contract: annot.h). Series live in a
 * fixed array indexed by a fixed-size util/hashmap.h map; ranges are paired
 * by analysis/rangetrack.h under the live bounds.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rangetrack.h"
#include "live/annagg.h"
#include "util/hashmap.h"
#include "util/hist.h"

#define NO_SERIES UINT32_MAX

struct kx_annagg {
	pthread_mutex_t mu;
	struct kx_annagg_series *series;
	size_t nseries;
	uint32_t max_series;
	struct kx_hmap series_map;  /* hash of (mark, name, cat) -> series index */
	struct kx_rangetrack track; /* open ranges, each with its series (uint32_t) */
	struct kx_rt_open *ended;   /* the range an end took out (track.stride bytes) */
	uint64_t overflow, lost;
};

struct kx_annagg *kx_annagg_new(uint32_t max_series)
{
	struct kx_annagg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max_series = max_series ? max_series : KX_AGG_MAX_KEYS;
	a->series = calloc(a->max_series, sizeof(*a->series));
	kx_rangetrack_init(&a->track, sizeof(uint32_t), 0);
	kx_rangetrack_bound(&a->track, KX_ANNAGG_MAX_THREADS, KX_ANN_DEPTH, KX_ANNAGG_MAX_OPEN);
	a->ended = malloc(a->track.stride);
	pthread_mutex_init(&a->mu, NULL);
	if (!a->series || !a->ended || kx_hmap_init_fixed(&a->series_map, a->max_series)) {
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
	free(a->ended);
	kx_rangetrack_free(&a->track);
	kx_hmap_free(&a->series_map);
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

static void add_locked(struct kx_annagg *a, const struct kx_ann *e, const char *name,
                       const char *cat)
{
	struct kx_rt_open *o;
	size_t above;
	uint32_t si;

	switch (e->what) {
	case KX_ANN_PUSH:
	case KX_ANN_START:
		si = series_of(a, 0, name, cat);
		o = kx_rangetrack_begin(&a->track, e);
		if (o) /* else out of memory: its end will be counted lost */
			memcpy(kx_rt_data(o), &si, sizeof(si));
		break;
	case KX_ANN_POP:
	case KX_ANN_END:
		if (!kx_rangetrack_end(&a->track, e, a->ended, &above)) {
			a->lost++;
			break;
		}
		memcpy(&si, kx_rt_data(a->ended), sizeof(si));
		if (si != NO_SERIES)
			series_add(a, si, e->ts > e->begin ? e->ts - e->begin : 0);
		break;
	case KX_ANN_MARK:
		si = series_of(a, 1, name, cat);
		if (si != NO_SERIES)
			a->series[si].count++;
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
